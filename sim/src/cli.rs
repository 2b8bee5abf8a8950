//! The `twice-sim` command line.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use serde::Serialize;

use twice_world::checker::Verdict;
use twice_world::error::InputError;
use twice_world::level::{self, LoadedLevel, LoadedTape};
use twice_world::report;
use twice_world::runtime::guards::Guards;
use twice_world::simulator::{Simulation, SimulationBuilder};

pub use twice_world::exit::{EXIT_BAD_INPUT, EXIT_DIFFERS, EXIT_OK};
use twice_world::replay::{ReplayResult, matches, replay_tape};

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
        /// Machine-readable output.
        #[arg(long)]
        json: bool,
    },
    /// Replay tapes (files or folders) and compare each verdict with the one expected.
    Replay {
        #[arg(required = true)]
        paths: Vec<PathBuf>,
        #[arg(long)]
        json: bool,
    },
    /// Check levels and tapes without playing them.
    Check {
        #[arg(required = true)]
        paths: Vec<PathBuf>,
    },
    /// Defend an unbeatable level: do these guards (and no others) stop every known heist and an
    /// explorer's search? With --minimum, find the smallest sets that do.
    Defend {
        /// The level file (an unbeatable level; its folder is the campaign).
        level: PathBuf,
        /// The guards to switch on (all others off): a comma-separated list, `none` or `all`.
        #[arg(long, default_value = "none")]
        guards: String,
        /// Find the smallest sets of guards that hold instead.
        #[arg(long)]
        minimum: bool,
        /// Schedules the explorer deals per check.
        #[arg(long, default_value_t = twice_world::defend::DEFENCE_SCHEDULES)]
        schedules: u64,
        /// Explorer threads.
        #[arg(long, default_value_t = 1)]
        jobs: usize,
        #[arg(long)]
        json: bool,
    },
    /// Rewrite version 1 tapes (files or folders) in the current format, by simulation: each wire
    /// card is played when its message is on the wire. A tape whose verdict would change is left alone.
    Upgrade {
        #[arg(required = true)]
        paths: Vec<PathBuf>,
    },
    /// Serve the operator HTTP API over a ledger file (see the README's "Operator HTTP API").
    Serve(crate::commands::serve::ServeArgs),
    /// Hash an operator's token for the tokens file (reads it from standard input), or make one with --generate.
    HashToken(crate::commands::serve::HashTokenArgs),
    /// Serve the campaign to a room of browsers (see the README's "In a browser (workshops)").
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
    /// Search random fault schedules for a heist, shrink the first one found and write it as a tape.
    Explore(crate::commands::explore::ExploreArgs),
    /// Play every card at every phase of every beatable level: does *when* decide, or is it a guess?
    Sweep(crate::commands::sweep::SweepArgs),
    /// Measure the ledger, the peer, the simulator and contention side by side (see the README's "Performance").
    Bench(crate::bench::BenchArgs),
    /// One contending process of `twice-sim bench` (started by it).
    #[command(hide = true)]
    BenchWorker(crate::bench::BenchWorkerArgs),
}

/// Runs the CLI with the process's arguments.
pub fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(error) => {
            let _ = error.print();
            return ExitCode::from(if error.use_stderr() { EXIT_BAD_INPUT } else { EXIT_OK });
        }
    };
    ExitCode::from(run(cli))
}

pub fn run(cli: Cli) -> u8 {
    match cli.command {
        Commands::Play {
            level,
            seed,
            tape,
            ledger,
            guards,
            json,
        } => play(&level, seed, tape.as_deref(), ledger, guards, json),
        Commands::Replay { paths, json } => replay(&paths, json),
        Commands::Check { paths } => check(&paths),
        Commands::Upgrade { paths } => upgrade(&paths),
        Commands::Defend {
            level,
            guards,
            minimum,
            schedules,
            jobs,
            json,
        } => defend(&level, &guards, minimum, schedules, jobs, json),
        Commands::Serve(args) => crate::commands::serve::serve_command(args),
        Commands::HashToken(args) => crate::commands::serve::hash_token_command(args),
        Commands::Web(args) => crate::commands::web::web_command(args),
        Commands::Billing(args) => twice_drill::billing_command(args),
        Commands::Worker(args) => twice_drill::worker_command(args),
        Commands::Drill(args) => twice_drill::drill_command(args),
        Commands::DrillBatchCrash(args) => twice_drill::batch_crash_command(args),
        Commands::BatchCrashChild(args) => twice_drill::batch_crash_child_command(args),
        Commands::Explore(args) => crate::commands::explore::explore_command(args),
        Commands::Sweep(args) => crate::commands::sweep::sweep_command(args),
        Commands::Bench(args) => crate::bench::bench_command(args),
        Commands::BenchWorker(args) => crate::bench::worker_command(args),
    }
}

