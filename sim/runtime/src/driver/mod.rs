//! The async driver (feature `tokio`): a whole run driven on a tokio task — the model asked,
//! the tools awaited, backoffs and a paused run's wait slept, every ledger step through the
//! same [`Executor`] as the synchronous [`crate::execution::drive_run`]. An agent written
//! with tokio implements [`AsyncAgent`] and [`AsyncTools`] (or uses a
//! [`crate::toolbox::Toolbox`]) and awaits [`AsyncRun::drive`] (or [`drive`]); nothing of `Command`, `Drive` or
//! `Next` is its business.
//!
//! A run that pauses on a call whose outcome is unknown returns [`Ending::Parked`] with the
//! call's key by default (start it again later; an operator may settle the call meanwhile);
//! [`DriveOptions::park`] set to [`ParkPolicy::waiting`] holds it in this process instead.
//!
//! A model turn of several calls ([`Decision::Calls`]) runs as a provider's parallel tool
//! calls do: each call is reserved and fenced in turn, its request is set out, and the next
//! call is begun while the first is still out; answers are recorded in the order they arrive.
//! [`AsyncTools`] takes `&self`, so one toolbox has several sends in flight. Each call still has
//! its own key, reservation, send and outcome, and the checkpoint is saved once after the batch.
//!
//! ```
//! use twice_runtime::driver::{AsyncAgent, AsyncRun};
//! use twice_runtime::execution::{AgentError, Ending, Exit, next_call, moved_on};
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
//!     async fn call(&self, _args: serde_json::Value, _: CallContext<'_>) -> Result<String, ToolFailure> {
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
//! let tools = Toolbox::new().with(Lookup);
//! let setup = WorkerSetup::new("worker-1", "order-7", tools.declarations());
//! let mut executor = Executor::new(Ledger::open_memory_store(), &setup);
//! let mut worker = Worker::new(setup)?;
//! // The defaults: no observer, the wall clock, a paused run returns `Parked`.
//! let ending = AsyncRun::new(&mut worker, &mut executor).drive(&mut OneLookup, &tools).await?;
//! assert_eq!(ending, Ending::Exited(Exit::Completed));
//! # Ok(())
//! # }
//! ```

use std::future::Future;
use std::time::Duration;

use futures_util::FutureExt;

use crate::error::Error;
use crate::execution::{AgentError, Attempt, Clock, Ended, Ending, LookUp, Sending};
use crate::executor::{Drive, Executor, Next, Step};
use crate::key::IdempotencyKey;
use crate::ledger::Contradiction;
use crate::run::{Decision, RunState, ToolCall};
use crate::toolbox::Toolbox;
use crate::worker::{Command, GuardNote, Input, Phase, Worker};

mod flights;
use flights::{Flight, Flights, flight};

/// The model's side, async: decides the run's next step from its state (see
/// [`crate::execution::Agent`]).
pub trait AsyncAgent: Send {
    /// The decision and the state it leaves (its counters moved on, see
    /// [`crate::execution::next_call`]). An error is a state the agent cannot decide from:
    /// the run waits for a person.
    fn decide(&mut self, state: &RunState) -> impl Future<Output = Result<(Decision, RunState), AgentError>> + Send;
}

