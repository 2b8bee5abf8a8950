//! `twice-sim drill`: starts billing and worker processes, SIGKILLs workers at seeded
//! moments, starts fresh processes to recover, and checks that nothing was paid twice.
//!
//! How a drill goes:
//!
//! 1. It makes a fresh folder with a new ledger file (created here, before any worker
//!    opens it) and starts `twice-sim billing` on a free loopback port.
//! 2. It hands the kills out across the runs (seeded) and drives `--parallel` runs at a
//!    time, one `twice-sim worker` process each. A process that is to die gets a moment:
//!    its first `send` (then a random wait of up to the billing latency, so the kill lands
//!    while the request or its answer is on the wire) or a random one of the markers it
//!    usually prints (then a few milliseconds). The kill is a real SIGKILL. A kill that finds
//!    its process already gone stays with the run, and a finished run hands its kills on.
//! 3. When a run's last process is gone, the drill reads the run's checkpoint: finished,
//!    honestly waiting on an unknown call, or neither — then a fresh process recovers it.
//!    With `--duplicates`, each run also gets a second process started while its first
//!    still drives it.
//! 4. A run waiting on an unknown call is looked at again once any request its dead process
//!    sent has had time to reach billing (the billing latency, and a margin). If billing now
//!    holds the credit, a fresh process recovers the run and its reconcile hook settles the
//!    call. If billing holds none and is applying none under that key, the drill acts as the
//!    seed's operator ("ask a person"): it resolves the call `failed` through
//!    [`twice_world::runtime::operator::resolve`], with a reason, and a fresh process resumes the run;
//!    the model hears the truth — the call did not take effect — and calls again with a new key.
//!    With `--no-operator`, or where billing cannot be asked (it ignores keys, or the key never
//!    reaches it), the run stays honestly waiting.
//! 5. When every run has finished or waits with nothing left to try, it stops billing (which
//!    applies whatever it still holds), reads the ledger and the billing database, and checks
//!    ([`super::check`]).
//!
//! The seed fixes every draw of the plan (which run takes which kill, at which moment);
//! real processes still interleave differently from one drill to the next, which is the point.
//!
//! Every process the drill starts is in its own process group (so a Ctrl-C typed at the
//! terminal reaches the drill, which then kills and reaps them), holds a pipe from the
//! drill on standard input (if the drill itself is SIGKILLed, they see the pipe close and
//! exit), and is killed when its handle is dropped.
//!
//! Past one machine (`--ledger postgres://…`, `--hosts N`): the ledger is a fresh schema in
//! PostgreSQL, and the workers run on N hosts the drill makes ([`super::hosts`]), reaching
//! the ledger and billing through a hub. Two more faults, handed out from the seed at the
//! moments workers send (mid-call): **partitions** (`--partitions`: the worker's host is
//! cut off the network for a seeded time, and a twin on another host takes the run over
//! while the cut-off worker lives on) and **pauses** (`--pauses`: the worker is stopped with
//! SIGSTOP, a twin takes the run over, and SIGCONT wakes the old worker after a seeded time,
//! a zombie whose run moved on). A worker that was cut off or paused and then stops on its
//! own (billing or the ledger unreachable for too long, its session ended by the server) is
//! a process that stopped, like a killed one: its run is recovered by a fresh process.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::time::{Duration, Instant};

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::Serialize;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, ChildStdin};
use tokio::sync::mpsc;

use super::billing_server::Lookup;
use super::billing_store::{BillingStore, key_handling_name, parse_key_handling};
use super::check::{self, CheckInput, Findings};
use super::hosts::{HOSTS_MAX, HUB_ADDRESS, Hosts, HostsError};
use super::marker::{EndKind, Marker};
use super::script;
use super::{EXIT_BAD_INPUT, EXIT_FAILED, EXIT_INTERRUPTED, EXIT_OK, stop_signal};
use crate::ledger_target::{LedgerTarget, LedgerTargetParser};
use twice_ledger_postgres::PostgresUrl;
use twice_world::billing::{Answer, KeyHandling};
use twice_world::ledger::{Ledger, LedgerError, SettleError};
use twice_world::model::RunScript;
use twice_world::runtime::guards::Guards;
use twice_world::runtime::key::IdempotencyKey;
use twice_world::runtime::operator::{self, OperatorError, ResolveRequest};
use twice_world::runtime::rules::Status;
use twice_world::runtime::run::{RunState, RunStatus};

/// Limits on a drill's size.
pub const RUNS_MAX: u32 = 5_000;
pub const KILLS_MAX: u32 = 100_000;
pub const PARALLEL_MAX: u32 = 64;
pub const DEADLINE_S_MAX: u32 = 86_400;
pub const LATENCY_MS_MAX: u32 = super::billing_server::LATENCY_MS_MAX;
pub const TIMEOUT_MS_MAX: u32 = 60_000;
pub const MODEL_DELAY_MS_MAX: u32 = 1_000;
pub const PARTITIONS_MAX: u32 = 1_000;
pub const PAUSES_MAX: u32 = 1_000;
/// The longest a partition or a pause may last.
pub const FAULT_MS_MAX: u32 = 60_000;
/// The shortest one lasts (each lasts a seeded time from this up to `--partition-ms` / `--pause-ms`).
pub const FAULT_MS_MIN: u32 = 100;
/// Processes a run may need beyond one per kill it took before the drill calls it stuck
/// (duplicates, stand-downs, recoveries after a wait, the odd worker error).
const PROCESSES_PER_RUN_SLACK: u32 = 50;
/// A waiting run is looked at again this long after billing's latency has passed, so a
/// request its dead process sent has reached billing.
const SETTLE_MARGIN_MS: u64 = 100;
/// How often the drill looks at waiting runs.
const SWEEP_EVERY_MS: u64 = 20;
/// The operator id the drill's resolutions carry in the ledger's history.
pub const OPERATOR_ID: &str = "drill-operator";
/// Markers any process on an unfinished run prints before it can end on its own (load;
/// model or read record; save, reserve or reconcile; exit, park or stand down).
const MARKERS_AT_LEAST: u32 = 4;
/// Markers a process usually prints for each call its run still owes (model, reserve,
/// send, answer, record, save), when no kill or pause cuts it short.
const MARKERS_PER_CALL_USUALLY: u32 = 6;
/// A kill at a marker lands up to this long after it.
const KILL_AFTER_MARKER_MS_MAX: u64 = 3;
/// A duplicate is started when the run's first process prints its n-th marker, n from 2 to this.
const DUPLICATE_AT_MARKER_MAX: u32 = 10;
/// How long the drill waits for billing to print its address.
const BILLING_START_MS: u64 = 10_000;
/// How long billing may take to stop, beyond its latency.
const BILLING_DRAIN_MS: u64 = 10_000;
/// How long the drill waits for killed processes to be reaped.
const REAP_MS: u64 = 10_000;
/// Lines of a process's standard error kept for the report.
const STDERR_LINES_KEPT: usize = 4;
const STDERR_LINE_CHARS_MAX: usize = 300;
/// Worker errors spelled out in the report (all are counted).
const WORKER_ERRORS_SHOWN_MAX: usize = 5;
const PROGRESS_EVERY_MS: u64 = 2_000;

