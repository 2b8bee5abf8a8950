//! `twice --operator-api ADDR`: the operator HTTP API — the same server as `twice-sim serve`
//! (`twice_sim::api`) — on the ledger file of the level being played, so a workshop can
//! `curl` the game's ledger and settle Penny's unknown calls from a terminal.
//!
//! The address is bound once, at start (a busy port is an error before the window opens).
//! Each level, restart or rewind writes a fresh ledger file; the server follows it, serving
//! a clear 503 while no level is open. Decisions made over HTTP reach the simulation through
//! `Simulation::notice_settlements`, the same door the simulator uses for any outside
//! settlement: a parked run wakes and goes on with the operator's truth.

use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use axum::http::StatusCode;
use axum::response::IntoResponse;
use bevy::prelude::*;
use tokio::sync::oneshot;
use twice_sim::api::{self, ApiState, OperatorEntry, Operators};

use crate::session::{Session, SessionSet};

/// How often the game looks for decisions made over HTTP.
const POLL_INTERVAL: Duration = Duration::from_millis(200);
/// How long a stopping server may take to finish its requests before it is dropped.
const STOP_TIMEOUT: Duration = Duration::from_secs(2);
/// The operator id written into the ledger's history when the game made the token itself.
pub const WORKSHOP_OPERATOR: &str = "workshop";

pub(super) fn plugin(app: &mut App) {
    app.add_systems(
        Update,
        (follow_session_ledger, poll_outside_settlements)
            .chain()
            .after(SessionSet::Conclude)
            .run_if(resource_exists::<OperatorApi>),
    );
}

/// Who may call the game's API.
#[derive(Debug)]
enum Credentials {
    /// A tokens file, as `twice-sim serve --tokens` reads it.
    File(Operators),
    /// A token made at start; its operator may act for every tenant of the open level.
    Generated { token: String },
}

/// The running operator API.
#[derive(Resource)]
pub struct OperatorApi {
    address: SocketAddr,
    runtime: tokio::runtime::Runtime,
    /// Bound once at start; each server serves a clone, so the port never goes unbound.
    listener: std::net::TcpListener,
    credentials: Credentials,
    /// The simulation's clock, for the `updated_at_ms` of decisions made over HTTP.
    clock_ms: Arc<AtomicU64>,
    serving: Option<Serving>,
    last_poll: Option<Instant>,
    /// What went wrong last, for the ledger panel.
    pub problem: Option<String>,
}

impl std::fmt::Debug for OperatorApi {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("OperatorApi")
            .field("address", &self.address)
            .field("serving", &self.serving.as_ref().map(|serving| &serving.ledger))
            .finish_non_exhaustive()
    }
}

struct Serving {
    /// The ledger served, or `None` for the "no level is open" answer.
    ledger: Option<PathBuf>,
    stop: oneshot::Sender<()>,
    done: tokio::task::JoinHandle<std::io::Result<()>>,
}

impl OperatorApi {
    /// Binds `address` (loopback unless `allow_non_loopback`) and reads the tokens file, if any.
    pub fn start(address: SocketAddr, allow_non_loopback: bool, tokens: Option<&Path>) -> Result<OperatorApi, String> {
        api::check_bind_address(address, allow_non_loopback).map_err(|error| error.to_string())?;
        let credentials = match tokens {
            Some(path) => Credentials::File(Operators::load(path).map_err(|error| error.to_string())?),
            None => Credentials::Generated {
                token: api::tokens::generate_token()?,
            },
        };
        let listener = std::net::TcpListener::bind(address)
            .map_err(|error| format!("--operator-api: cannot listen on {address}: {error}"))?;
        listener
            .set_nonblocking(true)
            .map_err(|error| format!("--operator-api: {address}: {error}"))?;
        let address = listener.local_addr().unwrap_or(address);
        // One worker thread: the API waits on SQLite and the network, not the CPU, and the
        // game's frames need the cores.
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("operator-api")
            .enable_all()
            .build()
            .map_err(|error| format!("--operator-api: cannot start its runtime: {error}"))?;
        let mut operator_api = OperatorApi {
            address,
            runtime,
            listener,
            credentials,
            clock_ms: Arc::new(AtomicU64::new(0)),
            serving: None,
            last_poll: None,
            problem: None,
        };
        operator_api.serve(None, &BTreeSet::new());
        Ok(operator_api)
    }

    /// The address bound (with the real port when `:0` was asked for).
    pub fn address(&self) -> SocketAddr {
        self.address
    }

    /// The token to send, when the game made it (a tokens file's tokens are not known here).
    pub fn generated_token(&self) -> Option<&str> {
        match &self.credentials {
            Credentials::Generated { token } => Some(token),
            Credentials::File(_) => None,
        }
    }

    /// A line to paste into a terminal.
    pub fn curl_hint(&self) -> String {
        let token = self.generated_token().unwrap_or("$TOKEN");
        format!(
            "curl -H 'Authorization: Bearer {token}' http://{}/v1/tool-executions",
            self.address
        )
    }

