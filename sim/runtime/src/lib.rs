//! An agent runtime whose side effects happen once. Each tool call is written to a ledger
//! before it runs, keyed by `<run_id>:<tool_call_id>`; the key travels to the system the tool
//! changes; writes get one attempt; a timeout after the request left is recorded as
//! `indeterminate` (unknown, never guessed), and the run pauses until a reconcile hook or an
//! operator settles the call. The same code drives production workers and Twice's simulator.
//!
//! # Quick start
//!
//! A typed tool, a memory ledger (use [`ledger::Ledger::open`] for a SQLite file), a model
//! that makes one call, and the synchronous driver:
//!
//! ```
//! use serde::{Deserialize, Serialize};
//! use twice_runtime::execution::{Agent, AgentError, Ending, Exit, Run, moved_on, next_call};
//! use twice_runtime::executor::Executor;
//! use twice_runtime::ledger::Ledger;
//! use twice_runtime::run::{Arguments, Decision, RunState};
//! use twice_runtime::tool::SideEffect;
//! use twice_runtime::toolbox::{CallContext, Tool, ToolFailure, Toolbox};
//! use twice_runtime::worker::{Worker, WorkerSetup};
//! use twice_runtime::{IdempotencyKey, Status};
//!
//! #[derive(Serialize, Deserialize)]
//! struct Email { to: String }
//!
//! #[derive(Serialize)]
//! struct Sent { message_id: String }
//!
//! struct SendEmail;
//!
//! impl Tool for SendEmail {
//!     type Args = Email;
//!     type Output = Sent;
//!     const NAME: &'static str = "send_email";
//!     const SIDE_EFFECT: SideEffect = SideEffect::External;
//!
//!     async fn call(&self, email: Email, context: CallContext<'_>) -> Result<Sent, ToolFailure> {
//!         // A real tool sends `context.idempotency_key()` as the provider's idempotency key.
//!         let key = context.idempotency_key().ok_or(ToolFailure::NotSent("no key".into()))?;
//!         Ok(Sent { message_id: format!("msg for {} under {key}", email.to) })
//!     }
//! }
//!
//! /// The model: one email, then done.
//! struct Model;
//!
//! impl Agent for Model {
//!     fn decide(&mut self, state: &RunState) -> Result<(Decision, RunState), AgentError> {
//!         if state.last_told.is_some() {
//!             return Ok((Decision::Done, moved_on(state).ok_or("no more items")?));
//!         }
//!         let email = Arguments::from_typed(&Email { to: "ada@example.com".into() })?;
//!         next_call(state, "send_email", email).ok_or_else(|| "no more calls".into())
//!     }
//! }
//!
//! # fn main() -> Result<(), twice_runtime::Error> {
//! let mut tools = Toolbox::new().with(SendEmail);
//! let ledger = Ledger::open_memory_store();
//! let setup = WorkerSetup::new("worker-1", "welcome-ada", tools.declarations());
//! let mut executor = Executor::new(ledger.connect_again()?, &setup);
//! let mut worker = Worker::new(setup)?; // refuses a setup it cannot run, never panics
//! // On this thread, with the wall clock (`.clock(…)` gives another); `driver::AsyncRun` on tokio.
//! let ending = Run::new(&mut worker, &mut executor).drive(&mut Model, &mut tools)?;
//! assert_eq!(ending, Ending::Exited(Exit::Completed));
//!
//! let key = IdempotencyKey::per_call("welcome-ada", "c1")?;
//! let record = ledger.record(&key)?.expect("the call is in the ledger");
//! assert_eq!(record.status, Status::Completed);
//! # Ok(())
//! # }
//! ```
//!
//! In the repository, `cargo run -p twice-runtime --example reconciliation` shows the rest in a
//! minute: a lost answer found by the reconcile hook, an operator settling a call that never
//! landed, a compensation on request, and a call refused before anything was sent. (From a crate
//! that depends on this one, copy the example's file into your `examples/`.)
//!
//! # What the runtime cannot check for you
//!
//! - **Call ids come from the run, never from the model provider.** A key is
//!   `<run_id>:<call_id>`, and [`execution::next_call`] numbers calls from the run's own counter,
//!   so the replay after a crash makes the same id and meets the same ledger record. A provider's
//!   tool-call id (`call_…`) is new each time the model is asked again: used as the call id, a
//!   recovered run makes a new key, and the email is sent twice.
//! - **Run ids are unique across ledgers** whose keys reach the same provider account: one
//!   ledger refuses a run id another tenant's run has
//!   ([`ledger::LedgerError::RunOfAnotherTenant`], before anything is loaded or sent), but two
//!   ledgers cannot see each other. Give every run a fresh id (a UUID, or the tenant in it).
//! - **[`execution::Ending::Exited`] is not success**: the run is over, and its
//!   [`execution::Exit`] says how — completed or failed (with why) in this start, dead-lettered,
//!   or [`execution::Exit::AlreadyOver`]: the run id had already ended before this start, so
//!   nothing ran. A new piece of work needs a new run id.
//! - **One live process per worker id.** A process restarted under its predecessor's id (or
//!   made with [`worker::WorkerSetup::replacing`] the dead worker's id) records the calls that
//!   worker left `started` as `indeterminate` when it meets them, so an operator finds them
//!   among the unknown calls and settles them; two live processes sharing an id would take each
//!   other's calls for orphans. A worker told nothing leaves another worker's `started` call
//!   alone (it may be a live twin), and an operator settles it only acknowledging it may be in
//!   flight.
//! - **Recovery asks the model again from the last checkpoint.** Keep what the model needs to
//!   decide the same way in [`run::RunState::application`], which is saved with the checkpoint.
//!
//! What it does refuse, loudly: an id holding `:` (the key's separator: run `a:b` with call
//! `c` and run `a` with call `b:c` would share a key) when the worker is made or the model
//! calls; a run that would end while a call reserved before a crash is still unknown (the model
//! asked again decided otherwise: the run waits for a person,
//! [`worker::WaitReason::AbandonedCall`], and an operator finds the call with
//! `ledger.records(RecordFilter::default().with_status(Status::Started))`); a model that
//! decides more than [`worker::WorkerSetup::decisions_max`] times in one start
//! ([`worker::WaitReason::DecisionLimit`]).
//! - **The tool contract is checked when the run starts**, not when the worker is made: a write
//!   declared with retries or without a key ends the run as
//!   [`execution::Ending::WaitsForPerson`] (`ContractRefused`) before anything is sent. Call
//!   [`worker::WorkerSetup::check_contracts`] at boot or in a test to learn it when the setup
//!   is made.
//!
//! # Modules
//!
//! - [`worker`]: the runtime's decisions for one run, a sans-IO state machine that takes
//!   [`worker::Input`]s and returns [`worker::Command`]s. [`worker::Worker::new`] checks the
//!   setup.
//! - [`rules`]: the decision tables, readable in one place.
//! - [`ledger`]: the tool-execution ledger, in SQLite or in the memory store, one decision
//!   logic for both.
//! - [`executor`]: carries out every ledger command of the worker, once, for every driver.
//! - [`execution`]: the synchronous driver, [`execution::Run`], and the traits it drives.
//! - [`toolbox`]: typed tools, dispatched by name.
//! - `driver` (feature `tokio`): the async driver, `driver::AsyncRun`; a model turn's calls
//!   are in flight at once.
//! - [`operator`]: resolve and compensate, the one implementation for every console.
//! - [`workflow`]: the workflow node around a run: whether a failed run is started again.
//!
//! # Features
//!
//! - `sqlite` (default): the SQLite ledger, `Ledger::open` and the rest. Without it, the memory
//!   store ([`ledger::Ledger::open_memory_store`]) and any [`ledger::ExternalStore`] remain.
//! - `tokio`: the async driver, `driver::drive`.
//! - `simulation`: the switches a simulation uses to show what each guard prevents (guards
//!   switched off, the naive runtimes, test hooks; see [`guards`]). Not covered by semver; an
//!   agent never enables it. Without it, no program can switch a guard off.
//!
//! Nothing here reads the wall clock except [`execution::SystemClock`], waits outside a
//! driver, or iterates a hash map (the crate's `clippy.toml` makes the compiler check it): the
//! time is always given as `now_ms`. Nothing here knows the other systems either: a tool's
//! answer arrives as a [`answer::ToolAnswer`]; every error converts into [`Error`].

