//! What the cards aimed at a worker share (a crash, a pause): how a tape names the moment it
//! meant, what is wrong with a worker number, and which worker a move hits now.

use serde::{Deserialize, Deserializer};

use crate::runtime::worker::Phase;
use crate::simulator::{PlayError, Simulation, WORKERS_MAX};

/// Reads `in_phase` by the phase names tapes have always spelled; any other name is refused
/// naming the field (the tape's path and line come with the parse error).
pub(super) fn in_phase<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<Phase>, D::Error> {
    Option::<String>::deserialize(deserializer)?
        .map(|text| {
            text.parse::<Phase>()
                .map_err(|error| serde::de::Error::custom(format!("in_phase: {error}")))
        })
        .transpose()
}

/// What is wrong with the worker a move names, read from a tape.
pub(super) fn problem(worker: Option<u32>) -> Option<String> {
    (worker == Some(0)).then(|| "workers are numbered from 1 (w1)".to_owned())
}

/// What `twice-sim check` doubts about the worker a move names: one that can never exist.
pub(super) fn doubt(worker: Option<u32>) -> Option<String> {
    let number = worker.filter(|number| *number > WORKERS_MAX)?;
    Some(format!(
        "worker w{number} can never exist: a simulation starts at most {WORKERS_MAX} workers"
    ))
}

/// The worker a move hits now: the one named (alive), or the oldest alive (`none_alive` when
/// none is), with the phase it is about to run; refused if that is not `in_phase`.
pub(super) fn aimed(
    simulation: &Simulation,
    worker: Option<u32>,
    in_phase: Option<Phase>,
    none_alive: PlayError,
) -> Result<(u32, Phase), PlayError> {
    let target = match worker {
        Some(number) => number,
        None => simulation.oldest_worker_alive().ok_or(none_alive)?,
    };
    let about_to = simulation
        .alive_worker_phase(target)
        .ok_or(PlayError::NoSuchWorker(target))?;
    match in_phase {
        Some(wanted) if wanted != about_to => Err(PlayError::NotInPhase {
            worker: target,
            wanted,
            about_to,
        }),
        _ => Ok((target, about_to)),
    }
}
