//! What the ledger holds and answers: records, history lines, checkpoints, and the requests
//! and answers of its operations. Every store reads and writes these same types.

use serde::{Deserialize, Serialize};

use super::{HistoryEvent, LedgerError, RunEvent};
use crate::ids::{RunId, Tenant, ToolName, WorkerId};
use crate::key::IdempotencyKey;
use crate::rules::{ReservationAction, Status};
use crate::tool::SideEffect;

/// One tool execution, as the ledger holds it. A store of another crate builds one from its
/// row with [`ExecutionRecord::new`] and the `with_*`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ExecutionRecord {
    /// The call's idempotency key: one record per key.
    pub key: IdempotencyKey,
    /// Whose call it is (listings filter by it).
    pub tenant: Tenant,
    /// The run that made the call.
    pub run_id: RunId,
    /// The call's id within its run.
    pub tool_call_id: String,
    /// The tool called.
    pub tool: ToolName,
    /// What the tool does to the world, as declared.
    pub side_effect: SideEffect,
    /// The call's arguments, canonical JSON: the same key with other arguments is refused.
    pub arguments: String,
    /// Where the call stands.
    pub status: Status,
    /// Attempts that passed the send fence (0: nothing was ever sent).
    pub attempts: u32,
    /// The tool's result (or what settled the call), once there is one.
    pub result: Option<String>,
    /// The worker (or operator) that last took the call.
    pub owner: WorkerId,
    /// When the record was created, in ms.
    pub created_at_ms: u64,
    /// When the record last changed, in ms (listings are ordered by it).
    pub updated_at_ms: u64,
    /// A naive runtime's lease on a `started` call (guard `no_lease_expiry` off); `None` otherwise.
    pub lease_expires_at_ms: Option<u64>,
}

impl ExecutionRecord {
    /// Call `tool_call_id` of run `run_id` under `key`, as `owner` reserved it: the default
    /// tenant, `started`, no attempt, no result, no lease, made and changed at time 0.
    #[must_use]
    pub fn new(
        key: IdempotencyKey,
        run_id: impl Into<RunId>,
        tool_call_id: impl Into<String>,
        tool: impl Into<ToolName>,
        side_effect: SideEffect,
        arguments: impl Into<String>,
        owner: impl Into<WorkerId>,
    ) -> ExecutionRecord {
        ExecutionRecord {
            key,
            tenant: Tenant::new(crate::worker::DEFAULT_TENANT),
            run_id: run_id.into(),
            tool_call_id: tool_call_id.into(),
            tool: tool.into(),
            side_effect,
            arguments: arguments.into(),
            status: Status::Started,
            attempts: 0,
            result: None,
            owner: owner.into(),
            created_at_ms: 0,
            updated_at_ms: 0,
            lease_expires_at_ms: None,
        }
    }

    /// The same record, `tenant`'s.
    #[must_use]
    pub fn with_tenant(mut self, tenant: impl Into<Tenant>) -> ExecutionRecord {
        self.tenant = tenant.into();
        self
    }

    /// The same record with `status`, `attempts` sent and `result`.
    #[must_use]
    pub fn with_outcome(mut self, status: Status, attempts: u32, result: Option<String>) -> ExecutionRecord {
        self.status = status;
        self.attempts = attempts;
        self.result = result;
        self
    }

    /// The same record made at `created_at_ms` and last changed at `updated_at_ms`.
    #[must_use]
    pub fn with_times(mut self, created_at_ms: u64, updated_at_ms: u64) -> ExecutionRecord {
        self.created_at_ms = created_at_ms;
        self.updated_at_ms = updated_at_ms;
        self
    }

    /// The same record with a naive runtime's lease (`None`: none).
    #[must_use]
    pub fn with_lease_expires_at_ms(mut self, lease_expires_at_ms: Option<u64>) -> ExecutionRecord {
        self.lease_expires_at_ms = lease_expires_at_ms;
        self
    }

