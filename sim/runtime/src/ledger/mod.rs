//! The tool-execution ledger: real SQLite through rusqlite, the memory store, or a store
//! from another crate (PostgreSQL).
//!
//! Four tables: `tool_executions` (one row per idempotency key), its append-only
//! `tool_execution_history`, `run_checkpoints` (versioned) and the runs' own append-only
//! `run_history`. A file on disk in normal use, so a player can open it with `sqlite3` while
//! playing; a named in-memory database for replays and the game's in-memory runs.
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

mod events;
mod group;
mod memory;
mod operations;
mod sqlite;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use rusqlite::Connection;
use serde::{Deserialize, Serialize};

pub use events::{HistoryEvent, RunEvent};
pub use group::{
    BATCH_MAX_DEFAULT, BATCH_MAX_LIMIT, BatchConnection, CommitEnd, GroupSettings, GroupStats, MemberBody, MemberEnd,
    RERUNS_MAX,
};
pub use operations::{CheckpointRow, HistoryLine, RecordWrite, RunHistoryLine, Tables};
pub use sqlite::{FileSettingsError, apply_file_settings, listing_plan};

use crate::key::IdempotencyKey;
use crate::rules::{ReservationAction, Status};
use crate::tool::SideEffect;

/// The schema this code writes and reads. Version 1 files are migrated when opened; any other
/// number is refused, not migrated blindly.
pub const SCHEMA_VERSION: u32 = 2;
/// How long a connection waits for another's write lock (shared by every Twice database).
pub use crate::sqlite_file::BUSY_TIMEOUT_MS;
/// The most rows one listing returns.
pub const LIST_LIMIT_MAX: u32 = 1_000;

/// Everything that can go wrong with a ledger, each naming the file (or store).
#[derive(Debug, thiserror::Error)]
pub enum LedgerError {
    #[error("{location}: not a Twice ledger ({detail})")]
    NotALedger { location: String, detail: String },
    #[error("{location}: the database file is corrupt ({detail}); it was left untouched")]
    Corrupt { location: String, detail: String },
    #[error(
        "{location}: the ledger is locked by another connection while {context} (a file ledger waits up to {BUSY_TIMEOUT_MS} ms; a shared in-memory ledger does not wait)"
    )]
    Locked { location: String, context: &'static str },
    #[error("{location}: ledger schema version {found}, but this build reads version {expected}")]
    SchemaVersion {
        location: String,
        found: String,
        expected: u32,
    },
    #[error("{location}: cannot open the ledger: {detail}")]
    Open { location: String, detail: String },
    #[error("{location}: no ledger file there (it is not created here)")]
    Missing { location: String },
    #[error("{location}: {context}: {source}")]
    Sqlite {
        location: String,
        context: &'static str,
        #[source]
        source: rusqlite::Error,
    },
    /// A store from another crate failed (its own error, in words).
    #[error("{location}: {context}: {detail}")]
    Store {
        location: String,
        context: &'static str,
        detail: String,
    },
    #[error("{location}: record {key} holds a value this build cannot read: {detail}")]
    BadRow {
        location: String,
        key: String,
        detail: String,
    },
    #[error("{location}: the checkpoint of run {run_id} cannot be saved again: {detail}")]
    BadCheckpoint {
        location: String,
        run_id: String,
        detail: String,
    },
}

/// One tool execution, as the ledger holds it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExecutionRecord {
    pub key: IdempotencyKey,
    pub tenant: String,
    pub run_id: String,
    pub tool_call_id: String,
    pub tool: String,
    pub side_effect: SideEffect,
    pub arguments: String,
    pub status: Status,
    pub attempts: u32,
    pub result: Option<String>,
    pub owner: String,
    pub created_at_ms: u64,
    pub updated_at_ms: u64,
    pub lease_expires_at_ms: Option<u64>,
}

