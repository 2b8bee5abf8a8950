//! `twice-sim worker`: a real process driving one run with the runtime's own machine.
//!
//! [`twice_world::runtime::worker::Worker`] decides; this file only carries out each
//! [`Command`] against real I/O, phase by phase, the way `simulator.rs` `perform()` does
//! against virtual ones: the ledger is a real SQLite file or a real PostgreSQL database
//! ([`LedgerTarget::open`]), the tool is a real HTTP request to `twice-sim billing`,
//! timeouts are real time, and a crash is a real SIGKILL. Nothing is kept in memory that a recovery would need: a fresh process
//! on the same run starts again from the ledger and the checkpoint, as the seed asks.
//!
//! Before each phase it prints a [`Marker`] line on standard output and flushes it, so the
//! drill knows where a process was when it killed it.

use std::io::Write;
use std::time::Duration;
use twice_world::billing_tools::CreditArguments;

use reqwest::Url;

use super::billing_server::{CreditBody, IDEMPOTENCY_KEY_HEADER, Lookup};
use super::billing_store::VoidRequest;
use super::marker::{EndKind, Marker};
use super::script;
use super::{EXIT_BAD_INPUT, EXIT_FAILED, EXIT_OK, now_ms, stop_when_stdin_closes};
use crate::ledger_target::{LedgerTarget, LedgerTargetParser};
use twice_world::billing::Answer;
use twice_world::ledger::{Ledger, LedgerError};
use twice_world::model::{self, ModelPolicy, Nudge, RunScript};
use twice_world::runtime::ToolAnswer;
use twice_world::runtime::executor::{Drive, Executor, Next, Step as ExecutorStep};
use twice_world::runtime::guards::Guards;
use twice_world::runtime::key::IdempotencyKey;
use twice_world::runtime::rules::SendTiming;
use twice_world::runtime::worker::{Command, Input, Worker, WorkerSetup};

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
    /// Exit at once when standard input closes: the drill holds it, so workers never outlive it.
    #[arg(long)]
    pub stop_on_stdin_close: bool,
}

