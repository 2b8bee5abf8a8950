//! `twice-sim worker`: a real process driving one run with the runtime's own machine.
//!
//! The runtime's async driver ([`twice_world::runtime::driver::drive`]) runs it, as it would
//! any tokio agent's: the ledger is a real SQLite file or a real PostgreSQL database
//! ([`LedgerTarget::open`]), the tool is a real HTTP request to `twice-sim billing`
//! ([`BillingTools`]), timeouts are real time, and a crash is a real SIGKILL. Nothing is kept in
//! memory that a recovery would need: a fresh process on the same run starts again from the
//! ledger and the checkpoint, as the seed asks.
//!
//! Before each phase it prints a [`Marker`] line on standard output and flushes it (the
//! driver's observer), so the drill knows where a process was when it killed it.

mod billing_calls;
mod driver;

pub use billing_calls::{BillingCallError, BillingTools};

use std::io::Write;
use std::time::Duration;

use reqwest::Url;

use crate::flags::{FlagError, within};
use crate::ledger_target::{LedgerTarget, LedgerTargetParser};
use crate::marker::Marker;
use crate::script;
use crate::{EXIT_BAD_INPUT, EXIT_FAILED, EXIT_OK, stop_when_stdin_closes};
use twice_world::ledger::LedgerError;
use twice_world::runtime::driver::DriveOptions;
use twice_world::runtime::executor::Executor;
use twice_world::runtime::guards::Guards;
use twice_world::runtime::ids::{RunId, WorkerId};
use twice_world::runtime::tool::ToolDeclaration;
use twice_world::runtime::worker::Worker;

/// Limits on the worker's timings.
pub const TIMEOUT_MS_MAX: u32 = 600_000;
pub const MODEL_DELAY_MS_MAX: u32 = 60_000;
pub const PARK_POLL_MS_MIN: u32 = 10;
pub const PARK_POLL_MS_MAX: u32 = 60_000;
pub const LEASE_MS_MAX: u32 = 86_400_000;
/// The most characters of a worker id (it is the ledger's `owner`).
pub const WORKER_ID_CHARS_MAX: usize = 64;
/// A worker whose drill went away exits with this code.
const EXIT_PARENT_GONE: i32 = 3;
/// Calls in a row that cannot reach billing at all before the worker stops calling: each is
/// recorded `failed` (nothing left), and a model that hears "failed" calls again, so without a
/// bound an unreachable billing makes a run call and fail until its model gives up.
pub const UNREACHABLE_IN_A_ROW_MAX: u32 = 3;
/// How long the start-up check of `--billing` waits for billing's answer.
const PROBE_TIMEOUT_MS: u64 = 5_000;
/// A parked worker first looks again after this many polls, then after twice as many, up to
/// the most below.
const LOOK_AGAIN_AFTER_POLLS: u32 = 5;
const LOOK_AGAIN_AFTER_POLLS_MAX: u32 = 80;

