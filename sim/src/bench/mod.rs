//! `twice-sim bench`: the five performance figures of the book's "Performance" chapter,
//! each a ratio of two things measured side by side in the same run (these machines are
//! noisy; a ratio survives a slow spell that an absolute figure does not).
//!
//! 1. Ledger: full calls (the reservation with attempt 1's send fence folded in, then the
//!    outcome: reserve+fence + complete) on a file ledger against raw single-row
//!    INSERT-and-commit on the same SQLite settings ([`side_by_side`]). A cycle makes two
//!    commits, so 0.5 is the ceiling.
//! 2. Peer: the same cycle through `agent-effects` ([`peer`], with `--features peer-benchmark`),
//!    in the same rounds as figure 1; ours aims at [`PEER_RATIO_AIM`] times the peer's rate.
//! 3. Simulator: vault scenarios per second on one thread ([`scenarios`]), against 10,000,
//!    on both ledger stores side by side: SQLite (replays, the game) and the memory store
//!    (the explorer); the memory store's figure is the one held to the aim.
//! 4. Contention: reservations per second with several processes on one ledger file, against
//!    one process, with zero duplicate reservations ([`contention`]).
//! 5. Group commit: [`group_commit::RUNS`] concurrent runs in one process, their ledger writes
//!    batched one transaction per fsync, full calls per second against raw single commits
//!    ([`group_commit`]), side by side in rotating rounds.
//!
//! Each ratio measured in rounds (figures 1, 2, 3 and 5) comes with its spread over the rounds
//! (min, median, max), and each figure says how much of the machine other work took meanwhile
//! and the load average before and after ([`machine`]), so a reader can tell a result from noise.
//! `--figures 1,5` measures only the ledger figures (1 with 2 beside it, and 5): minutes, not
//! the whole table's quarter hour.
//!
//! With `--ledger postgres://…`, figures 1, 4 and 5 are also measured on PostgreSQL in the same
//! run: the reserve+fence + complete cycle in the same rounds as SQLite's (order rotating),
//! against PostgreSQL's own single-row INSERT + commit on the same server; the 64 grouped runs
//! against those single commits too; and contention with [`POSTGRES_CONTENTION_PROCESSES`]
//! processes spread over [`POSTGRES_CONTENTION_HOSTS`] hosts (network namespaces, as the drill
//! makes them; on this machine as they are when not run as root), each in a fresh schema
//! removed afterwards.
//!
//! The criterion benchmarks in `sim/benches/` measure the same things with criterion's
//! statistics; this command prints the ratios in one table.

pub mod contention;
pub mod cost;
pub mod group_commit;
pub mod machine;
mod measure;
#[cfg(feature = "peer-benchmark")]
pub mod peer;
mod report;
pub mod scenarios;
pub mod side_by_side;

use std::path::{Path, PathBuf};

use serde::Serialize;

use contention::{KEYS_MAX, PROCESSES_MAX, Placement};
use machine::{CpuCounters, OtherWork};
use measure::{load_scenarios, measure_group, measure_ledger, measure_postgres_contention, measure_scenarios};
use twice_drill::ledger_target::{LedgerTarget, LedgerTargetParser};
use twice_ledger_postgres::PostgresUrl;
use twice_world::ledger::{LedgerError, LedgerStore};

pub use contention::{BenchWorkerArgs, worker_command};
pub use report::{
    BenchReport, ContentionReport, ContentionRow, LedgerFigure, PeerFigure, PostgresContention, PostgresCycles,
    SimulatorFigure, Spread, grouped, table,
};

pub use twice_world::exit::{EXIT_BAD_INPUT, EXIT_FAILED, EXIT_OK};

/// The most cycles (figures 1 and 2) one run measures.
pub const CYCLES_MAX: u64 = 1_000_000;
/// The most rounds the cycles are cut into.
pub const ROUNDS_MAX: u64 = 1_000;
/// The most scenarios one run plays.
pub const SCENARIOS_MAX: u64 = 10_000_000;
/// The most process counts one run measures.
pub const PROCESS_COUNTS_MAX: usize = 8;
/// What the simulator figure is measured against: scenarios per second on one core.
pub const SCENARIOS_PER_SECOND_AIM: f64 = 10_000.0;
/// What the ledger figure aims for: a cycle makes two commits, so 0.5 is the ceiling.
pub const LEDGER_RATIO_AIM: f64 = 0.45;
/// What figure 2 aims for: our cycles per second at least four times the peer's.
pub const PEER_RATIO_AIM: f64 = 4.0;
/// The least CPU time a simulator figure (or one of its rounds) is timed on. A thread's CPU time
/// is counted by the scheduler in ticks of 1 to 10 ms, so a shorter measurement can read 0 and
/// give no rate at all; below this the figure is taken by the clock and the report says so.
pub const CPU_SECONDS_MIN: f64 = 0.1;
/// The default `--level`, relative to the folder `twice-sim bench` runs in.
pub const DEFAULT_LEVEL: &str = "levels/19-vault.level.ron";
/// Processes contending on the PostgreSQL ledger.
pub const POSTGRES_CONTENTION_PROCESSES: u32 = 8;
/// Hosts they are spread over (when the benchmark runs as root).
pub const POSTGRES_CONTENTION_HOSTS: u32 = 2;

