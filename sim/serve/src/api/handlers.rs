//! The endpoints, and the extractors that make every bad request a JSON error:
//! who is calling (bearer token), which key, strict JSON bodies and query strings.

use std::sync::Arc;

use axum::Json;
use axum::extract::rejection::PathRejection;
use axum::extract::{FromRequestParts, Path, Query, State};
use axum::http::request::Parts;
use axum::http::{HeaderMap, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::value::RawValue;

use super::error::ApiError;
use super::views::{Cursor, DetailView, PageView, RecordView, compact_json, shorten};
use super::{ApiState, Compensator, Effect, LookupError, PAGE_LIMIT_DEFAULT, PAGE_LIMIT_MAX, RESULT_BYTES_MAX};
use crate::json::StrictJson;
use crate::tokens::Operator;
use twice_world::ledger::{ExecutionRecord, Ledger, RecordFilter, SettleError};
use twice_world::runtime::key::IdempotencyKey;
use twice_world::runtime::operator::{
    self, CompensateRequest, CompensationTarget, LedgerAccess, OperatorError, ResolveRequest, UndoError,
};
use twice_world::runtime::rules::Status;

// ----- extractors -----

/// The operator a request's bearer token belongs to; 401 for anything else.
pub(super) struct Authenticated(pub Operator);

impl FromRequestParts<ApiState> for Authenticated {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &ApiState) -> Result<Self, ApiError> {
        state
            .operators
            .authenticate(bearer_token(&parts.headers)?)
            .map(Authenticated)
            .ok_or_else(ApiError::token_not_valid)
    }
}

/// The token of a request's one `Authorization: Bearer <token>` header; 401 for anything else.
pub(super) fn bearer_token(headers: &HeaderMap) -> Result<&str, ApiError> {
    let mut values = headers.get_all(header::AUTHORIZATION).iter();
    let value = values
        .next()
        .ok_or_else(|| ApiError::unauthorized("an `Authorization: Bearer <token>` header is required"))?;
    if values.next().is_some() {
        return Err(ApiError::unauthorized("send one Authorization header, not several"));
    }
    let text = value
        .to_str()
        .map_err(|_| ApiError::unauthorized("the Authorization header holds bytes that are not visible ASCII"))?;
    let (scheme, token) = text.trim().split_once(' ').unwrap_or((text.trim(), ""));
    if !scheme.eq_ignore_ascii_case("bearer") {
        return Err(ApiError::unauthorized(
            "the Authorization header must be `Bearer <token>`",
        ));
    }
    Ok(token.trim())
}

fn key_from_path(path: Result<Path<String>, PathRejection>) -> Result<IdempotencyKey, ApiError> {
    let Path(raw) = path.map_err(|rejection| ApiError::invalid(format!("key: {}", rejection.body_text())))?;
    IdempotencyKey::parse(&raw).map_err(|_| {
        ApiError::invalid(format!(
            "`{}` is not an idempotency key (1 to 200 visible characters, no spaces)",
            shorten(&raw)
        ))
    })
}

/// The record under `key` if the operator may see its tenant; otherwise the same 404
/// as for a key that does not exist.
fn visible(ledger: &Ledger, key: &IdempotencyKey, operator: &Operator) -> Result<ExecutionRecord, ApiError> {
    match ledger.record(key)? {
        Some(record) if operator.may_see(&record.tenant) => Ok(record),
        _ => Err(ApiError::not_found(key.as_str())),
    }
}

fn detail(ledger: &Ledger, record: ExecutionRecord) -> Result<DetailView, ApiError> {
    let history = ledger.history(&record.key)?;
    Ok(DetailView::new(record, history))
}

/// The one reason rule every console applies ([`operator::check_reason`]), checked before the
/// ledger is touched.
fn reason_checked(reason: &str) -> Result<(), ApiError> {
    operator::check_reason(reason).map_err(|error| ApiError::invalid(format!("reason: {error}")))
}

