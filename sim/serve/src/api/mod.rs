//! The operator HTTP API: list, read, resolve and compensate tool executions in a
//! ledger file, over HTTP with bearer tokens.
//!
//! It is a thin layer over [`twice_world::runtime::operator`] (the one implementation of
//! resolve and compensate that the game and the simulator use too) and
//! [`twice_world::ledger::Ledger`]. A paused run resumes because the ledger changed: the
//! process driving it (a simulation, the game, a worker) sees the settled record.
//!
//! `twice-sim serve` runs it from the command line; the game starts the same server
//! with [`serve`] on its own ledger file. The endpoints are described in `sim/openapi.yaml`.

mod contradictions;
mod error;
pub(crate) mod handlers;
mod no_ledger;
pub(crate) mod pool;
mod runs;
pub mod served;
pub mod views;

use std::future::Future;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use axum::Router;

use crate::listener;
use axum::extract::DefaultBodyLimit;
use axum::routing::{get, post};

pub use crate::tokens::{Operator, OperatorEntry, Operators, TokensFile, hash_token};
pub use error::{ApiError, ERROR_ANSWERS, ErrorAnswer};
pub use no_ledger::{NO_LEVEL_OPEN_MESSAGE, TokenCheck, serve_without_ledger_until};
pub use served::{OpenExisting, ServedLedger};
/// What a compensation finds in the tool's world; the runtime's operator module owns them,
/// because a simulated world answers the same questions as a real billing server.
pub use twice_world::runtime::operator::{Effect, LookupError, UndoError};

use pool::LedgerPool;
use twice_world::ledger::{ExecutionRecord, LedgerError};

/// The most bytes a request body may have (413 beyond). A resolve carries a reason of
/// at most 2,000 characters and a result of at most [`RESULT_BYTES_MAX`].
pub const BODY_BYTES_MAX: usize = 64 * 1024;
/// The most bytes an operator's `result` may take once written as JSON.
pub const RESULT_BYTES_MAX: usize = 16 * 1024;
/// The most records one page of a listing holds.
pub const PAGE_LIMIT_MAX: u32 = 200;
/// Records on a page when the caller does not say.
pub const PAGE_LIMIT_DEFAULT: u32 = 50;
/// The most ledger connections the server holds at once; requests beyond wait.
pub const CONNECTIONS_MAX: usize = 8;
/// How long a request waits for a ledger connection before the server answers 503.
pub const CONNECTION_WAIT_MS: u64 = 10_000;
/// The most connections open at once; the next is answered 503 `too_many_connections`.
pub const OPEN_CONNECTIONS_MAX: usize = 256;
/// The most connections open at once from one IP address; the next is answered 503
/// `too_many_connections`. Room for a console's concurrent requests, while one client
/// cannot take every connection the server has.
pub const PEER_CONNECTIONS_MAX: usize = 32;
/// How long a client has, from connecting, to send its request's whole head (request line
/// and headers); then 408 `request_timeout`. Bytes trickling in do not extend it.
pub const HEADER_READ_TIMEOUT_MS: u64 = 10_000;
/// How long a connection may make no progress (no byte in, none of the answer taken)
/// before it is closed. Longer than the slowest request can take (a connection wait, a
/// ledger lock and a compensation), so only stalled or idle clients are cut off.
pub const IDLE_TIMEOUT_MS: u64 = 60_000;
/// The most bytes of a request's head (request line and headers); 431 beyond (414 when the
/// request line alone is longer).
pub const HEAD_BYTES_MAX: usize = 16 * 1024;
/// The most bytes of a request's URI (path and query); 414 beyond. The longest the API
/// needs (a percent-encoded key, a cursor, a status and a limit) is under 2 KiB.
pub const URI_BYTES_MAX: usize = 8 * 1024;
/// The most headers a request may have; 431 beyond.
pub const HEADERS_MAX: usize = 64;
/// The address `twice-sim serve` binds when not told otherwise.
pub const DEFAULT_ADDRESS: &str = "127.0.0.1:7878";

/// What time it is, in milliseconds, for the ledger's `updated_at_ms` and history.
/// The command line uses the wall clock; the game passes its simulation's clock, so
/// an operator's decision lands on the same timeline as the run it resumes.
pub trait Clock: Send + Sync + 'static {
    fn now_ms(&self) -> u64;
}

impl<F: Fn() -> u64 + Send + Sync + 'static> Clock for F {
    fn now_ms(&self) -> u64 {
        self()
    }
}

/// Milliseconds since the Unix epoch.
#[derive(Clone, Copy, Debug, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_ms(&self) -> u64 {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |elapsed| u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX))
    }
}

