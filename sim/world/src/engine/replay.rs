//! Replaying a tape: the level, the seed and the moves, run to the end and judged, then
//! compared with what the tape expects — the verdict, the guards that held, and the
//! checker's violations (a tape that does not expect one fails on it).

use std::path::PathBuf;

use serde::Serialize;

use crate::checker::Verdict;
use crate::ledger::{LedgerError, LedgerStore};
use crate::level::{Expectation, LoadedTape};
use crate::simulator::{SimError, Simulation, SimulationBuilder};

/// Why a tape could not be replayed at all.
#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
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
}

/// A verdict matches an expectation when the outcome, the guards that held (in order) and the
/// kinds of violation found all agree.
pub fn matches(expected: &Expectation, verdict: &Verdict) -> bool {
    expected.verdict == verdict.outcome
        && expected.stopped_by == verdict.stopped_by
        && expected.violations == verdict.violation_kinds()
}

/// One tape's replay.
#[derive(Debug, Serialize)]
pub struct ReplayResult {
    pub tape: PathBuf,
    pub level: String,
    pub expected: Expectation,
    pub verdict: Verdict,
    pub as_expected: bool,
}

/// Builds the tape's simulation (on `store`) without running it.
pub fn simulation_of(tape: &LoadedTape, store: LedgerStore) -> Result<Simulation, SimError> {
    let mut builder = SimulationBuilder::new(tape.level.level.clone(), tape.tape.seed)
        .actions(tape.tape.actions.clone())
        .wire_rule(tape.tape.wire_rule())
        .ledger_store(store);
    if let Some(guards) = tape.tape.guards {
        builder = builder.guards(guards);
    }
    builder.build()
}

/// Replays one loaded tape on SQLite, as `twice-sim replay` does.
pub fn replay_tape(tape: &LoadedTape) -> Result<ReplayResult, ReplayError> {
    replay_tape_on(tape, LedgerStore::Sqlite)
}

/// Replays one loaded tape on the given store.
pub fn replay_tape_on(tape: &LoadedTape, store: LedgerStore) -> Result<ReplayResult, ReplayError> {
    let simulation_error = |source| ReplayError::Simulation {
        tape: tape.path.clone(),
        source: Box::new(source),
    };
    let mut simulation = simulation_of(tape, store).map_err(simulation_error)?;
    simulation.run().map_err(simulation_error)?;
    let verdict = simulation.verdict().map_err(|source| ReplayError::Verdict {
        tape: tape.path.clone(),
        source: Box::new(source),
    })?;
    Ok(ReplayResult {
        tape: tape.path.clone(),
        level: tape.level.level.id.clone(),
        expected: tape.tape.expect.clone(),
        as_expected: matches(&tape.tape.expect, &verdict),
        verdict,
    })
}
