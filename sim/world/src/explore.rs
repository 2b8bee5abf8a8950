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

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::checker::{self, Verdict};
use crate::ledger::{LedgerError, LedgerStore};
use crate::level::{CardKind, Expectation, Level, Play, Tape, TimedAction};
use crate::runtime::guards::Guards;
use crate::runtime::rules::Status;
use crate::runtime::tool::{READ_ATTEMPTS_MAX, SideEffect};
use crate::simulator::{SimError, SimulationBuilder, WORKERS_MAX};

/// The most schedules one exploration may try.
pub const SCHEDULES_MAX: u64 = 100_000_000;
/// The most worker threads one exploration may use.
pub const JOBS_MAX: usize = 64;
/// The most remove-then-move rounds the shrinker runs; each round that changes nothing ends
/// it sooner, and every round only ever makes the tape smaller or earlier.
pub const SHRINK_ROUNDS_MAX: u32 = 32;
/// How often the driver reports progress while the workers search.
pub const PROGRESS_INTERVAL: Duration = Duration::from_millis(200);
/// Extra phases past a quiet run's end in which cards are still dealt: a fault played
/// after everything went quiet (a twin started late, an operator's decision) still acts.
pub const PHASE_SLACK: u32 = 20;
/// The operators the explorer plays as: two, because two operators acting on one call is a
/// heist of its own (level 17).
const OPERATORS: [&str; 2] = ["op-crew", "op-other"];
/// What an operator card may expect the record to be: nothing (any unknown status) or any
/// status at all — a stale expectation is a move that fails, which a crew may well make.
const EXPECTATIONS: [Option<Status>; 7] = [
    None,
    Some(Status::Started),
    Some(Status::Completed),
    Some(Status::Failed),
    Some(Status::Indeterminate),
    Some(Status::Compensating),
    Some(Status::Compensated),
];

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
        let started = Instant::now();
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
                                let verdict = space.simulate(index, simulation_seed, actions)?;
                                schedules_run.fetch_add(1, Ordering::Relaxed);
                                if verdict.goal_reached {
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

    /// Delta-debugging style: drop each action that is not needed, then move each remaining
    /// action as early as it can go (never before the one ahead of it, so the tape stays in
    /// phase order), and repeat until a round changes nothing. Every step is re-simulated and
    /// kept only if the goal is still reached, so the result is never longer or later.
    fn shrink(
        &self,
        space: &ScheduleSpace,
        index: u64,
        progress: &dyn Fn(Progress),
        cancel: &AtomicBool,
        started: Instant,
    ) -> Result<Found, ExploreError> {
        let (simulation_seed, dealt) = space.deal(index)?;
        let mut simulations = 0_u64;
        let mut last_report = Instant::now();
        let mut try_actions = |actions: &[TimedAction]| -> Result<Option<Verdict>, ExploreError> {
            if cancel.load(Ordering::Relaxed) {
                return Ok(None);
            }
            simulations += 1;
            if last_report.elapsed() >= PROGRESS_INTERVAL {
                last_report = Instant::now();
                progress(Progress {
                    stage: Stage::Shrinking,
                    schedules_done: simulations,
                    schedules_total: self.schedules,
                    lowest_find: Some(index),
                    elapsed: started.elapsed(),
                });
            }
            let verdict = space.simulate(index, simulation_seed, actions.to_vec())?;
            Ok(verdict.goal_reached.then_some(verdict))
        };
        // Simulated again even after a cancel, so a find always comes with its verdict: the
        // search saw this schedule reach the goal, and the same inputs must again.
        let first = space.simulate(index, simulation_seed, dealt.clone())?;
        if !first.goal_reached {
            return Err(ExploreError::NotReproducible { index });
        }
        let mut verdict = first;
        let mut actions = dealt.clone();
        for _ in 0..SHRINK_ROUNDS_MAX {
            let mut changed = false;
            let mut position = 0;
            while position < actions.len() {
                let mut without = actions.clone();
                without.remove(position);
                match try_actions(&without)? {
                    Some(shorter) => {
                        actions = without;
                        verdict = shorter;
                        changed = true;
                    }
                    None => position += 1,
                }
            }
            for position in 0..actions.len() {
                let earliest = if position == 0 {
                    0
                } else {
                    actions[position - 1].at_phase
                };
                for phase in earliest..actions[position].at_phase {
                    let mut earlier = actions.clone();
                    earlier[position].at_phase = phase;
                    if let Some(sooner) = try_actions(&earlier)? {
                        actions = earlier;
                        verdict = sooner;
                        changed = true;
                        break;
                    }
                }
            }
            if !changed || cancel.load(Ordering::Relaxed) {
                break;
            }
        }
        Ok(Found {
            schedule_index: index,
            simulation_seed,
            dealt,
            actions,
            verdict,
            tape_guards: (self.guards != self.level.guards).then_some(self.guards),
            shrink_simulations: simulations,
            shrink_cancelled: cancel.load(Ordering::Relaxed),
        })
    }
}

