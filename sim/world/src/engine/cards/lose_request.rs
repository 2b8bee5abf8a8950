//! Lose the request: a request on the wire is dropped before billing sees it. Nothing is
//! paid, and the runtime cannot tell it from a lost answer.

use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use super::wire;
use super::{Aim, Aims, Card, DealSpace, Fired, Made, Target, Trigger};
use crate::outcome::Outcome;
use crate::simulator::{Direction, PlayError, Simulation};

/// `LoseRequest(key: Some("r1:c2"))`: the request carrying `key` (none: the oldest on the wire).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LoseRequest {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
}

impl Card for LoseRequest {
    const TITLE: &'static str = "Lose the request";
    const AIMS: Aims = Aims::Message {
        direction: Direction::Request,
        unslowed: false,
    };
    // A lost request never lands.
    const CAN_PAY_TWICE: bool = false;

    fn aim(&self) -> Aim<'_> {
        Aim::Message {
            direction: Direction::Request,
            key: self.key.as_deref(),
            unslowed: false,
        }
    }

    fn with_key(&self, key: &str) -> Self {
        LoseRequest {
            key: Some(key.to_owned()),
        }
    }

    fn fire(&self, simulation: &mut Simulation) -> Result<Made, PlayError> {
        let nothing = match &self.key {
            Some(key) => format!("no request for {key} is on the wire"),
            None => "no request is on the wire".to_owned(),
        };
        wire::fire(
            self,
            simulation,
            (Direction::Request, self.key.as_deref(), false),
            |simulation, id| {
                let key = simulation.lose_message(id);
                format!("the request for {key} will be lost on the wire")
            },
            "the next request will be lost",
            nothing,
        )
    }

    fn fires_at(&self, trigger: &Trigger<'_>) -> Option<Fired> {
        (*trigger == Trigger::RequestLeaves).then_some(Fired::Lose)
    }

    fn armed_words(armed: &[&Self]) -> Vec<String> {
        vec![wire::armed_count(armed.len(), "request", "requests", "lost")]
    }

    fn effect(simulation: &Simulation) -> String {
        wire::effect(simulation, Direction::Request, false, |message| {
            format!("drops {message} before billing sees it")
        })
    }

    fn targets(simulation: &Simulation) -> Vec<Target> {
        wire::offers(simulation, Direction::Request, false, |key| LoseRequest {
            key: Some(key),
        })
    }

    fn no_target(simulation: &Simulation) -> String {
        wire::no_target(simulation, Direction::Request, false)
    }

    // Whatever is on the wire at the phase dealt; nothing there and the card fizzles.
    fn deal(_space: &DealSpace<'_>, _rng: &mut ChaCha8Rng) -> (Self, Option<u64>) {
        (LoseRequest { key: None }, None)
    }

    fn missed(&self, simulation: &Simulation, index: usize) -> Option<String> {
        // A lost request is a miss only for a crew that wants two payments.
        if simulation.level().goal != Outcome::PaidTwice {
            return None;
        }
        let hit = simulation.wire_hits().iter().find(|hit| hit.played == index)?;
        Some(format!(
            "The request for {} never reached billing, so nothing had been paid to pay twice: whatever came next was the first credit billing saw.",
            hit.key
        ))
    }

    fn read_version_1<'de, A: serde::de::VariantAccess<'de>>(variant: A) -> Result<Self, A::Error> {
        variant.unit_variant().map(|()| LoseRequest { key: None })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn armed_requests_are_counted_in_words() {
        let one = LoseRequest { key: None };
        assert_eq!(LoseRequest::armed_words(&[&one]), ["the next request will be lost"]);
        assert_eq!(
            LoseRequest::armed_words(&[&one, &one]),
            ["the next 2 requests will be lost"]
        );
    }
}
