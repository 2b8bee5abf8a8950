//! Predict, then watch, in the browser: before a run plays out the participant says whether
//! the heist will work and, if they dare, which guard will decide it. When the run ends the
//! prediction is scored by `twice_world::prediction::score` — the engine the game uses —
//! against this run's debrief (its verdict and its counterfactual), the debrief shows the
//! score, and a campaign play adds it to the participant's tally. The state is kept in the
//! room file with the rest of the participant ([`super::room_file`]), so a restart keeps the
//! tally and a prediction still waiting for its run's end.
//!
//! One prediction per run: a second one is refused (`already_predicted`), and so is one made
//! once the run has played out (`run_ended`) — a prediction that could be made after seeing
//! the end would check nothing.

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use twice_world::prediction::{self, Choice, Expected, Pick, Prediction, Score, Tally};
use twice_world::runtime::guards::Guard;

use super::WebState;
use super::error::WebError;
use super::game::{Conclusion, Mode};
use super::handlers::Joined;
use super::play::{Request, on_game};
use super::views::GameView;
use crate::json::StrictJson;

/// A prediction waiting for its run's end.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Made {
    pub prediction: Prediction,
    /// The phase the run was at when the prediction was made.
    pub at_phase: u32,
}

/// A participant's predictions, as the room file keeps them.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PredictionState {
    /// Made about the open level's run, not yet scored.
    pub made: Option<Made>,
    /// The score of the run the open level shows ended; gone once it no longer shows that end.
    pub scored: Option<Score>,
    /// Every prediction scored in a campaign play (sandbox plays count for nothing, as in
    /// progress).
    pub tally: Tally,
}

impl PredictionState {
    /// Another level opened (or a shared run): nothing made or scored carries over to it.
    pub fn leave_run(&mut self) {
        self.made = None;
        self.scored = None;
    }

    /// Follows the open level after a request: scores the prediction made when the run has
    /// just ended (`ended`), and forgets the last score once the level no longer shows an end
    /// (a rewind, a restart, a move that woke it).
    pub fn follow(&mut self, mode: Mode, ended: Option<&Conclusion>, shows_an_end: bool) {
        if let Some(conclusion) = ended {
            self.scored = self.made.take().map(|made| {
                let score = prediction::score(made.prediction, &conclusion.debrief);
                if mode == Mode::Campaign {
                    self.tally.record(&score);
                }
                score
            });
        } else if !shows_an_end {
            self.scored = None;
        }
    }
}

/// The prediction part of the level screen.
#[derive(Clone, Debug, Default, Serialize)]
pub struct PredictionView {
    /// A prediction may be made now: the run has not played out and none is made.
    pub open: bool,
    pub made: Option<MadeView>,
    pub score: Option<ScoreView>,
    pub tally: Tally,
    /// Whether the tally counts this play (a campaign play; not a sandbox).
    pub counted: bool,
    /// The guard half's choices: what can decide in this level, in the player's words
    /// (`twice_world::prediction::choices`), "no guard" last.
    pub choices: Vec<Choice>,
}

#[derive(Clone, Debug, Serialize)]
pub struct MadeView {
    pub verdict: Expected,
    /// The guard half as a form sends it (`write_retry_rule`, `no_guard`), if said.
    pub guard: Option<&'static str>,
    pub at_phase: u32,
    /// "You predict: the heist fails, decided by the ledger."
    pub sentence: String,
}

#[derive(Clone, Debug, Serialize)]
pub struct ScoreView {
    pub score: Score,
    pub points: u32,
    /// "You called the verdict, and checkpoint_version did decide it."
    pub sentence: String,
}

fn made_sentence(prediction: &Prediction) -> String {
    let verdict = match prediction.verdict {
        Expected::HeistWorks => "the heist works",
        Expected::HeistFails => "the heist fails",
    };
    match prediction.pick() {
        Some(Pick::Guard(guard)) => format!(
            "You predict: {verdict}, decided by {}.",
            twice_world::guards::words(guard)
        ),
        Some(Pick::NoGuard) => format!("You predict: {verdict}, and no guard decides it."),
        None => format!("You predict: {verdict}."),
    }
}

