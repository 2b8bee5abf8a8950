//! The conductor: plays one tape's expected run on a runtime's real processes. Every process
//! waits at each step it marks, and the proxy holds every request and answer, so nothing moves
//! until the conductor lets it: it lets things move one at a time, in the order the expected
//! run took them ([`follow`]), and plays the world's part of each step on the real world —
//! billing, the wire, SIGKILL for a crash, a new process for a twin or a recovery. When the
//! runtime leaves the expected run's path (it marks another step, sends what the expected run
//! never sent), the conductor says where and plays on in an order of its own ([`free`]), until
//! nothing moves. Then billing's money is judged against the expected run's ([`judge`]).
//!
//! A runtime that says something out of place (garbage, a mark while it should wait, a second
//! hello), that hangs (sends nothing for [`Limits::step_ms`] after a go-ahead) or that ends
//! with an error ends the tape's run: the report quotes what it sent.

mod actions;
mod events;
mod follow;
mod free;
mod judge;

pub use actions::TOKEN_EXPIRED;
pub use judge::{Actual, Money, money_of};

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Instant;

use tokio::sync::mpsc;

use super::expected::Spawn;
use super::messages::{self, Hello, Mark, RuntimeHello, ToRuntime, ToldEntry};
use super::model_side::ModelSide;
use super::process::{ProcessEvent, RuntimeProcess};
use super::proxy::{Command, HttpRequest, Proxy, WireEvent};
use crate::billing_server::InProcessBilling;
use twice_world::level::Level;
use twice_world::runtime::guards::{Guard, Guards};
use twice_world::runtime::worker::Phase;

/// Time limits, in real milliseconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// The longest a process may take, once let go, to reach its next step (or to answer
    /// `hello`): past it, it hangs.
    pub step_ms: u64,
    /// The longest one tape may take in all.
    pub tape_ms: u64,
    /// What `hello` tells a process its HTTP client should wait for an answer.
    pub http_timeout_ms: u32,
}

/// The defaults: 10 s a step, 120 s a tape, a 30 s HTTP timeout.
pub const LIMITS: Limits = Limits {
    step_ms: 10_000,
    tape_ms: 120_000,
    http_timeout_ms: 30_000,
};

/// The most events the conductor plays on its own once a runtime left the expected run (a
/// runtime that retries for ever must still end).
pub const FREE_ACTIONS_MAX: u32 = 2_000;
/// The most lines of the session a report keeps (the last ones).
pub const SESSION_LINES_MAX: usize = 400;

/// Why a tape's run on the runtime ended early: what the runtime did, quoted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Broken {
    /// The worker whose process it was (`None`: the world's side).
    pub worker: Option<u32>,
    pub what: String,
    /// The end of its standard error, if it wrote any.
    pub stderr: String,
}

/// A process's place.
#[derive(Clone, Debug, PartialEq, Eq)]
enum State {
    /// `hello` sent, its answer awaited.
    Starting,
    /// Let go; its next step awaited.
    Moving,
    /// Waiting for `go` at a step.
    AtMark(Mark),
    /// Waiting for the model's decision.
    AtModel(Vec<ToldEntry>),
    /// Its attempt is on the wire (exchange `exchange`).
    Waiting { exchange: u64 },
    /// Paused on an unknown call: waiting for `wake`.
    Parked,
    /// Gone: it ended, or was killed.
    Gone { killed: bool },
}

/// An attempt a process announced with its `send` mark.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Attempt {
    pub call: String,
    pub key: Option<String>,
    pub number: u32,
}

#[derive(Debug)]
struct Proc {
    spawn: Spawn,
    process: RuntimeProcess,
    state: State,
    /// Let go from `send`: its next request is this attempt.
    announced: Option<Attempt>,
    /// That attempt is refused before anything happens (the tool-fails card).
    refuse_next: bool,
    /// Attempts it sent, per call (its own count when its marks give none).
    attempts: BTreeMap<String, u32>,
    /// The steps it declared it marks.
    marks: Vec<Phase>,
    /// Since when it has been moving (for the step limit).
    since: Instant,
    /// The arrival order of its current gate (free play lets the oldest go first).
    gate_order: u64,
    /// How it left its last gate, for reports.
    last_gate: String,
    /// The change count when it parked (free play wakes it after a later change).
    parked_at: u64,
    /// The run's status its `exit` mark gave, if it marked one.
    exit_status: Option<String>,
}

