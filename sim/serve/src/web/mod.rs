//! The browser edition: `twice-sim web` serves the campaign to a room of browsers.
//!
//! A workshop has thirty laptops and ten minutes, so nothing may need installing: the
//! pages are plain HTML, CSS and JavaScript compiled into this binary (`sim/web/`), and
//! every participant plays in their own session on the one server. The browser holds no
//! simulation: each move is a request, carried out by [`game::Game`] through the same
//! `Simulation::play` the game and the CLI use, so a tape saved in the browser replays in
//! `twice-sim replay` to the same verdict.
//!
//! The pieces, one concern each:
//! - [`sessions`]: who is in the room — random session ids in a cookie, a bounded number of
//!   places, idle participants give theirs up; each participant's progress and open level.
//! - [`room_file`]: the room on disk (`--room`): participants, progress, won tapes, each
//!   open level's requests ([`game_log`]), the presenter's secret and the room's settings,
//!   written before each answer, so a restart or a crash loses nothing.
//! - [`game`]: one participant's level: its recipe, its simulation, step / play / rewind.
//! - [`levels`]: the levels a room plays, loaded once at start and named by id or file
//!   stem — a client never names a file.
//! - [`race`]: the room's operator race on one shared ledger file.
//! - [`handlers`] and [`presenter`]: the routes; [`views`]: every JSON answer, built in one
//!   place from the simulator's state.
//! - [`views::overview`]: the presenter's room at a glance (one row per level, who needs
//!   help); [`projector`]: what the presenter puts on the wall (the join page with its QR code, the
//!   minute plan with a clock and the chapter notes, the stage that shows one level large).
//!
//! The server logs one line per join, leave, race and error through `tracing`; the command
//! line decides where they go (`twice-sim web --quiet`: nowhere).
//!
//! The HTTP pieces are the operator API's: loopback unless `--allow-non-loopback`, the same
//! JSON body checks and limits, and the same guarded listener (bounded open connections,
//! idle connections closed).

mod assets;
mod defend;
mod error;
pub mod game;
mod game_log;
mod handlers;
mod identity;
mod levels;
mod participant;
mod play;
mod prediction;
mod presenter;
mod projector;
mod race;
mod race_routes;
mod room_file;
mod sessions;
pub mod take_home;
pub mod views;

use std::future::Future;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::routing::{get, post};
use tokio::sync::Semaphore;

pub use defend::HEIST_NOT_WON;
pub use error::{WEB_ERROR_CODES, WebError};
pub use levels::{Catalogue, CatalogueError, NotInRoom};
pub use race::RestoreError as RaceRestoreError;
pub use room_file::{DEFAULT_ROOM_FILE, RoomFile, RoomFileError, default_room_path};

use crate::listener::{ConnectionLimits, GuardedListener};
use race::RaceRoom;
use sessions::Sessions;

/// The address `twice-sim web` binds when not told otherwise.
pub const DEFAULT_ADDRESS: &str = "127.0.0.1:7880";
/// Sessions a room holds unless told otherwise: a workshop of thirty, twice over.
pub const SESSIONS_DEFAULT: usize = 64;
/// The most sessions `--sessions-max` may allow. Each holds at most one simulation of at
/// most [`LEVEL_PHASES_MAX`] phases (the book's room chapter gives the memory measured per session).
pub const SESSIONS_LIMIT: usize = 1_000;
/// How long a session may go without a request before it ends, unless told otherwise.
pub const IDLE_MINUTES_DEFAULT: u64 = 30;
/// The longest idle time `--idle-minutes` may set: one day.
pub const IDLE_MINUTES_MAX: u64 = 24 * 60;
/// How often idle sessions are swept (they are also checked on every request).
pub const SWEEP_INTERVAL_MS: u64 = 30_000;
/// The most connections open at once; the next waits until one closes. A browser keeps up
/// to six per server, so a full room of [`SESSIONS_DEFAULT`] fits.
pub const OPEN_CONNECTIONS_MAX: usize = 512;
/// How long a connection may make no progress before it is closed (browsers reopen).
pub const CONNECTION_IDLE_TIMEOUT_MS: u64 = 60_000;
/// Simulation work (steps, rewinds, views) running at once; the rest wait their turn. The
/// machines this targets have two cores; a queue is fairer than thirty threads at once.
pub const SIMULATION_JOBS_MAX: usize = 4;
/// How long a request waits for its turn before the server answers 503.
pub const SIMULATION_WAIT_MS: u64 = 10_000;
/// The most phases a level served in the browser may run. Every phase adds a timeline
/// entry and a rewind re-simulates up to all of them, so this bounds a session's memory
/// and a request's time. The campaign's levels run at most 400.
pub const LEVEL_PHASES_MAX: u32 = 2_000;