struct Search {
    lowest_find: Option<u64>,
    schedules_run: u64,
    cancelled: bool,
}

/// Everything a schedule can be dealt from: the hand, the runs, the keys an operator can
/// name, the workers a crash can target, and the phases worth playing at.
#[derive(Debug)]
struct ScheduleSpace {
    level: Level,
    guards: Guards,
    seed: u64,
    store: LedgerStore,
    /// One entry per card in hand (a card held twice appears twice).
    deck: Vec<CardKind>,
    runs: Vec<String>,
    keys: Vec<String>,
    /// Worker numbers a crash may name: every worker the level could start with this hand.
    workers_max: u32,
    /// Cards are played before phases `0..=phase_horizon`.
    phase_horizon: u32,
    /// A declaration is dealt before phases `0..=declaring_until`: the phase Penny's first call
    /// began in the quiet run (after it, every declaration is refused).
    declaring_until: u32,
    send_fence: bool,
}

/// A dealt move; an operator's names its key only when it is played (`pick` chooses among
/// the keys that exist then).
#[derive(Clone, Debug)]
struct DealtAction {
    at_phase: u32,
    play: Play,
    key_pick: Option<u64>,
}

impl ScheduleSpace {
    fn new(level: &Level, guards: Guards, seed: u64, store: LedgerStore) -> Result<ScheduleSpace, ExploreError> {
        let mut deck = Vec::new();
        for allowance in &level.cards {
            deck.extend(std::iter::repeat_n(allowance.card, allowance.count as usize));
        }
        let count_of = |card: CardKind| {
            level
                .cards
                .iter()
                .find(|allowance| allowance.card == card)
                .map_or(0, |allowance| allowance.count)
        };
        let runs: Vec<String> = level.runs.iter().map(|run| run.id.clone()).collect();
        // Every crash can bring a restart, every duplicate a twin, and every failed run a
        // fresh one while its workflow node has retries left.
        let retries = if level.workflow.retries() {
            level.workflow.retries_max
        } else {
            0
        };
        let workers_max =
            (runs.len() as u32 * (1 + retries) + count_of(CardKind::CrashWorker) + count_of(CardKind::DuplicateWorker))
                .min(WORKERS_MAX);
        let mut space = ScheduleSpace {
            level: level.clone(),
            guards,
            seed,
            store,
            deck,
            runs,
            keys: Vec::new(),
            workers_max,
            phase_horizon: 0,
            declaring_until: 0,
            send_fence: true,
        };
        // A quiet run (no cards) shows how long the level lasts and which keys it makes
        // (hashed keys, when keys per call are off).
        // Schedule 0's simulation seed; not `deal(0)`, which needs the keys found here.
        let quiet_seed = space.stream(0).random();
        let mut simulation = SimulationBuilder::new(space.level.clone(), quiet_seed)
            .guards(guards)
            .ledger_store(store)
            .build()
            .map_err(|source| ExploreError::Simulation {
                index: 0,
                simulation_seed: quiet_seed,
                source,
            })?;
        let phases = simulation.run().map_err(|source| ExploreError::Simulation {
            index: 0,
            simulation_seed: quiet_seed,
            source,
        })?;
        let records = simulation.ledger_records().map_err(|source| ExploreError::Verdict {
            index: 0,
            simulation_seed: quiet_seed,
            source,
        })?;
        let mut keys: BTreeSet<String> = records.into_iter().map(|record| record.key.to_string()).collect();
        // The per-call keys of every call, and of a repeat or two (a model that calls again).
        // A workflow's fresh runs make their own keys: an operator may name those too.
        for run in &level.runs {
            let fresh_runs = (1..=retries).map(|retry| crate::runtime::workflow::retry_run_id(&run.id, retry));
            for run_id in std::iter::once(run.id.clone()).chain(fresh_runs) {
                for call_number in 1..=run.calls.len() + 2 {
                    keys.insert(format!("{run_id}:c{call_number}"));
                }
            }
        }
        space.keys = keys.into_iter().collect();
        // Faults lengthen a level (timeouts, restarts, twins), so cards are dealt over twice
        // the quiet run and a little after.
        space.phase_horizon = phases
            .saturating_mul(2)
            .saturating_add(PHASE_SLACK)
            .min(level.max_phases);
        space.declaring_until = simulation.first_call_phase().unwrap_or(space.phase_horizon);
        Ok(space)
    }

