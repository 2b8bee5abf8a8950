//! What the cards aimed at a run share: the run must be the level's, and the hand offers one
//! target per run.

use super::{Card, Made, Play, Target};
use crate::simulator::{PlayError, Simulation};

/// Refused unless `run` is one of the level's runs.
pub(super) fn check_run(simulation: &Simulation, run: &str) -> Result<(), PlayError> {
    if !simulation.level().runs.iter().any(|script| script.id == run) {
        return Err(PlayError::NoSuchRun(run.to_owned()));
    }
    Ok(())
}

/// One target per run of the level: `label` names it, `aimed` makes the move.
pub(super) fn offers(
    simulation: &Simulation,
    label: impl Fn(&str) -> String,
    aimed: impl Fn(String) -> Play,
) -> Vec<Target> {
    simulation
        .level()
        .runs
        .iter()
        .map(|run| Target {
            label: label(&run.id),
            play: aimed(run.id.to_string()),
        })
        .collect()
}

/// Arms `card` for its moment on `run` (one of the level's), said in `text`.
pub(super) fn arm<C: Card>(card: &C, simulation: &mut Simulation, run: &str, text: String) -> Result<Made, PlayError> {
    check_run(simulation, run)?;
    simulation.arm(card.clone().into());
    Ok(Made::by_the_crew(text))
}
