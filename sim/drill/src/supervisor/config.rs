//! A drill's flags and their checked settings, and why a drill could not give a verdict.

use std::path::PathBuf;
use std::time::Duration;

use twice_ledger_postgres::PostgresUrl;
use twice_world::billing::{KeyHandling, Terms};
use twice_world::ledger::LedgerError;
use twice_world::runtime::guards::Guards;

use crate::flags::{FlagError, within};
use crate::hosts::{HOSTS_MAX, HostsError};
use crate::ledger_target::{LedgerTarget, LedgerTargetParser};

use super::{
    DEADLINE_S_MAX, FAULT_MS_MAX, FAULT_MS_MIN, KILLS_MAX, LATENCY_MS_MAX, MODEL_DELAY_MS_MAX, PARALLEL_MAX,
    PARTITIONS_MAX, PAUSES_MAX, RUNS_MAX, TIMEOUT_MS_MAX,
};

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
    /// Billing forgets a key this long after its credit (its workers' tool declares the same):
    /// a recovery past it finds nothing under the key. Default: keys are kept for ever.
    #[arg(long)]
    pub key_retention_ms: Option<u64>,
    /// Billing's lookups show a credit only this long after it landed (its workers' tool
    /// declares the same). Default: at once.
    #[arg(long)]
    pub lookup_settle_ms: Option<u64>,
    /// Billing's send window: a credit request arriving later than this after its stamp (the
    /// ledger's write of the send) is refused and pays nothing. Default: `--latency-ms` plus
    /// 500 ms, for a busy machine's delays.
    #[arg(long)]
    pub request_window_ms: Option<u32>,
    /// What every worker's tool adds to billing's settle time and send window when it declares
    /// its own settle time (counted from the send), for clocks that are not one: the drill's
    /// hosts share this machine's, so 0 unless asked.
    #[arg(long, default_value_t = DECLARED_SETTLE_MARGIN_MS)]
    pub settle_margin_ms: u64,
    /// Every worker's `recovery_attempts_max`: recoveries of a run that may fail before it is
    /// dead-lettered. Default: no limit.
    #[arg(long)]
    pub recovery_attempts_max: Option<u32>,
    /// The workers' tool declares no reconcile hook (a provider that cannot be asked): a call
    /// left unknown waits for the drill's operator, who checks billing by hand.
    #[arg(long)]
    pub no_hook: bool,
    /// Start each process that recovers a run replacing the run's processes that ended
    /// (`WorkerSetup::replacing`): a killed worker's `started` call is recorded
    /// `recovered_unknown`, and the operator settles it without acknowledging a request in
    /// flight. With `--no-hook`: a crash without a reconcile hook.
    #[arg(long)]
    pub replacing: bool,
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
    /// Billing's terms, given to billing and declared by every worker's tool.
    pub terms: Terms,
    /// Billing's send window (`--request-window-ms`): no request stamped earlier than this
    /// before it arrives pays.
    pub request_window_ms: u32,
    /// What the workers' tool adds to billing's settle time and send window (`--settle-margin-ms`).
    pub settle_margin_ms: u64,
    pub recovery_attempts_max: Option<u32>,
    /// The workers' tool declares a reconcile hook (not `--no-hook`).
    pub hook: bool,
    /// `--replacing`.
    pub replacing: bool,
}

impl DrillConfig {
    pub fn from_args(args: &DrillArgs) -> Result<DrillConfig, FlagError> {
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
                return Err(FlagError::invalid(
                    "ledger",
                    "--ledger: the drill makes its own ledger file in its folder (--dir); --ledger takes a postgres:// URL",
                ));
            }
        };
        let hosts = args.hosts.unwrap_or(0);
        if hosts > 0 && ledger.is_none() {
            return Err(FlagError::invalid(
                "hosts",
                "--hosts: workers on other hosts cannot share a SQLite file; give --ledger postgres://USER@HOST/DATABASE",
            ));
        }
        if args.partitions > 0 && hosts < 2 {
            return Err(FlagError::invalid(
                "partitions",
                format!(
                    "--partitions {}: a cut-off worker's twin runs on another host; give --hosts 2 or more",
                    args.partitions
                ),
            ));
        }
        let (terms, request_window_ms) = checked_terms(args)?;
        if args.recovery_attempts_max == Some(0) {
            return Err(FlagError::invalid(
                "recovery-attempts-max",
                "--recovery-attempts-max 0: a run would be dead-lettered before its first recovery",
            ));
        }
        let guards = Guards::parse_list(&args.guards)
            .map_err(|detail| FlagError::invalid("guards", format!("--guards: {detail}")))?;
        let key_handling = args
            .keys
            .parse::<KeyHandling>()
            .map_err(|error| FlagError::invalid("keys", format!("--keys: {error}")))?;
        if let Some(dir) = &args.dir
            && dir.exists()
        {
            let empty = std::fs::read_dir(dir)
                .map_err(|error| FlagError::invalid("dir", format!("--dir {}: {error}", dir.display())))?
                .next()
                .is_none();
            if !empty {
                return Err(FlagError::invalid(
                    "dir",
                    format!(
                        "--dir {}: the folder is not empty; a drill starts from a new ledger and a new billing database",
                        dir.display()
                    ),
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
            terms,
            request_window_ms,
            settle_margin_ms: args.settle_margin_ms,
            recovery_attempts_max: args.recovery_attempts_max,
            hook: !args.no_hook,
            replacing: args.replacing,
        })
    }
}

