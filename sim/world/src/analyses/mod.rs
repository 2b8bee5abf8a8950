//! The analyses: what Twice works out about runs the engine played. The counterfactual
//! re-runs that find which guards decided, the debrief built on them, the explorer and the
//! defender that search for heists, the sweep over single moves, the rulebook, the
//! player's predictions, and a tape's run step by step as another driver of the runtime must
//! play it (the expected run, which tapes can be played that way, and the take-home program
//! written from it). They read the engine and the campaign; the engine never reads them.

pub mod campaign_sweep;
pub mod counterfactual;
pub mod debrief;
pub mod defend;
pub mod expected;
pub mod explore;
pub mod export;
pub mod expressible;
pub mod prediction;
pub mod rulebook;
