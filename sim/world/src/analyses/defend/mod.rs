//! Defender mode: a level played from the other side — an unbeatable level's challenge, and
//! any level's defence checked in CI (`twice-sim defend`).
//!
//! The player starts with every guard off and switches on as few as they can, at most the
//! level's budget, so that Penny keeps her promise whatever the crew does: Penny left alone,
//! each shipped tape of this level's chapter and the chapters before it whose moves are legal
//! in this level, and an explorer's search of the level's own hand. A tape is replayed by the
//! rule of its format, against this level's world, with the chosen guards. A heist is stopped
//! when every credit is paid once or honestly waits and no promise is broken: a defence that
//! under-pays the customer (hashed keys merging two credits) or voids by reflex does not hold.
//! A known heist counts as *held* only if it fires: the same moves break the promise with every
//! guard off, or with the level's own (a tape whose cards fizzle in this level tests nothing).
//! A defence counts only when the explorer, within [`DEFENCE_SCHEDULES`] schedules, finds none
//! that beats it; when one does (or a known heist gets through), the report carries that
//! counter-example as a tape. The defender may switch any of [`Guard::ALL`] ([`choices`]). The smallest set known to hold is
//! in the level file and checked by `sim/tests/campaign.rs` (it holds; no smaller set does).

use std::path::PathBuf;
use std::sync::atomic::AtomicBool;

use serde::Serialize;

use crate::campaign::Campaign;
use crate::checker::{Outcome, ViolationKind};
use crate::explore::{ExploreError, Explorer};
use crate::ledger::LedgerStore;
use crate::level::{self, Level, LoadedLevel, LoadedTape, Tape, TimedAction};
use crate::replay::ReplayError;
use crate::runtime::guards::{Guard, Guards};
use crate::simulator::SimulationBuilder;

mod counter;
mod declared;
pub use counter::{CounterExample, CounterSource};
pub use declared::declared_problems;

/// Schedules the explorer deals in a defence check unless told otherwise: enough to find every
/// heist the shipped tapes know in these levels, and a check still answers in seconds.
pub const DEFENCE_SCHEDULES: u64 = 2_000;
/// The explorer's seed in a defence check (any fixed seed: a check must give one answer).
pub const DEFENCE_SEED: u64 = 1;

#[derive(Debug, thiserror::Error)]
pub enum DefendError {
    /// A known heist (or Penny left alone) could not be simulated or judged: the same error
    /// a replay of that tape gives.
    #[error(transparent)]
    Replay(Box<ReplayError>),
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
    /// Penny's promise was kept against this defence.
    pub stopped: bool,
    /// With every guard off, the same moves break the promise: the heist is real here.
    pub fires: bool,
}

impl HeistResult {
    /// The defence held a heist that would otherwise have worked. A heist that never fires
    /// (its cards fizzle in this level, or it needs a guard on to work) is not held: it is
    /// no test at all.
    pub fn held(&self) -> bool {
        self.fires && self.stopped
    }

    /// What the defence did against this heist, as every screen shows it.
    pub fn standing(&self) -> HeistStanding {
        match (self.fires, self.stopped) {
            (true, true) => HeistStanding::Held,
            (false, true) => HeistStanding::NoFire,
            (_, false) => HeistStanding::GotIn,
        }
    }
}

/// What a defence did against one known heist.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum HeistStanding {
    /// The heist breaks the promise with every guard off, and this defence stopped it.
    Held,
    /// With every guard off and with the level's own it breaks no promise here (its cards fizzle): it tests nothing.
    NoFire,
    /// It broke the promise against this defence.
    GotIn,
}

impl HeistStanding {
    /// The word a screen shows.
    pub fn word(self) -> &'static str {
        match self {
            HeistStanding::Held => "held",
            HeistStanding::NoFire => "no fire",
            HeistStanding::GotIn => "got in",
        }
    }
}

/// The known heists that never fire here, said once for all (a screen lists those that fire).
/// A tape's moves are timed by the phases of the run it was recorded in, and switching a guard
/// adds or removes phases (no ledger, no reservation): so a level's own heist can fire at
/// nothing in a defence's run while the search finds the same heist a phase earlier. The
/// sentence says that, so "does nothing here" is not read as "this heist cannot work".
pub fn no_fire_sentence(count: usize) -> Option<String> {
    // Said as what the player sees (a shorter list) and why, before any term of the search.
    let (heists, they, cards) = match count {
        0 => return None,
        1 => ("1 known heist".to_owned(), "it", "its cards"),
        many => (format!("{many} known heists"), "they", "their cards"),
    };
    Some(format!(
        "Not listed: {heists} that cannot test these guards: replayed at the phases {they} were recorded at, \
         with every guard off or with this level's own guards, {cards} hit nothing, or nothing that moves money. \
         Guards switched move a run's phases; the search below looks for heists against your guards afresh."
    ))
}