    /// Schedule `index`'s own random stream under the explorer's seed.
    fn stream(&self, index: u64) -> ChaCha8Rng {
        let mut rng = ChaCha8Rng::seed_from_u64(self.seed);
        rng.set_stream(index);
        rng
    }

    fn with_send_fence(mut self, send_fence: bool) -> ScheduleSpace {
        self.send_fence = send_fence;
        self
    }

    fn builder(&self, simulation_seed: u64, actions: Vec<TimedAction>) -> SimulationBuilder {
        let builder = SimulationBuilder::new(self.level.clone(), simulation_seed)
            .guards(self.guards)
            .ledger_store(self.store)
            .actions(actions);
        if self.send_fence {
            builder
        } else {
            builder.without_send_fence_for_tests()
        }
    }

    /// Schedule `index`: its simulation seed and its actions, in phase order. An operator's
    /// move names a key that exists when it is played — found by simulating the schedule up
    /// to that phase — so a decision can land on any call at any moment, the window between a
    /// reservation and its send included.
    fn deal(&self, index: u64) -> Result<(u64, Vec<TimedAction>), ExploreError> {
        let mut rng = self.stream(index);
        let simulation_seed = rng.random();
        if self.deck.is_empty() {
            return Ok((simulation_seed, Vec::new()));
        }
        // A random number of cards from the hand, each at most as often as the hand holds it:
        // a partial Fisher–Yates shuffle of the deck.
        let count = rng.random_range(1..=self.deck.len());
        let mut deck = self.deck.clone();
        for position in 0..count {
            let pick = rng.random_range(position..deck.len());
            deck.swap(position, pick);
        }
        let mut dealt: Vec<DealtAction> = deck[..count]
            .iter()
            .map(|card| {
                let until = if *card == CardKind::DeclareTool {
                    self.declaring_until
                } else {
                    self.phase_horizon
                };
                let at_phase = rng.random_range(0..=until);
                let (play, key_pick) = self.play(*card, &mut rng);
                DealtAction {
                    at_phase,
                    play,
                    key_pick,
                }
            })
            .collect();
        // Stable: cards dealt for one phase keep their dealt order.
        dealt.sort_by_key(|action| action.at_phase);
        let mut actions: Vec<TimedAction> = Vec::with_capacity(dealt.len());
        for action in dealt {
            let play = match action.key_pick {
                None => action.play,
                Some(pick) => {
                    let key = self.key_at(index, simulation_seed, &actions, action.at_phase, pick)?;
                    with_key(action.play, key)
                }
            };
            actions.push(TimedAction {
                at_phase: action.at_phase,
                play,
            });
        }
        Ok((simulation_seed, actions))
    }

