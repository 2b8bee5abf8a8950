//! A level's lesson is level text, but the debrief tells it as the story of *this* run: what it
//! says about checkpoints and recoveries must be true of every run that tells it — every
//! shipped tape, every level's hinted move and every single move the campaign sweep finds that
//! wins a beatable level. A lesson that cannot hold for every such run is worded so it does.

use std::path::PathBuf;

use twice_world::campaign::Campaign;
use twice_world::campaign_sweep;
use twice_world::debrief;
use twice_world::ledger::LedgerStore;
use twice_world::level::{Level, TimedAction};
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
}

fn facts(simulation: &Simulation) -> Facts {
    let mut facts = Facts {
        recovered: false,
        recovered_from_nothing: false,
        recovered_from_checkpoint: false,
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

/// The words that would have failed above: 05's old lesson in a run whose recovery found no
/// checkpoint, and a recovery spoken of in a run without one.
#[test]
fn the_claims_are_read_from_the_words() {
    let no_checkpoint = Facts {
        recovered: true,
        recovered_from_nothing: true,
        recovered_from_checkpoint: false,
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
    };
    assert!(contradiction("When a recovered run replays a call", &no_recovery).is_some());
    assert!(contradiction("Penny made c3, and Ada got $50", &no_recovery).is_none());
}
