//! A tool's execution, the model and the time, as a driver implements them; and
//! [`drive_run`], a synchronous loop that runs one worker to its end with them.
//!
//! The runtime never sends anything itself. A synchronous driver implements [`ToolExecution`],
//! [`Agent`] and [`Clock`] and calls [`drive_run`]. On tokio, use the library's async driver
//! instead: `twice_runtime::driver::drive` (feature `tokio`), with typed tools. Only a driver
//! for another async runtime matches the [`Drive`] the executor hands it by hand, awaits its
//! own request, and turns what came back into the machine's input with
//! [`Attempt::into_input`] and [`Executor::reconciled`], as [`drive_run`] does. Nothing here
//! awaits, sleeps or reads a clock: the runtime stays sans-IO.

use std::collections::VecDeque;

use crate::answer::ToolAnswer;
use crate::error::Error;
use crate::executor::{Drive, Executor, Next};
use crate::key::IdempotencyKey;
use crate::ledger::Contradiction;
use crate::run::{Decision, RunState, ToolCall};
use crate::worker::{GuardNote, Input, Phase, WaitReason, Worker};

mod next;
pub use next::{moved_on, next_call, next_calls};

/// How an exited run ended (the worker's, named here beside [`Ending`]).
pub use crate::worker::Exit;

/// What one attempt of a tool came to, as the driver saw it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Attempt {
    /// The other system answered.
    Answered(ToolAnswer),
    /// The request left and no answer came in time: it may have taken effect.
    TimedOut,
    /// The request may have left and the tool cannot say whether it took effect (a connection
    /// reset after sending, a gateway timeout): a timeout whose `reason` is kept in the call's
    /// history, where the person who settles the call reads it.
    Unknown {
        /// Why the outcome is unknown, in the tool's words.
        reason: String,
    },
    /// The tool refused before anything left (the other system could not be reached).
    NotSent {
        /// Why nothing was sent.
        reason: String,
    },
}

impl Attempt {
    /// The machine's input for attempt `attempt` of the call `key`.
    pub fn into_input(self, key: IdempotencyKey, attempt: u32) -> Input {
        match self {
            Attempt::Answered(answer) => Input::Response { key, attempt, answer },
            Attempt::TimedOut => Input::TimedOut { key, attempt },
            Attempt::Unknown { reason } => Input::Unknown { key, attempt, reason },
            Attempt::NotSent { reason } => Input::NotAttempted { reason },
        }
    }
}

/// How [`ToolExecution::begin`] started an attempt.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Begun {
    /// The request left; its end comes from [`ToolExecution::next_ended`].
    InFlight,
    /// It already ended (a tool that sends and waits).
    Ended(Attempt),
}

/// An attempt begun in flight that ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ended {
    /// The call's key ([`Sending::key`]).
    pub key: IdempotencyKey,
    /// The attempt ([`Sending::attempt`]).
    pub attempt: u32,
    /// How it ended.
    pub how: Attempt,
}

/// What a reconcile hook found under a key in the tool's world.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Found {
    /// The receipt the ledger records as the call's result.
    pub receipt: String,
    /// What was found, in words (for the timeline and the history).
    pub finding: String,
}

/// What a reconcile hook's look-up came to: three answers, because "nothing there" and "could
/// not ask" are not the same thing, and only the first is ever evidence.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LookUp {
    /// The effect is there.
    Found(Found),
    /// The other system answered and holds nothing under the key. What that proves is the
    /// runtime's to weigh, by the tool's declared `lookup_settle_ms` and `key_retention_ms`
    /// (decision table 6).
    Absent,
    /// The hook could not ask, or could not read the answer (the other system was down, the
    /// lookup timed out): it cannot tell. The runtime treats the call as still unknown
    /// (decision table 3), never as proof that it did not take effect.
    CannotTell {
        /// Why the hook cannot tell, in words.
        reason: String,
    },
}

/// One send the send fence let through.
#[derive(Clone, Copy, Debug)]
pub struct Sending<'a> {
    /// The ledger's key of the call.
    pub key: &'a IdempotencyKey,
    /// The key to pass downstream (an `Idempotency-Key` header, say); `None` when the tool
    /// is declared to take no key.
    pub downstream_key: Option<&'a IdempotencyKey>,
    /// The call, with its canonical JSON arguments.
    pub call: &'a ToolCall,
    /// Which attempt this is, from 1.
    pub attempt: u32,
    /// When the ledger recorded this attempt as begun ([`Drive::Send`]'s `recorded_at_ms`).
    /// Where the system it calls refuses requests that arrive too long after their send, stamp
    /// the request with this: only such a bound lets a lookup that finds nothing prove the
    /// call never took effect (decision table 6).
    pub recorded_at_ms: u64,
}