/// The tools' side, async (see [`crate::execution::ToolExecution`]; a
/// [`crate::toolbox::Toolbox`] is one). Every method takes `&self`: the driver keeps a model
/// turn's calls in flight at once, so several sends (of one tool, too) run together; state a
/// tool changes is shared state (a `Mutex`, an atomic, a client that is already shared).
pub trait AsyncTools: Sync {
    /// Sends one attempt of `sending.call`; pass `sending.downstream_key` on.
    fn send(&self, sending: &Sending<'_>) -> impl Future<Output = Attempt> + Send;

    /// The reconcile hook: what the other system holds under the call's key. `looking` says
    /// which send it looks for ([`Sending::looking_up`]: attempt 0, and when the ledger
    /// recorded the latest attempt as begun).
    fn look_up(&self, looking: &Sending<'_>) -> impl Future<Output = LookUp> + Send;

    /// A naive runtime's reflex compensation (never asked with the guards on).
    fn undo(&self, key: &IdempotencyKey, call: &ToolCall) -> impl Future<Output = String> + Send {
        let _ = call;
        std::future::ready(format!("no compensation is wired for {key}"))
    }
}

impl AsyncTools for Toolbox {
    async fn send(&self, sending: &Sending<'_>) -> Attempt {
        self.send_async(sending).await
    }

    async fn look_up(&self, looking: &Sending<'_>) -> LookUp {
        self.look_up_async(looking).await
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
/// tokio's sleeps), what happens told to `observer`. [`AsyncRun`] is the same with the
/// defaults filled in.
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
    tools: &impl AsyncTools,
    observer: &mut impl Observer,
    clock: &mut (impl Clock + Send),
    options: &DriveOptions,
) -> Result<Ending, Error> {
    let mut driving = Driving {
        executor,
        agent,
        tools,
        observer,
        clock,
        options,
        look_again: options.park.look_again_after_polls,
        flights: Flights::default(),
    };
    driving.run(worker).await
}

/// A run to drive on tokio, with the defaults filled in: no observer, the wall clock
/// ([`crate::execution::SystemClock`]), [`DriveOptions::default`]. Set what differs, then
/// [`AsyncRun::drive`] it:
///
/// ```no_run
/// # use twice_runtime::driver::{AsyncAgent, AsyncRun, DriveOptions, ParkPolicy};
/// # use twice_runtime::execution::Ending;
/// # use twice_runtime::executor::Executor;
/// # use twice_runtime::toolbox::Toolbox;
/// # use twice_runtime::worker::Worker;
/// # async fn run(worker: &mut Worker, executor: &mut Executor, agent: &mut impl AsyncAgent, tools: &Toolbox) -> Result<Ending, twice_runtime::Error> {
/// AsyncRun::new(worker, executor)
///     .options(DriveOptions::default().with_park(ParkPolicy::waiting()))
///     .drive(agent, tools)
///     .await
/// # }
/// ```
#[must_use = "an AsyncRun does nothing until it is driven"]
pub struct AsyncRun<'r, O = (), C = crate::execution::SystemClock> {
    worker: &'r mut Worker,
    executor: &'r mut Executor,
    observer: O,
    clock: C,
    options: DriveOptions,
}

impl<O, C> std::fmt::Debug for AsyncRun<'_, O, C> {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("AsyncRun")
            .field("run_id", &self.worker.setup().run_id)
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

impl<'r> AsyncRun<'r> {
    /// The run `worker` drives through `executor`, with the defaults.
    pub fn new(worker: &'r mut Worker, executor: &'r mut Executor) -> AsyncRun<'r> {
        AsyncRun {
            worker,
            executor,
            observer: (),
            clock: crate::execution::SystemClock,
            options: DriveOptions::default(),
        }
    }
}

impl<'r, O: Observer, C: Clock + Send> AsyncRun<'r, O, C> {
    /// The same run with `observer` hearing each step (`&mut` of your observer works too).
    pub fn observer<P: Observer>(self, observer: P) -> AsyncRun<'r, P, C> {
        AsyncRun {
            worker: self.worker,
            executor: self.executor,
            observer,
            clock: self.clock,
            options: self.options,
        }
    }

    /// The same run on `clock` (`&mut` of your clock works too).
    pub fn clock<D: Clock + Send>(self, clock: D) -> AsyncRun<'r, O, D> {
        AsyncRun {
            worker: self.worker,
            executor: self.executor,
            observer: self.observer,
            clock,
            options: self.options,
        }
    }

    /// The same run with `options`.
    pub fn options(mut self, options: DriveOptions) -> AsyncRun<'r, O, C> {
        self.options = options;
        self
    }

    /// Drives the run to its end: the model through `agent`, the tools through `tools`
    /// ([`drive`]).
    ///
    /// # Errors
    ///
    /// As [`drive`]'s.
    pub async fn drive(mut self, agent: &mut impl AsyncAgent, tools: &impl AsyncTools) -> Result<Ending, Error> {
        let options = self.options;
        drive(
            self.worker,
            self.executor,
            agent,
            tools,
            &mut self.observer,
            &mut self.clock,
            &options,
        )
        .await
    }
}

