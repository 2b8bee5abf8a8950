//! Start a duplicate worker: a second process drives a run that is already being driven, as a
//! deploy that overlaps old and new workers does. In a level with a second node it starts on
//! the other machine, whose ledger is its own.

use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use super::{Aim, Aims, Card, DealSpace, Made, Target, runs};
use crate::simulator::{Actor, FIRST_NODE, PlayError, SECOND_NODE, Simulation, WORKERS_MAX};

/// `DuplicateWorker(run: "r1")`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DuplicateWorker {
    pub run: String,
}

/// The twin on `run` met the first worker's record and stood down.
fn twin_stood_down(simulation: &Simulation, run: &str) -> bool {
    simulation.timeline().iter().any(|entry| {
        matches!(entry.actor, Actor::Worker(number) if number > 1)
            && entry.run.as_deref() == Some(run)
            && entry.kind == "stand down"
    })
}

impl Card for DuplicateWorker {
    const TITLE: &'static str = "Start a duplicate worker";
    const AIMS: Aims = Aims::Run;
    // A second process on the run may make the call again.
    const CAN_PAY_TWICE: bool = true;
    const MAY_START_A_WORKER: bool = true;

    fn aim(&self) -> Aim<'_> {
        Aim::Run(&self.run)
    }

    fn fire(&self, simulation: &mut Simulation) -> Result<Made, PlayError> {
        runs::check_run(simulation, &self.run)?;
        if !simulation.can_start_a_worker() {
            return Err(PlayError::TooManyWorkers);
        }
        let node = if simulation.level().world.second_node {
            SECOND_NODE
        } else {
            FIRST_NODE
        };
        simulation.start_worker(&self.run, "is started as a duplicate", node);
        Ok(Made::by_the_crew(format!("a second worker is started on {}", self.run)))
    }

    fn effect(simulation: &Simulation) -> String {
        if !simulation.can_start_a_worker() {
            return Self::no_target(simulation);
        }
        "start a second worker on a run you choose".into()
    }

    fn targets(simulation: &Simulation) -> Vec<Target> {
        if !simulation.can_start_a_worker() {
            return Vec::new();
        }
        runs::offers(
            simulation,
            |run| format!("a twin on run {run}"),
            |run| DuplicateWorker { run }.into(),
        )
    }

    fn no_target(simulation: &Simulation) -> String {
        if simulation.level().runs.is_empty() {
            return "this level has no run to start a twin on".to_owned();
        }
        format!("already {WORKERS_MAX} workers started; no more")
    }

    fn deal(space: &DealSpace<'_>, rng: &mut ChaCha8Rng) -> (Self, Option<u64>) {
        (DuplicateWorker { run: space.run(rng) }, None)
    }

    fn missed(&self, simulation: &Simulation, _index: usize) -> Option<String> {
        twin_stood_down(simulation, &self.run).then(|| {
            format!(
                "The twin on {} came too late or too early to send anything of its own: it met the first worker's record and stood down.",
                self.run
            )
        })
    }
}
