//! The participants' endpoints: join the room, pick a level, play it, save its tape, and
//! take part in the room's race. Every move goes through [`Game`] to `Simulation::play`.

use std::sync::Arc;

use axum::Json;
use axum::extract::{FromRequestParts, State};
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderValue, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;

use super::error::WebError;
use super::game::{Mode, STEPS_PER_REQUEST_MAX};
use super::game_log::GameOp;
use super::play::{Request, game_error, on_game, open_game, open_replay};
use super::sessions::{COOKIE_NAME, Session, SessionId, no_session};
use super::views::{self, GameView, LevelSummaryView, MeView, shorten};
use super::{Shared, WebState};
use crate::json::StrictJson;
use twice_world::level::Play;
use twice_world::runtime::guards::Guards;
use twice_world::runtime::operator::REASON_CHARS_MAX;

// ----- who is asking -----

/// The session id a request's cookies carry, if any.
pub(super) fn cookie_id(headers: &HeaderMap) -> Option<SessionId> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .find_map(SessionId::from_cookie_header)
}

/// A participant who has joined; 401 for anyone else.
pub(super) struct Joined {
    pub(super) id: SessionId,
    pub(super) session: Arc<Session>,
}

impl Joined {
    pub(super) fn session(&self) -> &Session {
        &self.session
    }
}

impl FromRequestParts<WebState> for Joined {
    type Rejection = WebError;

    async fn from_request_parts(parts: &mut Parts, state: &WebState) -> Result<Self, WebError> {
        let id = cookie_id(&parts.headers).ok_or_else(no_session)?;
        let session = state.shared.sessions.find(id)?;
        Ok(Joined { id, session })
    }
}

/// How long a browser keeps its session cookie: a week, so a browser restarted in the
/// middle of a workshop (or a two-day one) still finds its participant.
pub const COOKIE_MAX_AGE_SECONDS: u64 = 7 * 24 * 60 * 60;

fn session_cookie(id: SessionId) -> HeaderValue {
    // HttpOnly: no script reads it; SameSite=Strict: no other site's page sends it.
    HeaderValue::from_str(&format!(
        "{COOKIE_NAME}={}; Path=/; HttpOnly; SameSite=Strict; Max-Age={COOKIE_MAX_AGE_SECONDS}",
        id.to_hex()
    ))
    .expect("hex is a valid header value")
}

fn idle_minutes(shared: &Shared) -> u64 {
    shared.sessions.idle_timeout().as_secs().div_ceil(60)
}

// ----- joining -----

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct JoinBody {
    name: String,
    /// The code a participant's old screen showed: takes the name back on this browser.
    code: Option<String>,
}

/// `POST /api/join`: a new session under a display name (the browser's old one ends).
pub(super) async fn join(
    State(state): State<WebState>,
    headers: HeaderMap,
    StrictJson(body): StrictJson<JoinBody>,
) -> Result<Response, WebError> {
    let replacing = cookie_id(&headers);
    let (id, me) = state
        .work(move |shared| {
            let (id, session) = shared.sessions.join(&body.name, body.code.as_deref(), replacing)?;
            Ok((id, me_of(shared, &session)))
        })
        .await?;
    Ok(signed_in(id, me))
}

/// Who a participant is, as their page shows it.
pub(super) fn me_of(shared: &Shared, session: &Session) -> MeView {
    views::me_view(
        &session.participant(),
        &shared.catalogue,
        &shared.openings(),
        idle_minutes(shared),
    )
}

/// The answer that puts browser `id` in the room: who they are, and the cookie that names them.
pub(super) fn signed_in(id: SessionId, me: MeView) -> Response {
    let mut response = Json(me).into_response();
    response.headers_mut().insert(header::SET_COOKIE, session_cookie(id));
    response
}