    /// What every record holds, written or read: the names that place it (whose, which run,
    /// which call, which tool, who took it) are never empty. `Some` names the first that is:
    /// a write of such a record is a bug (asserted where records are written, for every
    /// store), a stored row with one is refused as a `BadRow` where stores read rows.
    pub fn broken_invariant(&self) -> Option<&'static str> {
        let names = [
            (self.tenant.is_empty(), "an empty tenant"),
            (self.run_id.is_empty(), "an empty run id"),
            (self.tool_call_id.is_empty(), "an empty tool call id"),
            (self.tool.is_empty(), "an empty tool name"),
            (self.owner.is_empty(), "an empty owner"),
        ];
        names.into_iter().find_map(|(empty, what)| empty.then_some(what))
    }
}

/// An operator's decision that put a call in its status, as the call's history keeps it: who
/// and why. What a paused run's model hears with the settlement ([`crate::run::Told::SettledByOperator`]).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct OperatorDecision {
    /// The operator (the history line's actor).
    pub operator: String,
    /// Why, in the operator's words.
    pub reason: String,
}

impl OperatorDecision {
    /// `operator` decided because of `reason`.
    pub fn new(operator: impl Into<String>, reason: impl Into<String>) -> OperatorDecision {
        OperatorDecision {
            operator: operator.into(),
            reason: reason.into(),
        }
    }

    /// The operator's decision behind `record`'s status: the last line of `history` that moved
    /// the record to that status, when it is an operator's (a resolve, a compensation claimed
    /// or applied, or nothing found to compensate) and gives a reason. `None` for a call still
    /// unknown, or one its own attempt, a reconcile hook or a naive runtime's reflex settled.
    pub fn behind(record: &ExecutionRecord, history: &[HistoryEntry]) -> Option<OperatorDecision> {
        if record.status.is_unknown() {
            return None;
        }
        let line = history
            .iter()
            .rev()
            .find(|line| line.key == record.key && line.to_status == Some(record.status))?;
        let by_operator = matches!(
            line.event,
            HistoryEvent::Resolved
                | HistoryEvent::CompensationClaimed
                | HistoryEvent::CompensationApplied
                | HistoryEvent::NothingToCompensate
        );
        let reason = line.reason.as_ref().filter(|_| by_operator)?;
        Some(OperatorDecision::new(line.actor.clone(), reason.clone()))
    }
}

/// One line of a record's append-only history.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct HistoryEntry {
    /// The line's number, growing in the order lines were written (across every key).
    pub id: u64,
    /// The record the line is about.
    pub key: IdempotencyKey,
    /// When, in ms.
    pub at_ms: u64,
    /// Who wrote it: a worker, an operator, a hook.
    pub actor: String,
    /// What happened.
    pub event: HistoryEvent,
    /// The record's status before, when the line changed it.
    pub from_status: Option<Status>,
    /// The record's status after, when the line changed it.
    pub to_status: Option<Status>,
    /// Why, in the actor's words (an operator's reason).
    pub reason: Option<String>,
    /// What else there is to say: a result, a finding, a refusal's cause.
    pub detail: Option<String>,
}

/// A history line as a store reads it, before its text is checked: every store turns its
/// rows into a [`HistoryEntry`] through [`StoredHistoryLine::into_entry`], so a line this
/// build cannot read is the same `BadRow` whichever store holds it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredHistoryLine {
    /// [`HistoryEntry::id`] as stored.
    pub id: i64,
    /// [`HistoryEntry::key`] as stored.
    pub key: String,
    /// [`HistoryEntry::at_ms`] as stored.
    pub at_ms: i64,
    /// [`HistoryEntry::actor`].
    pub actor: String,
    /// [`HistoryEntry::event`]'s name.
    pub event: String,
    /// [`HistoryEntry::from_status`]'s name.
    pub from_status: Option<String>,
    /// [`HistoryEntry::to_status`]'s name.
    pub to_status: Option<String>,
    /// [`HistoryEntry::reason`].
    pub reason: Option<String>,
    /// [`HistoryEntry::detail`].
    pub detail: Option<String>,
}