#[derive(Debug, clap::Args)]
pub struct DrillArgs {
    /// How many runs to drive (each owes one to three credits).
    #[arg(long, default_value_t = 20)]
    pub runs: u32,
    /// How many worker processes to SIGKILL, in all.
    #[arg(long, default_value_t = 100)]
    pub kills: u32,
    /// Also start a second worker on each run while its first one still drives it.
    #[arg(long)]
    pub duplicates: bool,
    /// The seed of the kill plan and of billing's latency.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Guards to leave on: `all`, `none`, or a comma-separated list.
    #[arg(long, default_value = "all")]
    pub guards: String,
    /// What billing does with an Idempotency-Key: honour, metadata-only or ignore.
    #[arg(long, default_value = "honour")]
    pub keys: String,
    /// Runs driven at the same time.
    #[arg(long, default_value_t = 8)]
    pub parallel: u32,
    /// Billing takes up to this long per credit (seeded); longer than --timeout-ms makes unknowns.
    #[arg(long, default_value_t = 60)]
    pub latency_ms: u32,
    /// How long a worker waits for billing's answer.
    #[arg(long, default_value_t = 50)]
    pub timeout_ms: u32,
    /// How long the model takes to decide, in each worker.
    #[arg(long, default_value_t = 2)]
    pub model_delay_ms: u32,
    /// Leave calls the reconcile hook cannot settle waiting, instead of having the drill's
    /// operator check billing and resolve them.
    #[arg(long)]
    pub no_operator: bool,
    /// Keep the ledger and billing database in this folder (new or empty) instead of a temporary one.
    #[arg(long)]
    pub dir: Option<PathBuf>,
    /// Keep the ledger in PostgreSQL instead: `postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE`.
    /// The drill makes a fresh schema there (`twice_drill_…`) and removes it after a drill
    /// that passed (kept with --dir, or when the drill failed).
    #[arg(long, value_parser = LedgerTargetParser)]
    pub ledger: Option<LedgerTarget>,
    /// Run the workers on this many hosts: network namespaces the drill makes and removes
    /// (needs root, `ip` and --ledger postgres://…), with the ledger and billing on a hub.
    #[arg(long)]
    pub hosts: Option<u32>,
    /// Cut a worker's host off the network this many times, each mid-call for a seeded time,
    /// while a twin on another host takes the run over (needs --hosts 2 or more).
    #[arg(long, default_value_t = 0)]
    pub partitions: u32,
    /// The longest a partition lasts, in milliseconds.
    #[arg(long, default_value_t = 1_500)]
    pub partition_ms: u32,
    /// Pause a worker (SIGSTOP) this many times, each mid-call for a seeded time, while a twin
    /// takes the run over; then wake it (SIGCONT).
    #[arg(long, default_value_t = 0)]
    pub pauses: u32,
    /// The longest a pause lasts, in milliseconds.
    #[arg(long, default_value_t = 1_500)]
    pub pause_ms: u32,
    /// Give up (exit 1) if the drill has not finished after this many seconds.
    #[arg(long, default_value_t = 600)]
    pub deadline_s: u32,
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
}

/// A drill's checked settings.
#[derive(Clone, Debug)]
pub struct DrillConfig {
    pub runs: u32,
    pub kills: u32,
    pub duplicates: bool,
    pub seed: u64,
    pub guards_text: String,
    pub guards: Guards,
    pub key_handling: KeyHandling,
    pub parallel: u32,
    pub latency_ms: u32,
    pub timeout_ms: u32,
    pub model_delay_ms: u32,
    pub operator: bool,
    pub dir: Option<PathBuf>,
    pub deadline: Duration,
    /// The PostgreSQL server and database the ledger goes to (`None`: a SQLite file).
    pub ledger: Option<PostgresUrl>,
    /// Worker hosts to make (0: the workers run on this machine as they are).
    pub hosts: u32,
    pub partitions: u32,
    pub partition_ms: u32,
    pub pauses: u32,
    pub pause_ms: u32,
}

impl DrillConfig {
    pub fn from_args(args: &DrillArgs) -> Result<DrillConfig, String> {
        let within = |flag: &str, value: u32, low: u32, high: u32| -> Result<(), String> {
            if value < low || value > high {
                return Err(format!("--{flag} {value} is outside {low}..={high}"));
            }
            Ok(())
        };
        within("runs", args.runs, 1, RUNS_MAX)?;
        within("kills", args.kills, 0, KILLS_MAX)?;
        within("parallel", args.parallel, 1, PARALLEL_MAX)?;
        within("latency-ms", args.latency_ms, 0, LATENCY_MS_MAX)?;
        within("timeout-ms", args.timeout_ms, 1, TIMEOUT_MS_MAX)?;
        within("model-delay-ms", args.model_delay_ms, 0, MODEL_DELAY_MS_MAX)?;
        within("deadline-s", args.deadline_s, 1, DEADLINE_S_MAX)?;
        within("partitions", args.partitions, 0, PARTITIONS_MAX)?;
        within("pauses", args.pauses, 0, PAUSES_MAX)?;
        within("partition-ms", args.partition_ms, FAULT_MS_MIN, FAULT_MS_MAX)?;
        within("pause-ms", args.pause_ms, FAULT_MS_MIN, FAULT_MS_MAX)?;
        if let Some(hosts) = args.hosts {
            within("hosts", hosts, 1, HOSTS_MAX)?;
        }
        let ledger = match &args.ledger {
            None => None,
            Some(LedgerTarget::Postgres(url)) => Some(url.clone()),
            Some(LedgerTarget::File(_)) => {
                return Err(
                    "--ledger: the drill makes its own ledger file in its folder (--dir); --ledger takes a postgres:// URL"
                        .into(),
                );
            }
        };
        let hosts = args.hosts.unwrap_or(0);
        if hosts > 0 && ledger.is_none() {
            return Err(
                "--hosts: workers on other hosts cannot share a SQLite file; give --ledger postgres://USER@HOST/DATABASE"
                    .into(),
            );
        }
        if args.partitions > 0 && hosts < 2 {
            return Err(format!(
                "--partitions {}: a cut-off worker's twin runs on another host; give --hosts 2 or more",
                args.partitions
            ));
        }
        let guards = Guards::parse_list(&args.guards).map_err(|detail| format!("--guards: {detail}"))?;
        let key_handling = parse_key_handling(&args.keys).map_err(|detail| format!("--keys: {detail}"))?;
        if let Some(dir) = &args.dir
            && dir.exists()
        {
            let empty = std::fs::read_dir(dir)
                .map_err(|error| format!("--dir {}: {error}", dir.display()))?
                .next()
                .is_none();
            if !empty {
                return Err(format!(
                    "--dir {}: the folder is not empty; a drill starts from a new ledger and a new billing database",
                    dir.display()
                ));
            }
        }
        Ok(DrillConfig {
            runs: args.runs,
            kills: args.kills,
            duplicates: args.duplicates,
            seed: args.seed,
            guards_text: args.guards.trim().to_owned(),
            guards,
            key_handling,
            parallel: args.parallel,
            latency_ms: args.latency_ms,
            timeout_ms: args.timeout_ms,
            model_delay_ms: args.model_delay_ms,
            operator: !args.no_operator,
            dir: args.dir.clone(),
            deadline: Duration::from_secs(u64::from(args.deadline_s)),
            ledger,
            hosts,
            partitions: args.partitions,
            partition_ms: args.partition_ms,
            pauses: args.pauses,
            pause_ms: args.pause_ms,
        })
    }
}

