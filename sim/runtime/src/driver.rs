//! The async driver (feature `tokio`): a whole run driven on a tokio task — the model asked,
//! the tools awaited, backoffs and a paused run's wait slept, every ledger step through the
//! same [`Executor`] as the synchronous [`crate::execution::drive_run`]. An agent written
//! with tokio implements [`AsyncAgent`] and [`AsyncTools`] (or uses a
//! [`crate::toolbox::Toolbox`]) and awaits [`drive`]; nothing of `Command`, `Drive` or
//! `Next` is its business.
//!
//! A run that pauses on a call whose outcome is unknown returns [`Ending::Parked`] with the
//! call's key by default (start it again later; an operator may settle the call meanwhile);
//! [`DriveOptions::park`] set to [`ParkPolicy::waiting`] holds it in this process instead.
//!
//! A model turn of several calls ([`Decision::Calls`]) runs here one call after another:
//! [`AsyncTools::send`] borrows the tools for the whole send, so two cannot be out at once.
//! Each call still has its own key, reservation, send and outcome, and the checkpoint is saved
//! once after the batch. To keep several requests out at once, drive the run with
//! [`crate::execution::drive_run`] and a [`crate::execution::ToolExecution`] that implements
//! `begin` and `next_ended`.
//!
//! ```
//! use twice_runtime::driver::{AsyncAgent, DriveOptions, drive};
//! use twice_runtime::execution::{AgentError, Ending, Exit, SystemClock, next_call, moved_on};
//! use twice_runtime::executor::Executor;
//! use twice_runtime::ledger::Ledger;
//! use twice_runtime::run::{Arguments, Decision, RunState};
//! use twice_runtime::tool::SideEffect;
//! use twice_runtime::toolbox::{CallContext, Tool, ToolFailure, Toolbox};
//! use twice_runtime::worker::{Worker, WorkerSetup};
//!
//! struct Lookup;
//! impl Tool for Lookup {
//!     type Args = serde_json::Value;
//!     type Output = String;
//!     const NAME: &'static str = "lookup_order";
//!     const SIDE_EFFECT: SideEffect = SideEffect::Read;
//!     async fn call(&mut self, _args: serde_json::Value, _: CallContext<'_>) -> Result<String, ToolFailure> {
//!         Ok("shipped".into())
//!     }
//! }
//!
//! struct OneLookup;
//! impl AsyncAgent for OneLookup {
//!     async fn decide(&mut self, state: &RunState) -> Result<(Decision, RunState), AgentError> {
//!         if state.last_told.is_some() {
//!             return Ok((Decision::Done, moved_on(state).ok_or("no more items")?));
//!         }
//!         next_call(state, "lookup_order", Arguments::new(serde_json::json!({"order": 7})))
//!             .ok_or_else(|| "no more calls".into())
//!     }
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), twice_runtime::Error> {
//! let mut tools = Toolbox::new().with(Lookup);
//! let setup = WorkerSetup::new("worker-1", "order-7", tools.declarations());
//! let mut executor = Executor::new(Ledger::open_memory_store(), &setup);
//! let mut worker = Worker::new(setup)?;
//! let options = DriveOptions::default();
//! let ending = drive(&mut worker, &mut executor, &mut OneLookup, &mut tools, &mut (), &mut SystemClock, &options).await?;
//! assert_eq!(ending, Ending::Exited(Exit::Completed));
//! # Ok(())
//! # }
//! ```

use std::future::Future;
use std::time::Duration;

use crate::error::Error;
use crate::execution::{AgentError, Attempt, Clock, Ending, LookUp, Sending};
use crate::executor::{Drive, Executor, Next, Step};
use crate::key::IdempotencyKey;
use crate::ledger::Contradiction;
use crate::run::{Decision, RunState, ToolCall};
use crate::toolbox::Toolbox;
use crate::worker::{Command, GuardNote, Input, Worker};

/// The model's side, async: decides the run's next step from its state (see
/// [`crate::execution::Agent`]).
pub trait AsyncAgent: Send {
    /// The decision and the state it leaves (its counters moved on, see
    /// [`crate::execution::next_call`]). An error is a state the agent cannot decide from:
    /// the run waits for a person.
    fn decide(&mut self, state: &RunState) -> impl Future<Output = Result<(Decision, RunState), AgentError>> + Send;
}

/// The tools' side, async (see [`crate::execution::ToolExecution`]; a
/// [`crate::toolbox::Toolbox`] is one).
pub trait AsyncTools: Send {
    /// Sends one attempt of `sending.call`; pass `sending.downstream_key` on.
    fn send(&mut self, sending: &Sending<'_>) -> impl Future<Output = Attempt> + Send;

    /// The reconcile hook: what the other system holds under the call's key.
    fn look_up(&mut self, key: &IdempotencyKey, call: &ToolCall) -> impl Future<Output = LookUp> + Send;

    /// A naive runtime's reflex compensation (never asked with the guards on).
    fn undo(&mut self, key: &IdempotencyKey, call: &ToolCall) -> impl Future<Output = String> + Send {
        let _ = call;
        std::future::ready(format!("no compensation is wired for {key}"))
    }
}

impl AsyncTools for Toolbox {
    async fn send(&mut self, sending: &Sending<'_>) -> Attempt {
        self.send_async(sending).await
    }

    async fn look_up(&mut self, key: &IdempotencyKey, call: &ToolCall) -> LookUp {
        let sending = Sending {
            key,
            downstream_key: self.downstream_key(key, call),
            call,
            attempt: 0,
            recorded_at_ms: 0,
        };
        self.look_up_async(&sending).await
    }
}

/// What a driver's application hears as the run goes: each phase before it runs, the guards
/// that held, each attempt's end, a contradiction. Every method has a default that does
/// nothing; `()` is an observer that hears nothing.
pub trait Observer: Send {
    /// The machine's next phase, before it runs (a process that may be killed prints it).
    fn before(&mut self, command: &Command) {
        let _ = command;
    }
    /// Guards that held since the last step.
    fn held(&mut self, notes: Vec<GuardNote>) {
        let _ = notes;
    }
    /// How an attempt ended.
    fn attempted(&mut self, key: &IdempotencyKey, attempt: u32, ended: &Attempt) {
        let _ = (key, attempt, ended);
    }
    /// A late word contradicted how a call was settled: someone should look.
    fn contradicted(&mut self, contradiction: &Contradiction) {
        let _ = contradiction;
    }
    /// Asked before each model call: `Some(reason)` stops the run there, with nothing
    /// reserved, exactly as its checkpoint says ([`Ending::Stopped`]): a graceful shutdown.
    fn stop_before_deciding(&mut self) -> Option<String> {
        None
    }
}

impl Observer for () {}

/// What a paused run does while its call waits to be settled (by an operator, a reconcile
/// hook in another process, or the call's own late outcome).
///
/// By default it **leaves**: [`drive`] returns [`Ending::Parked`] with the call's key as soon
/// as the run pauses on a call nobody has settled (the run's history says why; its checkpoint
/// awaits that key). Schedule the run again later, or once an operator settled the call: the
/// next start looks at the call first. A process that would rather hold the run takes
/// [`ParkPolicy::waiting`]: it reads the ledger every `poll`, and every so often asks the
/// reconcile hook again (after `look_again_after_polls` polls, doubling up to
/// `look_again_after_polls_max`), since a call settled nowhere else may be found now — for as
/// long as the call stays unknown.
///
/// ```
/// use twice_runtime::driver::{DriveOptions, ParkPolicy};
/// assert!(DriveOptions::default().park.leave, "a parked run returns by default");
/// let mut options = DriveOptions::default();
/// options.park = ParkPolicy::waiting();
/// assert!(!options.park.leave);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ParkPolicy {
    /// How often the ledger is read.
    pub poll: Duration,
    /// Polls before the first look again.
    pub look_again_after_polls: u32,
    /// The most polls between two looks again.
    pub look_again_after_polls_max: u32,
    /// Leave at once instead of waiting ([`Ending::Parked`]): another start resumes the run.
    /// The default; [`ParkPolicy::waiting`] waits instead.
    pub leave: bool,
}

impl Default for ParkPolicy {
    /// Leave at once: a driver that polled a paused run by default would hold a task for as
    /// long as nobody settles its call, which may be days.
    fn default() -> ParkPolicy {
        ParkPolicy {
            leave: true,
            ..ParkPolicy::waiting()
        }
    }
}

impl ParkPolicy {
    /// Wait in this process until the call is settled: the ledger read every 200 ms, the
    /// reconcile hook asked again after 5 polls, then 10, 20, … up to every 80.
    #[must_use]
    pub fn waiting() -> ParkPolicy {
        ParkPolicy {
            poll: Duration::from_millis(200),
            look_again_after_polls: 5,
            look_again_after_polls_max: 80,
            leave: false,
        }
    }
}

/// How [`drive`] drives.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct DriveOptions {
    /// How a paused run waits.
    pub park: ParkPolicy,
    /// How long an attempt may take before it counts as timed out (its future is dropped;
    /// the request may have left, so it is an unknown outcome). `None`: the tool's own.
    pub attempt_timeout: Option<Duration>,
}

