//! "In progress" as its own answer: a second reserver of a key whose record is `started` is
//! told who owns the call and since when — typed, and distinct from a replayed result
//! (`completed`: the recorded result is returned) or an unknown outcome (`indeterminate`).

use serde::Serialize;

use crate::ids::WorkerId;
use crate::key::IdempotencyKey;
use crate::ledger::{ExecutionRecord, Reservation};
use crate::rules::{ReservationAction, Status};

/// A call another worker is running now: its record is `started`, owned by `owner` since
/// `since_ms` (the ledger's time of the owner's reservation or last attempt).
///
/// ```
/// use twice_runtime::progress::InProgress;
/// use twice_runtime::key::IdempotencyKey;
/// let busy = InProgress { key: IdempotencyKey::parse("r1:c1").unwrap(), owner: "w1".into(), since_ms: 120, attempts: 1 };
/// assert_eq!(busy.to_string(), "r1:c1 is in progress, owned by w1 since 120 ms (1 attempt sent)");
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct InProgress {
    /// The call's key.
    pub key: IdempotencyKey,
    /// The worker whose `started` record it is.
    pub owner: WorkerId,
    /// Since when, in the ledger's milliseconds.
    pub since_ms: u64,
    /// Attempts the owner has let leave so far (0: nothing was sent yet).
    pub attempts: u32,
}

impl InProgress {
    /// The record's call, when it is in progress (`started`).
    pub fn of_record(record: &ExecutionRecord) -> Option<InProgress> {
        (record.status == Status::Started).then(|| InProgress {
            key: record.key.clone(),
            owner: record.owner.clone(),
            since_ms: record.updated_at_ms,
            attempts: record.attempts,
        })
    }

    /// What a reservation met, when it met a call in progress: the table said the outcome is
    /// unknown and the record was `started`. A replayed result (`completed`) or an
    /// `indeterminate` record is not in progress.
    pub fn of_reservation(reservation: &Reservation) -> Option<InProgress> {
        match reservation {
            Reservation::Decided {
                action: ReservationAction::Unknown,
                previous_status: Some(Status::Started),
                record,
                ..
            } => InProgress::of_record(record),
            _ => None,
        }
    }
}

impl std::fmt::Display for InProgress {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            formatter,
            "{} is in progress, owned by {} since {} ms ({} attempt{} sent)",
            self.key,
            self.owner,
            self.since_ms,
            self.attempts,
            if self.attempts == 1 { "" } else { "s" }
        )
    }
}
