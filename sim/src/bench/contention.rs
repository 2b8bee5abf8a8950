//! Figure 4: reservations per second with several OS processes contending on one ledger
//! file (or one ledger in PostgreSQL, its processes spread over hosts the benchmark makes),
//! and proof that none of them was ever told to run a key another was told to run.
//!
//! Every process (`twice-sim bench-worker`, hidden) reserves the same keys, each starting
//! at a different place in the list so that they collide all along it. The processes open
//! the ledger first and report `ready`; the clock starts when all of them are told `go`
//! and stops when the last one has reported what it was told for each key. Afterwards the
//! ledger is read back: one row per key, one `reserved` event per key in the history, and
//! exactly one process told "run" per key.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::BenchError;
use super::side_by_side::ARGUMENTS;
use twice_drill::hosts::{HUB_ADDRESS, Hosts};
use twice_drill::ledger_target::{LedgerTarget, LedgerTargetParser};
use twice_world::ledger::{Ledger, Reservation, ReserveRequest};
use twice_world::runtime::key::IdempotencyKey;
use twice_world::runtime::rules::ReservationAction;
use twice_world::runtime::tool::SideEffect;

/// The most processes one measurement starts.
pub const PROCESSES_MAX: u32 = 64;
/// The most keys one measurement reserves.
pub const KEYS_MAX: u32 = 1_000_000;
/// How long a worker may take to open the ledger, or to finish its keys once told to go.
pub const WORKER_WAIT_MS: u64 = 600_000;

/// `twice-sim bench-worker`: one contending process. Hidden: `twice-sim bench` starts it.
#[derive(Debug, clap::Args)]
pub struct BenchWorkerArgs {
    /// The ledger file or `postgres://` URL; it must exist already (the benchmark creates it).
    #[arg(long, value_parser = LedgerTargetParser)]
    pub ledger: LedgerTarget,
    /// This process's name in the ledger's `owner` column.
    #[arg(long)]
    pub worker_id: String,
    /// How many keys to reserve (`bench:k0` …).
    #[arg(long)]
    pub keys: u32,
    /// Which key to start from; the list wraps around.
    #[arg(long, default_value_t = 0)]
    pub offset: u32,
}

/// What a worker tells the benchmark when it is done.
#[derive(Debug, Serialize, Deserialize)]
pub struct WorkerReport {
    pub worker_id: String,
    pub reservations: u32,
    /// The key numbers this process was told to run.
    pub told_run: Vec<u32>,
}

/// The key of number `index`, shared by every contending process.
pub fn key_of(index: u32) -> IdempotencyKey {
    IdempotencyKey::per_call("bench", &format!("k{index}")).expect("`bench` and `k<n>` make a key")
}

/// The worker's side: open, say `ready`, wait for `go`, reserve, report one JSON line.
pub fn worker_command(args: BenchWorkerArgs) -> u8 {
    match run_worker(&args) {
        Ok(()) => super::EXIT_OK,
        Err(error) => {
            eprintln!("error: bench-worker {}: {error}", args.worker_id);
            super::EXIT_FAILED
        }
    }
}

