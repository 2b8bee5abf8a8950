//! Defence judged by the explorer: every guard can be switched; a known heist counts as held
//! only if it fires (breaks the promise with every guard off, or with the level's own); a defence that falls comes with
//! a counter-example tape that, replayed, gets through; one that holds was searched within the
//! stated bound.

use std::path::PathBuf;
use std::sync::atomic::AtomicBool;

use twice_world::campaign::Campaign;
use twice_world::defend::{self, CounterSource, DEFENCE_SCHEDULES, Search, promise_kept};
use twice_world::ledger::LedgerStore;
use twice_world::level::{LoadedLevel, Tape};
use twice_world::runtime::guards::{Guard, Guards};
use twice_world::simulator::SimulationBuilder;

fn campaign() -> Campaign {
    let folder = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../levels");
    Campaign::load(&folder).unwrap_or_else(|problems| panic!("the campaign loads: {problems:?}"))
}

fn level<'a>(campaign: &'a Campaign, id: &str) -> &'a LoadedLevel {
    campaign
        .levels
        .iter()
        .find(|loaded| loaded.level.id == id)
        .unwrap_or_else(|| panic!("level {id}"))
}

/// Replays a tape of `loaded` with its own guards: whether Penny's promise was kept.
fn keeps_the_promise(loaded: &LoadedLevel, tape: &Tape) -> bool {
    let mut simulation = SimulationBuilder::new(loaded.level.clone(), tape.seed)
        .guards(tape.guards.unwrap_or(loaded.level.guards))
        .actions(tape.actions.clone())
        .wire_rule(tape.wire_rule())
        .ledger_store(LedgerStore::Memory)
        .build()
        .expect("the tape builds");
    simulation.run().expect("the tape simulates");
    let verdict = simulation.verdict().expect("a verdict");
    promise_kept(verdict.outcome, &verdict.violation_kinds())
}

#[test]
fn every_guard_is_a_choice() {
    let choices: Vec<Guard> = defend::choices().iter().map(|choice| choice.guard).collect();
    assert_eq!(choices, Guard::ALL, "the defender may switch every guard");
    assert!(choices.contains(&Guard::NoReflexCompensation));
}

#[test]
fn a_heist_is_held_only_if_it_fires_with_every_guard_off_or_the_levels_own() {
    let campaign = campaign();
    let mut never_fired = 0;
    for id in ["one-attempt", "ledger-holds", "vault"] {
        let loaded = level(&campaign, id);
        let heists = defend::heists(&campaign, &loaded.level);
        let fires = defend::heists_fire(&loaded.level, &heists).expect("the heists replay");
        let minimum = loaded
            .level
            .defender
            .as_ref()
            .expect("a defender level")
            .minimum
            .clone();
        let replayed =
            defend::replay_heists(&loaded.level, &heists, defend::only(&minimum)).expect("the heists replay");
        for (heist, (fired, tape)) in replayed.iter().skip(1).zip(fires.iter().skip(1).zip(&heists)) {
            // Independently: the tape with every guard off, and with the level's own guards.
            let mut all_off = tape.tape.clone();
            all_off.guards = Some(Guards::all_off());
            let mut its_own = tape.tape.clone();
            its_own.guards = Some(loaded.level.guards);
            let breaks = !keeps_the_promise(loaded, &all_off) || !keeps_the_promise(loaded, &its_own);
            assert_eq!(*fired, breaks, "{}", tape.path.display());
            assert_eq!(heist.fires, *fired);
            assert_eq!(heist.held(), heist.fires && heist.stopped, "{}", tape.path.display());
            never_fired += usize::from(!heist.fires);
        }
    }
    assert!(
        never_fired > 0,
        "some known heists do not fire in these levels: they hold nothing"
    );
}

#[test]
fn a_defence_that_falls_comes_with_a_counter_example_that_gets_through() {
    let campaign = campaign();
    let loaded = level(&campaign, "one-attempt");
    let heists = defend::heists(&campaign, &loaded.level);
    let cancel = AtomicBool::new(false);
    // No guard at all: something gets through (a known heist, or the explorer's find), and is
    // the counter-example, a tape of this level with the defence's guards.
    let report = defend::check(loaded, &heists, &[], Search::default(), &cancel).expect("the check runs");
    assert!(!report.holds());
    let counter = report.counter_example.as_ref().expect("a counter-example");
    match &counter.source {
        CounterSource::KnownHeist { .. } => assert!(report.heists.iter().any(|heist| !heist.stopped)),
        CounterSource::Explorer { .. } => assert!(report.search.as_ref().is_some_and(|search| search.found.is_some())),
    }
    assert_eq!(counter.tape.level, "02-one-attempt.level.ron");
    assert_eq!(counter.tape.guards, Some(Guards::all_off()));
    assert!(
        !keeps_the_promise(loaded, &counter.tape),
        "the counter-example gets through"
    );

    // The level's minimum holds: the explorer searched within its bound and found nothing.
    let minimum = loaded
        .level
        .defender
        .as_ref()
        .expect("a defender level")
        .minimum
        .clone();
    let report = defend::check(loaded, &heists, &minimum, Search::default(), &cancel).expect("the check runs");
    assert!(report.holds(), "{report:?}");
    let search = report.search.as_ref().expect("the explorer ran");
    assert_eq!(search.schedules_bound, DEFENCE_SCHEDULES);
    assert!(search.schedules > 0 && search.found.is_none());
    assert!(report.counter_example.is_none());
}

#[test]
fn when_the_known_heists_are_stopped_the_explorer_finds_the_hole() {
    let campaign = campaign();
    let loaded = level(&campaign, "one-attempt");
    let heists = defend::heists(&campaign, &loaded.level);
    let cancel = AtomicBool::new(false);
    // Try each single guard: one that stops every known heist but not the explorer shows its
    // counter-example as a tape that, replayed, gets through.
    let mut explorer_finds = 0;
    for guard in Guard::ALL {
        let report = defend::check(loaded, &heists, &[guard], Search::default(), &cancel).expect("the check runs");
        if let Some(counter) = &report.counter_example
            && matches!(counter.source, CounterSource::Explorer { .. })
        {
            assert!(report.heists.iter().all(|heist| heist.stopped));
            assert!(
                !keeps_the_promise(loaded, &counter.tape),
                "{guard}: the explorer's tape gets through"
            );
            explorer_finds += 1;
        }
    }
    assert!(
        explorer_finds > 0,
        "the explorer beats some defence the known heists do not"
    );
}

#[test]
fn a_heist_that_needs_the_levels_own_guards_fires_on_a_winnable_level() {
    // The regression level's reproduced bug needs the ledger on (a lease must exist to expire):
    // with every guard off it breaks nothing, with the level's own guards it pays twice.
    let folder = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../levels/regressions");
    let tape = twice_world::level::load_tape(&folder.join("lease-expiry-in-flight.reproduced.tape.ron"))
        .expect("the regression tape loads");
    let level = &tape.level.level;
    let fires = defend::heists_fire(level, &[&tape]).expect("the heists replay");
    let mut all_off = tape.tape.clone();
    all_off.guards = Some(Guards::all_off());
    assert!(
        keeps_the_promise(&tape.level, &all_off),
        "with every guard off it is no heist"
    );
    assert_eq!(fires, [false, true], "Penny alone breaks nothing; the tape fires");
}