/// Why a drill could not give a verdict.
#[derive(Debug, thiserror::Error)]
pub enum DrillError {
    #[error("{0}")]
    Setup(String),
    #[error("interrupted: every process the drill started was killed and reaped")]
    Interrupted,
    #[error("the drill did not finish within {seconds} s ({active} runs still being driven)")]
    Deadline { seconds: u64, active: usize },
    #[error("run {run} used {processes} worker processes without finishing; last errors: {errors}")]
    RunStuck {
        run: String,
        processes: u32,
        errors: String,
    },
    #[error("a worker refused its flags (a bug in the drill): {0}")]
    WorkerRefused(String),
    #[error("billing stopped while the drill still needed it: {0}")]
    BillingGone(String),
    /// The hosts could not be made (not root, no `ip`, namespaces left over) or changed.
    #[error(transparent)]
    Hosts(#[from] HostsError),
    /// The ledger the drill was given cannot be opened (no server there, a bad schema).
    #[error("--ledger: {0}")]
    LedgerRefused(LedgerError),
    #[error(transparent)]
    Ledger(#[from] twice_world::ledger::LedgerError),
    #[error(transparent)]
    Billing(#[from] super::billing_store::StoreError),
}

/// What a drill did and found.
#[derive(Clone, Debug, Serialize)]
pub struct DrillReport {
    pub passed: bool,
    pub seed: u64,
    pub guards: String,
    pub guards_off: Vec<String>,
    pub billing_keys: String,
    pub parallel: u32,
    /// Where the ledger was: a file, or a PostgreSQL URL with its schema (no password).
    pub ledger: String,
    /// Worker hosts (0: the workers ran on this machine as they are).
    pub hosts: u32,
    pub runs: u32,
    pub runs_finished: u32,
    pub runs_waiting: u32,
    pub processes_started: u32,
    pub kills_requested: u32,
    pub kills: u32,
    pub kills_during_tool_call: u32,
    pub kills_by_phase: BTreeMap<String, u32>,
    /// Kills sent to a process that had already ended on its own (handed on to another).
    pub kills_missed: u32,
    pub duplicates_started: u32,
    pub partitions_requested: u32,
    /// Hosts cut off the network mid-call (then put back).
    pub partitions: u32,
    pub pauses_requested: u32,
    /// Workers stopped mid-call (SIGSTOP), then woken (SIGCONT) after their run moved on.
    pub pauses: u32,
    /// Workers started on a run whose worker was cut off or paused.
    pub twins_started: u32,
    /// Cut-off or woken workers that then stopped on their own (billing or the ledger out of
    /// reach too long, their session ended by the server): processes that stopped, not errors.
    pub stopped_after_fault: u32,
    pub stood_down: u32,
    pub worker_errors: u32,
    pub worker_error_samples: Vec<String>,
    /// Waiting runs recovered because billing turned out to hold the credit (the hook settled it).
    pub found_after_wait: u32,
    /// Unknown calls the drill's operator resolved: `failed` when billing holds no credit under
    /// the key, `completed` when it does and the hook already had its chance.
    pub operator_resolutions: u32,
    pub calls_completed: u32,
    pub calls_failed: u32,
    pub calls_unknown: u32,
    pub calls_compensated: u32,
    pub credits_applied: u32,
    pub reversals: u32,
    pub double_credits: u32,
    pub lost_credits: u32,
    pub guards_held: BTreeMap<String, u32>,
    pub wall_time_ms: u64,
    pub kills_per_minute: f64,
    pub violations_total: u32,
    pub violations: Vec<String>,
    /// Where the ledger and the billing database are (kept with --dir, or when the drill failed).
    pub files: Option<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ProcessKind {
    /// Drives the run (first, or recovering it).
    Primary,
    /// Started on a run another process is already driving.
    Duplicate,
    /// Started on a run whose process was cut off or paused: it takes the run over.
    Twin,
}

/// What the drill tells a process's watcher to do to it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Control {
    Kill,
    /// SIGSTOP: the process stops where it is, its connections open.
    Pause,
    /// SIGCONT: it goes on from there.
    Wake,
}

/// A fault handed out from the seed: it fires at the drill's `at_send`-th send (counted over
/// the runs' driving processes), a seeded moment later, and lasts `lasts_ms`.
#[derive(Clone, Copy, Debug)]
struct PlannedFault {
    at_send: u32,
    after_ms: u64,
    lasts_ms: u64,
}

/// When a process is to die. Every plan fires by a marker the process is sure to print,
/// so a kill handed to a run lands on it.
#[derive(Clone, Copy, Debug)]
enum KillPlan {
    /// At its first `send`, then `after_ms` (the request or its answer is on the wire); if
    /// no send comes by marker `fallback`, at that marker.
    AtSend { after_ms: u64, fallback: u32 },
    /// At its `nth` marker of any kind, then `after_ms`.
    AtMarker { nth: u32, after_ms: u64 },
}

#[derive(Debug)]
struct ProcessSlot {
    run: usize,
    kind: ProcessKind,
    control: mpsc::UnboundedSender<Control>,
    kill_requested: bool,
    /// The worker host it runs on (`None`: this machine, without hosts).
    host: Option<u32>,
    /// Cut off or paused at some point of its life: an end on its own after that is a stop.
    faulted: bool,
    paused: bool,
    plan: Option<KillPlan>,
    markers: u32,
    /// The last phase or answer marker: where the process is.
    last: Option<Marker>,
    end: Option<EndKind>,
    stderr: VecDeque<String>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum RunPhase {
    Pending,
    Active,
    Finished,
    /// Waiting on an unknown call since `since`; `examined`: nothing more the drill can do.
    Waiting {
        key: String,
        since: Instant,
        examined: bool,
    },
}

#[derive(Debug)]
struct RunSlot {
    id: String,
    phase: RunPhase,
    live: BTreeSet<u32>,
    kills_assigned: u32,
    kills_taken: u32,
    processes: u32,
    duplicate_at: Option<u32>,
    /// The key a fresh process was started for because billing held its credit.
    hook_tried: Option<String>,
}

#[derive(Debug)]
enum Event {
    Line { process: u32, line: String },
    Stderr { process: u32, line: String },
    KillDue { process: u32 },
    CutDue { process: u32, lasts_ms: u64 },
    HealDue { host: u32 },
    PauseDue { process: u32, lasts_ms: u64 },
    WakeDue { process: u32 },
    Exited { process: u32, status: Option<ExitStatus> },
}

#[derive(Debug, Default)]
struct Counters {
    processes_started: u32,
    kills: u32,
    kills_during_tool_call: u32,
    kills_by_phase: BTreeMap<String, u32>,
    duplicates_started: u32,
    stood_down: u32,
    worker_errors: u32,
    worker_error_samples: Vec<String>,
    found_after_wait: u32,
    operator_resolutions: u32,
    kills_missed: u32,
    partitions: u32,
    pauses: u32,
    twins_started: u32,
    stopped_after_fault: u32,
    guards_held: BTreeMap<String, u32>,
}

/// What became of an operator's resolution.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Resolution {
    /// Resolved now, or someone else settled the call first.
    Done,
    /// The record was locked: nothing was decided; look again later.
    Busy,
}

/// The billing process the drill started.
#[derive(Debug)]
struct BillingProcess {
    child: Child,
    stdin: Option<ChildStdin>,
    url: String,
}

/// What a worker is told about the ledger, and the password it gets out of sight (in its
/// environment as `PGPASSWORD`, not on its command line, where `ps` shows it).
#[derive(Debug)]
struct WorkerLedger {
    argument: String,
    password: Option<String>,
}

#[derive(Debug)]
struct Supervisor {
    config: DrillConfig,
    exe: PathBuf,
    worker_ledger: WorkerLedger,
    /// Billing's URL as workers reach it (the hub's relay, with hosts).
    worker_billing: String,
    hosts: Option<Hosts>,
    /// Round-robin over the hosts for each new worker.
    next_host: u32,
    /// The host cut off now (or about to be): no new worker goes there.
    cut_host: Option<u32>,
    partitions_planned: VecDeque<PlannedFault>,
    pauses_planned: VecDeque<PlannedFault>,
    /// Sends seen from the runs' driving processes.
    sends_seen: u32,
    billing: BillingProcess,
    client: reqwest::Client,
    observer: Ledger,
    rng: ChaCha8Rng,
    runs: Vec<RunSlot>,
    pending: VecDeque<usize>,
    processes: BTreeMap<u32, ProcessSlot>,
    next_process: u32,
    sender: mpsc::UnboundedSender<Event>,
    receiver: mpsc::UnboundedReceiver<Event>,
    counters: Counters,
    /// Kills handed out that no run could take yet.
    kills_spare: u32,
}

fn clip(text: &str) -> String {
    let mut clipped: String = text.chars().take(STDERR_LINE_CHARS_MAX).collect();
    if clipped.len() < text.len() {
        clipped.push('…');
    }
    clipped
}

#[cfg(unix)]
fn killed_by_sigkill(status: &ExitStatus) -> bool {
    use std::os::unix::process::ExitStatusExt;
    status.signal() == Some(9)
}

#[cfg(not(unix))]
fn killed_by_sigkill(status: &ExitStatus) -> bool {
    !status.success() && status.code().is_none()
}

/// A command for a child of the drill: its own process group, a pipe on every stream,
/// killed if its handle is dropped.
fn child_command(exe: &Path) -> tokio::process::Command {
    child_settings(tokio::process::Command::new(exe))
}

/// A child's settings (see [`child_command`]), also for a command that runs on a worker host
/// (`ip netns exec`, which becomes the worker itself, so signals reach the worker).
fn child_settings(mut command: tokio::process::Command) -> tokio::process::Command {
    command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    #[cfg(unix)]
    command.process_group(0);
    command
}

/// Sends SIGSTOP or SIGCONT to a process the drill started, by its id.
fn signal(pid: u32, control: Control) {
    let signal = match control {
        Control::Pause => nix::sys::signal::Signal::SIGSTOP,
        Control::Wake => nix::sys::signal::Signal::SIGCONT,
        Control::Kill => nix::sys::signal::Signal::SIGKILL,
    };
    if let Ok(pid) = i32::try_from(pid) {
        let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), signal);
    }
}

/// Watches one worker: forwards its lines, kills, pauses and wakes it when asked, reports
/// its end. Signals go through the child's handle, which knows its id only while the process
/// has not been reaped, so a signal never reaches another process that took the number.
/// Its standard input stays open until it is gone.
async fn watch(
    process: u32,
    mut child: Child,
    events: mpsc::UnboundedSender<Event>,
    mut control: mpsc::UnboundedReceiver<Control>,
) {
    let stdin = child.stdin.take();
    let stdout = child.stdout.take();
    let stderr = child.stderr.take();
    let line_events = events.clone();
    let stdout_reader = tokio::spawn(async move {
        if let Some(stdout) = stdout {
            let mut lines = BufReader::new(stdout).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                let _ = line_events.send(Event::Line { process, line });
            }
        }
    });
    let error_events = events.clone();
    let stderr_reader = tokio::spawn(async move {
        if let Some(stderr) = stderr {
            let mut lines = BufReader::new(stderr).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                let _ = error_events.send(Event::Stderr { process, line });
            }
        }
    });
    let status = loop {
        tokio::select! {
            status = child.wait() => break status,
            command = control.recv() => match command {
                Some(Control::Kill) => {
                    let _ = child.start_kill();
                    break child.wait().await;
                }
                Some(command) => {
                    if let Some(pid) = child.id() {
                        signal(pid, command);
                    }
                }
                // The drill let go of the process: it runs to its end.
                None => break child.wait().await,
            }
        }
    };
    // Every line the process wrote is forwarded before its end is reported.
    let _ = stdout_reader.await;
    let _ = stderr_reader.await;
    drop(stdin);
    let _ = events.send(Event::Exited {
        process,
        status: status.ok(),
    });
}