/// What the wire holds for an exchange.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Held {
    /// The request, not yet forwarded.
    Request,
    /// Forwarded; billing's answer awaited.
    Forwarding,
    /// Billing's answer, not yet returned.
    Answer { status: u16, body: Vec<u8> },
    /// The request was lost: never forwarded; the connection closes at the timeout.
    LostRequest,
    /// The answer was lost: never returned; the connection closes at the timeout.
    LostAnswer,
    /// Over.
    Done,
}

#[derive(Debug)]
struct Exchange {
    worker: u32,
    request: HttpRequest,
    commands: mpsc::UnboundedSender<Command>,
    /// The announced attempt it carries (`None`: a request no `send` announced, let through).
    attempt: Option<Attempt>,
    held: Held,
}

/// Everything one tape's run on the runtime needs.
pub struct Conductor<'a> {
    command: &'a str,
    level: &'a Level,
    limits: Limits,
    folder: PathBuf,
    billing: Option<InProcessBilling>,
    proxy: Proxy,
    processes: mpsc::UnboundedReceiver<ProcessEvent>,
    process_sender: mpsc::UnboundedSender<ProcessEvent>,
    wire: mpsc::UnboundedReceiver<WireEvent>,
    procs: BTreeMap<u32, Proc>,
    exchanges: BTreeMap<u64, Exchange>,
    model: ModelSide,
    now_ms: u64,
    started: Instant,
    /// The guards the runtime claims (from its first `hello`).
    claimed: Option<(Guards, RuntimeHello)>,
    /// Credit id → the (run, call) whose request made it, as the wire saw it.
    effects: BTreeMap<String, (String, String)>,
    /// What each process reported of each call it recorded: (run, call) → status.
    recorded: BTreeMap<(String, String), String>,
    /// Changes a parked process could care about (a recorded outcome, a crash, a payment).
    changes: u64,
    next_gate: u64,
    session: Vec<String>,
    broken: Option<Broken>,
    /// Processes still parked when the run ended.
    parked_at_end: Vec<u32>,
    /// Free play stopped at its limit with the runtime still going.
    pub(super) free_limit_reached: bool,
    /// Where the runtime left the expected run, in words.
    pub(super) diverged: Option<String>,
    /// Moves of the expected run that could not be played on the runtime.
    pub(super) unplayed: Vec<String>,
    /// Requests no `send` announced (a runtime must mark every attempt).
    pub(super) unannounced: Vec<String>,
}

impl std::fmt::Debug for Conductor<'_> {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("Conductor")
            .field("command", &self.command)
            .field("now_ms", &self.now_ms)
            .field("procs", &self.procs.len())
            .finish_non_exhaustive()
    }
}

/// The level's guards that are on, by name.
pub fn guard_names(guards: Guards) -> Vec<String> {
    Guard::EVERY
        .into_iter()
        .filter(|guard| guards.is_on(*guard))
        .map(|guard| guard.name().to_owned())
        .collect()
}

