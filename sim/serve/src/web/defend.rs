//! Defender mode in the browser: an unbeatable level played from the other side, judged by
//! the same `twice_world::defend::check` the game and `twice-sim defend` run.
//!
//! The participant switches guards on (at most the level's budget) and asks for a check: the
//! known heists are replayed against those guards, and if all are stopped the explorer
//! searches the level's hand for a schedule that still breaks Penny's promise, within
//! [`defend::DEFENCE_SCHEDULES`] schedules. A defence that holds finishes the level, as a
//! win does, and is kept in the room file; one that falls shows the heist or the explorer's
//! counter-example that got through.

use std::sync::atomic::AtomicBool;

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use twice_world::checker::Outcome;
use twice_world::defend::{self, DefenceReport};
use twice_world::runtime::guards::Guard;

use super::WebState;
use super::error::WebError;
use super::handlers::Joined;
use super::room_file::Change;
use super::sessions::LevelProgress;
use super::views::{Look, outcome_look};
use crate::api::views::shorten;
use crate::json::StrictJson;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct DefendBody {
    /// The level, by id or file stem.
    level: String,
    /// The guards switched on, by name.
    guards: Vec<String>,
}

#[derive(Clone, Debug, Serialize)]
pub struct HeistView {
    pub title: String,
    pub outcome: Look,
    pub stopped: bool,
    pub violations: Vec<String>,
}

#[derive(Clone, Debug, Serialize)]
pub struct DefenceView {
    pub level: String,
    pub on: Vec<&'static str>,
    pub budget: u32,
    pub within_budget: bool,
    /// Penny left alone, then each known heist that fits the level and fires here (breaks the
    /// promise with every guard off, or with the level's own): the others test nothing and are
    /// only counted.
    pub heists: Vec<HeistView>,
    /// Said once for the known heists left out (`defend::no_fire_sentence`), if any.
    pub left_out: Option<String>,
    /// Schedules the explorer tried; `None` when a known heist already got through.
    pub searched: Option<u64>,
    /// The explorer's counter-example: the moves of a schedule that got through.
    pub counter_example: Option<Vec<String>>,
    pub holds: bool,
    /// The smallest number of guards known to hold (the level's `minimum`).
    pub minimum_size: Option<u32>,
    /// The defence holds with as few guards as the smallest known.
    pub minimal: bool,
    /// Kept for the participant's progress: the level is finished.
    pub counted: bool,
}

/// What a participant may read of a known heist: its title when it comes from a level they
/// have won (or the level they defend, whose own heists are its threat), otherwise only where
/// it comes from — its title would hand over another level's winning move.
pub const HEIST_NOT_WON: &str = "a heist from a level you have not won";

/// `title_shown(heist)`: the heist's title, or [`HEIST_NOT_WON`] for a level not won yet.
fn defence_view(
    report: &DefenceReport,
    minimum_size: Option<u32>,
    title_shown: impl Fn(&defend::HeistResult) -> bool,
) -> DefenceView {
    let holds = report.holds();
    DefenceView {
        level: report.level.clone(),
        on: report.on.iter().map(|guard| guard.name()).collect(),
        budget: report.budget,
        within_budget: report.within_budget(),
        heists: report
            .heists
            .iter()
            .filter(|heist| heist.standing() != defend::HeistStanding::NoFire)
            .map(|heist| HeistView {
                title: if title_shown(heist) {
                    heist.title.clone()
                } else {
                    HEIST_NOT_WON.to_owned()
                },
                outcome: outcome_look(heist.outcome),
                stopped: heist.stopped,
                violations: heist.violations.iter().map(|kind| kind.words().to_owned()).collect(),
            })
            .collect(),
        left_out: defend::no_fire_sentence(
            report
                .heists
                .iter()
                .filter(|heist| heist.standing() == defend::HeistStanding::NoFire)
                .count(),
        ),
        searched: report.search.as_ref().map(|search| search.schedules),
        counter_example: report.search.as_ref().and_then(|search| {
            search.found.as_ref().map(|moves| {
                moves
                    .iter()
                    .map(|action| format!("{} before phase {}", action.play.card().title(), action.at_phase))
                    .collect()
            })
        }),
        holds,
        minimum_size,
        minimal: holds && minimum_size.is_some_and(|size| report.on.len() as u32 <= size),
        counted: false,
    }
}

