//! The agent runtime's tool-execution rules, as one piece of code used unchanged
//! by the simulator and by real worker processes.

pub mod guards;
pub mod key;
pub mod operator;
pub mod rules;
pub mod run;
pub mod tool;
pub mod worker;

pub use guards::{Guard, Guards};
pub use key::{IdempotencyKey, KeyScheme};
pub use rules::{OutcomeAction, ReservationAction, Status};
pub use tool::{ContractViolation, SideEffect, ToolDeclaration, assert_tool_contract};