impl Supervisor {
    fn worker_args(&self, run: &str, process: u32) -> Vec<String> {
        vec![
            "worker".into(),
            "--ledger".into(),
            self.worker_ledger.argument.clone(),
            "--billing".into(),
            self.worker_billing.clone(),
            "--run".into(),
            run.to_owned(),
            "--guards".into(),
            self.config.guards_text.clone(),
            "--worker-id".into(),
            format!("w{process}"),
            "--timeout-ms".into(),
            self.config.timeout_ms.to_string(),
            "--model-delay-ms".into(),
            self.config.model_delay_ms.to_string(),
            "--exit-when-parked".into(),
            "--stop-on-stdin-close".into(),
        ]
    }

    /// How many markers a fresh process on `run` usually prints: it depends on how many
    /// calls the run still owes, which its checkpoint says.
    fn markers_usual(&self, run: usize) -> Result<u32, DrillError> {
        let calls = script::script_for(&self.runs[run].id).calls.len() as u32;
        let done = self
            .observer
            .load_checkpoint(&self.runs[run].id)?
            .and_then(|checkpoint| RunState::from_json(&checkpoint.state).ok())
            .map_or(0, |state| state.item + u32::from(state.last_told.is_some()));
        let owed = calls.saturating_sub(done);
        Ok(MARKERS_AT_LEAST + MARKERS_PER_CALL_USUALLY * owed)
    }

    /// A plan for a process on `run`. Kills at a marker pick from every marker the process
    /// usually prints; one that ends sooner leaves the kill to the run's next process (or,
    /// when the run is done, to another run).
    fn plan_kill(&mut self, run: usize, markers_usual: u32) -> KillPlan {
        let latency_ms = u64::from(self.config.latency_ms);
        let last_taker = self.pending.is_empty()
            && self
                .runs
                .iter()
                .enumerate()
                .all(|(index, other)| index == run || other.phase != RunPhase::Active);
        if last_taker {
            // No other run could take this kill if it missed: kill at once at a marker
            // that still has a phase after it, so it cannot miss.
            return KillPlan::AtMarker {
                nth: self.rng.random_range(1..MARKERS_AT_LEAST),
                after_ms: 0,
            };
        }
        if self.rng.random_bool(0.5) {
            KillPlan::AtSend {
                after_ms: self.rng.random_range(0..=latency_ms),
                fallback: markers_usual,
            }
        } else {
            KillPlan::AtMarker {
                nth: self.rng.random_range(1..=markers_usual),
                after_ms: self.rng.random_range(0..=KILL_AFTER_MARKER_MS_MAX),
            }
        }
    }

    /// The host for a new worker: the next in turn that is not cut off (nor `avoid`, the
    /// host of the worker a twin takes over from). `None` without hosts.
    fn pick_host(&mut self, avoid: Option<u32>) -> Option<u32> {
        let count = self.hosts.as_ref()?.count();
        let open: Vec<u32> = (1..=count).filter(|host| Some(*host) != self.cut_host).collect();
        let preferred: Vec<u32> = open.iter().copied().filter(|host| Some(*host) != avoid).collect();
        let choices = if preferred.is_empty() { open } else { preferred };
        let host = *choices.get(self.next_host as usize % choices.len().max(1))?;
        self.next_host = self.next_host.wrapping_add(1);
        Some(host)
    }

    fn start_worker(&mut self, run: usize, kind: ProcessKind) -> Result<(), DrillError> {
        self.start_worker_avoiding(run, kind, None)
    }

    fn start_worker_avoiding(&mut self, run: usize, kind: ProcessKind, avoid: Option<u32>) -> Result<(), DrillError> {
        let process = self.next_process;
        self.next_process += 1;
        let run_id = self.runs[run].id.clone();
        let host = self.pick_host(avoid);
        let mut command = match (&self.hosts, host) {
            (Some(hosts), Some(host)) => child_settings(hosts.command_on(host, &self.exe).into()),
            _ => child_command(&self.exe),
        };
        command.args(self.worker_args(&run_id, process));
        if let Some(password) = &self.worker_ledger.password {
            command.env(twice_ledger_postgres::PASSWORD_VARIABLE, password);
        }
        let child = command
            .spawn()
            .map_err(|error| DrillError::Setup(format!("cannot start a worker ({}): {error}", self.exe.display())))?;
        let (control, control_receiver) = mpsc::unbounded_channel();
        tokio::spawn(watch(process, child, self.sender.clone(), control_receiver));
        // A twin drives its run as a primary does (its predecessor is cut off or paused), so
        // it takes the run's kills too; otherwise a run finished by a twin would carry them off.
        let drives = kind != ProcessKind::Duplicate;
        if drives && self.kills_spare > 0 {
            self.kills_spare -= 1;
            self.runs[run].kills_assigned += 1;
        }
        let plan = if drives && self.runs[run].kills_assigned > 0 {
            let markers_usual = self.markers_usual(run)?;
            Some(self.plan_kill(run, markers_usual))
        } else {
            None
        };
        self.processes.insert(
            process,
            ProcessSlot {
                run,
                kind,
                control,
                kill_requested: false,
                host,
                faulted: false,
                paused: false,
                plan,
                markers: 0,
                last: None,
                end: None,
                stderr: VecDeque::new(),
            },
        );
        let slot = &mut self.runs[run];
        slot.live.insert(process);
        slot.processes += 1;
        slot.phase = RunPhase::Active;
        self.counters.processes_started += 1;
        match kind {
            ProcessKind::Duplicate => self.counters.duplicates_started += 1,
            ProcessKind::Twin => self.counters.twins_started += 1,
            ProcessKind::Primary => {}
        }
        if slot.processes > slot.kills_taken + PROCESSES_PER_RUN_SLACK {
            let errors = self.counters.worker_error_samples.join(" | ");
            return Err(DrillError::RunStuck {
                run: run_id,
                processes: slot.processes,
                errors: if errors.is_empty() { "none".into() } else { errors },
            });
        }
        Ok(())
    }

    fn fill(&mut self) -> Result<(), DrillError> {
        while self.runs.iter().filter(|run| run.phase == RunPhase::Active).count() < self.config.parallel as usize {
            let Some(run) = self.pending.pop_front() else {
                break;
            };
            self.start_worker(run, ProcessKind::Primary)?;
        }
        Ok(())
    }

    fn schedule_kill(&self, process: u32, after_ms: u64) {
        let events = self.sender.clone();
        tokio::spawn(async move {
            if after_ms > 0 {
                tokio::time::sleep(Duration::from_millis(after_ms)).await;
            }
            let _ = events.send(Event::KillDue { process });
        });
    }

