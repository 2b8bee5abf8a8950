//! The measurements `run` strings together: the simulator's scenarios, the side-by-side
//! cycles (with the peer when built in), the commit group, and PostgreSQL's contention.

use std::path::Path;

use super::contention::{self, Placement};
use super::group_commit::{self, GroupFigure, GroupedRuns};
use super::machine::{CpuCounters, OtherWork};
#[cfg(feature = "peer-benchmark")]
use super::peer;
use super::report::{
    ContentionRow, LedgerFigure, PeerFigure, PostgresContention, PostgresCycles, SimulatorFigure, Spread,
};
use super::side_by_side::{self, LedgerCycles, Measured, PostgresRawInserts, RawInserts};
use super::{
    BenchError, BenchPlan, CPU_SECONDS_MIN, DEFAULT_LEVEL, LEDGER_RATIO_AIM, PEER_RATIO_AIM, POSTGRES_CONTENTION_HOSTS,
    POSTGRES_CONTENTION_PROCESSES, SCENARIOS_PER_SECOND_AIM, ratio, scenarios,
};
use twice_drill::hosts::{Hosts, HostsError};
use twice_drill::ledger_target::LedgerTarget;
use twice_ledger_postgres::PostgresUrl;
use twice_world::ledger::{GroupSettings, LedgerError, LedgerStore};

/// The simulator figure's level and its tapes, with `--level` named in every error: run
/// outside the repository, the default path finds nothing.
pub(super) fn load_scenarios(level: &Path) -> Result<scenarios::Scenarios, BenchError> {
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
pub(super) fn measure_scenarios(
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

/// Figures 1 and 2 side by side (with PostgreSQL's cycles and its own single commits in the
/// same rounds, given a server).
pub(super) fn measure_ledger(
    plan: &BenchPlan,
    folder: &Path,
    schemas: &mut Vec<SchemaGuard>,
) -> Result<(LedgerFigure, PeerFigure, Option<PostgresCycles>), BenchError> {
    let mut raw = RawInserts::open(&folder.join("raw.sqlite"))?;
    let mut ours = LedgerCycles::open(&folder.join("ledger.sqlite"))?;
    let mut postgres = match &plan.postgres {
        None => None,
        Some(server) => {
            let url = fresh_schema(server, "cycles", schemas)?;
            let ledger = twice_ledger_postgres::open(&url).map_err(BenchError::LedgerRefused)?;
            let raw_url = fresh_schema(server, "raw", schemas)?;
            Some((
                LedgerCycles::on(ledger, "twice ledger on PostgreSQL: reserve+fence + complete"),
                PostgresRawInserts::open(&raw_url)?,
            ))
        }
    };
    let started = CpuCounters::now();
    let (measured, peer_name) = measure_cycles(
        plan,
        folder,
        &mut raw,
        &mut ours,
        postgres.as_mut().map(|pair| (&mut pair.0, &mut pair.1)),
    )?;
    let other_work = OtherWork::between(started, CpuCounters::now());
    let Cycles {
        raw,
        ours,
        postgres,
        peer,
    } = measured;
    let postgres = plan
        .postgres
        .as_ref()
        .zip(postgres)
        .map(|(server, (cycles, raw))| PostgresCycles {
            server: server.redacted(),
            ratio_to_sqlite: ratio(cycles.per_second, ours.per_second),
            ratio_to_raw: ratio(cycles.per_second, raw.per_second),
            ratio_spread: Spread::of_ratios(&cycles.round_rates, &raw.round_rates),
            cycles,
            raw,
        });
    let peer = PeerFigure {
        peer: peer_name,
        ratio: peer.as_ref().map(|peer| ratio(ours.per_second, peer.per_second)),
        ratio_spread: peer
            .as_ref()
            .and_then(|peer| Spread::of_ratios(&ours.round_rates, &peer.round_rates)),
        measured: peer,
        aim: PEER_RATIO_AIM,
    };
    let ledger = LedgerFigure {
        ratio: ratio(ours.per_second, raw.per_second),
        ratio_spread: Spread::of_ratios(&ours.round_rates, &raw.round_rates),
        ours,
        raw,
        aim: LEDGER_RATIO_AIM,
        other_work,
    };
    Ok((ledger, peer, postgres))
}

/// Figure 5: the grouped runs against raw single commits on the same store: the SQLite file's
/// against SQLite's, and with a server PostgreSQL's against PostgreSQL's own.
pub(super) fn measure_group(
    plan: &BenchPlan,
    folder: &Path,
    schemas: &mut Vec<SchemaGuard>,
) -> Result<(GroupFigure, Option<(GroupFigure, GroupFigure)>), BenchError> {
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
            let grouped = {
                let mut runs = GroupedRuns::on(ledger, group_commit::RUNS, name)?;
                let mut raw = PostgresRawInserts::open(&fresh_schema(server, "group_raw", schemas)?)?;
                group_commit::measure(&mut raw, &mut runs, plan.cycles, plan.rounds)?
            };
            // The same runs with a connection each and no group of ours: every call its own
            // transactions, PostgreSQL's WAL flush sharing an fsync between concurrent commits.
            // Measured once the grouped runs' 65 connections are closed (a server allows 100),
            // against single commits of its own rounds.
            let url = fresh_schema(server, "connections", schemas)?;
            let ledger = twice_ledger_postgres::open(&url).map_err(BenchError::LedgerRefused)?;
            let name = format!(
                "{} runs, a connection each, on PostgreSQL (its own group commit)",
                group_commit::RUNS
            );
            let mut runs = GroupedRuns::on(ledger, group_commit::RUNS, name)?;
            let mut raw = PostgresRawInserts::open(&fresh_schema(server, "connections_raw", schemas)?)?;
            let connections = group_commit::measure(&mut raw, &mut runs, plan.cycles, plan.rounds)?;
            Some((grouped, connections))
        }
    };
    Ok((sqlite, postgres))
}

