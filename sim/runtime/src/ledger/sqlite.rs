//! The SQLite store: the schema (and its migration from version 1), opening a file or a
//! named in-memory database, each row read and written with one cached statement inside a
//! `BEGIN IMMEDIATE` transaction, and the reads outside any transaction.

use std::path::Path;
use std::time::Duration;

use rusqlite::{Connection, OpenFlags, OptionalExtension, TransactionBehavior, params};

use super::operations::{self, CheckpointRow, HistoryLine, RecordWrite, RunHistoryLine, Tables};
use super::{
    Checkpoint, ExecutionRecord, HistoryEntry, Ledger, LedgerError, Location, RecordFilter, ReserveRequest, RunEvent,
    RunHistoryEntry, SCHEMA_VERSION, Store, StoredHistoryLine,
};
use crate::key::IdempotencyKey;
use crate::rules::Status;
use crate::sqlite_file::{self, BUSY_TIMEOUT_MS, DurabilityError, Failure};
use crate::tool::SideEffect;

const SCHEMA_NAME: &str = "twice-ledger";
/// Prepared statements kept per connection: every statement the ledger runs fits, so none
/// is parsed twice on one connection.
const STATEMENT_CACHE_CAPACITY: usize = 40;

/// `tool_executions` as version 2 has it: `compensating` is a status (an undo claimed and
/// not yet confirmed, visible and retryable).
const TOOL_EXECUTIONS: &str = r#"
CREATE TABLE tool_executions (
    idempotency_key     TEXT PRIMARY KEY,
    tenant              TEXT NOT NULL,
    run_id              TEXT NOT NULL,
    tool_call_id        TEXT NOT NULL,
    tool                TEXT NOT NULL,
    side_effect         TEXT NOT NULL CHECK (side_effect IN ('read','write','external','destructive')),
    arguments           TEXT NOT NULL,
    status              TEXT NOT NULL CHECK (status IN ('started','completed','failed','indeterminate','compensating','compensated')),
    attempts            INTEGER NOT NULL CHECK (attempts >= 0),
    result              TEXT,
    owner               TEXT NOT NULL,
    created_at_ms       INTEGER NOT NULL,
    updated_at_ms       INTEGER NOT NULL,
    lease_expires_at_ms INTEGER
);
"#;

/// One index per combination of the listing's filters, each ending in the listing's order
/// (updated_at_ms, key), so a page is a range of one index: no scan, no sort.
const LISTING_INDEXES: &str = r#"
CREATE INDEX tool_executions_by_tenant_status ON tool_executions (tenant, status, updated_at_ms, idempotency_key);
CREATE INDEX tool_executions_by_tenant ON tool_executions (tenant, updated_at_ms, idempotency_key);
CREATE INDEX tool_executions_by_status ON tool_executions (status, updated_at_ms, idempotency_key);
CREATE INDEX tool_executions_by_update ON tool_executions (updated_at_ms, idempotency_key);
"#;

/// What a run's own history adds in version 2.
const RUN_HISTORY: &str = r#"
CREATE TABLE run_history (
    id     INTEGER PRIMARY KEY AUTOINCREMENT,
    run_id TEXT NOT NULL,
    at_ms  INTEGER NOT NULL,
    actor  TEXT NOT NULL,
    event  TEXT NOT NULL,
    detail TEXT
);
CREATE INDEX run_history_by_run ON run_history (run_id, id);
CREATE TRIGGER run_history_no_update BEFORE UPDATE ON run_history
BEGIN SELECT RAISE(ABORT, 'run_history is append-only'); END;
CREATE TRIGGER run_history_no_delete BEFORE DELETE ON run_history
BEGIN SELECT RAISE(ABORT, 'run_history is append-only'); END;
"#;

