//! `twice-sim bench`: the five performance figures of the README's "Performance" section,
//! each a ratio of two things measured side by side in the same run (these machines are
//! noisy; a ratio survives a slow spell that an absolute figure does not).
//!
//! 1. Ledger: full calls (the reservation with attempt 1's send fence folded in, then the
//!    outcome: reserve+fence + complete) on a file ledger against raw single-row
//!    INSERT-and-commit on the same SQLite settings ([`side_by_side`]). A cycle makes two
//!    commits, so 0.5 is the ceiling.
//! 2. Peer: the same cycle through `agent-effects` ([`peer`], with `--features peer-benchmark`).
//! 3. Simulator: vault scenarios per second on one thread ([`scenarios`]), against 10,000,
//!    on both ledger stores side by side: SQLite (replays, the game) and the memory store
//!    (the explorer); the memory store's figure is the one held to the aim.
//! 4. Contention: reservations per second with several processes on one ledger file, against
//!    one process, with zero duplicate reservations ([`contention`]).
//! 5. Group commit: [`group_commit::RUNS`] concurrent runs in one process, their ledger writes
//!    batched one transaction per fsync, full calls per second against raw single commits
//!    ([`group_commit`]), side by side in rotating rounds.
//!
//! Each ratio measured in rounds (figures 1 to 3) comes with its spread over the rounds (min,
//! median, max), and each figure says how much of the machine other work took meanwhile
//! ([`machine`]), so a reader can tell a result from noise.
//!
//! With `--ledger postgres://…`, figures 1 and 4 are also measured on PostgreSQL in the same
//! run: the reserve + complete cycle beside SQLite's (same rounds, order rotating), and
//! contention with [`POSTGRES_CONTENTION_PROCESSES`] processes spread over
//! [`POSTGRES_CONTENTION_HOSTS`] hosts (network namespaces, as the drill makes them; on this
//! machine as they are when not run as root), each in a fresh schema removed afterwards.
//!
//! The criterion benchmarks in `sim/benches/` measure the same things with criterion's
//! statistics; this command prints the ratios in one table.

pub mod contention;
pub mod group_commit;
pub mod machine;
#[cfg(feature = "peer-benchmark")]
pub mod peer;
pub mod scenarios;
pub mod side_by_side;

use std::path::{Path, PathBuf};

use serde::Serialize;

use contention::{ContentionFigure, KEYS_MAX, PROCESSES_MAX, Placement};
use group_commit::{GroupFigure, GroupedRuns};
use machine::{CpuCounters, OtherWork};
use side_by_side::{LedgerCycles, Measured, RawInserts};
use twice_drill::hosts::{Hosts, HostsError};
use twice_drill::ledger_target::{LedgerTarget, LedgerTargetParser};
use twice_ledger_postgres::PostgresUrl;
use twice_world::ledger::{GroupSettings, LedgerError, LedgerStore};

pub use contention::{BenchWorkerArgs, worker_command};

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
    #[error("the peer: {0}")]
    Peer(String),
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

/// How a ratio moved over the rounds it was measured in.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Spread {
    pub rounds: usize,
    pub min: f64,
    pub median: f64,
    pub max: f64,
}

impl Spread {
    /// The spread of `values` (one per round); `None` for none.
    pub fn of(values: &[f64]) -> Option<Spread> {
        let mut sorted: Vec<f64> = values.iter().copied().filter(|value| value.is_finite()).collect();
        sorted.sort_by(f64::total_cmp);
        let (&min, &max) = (sorted.first()?, sorted.last()?);
        let middle = sorted.len() / 2;
        let median = if sorted.len().is_multiple_of(2) {
            (sorted[middle - 1] + sorted[middle]) / 2.0
        } else {
            sorted[middle]
        };
        Some(Spread {
            rounds: sorted.len(),
            min,
            median,
            max,
        })
    }

    /// The ratio of two contenders' rates, round by round.
    fn of_ratios(numerators: &[f64], denominators: &[f64]) -> Option<Spread> {
        let ratios: Vec<f64> = numerators
            .iter()
            .zip(denominators)
            .map(|(numerator, denominator)| ratio(*numerator, *denominator))
            .collect();
        Spread::of(&ratios)
    }

    /// `0.48 / 0.50 / 0.51 (10 rounds)`, with `x` after each value when `times` is set.
    fn describe(&self, times: bool) -> String {
        let unit = if times { "x" } else { "" };
        format!(
            "{:.2}{unit} / {:.2}{unit} / {:.2}{unit} ({})",
            self.min,
            self.median,
            self.max,
            twice_world::report::counted(self.rounds as u64, "round", "rounds")
        )
    }
}

