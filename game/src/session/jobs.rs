//! Simulation work longer than a frame — rewinding, running to the end, saving a tape —
//! runs on its own thread while the window keeps drawing the state it has. The job
//! re-simulates from the seed and the moves (the simulator is deterministic), so the
//! result is the same history the player would have stepped through.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Instant;

use bevy::prelude::*;
use twice_world::checker::Outcome;
use twice_world::level::{self, Tape, TimedAction};
use twice_world::simulator::Simulation;

use super::errors::{JobError, TapeError};
use super::ledger_view::LedgerView;
use super::scratch::ScratchFile;
use super::{Recipe, Session, SessionSet};

pub(super) fn plugin(app: &mut App) {
    app.add_systems(
        Update,
        poll_job.in_set(SessionSet::Jobs).run_if(resource_exists::<Session>),
    );
}

/// How far a job runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Goal {
    /// Until this many phases have run (or the level ends first).
    Phase(u32),
    End,
}

/// What the result is for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Purpose {
    /// Replace the session's simulation (rewind, run to the end, open at a phase).
    Show,
    /// Write a tape whose expected verdict is this run's.
    SaveTape { path: PathBuf },
}

enum Finished {
    Shown {
        simulation: Box<Simulation>,
        ledger_file: Option<ScratchFile>,
        ledger: LedgerView,
    },
    Saved {
        path: PathBuf,
        outcome: Outcome,
    },
}

/// A re-simulation in flight.
#[derive(Debug)]
pub struct Job {
    pub purpose: Purpose,
    pub goal: Goal,
    pub started: Instant,
    cancelled: Arc<AtomicBool>,
    handle: Option<JoinHandle<Result<Finished, JobError>>>,
    /// Why the work never started.
    failure: Option<JobError>,
}

impl std::fmt::Debug for Finished {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Finished::Shown { .. } => formatter.write_str("Shown"),
            Finished::Saved { path, .. } => write!(formatter, "Saved({})", path.display()),
        }
    }
}

impl Job {
    /// Builds the level again with `actions` and runs it to `goal`, writing its ledger to `ledger_file`.
    pub fn show(recipe: Recipe, actions: Vec<TimedAction>, goal: Goal, ledger_file: Option<ScratchFile>) -> Job {
        Job::spawn(Purpose::Show, goal, move |cancelled| {
            let simulation = run(
                &recipe,
                actions,
                goal,
                ledger_file.as_ref().map(ScratchFile::path),
                cancelled,
            )?;
            let ledger = LedgerView::read(simulation.ledger());
            Ok(Finished::Shown {
                simulation: Box::new(simulation),
                ledger_file,
                ledger,
            })
        })
    }

    /// Runs the moves to the end in memory, then writes `tape` (its `expect` filled in) to `path`
    /// and reads it back the way `twice-sim replay` will.
    pub fn save_tape(recipe: Recipe, mut tape: Tape, path: PathBuf) -> Job {
        let purpose = Purpose::SaveTape { path: path.clone() };
        Job::spawn(purpose, Goal::End, move |cancelled| {
            let simulation = run(&recipe, tape.actions.clone(), Goal::End, None, cancelled)?;
            let verdict = simulation.verdict()?;
            tape.expect = Session::expectation(&verdict);
            if let Some(folder) = path.parent() {
                std::fs::create_dir_all(folder).map_err(|source| TapeError::Folder {
                    folder: folder.to_path_buf(),
                    source,
                })?;
            }
            let text = format!(
                "// Recorded in the game: {} (level {}).\n{}\n",
                recipe.level.level.title,
                recipe.level.level.id,
                level::tape_to_ron(&tape)
            );
            std::fs::write(&path, text).map_err(|source| JobError::Write {
                path: path.clone(),
                source,
            })?;
            level::load_tape(&path).map_err(JobError::LoadBack)?;
            Ok(Finished::Saved {
                path,
                outcome: verdict.outcome,
            })
        })
    }

    fn spawn(
        purpose: Purpose,
        goal: Goal,
        work: impl FnOnce(&AtomicBool) -> Result<Finished, JobError> + Send + 'static,
    ) -> Job {
        let cancelled = Arc::new(AtomicBool::new(false));
        let flag = cancelled.clone();
        let handle = std::thread::Builder::new()
            .name("twice-resimulate".into())
            .spawn(move || work(&flag));
        let (handle, failure) = match handle {
            Ok(handle) => (Some(handle), None),
            Err(error) => (None, Some(JobError::Thread(error))),
        };
        Job {
            purpose,
            goal,
            started: Instant::now(),
            cancelled,
            handle,
            failure,
        }
    }

    pub fn is_finished(&self) -> bool {
        self.handle.as_ref().is_none_or(JoinHandle::is_finished)
    }

    /// Stops the work at its next phase; its result (and scratch file) is thrown away.
    pub fn cancel(&mut self) {
        self.cancelled.store(true, Ordering::Relaxed);
        // Dropping the handle detaches the thread; it notices the flag and ends.
        self.handle = None;
    }

    fn take_result(&mut self) -> Result<Finished, JobError> {
        match self.handle.take() {
            Some(handle) => handle.join().unwrap_or(Err(JobError::Panicked)),
            None => Err(self.failure.take().unwrap_or(JobError::Cancelled)),
        }
    }

    pub fn describe(&self) -> String {
        let goal = match self.goal {
            Goal::Phase(phase) => format!("phase {phase}"),
            Goal::End => "the end".into(),
        };
        match &self.purpose {
            Purpose::Show => format!("re-simulating from the seed to {goal}…"),
            Purpose::SaveTape { path } => format!("playing the tape to the end to save {}…", path.display()),
        }
    }
}

impl Drop for Job {
    fn drop(&mut self) {
        self.cancelled.store(true, Ordering::Relaxed);
    }
}

fn run(
    recipe: &Recipe,
    actions: Vec<TimedAction>,
    goal: Goal,
    ledger: Option<&std::path::Path>,
    cancelled: &AtomicBool,
) -> Result<Simulation, JobError> {
    let mut simulation = recipe.build(actions, ledger)?;
    simulation.run_until(|simulation| {
        cancelled.load(Ordering::Relaxed)
            || match goal {
                Goal::Phase(phase) => simulation.phase() >= phase,
                Goal::End => false,
            }
    })?;
    if cancelled.load(Ordering::Relaxed) {
        return Err(JobError::Cancelled);
    }
    Ok(simulation)
}

/// Takes a finished job's result into the session.
fn poll_job(mut session: ResMut<Session>) {
    let Some(job) = session.job.as_mut() else {
        return;
    };
    if !job.is_finished() {
        return;
    }
    let goal = job.goal;
    let result = job.take_result();
    session.job = None;
    match result {
        Ok(Finished::Shown {
            simulation,
            ledger_file,
            ledger,
        }) => {
            let phase = simulation.phase();
            session.replace(*simulation, ledger_file, ledger);
            // The ledger panel names the file; the status line says what happened, once: a
            // run to the end is no rewind (it said "played again … your moves before it" after E).
            session.tell(match goal {
                Goal::End => format!(
                    "Ran to the end: quiet at phase {phase} (your moves played through from the seed, into a fresh ledger)."
                ),
                Goal::Phase(_) => format!(
                    "At phase {phase}: played again from the seed and your moves before it, into a fresh ledger."
                ),
            });
        }
        Ok(Finished::Saved { path, outcome }) => {
            session.tell(format!("Tape saved to {} (expects {outcome})", path.display()));
        }
        Err(error) => session.warn(error.to_string()),
    }
}