/// One line of a record's append-only history.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct HistoryEntry {
    pub id: u64,
    pub key: IdempotencyKey,
    pub at_ms: u64,
    pub actor: String,
    pub event: HistoryEvent,
    pub from_status: Option<Status>,
    pub to_status: Option<Status>,
    pub reason: Option<String>,
    pub detail: Option<String>,
}

/// A history line as a store reads it, before its text is checked: every store turns its
/// rows into a [`HistoryEntry`] through [`StoredHistoryLine::into_entry`], so a line this
/// build cannot read is the same `BadRow` whichever store holds it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredHistoryLine {
    pub id: i64,
    pub key: String,
    pub at_ms: i64,
    pub actor: String,
    pub event: String,
    pub from_status: Option<String>,
    pub to_status: Option<String>,
    pub reason: Option<String>,
    pub detail: Option<String>,
}

impl StoredHistoryLine {
    /// The checked line; `location` names the store in the error.
    pub fn into_entry(self, location: &str) -> Result<HistoryEntry, LedgerError> {
        let bad = |detail: String| LedgerError::BadRow {
            location: location.to_owned(),
            key: self.key.clone(),
            detail,
        };
        let parse_status = |text: Option<String>| -> Result<Option<Status>, LedgerError> {
            text.map(|text| Status::parse(&text).ok_or_else(|| bad(format!("history status `{text}`"))))
                .transpose()
        };
        // A negative id or time (written by something else) reads as 0 rather than wrapping.
        let read_ms = |ms: i64| u64::try_from(ms).unwrap_or(0);
        Ok(HistoryEntry {
            id: read_ms(self.id),
            key: IdempotencyKey::parse(&self.key).map_err(bad)?,
            at_ms: read_ms(self.at_ms),
            event: HistoryEvent::parse(&self.event).ok_or_else(|| bad(format!("history event `{}`", self.event)))?,
            from_status: parse_status(self.from_status.clone())?,
            to_status: parse_status(self.to_status.clone())?,
            actor: self.actor,
            reason: self.reason,
            detail: self.detail,
        })
    }
}

/// One line of a run's append-only history.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunHistoryEntry {
    pub id: u64,
    pub run_id: String,
    pub at_ms: u64,
    pub actor: String,
    pub event: RunEvent,
    pub detail: Option<String>,
}

/// What a worker asks to reserve.
#[derive(Clone, Debug)]
pub struct ReserveRequest<'a> {
    pub key: &'a IdempotencyKey,
    pub tenant: &'a str,
    pub run_id: &'a str,
    pub tool_call_id: &'a str,
    pub tool: &'a str,
    pub side_effect: SideEffect,
    /// Canonical JSON of the arguments; the same key with other arguments is refused.
    pub arguments: &'a str,
    pub owner: &'a str,
    /// `Some` only for a naive runtime with leases (guard `no_lease_expiry` off).
    pub lease_ms: Option<u64>,
    /// Fencing (guard `checkpoint_version`): the run's checkpoint version this worker loaded.
    /// If someone saved since, the reservation is refused and this worker stands down
    /// before it sends anything.
    pub checkpoint_version: Option<u32>,
}

/// The answer to a reservation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reservation {
    /// The decision table's answer, and the record as it stands after the reservation.
    Decided {
        action: ReservationAction,
        record: ExecutionRecord,
        previous_owner: Option<String>,
        /// What the ledger held before this reservation.
        previous_status: Option<Status>,
    },
    /// The key exists with other arguments: refused, never served the other call's result.
    ArgumentsMismatch { existing: ExecutionRecord },
    /// The run's checkpoint moved on since this worker loaded it: another worker drives the run.
    Fenced { expected: u32, found: u32 },
}

/// The send fence's answer: the last step before a request leaves.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AttemptStart {
    /// The record is still this worker's `started` call: the attempt is counted and the
    /// request may leave.
    Begun(ExecutionRecord),
    /// The record is not (or no longer) this worker's `started` call — an operator settled it,
    /// another worker took it over — so nothing is sent: the worker follows the record.
    Refused(Option<ExecutionRecord>),
}