/// Turns the one implementation's refusal into an answer. A refusal that depends on the
/// record's state (a lost race, already compensated) carries the record as it is now.
fn refusal(ledger: &Ledger, key: &IdempotencyKey, error: OperatorError) -> ApiError {
    let current = |message: String| match ledger.record(key) {
        Ok(Some(record)) => ApiError::conflict(message, record),
        Ok(None) => ApiError::not_found(key.as_str()),
        Err(error) => ApiError::from_ledger(error),
    };
    match error {
        OperatorError::Reason(_) | OperatorError::BadStatus(_) => ApiError::invalid(error.to_string()),
        OperatorError::MissingOperator => ApiError::internal("the credential names no operator"),
        OperatorError::NoCompensation(_) => {
            ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, "no_compensation", error.to_string())
        }
        OperatorError::NothingToCompensate { .. } | OperatorError::AlreadyCompensated(_) => current(error.to_string()),
        OperatorError::CompensationUnderWay { .. } => {
            let mut answer = current(error.to_string());
            answer.code = "compensation_under_way";
            answer
        }
        OperatorError::EffectMissing { .. } => {
            let mut answer = current(error.to_string());
            answer.code = "effect_missing";
            answer
        }
        OperatorError::MayBeOnItsWay { .. } => {
            let mut answer = current(error.to_string());
            answer.code = "attempt_noted";
            answer
        }
        // A `started` call: its worker holds it and its request may be on its way. The
        // operator says so explicitly (`acknowledge_in_flight`) or waits.
        OperatorError::InFlight { .. } | OperatorError::Settle(SettleError::InFlight { .. }) => {
            let mut answer = current(error.to_string());
            answer.code = "call_in_flight";
            answer
        }
        OperatorError::Lookup(lookup, record) => lookup_refusal(*record, lookup),
        OperatorError::CompensationFailed { .. } => {
            let mut answer = current(error.to_string());
            answer.status = StatusCode::BAD_GATEWAY;
            answer.code = "compensation_failed";
            answer
        }
        OperatorError::Settle(SettleError::NotFound(_)) => ApiError::not_found(key.as_str()),
        OperatorError::Settle(SettleError::Stale { expected, current, .. }) => ApiError::conflict(
            format!(
                "{key} is {}, not {expected} as you expected: someone decided first",
                current.status
            ),
            *current,
        ),
        OperatorError::Settle(SettleError::AlreadySettled { current, .. }) => ApiError::conflict(
            format!(
                "{key} is already settled as {}; a settled decision is never overwritten",
                current.status
            ),
            *current,
        ),
        OperatorError::Settle(SettleError::NotADecision { to }) => {
            ApiError::invalid(format!("status: {to} is not a decision"))
        }
        OperatorError::Settle(SettleError::AttemptNoted { current, .. }) => {
            let mut answer = ApiError::conflict(attempt_noted_text(key.as_str(), current.attempts), *current);
            answer.code = "attempt_noted";
            answer
        }
        OperatorError::Settle(SettleError::Ledger(error)) | OperatorError::Ledger(error) => {
            ApiError::from_ledger(error)
        }
        OperatorError::NoSuchRun(_)
        | OperatorError::NotDeadLettered { .. }
        | OperatorError::RunChanged { .. }
        | OperatorError::UnreadableRun { .. } => {
            ApiError::internal(format!("a run's refusal answered a tool execution's request: {error}"))
        }
        // A refusal a later runtime adds (its errors may grow): refused, with the record as
        // it stands, in the runtime's own words.
        _ => current(error.to_string()),
    }
}

// ----- endpoints -----

/// The listing's filter for every call whose outcome is not known yet.
const UNKNOWN: &str = "unknown";

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct ListQuery {
    status: Option<String>,
    limit: Option<String>,
    cursor: Option<String>,
}

fn parse_status(field: &str, text: &str) -> Result<Status, ApiError> {
    Status::parse(text).ok_or_else(|| {
        ApiError::invalid(format!(
            "{field}: `{}` is not a status; one of {}",
            shorten(text),
            Status::ALL.map(Status::name).join(", ")
        ))
    })
}

