//! Twice's simulation crate: the ledger-backed agent runtime, the SQLite ledger,
//! the billing world, the deterministic simulator, levels and tapes, and the checker.
//!
//! The runtime (`runtime`) is a sans-IO state machine: it takes events and returns
//! commands. The simulator (`simulator`) is one driver of it; real worker processes
//! are another. Nothing in here reads the wall clock or ambient randomness.

pub mod api;
pub mod bench;
pub mod billing;
pub mod campaign;
pub mod checker;
pub mod cli;
pub mod drill;
pub mod error;
pub mod explore;
pub mod ledger;
pub mod level;
pub mod model;
pub mod report;
pub mod runtime;
pub mod simulator;
pub mod sqlite_file;
