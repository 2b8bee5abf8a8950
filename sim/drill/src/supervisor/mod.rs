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
//!    reaches it), the run stays honestly waiting. With `--replacing`, a fresh process replaces
//!    the run's processes that ended (`WorkerSetup::replacing`): their `started` calls are
//!    recorded `recovered_unknown` first, and with `--no-hook` (the tool declares no hook) the
//!    operator settles each one — a crash without a reconcile hook.
//! 5. When every run has finished or waits with nothing left to try, it stops billing (which
//!    applies whatever it still holds), reads the ledger and the billing database, and checks
//!    ([`crate::check`]).
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
//! PostgreSQL, and the workers run on N hosts the drill makes ([`crate::hosts`]), reaching
//! the ledger and billing through a hub. Two more faults, handed out from the seed at the
//! moments workers send (mid-call): **partitions** (`--partitions`: the worker's host is
//! cut off the network for a seeded time, and a twin on another host takes the run over
//! while the cut-off worker lives on) and **pauses** (`--pauses`: the worker is stopped with
//! SIGSTOP, a twin takes the run over, and SIGCONT wakes the old worker after a seeded time,
//! a zombie whose run moved on). A worker that was cut off or paused and then stops on its
//! own (billing or the ledger unreachable for too long, its session ended by the server) is
//! a process that stopped, like a killed one: its run is recovered by a fresh process.

mod config;
mod drive;
mod faults;
mod operator;
mod processes;
mod report;
mod run;

pub use config::{DrillArgs, DrillConfig, DrillError};
pub use processes::BillingStopError;
pub use report::{DrillReport, table};
pub use run::{drill_command, run_drill};

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::path::PathBuf;
use std::process::ExitStatus;
use std::time::Instant;

use rand_chacha::ChaCha8Rng;
use tokio::process::{Child, ChildStdin};
use tokio::sync::mpsc;
use twice_world::ledger::Ledger;

use crate::hosts::Hosts;
use crate::marker::{EndKind, Marker};

/// Limits on a drill's size.
pub const RUNS_MAX: u32 = 5_000;
pub const KILLS_MAX: u32 = 100_000;
pub const PARALLEL_MAX: u32 = 64;
pub const DEADLINE_S_MAX: u32 = 86_400;
pub const LATENCY_MS_MAX: u32 = crate::billing_server::LATENCY_MS_MAX;
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
    /// Its processes that ended, in the order they ended: with `--replacing`, the process
    /// that recovers the run replaces them.
    ended: Vec<u32>,
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
    /// Kills still unplaced when the drill ended: every run had finished before they could land.
    kills_unplaced: u32,
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
