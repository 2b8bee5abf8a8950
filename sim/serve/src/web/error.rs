//! Every error the room answers with: a status code and the operator API's JSON shape,
//! `{"error": "what went wrong", "code": "machine_readable"}`, plus `winner` when a
//! participant lost the room's race, so the browser can say who decided first.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;

use super::views::DecisionView;
use crate::api::ApiError;

/// Every (status, code) the room answers with: its own, the JSON body checks it shares
/// with the operator API, and the guarded listener's (which answer before a route is
/// found). The book's room chapter lists exactly these (a test reads it); [`WebError::new`] refuses, in
/// debug builds, a code not listed here.
pub const WEB_ERROR_CODES: &[(u16, &str)] = &[
    (400, "malformed_json"),
    (400, "malformed_request"),
    (400, "unreadable_body"),
    (401, "no_session"),
    (401, "not_presenter"),
    (403, "locked"),
    (403, "wrong_code"),
    (404, "no_level_open"),
    (404, "no_race"),
    (404, "no_such_asset"),
    (404, "no_such_route"),
    (404, "unknown_level"),
    (404, "unknown_race"),
    (405, "method_not_allowed"),
    (408, "request_timeout"),
    (409, "already_predicted"),
    (409, "conflict"),
    (409, "level_too_long"),
    (409, "move_refused"),
    (409, "name_taken"),
    (409, "not_over"),
    (409, "other_level"),
    (409, "race_changed"),
    (409, "run_ended"),
    (413, "payload_too_large"),
    (414, "uri_too_long"),
    (415, "unsupported_media_type"),
    (422, "invalid_body"),
    (422, "invalid_move"),
    (422, "invalid_value"),
    (422, "not_exportable"),
    (422, "unknown_guard"),
    (429, "too_many_tries"),
    (431, "headers_too_large"),
    (500, "internal"),
    (503, "busy"),
    (503, "room_full"),
    (503, "too_many_connections"),
];

/// An error answer.
#[derive(Debug)]
pub struct WebError {
    pub status: StatusCode,
    pub code: &'static str,
    pub message: String,
    /// In a lost race: the decision that won (boxed: errors travel by value everywhere).
    pub winner: Option<Box<DecisionView>>,
    /// Already told in full in the server's log ([`WebError::logged`]): not logged again.
    pub logged: bool,
}

#[derive(Serialize)]
struct ErrorBody<'a> {
    error: &'a str,
    code: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    winner: Option<&'a DecisionView>,
}

impl WebError {
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> WebError {
        debug_assert!(
            WEB_ERROR_CODES.contains(&(status.as_u16(), code)),
            "{status} {code} is not in WEB_ERROR_CODES (and so not in the book)"
        );
        WebError {
            status,
            code,
            message: message.into(),
            winner: None,
            logged: false,
        }
    }

    /// A value that parsed but is not acceptable.
    pub fn invalid(message: impl Into<String>) -> WebError {
        WebError::new(StatusCode::UNPROCESSABLE_ENTITY, "invalid_value", message)
    }

    pub fn not_found(code: &'static str, message: impl Into<String>) -> WebError {
        WebError::new(StatusCode::NOT_FOUND, code, message)
    }

    pub fn conflict(code: &'static str, message: impl Into<String>) -> WebError {
        WebError::new(StatusCode::CONFLICT, code, message)
    }

    pub fn internal(message: impl Into<String>) -> WebError {
        WebError::new(StatusCode::INTERNAL_SERVER_ERROR, "internal", message)
    }

    pub fn busy() -> WebError {
        WebError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "busy",
            format!(
                "the server stayed busy with other players' simulations for {} ms; try again",
                super::SIMULATION_WAIT_MS
            ),
        )
    }

    /// A failure inside the server: told in full in the server's log, not to the browser.
    pub fn logged(context: &str, error: impl std::fmt::Display) -> WebError {
        tracing::error!("{context}: {error}");
        WebError {
            logged: true,
            ..WebError::internal(format!("{context}; the server's log has the detail"))
        }
    }
}

impl From<ApiError> for WebError {
    /// The operator API's body checks (content type, size, JSON, unknown fields) and its
    /// ledger connections answer in the same shape; `current` has no place here.
    fn from(error: ApiError) -> WebError {
        WebError::new(error.status, error.code, error.message)
    }
}

impl IntoResponse for WebError {
    fn into_response(self) -> Response {
        // The server's own failures and refusals (busy, full) are the presenter's business:
        // one line each. A participant's mistakes (a 4xx) are told to their page alone.
        if self.status.is_server_error() && !self.logged {
            tracing::warn!("answered {} {}: {}", self.status.as_u16(), self.code, self.message);
        }
        let body = ErrorBody {
            error: &self.message,
            code: self.code,
            winner: self.winner.as_deref(),
        };
        let mut response = (self.status, axum::Json(body)).into_response();
        let headers = response.headers_mut();
        headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
        if self.status == StatusCode::SERVICE_UNAVAILABLE {
            headers.insert(header::RETRY_AFTER, HeaderValue::from_static("2"));
        }
        response
    }
}
