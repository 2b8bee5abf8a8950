//! The deterministic simulator: virtual time, a seeded ChaCha RNG, and actors — workers,
//! the model, the network, billing, operators, the supervisor — advanced one phase at a time.
//!
//! Same level + seed + actions ⇒ the same history, byte for byte: no wall clock, no
//! unordered maps, no ambient randomness. The runtime's decisions come from
//! [`crate::runtime::worker::Worker`]; this file only carries them out.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::path::PathBuf;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use crate::billing::{Answer, Billing, CreditRequest};
use crate::checker::{self, CompensationBy, CompensationLog, Verdict};
use crate::ledger::{
    Checkpoint, ExecutionRecord, HistoryEntry, Ledger, LedgerError, LedgerStore, Recorded, Settlement,
};
use crate::level::{CardKind, Level, Play, TimedAction};
use crate::model::{self, Nudge};
use crate::runtime::guards::Guards;
use crate::runtime::key::IdempotencyKey;
use crate::runtime::operator::{self, Effect, LookupError, OperatorError, ResolveRequest};
use crate::runtime::rules::Status;
use crate::runtime::run::{RunState, ToolCall};
use crate::runtime::tool::Operation;
use crate::runtime::worker::{Command, GuardNote, Input, Reconciled, Worker, WorkerSetup, WorkerState};

/// The most workers one simulation may start (restarts and duplicates included).
pub const WORKERS_MAX: u32 = 64;
/// How far the clock jumps when nothing is scheduled but the player still has moves.
pub const IDLE_JUMP_MS: u64 = 1_000;

/// Errors that stop a simulation from being built or advanced.
#[derive(Debug, thiserror::Error)]
pub enum SimError {
    #[error(transparent)]
    Ledger(#[from] LedgerError),
    #[error("ledger file {0} already exists; a level starts from an empty ledger, so choose a new path or remove it")]
    LedgerExists(PathBuf),
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
}

/// One line of the timeline: one phase of one actor, or a player's move.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TimelineEntry {
    /// The phase number this entry ran as (a player's move: the phase it came before).
    pub phase: u32,
    pub time_ms: u64,
    /// `w1`, `model`, `network`, `billing`, `supervisor`, `crew`, or an operator id.
    pub actor: String,
    pub kind: String,
    pub run: Option<String>,
    pub key: Option<String>,
    pub text: String,
    /// A guard that held here, if any.
    pub guard: Option<String>,
}

/// A message on the wire.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Message {
    pub id: u32,
    pub direction: Direction,
    pub worker: u32,
    pub run: String,
    pub attempt: u32,
    /// The key the runtime knows the call by.
    pub key: String,
    /// The key that travels with the request (none if the guard is off or the tool takes none).
    pub downstream_key: Option<String>,
    pub call: ToolCall,
    pub answer: Option<Answer>,
    pub sent_at_ms: u64,
    pub arrives_at_ms: u64,
    pub lost: bool,
    pub slowed: bool,
    #[serde(skip)]
    slot: (u64, u64),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    Request,
    Response,
}

/// A worker as the game draws it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct WorkerView {
    pub number: u32,
    pub id: String,
    pub run: String,
    pub state: WorkerState,
    pub alive: bool,
    pub crashed: bool,
    /// The phase it runs next, or last ran.
    pub phase: String,
    pub call: Option<ToolCall>,
    pub key: Option<String>,
    pub attempt: u32,
    pub loaded_version: u32,
    pub run_state: RunState,
}

#[derive(Debug)]
struct WorkerSlot {
    machine: Worker,
    ledger: Option<Ledger>,
    alive: bool,
    crashed: bool,
    phase: String,
}

#[derive(Clone, Debug)]
enum Event {
    Worker { worker: u32, command: Box<Command> },
    Deliver { message: u32 },
    Timeout { worker: u32, key: String, attempt: u32 },
    Backoff { worker: u32 },
    Restart { run: String },
    Wake { worker: u32 },
}

