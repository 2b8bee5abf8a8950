//! Delay the apply: billing receives a request and holds it a while before applying it (a
//! queue behind its API, a replica catching up). Until then its books show nothing of it, so a
//! lookup by key in between finds nothing although the credit is coming; the answer leaves
//! once billing has applied it.

use rand::Rng;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Deserializer, Serialize};

use super::wire;
use super::{Aim, Aims, Card, DealSpace, Made, Target};
use crate::simulator::{APPLY_DELAY_MS_MAX, Direction, PlayError, Simulation};

/// `DelayApply(key: Some("r1:c1"), ms: 1000)`: the request carrying `key` (none: the oldest on
/// the wire not delayed yet) is applied by billing `ms` after it arrives (1 to
/// [`APPLY_DELAY_MS_MAX`]).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DelayApply {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    #[serde(deserialize_with = "delay_ms")]
    pub ms: u32,
}

/// Reads `ms` within its limit; any other length is refused naming the field (the tape's path
/// and line come with the parse error).
fn delay_ms<'de, D: Deserializer<'de>>(deserializer: D) -> Result<u32, D::Error> {
    let ms = u64::deserialize(deserializer)?;
    match u32::try_from(ms) {
        Ok(ms) if (1..=APPLY_DELAY_MS_MAX).contains(&ms) => Ok(ms),
        _ => Err(serde::de::Error::custom(format!(
            "ms: billing holds a request for 1 to {APPLY_DELAY_MS_MAX} ms, not {ms}"
        ))),
    }
}

/// How long billing holds a request when the card is played from the hand: the level's slow
/// answer (`slow_response_ms`), the world's own measure of "longer than the timeout".
fn hand_delay_ms(simulation: &Simulation) -> u32 {
    simulation.level().world.slow_response_ms.clamp(1, APPLY_DELAY_MS_MAX)
}

impl Card for DelayApply {
    const TITLE: &'static str = "Delay the apply";
    const AIMS: Aims = Aims::Message {
        direction: Direction::Request,
        unslowed: true,
    };
    // The worker hears nothing in time and a lookup finds nothing: a retry or a second call may
    // follow while the first credit is still coming.
    const CAN_PAY_TWICE: bool = true;
    // Tape format 1 had no delayed applies.
    const IN_TAPE_VERSION_1: bool = false;

    fn aim(&self) -> Aim<'_> {
        Aim::Message {
            direction: Direction::Request,
            key: self.key.as_deref(),
            unslowed: true,
        }
    }

    fn with_key(&self, key: &str) -> Self {
        DelayApply {
            key: Some(key.to_owned()),
            ms: self.ms,
        }
    }

    fn fire(&self, simulation: &mut Simulation) -> Result<Made, PlayError> {
        let nothing = match &self.key {
            Some(key) => format!("no request for {key} is on the wire to delay"),
            None => "no request is on the wire to delay".to_owned(),
        };
        let ms = self.ms;
        wire::fire(
            self,
            simulation,
            (Direction::Request, self.key.as_deref(), true),
            |simulation, id| {
                let key = simulation.delay_apply(id, ms);
                format!("billing will hold the request for {key} {ms} ms after it arrives before applying it")
            },
            // Only tape format 1 arms a wire card for the next message, and it has no such card.
            "the next request will be held at billing",
            nothing,
        )
    }

    fn effect(simulation: &Simulation) -> String {
        let ms = hand_delay_ms(simulation);
        wire::effect(simulation, Direction::Request, true, |message| {
            format!("billing holds {message} {ms} ms before applying it; its books show nothing of it meanwhile")
        })
    }

    fn targets(simulation: &Simulation) -> Vec<Target> {
        let ms = hand_delay_ms(simulation);
        wire::offers(simulation, Direction::Request, true, |key| DelayApply {
            key: Some(key),
            ms,
        })
    }

    fn no_target(simulation: &Simulation) -> String {
        wire::no_target(simulation, Direction::Request, true)
    }

    // Whatever request is on the wire at the phase dealt, held long enough to matter against
    // the level's clocks; nothing there and the card fizzles.
    fn deal(space: &DealSpace<'_>, rng: &mut ChaCha8Rng) -> (Self, Option<u64>) {
        let world = &space.level.world;
        let longest = world
            .timeout_ms
            .max(world.slow_response_ms)
            .saturating_mul(2)
            .clamp(1, APPLY_DELAY_MS_MAX);
        let delay = DelayApply {
            key: None,
            ms: rng.random_range(1..=longest),
        };
        (delay, None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_delay_is_limited_when_it_is_read() {
        let read = |text: &str| ron::from_str::<crate::level::Play>(text);
        let delay = read("DelayApply(key: Some(\"r1:c1\"), ms: 900)").expect("a delay within its limit");
        assert_eq!(
            delay,
            DelayApply {
                key: Some("r1:c1".into()),
                ms: 900
            }
            .into()
        );
        for (text, length) in [("DelayApply(ms: 600001)", "600001"), ("DelayApply(ms: 0)", "0")] {
            let error = read(text).expect_err(text).to_string();
            assert!(
                error.contains(&format!("ms: billing holds a request for 1 to 600000 ms, not {length}")),
                "{error}"
            );
        }
    }
}
