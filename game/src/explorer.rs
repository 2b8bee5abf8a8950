//! "Ask the explorer" (the sandbox): `twice_world::explore` — the automatic heist crew —
//! searches the level with the guards the player set, on its own thread, with a progress
//! bar. A find is shrunk, written as a tape in the player's tapes folder and opened in the
//! replay viewer, where it plays like any other tape.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;

use bevy::prelude::*;
use twice_world::explore::{ExploreError, Explorer, Outcome, Progress};
use twice_world::level::{self, LoadedLevel};
use twice_world::runtime::guards::Guards;
use twice_world::text::counted;

use crate::paths::{GamePaths, relative_path};
use crate::session::Intent;

/// Schedules one request tries at most: a heist behind a missing guard shows up within a few
/// thousand; the vault, every guard on, gives up after this many (about ten seconds here).
pub const EXPLORER_SCHEDULES: u64 = 100_000;

pub(super) fn plugin(app: &mut App) {
    app.add_message::<ExplorerIntent>();
    app.init_resource::<ExplorerRun>();
    app.add_systems(Update, (apply_explorer_intents, poll_explorer).chain());
}

/// What the sandbox asks of the explorer.
#[derive(Message, Clone, Debug)]
pub enum ExplorerIntent {
    Start {
        /// Boxed: a level is large, a cancel is nothing.
        level: Box<LoadedLevel>,
        guards: Guards,
        seed: u64,
    },
    Cancel,
}

