//! The tool-execution ledger: real SQLite through rusqlite, the memory store, or a store
//! from another crate (PostgreSQL).
//!
//! Four tables: `tool_executions` (one row per idempotency key), its append-only
//! `tool_execution_history`, `run_checkpoints` (versioned) and the runs' own append-only
//! `run_history`. A file on disk in normal use, so a person can open it with `sqlite3` while
//! runs go on; a named in-memory database for tests and simulations.
//!
//! Every store, one logic: each operation reads the rows it needs through [`Tables`],
//! decides with the pure functions of `operations.rs` (which apply the runtime's decision
//! tables, [`crate::rules`]), and writes the result through [`Tables`] again. SQLite
//! implements it with cached statements in a `BEGIN IMMEDIATE` transaction (`sqlite.rs`); the
//! memory store with ordered maps behind a mutex (`memory.rs`), for the simulator's bulk runs;
//! an [`ExternalStore`] (the PostgreSQL store lives in its own crate, because its client
//! brings an async runtime this crate must not have) with its own transactions. The tests
//! hold the stores to the same answers.
//!
//! Durability: file ledgers use WAL with `synchronous = FULL`. A reservation that is lost
//! after its commit returned would let a recovered run call the tool again — a second credit
//! — so every commit is made durable before the tool runs, even against power loss; the cost
//! is one fsync per commit, measured in the benchmarks. Each process (and each simulated
//! worker) holds its own connection: dropping it rolls back whatever transaction it had open,
//! exactly as SIGKILL would.

#![warn(missing_docs)]

mod calls;
mod contradiction;
mod decisions;
mod error;
mod events;
mod filter;
mod group;
mod memory;
mod operations;
mod records;
mod request;
#[cfg(feature = "sqlite")]
mod sqlite;
/// Without the `sqlite` feature, the SQLite store's connection is a type with no values: every
/// operation keeps its SQLite arm (one logic for every store) and that arm can never run.
#[cfg(not(feature = "sqlite"))]
#[path = "no_sqlite.rs"]
mod sqlite;
mod store_error;

use std::path::Path;
#[cfg(feature = "sqlite")]
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};

use serde::{Deserialize, Serialize};
use sqlite::Connection;

pub use contradiction::{Contradiction, ContradictionSource, contradicts};
pub use error::LedgerError;
pub use events::{HistoryEvent, RunEvent};
pub use filter::RecordFilter;
pub use group::{
    BATCH_MAX_DEFAULT, BATCH_MAX_LIMIT, BatchConnection, CommitEnd, GroupSettings, GroupStats, MemberBody, MemberEnd,
    RERUNS_MAX,
};
pub use operations::{CheckpointRow, HistoryLine, RecordWrite, RunHistoryLine, Tables};
pub use records::{
    AttemptStart, Checkpoint, CheckpointSave, ExecutionRecord, FoldedReservation, HistoryEntry, LateAnswer,
    OperatorDecision, Recorded, Reservation, RunHistoryEntry, SaveOutcome, SettleError, Settlement, StoredHistoryLine,
};
pub use request::ReserveRequest;
#[cfg(feature = "sqlite")]
pub use sqlite::listing_plan;
/// Twice's benchmark sets up raw SQLite exactly as a ledger file (rusqlite's types, so not for
/// the lean API).
#[cfg(all(feature = "sqlite", feature = "simulation"))]
pub use sqlite::{FileSettingsError, apply_file_settings};
pub use store_error::StoreError;

use crate::key::IdempotencyKey;

/// The schema this code writes and reads. Version 1 files are migrated when opened; any other
/// number is refused, not migrated blindly.
pub const SCHEMA_VERSION: u32 = 2;
/// How long a connection waits for another's write lock (shared by every Twice database).
pub const BUSY_TIMEOUT_MS: u64 = 5_000;
/// The most rows one listing returns.
pub const LIST_LIMIT_MAX: u32 = 1_000;

#[cfg(feature = "sqlite")]
static MEMORY_LEDGERS: AtomicU64 = AtomicU64::new(0);
static MEMORY_STORES: AtomicU64 = AtomicU64::new(0);

/// Which store holds a ledger's rows. Both run the same operations (see [`Tables`]); they
/// differ only in how a row is read and written.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LedgerStore {
    /// Real SQLite: a file, or a named in-memory database (feature `sqlite`, on by default).
    #[cfg_attr(feature = "sqlite", default)]
    Sqlite,
    /// Plain Rust collections in memory, for one thread: bulk runs where SQLite itself would be
    /// most of a run's time, and the store of a build without SQLite.
    #[cfg_attr(not(feature = "sqlite"), default)]
    Memory,
}