/// Carries out a tool's compensation in the world the tool acted on (billing voids a
/// credit). The ledger alone cannot: it only records that it was asked and what happened.
///
/// Both calls run on a blocking thread: they may do blocking I/O, and should bound it with
/// their own timeout. A compensate request first asks `find_effect` (read-only; it may run
/// for any number of requests), then — only when the effect is there — claims the record
/// as `compensated` (compare-and-set) and calls `compensate`, at most once per record.
/// When the world holds nothing, the call is settled `failed` instead
/// ([`twice_world::runtime::operator::record_nothing_to_compensate`]).
pub trait Compensator: Send + Sync + 'static {
    /// Whether `tool` has a compensation at all (otherwise 422, and nothing is claimed).
    fn has_compensation(&self, tool: &str) -> bool;
    /// Looks the effect of `record`'s call up in the world, by its key. Changes nothing.
    fn find_effect(&self, record: &ExecutionRecord) -> Result<Effect, LookupError>;
    /// Undoes the effect found (`reference` from [`Effect::Found`]). `Ok` carries what was
    /// done (for the history), `Err` why it could not be done; the record then stays
    /// claimed for a person to look at.
    fn compensate(&self, record: &ExecutionRecord, reference: &str) -> Result<String, UndoError>;
}

/// Why the server could not start.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error("ledger file {0} does not exist; serve the file a game, a simulation or a worker writes")]
    LedgerMissing(PathBuf),
    #[error(transparent)]
    Ledger(#[from] LedgerError),
    #[error(
        "{0} is not a loopback address: the operator API would be reachable from other machines. \
         Pass --allow-non-loopback to mean it"
    )]
    NotLoopback(SocketAddr),
    #[error("cannot listen on {address}: {source}")]
    Bind {
        address: SocketAddr,
        #[source]
        source: std::io::Error,
    },
}

/// Refuses a non-loopback address unless the caller explicitly allowed it.
pub fn check_bind_address(address: SocketAddr, allow_non_loopback: bool) -> Result<(), ServeError> {
    if address.ip().is_loopback() || allow_non_loopback {
        Ok(())
    } else {
        Err(ServeError::NotLoopback(address))
    }
}

/// Everything a request needs: ledger connections, who may call, how to compensate,
/// and the clock. Cheap to clone.
#[derive(Clone)]
pub struct ApiState {
    ledgers: Arc<LedgerPool>,
    operators: Arc<Operators>,
    compensator: Option<Arc<dyn Compensator>>,
    clock: Arc<dyn Clock>,
    idle_timeout: Duration,
    header_read_timeout: Duration,
}

impl std::fmt::Debug for ApiState {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("ApiState")
            .field("ledger", self.ledgers.target())
            .field("operators", &self.operators)
            .field("compensation_target", &self.compensator.is_some())
            .finish()
    }
}

impl ApiState {
    /// Opens an existing ledger file (checking it is one) for these operators, with the
    /// wall clock and no compensation target: compensate answers 501 until one is given.
    pub fn open(ledger_path: &Path, operators: Operators) -> Result<ApiState, ServeError> {
        ApiState::open_target(&ServedLedger::File(ledger_path.to_path_buf()), operators)
    }

    /// [`ApiState::open`] on a ledger file or a ledger in PostgreSQL (which must exist too).
    pub fn open_target(target: &ServedLedger, operators: Operators) -> Result<ApiState, ServeError> {
        if let ServedLedger::File(path) = target
            && !path.is_file()
        {
            return Err(ServeError::LedgerMissing(path.clone()));
        }
        let ledgers = LedgerPool::open_target(target)?;
        Ok(ApiState {
            ledgers: Arc::new(ledgers),
            operators: Arc::new(operators),
            compensator: None,
            clock: Arc::new(SystemClock),
            idle_timeout: Duration::from_millis(IDLE_TIMEOUT_MS),
            header_read_timeout: Duration::from_millis(HEADER_READ_TIMEOUT_MS),
        })
    }

    /// Where compensations are carried out.
    pub fn with_compensator(mut self, compensator: Arc<dyn Compensator>) -> ApiState {
        self.compensator = Some(compensator);
        self
    }

    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> ApiState {
        self.clock = clock;
        self
    }

    /// How long a connection may make no progress before it is closed
    /// (default [`IDLE_TIMEOUT_MS`]).
    pub fn with_idle_timeout(mut self, idle_timeout: Duration) -> ApiState {
        self.idle_timeout = idle_timeout;
        self
    }

