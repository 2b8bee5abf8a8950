//! `twice-sim worker`: a real process driving one run with the runtime's own machine.
//!
//! [`crate::runtime::worker::Worker`] decides; this file only carries out each
//! [`Command`] against real I/O, phase by phase, the way `simulator.rs` `perform()` does
//! against virtual ones: the ledger is a real SQLite file opened with [`Ledger::open`], the
//! tool is a real HTTP request to `twice-sim billing`, timeouts are real time, and a crash
//! is a real SIGKILL. Nothing is kept in memory that a recovery would need: a fresh process
//! on the same run starts again from the ledger and the checkpoint, as the seed asks.
//!
//! Before each phase it prints a [`Marker`] line on standard output and flushes it, so the
//! drill knows where a process was when it killed it.

use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

use reqwest::Url;

use super::billing_server::{CreditBody, IDEMPOTENCY_KEY_HEADER, Lookup};
use super::billing_store::VoidRequest;
use super::marker::{EndKind, Marker};
use super::script;
use super::{EXIT_BAD_INPUT, EXIT_FAILED, EXIT_OK, now_ms, stop_when_stdin_closes};
use crate::billing::Answer;
use crate::runtime::ToolAnswer;
use crate::ledger::{Ledger, LedgerError, ReserveRequest};
use crate::model::{self, ModelPolicy, Nudge, RunScript};
use crate::runtime::guards::Guards;
use crate::runtime::key::IdempotencyKey;
use crate::runtime::run::RunState;
use crate::runtime::worker::{Command, Input, Reconciled, Worker, WorkerSetup};

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

#[derive(Debug, clap::Args)]
pub struct WorkerArgs {
    /// The ledger file (SQLite). Created if missing.
    #[arg(long)]
    pub ledger: PathBuf,
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

/// The driver: the machine, and the real ledger, clock and HTTP client it runs against.
#[derive(Debug)]
pub struct Driver {
    config: WorkerConfig,
    machine: Worker,
    ledger: Ledger,
    client: reqwest::Client,
    script: RunScript,
    policy: ModelPolicy,
}

/// What carrying out a command led to.
enum Step {
    Feed(Box<Input>),
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
        };
        Ok(Driver {
            script: script::script_for(&config.run_id),
            policy: script::model_policy(),
            machine: Worker::new(setup),
            config,
            ledger,
            client,
        })
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

    /// Drives the run until the worker exits, stands down or (with `exit_when_parked`) parks.
    pub async fn drive(&mut self) -> Result<WorkerEnd, WorkerError> {
        let mut next = self.feed(Input::Start);
        let mut last_phase = "start";
        loop {
            let Some(command) = next else {
                return Err(WorkerError::Stalled { phase: last_phase });
            };
            last_phase = command.phase_name();
            emit(&Marker::Phase {
                name: last_phase.to_owned(),
                key: command_key(&command).map(ToString::to_string),
            });
            match self.perform(command).await? {
                Step::Feed(input) => next = self.feed(*input),
                Step::End(end) => {
                    let (kind, detail) = match &end {
                        WorkerEnd::Exited => (EndKind::Exited, self.machine.run_state().status.name().to_owned()),
                        WorkerEnd::StoodDown(reason) => (EndKind::StoodDown, reason.clone()),
                        WorkerEnd::Parked(key) => (EndKind::Parked, format!("awaiting {key}")),
                    };
                    emit(&Marker::End { kind, detail });
                    return Ok(end);
                }
            }
        }
    }

