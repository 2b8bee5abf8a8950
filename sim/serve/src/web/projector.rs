//! What the presenter puts on the wall: the join page (the room's address in large type and as
//! a QR code drawn here, as SVG), the workshop's minute plan with a clock and the chapter notes,
//! and the stage, where the presenter plays one level large for the room.
//!
//! The plan is the book's workshop plan's own table (docs/src/workshop/plan.md), read by `twice_world::workshop_plan` (the parser the
//! tests hold the plan to), and the notes are the campaign's `presenter-notes.ron`: the page
//! only draws them. The clock is kept in the room file, so a restart does not reset it.

use axum::Json;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, header};
use axum::response::{IntoResponse, Response};
use qrcode::render::svg;
use qrcode::{EcLevel, QrCode};
use serde::{Deserialize, Serialize};

use super::error::WebError;
use super::handlers::{cookie_id, me_of, signed_in};
use super::levels::Catalogue;
use super::presenter::Presenter;
use super::room_file::RoomFile;
use super::views;
use super::{WebConfig, WebStartError, WebState};
use crate::json::StrictJson;
use twice_world::presenter_notes::PresenterNotes;
use twice_world::workshop_plan::{self, Plan, PlanRow};

/// The plan this binary was built with: the book's workshop plan (docs/src/workshop/plan.md).
const BUILT_IN_PLAN: &str = include_str!("../../../../docs/src/workshop/plan.md");
/// The longest join address taken (`--join-url`, or a request's `Host`).
pub const JOIN_URL_CHARS_MAX: usize = 200;
/// The QR code's smallest side, in SVG units (the page scales it to fit).
const QR_SIDE_MIN: u32 = 320;
/// Where the room file keeps the workshop clock's start (Unix ms; empty: stopped).
const SETTING_CLOCK: &str = "clock_started_at_ms";
/// The latest minute the clock may be set to start from.
pub const CLOCK_MINUTE_MAX: u32 = workshop_plan::PLAN_MINUTES_MAX;

/// The wall's material, loaded once at start.
#[derive(Debug)]
pub struct Projector {
    plan: Result<Plan, String>,
    plan_source: String,
    notes: Option<PresenterNotes>,
    join_url: Option<String>,
    /// When this server opened the room (Unix ms): "no progress since" for someone whose
    /// progress time a room kept before it was counted.
    opened_at_ms: u64,
}

impl Projector {
    pub fn load(config: &WebConfig, catalogue: &Catalogue, _room: &RoomFile) -> Result<Projector, WebStartError> {
        let (plan, plan_source) = match &config.plan_file {
            Some(path) => {
                let text = std::fs::read_to_string(path)
                    .map_err(|error| WebStartError::Plan(format!("{}: cannot read: {error}", path.display())))?;
                let plan = workshop_plan::parse(&text)
                    .map_err(|error| WebStartError::Plan(format!("{}: {error}", path.display())))?;
                (Ok(plan), path.display().to_string())
            }
            // The built-in plan is the repository's; a build whose plan has no table
            // still serves the room, and the presenter's page says why there is none.
            None => (
                workshop_plan::parse(BUILT_IN_PLAN).map_err(|error| error.to_string()),
                "the book's workshop plan (docs/src/workshop/plan.md, built into this binary)".to_owned(),
            ),
        };
        let join_url = config.join_url.as_deref().map(check_join_url).transpose()?;
        Ok(Projector {
            plan,
            plan_source,
            notes: catalogue.notes().cloned(),
            join_url,
            opened_at_ms: super::now_unix_ms(),
        })
    }

    pub fn plan_source(&self) -> &str {
        &self.plan_source
    }

    pub fn opened_at_ms(&self) -> u64 {
        self.opened_at_ms
    }
}

fn check_join_url(url: &str) -> Result<String, WebStartError> {
    let url = url.trim();
    if !(url.starts_with("http://") || url.starts_with("https://")) {
        return Err(WebStartError::JoinUrl(format!(
            "`{}` is not an http:// or https:// address",
            views::shorten(url)
        )));
    }
    if url.chars().count() > JOIN_URL_CHARS_MAX || url.chars().any(char::is_whitespace) {
        return Err(WebStartError::JoinUrl(format!(
            "an address of at most {JOIN_URL_CHARS_MAX} characters, without spaces"
        )));
    }
    Ok(url.to_owned())
}

// ----- the join page -----

/// What the join page shows.
#[derive(Clone, Debug, Serialize)]
pub struct JoinCardView {
    /// The address participants type, and the QR code holds.
    pub url: String,
    /// It only reaches this machine (`localhost`, `127.0.0.1`): no phone in the room can use it.
    pub loopback: bool,
    /// What to do about it, when it is loopback.
    pub advice: Option<String>,
}

fn is_loopback_host(host: &str) -> bool {
    let name = if host.starts_with('[') {
        host.split(']').next().unwrap_or_default().trim_start_matches('[')
    } else {
        host.rsplit_once(':').map_or(host, |(name, _)| name)
    };
    name.eq_ignore_ascii_case("localhost") || name.starts_with("127.") || name == "::1"
}

