//! Twice's command line (crate `twice-sim`): one file per subcommand ([`commands`]), the
//! argument parser that dispatches to them ([`cli`]) and the benchmarks ([`bench`]).
//!
//! The layers it drives are crates of their own, each depending only on those before it:
//! `twice-runtime` (the seed's rules, the ledger, the executor) ← `twice-world` (billing,
//! levels, the simulator, the checker, debriefs, the campaign) ← `twice-serve` (the operator
//! API and the browser edition) ← `twice-drill` (real processes). They are re-exported here
//! under the names the command line's tests use.

pub mod bench;
pub mod cli;
pub mod commands;

pub use twice_drill as drill;
pub use twice_drill::ledger_target;
pub use twice_ledger_postgres as ledger_postgres;
pub use twice_serve::{api, web};
pub use twice_world::{
    billing, campaign, cards, checker, counterfactual, debrief, defend, error, exit, explore, glossary, guards, hand,
    ledger, level, model, outcome, prediction, presenter_notes, replay, report, rulebook, runtime, simulator,
    sqlite_file, text, upgrade,
};
