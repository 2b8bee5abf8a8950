//! Presenter notes: what to say and what to ask the room, per chapter, for someone playing
//! the campaign at a projector. They live beside the levels (`presenter-notes.ron`), so a
//! workshop that changes the levels changes its notes in the same folder, and `twice-sim check`
//! holds them to the campaign: every chapter they name exists, none twice.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::InputError;
use crate::level::{self, Level};

/// The notes' file name, beside the levels.
pub const NOTES_FILE: &str = "presenter-notes.ron";
/// The most chapters a notes file may hold, and the most questions a chapter may ask.
pub const CHAPTERS_MAX: usize = 64;
pub const QUESTIONS_MAX: usize = 8;
/// The longest a note may be: read aloud in a minute or two.
pub const NOTE_WORDS_MAX: usize = 200;

/// One chapter's notes.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ChapterNotes {
    pub chapter: u32,
    /// What to say while the room watches.
    pub say: String,
    /// What to ask the room, before the verdict.
    #[serde(default)]
    pub ask: Vec<String>,
    /// Roughly how long the chapter takes with a room.
    #[serde(default)]
    pub minutes: u32,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PresenterNotes {
    pub chapters: Vec<ChapterNotes>,
}

impl PresenterNotes {
    pub fn chapter(&self, chapter: u32) -> Option<&ChapterNotes> {
        self.chapters.iter().find(|notes| notes.chapter == chapter)
    }
}

/// The notes file of a campaign folder.
pub fn path_in(folder: &Path) -> PathBuf {
    folder.join(NOTES_FILE)
}

/// Parses and checks notes against the campaign's levels (chapters they may name).
pub fn parse(path: &Path, text: &str, levels: &[&Level]) -> Result<PresenterNotes, InputError> {
    let notes: PresenterNotes = level::parse_ron(path, text)?;
    let error = |needle: &str, nth: usize, message: String| Err(InputError::at(path, text, needle, nth, message));
    if notes.chapters.len() > CHAPTERS_MAX {
        return error("chapters", 0, format!("at most {CHAPTERS_MAX} chapters"));
    }
    let chapters: BTreeSet<u32> = levels.iter().map(|level| level.chapter).collect();
    let mut seen = BTreeSet::new();
    for (index, notes) in notes.chapters.iter().enumerate() {
        if !chapters.contains(&notes.chapter) {
            return error(
                "chapter:",
                index,
                format!(
                    "no level is in chapter {}; the campaign's chapters are {chapters:?}",
                    notes.chapter
                ),
            );
        }
        if !seen.insert(notes.chapter) {
            return error("chapter:", index, format!("chapter {} has notes twice", notes.chapter));
        }
        if notes.say.trim().is_empty() {
            return error("say:", index, format!("chapter {}'s notes say nothing", notes.chapter));
        }
        let words = crate::text::words(&notes.say);
        if words > NOTE_WORDS_MAX {
            return error(
                "say:",
                index,
                format!(
                    "chapter {}'s note is {words} words; at most {NOTE_WORDS_MAX}",
                    notes.chapter
                ),
            );
        }
        if notes.ask.len() > QUESTIONS_MAX || notes.ask.iter().any(|question| question.trim().is_empty()) {
            return error(
                "ask:",
                index,
                format!(
                    "chapter {} asks 0 to {QUESTIONS_MAX} questions, none blank",
                    notes.chapter
                ),
            );
        }
    }
    Ok(notes)
}

/// Loads the notes beside `levels` in `folder`; `Ok(None)` when the folder has none.
pub fn load(folder: &Path, levels: &[&Level]) -> Result<Option<PresenterNotes>, InputError> {
    let path = path_in(folder);
    if !path.is_file() {
        return Ok(None);
    }
    let text = std::fs::read_to_string(&path)
        .map_err(|error| InputError::new(&path, None, format!("cannot read: {error}")))?;
    parse(&path, &text, levels).map(Some)
}