    fn on_line(&mut self, process: u32, line: &str) -> Result<(), DrillError> {
        let Some(marker) = Marker::parse(line) else {
            return Ok(());
        };
        let Some(slot) = self.processes.get_mut(&process) else {
            return Ok(());
        };
        match &marker {
            Marker::Guard { guard, .. } => {
                *self.counters.guards_held.entry(guard.clone()).or_default() += 1;
                return Ok(());
            }
            Marker::End { kind, .. } => {
                slot.end = Some(*kind);
                slot.last = Some(marker);
                return Ok(());
            }
            Marker::Phase { .. } | Marker::Answer { .. } => {}
        }
        slot.markers += 1;
        let is_send = matches!(&marker, Marker::Phase { name, .. } if name == "send");
        slot.last = Some(marker);
        let due = match slot.plan {
            Some(KillPlan::AtSend { after_ms, .. }) if is_send => Some(after_ms),
            Some(KillPlan::AtSend { fallback, .. }) if slot.markers >= fallback => Some(0),
            Some(KillPlan::AtMarker { nth, after_ms }) if slot.markers == nth => Some(after_ms),
            _ => None,
        };
        let (run, kind, markers) = (slot.run, slot.kind, slot.markers);
        if let Some(after_ms) = due {
            slot.plan = None;
            self.schedule_kill(process, after_ms);
        }
        if is_send && kind == ProcessKind::Primary {
            self.sends_seen += 1;
            self.plan_faults_at_send(process);
        }
        let duplicate_due =
            self.config.duplicates && kind == ProcessKind::Primary && self.runs[run].duplicate_at == Some(markers);
        if duplicate_due {
            self.runs[run].duplicate_at = None;
            self.start_worker(run, ProcessKind::Duplicate)?;
        }
        Ok(())
    }

    fn on_kill_due(&mut self, process: u32) {
        if let Some(slot) = self.processes.get_mut(&process)
            && !slot.kill_requested
        {
            slot.kill_requested = true;
            let _ = slot.control.send(Control::Kill);
        }
    }

    fn schedule(&self, after_ms: u64, event: Event) {
        let events = self.sender.clone();
        tokio::spawn(async move {
            if after_ms > 0 {
                tokio::time::sleep(Duration::from_millis(after_ms)).await;
            }
            let _ = events.send(event);
        });
    }

    /// A driving process is sending: partitions and pauses planned for this send fire a
    /// seeded moment later (the request or its answer on the wire). One host is cut at a time.
    fn plan_faults_at_send(&mut self, process: u32) {
        let host = self.processes.get(&process).and_then(|slot| slot.host);
        if self.cut_host.is_none()
            && let Some(host) = host
            && self
                .partitions_planned
                .front()
                .is_some_and(|fault| fault.at_send <= self.sends_seen)
            && let Some(fault) = self.partitions_planned.pop_front()
        {
            // Claimed now, so no new worker goes there and no other partition starts.
            self.cut_host = Some(host);
            self.schedule(
                fault.after_ms,
                Event::CutDue {
                    process,
                    lasts_ms: fault.lasts_ms,
                },
            );
        }
        if self
            .pauses_planned
            .front()
            .is_some_and(|fault| fault.at_send <= self.sends_seen)
            && let Some(fault) = self.pauses_planned.pop_front()
        {
            self.schedule(
                fault.after_ms,
                Event::PauseDue {
                    process,
                    lasts_ms: fault.lasts_ms,
                },
            );
        }
    }

    /// Cuts the host of `process` off the network (it was claimed when the cut was planned),
    /// and starts a twin of its run on another host.
    fn on_cut_due(&mut self, process: u32, lasts_ms: u64) -> Result<(), DrillError> {
        let (Some(hosts), Some(host)) = (&self.hosts, self.cut_host) else {
            return Ok(());
        };
        hosts.cut(host)?;
        self.counters.partitions += 1;
        for slot in self.processes.values_mut().filter(|slot| slot.host == Some(host)) {
            slot.faulted = true;
        }
        self.schedule(lasts_ms, Event::HealDue { host });
        if let Some(slot) = self.processes.get(&process)
            && !slot.kill_requested
        {
            let run = slot.run;
            self.start_worker_avoiding(run, ProcessKind::Twin, Some(host))?;
        }
        Ok(())
    }

    fn on_heal_due(&mut self, host: u32) -> Result<(), DrillError> {
        if let Some(hosts) = &self.hosts {
            hosts.heal(host)?;
        }
        if self.cut_host == Some(host) {
            self.cut_host = None;
        }
        Ok(())
    }

    /// Pauses `process` (SIGSTOP) and starts a twin of its run, on another host if there
    /// are hosts. A process that is gone (or dying) leaves the pause to the next send.
    fn on_pause_due(&mut self, process: u32, lasts_ms: u64) -> Result<(), DrillError> {
        let Some(slot) = self
            .processes
            .get_mut(&process)
            .filter(|slot| !slot.kill_requested && !slot.paused)
        else {
            self.pauses_planned.push_front(PlannedFault {
                at_send: self.sends_seen + 1,
                after_ms: 0,
                lasts_ms,
            });
            return Ok(());
        };
        let _ = slot.control.send(Control::Pause);
        slot.paused = true;
        slot.faulted = true;
        let (run, host) = (slot.run, slot.host);
        self.counters.pauses += 1;
        self.schedule(lasts_ms, Event::WakeDue { process });
        self.start_worker_avoiding(run, ProcessKind::Twin, host)
    }

    fn on_wake_due(&mut self, process: u32) {
        if let Some(slot) = self.processes.get_mut(&process)
            && slot.paused
        {
            let _ = slot.control.send(Control::Wake);
            slot.paused = false;
        }
    }

    fn on_exit(&mut self, process: u32, status: Option<ExitStatus>) -> Result<(), DrillError> {
        let Some(slot) = self.processes.remove(&process) else {
            return Ok(());
        };
        let run = slot.run;
        self.runs[run].live.remove(&process);
        let killed = slot.kill_requested && status.as_ref().is_some_and(killed_by_sigkill);
        if killed {
            self.counters.kills += 1;
            let run_slot = &mut self.runs[run];
            run_slot.kills_assigned = run_slot.kills_assigned.saturating_sub(1);
            run_slot.kills_taken += 1;
            let moment = slot.last.as_ref().map_or_else(|| "starting".to_owned(), Marker::moment);
            *self.counters.kills_by_phase.entry(moment).or_default() += 1;
            if slot.last.as_ref().is_some_and(Marker::in_tool_call) {
                self.counters.kills_during_tool_call += 1;
            }
        } else {
            if slot.kill_requested {
                self.counters.kills_missed += 1;
            }
            let succeeded = status.as_ref().is_some_and(ExitStatus::success);
            match (succeeded, slot.end) {
                (true, Some(EndKind::StoodDown)) => self.counters.stood_down += 1,
                (true, Some(_)) => {}
                // Cut off or paused, then out on its own: it stopped, as a killed process
                // does, and its run is recovered the same way.
                _ if slot.faulted => self.counters.stopped_after_fault += 1,
                _ => {
                    let code = status.as_ref().and_then(ExitStatus::code);
                    let stderr: Vec<String> = slot.stderr.iter().cloned().collect();
                    let sample = format!(
                        "w{process} on {} ended with {}: {}",
                        self.runs[run].id,
                        status.map_or_else(|| "an unknown status".to_owned(), |status| status.to_string()),
                        if stderr.is_empty() {
                            "(nothing on stderr)".to_owned()
                        } else {
                            stderr.join(" / ")
                        }
                    );
                    if code == Some(i32::from(EXIT_BAD_INPUT)) {
                        return Err(DrillError::WorkerRefused(sample));
                    }
                    self.counters.worker_errors += 1;
                    if self.counters.worker_error_samples.len() < WORKER_ERRORS_SHOWN_MAX {
                        self.counters.worker_error_samples.push(sample);
                    }
                }
            }
        }
        if self.runs[run].live.is_empty() {
            self.settle_run(run)?;
        }
        Ok(())
    }

    /// The run's last process is gone: finished, waiting, or to be recovered.
    fn settle_run(&mut self, run: usize) -> Result<(), DrillError> {
        let phase = self.standing(run)?;
        match phase {
            RunPhase::Finished | RunPhase::Waiting { .. } => {
                self.runs[run].phase = phase;
                self.hand_on_kills(run);
            }
            _ => self.start_worker(run, ProcessKind::Primary)?,
        }
        Ok(())
    }

    fn standing(&self, run: usize) -> Result<RunPhase, DrillError> {
        let Some(checkpoint) = self.observer.load_checkpoint(&self.runs[run].id)? else {
            return Ok(RunPhase::Active);
        };
        let Ok(state) = RunState::from_json(&checkpoint.state) else {
            // A recovering worker starts such a run over; the checker reports it if it stays.
            return Ok(RunPhase::Active);
        };
        Ok(match state.status {
            status if status.is_terminal() => RunPhase::Finished,
            RunStatus::AwaitingReconciliation { key } => {
                let unknown = IdempotencyKey::parse(&key)
                    .ok()
                    .map(|parsed| self.observer.record(&parsed))
                    .transpose()?
                    .flatten()
                    .is_none_or(|record| record.status.is_unknown());
                if unknown {
                    RunPhase::Waiting {
                        key,
                        since: Instant::now(),
                        examined: false,
                    }
                } else {
                    RunPhase::Active
                }
            }
            _ => RunPhase::Active,
        })
    }

