//! Which unknown calls wait for a person (the window's operator console counts them): only a
//! call whose run is paused on it or stopped for someone, never one a worker still drives by
//! itself — in backoff before its retry, or asking its hook.

// Only the campaign folder is used here.
#[allow(dead_code)]
mod support;

use twice_world::ledger::ExecutionRecord;
use twice_world::runtime::rules::Status;
use twice_world::simulator::Simulation;

fn unknown(simulation: &Simulation) -> Vec<ExecutionRecord> {
    simulation
        .ledger_records_every_node()
        .expect("the ledger reads")
        .into_iter()
        .map(|(_, record)| record)
        .filter(|record| matches!(record.status, Status::Started | Status::Indeterminate))
        .collect()
}

fn simulation_of(name: &str) -> Simulation {
    let loaded = twice_world::level::load_tape(&support::levels_folder().join(name)).expect("the tape loads");
    twice_world::replay::simulation_of(&loaded, twice_world::ledger::LedgerStore::Memory).expect("the tape builds")
}

#[test]
fn a_retried_call_is_unknown_but_waits_for_nobody() {
    // 01 retries a write whose answer was lost: the call is unknown while the worker waits out
    // its backoff and sends it again; no person is asked, ever.
    let mut simulation = simulation_of("01-naive-retry.win.tape.ron");
    let mut unknown_phases = 0;
    while simulation.step().expect("steps") {
        let calls = unknown(&simulation);
        unknown_phases += usize::from(!calls.is_empty());
        for record in &calls {
            assert!(
                !simulation.waits_for_a_person(record),
                "phase {}: {} is told as waiting for a person while its worker retries it",
                simulation.phase(),
                record.key
            );
        }
    }
    assert!(
        unknown_phases > 0,
        "the run never had an unknown call: nothing was checked"
    );
}

#[test]
fn a_paused_run_waits_for_a_person() {
    // 04's pause: the answer is lost, the call is unknown and the run pauses on it.
    let mut simulation = simulation_of("04-pause.lost-answer.tape.ron");
    simulation.run().expect("runs");
    let calls = unknown(&simulation);
    assert!(!calls.is_empty(), "the lost answer leaves the call unknown");
    for record in &calls {
        assert!(
            simulation.waits_for_a_person(record),
            "{} is paused on but not told as waiting",
            record.key
        );
    }
}
