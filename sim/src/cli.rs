//! The `twice-sim` command line.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Parser, Subcommand};

use twice_world::error::InputError;
use twice_world::level;

pub use twice_world::exit::{EXIT_BAD_INPUT, EXIT_DIFFERS, EXIT_OK};
use twice_world::text::counted;

#[derive(Debug, Parser)]
#[command(
    name = "twice-sim",
    version,
    about = "Twice: make Penny the refund bot pay twice — or watch the runtime stop you"
)]
pub struct Cli {
    #[command(subcommand)]
    command: Commands,
}

#[derive(Debug, Subcommand)]
enum Commands {
    /// Play a level headless: prints the timeline, the ledger, billing's effects and the verdict.
    Play {
        /// The level file (`levels/*.level.ron`).
        level: PathBuf,
        /// The seed (default: the tape's, or 1).
        #[arg(long)]
        seed: Option<u64>,
        /// Play the moves of this tape (recorded for this level).
        #[arg(long)]
        tape: Option<PathBuf>,
        /// Write the ledger to this new SQLite file (open it with `sqlite3`).
        #[arg(long)]
        ledger: Option<PathBuf>,
        /// Guards to leave on: `all`, `none`, or a comma-separated list (default: the level's).
        #[arg(long)]
        guards: Option<String>,
        /// Also show the code: the runtime's loop as this level runs it with each worker's
        /// line, Penny's tools as declared, and the fix for the guard that decided.
        #[arg(long)]
        code: bool,
        /// Machine-readable output.
        #[arg(long)]
        json: bool,
    },
    /// Replay tapes (files or folders) and compare each verdict with the one expected; with
    /// --runtime, play them against a runtime of your own and judge its money.
    Replay {
        #[arg(required = true)]
        paths: Vec<PathBuf>,
        #[arg(long)]
        json: bool,
        /// Rewrite each differing tape's `expect` block to what the run did (after showing the
        /// difference); the rest of the file, comments included, stays as written.
        #[arg(long, conflicts_with = "runtime")]
        update: bool,
        #[command(flatten)]
        runtime: crate::commands::runtime::RuntimeOptions,
    },
    /// Check levels and tapes without playing them.
    Check {
        #[arg(required = true)]
        paths: Vec<PathBuf>,
    },
    /// Defend a level: do these guards (and no others) stop every known heist and an explorer's
    /// search? With --minimum, find the smallest sets that do.
    Defend(crate::commands::defend::DefendArgs),
    /// Rewrite version 1 tapes (files or folders) in the current format, by simulation: each wire
    /// card is played when its message is on the wire. A tape whose verdict would change is left alone.
    Upgrade {
        #[arg(required = true)]
        paths: Vec<PathBuf>,
    },
    /// Serve the operator HTTP API over a ledger file (the book's "The operator HTTP API", docs/src/operators/api.md).
    Serve(crate::commands::serve::ServeArgs),
    /// Hash an operator's token for the tokens file (reads it from standard input), or make one with --generate.
    HashToken(crate::commands::serve::HashTokenArgs),
    /// Serve the campaign to a room of browsers (the book's "The browser room", docs/src/workshop/room.md).
    Web(crate::commands::web::WebArgs),
    /// Run the billing world as an HTTP server over its own SQLite file (for drills).
    Billing(twice_drill::BillingArgs),
    /// Drive one run as a real worker process against a ledger file and a billing server.
    Worker(twice_drill::WorkerArgs),
    /// Persistence drill: real worker processes, real SIGKILLs, then check nothing was paid twice.
    Drill(twice_drill::DrillArgs),
    /// Group commit under SIGKILL: a process of many runs killed mid-batch, its ledger checked against billing.
    DrillBatchCrash(twice_drill::BatchCrashArgs),
    /// The process `drill-batch-crash` kills (started by it).
    #[command(hide = true)]
    BatchCrashChild(twice_drill::BatchCrashChildArgs),
    /// Twice's own runtime speaking the runtime protocol, for `replay --runtime` (started by it).
    RuntimeAdapter(twice_drill::runtime_protocol::adapter::AdapterArgs),
    /// Search random fault schedules for a heist, shrink the first one found and write it as a tape.
    Explore(crate::commands::explore::ExploreArgs),
    /// Play every card at every phase of every beatable level: does *when* decide, or is it a guess?
    Sweep(crate::commands::sweep::SweepArgs),
    /// Write a level and one of its tapes as a small cargo project against twice-runtime's
    /// public API (the library's real API, not the simulator): `cargo run` in it prints the
    /// verdict the simulator gives.
    Export(crate::commands::export::ExportArgs),
    /// Measure the ledger, the peer, the simulator and contention side by side (the book's "Performance").
    Bench(crate::bench::BenchArgs),
    /// One contending process of `twice-sim bench` (started by it).
    #[command(hide = true)]
    BenchWorker(crate::bench::BenchWorkerArgs),
}

