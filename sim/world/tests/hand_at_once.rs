//! A card of the hand with exactly one thing to act on plays at once in both editions
//! (`hand::plays_at_once`): a list of one would only ask the player to confirm. With two
//! workers alive a crash asks which; with none it offers nothing to play.

use std::path::{Path, PathBuf};

use twice_world::hand;
use twice_world::level::{self, CardKind};
use twice_world::simulator::{Simulation, SimulationBuilder};

fn levels() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../levels")
}

fn simulation(path: &Path) -> Simulation {
    let loaded = level::load_level(path).unwrap_or_else(|error| panic!("{}: {error}", path.display()));
    SimulationBuilder::new(loaded.level, 1)
        .build()
        .expect("the level builds")
}

fn alive(simulation: &Simulation) -> usize {
    simulation.workers().iter().filter(|worker| worker.alive).count()
}

#[test]
fn a_crash_with_one_worker_alive_plays_at_once_and_with_two_asks_which() {
    let mut simulation = simulation(&levels().join("11-one-stands-down.level.ron"));
    simulation.run_until(|simulation| alive(simulation) == 1).unwrap();
    let targets = hand::targets(CardKind::CrashWorker, &simulation);
    assert_eq!(targets.len(), 1, "{targets:?}");
    assert_eq!(
        hand::plays_at_once(CardKind::CrashWorker, &simulation),
        Some(targets[0].play.clone())
    );

    let duplicate = hand::plays_at_once(CardKind::DuplicateWorker, &simulation).expect("one run to duplicate");
    simulation.play(duplicate).expect("the duplicate is started");
    simulation.run_until(|simulation| alive(simulation) == 2).unwrap();
    assert_eq!(hand::targets(CardKind::CrashWorker, &simulation).len(), 2);
    assert_eq!(hand::plays_at_once(CardKind::CrashWorker, &simulation), None);
}

#[test]
fn a_card_with_nothing_to_hit_or_played_elsewhere_never_plays_at_once() {
    // Level 01 before anything is sent: nothing on the wire for its wire cards.
    let first = simulation(&levels().join("01-naive-retry.level.ron"));
    for allowance in &first.level().cards {
        assert!(hand::targets(allowance.card, &first).is_empty(), "{:?}", allowance.card);
        assert_eq!(hand::plays_at_once(allowance.card, &first), None);
    }
    // The console's moves and a declaration are made from a chosen call or a draft.
    let look_it_up = simulation(&levels().join("07-look-it-up.level.ron"));
    for card in [
        CardKind::OperatorResolve,
        CardKind::OperatorCompensate,
        CardKind::DeclareTool,
    ] {
        assert_eq!(hand::plays_at_once(card, &look_it_up), None, "{card:?}");
    }
}
