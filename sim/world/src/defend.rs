//! Defender mode: an unbeatable level played from the other side.
//!
//! The player starts with every guard off and switches on as few as they can, at most the
//! level's budget, so that Penny keeps her promise whatever the crew does: Penny left alone,
//! each shipped tape of this level's chapter and the chapters before it whose moves are legal
//! in this level, and an explorer's search of the level's own hand. A tape is replayed by the
//! rule of its format, against this level's world, with the chosen guards. A heist is stopped
//! when every credit is paid once or honestly waits and no promise is broken: a defence that
//! under-pays the customer (hashed keys merging two credits) or voids by reflex does not hold. The smallest set known to hold is stored in the level file and
//! checked by `sim/tests/campaign.rs` (it holds; no smaller set does).

use std::path::PathBuf;
use std::sync::atomic::AtomicBool;

use serde::Serialize;

use crate::campaign::Campaign;
use crate::checker::{Outcome, ViolationKind};
use crate::explore::{ExploreError, Explorer};
use crate::ledger::{LedgerError, LedgerStore};
use crate::level::{self, Level, LoadedLevel, LoadedTape, TimedAction};
use crate::runtime::guards::{Guard, Guards};
use crate::simulator::{SimError, SimulationBuilder};

/// Schedules the explorer deals in a defence check unless told otherwise: enough to find every
/// heist the shipped tapes know in these levels, and a check still answers in seconds.
pub const DEFENCE_SCHEDULES: u64 = 2_000;
/// The explorer's seed in a defence check (any fixed seed: a check must give one answer).
pub const DEFENCE_SEED: u64 = 1;

#[derive(Debug, thiserror::Error)]
pub enum DefendError {
    #[error("level `{0}` is not unbeatable: it has no defender's challenge")]
    NotADefenderLevel(String),
    #[error("{}: cannot simulate: {source}", tape.display())]
    Simulation {
        tape: PathBuf,
        #[source]
        source: Box<SimError>,
    },
    #[error("{}: cannot judge: {source}", tape.display())]
    Verdict {
        tape: PathBuf,
        #[source]
        source: Box<LedgerError>,
    },
    #[error(transparent)]
    Explore(Box<ExploreError>),
}

/// One known heist, replayed against the defence.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct HeistResult {
    /// The tape; empty for Penny left alone (no moves).
    pub tape: PathBuf,
    pub title: String,
    pub outcome: Outcome,
    pub violations: Vec<ViolationKind>,
    pub stopped: bool,
}

/// Penny's promise kept: paid once or honestly waiting, and nothing broken on the way.
pub fn promise_kept(outcome: Outcome, violations: &[ViolationKind]) -> bool {
    matches!(outcome, Outcome::PaidOnce | Outcome::UnknownFlagged) && violations.is_empty()
}

/// The explorer's answer: nothing found in its schedules, or a heist (shrunk) that got through.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SearchResult {
    pub schedules: u64,
    pub found: Option<Vec<TimedAction>>,
    pub found_seed: Option<u64>,
}

/// Whether a set of guards defends the level.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct DefenceReport {
    pub level: String,
    pub on: Vec<Guard>,
    pub budget: u32,
    pub heists: Vec<HeistResult>,
    /// `None` when a known heist already got through (the search is not needed to say no).
    pub search: Option<SearchResult>,
}

impl DefenceReport {
    pub fn within_budget(&self) -> bool {
        self.on.len() <= self.budget as usize
    }
    pub fn stops_every_heist(&self) -> bool {
        self.heists.iter().all(|heist| heist.stopped)
            && self.search.as_ref().is_some_and(|search| search.found.is_none())
    }
    /// The defence holds, within the budget: the level is defended.
    pub fn holds(&self) -> bool {
        self.within_budget() && self.stops_every_heist()
    }
}

/// The guards `on` switched on, every other guard off.
pub fn only(on: &[Guard]) -> Guards {
    let mut guards = Guards::all_off();
    for guard in on {
        guards.set(*guard, true);
    }
    guards
}

/// The heists a defence of `level` must stop: every shipped tape of its chapter and the ones
/// before it whose moves are legal in this level (its cards, counts, runs and length).
pub fn heists<'a>(campaign: &'a Campaign, level: &Level) -> Vec<&'a LoadedTape> {
    campaign
        .tapes
        .iter()
        .filter(|tape| tape.level.level.chapter <= level.chapter)
        .filter(|tape| level::validate_tape(&tape.path, &tape.text, &tape.tape, level).is_ok())
        .collect()
}

/// Simulates moves against `level` with `guards`, to the end: the outcome and what broke.
fn simulate(
    level: &Level,
    seed: u64,
    actions: Vec<TimedAction>,
    rule: crate::level::WireRule,
    guards: Guards,
    tape: &std::path::Path,
) -> Result<(Outcome, Vec<ViolationKind>), DefendError> {
    let simulation_error = |source| DefendError::Simulation {
        tape: tape.to_path_buf(),
        source: Box::new(source),
    };
    let mut simulation = SimulationBuilder::new(level.clone(), seed)
        .guards(guards)
        .actions(actions)
        .wire_rule(rule)
        .ledger_store(LedgerStore::Memory)
        .build()
        .map_err(simulation_error)?;
    simulation.run().map_err(simulation_error)?;
    let verdict = simulation.verdict().map_err(|source| DefendError::Verdict {
        tape: tape.to_path_buf(),
        source: Box::new(source),
    })?;
    Ok((verdict.outcome, verdict.violation_kinds()))
}