/// Runs the CLI with the process's arguments.
pub fn main() -> ExitCode {
    quiet_on_broken_pipe();
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(error) => {
            let _ = error.print();
            return ExitCode::from(if error.use_stderr() { EXIT_BAD_INPUT } else { EXIT_OK });
        }
    };
    ExitCode::from(run(cli))
}

/// Ends the process quietly, with [`EXIT_BROKEN_PIPE`], when printing to standard output fails
/// because its reader went away, as command line tools do (`twice-sim play … | head -2`).
///
/// Rust ignores SIGPIPE, so `println!` panics on a closed pipe ("failed printing to stdout")
/// where a C tool would be killed silently; restoring SIGPIPE needs unsafe code, which the
/// workspace forbids, and would also kill the drills that write to their children's pipes.
/// Only that one panic is caught: any other goes to the default hook as before. Nothing is
/// lost: a ledger's writes are transactions, committed or not.
fn quiet_on_broken_pipe() {
    let default_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let message = info
            .payload()
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| info.payload().downcast_ref::<&str>().copied())
            .unwrap_or_default();
        if message.starts_with("failed printing to stdout") && message.contains("Broken pipe") {
            std::process::exit(i32::from(twice_world::exit::EXIT_BROKEN_PIPE));
        }
        default_hook(info);
    }));
}

pub fn run(cli: Cli) -> u8 {
    match cli.command {
        Commands::Play {
            level,
            seed,
            tape,
            ledger,
            guards,
            code,
            json,
        } => crate::commands::play::play(&level, seed, tape.as_deref(), ledger, guards, code, json),
        Commands::Replay {
            paths,
            json,
            update,
            runtime,
        } => match &runtime.runtime {
            Some(command) => match collect(&paths, ".tape.ron") {
                Ok(files) if files.is_empty() => bad_input(format!("no *.tape.ron files under {}", shown(&paths))),
                Ok(files) => crate::commands::runtime::replay_runtime(&files, command, &runtime, json),
                Err(error) => bad_input(error),
            },
            None => match collect(&paths, ".tape.ron") {
                Ok(files) if files.is_empty() => bad_input(format!("no *.tape.ron files under {}", shown(&paths))),
                Ok(files) => crate::commands::replay::replay(&files, json, update),
                Err(error) => bad_input(error),
            },
        },
        Commands::Check { paths } => check(&paths),
        Commands::Upgrade { paths } => upgrade(&paths),
        Commands::Defend(args) => crate::commands::defend::defend(&args),
        Commands::Serve(args) => crate::commands::serve::serve_command(args),
        Commands::HashToken(args) => crate::commands::serve::hash_token_command(args),
        Commands::Web(args) => crate::commands::web::web_command(args),
        Commands::Billing(args) => twice_drill::billing_command(args),
        Commands::Worker(args) => twice_drill::worker_command(args),
        Commands::Drill(args) => twice_drill::drill_command(args),
        Commands::DrillBatchCrash(args) => twice_drill::batch_crash_command(args),
        Commands::BatchCrashChild(args) => twice_drill::batch_crash_child_command(args),
        Commands::RuntimeAdapter(args) => twice_drill::runtime_protocol::adapter::adapter_command(&args),
        Commands::Explore(args) => crate::commands::explore::explore_command(args),
        Commands::Sweep(args) => crate::commands::sweep::sweep_command(args),
        Commands::Export(args) => crate::commands::export::export_command(&args),
        Commands::Bench(args) => crate::bench::bench_command(args),
        Commands::BenchWorker(args) => crate::bench::worker_command(args),
    }
}