/// `POST /api/defend`: checks a defence of an unbeatable level; a holding one finishes it.
pub(super) async fn defend(
    State(state): State<WebState>,
    joined: Joined,
    StrictJson(body): StrictJson<DefendBody>,
) -> Result<Json<DefenceView>, WebError> {
    let mut on = Vec::with_capacity(body.guards.len());
    for name in &body.guards {
        let guard = Guard::from_name(name).ok_or_else(|| {
            let known: Vec<&str> = Guard::ALL.iter().map(|guard| guard.name()).collect();
            WebError::invalid(format!(
                "guards: unknown guard `{}`; known guards: {}",
                shorten(name),
                known.join(", ")
            ))
        })?;
        if !on.contains(&guard) {
            on.push(guard);
        }
    }
    state
        .work(move |shared| {
            let (_, entry) = shared.catalogue.find(&body.level).ok_or_else(|| {
                WebError::not_found(
                    "unknown_level",
                    format!("level: no level `{}` in this room", shorten(&body.level)),
                )
            })?;
            if !entry.level.unbeatable {
                return Err(WebError::invalid(format!(
                    "level: {} can be beaten: defender mode is for the levels where the runtime holds",
                    entry.level.title
                )));
            }
            let mut participant = joined.session().participant();
            if !shared.openings().is_open(&entry.level, &participant) {
                return Err(WebError::new(
                    StatusCode::FORBIDDEN,
                    "locked",
                    format!("{} is locked: finish the levels before it first", entry.level.title),
                ));
            }
            let campaign = shared.catalogue.campaign();
            let loaded = campaign
                .levels
                .iter()
                .find(|loaded| loaded.level.id == entry.level.id)
                .ok_or_else(|| WebError::internal("the level is not in the loaded campaign"))?;
            let heists = defend::heists(campaign, &entry.level);
            let report = defend::check(loaded, &heists, &on, defend::Search::default(), &AtomicBool::new(false))
                .map_err(|error| WebError::logged("the defence could not be checked", error))?;
            let minimum_size = entry
                .level
                .defender
                .as_ref()
                .map(|defender| defender.minimum.len() as u32);
            // Penny left alone has no tape; a tape of no loaded level cannot be placed (shown).
            let won = |id: &str| participant.progress.get(id).is_some_and(|progress| progress.finished);
            let title_shown = |heist: &defend::HeistResult| {
                campaign
                    .tapes
                    .iter()
                    .find(|tape| tape.path == heist.tape)
                    .is_none_or(|tape| tape.level.level.id == entry.level.id || won(&tape.level.level.id))
            };
            let mut view = defence_view(&report, minimum_size, title_shown);
            // A defence that holds finishes the level; one that falls is a loss on it.
            let id = entry.level.id.clone();
            let before = participant.progress.get(&id).copied();
            let progress = LevelProgress {
                finished: view.holds || before.is_some_and(|progress| progress.finished),
                best: before.and_then(|progress| progress.best),
                plays: before.map_or(0, |progress| progress.plays),
                last_outcome: before.map_or(Outcome::PaidOnce, |progress| progress.last_outcome),
                losses: before
                    .map_or(0, |progress| progress.losses)
                    .saturating_add(u32::from(!view.holds)),
            };
            let first_finish = view.holds && !before.is_some_and(|progress| progress.finished);
            let progress_at_ms = first_finish.then(super::now_unix_ms);
            let change = Change {
                progress: Some((id.as_str(), &progress)),
                progress_at_ms,
                ..Change::default()
            };
            shared
                .sessions
                .store()
                .save(participant.id, &change)
                .map_err(|error| WebError::logged("the room file could not be written", error))?;
            participant.progress.insert(id, progress);
            if let Some(at_ms) = progress_at_ms {
                participant.progress_at_ms = Some(at_ms);
            }
            view.counted = view.holds;
            Ok(Json(view))
        })
        .await
}
