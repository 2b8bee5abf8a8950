//! Pause a worker: SIGSTOP, then SIGCONT after a while. The stopped worker runs nothing — its
//! next phase, its timers and answers addressed to it wait — while the rest of the world goes
//! on: the ledger's lease on a call it started keeps ageing, so a second worker may take the
//! call over while the stopped one still has its request in flight (a garbage-collection
//! pause or a frozen container does this without any crash).

use rand::Rng;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Deserializer, Serialize};

use super::worker_aim::{self, in_phase};
use super::{Aim, Aims, Card, DealSpace, Made, Target};
use crate::level::Level;
use crate::runtime::worker::Phase;
use crate::simulator::{PAUSE_MS_MAX, PlayError, Simulation, moment};

/// `PauseWorker(worker: Some(1), ms: 400, in_phase: Some("wait for answer"))`: worker `w<n>`
/// (none: the oldest one alive) stops for `ms` of simulated time (1 to [`PAUSE_MS_MAX`]), and
/// with `in_phase` only while it is about to run that phase, as a crash names its moment.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PauseWorker {
    #[serde(default)]
    pub worker: Option<u32>,
    #[serde(deserialize_with = "pause_ms")]
    pub ms: u32,
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "in_phase")]
    pub in_phase: Option<Phase>,
}

/// Reads `ms` within its limit; any other length is refused naming the field (the tape's path
/// and line come with the parse error).
fn pause_ms<'de, D: Deserializer<'de>>(deserializer: D) -> Result<u32, D::Error> {
    let ms = u64::deserialize(deserializer)?;
    match u32::try_from(ms) {
        Ok(ms) if (1..=PAUSE_MS_MAX).contains(&ms) => Ok(ms),
        _ => Err(serde::de::Error::custom(format!(
            "ms: a worker is paused for 1 to {PAUSE_MS_MAX} ms, not {ms}"
        ))),
    }
}

/// How long a pause played from the hand lasts: the level's slow answer (`slow_response_ms`),
/// the world's own measure of "longer than the timeout".
fn hand_pause_ms(simulation: &Simulation) -> u32 {
    simulation.level().world.slow_response_ms.clamp(1, PAUSE_MS_MAX)
}

impl Card for PauseWorker {
    const TITLE: &'static str = "Pause a worker";
    const AIMS: Aims = Aims::Worker;
    // A stopped worker does nothing twice by itself: another worker (a twin, a recovery) must
    // take its call, and that worker comes from a card of its own.
    const CAN_PAY_TWICE: bool = false;
    // Tape format 1 had no pauses.
    const IN_TAPE_VERSION_1: bool = false;

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
    /// `in_phase` or is stopped already. The move as made names the worker and its phase.
    fn fire(&self, simulation: &mut Simulation) -> Result<Made, PlayError> {
        let (target, about_to) = worker_aim::aimed(simulation, self.worker, self.in_phase, PlayError::NoWorkerToPause)?;
        let until_ms = simulation.pause(target, self.ms)?;
        Ok(Made {
            made: Some(
                PauseWorker {
                    worker: Some(target),
                    ms: self.ms,
                    in_phase: Some(about_to),
                }
                .into(),
            ),
            ..Made::by_the_crew(format!(
                "w{target} is stopped (SIGSTOP) for {} ms, {}: until {until_ms} ms it runs nothing — its timers \
                 and any answer to it wait — while the clock, and every lease in the ledger, runs on",
                self.ms,
                moment(about_to)
            ))
        })
    }

    fn effect(simulation: &Simulation) -> String {
        if Self::targets(simulation).is_empty() {
            return Self::no_target(simulation);
        }
        format!(
            "SIGSTOP a worker for {} ms: it does nothing while time and its leases run on",
            hand_pause_ms(simulation)
        )
    }

    fn targets(simulation: &Simulation) -> Vec<Target> {
        let ms = hand_pause_ms(simulation);
        simulation
            .workers()
            .into_iter()
            .filter(|worker| worker.alive && worker.paused_until_ms.is_none())
            .map(|worker| Target {
                label: format!("{} on {}, {}: {ms} ms", worker.id, worker.run, moment(worker.phase)),
                play: PauseWorker {
                    worker: Some(worker.number),
                    ms,
                    in_phase: Some(worker.phase),
                }
                .into(),
            })
            .collect()
    }

    /// No worker alive, or every one alive stopped already.
    fn no_target(simulation: &Simulation) -> String {
        let stopped: Vec<String> = simulation
            .workers()
            .iter()
            .filter(|worker| worker.alive)
            .filter_map(|worker| {
                worker
                    .paused_until_ms
                    .map(|until_ms| format!("{} until {until_ms} ms", worker.id))
            })
            .collect();
        if stopped.is_empty() {
            "no worker is alive to pause".to_owned()
        } else {
            format!(
                "every worker alive is stopped already: {}",
                crate::text::and_list(&stopped)
            )
        }
    }

    fn deal(space: &DealSpace<'_>, rng: &mut ChaCha8Rng) -> (Self, Option<u64>) {
        let world = &space.level.world;
        // Long enough to matter against the level's own clocks (its lease, its timeout, its
        // slow answer), and never past the limit.
        let longest = world
            .lease_ms
            .max(world.timeout_ms)
            .max(world.slow_response_ms)
            .saturating_mul(2)
            .clamp(1, PAUSE_MS_MAX);
        let pause = PauseWorker {
            // Half the time the oldest worker alive, as a crash is dealt.
            worker: rng.random_bool(0.5).then(|| rng.random_range(1..=space.workers_max)),
            ms: rng.random_range(1..=longest),
            in_phase: None,
        };
        (pause, None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pause_is_limited_when_it_is_read() {
        let read = |text: &str| ron::from_str::<crate::level::Play>(text);
        let pause = read("PauseWorker(worker: Some(1), ms: 400)").expect("a pause within its limit");
        assert_eq!(
            pause,
            PauseWorker {
                worker: Some(1),
                ms: 400,
                in_phase: None
            }
            .into()
        );
        for (text, length) in [
            ("PauseWorker(worker: Some(1), ms: 600001)", "600001"),
            ("PauseWorker(ms: 0)", "0"),
            ("PauseWorker(ms: 99999999999)", "99999999999"),
        ] {
            let error = read(text).expect_err(text).to_string();
            assert!(
                error.contains(&format!("ms: a worker is paused for 1 to 600000 ms, not {length}")),
                "{error}"
            );
        }
        assert!(read("PauseWorker(worker: Some(1))").is_err(), "a pause says how long");
    }
}
