//! Predict, then watch: before a run plays out the player may say whether the heist will work
//! and, optionally, which guard will decide it; the debrief scores the prediction against the
//! run's verdict and the counterfactual's answer, and progress keeps the tally. A teacher's
//! check of understanding: naming the guard is only right when re-running without it (or with
//! it) really changes the verdict.
//!
//! Everything here is plain data (serde, fixed-width integers) so the game's progress file and
//! the browser's room can store it.

use serde::{Deserialize, Serialize};

use crate::debrief::{Debrief, Decider};
use crate::runtime::guards::Guard;

/// What the player expects of the verdict.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Expected {
    /// The crew reaches the level's goal.
    HeistWorks,
    /// It does not: the runtime (or the moment, or the world) stops it.
    HeistFails,
}

/// A prediction made before the run plays out.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Prediction {
    pub verdict: Expected,
    /// The guard the player expects to decide the run (optional: the harder half).
    #[serde(default)]
    pub deciding_guard: Option<Guard>,
}

/// How the guard half of a prediction scored.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum GuardScore {
    /// No guard was named.
    NotNamed,
    /// The named guard decided the run (alone or with another).
    Right,
    /// Another guard decided, or none did: these did (empty when none).
    Wrong { decided: Vec<Guard> },
    /// The named guard's other run could not say (a move never met its target in it), and no
    /// other guard decided: neither right nor wrong.
    CannotSay,
}

/// A prediction, scored.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Score {
    pub prediction: Prediction,
    pub verdict_right: bool,
    pub guard: GuardScore,
}

impl Score {
    /// Points: one for the verdict, one more for the guard.
    pub fn points(&self) -> u32 {
        u32::from(self.verdict_right) + u32::from(self.guard == GuardScore::Right)
    }

    /// One line for the debrief.
    pub fn sentence(&self) -> String {
        let verdict = if self.verdict_right {
            "You called the verdict"
        } else {
            "You called the verdict wrong"
        };
        let guard = match (&self.guard, self.prediction.deciding_guard) {
            (GuardScore::NotNamed, _) | (_, None) => String::new(),
            (GuardScore::Right, Some(guard)) => format!(", and {} did decide it", guard.name()),
            (GuardScore::Wrong { decided }, Some(guard)) if decided.is_empty() => {
                format!(", and no guard decided it, not {}", guard.name())
            }
            (GuardScore::Wrong { decided }, Some(guard)) => format!(
                ", but {} decided it, not {}",
                decided
                    .iter()
                    .map(|guard| guard.name())
                    .collect::<Vec<_>>()
                    .join(" and "),
                guard.name()
            ),
            (GuardScore::CannotSay, Some(guard)) => {
                format!("; whether {} decided it, this run cannot say", guard.name())
            }
        };
        format!("{verdict}{guard}.")
    }
}

/// Scores `prediction` against a finished run's debrief (its verdict and counterfactual).
pub fn score(prediction: Prediction, debrief: &Debrief) -> Score {
    let worked = debrief.standing == crate::debrief::Standing::HeistWorked;
    let verdict_right = match prediction.verdict {
        Expected::HeistWorks => worked,
        Expected::HeistFails => !worked,
    };
    let decided = debrief.deciding_guards();
    let guard = match prediction.deciding_guard {
        None => GuardScore::NotNamed,
        Some(named) if decided.contains(&named) => GuardScore::Right,
        Some(named) => {
            let named_cannot_say = debrief
                .counterfactual
                .as_ref()
                .is_none_or(|counterfactual| counterfactual.cannot_say().contains(&named));
            if decided.is_empty() && named_cannot_say && !matches!(debrief.decided_by, Decider::Guards { .. }) {
                GuardScore::CannotSay
            } else {
                GuardScore::Wrong { decided }
            }
        }
    };
    Score {
        prediction,
        verdict_right,
        guard,
    }
}

