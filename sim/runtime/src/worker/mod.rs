//! The worker: the runtime's decisions for one run, as a sans-IO state machine.
//!
//! It takes [`Input`]s (what happened) and returns [`Command`]s (what to do next);
//! it never touches the ledger, the network, the model or the clock itself. Its ledger
//! commands are carried out by [`crate::executor::Executor`], the same for every driver;
//! the rest (the model, the network, time, the process) by the driver: the simulator drives
//! it one phase at a time, a real worker process with a real SQLite file, a real HTTP client
//! and a real clock.

use crate::answer::ToolAnswer;
use crate::guards::{Guard, NaiveRefusal};
use crate::ids::{RunId, WorkerId};
use crate::key::{IdempotencyKey, KeyScheme};
use crate::ledger::{ExecutionRecord, OperatorDecision, Recorded, Reservation, SaveOutcome};
use crate::rules::{
    AttemptEnd, FailedRunAction, Fired, Outcome, OutcomeAction, ReservationAction, Status, UnknownAction,
    failed_run_undo, outcome_action, reservation_action, unknown_action,
};
use crate::run::{Decision, RunState, RunStatus, Settled, Told, ToolCall};
use crate::tool::{SideEffect, ToolDeclaration};

mod batch;
mod call;
mod english;
mod handle;
mod held;
mod limits;
mod order;
mod phase;
mod settle;
mod setup;
mod state;
mod wait;
mod words;

use settle::{AfterSave, RunUndo};

pub use held::{GuardNote, Held};
pub use order::InputError;
pub use phase::{Phase, UnknownPhase};
pub use setup::{DECISIONS_MAX_DEFAULT, DEFAULT_TENANT, SetupError, WorkerSetup};
pub use state::{Exit, WorkerState};
pub use wait::{CallRefused, WaitReason};
pub use words::{DeadLetterReason, FailReason, OperatorNote, RecordNote, ToldFailed, Words, counted};

/// What a reconcile hook found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reconciled {
    /// The effect exists; the ledger now says `completed` with this result.
    Completed {
        /// The recorded result.
        result: String,
    },
    /// The hook cannot tell.
    Unknown,
    /// Someone settled the call before the hook's answer was recorded.
    AlreadySettled(Box<ExecutionRecord>),
    /// The hook found nothing under the key; the call's record as it stands (what table 6
    /// weighs: when it was reserved and last sent; `None`: it has no record), and when the
    /// lookup was asked. Table 6 weighs "nothing there" as of that moment, not of when the
    /// answer arrived: a request the tool's system applied in between would not be in it.
    NotFound {
        /// The call's record, read after the lookup.
        record: Option<Box<ExecutionRecord>>,
        /// When the lookup was asked.
        asked_at_ms: u64,
    },
    /// Nothing was found past the tool's settle time, and the call was settled `failed`.
    SettledFailed(Box<ExecutionRecord>),
}

