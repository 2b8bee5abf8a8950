//! How an attempt of a call ended: the outcomes an attempt may record.

use serde::{Deserialize, Serialize};

use super::Status;

/// How an attempt of a call ended, as recorded: the three statuses an attempt's own outcome
/// may write ([`crate::ledger::Ledger::record_outcome`] takes nothing else, so `started` or a
/// settlement can never be recorded as an outcome).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// The other system answered with a result: the call took effect.
    Completed,
    /// The call definitely did not take effect.
    Failed,
    /// The call may or may not have taken effect.
    Indeterminate,
}

impl Outcome {
    /// Every outcome.
    pub const ALL: [Outcome; 3] = [Outcome::Completed, Outcome::Failed, Outcome::Indeterminate];

    /// The status the outcome records.
    #[must_use]
    pub fn status(self) -> Status {
        match self {
            Outcome::Completed => Status::Completed,
            Outcome::Failed => Status::Failed,
            Outcome::Indeterminate => Status::Indeterminate,
        }
    }

    /// The outcome a status records, if an attempt's outcome can record it (`started` and the
    /// settlements `compensating` and `compensated` cannot).
    #[must_use]
    pub fn of_status(status: Status) -> Option<Outcome> {
        Outcome::ALL.into_iter().find(|outcome| outcome.status() == status)
    }

    /// The outcome as the ledger stores it (`indeterminate`).
    #[must_use]
    pub fn name(self) -> &'static str {
        self.status().name()
    }
}

impl From<Outcome> for Status {
    fn from(outcome: Outcome) -> Status {
        outcome.status()
    }
}

impl std::fmt::Display for Outcome {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str(self.name())
    }
}
