//! The deterministic simulator: virtual time, a seeded ChaCha RNG, and actors — workers,
//! the model, the network, billing, operators, the supervisor — advanced one phase at a time.
//!
//! Same level + seed + actions ⇒ the same history, byte for byte: no wall clock, no
//! unordered maps, no ambient randomness. The runtime's decisions come from
//! [`crate::runtime::worker::Worker`] and its ledger commands are carried out by
//! [`crate::runtime::executor::Executor`]; the simulator carries out the rest.
//!
//! Where things are:
//! - `builder.rs` — a simulation built from a level, a seed and the player's moves;
//! - `reading.rs` — what the game, the checker and the debrief read of a simulation;
//! - `clock.rs` — virtual time and the queue of what happens next;
//! - `workers.rs` — the workers' lives: started, failed, retired, crashed, parked, woken;
//! - `phases.rs` — the simulator's part of each worker phase;
//! - `network.rs` — messages on the wire, and requests billing holds before applying them;
//! - `pause.rs` — a worker stopped for a while (SIGSTOP), and what waits for it;
//! - `world.rs` — billing, and the one way an operator undoes an effect in it;
//! - `crew.rs` — the player's moves: the hand, the moves to come and those made;
//! - `table.rs` — what a card may do to the world (each card's module says which, and when);
//! - `honest.rs`, `audit.rs` — the scripted operators: one works the queue, one audits billing;
//! - `someone.rs` — the world's scripted owner changes, made by someone outside the agent;
//! - `timeline.rs` — the timeline, with typed actors.

mod audit;
mod builder;
mod clock;
mod crew;
mod honest;
mod network;
mod pause;
mod phases;
mod reading;
mod report_words;
mod someone;
mod step_event;
mod table;
mod timeline;
mod workers;
mod world;

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use rand_chacha::ChaCha8Rng;

pub use crate::cards::{Armed, COMPENSATION_REFUSED};
pub use crate::runtime::worker::Phase;
/// Money in words lives in [`crate::text`]; named here too for the simulator's callers.
pub use crate::text::dollars;
pub use audit::{AUDIT_UNDID, AuditReport, AuditUndo, lowercase_first};
pub use crew::{Misplay, WireHit};
pub use network::{APPLY_DELAY_MS_MAX, Direction, Message};
pub use pause::PAUSE_MS_MAX;
pub use report_words::report_words;
pub use step_event::StepEvent;
pub use timeline::{Actor, RuleFiring, RuleRow, TimelineEntry};
pub use workers::{FailedRun, WorkerView, moment};

/// The words a timeline's `send` line carries when the tool refused before sending (the
/// not-attempted card): the debrief finds the refused call by them.
pub const REFUSED_BEFORE_SENDING: &str = "the tool refused before sending anything";

use crate::cards::WireRule;
use crate::checker;
use crate::ledger::{Ledger, LedgerError};
use crate::level::Level;
use crate::runtime::guards::Guards;
use crate::runtime::key::IdempotencyKey;
use crate::runtime::operator::OperatorError;
use crate::runtime::worker::Input;
use clock::{Clock, Event};
use crew::Crew;
use timeline::Timeline;
use workers::Workers;
use world::World;

/// The most workers one simulation may start (restarts and duplicates included).
pub const WORKERS_MAX: u32 = 64;
/// How far the clock jumps when nothing is scheduled but the player still has moves.
pub const IDLE_JUMP_MS: u64 = 1_000;
/// The node every level has: its ledger is the one the game draws and operators settle.
pub const FIRST_NODE: u32 = 1;
/// The other machine of a level with a second node: its ledger is its own.
pub const SECOND_NODE: u32 = 2;

