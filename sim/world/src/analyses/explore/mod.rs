//! The explorer, the automatic heist crew: it deals random fault schedules from a level's
//! hand, simulates each, stops at the first that reaches the level's goal, and shrinks that
//! schedule to a minimal tape (fewest actions, then earliest phases).
//!
//! Schedule `i` is a pure function of `(seed, i)`: its cards, phases and simulation seed come
//! from a ChaCha stream numbered `i` under the explorer's seed. Workers take indices in order,
//! and the explorer reports the lowest index that reached the goal, so a seed gives the same
//! find with one job or sixty-four. Shrinking is sequential and deterministic too.
//!
//! The only clock here is the driver's [`Instant`], for figures and progress; the simulations
//! themselves never see it. Each simulation keeps its ledger in memory.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use crate::checker::{self, Verdict};
use crate::ledger::{LedgerError, LedgerStore};
use crate::level::{Expectation, Level, Tape, TimedAction};
use crate::runtime::guards::Guards;
use crate::simulator::SimError;

mod dealer;
mod schedule;
mod shrink;

pub use dealer::Dealer;

use schedule::ScheduleSpace;

/// The most schedules one exploration may try.
pub const SCHEDULES_MAX: u64 = 100_000_000;
/// The most worker threads one exploration may use.
pub const JOBS_MAX: usize = 64;
/// The most remove-then-move rounds the shrinker runs; each round that changes nothing ends
/// it sooner, and every round only ever makes the tape smaller or earlier.
pub const SHRINK_ROUNDS_MAX: u32 = 32;
/// How often the driver reports progress while the workers search.
pub const PROGRESS_INTERVAL: Duration = Duration::from_millis(200);

/// The wall clock, read only by the explorer's driver for its figures and progress reports:
/// the one place in twice-world allowed to, since no simulation ever sees what it returns.
#[expect(
    clippy::disallowed_methods,
    reason = "the driver's figures and progress, never an input to a simulation"
)]
fn driver_clock() -> Instant {
    Instant::now()
}
/// Extra phases past a quiet run's end in which cards are still dealt: a fault played
/// after everything went quiet (a twin started late, an operator's decision) still acts.
pub const PHASE_SLACK: u32 = 20;
/// Why an exploration could not run.
#[derive(Debug, thiserror::Error)]
pub enum ExploreError {
    #[error("the number of schedules must be 1 to {SCHEDULES_MAX}, not {0}")]
    Schedules(u64),
    #[error("the number of jobs must be 1 to {JOBS_MAX}, not {0}")]
    Jobs(usize),
    #[error("schedule {index} (simulation seed {simulation_seed}) could not be simulated: {source}")]
    Simulation {
        index: u64,
        simulation_seed: u64,
        source: SimError,
    },
    #[error("schedule {index} (simulation seed {simulation_seed}) could not be judged: {source}")]
    Verdict {
        index: u64,
        simulation_seed: u64,
        source: LedgerError,
    },
    #[error(
        "schedule {index} reached the goal in the search but not when simulated again: the simulation is not deterministic"
    )]
    NotReproducible { index: u64 },
    #[error("an explorer worker thread panicked: {0}")]
    WorkerPanicked(String),
}

/// Where an exploration is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stage {
    /// Dealing and simulating schedules.
    Searching,
    /// Shrinking the first find; `schedules_done` counts the shrinker's simulations.
    Shrinking,
}

/// A progress report, for a progress bar.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Progress {
    pub stage: Stage,
    pub schedules_done: u64,
    /// The search's total (while shrinking too).
    pub schedules_total: u64,
    /// The lowest schedule index found to reach the goal so far, if any.
    pub lowest_find: Option<u64>,
    pub elapsed: Duration,
}

/// A schedule that reached the goal, shrunk.
#[derive(Clone, Debug)]
pub struct Found {
    /// The schedule's index: the same for a seed whatever the number of jobs.
    pub schedule_index: u64,
    /// The simulation seed the schedule (and the tape) runs with.
    pub simulation_seed: u64,
    /// The schedule as dealt, before shrinking.
    pub dealt: Vec<TimedAction>,
    /// The shrunk schedule: never longer than `dealt`, and it still reaches the goal.
    pub actions: Vec<TimedAction>,
    /// The verdict of the shrunk schedule.
    pub verdict: Verdict,
    /// The guards it ran with, as a tape stores them: `None` when they are the level's own.
    pub tape_guards: Option<Guards>,
    /// Simulations the shrinker ran.
    pub shrink_simulations: u64,
    /// The shrinker was cancelled before it finished; `actions` still reach the goal.
    pub shrink_cancelled: bool,
}