    /// Carries out one command: one visible phase (mirrors `Simulation::perform`).
    async fn perform(&mut self, command: Command) -> Result<Step, WorkerError> {
        let run = self.config.run_id.clone();
        let actor = self.config.worker_id.clone();
        let input = match command {
            Command::LoadCheckpoint => {
                let checkpoint = self.ledger.load_checkpoint(&run)?;
                let (version, state) = match &checkpoint {
                    Some(checkpoint) => match RunState::from_json(&checkpoint.state) {
                        Ok(state) => (checkpoint.version, Some(state)),
                        Err(detail) => {
                            // As the simulator does: an unreadable state starts the run over
                            // (the ledger still stops every call that already ran).
                            eprintln!("warning: run {run}: checkpoint v{}: {detail}", checkpoint.version);
                            (checkpoint.version, None)
                        }
                    },
                    None => (0, None),
                };
                Input::CheckpointLoaded { version, state }
            }
            Command::AskModel { state } => {
                if !self.config.model_delay.is_zero() {
                    tokio::time::sleep(self.config.model_delay).await;
                }
                let (decision, next, _) = model::decide(&self.script, &self.policy, &state, Nudge::default());
                Input::ModelDecided { decision, state: next }
            }
            Command::Reserve {
                key,
                call,
                side_effect,
                lease_ms,
                checkpoint_version,
            } => {
                let arguments = call.arguments.canonical();
                let request = reserve_request(
                    &self.config,
                    &key,
                    &call,
                    &arguments,
                    side_effect,
                    lease_ms,
                    checkpoint_version,
                );
                let now = now_ms();
                Input::Reserved(self.ledger.reserve(&request, now)?)
            }
            Command::CheckLedger { key } => Input::Checked(self.ledger.check(&key)?),
            Command::InsertStarted {
                key,
                call,
                side_effect,
                lease_ms,
                checkpoint_version,
            } => {
                let arguments = call.arguments.canonical();
                let request = reserve_request(
                    &self.config,
                    &key,
                    &call,
                    &arguments,
                    side_effect,
                    lease_ms,
                    checkpoint_version,
                );
                let now = now_ms();
                Input::Inserted(self.ledger.insert_started_unchecked(&request, now)?)
            }
            Command::Invoke {
                key,
                downstream_key,
                call,
                attempt,
            } => {
                if self.config.guards.ledger {
                    self.ledger.note_attempt(&key, attempt, &actor, now_ms())?;
                }
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
            Command::Backoff { after_ms, .. } => {
                tokio::time::sleep(Duration::from_millis(after_ms)).await;
                Input::BackoffElapsed
            }
            Command::RecordOutcome { key, status, result } => {
                let recorded = self
                    .ledger
                    .record_outcome(&key, status, result.as_deref(), &actor, now_ms())?;
                Input::Recorded(recorded)
            }
            Command::LogLateOutcome { key, detail } => {
                // This driver drops an attempt's request when it times out, so no answer
                // arrives late; should one ever be fed, it is logged like the simulator does.
                self.ledger.log_late_outcome(&key, &actor, &detail, now_ms())?;
                return Err(WorkerError::Stalled {
                    phase: "log late outcome",
                });
            }
            Command::Reconcile { key, .. } => Input::Reconciled(self.reconcile(&key).await?),
            Command::Compensate { key, call } => {
                let request = VoidRequest {
                    idempotency_key: key.to_string(),
                    account: call.arguments.account.clone(),
                    amount_cents: call.arguments.amount_cents,
                    intent: script::intent(&run, call.item),
                };
                // Only a naive runtime gets here (guard `no_reflex_compensation` off), and it
                // fires the void and moves on whatever billing answers: what billing did is in
                // billing's own entries, which the drill counts.
                let detail = match self.post_void(&request).await {
                    Ok(answer) => format!(
                        "the runtime compensated by itself; billing answered {}",
                        answer.receipt()
                    ),
                    Err(detail) => {
                        eprintln!("warning: run {run}: the reflex compensation of {key} got no answer: {detail}");
                        format!("the runtime compensated by itself; billing's answer did not arrive: {detail}")
                    }
                };
                if self.config.guards.ledger {
                    self.ledger
                        .note(&key, &actor, "reflex_compensation", &detail, now_ms())?;
                }
                Input::Compensated
            }
            Command::SaveCheckpoint {
                state,
                expected_version,
                still_failed,
            } => {
                let outcome = self.ledger.save_checkpoint_if_still_failed(
                    &run,
                    state.status.name(),
                    &state.to_json(),
                    &actor,
                    expected_version,
                    still_failed.as_ref(),
                    now_ms(),
                )?;
                Input::Saved(outcome)
            }
            Command::ReadRecord { key } => Input::RecordRead(self.ledger.record(&key)?),
            Command::Park { key } => return self.park(&key).await,
            Command::StandDown { reason } => return Ok(Step::End(WorkerEnd::StoodDown(reason))),
            Command::Exit => return Ok(Step::End(WorkerEnd::Exited)),
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
        &self,
        run: &str,
        key: &IdempotencyKey,
        downstream_key: Option<&IdempotencyKey>,
        call: &crate::runtime::run::ToolCall,
        attempt: u32,
    ) -> Input {
        let body = CreditBody {
            account: call.arguments.account.clone(),
            amount_cents: call.arguments.amount_cents,
            memo: call.arguments.memo.clone(),
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
                return Input::NotAttempted {
                    reason: format!("billing could not be reached: {error}"),
                };
            }
            Err(_) => {
                return Input::TimedOut {
                    key: key.clone(),
                    attempt,
                };
            }
        };
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

    /// The reconcile hook: looks the key up in billing. Found: the ledger is settled
    /// `completed` with the credit as its result (as the simulator's hook does). Not found,
    /// or billing cannot be asked: unknown.
    async fn reconcile(&mut self, key: &IdempotencyKey) -> Result<Reconciled, WorkerError> {
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
            return Ok(Reconciled::Unknown);
        };
        let result = Answer::Applied {
            credit_id: entry.id.clone(),
            balance_cents: balance_cents.unwrap_or(0),
        }
        .receipt();
        Ok(crate::runtime::operator::record_reconciled(
            &mut self.ledger,
            key,
            &result,
            now_ms(),
        )?)
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
    /// operator, a reconcile hook in another process, or the call's own late outcome).
    async fn park(&mut self, key: &IdempotencyKey) -> Result<Step, WorkerError> {
        loop {
            if self
                .ledger
                .record(key)?
                .is_some_and(|record| record.status.is_settled())
            {
                return Ok(Step::Feed(Box::new(Input::Woken)));
            }
            if self.config.exit_when_parked {
                return Ok(Step::End(WorkerEnd::Parked(key.to_string())));
            }
            tokio::time::sleep(self.config.park_poll).await;
        }
    }
}

fn reserve_request<'a>(
    config: &'a WorkerConfig,
    key: &'a IdempotencyKey,
    call: &'a crate::runtime::run::ToolCall,
    arguments: &'a str,
    side_effect: crate::runtime::tool::SideEffect,
    lease_ms: Option<u64>,
    checkpoint_version: Option<u32>,
) -> ReserveRequest<'a> {
    ReserveRequest {
        key,
        tenant: script::TENANT,
        run_id: &config.run_id,
        tool_call_id: &call.id,
        tool: &call.tool,
        side_effect,
        arguments,
        owner: &config.worker_id,
        lease_ms,
        checkpoint_version,
    }
}

fn command_key(command: &Command) -> Option<&IdempotencyKey> {
    match command {
        Command::Reserve { key, .. }
        | Command::CheckLedger { key }
        | Command::InsertStarted { key, .. }
        | Command::Invoke { key, .. }
        | Command::RecordOutcome { key, .. }
        | Command::LogLateOutcome { key, .. }
        | Command::Reconcile { key, .. }
        | Command::Compensate { key, .. }
        | Command::ReadRecord { key }
        | Command::Park { key } => Some(key),
        Command::LoadCheckpoint
        | Command::AskModel { .. }
        | Command::Backoff { .. }
        | Command::SaveCheckpoint { .. }
        | Command::StandDown { .. }
        | Command::Exit => None,
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
    let ledger = match Ledger::open(&args.ledger) {
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
    match runtime.block_on(driver.drive()) {
        Ok(_) => EXIT_OK,
        Err(error) => {
            eprintln!(
                "error: worker {} on run {}: {error}",
                driver.config.worker_id, driver.config.run_id
            );
            EXIT_FAILED
        }
    }
}
