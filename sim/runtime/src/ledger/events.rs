//! What a history line says happened: typed, so code and tests match on variants, not on
//! strings. The ledger stores each as its name (the `event` column is text, readable with
//! `sqlite3`), and a name this build does not know is refused as a bad row, never guessed at.

use serde::{Deserialize, Serialize};

use crate::rules::Outcome;

/// One event in a record's append-only history (`tool_execution_history.event`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub enum HistoryEvent {
    /// A new call was recorded `started`.
    Reserved,
    /// A `failed` call (or a read whose run was unknown) was recorded `started` again.
    ReservedAgain,
    /// A naive runtime reclaimed a `started` call whose lease ran out.
    LeaseTakenOver,
    /// An attempt passed the send fence: the request may leave now.
    Attempt,
    /// The send fence refused an attempt: the record was no longer this worker's `started`
    /// call, so nothing was sent.
    SendRefused,
    /// An attempt's own outcome was recorded (`completed`, `failed` or `indeterminate`).
    Outcome(Outcome),
    /// An outcome arrived after the call was settled (or for an attempt that is not the
    /// record's current one); logged, and ignored.
    LateOutcomeIgnored,
    /// An operator resolved the call.
    Resolved,
    /// The reconcile hook settled the call: `completed` when it found the effect, `failed`
    /// when a lookup past the tool's declared settle time found nothing.
    Reconciled,
    /// An operator's compensation claimed the call: `compensating` until the undo is confirmed.
    CompensationClaimed,
    /// The undo was confirmed by the tool's world: `compensating` → `compensated`.
    CompensationApplied,
    /// The undo failed; the record stays `compensating` and a retry may finish it.
    CompensationFailed,
    /// An operator asked for a compensation and the tool's world holds no effect: nothing
    /// was undone and the call was settled `failed`.
    NothingToCompensate,
    /// A naive runtime compensated by itself (guard `no_reflex_compensation` off).
    ReflexCompensation,
    /// A guard held here (a note for the reader; changes nothing).
    GuardHeld,
    /// A call reusing the key with other arguments (or another tool) was refused: it was not
    /// run, and the record stands as it was. The detail names the arguments offered.
    ArgumentsRefused,
    /// An attempt's outcome arrived after someone else settled the call and says otherwise
    /// (the settlement said `failed`, the answer says it took effect; or the reverse). The
    /// settlement stands; the detail says what the late answer said, for a person to look.
    Contradicted,
    /// A worker that restarted (or replaced a worker whose process ended) met a `started` call
    /// its predecessor held with no outcome recorded: nobody is left to send it or hear its
    /// answer, so it was recorded `indeterminate` for a hook or a person to settle.
    RecoveredUnknown,
    /// Schema version 1 recorded a compensation's claim as `compensated` in one step.
    LegacyCompensated,
    /// Schema version 1 noted a compensation that found nothing in a second line.
    LegacyCompensationNotApplied,
}

impl HistoryEvent {
    /// Every event, each outcome status once.
    pub const ALL: [HistoryEvent; 22] = [
        HistoryEvent::Reserved,
        HistoryEvent::ReservedAgain,
        HistoryEvent::LeaseTakenOver,
        HistoryEvent::Attempt,
        HistoryEvent::SendRefused,
        HistoryEvent::Outcome(Outcome::Completed),
        HistoryEvent::Outcome(Outcome::Failed),
        HistoryEvent::Outcome(Outcome::Indeterminate),
        HistoryEvent::LateOutcomeIgnored,
        HistoryEvent::Resolved,
        HistoryEvent::Reconciled,
        HistoryEvent::CompensationClaimed,
        HistoryEvent::CompensationApplied,
        HistoryEvent::CompensationFailed,
        HistoryEvent::NothingToCompensate,
        HistoryEvent::ReflexCompensation,
        HistoryEvent::GuardHeld,
        HistoryEvent::ArgumentsRefused,
        HistoryEvent::Contradicted,
        HistoryEvent::RecoveredUnknown,
        HistoryEvent::LegacyCompensated,
        HistoryEvent::LegacyCompensationNotApplied,
    ];