const HISTORY_AND_CHECKPOINTS: &str = r#"
CREATE TABLE twice_meta (
    name  TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
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

/// Version 1 → 2, in one transaction: `tool_executions` is rebuilt with the new status (a
/// `CHECK` cannot be altered in place), the listing's indexes replace version 1's one, and the
/// run history is added. Every row is copied as it was.
const MIGRATE_1_TO_2: &str = r#"
ALTER TABLE tool_executions RENAME TO tool_executions_version_1;
DROP INDEX IF EXISTS tool_executions_by_status;
"#;

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

/// Runs `body` between `BEGIN IMMEDIATE` and `COMMIT` (or `ROLLBACK` on an error).
fn in_transaction(
    connection: &Connection,
    location: &Location,
    context: &'static str,
    body: impl FnOnce() -> Result<(), LedgerError>,
) -> Result<(), LedgerError> {
    connection
        .execute_batch("BEGIN IMMEDIATE")
        .map_err(|error| classify_at(location, error, context))?;
    match body() {
        Ok(()) => connection
            .execute_batch("COMMIT")
            .map_err(|error| classify_at(location, error, context)),
        Err(error) => {
            let _ = connection.execute_batch("ROLLBACK");
            Err(error)
        }
    }
}

/// The tables, indexes, triggers and the schema's name and version, inside the caller's transaction.
fn write_schema(connection: &Connection, location: &Location) -> Result<(), LedgerError> {
    for part in [HISTORY_AND_CHECKPOINTS, TOOL_EXECUTIONS, LISTING_INDEXES, RUN_HISTORY] {
        connection
            .execute_batch(part)
            .map_err(|error| classify_at(location, error, "creating the schema"))?;
    }
    connection
        .execute(
            "INSERT INTO twice_meta (name, value) VALUES ('schema', ?1), ('schema_version', ?2)",
            params![SCHEMA_NAME, SCHEMA_VERSION.to_string()],
        )
        .map_err(|error| classify_at(location, error, "creating the schema"))?;
    Ok(())
}

/// Version 1 → 2 inside the caller's transaction (see [`MIGRATE_1_TO_2`]).
fn migrate_from_version_1(connection: &Connection, location: &Location) -> Result<(), LedgerError> {
    let step = |sql: &str| {
        connection
            .execute_batch(sql)
            .map_err(|error| classify_at(location, error, "migrating the ledger from version 1"))
    };
    step(MIGRATE_1_TO_2)?;
    step(TOOL_EXECUTIONS)?;
    step("INSERT INTO tool_executions SELECT * FROM tool_executions_version_1; DROP TABLE tool_executions_version_1;")?;
    step(LISTING_INDEXES)?;
    step(RUN_HISTORY)?;
    connection
        .execute(
            "UPDATE twice_meta SET value = ?1 WHERE name = 'schema_version'",
            params![SCHEMA_VERSION.to_string()],
        )
        .map_err(|error| classify_at(location, error, "migrating the ledger from version 1"))?;
    Ok(())
}

fn table_names(connection: &Connection, location: &Location) -> Result<Vec<String>, LedgerError> {
    sqlite_file::table_names(connection).map_err(|error| classify_at(location, error, "reading the schema"))
}

/// Makes sure `connection` holds this build's ledger: creates the schema in an empty file,
/// migrates version 1, refuses anything else. The checks are repeated inside a
/// `BEGIN IMMEDIATE` transaction so that processes opening a new (or old) file at the same
/// moment create or migrate it once and all go on.
fn ensure_schema(connection: &Connection, location: &Location) -> Result<(), LedgerError> {
    let version = |connection: &Connection| -> Result<Option<String>, LedgerError> {
        let tables = table_names(connection, location)?;
        if tables.is_empty() {
            return Ok(None);
        }
        if !tables.iter().any(|table| table == "twice_meta") {
            return Err(LedgerError::NotALedger {
                location: location.describe(),
                detail: format!("a SQLite database with tables {} but no twice_meta", tables.join(", ")),
            });
        }
        let read = |name: &str| -> Result<Option<String>, LedgerError> {
            connection
                .query_row("SELECT value FROM twice_meta WHERE name = ?1", [name], |row| row.get(0))
                .optional()
                .map_err(|error| classify_at(location, error, "reading twice_meta"))
        };
        if read("schema")?.as_deref() != Some(SCHEMA_NAME) {
            return Err(LedgerError::NotALedger {
                location: location.describe(),
                detail: "twice_meta does not name the twice-ledger schema".into(),
            });
        }
        Ok(Some(read("schema_version")?.unwrap_or_else(|| "none".into())))
    };
    let current = SCHEMA_VERSION.to_string();
    match version(connection)? {
        Some(found) if found == current => {}
        Some(found) if found != "1" => {
            return Err(LedgerError::SchemaVersion {
                location: location.describe(),
                found,
                expected: SCHEMA_VERSION,
            });
        }
        // Empty, or version 1: decide again under the write lock.
        _ => in_transaction(connection, location, "creating the schema", || {
            match version(connection)? {
                None => write_schema(connection, location),
                Some(found) if found == "1" => migrate_from_version_1(connection, location),
                Some(_) => Ok(()),
            }
        })?,
    }
    let verdict: String = connection
        .query_row("PRAGMA quick_check", [], |row| row.get(0))
        .map_err(|error| classify_at(location, error, "checking integrity"))?;
    if verdict != "ok" {
        return Err(LedgerError::Corrupt {
            location: location.describe(),
            detail: verdict,
        });
    }
    Ok(())
}

/// Runs `body` as one `BEGIN IMMEDIATE` transaction: committed when it returns `Ok`, rolled
/// back (by dropping the transaction) when it returns `Err`.
pub(super) fn transaction<T, E: From<LedgerError>>(
    connection: &mut Connection,
    location: &Location,
    context: &'static str,
    commit_context: &'static str,
    mut body: impl FnMut(&mut dyn Tables) -> Result<T, E>,
) -> Result<T, E> {
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
    operations::reserve(
        &mut SqliteTables {
            connection,
            location,
            context: "reserving",
        },
        request,
        now_ms,
    )?;
    Ok(())
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
        Failure::Other => LedgerError::Sqlite {
            location,
            context,
            source: error,
        },
    }
}

