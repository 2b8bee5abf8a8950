//! Every error the API answers with: a status code and one JSON body shape,
//! `{"error": "what went wrong", "code": "machine_readable", "current": {...}?}`.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;

use super::views::RecordView;
use twice_world::ledger::{ExecutionRecord, LedgerError};
use twice_world::runtime::progress::InProgress;

/// An error answer. `current` carries the record as it stands when the request lost a
/// race or asked for something its state does not allow (409), so the caller can decide
/// again without another read.
#[derive(Debug)]
pub struct ApiError {
    pub status: StatusCode,
    pub code: &'static str,
    pub message: String,
    pub current: Option<Box<ExecutionRecord>>,
}

/// One kind of error answer: its status, its `code`, and the operations of `sim/openapi.yaml`
/// (by `operationId`) that can get it. No operation: answers to requests the spec has no
/// operation for (an unknown path, a method an endpoint does not take).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ErrorAnswer {
    pub status: u16,
    pub code: &'static str,
    pub operations: &'static [&'static str],
}

const LIST: &str = "listToolExecutions";
const SHOW: &str = "getToolExecution";
const RESOLVE: &str = "resolveToolExecution";
const COMPENSATE: &str = "compensateToolExecution";
const LIST_RUNS: &str = "listRuns";
const RESUME_RUN: &str = "resumeRun";
const LIST_CONTRADICTIONS: &str = "listContradictions";
const EVERY_OPERATION: &[&str] = &[
    LIST,
    SHOW,
    RESOLVE,
    COMPENSATE,
    LIST_RUNS,
    RESUME_RUN,
    LIST_CONTRADICTIONS,
];
const KEYED: &[&str] = &[SHOW, RESOLVE, COMPENSATE, RESUME_RUN];
const DECISIONS: &[&str] = &[RESOLVE, COMPENSATE, RESUME_RUN];

/// Every error the server answers with. `sim/tests/openapi.rs` holds `sim/openapi.yaml` to it
/// (each status documented on each operation listed, each code in the `Error` schema), and
/// debug builds refuse to send an answer missing here, so the list cannot fall behind the code.
pub const ERROR_ANSWERS: &[ErrorAnswer] = &[
    // Refused while the head is read, before routing (`listener.rs`): any request can get them.
    answer(400, "malformed_request", EVERY_OPERATION),
    answer(408, "request_timeout", EVERY_OPERATION),
    answer(413, "payload_too_large", EVERY_OPERATION),
    answer(414, "uri_too_long", EVERY_OPERATION),
    answer(431, "headers_too_large", EVERY_OPERATION),
    answer(503, "too_many_connections", EVERY_OPERATION),
    // Routing and authentication.
    answer(404, "no_such_route", &[]),
    answer(405, "method_not_allowed", &[]),
    answer(401, "unauthorized", EVERY_OPERATION),
    // Values and bodies.
    answer(422, "invalid_value", EVERY_OPERATION),
    answer(400, "malformed_json", DECISIONS),
    answer(400, "unreadable_body", DECISIONS),
    answer(415, "unsupported_media_type", DECISIONS),
    answer(422, "invalid_body", DECISIONS),
    // Records and decisions.
    answer(404, "not_found", KEYED),
    answer(409, "conflict", DECISIONS),
    answer(409, "call_in_flight", &[RESOLVE]),
    answer(422, "no_compensation", &[COMPENSATE]),
    answer(409, "cannot_look_up", &[COMPENSATE]),
    answer(409, "effect_in_flight", &[COMPENSATE]),
    answer(409, "effect_ambiguous", &[COMPENSATE]),
    answer(409, "effect_missing", &[COMPENSATE]),
    answer(409, "attempt_noted", &[COMPENSATE]),
    answer(409, "compensation_under_way", &[COMPENSATE]),
    answer(501, "no_compensation_target", &[COMPENSATE]),
    answer(502, "target_unavailable", &[COMPENSATE]),
    answer(502, "compensation_failed", &[COMPENSATE]),
    // The ledger and the server.
    answer(503, "busy", EVERY_OPERATION),
    answer(503, "ledger_busy", EVERY_OPERATION),
    answer(503, "ledger_gone", EVERY_OPERATION),
    // Only the game's server (`twice --operator-api`) has no ledger: before a level is open.
    answer(503, "no_level_open", EVERY_OPERATION),
    answer(500, "internal", EVERY_OPERATION),
];

