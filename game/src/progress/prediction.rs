//! Predict, then watch (issue 21 item 5): before a run plays out, the player may say whether
//! the heist will work and which guard will decide it. When the run ends the prediction is
//! scored by `twice_world::prediction::score` against the debrief (its verdict and its
//! counterfactual's deciding guards); the debrief shows the score, and progress keeps every
//! scored prediction (the tally, and per guard on the ending).

use bevy::prelude::*;
use serde::{Deserialize, Serialize};
use twice_world::prediction::{self, Expected, Pick, Score};
use twice_world::runtime::guards::Guard;

use super::Progress;
use crate::session::{Mode, Session, SessionSet};

pub(super) fn plugin(app: &mut App) {
    app.add_message::<PredictionIntent>();
    app.init_resource::<Prediction>();
    app.add_systems(
        Update,
        (
            follow_the_session.before(SessionSet::Intents),
            apply_intents.after(SessionSet::Intents).before(SessionSet::Conclude),
            score.after(SessionSet::Conclude),
        ),
    );
}

/// A scored prediction, as progress keeps it: plain fields (the score's tagged enum does not
/// round-trip through RON).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PredictionRecord {
    /// The level's id.
    pub level: String,
    pub verdict: Expected,
    pub verdict_right: bool,
    /// The guard named to decide the run, if one was, and whether it did.
    #[serde(default)]
    pub named: Option<Guard>,
    #[serde(default)]
    pub named_right: bool,
    /// "No guard decides it" was the guard half (and `named_right` says whether none did).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub named_no_guard: bool,
}

impl PredictionRecord {
    pub fn of(level: &str, score: &Score) -> PredictionRecord {
        PredictionRecord {
            level: level.to_owned(),
            verdict: score.prediction.verdict,
            verdict_right: score.verdict_right,
            named: score.prediction.deciding_guard,
            named_right: score.guard == prediction::GuardScore::Right,
            named_no_guard: score.prediction.no_guard,
        }
    }

    /// The guard this prediction named, and whether it decided the run.
    pub fn named_guard(&self) -> Option<(Guard, bool)> {
        self.named.map(|guard| (guard, self.named_right))
    }
}

/// The prediction made about the run being played, and the last one scored.
#[derive(Debug, Default, Resource)]
pub struct Prediction {
    /// The level (id) this prediction is about.
    level: Option<String>,
    /// Made, not yet scored; and the phase it was made at.
    pub made: Option<(prediction::Prediction, u32)>,
    /// The last run's score (shown by the debrief); cleared by a new prediction or level.
    pub scored: Option<Score>,
    /// Why the last intent did nothing.
    pub notice: Option<String>,
}

/// The player's prediction moves (the level screen's window, and headless tests).
#[derive(Message, Clone, Debug, PartialEq, Eq)]
pub enum PredictionIntent {
    /// Predict (or change the prediction) while the run has not played out.
    /// `pick`: the guard half as chosen from `twice_world::prediction::choices` (`None`: not said).
    Make { verdict: Expected, pick: Option<Pick> },
    /// Take the prediction back.
    Withdraw,
}

/// Another level (or none) starts with no prediction; a run that is no longer over (a restart,
/// a rewind) no longer shows the last score.
fn follow_the_session(session: Option<Res<Session>>, mut prediction: ResMut<Prediction>) {
    let level = session.as_ref().map(|session| session.recipe.level.level.id.clone());
    if level != prediction.level {
        *prediction = Prediction {
            level,
            ..Prediction::default()
        };
    } else if prediction.scored.is_some() && session.is_some_and(|session| session.conclusion.is_none()) {
        prediction.scored = None;
    }
}

fn apply_intents(
    mut intents: MessageReader<PredictionIntent>,
    session: Option<Res<Session>>,
    mut prediction: ResMut<Prediction>,
) {
    for intent in intents.read() {
        let Some(session) = session.as_ref() else {
            warn!("{intent:?} needs an open level; none is");
            continue;
        };
        match intent {
            PredictionIntent::Make { verdict, pick } => {
                if session.mode == Mode::Replay {
                    prediction.notice = Some("A tape's moves are fixed: predict in a level you play.".into());
                } else if session.is_over() || session.conclusion.is_some() {
                    prediction.notice = Some(
                        "The run has played out: predict before it ends (restart or rewind, then predict).".into(),
                    );
                } else {
                    let made = prediction::Prediction::new(*verdict, *pick);
                    prediction.made = Some((made, session.simulation().phase()));
                    prediction.scored = None;
                    prediction.notice = None;
                }
            }
            PredictionIntent::Withdraw => {
                prediction.made = None;
                prediction.notice = None;
            }
        }
    }
}

/// When the run ends: the prediction is scored once, kept in progress (in the campaign) and
/// shown by the debrief.
fn score(session: Option<Res<Session>>, mut prediction: ResMut<Prediction>, mut progress: ResMut<Progress>) {
    let Some(session) = session else {
        return;
    };
    let Some(debrief) = session
        .conclusion
        .as_ref()
        .and_then(|conclusion| conclusion.debrief.as_ref())
    else {
        return;
    };
    let Some((made, _)) = prediction.made.take() else {
        return;
    };
    let score = prediction::score(made, debrief);
    if session.mode == Mode::Campaign {
        progress.record_prediction(PredictionRecord::of(&session.recipe.level.level.id, &score));
    }
    prediction.scored = Some(score);
}