    /// Kills a finished run did not take go to a run still to come, or one still driven.
    /// Kills nobody can take now wait in `kills_spare` for the next process the drill starts.
    fn hand_on_kills(&mut self, run: usize) {
        let left = std::mem::take(&mut self.runs[run].kills_assigned);
        for _ in 0..left {
            let takers: Vec<usize> = if self.pending.is_empty() {
                (0..self.runs.len())
                    .filter(|index| {
                        matches!(
                            self.runs[*index].phase,
                            RunPhase::Active | RunPhase::Waiting { examined: false, .. }
                        )
                    })
                    .collect()
            } else {
                self.pending.iter().copied().collect()
            };
            if takers.is_empty() {
                self.kills_spare += 1;
                continue;
            }
            let taker = takers[self.rng.random_range(0..takers.len())];
            self.runs[taker].kills_assigned += 1;
            // A process already driving the taker dies at its next marker: its own plan may
            // aim past its end, and the drill is near its end when kills are handed on.
            let live = &self.runs[taker].live;
            if let Some(slot) = self
                .processes
                .iter_mut()
                .filter(|(process, _)| live.contains(process))
                .map(|(_, slot)| slot)
                .find(|slot| slot.kind != ProcessKind::Duplicate && !slot.kill_requested && !slot.paused)
            {
                slot.plan = Some(KillPlan::AtMarker {
                    nth: slot.markers + 1,
                    after_ms: 0,
                });
            }
        }
    }

    /// Billing can be asked about a key only if it keeps keys and the key reaches it; an
    /// operator can only settle a call the ledger holds.
    fn billing_can_be_asked(&self) -> bool {
        self.config.key_handling != KeyHandling::Ignore
            && self.config.guards.key_downstream
            && self.config.guards.ledger
    }

    async fn lookup(&self, key: &str) -> Result<Lookup, DrillError> {
        let mut url = reqwest::Url::parse(&format!("{}/v1/credits", self.billing.url))
            .map_err(|error| DrillError::BillingGone(error.to_string()))?;
        url.query_pairs_mut().append_pair("idempotency_key", key);
        let response = self
            .client
            .get(url)
            .timeout(Duration::from_secs(5))
            .send()
            .await
            .map_err(|error| DrillError::BillingGone(error.to_string()))?;
        response
            .json::<Lookup>()
            .await
            .map_err(|error| DrillError::BillingGone(error.to_string()))
    }

    /// The operator's decision, through the runtime's one implementation of resolve.
    /// `Busy`: the record is locked (a process that died without its connection closing yet,
    /// cut off, still holds its transaction open until the server notices): the operator
    /// looks again later, as a person would.
    fn resolve(
        &mut self,
        key: &str,
        status: Status,
        reason: String,
        result: Option<String>,
    ) -> Result<Resolution, DrillError> {
        let key = IdempotencyKey::parse(key).map_err(DrillError::Setup)?;
        let Some(record) = self.observer.record(&key)? else {
            return Ok(Resolution::Done);
        };
        if !record.status.is_unknown() {
            return Ok(Resolution::Done);
        }
        let request = ResolveRequest {
            status,
            reason,
            operator: OPERATOR_ID.to_owned(),
            expected_status: Some(record.status),
            result,
        };
        match operator::resolve(&mut self.observer, &key, &request, super::now_ms()) {
            Ok(_) => {
                self.counters.operator_resolutions += 1;
                Ok(Resolution::Done)
            }
            // Someone settled it first (compare-and-set): the fresh process reads their decision.
            Err(OperatorError::Settle(SettleError::Stale { .. } | SettleError::AlreadySettled { .. })) => {
                Ok(Resolution::Done)
            }
            Err(
                OperatorError::Ledger(LedgerError::Locked { .. })
                | OperatorError::Settle(SettleError::Ledger(LedgerError::Locked { .. })),
            ) => Ok(Resolution::Busy),
            Err(OperatorError::Ledger(error) | OperatorError::Settle(SettleError::Ledger(error))) => Err(error.into()),
            Err(error) => Err(DrillError::Setup(format!(
                "the drill's operator could not resolve {key}: {error}"
            ))),
        }
    }

    /// Looks at runs waiting on an unknown call once any request of theirs has reached
    /// billing: recover them if billing holds the credit, or (as the operator) resolve the
    /// call `failed` if billing holds none and is applying none.
    async fn sweep(&mut self) -> Result<(), DrillError> {
        let settle = Duration::from_millis(u64::from(self.config.latency_ms) + SETTLE_MARGIN_MS);
        let due: Vec<(usize, String)> = self
            .runs
            .iter()
            .enumerate()
            .filter_map(|(index, run)| match &run.phase {
                RunPhase::Waiting {
                    key,
                    since,
                    examined: false,
                } if since.elapsed() >= settle => Some((index, key.clone())),
                _ => None,
            })
            .collect();
        for (run, key) in due {
            if !self.billing_can_be_asked() {
                self.mark_examined(run);
                continue;
            }
            let lookup = self.lookup(&key).await?;
            if let Some(credit) = &lookup.credit {
                let hook_tried = self.runs[run].hook_tried.as_deref() == Some(key.as_str());
                if self.config.guards.reconcile_hook && !hook_tried {
                    // A fresh process asks the reconcile hook, which now finds the credit.
                    self.runs[run].hook_tried = Some(key.clone());
                    self.counters.found_after_wait += 1;
                    self.start_worker(run, ProcessKind::Primary)?;
                } else if self.config.operator {
                    let result = Answer::Applied {
                        credit_id: credit.id.clone(),
                        balance_cents: lookup.balance_cents.unwrap_or(0),
                    }
                    .receipt();
                    let reason = format!("billing holds credit {} under key {key}", credit.id);
                    match self.resolve(&key, Status::Completed, reason, Some(result))? {
                        Resolution::Done => self.start_worker(run, ProcessKind::Primary)?,
                        Resolution::Busy => self.look_again_later(run),
                    }
                } else {
                    self.mark_examined(run);
                }
            } else if lookup.in_flight > 0 {
                // Still on its way in: look again later.
                self.look_again_later(run);
            } else if self.config.operator {
                let reason = format!(
                    "billing holds no credit under key {key} and is applying none, and no process is left that could send it"
                );
                match self.resolve(&key, Status::Failed, reason, None)? {
                    Resolution::Done => self.start_worker(run, ProcessKind::Primary)?,
                    Resolution::Busy => self.look_again_later(run),
                }
            } else {
                self.mark_examined(run);
            }
        }
        Ok(())
    }

    /// The run's wait starts over: it is looked at again after billing's latency and a margin.
    fn look_again_later(&mut self, run: usize) {
        if let RunPhase::Waiting { since, .. } = &mut self.runs[run].phase {
            *since = Instant::now();
        }
    }

    fn mark_examined(&mut self, run: usize) {
        if let RunPhase::Waiting { examined, .. } = &mut self.runs[run].phase {
            *examined = true;
        }
    }

    /// Every run has finished or waits with nothing left to try.
    fn is_over(&self) -> bool {
        self.processes.is_empty()
            && self.pending.is_empty()
            && self
                .runs
                .iter()
                .all(|run| matches!(run.phase, RunPhase::Finished | RunPhase::Waiting { examined: true, .. }))
    }

    fn active_runs(&self) -> usize {
        self.runs.iter().filter(|run| run.phase == RunPhase::Active).count()
    }

    fn progress(&self, started: Instant) {
        let finished = self.runs.iter().filter(|run| run.phase == RunPhase::Finished).count();
        eprint!(
            "\r  {:>5.1} s  runs {finished}/{} finished  kills {}/{}  processes {}   ",
            started.elapsed().as_secs_f64(),
            self.runs.len(),
            self.counters.kills,
            self.config.kills,
            self.counters.processes_started
        );
    }