/// Figure 1.
#[derive(Clone, Debug, Serialize)]
pub struct LedgerFigure {
    pub ours: Measured,
    pub raw: Measured,
    /// Ledger cycles per second ÷ raw inserts per second.
    pub ratio: f64,
    /// The same ratio in each round.
    pub ratio_spread: Option<Spread>,
    pub aim: f64,
    /// Other work on the machine while figures 1 and 2 were measured (they take turns).
    pub other_work: Option<OtherWork>,
}

/// Figure 2.
#[derive(Clone, Debug, Serialize)]
pub struct PeerFigure {
    /// The peer's name and version, or why it was not measured.
    pub peer: String,
    pub measured: Option<Measured>,
    /// Our cycles per second ÷ the peer's: above 1, ours is faster.
    pub ratio: Option<f64>,
    /// The same ratio in each round.
    pub ratio_spread: Option<Spread>,
}

/// Figure 3, on one ledger store.
#[derive(Clone, Debug, Serialize)]
pub struct SimulatorFigure {
    /// Where the scenarios' ledgers lived.
    pub store: LedgerStore,
    pub level: String,
    pub tapes: Vec<PathBuf>,
    pub scenarios: u64,
    /// By the clock.
    pub seconds: f64,
    /// On the CPU (this thread's run time), when the system tells it.
    pub cpu_seconds: Option<f64>,
    /// Scenarios per second by the clock.
    pub per_second: f64,
    /// Scenarios per second of CPU time: what one core does when it is not shared. `None`
    /// without CPU time, or with less than [`CPU_SECONDS_MIN`] of it (too short to time).
    pub per_cpu_second: Option<f64>,
    pub aim_per_second: f64,
    /// Scenarios per CPU second (or per second by the clock, without that) ÷ the aim.
    pub ratio: f64,
    /// The same ratio in each round, timed as `ratio` is; `None` when a round was too short to
    /// time on the CPU while the whole was not.
    pub ratio_spread: Option<Spread>,
    pub other_work: Option<OtherWork>,
}

/// Figure 4: one process count against one process.
#[derive(Clone, Debug, Serialize)]
pub struct ContentionRow {
    #[serde(flatten)]
    pub figure: ContentionFigure,
    /// Reservations per second ÷ those of one process alone.
    pub ratio: f64,
}

#[derive(Clone, Debug, Serialize)]
pub struct ContentionReport {
    pub alone: ContentionFigure,
    pub contended: Vec<ContentionRow>,
    /// Other work on the machine during every contention run (each count is run once).
    pub other_work: Option<OtherWork>,
}

/// Figures 1 and 4 on PostgreSQL (`--ledger postgres://…`).
#[derive(Clone, Debug, Serialize)]
pub struct PostgresFigures {
    /// The server, its password hidden.
    pub server: String,
    /// Reserve + complete cycles, measured in the same rounds as the SQLite file's.
    pub cycles: Measured,
    /// PostgreSQL's cycles per second ÷ the SQLite file ledger's.
    pub ratio_to_sqlite: f64,
    /// One process alone on the PostgreSQL ledger.
    pub alone: ContentionFigure,
    /// [`POSTGRES_CONTENTION_PROCESSES`] processes on it.
    pub contended: ContentionRow,
    /// The hosts they were spread over (0: this machine, as they are).
    pub hosts: u32,
    /// Why there were no hosts, when there were none.
    pub hosts_note: Option<String>,
    /// PostgreSQL's cycles per second ÷ SQLite's, round by round.
    pub ratio_spread: Option<Spread>,
    /// Other work on the machine during the PostgreSQL contention runs.
    pub other_work: Option<OtherWork>,
}

/// Everything `twice-sim bench` measured.
#[derive(Clone, Debug, Serialize)]
pub struct BenchReport {
    pub plan: BenchPlan,
    pub cores: usize,
    pub folder: PathBuf,
    pub ledger: LedgerFigure,
    pub peer: PeerFigure,
    /// Figure 3 on the memory store (the explorer's): the one measured against the aim.
    pub simulator: SimulatorFigure,
    /// Figure 3 on SQLite (replays' and the game's), the same tapes in the same run.
    pub simulator_sqlite: SimulatorFigure,
    pub contention: ContentionReport,
    /// Figures 1 and 4 on PostgreSQL, with `--ledger postgres://…`.
    pub postgres: Option<PostgresFigures>,
    /// Figure 5 on the SQLite file, and on PostgreSQL with `--ledger postgres://…`.
    pub group: GroupFigure,
    pub postgres_group: Option<GroupFigure>,
    /// Keys reserved to run by more than one process (or with more than one row), in all
    /// contention runs. Must be zero.
    pub duplicates: u64,
    /// Keys no process was told to run, in all contention runs. Must be zero.
    pub unreserved: u64,
    /// Other work on the machine during the whole run.
    pub other_work: Option<OtherWork>,
}

