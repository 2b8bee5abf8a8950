//! Lose the response: billing has applied the request, and its answer is dropped on the way
//! back. The money moved; the runtime does not know it.

use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use super::wire;
use super::{Aim, Aims, Card, DealSpace, Fired, Made, Target, Trigger};
use crate::simulator::{Direction, PlayError, Simulation};

/// `LoseResponse(key: Some("r1:c2"))`: the answer to the call under `key` (none: the oldest on
/// the wire).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LoseResponse {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
}

impl Card for LoseResponse {
    const TITLE: &'static str = "Lose the response";
    const AIMS: Aims = Aims::Message {
        direction: Direction::Response,
        unslowed: false,
    };
    // A sent request left without its answer: a retry, a replay or a second call may follow.
    const CAN_PAY_TWICE: bool = true;

    fn aim(&self) -> Aim<'_> {
        Aim::Message {
            direction: Direction::Response,
            key: self.key.as_deref(),
            unslowed: false,
        }
    }

    fn with_key(&self, key: &str) -> Self {
        LoseResponse {
            key: Some(key.to_owned()),
        }
    }

    fn fire(&self, simulation: &mut Simulation) -> Result<Made, PlayError> {
        let nothing = match &self.key {
            Some(key) => format!("no response for {key} is on the wire"),
            None => "no response is on the wire".to_owned(),
        };
        wire::fire(
            self,
            simulation,
            (Direction::Response, self.key.as_deref(), false),
            |simulation, id| {
                let key = simulation.lose_message(id);
                format!("the response for {key} will be lost")
            },
            "the next response will be lost after billing applies it",
            nothing,
        )
    }

    fn fires_at(&self, trigger: &Trigger<'_>) -> Option<Fired> {
        (*trigger == Trigger::AnswerLeaves).then_some(Fired::Lose)
    }

    fn armed_words(armed: &[&Self]) -> Vec<String> {
        vec![wire::armed_count(armed.len(), "response", "responses", "lost")]
    }

    fn effect(simulation: &Simulation) -> String {
        wire::effect(simulation, Direction::Response, false, |message| {
            format!("drops {message}: billing has already applied it")
        })
    }

    fn targets(simulation: &Simulation) -> Vec<Target> {
        wire::offers(simulation, Direction::Response, false, |key| LoseResponse {
            key: Some(key),
        })
    }

    fn no_target(simulation: &Simulation) -> String {
        wire::no_target(simulation, Direction::Response, false)
    }

    // Whatever is on the wire at the phase dealt; nothing there and the card fizzles.
    fn deal(_space: &DealSpace<'_>, _rng: &mut ChaCha8Rng) -> (Self, Option<u64>) {
        (LoseResponse { key: None }, None)
    }

    fn read_version_1<'de, A: serde::de::VariantAccess<'de>>(variant: A) -> Result<Self, A::Error> {
        variant.unit_variant().map(|()| LoseResponse { key: None })
    }
}
