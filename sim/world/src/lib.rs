//! Twice's world (crate `twice-world`): everything deterministic around the runtime — the
//! billing world, Penny's script, levels and tapes, the simulator, the checker, debriefs
//! (with the counterfactual that finds which guards decided a run, and the player's
//! predictions), the rulebook, the explorer, the defender, the campaign, the glossary and the
//! presenter notes.
//!
//! The runtime itself is the crate `twice-runtime` (`sim/runtime`), re-exported here as
//! [`runtime`] and [`ledger`]: a sans-IO state machine that takes events and returns
//! commands, the ledger and the executor that carries out the machine's ledger commands.
//! The simulator ([`simulator`]) is one driver of it; real worker processes (crate
//! `twice-drill`) are another. Nothing here reads the wall clock or ambient randomness, and
//! nothing here knows HTTP, an async runtime or a process: the game and the servers above
//! it bring those.

pub mod billing;
pub mod billing_tools;
pub mod campaign;
pub mod campaign_par;
pub mod campaign_path;
pub mod campaign_sweep;
pub mod checker;
pub mod counterfactual;
pub mod debrief;
pub mod defend;
pub mod error;
pub mod exit;
pub mod explore;
pub mod glossary;
pub mod hand;
pub mod key_look;
pub mod level;
pub mod model;
pub mod outcome;
pub mod play_session;
pub mod prediction;
pub mod presenter_notes;
pub mod replay;
pub mod replay_link;
pub mod report;
pub mod rulebook;
pub mod simulation_lock;
pub mod simulator;
pub mod text;
pub mod upgrade;

pub use twice_runtime as runtime;
pub use twice_runtime::{ledger, sqlite_file};
