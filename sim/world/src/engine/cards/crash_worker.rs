//! Crash a worker: SIGKILL, at the phase it is about to run. Its connection drops and its open
//! transaction rolls back; the supervisor starts a fresh process on its run after a while,
//! which recovers from the last checkpoint saved.

use rand::Rng;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use super::worker_aim::{self, in_phase};
use super::{Aim, Aims, Card, DealSpace, Made, Target};
use crate::level::Level;
use crate::outcome::Outcome;
use crate::runtime::worker::{Phase, WorkerState};
use crate::simulator::{PlayError, Simulation, moment};

/// `CrashWorker(worker: Some(1), in_phase: Some("save checkpoint"))`: worker `w<n>` (none: the
/// oldest one alive), and with `in_phase` only while it is about to run that phase (`send`,
/// `record outcome`, …): a tape says what moment it meant, and a crash aimed at another moment
/// is refused.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CrashWorker {
    #[serde(default)]
    pub worker: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "in_phase")]
    pub in_phase: Option<Phase>,
}

/// Tape format 1's crash: a worker, no phase.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CrashWorkerVersion1 {
    #[serde(default)]
    worker: Option<u32>,
}

/// The phases a worker runs before its request is on the wire.
fn is_before_the_request_left(phase: Phase) -> bool {
    matches!(
        phase,
        Phase::Start
            | Phase::LoadCheckpoint
            | Phase::ModelDecides
            | Phase::Reserve
            | Phase::CheckLedger
            | Phase::InsertStarted
            | Phase::Send
    )
}

/// What followed a crash before the request left, from billing and the checker: one credit,
/// none with the run waiting, or none at all.
fn after_an_early_crash(simulation: &Simulation) -> String {
    let owner = simulation.level().first_owner();
    let landed = simulation.effects().len();
    let Ok(verdict) = simulation.verdict() else {
        return "and the run could not be judged".to_owned();
    };
    let net: i64 = verdict.credits.iter().map(|credit| credit.net_cents).sum();
    match (landed, verdict.waiting.first()) {
        (1, _) => "so the recovery's credit was the only one".to_owned(),
        (0, Some(run)) => format!(
            "and nothing was paid after it either: {owner} has {} and {run} waits for someone to settle its call",
            crate::text::dollars(net)
        ),
        (0, None) => format!("and nothing was paid after it either: {owner} is still owed"),
        (count, _) => format!("and the credits that landed ({count}) all came after it"),
    }
}

impl Card for CrashWorker {
    const TITLE: &'static str = "Crash a worker";
    const AIMS: Aims = Aims::Worker;
    // A replay after the crash may repeat a call that took effect.
    const CAN_PAY_TWICE: bool = true;
    // Every crash can bring a recovery.
    const MAY_START_A_WORKER: bool = true;

    fn aim(&self) -> Aim<'_> {
        Aim::Worker {
            number: self.worker,
            in_phase: self.in_phase,
        }
    }

    fn problem(&self, _level: &Level) -> Option<String> {
        worker_aim::problem(self.worker)
    }

    fn doubt(&self) -> Option<String> {
        worker_aim::doubt(self.worker)
    }

    /// The worker named (alive), or the oldest alive; refused if it is not about to run
    /// `in_phase`. The move as made names the worker and the phase it was about to run.
    fn fire(&self, simulation: &mut Simulation) -> Result<Made, PlayError> {
        let (target, about_to) = worker_aim::aimed(simulation, self.worker, self.in_phase, PlayError::NoWorkerAlive)?;
        simulation.kill(target);
        Ok(Made {
            made: Some(
                CrashWorker {
                    worker: Some(target),
                    in_phase: Some(about_to),
                }
                .into(),
            ),
            ..Made::by_the_crew(format!(
                "w{target} is killed (SIGKILL), {}: its connection drops, its open transaction rolls back",
                moment(about_to)
            ))
        })
    }

    fn effect(simulation: &Simulation) -> String {
        if simulation.oldest_worker_alive().is_none() {
            return Self::no_target(simulation);
        }
        "SIGKILL a worker now, at the phase it is about to run".into()
    }

    fn targets(simulation: &Simulation) -> Vec<Target> {
        simulation
            .workers()
            .into_iter()
            .filter(|worker| worker.alive)
            .map(|worker| Target {
                label: format!("{} on {}, {}", worker.id, worker.run, moment(worker.phase)),
                play: CrashWorker {
                    worker: Some(worker.number),
                    in_phase: Some(worker.phase),
                }
                .into(),
            })
            .collect()
    }

    /// No worker alive: what became of each.
    fn no_target(simulation: &Simulation) -> String {
        let fates: Vec<String> = simulation
            .workers()
            .iter()
            .map(|worker| {
                let fate = if worker.crashed {
                    "crashed"
                } else {
                    match worker.state {
                        WorkerState::StoodDown => "stood down",
                        WorkerState::WaitingForPerson => "waits for a person",
                        _ => "finished its run",
                    }
                };
                format!("{} {fate}", worker.id)
            })
            .collect();
        if fates.is_empty() {
            return "no worker is alive to crash".to_owned();
        }
        let restart = match simulation.next_recovery_ms() {
            Some(at_ms) => format!(
                "; a fresh worker recovers the run in {} ms: step on",
                at_ms.saturating_sub(simulation.now_ms())
            ),
            None => String::new(),
        };
        format!(
            "no worker is alive to crash: {}{restart}",
            crate::text::and_list(&fates)
        )
    }

    fn deal(space: &DealSpace<'_>, rng: &mut ChaCha8Rng) -> (Self, Option<u64>) {
        let crash = CrashWorker {
            // Half the time the oldest worker alive, as the game's button does.
            worker: rng.random_bool(0.5).then(|| rng.random_range(1..=space.workers_max)),
            in_phase: None,
        };
        (crash, None)
    }

    fn missed(&self, simulation: &Simulation, _index: usize) -> Option<String> {
        // An early crash is a miss only for a crew that wants two payments.
        if simulation.level().goal != Outcome::PaidTwice {
            return None;
        }
        match self {
            CrashWorker {
                worker: Some(worker),
                in_phase: Some(phase),
            } if is_before_the_request_left(*phase) => Some(format!(
                "w{worker} was killed before its request left ({}): nothing had been paid, {}.",
                moment(*phase),
                after_an_early_crash(simulation)
            )),
            _ => None,
        }
    }

    fn read_version_1<'de, A: serde::de::VariantAccess<'de>>(variant: A) -> Result<Self, A::Error> {
        CrashWorkerVersion1::deserialize(super::serde_shape::VariantAsStruct(variant)).map(|old| CrashWorker {
            worker: old.worker,
            in_phase: None,
        })
    }
}
