//! What a run comes to, as names a tape, a level and the checker share: the outcome for the
//! money, the kinds of broken promise, and what a tape expects. Kept apart from the checker
//! (which reads levels) and from levels (which name outcomes), so neither depends on the other.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::runtime::guards::Guard;
use crate::runtime::rules::Status;

/// What happened to one effect Penny meant to make (a credit, an email, an owner change, a
/// delete), and to the level as a whole. Ordered worst first: a level's outcome is its worst
/// effect's. Money has its own names; the other side effects theirs, so no sentence calls an
/// email "paid".
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// More money landed than was owed: the heist worked.
    PaidTwice,
    /// A customer got the same email twice (or more).
    EmailedTwice,
    /// A retried owner change landed after someone else's change and put the old value back:
    /// a lost update.
    ChangeUndone,
    /// A record was deleted, but its second delete's "not found" reached Penny as a failure and
    /// she acted again, under a new call.
    ActedAgain,
    /// Less landed than was owed, and nothing is flagged as unknown.
    NotPaidButOwed,
    /// An email, owner change or delete Penny meant was never made, and nothing is flagged.
    NotDone,
    /// Not (fully) done, but flagged: the run honestly waits on a call still unknown or for a
    /// person, or it failed at this step (or before it) and says so.
    UnknownFlagged,
    /// Exactly what was owed.
    PaidOnce,
    /// An email, owner change or delete made exactly once, and it stands.
    DoneOnce,
}

impl Outcome {
    pub const ALL: [Outcome; 9] = [
        Outcome::PaidTwice,
        Outcome::EmailedTwice,
        Outcome::ChangeUndone,
        Outcome::ActedAgain,
        Outcome::NotPaidButOwed,
        Outcome::NotDone,
        Outcome::UnknownFlagged,
        Outcome::PaidOnce,
        Outcome::DoneOnce,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Outcome::PaidTwice => "paid_twice",
            Outcome::EmailedTwice => "emailed_twice",
            Outcome::ChangeUndone => "change_undone",
            Outcome::ActedAgain => "acted_again",
            Outcome::NotPaidButOwed => "not_paid_but_owed",
            Outcome::NotDone => "not_done",
            Outcome::UnknownFlagged => "unknown_flagged",
            Outcome::PaidOnce => "paid_once",
            Outcome::DoneOnce => "done_once",
        }
    }

    /// What the outcome means, in a few words for people (the game and the browser both show
    /// these). An unknown is never worded as a good end: someone still has to find out.
    pub fn words(self) -> &'static str {
        match self {
            Outcome::PaidTwice => "paid twice",
            Outcome::EmailedTwice => "the same email twice",
            Outcome::ChangeUndone => "a later change undone",
            Outcome::ActedAgain => "acted again on a false failure",
            Outcome::NotPaidButOwed => "not paid, though owed",
            Outcome::NotDone => "not done, though meant",
            Outcome::UnknownFlagged => "unknown: flagged, waiting for a person",
            Outcome::PaidOnce => "paid exactly once",
            Outcome::DoneOnce => "done exactly once",
        }
    }

    /// A side effect made more than once, or made to undo something: what a heist is after.
    pub fn is_repeat(self) -> bool {
        matches!(
            self,
            Outcome::PaidTwice | Outcome::EmailedTwice | Outcome::ChangeUndone | Outcome::ActedAgain
        )
    }

    /// Something meant was never done, and nothing says so.
    pub fn is_owed(self) -> bool {
        matches!(self, Outcome::NotPaidButOwed | Outcome::NotDone)
    }

    /// Done exactly once: the good end.
    pub fn is_once(self) -> bool {
        matches!(self, Outcome::PaidOnce | Outcome::DoneOnce)
    }

    pub fn parse(text: &str) -> Option<Outcome> {
        Outcome::ALL.into_iter().find(|outcome| outcome.name() == text)
    }
}

impl std::fmt::Display for Outcome {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str(self.name())
    }
}

/// A promise the runtime (or its ledger) broke.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ViolationKind {
    /// A record says `failed`, but its call's credit landed and was never reversed: a run
    /// that believes the ledger will pay again.
    FailedButPaid,
    /// A record says `completed`, but billing holds no standing credit made by its call.
    CompletedWithoutEffect,
    /// Billing holds a credit whose call has no ledger record: it was sent without being
    /// written down first (checked only with the `ledger` guard on).
    EffectWithoutRecord,
    /// The runtime compensated by itself, which nobody asked for.
    UnaskedCompensation,
    /// A settled decision was overwritten.
    DecisionOverwritten,
    /// A check-then-insert overwrote another worker's `started` reservation: two workers ran
    /// one call.
    ReservedTwice,
}

impl ViolationKind {
    pub const ALL: [ViolationKind; 6] = [
        ViolationKind::FailedButPaid,
        ViolationKind::CompletedWithoutEffect,
        ViolationKind::EffectWithoutRecord,
        ViolationKind::UnaskedCompensation,
        ViolationKind::DecisionOverwritten,
        ViolationKind::ReservedTwice,
    ];

    pub fn name(self) -> &'static str {
        match self {
            ViolationKind::FailedButPaid => "failed_but_paid",
            ViolationKind::CompletedWithoutEffect => "completed_without_effect",
            ViolationKind::EffectWithoutRecord => "effect_without_record",
            ViolationKind::UnaskedCompensation => "unasked_compensation",
            ViolationKind::DecisionOverwritten => "decision_overwritten",
            ViolationKind::ReservedTwice => "reserved_twice",
        }
    }

    /// The broken promise in a player's words (its [`name`](Self::name) is an identifier for
    /// tapes and the CLI, which a first-time player cannot read).
    pub fn words(self) -> &'static str {
        match self {
            ViolationKind::FailedButPaid => "a call recorded failed was paid after all",
            ViolationKind::CompletedWithoutEffect => "a call recorded completed paid nothing",
            ViolationKind::EffectWithoutRecord => "a credit was sent with no ledger record of its call",
            ViolationKind::UnaskedCompensation => "the runtime undid a call nobody asked it to undo",
            ViolationKind::DecisionOverwritten => "a settled decision was overwritten",
            ViolationKind::ReservedTwice => "two workers reserved one call and both ran it",
        }
    }
}

impl std::fmt::Display for ViolationKind {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str(self.name())
    }
}

/// What a tape expects the checker to say.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Expectation {
    pub verdict: Outcome,
    /// Guards that must be among those that held, in any order: a set the run must include,
    /// not the whole list (a regression tape names the guard it is about and is not broken
    /// when another guard also holds). Left out: no guard is required.
    #[serde(default)]
    pub stopped_by: Vec<Guard>,
    /// The kinds of broken promise the checker is expected to find (a level with a guard off
    /// may break one on purpose). Any other violation fails the replay.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub violations: Vec<ViolationKind>,
    /// Money per customer, by the owner's name as the level's accounts give it: the net cents
    /// billing credited to their accounts (credits less reversals) by the end of the run.
    /// Customers left out are not checked.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub paid_cents: BTreeMap<String, i64>,
    /// The ledger status of chosen keys at the end of the run; `None`: the ledger holds no
    /// record of the key (its call never reserved one). Keys left out are not checked.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub keys: BTreeMap<String, Option<Status>>,
}