/// `GET /v1/tool-executions`: the caller's tenants' records, longest-waiting first.
pub(super) async fn list(
    State(state): State<ApiState>,
    Authenticated(operator): Authenticated,
    uri: Uri,
) -> Result<Json<PageView>, ApiError> {
    let Query(query) = Query::<ListQuery>::try_from_uri(&uri)
        .map_err(|rejection| ApiError::invalid(format!("query: {}", rejection.body_text())))?;
    // `unknown` is both statuses an operator settles: the calls waiting on a person.
    let statuses: Vec<Option<Status>> = match query.status.as_deref() {
        None => vec![None],
        Some(UNKNOWN) => vec![Some(Status::Started), Some(Status::Indeterminate)],
        Some(text) => vec![Some(parse_status("status", text).map_err(|error| ApiError {
            message: format!("{} (or {UNKNOWN}: started and indeterminate)", error.message),
            ..error
        })?)],
    };
    let limit = match query.limit.as_deref() {
        None => PAGE_LIMIT_DEFAULT,
        Some(text) => text
            .parse::<u32>()
            .ok()
            .filter(|limit| (1..=PAGE_LIMIT_MAX).contains(limit))
            .ok_or_else(|| {
                ApiError::invalid(format!(
                    "limit: a whole number from 1 to {PAGE_LIMIT_MAX}, not `{}`",
                    shorten(text)
                ))
            })?,
    };
    let cursor = query
        .cursor
        .as_deref()
        .map(Cursor::decode)
        .transpose()
        .map_err(|message| ApiError::invalid(format!("cursor: {message}")))?;
    let tenants: Vec<String> = operator.tenants.iter().cloned().collect();
    let mut records = state
        .ledgers
        .run(move |ledger| {
            // One query per tenant and status, each the first `limit + 1` after the cursor
            // in the ledger's order; merged, their first `limit + 1` are the overall first.
            let after = cursor
                .as_ref()
                .map(|cursor| (cursor.updated_at_ms, cursor.key.as_str()));
            let mut records = Vec::new();
            for tenant in &tenants {
                for status in &statuses {
                    records.extend(
                        ledger.records(
                            RecordFilter::default()
                                .with_tenant(tenant.as_str())
                                .with_status(*status)
                                .with_after(after)
                                .with_limit(limit + 1),
                        )?,
                    );
                }
            }
            Ok(records)
        })
        .await?;
    // The ledger orders keys by SQLite's binary collation, which is Rust's byte order.
    records
        .sort_by(|left, right| (left.updated_at_ms, left.key.as_str()).cmp(&(right.updated_at_ms, right.key.as_str())));
    let more = records.len() > limit as usize;
    records.truncate(limit as usize);
    let next_cursor = if more {
        records.last().map(|last| {
            Cursor {
                updated_at_ms: last.updated_at_ms,
                key: last.key.to_string(),
            }
            .encode()
        })
    } else {
        None
    };
    Ok(Json(PageView {
        items: records.into_iter().map(RecordView::from).collect(),
        next_cursor,
    }))
}