/// Runs the four measurements. `executable` is `twice-sim` itself (for `bench-worker`).
pub fn run(plan: &BenchPlan, folder: &Path, executable: &Path) -> Result<BenchReport, BenchError> {
    // Load the level first: a bad path should fail before minutes of measuring.
    let scenarios = load_scenarios(&plan.level)?;
    let run_started = CpuCounters::now();
    for name in ["raw.sqlite", "ledger.sqlite", "peer.sqlite"] {
        let path = folder.join(name);
        if path.exists() {
            return Err(BenchError::Input(format!(
                "{}: already exists; the benchmark starts from new files, so choose an empty --dir",
                path.display()
            )));
        }
    }

    let mut raw = RawInserts::open(&folder.join("raw.sqlite"))?;
    let mut ours = LedgerCycles::open(&folder.join("ledger.sqlite"))?;
    // Each PostgreSQL measurement in a schema of its own, removed when the guard goes.
    let mut schemas = Vec::new();
    let mut postgres_cycles = match &plan.postgres {
        None => None,
        Some(server) => {
            let url = fresh_schema(server, "cycles", &mut schemas)?;
            let ledger = twice_ledger_postgres::open(&url).map_err(BenchError::LedgerRefused)?;
            Some(LedgerCycles::on(
                ledger,
                "twice ledger on PostgreSQL: reserve + complete",
            ))
        }
    };
    let cycles_started = CpuCounters::now();
    let (measured, peer_name) = measure_cycles(plan, folder, &mut raw, &mut ours, postgres_cycles.as_mut())?;
    let cycles_other_work = OtherWork::between(cycles_started, CpuCounters::now());
    let raw = measured.raw;
    let ours = measured.ours;
    let peer = measured.peer;
    let ledger = LedgerFigure {
        ratio: ratio(ours.per_second, raw.per_second),
        ratio_spread: Spread::of_ratios(&ours.round_rates, &raw.round_rates),
        ours: ours.clone(),
        raw,
        aim: LEDGER_RATIO_AIM,
        other_work: cycles_other_work,
    };
    let peer = PeerFigure {
        peer: peer_name,
        ratio: peer.as_ref().map(|peer| ratio(ours.per_second, peer.per_second)),
        ratio_spread: peer
            .as_ref()
            .and_then(|peer| Spread::of_ratios(&ours.round_rates, &peer.round_rates)),
        measured: peer,
    };

    let (group, postgres_group) = measure_group(plan, folder, &mut schemas)?;

    let simulator_sqlite = measure_scenarios(&scenarios, plan.scenarios, plan.rounds, LedgerStore::Sqlite)?;
    let simulator = measure_scenarios(&scenarios, plan.scenarios, plan.rounds, LedgerStore::Memory)?;

    let contention_started = CpuCounters::now();
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
    let contention_other_work = OtherWork::between(contention_started, CpuCounters::now());
    let postgres = match (&plan.postgres, measured.postgres) {
        (Some(server), Some(cycles)) => Some(measure_postgres_contention(
            executable,
            server,
            plan.keys,
            &ours,
            cycles,
            &mut schemas,
        )?),
        _ => None,
    };
    let all = std::iter::once(&alone)
        .chain(contended.iter().map(|row| &row.figure))
        .chain(
            postgres
                .iter()
                .flat_map(|figures| [&figures.alone, &figures.contended.figure]),
        );
    let (duplicates, unreserved) = all.fold((0, 0), |(duplicates, unreserved), figure| {
        (duplicates + figure.duplicates, unreserved + figure.unreserved)
    });
    Ok(BenchReport {
        plan: plan.clone(),
        cores: std::thread::available_parallelism().map_or(1, usize::from),
        folder: folder.to_path_buf(),
        ledger,
        peer,
        simulator,
        simulator_sqlite,
        contention: ContentionReport {
            alone,
            contended,
            other_work: contention_other_work,
        },
        postgres,
        group,
        postgres_group,
        duplicates,
        unreserved,
        other_work: OtherWork::between(run_started, CpuCounters::now()),
    })
}