    /// Drives every run to its end (or honest wait).
    async fn drive(&mut self, started: Instant) -> Result<(), DrillError> {
        let interrupted = stop_signal();
        tokio::pin!(interrupted);
        let deadline = tokio::time::sleep(self.config.deadline);
        tokio::pin!(deadline);
        let show_progress = std::io::stderr().is_terminal();
        let mut progress = tokio::time::interval(Duration::from_millis(PROGRESS_EVERY_MS));
        let mut sweep = tokio::time::interval(Duration::from_millis(SWEEP_EVERY_MS));
        sweep.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            self.fill()?;
            if self.is_over() {
                break;
            }
            tokio::select! {
                event = self.receiver.recv() => {
                    // The supervisor holds a sender itself, so the channel never closes.
                    let Some(event) = event else { break };
                    match event {
                        Event::Line { process, line } => self.on_line(process, &line)?,
                        Event::Stderr { process, line } => {
                            if let Some(slot) = self.processes.get_mut(&process) {
                                if slot.stderr.len() == STDERR_LINES_KEPT {
                                    slot.stderr.pop_front();
                                }
                                slot.stderr.push_back(clip(&line));
                            }
                        }
                        Event::KillDue { process } => self.on_kill_due(process),
                        Event::CutDue { process, lasts_ms } => self.on_cut_due(process, lasts_ms)?,
                        Event::HealDue { host } => self.on_heal_due(host)?,
                        Event::PauseDue { process, lasts_ms } => self.on_pause_due(process, lasts_ms)?,
                        Event::WakeDue { process } => self.on_wake_due(process),
                        Event::Exited { process, status } => self.on_exit(process, status)?,
                    }
                }
                () = &mut interrupted => return Err(DrillError::Interrupted),
                () = &mut deadline => {
                    return Err(DrillError::Deadline {
                        seconds: self.config.deadline.as_secs(),
                        active: self.active_runs() + self.pending.len(),
                    });
                }
                status = self.billing.child.wait() => {
                    let status = status.map_or_else(|error| error.to_string(), |status| status.to_string());
                    return Err(DrillError::BillingGone(format!("billing exited ({status})")));
                }
                _ = progress.tick(), if show_progress => self.progress(started),
                _ = sweep.tick() => self.sweep().await?,
            }
        }
        if show_progress {
            self.progress(started);
            eprintln!();
        }
        Ok(())
    }

    /// Kills every worker still alive and waits until each is reaped.
    async fn reap_workers(&mut self) {
        for slot in self.processes.values_mut() {
            if !slot.kill_requested {
                slot.kill_requested = true;
                let _ = slot.control.send(Control::Kill);
            }
        }
        let deadline = tokio::time::Instant::now() + Duration::from_millis(REAP_MS);
        while !self.processes.is_empty() {
            match tokio::time::timeout_at(deadline, self.receiver.recv()).await {
                Ok(Some(Event::Exited { process, .. })) => {
                    self.processes.remove(&process);
                }
                Ok(Some(_)) => {}
                Ok(None) | Err(_) => break,
            }
        }
    }

    /// Stops billing: closes its standard input (it stops gracefully, applying what it
    /// received), and kills it if it has not exited in time.
    async fn stop_billing(&mut self) -> Result<(), String> {
        drop(self.billing.stdin.take());
        let grace = Duration::from_millis(u64::from(self.config.latency_ms) + BILLING_DRAIN_MS);
        match tokio::time::timeout(grace, self.billing.child.wait()).await {
            Ok(Ok(status)) if status.success() => Ok(()),
            Ok(Ok(status)) => Err(format!("billing exited with {status}")),
            Ok(Err(error)) => Err(format!("billing could not be waited for: {error}")),
            Err(_) => {
                let _ = self.billing.child.start_kill();
                let _ = self.billing.child.wait().await;
                Err(format!(
                    "billing did not stop within {} ms and was killed",
                    grace.as_millis()
                ))
            }
        }
    }
}

/// Starts `twice-sim billing` on a free loopback port and reads its address.
async fn start_billing(exe: &Path, database: &Path, config: &DrillConfig) -> Result<BillingProcess, DrillError> {
    let mut command = child_command(exe);
    command.args([
        "billing".to_owned(),
        "--db".to_owned(),
        database.display().to_string(),
        "--addr".to_owned(),
        "127.0.0.1:0".to_owned(),
        "--keys".to_owned(),
        key_handling_name(config.key_handling).to_owned(),
        "--latency-ms".to_owned(),
        config.latency_ms.to_string(),
        "--seed".to_owned(),
        config.seed.to_string(),
        "--stop-on-stdin-close".to_owned(),
    ]);
    let mut child = command
        .spawn()
        .map_err(|error| DrillError::Setup(format!("cannot start billing ({}): {error}", exe.display())))?;
    let stdin = child.stdin.take();
    let stdout = child.stdout.take().expect("stdout is piped");
    let stderr = child.stderr.take().expect("stderr is piped");
    let mut lines = BufReader::new(stdout).lines();
    let first = tokio::time::timeout(Duration::from_millis(BILLING_START_MS), lines.next_line()).await;
    let url = match first {
        Ok(Ok(Some(line))) => line
            .strip_prefix("listening ")
            .and_then(|rest| rest.split_whitespace().next())
            .map(str::to_owned),
        _ => None,
    };
    let Some(url) = url else {
        let _ = child.start_kill();
        let mut errors = String::new();
        let mut error_lines = BufReader::new(stderr).lines();
        while let Ok(Ok(Some(line))) = tokio::time::timeout(Duration::from_secs(1), error_lines.next_line()).await {
            errors.push_str(&line);
            errors.push(' ');
        }
        let _ = child.wait().await;
        return Err(DrillError::Setup(format!(
            "billing did not start: {}",
            if errors.is_empty() {
                "it printed no address"
            } else {
                errors.trim()
            }
        )));
    };
    // Keep billing's pipes drained so it never blocks writing to them.
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    tokio::spawn(async move {
        let mut lines = BufReader::new(stderr).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            eprintln!("billing: {line}");
        }
    });
    Ok(BillingProcess { child, stdin, url })
}

