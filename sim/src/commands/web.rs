//! `twice-sim web`: serves the campaign to a room of browsers until Ctrl-C.

use super::bad_input;
use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use twice_serve::web::{
    Catalogue, DEFAULT_ADDRESS, IDLE_MINUTES_DEFAULT, IDLE_MINUTES_MAX, SESSIONS_DEFAULT, SESSIONS_LIMIT, WebConfig,
    WebStartError, WebState, bind, default_room_path, serve_until,
};
use twice_world::exit::{EXIT_FAILED, EXIT_OK};
use twice_world::text::counted;

#[derive(Debug, clap::Args)]
pub struct WebArgs {
    /// The address to listen on. Port 0 picks a free port (the URLs are printed).
    #[arg(long, default_value = DEFAULT_ADDRESS)]
    pub addr: SocketAddr,
    /// The campaign's folder (`*.level.ron` and `*.tape.ron`), loaded once at start.
    #[arg(long, default_value = "levels")]
    pub levels: PathBuf,
    /// Allow listening on an address other machines can reach (a workshop on a LAN).
    #[arg(long)]
    pub allow_non_loopback: bool,
    /// The most participants at once (1 to 1000); the next one is told the room is full.
    #[arg(long, default_value_t = SESSIONS_DEFAULT as u64, value_parser = clap::value_parser!(u64).range(1..=SESSIONS_LIMIT as u64))]
    pub sessions_max: u64,
    /// A participant with no request for this many minutes gives up their place (1 to 1440);
    /// the room file keeps them, and their next request takes a place again.
    #[arg(long, default_value_t = IDLE_MINUTES_DEFAULT, value_parser = clap::value_parser!(u64).range(1..=IDLE_MINUTES_MAX))]
    pub idle_minutes: u64,
    /// Every level open from the start (the presenter can also switch this on and off).
    #[arg(long)]
    pub unlock_all: bool,
    /// The room file (SQLite): participants, progress, won tapes, open levels and the
    /// presenter's secret, kept across restarts. Default: twice-room.sqlite beside the
    /// levels folder. A new path starts a new room; `:memory:` keeps nothing.
    #[arg(long)]
    pub room: Option<PathBuf>,
    /// Levels open to everyone whatever the lock chain, in the plan's order: file numbers,
    /// campaign positions (`2.1`), ids or file stems, comma-separated (`--path 01,03,05`).
    /// Kept in the room file.
    #[arg(long, value_delimiter = ',')]
    pub path: Option<Vec<String>>,
    /// The address participants type, as the join page (/join) shows it in large type and as
    /// a QR code: `http://192.168.1.20:7880/`. Default: the address the join page is opened at.
    #[arg(long)]
    pub join_url: Option<String>,
    /// The workshop's minute plan the presenter's page shows with a clock: a Markdown file
    /// with a `| minute | what happens | the room does |` table. Default: the book's workshop
    /// plan (docs/src/workshop/plan.md) this binary was built with.
    #[arg(long)]
    pub plan: Option<PathBuf>,
    /// No log lines (joins, leaves, races, errors) on stderr; the URLs are still printed.
    #[arg(long, short)]
    pub quiet: bool,
}

/// The room's log: one line per join, leave, race and error, on stderr, unless `--quiet`.
fn start_log(quiet: bool) {
    if quiet {
        return;
    }
    // Another subscriber already set (a test harness) keeps its own.
    let _ = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_target(false)
        .with_max_level(tracing_subscriber::filter::LevelFilter::INFO)
        .try_init();
}

/// Runs the room until Ctrl-C (or SIGTERM).
pub fn web_command(args: WebArgs) -> u8 {
    let catalogue = match Catalogue::load(&args.levels) {
        Ok(catalogue) => catalogue,
        Err(error) => return bad_input(format!("--levels: {error}")),
    };
    let level_count = catalogue.levels().len();
    let mut config = match WebConfig::new() {
        Ok(config) => config,
        Err(error) => {
            eprintln!("error: {error}");
            return EXIT_FAILED;
        }
    };
    config.sessions_max = usize::try_from(args.sessions_max).unwrap_or(SESSIONS_LIMIT);
    config.idle_timeout = Duration::from_secs(args.idle_minutes * 60);
    config.unlock_all = args.unlock_all;
    config.path = args.path.clone();
    config.join_url = args.join_url.clone();
    config.plan_file = args.plan.clone();
    start_log(args.quiet);
    let room_path = args.room.clone().unwrap_or_else(|| default_room_path(&args.levels));
    config.room_file = (room_path.as_os_str() != ":memory:").then(|| room_path.clone());
    let runtime = match super::server_runtime() {
        Ok(runtime) => runtime,
        Err(code) => return code,
    };
    runtime.block_on(async move {
        let listener = match bind(args.addr, args.allow_non_loopback).await {
            Ok(listener) => listener,
            Err(error) => return bad_input(format!("--addr: {error}")),
        };
        // The room is opened after the address is taken: a refused address leaves no file.
        let state = match WebState::open(catalogue, &mut config) {
            Ok(state) => state,
            Err(error @ (WebStartError::Plan(_) | WebStartError::JoinUrl(_))) => return bad_input(error),
            Err(error) => return bad_input(format!("--room: {error}")),
        };
        let secret = config.presenter_secret.clone();
        let address = listener.local_addr().map_or(args.addr, |address| address);
        // Bound to every address, the server has no one name to print: say where it goes.
        let host = if address.ip().is_unspecified() {
            format!("THIS-MACHINE:{}", address.port())
        } else {
            address.to_string()
        };
        println!(
            "Twice for a room: {level_count} levels from {}, up to {} participants at once, a quiet one gives up their place after {}{}.",
            args.levels.display(),
            config.sessions_max,
            counted(args.idle_minutes, "idle minute", "idle minutes"),
            if config.unlock_all { ", every level open" } else { "" }
        );
        let kept = state.participant_count();
        match &config.room_file {
            Some(file) => println!(
                "room file: {} ({} kept; another --room file starts a new room)",
                file.display(),
                counted(kept as u64, "participant", "participants")
            ),
            None => println!("room: in memory only (kept nowhere: a restart starts it empty)"),
        }
        let path = config.path.clone().unwrap_or_default();
        if !path.is_empty() {
            println!("path open to everyone: {}", path.join(", "));
        }
        println!("participants: http://{host}/");
        println!("presenter:    http://{host}/presenter#secret={secret}");
        if address.ip().is_unspecified() {
            println!("(listening on every address: THIS-MACHINE is this machine's address on the LAN)");
        }
        println!("join page for the projector: http://{host}/join (the address in large type, and its QR code)");
        println!("plan: {} (the presenter's page shows it with a clock)", state.plan_source());
        println!("Keep the presenter URL to yourself: it opens the race and the scoreboard. Ctrl-C stops.");
        // Whoever started us (a test, a script) may wait for these lines to know the port.
        let _ = std::io::stdout().flush();
        match serve_until(listener, state, twice_drill::stop_signal()).await {
            Ok(()) => {
                println!("the room is closed");
                EXIT_OK
            }
            Err(error) => {
                eprintln!("error: the room stopped: {error}");
                EXIT_FAILED
            }
        }
    })
}