/// Figures 1 and 2 as measured side by side.
struct Cycles {
    raw: Measured,
    ours: Measured,
    /// PostgreSQL's cycles and its own single commits.
    postgres: Option<(Measured, Measured)>,
    peer: Option<Measured>,
}

impl Cycles {
    /// `measured` in the order the contenders were given: raw, ours, PostgreSQL's cycles and
    /// raw commits (if any), the peer (if any).
    fn from(measured: Vec<Measured>, postgres: bool, peer: bool) -> Cycles {
        let mut measured = measured.into_iter();
        let raw = measured.next().expect("raw inserts were measured");
        let ours = measured.next().expect("our cycles were measured");
        let postgres = if postgres {
            let cycles = measured.next().expect("PostgreSQL's cycles were measured");
            let raw = measured.next().expect("PostgreSQL's raw commits were measured");
            Some((cycles, raw))
        } else {
            None
        };
        let peer = if peer { measured.next() } else { None };
        Cycles {
            raw,
            ours,
            postgres,
            peer,
        }
    }
}

/// The contenders of figures 1 and 2 in the order [`Cycles::from`] reads them back.
fn cycle_contenders<'a>(
    raw: &'a mut RawInserts,
    ours: &'a mut LedgerCycles,
    postgres: Option<(&'a mut LedgerCycles, &'a mut PostgresRawInserts)>,
) -> Vec<&'a mut dyn side_by_side::Contender> {
    let mut contenders: Vec<&mut dyn side_by_side::Contender> = vec![raw, ours];
    if let Some((cycles, raw)) = postgres {
        contenders.push(cycles);
        contenders.push(raw);
    }
    contenders
}

#[cfg(feature = "peer-benchmark")]
fn measure_cycles(
    plan: &BenchPlan,
    folder: &Path,
    raw: &mut RawInserts,
    ours: &mut LedgerCycles,
    postgres: Option<(&mut LedgerCycles, &mut PostgresRawInserts)>,
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
                .map_err(|error| BenchError::Peer(Box::new(error)))
        }
    }
    let mut peer =
        Peer(peer::PeerCycles::open(&folder.join("peer.sqlite")).map_err(|error| BenchError::Peer(Box::new(error)))?);
    let has_postgres = postgres.is_some();
    let mut contenders = cycle_contenders(raw, ours, postgres);
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
    postgres: Option<(&mut LedgerCycles, &mut PostgresRawInserts)>,
) -> Result<(Cycles, String), BenchError> {
    let has_postgres = postgres.is_some();
    let mut contenders = cycle_contenders(raw, ours, postgres);
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
pub(super) struct SchemaGuard(PostgresUrl);

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
pub(super) fn measure_postgres_contention(
    executable: &Path,
    server: &PostgresUrl,
    keys: u32,
    schemas: &mut Vec<SchemaGuard>,
) -> Result<PostgresContention, BenchError> {
    let started = CpuCounters::now();
    let alone_url = fresh_schema(server, "alone", schemas)?;
    let alone = contention::measure(executable, &LedgerTarget::Postgres(alone_url), 1, keys, Placement::Here)?;
    let (mut hosts, hosts_note) = match Hosts::make(POSTGRES_CONTENTION_HOSTS) {
        Ok(hosts) => (Some(hosts), None),
        Err(error @ (HostsError::NotRoot | HostsError::NoIp | HostsError::Busy | HostsError::Leftover { .. })) => {
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
    Ok(PostgresContention {
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
