//! A whole drill: the folder, the ledger, billing, the hosts, the drive, the check; and the command.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::Instant;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use tokio::sync::mpsc;
use twice_ledger_postgres::PostgresUrl;
use twice_world::ledger::Ledger;
use twice_world::model::RunScript;

use crate::billing_store::BillingStore;
use crate::check::{CheckInput, Findings};
use crate::hosts::{HUB_ADDRESS, Hosts, HostsError};
use crate::{EXIT_BAD_INPUT, EXIT_FAILED, EXIT_INTERRUPTED, EXIT_OK, check, script};

use super::config::{DrillArgs, DrillConfig, DrillError};
use super::faults::plan_faults;
use super::processes::start_billing;
use super::report::{DrillReport, report, table};
use super::{Counters, DUPLICATE_AT_MARKER_MAX, RunPhase, RunSlot, Supervisor, WorkerLedger};

/// A folder for the drill's files, and whether the drill made it up (and may remove it).
pub(super) fn drill_folder(config: &DrillConfig) -> Result<(PathBuf, bool), DrillError> {
    let (dir, temporary) = match &config.dir {
        Some(dir) => (dir.clone(), false),
        None => {
            let nanos = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |elapsed| elapsed.subsec_nanos());
            (
                std::env::temp_dir().join(format!("twice-drill-{}-{nanos}", std::process::id())),
                true,
            )
        }
    };
    std::fs::create_dir_all(&dir)
        .map_err(|error| DrillError::Setup(format!("cannot make the folder {}: {error}", dir.display())))?;
    Ok((dir, temporary))
}

/// Runs a whole drill: setup, the drive, the reaping, the check.
pub async fn run_drill(config: DrillConfig) -> Result<DrillReport, DrillError> {
    let started = Instant::now();
    let exe = std::env::current_exe()
        .map_err(|error| DrillError::Setup(format!("cannot find the twice-sim binary to start: {error}")))?;
    // First, so that whatever fails after, dropping them removes what they made.
    let mut hosts = match config.hosts {
        0 => None,
        count => Some(Hosts::make(count)?),
    };
    // Made here, before any worker opens it: the schema is created once. A server that
    // cannot be reached is found before anything else is made.
    let postgres = match &config.ledger {
        None => None,
        Some(server) => {
            let url = server
                .with_schema(&drill_schema())
                .map_err(|error| DrillError::Setup(format!("--ledger: {error}")))?;
            let observer = twice_ledger_postgres::open(&url).map_err(DrillError::LedgerRefused)?;
            Some((observer, url))
        }
    };
    let (dir, temporary) = drill_folder(&config)?;
    let ledger_path = dir.join("ledger.sqlite");
    let billing_path = dir.join("billing.sqlite");
    let (observer, postgres) = match postgres {
        None => (Ledger::open(&ledger_path)?, None),
        Some((observer, url)) => (observer, Some(url)),
    };
    let billing = start_billing(&exe, &billing_path, &config).await?;
    let (worker_ledger, worker_billing) = worker_reach(&ledger_path, postgres.as_ref(), hosts.as_mut(), &billing.url)?;
    let mut rng = ChaCha8Rng::seed_from_u64(config.seed);
    let runs = plan_runs(&mut rng, &config);
    // Drawn after the kills and duplicates, so a drill without them draws as it always did.
    let partitions_planned = plan_faults(&mut rng, &config, config.partitions, config.partition_ms);
    let pauses_planned = plan_faults(&mut rng, &config, config.pauses, config.pause_ms);
    let client = reqwest::Client::builder()
        .no_proxy()
        .build()
        .map_err(|error| DrillError::Setup(format!("cannot build the HTTP client: {error}")))?;
    let (sender, receiver) = mpsc::unbounded_channel();
    let mut supervisor = Supervisor {
        pending: (0..runs.len()).collect(),
        runs,
        config: config.clone(),
        exe,
        worker_ledger,
        worker_billing,
        hosts,
        next_host: 0,
        cut_host: None,
        partitions_planned,
        pauses_planned,
        sends_seen: 0,
        billing,
        client,
        observer,
        rng,
        processes: BTreeMap::new(),
        next_process: 1,
        sender,
        receiver,
        counters: Counters::default(),
        kills_spare: 0,
    };
    let driven = supervisor.drive(started).await;
    supervisor.reap_workers().await;
    // Every kill asked for either landed or is still in the pool: the runs finished first.
    supervisor.counters.kills_unplaced =
        supervisor.kills_spare + supervisor.runs.iter().map(|run| run.kills_assigned).sum::<u32>();
    let billing_stopped = supervisor.stop_billing().await;
    driven?;
    billing_stopped?;

    let findings = check_drill(&supervisor, &billing_path, &config)?;
    let wall_time_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
    let passed = findings.passed();
    let keep = !temporary || !passed;
    let ledger = postgres
        .as_ref()
        .map_or_else(|| ledger_path.display().to_string(), PostgresUrl::redacted);
    drop(supervisor.observer);
    // The hosts go now: their relays, namespaces and links.
    drop(supervisor.hosts.take());
    let files = keep_or_remove(keep, &dir, &billing_path, postgres.as_ref());
    Ok(report(
        &config,
        &supervisor.counters,
        findings,
        wall_time_ms,
        ledger,
        files,
    ))
}

