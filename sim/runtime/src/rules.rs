//! The runtime's decision tables, readable in one place.
//!
//! 1. Reservation: ledger status × side effect → what the call does.
//! 2. Outcome: side effect × how the attempt ended → new status, retry or not.
//! 3. Unknown: what a run does with a call whose outcome is unknown.
//! 4. Failed run: what the runtime undoes when a run fails, and what its workflow node does.
//! 5. Send fence: where the last compare-and-set before a request leaves is made — folded
//!    into the reservation's transaction, or a transaction of its own.
//! 6. Nothing found: what a reconcile hook's "nothing under this key" proves, by the tool's
//!    declared lookup settle time and key retention.
//! 7. Resend: whether a key whose earlier attempt may have landed is sent again, by the tool's
//!    declared key retention.
//! 8. Recovery: whether a run whose recoveries keep failing is recovered again or dead-lettered.

use serde::{Deserialize, Serialize};

use super::tool::SideEffect;
use super::workflow::RecoveryPolicy;

mod outcome;

pub use outcome::Outcome;

/// A tool execution's status in the ledger.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// Reserved; the tool is (or was) running. Left behind by a process that died mid-call.
    Started,
    /// Took effect; the result is recorded.
    Completed,
    /// Definitely did not take effect; may run again.
    Failed,
    /// May or may not have taken effect (timeout or lost connection after the request left).
    Indeterminate,
    /// Took effect; an operator decided to undo it, and the undo is not confirmed yet (it is
    /// under way, or it failed and waits for a retry). Settled: the decision is made.
    Compensating,
    /// Took effect and was undone on an operator's decision.
    Compensated,
}

impl Status {
    /// Every status, in the order a call meets them.
    pub const ALL: [Status; 6] = [
        Status::Started,
        Status::Completed,
        Status::Failed,
        Status::Indeterminate,
        Status::Compensating,
        Status::Compensated,
    ];

    /// The status as the ledger stores it and the API writes it (`indeterminate`).
    pub fn name(self) -> &'static str {
        match self {
            Status::Started => "started",
            Status::Completed => "completed",
            Status::Failed => "failed",
            Status::Indeterminate => "indeterminate",
            Status::Compensating => "compensating",
            Status::Compensated => "compensated",
        }
    }

    /// The status named `text` (see [`Status::name`]), if there is one.
    pub fn parse(text: &str) -> Option<Status> {
        Status::ALL.into_iter().find(|status| status.name() == text)
    }

    /// The outcome is not known: someone has to find out.
    pub fn is_unknown(self) -> bool {
        matches!(self, Status::Started | Status::Indeterminate)
    }

    /// A decision has been made; it is never overwritten.
    pub fn is_settled(self) -> bool {
        !self.is_unknown()
    }

    /// A glyph so status is never told by colour alone.
    pub fn glyph(self) -> char {
        match self {
            Status::Started => '▶',
            Status::Completed => '✔',
            Status::Failed => '✘',
            Status::Indeterminate => '?',
            Status::Compensating => '↻',
            Status::Compensated => '↺',
        }
    }
}

impl std::fmt::Display for Status {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str(self.name())
    }
}

/// What a reservation decides.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReservationAction {
    /// No record: record `started` and run.
    RunNew,
    /// `failed` (or a read whose earlier run is unknown): run again, same key, attempt + 1.
    RunAgain,
    /// `completed`: return the recorded result; the tool is not called.
    ReturnRecorded,
    /// `compensated`: tell the model it was compensated; the tool is not called.
    ReturnCompensated,
    /// `started`/`indeterminate`: the outcome is unknown; the tool is not called.
    Unknown,
    /// A naive runtime reclaims a `started` record whose lease ran out (guard `no_lease_expiry` off).
    TakeOverExpiredLease,
}

impl ReservationAction {
    /// Whether the tool runs: the reservation wrote `started` for this worker, and its first
    /// attempt is sent next.
    pub fn runs(self) -> bool {
        matches!(
            self,
            ReservationAction::RunNew | ReservationAction::RunAgain | ReservationAction::TakeOverExpiredLease
        )
    }

    /// In words, for a timeline.
    pub fn describe(self) -> &'static str {
        match self {
            ReservationAction::RunNew => "recorded `started`; the tool runs",
            ReservationAction::RunAgain => "it did not take effect; recorded `started` again, the tool runs",
            ReservationAction::ReturnRecorded => "the recorded result is returned; the tool is not called",
            ReservationAction::ReturnCompensated => "it was compensated; the tool is not called",
            ReservationAction::Unknown => "the outcome is unknown; the tool is not called",
            ReservationAction::TakeOverExpiredLease => "the lease ran out; a naive runtime runs it again",
        }
    }
}