    /// How long a client has, from connecting, to send a request's whole head
    /// (default [`HEADER_READ_TIMEOUT_MS`]).
    pub fn with_header_read_timeout(mut self, header_read_timeout: Duration) -> ApiState {
        self.header_read_timeout = header_read_timeout;
        self
    }

    pub fn operators(&self) -> &Operators {
        &self.operators
    }

    /// The served ledger file (`None` for a ledger in PostgreSQL).
    pub fn ledger_path(&self) -> Option<&Path> {
        self.ledgers.target().path()
    }

    /// The served ledger, for messages: a file's path, or a URL with its password hidden.
    pub fn ledger_description(&self) -> String {
        self.ledgers.target().to_string()
    }

    pub fn has_compensator(&self) -> bool {
        self.compensator.is_some()
    }
}

/// The API's routes, limits and error handling, ready to serve or to nest in a larger router.
pub fn router(state: ApiState) -> Router {
    Router::new()
        .route("/v1/tool-executions", get(handlers::list))
        .route("/v1/tool-executions/{key}", get(handlers::show))
        .route("/v1/tool-executions/{key}/resolve", post(handlers::resolve))
        .route("/v1/tool-executions/{key}/compensate", post(handlers::compensate))
        .route("/v1/runs", get(runs::list))
        .route("/v1/runs/{run_id}/resume", post(runs::resume))
        .route("/v1/contradictions", get(contradictions::list))
        .fallback(handlers::no_such_route)
        .method_not_allowed_fallback(handlers::method_not_allowed)
        .layer(DefaultBodyLimit::max(BODY_BYTES_MAX))
        .layer(tower_http::catch_panic::CatchPanicLayer::custom(handlers::panicked))
        .with_state(state)
}

/// Serves the API on `listener` until the process ends.
pub fn serve(
    listener: tokio::net::TcpListener,
    state: ApiState,
) -> impl Future<Output = std::io::Result<()>> + Send + 'static {
    serve_until(listener, state, std::future::pending())
}

/// Serves the API on `listener` until `shutdown` completes, then lets requests in
/// flight finish. Every connection is held to the limits in [`listener`]'s documentation
/// and carries one request.
pub fn serve_until(
    listener: tokio::net::TcpListener,
    state: ApiState,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> impl Future<Output = std::io::Result<()>> + Send + 'static {
    let limits = listener::ConnectionLimits {
        open_max: OPEN_CONNECTIONS_MAX,
        per_peer_max: PEER_CONNECTIONS_MAX,
        header_read_timeout: state.header_read_timeout,
        idle_timeout: state.idle_timeout,
    };
    let app = router(state).layer(axum::middleware::map_response(close_after_answering));
    async move {
        let listener = listener::GuardedListener::start(listener, limits);
        axum::serve(listener, app).with_graceful_shutdown(shutdown).await
    }
}

/// One request per connection: the next request opens a new connection and so passes the
/// listener's checks again (a kept-alive connection would let it reach hyper unchecked).
async fn close_after_answering(mut response: axum::response::Response) -> axum::response::Response {
    response.headers_mut().insert(
        axum::http::header::CONNECTION,
        axum::http::HeaderValue::from_static("close"),
    );
    response
}

/// Binds `address` (refusing a non-loopback one unless allowed) for [`serve`].
pub async fn bind(address: SocketAddr, allow_non_loopback: bool) -> Result<tokio::net::TcpListener, ServeError> {
    check_bind_address(address, allow_non_loopback)?;
    tokio::net::TcpListener::bind(address)
        .await
        .map_err(|source| ServeError::Bind { address, source })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_loopback_is_allowed_without_the_flag() {
        for address in ["127.0.0.1:7878", "127.0.0.2:0", "[::1]:7878"] {
            assert!(check_bind_address(address.parse().unwrap(), false).is_ok(), "{address}");
        }
        for address in ["0.0.0.0:7878", "[::]:7878", "192.168.1.10:7878"] {
            let error = check_bind_address(address.parse().unwrap(), false).unwrap_err();
            assert!(error.to_string().contains("--allow-non-loopback"), "{error}");
            assert!(
                check_bind_address(address.parse().unwrap(), true).is_ok(),
                "{address} with the flag"
            );
        }
    }

    #[test]
    fn the_wall_clock_is_in_milliseconds_since_the_epoch() {
        // 2020-01-01 in ms: a clock in seconds or microseconds would be far off.
        let now_ms = SystemClock.now_ms();
        assert!((1_577_836_800_000..4_102_444_800_000).contains(&now_ms), "{now_ms}");
    }
}
