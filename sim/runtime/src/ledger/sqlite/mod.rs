//! The SQLite store: opening a file or a named in-memory database, each operation one
//! `BEGIN IMMEDIATE` transaction over [`tables::SqliteTables`], the durability settings, and
//! SQLite's errors as the ledger's kinds.
//!
//! - `schema.rs`: the tables, indexes and triggers; creating, migrating and checking them.
//! - `tables.rs`: one transaction's rows (the `Tables` seam), one cached statement each.
//! - `reads.rs`: the reads outside any transaction.
//! - `batch.rs`: the connection group commit runs its batches on (see `ledger/group.rs`).

mod batch;
mod reads;
mod schema;
mod tables;

use std::path::Path;
use std::time::Duration;

pub(super) use rusqlite::Connection;
use rusqlite::OpenFlags;

use super::operations::{self, Tables};
use super::{Ledger, LedgerError, Location, ReserveRequest, Store, StoreError};
use crate::sqlite_file::{self, BUSY_TIMEOUT_MS, DurabilityError, Failure};

pub(super) use batch::SqliteBatch;
pub use reads::listing_plan;
pub(super) use reads::{all_records, checkpoint, checkpoints, contradictions, history, record, records, run_history};
use schema::{ensure_schema, in_transaction, table_names, write_schema};
use tables::SqliteTables;

/// Prepared statements kept per connection: every statement the ledger runs fits, so none
/// is parsed twice on one connection.
const STATEMENT_CACHE_CAPACITY: usize = 40;

/// Opens a ledger file: creates it (and its schema) when `create` and it does not exist,
/// identifies it before changing anything, migrates a version 1 ledger, and applies the
/// durability settings.
pub(super) fn open_file(path: &Path, create: bool) -> Result<Ledger, LedgerError> {
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
    // Identify the file before changing anything about it: a file that is not a ledger must
    // be left byte for byte as it was (switching to WAL rewrites its header).
    sqlite_file::wait_when_busy(&connection)
        .map_err(|error| classify_at(&location, error, "setting the busy timeout"))?;
    if !create && table_names(&connection, &location)?.is_empty() {
        return Err(LedgerError::NotALedger {
            location: location.describe(),
            detail: "an empty database; only a new ledger is given its schema".into(),
        });
    }
    ensure_schema(&connection, &location)?;
    apply_file_settings(&connection, |error, context| classify_at(&location, error, context)).map_err(|error| {
        match error {
            FileSettingsError::NotWal { mode } => LedgerError::Open {
                location: location.describe(),
                detail: DurabilityError::not_wal_detail(&mode),
            },
            FileSettingsError::Ledger(error) => error,
        }
    })?;
    Ok(Ledger {
        store: Store::Sqlite(connection),
        location,
    })
}

/// A new named in-memory database with the schema. A new name is a new, empty database that
/// nobody else can have touched: the schema goes straight in, without the checks a file on
/// disk needs. (The simulator opens one per scenario; those checks were a tenth of its time.)
pub(super) fn open_new_memory(name: &str) -> Result<Ledger, LedgerError> {
    let ledger = connect_memory(name)?;
    let Store::Sqlite(connection) = &ledger.store else {
        unreachable!("connect_memory opens SQLite");
    };
    in_transaction(connection, &ledger.location, "creating the schema", || {
        write_schema(connection, &ledger.location)
    })?;
    Ok(ledger)
}

/// Another connection to the SQLite ledger at `location` (a file, or a named memory database).
pub(super) fn connect_again(_connection: &Connection, location: &Location) -> Result<Ledger, LedgerError> {
    match location {
        Location::File(path) => Ledger::open(path),
        Location::Memory(name) => connect_memory(name),
        Location::MemoryStore(_) | Location::External(_) => Err(LedgerError::Open {
            location: location.describe(),
            detail: "a SQLite connection on a store that is not SQLite's".into(),
        }),
    }
}

/// Another read connection for a member of the grouped file ledger at `location`.
pub(super) fn read_connection_again(_connection: &Connection, location: &Location) -> Result<Connection, LedgerError> {
    let not_a_file = || LedgerError::Open {
        location: location.describe(),
        detail: "a grouped SQLite ledger is a file".into(),
    };
    let Location::File(path) = location else {
        return Err(not_a_file());
    };
    match Ledger::open(path)?.store {
        Store::Sqlite(connection) => Ok(connection),
        Store::Memory(_) | Store::External(_) | Store::Grouped(_) => Err(not_a_file()),
    }
}

/// Another connection to the named in-memory database.
pub(super) fn connect_memory(name: &str) -> Result<Ledger, LedgerError> {
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
    sqlite_file::wait_when_busy(&connection)
        .map_err(|error| classify_at(&location, error, "setting the busy timeout"))?;
    connection
        .execute_batch("PRAGMA synchronous = OFF;")
        .map_err(|error| classify_at(&location, error, "configuring"))?;
    Ok(Ledger {
        store: Store::Sqlite(connection),
        location,
    })
}

/// Runs `body` as one `BEGIN IMMEDIATE` transaction: committed when it returns `Ok`, rolled
/// back when it returns `Err` (or panics). `BEGIN` and `COMMIT` go through the statement
/// cache like every other statement: parsed once per connection, not twice a call.
pub(super) fn transaction<T, E: From<LedgerError>>(
    connection: &mut Connection,
    location: &Location,
    context: &'static str,
    commit_context: &'static str,
    mut body: impl FnMut(&mut dyn Tables) -> Result<T, E>,
) -> Result<T, E> {
    execute_cached(connection, "BEGIN IMMEDIATE", []).map_err(|error| classify_at(location, error, context))?;
    let open = RollbackUnlessCommitted { connection };
    let answer = body(&mut SqliteTables {
        connection: open.connection,
        location,
        context,
    })?;
    execute_cached(open.connection, "COMMIT", []).map_err(|error| classify_at(location, error, commit_context))?;
    Ok(answer)
}