/// Everything that can stop a measurement, naming what and where.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    #[error("{0}")]
    Input(String),
    /// The PostgreSQL ledger cannot be opened (no server there, a bad database).
    #[error("--ledger: {0}")]
    LedgerRefused(LedgerError),
    #[error(transparent)]
    Ledger(#[from] LedgerError),
    #[error("{}: {context}: {source}", path.display())]
    Sqlite {
        path: PathBuf,
        context: &'static str,
        #[source]
        source: rusqlite::Error,
    },
    #[error("{0}")]
    Io(String),
    #[error("{0}")]
    Unexpected(String),
    /// The peer of figure 2 (`peer::PeerError`, built only with the `peer-benchmark` feature).
    #[error("the peer: {0}")]
    Peer(#[source] Box<dyn std::error::Error + Send + Sync>),
}

#[derive(Debug, clap::Args)]
pub struct BenchArgs {
    /// Tiny counts: a smoke run in seconds (the figures are then only indicative).
    #[arg(long)]
    pub quick: bool,
    /// Machine-readable output.
    #[arg(long)]
    pub json: bool,
    /// The level for the simulator figure; its tapes are the ones beside it.
    #[arg(long, default_value = DEFAULT_LEVEL)]
    pub level: PathBuf,
    /// Where to put the benchmark's SQLite files (default: a new temporary folder, removed
    /// afterwards). Measure on the disk you care about: fsync is most of a commit.
    #[arg(long)]
    pub dir: Option<PathBuf>,
    /// Ledger cycles (and raw inserts, and peer cycles) to measure [default: 2000, quick: 40].
    #[arg(long)]
    pub cycles: Option<u64>,
    /// Rounds the cycles (and the scenarios) are cut into, the contenders' order rotating
    /// [default: 10, quick: 2].
    #[arg(long)]
    pub rounds: Option<u64>,
    /// Vault scenarios to play [default: 20000, quick: 12].
    #[arg(long)]
    pub scenarios: Option<u64>,
    /// Keys each contending process reserves [default: 400, quick: 20].
    #[arg(long)]
    pub keys: Option<u32>,
    /// Process counts for the contention figure, measured against one process.
    #[arg(long, value_delimiter = ',', default_value = "2,4,8")]
    pub processes: Vec<u32>,
    /// Also measure the ledger on PostgreSQL: `postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE`
    /// (fresh schemas, removed afterwards).
    #[arg(long, value_parser = LedgerTargetParser)]
    pub ledger: Option<LedgerTarget>,
    /// Which figures to measure, comma-separated: `--figures 1,5` is the ledger cycle (with
    /// the peer beside it, figure 2, when built in) and group commit alone, in minutes.
    #[arg(long, value_delimiter = ',', default_value = "1,2,3,4,5")]
    pub figures: Vec<u8>,
}

/// Which figures a run measures. Figures 1 and 2 are measured side by side, so either
/// brings both.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Figures {
    /// Figure 1, the ledger cycle against raw commits, with figure 2 (the peer) beside it.
    pub ledger: bool,
    /// Figure 3, the simulator.
    pub simulator: bool,
    /// Figure 4, contention between processes.
    pub contention: bool,
    /// Figure 5, group commit.
    pub group: bool,
}

impl Figures {
    /// The figures numbered in `numbers` (from 1 to 5); an unknown number or none is refused.
    pub fn from_numbers(numbers: &[u8]) -> Result<Figures, BenchError> {
        if numbers.is_empty() {
            return Err(BenchError::Input(
                "--figures: name at least one figure, from 1 to 5".into(),
            ));
        }
        if let Some(unknown) = numbers.iter().find(|number| !(1..=5).contains(*number)) {
            return Err(BenchError::Input(format!(
                "--figures {unknown}: there are figures 1 to 5 (1 ledger, 2 peer, 3 simulator, 4 contention, 5 group commit)"
            )));
        }
        let has = |number: u8| numbers.contains(&number);
        Ok(Figures {
            ledger: has(1) || has(2),
            simulator: has(3),
            contention: has(4),
            group: has(5),
        })
    }
}

