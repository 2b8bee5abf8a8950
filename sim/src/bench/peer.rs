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

use agent_effects::store::StoreError;
use agent_effects::{EffectFailure, EffectKind, EffectOutcome, Runtime, RuntimeError};
use agent_effects_sqlite::SqliteStore;

/// The peer's name and version in reports.
pub const PEER_NAME: &str = "agent-effects 0.2.0 (SQLite store)";

/// Why the peer's store did not open or one of its effects did not commit: each names the
/// store's file and the effect, and keeps the peer's own error.
#[derive(Debug, thiserror::Error)]
pub enum PeerError {
    #[error("starting an async runtime for the peer: {0}")]
    Runtime(#[source] std::io::Error),
    #[error("{}: the peer's store did not open: {source}", path.display())]
    Open {
        path: PathBuf,
        #[source]
        source: StoreError,
    },
    #[error("the benchmark's arguments: {0}")]
    Arguments(#[source] serde_json::Error),
    #[error("the benchmark's result: {0}")]
    Result(#[source] serde_json::Error),
    #[error("{}: effect bench:c{item}: {source}", path.display())]
    Effect {
        path: PathBuf,
        item: u64,
        #[source]
        source: RuntimeError,
    },
    #[error("{}: effect bench:c{item} did not commit: {outcome}", path.display())]
    NotCommitted { path: PathBuf, item: u64, outcome: String },
}

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
    pub fn open(path: &Path) -> Result<PeerCycles, PeerError> {
        let executor = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(PeerError::Runtime)?;
        let store = executor
            .block_on(SqliteStore::open(path))
            .map_err(|source| PeerError::Open {
                path: path.to_path_buf(),
                source,
            })?;
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
    pub fn run(&mut self, first: u64, count: u64, arguments: &str, result: &str) -> Result<(), PeerError> {
        let input: serde_json::Value = serde_json::from_str(arguments).map_err(PeerError::Arguments)?;
        let output: serde_json::Value = serde_json::from_str(result).map_err(PeerError::Result)?;
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
                    .map_err(|source| PeerError::Effect {
                        path: self.path.clone(),
                        item,
                        source,
                    })?;
                if !matches!(outcome, EffectOutcome::Committed(_)) {
                    return Err(PeerError::NotCommitted {
                        path: self.path.clone(),
                        item,
                        outcome: format!("{outcome:?}"),
                    });
                }
            }
            Ok(())
        })
    }
}
