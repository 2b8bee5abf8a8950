//! What one step of a simulation ran, in a form a driver can act on: the runtime protocol's
//! conductor plays a simulated run's steps again on real processes (a worker's phase becomes a
//! go-ahead to a process, a message's arrival a request let through a proxy), so it must know
//! which event each step was, not only what the timeline says of it.

use super::Phase;
use super::clock::Event;

/// The event a step ran. Reading it costs nothing the step does not already do: a worker's
/// phase, the hot path, carries no text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StepEvent {
    /// Worker `worker` ran `phase` (or died about to run it, in a level's crash loop).
    Worker { worker: u32, phase: Phase },
    /// Message `message` arrived: a request at billing, or a response at its worker (read it
    /// from [`super::Simulation::messages`] before the step: it leaves the wire as it arrives).
    Deliver { message: u32 },
    /// The timer of `attempt` of the call `key` that worker `worker` sent fired.
    Timeout { worker: u32, key: String, attempt: u32 },
    /// A worker's backoff, or its wait before looking a call up again, ended.
    Timer { worker: u32 },
    /// The supervisor started a worker to recover `run` after a crash.
    Restart { run: String },
    /// A parked worker was told its call was settled.
    Wake { worker: u32 },
    /// A parked worker was asked to look at its call again.
    LookAgain { worker: u32 },
    /// The level's honest operator checked the call `key` and decided it.
    HonestCheck { key: String },
    /// The level's auditor checked billing against the ledger.
    Audit,
    /// Worker `worker`'s pause ended: it runs again.
    Resume { worker: u32 },
    /// Billing applied request `message`, which it had received earlier and held.
    Apply { message: u32 },
    /// Someone outside the agent changed an account's owner (the world's `index`th scripted change).
    OwnerChange { index: usize },
}

impl StepEvent {
    pub(super) fn of(event: &Event) -> StepEvent {
        match event {
            Event::Worker { worker, command } => StepEvent::Worker {
                worker: *worker,
                phase: command.phase(),
            },
            Event::Deliver { message } => StepEvent::Deliver { message: *message },
            Event::Timeout {
                worker, key, attempt, ..
            } => StepEvent::Timeout {
                worker: *worker,
                key: key.clone(),
                attempt: *attempt,
            },
            Event::Backoff { worker } => StepEvent::Timer { worker: *worker },
            Event::Restart { run, .. } => StepEvent::Restart { run: run.clone() },
            Event::Wake { worker } => StepEvent::Wake { worker: *worker },
            Event::LookAgain { worker } => StepEvent::LookAgain { worker: *worker },
            Event::HonestCheck { key } => StepEvent::HonestCheck { key: key.clone() },
            Event::Audit => StepEvent::Audit,
            Event::Resume { worker } => StepEvent::Resume { worker: *worker },
            Event::Apply { message } => StepEvent::Apply { message: *message },
            Event::OwnerChange { index } => StepEvent::OwnerChange { index: *index },
        }
    }
}