impl<'a> Sending<'a> {
    /// The send a [`Drive::Send`] asks for; `None` for any other drive.
    pub fn of(drive: &'a Drive) -> Option<Sending<'a>> {
        let Drive::Send {
            key,
            downstream_key,
            call,
            attempt,
            recorded_at_ms,
        } = drive
        else {
            return None;
        };
        Some(Sending {
            key,
            downstream_key: downstream_key.as_ref(),
            call,
            attempt: *attempt,
            recorded_at_ms: *recorded_at_ms,
        })
    }
}

impl<'a> Sending<'a> {
    /// What a reconcile hook is told about the call it looks up ([`Drive::LookUp`]): its key,
    /// the call, attempt 0 (a look-up, not an attempt) and when the ledger recorded the
    /// latest attempt as begun. `downstream_key` is `None`: the tools know whether the call
    /// passed its key on (a [`crate::toolbox::Toolbox`] fills it in from the declaration).
    pub fn looking_up(key: &'a IdempotencyKey, call: &'a ToolCall, recorded_at_ms: u64) -> Sending<'a> {
        Sending {
            key,
            downstream_key: None,
            call,
            attempt: 0,
            recorded_at_ms,
        }
    }
}

/// The tools' side: what a synchronous driver implements so [`drive_run`] can run them.
pub trait ToolExecution {
    /// Sends one attempt of `sending.call` and says how it ended. Pass
    /// `sending.downstream_key` on when there is one: that is what makes a resend safe.
    fn send(&mut self, sending: &Sending<'_>) -> Attempt;

    /// The reconcile hook of a tool declared with `reconcile: true`: a read-only look-up of
    /// the call by its key. Answer what the other system says, no more: [`LookUp::Absent`]
    /// only when it answered and holds nothing, [`LookUp::CannotTell`] when it could not be
    /// asked (what "absent" proves is the runtime's to weigh, decision table 6).
    fn look_up(&mut self, key: &IdempotencyKey, call: &ToolCall) -> LookUp;

    /// The reconcile hook, told which send it looks for ([`Sending::looking_up`]: attempt 0,
    /// and `recorded_at_ms` when the ledger recorded the latest attempt as begun, which a
    /// request was stamped with). [`drive_run`] calls this; the default asks
    /// [`ToolExecution::look_up`]. A [`crate::toolbox::Toolbox`] hands it to the tool's hook
    /// as its [`crate::toolbox::CallContext`].
    fn look_up_sent(&mut self, looking: &Sending<'_>) -> LookUp {
        self.look_up(looking.key, looking.call)
    }

    /// Starts one attempt of a batch's call (the model made several calls in one turn) and
    /// returns without waiting for its end if it can: [`Begun::InFlight`] once the request has
    /// left, its end given later by [`ToolExecution::next_ended`]. The default sends and waits
    /// ([`ToolExecution::send`]): a batch then runs one call after another, which is correct,
    /// only slower. Pass `sending.downstream_key` on, as `send` does.
    fn begin(&mut self, sending: &Sending<'_>) -> Begun {
        Begun::Ended(self.send(sending))
    }

    /// The next attempt begun [`Begun::InFlight`] to end, in the order they end (any order:
    /// each carries its key and attempt); `None` when none is out. A request begun in flight
    /// has left, so an end that says nothing was sent is taken as a timeout (it may have taken
    /// effect). The default has none out.
    fn next_ended(&mut self) -> Option<Ended> {
        None
    }

    /// A naive runtime's reflex compensation (guard `no_reflex_compensation` off only): undo
    /// by key, and say what the tool's world answered. A runtime with its guards on never
    /// asks, so the default refuses.
    fn undo(&mut self, key: &IdempotencyKey, call: &ToolCall) -> String {
        let _ = call;
        format!("no compensation is wired for {key}")
    }

    /// A late word about a call contradicts how it was settled (an operator said it failed,
    /// and the tool's answer then says it took effect): the decision stands and the ledger
    /// says so; this is where the application tells someone. The default does nothing more.
    fn contradicted(&mut self, contradiction: &Contradiction) {
        let _ = contradiction;
    }
}

/// Why an agent could not decide: its own error, of whatever type it has. The run waits for
/// a person, who reads its words (`&str` and `String` convert with `?` and `.into()`).
pub type AgentError = Box<dyn std::error::Error + Send + Sync>;

/// The model's side: decides the run's next step from its state.
pub trait Agent {
    /// The decision and the state it leaves (with its counters moved on, see
    /// [`next_call`]). An error is a state the agent cannot decide from: the run waits for
    /// a person.
    ///
    /// # Errors
    ///
    /// The application's [`AgentError`] when it cannot decide: the run is told its state is
    /// unusable and stops for a person, never guessed.
    fn decide(&mut self, state: &RunState) -> Result<(Decision, RunState), AgentError>;
}

/// The time, given by the driver: the runtime reads no clock.
pub trait Clock {
    /// The time now, in milliseconds from any fixed origin.
    fn now_ms(&mut self) -> u64;
    /// Lets `duration_ms` pass (a real driver sleeps; a simulated one moves its clock).
    fn wait_ms(&mut self, duration_ms: u64);
}

/// How [`drive_run`] ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Ending {
    /// The run is over: how ([`Exit`]: completed or failed in this start, dead-lettered, or
    /// already over before it — then nothing ran).
    Exited(Exit),
    /// Another worker drives the run (the guard note says how it found out; the application
    /// words it).
    StoodDown(GuardNote),
    /// The run's state cannot be used; a person looks (the facts: the application words them).
    WaitsForPerson(WaitReason),
    /// The worker waits on a call someone else must settle (an operator, or the worker that
    /// owns it): run it again when that key is settled.
    Parked(IdempotencyKey),
    /// The driver was asked to stop before its next model call (a graceful shutdown): nothing
    /// is reserved, and the run is exactly as its checkpoint says, for a worker to resume.
    Stopped {
        /// Why, in the application's words.
        reason: String,
    },
}

