//! Why an operator's move was refused or failed.

use super::{LookupError, ReasonError, UndoError};
use crate::key::IdempotencyKey;
use crate::ledger::{ExecutionRecord, LedgerError, SettleError};
use crate::rules::Status;

#[derive(Debug, thiserror::Error)]
/// Why an operator's move was refused or failed; nothing was changed unless it says so.
#[non_exhaustive]
pub enum OperatorError {
    #[error("reason: {0}")]
    /// The reason is not printable text an operator could read back.
    Reason(#[from] ReasonError),
    #[error("an operator id is required")]
    /// Nobody said who they are.
    MissingOperator,
    #[error("an operator resolves a call to completed or failed, not {0}")]
    /// An operator settles to `completed` or `failed` only.
    BadStatus(Status),
    #[error("{}", in_flight_words(key, owner, *attempts, *since_ms, parked_by.as_ref()))]
    /// The call is `started`: its worker may still send or hear its request. Refused unless
    /// the request acknowledges it ([`super::ResolveRequest::acknowledge_in_flight`]).
    InFlight {
        /// The call.
        key: IdempotencyKey,
        /// The worker that holds it.
        owner: crate::ids::WorkerId,
        /// Attempts that passed the send fence.
        attempts: u32,
        /// When the ledger last wrote it, in ms.
        since_ms: u64,
        /// Another worker that saved the call's run since, paused on an unknown call: the
        /// run was recovered while `owner` held this call (a crash, most likely — or a live
        /// twin; the ledger cannot tell which).
        parked_by: Option<crate::ids::WorkerId>,
    },
    #[error("tool `{0}` has no compensation")]
    /// The call's tool declares no compensation.
    NoCompensation(String),
    #[error("{key} is {status}: it did not take effect, so there is nothing to compensate")]
    /// The call did not take effect.
    NothingToCompensate {
        /// The call.
        key: IdempotencyKey,
        /// Its status.
        status: Status,
    },
    #[error("{0} was already compensated; it is not compensated again")]
    /// The call was compensated already.
    AlreadyCompensated(IdempotencyKey),
    #[error(
        "{key} is being compensated by another request right now; it is not compensated twice. Look at the \
         record again in a moment"
    )]
    /// Another request is compensating the call now.
    CompensationUnderWay {
        /// The call.
        key: IdempotencyKey,
    },
    #[error(
        "{key} is {status} in the ledger, but {finding}. The ledger and the tool's world disagree: \
         nothing was undone and nothing recorded; a person checks by hand"
    )]
    /// The ledger says the call took effect; the tool's world holds nothing under its key.
    EffectMissing {
        /// The call.
        key: IdempotencyKey,
        /// Its status.
        status: Status,
        /// What the tool's world holds, in words.
        finding: String,
    },
    #[error(
        "{finding}; but {key} has {} noted, so its request passed the send fence and may \
         still be on its way to the tool's world, where a lookup cannot see it yet. \"Nothing to compensate\" \
         cannot be proven: nothing was undone and nothing recorded. Ask again once the call's outcome is \
         known, or resolve it yourself after checking by hand",
        crate::worker::counted(u64::from(*attempts), "attempt", "attempts")
    )]
    /// Nothing found yet, but a request may still be on its way.
    MayBeOnItsWay {
        /// The call.
        key: IdempotencyKey,
        /// The attempts noted.
        attempts: u32,
        /// What the tool's world holds, in words.
        finding: String,
    },
    #[error("the tool's world could not tell what to undo: {0}")]
    /// The tool's world could not say what to undo; the record is as it was read.
    Lookup(LookupError, Box<ExecutionRecord>),
    #[error(
        "the compensation of {key} failed: {detail}. The record stays `compensating` (listed with \
         status=compensating) and nothing was undone twice: compensate it again to retry the undo"
    )]
    /// The undo itself failed; the record stays `compensating` for a retry.
    CompensationFailed {
        /// The call.
        key: IdempotencyKey,
        /// Why the undo failed.
        detail: UndoError,
    },
    #[error("run `{0}` has no checkpoint: there is nothing to resume")]
    /// No checkpoint for this run.
    NoSuchRun(String),
    #[error("run `{run_id}` is {status}, not dead_lettered: only a dead-lettered run is resumed")]
    /// The run is not dead-lettered, so there is nothing to resume.
    NotDeadLettered {
        /// The run.
        run_id: String,
        /// Its status now.
        status: String,
    },
    #[error(
        "run `{run_id}` changed since it was read: its checkpoint is v{found}, not the v{expected} expected. \
         Nothing was resumed; look at the run again"
    )]
    /// The run's checkpoint moved since the operator read it (compare-and-set).
    RunChanged {
        /// The run.
        run_id: String,
        /// The checkpoint version the operator saw.
        expected: u32,
        /// The checkpoint version now.
        found: u32,
    },
    #[error("run `{run_id}`'s checkpoint cannot be read ({detail}); it cannot be resumed from it")]
    /// The run's checkpoint cannot be read.
    UnreadableRun {
        /// The run.
        run_id: String,
        /// Why it cannot be read.
        detail: String,
    },
    #[error(transparent)]
    /// The ledger refused the decision (stale, or settled already).
    Settle(#[from] SettleError),
    #[error(transparent)]
    /// The ledger failed.
    Ledger(#[from] LedgerError),
}

/// [`OperatorError::InFlight`] in words: who holds the call, why that blocks a decision, and
/// exactly what settles it.
fn in_flight_words(
    key: &IdempotencyKey,
    owner: &crate::ids::WorkerId,
    attempts: u32,
    since_ms: u64,
    parked_by: Option<&crate::ids::WorkerId>,
) -> String {
    let noted = crate::worker::counted(u64::from(attempts), "attempt", "attempts");
    let mut words = format!(
        "{key} is started: worker {owner} holds it ({noted} noted, last written at {since_ms} ms), so its request \
         may still be on its way and its own outcome could contradict a decision. Nothing was recorded."
    );
    if let Some(parked_by) = parked_by {
        words.push_str(&format!(
            " Its run was saved since by worker {parked_by}, paused on an unknown call: the run was recovered \
             while {owner} held this call. If {owner}'s process is gone (it crashed, or its host did), resolve it \
             again acknowledging the call may be in flight (`acknowledge_in_flight`); or start the run's next \
             worker replacing {owner} (`WorkerSetup::replacing`), which records the call `indeterminate`. If \
             {owner} is alive, wait for its outcome."
        ));
    } else {
        words.push_str(
            " Wait for its outcome, or, once its worker is known to be gone, resolve it again acknowledging the \
             call may be in flight (`acknowledge_in_flight`).",
        );
    }
    words
}