const fn answer(status: u16, code: &'static str, operations: &'static [&'static str]) -> ErrorAnswer {
    ErrorAnswer {
        status,
        code,
        operations,
    }
}

#[derive(Serialize)]
struct ErrorBody<'a> {
    error: &'a str,
    code: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    current: Option<RecordView>,
    /// When `current` is a `started` call: who runs it and since when, so a 409 on a call in
    /// progress says so rather than look like any other conflict.
    #[serde(skip_serializing_if = "Option::is_none")]
    in_progress: Option<InProgressView>,
}

#[derive(Serialize)]
struct InProgressView {
    owner: twice_world::runtime::ids::WorkerId,
    since_ms: u64,
    attempts: u32,
    message: String,
}

impl From<InProgress> for InProgressView {
    fn from(busy: InProgress) -> InProgressView {
        InProgressView {
            message: busy.to_string(),
            owner: busy.owner,
            since_ms: busy.since_ms,
            attempts: busy.attempts,
        }
    }
}

impl ApiError {
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> ApiError {
        ApiError {
            status,
            code,
            message: message.into(),
            current: None,
        }
    }

    pub fn unauthorized(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::UNAUTHORIZED, "unauthorized", message)
    }

    /// A well-formed bearer token no operator has.
    pub fn token_not_valid() -> ApiError {
        ApiError::unauthorized("the bearer token is not valid")
    }

    /// The same answer for a key that does not exist and for one of another tenant,
    /// so a caller learns nothing about other tenants' records.
    pub fn not_found(key: &str) -> ApiError {
        ApiError::new(
            StatusCode::NOT_FOUND,
            "not_found",
            format!("no tool execution with key `{key}`"),
        )
    }

    /// A value that parsed but is not acceptable (an empty reason, an unknown status).
    pub fn invalid(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, "invalid_value", message)
    }

    pub fn conflict(message: impl Into<String>, current: ExecutionRecord) -> ApiError {
        ApiError {
            status: StatusCode::CONFLICT,
            code: "conflict",
            message: message.into(),
            current: Some(Box::new(current)),
        }
    }

    pub fn internal(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "internal", message)
    }

    /// A ledger failure. A lock held too long is worth retrying (503); anything else
    /// is the server's problem, told in full in the server's log but not to the caller,
    /// whose answer should not carry file paths.
    pub fn from_ledger(error: LedgerError) -> ApiError {
        match error {
            LedgerError::Locked { .. } => ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "ledger_busy",
                "the ledger is locked by another writer; try again",
            ),
            other => {
                eprintln!("operator API: ledger error: {other}");
                ApiError::internal("the ledger could not be read or written; the server's log has the detail")
            }
        }
    }
}

impl From<LedgerError> for ApiError {
    fn from(error: LedgerError) -> ApiError {
        ApiError::from_ledger(error)
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        debug_assert!(
            ERROR_ANSWERS
                .iter()
                .any(|known| known.status == self.status.as_u16() && known.code == self.code),
            "{} {} is not in ERROR_ANSWERS (nor, then, in sim/openapi.yaml): add it to both",
            self.status,
            self.code
        );
        let body = ErrorBody {
            error: &self.message,
            code: self.code,
            in_progress: self
                .current
                .as_deref()
                .and_then(InProgress::of_record)
                .map(InProgressView::from),
            current: self.current.map(|record| RecordView::from(*record)),
        };
        let mut response = (self.status, axum::Json(body)).into_response();
        let headers = response.headers_mut();
        headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
        if self.status == StatusCode::UNAUTHORIZED {
            headers.insert(
                header::WWW_AUTHENTICATE,
                HeaderValue::from_static("Bearer realm=\"twice-operator-api\""),
            );
        }
        if self.status == StatusCode::SERVICE_UNAVAILABLE {
            headers.insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
        }
        response
    }
}