/// Errors that stop a simulation from being built or advanced.
#[derive(Debug, thiserror::Error)]
pub enum SimError {
    #[error(transparent)]
    Ledger(#[from] LedgerError),
    #[error("ledger file {0} already exists; a level starts from an empty ledger, so choose a new path or remove it")]
    LedgerExists(PathBuf),
    #[error("ledger {0} already holds records or checkpoints; a level starts from an empty ledger")]
    LedgerNotEmpty(String),
}

/// Why a player's move was refused. Nothing changes when a move is refused.
#[derive(Debug, thiserror::Error)]
pub enum PlayError {
    #[error("card {0} is not in this level's hand")]
    NotInHand(&'static str),
    #[error("no {0} cards left")]
    NoneLeft(&'static str),
    #[error("no worker w{0} is alive")]
    NoSuchWorker(u32),
    #[error("no worker is alive to crash")]
    NoWorkerAlive,
    #[error("no worker is alive to pause")]
    NoWorkerToPause,
    #[error("w{worker} is stopped already, until {until_ms} ms")]
    AlreadyPaused { worker: u32, until_ms: u64 },
    #[error("no run `{0}` in this level")]
    NoSuchRun(String),
    #[error("run `{0}` has finished")]
    RunFinished(String),
    #[error("already {WORKERS_MAX} workers started; no more")]
    TooManyWorkers,
    #[error("`{0}` is not an idempotency key")]
    BadKey(String),
    #[error(transparent)]
    Operator(#[from] OperatorError),
    #[error("the level is over")]
    LevelOver,
    #[error(
        "{key} is {status}, not in the queue you and {honest} work: the console lists a call only once a run is paused on it (indeterminate)"
    )]
    NotInTheQueue {
        key: String,
        status: crate::runtime::rules::Status,
        honest: String,
    },
    #[error(
        "a decision on {key} names the status it was made on, and the queue you and {honest} work shows calls indeterminate: expect indeterminate, not {expected}"
    )]
    QueueExpectsIndeterminate {
        key: String,
        honest: String,
        expected: String,
    },
    #[error("{card} fizzles: {what} now")]
    NothingOnTheWire { card: &'static str, what: String },
    #[error("w{worker} is {}, not at {wanted}", workers::moment(*about_to))]
    NotInPhase {
        worker: u32,
        wanted: Phase,
        about_to: Phase,
    },
    #[error("this level has no tool named {tool}; its tools: {known}")]
    NoSuchTool { tool: String, known: String },
    #[error("{tool} cannot be declared in this level (declarable here: {declarable})")]
    NotDeclarable { tool: String, declarable: String },
    #[error("a tool is declared with 1 to {max} attempts, not {0}", max = crate::runtime::tool::READ_ATTEMPTS_MAX)]
    AttemptsOutOfRange(u32),
    #[error(
        "too late to declare {tool}: w{worker} began Penny's first call ({key}) at phase {phase}; a tool is declared before any call is made"
    )]
    TooLateToDeclare {
        tool: String,
        worker: u32,
        key: String,
        phase: u32,
    },
}

/// Penny's first call: once a worker has begun one, the tools' declarations are fixed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct FirstCall {
    pub(crate) worker: u32,
    pub(crate) key: String,
    pub(crate) phase: u32,
}

pub use builder::SimulationBuilder;

/// A running simulation. `step()` advances one phase of one actor.
#[derive(Debug)]
pub struct Simulation {
    level: Level,
    seed: u64,
    guards: Guards,
    /// Always on, but for the one test that shows what the send fence prevents.
    send_fence: bool,
    wire_rule: WireRule,
    rng: ChaCha8Rng,
    clock: Clock,
    workers: Workers,
    messages: BTreeMap<u32, Message>,
    /// Requests billing has received and holds before applying them (`DelayApply`): off the
    /// wire, not in billing's books yet.
    received: BTreeMap<u32, Message>,
    next_message: u32,
    world: World,
    crew: Crew,
    timeline: Timeline,
    /// The simulator's own connection: keeps a memory ledger alive, reads state for
    /// drawing and checking, and carries the operators' decisions.
    observer: Ledger,
    /// The second node's own ledger, in a level that has one (the simulator's connection to it).
    second_node: Option<Ledger>,
    /// Which (run, item) each key served, as the workers reserved them (for drawing).
    call_items: BTreeMap<String, BTreeSet<(String, u32)>>,
    /// Every run started → its workflow node (a level's run, or a fresh run a retry started).
    nodes: checker::RunNodes,
    /// The runs that failed, in the order their workflow node decided on them.
    failed_runs: Vec<FailedRun>,
    /// Penny's first call, once a worker has begun one: declaring a tool is over from then on.
    first_call: Option<FirstCall>,
    /// The calls the level's honest operator has taken from the queue (seen `indeterminate`).
    honest_queue: BTreeSet<String>,
    /// What the level's auditor saw and did, once they have looked.
    audit: Option<AuditReport>,
    /// The level's tools as authored, kept when the player's first declaration changes them,
    /// so the same run can be simulated again from the start (the counterfactual debrief).
    authored_tools: Option<Vec<crate::runtime::tool::ToolDeclaration>>,
    /// What the last step ran (`None` before the first, and after a step that ran nothing).
    last_step: Option<StepEvent>,
    ended: bool,
}

impl Simulation {
    /// Runs one phase of one actor. Returns false when the level is over.
    pub fn step(&mut self) -> Result<bool, SimError> {
        self.last_step = None;
        if self.ended {
            return Ok(false);
        }
        if self.clock.phase >= self.level.max_phases {
            self.end("the level's phase limit was reached");
            return Ok(false);
        }
        loop {
            self.apply_due_actions();
            if self.clock.is_idle() && self.notice_settlements()? > 0 {
                continue;
            }
            let Some((slot, event)) = self.clock.pop() else {
                if self.crew.pending.is_empty() {
                    self.end("nothing is left to happen");
                    return Ok(false);
                }
                // Nothing is scheduled (everyone finished or waits on an operator),
                // but the player still has moves on the tape: time passes until them.
                self.clock.advance_to(self.clock.now_ms + IDLE_JUMP_MS);
                let action = self.crew.pending.pop_front().expect("checked non-empty");
                self.apply_action(action);
                continue;
            };
            if self.is_stale(&event) {
                continue;
            }
            if self.workers.paused > 0
                && let Some(worker) = self.held_for(&event)
            {
                self.hold(worker, event);
                continue;
            }
            self.clock.advance_to(slot.0);
            self.last_step = Some(StepEvent::of(&event));
            self.process(event)?;
            self.clock.phase += 1;
            return Ok(true);
        }
    }

