//! The API with no ledger behind it: the game's server (`twice --operator-api`) while no level
//! is open. It has the same routes, the same listener limits and the same token check as the
//! real API, then answers 503 `no_level_open`. The token comes first so that a caller without
//! one learns nothing about the game (not even whether a level is open), and a client sees the
//! same answers, in the same order, as from `twice-sim serve`: 404 and 405 before the token,
//! 401 before the state of the server.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::{get, post};

use super::error::ApiError;
use super::handlers::{bearer_token, method_not_allowed, no_such_route};
use super::{HEADER_READ_TIMEOUT_MS, IDLE_TIMEOUT_MS, OPEN_CONNECTIONS_MAX, PEER_CONNECTIONS_MAX};
use crate::listener;

/// Whether a bearer token belongs to someone who may call the API.
pub type TokenCheck = Arc<dyn Fn(&str) -> bool + Send + Sync>;

/// What the caller is told once its token is accepted.
pub const NO_LEVEL_OPEN_MESSAGE: &str =
    "no level is open in the game, so there is no ledger to serve: open a level, then ask again";

async fn no_level_open(State(accepts): State<TokenCheck>, headers: HeaderMap) -> ApiError {
    let token = match bearer_token(&headers) {
        Ok(token) => token,
        Err(refused) => return refused,
    };
    if !accepts(token) {
        return ApiError::token_not_valid();
    }
    ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "no_level_open", NO_LEVEL_OPEN_MESSAGE)
}

/// The real API's routes (`super::router`), each answered by [`no_level_open`].
fn router(accepts: TokenCheck) -> Router {
    Router::new()
        .route("/v1/tool-executions", get(no_level_open))
        .route("/v1/tool-executions/{key}", get(no_level_open))
        .route("/v1/tool-executions/{key}/resolve", post(no_level_open))
        .route("/v1/tool-executions/{key}/compensate", post(no_level_open))
        .route("/v1/runs", get(no_level_open))
        .route("/v1/runs/{run_id}/resume", post(no_level_open))
        .route("/v1/contradictions", get(no_level_open))
        .fallback(no_such_route)
        .method_not_allowed_fallback(method_not_allowed)
        .with_state(accepts)
}

/// Serves the API's routes with no ledger on `listener` until `shutdown` completes: every
/// request with a token `accepts` takes is answered 503 `no_level_open`, any other 401.
/// Connections are held to the same limits as [`super::serve_until`]'s.
pub fn serve_without_ledger_until(
    listener: tokio::net::TcpListener,
    accepts: TokenCheck,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> impl Future<Output = std::io::Result<()>> + Send + 'static {
    let limits = listener::ConnectionLimits {
        open_max: OPEN_CONNECTIONS_MAX,
        per_peer_max: PEER_CONNECTIONS_MAX,
        header_read_timeout: Duration::from_millis(HEADER_READ_TIMEOUT_MS),
        idle_timeout: Duration::from_millis(IDLE_TIMEOUT_MS),
    };
    let app = router(accepts).layer(axum::middleware::map_response(super::close_after_answering));
    async move {
        let listener = listener::GuardedListener::start(listener, limits);
        axum::serve(listener, app).with_graceful_shutdown(shutdown).await
    }
}