impl DriveOptions {
    /// These options with `park` as how a paused run waits.
    #[must_use]
    pub fn with_park(mut self, park: ParkPolicy) -> DriveOptions {
        self.park = park;
        self
    }

    /// These options with every attempt limited to `timeout` (past it, the attempt's future is
    /// dropped and its outcome is unknown: the request may have left).
    #[must_use]
    pub fn with_attempt_timeout(mut self, timeout: Duration) -> DriveOptions {
        self.attempt_timeout = Some(timeout);
        self
    }
}

/// Drives `worker` from its start to its end on this task: ledger steps through `executor`,
/// the model through `agent`, the tools through `tools`, the time from `clock` (waits are
/// tokio's sleeps), what happens told to `observer`.
///
/// # Errors
///
/// [`Error::Ledger`] when the ledger fails (the run stops where it was: a worker started
/// again recovers it from the ledger); [`Error::Input`] when the worker was not fresh;
/// [`Error::Stalled`] when the machine waits for something no driver step brings.
pub async fn drive(
    worker: &mut Worker,
    executor: &mut Executor,
    agent: &mut impl AsyncAgent,
    tools: &mut impl AsyncTools,
    observer: &mut impl Observer,
    clock: &mut (impl Clock + Send),
    options: &DriveOptions,
) -> Result<Ending, Error> {
    let mut next = worker.handle(clock.now_ms(), Input::Start)?;
    observer.held(worker.take_notes());
    let mut look_again = options.park.look_again_after_polls;
    loop {
        let Some(command) = next else {
            return crate::execution::exited(worker);
        };
        observer.before(&command);
        let phase = command.phase();
        let step = executor.perform(command, clock.now_ms())?;
        let input = match step_input(step, executor, agent, tools, observer, clock, options, &mut look_again).await? {
            Driven::Feed(input) => *input,
            Driven::End(ending) => return Ok(ending),
            Driven::Exit => return crate::execution::exited(worker),
            Driven::Stalled => return Err(Error::Stalled { phase }),
        };
        next = worker.handle(clock.now_ms(), input)?;
        observer.held(worker.take_notes());
    }
}

