//! The tool-execution ledger: real SQLite through rusqlite, or the memory store.
//!
//! Three tables: `tool_executions` (one row per idempotency key), its append-only
//! `tool_execution_history`, and `run_checkpoints` (versioned). A file on disk in
//! normal use, so a player can open it with `sqlite3` while playing; a named
//! in-memory database for replays and the game's in-memory runs.
//!
//! Two stores, one logic: every operation reads the rows it needs through `Tables`,
//! decides with the pure `decide_*` functions below (which apply the runtime's decision
//! tables, `runtime::rules`), and writes the result through `Tables` again. SQLite
//! implements `Tables` with cached statements in a `BEGIN IMMEDIATE` transaction; the
//! memory store ([`LedgerStore::Memory`], `ledger/memory.rs`) with ordered maps behind a
//! mutex, for the simulator's bulk runs (the explorer, the benchmark), where SQLite itself
//! was most of a scenario's time. `tests/ledger_stores.rs` holds the two to the same answers.
//!
//! Durability: file ledgers use WAL with `synchronous = FULL`. A reservation that
//! is lost after its commit returned would let a recovered run call the tool again —
//! a second credit — so every commit is made durable before the tool runs, even
//! against power loss; the cost is one fsync per commit, measured in the benchmarks.
//! Each process (and each simulated worker) holds its own connection: dropping it
//! rolls back whatever transaction it had open, exactly as SIGKILL would.

use std::borrow::Cow;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use rusqlite::{Connection, OpenFlags, OptionalExtension, TransactionBehavior, params};
use serde::{Deserialize, Serialize};

use crate::key::IdempotencyKey;
use crate::rules::{ReservationAction, Status, reservation_action};
use crate::tool::SideEffect;
use crate::sqlite_file::{self, DurabilityError, Failure};

mod memory;

/// The schema this code writes and reads. Another number is refused, not migrated blindly.
pub const SCHEMA_VERSION: u32 = 1;
const SCHEMA_NAME: &str = "twice-ledger";
/// How long a connection waits for another's write lock (shared by every Twice database).
pub use crate::sqlite_file::BUSY_TIMEOUT_MS;
/// Prepared statements kept per connection: every statement the ledger runs fits, so none
/// is parsed twice on one connection.
const STATEMENT_CACHE_CAPACITY: usize = 32;
/// The most rows one listing returns.
pub const LIST_LIMIT_MAX: u32 = 1_000;