/// The explorer's state, for the sandbox to draw.
#[derive(Debug, Default, Resource)]
pub struct ExplorerRun {
    job: Option<ExplorerJob>,
    /// How the last request ended, for the player.
    pub last: Option<ExplorerReport>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct ExplorerReport {
    pub text: String,
    pub problem: bool,
}

/// Why a search ended without an answer, or its find was not saved.
#[derive(Debug, thiserror::Error)]
pub enum ExplorerError {
    /// The search itself failed (boxed: the search's error is large, and this one is passed
    /// back from the explorer's thread on every search).
    #[error(transparent)]
    Search(Box<ExploreError>),
    #[error("cannot start the explorer's thread: {0}")]
    Thread(#[source] std::io::Error),
    #[error("the explorer's thread panicked")]
    Panicked,
    #[error("cannot create {}: {source}", folder.display())]
    Folder {
        folder: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{} holds {EXPLORED_TAPES_MAX} explored tapes of this level already", folder.display())]
    Full { folder: PathBuf },
    #[error("cannot write {}: {source}", path.display())]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

impl From<ExploreError> for ExplorerError {
    fn from(error: ExploreError) -> ExplorerError {
        ExplorerError::Search(Box::new(error))
    }
}

/// The most tapes of one level and seed the explorer writes before it asks for a clear-out.
const EXPLORED_TAPES_MAX: u32 = 999;

#[derive(Debug)]
struct ExplorerJob {
    level_title: String,
    cancel: Arc<AtomicBool>,
    progress: Arc<Mutex<Option<Progress>>>,
    handle: Option<JoinHandle<Result<Finished, ExplorerError>>>,
}

#[derive(Debug)]
enum Finished {
    Found {
        tape: PathBuf,
        actions: usize,
        outcome: Outcome,
    },
    Nothing {
        outcome: Outcome,
    },
}

impl ExplorerRun {
    pub fn is_running(&self) -> bool {
        self.job.is_some()
    }

    /// The level being explored and the latest progress report, while a search runs.
    pub fn progress(&self) -> Option<(&str, Option<Progress>)> {
        self.job.as_ref().map(|job| {
            let progress = *job.progress.lock().unwrap_or_else(PoisonError::into_inner);
            (job.level_title.as_str(), progress)
        })
    }
}

fn apply_explorer_intents(
    mut intents: MessageReader<ExplorerIntent>,
    mut run: ResMut<ExplorerRun>,
    paths: Res<GamePaths>,
) {
    for intent in intents.read() {
        match intent {
            ExplorerIntent::Start { level, guards, seed } => {
                if run.is_running() {
                    run.last = Some(ExplorerReport {
                        text: "The explorer is already searching: cancel it first.".into(),
                        problem: true,
                    });
                    continue;
                }
                run.last = None;
                run.job = Some(start((**level).clone(), *guards, *seed, paths.tapes_folder()));
            }
            ExplorerIntent::Cancel => {
                if let Some(job) = &run.job {
                    job.cancel.store(true, Ordering::Relaxed);
                }
            }
        }
    }
}

fn start(loaded: LoadedLevel, guards: Guards, seed: u64, tapes: PathBuf) -> ExplorerJob {
    let cancel = Arc::new(AtomicBool::new(false));
    let progress = Arc::new(Mutex::new(None));
    let level_title = loaded.level.title.clone();
    let handle = {
        let cancel = Arc::clone(&cancel);
        let progress = Arc::clone(&progress);
        std::thread::Builder::new()
            .name("explorer".into())
            .spawn(move || {
                // One job: the window's frames need the other core.
                let explorer = Explorer::new(loaded.level.clone(), guards, seed)
                    .schedules(EXPLORER_SCHEDULES)
                    .jobs(1);
                let report = |latest: Progress| {
                    *progress.lock().unwrap_or_else(PoisonError::into_inner) = Some(latest);
                };
                let outcome = explorer.run(&report, &cancel)?;
                match &outcome.found {
                    Some(found) => {
                        let path = write_tape(&tapes, &loaded, seed, |level_file, title| {
                            found.to_tape(level_file, title)
                        })?;
                        Ok(Finished::Found {
                            tape: path,
                            actions: found.actions.len(),
                            outcome,
                        })
                    }
                    None => Ok(Finished::Nothing { outcome }),
                }
            })
            .map_err(ExplorerError::Thread)
    };
    match handle {
        Ok(handle) => ExplorerJob {
            level_title,
            cancel,
            progress,
            handle: Some(handle),
        },
        Err(problem) => {
            // The job finishes at once with the problem, through the same path as any other end.
            let handle = std::thread::spawn(move || Err(problem));
            ExplorerJob {
                level_title,
                cancel,
                progress,
                handle: Some(handle),
            }
        }
    }
}

/// Writes the find as `explored-<level id>-seed<seed>[-N].tape.ron` in the tapes folder,
/// never over an existing file.
fn write_tape(
    tapes: &Path,
    loaded: &LoadedLevel,
    seed: u64,
    tape: impl Fn(&str, &str) -> level::Tape,
) -> Result<PathBuf, ExplorerError> {
    std::fs::create_dir_all(tapes).map_err(|source| ExplorerError::Folder {
        folder: tapes.to_path_buf(),
        source,
    })?;
    let stem = format!("explored-{}-seed{seed}", loaded.level.id);
    let path = (1..=EXPLORED_TAPES_MAX)
        .map(|number| {
            let suffix = if number == 1 {
                String::new()
            } else {
                format!("-{number}")
            };
            tapes.join(format!("{stem}{suffix}{}", twice_world::campaign::TAPE_SUFFIX))
        })
        .find(|candidate| !candidate.exists())
        .ok_or_else(|| ExplorerError::Full {
            folder: tapes.to_path_buf(),
        })?;
    let level_file = relative_path(tapes, &loaded.path).display().to_string();
    let title = format!("{} — found by the explorer (seed {seed})", loaded.level.title);
    let text = level::tape_to_ron(&tape(&level_file, &title));
    std::fs::write(&path, text).map_err(|source| ExplorerError::Write {
        path: path.clone(),
        source,
    })?;
    Ok(path)
}

fn poll_explorer(mut run: ResMut<ExplorerRun>, mut intents: MessageWriter<Intent>) {
    let finished = run
        .job
        .as_ref()
        .and_then(|job| job.handle.as_ref())
        .is_some_and(JoinHandle::is_finished);
    if !finished {
        return;
    }
    let mut job = run.job.take().expect("checked above");
    let result = job
        .handle
        .take()
        .expect("checked above")
        .join()
        .unwrap_or(Err(ExplorerError::Panicked));
    run.last = Some(match result {
        Ok(Finished::Found { tape, actions, outcome }) => {
            intents.write(Intent::OpenTape {
                path: tape.clone(),
                at_phase: None,
            });
            ExplorerReport {
                text: found_text(
                    outcome.schedules_run,
                    outcome.schedules_per_second(),
                    actions,
                    &tape.display().to_string(),
                ),
                problem: false,
            }
        }
        Ok(Finished::Nothing { outcome }) if outcome.cancelled => ExplorerReport {
            text: format!(
                "Cancelled after {}: no heist found.",
                counted(outcome.schedules_run, "schedule", "schedules")
            ),
            problem: false,
        },
        Ok(Finished::Nothing { outcome }) => ExplorerReport {
            text: format!(
                "No heist in {} ({:.0}/s): with these guards, every schedule of these cards was stopped.",
                counted(outcome.schedules_run, "schedule", "schedules"),
                outcome.schedules_per_second()
            ),
            problem: false,
        },
        Err(problem) => ExplorerReport {
            text: format!("The explorer stopped: {problem}"),
            problem: true,
        },
    });
}

/// What the explorer found, in words: the schedules searched and the moves the heist
/// shrank to, each counted in words.
fn found_text(schedules: u64, schedules_per_second: f64, moves: usize, tape: &str) -> String {
    format!(
        "Found a heist after {} ({schedules_per_second:.0}/s), shrunk to {}: {tape}",
        counted(schedules, "schedule", "schedules"),
        counted(moves as u64, "move", "moves")
    )
}

#[cfg(test)]
mod tests {
    use super::{ExplorerError, found_text, write_tape};

    #[test]
    fn a_tapes_folder_that_cannot_be_made_is_named() {
        let scratch = tempfile::tempdir().expect("temp dir");
        let not_a_folder = scratch.path().join("tapes");
        std::fs::write(&not_a_folder, "a file where the folder goes").expect("write");
        let levels = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../levels");
        let loaded = twice_world::level::load_level(&levels.join("01-naive-retry.level.ron")).expect("level 1");
        let error = write_tape(&not_a_folder, &loaded, 7, |_, _| unreachable!("no tape is made"))
            .expect_err("a file is not a folder");
        assert!(matches!(&error, ExplorerError::Folder { folder, .. } if *folder == not_a_folder));
        let shown = error.to_string();
        assert!(
            shown.starts_with(&format!("cannot create {}: ", not_a_folder.display())),
            "{shown}"
        );
        assert!(std::error::Error::source(&error).is_some(), "the I/O error is kept");
    }

    #[test]
    fn the_found_heist_counts_its_moves_in_words() {
        assert_eq!(
            found_text(1, 3.0, 1, "a.ron"),
            "Found a heist after 1 schedule (3/s), shrunk to 1 move: a.ron"
        );
        assert_eq!(
            found_text(40, 12.4, 3, "b.ron"),
            "Found a heist after 40 schedules (12/s), shrunk to 3 moves: b.ron"
        );
    }
}
