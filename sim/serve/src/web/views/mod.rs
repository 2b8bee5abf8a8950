//! Every JSON answer the browser gets, built from the simulator's state in this folder.
//!
//! The simulator's types are changing (typed actors with a lane and a label, typed history
//! events and guard notes, typed violations in the verdict); every conversion from them to
//! what the pages read lives here, so following such a change is an edit in one place.
//! The pages only draw what these views say: the colour and glyph of each key, a status's
//! glyph and word, which targets a card offers — nothing is worked out twice.
//!
//! One file per screen: [`lobby`] (who the browser is, the level select), [`level_parts`]
//! (the pieces of the level screen), [`code`] (its code panel), [`level_screen`] (the level
//! screen built from a game), [`debrief`] (the verdict and the end of a level), [`room`] (the
//! race), [`overview`] (the presenter's room at a glance). This file holds the looks every
//! screen shares.
//!
//! Integers in these types are fixed-width; amounts are cents (`_cents`), times virtual
//! milliseconds (`_ms`).

mod code;
mod debrief;
mod level_parts;
mod level_screen;
mod lobby;
mod overview;
mod room;

pub use code::*;
pub use debrief::*;
pub use level_parts::*;
pub use level_screen::*;
pub use lobby::*;
pub use overview::*;
pub use room::*;

use serde::Serialize;

use twice_world::checker::Outcome;
use twice_world::ledger_words;
use twice_world::runtime::rules::Status;
use twice_world::runtime::run::RunStatus;
use twice_world::runtime::worker::WorkerState;
use twice_world::simulator::{TimelineEntry, WorkerView};

pub use crate::api::views::shorten;

/// The most timeline entries one answer carries (the newest); a level runs at most
/// [`super::LEVEL_PHASES_MAX`] phases, so this is only a backstop.
pub const TIMELINE_ENTRIES_SENT_MAX: usize = 3_000;
/// The most ledger history entries one answer carries (the newest).
pub const HISTORY_ENTRIES_SENT_MAX: usize = 500;
/// The most billing entries one answer carries (the newest).
pub const BILLING_ENTRIES_SENT_MAX: usize = 200;

// ----- looks: a glyph and a word for everything, a colour only on top -----

/// One idempotency key's look: a colour and a glyph, so keys are told apart without colour.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct KeyLook {
    pub key: String,
    pub glyph: String,
    pub colour: String,
}

/// The key's look as [`twice_world::key_look`] works it out (the game draws the same).
fn key_look_at(key: &str, index: usize) -> KeyLook {
    let look = twice_world::key_look::KeyLook::at(index);
    KeyLook {
        key: key.to_owned(),
        glyph: look.glyph.to_string(),
        colour: look.hex(),
    }
}

/// Keys numbered by first appearance in the timeline; keys it never showed get a stable
/// look from their hash ([`twice_world::key_look::KeyLooks`]).
#[derive(Debug, Default)]
struct KeyLooks(twice_world::key_look::KeyLooks);

impl KeyLooks {
    fn from_timeline(entries: &[TimelineEntry]) -> KeyLooks {
        KeyLooks(twice_world::key_look::KeyLooks::from_timeline(entries))
    }

    fn look(&self, key: &str) -> KeyLook {
        key_look_at(key, self.0.index_of(key))
    }
}

/// A glyph, a word and a tone (a CSS class: `good`, `bad`, `warn`, `info`, `violet`,
/// `crew`, `runtime`, `dim`) for a status of any kind. The glyphs are all in DejaVu Sans
/// (no emoji): a projector's bare Linux still draws every one.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Look {
    pub glyph: &'static str,
    pub word: String,
    pub tone: &'static str,
    /// What the word means, as a sentence (a page shows it under the pointer), where the
    /// world says one: a ledger status.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub says: Option<&'static str>,
}

fn look(glyph: &'static str, word: impl Into<String>, tone: &'static str) -> Look {
    Look {
        glyph,
        word: word.into(),
        tone,
        says: None,
    }
}

/// A ledger status: its glyph and tone here, its word and its sentence from the world's one
/// table (`twice_world::ledger_words`), which the window reads too.
pub fn status_look(status: Status) -> Look {
    let (glyph, tone) = match status {
        Status::Started => ("▶", "info"),
        Status::Completed => ("✔", "good"),
        Status::Failed => ("✘", "bad"),
        Status::Indeterminate => ("?", "warn"),
        Status::Compensating => ("↻", "violet"),
        Status::Compensated => ("↺", "violet"),
    };
    let words = ledger_words::status(status);
    Look {
        says: Some(words.sentence),
        ..look(glyph, words.word, tone)
    }
}

