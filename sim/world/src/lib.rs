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

// The crate in folders that say what they are (the order in which they may use one another is
// held by `sim/tests/layers.rs`): the words the engine speaks, the engine, the campaign, the
// analyses, the code on screen, and the play session the game and the browser share. The
// modules are private; this list is the crate's surface.
mod analyses;
mod engine;
mod words;

pub mod campaign;
pub mod code;
pub mod error;
pub mod exit;
pub mod guards;
pub mod play_session;
pub mod replay_link;
pub mod screen;
pub mod take_home;

pub use analyses::{
    campaign_sweep, counterfactual, debrief, defend, expected, explore, export, expressible, prediction, rulebook,
};
pub use engine::{
    billing, billing_tools, cards, checker, hand, key_look, level, model, outcome, replay, simulation_lock, simulator,
    upgrade,
};
pub use twice_runtime as runtime;
pub use twice_runtime::{ledger, sqlite_file};
pub use words::{glossary, keys, ledger_words, presenter_notes, report, text, workshop_plan};
