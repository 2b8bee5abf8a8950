//! What the executor did to the ledger, typed. Its words are the application's: the
//! simulator's timeline makes them (`twice_world::simulator::report_words`).

use crate::key::IdempotencyKey;
use crate::ledger::{ExecutionRecord, Recorded, Reservation, SaveOutcome};
use crate::progress::InProgress;
use crate::rules::Status;
use crate::run::RunState;
use crate::worker::Reconciled;

/// What the executor did to the ledger, for the timeline and the markers: typed, and
/// nothing in it is English but what the tool's world or a model said.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Report {
    Loaded {
        version: u32,
        state: Option<RunState>,
        /// A counted recovery: how many before it started from this checkpoint and got no further.
        failed_recoveries: Option<u32>,
    },
    Unreadable {
        version: u32,
        detail: String,
    },
    /// An atomic reservation (or the naive insert: `atomic` false).
    Reserved {
        key: IdempotencyKey,
        reservation: Reservation,
        atomic: bool,
    },
    Checked {
        key: IdempotencyKey,
        record: Option<ExecutionRecord>,
    },
    /// The attempt was counted; `fenced` says whether it passed the send fence.
    AttemptBegun {
        key: IdempotencyKey,
        attempt: u32,
        fenced: bool,
    },
    SendRefused {
        key: IdempotencyKey,
        attempt: u32,
        record: Option<ExecutionRecord>,
    },
    Recorded {
        key: IdempotencyKey,
        status: Status,
        recorded: Recorded,
    },
    LateLogged {
        key: IdempotencyKey,
        attempt: u32,
    },
    Reconciled {
        key: IdempotencyKey,
        /// What the hook found in the tool's world, in words (`None`: nothing).
        finding: Option<String>,
        outcome: Reconciled,
    },
    /// A lookup past the tool's settle time found nothing: settled `failed` (or someone
    /// settled it first: `outcome` says which).
    SettledNotFound {
        key: IdempotencyKey,
        reason: String,
        outcome: Reconciled,
    },
    ReflexCompensated {
        key: IdempotencyKey,
        /// The record moved to `compensated` (false: it was settled already; noted only).
        settled: bool,
        detail: String,
    },
    Saved {
        status: &'static str,
        item: u32,
        outcome: SaveOutcome,
    },
    RecordRead {
        key: IdempotencyKey,
        record: Option<ExecutionRecord>,
    },
    WaitsForPerson {
        reason: String,
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