impl StoredHistoryLine {
    /// The checked line; `location` names the store in the error.
    ///
    /// # Errors
    ///
    /// [`LedgerError::BadRow`] when the line holds an event, status or time this build cannot read.
    pub fn into_entry(self, location: &str) -> Result<HistoryEntry, LedgerError> {
        let bad = |detail: String| LedgerError::BadRow {
            location: location.to_owned(),
            key: self.key.clone(),
            detail,
        };
        let parse_status = |text: Option<String>| -> Result<Option<Status>, LedgerError> {
            text.map(|text| Status::parse(&text).ok_or_else(|| bad(format!("history status `{text}`"))))
                .transpose()
        };
        // A negative id or time (written by something else) reads as 0 rather than wrapping.
        let read_ms = |ms: i64| u64::try_from(ms).unwrap_or(0);
        Ok(HistoryEntry {
            id: read_ms(self.id),
            key: IdempotencyKey::parse(&self.key).map_err(|error| bad(error.to_string()))?,
            at_ms: read_ms(self.at_ms),
            event: HistoryEvent::parse(&self.event).ok_or_else(|| bad(format!("history event `{}`", self.event)))?,
            from_status: parse_status(self.from_status.clone())?,
            to_status: parse_status(self.to_status.clone())?,
            actor: self.actor,
            reason: self.reason,
            detail: self.detail,
        })
    }
}

/// One line of a run's append-only history.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunHistoryEntry {
    /// The line's number, growing in the order lines were written (across every run).
    pub id: u64,
    /// The run the line is about.
    pub run_id: RunId,
    /// When, in ms.
    pub at_ms: u64,
    /// Who wrote it.
    pub actor: String,
    /// What happened to the run.
    pub event: RunEvent,
    /// Why, in words.
    pub detail: Option<String>,
}

/// The answer to a reservation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reservation {
    /// The decision table's answer, and the record as it stands after the reservation.
    Decided {
        /// What the decision table says to do (run the tool, return the result, wait…).
        action: ReservationAction,
        /// The record after the reservation.
        record: ExecutionRecord,
        /// Who owned the record before, if it existed.
        previous_owner: Option<WorkerId>,
        /// What the ledger held before this reservation.
        previous_status: Option<Status>,
    },
    /// The key exists with other arguments: refused, never served the other call's result.
    ArgumentsMismatch {
        /// The record the key already holds.
        existing: ExecutionRecord,
    },
    /// The run's checkpoint moved on since this worker loaded it: another worker drives the run.
    Fenced {
        /// The checkpoint version this worker loaded.
        expected: u32,
        /// The version the ledger holds.
        found: u32,
    },
}

/// The send fence's answer: the last step before a request leaves.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AttemptStart {
    /// The record is still this worker's `started` call: the attempt is counted and the
    /// request may leave.
    Begun(ExecutionRecord),
    /// The record is not (or no longer) this worker's `started` call — an operator settled it,
    /// another worker took it over — so nothing is sent: the worker follows the record.
    Refused(Option<ExecutionRecord>),
}

/// The answer to a reservation with the send fence folded in ([`super::Ledger::reserve_and_begin`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FoldedReservation {
    /// The reservation's answer; when it runs the tool, its record is as the attempt left it.
    pub reservation: Reservation,
    /// `Some(attempt)`: the reservation runs the tool and `attempt` passed the send fence in
    /// the same transaction — the request may leave now. `None`: nothing is to be sent.
    pub attempt_begun: Option<u32>,
}