/// A time as SQLite stores it (signed 64 bits). Times past `i64::MAX` ms (292 million years)
/// do not occur; one that did is stored as the largest there is rather than wrapped.
fn stored_ms(ms: u64) -> i64 {
    i64::try_from(ms).unwrap_or(i64::MAX)
}

/// A time read back; a negative one (written by something else) reads as 0 rather than wrapping.
fn read_ms(ms: i64) -> u64 {
    u64::try_from(ms).unwrap_or(0)
}

// ----- rows -----

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
            created_at_ms: read_ms(self.created_at_ms),
            updated_at_ms: read_ms(self.updated_at_ms),
            lease_expires_at_ms: self.lease_expires_at_ms.map(read_ms),
        })
    }
}

fn select_record(connection: &Connection, key: &IdempotencyKey) -> rusqlite::Result<Option<RawRecord>> {
    connection
        .prepare_cached("SELECT * FROM tool_executions WHERE idempotency_key = ?1")?
        .query_row([key.as_str()], RawRecord::from_row)
        .optional()
}

fn checkpoint_from_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<Checkpoint> {
    Ok(Checkpoint {
        run_id: row.get(0)?,
        version: row.get(1)?,
        status: row.get(2)?,
        state: row.get(3)?,
        saved_by: row.get(4)?,
        updated_at_ms: read_ms(row.get::<_, i64>(5)?),
    })
}

// ----- reads outside a transaction -----

pub(super) fn record(
    connection: &Connection,
    location: &Location,
    key: &IdempotencyKey,
) -> Result<Option<ExecutionRecord>, LedgerError> {
    select_record(connection, key)
        .map_err(|error| classify_at(location, error, "reading a record"))?
        .map(|raw| raw.into_record(location))
        .transpose()
}