    /// The ledger file being served, if a level is open.
    pub fn serving(&self) -> Option<&Path> {
        self.serving.as_ref().and_then(|serving| serving.ledger.as_deref())
    }

    fn operators(&self, tenants: &BTreeSet<String>) -> Result<Operators, String> {
        match &self.credentials {
            Credentials::File(operators) => Ok(operators.clone()),
            Credentials::Generated { token } => Operators::from_entries(&[OperatorEntry {
                id: WORKSHOP_OPERATOR.to_owned(),
                token_sha256: api::hash_token(token),
                tenants: tenants.iter().cloned().collect(),
            }])
            .map_err(|(_, _, message)| message),
        }
    }

    /// Stops the server in place (letting its requests finish) and starts one on `ledger`.
    fn serve(&mut self, ledger: Option<&Path>, tenants: &BTreeSet<String>) {
        if let Some(serving) = self.serving.take() {
            let _ = serving.stop.send(());
            let finished = self
                .runtime
                .block_on(async { tokio::time::timeout(STOP_TIMEOUT, serving.done).await });
            if finished.is_err() {
                warn!(
                    "the operator API on {} took over {STOP_TIMEOUT:?} to stop",
                    self.address
                );
            }
        }
        let listener = match self.listener.try_clone().and_then(|listener| {
            let _entered = self.runtime.enter();
            tokio::net::TcpListener::from_std(listener)
        }) {
            Ok(listener) => listener,
            Err(error) => {
                self.problem = Some(format!("the operator API cannot listen: {error}"));
                return;
            }
        };
        let (stop, stopped) = oneshot::channel::<()>();
        let shutdown = async move {
            let _ = stopped.await;
        };
        let done = match ledger {
            Some(path) => {
                let state = self
                    .operators(tenants)
                    .and_then(|operators| ApiState::open(path, operators).map_err(|error| error.to_string()));
                match state {
                    Ok(state) => {
                        let clock = Arc::clone(&self.clock_ms);
                        let state = state.with_clock(Arc::new(move || clock.load(Ordering::Relaxed)));
                        self.problem = None;
                        self.runtime.spawn(api::serve_until(listener, state, shutdown))
                    }
                    Err(problem) => {
                        self.problem = Some(format!("the operator API cannot serve {}: {problem}", path.display()));
                        self.runtime.spawn(serve_nothing(listener, shutdown))
                    }
                }
            }
            None => self.runtime.spawn(serve_nothing(listener, shutdown)),
        };
        self.serving = Some(Serving {
            ledger: ledger.map(Path::to_path_buf),
            stop,
            done,
        });
    }
}

/// While no level is open, every request gets a 503 that says so (rather than hanging).
async fn serve_nothing(
    listener: tokio::net::TcpListener,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let app = axum::Router::new().fallback(|| async {
        (
            StatusCode::SERVICE_UNAVAILABLE,
            axum::Json(serde_json::json!({
                "error": "no_level_open",
                "message": "no level is open in the game: open one, then ask again",
            })),
        )
            .into_response()
    });
    axum::serve(listener, app).with_graceful_shutdown(shutdown).await
}

/// Serves the open level's ledger file; follows restarts and rewinds to their new files.
fn follow_session_ledger(session: Option<Res<Session>>, mut operator_api: ResMut<OperatorApi>) {
    let ledger = session
        .as_ref()
        .and_then(|session| session.ledger_path().map(Path::to_path_buf));
    if let Some(session) = &session {
        operator_api
            .clock_ms
            .store(session.simulation().now_ms(), Ordering::Relaxed);
    }
    let serving = operator_api.serving.as_ref().map(|serving| serving.ledger.clone());
    if serving.as_ref() == Some(&ledger) {
        return;
    }
    let tenants: BTreeSet<String> = session
        .as_ref()
        .map(|session| {
            session
                .recipe
                .level
                .level
                .runs
                .iter()
                .map(|run| run.tenant.clone())
                .collect()
        })
        .unwrap_or_default();
    operator_api.serve(ledger.as_deref(), &tenants);
    match operator_api.serving() {
        Some(path) => info!(
            "operator API on http://{} serves {}",
            operator_api.address,
            path.display()
        ),
        None => info!("operator API on http://{}: no level open", operator_api.address),
    }
}

/// Decisions made over HTTP: the ledger panel shows them, and a run parked on a call an
/// operator settled wakes up.
fn poll_outside_settlements(mut session: Option<ResMut<Session>>, mut operator_api: ResMut<OperatorApi>) {
    let Some(session) = session.as_mut() else {
        return;
    };
    if session.is_busy() || operator_api.serving().is_none() {
        return;
    }
    let now = Instant::now();
    if operator_api
        .last_poll
        .is_some_and(|last| now.duration_since(last) < POLL_INTERVAL)
    {
        return;
    }
    operator_api.last_poll = Some(now);
    match session.notice_outside_settlements() {
        Ok(0) => {}
        Ok(woken) => session.tell(format!(
            "an operator settled a call over the HTTP API: {woken} parked worker(s) woke and go on with the truth"
        )),
        Err(problem) => session.warn(format!("reading decisions made over the HTTP API: {problem}")),
    }
}
