//! The worker: the runtime's decisions for one run, as a sans-IO state machine.
//!
//! It takes [`Input`]s (what happened) and returns [`Command`]s (what to do next);
//! it never touches the ledger, the network, the model or the clock itself. Its ledger
//! commands are carried out by [`crate::executor::Executor`], the same for every driver;
//! the rest (the model, the network, time, the process) by the driver: the simulator drives
//! it one phase at a time, a real worker process with a real SQLite file, a real HTTP client
//! and a real clock.

use serde::{Deserialize, Serialize};

use crate::answer::ToolAnswer;
use crate::guards::{Guard, Guards};
use crate::key::{IdempotencyKey, KeyScheme};
use crate::ledger::{ExecutionRecord, Recorded, Reservation, SaveOutcome};
use crate::rules::{
    AttemptEnd, FailedRunAction, Fired, OutcomeAction, ReservationAction, Status, UnknownAction, failed_run_undo,
    outcome_action, reservation_action, unknown_action,
};
use crate::run::{Decision, RunState, RunStatus, Told, ToolCall};
use crate::tool::{SideEffect, ToolDeclaration};

/// Who the worker is and the rules it runs under.
#[derive(Clone, Debug)]
pub struct WorkerSetup {
    pub worker_id: String,
    pub run_id: String,
    pub tenant: String,
    pub guards: Guards,
    pub tools: Vec<ToolDeclaration>,
    /// The lease a naive runtime puts on `started` records (used only with `no_lease_expiry` off).
    pub lease_ms: u64,
}

/// What a reconcile hook found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reconciled {
    /// The effect exists; the ledger now says `completed` with this result.
    Completed { result: String },
    /// The hook cannot tell.
    Unknown,
    /// Someone settled the call before the hook's answer was recorded.
    AlreadySettled(Box<ExecutionRecord>),
}

/// What happened, fed to the machine.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Input {
    Start,
    CheckpointLoaded {
        version: u32,
        state: Option<RunState>,
    },
    /// The run's checkpoint exists but this build cannot read it.
    CheckpointUnreadable {
        version: u32,
        detail: String,
    },
    /// The driver found the run's state unusable (a counter at its limit, say).
    StateUnusable {
        detail: String,
    },
    ModelDecided {
        decision: Decision,
        state: RunState,
    },
    Reserved(Reservation),
    /// The naive reservation's read: what the ledger held.
    Checked(Option<ExecutionRecord>),
    /// The naive reservation's write: it went through, or was fenced.
    Inserted(Reservation),
    /// The send fence refused: the record is not this worker's `started` call any more.
    /// Nothing was sent; the worker follows the record.
    AttemptRefused {
        record: Option<ExecutionRecord>,
    },
    /// The tool refused before sending anything.
    NotAttempted {
        reason: String,
    },
    /// An answer for attempt `attempt` of the call `key`.
    Response {
        key: IdempotencyKey,
        attempt: u32,
        answer: ToolAnswer,
    },
    TimedOut {
        key: IdempotencyKey,
        attempt: u32,
    },
    BackoffElapsed,
    Recorded(Recorded),
    Reconciled(Reconciled),
    Compensated,
    Saved(SaveOutcome),
    RecordRead(Option<ExecutionRecord>),
    /// A parked worker is woken: the call it waits on was settled.
    Woken,
    /// A parked worker is asked to look again: something that could settle its call changed
    /// (the call's owner died, the tool's world applied a request under its key).
    LookAgain,
}

/// What to do next. Each command is one visible phase.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Command {
    LoadCheckpoint,
    AskModel {
        state: RunState,
    },
    Reserve {
        key: IdempotencyKey,
        call: ToolCall,
        side_effect: SideEffect,
        lease_ms: Option<u64>,
        /// Fences the reservation on the checkpoint version this worker loaded.
        checkpoint_version: Option<u32>,
    },
    CheckLedger {
        key: IdempotencyKey,
    },
    InsertStarted {
        key: IdempotencyKey,
        call: ToolCall,
        side_effect: SideEffect,
        lease_ms: Option<u64>,
        /// Fences the reservation on the checkpoint version this worker loaded.
        checkpoint_version: Option<u32>,
    },
    /// Run the tool: send the request. `downstream_key` is what travels to billing. The
    /// executor first passes the send fence; only then does the driver send.
    Invoke {
        key: IdempotencyKey,
        downstream_key: Option<IdempotencyKey>,
        call: ToolCall,
        attempt: u32,
    },
    /// Wait, then attempt again (a read, or a naive runtime retrying a write).
    Backoff {
        after_ms: u64,
        next_attempt: u32,
    },
    RecordOutcome {
        key: IdempotencyKey,
        status: Status,
        result: Option<String>,
        /// The attempt this outcome answers: recorded only over this worker's own `started`
        /// record at that attempt.
        attempt: u32,
    },
    /// An answer nobody waits for: logged under its own key, changing nothing.
    LogLateOutcome {
        key: IdempotencyKey,
        attempt: u32,
        detail: String,
    },
    Reconcile {
        key: IdempotencyKey,
        call: ToolCall,
    },
    Compensate {
        key: IdempotencyKey,
        call: ToolCall,
    },
    SaveCheckpoint {
        state: RunState,
        expected_version: Option<u32>,
        /// The call this save tells the model failed, when the ledger said so: `failed` is the
        /// one status another worker may take over (run again), so the save is also
        /// compare-and-set on the record still being `failed` (guard `checkpoint_version`).
        still_failed: Option<IdempotencyKey>,
    },
    ReadRecord {
        key: IdempotencyKey,
    },
    /// Wait until `key` is settled (`on_indeterminate: pause`).
    Park {
        key: IdempotencyKey,
    },
    /// A stale checkpoint save: another worker owns the run now.
    StandDown {
        reason: String,
    },
    /// The run's stored state cannot be used: it is not driven, and waits for a person.
    WaitForPerson {
        reason: String,
    },
    Exit,
}