/// The answer to a reservation with the send fence folded in ([`Ledger::reserve_and_begin`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FoldedReservation {
    /// The reservation's answer; when it runs the tool, its record is as the attempt left it.
    pub reservation: Reservation,
    /// `Some(attempt)`: the reservation runs the tool and `attempt` passed the send fence in
    /// the same transaction — the request may leave now. `None`: nothing is to be sent.
    pub attempt_begun: Option<u32>,
}

/// A settlement: a status decided by someone other than the attempt itself.
#[derive(Clone, Debug)]
pub struct Settlement<'a> {
    pub to: Status,
    /// Compare-and-set: the status the actor saw. `None` means "whatever unknown status it has".
    pub expected: Option<Status>,
    /// Compare-and-set on the attempts noted too: `Some(0)` settles only a call whose request
    /// never passed the send fence (nothing can be on its way).
    pub expected_attempts: Option<u32>,
    pub actor: &'a str,
    pub event: HistoryEvent,
    pub reason: Option<&'a str>,
    pub result: Option<&'a str>,
    /// What the history line's detail says, when it is not the result.
    pub detail: Option<&'a str>,
}

#[derive(Debug, thiserror::Error)]
pub enum SettleError {
    #[error("no tool execution with key {0}")]
    NotFound(IdempotencyKey),
    #[error("{to} is not a decision; a call is settled as completed, failed, compensating or compensated")]
    NotADecision { to: Status },
    #[error("stale compare-and-set on {key}: expected {expected}, but it is {}", current.status)]
    Stale {
        key: IdempotencyKey,
        expected: Status,
        current: Box<ExecutionRecord>,
    },
    #[error("{key} is already settled as {}; a settled decision is never overwritten", current.status)]
    AlreadySettled {
        key: IdempotencyKey,
        current: Box<ExecutionRecord>,
    },
    #[error(
        "{key} has {} attempt(s) noted: a request passed the send fence and may still be on its way, so \"nothing left\" cannot be proven",
        current.attempts
    )]
    AttemptNoted {
        key: IdempotencyKey,
        current: Box<ExecutionRecord>,
    },
    #[error(transparent)]
    Ledger(#[from] LedgerError),
}

/// How recording an attempt's outcome went.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Recorded {
    Recorded(ExecutionRecord),
    /// The record is not this attempt's any more (someone settled the call first, another
    /// worker owns it, a later attempt was made): the outcome was logged and ignored.
    LateOutcomeIgnored(ExecutionRecord),
}

/// A run's saved state.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Checkpoint {
    pub run_id: String,
    pub version: u32,
    pub status: String,
    pub state: String,
    pub saved_by: String,
    pub updated_at_ms: u64,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SaveOutcome {
    Saved {
        version: u32,
    },
    /// Someone saved since this worker loaded: it must stand down.
    Stale {
        expected: u32,
        found: u32,
    },
    /// The save relied on a call having failed, but another worker ran it again since: two
    /// workers are driving the run, and this one must stand down before it acts on the failure.
    TakenOver {
        key: String,
        status: Status,
        owner: String,
    },
}

/// Which records a listing returns: filters, a cursor, a limit.
#[derive(Clone, Copy, Debug)]
pub struct RecordFilter<'a> {
    pub tenant: Option<&'a str>,
    pub status: Option<Status>,
    /// The (updated_at_ms, key) of the last row of the previous page: rows after it.
    pub after: Option<(u64, &'a str)>,
    pub limit: u32,
}

static MEMORY_LEDGERS: AtomicU64 = AtomicU64::new(0);
static MEMORY_STORES: AtomicU64 = AtomicU64::new(0);

