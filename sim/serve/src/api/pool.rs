//! Ledger connections for request handlers.
//!
//! Ledger calls block, so each runs on tokio's blocking threads, never on the async
//! workers. A connection is opened per concurrent request and kept for the next one
//! (opening checks the file's schema and integrity, which costs more than the query).
//! Writers serialize in SQLite itself (`BEGIN IMMEDIATE` with a busy timeout), or in
//! PostgreSQL's serializable transactions, which is what makes two operators'
//! compare-and-set decisions come out one winner, one 409.
//!
//! The server serves the one file it was started on, for as long as it runs. If that file is
//! deleted or replaced (another file, even a copy, moved to its path), the decisions taken so
//! far live only in the old file: answering from a fresh empty ledger, or writing into a file
//! nobody will open again, would lose them without a word. So the file's identity (device and
//! inode) is taken at start and checked before every request that uses a connection, again
//! inside every write just before its commit (a commit hook rolls the write back if the file
//! changed), and once more after the work; any mismatch answers 503 `ledger_gone` and writes
//! nothing. New connections never create a file ([`Ledger::open_existing`]). One connection is
//! held for the pool's whole life, so the original inode cannot be freed and reused by a new
//! file at the same path, which would otherwise pass for the original. A ledger in
//! PostgreSQL has no file to lose; new connections to it never create its tables either.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::http::StatusCode;
use tokio::sync::Semaphore;

use super::error::ApiError;
use super::{CONNECTION_WAIT_MS, CONNECTIONS_MAX};
use crate::api::served::ServedLedger;
use twice_world::ledger::{Ledger, LedgerError};

/// Which file a path names. On Unix the device and inode: deleting the file or moving another
/// one to its path changes them, renaming it elsewhere and back does not. Elsewhere the
/// file's creation time stands in for the inode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct FileIdentity {
    device: u64,
    inode: u64,
}

impl FileIdentity {
    pub(super) fn of(path: &Path) -> io::Result<FileIdentity> {
        let metadata = std::fs::metadata(path)?;
        #[cfg(unix)]
        {
            use std::os::unix::fs::MetadataExt;
            Ok(FileIdentity {
                device: metadata.dev(),
                inode: metadata.ino(),
            })
        }
        #[cfg(not(unix))]
        {
            let created = metadata.created()?;
            let since_epoch = created.duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
            Ok(FileIdentity {
                device: 0,
                inode: u64::try_from(since_epoch.as_nanos()).unwrap_or(u64::MAX),
            })
        }
    }
}

/// The ledger file the server was started on, and how to tell it is still at its path.
#[derive(Clone, Debug)]
struct ServedFile {
    path: PathBuf,
    identity: FileIdentity,
}

impl ServedFile {
    fn still_there(&self) -> bool {
        FileIdentity::of(&self.path).is_ok_and(|identity| identity == self.identity)
    }

    fn check(&self) -> Result<(), ApiError> {
        if self.still_there() { Ok(()) } else { Err(gone()) }
    }
}

/// The answer while the served file is gone or replaced.
fn gone() -> ApiError {
    eprintln!(
        "operator API: the ledger file this server was started on was deleted or replaced; \
         every request is refused until it is back at its path (restart the server to serve another file)"
    );
    ApiError::new(
        StatusCode::SERVICE_UNAVAILABLE,
        "ledger_gone",
        "the ledger file this server serves was deleted or replaced while it ran; nothing was read \
         or written. The operator running the server must put the file back or restart the server",
    )
}

/// The answer when the served file changed while a request ran. A write whose commit found
/// the file changed was rolled back; one that committed just before went into the old file.
fn gone_during_the_request() -> ApiError {
    let mut answer = gone();
    answer.message = "the ledger file this server serves was deleted or replaced while your request ran: \
                      anything it wrote is in the file that was there before, not in the one at the path now. \
                      The operator running the server must put the file back or restart the server"
        .into();
    answer
}

pub(crate) struct LedgerPool {
    target: ServedLedger,
    /// The served file, when the ledger is a SQLite file.
    file: Option<ServedFile>,
    idle: Mutex<Vec<Ledger>>,
    /// One permit per connection in use: at most [`CONNECTIONS_MAX`] at once.
    permits: Arc<Semaphore>,
    /// Never lent out: while it is open the original file's inode stays allocated, so no new
    /// file can take its number (see the module's documentation).
    _anchor: Mutex<Ledger>,
}

impl LedgerPool {
    /// Opens the existing ledger file at `path` (refusing a missing file or one that is not a
    /// ledger) and remembers which file it is.
    pub(crate) fn open(path: &Path) -> Result<LedgerPool, LedgerError> {
        LedgerPool::open_target(&ServedLedger::File(path.to_path_buf()))
    }