/// How a room is run.
#[derive(Clone, Debug)]
pub struct WebConfig {
    /// The most sessions at once; the next participant gets a 503 until one leaves or expires.
    pub sessions_max: usize,
    /// A session with no request for this long ends.
    pub idle_timeout: Duration,
    /// Every level open from the start (otherwise a level opens when its `requires` are finished).
    pub unlock_all: bool,
    /// What the presenter's page sends to reach the presenter's endpoints. A room file that
    /// already has one keeps its own ([`WebState::open`] puts it here).
    pub presenter_secret: String,
    /// The room file; `None`: a room in memory only (lost with the process).
    pub room_file: Option<PathBuf>,
    /// Levels open to everyone whatever the lock chain (a workshop's plan), by id or stem;
    /// `None`: the room file's path, if it has one.
    pub path: Option<Vec<String>>,
    /// The address participants type, as the join page shows it and its QR code holds
    /// (`http://192.168.1.20:7880/`); `None`: the address the join page was opened at.
    pub join_url: Option<String>,
    /// The workshop's minute plan (Markdown with a `| minute | …` table); `None`: the book's
    /// workshop plan (docs/src/workshop/plan.md) this binary was built with.
    pub plan_file: Option<PathBuf>,
}

impl WebConfig {
    /// The defaults, with a new random presenter secret.
    pub fn new() -> Result<WebConfig, WebStartError> {
        Ok(WebConfig {
            sessions_max: SESSIONS_DEFAULT,
            idle_timeout: Duration::from_secs(IDLE_MINUTES_DEFAULT * 60),
            unlock_all: false,
            presenter_secret: crate::tokens::generate_token().map_err(WebStartError::NoRandomness)?,
            room_file: None,
            path: None,
            join_url: None,
            plan_file: None,
        })
    }
}

