//! The room's race as the participants take part: the race as it stands (waiting for a change
//! when asked to, so a new race reaches every page at once), and a participant's resolve.

use axum::Json;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use serde::Deserialize;

use super::WebState;
use super::error::WebError;
use super::handlers::{Joined, check_reason};
use super::race::Resolved;
use super::views::{self, RaceView, shorten};
use crate::json::StrictJson;
use twice_world::runtime::rules::Status;

/// How long `GET /api/race?seen=N` waits for the race to change before it answers anyway.
pub const RACE_WAIT_MS: u64 = 20_000;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RaceQuery {
    /// The race's version the page shows: the answer waits (up to [`RACE_WAIT_MS`]) until the
    /// race is another, so a new race reaches every page at once.
    seen: Option<u64>,
}

/// `GET /api/race[?seen=N]`: the race open in the room, if any; with `seen`, once it changed.
pub(super) async fn race(
    State(state): State<WebState>,
    joined: Joined,
    query: Result<Query<RaceQuery>, QueryRejection>,
) -> Result<Json<RaceView>, WebError> {
    let Query(query) = query.map_err(|rejection| WebError::invalid(format!("seen: {}", rejection.body_text())))?;
    if let Some(seen) = query.seen {
        state
            .shared
            .race
            .changed_since(seen, std::time::Duration::from_millis(RACE_WAIT_MS))
            .await;
    }
    let stage = joined.session.is_stage();
    state
        .work(move |shared| {
            let version = shared.race.version();
            let mut view = match shared.race.current() {
                Some(race) => views::race_view(&race, &race.simulation(), &shared.catalogue, false),
                None => views::no_race_view(),
            };
            view.version = version;
            // The stage shows the race to the room; it does not take part.
            view.can_resolve = view.open && view.winner.is_none() && !stage;
            Ok(Json(view))
        })
        .await
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct ResolveBody {
    /// The race's number, as the browser was shown it: a resolve never lands on a newer race.
    race: u32,
    /// `completed` (it took effect) or `failed` (it did not).
    status: String,
    reason: String,
}

/// `POST /api/race/resolve`: this participant settles the race's call, if nobody did first.
pub(super) async fn resolve_race(
    State(state): State<WebState>,
    joined: Joined,
    StrictJson(body): StrictJson<ResolveBody>,
) -> Result<Json<RaceView>, WebError> {
    let status = match Status::parse(&body.status) {
        Some(status @ (Status::Completed | Status::Failed)) => status,
        _ => {
            return Err(WebError::invalid(format!(
                "status: completed (it took effect) or failed (it did not), not `{}`",
                shorten(&body.status)
            )));
        }
    };
    check_reason(&body.reason)?;
    let race = state
        .shared
        .race
        .current()
        .ok_or_else(|| WebError::not_found("no_race", "no race is open in the room"))?;
    if race.number != body.race {
        return Err(WebError::conflict(
            "race_changed",
            format!(
                "race {} is over; the room's race is number {} now: look at it again",
                body.race, race.number
            ),
        ));
    }
    if joined.session.is_stage() {
        return Err(WebError::conflict(
            "move_refused",
            "the presenter's stage shows the race to the room; the participants settle it",
        ));
    }
    let name = joined.session.name.clone();
    match race.resolve(name.clone(), status, body.reason.clone()).await? {
        Resolved::Won(_) => {
            tracing::info!(
                "race #{}: {name} won: {} — \"{}\"",
                race.number,
                status.name(),
                views::shorten(&body.reason)
            );
            state
                .work(move |shared| {
                    shared.race.keep(shared.sessions.store())?;
                    shared.race.changed();
                    race.run_on()?;
                    shared.race.changed();
                    let mut view = views::race_view(&race, &race.simulation(), &shared.catalogue, false);
                    view.version = shared.race.version();
                    Ok(Json(view))
                })
                .await
        }
        Resolved::Lost { winner, current } => {
            tracing::info!(
                "race #{}: {name} tried {} and got 409: {} decided first",
                race.number,
                status.name(),
                winner.as_ref().map_or("someone", |winner| winner.operator.as_str())
            );
            // The 409 is part of the race the room sees: kept before it is answered.
            state
                .work(|shared| {
                    shared.race.keep(shared.sessions.store())?;
                    shared.race.changed();
                    Ok(())
                })
                .await?;
            let who = winner.as_ref().map_or_else(
                || format!("someone settled it first: it is {} now", current.status),
                |winner| {
                    format!(
                        "{} decided first: {} {}{}",
                        winner.operator,
                        winner.status.glyph,
                        winner.status.word,
                        winner
                            .reason
                            .as_ref()
                            .map(|reason| format!(" — \"{reason}\""))
                            .unwrap_or_default()
                    )
                },
            );
            Err(WebError {
                winner: winner.map(Box::new),
                ..WebError::conflict("conflict", format!("{}: {who}", current.key))
            })
        }
    }
}
