//! The deterministic simulator: virtual time, a seeded ChaCha RNG, and actors — workers,
//! the model, the network, billing, operators, the supervisor — advanced one phase at a time.
//!
//! Same level + seed + actions ⇒ the same history, byte for byte: no wall clock, no
//! unordered maps, no ambient randomness. The runtime's decisions come from
//! [`crate::runtime::worker::Worker`] and its ledger commands are carried out by
//! [`crate::runtime::executor::Executor`]; the simulator carries out the rest.
//!
//! Where things are:
//! - `clock.rs` — virtual time and the queue of what happens next;
//! - `workers.rs` — the workers, and the simulator's part of each of their phases;
//! - `network.rs` — messages on the wire;
//! - `world.rs` — billing, and the one way an operator undoes an effect in it;
//! - `crew.rs` — the player's moves;
//! - `timeline.rs` — the timeline, with typed actors.

mod clock;
mod crew;
mod network;
mod timeline;
mod workers;
mod world;

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde::Serialize;

/// Money in words lives in [`crate::text`]; named here too for the simulator's callers.
pub use crate::text::dollars;
pub use crew::{Armed, WireHit};
pub use network::{Direction, Message};
pub use timeline::{Actor, RuleFiring, RuleRow, TimelineEntry};
pub use workers::{FailedRun, PARKED, WAIT_FOR_ANSWER, WorkerView, moment};