    /// Wakes parked workers whose call was settled outside this simulation (by an operator over
    /// the HTTP API, say, on the same ledger file). Returns how many were woken.
    pub fn notice_settlements(&mut self) -> Result<usize, SimError> {
        let keys: Vec<String> = self.workers.parked.keys().cloned().collect();
        let mut woken = 0;
        for key in keys {
            let key = IdempotencyKey::parse(&key).expect("parked keys are keys");
            for node in [FIRST_NODE, SECOND_NODE] {
                if node == SECOND_NODE && self.second_node.is_none() {
                    continue;
                }
                // Each node's workers wait on their own ledger's record.
                if self
                    .node_ledger(node)
                    .record(&key)?
                    .is_some_and(|record| record.status.is_settled())
                {
                    woken += self.wake_parked(node, &key, None);
                }
            }
        }
        if woken > 0 && !self.is_out_of_phases() {
            // A quiet level wakes up when someone outside settled what it waited on.
            self.ended = false;
        }
        Ok(woken)
    }

    /// What the last step ran: `None` before the first step and after one that ran nothing
    /// (the level went quiet).
    pub fn last_step(&self) -> Option<&StepEvent> {
        self.last_step.as_ref()
    }

    /// Steps until `done` says so or the level is over. Returns the phases run.
    pub fn run_until(&mut self, mut done: impl FnMut(&Simulation) -> bool) -> Result<u32, SimError> {
        let start = self.clock.phase;
        while !done(self) && self.step()? {}
        Ok(self.clock.phase - start)
    }

    /// Steps until the level is over.
    pub fn run(&mut self) -> Result<u32, SimError> {
        self.run_until(|_| false)
    }

    fn end(&mut self, why: &str) {
        if !self.ended {
            self.ended = true;
            self.log(
                Actor::Simulation,
                "quiet",
                None,
                None,
                format!("the level is quiet: {why}"),
            );
        }
    }

    fn is_stale(&self, event: &Event) -> bool {
        let alive = |worker: &u32| self.workers.slots.get(worker).is_some_and(|slot| slot.alive);
        match event {
            Event::Worker { worker, .. }
            | Event::Backoff { worker }
            | Event::Wake { worker }
            | Event::LookAgain { worker }
            | Event::Resume { worker } => !alive(worker),
            Event::Timeout {
                worker,
                key,
                attempt,
                send,
            } => !alive(worker) || !self.awaiting(*worker, key, *attempt) || !self.awaits_send(*worker, *send),
            Event::Deliver { .. }
            | Event::Apply { .. }
            | Event::Restart { .. }
            | Event::HonestCheck { .. }
            | Event::Audit
            | Event::OwnerChange { .. } => false,
        }
    }

    fn process(&mut self, event: Event) -> Result<(), SimError> {
        match event {
            Event::Worker { worker, command } => self.run_command(worker, *command)?,
            Event::Deliver { message } => self.deliver(message)?,
            Event::Apply { message } => self.apply_held(message),
            Event::Resume { worker } => self.resume(worker),
            Event::Timeout {
                worker,
                key,
                attempt,
                send,
            } => {
                self.send_ended(worker, send);
                let run = self.workers.slots[&worker].machine.run_id().to_string();
                self.log(
                    Actor::Worker(worker),
                    "timeout",
                    Some(run),
                    Some(key.clone()),
                    format!("attempt {attempt} timed out"),
                );
                let key = IdempotencyKey::parse(&key).expect("timer keys are keys");
                self.feed(worker, Input::TimedOut { key, attempt });
            }
            Event::Backoff { worker } => {
                let run = self.workers.slots[&worker].machine.run_id().to_string();
                self.log(
                    Actor::Worker(worker),
                    "backoff",
                    Some(run),
                    None,
                    "backoff elapsed; trying again".into(),
                );
                self.feed(worker, Input::BackoffElapsed);
            }
            Event::HonestCheck { key } => self.honest_operator_checks(&key)?,
            Event::Audit => self.auditor_audits()?,
            Event::OwnerChange { index } => self.someone_changes_owner(index),
            Event::Restart { run, node } => {
                self.spawn_worker(&run, workers::RECOVERS, node);
            }
            Event::Wake { worker } => self.nudge_parked(worker, Input::Woken, "the call it waits on was settled"),
            Event::LookAgain { worker } => self.nudge_parked(
                worker,
                Input::LookAgain,
                "something that could settle the call it waits on changed: it looks again",
            ),
        }
        Ok(())
    }
}
