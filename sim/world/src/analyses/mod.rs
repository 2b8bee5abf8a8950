//! The analyses: what Twice works out about runs the engine played. The counterfactual
//! re-runs that find which guards decided, the debrief built on them, the explorer and the
//! defender that search for heists, the sweep over single moves, the rulebook and the
//! player's predictions. They read the engine and the campaign; the engine never reads them.

pub mod campaign_sweep;
pub mod counterfactual;
pub mod debrief;
pub mod defend;
pub mod explore;
pub mod prediction;
pub mod rulebook;
