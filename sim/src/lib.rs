//! Twice's simulation crate: the billing world, the deterministic simulator, levels and
//! tapes, the checker, the drills, the operator API, the browser edition and the command line.
//!
//! The runtime itself is the crate `twice-runtime` (`sim/runtime`), re-exported here as
//! [`runtime`] and [`ledger`]: a sans-IO state machine that takes events and returns
//! commands, the ledger and the executor that carries out the machine's ledger commands.
//! The simulator (`simulator`) is one driver of it; real worker processes (`drill`) are
//! another. Nothing in the simulation reads the wall clock or ambient randomness.

pub mod api;
pub mod bench;
pub mod billing;
pub mod campaign;
pub mod checker;
pub mod cli;
pub mod debrief;
pub mod defend;
pub mod drill;
pub mod error;
pub mod exit;
pub mod explore;
pub mod glossary;
pub mod hand;
pub mod ledger_target;
pub mod level;
pub mod model;
pub mod presenter_notes;
pub mod replay;
pub mod report;
pub mod rulebook;
pub mod simulator;
pub mod upgrade;
pub mod web;

pub use twice_ledger_postgres as ledger_postgres;
pub use twice_runtime as runtime;
pub use twice_runtime::{ledger, sqlite_file};