impl Found {
    /// The find as a tape that `twice-sim replay` accepts; `level_file` is the level's path
    /// relative to the folder the tape will be written to.
    pub fn to_tape(&self, level_file: &str, title: &str) -> Tape {
        Tape {
            version: crate::level::TAPE_VERSION,
            level: level_file.to_owned(),
            seed: self.simulation_seed,
            title: title.to_owned(),
            guards: self.tape_guards,
            actions: self.actions.clone(),
            expect: Expectation::of(&self.verdict),
        }
    }
}

/// What an exploration found, and its figures.
#[derive(Clone, Debug)]
pub struct Outcome {
    pub found: Option<Found>,
    /// Schedules simulated in the search (with several jobs, a few past the find).
    pub schedules_run: u64,
    pub schedules_total: u64,
    /// Time spent searching (shrinking excluded).
    pub search_elapsed: Duration,
    /// Time spent in all (search and shrink).
    pub elapsed: Duration,
    /// The caller cancelled before the search ended.
    pub cancelled: bool,
}

impl Outcome {
    /// Schedules simulated per second of search.
    pub fn schedules_per_second(&self) -> f64 {
        let seconds = self.search_elapsed.as_secs_f64();
        if seconds > 0.0 {
            self.schedules_run as f64 / seconds
        } else {
            0.0
        }
    }
}

/// The explorer: a level, the guards it runs with, a seed, and how hard to look.
#[derive(Clone, Debug)]
pub struct Explorer {
    level: Level,
    guards: Guards,
    seed: u64,
    schedules: u64,
    jobs: usize,
    store: LedgerStore,
    /// Always true but in the one test that shows what the send fence prevents.
    send_fence: bool,
}

impl Explorer {
    /// Explores `level` with `guards`; the defaults are 10,000 schedules and one job.
    pub fn new(level: Level, guards: Guards, seed: u64) -> Explorer {
        Explorer {
            level,
            guards,
            seed,
            schedules: 10_000,
            jobs: 1,
            store: LedgerStore::Memory,
            send_fence: true,
        }
    }

    /// Explores a runtime whose workers send without the send fence, as it did before it
    /// had one: only for the test that shows the explorer finds what the fence prevents.
    #[doc(hidden)]
    pub fn without_send_fence_for_tests(mut self) -> Self {
        self.send_fence = false;
        self
    }

    /// Which store holds each schedule's ledger. The memory store by default: the same answers
    /// as SQLite (the differential tests hold it to that) at a fraction of the cost; a find is
    /// confirmed by replaying its tape on SQLite anyway (`twice-sim explore` does).
    pub fn ledger_store(mut self, store: LedgerStore) -> Self {
        self.store = store;
        self
    }

    /// How many schedules to try at most (1 to [`SCHEDULES_MAX`]).
    pub fn schedules(mut self, schedules: u64) -> Self {
        self.schedules = schedules;
        self
    }

    /// How many worker threads (1 to [`JOBS_MAX`]); the result does not depend on it.
    pub fn jobs(mut self, jobs: usize) -> Self {
        self.jobs = jobs;
        self
    }

    /// Looks for this outcome instead of the level's goal (say `not_paid_but_owed`, the heist
    /// that hashed keys or a reflex compensation allow).
    pub fn goal(mut self, goal: checker::Outcome) -> Self {
        self.level.goal = goal;
        self
    }

    /// Searches, then shrinks the first find. `progress` is called on the calling thread,
    /// about every [`PROGRESS_INTERVAL`]; setting `cancel` stops the search (and the shrink)
    /// soon after. A find made before a cancel is still returned, unshrunk or partly shrunk,
    /// but it may not be the lowest index the seed would give.
    pub fn run(&self, progress: &dyn Fn(Progress), cancel: &AtomicBool) -> Result<Outcome, ExploreError> {
        if self.schedules == 0 || self.schedules > SCHEDULES_MAX {
            return Err(ExploreError::Schedules(self.schedules));
        }
        if self.jobs == 0 || self.jobs > JOBS_MAX {
            return Err(ExploreError::Jobs(self.jobs));
        }
        let started = driver_clock();
        let space =
            ScheduleSpace::new(&self.level, self.guards, self.seed, self.store)?.with_send_fence(self.send_fence);
        let search = self.search(&space, progress, cancel, started)?;
        let search_elapsed = started.elapsed();
        let found = match search.lowest_find {
            Some(index) => Some(self.shrink(&space, index, progress, cancel, started)?),
            None => None,
        };
        Ok(Outcome {
            found,
            schedules_run: search.schedules_run,
            schedules_total: self.schedules,
            search_elapsed,
            elapsed: started.elapsed(),
            cancelled: search.cancelled,
        })
    }