/// How workers reach the ledger and billing: the ledger file, or the PostgreSQL URL (its
/// password kept for the environment), through the hub's relays when there are hosts.
fn worker_reach(
    ledger_path: &Path,
    postgres: Option<&PostgresUrl>,
    hosts: Option<&mut Hosts>,
    billing_url: &str,
) -> Result<(WorkerLedger, String), DrillError> {
    Ok(match (postgres, hosts) {
        (None, _) => (
            WorkerLedger {
                argument: ledger_path.display().to_string(),
                password: None,
            },
            billing_url.to_owned(),
        ),
        (Some(url), None) => (
            WorkerLedger {
                argument: url.without_password(),
                password: url.password().map(str::to_owned),
            },
            billing_url.to_owned(),
        ),
        (Some(url), Some(hosts)) => {
            let database = hosts.relay(server_address(url)?)?;
            let billing_address = hosts.relay(billing_address(billing_url)?)?;
            (
                WorkerLedger {
                    argument: url
                        .with_address(&HUB_ADDRESS.to_string(), database.port())
                        .without_password(),
                    password: url.password().map(str::to_owned),
                },
                format!("http://{billing_address}"),
            )
        }
    })
}

/// The runs, each with the kills and the duplicate moment the seed hands it.
fn plan_runs(rng: &mut ChaCha8Rng, config: &DrillConfig) -> Vec<RunSlot> {
    let mut runs: Vec<RunSlot> = (1..=config.runs)
        .map(|number| RunSlot {
            id: script::run_id(number),
            phase: RunPhase::Pending,
            live: BTreeSet::new(),
            kills_assigned: 0,
            kills_taken: 0,
            processes: 0,
            duplicate_at: None,
            hook_tried: None,
            ended: Vec::new(),
        })
        .collect();
    for _ in 0..config.kills {
        let run = rng.random_range(0..runs.len());
        runs[run].kills_assigned += 1;
    }
    if config.duplicates {
        for run in &mut runs {
            run.duplicate_at = Some(rng.random_range(2..=DUPLICATE_AT_MARKER_MAX));
        }
    }
    runs
}

/// Reads the ledger and billing's database after the drive and checks every promise.
fn check_drill(supervisor: &Supervisor, billing_path: &Path, config: &DrillConfig) -> Result<Findings, DrillError> {
    let scripts: Vec<RunScript> = supervisor.runs.iter().map(|run| script::script_for(&run.id)).collect();
    let records = supervisor.observer.all_records()?;
    let checkpoints = supervisor.observer.checkpoints()?;
    let history = supervisor.observer.all_history()?;
    let (_, billing) = BillingStore::open_existing(billing_path)?;
    Ok(check::judge(&CheckInput {
        scripts: &scripts,
        records: &records,
        checkpoints: &checkpoints,
        billing: &billing,
        guards: config.guards,
        history: &history,
        hook_declared: config.hook,
        every_end_replaced: config.every_end_replaced(),
    }))
}

/// Removes the drill's files unless they are kept (`--dir`, or a failed drill); says where
/// kept ones are.
fn keep_or_remove(keep: bool, dir: &Path, billing_path: &Path, postgres: Option<&PostgresUrl>) -> Option<String> {
    if !keep {
        if let Some(url) = postgres
            && let Err(error) = twice_ledger_postgres::remove_ledger(url)
        {
            eprintln!("drill: could not remove the drill's ledger schema: {error}");
        }
        let _ = std::fs::remove_dir_all(dir);
    }
    keep.then(|| match postgres {
        None => format!(
            "{} (ledger.sqlite, billing.sqlite: open them with sqlite3)",
            dir.display()
        ),
        Some(url) => format!(
            "ledger in {url} (psql, schema {}); billing in {} (sqlite3)",
            url.schema(),
            billing_path.display()
        ),
    })
}

/// A fresh schema name for one drill's ledger: the process and the time make it new.
pub(super) fn drill_schema() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_nanos() % 1_000_000_000_000);
    format!("twice_drill_{}_{nanos}", std::process::id())
}

/// The PostgreSQL server's address, for the hub's relay.
pub(super) fn server_address(url: &PostgresUrl) -> Result<std::net::SocketAddr, DrillError> {
    use std::net::ToSocketAddrs;
    (url.host(), url.port())
        .to_socket_addrs()
        .ok()
        .and_then(|mut addresses| addresses.next())
        .ok_or_else(|| DrillError::Setup(format!("--ledger: cannot resolve the host of {url}")))
}

/// Billing's address (it prints `http://127.0.0.1:PORT`), for the hub's relay.
pub(super) fn billing_address(url: &str) -> Result<std::net::SocketAddr, DrillError> {
    url.strip_prefix("http://")
        .and_then(|address| address.trim_end_matches('/').parse().ok())
        .ok_or_else(|| DrillError::Setup(format!("billing printed an address the relay cannot use: {url}")))
}

/// `twice-sim drill`.
pub fn drill_command(args: DrillArgs) -> u8 {
    let config = match DrillConfig::from_args(&args) {
        Ok(config) => config,
        Err(detail) => {
            eprintln!("error: {detail}");
            return EXIT_BAD_INPUT;
        }
    };
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("error: cannot start the async runtime: {error}");
            return EXIT_FAILED;
        }
    };
    match runtime.block_on(run_drill(config)) {
        Ok(report) => {
            if args.json {
                println!("{}", serde_json::to_string_pretty(&report).expect("reports serialize"));
            } else {
                println!("{}", table(&report));
            }
            if report.passed { EXIT_OK } else { EXIT_FAILED }
        }
        Err(DrillError::Interrupted) => {
            eprintln!("{}", DrillError::Interrupted);
            EXIT_INTERRUPTED
        }
        // Refused before anything ran: bad input, as for a bad flag.
        Err(
            error @ (DrillError::LedgerRefused(_)
            | DrillError::Hosts(
                HostsError::NotRoot | HostsError::NoIp | HostsError::Busy | HostsError::Leftover { .. },
            )),
        ) => {
            eprintln!("error: {error}");
            EXIT_BAD_INPUT
        }
        Err(error) => {
            eprintln!("error: {error}");
            EXIT_FAILED
        }
    }
}