fn bad_input(message: impl std::fmt::Display) -> u8 {
    eprintln!("error: {message}");
    EXIT_BAD_INPUT
}

fn same_file(left: &Path, right: &Path) -> bool {
    match (left.canonicalize(), right.canonicalize()) {
        (Ok(left), Ok(right)) => left == right,
        _ => false,
    }
}

#[derive(Serialize)]
struct PlayReport<'a> {
    level: &'a str,
    seed: u64,
    phases: u32,
    timeline: &'a [twice_world::simulator::TimelineEntry],
    /// The moves as made: the messages they hit, the workers they killed and where.
    played: &'a [twice_world::level::TimedAction],
    ledger: Vec<twice_world::ledger::ExecutionRecord>,
    checkpoints: Vec<twice_world::ledger::Checkpoint>,
    billing: &'a twice_world::billing::Billing,
    verdict: Verdict,
    debrief: twice_world::debrief::Debrief,
    expected: Option<&'a twice_world::level::Expectation>,
    as_expected: Option<bool>,
}

fn play(
    level_path: &Path,
    seed: Option<u64>,
    tape_path: Option<&Path>,
    ledger: Option<PathBuf>,
    guards: Option<String>,
    json: bool,
) -> u8 {
    let loaded: LoadedLevel = match level::load_level(level_path) {
        Ok(loaded) => loaded,
        Err(error) => return bad_input(error),
    };
    let tape: Option<LoadedTape> = match tape_path.map(level::load_tape).transpose() {
        Ok(tape) => tape,
        Err(error) => return bad_input(error),
    };
    if let Some(tape) = &tape
        && !same_file(&tape.level.path, level_path)
    {
        return bad_input(format!(
            "{}: the tape was recorded for level {}, not {}",
            tape.path.display(),
            tape.level.path.display(),
            level_path.display()
        ));
    }
    let guards = match guards.as_deref().map(Guards::parse_list).transpose() {
        Ok(guards) => guards,
        Err(error) => return bad_input(format!("--guards: {error}")),
    };
    // SQLite would only say "unable to open database file": say which folder is missing.
    if let Some(path) = &ledger
        && let Some(folder) = path
            .parent()
            .filter(|folder| !folder.as_os_str().is_empty() && !folder.is_dir())
    {
        return bad_input(format!(
            "--ledger {}: the folder {} does not exist; make it first (`mkdir -p {}`)",
            path.display(),
            folder.display(),
            folder.display()
        ));
    }
    let seed = seed.or(tape.as_ref().map(|tape| tape.tape.seed)).unwrap_or(1);
    let mut builder = SimulationBuilder::new(loaded.level.clone(), seed);
    if let Some(guards) = guards.or(tape.as_ref().and_then(|tape| tape.tape.guards)) {
        builder = builder.guards(guards);
    }
    if let Some(tape) = &tape {
        builder = builder
            .actions(tape.tape.actions.clone())
            .wire_rule(tape.tape.wire_rule());
    }
    if let Some(path) = &ledger {
        builder = builder.ledger_file(path);
    }
    let simulation = match builder
        .build()
        .and_then(|mut simulation| simulation.run().map(|_| simulation))
    {
        Ok(simulation) => simulation,
        Err(error) => return bad_input(error),
    };
    let verdict = match simulation.verdict() {
        Ok(verdict) => verdict,
        Err(error) => return bad_input(error),
    };
    let expected = tape.as_ref().map(|tape| &tape.tape.expect);
    let as_expected = expected.map(|expected| matches(expected, &verdict));
    if json {
        let report = PlayReport {
            level: &loaded.level.id,
            seed,
            phases: simulation.phase(),
            timeline: simulation.timeline(),
            played: simulation.played(),
            ledger: simulation.ledger_records().unwrap_or_default(),
            checkpoints: simulation.checkpoints().unwrap_or_default(),
            billing: simulation.billing(),
            verdict: verdict.clone(),
            debrief: twice_world::debrief::of(&simulation, &verdict),
            expected,
            as_expected,
        };
        println!("{}", serde_json::to_string_pretty(&report).expect("reports serialize"));
    } else {
        print_play(&simulation, &loaded, seed, &verdict);
        if let Some(path) = &ledger {
            println!(
                "\nThe ledger is in {}: open it with `sqlite3 {} 'select * from tool_executions'`",
                path.display(),
                path.display()
            );
        }
        if let (Some(expected), Some(ok)) = (expected, as_expected) {
            println!(
                "\nexpected {} stopped by [{}]: {}",
                expected.verdict,
                guard_list(&expected.stopped_by),
                if ok { "as expected" } else { "DIFFERS" }
            );
        }
    }
    if as_expected == Some(false) {
        EXIT_DIFFERS
    } else {
        EXIT_OK
    }
}