    fn search(
        &self,
        space: &ScheduleSpace,
        progress: &dyn Fn(Progress),
        cancel: &AtomicBool,
        started: Instant,
    ) -> Result<Search, ExploreError> {
        let next_index = AtomicU64::new(0);
        let lowest_find = AtomicU64::new(u64::MAX);
        let schedules_run = AtomicU64::new(0);
        // Set when a worker fails, so the others stop too.
        let failed = AtomicBool::new(false);
        // Counted before a worker wakes the driver, so the driver never waits a full
        // interval for a thread that is already on its way out.
        let finished = AtomicUsize::new(0);
        let driver = std::thread::current();
        let report = |stage| {
            let lowest = lowest_find.load(Ordering::Acquire);
            progress(Progress {
                stage,
                schedules_done: schedules_run.load(Ordering::Relaxed),
                schedules_total: self.schedules,
                lowest_find: (lowest != u64::MAX).then_some(lowest),
                elapsed: started.elapsed(),
            });
        };
        let results: Vec<Result<(), ExploreError>> = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..self.jobs)
                .map(|_| {
                    let driver = driver.clone();
                    let (next_index, lowest_find, schedules_run, failed, finished) =
                        (&next_index, &lowest_find, &schedules_run, &failed, &finished);
                    scope.spawn(move || {
                        let result = (|| {
                            while !cancel.load(Ordering::Relaxed) && !failed.load(Ordering::Relaxed) {
                                // Indices are taken in order, so once every index below a
                                // find is done, that find is the lowest: whatever the jobs.
                                let index = next_index.fetch_add(1, Ordering::Relaxed);
                                if index >= self.schedules || index >= lowest_find.load(Ordering::Acquire) {
                                    break;
                                }
                                let (simulation_seed, actions) = space.deal(index)?;
                                let reached = space.reaches_goal(index, simulation_seed, actions)?;
                                schedules_run.fetch_add(1, Ordering::Relaxed);
                                if reached {
                                    lowest_find.fetch_min(index, Ordering::AcqRel);
                                }
                            }
                            Ok(())
                        })();
                        if result.is_err() {
                            failed.store(true, Ordering::Relaxed);
                        }
                        // Wake the driver at once instead of at its next progress tick.
                        finished.fetch_add(1, Ordering::AcqRel);
                        driver.unpark();
                        result
                    })
                })
                .collect();
            // `is_finished` too: a worker that panicked never counts itself finished.
            while finished.load(Ordering::Acquire) < self.jobs && !handles.iter().all(|handle| handle.is_finished()) {
                report(Stage::Searching);
                std::thread::park_timeout(PROGRESS_INTERVAL);
            }
            handles
                .into_iter()
                .map(|handle| {
                    handle.join().unwrap_or_else(|panic| {
                        let text = panic
                            .downcast_ref::<String>()
                            .cloned()
                            .or_else(|| panic.downcast_ref::<&str>().map(|text| (*text).to_owned()))
                            .unwrap_or_else(|| "no message".to_owned());
                        Err(ExploreError::WorkerPanicked(text))
                    })
                })
                .collect()
        });
        // The lowest-index error, so a failing seed fails the same way every time.
        let mut errors: Vec<ExploreError> = results.into_iter().filter_map(Result::err).collect();
        errors.sort_by_key(|error| match error {
            ExploreError::Simulation { index, .. } | ExploreError::Verdict { index, .. } => *index,
            _ => u64::MAX,
        });
        if let Some(error) = errors.into_iter().next() {
            return Err(error);
        }
        report(Stage::Searching);
        let lowest = lowest_find.load(Ordering::Acquire);
        Ok(Search {
            lowest_find: (lowest != u64::MAX).then_some(lowest),
            schedules_run: schedules_run.load(Ordering::Relaxed),
            cancelled: cancel.load(Ordering::Relaxed),
        })
    }
}

struct Search {
    lowest_find: Option<u64>,
    schedules_run: u64,
    cancelled: bool,
}
