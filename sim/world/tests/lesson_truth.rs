//! A level's lesson is level text, but the debrief tells it as the story of *this* run: what it
//! says about checkpoints and recoveries must be true of every run that tells it — every
//! shipped tape, every level's hinted move and every single move the campaign sweep finds that
//! wins a beatable level. A lesson that cannot hold for every such run is worded so it does.
//! The same holds for the story an unbeatable level tells when it holds (its `debrief:`),
//! whatever the player did — a whole hand, one card, or nothing at all.

use std::path::PathBuf;

use twice_world::campaign::Campaign;
use twice_world::campaign_sweep;
use twice_world::checker::Outcome;
use twice_world::debrief;
use twice_world::ledger::LedgerStore;
use twice_world::level::{Level, TimedAction};
use twice_world::runtime::rules::Status;
use twice_world::simulator::{Simulation, SimulationBuilder};

fn campaign() -> Campaign {
    let folder = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../levels");
    Campaign::load(&folder).unwrap_or_else(|problems| {
        panic!(
            "the campaign does not load:\n{}",
            problems.iter().map(ToString::to_string).collect::<Vec<_>>().join("\n")
        )
    })
}

/// What a run did that a lesson may speak of, read from its own timeline.
struct Facts {
    /// A run started again after a crash (the start row says "(a recovery").
    recovered: bool,
    /// A recovery found no checkpoint and started from the beginning.
    recovered_from_nothing: bool,
    /// A recovery loaded a saved checkpoint.
    recovered_from_checkpoint: bool,
    /// The run ended with a call the runtime does not know the end of (flagged, waiting).
    unknown: bool,
    /// The player played at least one card.
    played: bool,
}

fn facts(simulation: &Simulation) -> Facts {
    // Unknown to the runtime: its ledger ends with a call recorded indeterminate (billing may
    // well have paid, as the checker, who counts effects, knows), a run waits on one, or a
    // credit is flagged as not known.
    let indeterminate = simulation
        .ledger_records()
        .is_ok_and(|records| records.iter().any(|record| record.status == Status::Indeterminate));
    let unknown = indeterminate
        || simulation.verdict().is_ok_and(|verdict| {
            !verdict.waiting.is_empty()
                || verdict
                    .credits
                    .iter()
                    .any(|credit| credit.outcome == Outcome::UnknownFlagged)
        });
    let mut facts = Facts {
        recovered: false,
        recovered_from_nothing: false,
        recovered_from_checkpoint: false,
        unknown,
        played: !simulation.played().is_empty(),
    };
    // A recovery is announced by the supervisor ("w2 recovers the run after a crash"), or by
    // its own load row; the next checkpoint load after it says what it found.
    let mut recovering = false;
    for entry in simulation.timeline() {
        if entry.text.contains("recovers the run") || entry.text.contains("(a recovery") {
            facts.recovered = true;
            recovering = true;
        }
        if recovering && entry.kind == "load checkpoint" {
            facts.recovered_from_nothing |= entry.text.contains("no checkpoint");
            facts.recovered_from_checkpoint |= entry.text.contains("loads checkpoint v");
            recovering = false;
        }
    }
    facts
}

/// The claims a lesson's words make about the run, each against what the run did. Returns the
/// first claim the run contradicts.
fn contradiction(text: &str, facts: &Facts) -> Option<&'static str> {
    let lower = text.to_lowercase();
    let speaks_of_recovery = ["recovered run", "recovery", "fresh process", "fresh one", "the replay"]
        .iter()
        .any(|words| lower.contains(words));
    if speaks_of_recovery && !facts.recovered {
        return Some("a recovery, in a run with none");
    }
    if lower.contains("checkpoint was saved before") && !facts.recovered_from_checkpoint {
        return Some("a checkpoint saved before the tool ran, in a run whose recovery loaded none");
    }
    if lower.contains("found no checkpoint") && !facts.recovered_from_nothing {
        return Some("a recovery that found no checkpoint, in a run whose recovery loaded one");
    }
    run_contradiction(&lower, facts)
}

/// The claims any story makes about the run as it ended, rules aside (a held level's story
/// states its rules in general — "every replay finds a row" — and is checked by these only).
fn run_contradiction(lower: &str, facts: &Facts) -> Option<&'static str> {
    // "Nobody knows yet whether Ada has her money" told after a run that paid her once.
    let speaks_of_unknown = ["nobody knows yet", "still unknown", "not yet known"]
        .iter()
        .any(|words| lower.contains(words));
    if speaks_of_unknown && !facts.unknown {
        return Some("a credit nobody knows yet, in a run where every credit is known");
    }
    let speaks_of_moves = ["you played", "your moves", "your cards"]
        .iter()
        .any(|words| lower.contains(words) && !lower.contains(&format!("whatever {words}")));
    if speaks_of_moves && !facts.played {
        return Some("the player's moves, in a run where no card was played");
    }
    None
}

fn simulate(level: &Level, seed: u64, actions: Vec<TimedAction>) -> Simulation {
    let mut simulation = SimulationBuilder::new(level.clone(), seed)
        .actions(actions)
        .ledger_store(LedgerStore::Memory)
        .build()
        .expect("the run builds");
    simulation.run().expect("the run simulates");
    simulation
}

