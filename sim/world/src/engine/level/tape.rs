//! Tapes and reading level and tape files: parsing with positions, loading, writing.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize, de::DeserializeOwned};

use super::validate::{validate_level, validate_tape};
use super::{FILE_BYTES_MAX, Level};
use crate::cards::{Play, PlayVersion1, TAPE_VERSION, WireRule};
use crate::error::InputError;
use crate::outcome::Expectation;
use crate::runtime::guards::Guards;

/// A move at a point of the simulation: before phase `at_phase` runs.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TimedAction {
    pub at_phase: u32,
    pub play: Play,
    /// The move is meant to fizzle (an attempt the tape shows being refused). Otherwise a
    /// replay reports a move that fizzles, or that the run went quiet before, at its line.
    #[serde(default, skip_serializing_if = "is_false")]
    pub fizzles: bool,
}

fn is_false(value: &bool) -> bool {
    !*value
}

/// A recorded game: a level, a seed, the player's timed moves, and the verdict expected.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Tape {
    /// The tape format: 1 (wire cards armed the next message) or 2 (they act on the wire now).
    #[serde(default = "first_tape_version")]
    pub version: u32,
    /// The level file, relative to the tape's folder.
    pub level: String,
    pub seed: u64,
    #[serde(default)]
    pub title: String,
    /// Guards as the player toggled them in the sandbox; `None`: as the level says.
    #[serde(default)]
    pub guards: Option<Guards>,
    #[serde(default)]
    pub actions: Vec<TimedAction>,
    pub expect: Expectation,
}

fn first_tape_version() -> u32 {
    1
}

impl Tape {
    /// The rule its wire cards were recorded under.
    pub fn wire_rule(&self) -> WireRule {
        WireRule::of_version(self.version)
    }
}

/// Only the version of a tape file, read before the rest (other fields are skipped).
#[derive(Deserialize)]
struct TapeVersionOnly {
    #[serde(default = "first_tape_version")]
    version: u32,
}

/// A tape as format version 1 stored it.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TapeVersion1 {
    #[serde(default = "first_tape_version")]
    version: u32,
    level: String,
    seed: u64,
    #[serde(default)]
    title: String,
    #[serde(default)]
    guards: Option<Guards>,
    #[serde(default)]
    actions: Vec<TimedActionVersion1>,
    expect: Expectation,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TimedActionVersion1 {
    at_phase: u32,
    play: PlayVersion1,
}

/// Parses a tape of either format: version 1 moves are read as they were written and keep
/// their version, so they replay by the rule they were recorded under.
pub fn parse_tape(path: &Path, text: &str) -> Result<Tape, InputError> {
    parse_tape_of_any_version(path, text).map_err(|error| match file_kind(path, text) {
        Some(FileKind::Level) => InputError::new(
            path,
            None,
            "this is a level file (it has an `id`; a tape names its `level` and holds its moves and `expect`): \
             give it where a level goes, and here a *.tape.ron",
        ),
        _ => error,
    })
}

fn parse_tape_of_any_version(path: &Path, text: &str) -> Result<Tape, InputError> {
    let version = parse_ron::<TapeVersionOnly>(path, text)?.version;
    match version {
        1 => {
            let old: TapeVersion1 = parse_ron(path, text)?;
            Ok(Tape {
                version: old.version,
                level: old.level,
                seed: old.seed,
                title: old.title,
                guards: old.guards,
                actions: old
                    .actions
                    .into_iter()
                    .map(|action| TimedAction {
                        at_phase: action.at_phase,
                        play: action.play.into(),
                        fizzles: false,
                    })
                    .collect(),
                expect: old.expect,
            })
        }
        TAPE_VERSION => parse_ron(path, text),
        other => Err(InputError::at(
            path,
            text,
            "version",
            0,
            format!("tape format version {other} is not one this twice-sim reads (1 and {TAPE_VERSION})"),
        )),
    }
}

/// Which of the two files a text is, told by its top-level fields (whatever else is wrong
/// with it), or else by its name; `None`: neither can be told.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum FileKind {
    Level,
    Tape,
}

/// The top-level fields that tell a level (`id`) from a tape (`level`, `expect`).
#[derive(Deserialize)]
struct FileShape {
    #[serde(default)]
    id: Option<serde::de::IgnoredAny>,
    #[serde(default)]
    level: Option<serde::de::IgnoredAny>,
    #[serde(default)]
    expect: Option<serde::de::IgnoredAny>,
}

fn file_kind(path: &Path, text: &str) -> Option<FileKind> {
    if let Ok(shape) = ron_options().from_str::<FileShape>(text) {
        match (shape.id.is_some(), shape.level.is_some() || shape.expect.is_some()) {
            (true, false) => return Some(FileKind::Level),
            (false, true) => return Some(FileKind::Tape),
            _ => {}
        }
    }
    let name = path.file_name()?.to_str()?;
    if name.ends_with(super::LEVEL_SUFFIX) {
        Some(FileKind::Level)
    } else if name.ends_with(super::TAPE_SUFFIX) {
        Some(FileKind::Tape)
    } else {
        None
    }
}

