//! The presenter's endpoints: the room at a glance (one row per level, who needs help,
//! everyone on demand, a scoreboard by par), unlocking every level, and the room's race.
//!
//! They answer only to the presenter's secret, made at start and printed in the
//! presenter's URL (after `#`, so it never travels in a request line or a log). A
//! participant's session cookie opens none of them.

use std::collections::BTreeMap;
use std::sync::atomic::Ordering;

use axum::Json;
use axum::extract::rejection::QueryRejection;
use axum::extract::{FromRequestParts, Query, State};
use axum::http::request::Parts;
use axum::http::{StatusCode, header};
use serde::{Deserialize, Serialize};
use subtle::ConstantTimeEq;

use super::WebState;
use super::error::WebError;
use super::sessions::Place;
use super::views::{self, OverviewInput, Person, RaceView, RoomView, Thresholds};
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

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RoomQuery {
    /// Someone who lost a level more than this many times needs help (0 to 100).
    losses_over: Option<u32>,
    /// Someone here who finished no new level for this many minutes needs help (0 to 240).
    quiet_minutes: Option<u32>,
}

/// The most losses the presenter may set as "needs help".
pub const LOSSES_OVER_MAX: u32 = 100;
/// The most minutes without progress the presenter may set as "needs help": a long workshop.
pub const QUIET_MINUTES_MAX: u32 = 240;

/// `GET /api/presenter/room[?losses_over=N&quiet_minutes=M]`: the room at a glance — one row
/// per level, who needs help, everyone the room keeps, the scoreboard, the race.
pub(super) async fn room(
    State(state): State<WebState>,
    _presenter: Presenter,
    query: Result<Query<RoomQuery>, QueryRejection>,
) -> Result<Json<RoomView>, WebError> {
    let Query(query) = query.map_err(|rejection| WebError::invalid(rejection.body_text()))?;
    let defaults = Thresholds::default();
    let thresholds = Thresholds {
        losses_over: query.losses_over.unwrap_or(defaults.losses_over),
        quiet_minutes: query.quiet_minutes.unwrap_or(defaults.quiet_minutes),
    };
    if thresholds.losses_over > LOSSES_OVER_MAX || thresholds.quiet_minutes > QUIET_MINUTES_MAX {
        return Err(WebError::invalid(format!(
            "losses_over is 0 to {LOSSES_OVER_MAX} and quiet_minutes 0 to {QUIET_MINUTES_MAX}"
        )));
    }
    state
        .work(move |shared| {
            let now_ms = super::now_unix_ms();
            let opened_ms = shared.projector.opened_at_ms();
            // Everyone the room file holds, with a browser now or not: after a restart they
            // show at once, as away until their next request.
            let people: Vec<Person> = shared
                .sessions
                .everyone()
                .iter()
                .map(|(session, place)| {
                    let idle_seconds = shared.sessions.idle_seconds(session);
                    Person::of(&session.participant(), *place, idle_seconds, now_ms, opened_ms)
                })
                .collect();
            let openings = shared.openings();
            let input = OverviewInput {
                catalogue: &shared.catalogue,
                path: &openings.path,
                thresholds,
            };
            let (levels, help, people_views) = views::overview(&people, &input);
            let progress: Vec<(String, BTreeMap<_, _>)> = people
                .iter()
                .map(|person| (person.name.clone(), person.progress.clone()))
                .collect();
            let count = |items: usize| u32::try_from(items).unwrap_or(u32::MAX);
            let mut race = match shared.race.current() {
                Some(race) => views::race_view(&race, &race.simulation(), &shared.catalogue, true),
                None => views::no_race_view(),
            };
            race.version = shared.race.version();
            race.can_resolve = false;
            Ok(Json(RoomView {
                kept: count(people.len()),
                here: count(people.iter().filter(|person| person.place == Place::Here).count()),
                sessions_max: u32::try_from(shared.sessions.max()).unwrap_or(u32::MAX),
                idle_minutes: shared.sessions.idle_timeout().as_secs().div_ceil(60),
                unlock_all: openings.unlock_all,
                path: openings
                    .path
                    .iter()
                    .filter_map(|id| shared.catalogue.by_id(id))
                    .map(|level| level.stem.clone())
                    .collect(),
                path_numbers: openings
                    .path
                    .iter()
                    .filter_map(|id| shared.catalogue.by_id(id))
                    .map(|level| level.number().to_owned())
                    .collect(),
                thresholds,
                levels,
                help,
                people: people_views,
                scoreboard: views::scoreboard(&shared.catalogue, &progress),
                race,
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
            let mut view = views::race_view(&race, &race.simulation(), &shared.catalogue, true);
            view.version = shared.race.version();
            view.can_resolve = false;
            Ok(Json(view))
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