fn run_worker(args: &BenchWorkerArgs) -> Result<(), BenchError> {
    if args.keys == 0 || args.keys > KEYS_MAX {
        return Err(BenchError::Input(format!("--keys {}: from 1 to {KEYS_MAX}", args.keys)));
    }
    if let LedgerTarget::File(path) = &args.ledger
        && !path.is_file()
    {
        return Err(BenchError::Input(format!(
            "--ledger {}: no such file (the benchmark creates it before starting workers)",
            path.display()
        )));
    }
    let mut ledger = args.ledger.open_existing()?;
    let mut stdout = std::io::stdout().lock();
    let say = |stdout: &mut std::io::StdoutLock<'_>, line: &str| -> Result<(), BenchError> {
        writeln!(stdout, "{line}")
            .and_then(|()| stdout.flush())
            .map_err(|error| BenchError::Io(format!("writing to the benchmark: {error}")))
    };
    say(&mut stdout, "ready")?;
    let mut line = String::new();
    std::io::stdin()
        .lock()
        .read_line(&mut line)
        .map_err(|error| BenchError::Io(format!("reading from the benchmark: {error}")))?;
    if line.trim() != "go" {
        return Err(BenchError::Io(format!(
            "expected `go` from the benchmark, got {:?}",
            line.trim()
        )));
    }
    let mut told_run = Vec::new();
    for step in 0..args.keys {
        let index = (args.offset % args.keys + step) % args.keys;
        let key = key_of(index);
        let request = ReserveRequest::new(
            &key,
            "bench",
            "k",
            "issue_credit",
            SideEffect::External,
            ARGUMENTS,
            &args.worker_id,
        )
        .with_tenant("bench");
        match ledger.reserve(&request, twice_drill::now_ms())? {
            Reservation::Decided { action, .. } => {
                if matches!(
                    action,
                    ReservationAction::RunNew | ReservationAction::RunAgain | ReservationAction::TakeOverExpiredLease
                ) {
                    told_run.push(index);
                }
            }
            other => {
                return Err(BenchError::Unexpected(format!("{key}: {other:?}")));
            }
        }
    }
    let report = WorkerReport {
        worker_id: args.worker_id.clone(),
        reservations: args.keys,
        told_run,
    };
    say(
        &mut stdout,
        &serde_json::to_string(&report).expect("a worker report serializes"),
    )
}

/// One contention measurement.
#[derive(Clone, Debug, Serialize)]
pub struct ContentionFigure {
    pub processes: u32,
    pub keys: u32,
    /// Reservation calls made by all processes together.
    pub reservations: u64,
    pub seconds: f64,
    pub reservations_per_second: f64,
    /// Keys reserved to run per second: each key is won (and fsynced) once; the other
    /// processes' reservations of it are answered from the ledger without a write.
    pub keys_per_second: f64,
    /// Keys for which more than one process was told "run", or with more than one row or
    /// more than one `reserved` event. Must be zero.
    pub duplicates: u64,
    /// Keys no process was told to run. Must be zero too.
    pub unreserved: u64,
}

/// Where the contending processes run.
#[derive(Debug)]
pub enum Placement<'a> {
    /// On this machine, as they are.
    Here,
    /// Spread over these hosts in turn, reaching the ledger (in PostgreSQL) through the hub.
    Hosts(&'a mut Hosts),
}

