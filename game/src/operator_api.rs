//! `twice --operator-api ADDR`: the operator HTTP API — the same server as `twice-sim serve`
//! (`twice_serve::api`) — on the ledger file of the level being played, so a workshop can
//! `curl` the game's ledger and settle Penny's unknown calls from a terminal.
//!
//! The address is bound once, at start (a busy port is an error before the window opens).
//! Each level, restart or rewind writes a fresh ledger file; the server follows it, serving
//! a 503 `no_level_open` (after the token check) while no level is open. Decisions made over HTTP reach the simulation through
//! `Simulation::notice_settlements`, the same door the simulator uses for any outside
//! settlement: a parked run wakes and goes on with the operator's truth.
//!
//! A compensation over HTTP acts on the level's simulated billing, which lives in the
//! frame loop. The API's handler (on a blocking thread) sends its question — look the
//! credit up by key, or void it by id — to the frame loop and waits for the answer; the
//! rest is the API's one implementation (`runtime::operator::compensate`).

use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError, mpsc};
use std::time::{Duration, Instant};

use bevy::prelude::*;
use tokio::sync::oneshot;
use twice_serve::api::{self, ApiState, Compensator, OperatorEntry, Operators, ServeError};
use twice_serve::tokens::NoRandomness;
use twice_world::error::InputError;
use twice_world::ledger::ExecutionRecord;
use twice_world::runtime::operator::{Effect, LookupError, UndoError};

use crate::session::{Session, SessionSet};

/// How often the game looks for decisions made over HTTP.
const POLL_INTERVAL: Duration = Duration::from_millis(200);
/// How long a stopping server may take to finish its requests before it is dropped.
const STOP_TIMEOUT: Duration = Duration::from_secs(2);
/// The operator id written into the ledger's history when the game made the token itself.
pub const WORKSHOP_OPERATOR: &str = "workshop";
/// How long a compensation over HTTP waits for the frame loop to answer its question about
/// billing. The loop answers within a frame unless it is re-simulating a rewind.
const BILLING_ANSWER_TIMEOUT: Duration = Duration::from_secs(5);

