//! What the executor did to the ledger, typed. Its words are the application's: the
//! application's timeline makes them, in its own words.

use crate::key::IdempotencyKey;
use crate::ledger::{ExecutionRecord, Recorded, Reservation, SaveOutcome};
use crate::progress::InProgress;
use crate::rules::Status;
use crate::run::RunState;
use crate::worker::{Reconciled, WaitReason};

/// What the executor did to the ledger, for the timeline and the markers: typed, and
/// nothing in it is English but what the tool's world or a model said.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Report {
    /// The run's checkpoint was loaded.
    Loaded {
        /// The checkpoint's version (0: none yet).
        version: u32,
        /// Its state (`None`: the run was never saved).
        state: Option<RunState>,
        /// A counted recovery: how many before it started from this checkpoint and got no further.
        failed_recoveries: Option<u32>,
    },
    /// The run's checkpoint cannot be read.
    Unreadable {
        /// The checkpoint's version (0: none yet).
        version: u32,
        /// What happened, in words.
        detail: String,
    },
    /// An atomic reservation (or the naive insert: `atomic` false).
    Reserved {
        /// The call.
        key: IdempotencyKey,
        /// What the reservation decided.
        reservation: Reservation,
        /// One transaction (false: the naive check-then-insert's insert).
        atomic: bool,
    },
    /// The naive reservation read the record.
    Checked {
        /// The call.
        key: IdempotencyKey,
        /// What the ledger held (`None`: nothing).
        record: Option<ExecutionRecord>,
    },
    /// The attempt was counted; `fenced` says whether it passed the send fence.
    AttemptBegun {
        /// The call.
        key: IdempotencyKey,
        /// The attempt.
        attempt: u32,
        /// Whether it passed the send fence (false: a naive runtime sent unfenced).
        fenced: bool,
    },
    /// The send fence refused: nothing left.
    SendRefused {
        /// The call.
        key: IdempotencyKey,
        /// The attempt.
        attempt: u32,
        /// The record as the fence found it.
        record: Option<ExecutionRecord>,
    },
    /// An outcome was recorded (or the record had moved on).
    Recorded {
        /// The call.
        key: IdempotencyKey,
        /// Its status.
        status: Status,
        /// Whether the outcome was written, or the record had moved on.
        recorded: Recorded,
    },
    /// An answer nobody waited for was logged and ignored.
    LateLogged {
        /// The call.
        key: IdempotencyKey,
        /// The attempt.
        attempt: u32,
    },
    /// The reconcile hook's answer was written down.
    Reconciled {
        /// The call.
        key: IdempotencyKey,
        /// What the hook found in the tool's world, in words (`None`: nothing).
        finding: Option<String>,
        /// What the ledger made of it.
        outcome: Reconciled,
    },
    /// A lookup past the tool's settle time found nothing: settled `failed` (or someone
    /// settled it first: `outcome` says which).
    SettledNotFound {
        /// The call.
        key: IdempotencyKey,
        /// Why, in words.
        reason: String,
        /// What the ledger made of it.
        outcome: Reconciled,
    },
    /// A naive runtime compensated by itself.
    ReflexCompensated {
        /// The call.
        key: IdempotencyKey,
        /// The record moved to `compensated` (false: it was settled already; noted only).
        settled: bool,
        /// What happened, in words.
        detail: String,
    },
    /// The checkpoint save came back.
    Saved {
        /// The run's status as saved.
        status: &'static str,
        /// The script item the run is on.
        item: u32,
        /// Saved, or stale.
        outcome: SaveOutcome,
    },
    /// A call's record was read.
    RecordRead {
        /// The call.
        key: IdempotencyKey,
        /// The record (`None`: it has none).
        record: Option<ExecutionRecord>,
    },
    /// The run waits for a person.
    WaitsForPerson {
        /// Why: the facts (the application words them).
        reason: WaitReason,
    },
}

impl Report {
    /// The call another worker is running, when this step's reservation met one: "in
    /// progress, owned by w1 since t", distinct from a replayed result.
    pub fn in_progress(&self) -> Option<InProgress> {
        match self {
            Report::Reserved { reservation, .. } => InProgress::of_reservation(reservation),
            _ => None,
        }
    }

    /// The record this step settled, if it did: whoever waits on it may look now.
    pub fn settled(&self) -> Option<&IdempotencyKey> {
        match self {
            Report::Recorded {
                key,
                recorded: Recorded::Recorded(record),
                ..
            } if record.status.is_settled() => Some(key),
            Report::Reconciled {
                key,
                outcome: Reconciled::Completed { .. },
                ..
            } => Some(key),
            Report::ReflexCompensated { key, settled: true, .. } => Some(key),
            Report::SettledNotFound {
                key,
                outcome: Reconciled::SettledFailed(_),
                ..
            } => Some(key),
            _ => None,
        }
    }
}