/// The join address: `--join-url`, else the address this page was opened at (its `Host`).
fn card_for(projector: &Projector, headers: &HeaderMap) -> Result<JoinCardView, WebError> {
    let url = match &projector.join_url {
        Some(url) => url.clone(),
        None => {
            let host = headers
                .get(header::HOST)
                .and_then(|value| value.to_str().ok())
                .filter(|host| {
                    !host.is_empty()
                        && host.len() <= JOIN_URL_CHARS_MAX
                        && host.bytes().all(|byte| {
                            byte.is_ascii_alphanumeric() || matches!(byte, b'.' | b'-' | b':' | b'[' | b']')
                        })
                })
                .ok_or_else(|| WebError::invalid("the request's Host header is not an address to show the room"))?;
            format!("http://{host}/")
        }
    };
    let host = url
        .split("://")
        .nth(1)
        .unwrap_or_default()
        .split('/')
        .next()
        .unwrap_or_default();
    let loopback = is_loopback_host(host);
    Ok(JoinCardView {
        advice: loopback.then(|| {
            "This address only reaches this machine. Open this page at the machine's address on the \
             room's network (hostname -I prints it), or start the room with --join-url http://ADDRESS:PORT/"
                .to_owned()
        }),
        url,
        loopback,
    })
}

/// `GET /api/join-card`: the room's address for the join page (anyone may ask: it is the
/// address they already reached).
pub(super) async fn join_card(
    State(state): State<WebState>,
    headers: HeaderMap,
) -> Result<Json<JoinCardView>, WebError> {
    card_for(&state.shared.projector, &headers).map(Json)
}