/// Starts `processes` workers on a new ledger at `ledger`, each reserving all `keys`.
pub fn measure(
    executable: &Path,
    ledger: &LedgerTarget,
    processes: u32,
    keys: u32,
    placement: Placement<'_>,
) -> Result<ContentionFigure, BenchError> {
    check_inputs(ledger, processes, keys)?;
    // Created here, once, so the workers only open it.
    let observer = ledger.open()?;
    let (worker_ledger, password, hosts) = worker_ledger(ledger, placement)?;
    let mut workers = Workers::default();
    let (sender, receiver) = mpsc::channel::<(u32, Heard)>();
    for number in 0..processes {
        let mut command = match hosts {
            Some(hosts) => hosts.command_on(number % hosts.count() + 1, executable),
            None => Command::new(executable),
        };
        if let Some(password) = password {
            command.env(twice_ledger_postgres::PASSWORD_VARIABLE, password);
        }
        let mut child = command
            .arg("bench-worker")
            .arg("--ledger")
            .arg(&worker_ledger)
            .arg("--worker-id")
            .arg(format!("p{number}"))
            .arg("--keys")
            .arg(keys.to_string())
            .arg("--offset")
            .arg((u64::from(keys) * u64::from(number) / u64::from(processes)).to_string())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|error| BenchError::Io(format!("starting {} bench-worker: {error}", executable.display())))?;
        let stdout = child.stdout.take().expect("stdout is piped");
        let stdin = child.stdin.take().expect("stdin is piped");
        workers.children.push((child, Some(stdin)));
        let sender = sender.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let heard = match line {
                    Ok(line) => Heard::Line(line),
                    Err(error) => Heard::Failed(error.to_string()),
                };
                let failed = matches!(heard, Heard::Failed(_));
                if sender.send((number, heard)).is_err() || failed {
                    return;
                }
            }
            let _ = sender.send((number, Heard::Ended));
        });
    }
    drop(sender);
    let mut replies = Replies {
        receiver,
        lines_from: vec![0; processes as usize],
    };
    for _ in 0..processes {
        let (number, line) = replies.next("ready", 0)?;
        if line != "ready" {
            return Err(BenchError::Io(format!(
                "worker p{number} said {line:?} instead of `ready`"
            )));
        }
    }
    let started = Instant::now();
    for (_, stdin) in &mut workers.children {
        let mut stdin = stdin.take().expect("each worker is told once");
        writeln!(stdin, "go").map_err(|error| BenchError::Io(format!("telling a worker to go: {error}")))?;
    }
    let mut reports = Vec::new();
    for _ in 0..processes {
        let (number, line) = replies.next("its reservations", 1)?;
        let report: WorkerReport = serde_json::from_str(&line)
            .map_err(|error| BenchError::Io(format!("worker p{number} reported {line:?}: {error}")))?;
        reports.push(report);
    }
    let seconds = started.elapsed().as_secs_f64();
    workers.wait()?;

    let (duplicates, unreserved) = count_keys(&reports, &observer, keys)?;
    let reservations: u64 = reports.iter().map(|report| u64::from(report.reservations)).sum();
    Ok(ContentionFigure {
        processes,
        keys,
        reservations,
        seconds,
        reservations_per_second: if seconds > 0.0 {
            reservations as f64 / seconds
        } else {
            0.0
        },
        keys_per_second: if seconds > 0.0 { f64::from(keys) / seconds } else { 0.0 },
        duplicates,
        unreserved,
    })
}

/// The figure's bounds, and an empty ledger to start from.
fn check_inputs(ledger: &LedgerTarget, processes: u32, keys: u32) -> Result<(), BenchError> {
    if processes == 0 || processes > PROCESSES_MAX {
        return Err(BenchError::Input(format!(
            "{processes} processes: from 1 to {PROCESSES_MAX}"
        )));
    }
    if keys == 0 || keys > KEYS_MAX {
        return Err(BenchError::Input(format!("{keys} keys: from 1 to {KEYS_MAX}")));
    }
    if let LedgerTarget::File(path) = ledger
        && path.exists()
    {
        return Err(BenchError::Input(format!(
            "{}: already exists; contention starts from an empty ledger",
            path.display()
        )));
    }
    Ok(())
}

/// What the workers are told of the ledger, and where they run: a file's path, or the URL
/// without its password (which goes in their environment, out of `ps`), through the hub
/// when they run on hosts.
fn worker_ledger<'ledger, 'hosts>(
    ledger: &'ledger LedgerTarget,
    placement: Placement<'hosts>,
) -> Result<(String, Option<&'ledger str>, Option<&'hosts Hosts>), BenchError> {
    let told = match (ledger, placement) {
        (LedgerTarget::File(path), Placement::Here) => (path.display().to_string(), None, None),
        (LedgerTarget::File(_), Placement::Hosts(_)) => {
            return Err(BenchError::Input(
                "processes on other hosts cannot share a SQLite file; contention across hosts needs PostgreSQL".into(),
            ));
        }
        (LedgerTarget::Postgres(url), Placement::Here) => (url.without_password(), url.password(), None),
        (LedgerTarget::Postgres(url), Placement::Hosts(hosts)) => {
            use std::net::ToSocketAddrs;
            let server = (url.host(), url.port())
                .to_socket_addrs()
                .ok()
                .and_then(|mut addresses| addresses.next())
                .ok_or_else(|| BenchError::Input(format!("--ledger: cannot resolve the host of {url}")))?;
            let relay = hosts.relay(server).map_err(|error| BenchError::Io(error.to_string()))?;
            let through_hub = url.with_address(&HUB_ADDRESS.to_string(), relay.port());
            (through_hub.without_password(), url.password(), Some(&*hosts))
        }
    };
    Ok(told)
}

