//! "Take it home": the run a player just played, in the game or the browser, as the cargo
//! project `twice-sim export` writes ([`crate::export`]) — a program against `twice-runtime`'s
//! public API that prints the verdict the simulator gave — with the level and the run's tape
//! beside it, so `twice-sim replay` from the project's folder gives the same verdict.

use std::path::PathBuf;

use crate::export::{self, ExportError, Files, RuntimeDependency};
use crate::level::{self, LoadedTape, TimedAction};
use crate::play_session::{PlaySession, SessionError};

/// The project of one played run, in memory: written by the game into a new folder, sent by
/// the browser as one archive.
#[derive(Clone, Debug)]
pub struct Project {
    /// The level file's name without `.level.ron` (`01-naive-retry`): the folder's and the
    /// archive's name.
    pub stem: String,
    /// The level's id and title, for what the screens say.
    pub level_id: String,
    pub level_title: String,
    /// Every file, by path inside the project's folder.
    pub files: Files,
}

/// Why the run cannot be taken home.
#[derive(Debug, thiserror::Error)]
pub enum TakeHomeError {
    /// The run could not be played to its end again to write its tape.
    #[error("the run could not be replayed to its end: {0}")]
    Session(#[from] SessionError),
    /// The export refused the run: the sentence `twice-sim export` prints.
    #[error("{0}")]
    Export(#[from] ExportError),
    /// The level's file is not at hand to write beside the program.
    #[error("the file of level {level} is not at hand to write beside the program")]
    NoLevelText { level: String },
}

impl TakeHomeError {
    /// Why, in a sentence, for a button's hover: the export's own words for a refused tape (as
    /// `twice-sim export` prints them after the tape's file name), else the whole error.
    pub fn why(&self) -> String {
        match self {
            TakeHomeError::Export(ExportError::NotExpressible { reason, .. }) => export::why_not_words(reason),
            TakeHomeError::Export(ExportError::Simulation { detail, .. }) => detail.clone(),
            TakeHomeError::Session(_) | TakeHomeError::NoLevelText { .. } => self.to_string(),
        }
    }
}

/// The tape file a project holds: `01-naive-retry.played.tape.ron`.
pub fn tape_file_name(stem: &str) -> String {
    format!("{stem}.played.tape.ron")
}

/// The project of the run in `session`, played to its end as a tape records it (the moves the
/// player made, the guards in force, the seed): `Cargo.toml`, `src/`, and beside them the
/// level file (as the session loaded it) and the run's tape (naming the level beside it).
///
/// # Errors
///
/// [`TakeHomeError`] when the run cannot be re-simulated or exported, with why.
pub fn project(session: &PlaySession, runtime: &RuntimeDependency) -> Result<Project, TakeHomeError> {
    project_with_level(session, &session.recipe.level.text, runtime)
}

/// [`project`], for a session whose level was opened from a parsed level without its file's
/// text (the browser's room keeps its catalogue parsed): `level_text` is the file.
///
/// # Errors
///
/// As [`project`]; [`TakeHomeError::NoLevelText`] when `level_text` is empty (the tape beside
/// the program would name a level that is not there).
pub fn project_with_level(
    session: &PlaySession,
    level_text: &str,
    runtime: &RuntimeDependency,
) -> Result<Project, TakeHomeError> {
    let loaded_level = &session.recipe.level;
    if level_text.trim().is_empty() {
        return Err(TakeHomeError::NoLevelText {
            level: loaded_level.level.id.to_string(),
        });
    }
    let level_file = loaded_level
        .path
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_else(|| format!("{}.level.ron", loaded_level.level.id));
    let stem = level_file.strip_suffix(".level.ron").unwrap_or(&level_file).to_owned();
    let title = &loaded_level.level.title;
    let tape = session.tape(
        level_file.clone(),
        format!("{title} — played in the {}", session.mode.name()),
    )?;
    let tape_file = tape_file_name(&stem);
    let text = format!(
        "// Played in Twice and taken home: {title} (level {}).\n{}\n",
        loaded_level.level.id,
        level::tape_to_ron(&tape)
    );
    let loaded = LoadedTape {
        path: PathBuf::from(&tape_file),
        text: text.clone(),
        tape,
        level: loaded_level.clone(),
    };
    let mut files = export::export(&loaded, runtime)?;
    files.push((PathBuf::from(&level_file), level_text.to_owned()));
    files.push((PathBuf::from(tape_file), text));
    Ok(Project {
        stem,
        level_id: loaded_level.level.id.to_string(),
        level_title: title.to_string(),
        files,
    })
}

/// Why the run in `session` cannot be exported, if its level and the moves `played` (its
/// simulation's, passed in by a caller that holds the simulation) already say so — no
/// re-simulation, so cheap enough to ask on every view of a debrief. [`project`] plays the run
/// again and may still refuse it (a move that no longer meets what it hit).
pub fn why_not(session: &PlaySession, played: &[TimedAction]) -> Option<String> {
    let tape = session.recipe.tape(session.mode, played, String::new(), String::new());
    let loaded = LoadedTape {
        path: PathBuf::new(),
        text: String::new(),
        tape,
        level: session.recipe.level.clone(),
    };
    export::why_not(&loaded).map(|reason| export::why_not_words(&reason))
}

/// The line that builds and runs a project written to `folder`.
pub fn run_command(folder: &std::path::Path) -> String {
    format!("cd {} && cargo run", shell_word(&folder.display().to_string()))
}

/// `word` as one word of a POSIX shell: quoted only when it has to be.
fn shell_word(word: &str) -> String {
    let plain = word
        .chars()
        .all(|character| character.is_ascii_alphanumeric() || "/._-+:,@".contains(character));
    if plain && !word.is_empty() {
        word.to_owned()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}
