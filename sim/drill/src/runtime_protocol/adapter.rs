//! `twice-sim runtime-adapter`: Twice's own runtime speaking the protocol — the reference every
//! other runtime is held to, and the proof that the protocol is faithful: run through it with
//! the guards a level has on, it must come to every expressible tape's own verdict.
//!
//! It is a driver of the library's public parts, as any application's would be: the sans-IO
//! [`Worker`] machine decides, the [`Executor`] carries out its ledger commands on a real
//! SQLite file, and this file does the rest — it marks every step the machine takes and waits
//! for Twice's go-ahead, asks Twice's model over the protocol, and calls billing over HTTP
//! ([`tools`]). Its clock is the level's, as every message from Twice gives it.

mod tools;

use std::io::{BufRead, Write};

use serde_json::{Value, json};

use super::messages::{PROTOCOL_VERSION, markable};
use crate::{EXIT_BAD_INPUT, EXIT_FAILED, EXIT_OK};
use twice_world::ledger::Ledger;
use twice_world::runtime::executor::{Drive, Executor, Next, Step};
use twice_world::runtime::guards::{Guard, Guards};
use twice_world::runtime::run::{Arguments, Decision, RunState, Told, ToolCall};
use twice_world::runtime::tool::ToolDeclaration;
use twice_world::runtime::worker::{Command, Input, Phase, Worker, WorkerSetup, WorkerState};

/// The name this runtime gives in its hello.
pub const RUNTIME_NAME: &str = concat!(
    "twice-runtime ",
    env!("CARGO_PKG_VERSION"),
    " (twice-sim runtime-adapter)"
);

#[derive(Debug, clap::Args)]
pub struct AdapterArgs {
    /// The guards to implement and claim: `level` (exactly those the level has on, as Twice's
    /// hello says: every tape's own verdict must come out), `all`, `none`, or a comma-separated list.
    #[arg(long, default_value = "level")]
    pub guards: String,
}

