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
    /// The player expects no guard to decide it: nothing stops the moves, or they miss
    /// whatever the guards do. Never together with a guard named.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub no_guard: bool,
}

impl Prediction {
    /// A prediction of `verdict`, with the guard half as the player picked it.
    pub fn new(verdict: Expected, pick: Option<Pick>) -> Prediction {
        Prediction {
            verdict,
            deciding_guard: match pick {
                Some(Pick::Guard(guard)) => Some(guard),
                _ => None,
            },
            no_guard: pick == Some(Pick::NoGuard),
        }
    }

    /// The guard half as the player picked it (`None`: not said).
    pub fn pick(&self) -> Option<Pick> {
        match (self.deciding_guard, self.no_guard) {
            (Some(guard), _) => Some(Pick::Guard(guard)),
            (None, true) => Some(Pick::NoGuard),
            (None, false) => None,
        }
    }
}

/// The guard half of a prediction: a guard that will decide the run, or none.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Pick {
    Guard(Guard),
    /// No guard decides: nothing stops the moves, or they miss whatever the guards do.
    NoGuard,
}

impl Pick {
    /// How a form names it: the guard's name (`write_retry_rule`), or `no_guard`.
    pub fn value(self) -> &'static str {
        match self {
            Pick::Guard(guard) => guard.name(),
            Pick::NoGuard => NO_GUARD,
        }
    }

    /// Reads [`Pick::value`] back.
    pub fn from_value(value: &str) -> Option<Pick> {
        if value == NO_GUARD {
            return Some(Pick::NoGuard);
        }
        Guard::from_name(value).map(Pick::Guard)
    }

    /// In the player's words: "the write retry rule", "no guard: nothing stops it, or the moves miss".
    pub fn words(self) -> &'static str {
        match self {
            Pick::Guard(guard) => crate::guards::words(guard),
            Pick::NoGuard => "no guard: nothing stops it, or the moves miss",
        }
    }
}

/// The value a form sends for [`Pick::NoGuard`].
pub const NO_GUARD: &str = "no_guard";

/// One choice of the guard half, as both editions offer it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Choice {
    /// What a form sends back ([`Pick::value`]).
    pub value: &'static str,
    /// In the player's words ([`Pick::words`]).
    pub words: &'static str,
    /// For a guard: on in this run (`Some(true)`) or off; `None` for "no guard".
    pub on: Option<bool>,
    /// What the guard promises (empty for "no guard").
    pub promise: &'static str,
    #[serde(skip)]
    pub pick: Pick,
}

/// The guard half's choices for a run of `level` with `guards` in force: what can decide in
/// this level. The guards the level is about, on or off — those it switches off, those its
/// lesson teaches, those its defence needs, any the player's run switched away from the
/// level's own (a sandbox) — and the guards left on that the level's hand can test (a crash
/// tests the ledger; a call made again tests keys per call); in teaching order, each in the
/// player's words; then "no guard". A guard nothing here can reach stays out: a list of every
/// guard would be a list of names, not a question. `sim/world/tests/debrief_decided.rs` holds
/// the list to every shipped tape and every move the sweep plays: whatever decides a run is
/// offered.
pub fn choices(level: &crate::level::Level, guards: crate::runtime::guards::Guards) -> Vec<Choice> {
    let matters = crate::defend::guards_that_matter(level);
    let about = |guard: Guard| {
        !level.guards.is_on(guard)
            || guards.is_on(guard) != level.guards.is_on(guard)
            || level.lesson.guards.contains(&guard)
            || level
                .defender
                .as_ref()
                .is_some_and(|defender| defender.minimum.contains(&guard))
            || tested_by_the_hand(level, guard)
    };
    let mut offered: Vec<Choice> = Guard::ALL
        .into_iter()
        .filter(|guard| matters.contains(guard) && about(*guard))
        .map(|guard| Choice {
            value: guard.name(),
            words: crate::guards::words(guard),
            on: Some(guards.is_on(guard)),
            promise: crate::guards::promise(guard),
            pick: Pick::Guard(guard),
        })
        .collect();
    offered.push(Choice {
        value: NO_GUARD,
        words: Pick::NoGuard.words(),
        on: None,
        promise: "",
        pick: Pick::NoGuard,
    });
    offered
}