impl<'a> Conductor<'a> {
    /// Starts billing (over the level's accounts, key handling and terms) and the wire, in
    /// `folder` (empty, the tape's own).
    pub async fn start(
        command: &'a str,
        level: &'a Level,
        limits: Limits,
        folder: PathBuf,
    ) -> Result<Conductor<'a>, String> {
        let billing = InProcessBilling::start(
            &folder.join("billing.sqlite"),
            level.world.billing_keys,
            level.world.billing_terms(),
            &level.world.accounts,
        )
        .await?;
        let (wire_sender, wire) = mpsc::unbounded_channel();
        let proxy = Proxy::start(billing.address(), wire_sender)
            .await
            .map_err(|error| format!("the wire cannot listen on loopback: {error}"))?;
        let (process_sender, processes) = mpsc::unbounded_channel();
        Ok(Conductor {
            command,
            level,
            limits,
            folder,
            billing: Some(billing),
            proxy,
            processes,
            process_sender,
            wire,
            procs: BTreeMap::new(),
            exchanges: BTreeMap::new(),
            model: ModelSide::new(level.clone(), BTreeMap::new()),
            now_ms: 0,
            started: Instant::now(),
            claimed: None,
            effects: BTreeMap::new(),
            recorded: BTreeMap::new(),
            changes: 0,
            next_gate: 0,
            session: Vec::new(),
            broken: None,
            parked_at_end: Vec::new(),
            free_limit_reached: false,
            diverged: None,
            unplayed: Vec::new(),
            unannounced: Vec::new(),
        })
    }

    /// Starts the level's first process and waits for its hello: which guards it claims.
    pub async fn start_first(&mut self, spawn: &Spawn) {
        self.start_process(spawn).await;
        self.settle().await;
    }

    /// Ends every process and stops billing.
    pub async fn stop(&mut self) {
        self.finish().await;
        if let Some(billing) = self.billing.take() {
            billing.stop().await;
        }
    }

    /// The guards the runtime claims and its hello, once its first process said hello.
    pub fn claimed(&self) -> Option<&(Guards, RuntimeHello)> {
        self.claimed.as_ref()
    }

    /// What broke the run, if something did.
    pub fn broken(&self) -> Option<&Broken> {
        self.broken.as_ref()
    }

    /// The protocol's lines so far (the last [`SESSION_LINES_MAX`]).
    pub fn session(&self) -> &[String] {
        &self.session
    }

    fn note(&mut self, line: String) {
        if self.session.len() >= SESSION_LINES_MAX {
            self.session.remove(0);
        }
        self.session.push(line);
    }

    fn break_run(&mut self, worker: Option<u32>, what: String) {
        if self.broken.is_none() {
            let stderr = worker
                .and_then(|worker| self.procs.get(&worker))
                .map(|proc| proc.process.stderr_tail())
                .unwrap_or_default();
            self.note(format!("!! {what}"));
            self.broken = Some(Broken { worker, what, stderr });
        }
    }

    fn name(worker: u32) -> String {
        format!("w{worker}")
    }

    /// Starts a process for `spawn` and says hello.
    pub(super) async fn start_process(&mut self, spawn: &Spawn) {
        if self.broken.is_some() {
            return;
        }
        let process = match RuntimeProcess::start(self.command, spawn.worker, self.process_sender.clone()) {
            Ok(process) => process,
            Err(error) => {
                self.break_run(
                    Some(spawn.worker),
                    format!("`{}` could not be started: {error}", self.command),
                );
                return;
            }
        };
        let node_folder = self.folder.join(format!("node-{}", spawn.node));
        if let Err(error) = std::fs::create_dir_all(&node_folder) {
            self.break_run(None, format!("{}: {error}", node_folder.display()));
            return;
        }
        let node = self.model.node_of(&spawn.run).to_owned();
        let tenant = self
            .level
            .runs
            .iter()
            .find(|script| script.id == node.as_str())
            .map_or_else(|| "default".to_owned(), |script| script.tenant.to_string());
        let hello = Hello {
            protocol: messages::PROTOCOL_VERSION,
            worker: Self::name(spawn.worker),
            run: spawn.run.clone(),
            tenant,
            recovering: spawn.recovering,
            ledger: node_folder.join("ledger.sqlite").display().to_string(),
            billing: self.proxy.url_for(spawn.worker),
            tools: self.level.tools.clone(),
            guards: guard_names(self.level.guards),
            timeout_ms: self.level.world.timeout_ms,
            http_timeout_ms: self.limits.http_timeout_ms,
            lease_ms: self.level.world.lease_ms,
            recovery_attempts_max: self.level.world.recovery_attempts_max,
            now_ms: self.now_ms,
        };
        self.procs.insert(
            spawn.worker,
            Proc {
                spawn: spawn.clone(),
                process,
                state: State::Starting,
                announced: None,
                refuse_next: false,
                attempts: BTreeMap::new(),
                marks: Vec::new(),
                since: Instant::now(),
                gate_order: 0,
                last_gate: "started".into(),
                parked_at: 0,
                exit_status: None,
            },
        );
        self.send(spawn.worker, &ToRuntime::Hello(Box::new(hello))).await;
    }
}
