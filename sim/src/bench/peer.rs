//! Figure 2's peer: the same cycle through the `agent-effects` crate (0.2.0) and its SQLite
//! store (`agent-effects-sqlite`, sqlx underneath). Compiled only with the `peer-benchmark`
//! feature, and included as is by the criterion benchmark (`benches/ledger.rs`), where the
//! peer is a dev-dependency: the product never links it.
//!
//! The cycle is the peer's ordinary path for one side effect: `runtime.effect(name, key)
//! .kind(IrreversibleWrite).input(..).run(action)` with an action that returns at once, so
//! only the bookkeeping is measured. Reading its source (0.2.0): the store opens the file
//! with WAL and `synchronous = FULL`, like ours, and one such call makes five write
//! transactions — insert, take the lease, start the attempt, record success, release the
//! lease — where ours makes two (reserve, complete).

use std::path::{Path, PathBuf};

use agent_effects::{EffectFailure, EffectKind, EffectOutcome, Runtime};
use agent_effects_sqlite::SqliteStore;

/// The peer's name and version in reports.
pub const PEER_NAME: &str = "agent-effects 0.2.0 (SQLite store)";

/// A runtime of the peer on its own SQLite file, driven from one current-thread tokio
/// runtime (its store is async).
pub struct PeerCycles {
    executor: tokio::runtime::Runtime,
    runtime: Runtime<SqliteStore>,
    path: PathBuf,
}

impl std::fmt::Debug for PeerCycles {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The peer's runtime has no `Debug`; its file says which one this is.
        formatter.debug_struct("PeerCycles").field("path", &self.path).finish()
    }
}

impl PeerCycles {
    pub fn open(path: &Path) -> Result<PeerCycles, String> {
        let executor = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|error| format!("starting an async runtime for the peer: {error}"))?;
        let store = executor
            .block_on(SqliteStore::open(path))
            .map_err(|error| format!("{}: the peer's store did not open: {error}", path.display()))?;
        Ok(PeerCycles {
            executor,
            runtime: Runtime::new(store),
            path: path.to_path_buf(),
        })
    }

    pub fn name(&self) -> String {
        PEER_NAME.into()
    }

    /// Runs effects `first..first + count`, each with a new key, each to `Committed`.
    pub fn run(&mut self, first: u64, count: u64, arguments: &str, result: &str) -> Result<(), String> {
        let input: serde_json::Value =
            serde_json::from_str(arguments).map_err(|error| format!("the benchmark's arguments: {error}"))?;
        let output: serde_json::Value =
            serde_json::from_str(result).map_err(|error| format!("the benchmark's result: {error}"))?;
        self.executor.block_on(async {
            for item in first..first + count {
                let output = output.clone();
                let outcome = self
                    .runtime
                    .effect("issue_credit", format_args!("bench:c{item}"))
                    .kind(EffectKind::IrreversibleWrite)
                    .input(&input)
                    .run(move |_context| {
                        let output = output.clone();
                        async move { Ok::<serde_json::Value, EffectFailure>(output) }
                    })
                    .await
                    .map_err(|error| format!("{}: effect bench:c{item}: {error}", self.path.display()))?;
                if !matches!(outcome, EffectOutcome::Committed(_)) {
                    return Err(format!(
                        "{}: effect bench:c{item} did not commit: {outcome:?}",
                        self.path.display()
                    ));
                }
            }
            Ok(())
        })
    }
}
