//! Ledger connections for request handlers.
//!
//! SQLite calls block, so each runs on tokio's blocking threads, never on the async
//! workers. A connection is opened per concurrent request and kept for the next one
//! (opening checks the file's schema and integrity, which costs more than the query).
//! Writers serialize in SQLite itself (`BEGIN IMMEDIATE` with a busy timeout), which is
//! what makes two operators' compare-and-set decisions come out one winner, one 409.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::http::StatusCode;
use tokio::sync::Semaphore;

use super::error::ApiError;
use super::{CONNECTION_WAIT_MS, CONNECTIONS_MAX};
use crate::ledger::{Ledger, LedgerError};

pub(crate) struct LedgerPool {
    path: PathBuf,
    idle: Mutex<Vec<Ledger>>,
    /// One permit per connection in use: at most [`CONNECTIONS_MAX`] at once.
    permits: Arc<Semaphore>,
}

impl LedgerPool {
    /// Opens one connection now, so a file that is not a ledger is refused at start.
    pub(crate) fn open(path: &Path) -> Result<LedgerPool, LedgerError> {
        let first = Ledger::open(path)?;
        Ok(LedgerPool {
            path: path.to_path_buf(),
            idle: Mutex::new(vec![first]),
            permits: Arc::new(Semaphore::new(CONNECTIONS_MAX)),
        })
    }

    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    fn take(&self) -> Result<Ledger, LedgerError> {
        // A poisoned lock only means another thread panicked while pushing or popping;
        // the vector itself is whole.
        let idle = self.idle.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).pop();
        match idle {
            Some(ledger) => Ok(ledger),
            None => Ledger::open(&self.path),
        }
    }

    fn give_back(&self, ledger: Ledger) {
        let mut idle = self.idle.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if idle.len() < CONNECTIONS_MAX {
            idle.push(ledger);
        }
    }

    /// Runs `work` with a ledger connection on a blocking thread. Once started, the work
    /// runs to its end even if the caller hangs up: a decision is never half-made.
    pub(crate) async fn run<T: Send + 'static>(
        self: &Arc<Self>,
        work: impl FnOnce(&mut Ledger) -> Result<T, ApiError> + Send + 'static,
    ) -> Result<T, ApiError> {
        let permit = tokio::time::timeout(
            Duration::from_millis(CONNECTION_WAIT_MS),
            Arc::clone(&self.permits).acquire_owned(),
        )
        .await
        .map_err(|_| {
            ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "busy",
                format!("every ledger connection stayed busy for {CONNECTION_WAIT_MS} ms; try again"),
            )
        })?
        .map_err(|_| ApiError::internal("the server is shutting down"))?;
        let pool = Arc::clone(self);
        let joined = tokio::task::spawn_blocking(move || {
            let _permit = permit;
            let mut ledger = pool.take()?;
            let outcome = work(&mut ledger);
            pool.give_back(ledger);
            outcome
        })
        .await;
        match joined {
            Ok(outcome) => outcome,
            Err(error) => {
                eprintln!("operator API: a ledger task failed: {error}");
                Err(ApiError::internal(
                    "the request failed inside the server; the server's log has the detail",
                ))
            }
        }
    }
}
