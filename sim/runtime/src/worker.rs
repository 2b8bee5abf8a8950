//! The worker: the runtime's decisions for one run, as a sans-IO state machine.
//!
//! It takes [`Input`]s (what happened) and returns [`Command`]s (what to do next);
//! it never touches the ledger, the network, the model or the clock itself. The
//! simulator drives it one phase at a time; a real worker process drives the same
//! machine with a real SQLite file, a real HTTP client and a real clock.

use serde::{Deserialize, Serialize};

use super::guards::{Guard, Guards};
use super::key::{IdempotencyKey, KeyScheme};
use super::rules::{
    AttemptEnd, OutcomeAction, ReservationAction, Status, UnknownAction, outcome_action, unknown_action,
};
use super::run::{Decision, RunState, RunStatus, Told, ToolCall};
use super::tool::{SideEffect, ToolDeclaration};
use crate::answer::ToolAnswer;
use crate::ledger::{ExecutionRecord, Recorded, Reservation, SaveOutcome};

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
#[derive(Clone, Debug)]
pub enum Input {
    Start,
    CheckpointLoaded {
        version: u32,
        state: Option<RunState>,
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
    /// Run the tool: send the request. `downstream_key` is what travels to billing.
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
    },
    LogLateOutcome {
        key: IdempotencyKey,
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
            Command::Exit => "exit",
        }
    }
}