/// The running tally progress keeps.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Tally {
    pub predictions: u32,
    pub verdicts_right: u32,
    pub guards_named: u32,
    pub guards_right: u32,
}

impl Tally {
    pub fn record(&mut self, score: &Score) {
        self.predictions = self.predictions.saturating_add(1);
        self.verdicts_right = self.verdicts_right.saturating_add(u32::from(score.verdict_right));
        if score.prediction.deciding_guard.is_some() {
            self.guards_named = self.guards_named.saturating_add(1);
        }
        self.guards_right = self
            .guards_right
            .saturating_add(u32::from(score.guard == GuardScore::Right));
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;
    use crate::level;
    use crate::simulator::SimulationBuilder;

    fn debrief_of(tape: &str) -> Debrief {
        let folder = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../levels");
        let loaded = level::load_tape(&folder.join(tape)).expect("the tape loads");
        let mut simulation = SimulationBuilder::new(loaded.level.level.clone(), loaded.tape.seed)
            .actions(loaded.tape.actions.clone())
            .wire_rule(loaded.tape.wire_rule())
            .guards(loaded.tape.guards.unwrap_or(loaded.level.level.guards))
            .build()
            .expect("the tape builds");
        simulation.run().expect("the tape simulates");
        let verdict = simulation.verdict().expect("a verdict");
        crate::debrief::of(&simulation, &verdict)
    }

    #[test]
    fn a_prediction_is_scored_against_the_verdict_and_the_counterfactual() {
        // 12, the version checked: the heist fails, and the checkpoint version decided it.
        let told = debrief_of("12-stale-twin.version-checked.tape.ron");
        let right = score(
            Prediction {
                verdict: Expected::HeistFails,
                deciding_guard: Some(Guard::CheckpointVersion),
            },
            &told,
        );
        assert!(right.verdict_right);
        assert_eq!(right.guard, GuardScore::Right);
        assert_eq!(right.points(), 2);
        // A guard that was on but did not decide is wrong, and the answer names the one that did.
        let wrong = score(
            Prediction {
                verdict: Expected::HeistWorks,
                deciding_guard: Some(Guard::Ledger),
            },
            &told,
        );
        assert!(!wrong.verdict_right);
        assert_eq!(
            wrong.guard,
            GuardScore::Wrong {
                decided: vec![Guard::CheckpointVersion]
            }
        );
        assert_eq!(wrong.points(), 0);
        assert_eq!(
            wrong.sentence(),
            "You called the verdict wrong, but checkpoint_version decided it, not ledger."
        );
        let mut tally = Tally::default();
        tally.record(&right);
        tally.record(&wrong);
        tally.record(&score(
            Prediction {
                verdict: Expected::HeistFails,
                deciding_guard: None,
            },
            &told,
        ));
        assert_eq!(
            tally,
            Tally {
                predictions: 3,
                verdicts_right: 2,
                guards_named: 2,
                guards_right: 1
            }
        );
        // Progress files keep it as JSON (or RON) and read it back.
        let text = serde_json::to_string(&tally).expect("a tally serializes");
        assert_eq!(serde_json::from_str::<Tally>(&text).expect("and reads back"), tally);
        let text = serde_json::to_string(&right).expect("a score serializes");
        assert_eq!(serde_json::from_str::<Score>(&text).expect("and reads back"), right);
    }

    #[test]
    fn naming_a_guard_when_none_decided_is_wrong_or_cannot_say() {
        // 15 without the slow card: no guard decided; naming one is not right.
        let told = debrief_of("15-lease-runs-out.no-slow.tape.ron");
        let scored = score(
            Prediction {
                verdict: Expected::HeistFails,
                deciding_guard: Some(Guard::NoLeaseExpiry),
            },
            &told,
        );
        assert!(scored.verdict_right);
        assert_ne!(scored.guard, GuardScore::Right);
        assert_eq!(scored.points(), 1);
    }
}