#[derive(Debug, clap::Args)]
pub struct WorkerArgs {
    /// The ledger: a SQLite file, or `postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE[?schema=NAME]`
    /// (without a password in the URL, `PGPASSWORD` is read). Created if missing.
    #[arg(long, value_parser = LedgerTargetParser)]
    pub ledger: LedgerTarget,
    /// Do not ask billing whether it is there before starting (for tests that start a worker
    /// before its billing on purpose).
    #[arg(long, hide = true)]
    pub no_probe: bool,
    /// The billing server's URL (`http://127.0.0.1:PORT`, as `twice-sim billing` prints it).
    #[arg(long)]
    pub billing: String,
    /// The run to drive. Its script (which credits it owes) follows from the id.
    #[arg(long)]
    pub run: String,
    /// Guards to leave on: `all`, `none`, or a comma-separated list.
    #[arg(long, default_value = "all")]
    pub guards: String,
    /// This process's name in the ledger (`owner`, `saved_by`); default `p<pid>`.
    #[arg(long)]
    pub worker_id: Option<String>,
    /// How long an attempt waits for billing's answer.
    #[arg(long, default_value_t = 200)]
    pub timeout_ms: u32,
    /// How long the model takes to decide (a real model call takes time; a kill may land in it).
    #[arg(long, default_value_t = 0)]
    pub model_delay_ms: u32,
    /// How often a paused run looks at the ledger for the call it waits on.
    #[arg(long, default_value_t = 200)]
    pub park_poll_ms: u32,
    /// The lease a naive runtime puts on `started` calls (only with the `no_lease_expiry` guard off).
    #[arg(long, default_value_t = 1_000)]
    pub lease_ms: u32,
    /// Leave instead of waiting when the run pauses awaiting reconciliation (its checkpoint says so).
    #[arg(long)]
    pub exit_when_parked: bool,
    /// How long billing keeps an idempotency key, as the tool declares it (`key_retention_ms`):
    /// give billing's own `--key-retention-ms`. Default: billing keeps keys for ever.
    #[arg(long)]
    pub key_retention_ms: Option<u64>,
    /// How long billing's lookups lag behind its credits, as the tool declares it
    /// (`lookup_settle_ms`): give billing's own `--lookup-settle-ms`. Default: none declared.
    #[arg(long)]
    pub lookup_settle_ms: Option<u64>,
    /// Recoveries of the run that may fail (start from one checkpoint and get no further)
    /// before it is dead-lettered (`recovery_attempts_max`). Default: no limit.
    #[arg(long)]
    pub recovery_attempts_max: Option<u32>,
    /// The tool declares no reconcile hook: a call whose outcome is unknown waits for an
    /// operator (as a tool whose provider cannot be asked).
    #[arg(long)]
    pub no_hook: bool,
    /// A worker whose process is known to have ended, which this one replaces
    /// (`WorkerSetup::replacing`; repeat for each): its `started` call, found with no outcome,
    /// is recorded `indeterminate` (`recovered_unknown`) for a hook or an operator to settle.
    #[arg(long = "replaces", value_name = "WORKER_ID")]
    pub replaces: Vec<String>,
    /// Exit at once when standard input closes: the drill holds it, so workers never outlive it.
    #[arg(long)]
    pub stop_on_stdin_close: bool,
}