/// An open transaction, rolled back when this drops with it still open: the body refused or
/// panicked, or the `COMMIT` failed (SQLite then keeps the transaction open, say on `BUSY`).
struct RollbackUnlessCommitted<'a> {
    connection: &'a Connection,
}

impl Drop for RollbackUnlessCommitted<'_> {
    fn drop(&mut self) {
        if !self.connection.is_autocommit() {
            // Nothing more can be done with a failed rollback than with the failure before
            // it: the connection's next BEGIN reports whatever is wrong.
            let _ = self.connection.execute_batch("ROLLBACK");
        }
    }
}

/// Begins a reservation and leaves its transaction open (see `Ledger::reserve_uncommitted`).
pub(super) fn reserve_uncommitted(
    connection: &mut Connection,
    location: &Location,
    request: &ReserveRequest<'_>,
    now_ms: u64,
) -> Result<(), LedgerError> {
    connection
        .execute_batch("BEGIN IMMEDIATE")
        .map_err(|error| classify_at(location, error, "reserving"))?;
    let reserved = operations::reserve(
        &mut SqliteTables {
            connection,
            location,
            context: "reserving",
        },
        request,
        now_ms,
    );
    if reserved.is_err() {
        // A refused reservation (another tenant's run, an empty name) leaves nothing open, as in
        // the memory store: only a reservation that was made is left uncommitted.
        let _ = connection.execute_batch("ROLLBACK");
    }
    reserved.map(|_| ())
}

/// Why [`apply_file_settings`] failed.
#[derive(Debug)]
pub enum FileSettingsError<E> {
    /// SQLite refused WAL (a read-only folder, a network file system): it answered with this mode.
    NotWal {
        /// The journal mode SQLite kept.
        mode: String,
    },
    /// Setting the file up failed otherwise (the caller's error).
    Ledger(E),
}

/// The settings of every file ledger connection: WAL, `synchronous = FULL`, foreign keys on.
/// Public so that the benchmark's raw-SQLite baseline runs on exactly the same settings;
/// `classify` turns a SQLite error into the caller's error type.
///
/// # Errors
///
/// [`FileSettingsError::NotWal`] when SQLite keeps another journal mode;
/// [`FileSettingsError::Ledger`] with `classify`'s error when a pragma fails.
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
pub(super) fn execute_cached(
    connection: &Connection,
    sql: &str,
    params: impl rusqlite::Params,
) -> rusqlite::Result<usize> {
    connection.prepare_cached(sql)?.execute(params)
}

/// `query_row` through the connection's statement cache (see [`execute_cached`]).
pub(super) fn query_row_cached<T>(
    connection: &Connection,
    sql: &str,
    params: impl rusqlite::Params,
    map: impl FnOnce(&rusqlite::Row<'_>) -> rusqlite::Result<T>,
) -> rusqlite::Result<T> {
    connection.prepare_cached(sql)?.query_row(params, map)
}

/// Turns a SQLite error into one that names the problem and the ledger.
pub(super) fn classify_at(location: &Location, error: rusqlite::Error, context: &'static str) -> LedgerError {
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
        Failure::Other => LedgerError::Failed {
            location,
            context,
            source: StoreError::sqlite(error),
        },
    }
}

/// A time as SQLite stores it (signed 64 bits). Times past `i64::MAX` ms (292 million years)
/// do not occur; one that did is stored as the largest there is rather than wrapped.
pub(super) fn stored_ms(ms: u64) -> i64 {
    i64::try_from(ms).unwrap_or(i64::MAX)
}

/// A name column (a run id, a tenant, a tool, a worker) read back: the TEXT it always was,
/// typed. The SQLite store's own wrapper, so the public id types carry no rusqlite trait (an
/// application's own rusqlite never meets them, and this crate may change how it stores them).
pub(super) struct StoredName<T>(pub(super) T);

impl<T: From<String>> rusqlite::types::FromSql for StoredName<T> {
    fn column_result(value: rusqlite::types::ValueRef<'_>) -> rusqlite::types::FromSqlResult<Self> {
        String::column_result(value).map(|text| StoredName(T::from(text)))
    }
}

/// The name in column `column` of `row`.
pub(super) fn name_at<T: From<String>>(
    row: &rusqlite::Row<'_>,
    column: impl rusqlite::RowIndex,
) -> rusqlite::Result<T> {
    row.get::<_, StoredName<T>>(column).map(|stored| stored.0)
}

/// A time read back; a negative one (written by something else) reads as 0 rather than wrapping.
pub(super) fn read_ms(ms: i64) -> u64 {
    u64::try_from(ms).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::{Connection, name_at};
    use crate::ids::WorkerId;

    #[test]
    fn a_name_is_stored_as_text_and_read_back_typed() {
        let connection = Connection::open_in_memory().unwrap();
        connection.execute_batch("CREATE TABLE t (name TEXT NOT NULL)").unwrap();
        let worker = WorkerId::new("w1");
        connection
            .execute("INSERT INTO t (name) VALUES (?1)", [worker.as_str()])
            .unwrap();
        let typed: String = connection
            .query_row("SELECT typeof(name) FROM t", [], |row| row.get(0))
            .unwrap();
        assert_eq!(typed, "text");
        let read: WorkerId = connection
            .query_row("SELECT name FROM t", [], |row| name_at(row, 0))
            .unwrap();
        assert_eq!(read, worker);
    }
}
