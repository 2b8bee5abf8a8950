//! The ledger's operations, written once for every store: each reads the rows it needs
//! through [`Tables`], decides with a pure function (over the runtime's decision tables),
//! and writes the result through [`Tables`] again, inside the store's transaction.

use std::borrow::Cow;

use super::decisions::{
    decide_attempt, decide_checkpoint_save, decide_outcome, decide_reservation, decide_settlement,
    decide_unchecked_insert, written_at_ms,
};
use super::{
    AttemptStart, CheckpointSave, ExecutionRecord, FoldedReservation, HistoryEvent, LedgerError, Recorded, Reservation,
    ReserveRequest, RunEvent, SaveOutcome, SettleError, Settlement,
};
use crate::key::IdempotencyKey;
use crate::rules::{Outcome, ReservationAction, Status};

/// The rows one transaction reads and writes. Every operation of [`super::Ledger`] is
/// written once against this, so the decision logic is the same whichever store holds the
/// rows: the implementations differ only in how a row is read and written.
pub trait Tables {
    /// The record of `key`, as the transaction sees it.
    ///
    /// # Errors
    ///
    /// [`LedgerError`] when the store fails; the operation's transaction is then rolled back.
    fn record(&mut self, key: &IdempotencyKey) -> Result<Option<ExecutionRecord>, LedgerError>;
    /// The run's saved checkpoint version, if it has one.
    ///
    /// # Errors
    ///
    /// [`LedgerError`] when the store fails; the operation's transaction is then rolled back.
    fn checkpoint_version(&mut self, run_id: &str) -> Result<Option<u32>, LedgerError>;
    /// Writes the whole row `record.key` names.
    ///
    /// # Errors
    ///
    /// [`LedgerError`] when the store fails; the operation's transaction is then rolled back.
    fn write_record(&mut self, write: RecordWrite, record: &ExecutionRecord) -> Result<(), LedgerError>;
    /// Appends one line; the store numbers it.
    ///
    /// # Errors
    ///
    /// [`LedgerError`] when the store fails; the operation's transaction is then rolled back.
    fn append_history(&mut self, line: &HistoryLine<'_>) -> Result<(), LedgerError>;
    /// Inserts or replaces the run's checkpoint.
    ///
    /// # Errors
    ///
    /// [`LedgerError`] when the store fails; the operation's transaction is then rolled back.
    fn put_checkpoint(&mut self, checkpoint: &CheckpointRow<'_>) -> Result<(), LedgerError>;
    /// Appends one line to a run's own history; the store numbers it.
    ///
    /// # Errors
    ///
    /// [`LedgerError`] when the store fails; the operation's transaction is then rolled back.
    fn append_run_event(&mut self, line: &RunHistoryLine<'_>) -> Result<(), LedgerError>;
    /// Where the rows are, for an error's message (never a secret).
    fn location(&self) -> String {
        "the ledger".to_owned()
    }
}

/// How a record is written, with SQLite's meaning.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RecordWrite {
    /// A new key: a key that exists breaks the primary key.
    Insert,
    /// An existing key: a key that is not there changes nothing.
    Update,
    /// `INSERT OR REPLACE`: whatever was there is overwritten (the naive runtime's upsert).
    Replace,
}

/// A history line before the store numbers it.
#[derive(Clone, Debug)]
pub struct HistoryLine<'a> {
    /// [`super::HistoryEntry::key`].
    pub key: &'a IdempotencyKey,
    /// [`super::HistoryEntry::at_ms`].
    pub at_ms: u64,
    /// [`super::HistoryEntry::actor`].
    pub actor: &'a str,
    /// [`super::HistoryEntry::event`].
    pub event: HistoryEvent,
    /// [`super::HistoryEntry::from_status`].
    pub from_status: Option<Status>,
    /// [`super::HistoryEntry::to_status`].
    pub to_status: Option<Status>,
    /// [`super::HistoryEntry::reason`].
    pub reason: Option<&'a str>,
    /// [`super::HistoryEntry::detail`]: borrowed, or made for the line.
    pub detail: Option<Cow<'a, str>>,
}

impl<'a> HistoryLine<'a> {
    /// A line that changes no status.
    pub fn note(key: &'a IdempotencyKey, at_ms: u64, actor: &'a str, event: HistoryEvent) -> HistoryLine<'a> {
        HistoryLine {
            key,
            at_ms,
            actor,
            event,
            from_status: None,
            to_status: None,
            reason: None,
            detail: None,
        }
    }
}

