//! Model calls again: a whisper to Penny's model. When she next hears a call came to nothing,
//! she makes it again — a new tool call, so a new key — perhaps with reworded arguments.

use rand::Rng;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use super::{Aim, Aims, Card, CardKind, DealSpace, Fired, Made, Target, Trigger, runs};
use crate::simulator::{PlayError, Simulation};

/// `ModelCallsAgain(run: "r1", reword: true)`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelCallsAgain {
    pub run: String,
    #[serde(default)]
    pub reword: bool,
}

fn reworded(reword: bool) -> &'static str {
    if reword { ", reworded" } else { "" }
}

impl Card for ModelCallsAgain {
    const TITLE: &'static str = "Model calls again";
    const AIMS: Aims = Aims::Run;
    // A new call from the model is a new key: the ledger does not stop it.
    const CAN_PAY_TWICE: bool = true;

    fn aim(&self) -> Aim<'_> {
        Aim::Run(&self.run)
    }

    fn fire(&self, simulation: &mut Simulation) -> Result<Made, PlayError> {
        let text = format!(
            "Penny will call the tool again on {}{}",
            self.run,
            reworded(self.reword)
        );
        runs::arm(self, simulation, &self.run, text)
    }

    fn fires_at(&self, trigger: &Trigger<'_>) -> Option<Fired> {
        match trigger {
            Trigger::ModelAsked { node } if *node == self.run => Some(Fired::CallAgain { reword: self.reword }),
            _ => None,
        }
    }

    /// One whisper a run: a second one on the same run says it again, its way.
    fn replaces(&self, earlier: &Self) -> bool {
        earlier.run == self.run
    }

    fn armed_words(armed: &[&Self]) -> Vec<String> {
        let mut armed: Vec<&&Self> = armed.iter().collect();
        armed.sort_by(|left, right| left.run.cmp(&right.run));
        armed
            .into_iter()
            .map(|whisper| format!("Penny will call again on {}{}", whisper.run, reworded(whisper.reword)))
            .collect()
    }

    fn effect(_simulation: &Simulation) -> String {
        "when Penny next hears a call came to nothing, she calls the tool again".into()
    }

    fn targets(simulation: &Simulation) -> Vec<Target> {
        simulation
            .level()
            .runs
            .iter()
            .flat_map(|run| {
                [false, true].map(|reword| Target {
                    label: format!(
                        "on run {}, {}",
                        run.id,
                        if reword { "reworded memo" } else { "same words" }
                    ),
                    play: ModelCallsAgain {
                        run: run.id.to_string(),
                        reword,
                    }
                    .into(),
                })
            })
            .collect()
    }

    fn no_target(_simulation: &Simulation) -> String {
        "this level has no run for Penny to call again on".to_owned()
    }

    fn deal(space: &DealSpace<'_>, rng: &mut ChaCha8Rng) -> (Self, Option<u64>) {
        let run = space.run(rng);
        let reword = rng.random_bool(0.5);
        (ModelCallsAgain { run, reword }, None)
    }

    fn missed(&self, simulation: &Simulation, _index: usize) -> Option<String> {
        simulation
            .armed()
            .holds(CardKind::ModelCallsAgain, &self.run)
            .then(|| {
                format!(
                    "Penny never heard that a call on {} came to nothing, so the whisper to call again had nothing to repeat.",
                    self.run
                )
            })
    }
}