/// Which store holds a ledger's rows. Both run the same operations (see [`Tables`]); they
/// differ only in how a row is read and written.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LedgerStore {
    /// Real SQLite: a file, or a named in-memory database. What the game, replays and files use.
    #[default]
    Sqlite,
    /// Plain Rust collections in memory, for one thread: the simulator's bulk runs (the
    /// explorer, the benchmark), where SQLite itself was most of a scenario's time.
    Memory,
}

impl LedgerStore {
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

impl std::str::FromStr for LedgerStore {
    type Err = String;

    fn from_str(text: &str) -> Result<LedgerStore, String> {
        [LedgerStore::Sqlite, LedgerStore::Memory]
            .into_iter()
            .find(|store| store.name() == text)
            .ok_or_else(|| format!("`{text}` is not a ledger store; one of sqlite, memory"))
    }
}

/// A store that lives in another crate (the PostgreSQL store): its own connection, its own
/// transactions, the same rows. The ledger's operations run on it unchanged through
/// [`Tables`]; its reads answer in the same order as SQLite's.
pub trait ExternalStore: std::fmt::Debug + Send {
    /// Where the store is, for messages; never a secret (no password).
    fn describe(&self) -> String;
    /// Another connection to the same store, as another process would open it.
    fn connect_again(&self) -> Result<Box<dyn ExternalStore>, LedgerError>;
    /// Runs `body` as one transaction that makes two reservers of one key impossible.
    /// `body` answers whether to commit (`true`) or roll back (`false`); it may be run again
    /// when the store must retry a transaction (a serialization failure), so it keeps no state
    /// of its own between runs.
    fn transaction(
        &mut self,
        context: &'static str,
        body: &mut dyn FnMut(&mut dyn Tables) -> Result<bool, LedgerError>,
    ) -> Result<(), LedgerError>;
    fn record(&mut self, key: &IdempotencyKey) -> Result<Option<ExecutionRecord>, LedgerError>;
    /// Records in (updated_at_ms, key) order, as [`Ledger::records`] describes.
    fn records(&mut self, filter: &RecordFilter<'_>) -> Result<Vec<ExecutionRecord>, LedgerError>;
    /// Every record, by creation time then key.
    fn all_records(&mut self) -> Result<Vec<ExecutionRecord>, LedgerError>;
    /// History lines in id order, of one key or of all.
    fn history(&mut self, key: Option<&IdempotencyKey>) -> Result<Vec<HistoryEntry>, LedgerError>;
    fn checkpoint(&mut self, run_id: &str) -> Result<Option<Checkpoint>, LedgerError>;
    /// Every checkpoint, by run id.
    fn checkpoints(&mut self) -> Result<Vec<Checkpoint>, LedgerError>;
    /// Run history lines in id order, of one run or of all.
    fn run_history(&mut self, run_id: Option<&str>) -> Result<Vec<RunHistoryEntry>, LedgerError>;
}

/// A connection to a ledger. One per process (or simulated worker).
#[derive(Debug)]
pub struct Ledger {
    store: Store,
    location: Location,
}

#[derive(Debug)]
enum Store {
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
    File(PathBuf),
    Memory(String),
    /// A memory store, by number: its description is only formatted when an error needs it.
    MemoryStore(u64),
    External(String),
}

impl Location {
    fn describe(&self) -> String {
        match self {
            Location::File(path) => path.display().to_string(),
            Location::Memory(name) => format!("memory ledger {name}"),
            Location::MemoryStore(number) => format!("memory store ledger {number}"),
            Location::External(description) => description.clone(),
        }
    }
}

impl Ledger {
    /// Opens a ledger file, creating it (and its schema) if it does not exist. A version 1
    /// ledger is migrated to this build's schema.
    pub fn open(path: &Path) -> Result<Ledger, LedgerError> {
        sqlite::open_file(path, true)
    }

    /// Opens a ledger file that must already exist and already be a ledger: it never creates
    /// the file or its schema ([`LedgerError::Missing`] for no file, [`LedgerError::NotALedger`]
    /// for an empty one). For a long-running process (the operator API) that must never answer
    /// from a fresh empty ledger because the file it serves was deleted under it.
    pub fn open_existing(path: &Path) -> Result<Ledger, LedgerError> {
        sqlite::open_file(path, false)
    }