/// Why a worker process failed at run time.
#[derive(Debug, thiserror::Error)]
pub enum WorkerError {
    #[error(transparent)]
    Ledger(#[from] LedgerError),
    #[error("the worker machine stopped after `{phase}` with nothing to wait for")]
    Stalled { phase: &'static str },
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
    pub worker_id: String,
    pub run_id: String,
    pub guards: Guards,
    pub billing: Url,
    pub timeout: Duration,
    pub model_delay: Duration,
    pub park_poll: Duration,
    pub lease_ms: u64,
    pub exit_when_parked: bool,
}

impl WorkerConfig {
    /// Checks the flags; the error names the flag.
    pub fn from_args(args: &WorkerArgs) -> Result<WorkerConfig, String> {
        script::validate_run_id(&args.run).map_err(|detail| format!("--run: {detail}"))?;
        let guards = Guards::parse_list(&args.guards).map_err(|detail| format!("--guards: {detail}"))?;
        let billing = Url::parse(&args.billing).map_err(|error| format!("--billing `{}`: {error}", args.billing))?;
        if billing.scheme() != "http" || billing.host_str().is_none() {
            return Err(format!(
                "--billing `{}`: give an http:// URL with a host (this build speaks plain HTTP, for loopback)",
                args.billing
            ));
        }
        let worker_id = args
            .worker_id
            .clone()
            .unwrap_or_else(|| format!("p{}", std::process::id()));
        if worker_id.trim().is_empty()
            || worker_id.chars().count() > WORKER_ID_CHARS_MAX
            || worker_id.chars().any(char::is_control)
        {
            return Err(format!(
                "--worker-id `{worker_id}` must have 1 to {WORKER_ID_CHARS_MAX} visible characters"
            ));
        }
        let within = |flag: &str, value: u32, low: u32, high: u32| -> Result<(), String> {
            if value < low || value > high {
                return Err(format!("--{flag} {value} is outside {low}..={high}"));
            }
            Ok(())
        };
        within("timeout-ms", args.timeout_ms, 1, TIMEOUT_MS_MAX)?;
        within("model-delay-ms", args.model_delay_ms, 0, MODEL_DELAY_MS_MAX)?;
        within("park-poll-ms", args.park_poll_ms, PARK_POLL_MS_MIN, PARK_POLL_MS_MAX)?;
        within("lease-ms", args.lease_ms, 1, LEASE_MS_MAX)?;
        Ok(WorkerConfig {
            worker_id,
            run_id: args.run.clone(),
            guards,
            billing,
            timeout: Duration::from_millis(u64::from(args.timeout_ms)),
            model_delay: Duration::from_millis(u64::from(args.model_delay_ms)),
            park_poll: Duration::from_millis(u64::from(args.park_poll_ms)),
            lease_ms: u64::from(args.lease_ms),
            exit_when_parked: args.exit_when_parked,
        })
    }
}

/// Prints markers, flushed at once. A closed standard output (nobody reading) is ignored:
/// the markers are for the drill, the run does not depend on them.
fn emit(marker: &Marker) {
    let mut stdout = std::io::stdout().lock();
    let _ = writeln!(stdout, "{marker}");
    let _ = stdout.flush();
}

/// The driver: the machine, the runtime's executor on a real ledger file, and the real clock
/// and HTTP client the rest runs against.
#[derive(Debug)]
pub struct Driver {
    config: WorkerConfig,
    machine: Worker,
    executor: Executor,
    client: reqwest::Client,
    script: RunScript,
    policy: ModelPolicy,
    /// Attempts in a row that could not reach billing at all (connection refused).
    unreachable_in_a_row: u32,
    /// Whether any attempt of this process reached billing.
    reached_billing: bool,
    /// The phases run, in order (for the test that holds this driver and the simulator to
    /// the same machine).
    phases: Vec<&'static str>,
}

/// What carrying out a command led to.
enum Step {
    Feed(Box<Input>),
    /// Nothing to feed: the machine waits on as it was (a late answer was logged).
    Wait,
    End(WorkerEnd),
}

impl Driver {
    pub fn new(config: WorkerConfig, ledger: Ledger) -> Result<Driver, String> {
        let client = reqwest::Client::builder()
            // Loopback only: an HTTP_PROXY in the environment must not reroute billing calls.
            .no_proxy()
            .connect_timeout(config.timeout)
            .build()
            .map_err(|error| format!("cannot build the HTTP client: {error}"))?;
        let setup = WorkerSetup {
            worker_id: config.worker_id.clone(),
            run_id: config.run_id.clone(),
            tenant: script::TENANT.to_owned(),
            guards: config.guards,
            tools: script::tools(),
            lease_ms: config.lease_ms,
            recovery_attempts_max: None,
        };
        Ok(Driver {
            script: script::script_for(&config.run_id),
            policy: script::model_policy(),
            // This driver sends as soon as a reservation says the tool runs: attempt 1's send
            // fence rides in the reservation's transaction (decision table 5).
            executor: Executor::new(ledger, &setup).with_send_timing(SendTiming::RightAfterReserving),
            machine: Worker::new(setup),
            config,
            client,
            unreachable_in_a_row: 0,
            reached_billing: false,
            phases: Vec::new(),
        })
    }

    /// The phases this process ran, in order.
    pub fn phases(&self) -> &[&'static str] {
        &self.phases
    }

    /// The ledger connection (for tests that read what the run wrote).
    pub fn ledger(&self) -> &Ledger {
        self.executor.ledger()
    }

    /// Feeds one input to the machine and reports the guards that held.
    fn feed(&mut self, input: Input) -> Option<Command> {
        let next = self.machine.handle(now_ms(), input);
        for note in self.machine.take_notes() {
            emit(&Marker::Guard {
                guard: note.guard.name().to_owned(),
                key: note.key,
            });
        }
        next
    }

    /// Asks billing whether it is there (`GET /v1/stats`), as `serve` checks its target at
    /// start: a worker pointed at nothing says so at once instead of failing every call.
    pub async fn probe_billing(&self) -> Result<(), String> {
        let url = self.endpoint("/v1/stats");
        // Its own, longer limit: the attempt timeout is tuned for a credit on a busy billing,
        // and a worker must not refuse to start because one answer came slowly.
        let timeout = Duration::from_millis(PROBE_TIMEOUT_MS).max(self.config.timeout);
        match self.client.get(url).timeout(timeout).send().await {
            Ok(response) if response.status().is_success() => Ok(()),
            Ok(response) => Err(format!(
                "billing at {} answered GET /v1/stats with {}: is it a twice-sim billing server?",
                self.config.billing,
                response.status()
            )),
            Err(error) => Err(format!("billing at {} cannot be reached: {error}", self.config.billing)),
        }
    }

    /// Drives the run until the worker exits, stands down, waits for a person, gives up on an
    /// unreachable billing, or (with `exit_when_parked`) parks.
    pub async fn drive(&mut self) -> Result<WorkerEnd, WorkerError> {
        let mut next = self.feed(Input::Start);
        let mut last_phase = "start";
        loop {
            let Some(command) = next else {
                return Err(WorkerError::Stalled { phase: last_phase });
            };
            last_phase = command.phase_name();
            self.phases.push(last_phase);
            emit(&Marker::Phase {
                name: last_phase.to_owned(),
                key: command.key().map(ToString::to_string),
            });
            match self.perform(command).await? {
                Step::Feed(input) => next = self.feed(*input),
                Step::Wait => return Err(WorkerError::Stalled { phase: last_phase }),
                Step::End(end) => {
                    let (kind, detail) = match &end {
                        WorkerEnd::Exited => (EndKind::Exited, self.machine.run_state().status.name().to_owned()),
                        WorkerEnd::StoodDown(reason) => (EndKind::StoodDown, reason.clone()),
                        WorkerEnd::Parked(key) => (EndKind::Parked, format!("awaiting {key}")),
                        WorkerEnd::WaitsForPerson(reason) => (EndKind::WaitsForPerson, reason.clone()),
                        WorkerEnd::ToolUnreachable(reason) => (EndKind::ToolUnreachable, reason.clone()),
                    };
                    emit(&Marker::End { kind, detail });
                    return Ok(end);
                }
            }
        }
    }

    /// Carries out one command: the executor does its ledger part; this driver does the
    /// model, the HTTP call, the waiting and the process's end.
    async fn perform(&mut self, command: Command) -> Result<Step, WorkerError> {
        let step = self.executor.perform(command, now_ms())?;
        self.next_of(step).await
    }

    async fn next_of(&mut self, step: ExecutorStep) -> Result<Step, WorkerError> {
        let drive = match step.next {
            Next::Feed(input) => return Ok(Step::Feed(Box::new(input))),
            Next::Nothing => return Ok(Step::Wait),
            Next::Drive(drive) => drive,
        };
        let run = self.config.run_id.clone();
        let input = match drive {
            Drive::AskModel { state } => {
                if self.unreachable_in_a_row >= UNREACHABLE_IN_A_ROW_MAX {
                    // Nothing is reserved between calls: the run is left exactly as its
                    // checkpoint says, for a worker that can reach billing.
                    return Ok(Step::End(WorkerEnd::ToolUnreachable(format!(
                        "billing at {} could not be reached for {} calls in a row; stopped before calling again",
                        self.config.billing, self.unreachable_in_a_row
                    ))));
                }
                if !self.config.model_delay.is_zero() {
                    tokio::time::sleep(self.config.model_delay).await;
                }
                match model::decide(&self.script, &self.policy, &state, Nudge::default()) {
                    Ok((decision, next, _)) => Input::ModelDecided { decision, state: next },
                    Err(error) => Input::StateUnusable {
                        detail: error.to_string(),
                    },
                }
            }
            Drive::Send {
                key,
                downstream_key,
                call,
                attempt,
            } => {
                let input = self
                    .send_credit(&run, &key, downstream_key.as_ref(), &call, attempt)
                    .await;
                let kind = match &input {
                    Input::Response { answer, .. } => match answer {
                        ToolAnswer::Applied { .. } => "applied",
                        ToolAnswer::Repeat { .. } => "repeat",
                        ToolAnswer::Rejected { .. } => "rejected",
                    },
                    Input::NotAttempted { .. } => "not_attempted",
                    _ => "timed_out",
                };
                emit(&Marker::Answer {
                    key: key.to_string(),
                    kind: kind.to_owned(),
                });
                input
            }
            Drive::Backoff { after_ms, .. } | Drive::WaitToLookAgain { after_ms, .. } => {
                tokio::time::sleep(Duration::from_millis(after_ms)).await;
                Input::BackoffElapsed
            }
            Drive::LookUp { key, .. } => {
                let found = self.look_up(&key).await;
                let step = self.executor.reconciled(
                    key,
                    found
                        .as_ref()
                        .map(|(receipt, finding)| (receipt.as_str(), finding.as_str())),
                    now_ms(),
                )?;
                return Box::pin(self.next_of(step)).await;
            }
            Drive::Undo { key, call } => {
                let arguments = CreditArguments::of_call(&call);
                let request = VoidRequest {
                    idempotency_key: key.to_string(),
                    account: arguments.account,
                    amount_cents: arguments.amount_cents,
                    intent: script::intent(&run, call.item),
                };
                // Only a naive runtime gets here (guard `no_reflex_compensation` off), and it
                // fires the void and moves on whatever billing answers: what billing did is in
                // billing's own entries, which the drill counts.
                let detail = match self.post_void(&request).await {
                    Ok(answer) => format!("billing answered {}", answer.receipt()),
                    Err(detail) => {
                        eprintln!("warning: run {run}: the reflex compensation of {key} got no answer: {detail}");
                        format!("billing's answer did not arrive: {detail}")
                    }
                };
                let step = self.executor.undone(key, &detail, now_ms())?;
                return Box::pin(self.next_of(step)).await;
            }
            Drive::Park { key } => return self.park(&key).await,
            Drive::StandDown { reason } => return Ok(Step::End(WorkerEnd::StoodDown(reason))),
            Drive::WaitForPerson { reason } => return Ok(Step::End(WorkerEnd::WaitsForPerson(reason))),
            Drive::Exit => {
                if !self.reached_billing && self.unreachable_in_a_row > 0 {
                    return Ok(Step::End(WorkerEnd::ToolUnreachable(format!(
                        "billing at {} was never reached; the run ended without a single call arriving",
                        self.config.billing
                    ))));
                }
                return Ok(Step::End(WorkerEnd::Exited));
            }
        };
        Ok(Step::Feed(Box::new(input)))
    }

    fn endpoint(&self, path: &str) -> Url {
        let mut url = self.config.billing.clone();
        url.set_path(path);
        url.set_query(None);
        url
    }

    /// One attempt of `issue_credit`. Nothing sent (billing unreachable) is a refusal before
    /// sending; a timeout, a broken connection or an answer billing could not give is an
    /// unknown — the request may have landed.
    async fn send_credit(
        &mut self,
        run: &str,
        key: &IdempotencyKey,
        downstream_key: Option<&IdempotencyKey>,
        call: &twice_world::runtime::run::ToolCall,
        attempt: u32,
    ) -> Input {
        let arguments = CreditArguments::of_call(call);
        let body = CreditBody {
            account: arguments.account,
            amount_cents: arguments.amount_cents,
            memo: arguments.memo,
            intent: script::intent(run, call.item),
        };
        let mut request = self
            .client
            .post(self.endpoint("/v1/credits"))
            .timeout(self.config.timeout)
            .json(&body);
        if let Some(key) = downstream_key {
            request = request.header(IDEMPOTENCY_KEY_HEADER, key.as_str());
        }
        let response = match request.send().await {
            Ok(response) => response,
            // Failing to connect means nothing left: the tool refused before sending.
            Err(error) if error.is_connect() => {
                self.unreachable_in_a_row += 1;
                return Input::NotAttempted {
                    reason: format!("billing could not be reached: {error}"),
                };
            }
            Err(_) => {
                self.reached_billing = true;
                self.unreachable_in_a_row = 0;
                return Input::TimedOut {
                    key: key.clone(),
                    attempt,
                };
            }
        };
        self.reached_billing = true;
        self.unreachable_in_a_row = 0;
        let server_error = response.status().is_server_error();
        match response.bytes().await {
            Ok(bytes) if !server_error => match serde_json::from_slice::<Answer>(&bytes) {
                Ok(answer) => Input::Response {
                    key: key.clone(),
                    attempt,
                    answer: answer.to_tool_answer(),
                },
                Err(_) => Input::TimedOut {
                    key: key.clone(),
                    attempt,
                },
            },
            _ => Input::TimedOut {
                key: key.clone(),
                attempt,
            },
        }
    }

    /// The reconcile hook's read: looks the key up in billing. Found: the receipt to record
    /// and the credit, in words. Not found, or billing cannot be asked: nothing.
    async fn look_up(&self, key: &IdempotencyKey) -> Option<(String, String)> {
        let mut url = self.endpoint("/v1/credits");
        url.query_pairs_mut().append_pair("idempotency_key", key.as_str());
        let lookup = match self.client.get(url).timeout(self.config.timeout).send().await {
            Ok(response) if response.status().is_success() => response.json::<Lookup>().await.ok(),
            _ => None,
        };
        let Some(Lookup {
            credit: Some(entry),
            balance_cents,
            ..
        }) = lookup
        else {
            return None;
        };
        let receipt = Answer::Applied {
            credit_id: entry.id.clone(),
            balance_cents: balance_cents.unwrap_or(0),
        }
        .receipt();
        Some((receipt, format!("credit {}", entry.id)))
    }

    async fn post_void(&self, request: &VoidRequest) -> Result<Answer, String> {
        let response = self
            .client
            .post(self.endpoint("/v1/credits/void"))
            .timeout(self.config.timeout)
            .json(request)
            .send()
            .await
            .map_err(|error| error.to_string())?;
        let status = response.status();
        let bytes = response.bytes().await.map_err(|error| error.to_string())?;
        serde_json::from_slice::<Answer>(&bytes).map_err(|_| {
            format!(
                "billing answered {status}: {}",
                String::from_utf8_lossy(&bytes).chars().take(200).collect::<String>()
            )
        })
    }

    /// `on_indeterminate: pause`: waits until the call is settled in the ledger (by an
    /// operator, a reconcile hook in another process, or the call's own late outcome), and
    /// every so often looks again (asks the hook anew): a twin that asked too early, while
    /// the call's own worker was still alive, must not wait forever once that worker is gone.
    async fn park(&mut self, key: &IdempotencyKey) -> Result<Step, WorkerError> {
        let mut polls: u32 = 0;
        let mut look_again_after: u32 = LOOK_AGAIN_AFTER_POLLS;
        loop {
            if self
                .executor
                .ledger()
                .record(key)?
                .is_some_and(|record| record.status.is_settled())
            {
                return Ok(Step::Feed(Box::new(Input::Woken)));
            }
            if self.config.exit_when_parked {
                return Ok(Step::End(WorkerEnd::Parked(key.to_string())));
            }
            if polls >= look_again_after {
                return Ok(Step::Feed(Box::new(Input::LookAgain)));
            }
            tokio::time::sleep(self.config.park_poll).await;
            polls += 1;
            // Looked at again later each time, up to a bound: a call nobody can settle costs
            // the hook a lookup now and then, not one per poll.
            if polls == look_again_after {
                look_again_after = look_again_after.saturating_mul(2).min(LOOK_AGAIN_AFTER_POLLS_MAX);
            }
        }
    }
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