/// Table 1 — reservation. `lease_expired` only matters for a naive runtime that has
/// leases (`no_lease_expiry` off); the runtime with its guards on never reclaims `started`.
pub fn reservation_action(existing: Option<Status>, side_effect: SideEffect, lease_expired: bool) -> ReservationAction {
    use ReservationAction as Action;
    match (existing, side_effect.changes_something()) {
        (None, _) => Action::RunNew,
        (Some(Status::Completed), _) => Action::ReturnRecorded,
        (Some(Status::Compensating | Status::Compensated), _) => Action::ReturnCompensated,
        (Some(Status::Failed), _) => Action::RunAgain,
        // A read may simply run again: repeating it changes nothing.
        (Some(Status::Started | Status::Indeterminate), false) => Action::RunAgain,
        (Some(Status::Started), true) if lease_expired => Action::TakeOverExpiredLease,
        (Some(Status::Started | Status::Indeterminate), true) => Action::Unknown,
    }
}

/// How one attempt ended, as the worker saw it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AttemptEnd {
    /// The other system answered with a result.
    Succeeded,
    /// The other system answered that it refused (a definite no).
    Rejected,
    /// The tool refused before anything was sent (`ToolNotAttemptedError`).
    NotAttempted,
    /// Timeout or lost connection after the request left.
    TimedOut,
}

/// What to do after an attempt.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OutcomeAction {
    /// Record this outcome; the call is over.
    Record(Outcome),
    /// Try again after this backoff.
    Retry {
        /// How long to wait before the next attempt.
        backoff_ms: u64,
    },
}

/// Table 2 — outcome. `attempts_allowed` comes from the tool's declaration and the
/// write retry rule; `attempt` counts from 1.
///
/// Total over its inputs: an attempt at or past the last allowed one (or a 0 counted as the
/// first) is the last, and the backoff saturates rather than overflow, so no input panics.
/// [`crate::worker::Worker::new`] refuses declarations outside 1 to
/// [`crate::tool::READ_ATTEMPTS_MAX`] attempts before they reach the table.
///
/// ```
/// use twice_runtime::rules::{AttemptEnd, Outcome, OutcomeAction, outcome_action};
/// use twice_runtime::tool::SideEffect;
/// // A write's timeout is an unknown, never a retry.
/// assert_eq!(
///     outcome_action(SideEffect::External, AttemptEnd::TimedOut, 1, 1),
///     OutcomeAction::Record(Outcome::Indeterminate)
/// );
/// // A read tries again after a backoff.
/// assert_eq!(
///     outcome_action(SideEffect::Read, AttemptEnd::TimedOut, 1, 3),
///     OutcomeAction::Retry { backoff_ms: 50 }
/// );
/// ```
#[must_use]
pub fn outcome_action(side_effect: SideEffect, end: AttemptEnd, attempt: u32, attempts_allowed: u32) -> OutcomeAction {
    match end {
        AttemptEnd::Succeeded => OutcomeAction::Record(Outcome::Completed),
        AttemptEnd::Rejected | AttemptEnd::NotAttempted => OutcomeAction::Record(Outcome::Failed),
        AttemptEnd::TimedOut if attempt < attempts_allowed => OutcomeAction::Retry {
            backoff_ms: read_backoff_ms(attempt),
        },
        // Out of attempts. A write's timeout is an unknown; only a read (or a naive
        // runtime that retries writes like reads) calls it a failure.
        AttemptEnd::TimedOut if side_effect.changes_something() && attempts_allowed <= 1 => {
            OutcomeAction::Record(Outcome::Indeterminate)
        }
        AttemptEnd::TimedOut => OutcomeAction::Record(Outcome::Failed),
    }
}

/// The backoff after attempt `attempt` timed out: the base, doubled for each later attempt,
/// saturating at `u64::MAX` ms (an attempt counted 0 waits the base).
fn read_backoff_ms(attempt: u32) -> u64 {
    let doublings = attempt.saturating_sub(1);
    let factor = 1_u64.checked_shl(doublings).unwrap_or(u64::MAX);
    super::tool::READ_BACKOFF_BASE_MS.saturating_mul(factor)
}