/// Cards armed for the next matching moment.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Armed {
    pub lose_request: u32,
    pub lose_response: u32,
    pub slow_response: u32,
    pub call_again: BTreeMap<String, bool>,
    pub not_attempted: BTreeMap<String, u32>,
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
        }
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

    pub fn build(self) -> Result<Simulation, SimError> {
        let observer = match &self.ledger_file {
            Some(path) if path.exists() => return Err(SimError::LedgerExists(path.clone())),
            Some(path) => Ledger::open(path)?,
            None => Ledger::open_in(self.ledger_store)?,
        };
        let guards = self.guards.unwrap_or(self.level.guards);
        let hand = self
            .level
            .cards
            .iter()
            .map(|allowance| (allowance.card, allowance.count))
            .collect();
        let billing = Billing::new(self.level.world.billing_keys, &self.level.world.accounts);
        let mut simulation = Simulation {
            rng: ChaCha8Rng::seed_from_u64(self.seed),
            seed: self.seed,
            guards,
            now_ms: 0,
            phase: 0,
            next_sequence: 0,
            queue: BTreeMap::new(),
            workers: BTreeMap::new(),
            next_worker: 1,
            observer,
            billing,
            messages: BTreeMap::new(),
            next_message: 1,
            armed: Armed::default(),
            hand,
            pending: self.actions.into_iter().collect(),
            played: Vec::new(),
            timeline: Vec::new(),
            notes: Vec::new(),
            parked: BTreeMap::new(),
            model_asks: BTreeMap::new(),
            call_items: BTreeMap::new(),
            compensations: Vec::new(),
            ended: false,
            level: self.level,
        };
        let runs: Vec<String> = simulation.level.runs.iter().map(|run| run.id.clone()).collect();
        for run in runs {
            simulation.spawn_worker(&run, "starts the run");
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
    rng: ChaCha8Rng,
    now_ms: u64,
    phase: u32,
    next_sequence: u64,
    queue: BTreeMap<(u64, u64), Event>,
    workers: BTreeMap<u32, WorkerSlot>,
    next_worker: u32,
    /// The simulator's own connection: keeps a memory ledger alive, reads state for
    /// drawing and checking, and carries the operators' decisions.
    observer: Ledger,
    billing: Billing,
    messages: BTreeMap<u32, Message>,
    next_message: u32,
    armed: Armed,
    hand: BTreeMap<CardKind, u32>,
    pending: VecDeque<TimedAction>,
    played: Vec<TimedAction>,
    timeline: Vec<TimelineEntry>,
    notes: Vec<GuardNote>,
    parked: BTreeMap<String, BTreeSet<u32>>,
    model_asks: BTreeMap<(String, String), u32>,
    call_items: BTreeMap<String, BTreeSet<(String, u32)>>,
    compensations: Vec<CompensationLog>,
    ended: bool,
}

impl Simulation {
    // ----- reading the state -----

    pub fn level(&self) -> &Level {
        &self.level
    }
    pub fn seed(&self) -> u64 {
        self.seed
    }
    pub fn guards(&self) -> Guards {
        self.guards
    }
    pub fn now_ms(&self) -> u64 {
        self.now_ms
    }
    /// Phases run so far.
    pub fn phase(&self) -> u32 {
        self.phase
    }
    /// Nothing is left to happen, or the phase limit is reached. A move from the player
    /// (an operator's decision, a new worker) can wake a quiet level.
    pub fn is_over(&self) -> bool {
        self.ended
    }
    /// The phase limit is reached: no more moves.
    pub fn is_out_of_phases(&self) -> bool {
        self.phase >= self.level.max_phases
    }
    pub fn billing(&self) -> &Billing {
        &self.billing
    }
    pub fn timeline(&self) -> &[TimelineEntry] {
        &self.timeline
    }
    pub fn guard_notes(&self) -> &[GuardNote] {
        &self.notes
    }
    pub fn armed(&self) -> &Armed {
        &self.armed
    }
    /// Cards left in hand.
    pub fn hand(&self) -> &BTreeMap<CardKind, u32> {
        &self.hand
    }
    /// The moves played so far, as a tape stores them.
    pub fn played(&self) -> &[TimedAction] {
        &self.played
    }
    /// Messages on the wire now.
    pub fn messages(&self) -> impl Iterator<Item = &Message> {
        self.messages.values()
    }
    pub fn ledger(&self) -> &Ledger {
        &self.observer
    }
    pub fn ledger_records(&self) -> Result<Vec<ExecutionRecord>, LedgerError> {
        self.observer.all_records()
    }
    pub fn ledger_history(&self) -> Result<Vec<HistoryEntry>, LedgerError> {
        self.observer.all_history()
    }
    pub fn checkpoints(&self) -> Result<Vec<Checkpoint>, LedgerError> {
        self.observer.checkpoints()
    }
    pub fn workers(&self) -> Vec<WorkerView> {
        self.workers
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
                }
            })
            .collect()
    }

    /// The checker's verdict on the history so far.
    pub fn verdict(&self) -> Result<Verdict, LedgerError> {
        let records = self.observer.all_records()?;
        let history = self.observer.all_history()?;
        let checkpoints = self.observer.checkpoints()?;
        Ok(checker::judge(&checker::CheckInput {
            level: &self.level,
            billing: &self.billing,
            records: &records,
            history: &history,
            checkpoints: &checkpoints,
            notes: &self.notes,
            call_items: &self.call_items,
            compensations: &self.compensations,
        }))
    }

    /// Everything that happened, as canonical JSON: equal inputs give equal bytes.
    pub fn history_text(&self) -> Result<String, LedgerError> {
        #[derive(Serialize)]
        struct History<'a> {
            timeline: &'a [TimelineEntry],
            records: Vec<ExecutionRecord>,
            history: Vec<HistoryEntry>,
            checkpoints: Vec<Checkpoint>,
            billing: &'a Billing,
            notes: &'a [GuardNote],
        }
        let history = History {
            timeline: &self.timeline,
            records: self.observer.all_records()?,
            history: self.observer.all_history()?,
            checkpoints: self.observer.checkpoints()?,
            billing: &self.billing,
            notes: &self.notes,
        };
        Ok(serde_json::to_string_pretty(&history).expect("history serializes"))
    }

    // ----- advancing -----

    /// Runs one phase of one actor. Returns false when the level is over.
    pub fn step(&mut self) -> Result<bool, SimError> {
        if self.ended {
            return Ok(false);
        }
        if self.phase >= self.level.max_phases {
            self.end("the level's phase limit was reached");
            return Ok(false);
        }
        loop {
            self.apply_due_actions();
            if self.queue.is_empty() && self.notice_settlements()? > 0 {
                continue;
            }
            let Some((&slot, _)) = self.queue.first_key_value() else {
                if self.pending.is_empty() {
                    self.end("nothing is left to happen");
                    return Ok(false);
                }
                // Nothing is scheduled (everyone finished or waits on an operator),
                // but the player still has moves on the tape: time passes until them.
                self.now_ms += IDLE_JUMP_MS;
                let action = self.pending.pop_front().expect("checked non-empty");
                self.apply_action(action);
                continue;
            };
            let event = self.queue.remove(&slot).expect("key just read");
            if self.is_stale(&event) {
                continue;
            }
            assert!(slot.0 >= self.now_ms, "time never runs backwards");
            self.now_ms = slot.0;
            self.process(event)?;
            self.phase += 1;
            return Ok(true);
        }
    }

    /// Wakes parked workers whose call was settled outside this simulation (by an operator over
    /// the HTTP API, say, on the same ledger file). Returns how many were woken.
    pub fn notice_settlements(&mut self) -> Result<usize, SimError> {
        let keys: Vec<String> = self.parked.keys().cloned().collect();
        let mut woken = 0;
        for key in keys {
            let key = IdempotencyKey::parse(&key).expect("parked keys are keys");
            if self
                .observer
                .record(&key)?
                .is_some_and(|record| record.status.is_settled())
            {
                woken += self.parked.get(key.as_str()).map_or(0, BTreeSet::len);
                self.wake_parked(&key, None);
            }
        }
        if woken > 0 && !self.is_out_of_phases() {
            // A quiet level wakes up when someone outside settled what it waited on.
            self.ended = false;
        }
        Ok(woken)
    }

    // ----- an operator outside the simulation (the game's operator HTTP API) -----

    /// What the level's billing holds under `record`'s key: the read an operator's
    /// compensation makes before anything is undone, as a real billing server answers it.
    /// A request on the wire that carries the key is in flight: billing has not applied it.
    pub fn look_up_effect(&self, record: &ExecutionRecord) -> Result<Effect, LookupError> {
        let key = record.key.as_str();
        let in_flight = self
            .messages
            .values()
            .filter(|message| {
                message.direction == Direction::Request
                    && !message.lost
                    && message.downstream_key.as_deref() == Some(key)
            })
            .count();
        match self.billing.look_up(key, u32::try_from(in_flight).unwrap_or(u32::MAX)) {
            Some(lookup) => lookup.effect(record, "the level's billing"),
            None => Err(LookupError::CannotLookUp(format!(
                "the level's billing ignores idempotency keys: it stores none, so nobody can tell whether {key} \
                 paid anything or which credit to void. Nothing was voided and nothing recorded: check billing's \
                 entries by hand and resolve the call instead"
            ))),
        }
    }

    /// Voids credit `credit_id`, found under `key` by [`Simulation::look_up_effect`], for an
    /// operator outside the simulation who has claimed `key` compensated on the ledger.
    /// Voiding by id never takes money that was not paid, and never takes it twice. It is
    /// not a move: a re-simulation from the tape does not repeat it.
    pub fn void_for_outside_operator(&mut self, key: &IdempotencyKey, credit_id: &str) -> Result<String, String> {
        // The operator who claimed the compensation, as the ledger recorded them.
        let operator = self
            .observer
            .history(key)
            .ok()
            .and_then(|history| {
                history
                    .into_iter()
                    .rev()
                    .find(|entry| entry.event == "compensated")
                    .map(|entry| entry.actor)
            })
            .unwrap_or_else(|| "operator".to_owned());
        let answer = self.billing.void_by_id(credit_id, self.now_ms);
        let outcome = answer.void_outcome(credit_id);
        self.compensations.push(CompensationLog {
            key: key.to_string(),
            by: CompensationBy::Operator,
            answer,
        });
        let run = self
            .call_items
            .get(key.as_str())
            .and_then(|items| items.iter().next())
            .map(|(run, _)| run.clone());
        let text = match &outcome {
            Ok(done) => format!("compensates {key} over the HTTP API: {done}"),
            Err(problem) => format!("cannot compensate {key} over the HTTP API: {problem}"),
        };
        self.log(&operator, "compensate", run, Some(key.to_string()), text);
        outcome
    }

    /// Steps until `done` says so or the level is over. Returns the phases run.
    pub fn run_until(&mut self, mut done: impl FnMut(&Simulation) -> bool) -> Result<u32, SimError> {
        let start = self.phase;
        while !done(self) && self.step()? {}
        Ok(self.phase - start)
    }

    /// Steps until the level is over.
    pub fn run(&mut self) -> Result<u32, SimError> {
        self.run_until(|_| false)
    }

    fn end(&mut self, why: &str) {
        if !self.ended {
            self.ended = true;
            self.log("sim", "quiet", None, None, format!("the level is quiet: {why}"));
        }
    }

    fn apply_due_actions(&mut self) {
        while self.pending.front().is_some_and(|action| action.at_phase <= self.phase) {
            let action = self.pending.pop_front().expect("checked");
            self.apply_action(action);
        }
    }

    fn apply_action(&mut self, action: TimedAction) {
        if let Err(error) = self.play(action.play.clone()) {
            self.log(
                "crew",
                "fizzled",
                action.play.run().map(str::to_owned),
                None,
                format!("{}: {error}", action.play.card().name()),
            );
        }
    }

    fn is_stale(&self, event: &Event) -> bool {
        let alive = |worker: &u32| self.workers.get(worker).is_some_and(|slot| slot.alive);
        match event {
            Event::Worker { worker, .. } | Event::Backoff { worker } | Event::Wake { worker } => !alive(worker),
            Event::Timeout { worker, key, attempt } => !alive(worker) || !self.awaiting(*worker, key, *attempt),
            Event::Deliver { .. } | Event::Restart { .. } => false,
        }
    }

    /// The worker waits for the answer to this attempt of this call.
    fn awaiting(&self, worker: u32, key: &str, attempt: u32) -> bool {
        let machine = &self.workers[&worker].machine;
        machine.awaiting_attempt() == Some(attempt)
            && machine
                .current_call()
                .is_some_and(|(_, current, _)| current.as_str() == key)
    }

    fn schedule(&mut self, at_ms: u64, event: Event) -> (u64, u64) {
        let slot = (at_ms, self.next_sequence);
        self.next_sequence += 1;
        self.queue.insert(slot, event);
        slot
    }

    fn latency(&mut self) -> u64 {
        let jitter = self.level.world.jitter_ms;
        let extra = if jitter == 0 {
            0
        } else {
            self.rng.random_range(0..=jitter)
        };
        u64::from(self.level.world.latency_ms + extra)
    }

    fn log(&mut self, actor: &str, kind: &str, run: Option<String>, key: Option<String>, text: String) {
        self.timeline.push(TimelineEntry {
            phase: self.phase,
            time_ms: self.now_ms,
            actor: actor.to_owned(),
            kind: kind.to_owned(),
            run,
            key,
            text,
            guard: None,
        });
    }

    fn spawn_worker(&mut self, run: &str, why: &str) -> Option<u32> {
        if self.next_worker > WORKERS_MAX {
            self.log(
                "supervisor",
                "refused",
                Some(run.to_owned()),
                None,
                format!("no worker started for {run}: {WORKERS_MAX} already"),
            );
            return None;
        }
        let number = self.next_worker;
        self.next_worker += 1;
        let ledger = match self.observer.connect_again() {
            Ok(ledger) => ledger,
            Err(error) => {
                self.log(
                    "supervisor",
                    "refused",
                    Some(run.to_owned()),
                    None,
                    format!("w{number} could not open the ledger: {error}"),
                );
                return None;
            }
        };
        let tenant = self
            .level
            .runs
            .iter()
            .find(|script| script.id == run)
            .map_or_else(model::default_tenant, |script| script.tenant.clone());
        let setup = WorkerSetup {
            worker_id: format!("w{number}"),
            run_id: run.to_owned(),
            tenant,
            guards: self.guards,
            tools: self.level.tools.clone(),
            lease_ms: u64::from(self.level.world.lease_ms),
        };
        self.workers.insert(
            number,
            WorkerSlot {
                machine: Worker::new(setup),
                ledger: Some(ledger),
                alive: true,
                crashed: false,
                phase: "start".into(),
            },
        );
        self.log(
            "supervisor",
            "start",
            Some(run.to_owned()),
            None,
            format!("w{number} {why} on {run}"),
        );
        self.feed(number, Input::Start);
        Some(number)
    }

    fn feed(&mut self, worker: u32, input: Input) {
        let now = self.now_ms;
        let slot = self.workers.get_mut(&worker).expect("feeding a known worker");
        if !slot.alive || slot.machine.is_done() {
            // Between deciding to exit (or stand down) and doing it, a worker hears nothing.
            return;
        }
        let next = slot.machine.handle(now, input);
        let notes = slot.machine.take_notes();
        let run = slot.machine.run_id().to_owned();
        for note in notes {
            self.timeline.push(TimelineEntry {
                phase: self.phase,
                time_ms: now,
                actor: format!("w{worker}"),
                kind: "guard held".into(),
                run: Some(run.clone()),
                key: note.key.clone(),
                text: note.detail.clone(),
                guard: Some(note.guard.name().to_owned()),
            });
            self.notes.push(note);
        }
        if let Some(command) = next {
            let slot = self.workers.get_mut(&worker).expect("known worker");
            slot.phase = command.phase_name().to_owned();
            let delay = phase_cost_ms(&command);
            self.schedule(
                now + delay,
                Event::Worker {
                    worker,
                    command: Box::new(command),
                },
            );
        }
    }

    fn process(&mut self, event: Event) -> Result<(), SimError> {
        match event {
            Event::Worker { worker, command } => {
                if let Some(input) = self.perform(worker, *command)? {
                    self.feed(worker, input);
                }
            }
            Event::Deliver { message } => self.deliver(message)?,
            Event::Timeout { worker, key, attempt } => {
                let run = self.workers[&worker].machine.run_id().to_owned();
                self.log(
                    &format!("w{worker}"),
                    "timeout",
                    Some(run),
                    Some(key.clone()),
                    format!("attempt {attempt} timed out"),
                );
                let key = IdempotencyKey::parse(&key).expect("timer keys are keys");
                self.feed(worker, Input::TimedOut { key, attempt });
            }
            Event::Backoff { worker } => {
                let run = self.workers[&worker].machine.run_id().to_owned();
                self.log(
                    &format!("w{worker}"),
                    "backoff",
                    Some(run),
                    None,
                    "backoff elapsed; trying again".into(),
                );
                self.feed(worker, Input::BackoffElapsed);
            }
            Event::Restart { run } => {
                self.spawn_worker(&run, "recovers the run after a crash");
            }
            Event::Wake { worker } => {
                if self.workers[&worker].machine.state() == WorkerState::Parked {
                    let run = self.workers[&worker].machine.run_id().to_owned();
                    self.log(
                        &format!("w{worker}"),
                        "wake",
                        Some(run),
                        None,
                        "the call it waits on was settled".into(),
                    );
                    self.feed(worker, Input::Woken);
                }
            }
        }
        Ok(())
    }

    fn worker_ledger(&mut self, worker: u32) -> &mut Ledger {
        self.workers
            .get_mut(&worker)
            .and_then(|slot| slot.ledger.as_mut())
            .expect("a live worker has its connection")
    }

    /// Carries out one command: one visible phase.
    fn perform(&mut self, worker: u32, command: Command) -> Result<Option<Input>, SimError> {
        let now = self.now_ms;
        let actor = format!("w{worker}");
        let run = self.workers[&worker].machine.run_id().to_owned();
        let some_run = Some(run.clone());
        let input = match command {
            Command::LoadCheckpoint => {
                let checkpoint = self.worker_ledger(worker).load_checkpoint(&run)?;
                let (version, state) = match &checkpoint {
                    Some(checkpoint) => match RunState::from_json(&checkpoint.state) {
                        Ok(state) => (checkpoint.version, Some(state)),
                        Err(detail) => {
                            self.log(&actor, "load checkpoint", some_run.clone(), None, detail);
                            (checkpoint.version, None)
                        }
                    },
                    None => (0, None),
                };
                let text = match &state {
                    Some(state) => format!(
                        "loads checkpoint v{version}: item {}, {}",
                        state.item,
                        state.status.name()
                    ),
                    None => "no checkpoint: the run starts from the beginning".into(),
                };
                self.log(&actor, "load checkpoint", some_run, None, text);
                Some(Input::CheckpointLoaded { version, state })
            }
            Command::AskModel { state } => {
                let script = self
                    .level
                    .runs
                    .iter()
                    .find(|script| script.id == run)
                    .expect("runs come from the level")
                    .clone();
                let ask = (run.clone(), format!("c{}", state.next_call_number));
                let replays = *self.model_asks.get(&ask).unwrap_or(&0);
                let nudge = Nudge {
                    replays,
                    call_again: self.armed.call_again.get(&run).copied(),
                };
                let (decision, next, used_card) = model::decide(&script, &self.level.model, &state, nudge);
                if used_card {
                    self.armed.call_again.remove(&run);
                }
                let text = match &decision {
                    crate::runtime::run::Decision::Call(call) => {
                        *self.model_asks.entry(ask).or_default() += 1;
                        format!(
                            "Penny calls {}({}, {}, \"{}\") as {}{}",
                            call.tool,
                            call.arguments.account,
                            dollars(i64::from(call.arguments.amount_cents)),
                            call.arguments.memo,
                            call.id,
                            if used_card { " — called again" } else { "" }
                        )
                    }
                    crate::runtime::run::Decision::Done => "Penny is done with this run".into(),
                };
                self.log("model", "model decides", some_run, None, text);
                Some(Input::ModelDecided { decision, state: next })
            }
            Command::Reserve {
                key,
                call,
                side_effect,
                lease_ms,
                checkpoint_version,
            } => {
                let fence = Fence {
                    lease_ms,
                    checkpoint_version,
                };
                Some(Input::Reserved(self.reserve(
                    worker,
                    &key,
                    &call,
                    side_effect,
                    fence,
                    true,
                )?))
            }
            Command::CheckLedger { key } => {
                let record = self.worker_ledger(worker).check(&key)?;
                let text = match &record {
                    Some(record) => format!("checks {key}: the ledger holds {}", record.status),
                    None => format!("checks {key}: no record (not yet reserved — the insert comes next)"),
                };
                self.log(&actor, "check ledger", some_run, Some(key.to_string()), text);
                Some(Input::Checked(record))
            }
            Command::InsertStarted {
                key,
                call,
                side_effect,
                lease_ms,
                checkpoint_version,
            } => {
                let fence = Fence {
                    lease_ms,
                    checkpoint_version,
                };
                Some(Input::Inserted(self.reserve(
                    worker,
                    &key,
                    &call,
                    side_effect,
                    fence,
                    false,
                )?))
            }
            Command::Invoke {
                key,
                downstream_key,
                call,
                attempt,
            } => {
                if self.guards.ledger {
                    self.worker_ledger(worker).note_attempt(&key, attempt, &actor, now)?;
                }
                if let Some(count) = self.armed.not_attempted.get_mut(&run) {
                    *count -= 1;
                    if *count == 0 {
                        self.armed.not_attempted.remove(&run);
                    }
                    self.log(
                        &actor,
                        "send",
                        some_run,
                        Some(key.to_string()),
                        format!(
                            "{}: the tool refused before sending anything (token expired)",
                            call.tool
                        ),
                    );
                    return Ok(Some(Input::NotAttempted {
                        reason: "the account's token expired".into(),
                    }));
                }
                let latency = self.latency();
                let lost = self.armed.lose_request > 0;
                if lost {
                    self.armed.lose_request -= 1;
                }
                let id = self.next_message;
                self.next_message += 1;
                let slot = self.schedule(now + latency, Event::Deliver { message: id });
                self.messages.insert(
                    id,
                    Message {
                        id,
                        direction: Direction::Request,
                        worker,
                        run: run.clone(),
                        attempt,
                        key: key.to_string(),
                        downstream_key: downstream_key.as_ref().map(ToString::to_string),
                        call: call.clone(),
                        answer: None,
                        sent_at_ms: now,
                        arrives_at_ms: now + latency,
                        lost,
                        slowed: false,
                        slot,
                    },
                );
                self.schedule(
                    now + u64::from(self.level.world.timeout_ms),
                    Event::Timeout {
                        worker,
                        key: key.to_string(),
                        attempt,
                    },
                );
                let carried = match &downstream_key {
                    Some(key) => format!("Idempotency-Key {key}"),
                    None => "no idempotency key".into(),
                };
                self.log(
                    &actor,
                    "send",
                    some_run,
                    Some(key.to_string()),
                    format!("sends {} attempt {attempt} with {carried}", call.tool),
                );
                None
            }
            Command::Backoff { after_ms, next_attempt } => {
                self.schedule(now + after_ms, Event::Backoff { worker });
                self.log(
                    &actor,
                    "backoff",
                    some_run,
                    None,
                    format!("waits {after_ms} ms before attempt {next_attempt}"),
                );
                None
            }
            Command::RecordOutcome { key, status, result } => {
                let recorded =
                    self.worker_ledger(worker)
                        .record_outcome(&key, status, result.as_deref(), &actor, now)?;
                let text = match &recorded {
                    Recorded::Recorded(record) => format!("records {key} as {}", record.status),
                    Recorded::LateOutcomeIgnored(record) => {
                        format!(
                            "records {key} as {status}: too late, it is already {} — logged and ignored",
                            record.status
                        )
                    }
                };
                self.log(&actor, "record outcome", some_run, Some(key.to_string()), text);
                if let Recorded::Recorded(record) = &recorded
                    && record.status.is_settled()
                {
                    self.wake_parked(&key, Some(worker));
                }
                Some(Input::Recorded(recorded))
            }
            Command::LogLateOutcome { key, detail } => {
                self.worker_ledger(worker)
                    .log_late_outcome(&key, &actor, &detail, now)?;
                self.log(
                    &actor,
                    "late outcome",
                    some_run,
                    Some(key.to_string()),
                    format!("late answer for {key} logged and ignored"),
                );
                None
            }
            Command::Reconcile { key, .. } => {
                let found = self.billing.find_credit(key.as_str()).cloned();
                let outcome = match found {
                    None => {
                        self.log(
                            &actor,
                            "reconcile",
                            some_run,
                            Some(key.to_string()),
                            format!("the reconcile hook finds no credit for {key}: unknown"),
                        );
                        Reconciled::Unknown
                    }
                    Some(entry) => {
                        let result = Answer::Applied {
                            credit_id: entry.id.clone(),
                            balance_cents: self.billing.balance(&entry.account).unwrap_or(0),
                        }
                        .receipt();
                        let outcome = operator::record_reconciled(self.worker_ledger(worker), &key, &result, now)?;
                        self.log(
                            &actor,
                            "reconcile",
                            some_run,
                            Some(key.to_string()),
                            format!("the reconcile hook finds credit {} for {key}", entry.id),
                        );
                        if matches!(outcome, Reconciled::Completed { .. }) {
                            self.wake_parked(&key, Some(worker));
                        }
                        outcome
                    }
                };
                Some(Input::Reconciled(outcome))
            }
            Command::Compensate { key, call } => {
                let intent = format!("{}/{}", run, call.item);
                let answer = self.billing.void_credit(
                    key.as_str(),
                    &call.arguments.account,
                    call.arguments.amount_cents,
                    &intent,
                    now,
                );
                self.compensations.push(CompensationLog {
                    key: key.to_string(),
                    by: CompensationBy::Runtime,
                    answer: answer.clone(),
                });
                if self.guards.ledger {
                    let settlement = Settlement {
                        to: Status::Compensated,
                        expected: None,
                        actor: &actor,
                        event: "reflex_compensation",
                        reason: Some("the runtime compensated by itself"),
                        result: None,
                    };
                    match self.worker_ledger(worker).settle(&key, &settlement, now) {
                        Ok(_) => self.wake_parked(&key, Some(worker)),
                        // Already failed (a refusal): the reversal still went out; note it.
                        Err(crate::ledger::SettleError::Ledger(error)) => return Err(error.into()),
                        Err(_) => self.worker_ledger(worker).note(
                            &key,
                            &actor,
                            "reflex_compensation",
                            "the runtime compensated by itself",
                            now,
                        )?,
                    }
                }
                self.log(
                    &actor,
                    "compensate",
                    some_run,
                    Some(key.to_string()),
                    format!("compensates {key} by reflex: billing posts {}", answer.receipt()),
                );
                Some(Input::Compensated)
            }
            Command::SaveCheckpoint {
                state,
                expected_version,
                still_failed,
            } => {
                let outcome = self.worker_ledger(worker).save_checkpoint_if_still_failed(
                    &run,
                    state.status.name(),
                    &state.to_json(),
                    &actor,
                    expected_version,
                    still_failed.as_ref(),
                    now,
                )?;
                let text = match (&outcome, expected_version) {
                    (crate::ledger::SaveOutcome::Saved { version }, _) => format!(
                        "saves checkpoint v{version} ({}, item {})",
                        state.status.name(),
                        state.item
                    ),
                    (crate::ledger::SaveOutcome::Stale { expected, found }, _) => {
                        format!("save refused: loaded v{expected}, the ledger has v{found}")
                    }
                    (crate::ledger::SaveOutcome::TakenOver { key, status, owner }, _) => {
                        format!("save refused: it tells the model {key} failed, but {owner} ran it again ({status})")
                    }
                };
                self.log(&actor, "save checkpoint", some_run, None, text);
                Some(Input::Saved(outcome))
            }
            Command::ReadRecord { key } => {
                let record = self.worker_ledger(worker).record(&key)?;
                let text = match &record {
                    Some(record) => format!("reads {key}: {}", record.status),
                    None => format!("reads {key}: no record"),
                };
                self.log(&actor, "read record", some_run, Some(key.to_string()), text);
                Some(Input::RecordRead(record))
            }
            Command::Park { key } => {
                self.parked.entry(key.to_string()).or_default().insert(worker);
                self.log(
                    &actor,
                    "park",
                    some_run,
                    Some(key.to_string()),
                    format!("run paused: awaiting reconciliation of {key}"),
                );
                // Settled between the decision to pause and now: wake at once.
                if self
                    .observer
                    .record(&key)?
                    .is_some_and(|record| record.status.is_settled())
                {
                    self.wake_parked(&key, None);
                }
                None
            }
            Command::StandDown { reason } => {
                self.retire(worker);
                self.log(&actor, "stand down", some_run, None, reason);
                None
            }
            Command::Exit => {
                self.retire(worker);
                self.log(&actor, "exit", some_run, None, "exits".into());
                None
            }
        };
        Ok(input)
    }

    /// A reservation: atomic (one transaction), or the naive check-then-insert's insert.
    fn reserve(
        &mut self,
        worker: u32,
        key: &IdempotencyKey,
        call: &ToolCall,
        side_effect: crate::runtime::tool::SideEffect,
        fence: Fence,
        atomic: bool,
    ) -> Result<crate::ledger::Reservation, SimError> {
        use crate::ledger::Reservation;
        let actor = format!("w{worker}");
        let run = self.workers[&worker].machine.run_id().to_owned();
        self.note_call(key, &run, call);
        let tenant = self.tenant_of(&run);
        let arguments = call.arguments.canonical();
        let request = crate::ledger::ReserveRequest {
            key,
            tenant: &tenant,
            run_id: &run,
            tool_call_id: &call.id,
            tool: &call.tool,
            side_effect,
            arguments: &arguments,
            owner: &actor,
            lease_ms: fence.lease_ms,
            checkpoint_version: fence.checkpoint_version,
        };
        let now = self.now_ms;
        let ledger = self.worker_ledger(worker);
        let reservation = if atomic {
            ledger.reserve(&request, now)?
        } else {
            ledger.insert_started_unchecked(&request, now)?
        };
        let held =
            |status: Option<Status>| status.map_or_else(|| "no record".to_owned(), |status| format!("`{status}`"));
        let text = match &reservation {
            Reservation::Decided {
                action,
                previous_status,
                ..
            } => {
                format!(
                    "reserves {key}: the ledger held {} → {}",
                    held(*previous_status),
                    action.describe()
                )
            }
            Reservation::ArgumentsMismatch { existing } => {
                format!(
                    "reserves {key}: refused, the key belongs to other arguments {}",
                    existing.arguments
                )
            }
            Reservation::Fenced { expected, found } => {
                format!("reserves {key}: refused, the run's checkpoint is v{found}, not the v{expected} it loaded")
            }
        };
        let kind = if atomic { "reserve" } else { "insert started" };
        self.log(&actor, kind, Some(run), Some(key.to_string()), text);
        Ok(reservation)
    }

    fn tenant_of(&self, run: &str) -> String {
        self.level
            .runs
            .iter()
            .find(|script| script.id == run)
            .map_or_else(model::default_tenant, |script| script.tenant.clone())
    }

    fn note_call(&mut self, key: &IdempotencyKey, run: &str, call: &ToolCall) {
        self.call_items
            .entry(key.to_string())
            .or_default()
            .insert((run.to_owned(), call.item));
    }

    fn retire(&mut self, worker: u32) {
        let slot = self.workers.get_mut(&worker).expect("known worker");
        slot.alive = false;
        slot.ledger = None;
        for waiting in self.parked.values_mut() {
            waiting.remove(&worker);
        }
    }

    fn wake_parked(&mut self, key: &IdempotencyKey, except: Option<u32>) {
        let Some(waiting) = self.parked.remove(key.as_str()) else {
            return;
        };
        for worker in waiting {
            if Some(worker) != except {
                self.schedule(self.now_ms + 1, Event::Wake { worker });
            }
        }
    }

    fn deliver(&mut self, id: u32) -> Result<(), SimError> {
        let message = self.messages.remove(&id).expect("a scheduled message exists");
        let (run, key) = (Some(message.run.clone()), Some(message.key.clone()));
        match message.direction {
            Direction::Request if message.lost => {
                let text = format!("the request for {} was lost; billing never saw it", message.key);
                self.log("network", "request lost", run, key, text);
            }
            Direction::Request => self.billing_applies(message),
            Direction::Response if message.lost => {
                let text = format!("the response for {} was lost after billing applied it", message.key);
                self.log("network", "response lost", run, key, text);
            }
            Direction::Response => {
                let slot = self.workers.get(&message.worker);
                let alive = slot.is_some_and(|slot| slot.alive && !slot.machine.is_done());
                let crashed = slot.is_none_or(|slot| slot.crashed);
                let answer = message.answer.clone().expect("responses carry answers");
                if !alive && crashed {
                    let text = format!("the response for {} arrives; w{} is gone", message.key, message.worker);
                    self.log("network", "response travels", run, key, text);
                } else if !alive {
                    // The worker finished with this run, but its process still listens: the
                    // runtime logs the late answer and ignores it.
                    if self.guards.ledger {
                        let ledger_key = IdempotencyKey::parse(&message.key).expect("message keys are keys");
                        let detail = format!(
                            "attempt {} answered after the run moved on: {}",
                            message.attempt,
                            answer.receipt()
                        );
                        let actor = format!("w{}", message.worker);
                        self.observer
                            .log_late_outcome(&ledger_key, &actor, &detail, self.now_ms)?;
                    }
                    let text = format!("late answer for {} logged and ignored", message.key);
                    self.log("network", "late outcome", run, key, text);
                } else {
                    let late = !self.awaiting(message.worker, &message.key, message.attempt);
                    let text = format!(
                        "w{} receives {}{}",
                        message.worker,
                        answer.receipt(),
                        if late { " — after its timeout" } else { "" }
                    );
                    self.log("network", "response travels", run, key, text);
                    let key = IdempotencyKey::parse(&message.key).expect("message keys are keys");
                    self.feed(
                        message.worker,
                        Input::Response {
                            key,
                            attempt: message.attempt,
                            answer: answer.to_tool_answer(),
                        },
                    );
                }
            }
        }
        Ok(())
    }

    fn billing_applies(&mut self, request: Message) {
        let now = self.now_ms;
        let tool = self
            .level
            .tools
            .iter()
            .find(|tool| tool.name == request.call.tool)
            .expect("calls name declared tools");
        let answer = match tool.operation {
            Operation::Credit => self.billing.credit(
                &CreditRequest {
                    account: request.call.arguments.account.clone(),
                    amount_cents: request.call.arguments.amount_cents,
                    memo: request.call.arguments.memo.clone(),
                    idempotency_key: request.downstream_key.clone(),
                    intent: format!("{}/{}", request.run, request.call.item),
                },
                now,
            ),
            Operation::LookupBalance => Answer::Balance {
                balance_cents: self.billing.balance(&request.call.arguments.account).unwrap_or(0),
            },
        };
        let text = match &answer {
            Answer::Applied {
                credit_id,
                balance_cents,
            } => format!(
                "billing credits {} to {} ({credit_id}); balance {}",
                dollars(i64::from(request.call.arguments.amount_cents)),
                request.call.arguments.account,
                dollars(*balance_cents)
            ),
            Answer::Repeat { credit_id, .. } => format!(
                "billing recognises key {}: answers with {credit_id}, pays nothing",
                request.downstream_key.as_deref().unwrap_or("?")
            ),
            Answer::Rejected { reason } => format!("billing refuses: {reason}"),
            Answer::Balance { balance_cents } => format!("billing reads the balance: {}", dollars(*balance_cents)),
        };
        self.log(
            "billing",
            "billing applies",
            Some(request.run.clone()),
            Some(request.key.clone()),
            text,
        );
        let mut delay = self.latency();
        let mut slowed = false;
        if self.armed.slow_response > 0 {
            self.armed.slow_response -= 1;
            delay = u64::from(self.level.world.slow_response_ms);
            slowed = true;
        }
        let lost = self.armed.lose_response > 0;
        if lost {
            self.armed.lose_response -= 1;
        }
        let id = self.next_message;
        self.next_message += 1;
        let slot = self.schedule(now + delay, Event::Deliver { message: id });
        self.messages.insert(
            id,
            Message {
                id,
                direction: Direction::Response,
                answer: Some(answer),
                sent_at_ms: now,
                arrives_at_ms: now + delay,
                lost,
                slowed,
                slot,
                ..request
            },
        );
    }

    // ----- the player's moves -----

    /// Plays a card (or an operator move) now; it takes effect before the next phase.
    /// A refused move changes nothing and uses no card.
    pub fn play(&mut self, play: Play) -> Result<(), PlayError> {
        if self.phase >= self.level.max_phases {
            return Err(PlayError::LevelOver);
        }
        let card = play.card();
        match self.hand.get(&card) {
            None => return Err(PlayError::NotInHand(card.name())),
            Some(0) => return Err(PlayError::NoneLeft(card.name())),
            Some(_) => {}
        }
        let now = self.now_ms;
        let (actor, text) = match &play {
            Play::LoseRequest => match self.in_flight(Direction::Request) {
                Some(id) => {
                    let message = self.messages.get_mut(&id).expect("in flight");
                    message.lost = true;
                    (
                        "crew".to_owned(),
                        format!("the request for {} will be lost on the wire", message.key),
                    )
                }
                None => {
                    self.armed.lose_request += 1;
                    ("crew".to_owned(), "the next request will be lost".to_owned())
                }
            },
            Play::LoseResponse => match self.in_flight(Direction::Response) {
                Some(id) => {
                    let message = self.messages.get_mut(&id).expect("in flight");
                    message.lost = true;
                    (
                        "crew".to_owned(),
                        format!("the response for {} will be lost", message.key),
                    )
                }
                None => {
                    self.armed.lose_response += 1;
                    (
                        "crew".to_owned(),
                        "the next response will be lost after billing applies it".to_owned(),
                    )
                }
            },
            Play::SlowResponse => match self.in_flight(Direction::Response) {
                Some(id) => {
                    let message = self.messages.get(&id).expect("in flight").clone();
                    let arrives = message.sent_at_ms + u64::from(self.level.world.slow_response_ms);
                    self.queue.remove(&message.slot);
                    let slot = self.schedule(arrives.max(now), Event::Deliver { message: id });
                    let message = self.messages.get_mut(&id).expect("in flight");
                    message.slot = slot;
                    message.arrives_at_ms = arrives.max(now);
                    message.slowed = true;
                    (
                        "crew".to_owned(),
                        format!("the response for {} is slowed past the timeout", message.key),
                    )
                }
                None => {
                    self.armed.slow_response += 1;
                    (
                        "crew".to_owned(),
                        "the next response will arrive after the timeout".to_owned(),
                    )
                }
            },
            Play::CrashWorker { worker } => {
                let target = match worker {
                    Some(number) => {
                        if !self.workers.get(number).is_some_and(|slot| slot.alive) {
                            return Err(PlayError::NoSuchWorker(*number));
                        }
                        *number
                    }
                    None => {
                        *self
                            .workers
                            .iter()
                            .find(|(_, slot)| slot.alive)
                            .ok_or(PlayError::NoWorkerAlive)?
                            .0
                    }
                };
                self.crash(target);
                (
                    "crew".to_owned(),
                    format!("w{target} is killed (SIGKILL): its connection drops, its open transaction rolls back"),
                )
            }
            Play::DuplicateWorker { run } => {
                self.check_run(run)?;
                if self.next_worker > WORKERS_MAX {
                    return Err(PlayError::TooManyWorkers);
                }
                self.spawn_worker(run, "is started as a duplicate");
                ("crew".to_owned(), format!("a second worker is started on {run}"))
            }
            Play::ModelCallsAgain { run, reword } => {
                self.check_run(run)?;
                self.armed.call_again.insert(run.clone(), *reword);
                (
                    "crew".to_owned(),
                    format!(
                        "Penny will call the tool again on {run}{}",
                        if *reword { ", reworded" } else { "" }
                    ),
                )
            }
            Play::ToolFailsBeforeSending { run } => {
                self.check_run(run)?;
                *self.armed.not_attempted.entry(run.clone()).or_default() += 1;
                (
                    "crew".to_owned(),
                    format!("the next tool call on {run} will refuse before sending"),
                )
            }
            Play::OperatorResolve {
                key,
                status,
                reason,
                operator,
                expected_status,
            } => {
                let key = IdempotencyKey::parse(key).map_err(|_| PlayError::BadKey(key.clone()))?;
                let request = ResolveRequest {
                    status: *status,
                    reason: reason.clone(),
                    operator: operator.clone(),
                    expected_status: *expected_status,
                    result: None,
                };
                let record = operator::resolve(&mut self.observer, &key, &request, now)?;
                self.wake_parked(&key, None);
                (
                    operator.clone(),
                    format!("resolves {key} as {} — \"{reason}\"", record.status),
                )
            }
            Play::OperatorCompensate { key, reason, operator } => {
                let key = IdempotencyKey::parse(key).map_err(|_| PlayError::BadKey(key.clone()))?;
                let tools = self.level.tools.clone();
                let intent = self
                    .call_items
                    .get(key.as_str())
                    .and_then(|items| items.iter().next())
                    .map_or_else(|| "unattributed".to_owned(), |(run, item)| format!("{run}/{item}"));
                let billing = &mut self.billing;
                let compensations = &mut self.compensations;
                let record = operator::compensate(
                    &mut self.observer,
                    &key,
                    reason,
                    operator,
                    |tool| {
                        tools
                            .iter()
                            .any(|declared| declared.name == tool && declared.compensation)
                    },
                    |record| {
                        let arguments: crate::runtime::run::Arguments =
                            serde_json::from_str(&record.arguments).map_err(|error| error.to_string())?;
                        let answer =
                            billing.void_credit(key.as_str(), &arguments.account, arguments.amount_cents, &intent, now);
                        compensations.push(CompensationLog {
                            key: key.to_string(),
                            by: CompensationBy::Operator,
                            answer: answer.clone(),
                        });
                        match answer {
                            Answer::Rejected { reason } => Err(reason),
                            answer => Ok(answer.receipt()),
                        }
                    },
                    now,
                )?;
                self.wake_parked(&key, None);
                (
                    operator.clone(),
                    format!("compensates {key} ({}) — \"{reason}\"", record.status),
                )
            }
        };
        // A quiet level wakes up: an operator's decision or a new worker brings new phases.
        self.ended = false;
        *self.hand.get_mut(&card).expect("checked in hand") -= 1;
        self.played.push(TimedAction {
            at_phase: self.phase,
            play: play.clone(),
        });
        let run = play.run().map(str::to_owned);
        self.log(&actor, card.name(), run, None, text);
        Ok(())
    }

    fn check_run(&self, run: &str) -> Result<(), PlayError> {
        if !self.level.runs.iter().any(|script| script.id == run) {
            return Err(PlayError::NoSuchRun(run.to_owned()));
        }
        Ok(())
    }

    fn in_flight(&self, direction: Direction) -> Option<u32> {
        self.messages
            .values()
            .filter(|message| message.direction == direction && !message.lost)
            .map(|message| message.id)
            .next()
    }

    fn crash(&mut self, worker: u32) {
        let run = self.workers[&worker].machine.run_id().to_owned();
        {
            let slot = self.workers.get_mut(&worker).expect("known worker");
            slot.crashed = true;
        }
        // Dropping the connection rolls back any open transaction, as SIGKILL would.
        self.retire(worker);
        let someone_else = self
            .workers
            .values()
            .any(|slot| slot.alive && slot.machine.run_id() == run);
        if let Some(after_ms) = self.level.world.restart_after_crash_ms
            && !someone_else
        {
            self.schedule(self.now_ms + u64::from(after_ms), Event::Restart { run });
        }
    }
}

/// What a reservation is fenced with.
#[derive(Clone, Copy, Debug)]
struct Fence {
    lease_ms: Option<u64>,
    checkpoint_version: Option<u32>,
}

/// How long each kind of phase takes, in virtual milliseconds.
fn phase_cost_ms(command: &Command) -> u64 {
    match command {
        Command::AskModel { .. } => 30,
        Command::Reconcile { .. } | Command::Compensate { .. } => 10,
        Command::Invoke { .. } | Command::Park { .. } | Command::StandDown { .. } | Command::Exit => 1,
        Command::Backoff { .. } | Command::LogLateOutcome { .. } => 1,
        Command::LoadCheckpoint
        | Command::Reserve { .. }
        | Command::CheckLedger { .. }
        | Command::InsertStarted { .. }
        | Command::RecordOutcome { .. }
        | Command::SaveCheckpoint { .. }
        | Command::ReadRecord { .. } => 2,
    }
}

/// `$25.00` from cents.
pub fn dollars(cents: i64) -> String {
    let sign = if cents < 0 { "-" } else { "" };
    format!("{sign}${}.{:02}", cents.abs() / 100, cents.abs() % 100)
}