impl LedgerStore {
    /// The store's name on the command line (`sqlite`, `memory`).
    pub fn name(self) -> &'static str {
        match self {
            LedgerStore::Sqlite => "sqlite",
            LedgerStore::Memory => "memory",
        }
    }
}

impl std::fmt::Display for LedgerStore {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str(self.name())
    }
}

/// A name that is no ledger store's.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("`{0}` is not a ledger store; one of sqlite, memory")]
pub struct UnknownLedgerStore(pub String);

impl std::str::FromStr for LedgerStore {
    type Err = UnknownLedgerStore;

    fn from_str(text: &str) -> Result<LedgerStore, UnknownLedgerStore> {
        [LedgerStore::Sqlite, LedgerStore::Memory]
            .into_iter()
            .find(|store| store.name() == text)
            .ok_or_else(|| UnknownLedgerStore(text.to_owned()))
    }
}

/// A store that lives in another crate (the PostgreSQL store): its own connection, its own
/// transactions, the same rows. The ledger's operations run on it unchanged through
/// [`Tables`]; its reads answer in the same order as SQLite's.
pub trait ExternalStore: std::fmt::Debug + Send {
    /// Where the store is, for messages; never a secret (no password).
    fn describe(&self) -> String;
    /// Another connection to the same store, as another process would open it.
    ///
    /// # Errors
    ///
    /// [`LedgerError`]: the store reports its client's failure as [`LedgerError::Store`] (or
    /// [`LedgerError::Open`] when it cannot connect at all).
    fn connect_again(&self) -> Result<Box<dyn ExternalStore>, LedgerError>;
    /// Runs `body` as one transaction that makes two reservers of one key impossible.
    /// `body` answers whether to commit (`true`) or roll back (`false`); it may be run again
    /// when the store must retry a transaction (a serialization failure), so it keeps no state
    /// of its own between runs.
    ///
    /// # Errors
    ///
    /// [`LedgerError`]: the store reports its client's failure as [`LedgerError::Store`] (or
    /// [`LedgerError::Locked`] when another connection holds what it needs).
    fn transaction(
        &mut self,
        context: &'static str,
        body: &mut dyn FnMut(&mut dyn Tables) -> Result<bool, LedgerError>,
    ) -> Result<(), LedgerError>;
    /// The record of `key`, if there is one.
    ///
    /// # Errors
    ///
    /// [`LedgerError`]: the store reports its client's failure as [`LedgerError::Store`] (or
    /// [`LedgerError::Locked`] when another connection holds what it needs).
    fn record(&mut self, key: &IdempotencyKey) -> Result<Option<ExecutionRecord>, LedgerError>;
    /// Records in (updated_at_ms, key) order, as [`Ledger::records`] describes.
    ///
    /// # Errors
    ///
    /// [`LedgerError`]: the store reports its client's failure as [`LedgerError::Store`] (or
    /// [`LedgerError::Locked`] when another connection holds what it needs).
    fn records(&mut self, filter: &RecordFilter<'_>) -> Result<Vec<ExecutionRecord>, LedgerError>;
    /// Every record, by creation time then key.
    ///
    /// # Errors
    ///
    /// [`LedgerError`]: the store reports its client's failure as [`LedgerError::Store`] (or
    /// [`LedgerError::Locked`] when another connection holds what it needs).
    fn all_records(&mut self) -> Result<Vec<ExecutionRecord>, LedgerError>;
    /// History lines in id order, of one key or of all.
    ///
    /// # Errors
    ///
    /// [`LedgerError`]: the store reports its client's failure as [`LedgerError::Store`] (or
    /// [`LedgerError::Locked`] when another connection holds what it needs).
    fn history(&mut self, key: Option<&IdempotencyKey>) -> Result<Vec<HistoryEntry>, LedgerError>;
    /// The run's checkpoint, if it saved one.
    ///
    /// # Errors
    ///
    /// [`LedgerError`]: the store reports its client's failure as [`LedgerError::Store`] (or
    /// [`LedgerError::Locked`] when another connection holds what it needs).
    fn checkpoint(&mut self, run_id: &str) -> Result<Option<Checkpoint>, LedgerError>;
    /// Every checkpoint, by run id.
    ///
    /// # Errors
    ///
    /// [`LedgerError`]: the store reports its client's failure as [`LedgerError::Store`] (or
    /// [`LedgerError::Locked`] when another connection holds what it needs).
    fn checkpoints(&mut self) -> Result<Vec<Checkpoint>, LedgerError>;
    /// Run history lines in id order, of one run or of all.
    ///
    /// # Errors
    ///
    /// [`LedgerError`]: the store reports its client's failure as [`LedgerError::Store`] (or
    /// [`LedgerError::Locked`] when another connection holds what it needs).
    fn run_history(&mut self, run_id: Option<&str>) -> Result<Vec<RunHistoryEntry>, LedgerError>;
    /// Contradiction lines, newest first, at most `limit`, of `tenant`'s calls or of all (see
    /// [`Ledger::contradictions`]). The default reads every history line and each line's
    /// record; a store with a query of its own answers the same.
    ///
    /// # Errors
    ///
    /// [`LedgerError`]: the store reports its client's failure as [`LedgerError::Store`] (or
    /// [`LedgerError::Locked`] when another connection holds what it needs).
    fn contradictions(&mut self, tenant: Option<&str>, limit: usize) -> Result<Vec<HistoryEntry>, LedgerError> {
        let mut found = Vec::new();
        for entry in self.history(None)?.into_iter().rev() {
            if found.len() >= limit {
                break;
            }
            if entry.event != HistoryEvent::Contradicted {
                continue;
            }
            let theirs = match tenant {
                None => true,
                Some(tenant) => self.record(&entry.key)?.is_some_and(|record| record.tenant == tenant),
            };
            if theirs {
                found.push(entry);
            }
        }
        Ok(found)
    }
}

/// A connection to a ledger. One per process (or simulated worker).
#[derive(Debug)]
pub struct Ledger {
    store: Store,
    location: Location,
}

#[derive(Debug)]
enum Store {
    #[cfg_attr(
        not(feature = "sqlite"),
        expect(dead_code, reason = "without SQLite the variant holds a type with no values")
    )]
    Sqlite(Connection),
    Memory(memory::MemoryConnection),
    /// Behind a mutex only so that reads, which take `&self` here, may use the external
    /// store's `&mut self` connection; one thread uses a connection at a time.
    External(std::sync::Mutex<Box<dyn ExternalStore>>),
    /// One run's handle on its process's commit group (`group.rs`).
    Grouped(group::Member),
}