/// The simulator figure's level and its tapes, with `--level` named in every error: run
/// outside the repository, the default path finds nothing.
fn load_scenarios(level: &Path) -> Result<scenarios::Scenarios, BenchError> {
    if !level.is_file() {
        let here = std::env::current_dir().map_or_else(|_| "this folder".to_owned(), |here| here.display().to_string());
        let default = if level == Path::new(DEFAULT_LEVEL) {
            format!(
                " (the default, {DEFAULT_LEVEL}, is relative to the folder you run in: run from the repository's \
                 root, or pass --level PATH/TO/19-vault.level.ron)"
            )
        } else {
            String::new()
        };
        return Err(BenchError::Input(format!(
            "--level {}: no such file in {here}{default}",
            level.display()
        )));
    }
    scenarios::Scenarios::load(level).map_err(|error| match error {
        BenchError::Input(message) => BenchError::Input(format!("--level {}: {message}", level.display())),
        other => other,
    })
}

/// Figure 3 on one store: `count` scenarios, the tapes in turn, on this thread, in `rounds`
/// rounds (for the spread).
fn measure_scenarios(
    scenarios: &scenarios::Scenarios,
    count: u64,
    rounds: u64,
    store: LedgerStore,
) -> Result<SimulatorFigure, BenchError> {
    let rounds = rounds.clamp(1, count.max(1));
    let started = CpuCounters::now();
    let mut wall_seconds = 0.0;
    let mut cpu_seconds = Some(0.0);
    // Per round: scenarios, seconds by the clock, seconds on the CPU.
    let mut round_times: Vec<(u64, f64, Option<f64>)> = Vec::with_capacity(rounds as usize);
    let mut done = 0;
    for round in 0..rounds {
        // The last round takes what division left over.
        let round_count = if round + 1 == rounds {
            count - done
        } else {
            count / rounds
        };
        let spent = scenarios.play_timed(round_count, store)?;
        wall_seconds += spent.wall_seconds;
        cpu_seconds = cpu_seconds.zip(spent.cpu_seconds).map(|(total, round)| total + round);
        round_times.push((round_count, spent.wall_seconds, spent.cpu_seconds));
        done += round_count;
    }
    let other_work = OtherWork::between(started, CpuCounters::now());
    let per_second = ratio(count as f64, wall_seconds);
    let per_cpu_second = cpu_seconds
        .filter(|cpu| *cpu >= CPU_SECONDS_MIN)
        .map(|cpu| ratio(count as f64, cpu));
    // Each round is timed the way the whole is: on the CPU if the whole is, by the clock if not.
    let round_rates: Option<Vec<f64>> = round_times
        .iter()
        .map(|&(round_count, wall, cpu)| match per_cpu_second {
            Some(_) => cpu
                .filter(|cpu| *cpu >= CPU_SECONDS_MIN)
                .map(|cpu| ratio(round_count as f64, cpu)),
            None => Some(ratio(round_count as f64, wall)),
        })
        .collect();
    Ok(SimulatorFigure {
        store,
        level: scenarios.level.level.id.clone(),
        tapes: scenarios.tape_paths(),
        scenarios: count,
        seconds: wall_seconds,
        cpu_seconds,
        per_second,
        per_cpu_second,
        aim_per_second: SCENARIOS_PER_SECOND_AIM,
        ratio: per_cpu_second.unwrap_or(per_second) / SCENARIOS_PER_SECOND_AIM,
        ratio_spread: round_rates.and_then(|rates| {
            let ratios: Vec<f64> = rates.iter().map(|rate| rate / SCENARIOS_PER_SECOND_AIM).collect();
            Spread::of(&ratios)
        }),
        other_work,
    })
}

/// Figure 5: the grouped runs against raw single commits (on PostgreSQL too, with a server).
fn measure_group(
    plan: &BenchPlan,
    folder: &Path,
    schemas: &mut Vec<SchemaGuard>,
) -> Result<(GroupFigure, Option<GroupFigure>), BenchError> {
    let mut raw = RawInserts::open(&folder.join("raw-group.sqlite"))?;
    let mut grouped = GroupedRuns::open(&folder.join("grouped.sqlite"), group_commit::RUNS)?;
    let sqlite = group_commit::measure(&mut raw, &mut grouped, plan.cycles, plan.rounds)?;
    let postgres = match &plan.postgres {
        None => None,
        Some(server) => {
            let url = fresh_schema(server, "group", schemas)?;
            let ledger = twice_ledger_postgres::open_grouped(&url, GroupSettings::default())
                .map_err(BenchError::LedgerRefused)?;
            let name = format!("{} runs, one process, group commit on PostgreSQL", group_commit::RUNS);
            let mut grouped = GroupedRuns::on(ledger, group_commit::RUNS, name)?;
            // Fresh keys for the raw inserts too: its own file.
            let mut raw = RawInserts::open(&folder.join("raw-group-postgres.sqlite"))?;
            Some(group_commit::measure(&mut raw, &mut grouped, plan.cycles, plan.rounds)?)
        }
    };
    Ok((sqlite, postgres))
}