enum Driven {
    /// Boxed: an input (a run state inside) is several times an ending's size.
    Feed(Box<Input>),
    End(Ending),
    /// The machine exited the run: how is the worker's to say.
    Exit,
    Stalled,
}

/// The driver's part of one step, and the input it leads to.
#[allow(clippy::too_many_arguments)]
async fn step_input(
    step: Step,
    executor: &mut Executor,
    agent: &mut impl AsyncAgent,
    tools: &mut impl AsyncTools,
    observer: &mut impl Observer,
    clock: &mut (impl Clock + Send),
    options: &DriveOptions,
    look_again: &mut u32,
) -> Result<Driven, Error> {
    if let Some(contradiction) = &step.contradiction {
        observer.contradicted(contradiction);
    }
    let drive = match step.next {
        Next::Feed(input) => return Ok(Driven::Feed(Box::new(input))),
        Next::Nothing => return Ok(Driven::Stalled),
        Next::Drive(drive) => drive,
    };
    let input = match drive {
        Drive::AskModel { state } => {
            if let Some(reason) = observer.stop_before_deciding() {
                return Ok(Driven::End(Ending::Stopped { reason }));
            }
            match agent.decide(&state).await {
                Ok((decision, state)) => Input::ModelDecided { decision, state },
                Err(error) => Input::StateUnusable {
                    detail: error.to_string(),
                },
            }
        }
        Drive::Send {
            ref key,
            ref downstream_key,
            ref call,
            attempt,
            recorded_at_ms,
        } => {
            let sending = Sending {
                key,
                downstream_key: downstream_key.as_ref(),
                call,
                attempt,
                recorded_at_ms,
            };
            let sent = tools.send(&sending);
            let ended = match options.attempt_timeout {
                Some(limit) => tokio::time::timeout(limit, sent).await.unwrap_or(Attempt::TimedOut),
                None => sent.await,
            };
            observer.attempted(key, attempt, &ended);
            ended.into_input(key.clone(), attempt)
        }
        Drive::Backoff { after_ms, .. } | Drive::WaitToLookAgain { after_ms, .. } => {
            tokio::time::sleep(Duration::from_millis(after_ms)).await;
            Input::BackoffElapsed
        }
        Drive::LookUp { key, call } => {
            // Read before asking: "nothing there" is weighed as of when the question was put.
            let asked_at_ms = clock.now_ms();
            let step = match tools.look_up(&key, &call).await {
                LookUp::Found(found) => executor.reconciled(
                    key,
                    Some((found.receipt.as_str(), found.finding.as_str())),
                    clock.now_ms(),
                )?,
                LookUp::Absent => executor.reconciled(key, None, asked_at_ms)?,
                LookUp::CannotTell { reason } => executor.cannot_tell(key, &reason),
            };
            return Box::pin(step_input(
                step, executor, agent, tools, observer, clock, options, look_again,
            ))
            .await;
        }
        Drive::Undo { key, call } => {
            let detail = tools.undo(&key, &call).await;
            let step = executor.undone(key, &detail, clock.now_ms())?;
            return Box::pin(step_input(
                step, executor, agent, tools, observer, clock, options, look_again,
            ))
            .await;
        }
        Drive::Park { key } => return park(executor, &key, &options.park, look_again).await,
        Drive::StandDown { note } => return Ok(Driven::End(Ending::StoodDown(note))),
        Drive::WaitForPerson { reason } => return Ok(Driven::End(Ending::WaitsForPerson(reason))),
        Drive::Exit => return Ok(Driven::Exit),
    };
    Ok(Driven::Feed(Box::new(input)))
}

/// `on_indeterminate: pause`: waits until the call is settled in the ledger (by an operator,
/// a reconcile hook in another process, or the call's own late outcome), and after
/// `look_again` polls asks the machine to look again (the reconcile hook anew), since a call
/// its owner can no longer settle must not wait for ever; each look again comes later than the
/// one before, up to the policy's most.
async fn park(
    executor: &Executor,
    key: &IdempotencyKey,
    policy: &ParkPolicy,
    look_again: &mut u32,
) -> Result<Driven, Error> {
    tracing::info!(%key, "pause: the run waits for the call to be settled");
    let mut polls: u32 = 0;
    loop {
        let settled = executor
            .ledger()
            .record(key)?
            .is_some_and(|record| record.status.is_settled());
        if settled {
            return Ok(Driven::Feed(Box::new(Input::Woken)));
        }
        if policy.leave {
            return Ok(Driven::End(Ending::Parked(key.clone())));
        }
        if polls >= *look_again {
            *look_again = look_again
                .saturating_mul(2)
                .clamp(1, policy.look_again_after_polls_max.max(1));
            return Ok(Driven::Feed(Box::new(Input::LookAgain)));
        }
        tokio::time::sleep(policy.poll).await;
        polls = polls.saturating_add(1);
    }
}