    /// [`LedgerPool::open`] on a ledger file or a ledger in PostgreSQL.
    pub(crate) fn open_target(target: &ServedLedger) -> Result<LedgerPool, LedgerError> {
        let ServedLedger::File(path) = target else {
            let anchor = target.open_existing()?;
            let pool = LedgerPool {
                target: target.clone(),
                file: None,
                idle: Mutex::new(Vec::new()),
                permits: Arc::new(Semaphore::new(CONNECTIONS_MAX)),
                _anchor: Mutex::new(anchor),
            };
            return Ok(pool);
        };
        let anchor = Ledger::open_existing(path)?;
        let identity = FileIdentity::of(path).map_err(|error| LedgerError::Open {
            location: path.display().to_string(),
            detail: format!("cannot read the file's identity: {error}"),
        })?;
        let file = ServedFile {
            path: path.to_path_buf(),
            identity,
        };
        let pool = LedgerPool {
            target: target.clone(),
            file: Some(file),
            idle: Mutex::new(Vec::new()),
            permits: Arc::new(Semaphore::new(CONNECTIONS_MAX)),
            _anchor: Mutex::new(anchor),
        };
        // A file swapped between opening the anchor and reading the identity would pass;
        // the first connection, checked against the identity, would not.
        let first = pool.connect().map_err(|_| LedgerError::Open {
            location: path.display().to_string(),
            detail: "the file changed while it was being opened".into(),
        })?;
        pool.give_back(first);
        Ok(pool)
    }

    pub(crate) fn target(&self) -> &ServedLedger {
        &self.target
    }

    /// The served file is still at its path (always, for a ledger that is no file).
    fn check(&self) -> Result<(), ApiError> {
        self.file.as_ref().map_or(Ok(()), ServedFile::check)
    }

    fn still_there(&self) -> bool {
        self.file.as_ref().is_none_or(ServedFile::still_there)
    }

    /// A new connection to the served ledger, never creating one; for a file, one whose
    /// commits are refused once the file at the path is no longer the served one.
    fn connect(&self) -> Result<Ledger, ApiError> {
        let Some(file) = &self.file else {
            return self.target.open_existing().map_err(ApiError::from_ledger);
        };
        let ledger = Ledger::open_existing(&file.path).map_err(|error| match error {
            LedgerError::Missing { .. } => gone(),
            other => ApiError::from_ledger(other),
        })?;
        // Opened by path: make sure the path still named the served file when it was opened.
        file.check()?;
        let file = file.clone();
        ledger.refuse_commits_unless(move || file.still_there())?;
        Ok(ledger)
    }

    fn take(&self) -> Result<Ledger, ApiError> {
        // A poisoned lock only means another thread panicked while pushing or popping;
        // the vector itself is whole.
        let idle = self.idle.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).pop();
        match idle {
            Some(ledger) => Ok(ledger),
            None => self.connect(),
        }
    }

    fn give_back(&self, ledger: Ledger) {
        let mut idle = self.idle.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if idle.len() < CONNECTIONS_MAX {
            idle.push(ledger);
        }
    }

    /// On a blocking thread already: runs one short `step` with a connection, taken just
    /// for it and given back at once, so nothing holds a connection between steps (a
    /// compensation asks billing between its ledger steps, and a slow billing must not keep
    /// connections from the reads and resolves of everyone else). The served file is checked
    /// as [`LedgerPool::run`] checks it.
    pub(super) fn with_connection<T>(
        &self,
        handle: &tokio::runtime::Handle,
        step: impl FnOnce(&mut Ledger) -> T,
    ) -> Result<T, ApiError> {
        self.check()?;
        let permit = handle
            .block_on(tokio::time::timeout(
                Duration::from_millis(CONNECTION_WAIT_MS),
                Arc::clone(&self.permits).acquire_owned(),
            ))
            .map_err(|_| {
                ApiError::new(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "busy",
                    format!("every ledger connection stayed busy for {CONNECTION_WAIT_MS} ms; try again"),
                )
            })?
            .map_err(|_| ApiError::internal("the server is shutting down"))?;
        self.check()?;
        let mut ledger = self.take()?;
        let answer = step(&mut ledger);
        self.give_back(ledger);
        drop(permit);
        if !self.still_there() {
            return Err(gone_during_the_request());
        }
        Ok(answer)
    }

    /// Runs `work` with a ledger connection on a blocking thread. Once started, the work
    /// runs to its end even if the caller hangs up: a decision is never half-made.
    ///
    /// The served file is checked before the work and after it; a write is also checked
    /// just before its commit, and rolled back if the file changed. Any mismatch answers
    /// 503 `ledger_gone`, whatever the work answered: its reads came from, or its writes
    /// went to, a file that is no longer the ledger.
    pub(crate) async fn run<T: Send + 'static>(
        self: &Arc<Self>,
        work: impl FnOnce(&mut Ledger) -> Result<T, ApiError> + Send + 'static,
    ) -> Result<T, ApiError> {
        self.check()?;
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
            // Checked again: the wait for a permit may have been long.
            pool.check()?;
            let mut ledger = pool.take()?;
            let outcome = work(&mut ledger);
            pool.give_back(ledger);
            if !pool.still_there() {
                return Err(gone_during_the_request());
            }
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