impl<O: Observer + ?Sized> Observer for &mut O {
    fn before(&mut self, command: &Command) {
        (**self).before(command);
    }
    fn held(&mut self, notes: Vec<GuardNote>) {
        (**self).held(notes);
    }
    fn attempted(&mut self, key: &IdempotencyKey, attempt: u32, ended: &Attempt) {
        (**self).attempted(key, attempt, ended);
    }
    fn contradicted(&mut self, contradiction: &Contradiction) {
        (**self).contradicted(contradiction);
    }
    fn stop_before_deciding(&mut self) -> Option<String> {
        (**self).stop_before_deciding()
    }
}

/// One drive's parts, borrowed for its length.
struct Driving<'d, 't, A, T, O, C> {
    executor: &'d mut Executor,
    agent: &'d mut A,
    tools: &'t T,
    observer: &'d mut O,
    clock: &'d mut C,
    options: &'d DriveOptions,
    /// Polls before a paused run asks the hook again (it grows, see [`ParkPolicy`]).
    look_again: u32,
    /// A batch's requests out.
    flights: Flights<'t>,
}

enum Driven {
    /// Boxed: an input (a run state inside) is several times an ending's size.
    Feed(Box<Input>),
    End(Ending),
    /// The machine exited the run: how is the worker's to say.
    Exit,
    Stalled,
}