/// Figures 1 and 2 as measured side by side.
struct Cycles {
    raw: Measured,
    ours: Measured,
    postgres: Option<Measured>,
    peer: Option<Measured>,
}

impl Cycles {
    /// `measured` in the order the contenders were given: raw, ours, PostgreSQL (if any), the peer (if any).
    fn from(measured: Vec<Measured>, postgres: bool, peer: bool) -> Cycles {
        let mut measured = measured.into_iter();
        let raw = measured.next().expect("raw inserts were measured");
        let ours = measured.next().expect("our cycles were measured");
        let postgres = if postgres { measured.next() } else { None };
        let peer = if peer { measured.next() } else { None };
        Cycles {
            raw,
            ours,
            postgres,
            peer,
        }
    }
}

#[cfg(feature = "peer-benchmark")]
fn measure_cycles(
    plan: &BenchPlan,
    folder: &Path,
    raw: &mut RawInserts,
    ours: &mut LedgerCycles,
    postgres: Option<&mut LedgerCycles>,
) -> Result<(Cycles, String), BenchError> {
    use side_by_side::Contender;

    struct Peer(peer::PeerCycles);
    impl Contender for Peer {
        fn name(&self) -> String {
            self.0.name()
        }
        fn run(&mut self, first: u64, count: u64) -> Result<(), BenchError> {
            self.0
                .run(first, count, side_by_side::ARGUMENTS, side_by_side::RESULT)
                .map_err(BenchError::Peer)
        }
    }
    let mut peer = Peer(peer::PeerCycles::open(&folder.join("peer.sqlite")).map_err(BenchError::Peer)?);
    let has_postgres = postgres.is_some();
    let mut contenders: Vec<&mut dyn Contender> = vec![raw, ours];
    if let Some(postgres) = postgres {
        contenders.push(postgres);
    }
    contenders.push(&mut peer);
    let measured = side_by_side::measure(&mut contenders, plan.cycles, plan.rounds)?;
    Ok((Cycles::from(measured, has_postgres, true), peer::PEER_NAME.into()))
}

#[cfg(not(feature = "peer-benchmark"))]
fn measure_cycles(
    plan: &BenchPlan,
    _folder: &Path,
    raw: &mut RawInserts,
    ours: &mut LedgerCycles,
    postgres: Option<&mut LedgerCycles>,
) -> Result<(Cycles, String), BenchError> {
    let has_postgres = postgres.is_some();
    let mut contenders: Vec<&mut dyn side_by_side::Contender> = vec![raw, ours];
    if let Some(postgres) = postgres {
        contenders.push(postgres);
    }
    let measured = side_by_side::measure(&mut contenders, plan.cycles, plan.rounds)?;
    Ok((
        Cycles::from(measured, has_postgres, false),
        "agent-effects: not measured; this build leaves the peer out (build with --features peer-benchmark)".into(),
    ))
}

/// A new schema on `server` for one measurement, noted in `schemas` (removed when they drop).
fn fresh_schema(server: &PostgresUrl, what: &str, schemas: &mut Vec<SchemaGuard>) -> Result<PostgresUrl, BenchError> {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_nanos() % 1_000_000_000);
    let url = server
        .with_schema(&format!("twice_bench_{}_{nanos}_{what}", std::process::id()))
        .map_err(|error| BenchError::Input(format!("--ledger: {error}")))?;
    schemas.push(SchemaGuard(url.clone()));
    Ok(url)
}

/// A benchmark's schema, removed when this is dropped (whatever ended the benchmark).
struct SchemaGuard(PostgresUrl);

impl Drop for SchemaGuard {
    fn drop(&mut self) {
        // A measurement that failed before creating its schema leaves nothing to remove.
        if let Err(error) = twice_ledger_postgres::remove_ledger(&self.0)
            && !matches!(error, LedgerError::Missing { .. })
        {
            eprintln!("bench: could not remove schema {}: {error}", self.0.schema());
        }
    }
}

