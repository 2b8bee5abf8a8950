//! What the compensation and audit tapes' tests share: the campaign folder, a tape replayed
//! to its end on a SQLite ledger, and its debrief.

use std::path::PathBuf;

use twice_world::debrief::{self, Debrief};
use twice_world::ledger::LedgerStore;
use twice_world::simulator::Simulation;
use twice_world::{level, replay};

pub fn levels_folder() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../levels")
}

pub fn run_tape(name: &str) -> Simulation {
    let loaded = level::load_tape(&levels_folder().join(name)).expect("the tape loads");
    let mut simulation = replay::simulation_of(&loaded, LedgerStore::Sqlite).expect("the tape builds");
    simulation.run().expect("runs");
    simulation
}

pub fn told(simulation: &Simulation) -> Debrief {
    debrief::of(simulation, &simulation.verdict().expect("judged"))
}