/// A settlement: a status decided by someone other than the attempt itself.
#[derive(Clone, Debug)]
pub struct Settlement<'a> {
    /// The status decided.
    pub to: Status,
    /// Compare-and-set: the status the actor saw. `None` means "whatever unknown status it has".
    pub expected: Option<Status>,
    /// Compare-and-set on the attempts noted too: `Some(0)` settles only a call whose request
    /// never passed the send fence (nothing can be on its way).
    pub expected_attempts: Option<u32>,
    /// Who decides (an operator, a reconcile hook).
    pub actor: &'a str,
    /// The history line's event.
    pub event: HistoryEvent,
    /// Why, in the actor's words.
    pub reason: Option<&'a str>,
    /// The call's result from now on (what was found, say), if the decision gives one.
    pub result: Option<&'a str>,
    /// What the history line's detail says, when it is not the result.
    pub detail: Option<&'a str>,
    /// Whether a `started` record may be settled: its worker holds it and its request may be
    /// on its way, so only a decider who knows that says `true` (a reconcile hook that found
    /// the effect, an operator who acknowledged it). `false`: [`SettleError::InFlight`].
    pub settles_started: bool,
}

/// Why a settlement was refused.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SettleError {
    /// No record has this key.
    #[error("no tool execution with key {0}")]
    NotFound(IdempotencyKey),
    /// `started` and `indeterminate` are not decisions anyone can settle a call as.
    #[error("{to} is not a decision; a call is settled as completed, failed, compensating or compensated")]
    NotADecision {
        /// The status asked for.
        to: Status,
    },
    /// The record's status is not the one the actor saw: someone decided first.
    #[error("stale compare-and-set on {key}: expected {expected}, but it is {}", current.status)]
    Stale {
        /// The call's key.
        key: IdempotencyKey,
        /// The status the actor saw.
        expected: Status,
        /// The record as it is.
        current: Box<ExecutionRecord>,
    },
    /// The call is settled already; a settled decision is never overwritten.
    #[error("{key} is already settled as {}; a settled decision is never overwritten", current.status)]
    AlreadySettled {
        /// The call's key.
        key: IdempotencyKey,
        /// The record as it is.
        current: Box<ExecutionRecord>,
    },
    /// "Nothing was sent" was asked for (`expected_attempts: Some(0)`), but an attempt passed
    /// the send fence.
    #[error(
        "{key} has {} noted: a request passed the send fence and may still be on its way, so \"nothing left\" cannot be proven",
        crate::worker::counted(u64::from(current.attempts), "attempt", "attempts")
    )]
    AttemptNoted {
        /// The call's key.
        key: IdempotencyKey,
        /// The record as it is.
        current: Box<ExecutionRecord>,
    },
    /// The call is `started` and the settlement does not say it may settle one
    /// ([`Settlement::settles_started`]): its request may still be on its way.
    #[error(
        "{key} is started: worker {} holds it and its request may still be on its way; the settlement does not \
         acknowledge that, so nothing was recorded",
        current.owner
    )]
    InFlight {
        /// The call's key.
        key: IdempotencyKey,
        /// The record as it is.
        current: Box<ExecutionRecord>,
    },
    /// The ledger itself failed.
    #[error(transparent)]
    Ledger(#[from] LedgerError),
}

/// How recording an attempt's outcome went.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Recorded {
    /// The outcome is the call's status now: the record after it.
    Recorded(ExecutionRecord),
    /// The record is not this attempt's any more (someone settled the call first, another
    /// worker owns it, a later attempt was made): the outcome was logged and ignored.
    LateOutcomeIgnored(ExecutionRecord),
}

/// An answer that arrived for an attempt nobody waits for any more
/// ([`super::Ledger::log_late_outcome`]).
#[derive(Clone, Copy, Debug)]
pub struct LateAnswer<'a> {
    /// The attempt it answers.
    pub attempt: u32,
    /// What it says of the call.
    pub says: crate::rules::Outcome,
    /// What it said, in the driver's words.
    pub detail: &'a str,
}

/// A run's saved state.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Checkpoint {
    /// The run.
    pub run_id: RunId,
    /// Grows by one with every save (compare-and-set on it fences two workers apart).
    pub version: u32,
    /// The run's status, in words (for listings).
    pub status: String,
    /// The run's state, as JSON.
    pub state: String,
    /// The worker that saved it.
    pub saved_by: WorkerId,
    /// When, in ms.
    pub updated_at_ms: u64,
}