/// Whether something in `level`'s hand (or its model, its tools, its people) can make `guard`
/// matter, as the guard's own file says (`GuardSpec::tested_by`): a card that can leave a call
/// unknown tests what settles or waits on unknowns; a crash, a twin or an undo tests the ledger
/// and what stands a second process down; a call made again tests keys per call.
fn tested_by_the_hand(level: &crate::level::Level, guard: Guard) -> bool {
    (crate::guards::spec(guard).tested_by)(&crate::guards::Hand::of(level))
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
        if self.prediction.no_guard {
            let guard = match &self.guard {
                GuardScore::Right => ", and indeed no guard decided it".to_owned(),
                GuardScore::Wrong { decided } => format!(
                    ", but {} decided it",
                    decided
                        .iter()
                        .map(|guard| crate::guards::words(*guard))
                        .collect::<Vec<_>>()
                        .join(" and ")
                ),
                GuardScore::NotNamed | GuardScore::CannotSay => {
                    "; whether any guard decided it, this run cannot say".to_owned()
                }
            };
            return format!("{verdict}{guard}.");
        }
        let words = crate::guards::words;
        let guard = match (&self.guard, self.prediction.deciding_guard) {
            (GuardScore::NotNamed, _) | (_, None) => String::new(),
            (GuardScore::Right, Some(guard)) => format!(", and {} did decide it", words(guard)),
            (GuardScore::Wrong { decided }, Some(guard)) if decided.is_empty() => {
                format!(", and no guard decided it, not {}", words(guard))
            }
            (GuardScore::Wrong { decided }, Some(guard)) => format!(
                ", but {} decided it, not {}",
                decided
                    .iter()
                    .map(|guard| words(*guard))
                    .collect::<Vec<_>>()
                    .join(" and "),
                words(guard)
            ),
            (GuardScore::CannotSay, Some(guard)) => {
                format!("; whether {} decided it, this run cannot say", words(guard))
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
        None if prediction.no_guard => no_guard_score(debrief, decided),
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

/// How "no guard decides" scored: right when no guard decided and every guard's other run
/// could say so; wrong when one did; otherwise this run cannot say.
fn no_guard_score(debrief: &Debrief, decided: Vec<Guard>) -> GuardScore {
    if !decided.is_empty() || matches!(debrief.decided_by, Decider::Guards { .. }) {
        return GuardScore::Wrong { decided };
    }
    match &debrief.counterfactual {
        Some(counterfactual) if counterfactual.reproduced && counterfactual.cannot_say().is_empty() => {
            GuardScore::Right
        }
        _ => GuardScore::CannotSay,
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
        if score.prediction.pick().is_some() {
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
            Prediction::new(Expected::HeistFails, Some(Pick::Guard(Guard::CheckpointVersion))),
            &told,
        );
        assert!(right.verdict_right);
        assert_eq!(right.guard, GuardScore::Right);
        assert_eq!(right.points(), 2);
        // A guard that was on but did not decide is wrong, and the answer names the one that did.
        let wrong = score(
            Prediction::new(Expected::HeistWorks, Some(Pick::Guard(Guard::Ledger))),
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
            "You called the verdict wrong, but the checkpoint version decided it, not the ledger."
        );
        let mut tally = Tally::default();
        tally.record(&right);
        tally.record(&wrong);
        tally.record(&score(Prediction::new(Expected::HeistFails, None), &told));
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
        // 15 without the slow card: naming a guard that did not decide is not right.
        let told = debrief_of("15-lease-runs-out.no-slow.tape.ron");
        let scored = score(
            Prediction::new(Expected::HeistFails, Some(Pick::Guard(Guard::NoLeaseExpiry))),
            &told,
        );
        assert!(scored.verdict_right);
        assert_ne!(scored.guard, GuardScore::Right);
        assert_eq!(scored.points(), 1);
    }

    #[test]
    fn no_guard_is_right_only_when_no_guard_decided() {
        // 01 with the lookup's answer lost: Penny asks again, and no guard decided anything.
        let nothing = debrief_of("01-naive-retry.lost-lookup.tape.ron");
        let scored = score(Prediction::new(Expected::HeistFails, Some(Pick::NoGuard)), &nothing);
        assert!(nothing.deciding_guards().is_empty());
        assert_eq!(scored.guard, GuardScore::Right, "{}", scored.sentence());
        assert_eq!(scored.points(), 2);
        assert_eq!(
            scored.sentence(),
            "You called the verdict, and indeed no guard decided it."
        );
        // 12, the version checked: the checkpoint version decided, so "no guard" is wrong.
        let decided = debrief_of("12-stale-twin.version-checked.tape.ron");
        let scored = score(Prediction::new(Expected::HeistFails, Some(Pick::NoGuard)), &decided);
        assert_eq!(
            scored.guard,
            GuardScore::Wrong {
                decided: vec![Guard::CheckpointVersion]
            }
        );
        assert_eq!(
            scored.sentence(),
            "You called the verdict, but the checkpoint version decided it."
        );
        // A stored prediction without the field reads as before; one with it round-trips.
        let old: Prediction =
            serde_json::from_str(r#"{"verdict":"heist_works","deciding_guard":"ledger"}"#).expect("an old prediction");
        assert_eq!(old.pick(), Some(Pick::Guard(Guard::Ledger)));
        let text = serde_json::to_string(&scored).expect("a score serializes");
        assert_eq!(serde_json::from_str::<Score>(&text).expect("and reads back"), scored);
        assert_eq!(Pick::from_value(NO_GUARD), Some(Pick::NoGuard));
        assert_eq!(Pick::from_value("ledger"), Some(Pick::Guard(Guard::Ledger)));
        assert_eq!(Pick::from_value("moat"), None);
    }

    fn level_of(file: &str) -> crate::level::Level {
        let folder = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../levels");
        level::load_level(&folder.join(file)).expect("the level loads").level
    }

    #[test]
    fn the_choices_are_what_can_decide_in_the_level_in_the_players_words() {
        // Level 01: the guard that decides its heist is off. It is offered, in words; guards
        // the level leaves on and never teaches are not; "no guard" closes the list.
        let first = level_of("01-naive-retry.level.ron");
        let offered = choices(&first, first.guards);
        let picks: Vec<Pick> = offered.iter().map(|choice| choice.pick).collect();
        assert!(picks.contains(&Pick::Guard(Guard::WriteRetryRule)), "{picks:?}");
        assert!(!picks.contains(&Pick::Guard(Guard::Ledger)), "{picks:?}");
        assert!(!picks.contains(&Pick::Guard(Guard::DeadLetter)), "{picks:?}");
        assert_eq!(picks.last(), Some(&Pick::NoGuard));
        assert!(offered.len() <= 6, "a question, not a list of every guard: {picks:?}");
        let write_retry = &offered[0];
        assert_eq!(
            (write_retry.words, write_retry.on),
            ("the write retry rule", Some(false))
        );
        for choice in &offered {
            assert!(!choice.words.contains('_'), "{} is snake_case", choice.words);
            assert_eq!(Pick::from_value(choice.value), Some(choice.pick));
        }
        // A sandbox run that switches a guard the level leaves alone offers it too.
        let sandbox = choices(&first, first.guards.with(Guard::Ledger, false));
        assert!(sandbox.iter().any(|choice| choice.pick == Pick::Guard(Guard::Ledger)));
        // A defended level offers what its defence needs, on or off.
        let ledger_holds = level_of("06-ledger-holds.level.ron");
        let offered: Vec<Pick> = choices(&ledger_holds, ledger_holds.guards)
            .iter()
            .map(|choice| choice.pick)
            .collect();
        for guard in &ledger_holds.defender.as_ref().expect("06 is defended").minimum {
            assert!(offered.contains(&Pick::Guard(*guard)), "{guard}: {offered:?}");
        }
    }
}
