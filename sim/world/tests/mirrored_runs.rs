//! What a driver that mirrors a simulation elsewhere reads of it (the runtime protocol plays a
//! tape's run again on real processes): each step names the event it ran, and a tape's run can
//! be made again under any set of guards, its moves played where they meet what they hit.

use std::path::PathBuf;

use twice_world::checker::Outcome;
use twice_world::counterfactual::{self, Answer};
use twice_world::level;
use twice_world::replay;
use twice_world::runtime::guards::{Guard, Guards};
use twice_world::runtime::ledger::LedgerStore;
use twice_world::runtime::worker::Phase;
use twice_world::simulator::{Actor, Simulation, StepEvent};

fn finished(tape: &str) -> Simulation {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../levels")
        .join(tape);
    let tape = level::load_tape(&path).expect("a campaign tape");
    let mut simulation = replay::simulation_of(&tape, LedgerStore::Memory).expect("builds");
    simulation.run().expect("runs");
    simulation
}

#[test]
fn every_step_names_the_event_it_ran_and_a_quiet_level_names_none() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../levels/05-crash-replay.win.tape.ron");
    let tape = level::load_tape(&path).expect("a campaign tape");
    let mut simulation = replay::simulation_of(&tape, LedgerStore::Memory).expect("builds");
    assert_eq!(simulation.last_step(), None, "nothing ran before the first step");
    let mut worker_phases = Vec::new();
    let mut delivered = 0;
    while simulation.step().expect("steps") {
        let phase = simulation.phase() - 1;
        match simulation.last_step().expect("a step that ran names its event") {
            StepEvent::Worker { worker, phase: ran } => {
                // The timeline's line for that phase is the worker's (or its model's).
                let line = simulation
                    .timeline()
                    .iter()
                    .rev()
                    .find(|entry| entry.phase == phase && entry.actor != Actor::Crew)
                    .expect("a line for the phase");
                assert!(
                    line.actor == Actor::Worker(*worker) || line.actor == Actor::Model,
                    "phase {phase}: {line:?} for w{worker} {ran}"
                );
                worker_phases.push((*worker, *ran));
            }
            StepEvent::Deliver { .. } => delivered += 1,
            _ => {}
        }
    }
    assert_eq!(
        simulation.last_step(),
        None,
        "the step that found the level quiet ran nothing"
    );
    assert!(worker_phases.contains(&(1, Phase::Send)) && worker_phases.contains(&(2, Phase::LoadCheckpoint)));
    assert!(delivered >= 2, "a request and its answer arrived");
}

#[test]
fn a_tape_s_run_under_other_guards_plays_its_moves_where_they_meet_what_they_hit() {
    let own = finished("05-crash-replay.win.tape.ron");
    // Its own guards: the tape's run itself.
    let again = counterfactual::under_guards(&own, own.guards()).expect("made again");
    assert!(matches!(&again.answer, Answer::Ran(result) if result.outcome == Outcome::PaidTwice));
    // Every guard on: the crash still lands before the checkpoint, and the ledger holds.
    let vault = counterfactual::under_guards(&own, Guards::all_on()).expect("made again");
    assert_eq!(vault.guards, Guards::all_on());
    assert!(
        matches!(&vault.answer, Answer::Ran(result) if result.outcome == Outcome::PaidOnce),
        "{vault:?}"
    );
    assert_eq!(vault.moves.len(), 1);
    // A move aimed at a moment only a naive runtime has cannot be played under the guards that
    // remove it: the twin started after the naive check's insert.
    let naive = finished("10-check-then-insert.too-late.tape.ron");
    let atomic = counterfactual::under_guards(&naive, Guards::all_on()).expect("made again");
    assert!(
        matches!(&atomic.answer, Answer::CannotSay { fizzled } if !fizzled.is_empty()),
        "{atomic:?}"
    );
    let one_off = Guards::all_on().with(Guard::AtomicReservation, false);
    assert!(
        counterfactual::under_guards(&naive, one_off)
            .expect("made again")
            .result()
            .is_some()
    );
}