/// `GET /join.svg`: the room's address as a QR code, drawn here as SVG.
pub(super) async fn join_qr(State(state): State<WebState>, headers: HeaderMap) -> Result<Response, WebError> {
    let card = card_for(&state.shared.projector, &headers)?;
    let code = QrCode::with_error_correction_level(card.url.as_bytes(), EcLevel::M)
        .map_err(|error| WebError::logged("the join address does not fit a QR code", error))?;
    let image = code
        .render::<svg::Color<'_>>()
        .min_dimensions(QR_SIDE_MIN, QR_SIDE_MIN)
        .quiet_zone(true)
        .build();
    Ok((
        [
            (header::CONTENT_TYPE, HeaderValue::from_static("image/svg+xml")),
            (header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff")),
            (header::CACHE_CONTROL, HeaderValue::from_static("no-cache")),
        ],
        image,
    )
        .into_response())
}

// ----- the plan, the notes and the clock -----

#[derive(Clone, Debug, Serialize)]
pub struct PlannedLevelView {
    /// As the plan names it: the file's number (`03`).
    pub number: String,
    /// As the room's pages show it (`2.1`).
    pub position: Option<String>,
    pub stem: Option<String>,
    pub title: Option<String>,
}

/// A row of the plan as the workshop plan has it, with the levels it names found in the room.
#[derive(Clone, Debug, Serialize)]
pub struct PlanRowView {
    #[serde(flatten)]
    pub row: PlanRow,
    pub planned: Vec<PlannedLevelView>,
}

#[derive(Clone, Debug, Serialize)]
pub struct ChapterNotesView {
    pub chapter: u32,
    pub chapter_title: String,
    pub minutes: u32,
    pub say: String,
    pub ask: Vec<String>,
}

#[derive(Clone, Copy, Debug, Serialize)]
pub struct ClockView {
    pub running: bool,
    /// Seconds since the workshop's minute 0.
    pub elapsed_s: u64,
    /// The plan's row under way (an index in `rows`).
    pub row: Option<usize>,
    /// The chapter under way: the row's, or the last one named before it.
    pub chapter: Option<u32>,
}

#[derive(Clone, Debug, Serialize)]
pub struct PlanView {
    pub source: String,
    /// Why there is no plan (the rows are empty then).
    pub problem: Option<String>,
    pub minutes: u32,
    pub rows: Vec<PlanRowView>,
    pub notes: Vec<ChapterNotesView>,
    pub clock: ClockView,
}

fn clock_view(plan: Option<&Plan>, room: &RoomFile) -> Result<ClockView, WebError> {
    let started = room
        .setting(SETTING_CLOCK)
        .map_err(|error| WebError::logged("the room file could not be read", error))?
        .and_then(|text| text.parse::<u64>().ok());
    let Some(started) = started else {
        return Ok(ClockView {
            running: false,
            elapsed_s: 0,
            row: None,
            chapter: None,
        });
    };
    let elapsed_s = super::now_unix_ms().saturating_sub(started) / 1_000;
    let row = plan.and_then(|plan| plan.row_at(elapsed_s));
    let chapter = plan
        .zip(row)
        .and_then(|(plan, row)| plan.rows[..=row].iter().rev().find_map(|row| row.chapter));
    Ok(ClockView {
        running: true,
        elapsed_s,
        row,
        chapter,
    })
}

fn plan_view(shared: &super::Shared) -> Result<PlanView, WebError> {
    let projector = &shared.projector;
    let catalogue = &shared.catalogue;
    let plan = projector.plan.as_ref().ok();
    let rows = plan
        .map(|plan| {
            plan.rows
                .iter()
                .map(|row| PlanRowView {
                    row: row.clone(),
                    planned: row
                        .levels
                        .iter()
                        .map(|number| {
                            let level = catalogue.find_planned(number);
                            PlannedLevelView {
                                number: (*number).to_owned(),
                                position: level.map(|level| level.number().to_owned()),
                                stem: level.map(|level| level.stem.clone()),
                                title: level.map(|level| level.level.title.clone()),
                            }
                        })
                        .collect(),
                })
                .collect()
        })
        .unwrap_or_default();
    let notes = projector
        .notes
        .as_ref()
        .map(|notes| {
            notes
                .chapters
                .iter()
                .map(|notes| ChapterNotesView {
                    chapter: notes.chapter,
                    chapter_title: catalogue
                        .levels()
                        .iter()
                        .find(|entry| entry.level.chapter == notes.chapter)
                        .map(|entry| entry.level.chapter_title.clone())
                        .unwrap_or_default(),
                    minutes: notes.minutes,
                    say: notes.say.clone(),
                    ask: notes.ask.clone(),
                })
                .collect()
        })
        .unwrap_or_default();
    Ok(PlanView {
        source: projector.plan_source.clone(),
        problem: projector.plan.as_ref().err().cloned(),
        minutes: plan.map_or(0, Plan::minutes),
        rows,
        notes,
        clock: clock_view(plan, shared.sessions.store())?,
    })
}

/// `GET /api/presenter/plan`: the minute plan, the chapter notes and the clock.
pub(super) async fn plan(State(state): State<WebState>, _presenter: Presenter) -> Result<Json<PlanView>, WebError> {
    state.work(|shared| plan_view(shared).map(Json)).await
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct ClockBody {
    /// Start (or set) the clock at this minute of the plan; `null` stops it.
    minute: Option<u32>,
}

/// `POST /api/presenter/clock`: starts the workshop's clock at a minute, or stops it.
pub(super) async fn clock(
    State(state): State<WebState>,
    _presenter: Presenter,
    StrictJson(body): StrictJson<ClockBody>,
) -> Result<Json<PlanView>, WebError> {
    if body.minute.is_some_and(|minute| minute > CLOCK_MINUTE_MAX) {
        return Err(WebError::invalid(format!("minute: 0 to {CLOCK_MINUTE_MAX}")));
    }
    state
        .work(move |shared| {
            let value = body
                .minute
                .map(|minute| {
                    super::now_unix_ms()
                        .saturating_sub(u64::from(minute) * 60_000)
                        .to_string()
                })
                .unwrap_or_default();
            shared
                .sessions
                .store()
                .set_setting(SETTING_CLOCK, &value)
                .map_err(|error| WebError::logged("the room file could not be written", error))?;
            plan_view(shared).map(Json)
        })
        .await
}

// ----- the stage -----

/// `POST /api/presenter/stage`: this browser becomes the presenter's stage — a participant
/// with every level open, left out of the overview and the scoreboard — to show one level
/// large for the room (`/#stage`).
pub(super) async fn stage(
    State(state): State<WebState>,
    _presenter: Presenter,
    headers: HeaderMap,
) -> Result<Response, WebError> {
    let replacing = cookie_id(&headers);
    let (id, me) = state
        .work(move |shared| {
            let (id, session) = shared.sessions.stage(replacing)?;
            Ok((id, me_of(shared, &session)))
        })
        .await?;
    Ok(signed_in(id, me))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_hosts_are_told_apart_from_the_room_s_network() {
        for host in [
            "localhost:7880",
            "127.0.0.1:7880",
            "127.1.2.3",
            "[::1]:7880",
            "LOCALHOST",
        ] {
            assert!(is_loopback_host(host), "{host}");
        }
        for host in ["192.168.1.20:7880", "10.0.0.5", "workshop.local:7880", "[fe80::1]:7880"] {
            assert!(!is_loopback_host(host), "{host}");
        }
    }

    #[test]
    fn a_join_url_must_be_a_web_address() {
        assert!(check_join_url("http://192.168.1.20:7880/").is_ok());
        for bad in [
            "192.168.1.20:7880",
            "ftp://x",
            "http://a b/",
            &format!("http://{}", "x".repeat(300)),
        ] {
            assert!(check_join_url(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn the_built_in_plan_reads() {
        let plan = workshop_plan::parse(BUILT_IN_PLAN).expect("the workshop plan reads");
        assert!(plan.minutes() > 0);
    }
}
