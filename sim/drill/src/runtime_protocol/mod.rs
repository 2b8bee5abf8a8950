//! Bring your own runtime: a driver protocol through which Twice drives an agent runtime that
//! is not its own — any program, in any language — through a level's tapes, and judges the
//! money it moves.
//!
//! Twice starts the runtime's command once per worker (`sh -c CMD`) and speaks JSON lines on
//! its standard input and output ([`messages`]). Twice plays everything around the runtime:
//!
//! - **the model**: the runtime asks (`model`, with what the model was told so far) and Twice
//!   answers with the next tool call, from the level's script and model policy
//!   ([`model_side`]);
//! - **the world**: the runtime's tools call the billing server of `twice-sim billing`, started
//!   for the tape with the level's accounts, key handling and terms ([`crate::billing_server`]),
//!   through a proxy that is the level's wire ([`proxy`]): it holds each request and answer,
//!   loses or slows them, or refuses one before anything happens;
//! - **the faults**: a crash is a SIGKILL of the process at a step it marked, a twin a second
//!   process on the same run, a recovery a fresh process ([`process`]);
//! - **the scheduler**: every process waits at each step it marks (`mark`) for Twice's `go`, so
//!   the processes move one at a time in the order the simulator's run took them
//!   ([`conductor`]);
//! - **the checker**: billing's money per customer and per intent against the simulator's run
//!   of the same tape with exactly the guards the runtime claims to implement ([`expected`]).
//!
//! [`run::run_tape`] plays one tape; the `twice-sim replay --runtime` and `explore --runtime`
//! commands play many. [`adapter`] is Twice's own runtime speaking the protocol, the reference
//! every other runtime is held to.

pub mod adapter;
pub mod conductor;
pub mod messages;
pub mod model_side;
pub mod process;
pub mod proxy;
pub mod run;

// The expected run and the list of tapes that can be played live in twice-world, beside the
// simulator they are computed from: `twice-sim export` and both editions' "Take it home" use
// them too.
pub use conductor::{LIMITS, Limits};
pub use expressible::Reason;
pub use messages::PROTOCOL_VERSION;
pub use run::{RuntimeUnderTest, Summary, TapeOutcome, TapeReport, run_tape};
pub use twice_world::expected::{self, describe_play};
pub use twice_world::expressible;
