//! Persistence drills: real operating-system processes, real SIGKILLs, nothing paid twice.
//!
//! The simulator proves the runtime's rules on virtual time; a drill proves them on real
//! processes. Three commands, each a real process:
//!
//! - `twice-sim billing` ([`billing_server`]): the billing world as an HTTP server over its
//!   own SQLite file. The key rules are [`crate::billing::Billing`]'s, unchanged: the server
//!   keeps one `Billing` in memory, appends every applied entry to SQLite and replays them
//!   through the same `Billing` when it starts again ([`billing_store`]).
//! - `twice-sim worker` ([`worker_process`]): one run, driven by the same sans-IO machine the
//!   simulator drives ([`crate::runtime::worker::Worker`]), against a real ledger file, a real
//!   clock and real HTTP. It prints a marker line before every phase ([`marker`]).
//! - `twice-sim drill` ([`supervisor`]): starts billing and workers, SIGKILLs workers at seeded
//!   moments (reading their markers to land kills mid-call), starts fresh processes to recover,
//!   optionally starts duplicates, then reads the ledger and the billing database and checks
//!   every call and every credit ([`check`]).
//!
//! A run's script is not passed around: it is derived from the run id ([`script`]), so a
//! worker, the drill and the checker all agree on what each run owes without a shared file.

pub mod billing_server;
pub mod billing_store;
pub mod check;
pub mod hosts;
pub mod marker;
pub mod script;
pub mod supervisor;
pub mod worker_process;

pub use billing_server::{BillingArgs, billing_command};
pub use supervisor::{DrillArgs, DrillReport, drill_command};
pub use worker_process::{WorkerArgs, worker_command};

pub use crate::exit::{EXIT_BAD_INPUT, EXIT_FAILED, EXIT_INTERRUPTED, EXIT_OK};

/// Milliseconds since the Unix epoch: every process of a drill stamps the shared ledger
/// with the same clock, so `created_at_ms` of one process compares with another's.
pub fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |elapsed| u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX))
}

/// Calls `on_end` once standard input reaches its end (or fails), from a thread of its own.
fn on_stdin_end(on_end: impl FnOnce() + Send + 'static) {
    std::thread::spawn(move || {
        let mut sink = [0_u8; 256];
        let mut stdin = std::io::stdin().lock();
        loop {
            match std::io::Read::read(&mut stdin, &mut sink) {
                Err(error) if error.kind() == std::io::ErrorKind::Interrupted => {}
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            }
        }
        on_end();
    });
}

/// Resolves once standard input reaches its end: a server shuts down gracefully when the
/// drill that started it goes away.
pub fn stdin_end() -> tokio::sync::oneshot::Receiver<()> {
    let (sender, receiver) = tokio::sync::oneshot::channel();
    on_stdin_end(move || {
        let _ = sender.send(());
    });
    receiver
}

/// Exits the process as soon as standard input reaches its end. The drill holds every
/// child's standard input open; if the drill dies, even by SIGKILL, the pipe closes and its
/// children follow instead of running on unsupervised.
pub fn stop_when_stdin_closes(exit_code: i32) {
    on_stdin_end(move || std::process::exit(exit_code));
}

/// Ctrl-C or SIGTERM.
pub async fn stop_signal() {
    let interrupt = async {
        if tokio::signal::ctrl_c().await.is_err() {
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = interrupt => {}
        () = terminate => {}
    }
}