/// Figure 4 on PostgreSQL: one process, then [`POSTGRES_CONTENTION_PROCESSES`] spread over
/// [`POSTGRES_CONTENTION_HOSTS`] hosts when they can be made (root, `ip`), each on a fresh schema.
fn measure_postgres_contention(
    executable: &Path,
    server: &PostgresUrl,
    keys: u32,
    sqlite_cycles: &Measured,
    cycles: Measured,
    schemas: &mut Vec<SchemaGuard>,
) -> Result<PostgresFigures, BenchError> {
    let started = CpuCounters::now();
    let alone_url = fresh_schema(server, "alone", schemas)?;
    let alone = contention::measure(executable, &LedgerTarget::Postgres(alone_url), 1, keys, Placement::Here)?;
    let (mut hosts, hosts_note) = match Hosts::make(POSTGRES_CONTENTION_HOSTS) {
        Ok(hosts) => (Some(hosts), None),
        Err(error @ (HostsError::NotRoot | HostsError::NoIp | HostsError::Leftover { .. })) => {
            (None, Some(format!("on this machine, without hosts: {error}")))
        }
        Err(error) => return Err(BenchError::Io(error.to_string())),
    };
    let contended_url = fresh_schema(server, "contended", schemas)?;
    let placement = match &mut hosts {
        Some(hosts) => Placement::Hosts(hosts),
        None => Placement::Here,
    };
    let figure = contention::measure(
        executable,
        &LedgerTarget::Postgres(contended_url),
        POSTGRES_CONTENTION_PROCESSES,
        keys,
        placement,
    )?;
    Ok(PostgresFigures {
        server: server.redacted(),
        ratio_to_sqlite: ratio(cycles.per_second, sqlite_cycles.per_second),
        ratio_spread: Spread::of_ratios(&cycles.round_rates, &sqlite_cycles.round_rates),
        cycles,
        contended: ContentionRow {
            ratio: ratio(figure.reservations_per_second, alone.reservations_per_second),
            figure,
        },
        alone,
        hosts: hosts.as_ref().map_or(0, Hosts::count),
        hosts_note,
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

/// Figure 5's row: calls per second of the grouped runs against single commits.
fn group_row(
    figure: &GroupFigure,
    spread: &dyn Fn(Option<Spread>, bool) -> String,
    machine: &dyn Fn(Option<OtherWork>) -> String,
) -> [String; 7] {
    let per_batch = figure
        .writes_per_batch()
        .map_or_else(String::new, |writes| format!(", {writes:.1} writes/fsync"));
    [
        format!("5 {}", figure.grouped.name),
        format!("{} calls/s{per_batch}", grouped(figure.grouped.per_second)),
        format!("raw INSERT+commit {}/s", grouped(figure.raw.per_second)),
        format!("{:.1}x", figure.ratio),
        spread(figure.ratio_spread, true),
        format!(
            "≥ {:.0}x: {}",
            figure.aim,
            if figure.ratio >= figure.aim { "met" } else { "BELOW" }
        ),
        machine(figure.other_work),
    ]
}

/// `1234567.8` → `1,234,568`.
pub fn grouped(value: f64) -> String {
    let digits = format!("{:.0}", value.max(0.0));
    let mut out = String::new();
    for (index, digit) in digits.chars().enumerate() {
        if index > 0 && (digits.len() - index) % 3 == 0 {
            out.push(',');
        }
        out.push(digit);
    }
    out
}

/// The report as a table, one row per figure: what was measured, against what, the ratio with
/// its spread over the rounds, the aim, and how busy the machine was meanwhile.
pub fn table(report: &BenchReport) -> String {
    const COLUMNS: usize = 7;
    let machine = |other_work: Option<OtherWork>| {
        other_work.map_or_else(|| "too short to tell".to_owned(), |other| other.describe())
    };
    // What a cell has no room for, said once under the table.
    let mut notes: Vec<String> = Vec::new();
    let spread =
        |spread: Option<Spread>, times: bool| spread.map_or_else(|| "-".to_owned(), |spread| spread.describe(times));
    let mut rows: Vec<[String; COLUMNS]> = vec![[
        "figure".into(),
        "measured".into(),
        "against".into(),
        "ratio".into(),
        "per round: min / median / max".into(),
        "aim".into(),
        "machine meanwhile".into(),
    ]];
    let ledger = &report.ledger;
    rows.push([
        "1 ledger: reserve+fence + complete".into(),
        format!("{} cycles/s", grouped(ledger.ours.per_second)),
        format!("raw INSERT+commit {}/s", grouped(ledger.raw.per_second)),
        format!("{:.2}", ledger.ratio),
        spread(ledger.ratio_spread, false),
        format!(
            "≥ {:.2} (ceiling 0.50): {}",
            ledger.aim,
            if ledger.ratio >= ledger.aim { "met" } else { "BELOW" }
        ),
        machine(ledger.other_work),
    ]);
    if let Some(postgres) = &report.postgres {
        rows.push([
            "1 ledger on PostgreSQL: reserve+fence + complete".into(),
            format!("{} cycles/s", grouped(postgres.cycles.per_second)),
            format!("SQLite file {} cycles/s", grouped(ledger.ours.per_second)),
            format!("{:.2}", postgres.ratio_to_sqlite),
            spread(postgres.ratio_spread, false),
            "same rounds, side by side".into(),
            machine(ledger.other_work),
        ]);
    }
    for figure in std::iter::once(&report.group).chain(report.postgres_group.as_ref()) {
        rows.push(group_row(figure, &spread, &machine));
    }
    match (&report.peer.measured, report.peer.ratio) {
        (Some(peer), Some(ratio)) => rows.push([
            format!("2 peer: {}", report.peer.peer),
            format!("{} cycles/s", grouped(peer.per_second)),
            format!("twice ledger {} cycles/s", grouped(ledger.ours.per_second)),
            format!("{ratio:.2}x"),
            spread(report.peer.ratio_spread, true),
            format!("twice faster: {}", if ratio > 1.0 { "yes" } else { "NO" }),
            machine(ledger.other_work),
        ]),
        _ => {
            rows.push([
                "2 peer".into(),
                "not measured (below)".into(),
                "-".into(),
                "-".into(),
                "-".into(),
                "-".into(),
                "-".into(),
            ]);
            notes.push(format!("figure 2: {}", report.peer.peer));
        }
    }
    for simulator in [&report.simulator_sqlite, &report.simulator] {
        let measured = match (simulator.per_cpu_second, simulator.cpu_seconds) {
            (Some(per_cpu_second), _) => format!(
                "{} scenarios/CPU-s ({}/s by the clock)",
                grouped(per_cpu_second),
                grouped(simulator.per_second)
            ),
            (None, Some(cpu_seconds)) => {
                notes.push(format!(
                    "figure 3, {} store: {:.0} ms on the CPU is too short to time there (under {:.0} ms: the \
                     scheduler counts in ticks), so it is measured by the clock; give more --scenarios",
                    simulator.store,
                    cpu_seconds * 1000.0,
                    CPU_SECONDS_MIN * 1000.0
                ));
                format!(
                    "{} scenarios/s by the clock (CPU: too short)",
                    grouped(simulator.per_second)
                )
            }
            (None, None) => format!("{} scenarios/s by the clock", grouped(simulator.per_second)),
        };
        if simulator.per_cpu_second.is_some() && simulator.ratio_spread.is_none() {
            notes.push(format!(
                "figure 3, {} store: the whole is timed on the CPU but its rounds are too short to be, one by \
                 one (under {:.0} ms each), so it has no spread; give more --scenarios",
                simulator.store,
                CPU_SECONDS_MIN * 1000.0
            ));
        }
        rows.push([
            format!(
                "3 simulator: {} scenarios, 1 thread, {} store",
                simulator.level, simulator.store
            ),
            measured,
            format!("aim {}/s", grouped(simulator.aim_per_second)),
            format!("{:.2}", simulator.ratio),
            spread(simulator.ratio_spread, false),
            format!("≥ 1.00: {}", if simulator.ratio >= 1.0 { "met" } else { "BELOW" }),
            machine(simulator.other_work),
        ]);
    }
    let alone = &report.contention.alone;
    for row in &report.contention.contended {
        let figure = &row.figure;
        rows.push([
            format!("4 contention: {} processes", figure.processes),
            format!("{} reservations/s", grouped(figure.reservations_per_second)),
            format!("1 process {}/s", grouped(alone.reservations_per_second)),
            format!("{:.2}", row.ratio),
            "- (one run each)".into(),
            format!(
                "{} duplicates, {} lost: {}",
                figure.duplicates,
                figure.unreserved,
                if figure.duplicates == 0 && figure.unreserved == 0 {
                    "ok"
                } else {
                    "FAILED"
                }
            ),
            machine(report.contention.other_work),
        ]);
    }
    if let Some(postgres) = &report.postgres {
        let figure = &postgres.contended.figure;
        rows.push([
            format!(
                "4 contention on PostgreSQL: {} processes{}",
                figure.processes,
                if postgres.hosts > 0 {
                    format!(" on {} hosts", postgres.hosts)
                } else {
                    " on this machine".into()
                }
            ),
            format!("{} reservations/s", grouped(figure.reservations_per_second)),
            format!("1 process {}/s", grouped(postgres.alone.reservations_per_second)),
            format!("{:.2}", postgres.contended.ratio),
            "- (one run each)".into(),
            format!(
                "{} duplicates, {} lost: {}",
                figure.duplicates,
                figure.unreserved,
                if figure.duplicates == 0 && figure.unreserved == 0 {
                    "ok"
                } else {
                    "FAILED"
                }
            ),
            machine(postgres.other_work),
        ]);
    }
    let widths: Vec<usize> = (0..COLUMNS)
        .map(|column| rows.iter().map(|row| row[column].chars().count()).max().unwrap_or(0))
        .collect();
    let mut out = format!(
        "twice-sim bench ({}; {} cores; files in {})\n",
        if report.plan.quick {
            "quick: indicative only"
        } else {
            "full"
        },
        report.cores,
        report.folder.display()
    );
    out.push_str(&format!(
        "{} cycles in {}; {} scenarios; {} keys per contention run\n\n",
        report.plan.cycles,
        twice_world::report::counted(report.plan.rounds, "round", "rounds"),
        report.plan.scenarios,
        report.plan.keys
    ));
    for row in &rows {
        let cells: Vec<String> = row
            .iter()
            .zip(&widths)
            .map(|(cell, width)| format!("{cell}{}", " ".repeat(width - cell.chars().count())))
            .collect();
        out.push_str(cells.join("  ").trim_end());
        out.push('\n');
    }
    out.push_str(&format!(
        "\nduplicate reservations: {}; lost reservations: {}\n",
        report.duplicates, report.unreserved
    ));
    if let Some(postgres) = &report.postgres {
        out.push_str(&format!("PostgreSQL: {}", postgres.server));
        if let Some(note) = &postgres.hosts_note {
            out.push_str(&format!("; contention {note}"));
        }
        out.push('\n');
    }
    for note in &notes {
        out.push_str(note);
        out.push('\n');
    }
    out.push_str(&machine_note(report));
    out
}

/// What the reader should make of the figures, given how busy the machine was.
fn machine_note(report: &BenchReport) -> String {
    let figures_on_a_busy_machine = [
        report.ledger.other_work,
        report.simulator_sqlite.other_work,
        report.simulator.other_work,
        report.contention.other_work,
    ]
    .iter()
    .flatten()
    .filter(|other| other.busy)
    .count() as u64;
    let advice = "these figures are noise as much as result: run again on a quiet machine, and trust a ratio \
                  only where its rounds agree";
    let busy_figures = twice_world::report::counted(figures_on_a_busy_machine, "figure", "figures");
    match report.other_work {
        None => {
            "the machine: how busy it was is unknown (no /proc here, or too short a run); read the spreads\n".to_owned()
        }
        Some(other) if other.busy => format!(
            "the machine was BUSY: other work took {:.0}% of the {} cores over the run; {advice}\n",
            other.share_of_machine * 100.0,
            report.cores,
        ),
        Some(other) if figures_on_a_busy_machine > 0 => format!(
            "the machine was busy during {busy_figures} (marked BUSY; {:.0}% of the {} cores over the whole run): \
             {advice}\n",
            other.share_of_machine * 100.0,
            report.cores,
        ),
        Some(other) => format!(
            "the machine was quiet: other work took {:.0}% of the {} cores over the run\n",
            other.share_of_machine * 100.0,
            report.cores
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_spread_is_the_least_the_middle_and_the_most_of_its_rounds() {
        let spread = Spread::of(&[6.6, 0.85, 6.2]).expect("three rounds");
        assert_eq!(
            (spread.rounds, spread.min, spread.median, spread.max),
            (3, 0.85, 6.2, 6.6)
        );
        assert_eq!(spread.describe(true), "0.85x / 6.20x / 6.60x (3 rounds)");
        let even = Spread::of(&[4.0, 1.0, 2.0, 3.0]).expect("four rounds");
        assert_eq!(even.median, 2.5);
        assert_eq!(Spread::of(&[]), None);
        let one = Spread::of_ratios(&[10.0], &[4.0]).expect("one round");
        assert_eq!(one.describe(false), "2.50 / 2.50 / 2.50 (1 round)");
    }
}