/// A run history line before the store numbers it.
#[derive(Clone, Copy, Debug)]
pub struct RunHistoryLine<'a> {
    /// [`super::RunHistoryEntry::run_id`].
    pub run_id: &'a str,
    /// [`super::RunHistoryEntry::at_ms`].
    pub at_ms: u64,
    /// [`super::RunHistoryEntry::actor`].
    pub actor: &'a str,
    /// [`super::RunHistoryEntry::event`].
    pub event: RunEvent,
    /// [`super::RunHistoryEntry::detail`].
    pub detail: Option<&'a str>,
}

/// A checkpoint row to write.
#[derive(Clone, Copy, Debug)]
pub struct CheckpointRow<'a> {
    /// [`super::Checkpoint::run_id`].
    pub run_id: &'a str,
    /// [`super::Checkpoint::version`].
    pub version: u32,
    /// [`super::Checkpoint::status`].
    pub status: &'a str,
    /// [`super::Checkpoint::state`].
    pub state: &'a str,
    /// [`super::Checkpoint::saved_by`].
    pub saved_by: &'a str,
    /// [`super::Checkpoint::updated_at_ms`].
    pub updated_at_ms: u64,
}

// ----- the operations -----

/// Every record write of every store goes through here: the record it writes keeps the
/// invariant the stores check again when they read it back ([`ExecutionRecord::broken_invariant`]).
/// A record that would break it is refused (`BadRequest`) and the transaction rolled back.
fn write_checked(tables: &mut dyn Tables, write: RecordWrite, record: &ExecutionRecord) -> Result<(), LedgerError> {
    if let Some(broken) = record.broken_invariant() {
        return Err(LedgerError::BadRequest {
            location: tables.location(),
            detail: format!("a write of record {} with {broken} is refused", record.key),
        });
    }
    tables.write_record(write, record)
}

/// The reservation: the decision table applied to what the transaction reads.
pub(super) fn reserve(
    tables: &mut dyn Tables,
    request: &ReserveRequest<'_>,
    now_ms: u64,
) -> Result<Reservation, LedgerError> {
    let (reservation, write) = read_and_decide_reservation(tables, request, now_ms)?;
    write_reservation(tables, request, &reservation, write, now_ms)?;
    Ok(reservation)
}

