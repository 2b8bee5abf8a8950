//! `twice-sim export LEVEL [--tape TAPE] [--out DIR]`: the level and one of its tapes as a
//! small standalone cargo project against `twice-runtime` (`twice_world::export`). Nothing is
//! written unless everything is (`export::write_project`).

use std::path::{Path, PathBuf};

use clap::Args;

use twice_world::campaign::WIN_TAPE_SUFFIX;
use twice_world::exit::{EXIT_BAD_INPUT, EXIT_FAILED, EXIT_OK};
use twice_world::export::{self, RuntimeDependency, WriteError};
use twice_world::level::{self, LoadedTape};

#[derive(Debug, Args)]
pub struct ExportArgs {
    /// The level file (`levels/*.level.ron`).
    pub level: PathBuf,
    /// The tape to play (one of this level's). Default: the level's winning tape, the
    /// `.win.tape.ron` beside it.
    #[arg(long)]
    pub tape: Option<PathBuf>,
    /// The folder to write the project into: new, or empty. Default: `twice-LEVEL-TAPE` in the
    /// current folder.
    #[arg(long)]
    pub out: Option<PathBuf>,
}

pub fn export_command(args: &ExportArgs) -> u8 {
    match export_to(args) {
        Ok(out) => {
            println!("cd {} && cargo run", out.display());
            EXIT_OK
        }
        Err(Failure::BadInput(message)) => {
            eprintln!("error: {message}");
            EXIT_BAD_INPUT
        }
        Err(Failure::Write(message)) => {
            eprintln!("error: {message}");
            EXIT_FAILED
        }
    }
}

enum Failure {
    BadInput(String),
    Write(String),
}

fn export_to(args: &ExportArgs) -> Result<PathBuf, Failure> {
    let bad = |message: String| Failure::BadInput(message);
    let loaded_level = level::load_level(&args.level).map_err(|error| bad(error.to_string()))?;
    let tape_path = match &args.tape {
        Some(path) => path.clone(),
        None => {
            let win = win_tape_of(&args.level);
            if !win.is_file() {
                return Err(bad(format!(
                    "{}: the level has no winning tape ({} does not exist); give one of its tapes with --tape",
                    args.level.display(),
                    win.display()
                )));
            }
            println!(
                "No --tape given: exporting the level's winning tape, {}.",
                win.display()
            );
            win
        }
    };
    let tape = level::load_tape(&tape_path).map_err(|error| bad(error.to_string()))?;
    if !same_file(&tape_level_path(&tape), &args.level) {
        return Err(bad(format!(
            "{}: the tape is of level `{}`, not of {} (`{}`)",
            tape_path.display(),
            tape.tape.level,
            args.level.display(),
            loaded_level.level.id
        )));
    }
    let files = export::export(&tape, &RuntimeDependency::here()).map_err(|error| bad(error.to_string()))?;
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from(export::package_name(&tape)));
    export::write_project(&out, &files).map_err(|error| match error {
        WriteError::NotEmpty { .. } => Failure::BadInput(format!(
            "{}: --out exists and is not an empty folder; nothing was written",
            out.display()
        )),
        other => Failure::Write(other.to_string()),
    })?;
    println!(
        "Exported level {} with the tape {} to {}: {} files, a program against twice-runtime's public API.",
        loaded_level.level.id,
        tape_path.display(),
        out.display(),
        files.len()
    );
    Ok(out)
}

/// `levels/01-naive-retry.win.tape.ron` for `levels/01-naive-retry.level.ron`.
fn win_tape_of(level: &Path) -> PathBuf {
    let name = level
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_default();
    let stem = name.strip_suffix(".level.ron").unwrap_or(&name);
    level.with_file_name(format!("{stem}{WIN_TAPE_SUFFIX}"))
}

fn tape_level_path(tape: &LoadedTape) -> PathBuf {
    tape.level.path.clone()
}

fn same_file(one: &Path, other: &Path) -> bool {
    match (std::fs::canonicalize(one), std::fs::canonicalize(other)) {
        (Ok(one), Ok(other)) => one == other,
        _ => false,
    }
}
