//! The engine: the deterministic world a run happens in. The billing world and its tools,
//! Penny's model, levels and tapes, the simulator that drives the runtime through them, the
//! player's hand, and the checker that counts effects. Nothing here analyses a run after the
//! fact or knows the campaign: those sit above (`sim/tests/layers.rs` holds the order).

pub mod billing;
pub mod billing_tools;
pub mod checker;
pub mod hand;
pub mod key_look;
pub mod level;
pub mod model;
pub mod outcome;
pub mod replay;
pub mod simulation_lock;
pub mod simulator;
pub mod upgrade;