impl Checkpoint {
    /// Run `run_id`'s checkpoint `version`: its status in words, its state as JSON, who saved
    /// it and when (a store of another crate builds one from its row).
    #[must_use]
    pub fn new(
        run_id: impl Into<RunId>,
        version: u32,
        status: impl Into<String>,
        state: impl Into<String>,
        saved_by: impl Into<WorkerId>,
        updated_at_ms: u64,
    ) -> Checkpoint {
        Checkpoint {
            run_id: run_id.into(),
            version,
            status: status.into(),
            state: state.into(),
            saved_by: saved_by.into(),
            updated_at_ms,
        }
    }

    /// The run's state as saved ([`crate::run::RunState`]).
    ///
    /// # Errors
    ///
    /// [`crate::run::UnparsableState`] when the stored state is not a run state (written by
    /// something else, or damaged).
    pub fn run_state(&self) -> Result<crate::run::RunState, crate::run::UnparsableState> {
        crate::run::RunState::from_json(&self.state)
    }

    /// The application's own state saved with the run ([`crate::run::RunState::application`]):
    /// what the agent put there with its last decision before this save, `null` if nothing.
    ///
    /// ```
    /// use twice_runtime::ledger::Ledger;
    /// use twice_runtime::run::RunState;
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let mut ledger = Ledger::open_memory_store();
    /// let state = RunState {
    ///     application: serde_json::json!({"draft": "Dear Ada"}),
    ///     ..RunState::default()
    /// };
    /// ledger.save_checkpoint("run-1", "running", &state.to_json(), "worker-1", Some(0), 10)?;
    /// let checkpoint = ledger.load_checkpoint("run-1")?.expect("saved");
    /// assert_eq!(checkpoint.application_state()?["draft"], "Dear Ada");
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    ///
    /// [`crate::run::UnparsableState`] when the stored state is not a run state.
    pub fn application_state(&self) -> Result<serde_json::Value, crate::run::UnparsableState> {
        self.run_state().map(|state| state.application)
    }
}

/// How a checkpoint save went.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SaveOutcome {
    /// Saved, as this version.
    Saved {
        /// The version saved.
        version: u32,
    },
    /// Someone saved since this worker loaded: it must stand down.
    Stale {
        /// The version this worker loaded.
        expected: u32,
        /// The version the ledger holds.
        found: u32,
    },
    /// The save relied on a call having failed, but another worker ran it again since: two
    /// workers are driving the run, and this one must stand down before it acts on the failure.
    TakenOver {
        /// The call the save relied on.
        key: String,
        /// Its status now.
        status: Status,
        /// The worker that holds it now.
        owner: WorkerId,
    },
    /// Not saved: the run would end (completed or failed) while a call it reserved after its
    /// last checkpoint is still unknown — a worker that crashed after reserving (maybe after
    /// sending) it, and a model asked again that decided otherwise. The executor answers
    /// this, never the ledger; the worker then waits for a person to settle the call.
    Abandoned {
        /// The call left behind.
        key: IdempotencyKey,
        /// Its status (`started` or `indeterminate`).
        status: Status,
    },
}

/// A checkpoint save and what it is fenced on.
#[derive(Clone, Copy, Debug)]
pub struct CheckpointSave<'a> {
    /// The run.
    pub run_id: &'a str,
    /// The run's status, in words.
    pub status: &'a str,
    /// The run's state, as JSON.
    pub state: &'a str,
    /// The worker (or operator) saving.
    pub saved_by: &'a str,
    /// Compare-and-set on the version this worker loaded (guard `checkpoint_version`).
    pub expected_version: Option<u32>,
    /// Compare-and-set on this call still being `failed` (see [`super::Ledger::save_checkpoint_fenced`]).
    pub still_failed: Option<&'a IdempotencyKey>,
}