/// Table 3 — what a run does with an unknown call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UnknownAction {
    /// Ask the tool's reconcile hook first (read-only; may run many times).
    AskReconcileHook,
    /// `on_indeterminate: pause`: the run waits in `awaiting_reconciliation`.
    Pause,
    /// Default `fail`: the model is told the call failed.
    TellModelFailed,
}

/// Table 3: ask the hook (once), else pause, else tell the model the call failed.
pub fn unknown_action(hook_available: bool, hook_already_asked: bool, pause: bool) -> UnknownAction {
    match (hook_available && !hook_already_asked, pause) {
        (true, _) => UnknownAction::AskReconcileHook,
        (false, true) => UnknownAction::Pause,
        (false, false) => UnknownAction::TellModelFailed,
    }
}

/// Table 4 — a run that failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FailedRunAction {
    /// A naive runtime (guard `no_reflex_compensation` off) compensates every call of the run
    /// that took effect: the saga reflex.
    CompensateWhatTookEffect,
    /// The runtime never compensates by itself: what took effect stands until someone who can
    /// check the other system decides.
    LeaveToOperator,
    /// `recovery_policy: retry` with retries left: the node starts fresh run number `retry`
    /// (a new run id, so new keys, from the script's first step).
    StartFreshRun {
        /// The fresh run's number (1: the first retry).
        retry: u32,
    },
    /// The run stays failed; a person looks.
    StayFailed,
}

/// Table 4, the runtime's half: a run failed with `took_effect` calls that have a
/// compensation and took effect. `None`: there is nothing to undo or leave.
pub fn failed_run_undo(took_effect: u32, reflex: bool) -> Option<FailedRunAction> {
    match (took_effect, reflex) {
        (0, _) => None,
        (_, true) => Some(FailedRunAction::CompensateWhatTookEffect),
        (_, false) => Some(FailedRunAction::LeaveToOperator),
    }
}

/// Table 4, the workflow node's half: run number `retry` of the node (0: its first run) failed.
///
/// Total: a node never starts more than [`crate::workflow::RETRIES_MAX`] fresh runs whatever
/// `retries_max` says, and a run numbered past the limit stays failed.
///
/// ```
/// use twice_runtime::rules::{FailedRunAction, workflow_action};
/// use twice_runtime::workflow::{RETRIES_MAX, RecoveryPolicy};
/// assert_eq!(workflow_action(RecoveryPolicy::Retry, 0, 2), FailedRunAction::StartFreshRun { retry: 1 });
/// assert_eq!(workflow_action(RecoveryPolicy::Retry, 2, 2), FailedRunAction::StayFailed);
/// // A limit past the most a node may start is held to that most.
/// assert_eq!(workflow_action(RecoveryPolicy::Retry, RETRIES_MAX, 1_000), FailedRunAction::StayFailed);
/// ```
#[must_use]
pub fn workflow_action(policy: RecoveryPolicy, retry: u32, retries_max: u32) -> FailedRunAction {
    let retries_max = retries_max.min(crate::workflow::RETRIES_MAX);
    match policy {
        RecoveryPolicy::Retry if retry < retries_max => FailedRunAction::StartFreshRun { retry: retry + 1 },
        RecoveryPolicy::Retry | RecoveryPolicy::Fail => FailedRunAction::StayFailed,
    }
}

/// Whether anything can happen between a reservation and the send of its first attempt: a
/// declared property of the driver.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SendTiming {
    /// The driver may stop between the two: the simulator splits a call into visible phases
    /// so that something can happen (an operator settles, a crash) between the
    /// reservation and the send. The default, right for any driver.
    #[default]
    Separate,
    /// The driver sends as soon as the reservation says the tool runs, with nothing of its
    /// own in between (a worker process).
    RightAfterReserving,
}

/// Where the send fence is made.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FencePlace {
    /// No fence: a naive runtime (no ledger, or check-then-insert with no compare-and-set
    /// anywhere) sends without one.
    Unfenced,
    /// In the reservation's own transaction: the reservation and attempt 1 commit together,
    /// one commit fewer. An operator's decision lands before the reservation (which then
    /// follows it) or after the attempt (which it then sees counted) — never between, because
    /// there is no between. If the machine then does not send after all, the attempt stays
    /// counted and nothing left: an operator cannot prove "nothing left" from the ledger and
    /// checks the other system, which is the safe side.
    InTheReservation,
    /// A transaction of its own just before the request leaves ([`crate::ledger::Ledger::begin_attempt`]):
    /// time passes between the reservation and the send, and whatever happened meanwhile (an
    /// operator settled the call, another worker took it over) stops the send. Also every
    /// later attempt (a read's retry after its backoff).
    BeforeTheSend,
}