/// `POST /api/leave`: ends the session now (its slot is free for someone else).
pub(super) async fn leave(State(state): State<WebState>, joined: Joined) -> Result<Response, WebError> {
    let id = joined.id;
    let name = joined.session.name.clone();
    drop(joined);
    if state.work(move |shared| shared.sessions.leave(id)).await? {
        tracing::info!("{name} left the room (their code takes their name back)");
    }
    let mut response = StatusCode::NO_CONTENT.into_response();
    response.headers_mut().insert(
        header::SET_COOKIE,
        HeaderValue::from_static("twice_session=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0"),
    );
    Ok(response)
}

/// `GET /api/me`: the name, and the level open.
pub(super) async fn me(State(state): State<WebState>, joined: Joined) -> Result<Json<MeView>, WebError> {
    state.work(move |shared| Ok(Json(me_of(shared, &joined.session)))).await
}

/// `GET /api/levels`: the level select, with this participant's progress.
pub(super) async fn levels(
    State(state): State<WebState>,
    joined: Joined,
) -> Result<Json<Vec<LevelSummaryView>>, WebError> {
    state
        .work(move |shared| {
            Ok(Json(views::level_summaries(
                &shared.catalogue,
                &joined.session.participant(),
                &shared.openings(),
            )))
        })
        .await
}

// ----- the level -----

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct OpenBody {
    /// A level's id or file stem (`naive-retry`, `01-naive-retry`); never a path.
    level: String,
    seed: Option<u64>,
    /// Guards to leave on, as `--guards` takes them (`all`, `none`, `ledger,key_per_call`):
    /// a sandbox play, open whatever the progress, counted for nothing.
    guards: Option<String>,
}

/// The seed a level opens with unless told: the one the campaign's tapes use.
const DEFAULT_SEED: u64 = 1;
/// The longest guard list taken (every guard's name, comma-separated, is 180 characters).
const GUARD_LIST_CHARS_MAX: usize = 400;

fn parse_guards(text: &str) -> Result<Guards, WebError> {
    if text.chars().count() > GUARD_LIST_CHARS_MAX {
        return Err(WebError::invalid(format!(
            "guards: more than {GUARD_LIST_CHARS_MAX} characters; name each guard once"
        )));
    }
    Guards::parse_list(text).map_err(|error| WebError::invalid(format!("guards: {error}")))
}