/// Keys run, stored or reserved more than once (`duplicates`), and keys never reserved
/// (`unreserved`), from the workers' reports and the ledger itself.
fn count_keys(reports: &[WorkerReport], observer: &Ledger, keys: u32) -> Result<(u64, u64), BenchError> {
    let mut runs_per_key: BTreeMap<u32, u32> = BTreeMap::new();
    for report in reports {
        for index in &report.told_run {
            *runs_per_key.entry(*index).or_default() += 1;
        }
    }
    let records = observer.all_records()?;
    let history = observer.all_history()?;
    let mut rows_per_key: BTreeMap<&str, u32> = BTreeMap::new();
    for record in &records {
        *rows_per_key.entry(record.key.as_str()).or_default() += 1;
    }
    let mut reserved_per_key: BTreeMap<&str, u32> = BTreeMap::new();
    for entry in history
        .iter()
        .filter(|entry| entry.event == twice_world::ledger::HistoryEvent::Reserved)
    {
        *reserved_per_key.entry(entry.key.as_str()).or_default() += 1;
    }
    let mut duplicates = 0;
    let mut unreserved = 0;
    for index in 0..keys {
        let key = key_of(index);
        let runs = runs_per_key.get(&index).copied().unwrap_or(0);
        let rows = rows_per_key.get(key.as_str()).copied().unwrap_or(0);
        let reserved = reserved_per_key.get(key.as_str()).copied().unwrap_or(0);
        if runs > 1 || rows > 1 || reserved > 1 {
            duplicates += 1;
        } else if runs == 0 || rows == 0 || reserved == 0 {
            unreserved += 1;
        }
    }
    Ok((duplicates, unreserved))
}

/// The workers' lines, in the order they come.
struct Replies {
    receiver: mpsc::Receiver<(u32, Heard)>,
    /// Lines heard from each worker so far.
    lines_from: Vec<u32>,
}

impl Replies {
    /// The next line from any worker, which should be `expecting`; a worker that ends after it
    /// said `lines_so_far` lines has said all it had to, and is fine.
    fn next(&mut self, expecting: &str, lines_so_far: u32) -> Result<(u32, String), BenchError> {
        loop {
            match self.receiver.recv_timeout(Duration::from_millis(WORKER_WAIT_MS)) {
                Ok((number, Heard::Line(line))) => {
                    self.lines_from[number as usize] += 1;
                    return Ok((number, line));
                }
                Ok((number, Heard::Ended)) if self.lines_from[number as usize] > lines_so_far => {}
                Ok((number, Heard::Ended)) => {
                    return Err(BenchError::Io(format!(
                        "worker p{number} exited before it reported {expecting}"
                    )));
                }
                Ok((number, Heard::Failed(error))) => {
                    return Err(BenchError::Io(format!("reading worker p{number}: {error}")));
                }
                Err(_) => {
                    return Err(BenchError::Io(format!(
                        "no worker reported {expecting} within {WORKER_WAIT_MS} ms"
                    )));
                }
            }
        }
    }
}

/// What a reader thread heard from its worker.
enum Heard {
    Line(String),
    Ended,
    Failed(String),
}

/// The started workers: whatever happens, none outlives the measurement.
#[derive(Default)]
struct Workers {
    children: Vec<(Child, Option<ChildStdin>)>,
}

impl Workers {
    fn wait(&mut self) -> Result<(), BenchError> {
        for (child, _) in &mut self.children {
            let status = child
                .wait()
                .map_err(|error| BenchError::Io(format!("waiting for a worker: {error}")))?;
            if !status.success() {
                return Err(BenchError::Io(format!("a worker exited with {status}")));
            }
        }
        self.children.clear();
        Ok(())
    }
}

impl Drop for Workers {
    fn drop(&mut self) {
        for (child, _) in &mut self.children {
            // Each child by its own handle: only the processes this measurement started.
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl std::fmt::Debug for Workers {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("Workers")
            .field("running", &self.children.len())
            .finish()
    }
}
