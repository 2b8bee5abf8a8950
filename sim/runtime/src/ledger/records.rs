//! What the ledger holds and answers: records, history lines, checkpoints, and the requests
//! and answers of its operations. Every store reads and writes these same types.

use serde::{Deserialize, Serialize};

use super::{HistoryEvent, LedgerError, RunEvent};
use crate::key::IdempotencyKey;
use crate::rules::{ReservationAction, Status};
use crate::tool::SideEffect;

/// One tool execution, as the ledger holds it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExecutionRecord {
    pub key: IdempotencyKey,
    pub tenant: String,
    pub run_id: String,
    pub tool_call_id: String,
    pub tool: String,
    pub side_effect: SideEffect,
    pub arguments: String,
    pub status: Status,
    pub attempts: u32,
    pub result: Option<String>,
    pub owner: String,
    pub created_at_ms: u64,
    pub updated_at_ms: u64,
    pub lease_expires_at_ms: Option<u64>,
}

/// One line of a record's append-only history.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct HistoryEntry {
    pub id: u64,
    pub key: IdempotencyKey,
    pub at_ms: u64,
    pub actor: String,
    pub event: HistoryEvent,
    pub from_status: Option<Status>,
    pub to_status: Option<Status>,
    pub reason: Option<String>,
    pub detail: Option<String>,
}

/// A history line as a store reads it, before its text is checked: every store turns its
/// rows into a [`HistoryEntry`] through [`StoredHistoryLine::into_entry`], so a line this
/// build cannot read is the same `BadRow` whichever store holds it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredHistoryLine {
    pub id: i64,
    pub key: String,
    pub at_ms: i64,
    pub actor: String,
    pub event: String,
    pub from_status: Option<String>,
    pub to_status: Option<String>,
    pub reason: Option<String>,
    pub detail: Option<String>,
}

impl StoredHistoryLine {
    /// The checked line; `location` names the store in the error.
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
            key: IdempotencyKey::parse(&self.key).map_err(bad)?,
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
    pub id: u64,
    pub run_id: String,
    pub at_ms: u64,
    pub actor: String,
    pub event: RunEvent,
    pub detail: Option<String>,
}

/// What a worker asks to reserve.
#[derive(Clone, Debug)]
pub struct ReserveRequest<'a> {
    pub key: &'a IdempotencyKey,
    pub tenant: &'a str,
    pub run_id: &'a str,
    pub tool_call_id: &'a str,
    pub tool: &'a str,
    pub side_effect: SideEffect,
    /// Canonical JSON of the arguments; the same key with other arguments is refused.
    pub arguments: &'a str,
    pub owner: &'a str,
    /// `Some` only for a naive runtime with leases (guard `no_lease_expiry` off).
    pub lease_ms: Option<u64>,
    /// Fencing (guard `checkpoint_version`): the run's checkpoint version this worker loaded.
    /// If someone saved since, the reservation is refused and this worker stands down
    /// before it sends anything.
    pub checkpoint_version: Option<u32>,
}

/// The answer to a reservation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reservation {
    /// The decision table's answer, and the record as it stands after the reservation.
    Decided {
        action: ReservationAction,
        record: ExecutionRecord,
        previous_owner: Option<String>,
        /// What the ledger held before this reservation.
        previous_status: Option<Status>,
    },
    /// The key exists with other arguments: refused, never served the other call's result.
    ArgumentsMismatch { existing: ExecutionRecord },
    /// The run's checkpoint moved on since this worker loaded it: another worker drives the run.
    Fenced { expected: u32, found: u32 },
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

/// The answer to a reservation with the send fence folded in ([`Ledger::reserve_and_begin`]).
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
    pub to: Status,
    /// Compare-and-set: the status the actor saw. `None` means "whatever unknown status it has".
    pub expected: Option<Status>,
    /// Compare-and-set on the attempts noted too: `Some(0)` settles only a call whose request
    /// never passed the send fence (nothing can be on its way).
    pub expected_attempts: Option<u32>,
    pub actor: &'a str,
    pub event: HistoryEvent,
    pub reason: Option<&'a str>,
    pub result: Option<&'a str>,
    /// What the history line's detail says, when it is not the result.
    pub detail: Option<&'a str>,
}

#[derive(Debug, thiserror::Error)]
pub enum SettleError {
    #[error("no tool execution with key {0}")]
    NotFound(IdempotencyKey),
    #[error("{to} is not a decision; a call is settled as completed, failed, compensating or compensated")]
    NotADecision { to: Status },
    #[error("stale compare-and-set on {key}: expected {expected}, but it is {}", current.status)]
    Stale {
        key: IdempotencyKey,
        expected: Status,
        current: Box<ExecutionRecord>,
    },
    #[error("{key} is already settled as {}; a settled decision is never overwritten", current.status)]
    AlreadySettled {
        key: IdempotencyKey,
        current: Box<ExecutionRecord>,
    },
    #[error(
        "{key} has {} attempt(s) noted: a request passed the send fence and may still be on its way, so \"nothing left\" cannot be proven",
        current.attempts
    )]
    AttemptNoted {
        key: IdempotencyKey,
        current: Box<ExecutionRecord>,
    },
    #[error(transparent)]
    Ledger(#[from] LedgerError),
}

/// How recording an attempt's outcome went.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Recorded {
    Recorded(ExecutionRecord),
    /// The record is not this attempt's any more (someone settled the call first, another
    /// worker owns it, a later attempt was made): the outcome was logged and ignored.
    LateOutcomeIgnored(ExecutionRecord),
}

/// A run's saved state.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Checkpoint {
    pub run_id: String,
    pub version: u32,
    pub status: String,
    pub state: String,
    pub saved_by: String,
    pub updated_at_ms: u64,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SaveOutcome {
    Saved {
        version: u32,
    },
    /// Someone saved since this worker loaded: it must stand down.
    Stale {
        expected: u32,
        found: u32,
    },
    /// The save relied on a call having failed, but another worker ran it again since: two
    /// workers are driving the run, and this one must stand down before it acts on the failure.
    TakenOver {
        key: String,
        status: Status,
        owner: String,
    },
}

/// Which records a listing returns: filters, a cursor, a limit.
#[derive(Clone, Copy, Debug)]
pub struct RecordFilter<'a> {
    pub tenant: Option<&'a str>,
    pub status: Option<Status>,
    /// The (updated_at_ms, key) of the last row of the previous page: rows after it.
    pub after: Option<(u64, &'a str)>,
    pub limit: u32,
}

/// A checkpoint save and what it is fenced on.
#[derive(Clone, Copy, Debug)]
pub struct CheckpointSave<'a> {
    pub run_id: &'a str,
    pub status: &'a str,
    pub state: &'a str,
    pub saved_by: &'a str,
    /// Compare-and-set on the version this worker loaded (guard `checkpoint_version`).
    pub expected_version: Option<u32>,
    /// Compare-and-set on this call still being `failed` (see [`Ledger::save_checkpoint_fenced`]).
    pub still_failed: Option<&'a IdempotencyKey>,
}