/// The wall clock: milliseconds since the Unix epoch, waits that sleep the thread. What a
/// production driver uses; tests and simulators bring their own [`Clock`].
#[derive(Clone, Copy, Debug, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    // The one place the runtime reads the wall clock and waits: a driver's, given by choice.
    #[allow(clippy::disallowed_methods)]
    fn now_ms(&mut self) -> u64 {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |elapsed| u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX))
    }

    #[allow(clippy::disallowed_methods)]
    fn wait_ms(&mut self, duration_ms: u64) {
        std::thread::sleep(std::time::Duration::from_millis(duration_ms));
    }
}

/// A run to drive on this thread ([`drive_run`]), with the wall clock
/// ([`SystemClock`]) unless given another:
///
/// ```
/// # use twice_runtime::execution::{Agent, Ending, Exit, Run};
/// # use twice_runtime::executor::Executor;
/// # use twice_runtime::ledger::Ledger;
/// # use twice_runtime::run::{Decision, RunState};
/// # use twice_runtime::toolbox::Toolbox;
/// # use twice_runtime::worker::{Worker, WorkerSetup};
/// struct Nothing;
/// impl Agent for Nothing {
///     fn decide(&mut self, state: &RunState) -> Result<(Decision, RunState), twice_runtime::execution::AgentError> {
///         Ok((Decision::Done, state.clone()))
///     }
/// }
/// # fn main() -> Result<(), twice_runtime::Error> {
/// let mut tools = Toolbox::new();
/// let setup = WorkerSetup::new("worker-1", "run-1", tools.declarations());
/// let mut executor = Executor::new(Ledger::open_memory_store(), &setup);
/// let mut worker = Worker::new(setup)?;
/// let ending = Run::new(&mut worker, &mut executor).drive(&mut Nothing, &mut tools)?;
/// assert_eq!(ending, Ending::Exited(Exit::Completed));
/// # Ok(())
/// # }
/// ```
#[must_use = "a Run does nothing until it is driven"]
pub struct Run<'r, C = SystemClock> {
    worker: &'r mut Worker,
    executor: &'r mut Executor,
    clock: C,
}