    /// The name the ledger stores.
    pub fn name(self) -> &'static str {
        match self {
            HistoryEvent::Reserved => "reserved",
            HistoryEvent::ReservedAgain => "reserved_again",
            HistoryEvent::LeaseTakenOver => "lease_taken_over",
            HistoryEvent::Attempt => "attempt",
            HistoryEvent::SendRefused => "send_refused",
            HistoryEvent::Outcome(outcome) => outcome.name(),
            HistoryEvent::LateOutcomeIgnored => "late_outcome_ignored",
            HistoryEvent::Resolved => "resolved",
            HistoryEvent::Reconciled => "reconciled",
            HistoryEvent::CompensationClaimed => "compensation_claimed",
            HistoryEvent::CompensationApplied => "compensation_applied",
            HistoryEvent::CompensationFailed => "compensation_failed",
            HistoryEvent::NothingToCompensate => "nothing_to_compensate",
            HistoryEvent::ReflexCompensation => "reflex_compensation",
            HistoryEvent::GuardHeld => "guard_held",
            HistoryEvent::ArgumentsRefused => "arguments_refused",
            HistoryEvent::Contradicted => "contradicted",
            HistoryEvent::RecoveredUnknown => "recovered_unknown",
            HistoryEvent::LegacyCompensated => "compensated",
            HistoryEvent::LegacyCompensationNotApplied => "compensation_not_applied",
        }
    }

    /// The event named `text` (as [`HistoryEvent::name`] writes it).
    pub fn parse(text: &str) -> Option<HistoryEvent> {
        HistoryEvent::ALL.into_iter().find(|event| event.name() == text)
    }

    /// An attempt's own outcome: what `record_outcome` writes.
    #[must_use]
    pub fn outcome(outcome: Outcome) -> HistoryEvent {
        HistoryEvent::Outcome(outcome)
    }
}

impl std::fmt::Display for HistoryEvent {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str(self.name())
    }
}

impl Serialize for HistoryEvent {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.name())
    }
}

impl<'de> Deserialize<'de> for HistoryEvent {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<HistoryEvent, D::Error> {
        let text = String::deserialize(deserializer)?;
        HistoryEvent::parse(&text)
            .ok_or_else(|| serde::de::Error::custom(format!("`{text}` is not a history event this build knows")))
    }
}

/// One event in a run's own append-only history (`run_history.event`): what happened to a
/// run as a whole rather than to one call.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum RunEvent {
    /// The run's stored state cannot be used (a checkpoint this build cannot read, a call of
    /// a tool nobody declared, a counter at its limit): the run is not driven until a person
    /// looks. Restarting it from scratch would re-run calls under keys the other system has never seen.
    WaitsForPerson,
    /// A worker started the run with no checkpoint to load, with a recovery limit declared:
    /// a later worker that finds no checkpoint either is recovering a run that crashed
    /// before its first checkpoint (table 8 counts it like any other recovery).
    Started,
    /// A worker loaded the run after it was interrupted, with a recovery limit declared; the
    /// detail names the checkpoint it started from (table 8 counts these).
    RecoveryStarted,
    /// The run's recoveries failed as often as declared: it stopped as `dead_lettered`; the
    /// detail says why.
    DeadLettered,
    /// An operator resumed a dead-lettered run; the detail is their reason.
    Resumed,
    /// A call reused a key of this run with other arguments (or another tool): it was
    /// refused, nothing was run; the detail names the key and both sets of arguments.
    ArgumentsRefused,
}

impl RunEvent {
    /// Every run event.
    pub const ALL: [RunEvent; 6] = [
        RunEvent::WaitsForPerson,
        RunEvent::Started,
        RunEvent::RecoveryStarted,
        RunEvent::DeadLettered,
        RunEvent::Resumed,
        RunEvent::ArgumentsRefused,
    ];

    /// The event's name as stored (`run_history.event`).
    pub fn name(self) -> &'static str {
        match self {
            RunEvent::WaitsForPerson => "waits_for_person",
            RunEvent::Started => "started",
            RunEvent::RecoveryStarted => "recovery_started",
            RunEvent::DeadLettered => "dead_lettered",
            RunEvent::Resumed => "resumed",
            RunEvent::ArgumentsRefused => "arguments_refused",
        }
    }

    /// The event named `text`.
    pub fn parse(text: &str) -> Option<RunEvent> {
        RunEvent::ALL.into_iter().find(|event| event.name() == text)
    }
}

impl std::fmt::Display for RunEvent {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_event_round_trips_through_its_name_and_names_are_unique() {
        let mut names = std::collections::BTreeSet::new();
        for event in HistoryEvent::ALL {
            assert_eq!(HistoryEvent::parse(event.name()), Some(event));
            assert!(names.insert(event.name()), "{event} named twice");
        }
        for event in RunEvent::ALL {
            assert_eq!(RunEvent::parse(event.name()), Some(event));
        }
        assert_eq!(HistoryEvent::parse("moved_money"), None);
    }
}