pub fn outcome_look(outcome: Outcome) -> Look {
    match outcome {
        Outcome::PaidTwice | Outcome::EmailedTwice | Outcome::ChangeUndone | Outcome::ActedAgain => {
            look("2×", outcome.words(), "bad")
        }
        Outcome::NotPaidButOwed | Outcome::NotDone => look("✘", outcome.words(), "warn"),
        Outcome::UnknownFlagged => look("?", outcome.words(), "warn"),
        Outcome::PaidOnce | Outcome::DoneOnce => look("✔", outcome.words(), "good"),
    }
}

fn worker_look(worker: &WorkerView) -> Look {
    if worker.crashed {
        return look("✘", "crashed", "bad");
    }
    if let Some(words) = worker.stopped_words() {
        // Stopped (SIGSTOP): its state says what it will do once it runs again, not now.
        return look("⏹", words, "warn");
    }
    if !worker.alive {
        return match worker.state {
            WorkerState::StoodDown => look("⏏", "stood down", "dim"),
            WorkerState::WaitingForPerson => look("✋", "waits for a person", "bad"),
            _ => look("■", "exited", "dim"),
        };
    }
    match worker.state {
        WorkerState::Booting => look("…", "booting", "dim"),
        WorkerState::Deciding => look("☁", "asking Penny", "runtime"),
        WorkerState::Reserving => look("⚑", "reserving", "info"),
        WorkerState::Calling => look("✉", "calling billing", "crew"),
        WorkerState::Recording => look("✎", "recording", "info"),
        WorkerState::Reconciling => look("⌕", "reconciling", "violet"),
        WorkerState::Saving => look("⛁", "saving", "info"),
        WorkerState::Parked => look("‖", "parked", "warn"),
        WorkerState::StoodDown => look("⏏", "stood down", "dim"),
        WorkerState::WaitingForPerson => look("✋", "waits for a person", "bad"),
        WorkerState::Exited => look("■", "exited", "dim"),
    }
}

fn run_status_look(status: &RunStatus) -> Look {
    let (glyph, tone) = match status {
        RunStatus::Running => ("▶", "runtime"),
        RunStatus::AwaitingReconciliation { .. } => ("‖", "warn"),
        RunStatus::Completed => ("✔", "good"),
        RunStatus::Failed { .. } => ("✘", "bad"),
        RunStatus::DeadLettered { .. } => ("✉", "bad"),
        // A status a later runtime adds: shown by its own name, never as one of the above.
        _ => ("•", "dim"),
    };
    // The words are the world's (a checkpoint's status line says the same).
    look(
        glyph,
        ledger_words::run_status(status.name()).unwrap_or(status.name()),
        tone,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The browser's status look is the world's table's (which the window reads too): the
    /// runtime's glyph, the ledger's word, and the sentence under the pointer.
    #[test]
    fn every_status_has_a_glyph_a_word_and_a_sentence() {
        for status in Status::ALL {
            let look = status_look(status);
            assert_eq!(look.glyph, status.glyph().to_string());
            assert_eq!(look.word, status.name());
            assert_eq!(look.says, Some(ledger_words::status(status).sentence));
        }
    }

    /// The browser draws a worker held by `PauseWorker` stopped, with when it runs again (the
    /// world's words), not as the state it will resume in. The room serves no regression level,
    /// so no page can reach one: this is the look every page would draw, from the regression
    /// tape that stops w1 while it waits for billing.
    #[test]
    fn a_stopped_worker_is_drawn_stopped_until_it_resumes() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../levels/regressions");
        let tape = twice_world::level::load_tape(&root.join("paused-worker-lease.reproduced.tape.ron")).unwrap();
        let mut simulation = twice_world::simulator::SimulationBuilder::new(tape.level.level.clone(), tape.tape.seed)
            .actions(tape.tape.actions.clone())
            .ledger_store(twice_world::ledger::LedgerStore::Memory)
            .build()
            .unwrap();
        let held = |simulation: &twice_world::simulator::Simulation| {
            simulation
                .workers()
                .iter()
                .find(|worker| worker.stopped_words().is_some())
                .map(worker_look)
        };
        simulation.run_until(|simulation| held(simulation).is_some()).unwrap();
        let look = held(&simulation).expect("the tape stops w1");
        assert_eq!(look.glyph, "⏹");
        assert!(
            look.word.starts_with("stopped until ") && look.word.ends_with(" ms"),
            "{look:?}"
        );
        simulation.run().unwrap();
        assert!(held(&simulation).is_none(), "still drawn stopped once the run is over");
    }

    #[test]
    fn tape_names_keep_to_safe_characters() {
        assert_eq!(
            tape_file_name("01-naive-retry", "Ada"),
            "01-naive-retry.web-ada.tape.ron"
        );
        assert_eq!(
            tape_file_name("01-naive-retry", "Zoë O'Brien"),
            "01-naive-retry.web-zo--o-brien.tape.ron"
        );
        assert_eq!(
            tape_file_name("01-naive-retry", "ëë"),
            "01-naive-retry.web-player.tape.ron"
        );
    }
}