/// `GET /v1/tool-executions/{key}`: one record with its full history.
pub(super) async fn show(
    State(state): State<ApiState>,
    Authenticated(operator): Authenticated,
    path: Result<Path<String>, PathRejection>,
) -> Result<Json<DetailView>, ApiError> {
    let key = key_from_path(path)?;
    let view = state
        .ledgers
        .run(move |ledger| {
            let record = visible(ledger, &key, &operator)?;
            detail(ledger, record)
        })
        .await?;
    Ok(Json(view))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct ResolveBody {
    status: String,
    reason: String,
    expected_status: Option<String>,
    /// Kept as the operator's JSON text, never parsed into numbers: a receipt's
    /// `123456789012345678901234567890` is stored and shown back digit for digit.
    result: Option<Box<RawValue>>,
    /// The operator knows the call may be `started` (its worker alive, its request on its way)
    /// and settles it anyway; without it a `started` call is refused with 409 `call_in_flight`.
    #[serde(default)]
    acknowledge_in_flight: bool,
}

/// `POST /v1/tool-executions/{key}/resolve`: what the operator found, compare-and-set.
pub(super) async fn resolve(
    State(state): State<ApiState>,
    Authenticated(operator): Authenticated,
    path: Result<Path<String>, PathRejection>,
    StrictJson(body): StrictJson<ResolveBody>,
) -> Result<Json<DetailView>, ApiError> {
    let key = key_from_path(path)?;
    let status = parse_status("status", &body.status)?;
    if !matches!(status, Status::Completed | Status::Failed) {
        return Err(ApiError::invalid(format!(
            "status: an operator resolves a call to completed or failed, not {status}"
        )));
    }
    reason_checked(&body.reason)?;
    let expected_status = body
        .expected_status
        .as_deref()
        .map(|text| parse_status("expected_status", text))
        .transpose()?;
    let result = match body.result {
        None => None,
        Some(_) if status != Status::Completed => {
            return Err(ApiError::invalid(
                "result: only a call resolved as completed has a result; leave it out for failed",
            ));
        }
        Some(raw) => {
            let text = compact_json(raw.get());
            if text.len() > RESULT_BYTES_MAX {
                return Err(ApiError::invalid(format!(
                    "result: {} bytes as JSON, more than the {RESULT_BYTES_MAX} allowed",
                    text.len()
                )));
            }
            Some(text)
        }
    };
    let mut request = ResolveRequest::new(status, body.reason, operator.id.clone());
    request.expected_status = expected_status;
    request.result = result;
    request.acknowledge_in_flight = body.acknowledge_in_flight;
    let clock = Arc::clone(&state.clock);
    let view = state
        .ledgers
        .run(move |ledger| {
            visible(ledger, &key, &operator)?;
            let now_ms = clock.now_ms();
            let record =
                operator::resolve(ledger, &key, &request, now_ms).map_err(|error| refusal(ledger, &key, error))?;
            detail(ledger, record)
        })
        .await?;
    Ok(Json(view))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct CompensateBody {
    reason: String,
}

/// Why the effect could not be looked up: nothing was undone or recorded. A refusal that
/// depends on the world's state carries the record as it stands.
fn lookup_refusal(record: ExecutionRecord, error: LookupError) -> ApiError {
    let (status, code) = match &error {
        LookupError::CannotLookUp(_) => (StatusCode::CONFLICT, "cannot_look_up"),
        LookupError::InFlight(_) => (StatusCode::CONFLICT, "effect_in_flight"),
        LookupError::Ambiguous(_) => (StatusCode::CONFLICT, "effect_ambiguous"),
        LookupError::Unavailable(_) => (StatusCode::BAD_GATEWAY, "target_unavailable"),
        // A reason a later runtime adds: it could not look the effect up, in its own words.
        _ => (StatusCode::CONFLICT, "cannot_look_up"),
    };
    let message = match &error {
        LookupError::Unavailable(detail) => {
            format!("{detail}. Nothing was undone and nothing recorded; try again when it answers")
        }
        _ => error.to_string(),
    };
    ApiError {
        status,
        code,
        message,
        current: Some(Box::new(record)),
    }
}

/// The ledger for a compensation: one pooled connection per step, none held in between.
struct PoolAccess<'a> {
    pool: &'a super::pool::LedgerPool,
    handle: tokio::runtime::Handle,
    clock: &'a dyn super::Clock,
    /// Why the pool could not lend a connection (busy, the file gone): the answer the client
    /// gets, whatever the compensation made of the failed step.
    failure: Option<ApiError>,
}

impl LedgerAccess for PoolAccess<'_> {
    fn with_ledger<T>(&mut self, step: impl FnOnce(&mut Ledger) -> T) -> Result<T, twice_world::ledger::LedgerError> {
        self.pool.with_connection(&self.handle, step).map_err(|failure| {
            let error = twice_world::ledger::LedgerError::Store {
                location: self.pool.target().to_string(),
                context: "lending a ledger connection",
                detail: failure.message.clone(),
            };
            self.failure = Some(failure);
            error
        })
    }

    fn now_ms(&mut self) -> u64 {
        self.clock.now_ms()
    }
}

/// The API's compensation target as the runtime's one compensation asks it.
struct Target<'a>(&'a dyn Compensator);

impl CompensationTarget for Target<'_> {
    fn has_compensation(&self, tool: &str) -> bool {
        self.0.has_compensation(tool)
    }

    fn find_effect(&mut self, record: &ExecutionRecord) -> Result<Effect, LookupError> {
        self.0.find_effect(record)
    }

    fn undo(&mut self, record: &ExecutionRecord, reference: &str) -> Result<String, UndoError> {
        self.0.compensate(record, reference)
    }
}