    /// Asks `allow` just before every commit on this connection, with the write lock held; a
    /// commit it refuses is rolled back and the write fails. Lets a server check that the file
    /// at the path it serves is still the one this connection writes (not deleted or replaced)
    /// at the last moment a write can still be undone. Only a SQLite ledger has commits to
    /// refuse: any other is refused with [`LedgerError::Open`].
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

    /// A fresh in-memory SQLite ledger, shared by every connection made with
    /// [`Ledger::connect_again`]. It lives while any of its connections does. Meant for one
    /// thread (the simulator): SQLite's shared cache answers contention with `SQLITE_LOCKED`
    /// at once instead of waiting, so concurrent writers get [`LedgerError::Locked`] rather
    /// than a queue.
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
    pub fn open_in(store: LedgerStore) -> Result<Ledger, LedgerError> {
        match store {
            LedgerStore::Sqlite => Ledger::open_memory(),
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
    pub fn connect_again(&self) -> Result<Ledger, LedgerError> {
        match (&self.location, &self.store) {
            (_, Store::Memory(connection)) => Ok(Ledger {
                store: Store::Memory(connection.connect_again()),
                location: self.location.clone(),
            }),
            (_, Store::External(store)) => Ok(Ledger::on_external(lock_external(store).connect_again()?)),
            // Another run of the same process: it joins the same commit group.
            (location, Store::Grouped(member)) => member.join(location),
            (Location::File(path), Store::Sqlite(_)) => Ledger::open(path),
            (Location::Memory(name), Store::Sqlite(_)) => sqlite::connect_memory(name),
            (Location::MemoryStore(_) | Location::External(_), Store::Sqlite(_)) => {
                unreachable!("a SQLite ledger is a file or a named memory database")
            }
        }
    }

    /// Where this ledger lives, for messages and for the player's `sqlite3` hint.
    pub fn location(&self) -> String {
        self.location.describe()
    }

    pub fn path(&self) -> Option<&Path> {
        match &self.location {
            Location::File(path) => Some(path),
            Location::Memory(_) | Location::MemoryStore(_) | Location::External(_) => None,
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
                lock_external(store).transaction(context, &mut |tables| {
                    let outcome = body(tables);
                    let commit = outcome.is_ok();
                    answer = Some(outcome);
                    Ok(commit)
                })?;
                answer.expect("an external store runs the transaction's body")
            }
            Store::Grouped(member) => {
                let mut answer: Option<Result<T, E>> = None;
                member.group.run(context, &mut |tables| {
                    let outcome = body(tables);
                    let commit = outcome.is_ok();
                    answer = Some(outcome);
                    Ok(commit)
                })?;
                answer.expect("a commit group runs the member's body")
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
            Store::External(store) => external(lock_external(store).as_mut()),
            Store::Grouped(group::Member { reads, .. }) => match reads {
                group::Reads::Sqlite(connection) => sqlite(connection, &self.location),
                group::Reads::External(store) => external(lock_external(store).as_mut()),
            },
        }
    }

    /// Reserves a call atomically: one transaction reads the record, applies the decision
    /// table and writes `started` if the call is to run.
    pub fn reserve(&mut self, request: &ReserveRequest<'_>, now_ms: u64) -> Result<Reservation, LedgerError> {
        self.transaction("reserving", "committing a reservation", |tables| {
            operations::reserve(tables, request, now_ms)
        })
    }

    /// [`Ledger::reserve`] and, if the reservation runs the tool, [`Ledger::begin_attempt`] for
    /// `attempt`, in one transaction: one commit fewer, for a driver that sends right after
    /// reserving (decision table 5, [`crate::rules::fence_place`]). Nothing can come between
    /// the two: an operator's decision lands before the reservation or after the attempt.
    pub fn reserve_and_begin(
        &mut self,
        request: &ReserveRequest<'_>,
        attempt: u32,
        now_ms: u64,
    ) -> Result<FoldedReservation, LedgerError> {
        self.transaction(
            "reserving and fencing an attempt",
            "committing a reservation",
            |tables| operations::reserve_and_begin(tables, request, attempt, now_ms),
        )
    }

    /// Begins a reservation and stops before its commit, so a test (or a crash card)
    /// can drop the connection with the transaction open.
    pub fn reserve_uncommitted(&mut self, request: &ReserveRequest<'_>, now_ms: u64) -> Result<(), LedgerError> {
        let location = &self.location;
        match &mut self.store {
            Store::Sqlite(connection) => sqlite::reserve_uncommitted(connection, location, request, now_ms),
            Store::Memory(connection) => {
                connection.transaction(&|| location.describe(), "reserving", true, |tables| {
                    operations::reserve(tables, request, now_ms)
                })?;
                Ok(())
            }
            Store::External(_) | Store::Grouped(_) => Err(LedgerError::Store {
                location: location.describe(),
                context: "reserving",
                detail: "an external store (or a commit group) keeps no transaction open across calls".into(),
            }),
        }
    }

    /// The naive reservation's first half: a plain read, outside any transaction.
    pub fn check(&self, key: &IdempotencyKey) -> Result<Option<ExecutionRecord>, LedgerError> {
        self.record(key)
    }

    /// The naive reservation's second half: an upsert that trusts the earlier read.
    /// Between the two, another worker may have reserved the same key; this overwrites it.
    pub fn insert_started_unchecked(
        &mut self,
        request: &ReserveRequest<'_>,
        now_ms: u64,
    ) -> Result<Reservation, LedgerError> {
        self.transaction("inserting", "committing", |tables| {
            operations::insert_started_unchecked(tables, request, now_ms)
        })
    }

    /// The send fence: the last step before a request leaves. Compare-and-set on the record
    /// still being `started` and owned by `owner`; if it is, the attempt is counted and noted
    /// and the request may leave. If it is not — an operator settled the call meanwhile, or
    /// another worker took it over — nothing may be sent, and the refusal is noted.
    pub fn begin_attempt(
        &mut self,
        key: &IdempotencyKey,
        attempt: u32,
        owner: &str,
        now_ms: u64,
    ) -> Result<AttemptStart, LedgerError> {
        self.transaction("fencing an attempt", "committing an attempt", |tables| {
            operations::begin_attempt(tables, key, attempt, owner, now_ms)
        })
    }

    /// Counts an attempt without the fence: what a naive runtime without compare-and-set does
    /// (the check-then-insert runtime, and the one test that shows what the fence prevents).
    pub fn note_attempt(
        &mut self,
        key: &IdempotencyKey,
        attempt: u32,
        actor: &str,
        now_ms: u64,
    ) -> Result<(), LedgerError> {
        self.transaction("counting an attempt", "counting an attempt", |tables| {
            operations::note_attempt(tables, key, attempt, actor, now_ms)
        })
    }

    /// Records attempt `attempt`'s own outcome, compare-and-set on the record still being
    /// `actor`'s `started` call at that attempt. Otherwise (someone settled the call, another
    /// worker owns it, a later attempt was made) the outcome is logged and ignored.
    pub fn record_outcome(
        &mut self,
        key: &IdempotencyKey,
        status: Status,
        result: Option<&str>,
        actor: &str,
        attempt: u32,
        now_ms: u64,
    ) -> Result<Recorded, LedgerError> {
        assert!(status != Status::Started, "an outcome is never `started`");
        let location = self.location.describe();
        self.transaction("recording an outcome", "committing an outcome", |tables| {
            operations::record_outcome(tables, &location, key, status, result, actor, attempt, now_ms)
        })
    }

    /// Logs an outcome that arrived after its attempt had already timed out (or after the
    /// worker moved on): under its own key, changing nothing.
    pub fn log_late_outcome(
        &mut self,
        key: &IdempotencyKey,
        actor: &str,
        detail: &str,
        now_ms: u64,
    ) -> Result<(), LedgerError> {
        self.note(key, actor, HistoryEvent::LateOutcomeIgnored, detail, now_ms)
    }

    /// Appends a note to a record's history without changing it (a guard that held, say).
    pub fn note(
        &mut self,
        key: &IdempotencyKey,
        actor: &str,
        event: HistoryEvent,
        detail: &str,
        now_ms: u64,
    ) -> Result<(), LedgerError> {
        self.transaction("noting", "noting", |tables| {
            tables.append_history(&HistoryLine {
                detail: Some(std::borrow::Cow::Borrowed(detail)),
                ..HistoryLine::note(key, now_ms, actor, event)
            })
        })
    }

    /// Settles a call: compare-and-set on its status (and, if asked, its attempts), appended
    /// to its history. Used by operators (resolve, compensate) and by reconcile hooks.
    pub fn settle(
        &mut self,
        key: &IdempotencyKey,
        settlement: &Settlement<'_>,
        now_ms: u64,
    ) -> Result<ExecutionRecord, SettleError> {
        self.transaction("settling", "committing a settlement", |tables| {
            operations::settle(tables, key, settlement, now_ms)
        })
    }

    /// Appends a line to a run's own history (a run that waits for a person, and why).
    pub fn append_run_event(
        &mut self,
        run_id: &str,
        actor: &str,
        event: RunEvent,
        detail: &str,
        now_ms: u64,
    ) -> Result<(), LedgerError> {
        self.transaction("noting a run event", "noting a run event", |tables| {
            tables.append_run_event(&RunHistoryLine {
                run_id,
                at_ms: now_ms,
                actor,
                event,
                detail: Some(detail),
            })
        })
    }

    pub fn record(&self, key: &IdempotencyKey) -> Result<Option<ExecutionRecord>, LedgerError> {
        self.read(
            "reading a record",
            memory::Table::Records,
            |connection, location| sqlite::record(connection, location, key),
            |tables| tables.record(key),
            |store| store.record(key),
        )
    }

    /// Records in a stable order, (updated_at_ms, key): `status` and `tenant` filter; unknown
    /// calls come longest-waiting first. `after` is a cursor: the (updated_at_ms, key) of the
    /// last row of the previous page. Every combination of filters reads an index (no scan
    /// of the table, no sort): a page costs the same with 2,000 records or 100,000.
    pub fn records(
        &self,
        tenant: Option<&str>,
        status: Option<Status>,
        after: Option<(u64, &str)>,
        limit: u32,
    ) -> Result<Vec<ExecutionRecord>, LedgerError> {
        // Times are stored as i64: nothing comes after a cursor beyond that range (cast, it
        // would wrap to a negative time and restart the listing from the beginning).
        if after.is_some_and(|(ms, _)| i64::try_from(ms).is_err()) {
            return Ok(Vec::new());
        }
        let filter = RecordFilter {
            tenant,
            status,
            after,
            limit: limit.clamp(1, LIST_LIMIT_MAX),
        };
        self.read(
            "listing records",
            memory::Table::Records,
            |connection, location| sqlite::records(connection, location, &filter),
            |tables| tables.records(&filter),
            |store| store.records(&filter),
        )
    }

    /// Every record, in creation order then key order (for drawing and for the checker).
    pub fn all_records(&self) -> Result<Vec<ExecutionRecord>, LedgerError> {
        self.read(
            "listing records",
            memory::Table::Records,
            sqlite::all_records,
            memory::MemoryTables::all_records,
            |store| store.all_records(),
        )
    }

    pub fn history(&self, key: &IdempotencyKey) -> Result<Vec<HistoryEntry>, LedgerError> {
        self.history_where(Some(key))
    }

    pub fn all_history(&self) -> Result<Vec<HistoryEntry>, LedgerError> {
        self.history_where(None)
    }

    fn history_where(&self, key: Option<&IdempotencyKey>) -> Result<Vec<HistoryEntry>, LedgerError> {
        self.read(
            "reading history",
            memory::Table::History,
            |connection, location| sqlite::history(connection, location, key),
            |tables| tables.history(key),
            |store| store.history(key),
        )
    }

    /// A run's own history, or every run's (`None`), in order.
    pub fn run_history(&self, run_id: Option<&str>) -> Result<Vec<RunHistoryEntry>, LedgerError> {
        self.read(
            "reading run history",
            memory::Table::RunHistory,
            |connection, location| sqlite::run_history(connection, location, run_id),
            |tables| tables.run_history(run_id),
            |store| store.run_history(run_id),
        )
    }

    pub fn load_checkpoint(&self, run_id: &str) -> Result<Option<Checkpoint>, LedgerError> {
        self.read(
            "loading a checkpoint",
            memory::Table::Checkpoints,
            |connection, location| sqlite::checkpoint(connection, location, run_id),
            |tables| tables.checkpoint(run_id),
            |store| store.checkpoint(run_id),
        )
    }

    pub fn checkpoints(&self) -> Result<Vec<Checkpoint>, LedgerError> {
        self.read(
            "listing checkpoints",
            memory::Table::Checkpoints,
            sqlite::checkpoints,
            memory::MemoryTables::checkpoints,
            |store| store.checkpoints(),
        )
    }

    /// Saves a run's checkpoint. With `expected_version`, compare-and-set: the save
    /// succeeds only if nobody saved since this worker loaded version `expected_version`
    /// (0: nothing saved yet). Without it (the guard off), the save overwrites blindly.
    pub fn save_checkpoint(
        &mut self,
        run_id: &str,
        status: &str,
        state: &str,
        saved_by: &str,
        expected_version: Option<u32>,
        now_ms: u64,
    ) -> Result<SaveOutcome, LedgerError> {
        let save = CheckpointSave {
            run_id,
            status,
            state,
            saved_by,
            expected_version,
            still_failed: None,
        };
        self.save_checkpoint_fenced(&save, now_ms)
    }

    /// [`Ledger::save_checkpoint`], also compare-and-set on `still_failed`'s record still being
    /// `failed`: a save that tells the model a call failed must not land after another worker
    /// ran that call again (`failed` may run again), or the run would act on a stale failure.
    pub fn save_checkpoint_fenced(
        &mut self,
        save: &CheckpointSave<'_>,
        now_ms: u64,
    ) -> Result<SaveOutcome, LedgerError> {
        let location = self.location.describe();
        self.transaction("saving a checkpoint", "committing a checkpoint", |tables| {
            operations::save_checkpoint(tables, &location, save, now_ms)
        })
    }
}

/// A checkpoint save and what it is fenced on.
#[derive(Clone, Copy, Debug)]
pub struct CheckpointSave<'a> {
    pub run_id: &'a str,
    pub status: &'a str,
    pub state: &'a str,
    pub saved_by: &'a str,
    /// Compare-and-set on the version this worker loaded (guard `checkpoint_version`).
    pub expected_version: Option<u32>,
    /// Compare-and-set on this call still being `failed` (see [`Ledger::save_checkpoint_fenced`]).
    pub still_failed: Option<&'a IdempotencyKey>,
}

/// The external store's connection. A panic while it was held leaves a connection whose state
/// nobody knows; the next user finds it poisoned and fails loudly rather than guess.
fn lock_external(
    store: &std::sync::Mutex<Box<dyn ExternalStore>>,
) -> std::sync::MutexGuard<'_, Box<dyn ExternalStore>> {
    store
        .lock()
        .expect("an external ledger connection whose operation panicked is not used again")
}