/// What to measure, checked.
#[derive(Clone, Debug, Serialize)]
pub struct BenchPlan {
    pub quick: bool,
    pub level: PathBuf,
    pub cycles: u64,
    pub rounds: u64,
    pub scenarios: u64,
    pub keys: u32,
    pub processes: Vec<u32>,
    /// The PostgreSQL server and database to measure on too (shown with its password hidden).
    #[serde(serialize_with = "redacted")]
    pub postgres: Option<PostgresUrl>,
    pub figures: Figures,
}

/// A URL in a report: its password hidden.
fn redacted<S: serde::Serializer>(url: &Option<PostgresUrl>, serializer: S) -> Result<S::Ok, S::Error> {
    match url {
        Some(url) => serializer.serialize_some(&url.redacted()),
        None => serializer.serialize_none(),
    }
}

impl BenchPlan {
    pub fn from_args(args: &BenchArgs) -> Result<BenchPlan, BenchError> {
        let pick = |given: Option<u64>, full: u64, quick: u64| given.unwrap_or(if args.quick { quick } else { full });
        let plan = BenchPlan {
            quick: args.quick,
            level: args.level.clone(),
            cycles: pick(args.cycles, 2_000, 40),
            rounds: pick(args.rounds, 10, 2),
            scenarios: pick(args.scenarios, 20_000, 12),
            keys: args.keys.unwrap_or(if args.quick { 20 } else { 400 }),
            processes: args.processes.clone(),
            postgres: match &args.ledger {
                None => None,
                Some(LedgerTarget::Postgres(url)) => Some(url.clone()),
                Some(LedgerTarget::File(_)) => {
                    return Err(BenchError::Input(
                        "--ledger: the benchmark makes its own SQLite files (--dir); --ledger takes a postgres:// URL"
                            .into(),
                    ));
                }
            },
            figures: Figures::from_numbers(&args.figures)?,
        };
        let within = |flag: &str, value: u64, max: u64| {
            if value == 0 || value > max {
                Err(BenchError::Input(format!("--{flag} {value}: from 1 to {max}")))
            } else {
                Ok(())
            }
        };
        within("cycles", plan.cycles, CYCLES_MAX)?;
        within("rounds", plan.rounds, ROUNDS_MAX)?;
        within("scenarios", plan.scenarios, SCENARIOS_MAX)?;
        within("keys", u64::from(plan.keys), u64::from(KEYS_MAX))?;
        if plan.rounds > plan.cycles {
            return Err(BenchError::Input(format!(
                "--rounds {}: more rounds than --cycles {}",
                plan.rounds, plan.cycles
            )));
        }
        if plan.processes.is_empty() || plan.processes.len() > PROCESS_COUNTS_MAX {
            return Err(BenchError::Input(format!(
                "--processes: from 1 to {PROCESS_COUNTS_MAX} counts, comma-separated"
            )));
        }
        for &count in &plan.processes {
            within("processes", u64::from(count), u64::from(PROCESSES_MAX))?;
        }
        Ok(plan)
    }
}

/// Runs the measurements `plan.figures` names. `executable` is `twice-sim` itself (for
/// `bench-worker`).
pub fn run(plan: &BenchPlan, folder: &Path, executable: &Path) -> Result<BenchReport, BenchError> {
    // Load the level first: a bad path should fail before minutes of measuring.
    let scenarios = match plan.figures.simulator {
        true => Some(load_scenarios(&plan.level)?),
        false => None,
    };
    let run_started = CpuCounters::now();
    for name in [
        "raw.sqlite",
        "ledger.sqlite",
        "peer.sqlite",
        "raw-group.sqlite",
        "grouped.sqlite",
        "wal-ledger.sqlite",
        "wal-raw.sqlite",
    ] {
        let path = folder.join(name);
        if path.exists() {
            return Err(BenchError::Input(format!(
                "{}: already exists; the benchmark starts from new files, so choose an empty --dir",
                path.display()
            )));
        }
    }
    // Each PostgreSQL measurement in a schema of its own, removed when the guard goes.
    let mut schemas = Vec::new();
    let cycles = match plan.figures.ledger {
        true => Some(measure_ledger(plan, folder, &mut schemas)?),
        false => None,
    };
    let wal_frames = match plan.figures.ledger {
        true => Some(cost::measure_wal_frames(folder)?),
        false => None,
    };
    let (group, postgres_group, postgres_connections) = match plan.figures.group {
        true => {
            let (sqlite, postgres) = measure_group(plan, folder, &mut schemas)?;
            let (grouped, connections) = postgres.unzip();
            (Some(sqlite), grouped, connections)
        }
        false => (None, None, None),
    };
    let (simulator_sqlite, simulator) = match &scenarios {
        Some(scenarios) => (
            Some(measure_scenarios(
                scenarios,
                plan.scenarios,
                plan.rounds,
                LedgerStore::Sqlite,
            )?),
            Some(measure_scenarios(
                scenarios,
                plan.scenarios,
                plan.rounds,
                LedgerStore::Memory,
            )?),
        ),
        None => (None, None),
    };
    let contention = match plan.figures.contention {
        true => Some(measure_contention(plan, folder, executable)?),
        false => None,
    };
    let postgres_contention = match (&plan.postgres, plan.figures.contention) {
        (Some(server), true) => Some(measure_postgres_contention(
            executable,
            server,
            plan.keys,
            &mut schemas,
        )?),
        _ => None,
    };
    let all = contention
        .iter()
        .flat_map(|report| std::iter::once(&report.alone).chain(report.contended.iter().map(|row| &row.figure)))
        .chain(
            postgres_contention
                .iter()
                .flat_map(|figures| [&figures.alone, &figures.contended.figure]),
        );
    let (duplicates, unreserved) = all.fold((0, 0), |(duplicates, unreserved), figure| {
        (duplicates + figure.duplicates, unreserved + figure.unreserved)
    });
    let (ledger, peer, postgres_cycles) = match cycles {
        Some((ledger, peer, postgres)) => (Some(ledger), Some(peer), postgres),
        None => (None, None, None),
    };
    Ok(BenchReport {
        plan: plan.clone(),
        cores: std::thread::available_parallelism().map_or(1, usize::from),
        folder: folder.to_path_buf(),
        ledger,
        peer,
        postgres_cycles,
        group,
        postgres_group,
        postgres_connections,
        wal_frames,
        simulator,
        simulator_sqlite,
        contention,
        postgres_contention,
        duplicates,
        unreserved,
        other_work: OtherWork::between(run_started, CpuCounters::now()),
    })
}