/// A guard the defender may switch, with the words to show it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct GuardChoice {
    pub guard: Guard,
    pub name: &'static str,
    pub words: &'static str,
    pub describe: &'static str,
    /// The key that switches it (the game's defender mode and sandbox).
    pub key: &'static str,
}

/// Every guard the defender may switch, in teaching order: all of [`Guard::ALL`].
pub fn choices() -> Vec<GuardChoice> {
    Guard::ALL
        .into_iter()
        .map(|guard| GuardChoice {
            guard,
            name: guard.name(),
            words: crate::guards::words(guard),
            describe: crate::guards::promise(guard),
            key: crate::guards::defender_key(guard),
        })
        .collect()
}

/// Penny's promise kept: paid once or honestly waiting, and nothing broken on the way.
pub fn promise_kept(outcome: Outcome, violations: &[ViolationKind]) -> bool {
    matches!(outcome, Outcome::PaidOnce | Outcome::UnknownFlagged) && violations.is_empty()
}

/// The explorer's answer: nothing found in its schedules, or a heist (shrunk) that got through.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SearchResult {
    /// Schedules simulated.
    pub schedules: u64,
    /// The bound the search was given, per goal looked for (paid twice, then owed).
    pub schedules_bound: u64,
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
    /// What beats the defence, when something does: a known heist or the explorer's find.
    pub counter_example: Option<CounterExample>,
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
    Guards::only(on.iter().copied())
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
    let simulation_error = |source| {
        DefendError::Replay(Box::new(ReplayError::Simulation {
            tape: tape.to_path_buf(),
            source: Box::new(source),
        }))
    };
    let mut simulation = SimulationBuilder::new(level.clone(), seed)
        .guards(guards)
        .actions(actions)
        .wire_rule(rule)
        .ledger_store(LedgerStore::Memory)
        .build()
        .map_err(simulation_error)?;
    simulation.run().map_err(simulation_error)?;
    let verdict = simulation.verdict().map_err(|source| {
        DefendError::Replay(Box::new(ReplayError::Verdict {
            tape: tape.to_path_buf(),
            source: Box::new(source),
        }))
    })?;
    Ok((verdict.outcome, verdict.violation_kinds()))
}

/// Replays Penny left alone and the known heists: the cheap half of a check.
pub fn replay_heists(level: &Level, heists: &[&LoadedTape], guards: Guards) -> Result<Vec<HeistResult>, DefendError> {
    let fires = heists_fire(level, heists)?;
    replay_heists_knowing(level, heists, guards, &fires)
}

/// Which heists fire in `level` (Penny left alone first): with every guard off, or with the
/// level's own guards, the same moves break the promise. (A heist on a beatable level may need
/// a guard of the level on: a lease that expires needs the ledger that grants it.) The same for
/// every defence, so a search over sets works it out once.
pub fn heists_fire(level: &Level, heists: &[&LoadedTape]) -> Result<Vec<bool>, DefendError> {
    let unknown = vec![false; heists.len() + 1];
    let breaks = |guards| {
        replay_heists_knowing(level, heists, guards, &unknown)
            .map(|results| results.iter().map(|heist| !heist.stopped).collect::<Vec<bool>>())
    };
    let mut fires = breaks(Guards::all_off())?;
    if level.guards != Guards::all_off() && fires.iter().any(|fires| !fires) {
        for (fires, with_its_own) in fires.iter_mut().zip(breaks(level.guards)?) {
            *fires |= with_its_own;
        }
    }
    Ok(fires)
}

/// Replays the heists against `guards`, `fires` telling which fire (Penny left alone first).
fn replay_heists_knowing(
    level: &Level,
    heists: &[&LoadedTape],
    guards: Guards,
    fires: &[bool],
) -> Result<Vec<HeistResult>, DefendError> {
    assert_eq!(
        fires.len(),
        heists.len() + 1,
        "one answer per heist and Penny left alone"
    );
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
        fires: fires[0],
    }];
    for (tape, fires) in heists.iter().zip(&fires[1..]) {
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
            fires: *fires,
        });
    }
    Ok(results)
}

