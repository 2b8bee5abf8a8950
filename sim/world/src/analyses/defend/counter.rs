//! A counter-example to a defence: the moves that beat it, as a tape of the defended level that
//! `twice-sim replay` replays to the same verdict.

use std::path::PathBuf;

use serde::Serialize;

use crate::checker::Outcome;
use crate::ledger::LedgerStore;
use crate::level::{Level, Tape};
use crate::simulator::{SimError, SimulationBuilder};

/// Where a counter-example came from.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum CounterSource {
    /// A known heist (a shipped tape) got through.
    KnownHeist { tape: PathBuf },
    /// The explorer found a schedule that beats the defence.
    Explorer { schedule_index: u64 },
}

/// A schedule that beats a defence, as a tape of the defended level with the defence's guards:
/// `twice-sim replay` shows it getting through.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct CounterExample {
    pub source: CounterSource,
    pub outcome: Outcome,
    pub tape: Tape,
}

impl CounterExample {
    /// The counter-example's run, simulated to its end against `level` (the defended level):
    /// the same seed, guards, wire rule and moves its tape holds, in a memory ledger, so a
    /// screen can show its timeline.
    pub fn simulation(&self, level: &Level) -> Result<crate::simulator::Simulation, SimError> {
        let mut simulation = SimulationBuilder::new(level.clone(), self.tape.seed)
            .guards(self.tape.guards.unwrap_or(level.guards))
            .actions(self.tape.actions.clone())
            .wire_rule(self.tape.wire_rule())
            .ledger_store(LedgerStore::Memory)
            .build()?;
        simulation.run()?;
        Ok(simulation)
    }

    /// Where it came from, in words: "the known heist 02-….tape.ron" or "the explorer's
    /// schedule 17".
    pub fn source_words(&self) -> String {
        match &self.source {
            CounterSource::KnownHeist { tape } if tape.as_os_str().is_empty() => "Penny left alone (no moves)".into(),
            CounterSource::KnownHeist { tape } => format!(
                "the known heist {}",
                tape.file_name().map_or_else(
                    || tape.display().to_string(),
                    |name| name.to_string_lossy().into_owned()
                )
            ),
            CounterSource::Explorer { schedule_index } => format!("the explorer's schedule {schedule_index}"),
        }
    }
}

impl CounterExample {
    /// The tape as a replay holds it: a known heist from another level may carry moves that
    /// fizzle here (marked `fizzles: true`, as the replay demands of a move meant to be refused)
    /// or that met a run gone quiet before their phase (moved to the phase they were played
    /// at). Neither changes the run: the same moves are played at the same moments.
    pub fn replayable_tape(&self, level: &Level) -> Result<Tape, SimError> {
        let simulation = self.simulation(level)?;
        let mut tape = self.tape.clone();
        for misplay in simulation.misplays() {
            let Some(action) = tape.actions.get_mut(misplay.index) else {
                continue;
            };
            if misplay.fizzled {
                action.fizzles = true;
            } else {
                action.at_phase = misplay.met_phase;
            }
        }
        Ok(tape)
    }
}