fn print_play(simulation: &Simulation, loaded: &LoadedLevel, seed: u64, verdict: &Verdict) {
    println!(
        "{} — {} (seed {seed}, guards off: [{}])\n",
        loaded.level.id,
        loaded.level.title,
        guard_list(&simulation.guards().off())
    );
    println!("== timeline ==\n{}", report::timeline(simulation.timeline()));
    println!(
        "== ledger ({}) ==\n{}",
        simulation.ledger().location(),
        report::ledger(
            &simulation.ledger_records().unwrap_or_default(),
            &simulation.checkpoints().unwrap_or_default()
        )
    );
    if let Some(second) = simulation.second_node_ledger() {
        println!(
            "== the second node's ledger ({}) ==\n{}",
            second.location(),
            report::ledger(
                &second.all_records().unwrap_or_default(),
                &second.checkpoints().unwrap_or_default()
            )
        );
    }
    println!("== billing ==\n{}", report::billing(simulation.billing()));
    println!("== verdict ==\n{}", report::verdict(verdict));
    println!(
        "== debrief ==\n{}",
        report::debrief(&twice_world::debrief::of(simulation, verdict))
    );
}

/// ` violations [..]` when there are any.
fn violation_list(violations: &[twice_world::checker::ViolationKind]) -> String {
    if violations.is_empty() {
        return String::new();
    }
    let names: Vec<&str> = violations.iter().map(|kind| kind.name()).collect();
    format!(" violations [{}]", names.join(", "))
}

fn guard_list(guards: &[twice_world::runtime::guards::Guard]) -> String {
    guards.iter().map(|guard| guard.name()).collect::<Vec<_>>().join(", ")
}

fn collect(paths: &[PathBuf], suffix: &str) -> Result<Vec<PathBuf>, InputError> {
    let mut files = Vec::new();
    for path in paths {
        files.extend(level::files_below(path, suffix)?);
    }
    Ok(files)
}

fn replay(paths: &[PathBuf], json: bool) -> u8 {
    let files = match collect(paths, ".tape.ron") {
        Ok(files) => files,
        Err(error) => return bad_input(error),
    };
    if files.is_empty() {
        return bad_input(format!(
            "no *.tape.ron files under {}",
            paths
                .iter()
                .map(|path| path.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    let mut results = Vec::new();
    let mut errors = Vec::new();
    for file in &files {
        match level::load_tape(file)
            .map_err(|error| error.to_string())
            .and_then(|tape| replay_tape(&tape).map_err(|error| error.to_string()))
        {
            Ok(result) => results.push(result),
            Err(error) => errors.push(error),
        }
    }
    let differ = results.iter().filter(|result| !result.as_expected).count();
    if json {
        #[derive(Serialize)]
        struct Summary<'a> {
            tapes: usize,
            as_expected: usize,
            differ: usize,
            errors: &'a [String],
            results: &'a [ReplayResult],
        }
        let summary = Summary {
            tapes: files.len(),
            as_expected: results.len() - differ,
            differ,
            errors: &errors,
            results: &results,
        };
        println!("{}", serde_json::to_string_pretty(&summary).expect("reports serialize"));
    } else {
        for result in &results {
            let violations = result.verdict.violation_kinds();
            let got = format!(
                "{} [{}]{}",
                result.verdict.outcome,
                guard_list(&result.verdict.stopped_by),
                violation_list(&violations)
            );
            if result.as_expected {
                println!("ok      {}  {got}", result.tape.display());
            } else {
                println!(
                    "DIFFERS {}  expected {} [{}]{}, got {got}",
                    result.tape.display(),
                    result.expected.verdict,
                    guard_list(&result.expected.stopped_by),
                    violation_list(&result.expected.violations)
                );
            }
        }
        for error in &errors {
            eprintln!("error: {error}");
        }
        println!(
            "{}: {} as expected, {differ} differ, {} bad",
            twice_world::report::counted(files.len() as u64, "tape", "tapes"),
            results.len() - differ,
            errors.len()
        );
    }
    if !errors.is_empty() {
        EXIT_BAD_INPUT
    } else if differ > 0 {
        EXIT_DIFFERS
    } else {
        EXIT_OK
    }
}

fn check(paths: &[PathBuf]) -> u8 {
    let report = twice_world::campaign::check(paths);
    for problem in &report.problems {
        eprintln!("{problem}");
    }
    let count = |number: usize, one: &str, many: &str| format!("{number} {}", if number == 1 { one } else { many });
    println!(
        "{} and {} checked, {}",
        count(report.levels, "level", "levels"),
        count(report.tapes, "tape", "tapes"),
        count(report.problems.len(), "problem", "problems")
    );
    if report.problems.is_empty() {
        EXIT_OK
    } else {
        EXIT_BAD_INPUT
    }
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
                "upgraded {}  ({} wire card(s) played when their message was on the wire, {} that never met one left out)",
                file.display(),
                upgraded.moved,
                upgraded.dropped
            ),
            Err(error) => {
                failed += 1;
                eprintln!("error: {error}");
            }
        }
    }
    println!("{} tapes: {} could not be upgraded", files.len(), failed);
    if failed > 0 { EXIT_DIFFERS } else { EXIT_OK }
}