/// A level loaded from its file, with its text (for locating later problems).
#[derive(Clone, Debug)]
pub struct LoadedLevel {
    pub path: PathBuf,
    pub text: String,
    pub level: Level,
}

/// A tape loaded with the level it names.
#[derive(Clone, Debug)]
pub struct LoadedTape {
    pub path: PathBuf,
    pub text: String,
    pub tape: Tape,
    pub level: LoadedLevel,
}

fn ron_options() -> ron::Options {
    ron::Options::default().with_default_extension(ron::extensions::Extensions::IMPLICIT_SOME)
}

fn read_text(path: &Path) -> Result<String, InputError> {
    let metadata =
        std::fs::metadata(path).map_err(|error| InputError::new(path, None, format!("cannot read: {error}")))?;
    if metadata.len() > FILE_BYTES_MAX {
        return Err(InputError::new(
            path,
            None,
            format!("{} bytes, more than the {FILE_BYTES_MAX} a file may be", metadata.len()),
        ));
    }
    std::fs::read_to_string(path).map_err(|error| InputError::new(path, None, format!("cannot read: {error}")))
}

/// Parses RON text into `T`, with the file, line and column of any error.
pub fn parse_ron<T: DeserializeOwned>(path: &Path, text: &str) -> Result<T, InputError> {
    ron_options().from_str(text).map_err(|error| {
        InputError::new(
            path,
            Some((error.position.line, error.position.col)),
            error.code.to_string(),
        )
    })
}

/// Serializes to pretty RON (what the game writes when it saves a tape).
pub fn to_ron<T: Serialize>(value: &T) -> String {
    let config = ron::ser::PrettyConfig::new().struct_names(false).depth_limit(6);
    ron::ser::to_string_pretty(value, config).expect("tapes and levels serialize")
}

/// A tape as its file holds it: one line per move, so a tape reads as a list of moves.
pub fn tape_to_ron(tape: &Tape) -> String {
    let config = ron::ser::PrettyConfig::new().struct_names(false).depth_limit(2);
    ron::ser::to_string_pretty(tape, config).expect("tapes serialize")
}

pub fn parse_level(path: &Path, text: &str) -> Result<Level, InputError> {
    let level: Level = parse_ron(path, text).map_err(|error| match file_kind(path, text) {
        Some(FileKind::Tape) => InputError::new(
            path,
            None,
            "this is a tape (it names its `level` and holds moves and an `expect`), not a level file: \
             give it where a tape goes, and here a *.level.ron",
        ),
        _ => error,
    })?;
    validate_level(path, text, &level)?;
    Ok(level)
}

pub fn load_level(path: &Path) -> Result<LoadedLevel, InputError> {
    let text = read_text(path)?;
    let level = parse_level(path, &text)?;
    Ok(LoadedLevel {
        path: path.to_path_buf(),
        text,
        level,
    })
}

pub fn load_tape(path: &Path) -> Result<LoadedTape, InputError> {
    let text = read_text(path)?;
    let tape = parse_tape(path, &text)?;
    let level_path = path.parent().unwrap_or(Path::new(".")).join(&tape.level);
    if !level_path.is_file() {
        return Err(InputError::at(
            path,
            &text,
            "level",
            0,
            format!(
                "the tape's level `{}` does not exist (looked for {})",
                tape.level,
                level_path.display()
            ),
        ));
    }
    let level = load_level(&level_path)?;
    validate_tape(path, &text, &tape, &level.level)?;
    Ok(LoadedTape {
        path: path.to_path_buf(),
        text,
        tape,
        level,
    })
}

/// Every `*.tape.ron` (or `*.level.ron`) below `path`, sorted; `path` itself if it is a file.
pub fn files_below(path: &Path, suffix: &str) -> Result<Vec<PathBuf>, InputError> {
    if path.is_file() {
        return Ok(vec![path.to_path_buf()]);
    }
    if !path.is_dir() {
        return Err(InputError::new(path, None, "no such file or folder"));
    }
    let mut found = Vec::new();
    let mut folders = vec![path.to_path_buf()];
    while let Some(folder) = folders.pop() {
        let entries = std::fs::read_dir(&folder).map_err(|error| InputError::new(&folder, None, error.to_string()))?;
        for entry in entries {
            let entry = entry.map_err(|error| InputError::new(&folder, None, error.to_string()))?;
            let entry_path = entry.path();
            if entry_path.is_dir() {
                folders.push(entry_path);
            } else if entry_path.to_string_lossy().ends_with(suffix) {
                found.push(entry_path);
            }
        }
    }
    found.sort();
    Ok(found)
}