/// Every row `sql` selects, each read with `row`, through the statement cache.
fn rows<T>(
    connection: &Connection,
    location: &Location,
    context: &'static str,
    sql: &str,
    params: impl rusqlite::Params,
    row: impl FnMut(&rusqlite::Row<'_>) -> rusqlite::Result<T>,
) -> Result<Vec<T>, LedgerError> {
    connection
        .prepare_cached(sql)
        .and_then(|mut statement| statement.query_map(params, row)?.collect())
        .map_err(|error| classify_at(location, error, context))
}

fn records_where(
    connection: &Connection,
    location: &Location,
    sql: &str,
    params: impl rusqlite::Params,
    context: &'static str,
) -> Result<Vec<ExecutionRecord>, LedgerError> {
    rows(connection, location, context, sql, params, RawRecord::from_row)?
        .into_iter()
        .map(|raw| raw.into_record(location))
        .collect()
}

/// The listing: one statement per combination of filters, each a range of its own index in
/// (updated_at_ms, key) order; the cursor is a row-value comparison the index answers.
pub(super) fn records(
    connection: &Connection,
    location: &Location,
    filter: &RecordFilter<'_>,
) -> Result<Vec<ExecutionRecord>, LedgerError> {
    let (after_ms, after_key) = filter.after.map_or((-1, ""), |(ms, key)| (stored_ms(ms), key));
    let status = filter.status.map(Status::name);
    let limit = filter.limit;
    const ORDER: &str = "(updated_at_ms, idempotency_key) > (?1, ?2) ORDER BY updated_at_ms, idempotency_key LIMIT ?3";
    let context = "listing records";
    match (filter.tenant, status) {
        (Some(tenant), Some(status)) => records_where(
            connection,
            location,
            &format!("SELECT * FROM tool_executions WHERE tenant = ?4 AND status = ?5 AND {ORDER}"),
            params![after_ms, after_key, limit, tenant, status],
            context,
        ),
        (Some(tenant), None) => records_where(
            connection,
            location,
            &format!("SELECT * FROM tool_executions WHERE tenant = ?4 AND {ORDER}"),
            params![after_ms, after_key, limit, tenant],
            context,
        ),
        (None, Some(status)) => records_where(
            connection,
            location,
            &format!("SELECT * FROM tool_executions WHERE status = ?4 AND {ORDER}"),
            params![after_ms, after_key, limit, status],
            context,
        ),
        (None, None) => records_where(
            connection,
            location,
            &format!("SELECT * FROM tool_executions WHERE {ORDER}"),
            params![after_ms, after_key, limit],
            context,
        ),
    }
}

/// The query plan SQLite chooses for a listing with these filters (for the tests that hold
/// every combination to an index).
pub fn listing_plan(ledger: &Ledger, tenant: bool, status: bool) -> Result<Vec<String>, LedgerError> {
    let Store::Sqlite(connection) = &ledger.store else {
        return Ok(Vec::new());
    };
    const ORDER: &str = "(updated_at_ms, idempotency_key) > (?1, ?2) ORDER BY updated_at_ms, idempotency_key LIMIT ?3";
    let filters = match (tenant, status) {
        (true, true) => "tenant = ?4 AND status = ?5 AND ",
        (true, false) => "tenant = ?4 AND ",
        (false, true) => "status = ?4 AND ",
        (false, false) => "",
    };
    let sql = format!("EXPLAIN QUERY PLAN SELECT * FROM tool_executions WHERE {filters}{ORDER}");
    let mut statement = connection
        .prepare(&sql)
        .map_err(|error| classify_at(&ledger.location, error, "explaining a listing"))?;
    let count = statement.parameter_count();
    let values: Vec<rusqlite::types::Value> = (0..count)
        .map(|index| match index {
            0 | 2 => rusqlite::types::Value::Integer(1),
            _ => rusqlite::types::Value::Text("x".into()),
        })
        .collect();
    let plan = statement
        .query_map(rusqlite::params_from_iter(values), |row| row.get::<_, String>(3))
        .and_then(|rows| rows.collect::<rusqlite::Result<Vec<String>>>())
        .map_err(|error| classify_at(&ledger.location, error, "explaining a listing"))?;
    Ok(plan)
}

pub(super) fn all_records(connection: &Connection, location: &Location) -> Result<Vec<ExecutionRecord>, LedgerError> {
    records_where(
        connection,
        location,
        "SELECT * FROM tool_executions ORDER BY created_at_ms, idempotency_key",
        [],
        "listing records",
    )
}

pub(super) fn history(
    connection: &Connection,
    location: &Location,
    key: Option<&IdempotencyKey>,
) -> Result<Vec<HistoryEntry>, LedgerError> {
    let lines: Vec<StoredHistoryLine> = rows(
        connection,
        location,
        "reading history",
        "SELECT id, idempotency_key, at_ms, actor, event, from_status, to_status, reason, detail
         FROM tool_execution_history WHERE (?1 IS NULL OR idempotency_key = ?1) ORDER BY id",
        params![key.map(IdempotencyKey::as_str)],
        |row| {
            Ok(StoredHistoryLine {
                id: row.get(0)?,
                key: row.get(1)?,
                at_ms: row.get(2)?,
                actor: row.get(3)?,
                event: row.get(4)?,
                from_status: row.get(5)?,
                to_status: row.get(6)?,
                reason: row.get(7)?,
                detail: row.get(8)?,
            })
        },
    )?;
    let location = location.describe();
    lines.into_iter().map(|line| line.into_entry(&location)).collect()
}

pub(super) fn run_history(
    connection: &Connection,
    location: &Location,
    run_id: Option<&str>,
) -> Result<Vec<RunHistoryEntry>, LedgerError> {
    let raws: Vec<(i64, String, i64, String, String, Option<String>)> = rows(
        connection,
        location,
        "reading run history",
        "SELECT id, run_id, at_ms, actor, event, detail FROM run_history WHERE (?1 IS NULL OR run_id = ?1) ORDER BY id",
        params![run_id],
        |row| {
            Ok((
                row.get(0)?,
                row.get(1)?,
                row.get(2)?,
                row.get(3)?,
                row.get(4)?,
                row.get(5)?,
            ))
        },
    )?;
    raws.into_iter()
        .map(|(id, run_id, at_ms, actor, event, detail)| {
            Ok(RunHistoryEntry {
                id: read_ms(id),
                event: RunEvent::parse(&event).ok_or_else(|| LedgerError::BadRow {
                    location: location.describe(),
                    key: format!("run {run_id}"),
                    detail: format!("run history event `{event}`"),
                })?,
                run_id,
                at_ms: read_ms(at_ms),
                actor,
                detail,
            })
        })
        .collect()
}

pub(super) fn checkpoint(
    connection: &Connection,
    location: &Location,
    run_id: &str,
) -> Result<Option<Checkpoint>, LedgerError> {
    query_row_cached(
        connection,
        "SELECT run_id, version, status, state, saved_by, updated_at_ms FROM run_checkpoints WHERE run_id = ?1",
        [run_id],
        checkpoint_from_row,
    )
    .optional()
    .map_err(|error| classify_at(location, error, "loading a checkpoint"))
}

pub(super) fn checkpoints(connection: &Connection, location: &Location) -> Result<Vec<Checkpoint>, LedgerError> {
    rows(
        connection,
        location,
        "listing checkpoints",
        "SELECT run_id, version, status, state, saved_by, updated_at_ms FROM run_checkpoints ORDER BY run_id",
        [],
        checkpoint_from_row,
    )
}

// ----- one transaction's rows -----

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
            .map(|raw| raw.into_record(self.location))
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
                stored_ms(record.created_at_ms),
                stored_ms(record.updated_at_ms),
                record.lease_expires_at_ms.map(stored_ms),
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
                stored_ms(line.at_ms),
                line.actor,
                line.event.name(),
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
                stored_ms(checkpoint.updated_at_ms)
            ],
        )
        .map_err(|error| self.classify(error))?;
        Ok(())
    }

    fn append_run_event(&mut self, line: &RunHistoryLine<'_>) -> Result<(), LedgerError> {
        execute_cached(
            self.connection,
            "INSERT INTO run_history (run_id, at_ms, actor, event, detail) VALUES (?1, ?2, ?3, ?4, ?5)",
            params![
                line.run_id,
                stored_ms(line.at_ms),
                line.actor,
                line.event.name(),
                line.detail
            ],
        )
        .map_err(|error| self.classify(error))?;
        Ok(())
    }
}
