//! Every error the API answers with: a status code and one JSON body shape,
//! `{"error": "what went wrong", "code": "machine_readable", "current": {...}?}`.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;

use super::views::RecordView;
use crate::ledger::{ExecutionRecord, LedgerError};

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

#[derive(Serialize)]
struct ErrorBody<'a> {
    error: &'a str,
    code: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    current: Option<RecordView>,
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
        let body = ErrorBody {
            error: &self.message,
            code: self.code,
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
