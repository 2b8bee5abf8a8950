//! `twice-sim export`: a level and one of its tapes as a small standalone cargo project
//! against `twice-runtime`'s public API — the bridge from a level to a developer's own agent.
//!
//! The program is written to be read: the level's tools declared as a developer declares
//! them ([`source`]), its guards, a fake billing that behaves as the level's world
//! (`program/billing.rs`), the library's own worker machine and executor stepped by a small
//! driver (`program/play.rs`), and a schedule ([`schedule`]): which worker takes its next
//! step and which fault happens, in the order the simulator's run of the tape took them (the
//! expected run the runtime protocol plays too, [`crate::expected`]). `cargo run`
//! prints the verdict from its own billing, in the words [`verdict::lines`] gives the
//! simulator's billing, so a test can compare them.
//!
//! Which tapes cannot be exported, and why, is the runtime protocol's list
//! ([`crate::expressible`]): the program drives the library as any driver
//! does, with no simulator inside.

mod schedule;
mod source;
pub mod verdict;
mod write;

pub use write::{NUMBERED_FOLDERS_MAX, WriteError, write_new_folder, write_project};

use std::path::{Path, PathBuf};

use crate::expected::{ExpectedError, expected_run};
use crate::expressible::{self, Reason};
use crate::level::{LoadedTape, Play};

/// Why a tape cannot be exported.
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    /// The program could not play it: the reason, as the runtime protocol gives it.
    #[error("{} cannot be exported: {}", .tape.display(), why_not_words(.reason))]
    NotExpressible { tape: PathBuf, reason: Reason },
    /// The simulator could not run the tape.
    #[error("{} cannot be exported: {detail}", .tape.display())]
    Simulation { tape: PathBuf, detail: String },
}

/// Why a tape cannot be exported, in a sentence: the runtime protocol's reason, as it stands
/// for a program that drives the library in-process.
pub fn why_not_words(reason: &Reason) -> String {
    match reason {
        Reason::DeclaresTool => "the tape rewrites a tool's declaration before Penny's first call (the DeclareTool \
                                 card); the exported program declares the level's tools as the level writes them"
            .to_owned(),
        Reason::OperatorMove => "the tape has an operator undo a call (a compensation); the exported program's \
                                 operator only resolves calls (the library's `operator::compensate` needs a \
                                 compensation target over billing, which it does not have)"
            .to_owned(),
        Reason::ScriptedOperator => "the level's scripted operator (an honest operator or an auditor) settles or \
                                     undoes calls; the exported program has no operator"
            .to_owned(),
        Reason::OperationNotServed { tool, operation } => format!(
            "the level's tool `{tool}` runs `{operation}`, which the exported program's fake billing does not serve"
        ),
        Reason::FaultNotDriven { card } => format!(
            "the tape plays {card}; the exported program's schedule neither stops a worker nor holds a request at \
             billing"
        ),
        Reason::ParallelCalls { run } => format!(
            "run {run} asks for several calls in one model turn; the exported program's model answers one call \
             at a time"
        ),
        Reason::MovesDoNotPlay { .. } => reason.explain(),
    }
}

/// The files of the exported project, by path inside its folder.
pub type Files = Vec<(PathBuf, String)>;

/// Where the library is in the repository this crate was built from.
pub const RUNTIME_PATH: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../runtime");

/// The library's version, for the `Cargo.toml` comment and a dependency by version.
pub const RUNTIME_VERSION: &str = env!("CARGO_PKG_VERSION");

/// Where the exported `Cargo.toml` takes `twice-runtime` from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RuntimeDependency {
    /// A folder holding the library's `Cargo.toml`: the repository's `sim/runtime`.
    Path(PathBuf),
    /// The library by version ([`RUNTIME_VERSION`]), from the developer's registry: what a
    /// Twice built away from its repository (or whose repository is gone) can name.
    Version,
}