/// `POST /api/game`: opens a level (closing the one open before); the level already open,
/// with the same seed and guards, carries on where it is.
pub(super) async fn open_level(
    State(state): State<WebState>,
    joined: Joined,
    StrictJson(body): StrictJson<OpenBody>,
) -> Result<Json<GameView>, WebError> {
    state
        .work(move |shared| {
            let (index, entry) = shared.catalogue.find(&body.level).ok_or_else(|| {
                let known: Vec<&str> = shared
                    .catalogue
                    .levels()
                    .iter()
                    .map(|level| level.stem.as_str())
                    .collect();
                WebError::not_found(
                    "unknown_level",
                    format!(
                        "level: no level `{}` in this room; the levels: {}",
                        shorten(&body.level),
                        known.join(", ")
                    ),
                )
            })?;
            let guards = body.guards.as_deref().map(parse_guards).transpose()?;
            let mut participant = joined.session.participant();
            if guards.is_none() && !shared.openings().is_open(&entry.level, &participant) {
                let missing: Vec<String> = entry
                    .level
                    .requires
                    .iter()
                    .filter(|id| !participant.is_finished(id))
                    .map(|id| {
                        shared
                            .catalogue
                            .by_id(id)
                            .map_or_else(|| id.clone(), |level| level.level.title.clone())
                    })
                    .collect();
                return Err(WebError::new(
                    StatusCode::FORBIDDEN,
                    "locked",
                    format!(
                        "{} is locked: finish {} first",
                        entry.level.title,
                        missing.join(" and ")
                    ),
                ));
            }
            let seed = body.seed.unwrap_or(DEFAULT_SEED);
            // The level already open, with the same seed and guards, carries on where it is:
            // opening it again from the level list never throws a run away without a word
            // (Restart, on the level screen, starts it again).
            let already_open = participant
                .log
                .as_ref()
                .is_some_and(|log| log.stem == entry.stem && log.seed == seed && log.guards == guards);
            if already_open {
                return on_game(shared, &mut participant, Request::Look).map(Json);
            }
            open_game(shared, &mut participant, index, entry, seed, guards).map(Json)
        })
        .await
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct ReplayBody {
    /// A debrief's replay link: the whole URL or its fragment (`replay=1.…`).
    link: String,
}

/// `POST /api/replay`: opens a shared run at its end (a sandbox play: it counts for nothing).
pub(super) async fn replay(
    State(state): State<WebState>,
    joined: Joined,
    StrictJson(body): StrictJson<ReplayBody>,
) -> Result<Json<GameView>, WebError> {
    let link = twice_world::replay_link::ReplayLink::parse(&body.link)
        .map_err(|error| WebError::invalid(format!("link: {error}")))?;
    state
        .work(move |shared| open_replay(shared, &mut joined.session.participant(), &link).map(Json))
        .await
}

/// `GET /api/game`: the level screen as it stands.
pub(super) async fn game(State(state): State<WebState>, joined: Joined) -> Result<Json<GameView>, WebError> {
    state
        .work(move |shared| on_game(shared, &mut joined.session.participant(), Request::Look).map(Json))
        .await
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct StepBody {
    phases: u32,
}

/// `POST /api/game/step`: runs 1 to [`STEPS_PER_REQUEST_MAX`] phases.
pub(super) async fn step(
    State(state): State<WebState>,
    joined: Joined,
    StrictJson(body): StrictJson<StepBody>,
) -> Result<Json<GameView>, WebError> {
    if !(1..=STEPS_PER_REQUEST_MAX).contains(&body.phases) {
        return Err(WebError::invalid(format!(
            "phases: 1 to {STEPS_PER_REQUEST_MAX} per step, not {}",
            body.phases
        )));
    }
    state
        .work(move |shared| {
            let request = Request::Op(GameOp::Step { phases: body.phases });
            on_game(shared, &mut joined.session.participant(), request).map(Json)
        })
        .await
}

/// `POST /api/game/run`: runs until the level is quiet or out of phases.
pub(super) async fn run_to_end(State(state): State<WebState>, joined: Joined) -> Result<Json<GameView>, WebError> {
    state
        .work(move |shared| on_game(shared, &mut joined.session.participant(), Request::Op(GameOp::Run)).map(Json))
        .await
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct PlayBody {
    /// The move, as a card's target offers it (and a tape stores it).
    play: Play,
}

/// `POST /api/game/play`: a card or an operator move, through `Simulation::play`.
pub(super) async fn play(
    State(state): State<WebState>,
    joined: Joined,
    StrictJson(body): StrictJson<PlayBody>,
) -> Result<Json<GameView>, WebError> {
    if let Play::OperatorResolve { reason, .. } | Play::OperatorCompensate { reason, .. } = &body.play {
        check_reason(reason)?;
    }
    state
        .work(move |shared| {
            let request = Request::Op(GameOp::Play { play: body.play });
            on_game(shared, &mut joined.session.participant(), request).map(Json)
        })
        .await
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct AimBody {
    /// The worker (`w<worker>`).
    worker: u32,
    /// The line of the code panel, from 1 as the panel numbers it.
    line: usize,
}

/// `POST /api/game/aim`: kill a worker when it reaches a line of the code (the crash card,
/// aimed); the same line again takes the aim back.
pub(super) async fn aim(
    State(state): State<WebState>,
    joined: Joined,
    StrictJson(body): StrictJson<AimBody>,
) -> Result<Json<GameView>, WebError> {
    let Some(line) = body.line.checked_sub(1) else {
        return Err(WebError::invalid("line: the code's lines are numbered from 1"));
    };
    state
        .work(move |shared| {
            let request = Request::Op(GameOp::Aim {
                worker: body.worker,
                line,
            });
            on_game(shared, &mut joined.session.participant(), request).map(Json)
        })
        .await
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RewindBody {
    phase: u32,
}

/// `POST /api/game/rewind`: back to the state after `phase` phases.
pub(super) async fn rewind(
    State(state): State<WebState>,
    joined: Joined,
    StrictJson(body): StrictJson<RewindBody>,
) -> Result<Json<GameView>, WebError> {
    state
        .work(move |shared| on_game(shared, &mut joined.session.participant(), Request::Rewind(body.phase)).map(Json))
        .await
}

/// `POST /api/game/restart`: phase 0, no moves.
pub(super) async fn restart(State(state): State<WebState>, joined: Joined) -> Result<Json<GameView>, WebError> {
    state
        .work(move |shared| on_game(shared, &mut joined.session.participant(), Request::Restart).map(Json))
        .await
}

/// `GET /api/game/tape`: the moves so far as a tape (RON) to download; saved beside the
/// level file it replays with `twice-sim replay`.
pub(super) async fn tape(State(state): State<WebState>, joined: Joined) -> Result<Response, WebError> {
    let (file_name, text) = state
        .work(move |shared| {
            let mut participant = joined.session.participant();
            let name = participant.name.clone();
            let game = participant.game_mut(&shared.catalogue)?;
            let how = match game.mode {
                Mode::Campaign => "in the browser",
                Mode::Sandbox => "in the browser's sandbox",
                // The browser opens no tapes to watch; the play session knows the mode for the game.
                Mode::Replay => "as a replay in the browser",
            };
            let tape = game
                .tape(format!("{} — played {how} by {name}", game.level().title))
                .map_err(game_error)?;
            let text = format!(
                "// Saved in the browser ({}). Put it beside {} and run `twice-sim replay` on it.\n{}\n",
                game.level().title,
                game.file_name,
                twice_world::level::tape_to_ron(&tape)
            );
            Ok((views::tape_file_name(&game.stem, &name), text))
        })
        .await?;
    let disposition = HeaderValue::from_str(&format!("attachment; filename=\"{file_name}\""))
        .map_err(|error| WebError::logged("the tape's file name is not a header value", error))?;
    Ok((
        [
            (
                header::CONTENT_TYPE,
                HeaderValue::from_static("text/plain; charset=utf-8"),
            ),
            (header::CONTENT_DISPOSITION, disposition),
            (header::CACHE_CONTROL, HeaderValue::from_static("no-store")),
        ],
        text,
    )
        .into_response())
}

// ----- shared checks -----

pub(super) fn check_reason(reason: &str) -> Result<(), WebError> {
    let chars = reason.chars().count();
    if reason.trim().is_empty() {
        return Err(WebError::invalid(
            "reason: say why (it goes into the record's history); it must not be empty",
        ));
    }
    if chars > REASON_CHARS_MAX {
        return Err(WebError::invalid(format!(
            "reason: {chars} characters, more than the {REASON_CHARS_MAX} allowed"
        )));
    }
    Ok(())
}

// ----- everything else -----

pub(super) async fn no_such_route(uri: Uri) -> WebError {
    WebError::not_found(
        "no_such_route",
        format!("nothing at `{}`; the room is at /", shorten(uri.path())),
    )
}

pub(super) async fn method_not_allowed() -> WebError {
    WebError::new(
        StatusCode::METHOD_NOT_ALLOWED,
        "method_not_allowed",
        "this endpoint does not take that method: reads are GET, moves are POST",
    )
}

/// A panic in a handler is a bug; the browser still gets a JSON 500, and the room goes on.
pub(super) fn panicked(panic: Box<dyn std::any::Any + Send + 'static>) -> Response {
    let text = panic
        .downcast_ref::<String>()
        .map(String::as_str)
        .or_else(|| panic.downcast_ref::<&str>().copied())
        .unwrap_or("(no message)");
    WebError::logged(
        "the request failed inside the server",
        format!("a handler panicked: {text}"),
    )
    .into_response()
}