impl<C> std::fmt::Debug for Run<'_, C> {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("Run")
            .field("run_id", &self.worker.setup().run_id)
            .finish_non_exhaustive()
    }
}

impl<'r> Run<'r> {
    /// The run `worker` drives through `executor`, on the wall clock.
    pub fn new(worker: &'r mut Worker, executor: &'r mut Executor) -> Run<'r> {
        Run {
            worker,
            executor,
            clock: SystemClock,
        }
    }
}

impl<'r, C: Clock> Run<'r, C> {
    /// The same run on `clock` (`&mut` of your clock works too).
    pub fn clock<D: Clock>(self, clock: D) -> Run<'r, D> {
        Run {
            worker: self.worker,
            executor: self.executor,
            clock,
        }
    }

    /// Drives the run to its end: the model through `agent`, the tools through `tools`
    /// ([`drive_run`]).
    ///
    /// # Errors
    ///
    /// As [`drive_run`]'s.
    pub fn drive(mut self, agent: &mut dyn Agent, tools: &mut dyn ToolExecution) -> Result<Ending, Error> {
        drive_run(self.worker, self.executor, agent, tools, &mut self.clock)
    }
}

impl<C: Clock + ?Sized> Clock for &mut C {
    fn now_ms(&mut self) -> u64 {
        (**self).now_ms()
    }
    fn wait_ms(&mut self, duration_ms: u64) {
        (**self).wait_ms(duration_ms);
    }
}

/// Runs `worker` from its start to its end: ledger steps through `executor`, the rest through
/// the driver's `agent`, `tools` and `clock` ([`Run`] is the same with the wall clock by
/// default). A synchronous driver's whole loop.
///
/// # Errors
///
/// [`Error::Ledger`] when the ledger fails (the run stops where it was: a worker started
/// again recovers it from the ledger); [`Error::Input`] when the worker was not fresh;
/// [`Error::Stalled`] when the machine waits for something no driver step brings.
pub fn drive_run(
    worker: &mut Worker,
    executor: &mut Executor,
    agent: &mut dyn Agent,
    tools: &mut dyn ToolExecution,
    clock: &mut dyn Clock,
) -> Result<Ending, Error> {
    let mut command = worker.handle(clock.now_ms(), Input::Start)?;
    // Attempts of a batch that ended as they were begun (a tool that sends and waits): fed
    // when the machine is free for them, before any the tool still has out.
    let mut ended: VecDeque<Ended> = VecDeque::new();
    loop {
        let Some(current) = command.take() else {
            if worker.in_flight().is_empty() {
                return exited(worker);
            }
            // Free with a batch's requests out: the next to end is the next input.
            let Some(end) = ended.pop_front().or_else(|| tools.next_ended()) else {
                return Err(Error::Stalled {
                    phase: Phase::WaitForAnswer,
                });
            };
            let how = match end.how {
                Attempt::NotSent { .. } => Attempt::TimedOut,
                how => how,
            };
            command = worker.handle(clock.now_ms(), how.into_input(end.key, end.attempt))?;
            continue;
        };
        let phase = current.phase();
        let step = executor.perform(current, clock.now_ms())?;
        if let Some(contradiction) = &step.contradiction {
            tools.contradicted(contradiction);
        }
        let input = match step.next {
            Next::Feed(input) => input,
            // A late answer logged, and nothing else for this driver to wait for.
            Next::Nothing => return Err(Error::Stalled { phase }),
            Next::Drive(drive) => {
                // A batch's send is begun and the machine goes on; any other drive is done now.
                let begun = Sending::of(&drive)
                    .filter(|_| worker.runs_batch())
                    .map(|sending| begin_in_batch(tools, &mut ended, &sending));
                match begun {
                    Some(input) => input,
                    None => match driven(drive, executor, agent, tools, clock)? {
                        Driven::Feed(input) => *input,
                        Driven::End(ending) => return Ok(ending),
                        Driven::Exit => return exited(worker),
                    },
                }
            }
        };
        command = worker.handle(clock.now_ms(), input)?;
    }
}