/// Why the server could not start.
#[derive(Debug, thiserror::Error)]
pub enum WebStartError {
    #[error(transparent)]
    Catalogue(#[from] CatalogueError),
    #[error(
        "{0} is not a loopback address: the room would be reachable from other machines. \
         Pass --allow-non-loopback to mean it (a workshop on a LAN)"
    )]
    NotLoopback(SocketAddr),
    #[error("cannot listen on {address}: {source}")]
    Bind {
        address: SocketAddr,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot make the presenter's secret: {0}")]
    NoRandomness(crate::tokens::NoRandomness),
    #[error(transparent)]
    Room(#[from] RoomFileError),
    #[error("--path: {0}")]
    Path(NotInRoom),
    /// The room file's race could not be opened again (its tape left the campaign?).
    #[error("{0} (start with another --room file, or put the campaign's tape back)")]
    Race(RaceRestoreError),
    #[error("--plan: {0}")]
    Plan(String),
    #[error("--join-url: {0}")]
    JoinUrl(String),
}

/// Everything a request needs. Cheap to clone.
#[derive(Clone)]
pub struct WebState {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for WebState {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("WebState")
            .field("levels", &self.shared.catalogue.levels().len())
            .field("sessions", &self.shared.sessions.len())
            .finish_non_exhaustive()
    }
}

struct Shared {
    catalogue: Catalogue,
    sessions: Sessions,
    race: RaceRoom,
    unlock_all: AtomicBool,
    /// Level ids open to everyone whatever their `requires` (the room's path).
    path: Mutex<Vec<String>>,
    /// The presenter's secret, hashed: compared in constant time, never kept in clear.
    presenter_secret_sha256: String,
    /// One permit per piece of simulation work running ([`SIMULATION_JOBS_MAX`]).
    jobs: Arc<Semaphore>,
    /// What the presenter puts on the wall: the join address, the plan, the notes.
    projector: projector::Projector,
}

/// Room settings kept in the room file.
const SETTING_SECRET: &str = "presenter_secret";
const SETTING_UNLOCK_ALL: &str = "unlock_all";
const SETTING_PATH: &str = "path";

impl WebState {
    /// A room kept in memory only, as `config` says (its `room_file` is not read).
    pub fn new(catalogue: Catalogue, config: &WebConfig) -> WebState {
        let room = RoomFile::memory().expect("SQLite opens a database in memory");
        let mut config = config.clone();
        config.room_file = None;
        WebState::with_room(catalogue, &mut config, room).expect("a new room in memory loads")
    }

    /// The room in `config.room_file` (a new one if the file does not exist), or in memory.
    /// A room file that has a presenter secret keeps it: it is put in `config`, so the
    /// presenter's URL from before a restart still works.
    pub fn open(catalogue: Catalogue, config: &mut WebConfig) -> Result<WebState, WebStartError> {
        let room = match &config.room_file {
            Some(path) => RoomFile::open(path)?,
            None => RoomFile::memory()?,
        };
        WebState::with_room(catalogue, config, room)
    }

    fn with_room(catalogue: Catalogue, config: &mut WebConfig, room: RoomFile) -> Result<WebState, WebStartError> {
        match room.setting(SETTING_SECRET)? {
            Some(secret) => config.presenter_secret = secret,
            None => room.set_setting(SETTING_SECRET, &config.presenter_secret)?,
        }
        config.unlock_all |= room.setting(SETTING_UNLOCK_ALL)?.as_deref() == Some("true");
        room.set_setting(SETTING_UNLOCK_ALL, if config.unlock_all { "true" } else { "false" })?;
        let path = match &config.path {
            Some(names) => {
                let ids = catalogue.path_ids(names).map_err(WebStartError::Path)?;
                room.set_setting(SETTING_PATH, &ids.join(","))?;
                ids
            }
            None => room
                .setting(SETTING_PATH)?
                .map(|text| catalogue.path_ids_lenient(&text))
                .unwrap_or_default(),
        };
        config.path = Some(path.clone());
        let race = RaceRoom::restore(&catalogue, &room).map_err(WebStartError::Race)?;
        let projector = projector::Projector::load(config, &catalogue, &room)?;
        let sessions = Sessions::load(room, config.sessions_max.clamp(1, SESSIONS_LIMIT), config.idle_timeout)?;
        Ok(WebState {
            shared: Arc::new(Shared {
                catalogue,
                sessions,
                race,
                unlock_all: AtomicBool::new(config.unlock_all),
                path: Mutex::new(path),
                presenter_secret_sha256: crate::tokens::hash_token(&config.presenter_secret),
                jobs: Arc::new(Semaphore::new(SIMULATION_JOBS_MAX)),
                projector,
            }),
        })
    }

    /// Runs `work` on a blocking thread once a job slot is free: simulations and their
    /// SQLite ledgers block, and must never hold up the async workers.
    async fn work<T: Send + 'static>(
        &self,
        work: impl FnOnce(&Shared) -> Result<T, WebError> + Send + 'static,
    ) -> Result<T, WebError> {
        let permit = tokio::time::timeout(
            Duration::from_millis(SIMULATION_WAIT_MS),
            Arc::clone(&self.shared.jobs).acquire_owned(),
        )
        .await
        .map_err(|_| WebError::busy())?
        .map_err(|_| WebError::internal("the server is shutting down"))?;
        let shared = Arc::clone(&self.shared);
        let joined = tokio::task::spawn_blocking(move || {
            let _permit = permit;
            work(&shared)
        })
        .await;
        joined.unwrap_or_else(|error| {
            Err(WebError::logged(
                "the request failed inside the server",
                format!("a simulation task failed: {error}"),
            ))
        })
    }

    /// Ends the sessions idle for too long; returns how many.
    pub fn sweep(&self) -> usize {
        self.shared.sessions.sweep()
    }

    pub fn session_count(&self) -> usize {
        self.shared.sessions.len()
    }

    /// Everyone the room keeps, with a place now or not (the presenter's stage is none).
    pub fn participant_count(&self) -> usize {
        self.shared.sessions.kept_count()
    }

    /// The workshop plan's source, as the presenter's page names it.
    pub fn plan_source(&self) -> &str {
        self.shared.projector.plan_source()
    }
}

/// The wall clock in Unix milliseconds: when a participant last made progress, when the
/// workshop's clock started. Never used by a simulation (those run on virtual time).
pub(crate) fn now_unix_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |since| u64::try_from(since.as_millis()).unwrap_or(u64::MAX))
}