#[derive(Clone, Debug)]
enum Location {
    #[cfg(feature = "sqlite")]
    File(PathBuf),
    #[cfg(feature = "sqlite")]
    Memory(String),
    /// A memory store, by number: its description is only formatted when an error needs it.
    MemoryStore(u64),
    External(String),
}

impl Location {
    fn describe(&self) -> String {
        match self {
            #[cfg(feature = "sqlite")]
            Location::File(path) => path.display().to_string(),
            #[cfg(feature = "sqlite")]
            Location::Memory(name) => format!("memory ledger {name}"),
            Location::MemoryStore(number) => format!("memory store ledger {number}"),
            Location::External(description) => description.clone(),
        }
    }
}

impl Ledger {
    #[cfg(feature = "sqlite")]
    /// Opens a ledger file, creating it (and its schema) if it does not exist. A version 1
    /// ledger is migrated to this build's schema.
    ///
    /// # Errors
    ///
    /// [`LedgerError::Open`] when the file cannot be opened or made durable (WAL),
    /// [`LedgerError::NotALedger`] for a file that is something else (left untouched),
    /// [`LedgerError::Corrupt`], [`LedgerError::SchemaVersion`] for a ledger of another schema,
    /// [`LedgerError::Locked`].
    pub fn open(path: impl AsRef<Path>) -> Result<Ledger, LedgerError> {
        sqlite::open_file(path.as_ref(), true)
    }

    #[cfg(feature = "sqlite")]
    /// Opens a ledger file that must already exist and already be a ledger: it never creates
    /// the file or its schema ([`LedgerError::Missing`] for no file, [`LedgerError::NotALedger`]
    /// for an empty one). For a long-running process (the operator API) that must never answer
    /// from a fresh empty ledger because the file it serves was deleted under it.
    ///
    /// # Errors
    ///
    /// [`LedgerError::Missing`] when there is no file there; [`LedgerError::NotALedger`] for an
    /// empty database or another file; otherwise as [`Ledger::open`].
    pub fn open_existing(path: impl AsRef<Path>) -> Result<Ledger, LedgerError> {
        sqlite::open_file(path.as_ref(), false)
    }

