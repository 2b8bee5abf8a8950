//! Twice's agent runtime: the seed's tool-execution rules as one piece of code, used unchanged
//! by the simulator and by real worker processes.
//!
//! - [`worker`]: the runtime's decisions for one run, a sans-IO state machine that takes
//!   [`worker::Input`]s and returns [`worker::Command`]s.
//! - [`rules`]: the three decision tables, readable in one place.
//! - [`ledger`]: the tool-execution ledger, in SQLite or in the memory store, one decision
//!   logic for both.
//! - [`executor`]: carries out every ledger command of the worker, once, for every driver.
//!   The simulator and the `twice-sim worker` process call it and handle only what is theirs:
//!   time, the network, the model and the process.
//! - [`operator`]: resolve and compensate, the one implementation for every console.
//! - [`workflow`]: the workflow node around a run: whether a failed run is started again.
//!
//! Nothing here reads the wall clock, waits, or iterates a hash map (the crate's
//! `clippy.toml` makes the compiler check it): the time is always given as `now_ms`.
//! Nothing here knows billing either: a tool's answer arrives as a [`answer::ToolAnswer`].

#![warn(missing_docs)]

pub mod answer;
mod error;
pub mod execution;
pub mod executor;
pub mod guards;
pub mod ids;
pub mod key;
pub mod ledger;
pub mod operator;
pub mod progress;
pub mod rules;
pub mod run;
pub mod sqlite_file;
pub mod tool;
pub mod worker;
pub mod workflow;

pub use answer::ToolAnswer;
pub use error::Error;
pub use guards::{Guard, Guards, NaiveRefusal};
pub use ids::{RunId, Tenant, ToolName, WorkerId};
pub use key::{IdempotencyKey, KeyScheme};
pub use rules::{OutcomeAction, ReservationAction, Status};
pub use tool::{ContractViolation, SideEffect, ToolDeclaration, assert_tool_contract};
