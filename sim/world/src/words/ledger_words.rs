//! The ledger's statuses, history events and the runs' statuses in a player's words: one
//! table both editions draw from. The ledger stores names (`indeterminate`, `recovered_unknown`) and the panels
//! that show its rows keep them; what a player reads beside them — a status's word and the
//! sentence under a pointer, a history line's event — is said here, in words, once.

use twice_runtime::ledger::HistoryEvent;
use twice_runtime::rules::{Outcome, Status};

/// How a status is shown: a glyph (so it is never told by colour alone), the word a row
/// shows, and what it means, as a sentence.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StatusWords {
    pub glyph: char,
    /// The status as a row shows it: the ledger's own word for it.
    pub word: &'static str,
    /// What a call with this status means for the money and for what happens next.
    pub sentence: &'static str,
}

/// `status` in a player's words.
pub fn status(status: Status) -> StatusWords {
    let (word, sentence) = match status {
        Status::Started => (
            "started",
            "Reserved before the request left: the call may be under way, or its worker died before it heard back.",
        ),
        Status::Completed => (
            "completed",
            "It took effect and its result is recorded: asked again, the runtime returns the result and does not call the tool.",
        ),
        Status::Failed => (
            "failed",
            "It definitely did not take effect, so it may run again under the same key.",
        ),
        Status::Indeterminate => (
            "indeterminate",
            "Nobody knows whether it took effect: the runtime does not run it again until a hook or a person settles it.",
        ),
        Status::Compensating => (
            "compensating",
            "It took effect and an operator decided to undo it; the undo is not confirmed yet.",
        ),
        Status::Compensated => (
            "compensated",
            "It took effect and was undone on an operator's decision.",
        ),
    };
    StatusWords {
        glyph: status.glyph(),
        word,
        sentence,
    }
}

/// How a history line's event is shown: a few words for the line, and a sentence for what
/// happened.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EventWords {
    /// The event in words, short enough for a history line: "recovered as unknown".
    pub words: &'static str,
    /// What happened, as a sentence.
    pub sentence: &'static str,
}

/// `event` in a player's words; `None` for an event this build has no words for (the runtime
/// may add events; a test holds every event it has now to having words).
pub fn event(event: HistoryEvent) -> Option<EventWords> {
    let (words, sentence) = match event {
        HistoryEvent::Reserved => (
            "reserved",
            "The call was written down as started before its request could leave.",
        ),
        HistoryEvent::ReservedAgain => (
            "reserved again",
            "A call that did not take effect was written down as started again, under the same key.",
        ),
        HistoryEvent::LeaseTakenOver => (
            "taken over",
            "Its lease ran out, and a naive runtime took the started call over to run it again.",
        ),
        HistoryEvent::Attempt => (
            "attempt sent",
            "The worker still held the call, so its request was allowed to leave.",
        ),
        HistoryEvent::SendRefused => (
            "send refused",
            "The call was no longer this worker's to send, so nothing left.",
        ),
        HistoryEvent::Outcome(Outcome::Completed) => (
            "answered: done",
            "The other system answered with a result: the call took effect.",
        ),
        HistoryEvent::Outcome(Outcome::Failed) => ("answered: not done", "The attempt definitely did not take effect."),
        HistoryEvent::Outcome(Outcome::Indeterminate) => (
            "no answer",
            "The request left and no answer came back: nobody knows whether it took effect.",
        ),
        HistoryEvent::LateOutcomeIgnored => (
            "late answer ignored",
            "An answer arrived after the call was settled; it was written down and changed nothing.",
        ),
        HistoryEvent::Resolved => (
            "settled by an operator",
            "An operator decided what happened to the call, with a reason.",
        ),
        HistoryEvent::Reconciled => (
            "settled by the hook",
            "The reconcile hook looked the call up by its key and settled it.",
        ),
        HistoryEvent::CompensationClaimed => (
            "undo asked for",
            "An operator asked for the call to be undone; the undo is under way.",
        ),
        HistoryEvent::CompensationApplied => ("undone", "The other system confirmed the undo."),
        HistoryEvent::CompensationFailed => (
            "undo failed",
            "The undo did not go through; the call waits for it to be tried again.",
        ),
        HistoryEvent::NothingToCompensate => (
            "nothing to undo",
            "An operator asked for an undo and the other system held no effect: nothing was undone, and the call was settled as not done.",
        ),
        HistoryEvent::ReflexCompensation => (
            "undone by reflex",
            "A naive runtime undid the call by itself, without anyone deciding it should.",
        ),
        HistoryEvent::GuardHeld => ("a guard held", "A guard held here; the record did not change."),
        HistoryEvent::ArgumentsRefused => (
            "other arguments refused",
            "A call reused this key with other arguments: it was not run, and the record stands as it was.",
        ),
        HistoryEvent::Contradicted => (
            "contradicted",
            "An answer arrived after someone settled the call, and says otherwise: the settlement stands, for a person to look at.",
        ),
        HistoryEvent::RecoveredUnknown => (
            "recovered as unknown",
            "A worker that took over the run found this call started with no answer recorded: nobody is left to hear from it, so it was recorded as unknown for a hook or a person to settle.",
        ),
        HistoryEvent::LegacyCompensated => ("undone (older ledger)", "An older ledger recorded an undo in one step."),
        HistoryEvent::LegacyCompensationNotApplied => (
            "nothing to undo (older ledger)",
            "An older ledger noted an undo that found nothing.",
        ),
        _ => return None,
    };
    Some(EventWords { words, sentence })
}

/// A run's status as its checkpoint stores it (`awaiting_reconciliation`), in words
/// ("awaiting reconciliation"); `None` for a name this build does not know.
pub fn run_status(stored: &str) -> Option<&'static str> {
    Some(match stored {
        "running" => "running",
        "awaiting_reconciliation" => "awaiting reconciliation",
        "completed" => "completed",
        "failed" => "failed",
        "dead_lettered" => "dead-lettered",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_status_keeps_the_runtimes_glyph_and_its_stored_name() {
        for each in Status::ALL {
            let words = status(each);
            assert_eq!(words.glyph, each.glyph());
            assert_eq!(words.word, each.name(), "a row shows the ledger's own word");
        }
    }

    #[test]
    fn every_run_status_the_runtime_stores_has_words() {
        use twice_runtime::run::RunStatus;
        let every = [
            RunStatus::Running,
            RunStatus::AwaitingReconciliation { key: "r1:c1".into() },
            RunStatus::Completed,
            RunStatus::Failed { reason: "why".into() },
        ];
        for status in every {
            let words = run_status(status.name()).unwrap_or_else(|| panic!("{} has no words", status.name()));
            assert!(!words.contains('_'), "{words}");
        }
        assert_eq!(run_status("dead_lettered"), Some("dead-lettered"));
        assert_eq!(run_status("nonsense"), None);
    }
}