/// What happened, fed to the machine.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Input {
    /// Begin: the worker loads the run's checkpoint first.
    Start,
    /// The run's checkpoint was read.
    CheckpointLoaded {
        /// The checkpoint's version (0: none yet).
        version: u32,
        /// The run's state.
        state: Option<RunState>,
        /// For a recovery counted against a declared limit: how many recoveries before this
        /// one started from this same checkpoint and made no progress past it. `None`: not
        /// counted (no limit declared, or the run was not interrupted).
        failed_recoveries: Option<u32>,
    },
    /// The run's checkpoint exists but this build cannot read it.
    CheckpointUnreadable {
        /// The checkpoint's version (0: none yet).
        version: u32,
        /// What happened, in words.
        detail: String,
    },
    /// The driver found the run's state unusable (a counter at its limit, say).
    StateUnusable {
        /// What happened, in words.
        detail: String,
    },
    /// The model decided.
    ModelDecided {
        /// What the model decided.
        decision: Decision,
        /// The run's state.
        state: RunState,
    },
    /// The atomic reservation's answer.
    Reserved(Reservation),
    /// The naive reservation's read: what the ledger held.
    Checked(Option<ExecutionRecord>),
    /// The naive reservation's write: it went through, or was fenced.
    Inserted(Reservation),
    /// The send fence refused: the record is not this worker's `started` call any more.
    /// Nothing was sent; the worker follows the record.
    AttemptRefused {
        /// The record (`None`: it has none).
        record: Option<ExecutionRecord>,
        /// The operator's decision behind its status, when an operator settled it before it
        /// was sent ([`OperatorDecision::behind`]): the model hears who decided and why.
        decision: Option<OperatorDecision>,
    },
    /// The tool refused before sending anything.
    NotAttempted {
        /// Why, in words.
        reason: String,
    },
    /// Attempt `attempt` of the call `key` left, its answer to come (a driver running a
    /// batch says so, and the machine goes on with the batch's next call).
    Sent {
        /// The call.
        key: IdempotencyKey,
        /// The attempt.
        attempt: u32,
    },
    /// An answer for attempt `attempt` of the call `key`.
    Response {
        /// The call.
        key: IdempotencyKey,
        /// The attempt.
        attempt: u32,
        /// What the other system answered.
        answer: ToolAnswer,
    },
    /// The attempt's timer ran out before an answer came.
    TimedOut {
        /// The call.
        key: IdempotencyKey,
        /// The attempt.
        attempt: u32,
    },
    /// The attempt ended and the tool cannot say whether it took effect (the connection reset
    /// after the request left, say): a timeout, with the tool's reason kept in the call's
    /// history for whoever settles it.
    Unknown {
        /// The call.
        key: IdempotencyKey,
        /// The attempt.
        attempt: u32,
        /// Why the outcome is unknown, in the tool's words.
        reason: String,
    },
    /// A backoff, or a wait before looking a call up again, has passed.
    BackoffElapsed,
    /// The outcome was recorded (or not: the record had moved on).
    Recorded(Recorded),
    /// The reconcile hook's lookup came back.
    Reconciled(Reconciled),
    /// A naive runtime's reflex compensation was done.
    Compensated,
    /// The checkpoint save came back: saved, or stale.
    Saved(SaveOutcome),
    /// A call's record, read to see how it was settled — after [`Command::ReadRecord`], or in
    /// place of an attempt's outcome or a hook's finding that came after an operator settled
    /// the call (the executor feeds the record as it stands, with their decision).
    RecordRead {
        /// The record (`None`: no record has the key).
        record: Option<ExecutionRecord>,
        /// The operator's decision behind its status, when an operator settled it
        /// ([`OperatorDecision::behind`]): the model hears who decided and why.
        decision: Option<OperatorDecision>,
    },
    /// A parked worker is woken: the call it waits on was settled.
    Woken,
    /// A parked worker is asked to look again: something that could settle its call changed
    /// (the call's owner died, the tool's world applied a request under its key).
    LookAgain,
}