/// A batch's request begun: the machine hears it left ([`Input::Sent`]) and goes on with the
/// batch; an attempt that already ended waits in `ended` for the machine to be free. A tool
/// that refused before sending is the machine's to hear now.
fn begin_in_batch(tools: &mut dyn ToolExecution, ended: &mut VecDeque<Ended>, sending: &Sending<'_>) -> Input {
    let (key, attempt) = (sending.key.clone(), sending.attempt);
    match tools.begin(sending) {
        Begun::Ended(Attempt::NotSent { reason }) => Input::NotAttempted { reason },
        Begun::Ended(how) => {
            ended.push_back(Ended {
                key: key.clone(),
                attempt,
                how,
            });
            Input::Sent { key, attempt }
        }
        Begun::InFlight => Input::Sent { key, attempt },
    }
}

enum Driven {
    Feed(Box<Input>),
    End(Ending),
    /// The machine exited the run: how is the worker's to say ([`exited`]).
    Exit,
}

/// The ending of a worker that has nothing more to do: how its run ended, or — if it did not
/// exit the run (nothing a driver can do brings its next input) — stalled after its phase.
pub(crate) fn exited(worker: &Worker) -> Result<Ending, Error> {
    match worker.exit() {
        Some(exit) => Ok(Ending::Exited(exit.clone())),
        None => Err(Error::Stalled { phase: Phase::Exit }),
    }
}

/// The driver's part of one step.
fn driven(
    drive: Drive,
    executor: &mut Executor,
    agent: &mut dyn Agent,
    tools: &mut dyn ToolExecution,
    clock: &mut dyn Clock,
) -> Result<Driven, Error> {
    let input = match drive {
        Drive::AskModel { state } => match agent.decide(&state) {
            Ok((decision, state)) => Input::ModelDecided { decision, state },
            Err(error) => Input::StateUnusable {
                detail: error.to_string(),
            },
        },
        Drive::Send { .. } => match Sending::of(&drive) {
            Some(sending) => tools.send(&sending).into_input(sending.key.clone(), sending.attempt),
            // Never: the drive is a send. Were it not, nothing was sent, and the run stops.
            None => return Err(Error::Stalled { phase: Phase::Send }),
        },
        Drive::Backoff { after_ms, .. } | Drive::WaitToLookAgain { after_ms, .. } => {
            clock.wait_ms(after_ms);
            Input::BackoffElapsed
        }
        Drive::LookUp {
            key,
            call,
            recorded_at_ms,
        } => {
            // Read before asking: "nothing there" is weighed as of when the question was put.
            let asked_at_ms = clock.now_ms();
            let step = match tools.look_up_sent(&Sending::looking_up(&key, &call, recorded_at_ms)) {
                LookUp::Found(found) => executor.reconciled(
                    key,
                    Some((found.receipt.as_str(), found.finding.as_str())),
                    clock.now_ms(),
                )?,
                LookUp::Absent => executor.reconciled(key, None, asked_at_ms)?,
                LookUp::CannotTell { reason } => executor.cannot_tell(key, &reason),
            };
            if let Some(contradiction) = &step.contradiction {
                tools.contradicted(contradiction);
            }
            return follow(step.next, Phase::Reconcile, executor, agent, tools, clock);
        }
        Drive::Undo { key, call } => {
            let detail = tools.undo(&key, &call);
            let next = executor.undone(key, &detail, clock.now_ms())?.next;
            return follow(next, Phase::Compensate, executor, agent, tools, clock);
        }
        Drive::Park { key } => return Ok(Driven::End(Ending::Parked(key))),
        Drive::StandDown { note } => return Ok(Driven::End(Ending::StoodDown(note))),
        Drive::WaitForPerson { reason } => return Ok(Driven::End(Ending::WaitsForPerson(reason))),
        Drive::Exit => return Ok(Driven::Exit),
    };
    Ok(Driven::Feed(Box::new(input)))
}

/// The executor's answer to a look-up (`phase`: reconcile) or an undo (compensate). It feeds
/// the machine; were it ever a drive, that drive is carried out as any other, and nothing to
/// do is a stall after `phase` — the loop holds whatever the executor answers, with no panic.
fn follow(
    next: Next,
    phase: Phase,
    executor: &mut Executor,
    agent: &mut dyn Agent,
    tools: &mut dyn ToolExecution,
    clock: &mut dyn Clock,
) -> Result<Driven, Error> {
    match next {
        Next::Feed(input) => Ok(Driven::Feed(Box::new(input))),
        Next::Drive(drive) => driven(drive, executor, agent, tools, clock),
        Next::Nothing => Err(Error::Stalled { phase }),
    }
}