use crate::billing::Billing;
use crate::checker::{self, Verdict};
use crate::ledger::{Checkpoint, ExecutionRecord, HistoryEntry, Ledger, LedgerError, LedgerStore, RunHistoryEntry};
use crate::level::{CardKind, Level, TimedAction, WireRule};
use crate::runtime::guards::Guards;
use crate::runtime::key::IdempotencyKey;
use crate::runtime::operator::OperatorError;
use crate::runtime::worker::{GuardNote, Input};
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
    #[error("{card} fizzles: {what} now")]
    NothingOnTheWire { card: &'static str, what: String },
    #[error("w{worker} is {}, not at {wanted}", workers::moment(about_to))]
    NotInPhase {
        worker: u32,
        wanted: String,
        about_to: String,
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

/// Builds a simulation: a level, an explicit seed, and optionally a ledger file,
/// guard overrides and the player's moves.
#[derive(Clone, Debug)]
pub struct SimulationBuilder {
    level: Level,
    seed: u64,
    guards: Option<Guards>,
    ledger_file: Option<PathBuf>,
    ledger_store: LedgerStore,
    actions: Vec<TimedAction>,
    wire_rule: WireRule,
    send_fence: bool,
}

impl SimulationBuilder {
    pub fn new(level: Level, seed: u64) -> SimulationBuilder {
        SimulationBuilder {
            level,
            seed,
            guards: None,
            ledger_file: None,
            ledger_store: LedgerStore::Sqlite,
            actions: Vec::new(),
            wire_rule: WireRule::OnTheWireNow,
            send_fence: true,
        }
    }

    /// How wire cards find their message: a version 1 tape's moves replay by its own rule.
    pub fn wire_rule(mut self, rule: WireRule) -> Self {
        self.wire_rule = rule;
        self
    }

    /// Overrides the level's guards (the sandbox, the vault tests).
    pub fn guards(mut self, guards: Guards) -> Self {
        self.guards = Some(guards);
        self
    }

    /// Writes the ledger to this (new) SQLite file instead of memory.
    pub fn ledger_file(mut self, path: impl Into<PathBuf>) -> Self {
        self.ledger_file = Some(path.into());
        self
    }

    /// Which store holds an in-memory ledger: SQLite (the default, what the game and replays
    /// use) or the memory store, which gives the same answers without SQLite, for bulk runs
    /// (the explorer, the benchmark). A ledger file is always SQLite, whatever this says.
    pub fn ledger_store(mut self, store: LedgerStore) -> Self {
        self.ledger_store = store;
        self
    }

    /// The player's moves, applied before the phases they name.
    pub fn actions(mut self, actions: Vec<TimedAction>) -> Self {
        self.actions = actions;
        self
    }

    /// Workers send without the send fence, as the runtime did before it had one. Only for
    /// the test that shows what the fence prevents; no level, tape or command can ask for it.
    #[doc(hidden)]
    pub fn without_send_fence_for_tests(mut self) -> Self {
        self.send_fence = false;
        self
    }

    pub fn build(self) -> Result<Simulation, SimError> {
        let observer = match &self.ledger_file {
            Some(path) if path.exists() => return Err(SimError::LedgerExists(path.clone())),
            Some(path) => Ledger::open(path)?,
            None => Ledger::open_in(self.ledger_store)?,
        };
        let store = self.ledger_store;
        self.build_with(observer, store)
    }

    /// Builds the simulation on a ledger opened elsewhere (the PostgreSQL store, which this
    /// crate's built-in stores do not cover): its workers connect to it with
    /// [`Ledger::connect_again`]. It must be empty, as a new file or memory ledger is; the
    /// builder's file and store settings are not used.
    pub fn build_on(self, ledger: Ledger) -> Result<Simulation, SimError> {
        if !ledger.all_records()?.is_empty() || !ledger.checkpoints()?.is_empty() {
            return Err(SimError::LedgerNotEmpty(ledger.location()));
        }
        let store = self.ledger_store;
        self.build_with(ledger, store)
    }

    /// `second_node_store`: where a second node's ledger lives, if the level has one (never in
    /// a file: it is another machine's).
    fn build_with(self, observer: Ledger, second_node_store: LedgerStore) -> Result<Simulation, SimError> {
        let guards = self.guards.unwrap_or(self.level.guards);
        let hand = self
            .level
            .cards
            .iter()
            .map(|allowance| (allowance.card, allowance.count))
            .collect();
        let billing = Billing::new(self.level.world.billing_keys, &self.level.world.accounts);
        let second_node = if self.level.world.second_node {
            Some(Ledger::open_in(second_node_store)?)
        } else {
            None
        };
        let mut simulation = Simulation {
            rng: ChaCha8Rng::seed_from_u64(self.seed),
            seed: self.seed,
            guards,
            send_fence: self.send_fence,
            wire_rule: self.wire_rule,
            clock: Clock::default(),
            workers: Workers::new(),
            messages: BTreeMap::new(),
            next_message: 1,
            world: World::new(billing),
            crew: Crew {
                hand,
                armed: Armed::default(),
                armed_moves: BTreeMap::new(),
                pending: self.actions.into_iter().collect(),
                played: Vec::new(),
                wire_hits: Vec::new(),
            },
            timeline: Timeline::default(),
            observer,
            second_node,
            call_items: BTreeMap::new(),
            nodes: BTreeMap::new(),
            failed_runs: Vec::new(),
            first_call: None,
            authored_tools: None,
            ended: false,
            level: self.level,
        };
        let runs: Vec<String> = simulation.level.runs.iter().map(|run| run.id.clone()).collect();
        for run in &runs {
            simulation.nodes.insert(
                run.clone(),
                checker::RunNode {
                    node: run.clone(),
                    retry: 0,
                },
            );
        }
        for run in runs {
            simulation.spawn_worker(&run, "starts the run", FIRST_NODE);
        }
        Ok(simulation)
    }
}

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
    /// The level's tools as authored, kept when the player's first declaration changes them,
    /// so the same run can be simulated again from the start (the counterfactual debrief).
    authored_tools: Option<Vec<crate::runtime::tool::ToolDeclaration>>,
    ended: bool,
}

impl Simulation {
    // ----- reading the state -----

    /// The level as it is now: a tool the player declared is as they declared it.
    pub fn level(&self) -> &Level {
        &self.level
    }
    /// The level as it was before any move: the same level, seed and moves from here give this
    /// run again.
    pub fn authored_level(&self) -> Level {
        let mut level = self.level.clone();
        if let Some(tools) = &self.authored_tools {
            level.tools.clone_from(tools);
        }
        level
    }
    pub fn seed(&self) -> u64 {
        self.seed
    }
    pub fn guards(&self) -> Guards {
        self.guards
    }
    pub fn now_ms(&self) -> u64 {
        self.clock.now_ms
    }
    /// Phases run so far.
    pub fn phase(&self) -> u32 {
        self.clock.phase
    }
    /// Nothing is left to happen, or the phase limit is reached. A move from the player
    /// (an operator's decision, a new worker) can wake a quiet level.
    pub fn is_over(&self) -> bool {
        self.ended
    }
    /// The phase limit is reached: no more moves.
    pub fn is_out_of_phases(&self) -> bool {
        self.clock.phase >= self.level.max_phases
    }

    /// The cards in hand that could still change a quiet level: an operator's resolve while a
    /// call is unknown, a compensation while a call with a compensation may have taken effect.
    /// A run parked for an operator is not the end of a level that gives the player operator
    /// moves: the level ends when nothing the player can still do changes anything.
    pub fn moves_that_still_matter(&self) -> Result<Vec<CardKind>, LedgerError> {
        if self.is_out_of_phases() {
            return Ok(Vec::new());
        }
        let holds = |card: CardKind| self.crew.hand.get(&card).is_some_and(|left| *left > 0);
        let mut cards = Vec::new();
        if !holds(CardKind::OperatorResolve) && !holds(CardKind::OperatorCompensate) {
            return Ok(cards);
        }
        let records = self.observer.all_records()?;
        if holds(CardKind::OperatorResolve) && records.iter().any(|record| record.status.is_unknown()) {
            cards.push(CardKind::OperatorResolve);
        }
        let compensable = |record: &ExecutionRecord| {
            !matches!(
                record.status,
                crate::runtime::rules::Status::Failed | crate::runtime::rules::Status::Compensated
            ) && self
                .level
                .tools
                .iter()
                .any(|tool| tool.name == record.tool && tool.compensation)
        };
        if holds(CardKind::OperatorCompensate) && records.iter().any(compensable) {
            cards.push(CardKind::OperatorCompensate);
        }
        Ok(cards)
    }

    /// The phase Penny's first call began in, once one has: from then on no tool can be declared.
    pub fn first_call_phase(&self) -> Option<u32> {
        self.first_call.as_ref().map(|first| first.phase)
    }

    /// Over, and nothing the player still holds could change it: time for the verdict.
    pub fn is_concluded(&self) -> Result<bool, LedgerError> {
        Ok(self.is_over() && self.moves_that_still_matter()?.is_empty())
    }
    pub fn billing(&self) -> &Billing {
        &self.world.billing
    }
    pub fn timeline(&self) -> &[TimelineEntry] {
        &self.timeline.entries
    }
    pub fn guard_notes(&self) -> &[GuardNote] {
        &self.timeline.notes
    }
    /// The rows of the runtime's decision tables that fired, oldest first.
    pub fn rules_fired(&self) -> &[RuleFiring] {
        &self.timeline.rules
    }
    pub fn armed(&self) -> &Armed {
        &self.crew.armed
    }
    /// How this simulation's wire cards find their message.
    pub fn wire_rule(&self) -> WireRule {
        self.wire_rule
    }
    /// Which message each wire card hit, in the order they hit.
    pub fn wire_hits(&self) -> &[WireHit] {
        &self.crew.wire_hits
    }
    /// The messages a wire card of this kind could hit now, oldest first: on the wire in its
    /// direction, not lost (and, to be slowed, not slowed already).
    pub fn wire_targets(&self, card: CardKind) -> Vec<&Message> {
        let (direction, for_slowing) = match card {
            CardKind::LoseRequest => (Direction::Request, false),
            CardKind::LoseResponse => (Direction::Response, false),
            CardKind::SlowResponse => (Direction::Response, true),
            _ => return Vec::new(),
        };
        self.messages
            .values()
            .filter(|message| message.direction == direction && !message.lost && !(for_slowing && message.slowed))
            .collect()
    }
    /// Cards left in hand.
    pub fn hand(&self) -> &BTreeMap<CardKind, u32> {
        &self.crew.hand
    }
    /// The moves played so far, as a tape stores them.
    pub fn played(&self) -> &[TimedAction] {
        &self.crew.played
    }
    /// Messages on the wire now.
    pub fn messages(&self) -> impl Iterator<Item = &Message> {
        self.messages.values()
    }
    /// Each credit billing applied → the request that made it.
    pub fn effects(&self) -> &BTreeMap<String, checker::CreditOrigin> {
        &self.world.effects
    }
    pub fn ledger(&self) -> &Ledger {
        &self.observer
    }
    /// Every run started, by id → the workflow node it belongs to (the level's run it carries
    /// out, and which retry of it it is).
    pub fn nodes(&self) -> &checker::RunNodes {
        &self.nodes
    }
    /// The level's run (workflow node) that `run` carries out: itself, or the run a workflow
    /// retry started it for.
    pub fn node_of<'a>(&'a self, run: &'a str) -> &'a str {
        checker::node_of(&self.nodes, run)
    }
    /// The runs that failed and what followed each, oldest first.
    pub fn failed_runs(&self) -> &[FailedRun] {
        &self.failed_runs
    }
    /// The second node's ledger, in a level that has one: its twin's records and checkpoints.
    pub fn second_node_ledger(&self) -> Option<&Ledger> {
        self.second_node.as_ref()
    }
    /// The ledger of a node: the first node's, or the second's in a level that has one.
    fn node_ledger(&self, node: u32) -> &Ledger {
        match node {
            SECOND_NODE => self
                .second_node
                .as_ref()
                .expect("a worker on the second node has its ledger"),
            _ => &self.observer,
        }
    }
    fn node_ledger_mut(&mut self, node: u32) -> &mut Ledger {
        match node {
            SECOND_NODE => self
                .second_node
                .as_mut()
                .expect("a worker on the second node has its ledger"),
            _ => &mut self.observer,
        }
    }
    pub fn ledger_records(&self) -> Result<Vec<ExecutionRecord>, LedgerError> {
        self.observer.all_records()
    }
    pub fn ledger_history(&self) -> Result<Vec<HistoryEntry>, LedgerError> {
        self.observer.all_history()
    }
    pub fn run_history(&self) -> Result<Vec<RunHistoryEntry>, LedgerError> {
        self.observer.run_history(None)
    }
    pub fn checkpoints(&self) -> Result<Vec<Checkpoint>, LedgerError> {
        self.observer.checkpoints()
    }
    pub fn workers(&self) -> Vec<WorkerView> {
        self.workers
            .slots
            .iter()
            .map(|(number, slot)| {
                let call = slot.machine.current_call();
                WorkerView {
                    number: *number,
                    id: slot.machine.id().to_owned(),
                    run: slot.machine.run_id().to_owned(),
                    state: slot.machine.state(),
                    alive: slot.alive,
                    crashed: slot.crashed,
                    phase: slot.phase.clone(),
                    call: call.map(|(call, _, _)| call.clone()),
                    key: call.map(|(_, key, _)| key.to_string()),
                    attempt: call.map_or(0, |(_, _, attempt)| attempt),
                    loaded_version: slot.machine.loaded_version(),
                    run_state: slot.machine.run_state().clone(),
                    node: slot.node,
                }
            })
            .collect()
    }

    /// The phases worker `w<number>` was given, in order.
    pub fn worker_phases(&self, number: u32) -> Option<&[&'static str]> {
        self.workers.slots.get(&number).map(|slot| slot.phases.as_slice())
    }

    /// The checker's verdict on the history so far.
    pub fn verdict(&self) -> Result<Verdict, LedgerError> {
        let mut records = self.observer.all_records()?;
        let history = self.observer.all_history()?;
        let mut checkpoints = self.observer.checkpoints()?;
        let mut run_history = self.observer.run_history(None)?;
        // A second node's ledger is judged beside the first: its records and checkpoints are
        // the twin's promises, and its history is read apart (a decision is only ever
        // overwritten within one ledger).
        let mut second_node_history = Vec::new();
        if let Some(second) = &self.second_node {
            records.extend(second.all_records()?);
            checkpoints.extend(second.checkpoints()?);
            run_history.extend(second.run_history(None)?);
            second_node_history = second.all_history()?;
        }
        Ok(checker::judge(&checker::CheckInput {
            level: &self.level,
            guards: self.guards,
            billing: &self.world.billing,
            effects: &self.world.effects,
            records: &records,
            history: &history,
            second_node_history: &second_node_history,
            checkpoints: &checkpoints,
            run_history: &run_history,
            notes: &self.timeline.notes,
            call_items: &self.call_items,
            compensations: &self.world.compensations,
            nodes: &self.nodes,
        }))
    }

    /// Everything that happened, as canonical JSON: equal inputs give equal bytes.
    pub fn history_text(&self) -> Result<String, LedgerError> {
        #[derive(Serialize)]
        struct History<'a> {
            timeline: &'a [TimelineEntry],
            records: Vec<ExecutionRecord>,
            history: Vec<HistoryEntry>,
            run_history: Vec<RunHistoryEntry>,
            checkpoints: Vec<Checkpoint>,
            billing: &'a Billing,
            notes: &'a [GuardNote],
            #[serde(skip_serializing_if = "Option::is_none")]
            second_node: Option<NodeHistory>,
        }
        #[derive(Serialize)]
        struct NodeHistory {
            records: Vec<ExecutionRecord>,
            history: Vec<HistoryEntry>,
            run_history: Vec<RunHistoryEntry>,
            checkpoints: Vec<Checkpoint>,
        }
        let second_node = match &self.second_node {
            Some(second) => Some(NodeHistory {
                records: second.all_records()?,
                history: second.all_history()?,
                run_history: second.run_history(None)?,
                checkpoints: second.checkpoints()?,
            }),
            None => None,
        };
        let history = History {
            timeline: &self.timeline.entries,
            records: self.observer.all_records()?,
            history: self.observer.all_history()?,
            run_history: self.observer.run_history(None)?,
            checkpoints: self.observer.checkpoints()?,
            billing: &self.world.billing,
            notes: &self.timeline.notes,
            second_node,
        };
        Ok(serde_json::to_string_pretty(&history).expect("history serializes"))
    }

    // ----- advancing -----

    /// Runs one phase of one actor. Returns false when the level is over.
    pub fn step(&mut self) -> Result<bool, SimError> {
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
            self.clock.advance_to(slot.0);
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
            | Event::LookAgain { worker } => !alive(worker),
            Event::Timeout { worker, key, attempt } => !alive(worker) || !self.awaiting(*worker, key, *attempt),
            Event::Deliver { .. } | Event::Restart { .. } => false,
        }
    }

    fn process(&mut self, event: Event) -> Result<(), SimError> {
        match event {
            Event::Worker { worker, command } => self.run_command(worker, *command)?,
            Event::Deliver { message } => self.deliver(message)?,
            Event::Timeout { worker, key, attempt } => {
                let run = self.workers.slots[&worker].machine.run_id().to_owned();
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
                let run = self.workers.slots[&worker].machine.run_id().to_owned();
                self.log(
                    Actor::Worker(worker),
                    "backoff",
                    Some(run),
                    None,
                    "backoff elapsed; trying again".into(),
                );
                self.feed(worker, Input::BackoffElapsed);
            }
            Event::Restart { run, node } => {
                self.spawn_worker(&run, "recovers the run after a crash", node);
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