impl Command {
    /// The phase's name, as the timeline shows it.
    pub fn phase_name(&self) -> &'static str {
        match self {
            Command::LoadCheckpoint => "load checkpoint",
            Command::AskModel { .. } => "model decides",
            Command::Reserve { .. } => "reserve",
            Command::CheckLedger { .. } => "check ledger",
            Command::InsertStarted { .. } => "insert started",
            Command::Invoke { .. } => "send",
            Command::Backoff { .. } => "backoff",
            Command::RecordOutcome { .. } => "record outcome",
            Command::LogLateOutcome { .. } => "log late outcome",
            Command::Reconcile { .. } => "reconcile",
            Command::Compensate { .. } => "compensate",
            Command::SaveCheckpoint { .. } => "save checkpoint",
            Command::ReadRecord { .. } => "read record",
            Command::Park { .. } => "park",
            Command::StandDown { .. } => "stand down",
            Command::WaitForPerson { .. } => "wait for a person",
            Command::Exit => "exit",
        }
    }

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

/// What a guard did when it made a difference: typed, so code and tests match on it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "held")]
pub enum Held {
    /// `tool_contract`: a tool failed the contract check, so the run was refused before it
    /// started; nothing was sent.
    ContractRefused { tool: String },
    /// `ledger`: the call was `completed`; its recorded result was returned.
    ReturnedRecordedResult,
    /// `ledger`: the call was unknown (`started`/`indeterminate`); it was not run again.
    ReplayNotRun { status: Status, other_run: Option<String> },
    /// `ledger`: the key belongs to other arguments; the call was refused, not served the other result.
    ArgumentsRefused,
    /// `ledger`: the send fence refused: the record was no longer this worker's `started` call.
    SendRefused {
        status: Option<Status>,
        owner: Option<String>,
    },
    /// `key_per_call`: a reworded replay kept its key, so the ledger recognised it.
    RewordedReplayRecognised,
    /// `atomic_reservation`: another worker reserved the call first; only one calls the tool.
    RacingReservationLost { winner: String },
    /// `no_lease_expiry`: a `started` call past its lease was not reclaimed.
    LeaseNotReclaimed { started_for_ms: u64 },
    /// `key_downstream`: billing recognised the key and answered with the first effect.
    FirstAnswerRepeated { first: String },
    /// `write_retry_rule`: a write's timeout was recorded `indeterminate`, not retried.
    WriteNotRetried,
    /// `pause_on_indeterminate`: the run paused instead of telling the model "failed".
    Paused,
    /// `reconcile_hook`: the hook found the effect; the run went on with the real result.
    Reconciled,
    /// `no_reflex_compensation`: an unknown or failed call was not compensated by the runtime.
    NotCompensated,
    /// `no_reflex_compensation`: the run failed, and the calls of it that took effect (these
    /// keys) were left standing for an operator to decide, not compensated by the runtime.
    FailedRunNotUndone { keys: Vec<String> },
    /// `checkpoint_version`: the reservation was fenced on the checkpoint version; stood down before sending.
    StoodDownBeforeSending { expected: u32, found: u32 },
    /// `checkpoint_version`: a stale save; stood down.
    StaleSave { expected: u32, found: u32 },
    /// `checkpoint_version`: a save relied on a failure another worker had already re-run; stood down.
    FailureTakenOver { owner: String, status: Status },
}

/// A guard that made a difference: what it did, in types and in the player's words.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct GuardNote {
    pub guard: Guard,
    pub key: Option<String>,
    pub held: Held,
    pub detail: String,
}

/// Where the worker is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WorkerState {
    Booting,
    Deciding,
    Reserving,
    Calling,
    Recording,
    Reconciling,
    Saving,
    Parked,
    StoodDown,
    /// The run's stored state could not be used: nothing is driven until a person looks.
    WaitingForPerson,
    Exited,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum AfterSave {
    AskModel,
    Park,
    Exit,
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
    /// A request may have reached billing: only then is there anything to compensate.
    may_have_left: bool,
    /// The ledger already held this call unknown when this worker met it (a recovery or a duplicate).
    recovered: bool,
    /// Compensation was done or deliberately not done for this call.
    compensated: bool,
}

/// A naive runtime undoing a failed run (guard `no_reflex_compensation` off): the calls
/// that took effect and have a compensation, compensated one at a time, then the run is
/// saved failed.
#[derive(Clone, Debug)]
struct RunUndo {
    reason: String,
    left: Vec<(IdempotencyKey, ToolCall)>,
}

/// Why a call could not be begun.
enum CallRefused {
    UnknownTool(String),
    BadKey(String),
}

/// The runtime's machine for one worker driving one run.
#[derive(Debug)]
pub struct Worker {
    setup: WorkerSetup,
    state: WorkerState,
    loaded_version: u32,
    /// Set when the model is about to be told a call failed because the ledger says so.
    relied_failure: Option<IdempotencyKey>,
    loaded_at_ms: u64,
    run: RunState,
    call: Option<CallContext>,
    /// Set while a naive runtime compensates a failed run's effects.
    undoing: Option<RunUndo>,
    /// The calls this worker compensated by reflex because the run failed, oldest first.
    undone_on_failure: Vec<IdempotencyKey>,
    after_save: AfterSave,
    notes: Vec<GuardNote>,
    /// The rows of the decision tables that fired, oldest first (taken by the driver).
    fired: Vec<Fired>,
}