/// Checks the lesson words `simulation`'s debrief shows; true when it told the lesson's story.
fn check(what: &str, simulation: &Simulation) -> bool {
    let verdict = simulation.verdict().expect("the run is judged");
    let told = debrief::of(simulation, &verdict);
    // The rule line states a rule in general ("a recovered run replays…"); the story is the one
    // told as what happened in this run.
    if told.story.is_empty() || !told.follows_lesson {
        return false;
    }
    if let Some(claim) = contradiction(&told.story, &facts(simulation)) {
        panic!("{what}: the lesson's story speaks of {claim}: {}", told.story);
    }
    true
}

#[test]
fn every_lesson_told_is_true_of_the_run_that_tells_it() {
    let campaign = campaign();
    let mut stories = 0;
    for loaded in &campaign.tapes {
        let mut simulation = twice_world::replay::simulation_of(loaded, LedgerStore::Memory).expect("the tape builds");
        simulation.run().expect("the tape simulates");
        stories += usize::from(check(&loaded.path.display().to_string(), &simulation));
    }
    for loaded in &campaign.levels {
        let level = &loaded.level;
        let hinted = simulate(level, campaign_sweep::SWEEP_SEED, level.hints.move_actions.clone());
        stories += usize::from(check(&format!("{}'s hinted move", level.id), &hinted));
        if level.unbeatable {
            continue;
        }
        for swept in campaign_sweep::single_moves(level).expect("the level sweeps") {
            if !swept.wins {
                continue;
            }
            let what = format!("{} {:?} before phase {}", level.id, swept.play, swept.at_phase);
            let actions = vec![TimedAction {
                at_phase: swept.at_phase,
                play: swept.play,
                fizzles: false,
            }];
            stories += usize::from(check(&what, &simulate(level, campaign_sweep::SWEEP_SEED, actions)));
        }
    }
    println!("checked {stories} runs that told their level's story");
    assert!(stories > 0, "no run told its level's story: nothing was checked");
}

/// The story an unbeatable level tells when it holds (`debrief:`), after every shipped tape,
/// its hinted move and a run where the player played nothing (the newcomer who only steps).
#[test]
fn every_held_story_is_true_whatever_the_player_did() {
    let campaign = campaign();
    let mut stories = 0;
    let mut check_held = |what: &str, simulation: &Simulation| {
        let verdict = simulation.verdict().expect("the run is judged");
        let told = debrief::of(simulation, &verdict);
        if told.story.is_empty() {
            return;
        }
        if let Some(claim) = run_contradiction(&told.story.to_lowercase(), &facts(simulation)) {
            panic!("{what}: the story speaks of {claim}: {}", told.story);
        }
        stories += 1;
    };
    for loaded in &campaign.tapes {
        let mut simulation = twice_world::replay::simulation_of(loaded, LedgerStore::Memory).expect("the tape builds");
        simulation.run().expect("the tape simulates");
        check_held(&loaded.path.display().to_string(), &simulation);
    }
    for loaded in &campaign.levels {
        let level = &loaded.level;
        let hinted = simulate(level, campaign_sweep::SWEEP_SEED, level.hints.move_actions.clone());
        check_held(&format!("{}'s hinted move", level.id), &hinted);
        let untouched = simulate(level, campaign_sweep::SWEEP_SEED, Vec::new());
        check_held(&format!("{} with no card played", level.id), &untouched);
    }
    println!("checked {stories} stories");
    assert!(stories > 0, "no run told a story: nothing was checked");
}

/// The words that would have failed above: 05's old lesson in a run whose recovery found no
/// checkpoint, and a recovery spoken of in a run without one.
#[test]
fn the_claims_are_read_from_the_words() {
    let no_checkpoint = Facts {
        recovered: true,
        recovered_from_nothing: true,
        recovered_from_checkpoint: false,
        unknown: false,
        played: true,
    };
    assert!(
        contradiction(
            "The checkpoint was saved before the tool ran, so the fresh process replayed the step",
            &no_checkpoint
        )
        .is_some()
    );
    let no_recovery = Facts {
        recovered: false,
        recovered_from_nothing: false,
        recovered_from_checkpoint: false,
        unknown: false,
        played: false,
    };
    assert!(contradiction("When a recovered run replays a call", &no_recovery).is_some());
    assert!(contradiction("Penny made c3, and Ada got $50", &no_recovery).is_none());
    // 02's old held story after a run with no card played: Ada was paid once, known.
    assert!(contradiction("Nobody knows yet whether Ada has her money", &no_recovery).is_some());
    assert!(contradiction("Every fault you played ended the same way", &no_recovery).is_some());
    assert!(contradiction("Whatever you played, one credit landed", &no_recovery).is_none());
    let unknown_after_a_card = Facts {
        unknown: true,
        played: true,
        ..no_recovery
    };
    assert!(contradiction("Nobody knows yet whether Ada has her money", &unknown_after_a_card).is_none());
}
