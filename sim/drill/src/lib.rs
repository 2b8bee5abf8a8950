//! Twice's persistence drills (crate `twice-drill`): real operating-system processes, real
//! SIGKILLs, nothing paid twice.
//!
//! The simulator proves the runtime's rules on virtual time; a drill proves them on real
//! processes. Three commands, each a real process:
//!
//! - `twice-sim billing` ([`billing_server`]): the billing world as an HTTP server over its
//!   own SQLite file. The key rules are [`twice_world::billing::Billing`]'s, unchanged: the server
//!   keeps one `Billing` in memory, appends every applied entry to SQLite and replays them
//!   through the same `Billing` when it starts again ([`billing_store`]).
//! - `twice-sim worker` ([`worker_process`]): one run, driven by the same sans-IO machine the
//!   simulator drives ([`twice_world::runtime::worker::Worker`]), against a real ledger file, a real
//!   clock and real HTTP. It prints a marker line before every phase ([`marker`]).
//! - `twice-sim drill` ([`supervisor`]): starts billing and workers, SIGKILLs workers at seeded
//!   moments (reading their markers to land kills mid-call), starts fresh processes to recover,
//!   optionally starts duplicates, then reads the ledger and the billing database and checks
//!   every call and every credit ([`check`]).
//!
//! - `twice-sim drill-batch-crash` ([`batch_crash`]): one process of many runs on a commit
//!   group, SIGKILLed mid-batch; every call billing saw must be in the ledger, every
//!   acknowledged outcome too.
//!
//! A run's script is not passed around: it is derived from the run id ([`script`]), so a
//! worker, the drill and the checker all agree on what each run owes without a shared file.

pub mod batch_crash;
pub mod billing_server;
pub mod billing_store;
pub mod billing_target;
pub mod check;
pub mod flags;
pub mod hosts;
pub mod ledger_target;
pub mod marker;
pub mod runtime_protocol;
pub mod script;
pub mod supervisor;
pub mod worker_process;

pub use batch_crash::{BatchCrashArgs, BatchCrashChildArgs, batch_crash_child_command, batch_crash_command};
pub use billing_server::{BillingArgs, billing_command};
pub use supervisor::{DrillArgs, DrillReport, drill_command};
pub use worker_process::{WorkerArgs, worker_command};

pub use twice_serve::shutdown::{stdin_end, stop_signal, stop_when_stdin_closes};
pub use twice_world::exit::{EXIT_BAD_INPUT, EXIT_FAILED, EXIT_INTERRUPTED, EXIT_OK};

/// Milliseconds since the Unix epoch: every process of a drill stamps the shared ledger
/// with the same clock, so `created_at_ms` of one process compares with another's.
pub fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |elapsed| u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX))
}