fn bad_input(message: impl std::fmt::Display) -> u8 {
    eprintln!("error: {message}");
    EXIT_BAD_INPUT
}

/// ` violations [..]` when there are any.
pub(crate) fn violation_list(violations: &[twice_world::checker::ViolationKind]) -> String {
    if violations.is_empty() {
        return String::new();
    }
    let names: Vec<&str> = violations.iter().map(|kind| kind.name()).collect();
    format!(" violations [{}]", names.join(", "))
}

pub(crate) fn guard_list(guards: &[twice_world::runtime::guards::Guard]) -> String {
    guards.iter().map(|guard| guard.name()).collect::<Vec<_>>().join(", ")
}

fn collect(paths: &[PathBuf], suffix: &str) -> Result<Vec<PathBuf>, InputError> {
    let mut files = Vec::new();
    for path in paths {
        files.extend(level::files_below(path, suffix)?);
    }
    Ok(files)
}

/// The paths given, as a list.
fn shown(paths: &[PathBuf]) -> String {
    paths
        .iter()
        .map(|path| path.display().to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

fn check(paths: &[PathBuf]) -> u8 {
    let mut report = twice_world::campaign::check(paths);
    // What a level declares about searches is held to them only once every file is sound:
    // the searches replay the campaign's tapes.
    if report.problems.is_empty() {
        report.problems.extend(declared_problems(paths));
    }
    for problem in &report.problems {
        eprintln!("{problem}");
    }
    println!(
        "{} and {} checked, {}",
        counted(report.levels as u64, "level", "levels"),
        counted(report.tapes as u64, "tape", "tapes"),
        counted(report.problems.len() as u64, "problem", "problems")
    );
    if report.problems.is_empty() {
        EXIT_OK
    } else {
        EXIT_BAD_INPUT
    }
}

/// The problems with each checked level's declared defender minimum, budget and par, found by
/// the defender's check and the explorer (each level against its folder's campaign).
fn declared_problems(paths: &[PathBuf]) -> Vec<twice_world::error::InputError> {
    use twice_world::campaign::Campaign;
    let files = match collect(paths, twice_world::campaign::LEVEL_SUFFIX) {
        Ok(files) => files,
        Err(error) => return vec![error],
    };
    let mut campaigns: std::collections::BTreeMap<PathBuf, Campaign> = std::collections::BTreeMap::new();
    let mut problems = Vec::new();
    let cancel = std::sync::atomic::AtomicBool::new(false);
    for file in files {
        let Ok(loaded) = twice_world::level::load_level(&file) else {
            continue;
        };
        if loaded.level.defender.is_none() && loaded.level.par.is_none() {
            continue;
        }
        let folder = file
            .parent()
            .filter(|parent| !parent.as_os_str().is_empty())
            .unwrap_or(Path::new("."))
            .to_path_buf();
        if !campaigns.contains_key(&folder) {
            match Campaign::load(&folder) {
                Ok(campaign) => {
                    campaigns.insert(folder.clone(), campaign);
                }
                Err(found) => {
                    problems.extend(found);
                    continue;
                }
            }
        }
        let campaign = &campaigns[&folder];
        match twice_world::defend::declared_problems(campaign, &loaded, twice_world::defend::Search::default(), &cancel)
        {
            Ok(found) => problems.extend(found),
            Err(error) => problems.push(InputError::new(&file, None, format!("cannot search: {error}"))),
        }
    }
    problems
}

fn upgrade(paths: &[PathBuf]) -> u8 {
    let files = match collect(paths, ".tape.ron") {
        Ok(files) => files,
        Err(error) => return bad_input(error),
    };
    let mut failed = 0;
    for file in &files {
        match twice_world::upgrade::upgrade_file(file) {
            Ok(None) => println!("current  {}", file.display()),
            Ok(Some(upgraded)) => println!(
                "upgraded {}  ({} played when their message was on the wire, {} that never met one left out)",
                file.display(),
                counted(upgraded.moved as u64, "wire card", "wire cards"),
                upgraded.dropped
            ),
            Err(error) => {
                failed += 1;
                eprintln!("error: {error}");
            }
        }
    }
    println!(
        "{}: {failed} could not be upgraded",
        counted(files.len() as u64, "tape", "tapes")
    );
    if failed > 0 { EXIT_DIFFERS } else { EXIT_OK }
}