/// What to do next. Each command is one visible phase.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Command {
    /// Read the run's checkpoint.
    LoadCheckpoint,
    /// Ask the model what to do next.
    AskModel {
        /// The run's state.
        state: RunState,
    },
    /// Reserve the call in one transaction (guard `atomic_reservation`).
    Reserve {
        /// The call.
        key: IdempotencyKey,
        /// The call.
        call: ToolCall,
        /// Its tool's side effect (table 1 reads it).
        side_effect: SideEffect,
        /// The lease a naive runtime puts on `started` (`None`: none, as in the runtime with every guard on).
        lease_ms: Option<u64>,
        /// Fences the reservation on the checkpoint version this worker loaded.
        checkpoint_version: Option<u32>,
    },
    /// A naive reservation's first half: read what the ledger holds.
    CheckLedger {
        /// The call.
        key: IdempotencyKey,
    },
    /// A naive reservation's second half: write `started`, unfenced by a transaction.
    InsertStarted {
        /// The call.
        key: IdempotencyKey,
        /// The call.
        call: ToolCall,
        /// Its tool's side effect (table 1 reads it).
        side_effect: SideEffect,
        /// The lease a naive runtime puts on `started` (`None`: none, as in the runtime with every guard on).
        lease_ms: Option<u64>,
        /// Fences the reservation on the checkpoint version this worker loaded.
        checkpoint_version: Option<u32>,
    },
    /// Run the tool: send the request. `downstream_key` is what travels to the other system. The
    /// executor first passes the send fence; only then does the driver send.
    Invoke {
        /// The call.
        key: IdempotencyKey,
        /// The key the request carries (`None`: the tool passes none).
        downstream_key: Option<IdempotencyKey>,
        /// The call.
        call: ToolCall,
        /// The attempt.
        attempt: u32,
    },
    /// Wait, then attempt again (a read, or a naive runtime retrying a write).
    Backoff {
        /// How long to wait before asking again.
        after_ms: u64,
        /// The attempt sent after the wait.
        next_attempt: u32,
    },
    /// Record how the call ended.
    RecordOutcome {
        /// The call.
        key: IdempotencyKey,
        /// How the attempt ended.
        outcome: Outcome,
        /// The recorded result.
        result: Option<String>,
        /// The attempt this outcome answers: recorded only over this worker's own `started`
        /// record at that attempt.
        attempt: u32,
    },
    /// An answer nobody waits for: logged under its own key, changing nothing (written as a
    /// contradiction when it says otherwise than how the call was settled).
    LogLateOutcome {
        /// The call.
        key: IdempotencyKey,
        /// The attempt.
        attempt: u32,
        /// What the answer says of the call.
        says: Outcome,
        /// What happened, in words.
        detail: String,
    },
    /// Ask the tool's reconcile hook what the other system holds under the key.
    Reconcile {
        /// The call.
        key: IdempotencyKey,
        /// The call.
        call: ToolCall,
    },
    /// A lookup found nothing past the tool's settle time, within its key retention: settle
    /// the call `failed` (compare-and-set from its unknown status), `reason` in its history.
    SettleNotFound {
        /// The call.
        key: IdempotencyKey,
        /// Why, in words.
        reason: String,
    },
    /// A lookup found nothing within the tool's settle time: wait `after_ms`, then look again.
    WaitToLookAgain {
        /// The call.
        key: IdempotencyKey,
        /// How long to wait before asking again.
        after_ms: u64,
    },
    /// A naive runtime's reflex: undo the call (guard `no_reflex_compensation` off).
    Compensate {
        /// The call.
        key: IdempotencyKey,
        /// The call.
        call: ToolCall,
    },
    /// Save the run's state.
    SaveCheckpoint {
        /// The run's state.
        state: RunState,
        /// Compare-and-set on this checkpoint version (guard `checkpoint_version`); `None`: unfenced.
        expected_version: Option<u32>,
        /// The call this save tells the model failed, when the ledger said so: `failed` is the
        /// one status another worker may take over (run again), so the save is also
        /// compare-and-set on the record still being `failed` (guard `checkpoint_version`).
        still_failed: Option<IdempotencyKey>,
    },
    /// Read a call's record.
    ReadRecord {
        /// The call.
        key: IdempotencyKey,
    },
    /// Wait until `key` is settled (`on_indeterminate: pause`).
    Park {
        /// The call.
        key: IdempotencyKey,
    },
    /// A stale checkpoint save: another worker owns the run now.
    StandDown {
        /// Why: the guard note of the `checkpoint_version` hold (the application words it).
        note: GuardNote,
    },
    /// The run's stored state cannot be used: it is not driven, and waits for a person.
    WaitForPerson {
        /// Why: the facts (the application words them).
        reason: WaitReason,
    },
    /// The run is over for this worker.
    Exit,
}

impl Command {
    /// The call the command is about, if any.
    pub fn key(&self) -> Option<&IdempotencyKey> {
        match self {
            Command::Reserve { key, .. }
            | Command::CheckLedger { key }
            | Command::InsertStarted { key, .. }
            | Command::Invoke { key, .. }
            | Command::RecordOutcome { key, .. }
            | Command::LogLateOutcome { key, .. }
            | Command::Reconcile { key, .. }
            | Command::SettleNotFound { key, .. }
            | Command::WaitToLookAgain { key, .. }
            | Command::Compensate { key, .. }
            | Command::ReadRecord { key }
            | Command::Park { key } => Some(key),
            Command::LoadCheckpoint
            | Command::AskModel { .. }
            | Command::Backoff { .. }
            | Command::SaveCheckpoint { .. }
            | Command::StandDown { .. }
            | Command::WaitForPerson { .. }
            | Command::Exit => None,
        }
    }
}