impl<'t, A: AsyncAgent, T: AsyncTools, O: Observer, C: Clock + Send> Driving<'_, 't, A, T, O, C> {
    async fn run(&mut self, worker: &mut Worker) -> Result<Ending, Error> {
        let mut next = worker.handle(self.clock.now_ms(), Input::Start)?;
        self.observer.held(worker.take_notes());
        loop {
            let Some(command) = next else {
                if worker.in_flight().is_empty() {
                    return crate::execution::exited(worker);
                }
                // Free, with a batch's requests out: the next to end is the next input.
                let Some(ended) = self.flights.next().await else {
                    return Err(Error::Stalled {
                        phase: Phase::WaitForAnswer,
                    });
                };
                self.observer.attempted(&ended.key, ended.attempt, &ended.how);
                // A request set out in flight may have left, whatever its tool says after.
                let how = match ended.how {
                    Attempt::NotSent { .. } => Attempt::TimedOut,
                    how => how,
                };
                next = worker.handle(self.clock.now_ms(), how.into_input(ended.key, ended.attempt))?;
                self.observer.held(worker.take_notes());
                continue;
            };
            self.observer.before(&command);
            let phase = command.phase();
            let step = self.executor.perform(command, self.clock.now_ms())?;
            let input = match self.step_input(step, worker.runs_batch()).await? {
                Driven::Feed(input) => *input,
                Driven::End(ending) => return Ok(ending),
                Driven::Exit => return crate::execution::exited(worker),
                Driven::Stalled => return Err(Error::Stalled { phase }),
            };
            next = worker.handle(self.clock.now_ms(), input)?;
            self.observer.held(worker.take_notes());
        }
    }

    /// The driver's part of one step, and the input it leads to. In a batch (`in_batch`), a
    /// send is set out and the machine goes on with the batch.
    async fn step_input(&mut self, step: Step, in_batch: bool) -> Result<Driven, Error> {
        if let Some(contradiction) = &step.contradiction {
            self.observer.contradicted(contradiction);
        }
        let drive = match step.next {
            Next::Feed(input) => return Ok(Driven::Feed(Box::new(input))),
            Next::Nothing => return Ok(Driven::Stalled),
            Next::Drive(drive) => drive,
        };
        if let Some(sending) = Sending::of(&drive) {
            let (key, attempt) = (sending.key.clone(), sending.attempt);
            let flight = flight(self.tools, drive, (key.clone(), attempt), self.options.attempt_timeout);
            let input = if in_batch {
                self.set_out(flight, key, attempt)
            } else {
                let ended = flight.await;
                self.observer.attempted(&key, attempt, &ended.how);
                ended.how.into_input(key, attempt)
            };
            return Ok(Driven::Feed(Box::new(input)));
        }
        let input = match drive {
            Drive::AskModel { state } => {
                if let Some(reason) = self.observer.stop_before_deciding() {
                    return Ok(Driven::End(Ending::Stopped { reason }));
                }
                match self.agent.decide(&state).await {
                    Ok((decision, state)) => Input::ModelDecided { decision, state },
                    Err(error) => Input::StateUnusable {
                        detail: error.to_string(),
                    },
                }
            }
            // Handled above; were it not a send after all, nothing was sent.
            Drive::Send { .. } => return Ok(Driven::Stalled),
            Drive::Backoff { after_ms, .. } | Drive::WaitToLookAgain { after_ms, .. } => {
                self.flights
                    .alongside(tokio::time::sleep(Duration::from_millis(after_ms)))
                    .await;
                Input::BackoffElapsed
            }
            Drive::LookUp {
                key,
                call,
                recorded_at_ms,
            } => {
                // Read before asking: "nothing there" is weighed as of when the question was put.
                let asked_at_ms = self.clock.now_ms();
                let looking = Sending::looking_up(&key, &call, recorded_at_ms);
                let found = self.flights.alongside(self.tools.look_up(&looking)).await;
                let step = match found {
                    LookUp::Found(found) => self.executor.reconciled(
                        key,
                        Some((found.receipt.as_str(), found.finding.as_str())),
                        self.clock.now_ms(),
                    )?,
                    LookUp::Absent => self.executor.reconciled(key, None, asked_at_ms)?,
                    LookUp::CannotTell { reason } => self.executor.cannot_tell(key, &reason),
                };
                return Box::pin(self.step_input(step, in_batch)).await;
            }
            Drive::Undo { key, call } => {
                let detail = self.flights.alongside(self.tools.undo(&key, &call)).await;
                let step = self.executor.undone(key, &detail, self.clock.now_ms())?;
                return Box::pin(self.step_input(step, in_batch)).await;
            }
            Drive::Park { key } => return self.park(&key).await,
            Drive::StandDown { note } => return Ok(Driven::End(Ending::StoodDown(note))),
            Drive::WaitForPerson { reason } => return Ok(Driven::End(Ending::WaitsForPerson(reason))),
            Drive::Exit => return Ok(Driven::Exit),
        };
        Ok(Driven::Feed(Box::new(input)))
    }

    /// A batch's request set out: polled once (a tool that refuses before sending says so
    /// at once, and the machine hears it now), then left in flight while the machine begins
    /// the batch's next call ([`Input::Sent`]); its end is fed when the machine is free.
    fn set_out(&mut self, mut flight: Flight<'t>, key: IdempotencyKey, attempt: u32) -> Input {
        // One poll, no wait: a request still on its way is polled again, with its own waker,
        // among the flights.
        match (&mut flight).now_or_never() {
            Some(Ended {
                how: Attempt::NotSent { reason },
                ..
            }) => {
                let how = Attempt::NotSent { reason: reason.clone() };
                self.observer.attempted(&key, attempt, &how);
                Input::NotAttempted { reason }
            }
            Some(ended) => {
                self.flights.ended_at_once(ended);
                Input::Sent { key, attempt }
            }
            None => {
                self.flights.set_out(flight);
                Input::Sent { key, attempt }
            }
        }
    }

    /// `on_indeterminate: pause`: waits until the call is settled in the ledger (by an
    /// operator, a reconcile hook in another process, or the call's own late outcome), and
    /// after `look_again` polls asks the machine to look again (the reconcile hook anew),
    /// since a call its owner can no longer settle must not wait for ever; each look again
    /// comes later than the one before, up to the policy's most.
    async fn park(&mut self, key: &IdempotencyKey) -> Result<Driven, Error> {
        tracing::info!(%key, "pause: the run waits for the call to be settled");
        let policy = self.options.park;
        let mut polls: u32 = 0;
        loop {
            let settled = self
                .executor
                .ledger()
                .record(key)?
                .is_some_and(|record| record.status.is_settled());
            if settled {
                return Ok(Driven::Feed(Box::new(Input::Woken)));
            }
            if policy.leave {
                return Ok(Driven::End(Ending::Parked(key.clone())));
            }
            if polls >= self.look_again {
                self.look_again = self
                    .look_again
                    .saturating_mul(2)
                    .clamp(1, policy.look_again_after_polls_max.max(1));
                return Ok(Driven::Feed(Box::new(Input::LookAgain)));
            }
            self.flights.alongside(tokio::time::sleep(policy.poll)).await;
            polls = polls.saturating_add(1);
        }
    }
}