/// Table 5 — the send fence: where the compare-and-set on "still this worker's `started`
/// call" is made for attempt 1 of a call whose reservation runs it. `fenced` is whether the
/// runtime fences its sends at all (guards `ledger` and `atomic_reservation` on).
///
/// | fenced | send timing           | attempt 1's fence   | later attempts |
/// |--------|-----------------------|---------------------|----------------|
/// | no     | any                   | none                | none           |
/// | yes    | separate (simulator)  | before the send     | before the send |
/// | yes    | right after reserving | in the reservation  | before the send |
pub fn fence_place(fenced: bool, timing: SendTiming) -> FencePlace {
    match (fenced, timing) {
        (false, _) => FencePlace::Unfenced,
        (true, SendTiming::Separate) => FencePlace::BeforeTheSend,
        (true, SendTiming::RightAfterReserving) => FencePlace::InTheReservation,
    }
}

/// Table 6 — what a reconcile hook's "nothing under this key" proves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AbsentAction {
    /// The tool declares no settle time: a lookup never proves a call absent; it stays
    /// unknown (table 3 goes on: pause, or tell the model).
    StillUnknown,
    /// The key is older than the provider keeps keys: finding nothing proves nothing, whatever
    /// happened — "expired", not "absent". It stays unknown, for a pause or a person.
    Expired,
    /// Within the settle time of the last send the effect may not show yet: ask again once
    /// `after_ms` more have passed, before anyone settles `failed`.
    AskAgain {
        /// How long to wait before asking again.
        after_ms: u64,
    },
    /// Past the settle time, within the retention: nothing there proves the call did not take
    /// effect — as the tool declares it, whose settle time must cover the latest a request can
    /// still land after the ledger's record of its send (its provider refuses later ones).
    /// Settle it `failed` (the model hears it did not take effect).
    SettleFailed,
}

/// What table 6 weighs: the tool's declared terms, how long ago the call's key was reserved
/// and its last send (or unknown outcome) was written, and the two guards.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AbsentFacts {
    /// The tool's declared `lookup_settle_ms`.
    pub lookup_settle_ms: Option<u64>,
    /// The tool's declared `key_retention_ms`.
    pub key_retention_ms: Option<u64>,
    /// How long ago the call's key was reserved: the key's age.
    pub since_reserved_ms: u64,
    /// How long ago its last send (or unknown outcome) was written.
    pub since_last_send_ms: u64,
    /// Guard `key_retention`.
    pub retention_guard: bool,
    /// Guard `lookup_settle`.
    pub settle_guard: bool,
}

/// Table 6. With a guard off, its row is skipped: a naive hook reads "nothing" past the
/// retention as "absent", and "nothing" at the first look as proof.
///
/// | key older than retention | settle time declared | since last send < settle | then              |
/// |--------------------------|----------------------|--------------------------|-------------------|
/// | yes (guard on)           | any                  | any                      | expired (unknown) |
/// | —                        | no                   | —                        | still unknown     |
/// | —                        | yes                  | yes (guard on)           | ask again after   |
/// | —                        | yes                  | otherwise                | settle failed     |
///
/// Total: terms a declaration may not hold ([`crate::tool::ToolDeclaration::terms_problem`],
/// refused by [`crate::worker::Worker::new`]) are still answered by the rows above — a
/// retention of 0 has always expired, a settle time of 0 has always passed.
#[must_use]
pub fn absent_action(facts: AbsentFacts) -> AbsentAction {
    let expired = facts
        .key_retention_ms
        .is_some_and(|retention| facts.since_reserved_ms >= retention);
    if expired && facts.retention_guard {
        return AbsentAction::Expired;
    }
    let Some(settle) = facts.lookup_settle_ms else {
        return AbsentAction::StillUnknown;
    };
    if facts.settle_guard && facts.since_last_send_ms < settle {
        return AbsentAction::AskAgain {
            after_ms: settle - facts.since_last_send_ms,
        };
    }
    AbsentAction::SettleFailed
}