/// A guard that made a difference: what the naive runtime would have done instead.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct GuardNote {
    pub guard: Guard,
    pub key: Option<String>,
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
    after_save: AfterSave,
    notes: Vec<GuardNote>,
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
            after_save: AfterSave::AskModel,
            notes: Vec::new(),
        }
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
        matches!(self.state, WorkerState::StoodDown | WorkerState::Exited)
    }

    /// Guard notes since the last call.
    pub fn take_notes(&mut self) -> Vec<GuardNote> {
        std::mem::take(&mut self.notes)
    }

    fn note(&mut self, guard: Guard, detail: String) {
        debug_assert!(self.setup.guards.is_on(guard), "only a guard that is on can hold");
        let key = self.call.as_ref().map(|context| context.key.to_string());
        self.notes.push(GuardNote { guard, key, detail });
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
                Some(Command::LoadCheckpoint)
            }
            Input::CheckpointLoaded { version, state } => {
                self.loaded_version = version;
                self.loaded_at_ms = now_ms;
                self.run = state.unwrap_or_default();
                self.on_loaded()
            }
            Input::ModelDecided { decision, state } => {
                self.run = state;
                self.on_decided(decision)
            }
            Input::Reserved(Reservation::ArgumentsMismatch { existing }) => {
                let key = self.context().key.clone();
                self.note(
                    Guard::Ledger,
                    format!(
                        "key {key} already belongs to a call with other arguments ({}); the call was refused, not served the other call's result",
                        existing.arguments
                    ),
                );
                if self.guard(Guard::KeyPerCall) && existing.run_id == self.setup.run_id {
                    self.note(
                        Guard::KeyPerCall,
                        format!(
                            "the replay reworded its arguments but kept its key {key}, so the ledger recognised it"
                        ),
                    );
                }
                self.fail_run(format!("idempotency key {key} reused with different arguments"))
            }
            Input::Reserved(Reservation::Decided { action, record, .. }) => {
                self.on_reservation(now_ms, action, Some(record))
            }
            Input::Reserved(Reservation::Fenced { expected, found })
            | Input::Inserted(Reservation::Fenced { expected, found }) => self.fenced(expected, found),
            Input::Checked(existing) => {
                let side_effect = self.context().tool.side_effect;
                if let Some(record) = &existing
                    && record.arguments != self.context().call.arguments.canonical()
                {
                    return self.fail_run(format!(
                        "idempotency key {} reused with different arguments",
                        record.key
                    ));
                }
                let lease_expired = !self.guard(Guard::NoLeaseExpiry)
                    && existing
                        .as_ref()
                        .is_some_and(|record| record.lease_expires_at_ms.is_some_and(|expires| now_ms >= expires));
                let action = super::rules::reservation_action(
                    existing.as_ref().map(|record| record.status),
                    side_effect,
                    lease_expired,
                );
                match action {
                    ReservationAction::RunNew
                    | ReservationAction::RunAgain
                    | ReservationAction::TakeOverExpiredLease => {
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
            Input::Inserted(Reservation::ArgumentsMismatch { existing }) => self.fail_run(format!(
                "idempotency key {} reused with different arguments",
                existing.key
            )),
            Input::Inserted(Reservation::Decided { .. }) => self.invoke(1),
            Input::NotAttempted { reason } => {
                self.context_mut().awaiting_attempt = None;
                let context = self.context();
                match outcome_action(
                    context.tool.side_effect,
                    AttemptEnd::NotAttempted,
                    context.attempt,
                    context.attempts_allowed,
                ) {
                    OutcomeAction::Record(status) => self.record(status, Some(format!("not attempted: {reason}"))),
                    OutcomeAction::Retry { .. } => unreachable!("a refusal is never retried"),
                }
            }
            Input::Response { key, attempt, answer } => {
                let Some(context) = self
                    .call
                    .as_mut()
                    .filter(|context| context.key == key && context.awaiting_attempt == Some(attempt))
                else {
                    return self.late(attempt, &answer);
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
                        format!("billing recognised key {key} and answered with the first credit {first}; nothing was paid twice"),
                    );
                }
                let context = self.context();
                match outcome_action(context.tool.side_effect, end, context.attempt, context.attempts_allowed) {
                    OutcomeAction::Record(status) => self.record(status, Some(answer.receipt().to_owned())),
                    OutcomeAction::Retry { .. } => unreachable!("an answer is never retried"),
                }
            }
            Input::TimedOut { key, attempt } => {
                // A timer of an earlier call (or attempt) that was answered in time is stale.
                let context = self
                    .call
                    .as_mut()
                    .filter(|context| context.key == key && context.awaiting_attempt == Some(attempt))?;
                context.awaiting_attempt = None;
                context.may_have_left = true;
                let (side_effect, attempts_allowed) = (context.tool.side_effect, context.attempts_allowed);
                match outcome_action(side_effect, AttemptEnd::TimedOut, attempt, attempts_allowed) {
                    OutcomeAction::Retry { backoff_ms } => Some(Command::Backoff {
                        after_ms: backoff_ms,
                        next_attempt: attempt + 1,
                    }),
                    OutcomeAction::Record(Status::Indeterminate) => {
                        let key = self.context().key.clone();
                        self.note(
                            Guard::WriteRetryRule,
                            format!(
                                "the write {key} timed out after its request left: recorded indeterminate, not retried"
                            ),
                        );
                        self.record(Status::Indeterminate, None)
                    }
                    OutcomeAction::Record(status) => self.record(status, Some(format!("timed out {attempt} times"))),
                }
            }
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
                    format!("the reconcile hook found {key} in billing; the run carried on with the real result"),
                );
                self.tell(Told::Result { result })
            }
            Input::Reconciled(Reconciled::Unknown) => self.unknown(),
            Input::Reconciled(Reconciled::AlreadySettled(record)) => self.truth_or_unknown(Some(*record)),
            Input::Compensated if self.context().recovered => self.tell(Told::Compensated),
            Input::Compensated => self.tell(Told::Failed {
                reason: "the outcome was unknown; reported as failed and compensated".into(),
            }),
            Input::Saved(SaveOutcome::Saved { version }) => {
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
            Input::Saved(SaveOutcome::TakenOver { key, status, owner }) => {
                let detail = format!(
                    "worker {}'s save of run {} relied on {key} having failed, but {owner} ran it again \
                     (now {status}); it stood down before its model could act on the failure",
                    self.setup.worker_id, self.setup.run_id
                );
                self.note(Guard::CheckpointVersion, detail.clone());
                self.state = WorkerState::StoodDown;
                Some(Command::StandDown { reason: detail })
            }
            Input::Saved(SaveOutcome::Stale { expected, found }) => {
                let detail = format!(
                    "worker {}'s save of run {} was stale (it loaded version {expected}, the ledger has {found}); it stood down",
                    self.setup.worker_id, self.setup.run_id
                );
                self.note(Guard::CheckpointVersion, detail.clone());
                self.state = WorkerState::StoodDown;
                Some(Command::StandDown { reason: detail })
            }
            Input::RecordRead(record) => self.truth_or_unknown(record),
            Input::Woken => {
                assert_eq!(self.state, WorkerState::Parked, "only a parked worker is woken");
                self.state = WorkerState::Reconciling;
                Some(Command::ReadRecord {
                    key: self.context().key.clone(),
                })
            }
        }
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
        self.note(Guard::CheckpointVersion, detail.clone());
        self.state = WorkerState::StoodDown;
        Some(Command::StandDown { reason: detail })
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
                    return self.fail_run(format!("checkpoint awaits {key} but holds no pending call"));
                };
                self.begin_call(call);
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

    fn begin_call(&mut self, call: ToolCall) -> bool {
        let Some(tool) = self.setup.tools.iter().find(|tool| tool.name == call.tool).cloned() else {
            return false;
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
        );
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
        true
    }

    fn on_decided(&mut self, decision: Decision) -> Option<Command> {
        match decision {
            Decision::Done => {
                self.run.status = RunStatus::Completed;
                self.save(AfterSave::Exit)
            }
            Decision::Call(call) => {
                let tool = call.tool.clone();
                if !self.begin_call(call) {
                    return self.fail_run(format!("the model called unknown tool `{tool}`"));
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
                let detail = if record.run_id == self.setup.run_id {
                    format!(
                        "the ledger held `{}` for key {}; the replay did not call the tool",
                        record.status, record.key
                    )
                } else {
                    format!(
                        "the ledger held `{}` for key {}, a call of run {}; this call was not made",
                        record.status, record.key, record.run_id
                    )
                };
                self.note(Guard::Ledger, detail);
                if record.owner != self.setup.worker_id
                    && record.run_id == self.setup.run_id
                    && record.created_at_ms >= self.loaded_at_ms
                    && self.guard(Guard::AtomicReservation)
                {
                    self.note(
                        Guard::AtomicReservation,
                        format!(
                            "{} reserved {} while {} drove the same run; one transaction let only one of them call the tool",
                            record.owner, record.key, self.setup.worker_id
                        ),
                    );
                }
                if record.status == Status::Started
                    && self.guard(Guard::NoLeaseExpiry)
                    && now_ms >= record.updated_at_ms + self.setup.lease_ms
                {
                    self.note(
                        Guard::NoLeaseExpiry,
                        format!(
                            "{} has been `started` for {} ms, past a {} ms lease; it was not reclaimed",
                            record.key,
                            now_ms - record.updated_at_ms,
                            self.setup.lease_ms
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

    fn late(&mut self, attempt: u32, answer: &ToolAnswer) -> Option<Command> {
        let context = self.call.as_ref()?;
        if !self.setup.guards.ledger {
            return None;
        }
        Some(Command::LogLateOutcome {
            key: context.key.clone(),
            detail: format!("attempt {attempt} answered after its timeout: {}", answer.receipt()),
        })
    }

    fn record(&mut self, status: Status, result: Option<String>) -> Option<Command> {
        if !self.guard(Guard::Ledger) {
            return self.after_record(status, result);
        }
        self.state = WorkerState::Recording;
        Some(Command::RecordOutcome {
            key: self.context().key.clone(),
            status,
            result,
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
            Status::Compensated => self.tell(Told::Compensated),
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
            Some((Status::Compensated, _)) => self.tell(Told::Compensated),
            Some((Status::Started | Status::Indeterminate, _)) | None => self.unknown(),
        }
    }

    /// Table 3: the call's outcome is unknown.
    fn unknown(&mut self) -> Option<Command> {
        let context = self.context();
        // A naive runtime undoes what it cannot account for, by reflex, even on recovery.
        if context.recovered && context.tool.compensation && !context.compensated {
            if !self.guard(Guard::NoReflexCompensation) {
                let context = self.context_mut();
                context.compensated = true;
                let (key, call) = (context.key.clone(), context.call.clone());
                self.state = WorkerState::Recording;
                return Some(Command::Compensate { key, call });
            }
            let key = context.key.clone();
            self.note(
                Guard::NoReflexCompensation,
                format!("the recovered run met {key} unknown; the runtime did not compensate it by itself"),
            );
            self.context_mut().compensated = true;
        }
        let context = self.context();
        let hook_available = self.guard(Guard::ReconcileHook) && self.guard(Guard::Ledger) && context.tool.reconcile;
        match unknown_action(
            hook_available,
            context.hook_asked,
            self.guard(Guard::PauseOnIndeterminate),
        ) {
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
                self.note(
                    Guard::PauseOnIndeterminate,
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

    fn tell_failed(&mut self, reason: String) -> Option<Command> {
        let context = self.context();
        if context.may_have_left && context.tool.compensation && !context.compensated {
            if !self.guard(Guard::NoReflexCompensation) {
                self.context_mut().compensated = true;
                let context = self.context();
                let (key, call) = (context.key.clone(), context.call.clone());
                self.state = WorkerState::Recording;
                return Some(Command::Compensate { key, call });
            }
            let key = context.key.clone();
            self.note(
                Guard::NoReflexCompensation,
                format!("{key} failed or is unknown; the runtime did not compensate it by itself"),
            );
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

    fn fail_run(&mut self, reason: String) -> Option<Command> {
        self.call = None;
        self.run.pending = None;
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
}