/// The run has played out: the level is quiet or judged. The game refuses a prediction then
/// too: one made after the moves are done could be read off the screen.
pub fn run_ended(game: &super::game::Game) -> bool {
    game.simulation().is_over() || game.conclusion().is_some()
}

/// What the level screen shows of the participant's predictions about `game`'s run.
pub fn view(state: &PredictionState, game: &super::game::Game) -> PredictionView {
    let (mode, run_ended) = (game.mode, run_ended(game));
    PredictionView {
        open: state.made.is_none() && !run_ended,
        made: state.made.map(|made| MadeView {
            verdict: made.prediction.verdict,
            guard: made.prediction.pick().map(Pick::value),
            at_phase: made.at_phase,
            sentence: made_sentence(&made.prediction),
        }),
        score: state.scored.as_ref().map(|score| ScoreView {
            score: score.clone(),
            points: score.points(),
            sentence: score.sentence(),
        }),
        tally: state.tally,
        counted: mode == Mode::Campaign,
        choices: prediction::choices(game.level(), game.simulation().guards()),
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct PredictBody {
    /// `heist_works` or `heist_fails`.
    verdict: String,
    /// The guard expected to decide the run, by name (`ledger`), or `no_guard`; absent or
    /// null: none said.
    guard: Option<String>,
}

fn parse(body: &PredictBody) -> Result<Prediction, WebError> {
    let verdict = match body.verdict.as_str() {
        "heist_works" => Expected::HeistWorks,
        "heist_fails" => Expected::HeistFails,
        other => {
            return Err(WebError::invalid(format!(
                "verdict: `{}` is not a verdict; send `heist_works` or `heist_fails`",
                super::views::shorten(other)
            )));
        }
    };
    let pick = match body.guard.as_deref() {
        None => None,
        Some(value) => Some(Pick::from_value(value).ok_or_else(|| {
            let known: Vec<&str> = Guard::EVERY.iter().map(|guard| guard.name()).collect();
            WebError::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "unknown_guard",
                format!(
                    "guard: no guard `{}`; the guards: {}, or `{}` for none",
                    super::views::shorten(value),
                    known.join(", "),
                    prediction::NO_GUARD
                ),
            )
        })?),
    };
    Ok(Prediction::new(verdict, pick))
}

/// `POST /api/game/predict`: a prediction about the open level's run, before it plays out.
pub(super) async fn predict(
    State(state): State<WebState>,
    joined: Joined,
    StrictJson(body): StrictJson<PredictBody>,
) -> Result<Json<GameView>, WebError> {
    let prediction = parse(&body)?;
    state
        .work(move |shared| {
            let mut participant = joined.session().participant();
            let game = participant.game_mut(&shared.catalogue)?;
            let phase = game.simulation().phase();
            if run_ended(game) {
                return Err(WebError::conflict(
                    "run_ended",
                    format!(
                        "prediction: the run has played out (quiet at phase {phase}); predict before \
                         it ends: restart or rewind, then predict"
                    ),
                ));
            }
            if let Some(made) = participant.prediction.made {
                return Err(WebError::conflict(
                    "already_predicted",
                    format!(
                        "prediction: one per run, and this run's is made (at phase {}): {} It is \
                         scored when the run ends",
                        made.at_phase,
                        made_sentence(&made.prediction)
                    ),
                ));
            }
            let before = participant.prediction.clone();
            participant.prediction.made = Some(Made {
                prediction,
                at_phase: phase,
            });
            participant.prediction.scored = None;
            let change = super::room_file::Change {
                prediction: Some(&participant.prediction),
                ..Default::default()
            };
            if let Err(error) = shared.sessions.store().save(participant.id, &change) {
                participant.prediction = before;
                return Err(WebError::logged(
                    "the room file could not be written, so the prediction was not kept",
                    error,
                ));
            }
            on_game(shared, &mut participant, Request::Look).map(Json)
        })
        .await
}