impl Shared {
    /// Which levels are open to whom beyond their `requires`: everything, or the room's path.
    fn openings(&self) -> views::Openings {
        views::Openings {
            unlock_all: self.unlock_all.load(std::sync::atomic::Ordering::Relaxed),
            path: self.path.lock().unwrap_or_else(PoisonError::into_inner).clone(),
        }
    }
}

/// The room's routes, limits and error handling.
pub fn router(state: WebState) -> Router {
    Router::new()
        .route("/", get(assets::index))
        .route("/presenter", get(assets::presenter_page))
        .route("/join", get(assets::join_page))
        .route("/join.svg", get(projector::join_qr))
        .route("/assets/{name}", get(assets::asset))
        .route("/api/join-card", get(projector::join_card))
        .route("/api/join", post(handlers::join))
        .route("/api/leave", post(handlers::leave))
        .route("/api/me", get(handlers::me))
        .route("/api/levels", get(handlers::levels))
        .route("/api/game", get(handlers::game).post(handlers::open_level))
        .route("/api/game/step", post(handlers::step))
        .route("/api/game/run", post(handlers::run_to_end))
        .route("/api/game/play", post(handlers::play))
        .route("/api/game/aim", post(handlers::aim))
        .route("/api/game/rewind", post(handlers::rewind))
        .route("/api/game/restart", post(handlers::restart))
        .route("/api/game/tape", get(handlers::tape))
        .route("/api/game/take-home", get(take_home::take_home))
        .route("/api/game/predict", post(prediction::predict))
        .route("/api/replay", post(handlers::replay))
        .route("/api/defend", post(defend::defend))
        .route("/api/race", get(race_routes::race))
        .route("/api/race/resolve", post(race_routes::resolve_race))
        .route("/api/presenter/room", get(presenter::room))
        .route("/api/presenter/unlock", post(presenter::unlock))
        .route("/api/presenter/plan", get(projector::plan))
        .route("/api/presenter/clock", post(projector::clock))
        .route("/api/presenter/stage", post(projector::stage))
        .route(
            "/api/presenter/race",
            post(presenter::open_race).delete(presenter::close_race),
        )
        .fallback(handlers::no_such_route)
        .method_not_allowed_fallback(handlers::method_not_allowed)
        .layer(DefaultBodyLimit::max(crate::api::BODY_BYTES_MAX))
        .layer(tower_http::catch_panic::CatchPanicLayer::custom(handlers::panicked))
        .with_state(state)
}

/// Binds `address` (refusing a non-loopback one unless allowed).
pub async fn bind(address: SocketAddr, allow_non_loopback: bool) -> Result<tokio::net::TcpListener, WebStartError> {
    crate::api::check_bind_address(address, allow_non_loopback).map_err(|_| WebStartError::NotLoopback(address))?;
    tokio::net::TcpListener::bind(address)
        .await
        .map_err(|source| WebStartError::Bind { address, source })
}

/// Serves the room on `listener` until `shutdown` completes, sweeping idle sessions every
/// [`SWEEP_INTERVAL_MS`] meanwhile.
pub fn serve_until(
    listener: tokio::net::TcpListener,
    state: WebState,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> impl Future<Output = std::io::Result<()>> + Send + 'static {
    // A room may sit behind one address (a NAT, a classroom's proxy): the cap per address is
    // the cap in all, and the head deadline keeps a trickling client from holding a slot.
    let limits = ConnectionLimits {
        open_max: OPEN_CONNECTIONS_MAX,
        per_peer_max: OPEN_CONNECTIONS_MAX,
        header_read_timeout: Duration::from_millis(crate::api::HEADER_READ_TIMEOUT_MS),
        idle_timeout: Duration::from_millis(CONNECTION_IDLE_TIMEOUT_MS),
    };
    let sweeper_state = state.clone();
    let app = router(state);
    async move {
        let listener = GuardedListener::start(listener, limits);
        let sweeper = tokio::spawn(async move {
            let mut interval = tokio::time::interval(Duration::from_millis(SWEEP_INTERVAL_MS));
            loop {
                interval.tick().await;
                let state = sweeper_state.clone();
                // Ending a session drops its simulation and SQLite connections: blocking work.
                let _ = tokio::task::spawn_blocking(move || state.sweep()).await;
            }
        });
        let served = axum::serve(listener, app).with_graceful_shutdown(shutdown).await;
        sweeper.abort();
        served
    }
}