#[derive(Clone, Debug)]
struct CallContext {
    call: ToolCall,
    key: IdempotencyKey,
    tool: ToolDeclaration,
    attempt: u32,
    attempts_allowed: u32,
    awaiting_attempt: Option<u32>,
    hook_asked: bool,
    /// A request may have reached the other system: only then is there anything to compensate.
    may_have_left: bool,
    /// The ledger already held this call unknown when this worker met it (a recovery or a duplicate).
    recovered: bool,
    /// Compensation was done or deliberately not done for this call.
    compensated: bool,
    /// When the call's key was reserved (its record's `created_at_ms`; the first send without
    /// a ledger): a key's retention counts from here.
    reserved_at_ms: Option<u64>,
    /// An earlier attempt under this key may have taken effect (it timed out, or the call was
    /// taken over from a `started` record with an attempt noted): a send now is a resend.
    earlier_unknown: bool,
    /// The machine waits to look the call up again (table 6): the next `BackoffElapsed` asks
    /// the hook, it sends nothing.
    looking_again: bool,
}

/// The runtime's machine for one worker driving one run.
#[derive(Debug)]
pub struct Worker {
    setup: WorkerSetup,
    /// What the last command asked the driver for: the inputs the machine takes next.
    awaiting: order::Awaiting,
    state: WorkerState,
    loaded_version: u32,
    /// Set when the model is about to be told a call failed because the ledger says so.
    relied_failure: Option<IdempotencyKey>,
    loaded_at_ms: u64,
    run: RunState,
    call: Option<CallContext>,
    /// Set while a naive runtime compensates a failed run's effects.
    undoing: Option<RunUndo>,
    /// Set while the worker runs a batch of several calls.
    batch: Option<Box<batch::BatchRun>>,
    /// The calls this worker compensated by reflex because the run failed, oldest first.
    undone_on_failure: Vec<IdempotencyKey>,
    after_save: AfterSave,
    notes: Vec<GuardNote>,
    /// The rows of the decision tables that fired, oldest first (taken by the driver).
    fired: Vec<Fired>,
    /// Model decisions since this start (bounded by the setup's `decisions_max`).
    decisions: u32,
    /// How the run ends, once this start decided it ends (read when the worker exited).
    exit: Option<Exit>,
}

impl Worker {
    /// A worker for the run `setup` names; it does nothing until fed [`Input::Start`].
    ///
    /// # Errors
    ///
    /// The setup's first problem ([`WorkerSetup::check`]): an unusable name, a tool declared
    /// twice or outside the runtime's limits, a recovery limit of 0.
    pub fn new(setup: WorkerSetup) -> Result<Worker, SetupError> {
        setup.check()?;
        Ok(Worker {
            setup,
            awaiting: order::Awaiting::Start,
            state: WorkerState::Booting,
            loaded_version: 0,
            relied_failure: None,
            loaded_at_ms: 0,
            run: RunState::default(),
            call: None,
            undoing: None,
            batch: None,
            undone_on_failure: Vec::new(),
            after_save: AfterSave::AskModel,
            notes: Vec::new(),
            fired: Vec::new(),
            decisions: 0,
            exit: None,
        })
    }

    /// How the run ended, once this worker exited it ([`WorkerState::Exited`]); `None` before,
    /// or when it stood down, parked or waits for a person.
    pub fn exit(&self) -> Option<&Exit> {
        self.exit.as_ref().filter(|_| self.state == WorkerState::Exited)
    }

    /// Who it is and the rules it runs under.
    pub fn setup(&self) -> &WorkerSetup {
        &self.setup
    }

    /// Its worker id.
    pub fn id(&self) -> &WorkerId {
        &self.setup.worker_id
    }