#![warn(missing_docs)]
// A library's fallible and panicking functions say when: `# Errors` and `# Panics` sections,
// checked by clippy (CI denies warnings).
#![warn(clippy::missing_errors_doc, clippy::missing_panics_doc)]

/// An item of a simulation's switches (a guard turned off, a naive mode, a test hook): public with
/// the `simulation` feature, crate-private without it. The runtime's own code still reaches it
/// (with every guard on, only the on-branch runs), but a stranger's program cannot name it, so
/// the lean API has no way to turn a safety rule off.
macro_rules! simulation_api {
    ($(#[$meta:meta])* pub $($item:tt)*) => {
        $(#[$meta])*
        #[cfg(feature = "simulation")]
        pub $($item)*

        $(#[$meta])*
        #[cfg(not(feature = "simulation"))]
        #[allow(dead_code, reason = "the game's switch: used only when `simulation` is on")]
        pub(crate) $($item)*
    };
}

pub mod answer;
pub mod batch;
#[cfg(feature = "tokio")]
pub mod driver;
mod error;
pub mod execution;
pub mod executor;
pub mod guards;
pub mod ids;
pub mod key;
#[cfg(doctest)]
mod lean_api;
pub mod ledger;
pub mod operator;
pub mod progress;
pub mod rules;
pub mod run;
/// Opening SQLite files as Twice opens them (rusqlite's types: Twice's own crates use it).
#[cfg(all(feature = "sqlite", feature = "simulation"))]
pub mod sqlite_file;
#[cfg(all(feature = "sqlite", not(feature = "simulation")))]
mod sqlite_file;
pub mod tool;
pub mod toolbox;
pub mod worker;
pub mod workflow;

pub use answer::ToolAnswer;
pub use error::Error;
#[cfg(feature = "simulation")]
pub use guards::NaiveRefusal;
pub use guards::{Guard, Guards};
pub use ids::{RunId, Tenant, ToolName, WorkerId};
pub use key::{IdempotencyKey, KeyScheme};
pub use rules::{OutcomeAction, ReservationAction, Status};
pub use tool::{ContractViolation, SideEffect, ToolDeclaration, assert_tool_contract};
