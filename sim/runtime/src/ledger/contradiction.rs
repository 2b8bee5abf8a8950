//! Loud contradictions: a word about a call that arrives after someone settled it and says
//! otherwise. The settlement stands (a decision is never overwritten), but the disagreement
//! is never only a line among others: it is written as its own history event
//! ([`HistoryEvent::Contradicted`]), handed to the driver as a typed [`Contradiction`], and
//! listed to operators ([`super::Ledger::contradictions`]).

use serde::Serialize;

use super::{ExecutionRecord, HistoryEvent};
use crate::ids::WorkerId;
use crate::key::IdempotencyKey;
use crate::rules::{Outcome, Status};

/// Whether a late word that the call ended `says` contradicts a record settled as `settled`.
///
/// | settled                       | says completed | says failed | says indeterminate |
/// |-------------------------------|----------------|-------------|--------------------|
/// | failed                        | contradicts    | agrees      | says nothing       |
/// | completed                     | agrees         | contradicts | says nothing       |
/// | compensating, compensated     | agrees         | contradicts | says nothing       |
/// | started, indeterminate        | not settled: no contradiction                    |
///
/// ```
/// use twice_runtime::ledger::contradicts;
/// use twice_runtime::rules::{Outcome, Status};
/// // An operator settled the call failed; the tool's answer then says it took effect.
/// assert!(contradicts(Status::Failed, Outcome::Completed));
/// assert!(!contradicts(Status::Failed, Outcome::Failed));
/// assert!(!contradicts(Status::Indeterminate, Outcome::Completed));
/// ```
#[must_use]
pub fn contradicts(settled: Status, says: Outcome) -> bool {
    match (settled, says) {
        (_, Outcome::Indeterminate) => false,
        (Status::Started | Status::Indeterminate, _) => false,
        (Status::Failed, Outcome::Completed) => true,
        (Status::Completed | Status::Compensating | Status::Compensated, Outcome::Failed) => true,
        (Status::Failed, Outcome::Failed) => false,
        (Status::Completed | Status::Compensating | Status::Compensated, Outcome::Completed) => false,
    }
}

/// Where the late word came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
#[non_exhaustive]
pub enum ContradictionSource {
    /// The tool's answer to an attempt, arriving after the call was settled.
    LateAnswer {
        /// The attempt it answers.
        attempt: u32,
    },
    /// The reconcile hook found the effect of a call already settled as not having taken it.
    Lookup,
}

/// A late word about a call that contradicts the decision that settled it: the decision
/// stands, and a person should look (money may have moved twice, or not at all).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct Contradiction {
    /// The call.
    pub key: IdempotencyKey,
    /// The status it was settled as, and stays.
    pub settled: Status,
    /// The record's owner: the worker that reserved it, or whoever last claimed it. Not
    /// necessarily who settled it (an operator's decision leaves the owner as it was): the
    /// call's history says who decided.
    pub owner: WorkerId,
    /// What the late word says.
    pub says: Outcome,
    /// Where the late word came from.
    pub source: ContradictionSource,
    /// What the late word said, in the driver's words (the tool's receipt or finding).
    pub detail: String,
}

impl Contradiction {
    /// The contradiction of `record` by a late word that the call ended `says`, if it is one.
    #[must_use]
    pub fn of(
        record: &ExecutionRecord,
        says: Outcome,
        source: ContradictionSource,
        detail: &str,
    ) -> Option<Contradiction> {
        contradicts(record.status, says).then(|| Contradiction {
            key: record.key.clone(),
            settled: record.status,
            owner: record.owner.clone(),
            says,
            source,
            detail: detail.to_owned(),
        })
    }

    /// The history line's detail: what was settled and what the late word says.
    #[must_use]
    pub fn describe(&self) -> String {
        let from = match self.source {
            ContradictionSource::LateAnswer { attempt } => format!("attempt {attempt}'s answer"),
            ContradictionSource::Lookup => "the reconcile hook's lookup".to_owned(),
        };
        format!(
            "settled {}, but {from} says {}: {}; the decision stands, a person should look",
            self.settled, self.says, self.detail
        )
    }

    /// The history event a contradiction is written as.
    pub const EVENT: HistoryEvent = HistoryEvent::Contradicted;
}

impl std::fmt::Display for Contradiction {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(formatter, "{}: {}", self.key, self.describe())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_settled_call_told_otherwise_is_contradicted() {
        for settled in Status::ALL {
            for says in Outcome::ALL {
                let expected = settled.is_settled()
                    && says != Outcome::Indeterminate
                    && (settled == Status::Failed) == (says == Outcome::Completed);
                assert_eq!(contradicts(settled, says), expected, "{settled} / {says}");
            }
        }
    }
}
