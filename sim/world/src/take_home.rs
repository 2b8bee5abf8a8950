//! "Take it home": the run a player just played, in the game or the browser, as the cargo
//! project `twice-sim export` writes ([`crate::export`]) — a program against `twice-runtime`'s
//! public API that prints the verdict the simulator gave — with the level and the run's tape
//! beside it, so `twice-sim replay` from the project's folder gives the same verdict.

use std::path::PathBuf;

use crate::export::{self, ExportError, Files, RuntimeDependency};
use crate::level::{self, LoadedTape};
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
}

impl TakeHomeError {
    /// Why, in a sentence, for a button's hover: the export's own words for a refused tape (as
    /// `twice-sim export` prints them after the tape's file name), else the whole error.
    pub fn why(&self) -> String {
        match self {
            TakeHomeError::Export(ExportError::NotExpressible { reason, .. }) => export::why_not_words(reason),
            TakeHomeError::Export(ExportError::Simulation { detail, .. }) => detail.clone(),
            TakeHomeError::Session(_) => self.to_string(),
        }
    }
}

/// The tape file a project holds: `01-naive-retry.played.tape.ron`.
pub fn tape_file_name(stem: &str) -> String {
    format!("{stem}.played.tape.ron")
}

/// The project of the run in `session`, played to its end as a tape records it (the moves the
/// player made, the guards in force, the seed): `Cargo.toml`, `src/`, and beside them the
/// level file and the run's tape (naming the level beside it).
///
/// # Errors
///
/// [`TakeHomeError`] when the run cannot be re-simulated or exported, with why.
pub fn project(session: &PlaySession, runtime: &RuntimeDependency) -> Result<Project, TakeHomeError> {
    let loaded_level = &session.recipe.level;
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
    files.push((PathBuf::from(&level_file), loaded_level.text.clone()));
    files.push((PathBuf::from(tape_file), text));
    Ok(Project {
        stem,
        level_id: loaded_level.level.id.to_string(),
        level_title: title.to_string(),
        files,
    })
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