/// A folder for the drill's files, and whether the drill made it up (and may remove it).
fn drill_folder(config: &DrillConfig) -> Result<(PathBuf, bool), DrillError> {
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
    let (worker_ledger, worker_billing) = match (&postgres, &mut hosts) {
        (None, _) => (
            WorkerLedger {
                argument: ledger_path.display().to_string(),
                password: None,
            },
            billing.url.clone(),
        ),
        (Some(url), None) => (
            WorkerLedger {
                argument: url.without_password(),
                password: url.password().map(str::to_owned),
            },
            billing.url.clone(),
        ),
        (Some(url), Some(hosts)) => {
            let database = hosts.relay(server_address(url)?)?;
            let billing_address = hosts.relay(billing_address(&billing.url)?)?;
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
    };
    let mut rng = ChaCha8Rng::seed_from_u64(config.seed);
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
    let billing_stopped = supervisor.stop_billing().await;
    driven?;
    billing_stopped.map_err(DrillError::BillingGone)?;

    let scripts: Vec<RunScript> = supervisor.runs.iter().map(|run| script::script_for(&run.id)).collect();
    let records = supervisor.observer.all_records()?;
    let checkpoints = supervisor.observer.checkpoints()?;
    let (_, billing) = BillingStore::open_existing(&billing_path)?;
    let findings = check::judge(&CheckInput {
        scripts: &scripts,
        records: &records,
        checkpoints: &checkpoints,
        billing: &billing,
        guards: config.guards,
    });
    let wall_time_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
    let passed = findings.passed();
    let keep = !temporary || !passed;
    let ledger = postgres
        .as_ref()
        .map_or_else(|| ledger_path.display().to_string(), PostgresUrl::redacted);
    drop(supervisor.observer);
    // The hosts go now: their relays, namespaces and links.
    drop(supervisor.hosts.take());
    if !keep {
        if let Some(url) = &postgres
            && let Err(error) = twice_ledger_postgres::remove_ledger(url)
        {
            eprintln!("drill: could not remove the drill's ledger schema: {error}");
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
    let files = keep.then(|| match &postgres {
        None => format!(
            "{} (ledger.sqlite, billing.sqlite: open them with sqlite3)",
            dir.display()
        ),
        Some(url) => format!(
            "ledger in {url} (psql, schema {}); billing in {} (sqlite3)",
            url.schema(),
            billing_path.display()
        ),
    });
    Ok(report(
        &config,
        &supervisor.counters,
        findings,
        wall_time_ms,
        ledger,
        files,
    ))
}

/// A fresh schema name for one drill's ledger: the process and the time make it new.
fn drill_schema() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_nanos() % 1_000_000_000_000);
    format!("twice_drill_{}_{nanos}", std::process::id())
}

/// The PostgreSQL server's address, for the hub's relay.
fn server_address(url: &PostgresUrl) -> Result<std::net::SocketAddr, DrillError> {
    use std::net::ToSocketAddrs;
    (url.host(), url.port())
        .to_socket_addrs()
        .ok()
        .and_then(|mut addresses| addresses.next())
        .ok_or_else(|| DrillError::Setup(format!("--ledger: cannot resolve the host of {url}")))
}

/// Billing's address (it prints `http://127.0.0.1:PORT`), for the hub's relay.
fn billing_address(url: &str) -> Result<std::net::SocketAddr, DrillError> {
    url.strip_prefix("http://")
        .and_then(|address| address.trim_end_matches('/').parse().ok())
        .ok_or_else(|| DrillError::Setup(format!("billing printed an address the relay cannot use: {url}")))
}

/// `count` faults at seeded sends (all within the first `runs` sends, which every drill
/// reaches), each a seeded moment after its send and lasting a seeded time up to `longest_ms`.
fn plan_faults(rng: &mut ChaCha8Rng, config: &DrillConfig, count: u32, longest_ms: u32) -> VecDeque<PlannedFault> {
    let mut faults: Vec<PlannedFault> = (0..count)
        .map(|_| PlannedFault {
            at_send: rng.random_range(1..=config.runs.max(1)),
            after_ms: rng.random_range(0..=u64::from(config.latency_ms)),
            lasts_ms: rng.random_range(u64::from(FAULT_MS_MIN)..=u64::from(longest_ms.max(FAULT_MS_MIN))),
        })
        .collect();
    faults.sort_by_key(|fault| fault.at_send);
    faults.into()
}

fn report(
    config: &DrillConfig,
    counters: &Counters,
    findings: Findings,
    wall_time_ms: u64,
    ledger: String,
    files: Option<String>,
) -> DrillReport {
    let minutes = wall_time_ms as f64 / 60_000.0;
    DrillReport {
        passed: findings.passed(),
        seed: config.seed,
        guards: config.guards_text.clone(),
        guards_off: config
            .guards
            .off()
            .iter()
            .map(|guard| guard.name().to_owned())
            .collect(),
        billing_keys: key_handling_name(config.key_handling).to_owned(),
        parallel: config.parallel,
        ledger,
        hosts: config.hosts,
        runs: config.runs,
        runs_finished: findings.runs_finished,
        runs_waiting: findings.runs_waiting,
        processes_started: counters.processes_started,
        kills_requested: config.kills,
        kills: counters.kills,
        kills_during_tool_call: counters.kills_during_tool_call,
        kills_by_phase: counters.kills_by_phase.clone(),
        kills_missed: counters.kills_missed,
        duplicates_started: counters.duplicates_started,
        partitions_requested: config.partitions,
        partitions: counters.partitions,
        pauses_requested: config.pauses,
        pauses: counters.pauses,
        twins_started: counters.twins_started,
        stopped_after_fault: counters.stopped_after_fault,
        stood_down: counters.stood_down,
        worker_errors: counters.worker_errors,
        worker_error_samples: counters.worker_error_samples.clone(),
        found_after_wait: counters.found_after_wait,
        operator_resolutions: counters.operator_resolutions,
        calls_completed: findings.calls_completed,
        calls_failed: findings.calls_failed,
        calls_unknown: findings.calls_unknown,
        calls_compensated: findings.calls_compensated,
        credits_applied: findings.credits_applied,
        reversals: findings.reversals,
        double_credits: findings.double_credits,
        lost_credits: findings.lost_credits,
        guards_held: counters.guards_held.clone(),
        wall_time_ms,
        kills_per_minute: if minutes > 0.0 {
            (f64::from(counters.kills) / minutes * 10.0).round() / 10.0
        } else {
            0.0
        },
        violations_total: findings.violations_total,
        violations: findings.violations,
        files,
    }
}

fn joined(counts: &BTreeMap<String, u32>) -> String {
    let mut counts: Vec<(&String, &u32)> = counts.iter().collect();
    counts.sort_by(|left, right| right.1.cmp(left.1).then(left.0.cmp(right.0)));
    counts
        .iter()
        .map(|(name, count)| format!("{name} {count}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The report as a table.
pub fn table(report: &DrillReport) -> String {
    let mut lines = Vec::new();
    lines.push(format!(
        "Persistence drill — seed {}, guards {}{}, billing keys {}, {} runs at a time",
        report.seed,
        report.guards,
        if report.guards_off.is_empty() || report.guards == "none" {
            String::new()
        } else {
            format!(" (off: {})", report.guards_off.join(", "))
        },
        report.billing_keys,
        report.parallel
    ));
    let row = |name: &str, value: String, note: String| format!("  {name:<26}{value:>10}  {note}");
    lines.push(row("ledger", String::new(), report.ledger.clone()));
    lines.push(row(
        "runs",
        report.runs.to_string(),
        format!(
            "{} finished, {} waiting on an unknown call",
            report.runs_finished, report.runs_waiting
        ),
    ));
    lines.push(row(
        "processes started",
        report.processes_started.to_string(),
        format!(
            "{} stood down, {} worker errors",
            report.stood_down, report.worker_errors
        ),
    ));
    lines.push(row(
        "kills",
        report.kills.to_string(),
        format!(
            "of {} asked for (SIGKILL; {} sent too late, handed on)",
            report.kills_requested, report.kills_missed
        ),
    ));
    lines.push(row(
        "kills during a tool call",
        report.kills_during_tool_call.to_string(),
        "request sent, outcome not yet recorded".into(),
    ));
    lines.push(row(
        "duplicates started",
        report.duplicates_started.to_string(),
        String::new(),
    ));
    if report.hosts > 0 {
        lines.push(row(
            "hosts",
            report.hosts.to_string(),
            format!(
                "network namespaces twice-h1..twice-h{}; ledger and billing on twice-hub",
                report.hosts
            ),
        ));
    }
    if report.partitions_requested > 0 {
        lines.push(row(
            "partitions",
            report.partitions.to_string(),
            format!(
                "of {} asked for (a worker's host cut off mid-call; a twin on another host took the run)",
                report.partitions_requested
            ),
        ));
    }
    if report.pauses_requested > 0 {
        lines.push(row(
            "pauses",
            report.pauses.to_string(),
            format!(
                "of {} asked for (SIGSTOP mid-call, a twin took the run, SIGCONT after)",
                report.pauses_requested
            ),
        ));
    }
    if report.partitions_requested + report.pauses_requested > 0 {
        lines.push(row(
            "twins started",
            report.twins_started.to_string(),
            format!(
                "{} cut-off or woken workers stopped on their own afterwards",
                report.stopped_after_fault
            ),
        ));
    }
    lines.push(row(
        "calls completed",
        report.calls_completed.to_string(),
        "ledger records".into(),
    ));
    lines.push(row("calls failed", report.calls_failed.to_string(), String::new()));
    lines.push(row(
        "calls unknown",
        report.calls_unknown.to_string(),
        "started or indeterminate, waiting".into(),
    ));
    lines.push(row(
        "settled after a wait",
        (report.found_after_wait + report.operator_resolutions).to_string(),
        format!(
            "{} found in billing by the hook, {} resolved by the operator",
            report.found_after_wait, report.operator_resolutions
        ),
    ));
    lines.push(row(
        "credits applied",
        report.credits_applied.to_string(),
        format!("billing's entries ({} reversals)", report.reversals),
    ));
    lines.push(row(
        "double credits",
        report.double_credits.to_string(),
        "must be 0".into(),
    ));
    lines.push(row("lost credits", report.lost_credits.to_string(), "must be 0".into()));
    lines.push(row(
        "wall time",
        format!("{:.1} s", report.wall_time_ms as f64 / 1000.0),
        format!("{} kills per minute", report.kills_per_minute),
    ));
    if !report.kills_by_phase.is_empty() {
        lines.push(format!("  kills by phase: {}", joined(&report.kills_by_phase)));
    }
    if !report.guards_held.is_empty() {
        lines.push(format!("  guards that held: {}", joined(&report.guards_held)));
    }
    for sample in &report.worker_error_samples {
        lines.push(format!("  worker error: {sample}"));
    }
    if report.passed {
        lines.push("verdict: PASSED — nothing paid twice, nothing lost, every promise kept".into());
    } else {
        lines.push(format!("verdict: FAILED — {} violations:", report.violations_total));
        for violation in &report.violations {
            lines.push(format!("  - {violation}"));
        }
        let unshown = report.violations_total as usize - report.violations.len();
        if unshown > 0 {
            lines.push(format!("  … and {unshown} more"));
        }
    }
    if let Some(files) = &report.files {
        lines.push(format!("files: {files}"));
    }
    lines.join("\n")
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
            | DrillError::Hosts(HostsError::NotRoot | HostsError::NoIp | HostsError::Leftover { .. })),
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