    /// The key an operator's move at `at_phase` names: one of the ledger's records then (the
    /// moves before it played), chosen by `pick`; the level's likely keys when there is none.
    fn key_at(
        &self,
        index: u64,
        simulation_seed: u64,
        before: &[TimedAction],
        at_phase: u32,
        pick: u64,
    ) -> Result<String, ExploreError> {
        let simulation_error = |source| ExploreError::Simulation {
            index,
            simulation_seed,
            source,
        };
        let mut simulation = self
            .builder(simulation_seed, before.to_vec())
            .build()
            .map_err(simulation_error)?;
        simulation
            .run_until(|simulation| simulation.phase() >= at_phase)
            .map_err(simulation_error)?;
        let records = simulation.ledger_records().map_err(|source| ExploreError::Verdict {
            index,
            simulation_seed,
            source,
        })?;
        let mut keys: Vec<String> = records.into_iter().map(|record| record.key.to_string()).collect();
        if keys.is_empty() {
            keys.clone_from(&self.keys);
        }
        keys.sort();
        let position = usize::try_from(pick % keys.len() as u64).expect("a position within the keys");
        Ok(keys[position].clone())
    }

    /// A card as a move; an operator's comes with the pick that will choose its key.
    fn play(&self, card: CardKind, rng: &mut ChaCha8Rng) -> (Play, Option<u64>) {
        let run = |rng: &mut ChaCha8Rng| self.runs[rng.random_range(0..self.runs.len())].clone();
        let operator = |rng: &mut ChaCha8Rng| OPERATORS[rng.random_range(0..OPERATORS.len())].to_owned();
        match card {
            // Whatever is on the wire at the phase dealt; nothing there and the card fizzles.
            CardKind::LoseRequest => (Play::LoseRequest { key: None }, None),
            CardKind::LoseResponse => (Play::LoseResponse { key: None }, None),
            CardKind::SlowResponse => (Play::SlowResponse { key: None }, None),
            CardKind::CrashWorker => (
                Play::CrashWorker {
                    // Half the time the oldest worker alive, as the game's button does.
                    worker: rng.random_bool(0.5).then(|| rng.random_range(1..=self.workers_max)),
                    in_phase: None,
                },
                None,
            ),
            CardKind::DuplicateWorker => (Play::DuplicateWorker { run: run(rng) }, None),
            CardKind::ModelCallsAgain => (
                Play::ModelCallsAgain {
                    run: run(rng),
                    reword: rng.random_bool(0.5),
                },
                None,
            ),
            CardKind::ToolFailsBeforeSending => (Play::ToolFailsBeforeSending { run: run(rng) }, None),
            CardKind::OperatorResolve => {
                let status = if rng.random_bool(0.5) {
                    Status::Completed
                } else {
                    Status::Failed
                };
                let play = Play::OperatorResolve {
                    key: String::new(),
                    status,
                    reason: format!("the explorer resolves it as {status}"),
                    operator: operator(rng),
                    expected_status: EXPECTATIONS[rng.random_range(0..EXPECTATIONS.len())],
                };
                (play, Some(rng.random()))
            }
            CardKind::OperatorCompensate => {
                let play = Play::OperatorCompensate {
                    key: String::new(),
                    reason: "the explorer asks for a compensation".to_owned(),
                    operator: operator(rng),
                };
                (play, Some(rng.random()))
            }
            CardKind::DeclareTool => {
                let tools = &self.level.declarable_tools;
                assert!(
                    !tools.is_empty(),
                    "a level dealing DeclareTool names its declarable tools"
                );
                let play = Play::DeclareTool {
                    tool: tools[rng.random_range(0..tools.len())].clone(),
                    side_effect: SideEffect::ALL[rng.random_range(0..SideEffect::ALL.len())],
                    attempts: rng.random_range(1..=READ_ATTEMPTS_MAX),
                    takes_key: rng.random_bool(0.5),
                };
                (play, None)
            }
        }
    }