impl DrillConfig {
    /// Every process that ended is replaced by the one that recovers its run, and no process
    /// lives on beside another on one run (no duplicates, no cut-off or paused twins' elders):
    /// then every `started` call the operator meets is one a replacing worker recorded
    /// `recovered_unknown` first.
    pub fn every_end_replaced(&self) -> bool {
        self.replacing && !self.duplicates && self.partitions == 0 && self.pauses == 0
    }

    /// Billing's terms as every worker's tool declares them (see [`declared_terms`]).
    pub fn declared_terms(&self) -> Terms {
        declared_terms(self.terms, self.request_window_ms, self.settle_margin_ms)
    }
}

/// Billing's terms and send window from the flags, checked with what the workers' tool will
/// declare of them; the error names the flag.
fn checked_terms(args: &DrillArgs) -> Result<(Terms, u32), FlagError> {
    let terms = Terms {
        key_retention_ms: args.key_retention_ms,
        lookup_settle_ms: args.lookup_settle_ms,
    };
    if let Some(problem) = terms.problem() {
        return Err(FlagError::invalid(
            "key-retention-ms",
            format!("--key-retention-ms / --lookup-settle-ms: {problem}"),
        ));
    }
    let request_window_ms = crate::billing_server::request_window(args.request_window_ms, args.latency_ms)
        .map_err(|problem| FlagError::invalid("request-window-ms", problem))?;
    let declared = declared_terms(terms, request_window_ms, args.settle_margin_ms);
    if let Some(problem) = declared.problem() {
        return Err(FlagError::invalid(
            "key-retention-ms",
            format!(
                "--key-retention-ms must be more than --lookup-settle-ms plus the send window ({request_window_ms} ms, \
                 --request-window-ms) plus --settle-margin-ms ({} ms): what the workers' tool declares as its \
                 settle time: {problem}",
                args.settle_margin_ms
            ),
        ));
    }
    Ok((terms, request_window_ms))
}

/// What a worker's tool adds to billing's settle time and send window unless
/// `--settle-margin-ms` says otherwise: nothing, since the drill's processes and hosts read one
/// clock. Across machines it would be their clocks' greatest skew.
pub const DECLARED_SETTLE_MARGIN_MS: u64 = 0;

/// What the workers' tool declares of billing's `terms`: the same retention, and a settle
/// time counted from the send, not from the credit. Billing shows a credit `lookup_settle_ms`
/// after it applied it, and applies a stamped request no later than `request_window_ms` after
/// its stamp (the ledger's write of the send; it refuses later ones), so once both have passed
/// since that write, nothing under the key proves that no request with it will ever pay.
/// Before billing enforced the window, the declaration added `--latency-ms` and a margin for a
/// busy machine instead, and a request held by a paused or cut-off worker could arrive after
/// the hook took "nothing there" as proof: a double credit with every guard on (issue 23).
fn declared_terms(terms: Terms, request_window_ms: u32, margin_ms: u64) -> Terms {
    Terms {
        key_retention_ms: terms.key_retention_ms,
        lookup_settle_ms: terms.lookup_settle_ms.map(|settle| {
            settle
                .saturating_add(u64::from(request_window_ms))
                .saturating_add(margin_ms)
        }),
    }
}

/// Why a drill could not give a verdict.
#[derive(Debug, thiserror::Error)]
pub enum DrillError {
    #[error("{0}")]
    Setup(String),
    #[error("interrupted: every process the drill started was killed and reaped")]
    Interrupted,
    #[error("the drill did not finish within {seconds} s ({} still being driven)", runs_words(.active))]
    Deadline { seconds: u64, active: usize },
    #[error(
        "run {run} used {} without finishing; last errors: {errors}",
        processes_words(.processes)
    )]
    RunStuck {
        run: String,
        processes: u32,
        errors: String,
    },
    #[error("a worker refused its flags (a bug in the drill): {0}")]
    WorkerRefused(String),
    #[error("billing stopped while the drill still needed it: {0}")]
    BillingGone(String),
    /// Billing did not stop cleanly once the drill was done with it.
    #[error("billing stopped while the drill still needed it: {0}")]
    BillingStop(#[from] super::processes::BillingStopError),
    /// The hosts could not be made (not root, no `ip`, namespaces left over) or changed.
    #[error(transparent)]
    Hosts(#[from] HostsError),
    /// The ledger the drill was given cannot be opened (no server there, a bad schema).
    #[error("--ledger: {0}")]
    LedgerRefused(LedgerError),
    #[error(transparent)]
    Ledger(#[from] twice_world::ledger::LedgerError),
    #[error(transparent)]
    Billing(#[from] crate::billing_store::StoreError),
}

/// `1 run`, `3 runs`.
fn runs_words(active: &usize) -> String {
    twice_world::runtime::worker::counted(*active as u64, "run", "runs")
}

/// `1 worker process`, `3 worker processes`.
fn processes_words(processes: &u32) -> String {
    twice_world::runtime::worker::counted(u64::from(*processes), "worker process", "worker processes")
}
