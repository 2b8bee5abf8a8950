//! Tape format version 1 → 2, by simulation.
//!
//! In version 1 a wire card played with nothing on the wire waited, armed, for the next
//! message; in version 2 it acts only on a message on the wire when it is played. A version 1
//! tape is replayed by its own rule, noting which message each wire card hit; the version 2
//! tape plays that card at the first phase its message was on the wire, naming its key. A card
//! that never met a message did nothing and is left out. The upgrade is kept only if the new
//! tape replays to the same verdict, guards and violations as the old one.

use std::path::{Path, PathBuf};

use crate::cards::{Aim, TAPE_VERSION, WireRule};
use crate::checker::Verdict;
use crate::error::InputError;
use crate::ledger::LedgerStore;
use crate::level::{self, LoadedTape, Tape, TimedAction};
use crate::simulator::{SimError, SimulationBuilder};

/// Why a tape could not be upgraded.
#[derive(Debug, thiserror::Error)]
pub enum UpgradeError {
    #[error("{}: cannot simulate: {source}", tape.display())]
    Simulation {
        tape: PathBuf,
        #[source]
        source: Box<SimError>,
    },
    #[error("{}: cannot judge: {detail}", tape.display())]
    Verdict { tape: PathBuf, detail: String },
    #[error(
        "{}: as version 2 it replays to {got}, not the {expected} it replayed to as version 1; left as it is",
        tape.display()
    )]
    Differs {
        tape: PathBuf,
        expected: String,
        got: String,
    },
    /// The tape does not load (its text, or its level).
    #[error(transparent)]
    Load(#[from] InputError),
    #[error("{}: cannot write: {source}", tape.display())]
    Write {
        tape: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// A tape in the current format, and what the upgrade changed.
#[derive(Debug)]
pub struct Upgraded {
    pub tape: Tape,
    /// Wire cards now played later, at the phase their message was on the wire.
    pub moved: usize,
    /// Wire cards that never met a message (they did nothing) and were left out.
    pub dropped: usize,
}

fn describe(verdict: &Verdict) -> String {
    let guards: Vec<&str> = verdict.stopped_by.iter().map(|guard| guard.name()).collect();
    format!("{} [{}]", verdict.outcome, guards.join(", "))
}

fn run(
    loaded: &LoadedTape,
    actions: Vec<TimedAction>,
    rule: WireRule,
) -> Result<crate::simulator::Simulation, SimError> {
    let mut builder = SimulationBuilder::new(loaded.level.level.clone(), loaded.tape.seed)
        .actions(actions)
        .wire_rule(rule)
        .ledger_store(LedgerStore::Memory);
    if let Some(guards) = loaded.tape.guards {
        builder = builder.guards(guards);
    }
    let mut simulation = builder.build()?;
    simulation.run()?;
    Ok(simulation)
}

/// Upgrades one loaded tape; a tape already in the current format comes back unchanged.
pub fn upgrade(loaded: &LoadedTape) -> Result<Upgraded, UpgradeError> {
    let simulation_error = |source| UpgradeError::Simulation {
        tape: loaded.path.clone(),
        source: Box::new(source),
    };
    let verdict_error = |error: crate::ledger::LedgerError| UpgradeError::Verdict {
        tape: loaded.path.clone(),
        detail: error.to_string(),
    };
    if loaded.tape.version >= TAPE_VERSION {
        return Ok(Upgraded {
            tape: loaded.tape.clone(),
            moved: 0,
            dropped: 0,
        });
    }
    let old = run(loaded, loaded.tape.actions.clone(), loaded.tape.wire_rule()).map_err(simulation_error)?;
    let old_verdict = old.verdict().map_err(verdict_error)?;
    let mut moved = 0;
    let mut dropped = 0;
    let mut actions = Vec::new();
    for (index, action) in old.played().iter().enumerate() {
        let hit = old.wire_hits().iter().find(|hit| hit.played == index);
        let play = &action.play;
        if !matches!(play.aim(), Aim::Message { .. }) {
            actions.push(action.clone());
            continue;
        }
        let Some(hit) = hit else {
            dropped += 1;
            continue;
        };
        let play = play.with_key(&hit.key);
        let at_phase = action.at_phase.max(hit.sent_at_phase + 1);
        if at_phase != action.at_phase {
            moved += 1;
        }
        actions.push(TimedAction {
            at_phase,
            play,
            fizzles: false,
        });
    }
    // Stable: moves for one phase keep the order they took effect in.
    actions.sort_by_key(|action| action.at_phase);
    let new = run(loaded, actions.clone(), WireRule::OnTheWireNow).map_err(simulation_error)?;
    let new_verdict = new.verdict().map_err(verdict_error)?;
    // The same verdict exactly: the same outcome, violations and guards, in order.
    if crate::level::Expectation::of(&old_verdict) != crate::level::Expectation::of(&new_verdict) {
        return Err(UpgradeError::Differs {
            tape: loaded.path.clone(),
            expected: describe(&old_verdict),
            got: describe(&new_verdict),
        });
    }
    Ok(Upgraded {
        tape: Tape {
            version: TAPE_VERSION,
            actions,
            ..loaded.tape.clone()
        },
        moved,
        dropped,
    })
}

/// The tape's file text in the current format: the comment lines it opened with, then the tape.
pub fn file_text(original: &str, tape: &Tape) -> String {
    let mut text = String::new();
    for line in original.lines() {
        if line.trim_start().starts_with("//") {
            text.push_str(line);
            text.push('\n');
        } else {
            break;
        }
    }
    text.push_str(&level::tape_to_ron(tape));
    text.push('\n');
    text
}

/// Upgrades the tape file at `path` in place (only when something changes).
pub fn upgrade_file(path: &Path) -> Result<Option<Upgraded>, UpgradeError> {
    let loaded = level::load_tape(path)?;
    if loaded.tape.version >= TAPE_VERSION {
        return Ok(None);
    }
    let upgraded = upgrade(&loaded)?;
    std::fs::write(path, file_text(&loaded.text, &upgraded.tape)).map_err(|source| UpgradeError::Write {
        tape: path.to_path_buf(),
        source,
    })?;
    Ok(Some(upgraded))
}