    /// The run it drives.
    pub fn run_id(&self) -> &RunId {
        &self.setup.run_id
    }

    /// Where it is.
    pub fn state(&self) -> WorkerState {
        self.state
    }

    /// The run as it last knew it.
    pub fn run_state(&self) -> &RunState {
        &self.run
    }

    /// The checkpoint version it loaded (its saves compare-and-set on it).
    pub fn loaded_version(&self) -> u32 {
        self.loaded_version
    }

    /// The call in progress and its key, for drawing.
    pub fn current_call(&self) -> Option<(&ToolCall, &IdempotencyKey, u32)> {
        self.call
            .as_ref()
            .map(|context| (&context.call, &context.key, context.attempt))
    }

    /// The calls this worker compensated by reflex when the run failed (guard
    /// `no_reflex_compensation` off), oldest first.
    pub fn undone_on_failure(&self) -> &[IdempotencyKey] {
        &self.undone_on_failure
    }

    /// The attempt whose answer the worker is waiting for.
    pub fn awaiting_attempt(&self) -> Option<u32> {
        self.call.as_ref().and_then(|context| context.awaiting_attempt)
    }

    /// The key a parked worker waits on.
    pub fn waiting_on(&self) -> Option<&IdempotencyKey> {
        match self.state {
            WorkerState::Parked => self.call.as_ref().map(|context| &context.key),
            _ => None,
        }
    }

    /// It will do nothing more: exited, stood down, or waiting for a person.
    pub fn is_done(&self) -> bool {
        matches!(
            self.state,
            WorkerState::StoodDown | WorkerState::Exited | WorkerState::WaitingForPerson
        )
    }

    /// Guard notes since the last call.
    pub fn take_notes(&mut self) -> Vec<GuardNote> {
        std::mem::take(&mut self.notes)
    }

    /// The rows of tables 2 and 3 that fired since the last call: an observation only, so a
    /// rulebook can light them; nothing the worker decides depends on it.
    pub fn take_fired(&mut self) -> Vec<Fired> {
        std::mem::take(&mut self.fired)
    }

    /// Table 2, noted as it fires.
    fn outcome(
        &mut self,
        side_effect: SideEffect,
        end: AttemptEnd,
        attempt: u32,
        attempts_allowed: u32,
    ) -> OutcomeAction {
        let action = outcome_action(side_effect, end, attempt, attempts_allowed);
        self.fired.push(Fired::Outcome {
            side_effect,
            end,
            attempt,
            attempts_allowed,
            action,
        });
        action
    }

    /// A guard held, on the call in progress if there is one.
    fn note(&mut self, guard: Guard, held: Held) {
        let key = self.call.as_ref().map(|context| context.key.to_string());
        self.note_on(guard, key, held);
    }

    /// A guard held, on the call `key` names (`None`: on none).
    fn note_on(&mut self, guard: Guard, key: Option<String>, held: Held) {
        // Only a guard that is on can hold (a driver's input that says otherwise is noted by
        // nobody).
        if !self.setup.guards.is_on(guard) {
            return;
        }
        self.notes.push(GuardNote {
            guard,
            worker_id: self.setup.worker_id.clone(),
            run_id: self.setup.run_id.clone(),
            key,
            held,
        });
    }

    /// The application's words for a record's result or history note.
    fn record_words(&self, note: &RecordNote) -> String {
        (self.setup.words.record)(note)
    }

    /// How this worker makes keys: per call, unless the simulation switched guard
    /// `key_per_call` off.
    fn key_scheme(&self) -> KeyScheme {
        #[cfg(feature = "simulation")]
        if !self.guard(Guard::KeyPerCall) {
            return KeyScheme::ArgumentsHash;
        }
        KeyScheme::PerCall
    }

    fn guard(&self, guard: Guard) -> bool {
        self.setup.guards.is_on(guard)
    }

    fn context(&self) -> &CallContext {
        self.call.as_ref().expect("a call is in progress")
    }

    fn context_mut(&mut self) -> &mut CallContext {
        self.call.as_mut().expect("a call is in progress")
    }
}