/// What a reservation that runs nothing more writes: the decided record, or — for a call
/// refused because its key holds other arguments — a line in the record's history and one in
/// the run's, so the refusal is never silent.
fn write_reservation(
    tables: &mut dyn Tables,
    request: &ReserveRequest<'_>,
    reservation: &Reservation,
    write: Option<(RecordWrite, HistoryLine<'_>)>,
    now_ms: u64,
) -> Result<(), LedgerError> {
    match (write, reservation) {
        (Some((write, line)), Reservation::Decided { record, .. }) => {
            write_checked(tables, write, record)?;
            tables.append_history(&line)
        }
        (_, Reservation::ArgumentsMismatch { existing }) => {
            let detail = format!(
                "call {} of run {} offered {} {}; the key holds {} {}: refused, nothing was run",
                request.tool_call_id,
                request.run_id,
                request.tool,
                request.arguments,
                existing.tool,
                existing.arguments
            );
            tables.append_history(&HistoryLine {
                detail: Some(Cow::Borrowed(&detail)),
                ..HistoryLine::note(request.key, now_ms, request.owner, HistoryEvent::ArgumentsRefused)
            })?;
            tables.append_run_event(&RunHistoryLine {
                run_id: request.run_id,
                at_ms: now_ms,
                actor: request.owner,
                event: RunEvent::ArgumentsRefused,
                detail: Some(&detail),
            })
        }
        _ => Ok(()),
    }
}

/// What a reservation reads (the record, and the checkpoint version it is fenced on), and
/// what it decides to write.
fn read_and_decide_reservation<'a>(
    tables: &mut dyn Tables,
    request: &ReserveRequest<'a>,
    now_ms: u64,
) -> Result<(Reservation, Option<(RecordWrite, HistoryLine<'a>)>), LedgerError> {
    let existing = tables.record(request.key)?;
    // A key is `<run_id>:<call_id>` whatever the tenant, so another tenant's run with this id
    // made it: serving its record would hand one tenant the other's result (or pause on its
    // call). Refused before anything is decided or written. Only the same run id: a simulated
    // argument-hash key is shared across runs on purpose.
    if let Some(record) = &existing
        && record.run_id == *request.run_id
        && record.tenant != *request.tenant
    {
        return Err(LedgerError::RunOfAnotherTenant {
            location: tables.location(),
            run_id: request.run_id.to_owned(),
            owner: record.tenant.to_string(),
            asked: request.tenant.to_owned(),
        });
    }
    let found_version = match request.checkpoint_version {
        Some(_) => Some(tables.checkpoint_version(request.run_id)?.unwrap_or(0)),
        None => None,
    };
    Ok(decide_reservation(request, existing, found_version, now_ms))
}

/// The reservation with the send fence folded in (see [`super::Ledger::reserve_and_begin`]):
/// the same reservation, then — only if it runs the tool — the same send fence for `attempt`,
/// in the caller's one transaction. The fence then always passes (the record is the
/// `started` call this transaction just decided for this owner); it is still decided by the
/// fence's own rule, so the two paths cannot drift apart. The record is written once, as the
/// attempt leaves it, with both history lines: the same rows as a reservation and a fence in
/// a row, one record write and one read fewer (nothing can read the row in between: it is one
/// transaction).
pub(super) fn reserve_and_begin(
    tables: &mut dyn Tables,
    request: &ReserveRequest<'_>,
    attempt: u32,
    now_ms: u64,
) -> Result<FoldedReservation, LedgerError> {
    let (action, record, previous_owner, previous_status, write, reserved_line) =
        match read_and_decide_reservation(tables, request, now_ms)? {
            (
                Reservation::Decided {
                    action,
                    record,
                    previous_owner,
                    previous_status,
                },
                Some((write, line)),
            ) if action.runs() => (action, record, previous_owner, previous_status, write, line),
            // Nothing that runs: the reservation's answer (and writes) alone.
            (reservation, write) => {
                write_reservation(tables, request, &reservation, write, now_ms)?;
                return Ok(FoldedReservation {
                    reservation,
                    attempt_begun: None,
                });
            }
        };
    match decide_attempt(record, request.key, attempt, request.owner, now_ms) {
        (AttemptStart::Begun(counted), attempt_line) => {
            write_checked(tables, write, &counted)?;
            tables.append_history(&reserved_line)?;
            tables.append_history(&attempt_line)?;
            Ok(FoldedReservation {
                reservation: Reservation::Decided {
                    action,
                    record: counted,
                    previous_owner,
                    previous_status,
                },
                attempt_begun: Some(attempt),
            })
        }
        (refused, _) => unreachable!(
            "a reservation that runs the tool leaves this owner's `started` record, and the fence in the same \
             transaction refused it: {refused:?}"
        ),
    }
}

/// The naive check-then-insert's second half: fenced like a reservation, then an upsert.
pub(super) fn insert_started_unchecked(
    tables: &mut dyn Tables,
    request: &ReserveRequest<'_>,
    now_ms: u64,
) -> Result<Reservation, LedgerError> {
    if let Some(expected) = request.checkpoint_version {
        let found = tables.checkpoint_version(request.run_id)?.unwrap_or(0);
        if found != expected {
            return Ok(Reservation::Fenced { expected, found });
        }
    }
    let previous = tables.record(request.key)?;
    let (record, line) = decide_unchecked_insert(request, previous.as_ref(), now_ms);
    write_checked(tables, RecordWrite::Replace, &record)?;
    tables.append_history(&line)?;
    let action = if previous.is_some() {
        ReservationAction::RunAgain
    } else {
        ReservationAction::RunNew
    };
    Ok(Reservation::Decided {
        action,
        record,
        previous_owner: previous.as_ref().map(|record| record.owner.clone()),
        previous_status: previous.map(|record| record.status),
    })
}

/// The send fence (see [`super::Ledger::begin_attempt`]).
pub(super) fn begin_attempt(
    tables: &mut dyn Tables,
    key: &IdempotencyKey,
    attempt: u32,
    owner: &str,
    now_ms: u64,
) -> Result<AttemptStart, LedgerError> {
    let Some(current) = tables.record(key)? else {
        return Ok(AttemptStart::Refused(None));
    };
    match decide_attempt(current, key, attempt, owner, now_ms) {
        (AttemptStart::Begun(counted), line) => {
            write_checked(tables, RecordWrite::Update, &counted)?;
            tables.append_history(&line)?;
            Ok(AttemptStart::Begun(counted))
        }
        (refused, line) => {
            tables.append_history(&line)?;
            Ok(refused)
        }
    }
}

/// Counts an attempt without the fence (see [`super::Ledger::note_attempt`]).
pub(super) fn note_attempt(
    tables: &mut dyn Tables,
    key: &IdempotencyKey,
    attempt: u32,
    actor: &str,
    now_ms: u64,
) -> Result<(), LedgerError> {
    let Some(current) = tables.record(key)? else {
        // SQLite's UPDATE of a key nobody reserved changes nothing: nothing to note.
        return Ok(());
    };
    let counted = ExecutionRecord {
        attempts: attempt,
        updated_at_ms: written_at_ms(&current, now_ms),
        ..current
    };
    write_checked(tables, RecordWrite::Update, &counted)?;
    tables.append_history(&HistoryLine {
        detail: Some(Cow::Owned(format!("attempt {attempt}"))),
        ..HistoryLine::note(key, now_ms, actor, HistoryEvent::Attempt)
    })
}

/// An attempt's own outcome (see [`super::Ledger::record_outcome`]).
pub(super) fn record_outcome(
    tables: &mut dyn Tables,
    key: &IdempotencyKey,
    outcome: Outcome,
    result: Option<&str>,
    actor: &str,
    attempt: u32,
    now_ms: u64,
) -> Result<Recorded, LedgerError> {
    // The location is described only for an error: every outcome passes here.
    let Some(current) = tables.record(key)? else {
        return Err(LedgerError::BadRow {
            location: tables.location(),
            key: key.to_string(),
            detail: "an outcome arrived for a call that was never reserved".into(),
        });
    };
    let (recorded, line) = decide_outcome(current, key, outcome, result, actor, attempt, now_ms);
    if let Recorded::Recorded(after) = &recorded {
        write_checked(tables, RecordWrite::Update, after)?;
    }
    tables.append_history(&line)?;
    Ok(recorded)
}

/// A settlement (see [`super::Ledger::settle`]).
pub(super) fn settle(
    tables: &mut dyn Tables,
    key: &IdempotencyKey,
    settlement: &Settlement<'_>,
    now_ms: u64,
) -> Result<ExecutionRecord, SettleError> {
    let current = tables.record(key)?.ok_or_else(|| SettleError::NotFound(key.clone()))?;
    let from = current.status;
    let after = decide_settlement(current, key, settlement, now_ms)?;
    write_checked(tables, RecordWrite::Update, &after)?;
    tables.append_history(&HistoryLine {
        key,
        at_ms: now_ms,
        actor: settlement.actor,
        event: settlement.event,
        from_status: Some(from),
        to_status: Some(settlement.to),
        reason: settlement.reason,
        detail: settlement.detail.or(settlement.result).map(Cow::Borrowed),
    })?;
    Ok(after)
}

/// A checkpoint save with its compare-and-sets (see [`super::Ledger::save_checkpoint_fenced`]).
pub(super) fn save_checkpoint(
    tables: &mut dyn Tables,
    save: &CheckpointSave<'_>,
    now_ms: u64,
) -> Result<SaveOutcome, LedgerError> {
    let found = tables.checkpoint_version(save.run_id)?.unwrap_or(0);
    let still_failed_record = match save.still_failed {
        Some(key) => tables.record(key)?,
        None => None,
    };
    // The location is described only for an error: every save passes here.
    let outcome = decide_checkpoint_save(save.expected_version, found, still_failed_record).ok_or_else(|| {
        LedgerError::BadCheckpoint {
            location: tables.location(),
            run_id: save.run_id.to_owned(),
            detail: format!("its version is {found}, the most a version may be"),
        }
    })?;
    if let SaveOutcome::Saved { version } = outcome {
        tables.put_checkpoint(&CheckpointRow {
            run_id: save.run_id,
            version,
            status: save.status,
            state: save.state,
            saved_by: save.saved_by,
            updated_at_ms: now_ms,
        })?;
    }
    Ok(outcome)
}