impl RuntimeDependency {
    /// The repository's runtime when the program exporting was built from a checkout that is
    /// still there (`twice-sim`, the game or the browser run from the repository: the project
    /// builds against exactly the library the level was played with); else the version.
    pub fn here() -> RuntimeDependency {
        let folder = Path::new(RUNTIME_PATH);
        if folder.join("Cargo.toml").is_file() {
            RuntimeDependency::Path(std::fs::canonicalize(folder).unwrap_or_else(|_| folder.to_path_buf()))
        } else {
            RuntimeDependency::Version
        }
    }
}

/// The project for `tape` (its level is `tape.level`): `Cargo.toml`, `src/main.rs` and the
/// modules it uses. `runtime` says where its `Cargo.toml` takes `twice-runtime` from.
///
/// # Errors
///
/// [`ExportError`] when the tape cannot be exported, with why.
pub fn export(tape: &LoadedTape, runtime: &RuntimeDependency) -> Result<Files, ExportError> {
    if let Some(reason) = why_not(tape) {
        return Err(ExportError::NotExpressible {
            tape: tape.path.clone(),
            reason,
        });
    }
    let level = &tape.level.level;
    let guards = tape.tape.guards.unwrap_or(level.guards);
    let expected = expected_run(tape, guards).map_err(|error| match error {
        ExpectedError::MovesDoNotPlay(fizzled) => ExportError::NotExpressible {
            tape: tape.path.clone(),
            reason: Reason::MovesDoNotPlay { fizzled },
        },
        ExpectedError::Simulation(detail) => ExportError::Simulation {
            tape: tape.path.clone(),
            detail,
        },
    })?;
    let name = package_name(tape);
    Ok(vec![
        (PathBuf::from("Cargo.toml"), source::cargo_toml(&name, guards, runtime)),
        (PathBuf::from("src/main.rs"), source::main_rs(tape)),
        (PathBuf::from("src/level.rs"), source::level_rs(level, guards)),
        (
            PathBuf::from("src/schedule.rs"),
            schedule::schedule_rs(&expected, level),
        ),
        (
            PathBuf::from("src/billing.rs"),
            include_str!("program/billing.rs").to_owned(),
        ),
        (
            PathBuf::from("src/model.rs"),
            include_str!("program/model.rs").to_owned(),
        ),
        (PathBuf::from("src/play.rs"), include_str!("program/play.rs").to_owned()),
        (
            PathBuf::from("src/records.rs"),
            include_str!("program/records.rs").to_owned(),
        ),
        (
            PathBuf::from("src/verdict.rs"),
            include_str!("program/verdict.rs").to_owned(),
        ),
    ])
}

/// Why `tape` cannot be exported, if it cannot, in the runtime protocol's reasons: unlike a
/// protocol runtime, the exported program has the library's operator console in-process (it
/// resolves calls) and a fake billing that sends emails, changes owners and deletes records.
pub fn why_not(tape: &LoadedTape) -> Option<Reason> {
    let level = &tape.level.level;
    if level.honest_operator.is_some() || level.auditor.is_some() {
        return Some(Reason::ScriptedOperator);
    }
    // The program's model answers one call a turn, as protocol 1's does.
    if let Some(reason) = expressible::parallel_calls(tape) {
        return Some(reason);
    }
    let plays = || tape.tape.actions.iter().map(|action| &action.play);
    if plays().any(|play| matches!(play, Play::DeclareTool { .. })) {
        return Some(Reason::DeclaresTool);
    }
    // An operator's resolve is the library's `operator::resolve`; a compensation needs a
    // compensation target over the fake billing, which the program does not have.
    if plays().any(|play| matches!(play, Play::OperatorCompensate { .. })) {
        return Some(Reason::OperatorMove);
    }
    expressible::fault_not_driven(tape)
}

/// `twice-01-naive-retry-win`: the level's id and the tape's name, as a cargo package name.
pub fn package_name(tape: &LoadedTape) -> String {
    let file = tape
        .path
        .file_name()
        .and_then(|name| name.to_str())
        .unwrap_or("tape")
        .trim_end_matches(".tape.ron");
    let tape_name = file.rsplit_once('.').map_or(file, |(_, name)| name);
    let raw = format!("twice-{}-{tape_name}", tape.level.level.id);
    raw.chars()
        .map(|character| {
            if character.is_ascii_alphanumeric() {
                character.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect()
}