/// Why a worker process failed at run time.
#[derive(Debug, thiserror::Error)]
pub enum WorkerError {
    /// The driver stopped: the ledger failed, or the machine waits for something no step
    /// brings (the run stays where its ledger says, for a worker started again).
    #[error(transparent)]
    Driver(#[from] twice_world::runtime::Error),
    #[error("cannot build the HTTP client: {0}")]
    Client(#[source] reqwest::Error),
    #[error("the worker's setup: {0}")]
    Setup(#[from] twice_world::runtime::worker::SetupError),
}

/// How a worker ended on its own.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WorkerEnd {
    Exited,
    StoodDown(String),
    Parked(String),
    /// The run's stored state cannot be used; a person looks (the reason is in the ledger).
    WaitsForPerson(String),
    /// Billing could not be reached; the run is left for a worker that can reach it.
    ToolUnreachable(String),
}

/// The checked settings of one worker process.
#[derive(Clone, Debug)]
pub struct WorkerConfig {
    pub worker_id: WorkerId,
    pub run_id: RunId,
    pub guards: Guards,
    pub billing: Url,
    pub timeout: Duration,
    pub model_delay: Duration,
    pub park_poll: Duration,
    pub lease_ms: u64,
    pub exit_when_parked: bool,
    /// The tools the run declares, with billing's terms (`--key-retention-ms`, `--lookup-settle-ms`).
    pub tools: Vec<ToolDeclaration>,
    /// `--recovery-attempts-max`.
    pub recovery_attempts_max: Option<u32>,
    /// `--replaces`: the workers known dead whose `started` calls this one may record unknown.
    pub replaces: Vec<WorkerId>,
}

impl WorkerConfig {
    /// Checks the flags; the error names the flag.
    pub fn from_args(args: &WorkerArgs) -> Result<WorkerConfig, FlagError> {
        script::validate_run_id(&args.run).map_err(|detail| FlagError::invalid("run", format!("--run: {detail}")))?;
        let guards = Guards::parse_list(&args.guards)
            .map_err(|detail| FlagError::invalid("guards", format!("--guards: {detail}")))?;
        let billing = Url::parse(&args.billing)
            .map_err(|error| FlagError::invalid("billing", format!("--billing `{}`: {error}", args.billing)))?;
        if billing.scheme() != "http" || billing.host_str().is_none() {
            return Err(FlagError::invalid(
                "billing",
                format!(
                    "--billing `{}`: give an http:// URL with a host (this build speaks plain HTTP, for loopback)",
                    args.billing
                ),
            ));
        }
        let worker_id = args
            .worker_id
            .clone()
            .unwrap_or_else(|| format!("p{}", std::process::id()));
        check_worker_id("worker-id", &worker_id)?;
        for replaced in &args.replaces {
            check_worker_id("replaces", replaced)?;
            if *replaced == worker_id {
                return Err(FlagError::invalid(
                    "replaces",
                    format!(
                        "--replaces `{replaced}` is this worker's own id: a worker restarted under its own id \
                         needs no --replaces"
                    ),
                ));
            }
        }
        within("timeout-ms", args.timeout_ms, 1, TIMEOUT_MS_MAX)?;
        within("model-delay-ms", args.model_delay_ms, 0, MODEL_DELAY_MS_MAX)?;
        within("park-poll-ms", args.park_poll_ms, PARK_POLL_MS_MIN, PARK_POLL_MS_MAX)?;
        within("lease-ms", args.lease_ms, 1, LEASE_MS_MAX)?;
        let mut tools = script::tools_with_terms(args.key_retention_ms, args.lookup_settle_ms);
        if args.no_hook {
            for tool in &mut tools {
                tool.reconcile = false;
            }
        }
        if let Some(problem) = tools.iter().find_map(ToolDeclaration::terms_problem) {
            return Err(FlagError::invalid(
                "key-retention-ms",
                format!("--key-retention-ms / --lookup-settle-ms: {problem}"),
            ));
        }
        if args.recovery_attempts_max == Some(0) {
            return Err(FlagError::invalid(
                "recovery-attempts-max",
                "--recovery-attempts-max 0: a run would be dead-lettered before its first recovery",
            ));
        }
        Ok(WorkerConfig {
            worker_id: WorkerId::new(worker_id),
            run_id: RunId::new(args.run.clone()),
            guards,
            billing,
            timeout: Duration::from_millis(u64::from(args.timeout_ms)),
            model_delay: Duration::from_millis(u64::from(args.model_delay_ms)),
            park_poll: Duration::from_millis(u64::from(args.park_poll_ms)),
            lease_ms: u64::from(args.lease_ms),
            exit_when_parked: args.exit_when_parked,
            tools,
            recovery_attempts_max: args.recovery_attempts_max,
            replaces: args.replaces.iter().cloned().map(WorkerId::new).collect(),
        })
    }
}

/// A worker id given as `--flag`: 1 to [`WORKER_ID_CHARS_MAX`] visible characters (it is the
/// ledger's `owner`).
fn check_worker_id(flag: &'static str, worker_id: &str) -> Result<(), FlagError> {
    if worker_id.trim().is_empty()
        || worker_id.chars().count() > WORKER_ID_CHARS_MAX
        || worker_id.chars().any(char::is_control)
    {
        return Err(FlagError::invalid(
            flag,
            format!("--{flag} `{worker_id}` must have 1 to {WORKER_ID_CHARS_MAX} visible characters"),
        ));
    }
    Ok(())
}

/// Prints markers, flushed at once. A closed standard output (nobody reading) is ignored:
/// the markers are for the drill, the run does not depend on them.
fn emit(marker: &Marker) {
    let mut stdout = std::io::stdout().lock();
    let _ = writeln!(stdout, "{marker}");
    let _ = stdout.flush();
}

/// The driver: the machine, the runtime's executor on a real ledger, the scripted model and
/// billing's tools, all driven by the runtime's async driver.
#[derive(Debug)]
pub struct Driver {
    config: WorkerConfig,
    machine: Worker,
    executor: Executor,
    agent: driver::ScriptedModel,
    tools: BillingTools,
    marks: driver::Marks,
    options: DriveOptions,
}

/// Runs one worker process to its end.
pub fn worker_command(args: WorkerArgs) -> u8 {
    let config = match WorkerConfig::from_args(&args) {
        Ok(config) => config,
        Err(detail) => {
            eprintln!("error: {detail}");
            return EXIT_BAD_INPUT;
        }
    };
    if args.stop_on_stdin_close {
        stop_when_stdin_closes(EXIT_PARENT_GONE);
    }
    let ledger = match args.ledger.open() {
        Ok(ledger) => ledger,
        Err(error @ LedgerError::Locked { .. }) => {
            eprintln!("error: {error}");
            return EXIT_FAILED;
        }
        Err(error) => {
            eprintln!("error: {error}");
            return EXIT_BAD_INPUT;
        }
    };
    let mut driver = match Driver::new(config, ledger) {
        Ok(driver) => driver,
        Err(detail) => {
            eprintln!("error: {detail}");
            return EXIT_FAILED;
        }
    };
    // One run, one task: the SQLite calls run inline on the runtime's one thread, since
    // nothing else in this process waits on them.
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("error: cannot start the async runtime: {error}");
            return EXIT_FAILED;
        }
    };
    if !args.no_probe
        && let Err(detail) = runtime.block_on(driver.probe_billing())
    {
        eprintln!("error: --billing: {detail}");
        return EXIT_BAD_INPUT;
    }
    match runtime.block_on(driver.drive()) {
        Ok(WorkerEnd::WaitsForPerson(reason)) => {
            eprintln!("error: run {} waits for a person: {reason}", driver.config.run_id);
            EXIT_FAILED
        }
        Ok(WorkerEnd::ToolUnreachable(reason)) => {
            eprintln!("error: run {}: {reason}", driver.config.run_id);
            EXIT_FAILED
        }
        Ok(WorkerEnd::Exited | WorkerEnd::StoodDown(_) | WorkerEnd::Parked(_)) => EXIT_OK,
        Err(error) => {
            eprintln!(
                "error: worker {} on run {}: {error}",
                driver.config.worker_id, driver.config.run_id
            );
            EXIT_FAILED
        }
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::{WorkerArgs, WorkerConfig};

    #[derive(Parser)]
    struct Flags {
        #[command(flatten)]
        args: WorkerArgs,
    }

    fn config(extra: &[&str]) -> Result<WorkerConfig, String> {
        let mut all = vec![
            "worker",
            "--ledger",
            "/tmp/unused.sqlite",
            "--billing",
            "http://127.0.0.1:9",
            "--run",
            "run-0001",
        ];
        all.extend_from_slice(extra);
        WorkerConfig::from_args(&Flags::parse_from(all).args).map_err(|error| error.to_string())
    }

    #[test]
    fn replaced_workers_and_the_missing_hook_reach_the_setup_and_bad_ids_are_named() {
        let replacing =
            config(&["--worker-id", "w3", "--replaces", "w1", "--replaces", "w2", "--no-hook"]).expect("good flags");
        let replaced: Vec<&str> = replacing.replaces.iter().map(|worker| worker.as_str()).collect();
        assert_eq!(replaced, ["w1", "w2"]);
        assert!(replacing.tools.iter().all(|tool| !tool.reconcile), "--no-hook");
        assert!(config(&[]).expect("good flags").tools.iter().all(|tool| tool.reconcile));
        let own = config(&["--worker-id", "w3", "--replaces", "w3"]).expect_err("its own id");
        assert!(own.contains("--replaces `w3`") && own.contains("own id"), "{own}");
        let blank = config(&["--replaces", " "]).expect_err("a blank id");
        assert!(blank.contains("--replaces ` `"), "{blank}");
    }
}