/// Whether Penny left alone or some known heist breaks the promise against the guards `on`,
/// replayed in [`check`]'s order and stopping at the first that does. `true` is what
/// [`DefenceReport::stops_every_heist`] would deny at a fraction of [`check`]'s cost (no replay
/// with every guard off, no explorer); `false` says nothing of what the explorer would find.
pub fn a_known_heist_gets_through(level: &Level, heists: &[&LoadedTape], on: &[Guard]) -> Result<bool, DefendError> {
    let alone = (
        DEFENCE_SEED,
        Vec::new(),
        crate::level::WireRule::OnTheWireNow,
        std::path::Path::new(""),
    );
    let known = heists.iter().map(|tape| {
        (
            tape.tape.seed,
            tape.tape.actions.clone(),
            tape.tape.wire_rule(),
            tape.path.as_path(),
        )
    });
    for (seed, actions, rule, path) in std::iter::once(alone).chain(known) {
        let (outcome, violations) = simulate(level, seed, actions, rule, only(on), path)?;
        if !promise_kept(outcome, &violations) {
            return Ok(true);
        }
    }
    Ok(false)
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
/// stopped) the explorer's search, at most `search.schedules` schedules per goal. The same
/// check the game, the browser and `twice-sim defend` run.
pub fn check(
    loaded: &LoadedLevel,
    heists: &[&LoadedTape],
    on: &[Guard],
    search: Search,
    cancel: &AtomicBool,
) -> Result<DefenceReport, DefendError> {
    let fires = heists_fire(&loaded.level, heists)?;
    check_knowing(loaded, heists, &fires, on, search, cancel)
}

/// [`check`] with the heists' firing already known ([`heists_fire`]).
fn check_knowing(
    loaded: &LoadedLevel,
    heists: &[&LoadedTape],
    fires: &[bool],
    on: &[Guard],
    search: Search,
    cancel: &AtomicBool,
) -> Result<DefenceReport, DefendError> {
    let level = &loaded.level;
    // A level with no defender's challenge (a beatable level, a regression case, or an
    // unbeatable one before its minimum is found) has no budget: every guard may be on.
    let budget = level
        .defender
        .as_ref()
        .map_or(Guard::ALL.len() as u32, |defender| defender.budget);
    let mut on: Vec<Guard> = on.to_vec();
    on.sort();
    on.dedup();
    let guards = only(&on);
    let level_file = loaded
        .path
        .file_name()
        .map_or_else(String::new, |name| name.to_string_lossy().into_owned());
    let results = replay_heists_knowing(level, heists, guards, fires)?;
    let mut counter_example = results
        .iter()
        .zip(std::iter::once(None).chain(heists.iter().map(Some)))
        .find(|(heist, _)| !heist.stopped)
        .map(|(heist, tape)| CounterExample {
            source: CounterSource::KnownHeist {
                tape: heist.tape.clone(),
            },
            outcome: heist.outcome,
            tape: Tape {
                version: tape.map_or(crate::level::TAPE_VERSION, |tape| tape.tape.version),
                level: level_file.clone(),
                seed: tape.map_or(DEFENCE_SEED, |tape| tape.tape.seed),
                title: format!("Gets through [{}]: {}", guard_names(&on), heist.title),
                guards: Some(guards),
                actions: tape.map(|tape| tape.tape.actions.clone()).unwrap_or_default(),
                expect: crate::level::Expectation {
                    verdict: heist.outcome,
                    stopped_by: Vec::new(),
                    paid_cents: Default::default(),
                    keys: Default::default(),
                    violations: heist.violations.clone(),
                },
            },
        });
    let search = if counter_example.is_none() {
        let (result, found) = explore(level, guards, search, cancel)?;
        counter_example = found.map(|found| CounterExample {
            source: CounterSource::Explorer {
                schedule_index: found.schedule_index,
            },
            outcome: found.verdict.outcome,
            tape: found.to_tape(
                &level_file,
                &format!("The explorer's counter-example to [{}]", guard_names(&on)),
            ),
        });
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
        counter_example,
    })
}

/// The explorer's search for either way to break the promise: pay twice, or leave the
/// customer owed.
fn explore(
    level: &Level,
    guards: Guards,
    search: Search,
    cancel: &AtomicBool,
) -> Result<(SearchResult, Option<crate::explore::Found>), DefendError> {
    let mut result = SearchResult {
        schedules: 0,
        schedules_bound: search.schedules,
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
            result.found = Some(found.actions.clone());
            return Ok((result, Some(found)));
        }
    }
    Ok((result, None))
}

fn guard_names(guards: &[Guard]) -> String {
    guards.iter().map(|guard| guard.name()).collect::<Vec<_>>().join(", ")
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

/// The guards that can change anything in `level` (each guard's own `matters_in`, in
/// [`crate::guards`]): a guard that cannot is the same on or off, so a set with it holds exactly
/// when the set without it does, and a search for the smallest set need not try it.
pub fn guards_that_matter(level: &Level) -> Vec<Guard> {
    crate::guards::that_matter(level)
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
    let fires = heists_fire(level, heists)?;
    for size in 0..=size_max.min(guards.len()) {
        let mut holding = Vec::new();
        for set in sets_of_in(&guards, size) {
            let replayed = replay_heists_knowing(level, heists, only(&set), &fires)?;
            if !replayed.iter().all(|heist| heist.stopped) {
                continue;
            }
            let report = check_knowing(loaded, heists, &fires, &set, search, cancel)?;
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