/// Why the adapter stopped.
#[derive(Debug, thiserror::Error)]
enum AdapterError {
    #[error("Twice's line {0} is not a message this adapter reads")]
    Unreadable(String),
    #[error("standard input closed: Twice is gone")]
    Closed,
    #[error("{0}")]
    Io(#[from] std::io::Error),
    #[error(transparent)]
    Ledger(#[from] twice_world::ledger::LedgerError),
    #[error("the machine stopped after `{0}` with nothing to do")]
    Stalled(Phase),
    #[error("{0}")]
    Setup(String),
    #[error("the worker refused its input: {0}")]
    Input(#[from] twice_world::runtime::worker::InputError),
}

/// The protocol's two ends, on standard input and output.
struct Line {
    input: std::io::StdinLock<'static>,
}

impl Line {
    fn send(message: &Value) -> Result<(), AdapterError> {
        let mut stdout = std::io::stdout().lock();
        writeln!(stdout, "{message}")?;
        stdout.flush()?;
        Ok(())
    }

    fn receive(&mut self) -> Result<Value, AdapterError> {
        let mut line = String::new();
        if self.input.read_line(&mut line)? == 0 {
            return Err(AdapterError::Closed);
        }
        serde_json::from_str(&line).map_err(|_| AdapterError::Unreadable(line.trim().to_owned()))
    }

    /// Waits for a message of type `kind`; its `now_ms`.
    fn expect(&mut self, kind: &str) -> Result<(Value, u64), AdapterError> {
        let message = self.receive()?;
        if message["type"] != kind {
            return Err(AdapterError::Unreadable(message.to_string()));
        }
        let now_ms = message["now_ms"].as_u64().unwrap_or(0);
        Ok((message, now_ms))
    }
}

/// Runs one worker through the protocol.
pub fn adapter_command(args: &AdapterArgs) -> u8 {
    let mut line = Line {
        input: std::io::stdin().lock(),
    };
    match drive(args, &mut line) {
        Ok(()) => EXIT_OK,
        Err(AdapterError::Setup(detail)) => {
            eprintln!("error: {detail}");
            EXIT_BAD_INPUT
        }
        Err(error) => {
            eprintln!("error: {error}");
            EXIT_FAILED
        }
    }
}

/// The worker's setup from Twice's hello.
fn setup_of(args: &AdapterArgs, hello: &Value) -> Result<(WorkerSetup, String, String), AdapterError> {
    let text = |field: &str| -> Result<String, AdapterError> {
        hello[field]
            .as_str()
            .map(str::to_owned)
            .ok_or_else(|| AdapterError::Setup(format!("Twice's hello has no `{field}`")))
    };
    if hello["protocol"].as_u64() != Some(u64::from(PROTOCOL_VERSION)) {
        return Err(AdapterError::Setup(format!(
            "Twice speaks protocol {}; this adapter speaks {PROTOCOL_VERSION}",
            hello["protocol"]
        )));
    }
    let guards = if args.guards == "level" {
        let mut guards = Guards::all_off();
        for name in hello["guards"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
        {
            let guard = Guard::from_name(name).ok_or_else(|| {
                AdapterError::Setup(format!("the level has a guard `{name}` this adapter does not know"))
            })?;
            guards.set(guard, true);
        }
        guards
    } else {
        Guards::parse_list(&args.guards).map_err(|error| AdapterError::Setup(format!("--guards: {error}")))?
    };
    let tools: Vec<ToolDeclaration> = serde_json::from_value(hello["tools"].clone())
        .map_err(|error| AdapterError::Setup(format!("Twice's hello: tools: {error}")))?;
    let mut setup = WorkerSetup::new(text("worker")?, text("run")?, tools)
        .with_tenant(text("tenant")?)
        .with_guards(guards)
        .with_lease_ms(hello["lease_ms"].as_u64().unwrap_or(150))
        .with_words(twice_world::text::WORDS);
    setup.recovery_attempts_max = hello["recovery_attempts_max"]
        .as_u64()
        .and_then(|limit| u32::try_from(limit).ok());
    Ok((setup, text("ledger")?, text("billing")?))
}

fn drive(args: &AdapterArgs, line: &mut Line) -> Result<(), AdapterError> {
    let (hello, mut now_ms) = line.expect("hello")?;
    let (setup, ledger_path, billing) = setup_of(args, &hello)?;
    let guards = *setup.guards();
    let marks: Vec<&str> = Phase::ALL
        .into_iter()
        .filter(|phase| markable(*phase) && *phase != Phase::Send)
        .map(Phase::name)
        .collect();
    Line::send(&json!({
        "type": "hello",
        "protocol": PROTOCOL_VERSION,
        "runtime": RUNTIME_NAME,
        "guards": Guard::EVERY.into_iter().filter(|guard| guards.is_on(*guard)).map(Guard::name).collect::<Vec<_>>(),
        "marks": marks,
    }))?;
    let ledger = Ledger::open(std::path::Path::new(&ledger_path))?;
    let http_timeout_ms = hello["http_timeout_ms"].as_u64().unwrap_or(30_000);
    let billing = tools::Billing::new(&billing, http_timeout_ms)
        .map_err(AdapterError::Setup)?
        .with_tools(&setup.tools);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(AdapterError::Io)?;
    // Sends right when the reservation says the tool runs would fold the fence into the
    // reservation; the simulator keeps them apart (a fault may land between), and so does this.
    let mut executor = Executor::new(ledger, &setup);
    let mut machine = Worker::new(setup).map_err(|error| AdapterError::Setup(format!("Twice's hello: {error}")))?;
    let mut next = machine.handle(now_ms, Input::Start)?;
    let mut last = Phase::Start;
    loop {
        machine.take_notes();
        machine.take_fired();
        let Some(command) = next.take() else {
            return Err(AdapterError::Stalled(last));
        };
        last = command.phase();
        if last != Phase::ModelDecides {
            now_ms = mark(line, &machine, &command)?;
        }
        let step = executor.perform(command, now_ms)?;
        let Some(input) = follow(line, &mut executor, &billing, &runtime, &machine, step, &mut now_ms)? else {
            return Ok(());
        };
        if machine.is_done() {
            return Ok(());
        }
        next = machine.handle(now_ms, input)?;
        if machine.state() == WorkerState::Exited && next.is_none() {
            return Ok(());
        }
    }
}

/// Marks the step `command` is about to take; waits for `go`. Returns the level's time.
fn mark(line: &mut Line, machine: &Worker, command: &Command) -> Result<u64, AdapterError> {
    let call = machine.current_call().map(|(call, _, _)| call.id.clone());
    let mut message = json!({ "type": "mark", "phase": command.phase_name() });
    if let Some(key) = command.key() {
        message["key"] = json!(key.as_str());
        if let Some(call) = call {
            message["call"] = json!(call);
        }
    }
    match command {
        Command::Invoke { attempt, .. } => message["attempt"] = json!(attempt),
        Command::RecordOutcome { outcome, .. } => message["status"] = json!(outcome.to_string()),
        Command::Exit => message["status"] = json!(machine.run_state().status.name()),
        _ => {}
    }
    Line::send(&message)?;
    Ok(line.expect("go")?.1)
}

/// Carries out what the executor left to the driver; the machine's next input (`None`: the
/// worker is done).
fn follow(
    line: &mut Line,
    executor: &mut Executor,
    billing: &tools::Billing,
    runtime: &tokio::runtime::Runtime,
    machine: &Worker,
    step: Step,
    now_ms: &mut u64,
) -> Result<Option<Input>, AdapterError> {
    let drive = match step.next {
        Next::Feed(input) => return Ok(Some(input)),
        Next::Nothing => return Err(AdapterError::Stalled(Phase::LogLateOutcome)),
        Next::Drive(drive) => drive,
    };
    let input = match drive {
        Drive::AskModel { state } => {
            let (decision, next) = ask_model(line, &state, now_ms)?;
            Input::ModelDecided { decision, state: next }
        }
        Drive::Send {
            key,
            downstream_key,
            call,
            attempt,
            ..
        } => runtime.block_on(billing.send(machine.run_id(), &key, downstream_key.as_ref(), &call, attempt)),
        // The level's clock is Twice's: the wait is over when Twice lets the next step go.
        Drive::Backoff { .. } | Drive::WaitToLookAgain { .. } => Input::BackoffElapsed,
        Drive::LookUp { key, .. } => {
            let found = runtime.block_on(billing.look_up(&key));
            let step = executor.reconciled(
                key,
                found
                    .as_ref()
                    .map(|(receipt, finding)| (receipt.as_str(), finding.as_str())),
                *now_ms,
            )?;
            return follow(line, executor, billing, runtime, machine, step, now_ms);
        }
        Drive::Undo { key, call } => {
            let words = runtime.block_on(billing.void_by_key(machine.run_id(), &key, &call));
            let step = executor.undone(key, &words, *now_ms)?;
            return follow(line, executor, billing, runtime, machine, step, now_ms);
        }
        Drive::Park { key } => {
            let (_, now) = line.expect("wake")?;
            *now_ms = now;
            let settled = executor
                .ledger()
                .record(&key)?
                .is_some_and(|record| record.status.is_settled());
            if settled { Input::Woken } else { Input::LookAgain }
        }
        Drive::StandDown { .. } | Drive::WaitForPerson { .. } | Drive::Exit => return Ok(None),
    };
    Ok(Some(input))
}

/// Asks Twice's model with the run's transcript; its decision and the run's state after it
/// (as the model leaves it: a call made for the same step again, or for the next one).
fn ask_model(line: &mut Line, state: &RunState, now_ms: &mut u64) -> Result<(Decision, RunState), AdapterError> {
    let transcript: Vec<Value> = state
        .transcript
        .iter()
        .map(|(call, told)| {
            let (kind, content) = match told {
                Told::Result { result } => ("result", result.clone()),
                Told::Failed { reason } => ("failed", reason.clone()),
                _ if told.compensated() => ("compensated", String::new()),
                _ if told.did_not_take_effect() => ("did_not_take_effect", String::new()),
                // A telling this protocol has no kind for (`Told` may grow): nothing of the call
                // stands, as for a failure, and the runtime's own form says what it was.
                other => ("failed", format!("{other:?}")),
            };
            match told.operator_decision() {
                Some((operator, reason)) => {
                    json!({ "call": call, "told": kind, "content": reason, "operator": operator })
                }
                None => json!({ "call": call, "told": kind, "content": content }),
            }
        })
        .collect();
    Line::send(&json!({ "type": "model", "transcript": transcript }))?;
    let (answer, now) = line.expect("decision")?;
    *now_ms = now;
    let mut next = state.clone();
    let moves_on = |next: &mut RunState| {
        next.item = next.item.saturating_add(1);
        next.calls_for_item = 0;
        next.last_told = None;
    };
    let decision = match answer["decision"].as_str() {
        Some("call") => {
            let given = &answer["call"];
            let item = given["intent"]
                .as_str()
                .and_then(|intent| intent.rsplit_once('/'))
                .and_then(|(_, item)| item.parse::<u32>().ok())
                .ok_or_else(|| AdapterError::Unreadable(answer.to_string()))?;
            if next.last_told.is_some() && item != next.item {
                moves_on(&mut next);
            }
            next.item = item;
            next.calls_for_item = next.calls_for_item.saturating_add(1);
            next.next_call_number = next.next_call_number.saturating_add(1);
            let call = ToolCall {
                id: given["id"].as_str().unwrap_or_default().to_owned(),
                tool: given["tool"].as_str().unwrap_or_default().into(),
                item,
                arguments: Arguments::new(given["arguments"].clone()),
            };
            Decision::Call(call)
        }
        Some("done") => {
            if next.last_told.is_some() {
                moves_on(&mut next);
            }
            Decision::Done
        }
        Some("fail_run") => Decision::FailRun {
            reason: answer["reason"].as_str().unwrap_or_default().to_owned(),
        },
        _ => return Err(AdapterError::Unreadable(answer.to_string())),
    };
    Ok((decision, next))
}