    fn simulate(&self, index: u64, simulation_seed: u64, actions: Vec<TimedAction>) -> Result<Verdict, ExploreError> {
        let mut simulation =
            self.builder(simulation_seed, actions)
                .build()
                .map_err(|source| ExploreError::Simulation {
                    index,
                    simulation_seed,
                    source,
                })?;
        simulation.run().map_err(|source| ExploreError::Simulation {
            index,
            simulation_seed,
            source,
        })?;
        simulation.verdict().map_err(|source| ExploreError::Verdict {
            index,
            simulation_seed,
            source,
        })
    }
}

/// The operator's move with its key named.
fn with_key(play: Play, key: String) -> Play {
    match play {
        Play::OperatorResolve {
            status,
            reason,
            operator,
            expected_status,
            ..
        } => Play::OperatorResolve {
            key,
            status,
            reason,
            operator,
            expected_status,
        },
        Play::OperatorCompensate { reason, operator, .. } => Play::OperatorCompensate { key, reason, operator },
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::level;

    fn vault() -> Level {
        level::load_level(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../../levels/19-vault.level.ron"))
            .expect("the vault loads")
            .level
    }

    #[test]
    fn dealt_schedules_are_legal_tapes_and_depend_only_on_seed_and_index() {
        let vault = vault();
        let space = ScheduleSpace::new(&vault, Guards::all_on(), 5, LedgerStore::Memory).expect("a schedule space");
        assert!(space.phase_horizon > 0 && space.phase_horizon <= vault.max_phases);
        assert_eq!(space.deck.len(), 8, "the vault's hand holds eight cards");
        let mut lengths = BTreeSet::new();
        for index in 0..500 {
            let (simulation_seed, actions) = space.deal(index).expect("a schedule is dealt");
            assert_eq!(
                (simulation_seed, actions.clone()),
                space.deal(index).expect("dealt again")
            );
            lengths.insert(actions.len());
            let tape = Tape {
                version: crate::level::TAPE_VERSION,
                level: "19-vault.level.ron".into(),
                seed: simulation_seed,
                title: String::new(),
                guards: None,
                actions,
                expect: Expectation {
                    verdict: checker::Outcome::PaidOnce,
                    stopped_by: Vec::new(),
                    violations: Vec::new(),
                },
            };
            let text = level::tape_to_ron(&tape);
            if let Err(error) = level::validate_tape(Path::new("dealt.tape.ron"), &text, &tape, &vault) {
                panic!("schedule {index} is not a legal tape: {error}\n{text}");
            }
        }
        assert_eq!(
            lengths,
            (1..=8).collect(),
            "schedules use from one card to the whole hand"
        );
        let other = ScheduleSpace::new(&vault, Guards::all_on(), 6, LedgerStore::Memory).expect("a schedule space");
        assert_ne!(
            space.deal(0).expect("dealt"),
            other.deal(0).expect("dealt"),
            "another seed deals another schedule"
        );
    }

    #[test]
    fn operator_cards_name_the_keys_the_level_makes() {
        let mut level = vault();
        level.cards = vec![crate::level::CardAllowance {
            card: CardKind::OperatorResolve,
            count: 1,
        }];
        let space = ScheduleSpace::new(&level, Guards::all_on(), 1, LedgerStore::Memory).expect("a schedule space");
        for key in ["r1:c1", "r2:c1", "r1:c3"] {
            assert!(
                space.keys.iter().any(|known| known == key),
                "{key} missing from {:?}",
                space.keys
            );
        }
        let hashed = ScheduleSpace::new(
            &level,
            Guards::all_on().with(crate::runtime::guards::Guard::KeyPerCall, false),
            1,
            LedgerStore::Memory,
        )
        .expect("a schedule space");
        assert!(
            hashed.keys.iter().any(|key| key.starts_with("h:")),
            "hashed keys come from the quiet run: {:?}",
            hashed.keys
        );
    }
}
