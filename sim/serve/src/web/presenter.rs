//! The presenter's endpoints: the room at a glance (who is on which level, who won what,
//! a scoreboard by par), unlocking every level, and the room's race.
//!
//! They answer only to the presenter's secret, made at start and printed in the
//! presenter's URL (after `#`, so it never travels in a request line or a log). A
//! participant's session cookie opens none of them.

use std::collections::BTreeMap;
use std::sync::atomic::Ordering;

use axum::Json;
use axum::extract::{FromRequestParts, State};
use axum::http::request::Parts;
use axum::http::{StatusCode, header};
use serde::{Deserialize, Serialize};
use subtle::ConstantTimeEq;

use super::WebState;
use super::error::WebError;
use super::views::{self, RaceView, RoomView};
use crate::json::StrictJson;
use crate::tokens::hash_token;

/// A request carrying the presenter's secret as `Authorization: Bearer <secret>`.
pub(super) struct Presenter;

fn not_presenter(message: &str) -> WebError {
    WebError::new(StatusCode::UNAUTHORIZED, "not_presenter", message)
}

impl FromRequestParts<WebState> for Presenter {
    type Rejection = WebError;

    async fn from_request_parts(parts: &mut Parts, state: &WebState) -> Result<Self, WebError> {
        let mut values = parts.headers.get_all(header::AUTHORIZATION).iter();
        let value = values
            .next()
            .ok_or_else(|| not_presenter("this is the presenter's: open the presenter URL `twice-sim web` printed"))?;
        if values.next().is_some() {
            return Err(not_presenter("send one Authorization header, not several"));
        }
        let secret = value
            .to_str()
            .ok()
            .and_then(|text| text.trim().strip_prefix("Bearer "))
            .map(str::trim)
            .ok_or_else(|| not_presenter("the Authorization header must be `Bearer <presenter secret>`"))?;
        // Hashes have one length, so the comparison's time says nothing about the secret.
        let offered = hash_token(secret);
        if bool::from(
            offered
                .as_bytes()
                .ct_eq(state.shared.presenter_secret_sha256.as_bytes()),
        ) {
            Ok(Presenter)
        } else {
            Err(not_presenter("that is not this room's presenter secret"))
        }
    }
}

/// `GET /api/presenter/room`: sessions, the scoreboard, the race and what could be raced.
pub(super) async fn room(State(state): State<WebState>, _presenter: Presenter) -> Result<Json<RoomView>, WebError> {
    state
        .work(|shared| {
            let sessions = shared.sessions.all();
            let mut participants = Vec::with_capacity(sessions.len());
            for session in &sessions {
                let idle_seconds = shared.sessions.idle_seconds(session);
                let participant = session.participant();
                participants.push(views::participant_view(&participant, &shared.catalogue, idle_seconds));
            }
            // The scoreboard counts everyone the room file holds, with a browser now or not.
            let progress: Vec<_> = shared
                .sessions
                .everyone()
                .iter()
                .map(|session| {
                    let participant = session.participant();
                    (participant.name.clone(), participant.progress.clone())
                })
                .collect();
            let progress: Vec<(String, BTreeMap<_, _>)> = progress;
            let openings = shared.openings();
            Ok(Json(RoomView {
                sessions: participants,
                sessions_max: u32::try_from(shared.sessions.max()).unwrap_or(u32::MAX),
                idle_minutes: shared.sessions.idle_timeout().as_secs().div_ceil(60),
                unlock_all: openings.unlock_all,
                path: openings
                    .path
                    .iter()
                    .filter_map(|id| shared.catalogue.by_id(id))
                    .map(|level| level.stem.clone())
                    .collect(),
                scoreboard: views::scoreboard(&shared.catalogue, &progress),
                race: match shared.race.current() {
                    Some(race) => views::race_view(&race, &race.simulation(), &shared.catalogue, true),
                    None => views::no_race_view(),
                },
                race_candidates: views::race_candidates(&shared.catalogue),
            }))
        })
        .await
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct UnlockBody {
    all: bool,
}

#[derive(Serialize)]
pub(super) struct UnlockView {
    unlock_all: bool,
}

/// `POST /api/presenter/unlock`: every level open to everyone (or back to `requires`),
/// kept in the room file.
pub(super) async fn unlock(
    State(state): State<WebState>,
    _presenter: Presenter,
    StrictJson(body): StrictJson<UnlockBody>,
) -> Result<Json<UnlockView>, WebError> {
    state
        .work(move |shared| {
            shared
                .sessions
                .store()
                .set_setting(super::SETTING_UNLOCK_ALL, if body.all { "true" } else { "false" })
                .map_err(|error| WebError::logged("the room file could not be written", error))?;
            shared.unlock_all.store(body.all, Ordering::Relaxed);
            Ok(Json(UnlockView { unlock_all: body.all }))
        })
        .await
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RaceBody {
    /// The tape to race on, by stem (`04-pause.lost-answer`), from the room's candidates.
    tape: String,
}

/// `POST /api/presenter/race`: opens a race to the room (replacing any open one).
pub(super) async fn open_race(
    State(state): State<WebState>,
    _presenter: Presenter,
    StrictJson(body): StrictJson<RaceBody>,
) -> Result<Json<RaceView>, WebError> {
    state
        .work(move |shared| {
            let race = shared.race.open(&shared.catalogue, &body.tape)?;
            shared.race.keep(shared.sessions.store())?;
            Ok(Json(views::race_view(
                &race,
                &race.simulation(),
                &shared.catalogue,
                true,
            )))
        })
        .await
}

#[derive(Serialize)]
pub(super) struct ClosedView {
    closed: bool,
}

/// `DELETE /api/presenter/race`: closes the race.
pub(super) async fn close_race(
    State(state): State<WebState>,
    _presenter: Presenter,
) -> Result<Json<ClosedView>, WebError> {
    state
        .work(|shared| {
            let closed = shared.race.close();
            shared.race.keep(shared.sessions.store())?;
            Ok(Json(ClosedView { closed }))
        })
        .await
}