/// `POST /v1/tool-executions/{key}/compensate`: undo the call's effect, once.
///
/// The runtime's one compensation ([`operator::compensate`]) runs on a blocking thread of its
/// own, taking a ledger connection only for each short step and none while billing is asked:
/// a slow or silent billing holds this request, never the ledger.
pub(super) async fn compensate(
    State(state): State<ApiState>,
    Authenticated(operator): Authenticated,
    path: Result<Path<String>, PathRejection>,
    StrictJson(body): StrictJson<CompensateBody>,
) -> Result<Json<DetailView>, ApiError> {
    let key = key_from_path(path)?;
    reason_checked(&body.reason)?;
    let compensator: Arc<dyn Compensator> = state.compensator.clone().ok_or_else(|| {
        ApiError::new(
            StatusCode::NOT_IMPLEMENTED,
            "no_compensation_target",
            "no compensation target configured: this server cannot reach the tool's world (billing), \
             so it cannot undo an effect. Resolve the call instead, or start the server with a target",
        )
    })?;
    {
        let (key, operator) = (key.clone(), operator.clone());
        state
            .ledgers
            .run(move |ledger| visible(ledger, &key, &operator).map(|_| ()))
            .await?;
    }
    let pool = Arc::clone(&state.ledgers);
    let clock = Arc::clone(&state.clock);
    let handle = tokio::runtime::Handle::current();
    let joined = tokio::task::spawn_blocking(move || {
        let mut access = PoolAccess {
            pool: &pool,
            handle: handle.clone(),
            clock: clock.as_ref(),
            failure: None,
        };
        let request = CompensateRequest::new(&key, &body.reason, &operator.id);
        let outcome = operator::compensate(
            &mut access,
            &mut Target(compensator.as_ref()),
            &request,
            &twice_world::text::WORDS,
        );
        if let Some(failure) = access.failure.take() {
            return Err(failure);
        }
        pool.with_connection(&handle, |ledger| match outcome {
            Ok(record) => detail(ledger, record),
            Err(error) => Err(refusal(ledger, &key, error)),
        })?
    })
    .await;
    match joined {
        Ok(view) => Ok(Json(view?)),
        Err(error) => {
            eprintln!("operator API: a compensation task failed: {error}");
            Err(ApiError::internal(
                "the request failed inside the server; the server's log has the detail",
            ))
        }
    }
}

pub(super) async fn no_such_route(uri: Uri) -> ApiError {
    ApiError::new(
        StatusCode::NOT_FOUND,
        "no_such_route",
        format!(
            "no endpoint at `{}`; see sim/openapi.yaml for the ones there are",
            shorten(uri.path())
        ),
    )
}

pub(super) async fn method_not_allowed() -> ApiError {
    ApiError::new(
        StatusCode::METHOD_NOT_ALLOWED,
        "method_not_allowed",
        "this endpoint does not take that method: reads are GET, decisions are POST",
    )
}

/// A panic in a handler is a bug; the caller still gets a JSON 500, and the server goes on.
pub(super) fn panicked(panic: Box<dyn std::any::Any + Send + 'static>) -> Response {
    let text = panic
        .downcast_ref::<String>()
        .map(String::as_str)
        .or_else(|| panic.downcast_ref::<&str>().copied())
        .unwrap_or("(no message)");
    eprintln!("operator API: a handler panicked: {text}");
    ApiError::internal("the request failed inside the server; the server's log has the detail").into_response()
}

/// Why a call whose request passed the send fence cannot be settled as if nothing left,
/// its attempts counted in words.
fn attempt_noted_text(key: &str, attempts: u32) -> String {
    format!(
        "{key} has {} noted: its request may still be on its way, so it cannot be settled as if nothing left",
        twice_world::text::counted(u64::from(attempts), "attempt", "attempts")
    )
}

#[cfg(test)]
mod tests {
    use super::attempt_noted_text;

    #[test]
    fn the_attempts_noted_are_counted_in_words() {
        assert!(attempt_noted_text("r1:c1", 1).starts_with("r1:c1 has 1 attempt noted: its request"));
        assert!(attempt_noted_text("r1:c1", 2).starts_with("r1:c1 has 2 attempts noted: its request"));
    }
}