    #[cfg(feature = "sqlite")]
    /// Asks `allow` just before every commit on this connection, with the write lock held; a
    /// commit it refuses is rolled back and the write fails. Lets a server check that the file
    /// at the path it serves is still the one this connection writes (not deleted or replaced)
    /// at the last moment a write can still be undone. Only a SQLite ledger has commits to
    /// refuse: any other is refused with [`LedgerError::Open`].
    ///
    /// # Errors
    ///
    /// [`LedgerError::Open`] for a ledger that is not a SQLite connection of its own (a memory
    /// store, an external store, a commit group).
    pub fn refuse_commits_unless(&self, mut allow: impl FnMut() -> bool + Send + 'static) -> Result<(), LedgerError> {
        match &self.store {
            // SQLite turns the commit into a rollback when the hook answers true.
            Store::Sqlite(connection) => {
                connection.commit_hook(Some(move || !allow()));
                Ok(())
            }
            Store::Memory(_) | Store::External(_) | Store::Grouped(_) => Err(LedgerError::Open {
                location: self.location(),
                detail: "only a SQLite ledger's commits (without a commit group) can be guarded".into(),
            }),
        }
    }

    #[cfg(feature = "sqlite")]
    /// A fresh in-memory SQLite ledger, shared by every connection made with
    /// [`Ledger::connect_again`]. It lives while any of its connections does. Meant for one
    /// thread (the simulator): SQLite's shared cache answers contention with `SQLITE_LOCKED`
    /// at once instead of waiting, so concurrent writers get [`LedgerError::Locked`] rather
    /// than a queue.
    ///
    /// # Errors
    ///
    /// [`LedgerError::Open`] when SQLite cannot open the in-memory database;
    /// [`LedgerError::Locked`] or [`LedgerError::Failed`] when its schema cannot be written.
    pub fn open_memory() -> Result<Ledger, LedgerError> {
        let name = format!("twice-ledger-{}", MEMORY_LEDGERS.fetch_add(1, Ordering::Relaxed));
        sqlite::open_new_memory(&name)
    }

    /// A fresh ledger in the memory store ([`LedgerStore::Memory`]): the same rows and the
    /// same answers as [`Ledger::open_memory`], without SQLite. Shared by every connection
    /// made with [`Ledger::connect_again`]; meant for one thread, and like the SQLite memory
    /// ledger it answers a connection that finds another's transaction open with `Locked`.
    pub fn open_memory_store() -> Ledger {
        Ledger {
            store: Store::Memory(memory::MemoryConnection::new()),
            location: Location::MemoryStore(MEMORY_STORES.fetch_add(1, Ordering::Relaxed)),
        }
    }

    /// A fresh in-memory ledger in the given store.
    ///
    /// # Errors
    ///
    /// As [`Ledger::open_memory`] for SQLite; [`LedgerError::Open`] for SQLite in a build without
    /// the `sqlite` feature.
    pub fn open_in(store: LedgerStore) -> Result<Ledger, LedgerError> {
        match store {
            #[cfg(feature = "sqlite")]
            LedgerStore::Sqlite => Ledger::open_memory(),
            #[cfg(not(feature = "sqlite"))]
            LedgerStore::Sqlite => Err(LedgerError::Open {
                location: "an in-memory SQLite ledger".into(),
                detail: "this build has no SQLite store (twice-runtime's feature `sqlite` is off)".into(),
            }),
            LedgerStore::Memory => Ok(Ledger::open_memory_store()),
        }
    }

    /// A ledger on a store from another crate (see [`ExternalStore`]).
    pub fn on_external(store: Box<dyn ExternalStore>) -> Ledger {
        let location = Location::External(store.describe());
        Ledger {
            store: Store::External(std::sync::Mutex::new(store)),
            location,
        }
    }

    /// Which built-in store holds this ledger's rows (`None`: an external store).
    pub fn store(&self) -> Option<LedgerStore> {
        match self.store {
            Store::Sqlite(_) => Some(LedgerStore::Sqlite),
            Store::Memory(_) => Some(LedgerStore::Memory),
            Store::Grouped(group::Member {
                reads: group::Reads::Sqlite(_),
                ..
            }) => Some(LedgerStore::Sqlite),
            Store::External(_) | Store::Grouped(_) => None,
        }
    }

