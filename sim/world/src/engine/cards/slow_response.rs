//! Slow the response: billing's answer arrives after the worker's timeout. The worker gives up
//! waiting on a call that took effect; the late answer still comes.

use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use super::wire;
use super::{Aim, Aims, Card, DealSpace, Fired, Made, Target, Trigger};
use crate::simulator::{Direction, PlayError, Simulation};

/// `SlowResponse(key: Some("r1:c2"))`: the answer to the call under `key` (none: the oldest on
/// the wire not slowed yet).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SlowResponse {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
}

impl Card for SlowResponse {
    const TITLE: &'static str = "Slow the response";
    const AIMS: Aims = Aims::Message {
        direction: Direction::Response,
        unslowed: true,
    };
    // The worker times out on a call that took effect: a retry or a second call may follow.
    const CAN_PAY_TWICE: bool = true;

    fn aim(&self) -> Aim<'_> {
        Aim::Message {
            direction: Direction::Response,
            key: self.key.as_deref(),
            unslowed: true,
        }
    }

    fn with_key(&self, key: &str) -> Self {
        SlowResponse {
            key: Some(key.to_owned()),
        }
    }

    fn fire(&self, simulation: &mut Simulation) -> Result<Made, PlayError> {
        let nothing = match &self.key {
            Some(key) => format!("no response for {key} is on the wire to slow"),
            None => "no response is on the wire to slow".to_owned(),
        };
        wire::fire(
            self,
            simulation,
            (Direction::Response, self.key.as_deref(), true),
            |simulation, id| {
                let key = simulation.slow_message(id);
                format!("the response for {key} is slowed past the timeout")
            },
            "the next response will arrive after the timeout",
            nothing,
        )
    }

    fn fires_at(&self, trigger: &Trigger<'_>) -> Option<Fired> {
        (*trigger == Trigger::AnswerLeaves).then_some(Fired::Slow)
    }

    fn armed_words(armed: &[&Self]) -> Vec<String> {
        vec![wire::armed_count(armed.len(), "response", "responses", "slowed")]
    }

    fn effect(simulation: &Simulation) -> String {
        wire::effect(simulation, Direction::Response, true, |message| {
            format!("delays {message} past the timeout")
        })
    }

    fn targets(simulation: &Simulation) -> Vec<Target> {
        wire::offers(simulation, Direction::Response, true, |key| SlowResponse {
            key: Some(key),
        })
    }

    fn no_target(simulation: &Simulation) -> String {
        wire::no_target(simulation, Direction::Response, true)
    }

    // Whatever is on the wire at the phase dealt; nothing there and the card fizzles.
    fn deal(_space: &DealSpace<'_>, _rng: &mut ChaCha8Rng) -> (Self, Option<u64>) {
        (SlowResponse { key: None }, None)
    }

    fn read_version_1<'de, A: serde::de::VariantAccess<'de>>(variant: A) -> Result<Self, A::Error> {
        variant.unit_variant().map(|()| SlowResponse { key: None })
    }
}
