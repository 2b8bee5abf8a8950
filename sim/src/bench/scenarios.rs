//! Figure 3: complete level scenarios per second on one core.
//!
//! A scenario is what `twice-sim replay` does with one tape: build the simulation (a fresh
//! in-memory ledger), run it until the level is quiet and ask the checker for its verdict.
//! Measured on both ledger stores: SQLite, as replays use it, and the memory store, as the
//! explorer uses it (same answers, see `tests/ledger_stores.rs`).
//! The tapes are the level's own, played in turn; every verdict is compared with the one
//! the tape expects, so a faster simulator that got an answer wrong fails the benchmark.

use std::path::{Path, PathBuf};
use std::time::Instant;

use super::BenchError;
use super::machine::thread_cpu_seconds;
use twice_world::ledger::LedgerStore;
use twice_world::level::{self, LoadedLevel, LoadedTape};
use twice_world::simulator::SimulationBuilder;

/// Time spent on a measurement.
#[derive(Clone, Copy, Debug)]
pub struct Spent {
    pub wall_seconds: f64,
    /// The time this thread actually ran, where the system says (Linux): on a machine shared
    /// with other work, this is the "one core" figure; the clock also counts time spent waiting
    /// for a core.
    pub cpu_seconds: Option<f64>,
}

/// The level the figure is about: every guard on, a full hand.
pub const VAULT_LEVEL_FILE: &str = "19-vault.level.ron";

/// A level and the tapes recorded for it, loaded once.
#[derive(Debug)]
pub struct Scenarios {
    pub level: LoadedLevel,
    pub tapes: Vec<LoadedTape>,
}

impl Scenarios {
    /// Loads `level_path` and every `*.tape.ron` beside it that was recorded for it.
    pub fn load(level_path: &Path) -> Result<Scenarios, BenchError> {
        let level = level::load_level(level_path).map_err(|error| BenchError::Input(error.to_string()))?;
        let folder = level_path.parent().filter(|parent| !parent.as_os_str().is_empty());
        let folder = folder.unwrap_or(Path::new("."));
        let canonical_level = level_path
            .canonicalize()
            .map_err(|error| BenchError::Input(format!("{}: {error}", level_path.display())))?;
        let mut tapes = Vec::new();
        for path in level::files_below(folder, ".tape.ron").map_err(|error| BenchError::Input(error.to_string()))? {
            let tape = level::load_tape(&path).map_err(|error| BenchError::Input(error.to_string()))?;
            if tape.level.path.canonicalize().ok().as_ref() == Some(&canonical_level) {
                tapes.push(tape);
            }
        }
        if tapes.is_empty() {
            return Err(BenchError::Input(format!(
                "{}: no tape beside it was recorded for this level, so there is nothing to replay",
                level_path.display()
            )));
        }
        Ok(Scenarios { level, tapes })
    }

    /// Plays `count` scenarios on SQLite, the tapes in turn, on this thread. Returns the
    /// seconds spent.
    pub fn play(&self, count: u64) -> Result<f64, BenchError> {
        Ok(self.play_timed(count, LedgerStore::Sqlite)?.wall_seconds)
    }

    /// Plays `count` scenarios with their ledgers in `store`, and says how long it took by the
    /// clock and on the CPU.
    pub fn play_timed(&self, count: u64, store: LedgerStore) -> Result<Spent, BenchError> {
        let cpu_before = thread_cpu_seconds();
        let started = Instant::now();
        for (tape, _) in self.tapes.iter().cycle().zip(0..count) {
            self.play_one(tape, store)?;
        }
        let wall_seconds = started.elapsed().as_secs_f64();
        let cpu_seconds = match (cpu_before, thread_cpu_seconds()) {
            (Some(before), Some(after)) => Some(after - before),
            _ => None,
        };
        Ok(Spent {
            wall_seconds,
            cpu_seconds,
        })
    }

    fn play_one(&self, tape: &LoadedTape, store: LedgerStore) -> Result<(), BenchError> {
        let mut builder = SimulationBuilder::new(self.level.level.clone(), tape.tape.seed)
            .actions(tape.tape.actions.clone())
            .ledger_store(store);
        if let Some(guards) = tape.tape.guards {
            builder = builder.guards(guards);
        }
        let failed = |error: String| BenchError::Input(format!("{}: {error}", tape.path.display()));
        let mut simulation = builder.build().map_err(|error| failed(error.to_string()))?;
        simulation.run().map_err(|error| failed(error.to_string()))?;
        let verdict = simulation.verdict().map_err(|error| failed(error.to_string()))?;
        // The verdict alone: the bench measures the simulator, and the vault's tapes name no
        // money or keys.
        if !tape.tape.expect.verdict_matches(&verdict) {
            return Err(BenchError::Unexpected(format!(
                "{}: expected {} but the simulator said {}",
                tape.path.display(),
                tape.tape.expect.verdict,
                verdict.outcome
            )));
        }
        Ok(())
    }

    pub fn tape_paths(&self) -> Vec<PathBuf> {
        self.tapes.iter().map(|tape| tape.path.clone()).collect()
    }
}