    /// Another connection to the same ledger, as another process would open it.
    ///
    /// # Errors
    ///
    /// As [`Ledger::open`] for a file (it may have been replaced meanwhile); an external
    /// store's own error; [`LedgerError::Store`] when an earlier operation on this connection
    /// panicked (the connection is not used again).
    pub fn connect_again(&self) -> Result<Ledger, LedgerError> {
        match (&self.location, &self.store) {
            (_, Store::Memory(connection)) => Ok(Ledger {
                store: Store::Memory(connection.connect_again()),
                location: self.location.clone(),
            }),
            (location, Store::External(store)) => {
                Ok(Ledger::on_external(lock_external(store, location)?.connect_again()?))
            }
            // Another run of the same process: it joins the same commit group.
            (location, Store::Grouped(member)) => member.join(location),
            (location, Store::Sqlite(connection)) => sqlite::connect_again(connection, location),
        }
    }

    /// Where this ledger lives, for messages (a file's path, to open with `sqlite3`).
    pub fn location(&self) -> String {
        self.location.describe()
    }

    /// The ledger's file, for a file ledger.
    pub fn path(&self) -> Option<&Path> {
        match &self.location {
            #[cfg(feature = "sqlite")]
            Location::File(path) => Some(path),
            #[cfg(feature = "sqlite")]
            Location::Memory(_) => None,
            Location::MemoryStore(_) | Location::External(_) => None,
        }
    }

    /// Runs `body` as one transaction on whichever store holds the rows: committed when it
    /// returns `Ok`, rolled back when it returns `Err`.
    fn transaction<T, E: From<LedgerError>>(
        &mut self,
        context: &'static str,
        commit_context: &'static str,
        mut body: impl FnMut(&mut dyn Tables) -> Result<T, E>,
    ) -> Result<T, E> {
        match &mut self.store {
            Store::Sqlite(connection) => sqlite::transaction(connection, &self.location, context, commit_context, body),
            Store::Memory(connection) => connection.transaction(&|| self.location.describe(), context, false, body),
            Store::External(store) => {
                let mut answer: Option<Result<T, E>> = None;
                lock_external(store, &self.location)?.transaction(context, &mut |tables| {
                    let outcome = body(tables);
                    let commit = outcome.is_ok();
                    answer = Some(outcome);
                    Ok(commit)
                })?;
                answer.unwrap_or_else(|| Err(not_run(&self.location, context).into()))
            }
            Store::Grouped(member) => {
                let mut answer: Option<Result<T, E>> = None;
                member.group.run(context, &mut |tables| {
                    let outcome = body(tables);
                    let commit = outcome.is_ok();
                    answer = Some(outcome);
                    Ok(commit)
                })?;
                answer.unwrap_or_else(|| Err(not_run(&self.location, context).into()))
            }
        }
    }

    /// A read outside any transaction, on whichever store holds the rows.
    fn read<T>(
        &self,
        context: &'static str,
        table: memory::Table,
        sqlite: impl FnOnce(&Connection, &Location) -> Result<T, LedgerError>,
        in_memory: impl FnOnce(&memory::MemoryTables) -> T,
        external: impl FnOnce(&mut dyn ExternalStore) -> Result<T, LedgerError>,
    ) -> Result<T, LedgerError> {
        match &self.store {
            Store::Sqlite(connection) => sqlite(connection, &self.location),
            Store::Memory(connection) => connection.read(&|| self.location.describe(), context, table, in_memory),
            Store::External(store) => external(lock_external(store, &self.location)?.as_mut()),
            Store::Grouped(group::Member { reads, .. }) => match reads {
                group::Reads::Sqlite(connection) => sqlite(connection, &self.location),
                group::Reads::External(store) => external(lock_external(store, &self.location)?.as_mut()),
            },
        }
    }
}

/// The external store's connection. A panic while it was held leaves a connection whose state
/// nobody knows; the next user finds it poisoned and gets an error rather than a guess.
fn lock_external<'a>(
    store: &'a std::sync::Mutex<Box<dyn ExternalStore>>,
    location: &Location,
) -> Result<std::sync::MutexGuard<'a, Box<dyn ExternalStore>>, LedgerError> {
    store.lock().map_err(|_| LedgerError::Store {
        location: location.describe(),
        context: "taking the connection",
        detail: "an operation on this connection panicked earlier; it is not used again".into(),
    })
}

/// A store that answered a transaction without running its body: nothing was decided.
fn not_run(location: &Location, context: &'static str) -> LedgerError {
    LedgerError::Store {
        location: location.describe(),
        context,
        detail: "the store ended the transaction without running it".into(),
    }
}