impl Worker {
    pub fn new(setup: WorkerSetup) -> Worker {
        Worker {
            setup,
            state: WorkerState::Booting,
            loaded_version: 0,
            relied_failure: None,
            loaded_at_ms: 0,
            run: RunState::default(),
            call: None,
            undoing: None,
            undone_on_failure: Vec::new(),
            after_save: AfterSave::AskModel,
            notes: Vec::new(),
            fired: Vec::new(),
        }
    }

    pub fn setup(&self) -> &WorkerSetup {
        &self.setup
    }

    pub fn id(&self) -> &str {
        &self.setup.worker_id
    }

    pub fn run_id(&self) -> &str {
        &self.setup.run_id
    }

    pub fn state(&self) -> WorkerState {
        self.state
    }

    pub fn run_state(&self) -> &RunState {
        &self.run
    }

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

    fn note(&mut self, guard: Guard, held: Held, detail: String) {
        debug_assert!(self.setup.guards.is_on(guard), "only a guard that is on can hold");
        let key = self.call.as_ref().map(|context| context.key.to_string());
        self.notes.push(GuardNote {
            guard,
            key,
            held,
            detail,
        });
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

    /// Feeds one input; returns the next phase, if the worker has one to run now.
    pub fn handle(&mut self, now_ms: u64, input: Input) -> Option<Command> {
        assert!(
            !self.is_done(),
            "worker {} is done and takes no input",
            self.setup.worker_id
        );
        match input {
            Input::Start => {
                self.state = WorkerState::Booting;
                if let Some(refusal) = self.contract_refusal() {
                    return refusal;
                }
                Some(Command::LoadCheckpoint)
            }
            Input::CheckpointLoaded { version, state } => {
                self.loaded_version = version;
                self.loaded_at_ms = now_ms;
                self.run = state.unwrap_or_default();
                self.on_loaded()
            }
            Input::CheckpointUnreadable { version, detail } => {
                self.loaded_version = version;
                self.wait_for_person(format!(
                    "the checkpoint of run {} (v{version}) cannot be read: {detail}. Starting over would run \
                     settled calls again under new keys, so the run waits for a person",
                    self.setup.run_id
                ))
            }
            Input::StateUnusable { detail } => self.wait_for_person(format!(
                "the state of run {} cannot be used: {detail}; the run waits for a person",
                self.setup.run_id
            )),
            Input::ModelDecided { decision, state } => {
                self.run = state;
                self.on_decided(decision)
            }
            Input::Reserved(Reservation::ArgumentsMismatch { existing }) => self.arguments_mismatch(now_ms, existing),
            Input::Reserved(Reservation::Decided { action, record, .. }) => {
                self.on_reservation(now_ms, action, Some(record))
            }
            Input::Reserved(Reservation::Fenced { expected, found })
            | Input::Inserted(Reservation::Fenced { expected, found }) => self.fenced(expected, found),
            Input::Checked(existing) => self.checked(now_ms, existing),
            Input::Inserted(Reservation::ArgumentsMismatch { existing }) => self.arguments_mismatch(now_ms, existing),
            Input::Inserted(Reservation::Decided { .. }) => self.invoke(1),
            Input::AttemptRefused { record } => self.attempt_refused(record),
            Input::NotAttempted { reason } => {
                self.context_mut().awaiting_attempt = None;
                let context = self.context();
                let (side_effect, attempt, attempts_allowed) =
                    (context.tool.side_effect, context.attempt, context.attempts_allowed);
                match self.outcome(side_effect, AttemptEnd::NotAttempted, attempt, attempts_allowed) {
                    OutcomeAction::Record(status) => self.record(status, Some(format!("not attempted: {reason}"))),
                    OutcomeAction::Retry { .. } => unreachable!("a refusal is never retried"),
                }
            }
            Input::Response { key, attempt, answer } => self.response(key, attempt, answer),
            Input::TimedOut { key, attempt } => self.timed_out(key, attempt),
            Input::BackoffElapsed => {
                let next = self.context().attempt + 1;
                self.invoke(next)
            }
            Input::Recorded(Recorded::Recorded(record)) => self.after_record(record.status, record.result),
            Input::Recorded(Recorded::LateOutcomeIgnored(current)) => self.truth_or_unknown(Some(current)),
            Input::Reconciled(Reconciled::Completed { result }) => {
                let key = self.context().key.clone();
                self.note(
                    Guard::ReconcileHook,
                    Held::Reconciled,
                    format!("the reconcile hook found {key} in billing; the run carried on with the real result"),
                );
                self.tell(Told::Result { result })
            }
            Input::Reconciled(Reconciled::Unknown) => self.unknown(),
            Input::Reconciled(Reconciled::AlreadySettled(record)) => self.truth_or_unknown(Some(*record)),
            Input::Compensated if self.undoing.is_some() => self.undo_next(),
            Input::Compensated if self.context().recovered => self.tell(Told::Compensated),
            Input::Compensated => self.tell(Told::Failed {
                reason: "the outcome was unknown; reported as failed and compensated".into(),
            }),
            Input::Saved(outcome) => self.saved(outcome),
            Input::RecordRead(record) => self.truth_or_unknown(record),
            Input::Woken => {
                assert_eq!(self.state, WorkerState::Parked, "only a parked worker is woken");
                self.state = WorkerState::Reconciling;
                Some(Command::ReadRecord {
                    key: self.context().key.clone(),
                })
            }
            Input::LookAgain => {
                assert_eq!(self.state, WorkerState::Parked, "only a parked worker looks again");
                // What the hook could not find before may be there now.
                self.context_mut().hook_asked = false;
                self.state = WorkerState::Reconciling;
                Some(Command::ReadRecord {
                    key: self.context().key.clone(),
                })
            }
        }
    }

    /// Guard `tool_contract`: every tool is put to the contract check before the run starts,
    /// and a run whose tool fails it is not started — it waits for a person to declare the
    /// tool honestly. Nothing has been loaded, asked or sent.
    fn contract_refusal(&mut self) -> Option<Option<Command>> {
        if !self.guard(Guard::ToolContract) {
            return None;
        }
        let pauses = self.guard(Guard::PauseOnIndeterminate);
        let (tool, violation) = self.setup.tools.iter().find_map(|tool| {
            tool.check_contract()
                .and_then(|()| crate::tool::assert_ambiguity_policy(tool, pauses))
                .err()
                .map(|violation| (tool.name.clone(), violation))
        })?;
        let detail = format!(
            "the tool contract check failed: {violation}. Run {} was refused before it started; nothing was sent",
            self.setup.run_id
        );
        self.note(Guard::ToolContract, Held::ContractRefused { tool }, detail.clone());
        Some(self.wait_for_person(format!("{detail}. It waits for the tool to be declared honestly")))
    }

    /// The checkpoint version a reservation is fenced on (guard `checkpoint_version`).
    fn fence(&self) -> Option<u32> {
        self.guard(Guard::CheckpointVersion).then_some(self.loaded_version)
    }

    /// Someone saved the run's checkpoint since this worker loaded it: it stands down
    /// before it sends anything.
    fn fenced(&mut self, expected: u32, found: u32) -> Option<Command> {
        let detail = format!(
            "worker {} loaded run {} at version {expected}, but the ledger has {found}: its reservation was refused and it stood down before sending",
            self.setup.worker_id, self.setup.run_id
        );
        self.stand_down(Held::StoodDownBeforeSending { expected, found }, detail)
    }

    /// The checkpoint version held (`held` says how): another worker drives the run now.
    fn stand_down(&mut self, held: Held, reason: String) -> Option<Command> {
        self.note(Guard::CheckpointVersion, held, reason.clone());
        self.state = WorkerState::StoodDown;
        Some(Command::StandDown { reason })
    }

    fn wait_for_person(&mut self, reason: String) -> Option<Command> {
        self.state = WorkerState::WaitingForPerson;
        Some(Command::WaitForPerson { reason })
    }

    fn lease(&self) -> Option<u64> {
        (!self.guard(Guard::NoLeaseExpiry)).then_some(self.setup.lease_ms)
    }

    fn on_loaded(&mut self) -> Option<Command> {
        match self.run.status.clone() {
            status if status.is_terminal() => {
                self.state = WorkerState::Exited;
                Some(Command::Exit)
            }
            RunStatus::AwaitingReconciliation { key } => {
                let Some(call) = self.run.pending.clone() else {
                    return self.wait_for_person(format!(
                        "its checkpoint awaits {key} but holds no pending call to look at"
                    ));
                };
                if let Err(refused) = self.begin_call(call) {
                    return self.wait_for_person(format!("its checkpoint's pending call {}", refused.describe()));
                }
                if self.context().key.as_str() != key {
                    return self.wait_for_person(format!(
                        "its checkpoint awaits {key}, but its pending call has the key {}",
                        self.context().key
                    ));
                }
                self.state = WorkerState::Reconciling;
                Some(Command::ReadRecord {
                    key: self.context().key.clone(),
                })
            }
            _ => {
                self.state = WorkerState::Deciding;
                Some(Command::AskModel {
                    state: self.run.clone(),
                })
            }
        }
    }

    fn begin_call(&mut self, call: ToolCall) -> Result<(), CallRefused> {
        let Some(tool) = self.setup.tools.iter().find(|tool| tool.name == call.tool).cloned() else {
            return Err(CallRefused::UnknownTool(call.tool));
        };
        let scheme = if self.guard(Guard::KeyPerCall) {
            KeyScheme::PerCall
        } else {
            KeyScheme::ArgumentsHash
        };
        let key = IdempotencyKey::make(
            scheme,
            &self.setup.run_id,
            &call.id,
            &call.tool,
            &call.arguments.canonical(),
        )
        .map_err(CallRefused::BadKey)?;
        let attempts_allowed = tool.attempts_allowed(self.guard(Guard::WriteRetryRule));
        self.call = Some(CallContext {
            call,
            key,
            tool,
            attempt: 0,
            attempts_allowed,
            awaiting_attempt: None,
            hook_asked: false,
            may_have_left: false,
            recovered: false,
            compensated: false,
        });
        Ok(())
    }

    fn on_decided(&mut self, decision: Decision) -> Option<Command> {
        match decision {
            Decision::Done => {
                self.run.status = RunStatus::Completed;
                self.save(AfterSave::Exit)
            }
            Decision::FailRun { reason } => self.fail_run(reason),
            Decision::Call(call) => {
                if let Err(refused) = self.begin_call(call) {
                    return match refused {
                        CallRefused::UnknownTool(tool) => {
                            self.fail_run(format!("the model called unknown tool `{tool}`"))
                        }
                        CallRefused::BadKey(_) => {
                            self.wait_for_person(format!("the model's call {}", refused.describe()))
                        }
                    };
                }
                if !self.guard(Guard::Ledger) {
                    return self.invoke(1);
                }
                self.state = WorkerState::Reserving;
                let context = self.context();
                let (key, call, side_effect) = (context.key.clone(), context.call.clone(), context.tool.side_effect);
                if self.guard(Guard::AtomicReservation) {
                    Some(Command::Reserve {
                        key,
                        call,
                        side_effect,
                        lease_ms: self.lease(),
                        checkpoint_version: self.fence(),
                    })
                } else {
                    Some(Command::CheckLedger { key })
                }
            }
        }
    }

    /// The naive reservation's read came back: the decision table on what it saw.
    fn checked(&mut self, now_ms: u64, existing: Option<ExecutionRecord>) -> Option<Command> {
        let side_effect = self.context().tool.side_effect;
        if let Some(record) = &existing
            && record.arguments != self.context().call.arguments.canonical()
        {
            return self.arguments_mismatch(now_ms, record.clone());
        }
        let lease_expired = !self.guard(Guard::NoLeaseExpiry)
            && existing
                .as_ref()
                .is_some_and(|record| record.lease_expires_at_ms.is_some_and(|expires| now_ms >= expires));
        let action = reservation_action(
            existing.as_ref().map(|record| record.status),
            side_effect,
            lease_expired,
        );
        match action {
            ReservationAction::RunNew | ReservationAction::RunAgain | ReservationAction::TakeOverExpiredLease => {
                let context = self.context();
                Some(Command::InsertStarted {
                    key: context.key.clone(),
                    call: context.call.clone(),
                    side_effect,
                    lease_ms: self.lease(),
                    checkpoint_version: self.fence(),
                })
            }
            _ => self.on_reservation(now_ms, action, existing),
        }
    }

    /// The key already belongs to a call with other arguments: a replay that reworded its
    /// arguments (the model is asked again after a recovery) kept its key. The ledger's record
    /// is that call: it is never served to the new wording as if it were its result, and it is
    /// never left unattended. An unknown record goes down the unknown path (hook, pause) under
    /// its own arguments; a settled one is the call's truth; only a `failed` one ends the run,
    /// since nothing of it stands and its key cannot carry the new wording.
    fn arguments_mismatch(&mut self, now_ms: u64, existing: ExecutionRecord) -> Option<Command> {
        let key = self.context().key.clone();
        self.note(
            Guard::Ledger,
            Held::ArgumentsRefused,
            format!(
                "key {key} already belongs to a call with other arguments ({}); the new wording was not run, nor served the other call's result",
                existing.arguments
            ),
        );
        if self.guard(Guard::KeyPerCall) && existing.run_id == self.setup.run_id {
            self.note(
                Guard::KeyPerCall,
                Held::RewordedReplayRecognised,
                format!("the replay reworded its arguments but kept its key {key}, so the ledger recognised it"),
            );
        }
        match existing.status {
            Status::Failed => self.fail_run(format!(
                "idempotency key {key} was used with different arguments; the earlier call failed and its key cannot carry a new wording"
            )),
            Status::Started | Status::Indeterminate => {
                // Attend the recorded call: its own arguments, recovered like any unknown call.
                if let Ok(arguments) = serde_json::from_str(&existing.arguments) {
                    self.context_mut().call.arguments = arguments;
                }
                self.on_reservation(now_ms, ReservationAction::Unknown, Some(existing))
            }
            Status::Completed => self.on_reservation(now_ms, ReservationAction::ReturnRecorded, Some(existing)),
            Status::Compensating | Status::Compensated => {
                self.on_reservation(now_ms, ReservationAction::ReturnCompensated, Some(existing))
            }
        }
    }

    fn on_reservation(
        &mut self,
        now_ms: u64,
        action: ReservationAction,
        record: Option<ExecutionRecord>,
    ) -> Option<Command> {
        match action {
            ReservationAction::RunNew | ReservationAction::RunAgain | ReservationAction::TakeOverExpiredLease => {
                self.invoke(1)
            }
            ReservationAction::ReturnRecorded => {
                let record = record.expect("a completed record exists");
                self.note(
                    Guard::Ledger,
                    Held::ReturnedRecordedResult,
                    format!(
                        "the ledger held `completed` for key {}; the recorded result was returned and the tool was not called",
                        record.key
                    ),
                );
                self.tell(Told::Result {
                    result: record.result.unwrap_or_default(),
                })
            }
            ReservationAction::ReturnCompensated => self.tell(Told::Compensated),
            ReservationAction::Unknown => {
                let record = record.expect("an unknown record exists");
                self.context_mut().recovered = true;
                let other_run = (record.run_id != self.setup.run_id).then(|| record.run_id.clone());
                let detail = match &other_run {
                    None => format!(
                        "the ledger held `{}` for key {}; the replay did not call the tool",
                        record.status, record.key
                    ),
                    Some(run) => format!(
                        "the ledger held `{}` for key {}, a call of run {run}; this call was not made",
                        record.status, record.key
                    ),
                };
                self.note(
                    Guard::Ledger,
                    Held::ReplayNotRun {
                        status: record.status,
                        other_run,
                    },
                    detail,
                );
                if record.owner != self.setup.worker_id
                    && record.run_id == self.setup.run_id
                    && record.created_at_ms >= self.loaded_at_ms
                    && self.guard(Guard::AtomicReservation)
                {
                    self.note(
                        Guard::AtomicReservation,
                        Held::RacingReservationLost {
                            winner: record.owner.clone(),
                        },
                        format!(
                            "{} reserved {} while {} drove the same run; one transaction let only one of them call the tool",
                            record.owner, record.key, self.setup.worker_id
                        ),
                    );
                }
                let started_for_ms = now_ms.saturating_sub(record.updated_at_ms);
                if record.status == Status::Started
                    && self.guard(Guard::NoLeaseExpiry)
                    && started_for_ms >= self.setup.lease_ms
                {
                    self.note(
                        Guard::NoLeaseExpiry,
                        Held::LeaseNotReclaimed { started_for_ms },
                        format!(
                            "{} has been `started` for {started_for_ms} ms, past a {} ms lease; it was not reclaimed",
                            record.key, self.setup.lease_ms
                        ),
                    );
                }
                self.unknown()
            }
        }
    }

    fn invoke(&mut self, attempt: u32) -> Option<Command> {
        let downstream = self.guard(Guard::KeyDownstream) && self.context().tool.takes_key;
        let context = self.context_mut();
        assert!(
            attempt >= 1 && attempt <= context.attempts_allowed,
            "attempt {attempt} of {}",
            context.attempts_allowed
        );
        context.attempt = attempt;
        context.awaiting_attempt = Some(attempt);
        self.state = WorkerState::Calling;
        let context = self.context();
        Some(Command::Invoke {
            key: context.key.clone(),
            downstream_key: downstream.then(|| context.key.clone()),
            call: context.call.clone(),
            attempt,
        })
    }

    /// The send fence refused: nothing was sent. The worker follows the record: a settled
    /// call is the truth; a call another worker now owns (or an unknown one) is unknown to it.
    fn attempt_refused(&mut self, record: Option<ExecutionRecord>) -> Option<Command> {
        let context = self.context_mut();
        context.awaiting_attempt = None;
        let key = context.key.clone();
        let (status, owner) = (
            record.as_ref().map(|record| record.status),
            record.as_ref().map(|record| record.owner.clone()),
        );
        let why = match (&status, &owner) {
            (Some(Status::Started), Some(owner)) => format!("{owner} owns its `started` record now"),
            (Some(status), _) => format!("its record is `{status}` now"),
            (None, _) => "it has no record".to_owned(),
        };
        self.note(
            Guard::Ledger,
            Held::SendRefused { status, owner },
            format!(
                "{} did not send {key}: {why}. The last step before a request leaves is a compare-and-set on the record, so nothing left",
                self.setup.worker_id
            ),
        );
        match record {
            Some(record) if record.status.is_settled() => self.truth_or_unknown(Some(record)),
            Some(_) => {
                self.context_mut().recovered = true;
                self.unknown()
            }
            None => self.fail_run(format!("{key} has no record to send under")),
        }
    }

    fn response(&mut self, key: IdempotencyKey, attempt: u32, answer: ToolAnswer) -> Option<Command> {
        let Some(context) = self
            .call
            .as_mut()
            .filter(|context| context.key == key && context.awaiting_attempt == Some(attempt))
        else {
            return self.late(key, attempt, &answer);
        };
        context.awaiting_attempt = None;
        context.may_have_left = true;
        let end = if answer.is_rejection() {
            AttemptEnd::Rejected
        } else {
            AttemptEnd::Succeeded
        };
        if let ToolAnswer::Repeat { first, .. } = &answer {
            let key = context.key.clone();
            self.note(
                Guard::KeyDownstream,
                Held::FirstAnswerRepeated { first: first.clone() },
                format!(
                    "billing recognised key {key} and answered with the first credit {first}; nothing was paid twice"
                ),
            );
        }
        let context = self.context();
        let (side_effect, attempt, attempts_allowed) =
            (context.tool.side_effect, context.attempt, context.attempts_allowed);
        match self.outcome(side_effect, end, attempt, attempts_allowed) {
            OutcomeAction::Record(status) => self.record(status, Some(answer.receipt().to_owned())),
            OutcomeAction::Retry { .. } => unreachable!("an answer is never retried"),
        }
    }

    fn timed_out(&mut self, key: IdempotencyKey, attempt: u32) -> Option<Command> {
        // A timer of an earlier call (or attempt) that was answered in time is stale.
        let context = self
            .call
            .as_mut()
            .filter(|context| context.key == key && context.awaiting_attempt == Some(attempt))?;
        context.awaiting_attempt = None;
        context.may_have_left = true;
        let (side_effect, attempts_allowed) = (context.tool.side_effect, context.attempts_allowed);
        match self.outcome(side_effect, AttemptEnd::TimedOut, attempt, attempts_allowed) {
            OutcomeAction::Retry { backoff_ms } => Some(Command::Backoff {
                after_ms: backoff_ms,
                next_attempt: attempt + 1,
            }),
            OutcomeAction::Record(Status::Indeterminate) => {
                // One attempt comes from the write retry rule, or from a declaration that asked
                // for one (then the rule may be off, and it is the declaration that held).
                if self.guard(Guard::WriteRetryRule) {
                    self.note(
                        Guard::WriteRetryRule,
                        Held::WriteNotRetried,
                        format!(
                            "the write {key} timed out after its request left: recorded indeterminate, not retried"
                        ),
                    );
                }
                self.record(Status::Indeterminate, None)
            }
            OutcomeAction::Record(status) => self.record(status, Some(format!("timed out {attempt} times"))),
        }
    }

    /// An answer nobody waits for (its attempt timed out, or the worker moved on): logged
    /// under its own key, whatever the worker is doing now, and ignored.
    fn late(&mut self, key: IdempotencyKey, attempt: u32, answer: &ToolAnswer) -> Option<Command> {
        if !self.guard(Guard::Ledger) {
            return None;
        }
        Some(Command::LogLateOutcome {
            key,
            attempt,
            detail: format!("attempt {attempt} answered after its timeout: {}", answer.receipt()),
        })
    }

    fn record(&mut self, status: Status, result: Option<String>) -> Option<Command> {
        if !self.guard(Guard::Ledger) {
            return self.after_record(status, result);
        }
        self.state = WorkerState::Recording;
        let context = self.context();
        Some(Command::RecordOutcome {
            key: context.key.clone(),
            status,
            result,
            attempt: context.attempt,
        })
    }

    fn after_record(&mut self, status: Status, result: Option<String>) -> Option<Command> {
        match status {
            Status::Completed => self.tell(Told::Result {
                result: result.unwrap_or_default(),
            }),
            Status::Failed => {
                if self.guard(Guard::Ledger) {
                    self.relied_failure = Some(self.context().key.clone());
                }
                self.tell_failed(result.unwrap_or_else(|| "failed".into()))
            }
            Status::Indeterminate | Status::Started => self.unknown(),
            Status::Compensating | Status::Compensated => self.tell(Told::Compensated),
        }
    }

    /// The settled truth of a record, or the unknown path if it is still unknown.
    fn truth_or_unknown(&mut self, record: Option<ExecutionRecord>) -> Option<Command> {
        match record.map(|record| (record.status, record.result)) {
            Some((Status::Completed, result)) => self.tell(Told::Result {
                result: result.unwrap_or_default(),
            }),
            Some((Status::Failed, _)) => {
                self.relied_failure = Some(self.context().key.clone());
                self.tell(Told::DidNotTakeEffect)
            }
            Some((Status::Compensating | Status::Compensated, _)) => self.tell(Told::Compensated),
            Some((Status::Started | Status::Indeterminate, _)) | None => self.unknown(),
        }
    }

    /// Table 3: the call's outcome is unknown.
    fn unknown(&mut self) -> Option<Command> {
        let context = self.context();
        // A naive runtime undoes what it cannot account for, by reflex, even on recovery.
        if context.recovered && context.tool.compensation && !context.compensated {
            let key = context.key.clone();
            if let Some(compensate) = self.reflex_compensation(format!(
                "the recovered run met {key} unknown; the runtime did not compensate it by itself"
            )) {
                return Some(compensate);
            }
        }
        let context = self.context();
        let hook_available = self.guard(Guard::ReconcileHook) && self.guard(Guard::Ledger) && context.tool.reconcile;
        let (hook_already_asked, pause) = (context.hook_asked, self.guard(Guard::PauseOnIndeterminate));
        let action = unknown_action(hook_available, hook_already_asked, pause);
        self.fired.push(Fired::Unknown {
            hook_available,
            hook_already_asked,
            pause,
            action,
        });
        match action {
            UnknownAction::AskReconcileHook => {
                let context = self.context_mut();
                context.hook_asked = true;
                let (key, call) = (context.key.clone(), context.call.clone());
                self.state = WorkerState::Reconciling;
                Some(Command::Reconcile { key, call })
            }
            UnknownAction::Pause => {
                let context = self.context();
                let (key, call) = (context.key.clone(), context.call.clone());
                let already_waiting = self.run.status == RunStatus::AwaitingReconciliation { key: key.to_string() }
                    && self.run.pending.as_ref() == Some(&call);
                if already_waiting {
                    // Looked again and still unknown: the saved checkpoint already says so.
                    self.state = WorkerState::Parked;
                    return Some(Command::Park { key });
                }
                self.note(
                    Guard::PauseOnIndeterminate,
                    Held::Paused,
                    format!(
                        "run {} paused awaiting reconciliation of {key}; the model was not told \"failed\"",
                        self.setup.run_id
                    ),
                );
                self.run.status = RunStatus::AwaitingReconciliation { key: key.to_string() };
                self.run.pending = Some(call);
                self.save(AfterSave::Park)
            }
            UnknownAction::TellModelFailed => {
                self.tell_failed("the outcome is unknown; on_indeterminate: fail reports it as failed".into())
            }
        }
    }

    /// A call that may have taken effect is unknown or failed: a naive runtime (guard
    /// `no_reflex_compensation` off) undoes it by reflex, and this is that command; the
    /// runtime does not, and says so (`held`). Either way it is decided once per call.
    fn reflex_compensation(&mut self, held: String) -> Option<Command> {
        let context = self.context_mut();
        context.compensated = true;
        if self.guard(Guard::NoReflexCompensation) {
            self.note(Guard::NoReflexCompensation, Held::NotCompensated, held);
            return None;
        }
        let context = self.context();
        let (key, call) = (context.key.clone(), context.call.clone());
        self.state = WorkerState::Recording;
        Some(Command::Compensate { key, call })
    }

    fn tell_failed(&mut self, reason: String) -> Option<Command> {
        let context = self.context();
        if context.may_have_left && context.tool.compensation && !context.compensated {
            let key = context.key.clone();
            if let Some(compensate) = self.reflex_compensation(format!(
                "{key} failed or is unknown; the runtime did not compensate it by itself"
            )) {
                return Some(compensate);
            }
        }
        self.tell(Told::Failed { reason })
    }

    fn tell(&mut self, told: Told) -> Option<Command> {
        let context = self.call.take().expect("a call to tell about");
        self.run.tell(&context.call, told);
        self.run.status = RunStatus::Running;
        self.run.pending = None;
        self.save(AfterSave::AskModel)
    }

    /// The run fails. Table 4: whatever of it took effect is compensated by reflex (a naive
    /// runtime) or left standing for an operator (the runtime cannot tell whether a failure
    /// later in the run makes an earlier effect wrong); then the run is saved failed.
    fn fail_run(&mut self, reason: String) -> Option<Command> {
        self.call = None;
        self.run.pending = None;
        let took_effect = self.compensable_effects();
        let count = u32::try_from(took_effect.len()).unwrap_or(u32::MAX);
        let reflex = !self.guard(Guard::NoReflexCompensation);
        let action = failed_run_undo(count, reflex);
        if let Some(action) = action {
            self.fired.push(Fired::FailedRunUndo {
                took_effect: count,
                reflex,
                action,
            });
        }
        match action {
            Some(FailedRunAction::CompensateWhatTookEffect) => {
                self.undoing = Some(RunUndo {
                    reason,
                    left: took_effect,
                });
                self.undo_next()
            }
            Some(FailedRunAction::LeaveToOperator) => {
                let keys: Vec<String> = took_effect.iter().map(|(key, _)| key.to_string()).collect();
                self.notes.push(GuardNote {
                    guard: Guard::NoReflexCompensation,
                    key: keys.first().cloned(),
                    detail: format!(
                        "run {} failed, and {} took effect before it; the runtime did not compensate by itself: \
                         a failure later in the run does not make an earlier effect wrong, and an operator decides",
                        self.setup.run_id,
                        keys.join(", ")
                    ),
                    held: Held::FailedRunNotUndone { keys },
                });
                self.finish_failed(reason)
            }
            Some(FailedRunAction::StartFreshRun { .. } | FailedRunAction::StayFailed) | None => {
                self.finish_failed(reason)
            }
        }
    }

    /// The calls of this run that took effect and have a compensation, with their keys, oldest first.
    fn compensable_effects(&self) -> Vec<(IdempotencyKey, ToolCall)> {
        let scheme = if self.guard(Guard::KeyPerCall) {
            KeyScheme::PerCall
        } else {
            KeyScheme::ArgumentsHash
        };
        self.run
            .took_effect
            .iter()
            .filter(|call| {
                self.setup
                    .tools
                    .iter()
                    .any(|tool| tool.name == call.tool && tool.compensation)
            })
            .filter_map(|call| {
                IdempotencyKey::make(
                    scheme,
                    &self.setup.run_id,
                    &call.id,
                    &call.tool,
                    &call.arguments.canonical(),
                )
                .ok()
                .map(|key| (key, call.clone()))
            })
            .collect()
    }

    /// The next reflex compensation of a failed run, or, all done, the failed run's save.
    fn undo_next(&mut self) -> Option<Command> {
        let undo = self.undoing.as_mut().expect("a failed run is being undone");
        if undo.left.is_empty() {
            let reason = self.undoing.take().expect("checked").reason;
            return self.finish_failed(reason);
        }
        let (key, call) = undo.left.remove(0);
        self.undone_on_failure.push(key.clone());
        self.state = WorkerState::Recording;
        Some(Command::Compensate { key, call })
    }

    fn finish_failed(&mut self, reason: String) -> Option<Command> {
        self.run.status = RunStatus::Failed { reason };
        self.save(AfterSave::Exit)
    }

    fn save(&mut self, after: AfterSave) -> Option<Command> {
        self.after_save = after;
        self.state = WorkerState::Saving;
        let expected_version = self.guard(Guard::CheckpointVersion).then_some(self.loaded_version);
        let still_failed = self
            .relied_failure
            .take()
            .filter(|_| self.guard(Guard::CheckpointVersion));
        Some(Command::SaveCheckpoint {
            state: self.run.clone(),
            expected_version,
            still_failed,
        })
    }

    fn saved(&mut self, outcome: SaveOutcome) -> Option<Command> {
        match outcome {
            SaveOutcome::Saved { version } => {
                self.loaded_version = version;
                match self.after_save {
                    AfterSave::AskModel => {
                        self.state = WorkerState::Deciding;
                        Some(Command::AskModel {
                            state: self.run.clone(),
                        })
                    }
                    AfterSave::Park => {
                        self.state = WorkerState::Parked;
                        Some(Command::Park {
                            key: self.context().key.clone(),
                        })
                    }
                    AfterSave::Exit => {
                        self.state = WorkerState::Exited;
                        Some(Command::Exit)
                    }
                }
            }
            SaveOutcome::TakenOver { key, status, owner } => {
                let detail = format!(
                    "worker {}'s save of run {} relied on {key} having failed, but {owner} ran it again \
                     (now {status}); it stood down before its model could act on the failure",
                    self.setup.worker_id, self.setup.run_id
                );
                self.stand_down(Held::FailureTakenOver { owner, status }, detail)
            }
            SaveOutcome::Stale { expected, found } => {
                let detail = format!(
                    "worker {}'s save of run {} was stale (it loaded version {expected}, the ledger has {found}); it stood down",
                    self.setup.worker_id, self.setup.run_id
                );
                self.stand_down(Held::StaleSave { expected, found }, detail)
            }
        }
    }
}

impl CallRefused {
    fn describe(&self) -> String {
        match self {
            CallRefused::UnknownTool(tool) => format!("names tool `{tool}`, which is not declared"),
            CallRefused::BadKey(detail) => format!("cannot be given a key: {detail}"),
        }
    }
}