const SCHEMA: &str = r#"
CREATE TABLE twice_meta (
    name  TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
CREATE TABLE tool_executions (
    idempotency_key     TEXT PRIMARY KEY,
    tenant              TEXT NOT NULL,
    run_id              TEXT NOT NULL,
    tool_call_id        TEXT NOT NULL,
    tool                TEXT NOT NULL,
    side_effect         TEXT NOT NULL CHECK (side_effect IN ('read','write','external','destructive')),
    arguments           TEXT NOT NULL,
    status              TEXT NOT NULL CHECK (status IN ('started','completed','failed','indeterminate','compensated')),
    attempts            INTEGER NOT NULL CHECK (attempts >= 0),
    result              TEXT,
    owner               TEXT NOT NULL,
    created_at_ms       INTEGER NOT NULL,
    updated_at_ms       INTEGER NOT NULL,
    lease_expires_at_ms INTEGER
);
CREATE INDEX tool_executions_by_status ON tool_executions (tenant, status, updated_at_ms);
CREATE TABLE tool_execution_history (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    idempotency_key TEXT NOT NULL,
    at_ms           INTEGER NOT NULL,
    actor           TEXT NOT NULL,
    event           TEXT NOT NULL,
    from_status     TEXT,
    to_status       TEXT,
    reason          TEXT,
    detail          TEXT
);
CREATE INDEX tool_execution_history_by_key ON tool_execution_history (idempotency_key, id);
CREATE TRIGGER tool_execution_history_no_update BEFORE UPDATE ON tool_execution_history
BEGIN SELECT RAISE(ABORT, 'tool_execution_history is append-only'); END;
CREATE TRIGGER tool_execution_history_no_delete BEFORE DELETE ON tool_execution_history
BEGIN SELECT RAISE(ABORT, 'tool_execution_history is append-only'); END;
CREATE TABLE run_checkpoints (
    run_id        TEXT PRIMARY KEY,
    version       INTEGER NOT NULL CHECK (version >= 1),
    status        TEXT NOT NULL,
    state         TEXT NOT NULL,
    saved_by      TEXT NOT NULL,
    updated_at_ms INTEGER NOT NULL
);
"#;

/// Everything that can go wrong with a ledger, each naming the file.
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
    #[error("{location}: record {key} holds a value this build cannot read: {detail}")]
    BadRow {
        location: String,
        key: String,
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
    pub event: String,
    pub from_status: Option<Status>,
    pub to_status: Option<Status>,
    pub reason: Option<String>,
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

/// A settlement: a status decided by someone other than the attempt itself.
#[derive(Clone, Debug)]
pub struct Settlement<'a> {
    pub to: Status,
    /// Compare-and-set: the status the actor saw. `None` means "whatever unknown status it has".
    pub expected: Option<Status>,
    pub actor: &'a str,
    pub event: &'a str,
    pub reason: Option<&'a str>,
    pub result: Option<&'a str>,
}

#[derive(Debug, thiserror::Error)]
pub enum SettleError {
    #[error("no tool execution with key {0}")]
    NotFound(IdempotencyKey),
    #[error("{to} is not a decision; a call is settled as completed, failed or compensated")]
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
    #[error(transparent)]
    Ledger(#[from] LedgerError),
}

/// How recording an attempt's outcome went.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Recorded {
    Recorded(ExecutionRecord),
    /// Someone settled the call first; the late outcome was logged in the history and ignored.
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

static MEMORY_LEDGERS: AtomicU64 = AtomicU64::new(0);
static MEMORY_STORES: AtomicU64 = AtomicU64::new(0);

/// Which store holds a ledger's rows. Both run the same operations (see `Tables`); they
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
}

#[derive(Clone, Debug)]
enum Location {
    File(PathBuf),
    Memory(String),
    /// A memory store, by number: its description is only formatted when an error needs it.
    MemoryStore(u64),
}

impl Location {
    fn describe(&self) -> String {
        match self {
            Location::File(path) => path.display().to_string(),
            Location::Memory(name) => format!("memory ledger {name}"),
            Location::MemoryStore(number) => format!("memory store ledger {number}"),
        }
    }
}

impl Ledger {
    /// Opens a ledger file, creating it (and its schema) if it does not exist.
    pub fn open(path: &Path) -> Result<Ledger, LedgerError> {
        Ledger::open_file(path, true)
    }

    /// Opens a ledger file that must already exist and already be a ledger: it never creates
    /// the file or its schema ([`LedgerError::Missing`] for no file, [`LedgerError::NotALedger`]
    /// for an empty one). For a long-running process (the operator API) that must never answer
    /// from a fresh empty ledger because the file it serves was deleted under it.
    pub fn open_existing(path: &Path) -> Result<Ledger, LedgerError> {
        Ledger::open_file(path, false)
    }

    fn open_file(path: &Path, create: bool) -> Result<Ledger, LedgerError> {
        let location = Location::File(path.to_path_buf());
        let connection = sqlite_file::open(path, create).map_err(|error| {
            if !create && !path.exists() {
                LedgerError::Missing {
                    location: location.describe(),
                }
            } else {
                LedgerError::Open {
                    location: location.describe(),
                    detail: error.to_string(),
                }
            }
        })?;
        connection.set_prepared_statement_cache_capacity(STATEMENT_CACHE_CAPACITY);
        let ledger = Ledger {
            store: Store::Sqlite(connection),
            location,
        };
        // Identify the file before changing anything about it: a file that is not a
        // ledger must be left byte for byte as it was (switching to WAL rewrites its header).
        ledger.set_busy_timeout()?;
        if !create && ledger.table_names()?.is_empty() {
            return Err(LedgerError::NotALedger {
                location: ledger.location(),
                detail: "an empty database; only a new ledger is given its schema".into(),
            });
        }
        ledger.ensure_schema()?;
        ledger.configure(true)?;
        Ok(ledger)
    }

    /// Asks `allow` just before every commit on this connection, with the write lock held; a
    /// commit it refuses is rolled back and the write fails. Lets a server check that the file
    /// at the path it serves is still the one this connection writes (not deleted or replaced)
    /// at the last moment a write can still be undone. Only a SQLite ledger has commits to
    /// refuse: a memory store ledger is refused with [`LedgerError::Open`].
    pub fn refuse_commits_unless(&self, mut allow: impl FnMut() -> bool + Send + 'static) -> Result<(), LedgerError> {
        match &self.store {
            // SQLite turns the commit into a rollback when the hook answers true.
            Store::Sqlite(connection) => {
                connection.commit_hook(Some(move || !allow()));
                Ok(())
            }
            Store::Memory(_) => Err(LedgerError::Open {
                location: self.location(),
                detail: "a memory store ledger has no commits to guard".into(),
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
        let ledger = Ledger::connect_memory(&name)?;
        // A new name is a new, empty database that nobody else can have touched: the schema
        // goes straight in, without the checks a file on disk needs. (The simulator opens one
        // per scenario; those checks were a tenth of a scenario's time.)
        let connection = ledger.sqlite_connection();
        connection
            .execute_batch("BEGIN IMMEDIATE")
            .map_err(|error| ledger.classify(error, "creating the schema"))?;
        match ledger.write_schema() {
            Ok(()) => connection
                .execute_batch("COMMIT")
                .map_err(|error| ledger.classify(error, "creating the schema"))?,
            Err(error) => {
                let _ = connection.execute_batch("ROLLBACK");
                return Err(error);
            }
        }
        Ok(ledger)
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

    /// Which store holds this ledger's rows.
    pub fn store(&self) -> LedgerStore {
        match self.store {
            Store::Sqlite(_) => LedgerStore::Sqlite,
            Store::Memory(_) => LedgerStore::Memory,
        }
    }

    fn connect_memory(name: &str) -> Result<Ledger, LedgerError> {
        let location = Location::Memory(name.to_owned());
        let uri = format!("file:{name}?mode=memory&cache=shared");
        let connection = Connection::open_with_flags(
            &uri,
            OpenFlags::SQLITE_OPEN_READ_WRITE
                | OpenFlags::SQLITE_OPEN_CREATE
                | OpenFlags::SQLITE_OPEN_URI
                | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .map_err(|error| LedgerError::Open {
            location: location.describe(),
            detail: error.to_string(),
        })?;
        connection.set_prepared_statement_cache_capacity(STATEMENT_CACHE_CAPACITY);
        let ledger = Ledger {
            store: Store::Sqlite(connection),
            location,
        };
        ledger.configure(false)?;
        Ok(ledger)
    }

    /// Another connection to the same ledger, as another process would open it.
    pub fn connect_again(&self) -> Result<Ledger, LedgerError> {
        match (&self.location, &self.store) {
            (_, Store::Memory(connection)) => Ok(Ledger {
                store: Store::Memory(connection.connect_again()),
                location: self.location.clone(),
            }),
            (Location::File(path), _) => Ledger::open(path),
            (Location::Memory(name), _) => Ledger::connect_memory(name),
            (Location::MemoryStore(_), Store::Sqlite(_)) => unreachable!("a memory store location is a memory store"),
        }
    }

    /// Where this ledger lives, for messages and for the player's `sqlite3` hint.
    pub fn location(&self) -> String {
        self.location.describe()
    }

    pub fn path(&self) -> Option<&Path> {
        match &self.location {
            Location::File(path) => Some(path),
            Location::Memory(_) | Location::MemoryStore(_) => None,
        }
    }

    /// The SQLite connection of a ledger that is known to be SQLite (opening, schema checks).
    fn sqlite_connection(&self) -> &Connection {
        match &self.store {
            Store::Sqlite(connection) => connection,
            Store::Memory(_) => unreachable!("only a SQLite ledger has a schema to set up"),
        }
    }

    fn set_busy_timeout(&self) -> Result<(), LedgerError> {
        sqlite_file::wait_when_busy(self.sqlite_connection())
            .map_err(|error| self.classify(error, "setting the busy timeout"))
    }

    fn configure(&self, file: bool) -> Result<(), LedgerError> {
        self.set_busy_timeout()?;
        if file {
            apply_file_settings(self.sqlite_connection(), |error, context| self.classify(error, context)).map_err(
                |error| match error {
                    FileSettingsError::NotWal { mode } => LedgerError::Open {
                        location: self.location(),
                        detail: DurabilityError::not_wal_detail(&mode),
                    },
                    FileSettingsError::Ledger(error) => error,
                },
            )?;
        } else {
            self.sqlite_connection()
                .execute_batch("PRAGMA synchronous = OFF;")
                .map_err(|error| self.classify(error, "configuring"))?;
        }
        Ok(())
    }

    /// Turns a SQLite error into one that names the problem and the file.
    fn classify(&self, error: rusqlite::Error, context: &'static str) -> LedgerError {
        classify_at(&self.location, error, context)
    }

    fn table_names(&self) -> Result<Vec<String>, LedgerError> {
        sqlite_file::table_names(self.sqlite_connection()).map_err(|error| self.classify(error, "reading the schema"))
    }

    /// Creates the schema in an empty database. The check is repeated inside a
    /// `BEGIN IMMEDIATE` transaction so that processes opening a new file at the same
    /// moment create it once and all go on.
    fn create_schema_if_empty(&self) -> Result<(), LedgerError> {
        self.sqlite_connection()
            .execute_batch("BEGIN IMMEDIATE")
            .map_err(|error| self.classify(error, "creating the schema"))?;
        let created = (|| {
            if !self.table_names()?.is_empty() {
                return Ok(());
            }
            self.write_schema()
        })();
        match created {
            Ok(()) => self
                .sqlite_connection()
                .execute_batch("COMMIT")
                .map_err(|error| self.classify(error, "creating the schema")),
            Err(error) => {
                let _ = self.sqlite_connection().execute_batch("ROLLBACK");
                Err(error)
            }
        }
    }

    /// The tables, indexes, triggers and the schema's name and version, inside the caller's transaction.
    fn write_schema(&self) -> Result<(), LedgerError> {
        self.sqlite_connection()
            .execute_batch(SCHEMA)
            .map_err(|error| self.classify(error, "creating the schema"))?;
        self.sqlite_connection()
            .execute(
                "INSERT INTO twice_meta (name, value) VALUES ('schema', ?1), ('schema_version', ?2)",
                params![SCHEMA_NAME, SCHEMA_VERSION.to_string()],
            )
            .map_err(|error| self.classify(error, "creating the schema"))?;
        Ok(())
    }

    fn ensure_schema(&self) -> Result<(), LedgerError> {
        if self.table_names()?.is_empty() {
            self.create_schema_if_empty()?;
        }
        let tables = self.table_names()?;
        if !tables.iter().any(|table| table == "twice_meta") {
            return Err(LedgerError::NotALedger {
                location: self.location(),
                detail: format!("a SQLite database with tables {} but no twice_meta", tables.join(", ")),
            });
        }
        let read = |name: &str| -> Result<Option<String>, LedgerError> {
            self.sqlite_connection()
                .query_row("SELECT value FROM twice_meta WHERE name = ?1", [name], |row| row.get(0))
                .optional()
                .map_err(|error| self.classify(error, "reading twice_meta"))
        };
        if read("schema")?.as_deref() != Some(SCHEMA_NAME) {
            return Err(LedgerError::NotALedger {
                location: self.location(),
                detail: "twice_meta does not name the twice-ledger schema".into(),
            });
        }
        let found = read("schema_version")?.unwrap_or_else(|| "none".into());
        if found != SCHEMA_VERSION.to_string() {
            return Err(LedgerError::SchemaVersion {
                location: self.location(),
                found,
                expected: SCHEMA_VERSION,
            });
        }
        if let Location::File(_) = self.location {
            let verdict: String = self
                .sqlite_connection()
                .query_row("PRAGMA quick_check", [], |row| row.get(0))
                .map_err(|error| self.classify(error, "checking integrity"))?;
            if verdict != "ok" {
                return Err(LedgerError::Corrupt {
                    location: self.location(),
                    detail: verdict,
                });
            }
        }
        Ok(())
    }

    /// Runs `body` as one `BEGIN IMMEDIATE` transaction on whichever store holds the rows:
    /// committed when it returns `Ok`, rolled back when it returns `Err`.
    fn transaction<T, E: From<LedgerError>>(
        &mut self,
        context: &'static str,
        commit_context: &'static str,
        body: impl FnOnce(&mut dyn Tables) -> Result<T, E>,
    ) -> Result<T, E> {
        Ledger::transaction_on(&mut self.store, &self.location, context, commit_context, body)
    }

    /// [`Ledger::transaction`] on the parts of a ledger, so that `body` may borrow its location.
    fn transaction_on<T, E: From<LedgerError>>(
        store: &mut Store,
        location: &Location,
        context: &'static str,
        commit_context: &'static str,
        body: impl FnOnce(&mut dyn Tables) -> Result<T, E>,
    ) -> Result<T, E> {
        match store {
            Store::Sqlite(connection) => {
                let transaction = connection
                    .transaction_with_behavior(TransactionBehavior::Immediate)
                    .map_err(|error| classify_at(location, error, context))?;
                let answer = body(&mut SqliteTables {
                    connection: &transaction,
                    location,
                    context,
                })?;
                transaction
                    .commit()
                    .map_err(|error| classify_at(location, error, commit_context))?;
                Ok(answer)
            }
            Store::Memory(connection) => connection.transaction(&|| location.describe(), context, false, body),
        }
    }

    /// A read outside any transaction: SQL on SQLite, the collections on the memory store.
    fn read<T>(
        &self,
        context: &'static str,
        table: memory::Table,
        sqlite: impl FnOnce(&Connection) -> rusqlite::Result<T>,
        in_memory: impl FnOnce(&memory::MemoryTables) -> T,
    ) -> Result<T, LedgerError> {
        match &self.store {
            Store::Sqlite(connection) => sqlite(connection).map_err(|error| self.classify(error, context)),
            Store::Memory(connection) => connection.read(&|| self.location.describe(), context, table, in_memory),
        }
    }

    /// Reserves a call atomically: one `BEGIN IMMEDIATE` transaction reads the record,
    /// applies the decision table and writes `started` if the call is to run.
    pub fn reserve(&mut self, request: &ReserveRequest<'_>, now_ms: u64) -> Result<Reservation, LedgerError> {
        self.transaction("reserving", "committing a reservation", |tables| {
            reserve_in(tables, request, now_ms)
        })
    }

    /// Begins a reservation and stops before its commit, so a test (or a crash card)
    /// can drop the connection with the transaction open.
    pub fn reserve_uncommitted(&mut self, request: &ReserveRequest<'_>, now_ms: u64) -> Result<(), LedgerError> {
        let location = &self.location;
        match &mut self.store {
            Store::Sqlite(connection) => {
                connection
                    .execute_batch("BEGIN IMMEDIATE")
                    .map_err(|error| classify_at(location, error, "reserving"))?;
                reserve_in(
                    &mut SqliteTables {
                        connection,
                        location,
                        context: "reserving",
                    },
                    request,
                    now_ms,
                )?;
            }
            Store::Memory(connection) => {
                connection.transaction(&|| location.describe(), "reserving", true, |tables| {
                    reserve_in(tables, request, now_ms)
                })?;
            }
        }
        Ok(())
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
            insert_started_unchecked_in(tables, request, now_ms)
        })
    }

    /// Counts an attempt (the first, or a retry) and notes it in the history.
    pub fn note_attempt(
        &mut self,
        key: &IdempotencyKey,
        attempt: u32,
        actor: &str,
        now_ms: u64,
    ) -> Result<(), LedgerError> {
        self.transaction("counting an attempt", "counting an attempt", |tables| {
            let Some(current) = tables.record(key)? else {
                // SQLite's UPDATE of a key nobody reserved changes nothing: nothing to note.
                return Ok(());
            };
            let counted = ExecutionRecord {
                attempts: attempt,
                updated_at_ms: now_ms,
                ..current
            };
            tables.write_record(RecordWrite::Update, &counted)?;
            tables.append_history(&HistoryLine {
                detail: Some(Cow::Owned(format!("attempt {attempt}"))),
                ..HistoryLine::note(key, now_ms, actor, "attempt")
            })
        })
    }

    /// Records an attempt's own outcome, compare-and-set from `started`. If someone
    /// settled the call meanwhile, the outcome is logged and ignored.
    pub fn record_outcome(
        &mut self,
        key: &IdempotencyKey,
        status: Status,
        result: Option<&str>,
        actor: &str,
        now_ms: u64,
    ) -> Result<Recorded, LedgerError> {
        assert!(status != Status::Started, "an outcome is never `started`");
        let location = &self.location;
        let never_reserved = || LedgerError::BadRow {
            location: location.describe(),
            key: key.to_string(),
            detail: "an outcome arrived for a call that was never reserved".into(),
        };
        let store = &mut self.store;
        Ledger::transaction_on(
            store,
            location,
            "recording an outcome",
            "committing an outcome",
            |tables| {
                let current = tables.record(key)?.ok_or_else(never_reserved)?;
                let (recorded, line) = decide_outcome(current, key, status, result, actor, now_ms);
                if let Recorded::Recorded(after) = &recorded {
                    tables.write_record(RecordWrite::Update, after)?;
                }
                tables.append_history(&line)?;
                Ok(recorded)
            },
        )
    }

    /// Logs an outcome that arrived after its attempt had already timed out.
    pub fn log_late_outcome(
        &mut self,
        key: &IdempotencyKey,
        actor: &str,
        detail: &str,
        now_ms: u64,
    ) -> Result<(), LedgerError> {
        self.transaction("logging a late outcome", "logging a late outcome", |tables| {
            tables.append_history(&HistoryLine {
                detail: Some(Cow::Borrowed(detail)),
                ..HistoryLine::note(key, now_ms, actor, "late_outcome_ignored")
            })
        })
    }

    /// Appends a note to a record's history without changing it (a guard that held, say).
    pub fn note(
        &mut self,
        key: &IdempotencyKey,
        actor: &str,
        event: &str,
        detail: &str,
        now_ms: u64,
    ) -> Result<(), LedgerError> {
        self.transaction("noting", "noting", |tables| {
            tables.append_history(&HistoryLine {
                detail: Some(Cow::Borrowed(detail)),
                ..HistoryLine::note(key, now_ms, actor, event)
            })
        })
    }

    /// Settles a call: compare-and-set on its status, appended to its history.
    /// Used by operators (resolve, compensate) and by reconcile hooks.
    pub fn settle(
        &mut self,
        key: &IdempotencyKey,
        settlement: &Settlement<'_>,
        now_ms: u64,
    ) -> Result<ExecutionRecord, SettleError> {
        self.transaction("settling", "committing a settlement", |tables| {
            let current = tables.record(key)?.ok_or_else(|| SettleError::NotFound(key.clone()))?;
            let from = current.status;
            let after = decide_settlement(current, key, settlement, now_ms)?;
            tables.write_record(RecordWrite::Update, &after)?;
            tables.append_history(&HistoryLine {
                key,
                at_ms: now_ms,
                actor: settlement.actor,
                event: settlement.event,
                from_status: Some(from),
                to_status: Some(settlement.to),
                reason: settlement.reason,
                detail: settlement.result.map(Cow::Borrowed),
            })?;
            Ok(after)
        })
    }

    pub fn record(&self, key: &IdempotencyKey) -> Result<Option<ExecutionRecord>, LedgerError> {
        self.read(
            "reading a record",
            memory::Table::Records,
            |connection| Ok(select_record(connection, key)?.map(Row::Sqlite)),
            |tables| tables.record(key).map(Row::Memory),
        )?
        .map(|row| row.into_record(&self.location))
        .transpose()
    }

    /// Records in a stable order: `status` filters; unknown calls come longest-waiting first.
    /// `after` is a cursor: the (updated_at_ms, key) of the last row of the previous page.
    pub fn records(
        &self,
        tenant: Option<&str>,
        status: Option<Status>,
        after: Option<(u64, &str)>,
        limit: u32,
    ) -> Result<Vec<ExecutionRecord>, LedgerError> {
        let limit = limit.clamp(1, LIST_LIMIT_MAX);
        // Times are stored as i64: nothing comes after a cursor beyond that range (cast, it would
        // wrap to a negative time and restart the listing from the beginning).
        let (after_ms, after_key) = match after {
            None => (-1_i64, ""),
            Some((ms, key)) => match i64::try_from(ms) {
                Ok(ms) => (ms, key),
                Err(_) => return Ok(Vec::new()),
            },
        };
        let rows = self.read(
            "listing records",
            memory::Table::Records,
            |connection| {
                connection
                    .prepare_cached(
                        "SELECT * FROM tool_executions
                         WHERE (?1 IS NULL OR tenant = ?1) AND (?2 IS NULL OR status = ?2)
                           AND (updated_at_ms > ?3 OR (updated_at_ms = ?3 AND idempotency_key > ?4))
                         ORDER BY updated_at_ms, idempotency_key LIMIT ?5",
                    )?
                    .query_map(
                        params![tenant, status.map(Status::name), after_ms, after_key, limit],
                        RawRecord::from_row,
                    )?
                    .map(|row| row.map(Row::Sqlite))
                    .collect::<rusqlite::Result<Vec<Row>>>()
            },
            |tables| {
                tables
                    .records(tenant, status, (after_ms, after_key), limit)
                    .into_iter()
                    .map(Row::Memory)
                    .collect()
            },
        )?;
        rows.into_iter().map(|row| row.into_record(&self.location)).collect()
    }

    /// Every record, in key order (for drawing and for the checker).
    pub fn all_records(&self) -> Result<Vec<ExecutionRecord>, LedgerError> {
        let rows = self.read(
            "listing records",
            memory::Table::Records,
            |connection| {
                connection
                    .prepare_cached("SELECT * FROM tool_executions ORDER BY created_at_ms, idempotency_key")?
                    .query_map([], RawRecord::from_row)?
                    .map(|row| row.map(Row::Sqlite))
                    .collect::<rusqlite::Result<Vec<Row>>>()
            },
            |tables| tables.all_records().into_iter().map(Row::Memory).collect(),
        )?;
        rows.into_iter().map(|row| row.into_record(&self.location)).collect()
    }

    pub fn history(&self, key: &IdempotencyKey) -> Result<Vec<HistoryEntry>, LedgerError> {
        self.history_where(Some(key))
    }

    pub fn all_history(&self) -> Result<Vec<HistoryEntry>, LedgerError> {
        self.history_where(None)
    }

    fn history_where(&self, key: Option<&IdempotencyKey>) -> Result<Vec<HistoryEntry>, LedgerError> {
        let connection = match &self.store {
            Store::Sqlite(connection) => connection,
            Store::Memory(connection) => {
                return connection.read(
                    &|| self.location.describe(),
                    "reading history",
                    memory::Table::History,
                    |tables| tables.history(key),
                );
            }
        };
        let mut statement = connection
            .prepare_cached(
                "SELECT id, idempotency_key, at_ms, actor, event, from_status, to_status, reason, detail
                 FROM tool_execution_history WHERE (?1 IS NULL OR idempotency_key = ?1) ORDER BY id",
            )
            .map_err(|error| self.classify(error, "reading history"))?;
        let rows = statement
            .query_map(params![key.map(IdempotencyKey::as_str)], |row| {
                Ok((
                    row.get::<_, i64>(0)?,
                    row.get::<_, String>(1)?,
                    row.get::<_, i64>(2)?,
                    row.get::<_, String>(3)?,
                    row.get::<_, String>(4)?,
                    row.get::<_, Option<String>>(5)?,
                    row.get::<_, Option<String>>(6)?,
                    row.get::<_, Option<String>>(7)?,
                    row.get::<_, Option<String>>(8)?,
                ))
            })
            .map_err(|error| self.classify(error, "reading history"))?;
        let mut entries = Vec::new();
        for row in rows {
            let (id, key, at_ms, actor, event, from_status, to_status, reason, detail) =
                row.map_err(|error| self.classify(error, "reading history"))?;
            let parse_status = |text: Option<String>| -> Result<Option<Status>, LedgerError> {
                text.map(|text| {
                    Status::parse(&text).ok_or_else(|| LedgerError::BadRow {
                        location: self.location(),
                        key: key.clone(),
                        detail: format!("history status `{text}`"),
                    })
                })
                .transpose()
            };
            entries.push(HistoryEntry {
                id: id as u64,
                key: IdempotencyKey::parse(&key).map_err(|detail| LedgerError::BadRow {
                    location: self.location(),
                    key: key.clone(),
                    detail,
                })?,
                at_ms: at_ms as u64,
                actor,
                event,
                from_status: parse_status(from_status)?,
                to_status: parse_status(to_status)?,
                reason,
                detail,
            });
        }
        Ok(entries)
    }

    pub fn load_checkpoint(&self, run_id: &str) -> Result<Option<Checkpoint>, LedgerError> {
        self.read(
            "loading a checkpoint",
            memory::Table::Checkpoints,
            |connection| {
                query_row_cached(
                    connection,
                    "SELECT run_id, version, status, state, saved_by, updated_at_ms FROM run_checkpoints WHERE run_id = ?1",
                    [run_id],
                    checkpoint_from_row,
                )
                .optional()
            },
            |tables| tables.checkpoint(run_id),
        )
    }

    pub fn checkpoints(&self) -> Result<Vec<Checkpoint>, LedgerError> {
        self.read(
            "listing checkpoints",
            memory::Table::Checkpoints,
            |connection| {
                connection
                    .prepare_cached(
                        "SELECT run_id, version, status, state, saved_by, updated_at_ms FROM run_checkpoints ORDER BY run_id",
                    )?
                    .query_map([], checkpoint_from_row)?
                    .collect()
            },
            memory::MemoryTables::checkpoints,
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
        self.save_checkpoint_if_still_failed(run_id, status, state, saved_by, expected_version, None, now_ms)
    }

    /// [`Ledger::save_checkpoint`], also compare-and-set on `still_failed`'s record still being
    /// `failed`: a save that tells the model a call failed must not land after another worker
    /// ran that call again (`failed` may run again), or the run would act on a stale failure.
    #[allow(clippy::too_many_arguments)]
    pub fn save_checkpoint_if_still_failed(
        &mut self,
        run_id: &str,
        status: &str,
        state: &str,
        saved_by: &str,
        expected_version: Option<u32>,
        still_failed: Option<&IdempotencyKey>,
        now_ms: u64,
    ) -> Result<SaveOutcome, LedgerError> {
        self.transaction("saving a checkpoint", "committing a checkpoint", |tables| {
            let found = tables.checkpoint_version(run_id)?.unwrap_or(0);
            let still_failed_record = match still_failed {
                Some(key) => tables.record(key)?,
                None => None,
            };
            let outcome = decide_checkpoint_save(expected_version, found, still_failed_record);
            if let SaveOutcome::Saved { version } = outcome {
                tables.put_checkpoint(&CheckpointRow {
                    run_id,
                    version,
                    status,
                    state,
                    saved_by,
                    updated_at_ms: now_ms,
                })?;
            }
            Ok(outcome)
        })
    }
}

/// Why [`apply_file_settings`] failed.
#[derive(Debug)]
pub enum FileSettingsError<E> {
    /// SQLite refused WAL (a read-only folder, a network file system): it answered with this mode.
    NotWal {
        mode: String,
    },
    Ledger(E),
}

/// The settings of every file ledger connection: WAL, `synchronous = FULL`, foreign keys on.
/// Public so that the benchmark's raw-SQLite baseline runs on exactly the same settings;
/// `classify` turns a SQLite error into the caller's error type.
pub fn apply_file_settings<E>(
    connection: &Connection,
    classify: impl Fn(rusqlite::Error, &'static str) -> E,
) -> Result<(), FileSettingsError<E>> {
    connection
        .busy_timeout(Duration::from_millis(BUSY_TIMEOUT_MS))
        .map_err(|error| FileSettingsError::Ledger(classify(error, "setting the busy timeout")))?;
    sqlite_file::make_durable(connection).map_err(|error| match error {
        DurabilityError::Sqlite { context, error } => FileSettingsError::Ledger(classify(error, context)),
        DurabilityError::NotWal { mode } => FileSettingsError::NotWal { mode },
    })?;
    connection
        .execute_batch("PRAGMA foreign_keys = ON;")
        .map_err(|error| FileSettingsError::Ledger(classify(error, "setting durability")))?;
    Ok(())
}

/// `execute` through the connection's statement cache: the ledger runs the same few
/// statements over and over, and parsing them each time was a measurable part of a cycle.
fn execute_cached(connection: &Connection, sql: &str, params: impl rusqlite::Params) -> rusqlite::Result<usize> {
    connection.prepare_cached(sql)?.execute(params)
}

/// `query_row` through the connection's statement cache (see [`execute_cached`]).
fn query_row_cached<T>(
    connection: &Connection,
    sql: &str,
    params: impl rusqlite::Params,
    map: impl FnOnce(&rusqlite::Row<'_>) -> rusqlite::Result<T>,
) -> rusqlite::Result<T> {
    connection.prepare_cached(sql)?.query_row(params, map)
}

/// Turns a SQLite error into one that names the problem and the ledger.
fn classify_at(location: &Location, error: rusqlite::Error, context: &'static str) -> LedgerError {
    let location = location.describe();
    match sqlite_file::failure_of(&error) {
        Failure::NotADatabase => LedgerError::NotALedger {
            location,
            detail: "not a SQLite database".into(),
        },
        Failure::Corrupt => LedgerError::Corrupt {
            location,
            detail: error.to_string(),
        },
        Failure::Locked => LedgerError::Locked { location, context },
        Failure::Other => LedgerError::Sqlite {
            location,
            context,
            source: error,
        },
    }
}

fn checkpoint_from_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<Checkpoint> {
    Ok(Checkpoint {
        run_id: row.get(0)?,
        version: row.get(1)?,
        status: row.get(2)?,
        state: row.get(3)?,
        saved_by: row.get(4)?,
        updated_at_ms: row.get::<_, i64>(5)? as u64,
    })
}

/// A row as SQLite gives it, before its text fields are checked.
struct RawRecord {
    key: String,
    tenant: String,
    run_id: String,
    tool_call_id: String,
    tool: String,
    side_effect: String,
    arguments: String,
    status: String,
    attempts: u32,
    result: Option<String>,
    owner: String,
    created_at_ms: i64,
    updated_at_ms: i64,
    lease_expires_at_ms: Option<i64>,
}

impl RawRecord {
    fn from_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<RawRecord> {
        Ok(RawRecord {
            key: row.get("idempotency_key")?,
            tenant: row.get("tenant")?,
            run_id: row.get("run_id")?,
            tool_call_id: row.get("tool_call_id")?,
            tool: row.get("tool")?,
            side_effect: row.get("side_effect")?,
            arguments: row.get("arguments")?,
            status: row.get("status")?,
            attempts: row.get("attempts")?,
            result: row.get("result")?,
            owner: row.get("owner")?,
            created_at_ms: row.get("created_at_ms")?,
            updated_at_ms: row.get("updated_at_ms")?,
            lease_expires_at_ms: row.get("lease_expires_at_ms")?,
        })
    }

    fn into_record(self, location: &Location) -> Result<ExecutionRecord, LedgerError> {
        let bad = |detail: String| LedgerError::BadRow {
            location: location.describe(),
            key: self.key.clone(),
            detail,
        };
        Ok(ExecutionRecord {
            key: IdempotencyKey::parse(&self.key).map_err(bad)?,
            status: Status::parse(&self.status).ok_or_else(|| bad(format!("status `{}`", self.status)))?,
            side_effect: SideEffect::parse(&self.side_effect)
                .ok_or_else(|| bad(format!("side effect `{}`", self.side_effect)))?,
            tenant: self.tenant,
            run_id: self.run_id,
            tool_call_id: self.tool_call_id,
            tool: self.tool,
            arguments: self.arguments,
            attempts: self.attempts,
            result: self.result,
            owner: self.owner,
            created_at_ms: self.created_at_ms as u64,
            updated_at_ms: self.updated_at_ms as u64,
            lease_expires_at_ms: self.lease_expires_at_ms.map(|ms| ms as u64),
        })
    }
}

fn select_record(connection: &Connection, key: &IdempotencyKey) -> rusqlite::Result<Option<RawRecord>> {
    connection
        .prepare_cached("SELECT * FROM tool_executions WHERE idempotency_key = ?1")?
        .query_row([key.as_str()], RawRecord::from_row)
        .optional()
}

// ----- one transaction's rows, and the operations written once against them -----

/// The rows one transaction reads and writes. Every operation of [`Ledger`] is written once
/// against this (read the rows it needs, decide with pure code, write the result), so the
/// decision logic is the same whichever store holds the rows: the two implementations only
/// differ in how a row is read and written.
trait Tables {
    fn record(&mut self, key: &IdempotencyKey) -> Result<Option<ExecutionRecord>, LedgerError>;
    /// The run's saved checkpoint version, if it has one.
    fn checkpoint_version(&mut self, run_id: &str) -> Result<Option<u32>, LedgerError>;
    /// Writes the whole row `record.key` names.
    fn write_record(&mut self, write: RecordWrite, record: &ExecutionRecord) -> Result<(), LedgerError>;
    /// Appends one line; the store numbers it.
    fn append_history(&mut self, line: &HistoryLine<'_>) -> Result<(), LedgerError>;
    /// Inserts or replaces the run's checkpoint.
    fn put_checkpoint(&mut self, checkpoint: &CheckpointRow<'_>) -> Result<(), LedgerError>;
}

/// How a record is written, with SQLite's meaning.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum RecordWrite {
    /// A new key: a key that exists breaks the primary key.
    Insert,
    /// An existing key: a key that is not there changes nothing.
    Update,
    /// `INSERT OR REPLACE`: whatever was there is overwritten (the naive runtime's upsert).
    Replace,
}

/// A history line before the store numbers it.
#[derive(Clone, Debug)]
struct HistoryLine<'a> {
    key: &'a IdempotencyKey,
    at_ms: u64,
    actor: &'a str,
    event: &'a str,
    from_status: Option<Status>,
    to_status: Option<Status>,
    reason: Option<&'a str>,
    detail: Option<Cow<'a, str>>,
}

impl<'a> HistoryLine<'a> {
    /// A line that changes no status.
    fn note(key: &'a IdempotencyKey, at_ms: u64, actor: &'a str, event: &'a str) -> HistoryLine<'a> {
        HistoryLine {
            key,
            at_ms,
            actor,
            event,
            from_status: None,
            to_status: None,
            reason: None,
            detail: None,
        }
    }
}

/// A checkpoint row to write.
#[derive(Clone, Copy, Debug)]
struct CheckpointRow<'a> {
    run_id: &'a str,
    version: u32,
    status: &'a str,
    state: &'a str,
    saved_by: &'a str,
    updated_at_ms: u64,
}

/// A record as a store gives it: SQLite's text still to be checked, or the memory store's typed row.
enum Row {
    Sqlite(RawRecord),
    Memory(ExecutionRecord),
}

impl Row {
    fn into_record(self, location: &Location) -> Result<ExecutionRecord, LedgerError> {
        match self {
            Row::Sqlite(raw) => raw.into_record(location),
            Row::Memory(record) => Ok(record),
        }
    }
}

/// The reservation: the decision table applied to what the transaction reads.
fn reserve_in(tables: &mut dyn Tables, request: &ReserveRequest<'_>, now_ms: u64) -> Result<Reservation, LedgerError> {
    let existing = tables.record(request.key)?;
    let found_version = match request.checkpoint_version {
        Some(_) => Some(tables.checkpoint_version(request.run_id)?.unwrap_or(0)),
        None => None,
    };
    let (reservation, write) = decide_reservation(request, existing, found_version, now_ms);
    if let (Some((write, line)), Reservation::Decided { record, .. }) = (write, &reservation) {
        tables.write_record(write, record)?;
        tables.append_history(&line)?;
    }
    Ok(reservation)
}

/// The naive check-then-insert's second half: fenced like a reservation, then an upsert.
fn insert_started_unchecked_in(
    tables: &mut dyn Tables,
    request: &ReserveRequest<'_>,
    now_ms: u64,
) -> Result<Reservation, LedgerError> {
    if let Some(expected) = request.checkpoint_version {
        let found = tables.checkpoint_version(request.run_id)?.unwrap_or(0);
        if found != expected {
            return Ok(Reservation::Fenced { expected, found });
        }
    }
    let previous = tables.record(request.key)?;
    let (reservation, line) = decide_unchecked_insert(request, previous.as_ref(), now_ms);
    let Reservation::Decided { record, .. } = &reservation else {
        unreachable!("an unchecked insert always decides to run");
    };
    tables.write_record(RecordWrite::Replace, record)?;
    tables.append_history(&line)?;
    Ok(reservation)
}

/// What a reservation decides, and the row and history line it writes (if it writes).
/// Pure: everything it needs was read by the caller.
fn decide_reservation<'a>(
    request: &ReserveRequest<'a>,
    existing: Option<ExecutionRecord>,
    found_version: Option<u32>,
    now_ms: u64,
) -> (Reservation, Option<(RecordWrite, HistoryLine<'a>)>) {
    // Fencing (guard `checkpoint_version`): someone saved since this worker loaded.
    if let (Some(expected), Some(found)) = (request.checkpoint_version, found_version)
        && expected != found
    {
        return (Reservation::Fenced { expected, found }, None);
    }
    if let Some(existing) = &existing
        && (existing.arguments != request.arguments || existing.tool != request.tool)
    {
        return (
            Reservation::ArgumentsMismatch {
                existing: existing.clone(),
            },
            None,
        );
    }
    let lease_expired = match (&existing, request.lease_ms) {
        (Some(record), Some(_)) => record.lease_expires_at_ms.is_some_and(|expires| now_ms >= expires),
        _ => false,
    };
    let previous_status = existing.as_ref().map(|record| record.status);
    let action = reservation_action(previous_status, request.side_effect, lease_expired);
    let lease_expires_at_ms = request.lease_ms.map(|lease| now_ms + lease);
    let started = |event: &'a str, detail: Option<&'a str>| HistoryLine {
        from_status: previous_status,
        to_status: Some(Status::Started),
        detail: detail.map(Cow::Borrowed),
        ..HistoryLine::note(request.key, now_ms, request.owner, event)
    };
    let (record, previous_owner, write) = match (action, existing) {
        (ReservationAction::RunNew, existing) => {
            assert!(
                existing.is_none(),
                "the decision table runs new only what does not exist"
            );
            let record = new_started_record(request, 0, now_ms, lease_expires_at_ms);
            (record, None, Some((RecordWrite::Insert, started("reserved", None))))
        }
        (ReservationAction::RunAgain | ReservationAction::TakeOverExpiredLease, Some(existing)) => {
            let line = if action == ReservationAction::TakeOverExpiredLease {
                started(
                    "lease_taken_over",
                    Some("the lease ran out; a naive runtime runs the call again"),
                )
            } else {
                started("reserved_again", None)
            };
            let previous_owner = existing.owner.clone();
            let record = ExecutionRecord {
                status: Status::Started,
                result: None,
                owner: request.owner.to_owned(),
                updated_at_ms: now_ms,
                lease_expires_at_ms,
                ..existing
            };
            (record, Some(previous_owner), Some((RecordWrite::Update, line)))
        }
        (
            ReservationAction::ReturnRecorded | ReservationAction::ReturnCompensated | ReservationAction::Unknown,
            Some(existing),
        ) => {
            let previous_owner = existing.owner.clone();
            (existing, Some(previous_owner), None)
        }
        (action, None) => unreachable!("the decision table answers {action:?} only on what exists"),
    };
    (
        Reservation::Decided {
            action,
            record,
            previous_owner,
            previous_status,
        },
        write,
    )
}

/// The naive upsert's row and history line over whatever was there. Pure.
fn decide_unchecked_insert<'a>(
    request: &ReserveRequest<'a>,
    previous: Option<&ExecutionRecord>,
    now_ms: u64,
) -> (Reservation, HistoryLine<'a>) {
    let previous_status = previous.map(|record| record.status);
    // Overwriting a `started` row is the race this path allows: two workers both run.
    let detail = match previous_status {
        Some(Status::Started) => "check-then-insert overwrote another worker's reservation",
        Some(_) => "check-then-insert over an earlier record",
        None => "check-then-insert",
    };
    let record = new_started_record(
        request,
        previous.map_or(0, |record| record.attempts),
        now_ms,
        request.lease_ms.map(|lease| now_ms + lease),
    );
    let action = if previous.is_some() {
        ReservationAction::RunAgain
    } else {
        ReservationAction::RunNew
    };
    let line = HistoryLine {
        from_status: previous_status,
        to_status: Some(Status::Started),
        detail: Some(Cow::Borrowed(detail)),
        ..HistoryLine::note(request.key, now_ms, request.owner, "reserved")
    };
    (
        Reservation::Decided {
            action,
            record,
            previous_owner: previous.map(|record| record.owner.clone()),
            previous_status,
        },
        line,
    )
}

/// An attempt's own outcome: recorded over `started`, or logged and ignored when someone
/// settled the call first. Pure.
fn decide_outcome<'a>(
    current: ExecutionRecord,
    key: &'a IdempotencyKey,
    status: Status,
    result: Option<&'a str>,
    actor: &'a str,
    now_ms: u64,
) -> (Recorded, HistoryLine<'a>) {
    if current.status == Status::Started {
        let line = HistoryLine {
            from_status: Some(Status::Started),
            to_status: Some(status),
            detail: result.map(Cow::Borrowed),
            ..HistoryLine::note(key, now_ms, actor, status.name())
        };
        let after = ExecutionRecord {
            status,
            result: result.map(str::to_owned),
            updated_at_ms: now_ms,
            lease_expires_at_ms: None,
            ..current
        };
        (Recorded::Recorded(after), line)
    } else {
        let line = HistoryLine {
            from_status: Some(current.status),
            detail: Some(Cow::Owned(format!(
                "late outcome {status} ignored; the record is already {}",
                current.status
            ))),
            ..HistoryLine::note(key, now_ms, actor, "late_outcome_ignored")
        };
        (Recorded::LateOutcomeIgnored(current), line)
    }
}

/// A settlement's compare-and-set, and the record after it. Pure.
fn decide_settlement(
    current: ExecutionRecord,
    key: &IdempotencyKey,
    settlement: &Settlement<'_>,
    now_ms: u64,
) -> Result<ExecutionRecord, SettleError> {
    match settlement.expected {
        Some(expected) if expected != current.status => {
            return Err(SettleError::Stale {
                key: key.clone(),
                expected,
                current: Box::new(current),
            });
        }
        None if !current.status.is_unknown() => {
            return Err(SettleError::AlreadySettled {
                key: key.clone(),
                current: Box::new(current),
            });
        }
        _ => {}
    }
    // Compensation is the one move from a settled status: completed → compensated.
    let allowed =
        current.status.is_unknown() || (current.status == Status::Completed && settlement.to == Status::Compensated);
    if !allowed {
        return Err(SettleError::AlreadySettled {
            key: key.clone(),
            current: Box::new(current),
        });
    }
    let result = match settlement.result {
        Some(result) => Some(result.to_owned()),
        None => current.result,
    };
    Ok(ExecutionRecord {
        status: settlement.to,
        result,
        updated_at_ms: now_ms,
        lease_expires_at_ms: None,
        ..current
    })
}

/// A checkpoint save's compare-and-sets: on the version, and on a call still being `failed`. Pure.
fn decide_checkpoint_save(
    expected_version: Option<u32>,
    found: u32,
    still_failed: Option<ExecutionRecord>,
) -> SaveOutcome {
    if let Some(expected) = expected_version
        && expected != found
    {
        return SaveOutcome::Stale { expected, found };
    }
    if let Some(record) = still_failed
        && record.status != Status::Failed
    {
        return SaveOutcome::TakenOver {
            key: record.key.as_str().to_owned(),
            status: record.status,
            owner: record.owner,
        };
    }
    SaveOutcome::Saved { version: found + 1 }
}

/// The SQLite store: each row read and written with one cached statement, inside the
/// caller's `BEGIN IMMEDIATE` transaction.
struct SqliteTables<'a> {
    connection: &'a Connection,
    location: &'a Location,
    context: &'static str,
}

impl SqliteTables<'_> {
    fn classify(&self, error: rusqlite::Error) -> LedgerError {
        classify_at(self.location, error, self.context)
    }
}

impl Tables for SqliteTables<'_> {
    fn record(&mut self, key: &IdempotencyKey) -> Result<Option<ExecutionRecord>, LedgerError> {
        select_record(self.connection, key)
            .map_err(|error| self.classify(error))?
            .map(|row| row.into_record(self.location))
            .transpose()
    }

    fn checkpoint_version(&mut self, run_id: &str) -> Result<Option<u32>, LedgerError> {
        query_row_cached(
            self.connection,
            "SELECT version FROM run_checkpoints WHERE run_id = ?1",
            [run_id],
            |row| row.get(0),
        )
        .optional()
        .map_err(|error| self.classify(error))
    }

    fn write_record(&mut self, write: RecordWrite, record: &ExecutionRecord) -> Result<(), LedgerError> {
        let sql = match write {
            RecordWrite::Insert => {
                "INSERT INTO tool_executions (idempotency_key, tenant, run_id, tool_call_id, tool, side_effect, arguments,
                     status, attempts, result, owner, created_at_ms, updated_at_ms, lease_expires_at_ms)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)"
            }
            RecordWrite::Replace => {
                "INSERT OR REPLACE INTO tool_executions (idempotency_key, tenant, run_id, tool_call_id, tool, side_effect, arguments,
                     status, attempts, result, owner, created_at_ms, updated_at_ms, lease_expires_at_ms)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)"
            }
            RecordWrite::Update => {
                "UPDATE tool_executions SET tenant = ?2, run_id = ?3, tool_call_id = ?4, tool = ?5, side_effect = ?6,
                     arguments = ?7, status = ?8, attempts = ?9, result = ?10, owner = ?11, created_at_ms = ?12,
                     updated_at_ms = ?13, lease_expires_at_ms = ?14
                 WHERE idempotency_key = ?1"
            }
        };
        execute_cached(
            self.connection,
            sql,
            params![
                record.key.as_str(),
                record.tenant,
                record.run_id,
                record.tool_call_id,
                record.tool,
                record.side_effect.name(),
                record.arguments,
                record.status.name(),
                record.attempts,
                record.result,
                record.owner,
                record.created_at_ms as i64,
                record.updated_at_ms as i64,
                record.lease_expires_at_ms.map(|ms| ms as i64),
            ],
        )
        .map_err(|error| self.classify(error))?;
        Ok(())
    }

    fn append_history(&mut self, line: &HistoryLine<'_>) -> Result<(), LedgerError> {
        execute_cached(
            self.connection,
            "INSERT INTO tool_execution_history (idempotency_key, at_ms, actor, event, from_status, to_status, reason, detail)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
            params![
                line.key.as_str(),
                line.at_ms as i64,
                line.actor,
                line.event,
                line.from_status.map(Status::name),
                line.to_status.map(Status::name),
                line.reason,
                line.detail.as_deref(),
            ],
        )
        .map_err(|error| self.classify(error))?;
        Ok(())
    }

    fn put_checkpoint(&mut self, checkpoint: &CheckpointRow<'_>) -> Result<(), LedgerError> {
        execute_cached(
            self.connection,
            "INSERT INTO run_checkpoints (run_id, version, status, state, saved_by, updated_at_ms)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)
             ON CONFLICT (run_id) DO UPDATE SET version = ?2, status = ?3, state = ?4, saved_by = ?5, updated_at_ms = ?6",
            params![
                checkpoint.run_id,
                checkpoint.version,
                checkpoint.status,
                checkpoint.state,
                checkpoint.saved_by,
                checkpoint.updated_at_ms as i64
            ],
        )
        .map_err(|error| self.classify(error))?;
        Ok(())
    }
}

/// The `started` record a reservation writes for `request`, created now.
fn new_started_record(
    request: &ReserveRequest<'_>,
    attempts: u32,
    now_ms: u64,
    lease_expires_at_ms: Option<u64>,
) -> ExecutionRecord {
    ExecutionRecord {
        key: request.key.clone(),
        tenant: request.tenant.to_owned(),
        run_id: request.run_id.to_owned(),
        tool_call_id: request.tool_call_id.to_owned(),
        tool: request.tool.to_owned(),
        side_effect: request.side_effect,
        arguments: request.arguments.to_owned(),
        status: Status::Started,
        attempts,
        result: None,
        owner: request.owner.to_owned(),
        created_at_ms: now_ms,
        updated_at_ms: now_ms,
        lease_expires_at_ms,
    }
}
