//! The ledger's schema in SQLite: the tables, indexes and append-only triggers of version 2,
//! writing them into a new database, the migration from version 1, and the check that a file
//! is this build's ledger before anything else touches it.

use rusqlite::{Connection, OptionalExtension, params};

use super::classify_at;
use crate::ledger::{LedgerError, Location, SCHEMA_VERSION};
use crate::sqlite_file;

const SCHEMA_NAME: &str = "twice-ledger";

/// `tool_executions` as version 2 has it: `compensating` is a status (an undo claimed and
/// not yet confirmed, visible and retryable).
///
/// `WITHOUT ROWID`: the rows live in the b-tree of their key, so a call's reservation writes
/// one b-tree fewer (and one WAL page fewer) than with a rowid table and its key's separate
/// index, and every read by key searches one b-tree, not two. Ledgers made before this keep
/// their rowid table: the same columns, statements and answers (SQLite stores the two alike
/// to every query the ledger makes), so both read and write either.
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
) WITHOUT ROWID;
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
///
/// The two histories number their lines `INTEGER PRIMARY KEY` without `AUTOINCREMENT`: the
/// next id is the largest so far plus one, and since the triggers refuse every `DELETE` the
/// largest is never taken away, so ids grow exactly as `AUTOINCREMENT` would make them,
/// without its `sqlite_sequence` row read and rewritten on every line (a WAL page per
/// commit). Ledgers made before this keep `AUTOINCREMENT`; the ids are the same either way.
const RUN_HISTORY: &str = r#"
CREATE TABLE run_history (
    id     INTEGER PRIMARY KEY,
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
    id              INTEGER PRIMARY KEY,
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
/// Runs `body` between `BEGIN IMMEDIATE` and `COMMIT` (or `ROLLBACK` on an error).
pub(super) fn in_transaction(
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
pub(super) fn write_schema(connection: &Connection, location: &Location) -> Result<(), LedgerError> {
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

pub(super) fn table_names(connection: &Connection, location: &Location) -> Result<Vec<String>, LedgerError> {
    sqlite_file::table_names(connection).map_err(|error| classify_at(location, error, "reading the schema"))
}

/// Makes sure `connection` holds this build's ledger: creates the schema in an empty file,
/// migrates version 1, refuses anything else. The checks are repeated inside a
/// `BEGIN IMMEDIATE` transaction so that processes opening a new (or old) file at the same
/// moment create or migrate it once and all go on.
pub(super) fn ensure_schema(connection: &Connection, location: &Location) -> Result<(), LedgerError> {
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