/// Replays Penny left alone and the known heists: the cheap half of a check.
pub fn replay_heists(level: &Level, heists: &[&LoadedTape], guards: Guards) -> Result<Vec<HeistResult>, DefendError> {
    let alone = simulate(
        level,
        DEFENCE_SEED,
        Vec::new(),
        crate::level::WireRule::OnTheWireNow,
        guards,
        std::path::Path::new(""),
    )?;
    let mut results = vec![HeistResult {
        tape: PathBuf::new(),
        title: "Penny left alone: no moves".into(),
        outcome: alone.0,
        stopped: promise_kept(alone.0, &alone.1),
        violations: alone.1,
    }];
    for tape in heists {
        let (outcome, violations) = simulate(
            level,
            tape.tape.seed,
            tape.tape.actions.clone(),
            tape.tape.wire_rule(),
            guards,
            &tape.path,
        )?;
        results.push(HeistResult {
            tape: tape.path.clone(),
            title: tape.tape.title.clone(),
            outcome,
            stopped: promise_kept(outcome, &violations),
            violations,
        });
    }
    Ok(results)
}

/// How hard a defence check looks.
#[derive(Clone, Copy, Debug)]
pub struct Search {
    pub schedules: u64,
    pub jobs: usize,
    pub seed: u64,
}

impl Default for Search {
    fn default() -> Search {
        Search {
            schedules: DEFENCE_SCHEDULES,
            jobs: 1,
            seed: DEFENCE_SEED,
        }
    }
}

/// Checks the defence `on` of an unbeatable level: the known heists, then (if they are all
/// stopped) the explorer's search.
pub fn check(
    loaded: &LoadedLevel,
    heists: &[&LoadedTape],
    on: &[Guard],
    search: Search,
    cancel: &AtomicBool,
) -> Result<DefenceReport, DefendError> {
    let level = &loaded.level;
    if !level.unbeatable {
        return Err(DefendError::NotADefenderLevel(level.id.clone()));
    }
    // Before a level states its budget (while its minimum is being found), every guard may be on.
    let budget = level
        .defender
        .as_ref()
        .map_or(Guard::ALL.len() as u32, |defender| defender.budget);
    let mut on: Vec<Guard> = on.to_vec();
    on.sort();
    on.dedup();
    let guards = only(&on);
    let results = replay_heists(level, heists, guards)?;
    let search = if results.iter().all(|heist| heist.stopped) {
        // Both ways to break the promise: pay twice, or leave the customer owed.
        let mut result = SearchResult {
            schedules: 0,
            found: None,
            found_seed: None,
        };
        for goal in [Outcome::PaidTwice, Outcome::NotPaidButOwed] {
            let outcome = Explorer::new(level.clone(), guards, search.seed)
                .goal(goal)
                .schedules(search.schedules)
                .jobs(search.jobs)
                .run(&|_| {}, cancel)
                .map_err(|error| DefendError::Explore(Box::new(error)))?;
            result.schedules += outcome.schedules_run;
            if let Some(found) = outcome.found {
                result.found_seed = Some(found.simulation_seed);
                result.found = Some(found.actions);
                break;
            }
        }
        Some(result)
    } else {
        None
    };
    Ok(DefenceReport {
        level: level.id.clone(),
        on,
        budget,
        heists: results,
        search,
    })
}

/// Every set of `size` guards, in teaching order.
pub fn sets_of(size: usize) -> Vec<Vec<Guard>> {
    sets_of_in(&Guard::ALL, size)
}

/// Every set of `size` guards taken from `guards`, in their order.
pub fn sets_of_in(guards: &[Guard], size: usize) -> Vec<Vec<Guard>> {
    assert!(guards.len() <= Guard::ALL.len(), "at most every guard");
    let mut sets = Vec::new();
    let count = guards.len();
    for mask in 0_u32..(1 << count) {
        if mask.count_ones() as usize == size {
            sets.push(
                guards
                    .iter()
                    .enumerate()
                    .filter(|(index, _)| mask & (1 << index) != 0)
                    .map(|(_, guard)| *guard)
                    .collect(),
            );
        }
    }
    sets
}

/// The guards that can change anything in `level`. The tool contract check only ever refuses
/// a run whose tool fails it: when every tool passes and the player cannot declare one, it is
/// the same on or off, so a set with it holds exactly when the set without it does, and a
/// search for the smallest set need not try it.
pub fn guards_that_matter(level: &Level) -> Vec<Guard> {
    let contract_inert =
        level.declarable_tools.is_empty() && level.tools.iter().all(|tool| tool.check_contract().is_ok());
    Guard::ALL
        .into_iter()
        .filter(|guard| !(contract_inert && *guard == Guard::ToolContract))
        .collect()
}

/// The smallest sets of guards that hold, searched from none upwards; stops at the first size
/// that has one, or past `size_max`.
pub fn minimum(
    loaded: &LoadedLevel,
    heists: &[&LoadedTape],
    search: Search,
    size_max: usize,
    cancel: &AtomicBool,
) -> Result<Vec<Vec<Guard>>, DefendError> {
    let level = &loaded.level;
    let guards = guards_that_matter(level);
    for size in 0..=size_max.min(guards.len()) {
        let mut holding = Vec::new();
        for set in sets_of_in(&guards, size) {
            let replayed = replay_heists(level, heists, only(&set))?;
            if !replayed.iter().all(|heist| heist.stopped) {
                continue;
            }
            let report = check(loaded, heists, &set, search, cancel)?;
            if report.stops_every_heist() {
                holding.push(set);
            }
        }
        if !holding.is_empty() {
            return Ok(holding);
        }
    }
    Ok(Vec::new())
}