/// Figure 4 on the SQLite file: one process, then each count of `plan.processes`.
fn measure_contention(plan: &BenchPlan, folder: &Path, executable: &Path) -> Result<ContentionReport, BenchError> {
    let started = CpuCounters::now();
    let file = |name: String| LedgerTarget::File(folder.join(name));
    let alone = contention::measure(
        executable,
        &file("contention-1.sqlite".into()),
        1,
        plan.keys,
        Placement::Here,
    )?;
    let mut contended = Vec::new();
    for &processes in &plan.processes {
        let figure = contention::measure(
            executable,
            &file(format!("contention-{processes}.sqlite")),
            processes,
            plan.keys,
            Placement::Here,
        )?;
        contended.push(ContentionRow {
            ratio: ratio(figure.reservations_per_second, alone.reservations_per_second),
            figure,
        });
    }
    Ok(ContentionReport {
        alone,
        contended,
        other_work: OtherWork::between(started, CpuCounters::now()),
    })
}

fn ratio(numerator: f64, denominator: f64) -> f64 {
    if denominator > 0.0 {
        numerator / denominator
    } else {
        0.0
    }
}

/// `twice-sim bench`.
pub fn bench_command(args: BenchArgs) -> u8 {
    let plan = match BenchPlan::from_args(&args) {
        Ok(plan) => plan,
        Err(error) => {
            eprintln!("error: {error}");
            return EXIT_BAD_INPUT;
        }
    };
    let executable = match std::env::current_exe() {
        Ok(executable) => executable,
        Err(error) => {
            eprintln!("error: cannot find the twice-sim binary to start bench-worker processes: {error}");
            return EXIT_FAILED;
        }
    };
    // A folder of our own unless one is given; the temporary one goes when `_temporary` drops.
    let (folder, _temporary) = match &args.dir {
        Some(dir) => match std::fs::create_dir_all(dir) {
            Ok(()) => (dir.clone(), None),
            Err(error) => {
                eprintln!("error: --dir {}: {error}", dir.display());
                return EXIT_BAD_INPUT;
            }
        },
        None => match tempfile::Builder::new().prefix("twice-bench-").tempdir() {
            Ok(temporary) => (temporary.path().to_path_buf(), Some(temporary)),
            Err(error) => {
                eprintln!("error: cannot make a temporary folder for the benchmark's files: {error}");
                return EXIT_FAILED;
            }
        },
    };
    let report = match run(&plan, &folder, &executable) {
        Ok(report) => report,
        Err(error @ (BenchError::Input(_) | BenchError::LedgerRefused(_))) => {
            eprintln!("error: {error}");
            return EXIT_BAD_INPUT;
        }
        Err(error) => {
            eprintln!("error: {error}");
            return EXIT_FAILED;
        }
    };
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report).expect("reports serialize"));
    } else {
        print!("{}", table(&report));
    }
    if report.duplicates > 0 || report.unreserved > 0 {
        eprintln!(
            "error: {} duplicate and {} lost reservations under contention",
            report.duplicates, report.unreserved
        );
        return EXIT_FAILED;
    }
    EXIT_OK
}