/// Table 7 — a send of a key whose earlier attempt may have landed (a write retried after a
/// timeout, a started call taken over).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ResendAction {
    /// Send it: the first send, a key the provider still keeps, or a naive runtime.
    Send,
    /// The key is older than the provider keeps keys: a resend would be a new request to it,
    /// so it is not sent. The call is recorded `indeterminate` (its earlier attempt is
    /// unknown) and goes down table 3.
    RefuseExpiredKey,
}

/// Table 7. Total: a retention of 0 has always expired. `earlier_unknown`: an earlier attempt under this key may have taken effect;
/// `key_age_ms`: since the key was reserved; `guard`: guard `key_retention`.
pub fn resend_action(
    key_retention_ms: Option<u64>,
    key_age_ms: u64,
    earlier_unknown: bool,
    guard: bool,
) -> ResendAction {
    match key_retention_ms {
        Some(retention) if guard && earlier_unknown && key_age_ms >= retention => ResendAction::RefuseExpiredKey,
        _ => ResendAction::Send,
    }
}

/// Table 8 — a worker loads a run that was interrupted (a recovery).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RecoveryAction {
    /// Drive the run on.
    Recover,
    /// Its recoveries failed as often as it declares it may: it stops as `dead_lettered`, its
    /// reason in the run's history, and resumes only when an operator asks.
    DeadLetter,
}

/// Table 8. `failed_before`: recoveries of the run that started from the checkpoint this one
/// loads and made no progress past it (none saved a newer one), since an operator last resumed
/// it; `limit`: the declared `recovery_attempts_max`; `guard`: guard `dead_letter`. A naive
/// runtime recovers again forever.
///
/// Total: a limit of 0 (refused by [`crate::worker::Worker::new`]) dead-letters at once.
#[must_use]
pub fn recovery_action(failed_before: u32, limit: Option<u32>, guard: bool) -> RecoveryAction {
    match limit {
        Some(limit) if guard && failed_before >= limit => RecoveryAction::DeadLetter,
        _ => RecoveryAction::Recover,
    }
}

/// A row of table 2, 3 or 4 as it fired, with the inputs that chose it: what a worker decided,
/// recorded so a rulebook beside a run can light the row (table 1's rows come back from the
/// ledger's reservation, which carries its action).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fired {
    /// Table 2: how an attempt ended and what was done about it.
    Outcome {
        /// Its tool's side effect (table 1 reads it).
        side_effect: SideEffect,
        /// How the attempt ended.
        end: AttemptEnd,
        /// The attempt.
        attempt: u32,
        /// The attempts the tool was given.
        attempts_allowed: u32,
        /// What the table decided.
        action: OutcomeAction,
    },
    /// Table 3: what a run did with an unknown call.
    Unknown {
        /// The tool has a reconcile hook (and guard `reconcile_hook` is on).
        hook_available: bool,
        /// The hook was asked already for this call.
        hook_already_asked: bool,
        /// The run pauses on unknown calls (guard `pause_on_indeterminate`).
        pause: bool,
        /// What the table decided.
        action: UnknownAction,
    },
    /// Table 4, the runtime's half (a worker decided it).
    FailedRunUndo {
        /// Calls of the run that took effect and have a compensation.
        took_effect: u32,
        /// The runtime compensates by itself (guard `no_reflex_compensation` off).
        reflex: bool,
        /// What the table decided.
        action: FailedRunAction,
    },
    /// Table 4, the workflow node's half (the supervisor decided it).
    Workflow {
        /// The node's recovery policy.
        policy: RecoveryPolicy,
        /// The run's number (0: the node's first run).
        retry: u32,
        /// How many fresh runs the node may start.
        retries_max: u32,
        /// What the table decided.
        action: FailedRunAction,
    },
    /// Table 6: the reconcile hook found nothing.
    Absent {
        /// What the table weighed.
        facts: AbsentFacts,
        /// What the table decided.
        action: AbsentAction,
    },
    /// Table 7: a resend of a key whose earlier attempt may have landed.
    Resend {
        /// How long the provider keeps keys, as the tool declares it.
        key_retention_ms: Option<u64>,
        /// How long ago the key was reserved, in ms.
        key_age_ms: u64,
        /// What the table decided.
        action: ResendAction,
    },
    /// Table 8: a recovery, and how many before it failed.
    Recovery {
        /// Recoveries before this one that failed.
        failed_before: u32,
        /// The declared `recovery_attempts_max`.
        limit: Option<u32>,
        /// What the table decided.
        action: RecoveryAction,
    },
}

#[cfg(test)]
#[path = "rules_tests.rs"]
mod tests;