fn defend(level_path: &Path, guards: &str, minimum: bool, schedules: u64, jobs: usize, json: bool) -> u8 {
    use twice_world::defend;
    let loaded = match level::load_level(level_path) {
        Ok(loaded) => loaded,
        Err(error) => return bad_input(error),
    };
    let folder = level_path.parent().unwrap_or(Path::new("."));
    let campaign = match twice_world::campaign::Campaign::load(folder) {
        Ok(campaign) => campaign,
        Err(problems) => {
            return bad_input(problems.iter().map(ToString::to_string).collect::<Vec<_>>().join("\n"));
        }
    };
    let heists = defend::heists(&campaign, &loaded.level);
    let search = defend::Search {
        schedules,
        jobs,
        seed: defend::DEFENCE_SEED,
    };
    let cancel = std::sync::atomic::AtomicBool::new(false);
    if minimum {
        return match defend::minimum(
            &loaded,
            &heists,
            search,
            twice_world::runtime::guards::Guard::ALL.len(),
            &cancel,
        ) {
            Ok(sets) if json => {
                let names: Vec<Vec<&str>> = sets
                    .iter()
                    .map(|set| set.iter().map(|guard| guard.name()).collect())
                    .collect();
                println!("{}", serde_json::to_string_pretty(&names).expect("names serialize"));
                EXIT_OK
            }
            Ok(sets) => {
                println!(
                    "{}: {} known heists; the smallest sets of guards that hold:",
                    loaded.level.id,
                    heists.len()
                );
                for set in &sets {
                    println!("  [{}]", guard_list(set));
                }
                if sets.is_empty() {
                    println!("  none: even every guard together lets a heist through");
                }
                EXIT_OK
            }
            Err(error) => bad_input(error),
        };
    }
    let on = match Guards::parse_list(guards) {
        Ok(parsed) => twice_world::runtime::guards::Guard::ALL
            .into_iter()
            .filter(|guard| parsed.is_on(*guard))
            .collect::<Vec<_>>(),
        Err(error) => return bad_input(format!("--guards: {error}")),
    };
    let report = match defend::check(&loaded, &heists, &on, search, &cancel) {
        Ok(report) => report,
        Err(error) => return bad_input(error),
    };
    if json {
        println!("{}", serde_json::to_string_pretty(&report).expect("reports serialize"));
    } else {
        println!(
            "{}: guards on [{}] ({} of a budget of {})",
            loaded.level.id,
            guard_list(&report.on),
            report.on.len(),
            report.budget
        );
        for heist in &report.heists {
            println!(
                "  {} {}  {}{}",
                if heist.stopped { "stopped" } else { "GOT IN " },
                if heist.tape.as_os_str().is_empty() {
                    heist.title.clone()
                } else {
                    heist.tape.display().to_string()
                },
                heist.outcome,
                violation_list(&heist.violations)
            );
        }
        match &report.search {
            Some(search) => match &search.found {
                None => println!("  stopped  the explorer's {} schedules", search.schedules),
                Some(actions) => {
                    println!("  GOT IN   the explorer found a heist (seed {:?}):", search.found_seed);
                    for action in actions {
                        println!("             before phase {}: {:?}", action.at_phase, action.play);
                    }
                }
            },
            None => println!("  (the explorer was not needed: a known heist got through)"),
        }
        println!(
            "{}",
            if report.holds() {
                "the defence holds"
            } else if report.stops_every_heist() {
                "every heist is stopped, but over the budget"
            } else {
                "the defence does not hold"
            }
        );
    }
    if report.holds() { EXIT_OK } else { EXIT_DIFFERS }
}