pub(super) fn plugin(app: &mut App) {
    app.add_systems(
        Update,
        // Questions are answered before a server is stopped for a new ledger, so a
        // compensation in flight is not left waiting on a frame that waits on it.
        (
            answer_billing_questions,
            follow_session_ledger,
            poll_outside_settlements,
        )
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

/// Why the operator API did not start (before the window opens), or cannot serve a level's
/// ledger: each names the address, file or step at fault and keeps the error underneath.
#[derive(Debug, thiserror::Error)]
pub enum OperatorApiError {
    /// The address is refused (not loopback), or the ledger cannot be served.
    #[error(transparent)]
    Serve(#[from] ServeError),
    /// The tokens file does not load (its own error names the file and the line).
    #[error(transparent)]
    Tokens(#[from] InputError),
    #[error(transparent)]
    Token(#[from] NoRandomness),
    /// The operator made for the generated token (its tenants are the level's).
    #[error("the workshop operator for the generated token: {detail}")]
    Operator { detail: String },
    #[error("--operator-api: cannot listen on {address}: {source}")]
    Listen {
        address: SocketAddr,
        #[source]
        source: std::io::Error,
    },
    #[error("--operator-api: {address}: {source}")]
    Nonblocking {
        address: SocketAddr,
        #[source]
        source: std::io::Error,
    },
    #[error("--operator-api: cannot start its runtime: {0}")]
    Runtime(#[source] std::io::Error),
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
    /// Questions for the level's billing from compensations over HTTP; each server's
    /// compensation target holds a sender.
    billing_questions: Mutex<mpsc::Receiver<BillingQuestion>>,
    billing_asker: mpsc::Sender<BillingQuestion>,
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
    pub fn start(
        address: SocketAddr,
        allow_non_loopback: bool,
        tokens: Option<&Path>,
    ) -> Result<OperatorApi, OperatorApiError> {
        api::check_bind_address(address, allow_non_loopback)?;
        let credentials = match tokens {
            Some(path) => Credentials::File(Operators::load(path)?),
            None => Credentials::Generated {
                token: twice_serve::tokens::generate_token()?,
            },
        };
        let listener =
            std::net::TcpListener::bind(address).map_err(|source| OperatorApiError::Listen { address, source })?;
        listener
            .set_nonblocking(true)
            .map_err(|source| OperatorApiError::Nonblocking { address, source })?;
        let address = listener.local_addr().unwrap_or(address);
        // One worker thread: the API waits on SQLite and the network, not the CPU, and the
        // game's frames need the cores.
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("operator-api")
            .enable_all()
            .build()
            .map_err(OperatorApiError::Runtime)?;
        let (billing_asker, billing_questions) = mpsc::channel();
        let mut operator_api = OperatorApi {
            address,
            runtime,
            listener,
            credentials,
            clock_ms: Arc::new(AtomicU64::new(0)),
            serving: None,
            last_poll: None,
            billing_questions: Mutex::new(billing_questions),
            billing_asker,
            problem: None,
        };
        operator_api.serve(None);
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

    fn operators(&self, tenants: &BTreeSet<String>) -> Result<Operators, OperatorApiError> {
        match &self.credentials {
            Credentials::File(operators) => Ok(operators.clone()),
            Credentials::Generated { token } => Operators::from_entries(&[OperatorEntry {
                id: WORKSHOP_OPERATOR.to_owned(),
                token_sha256: api::hash_token(token),
                tenants: tenants.iter().cloned().collect(),
            }])
            .map_err(|(_, _, detail)| OperatorApiError::Operator { detail }),
        }
    }

    /// Whether a bearer token is one of this server's, for the answers given while no
    /// ledger is served (before a level is open, or when its ledger cannot be opened).
    fn token_check(&self) -> api::TokenCheck {
        match &self.credentials {
            Credentials::File(operators) => {
                let operators = operators.clone();
                Arc::new(move |token: &str| operators.authenticate(token).is_some())
            }
            Credentials::Generated { token } => {
                // Hashes are compared, not tokens: how long the comparison takes can tell at
                // most how much of a guess's SHA-256 matches, which says nothing of the token.
                let expected_sha256 = api::hash_token(token);
                Arc::new(move |presented: &str| api::hash_token(presented) == expected_sha256)
            }
        }
    }

    /// Stops the server in place (letting its requests finish) and starts one on `level`'s ledger.
    fn serve(&mut self, level: Option<&OpenLevel>) {
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
        let done = match level {
            Some(level) => {
                let path = level.ledger.as_path();
                let state = self
                    .operators(&level.tenants)
                    .and_then(|operators| ApiState::open(path, operators).map_err(OperatorApiError::from));
                match state {
                    Ok(state) => {
                        let clock = Arc::clone(&self.clock_ms);
                        let billing = SimulatedBilling {
                            ledger: level.ledger.clone(),
                            compensable_tools: level.compensable_tools.clone(),
                            asker: self.billing_asker.clone(),
                        };
                        let state = state
                            .with_clock(Arc::new(move || clock.load(Ordering::Relaxed)))
                            .with_compensator(Arc::new(billing));
                        self.problem = None;
                        self.runtime.spawn(api::serve_until(listener, state, shutdown))
                    }
                    Err(problem) => {
                        self.problem = Some(format!("the operator API cannot serve {}: {problem}", path.display()));
                        self.runtime
                            .spawn(api::serve_without_ledger_until(listener, self.token_check(), shutdown))
                    }
                }
            }
            None => self
                .runtime
                .spawn(api::serve_without_ledger_until(listener, self.token_check(), shutdown)),
        };
        self.serving = Some(Serving {
            ledger: level.map(|level| level.ledger.clone()),
            stop,
            done,
        });
    }
}

/// What the server needs of the open level.
struct OpenLevel {
    ledger: PathBuf,
    /// The level's runs' tenants: the generated token's operator acts for them.
    tenants: BTreeSet<String>,
    /// The level's tools that have a compensation.
    compensable_tools: BTreeSet<String>,
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
    let level = session.as_ref().zip(ledger).map(|(session, ledger)| {
        let level = &session.recipe.level.level;
        OpenLevel {
            ledger,
            tenants: level.runs.iter().map(|run| run.tenant.to_string()).collect(),
            compensable_tools: level
                .tools
                .iter()
                .filter(|tool| tool.compensation)
                .map(|tool| tool.name.to_string())
                .collect(),
        }
    });
    operator_api.serve(level.as_ref());
    match operator_api.serving() {
        Some(path) => info!(
            "operator API on http://{} serves {}",
            operator_api.address,
            path.display()
        ),
        None => info!("operator API on http://{}: no level open", operator_api.address),
    }
}

/// The game's compensation target: the level's simulated billing, asked through the frame
/// loop, which owns the simulation.
struct SimulatedBilling {
    /// The ledger served: a question about a level since left is not answered by another.
    ledger: PathBuf,
    compensable_tools: BTreeSet<String>,
    asker: mpsc::Sender<BillingQuestion>,
}

/// What a compensation over HTTP asks of the level's billing, each with where its answer goes.
enum BillingAsk {
    /// Look the call's credit up by its key (read-only).
    FindEffect {
        record: ExecutionRecord,
        reply: mpsc::Sender<Result<Effect, LookupError>>,
    },
    /// Void the credit found, by its id.
    Void {
        record: ExecutionRecord,
        credit_id: String,
        reply: mpsc::Sender<Result<String, UndoError>>,
    },
}

/// Whether the frame loop took a question up, or its asker stopped waiting. Decided under a
/// lock, so a void is either done and waited for, or never done: never done unseen.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Asked {
    Waiting,
    Taken,
    GivenUp,
}

struct BillingQuestion {
    ledger: PathBuf,
    ask: BillingAsk,
    state: Arc<Mutex<Asked>>,
}

impl SimulatedBilling {
    /// Sends the question `ask` makes (given where its answer goes) to the frame loop and
    /// waits for the answer (`None`: no answer came).
    fn ask<T>(&self, ask: impl FnOnce(mpsc::Sender<T>) -> BillingAsk) -> Option<T> {
        let state = Arc::new(Mutex::new(Asked::Waiting));
        let (reply, answer) = mpsc::channel();
        let question = BillingQuestion {
            ledger: self.ledger.clone(),
            ask: ask(reply),
            state: Arc::clone(&state),
        };
        self.asker.send(question).ok()?;
        match answer.recv_timeout(BILLING_ANSWER_TIMEOUT) {
            Ok(answer) => Some(answer),
            Err(_) => {
                let mut asked = state.lock().unwrap_or_else(PoisonError::into_inner);
                if *asked == Asked::Taken {
                    // The frame loop is answering right now; its work is in memory and short.
                    drop(asked);
                    answer.recv().ok()
                } else {
                    *asked = Asked::GivenUp;
                    None
                }
            }
        }
    }
}

impl Compensator for SimulatedBilling {
    fn has_compensation(&self, tool: &str) -> bool {
        self.compensable_tools.contains(tool)
    }

    fn find_effect(&self, record: &ExecutionRecord) -> Result<Effect, LookupError> {
        let record = record.clone();
        self.ask(|reply| BillingAsk::FindEffect { record, reply })
            .unwrap_or_else(|| {
                Err(LookupError::Unavailable(format!(
                    "the game did not answer within {} ms (it may be re-simulating a rewind, or the level was left)",
                    BILLING_ANSWER_TIMEOUT.as_millis()
                )))
            })
    }

    fn compensate(&self, record: &ExecutionRecord, reference: &str) -> Result<String, UndoError> {
        let (record, credit_id) = (record.clone(), reference.to_owned());
        self.ask(|reply| BillingAsk::Void {
            record,
            credit_id,
            reply,
        })
        .unwrap_or_else(|| {
            Err(UndoError::NotAsked(format!(
                "the game did not take the void of {reference} up within {} ms, so nothing was voided; the \
                     record stays `compensating`: compensate it again to finish the void",
                BILLING_ANSWER_TIMEOUT.as_millis()
            )))
        })
    }
}

/// Answers compensations' questions about the level's billing, between phases.
fn answer_billing_questions(mut session: Option<ResMut<Session>>, operator_api: Res<OperatorApi>) {
    if session.as_ref().is_some_and(|session| session.is_busy()) {
        // A rewind is being re-simulated elsewhere: the questions wait for its result.
        return;
    }
    let questions = operator_api
        .billing_questions
        .lock()
        .unwrap_or_else(PoisonError::into_inner);
    while let Ok(question) = questions.try_recv() {
        {
            let mut asked = question.state.lock().unwrap_or_else(PoisonError::into_inner);
            if *asked == Asked::GivenUp {
                continue;
            }
            *asked = Asked::Taken;
        }
        let session = session
            .as_mut()
            .filter(|session| session.ledger_path() == Some(question.ledger.as_path()));
        // A reply fails to send only when its asker is gone: nobody is left to tell.
        match (question.ask, session) {
            (BillingAsk::FindEffect { reply, .. }, None) => {
                let _ = reply.send(Err(LookupError::Unavailable(
                    "the level whose ledger this is was left or restarted: its billing is gone".to_owned(),
                )));
            }
            (BillingAsk::Void { credit_id, reply, .. }, None) => {
                let _ = reply.send(Err(UndoError::NotAsked(format!(
                    "the level whose ledger this is was left or restarted, so its billing is gone and nothing \
                     was voided (credit {credit_id})"
                ))));
            }
            (BillingAsk::FindEffect { record, reply }, Some(session)) => {
                let _ = reply.send(session.look_up_effect(&record));
            }
            (
                BillingAsk::Void {
                    record,
                    credit_id,
                    reply,
                },
                Some(session),
            ) => {
                let key = record.key.clone();
                let voided = session.undo_for_outside_operator(&record, &credit_id);
                match &voided {
                    Ok(done) => session.tell(format!("an operator compensated {key} over the HTTP API: {done}")),
                    Err(problem) => {
                        session.warn(format!("a compensation of {key} over the HTTP API failed: {problem}"))
                    }
                }
                let _ = reply.send(voided);
            }
        }
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
        Ok(woken) => session.tell(woken_text(woken)),
        Err(problem) => session.warn(format!("reading decisions made over the HTTP API: {problem}")),
    }
}

/// The line told when a settlement over the HTTP API woke parked workers, counted in words.
fn woken_text(woken: usize) -> String {
    let (workers, go) = if woken == 1 {
        ("1 parked worker".to_owned(), "goes")
    } else {
        (format!("{woken} parked workers"), "go")
    };
    format!("an operator settled a call over the HTTP API: {workers} woke and {go} on with the truth")
}

#[cfg(test)]
mod tests {
    use super::{OperatorApi, OperatorApiError, woken_text};
    use twice_serve::api::ServeError;

    #[test]
    fn an_address_or_tokens_file_that_cannot_be_used_is_named() {
        let address = "192.0.2.7:8080".parse().expect("an address");
        let error = OperatorApi::start(address, false, None).expect_err("not loopback");
        assert!(
            matches!(error, OperatorApiError::Serve(ServeError::NotLoopback(refused)) if refused == address),
            "{error}"
        );
        assert!(
            error
                .to_string()
                .starts_with("192.0.2.7:8080 is not a loopback address"),
            "{error}"
        );

        let folder = tempfile::tempdir().expect("temp dir");
        let missing = folder.path().join("tokens.ron");
        let error = OperatorApi::start("127.0.0.1:0".parse().expect("an address"), false, Some(&missing))
            .expect_err("no tokens file");
        assert!(matches!(error, OperatorApiError::Tokens(_)), "{error}");
        assert!(error.to_string().contains("tokens.ron"), "{error}");
    }

    #[test]
    fn the_woken_workers_are_counted_in_words() {
        assert_eq!(
            woken_text(1),
            "an operator settled a call over the HTTP API: 1 parked worker woke and goes on with the truth"
        );
        assert_eq!(
            woken_text(2),
            "an operator settled a call over the HTTP API: 2 parked workers woke and go on with the truth"
        );
    }
}
