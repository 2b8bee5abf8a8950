//! The ledger's tables in PostgreSQL: the same tables, columns, checks and indexes as the
//! SQLite store's schema version 2, and the same name and version in `twice_meta`.
//!
//! Differences, each for a reason:
//! - Every text column compares bytewise (`COLLATE "C"`), as SQLite's `BINARY` does, so
//!   listings come back in the same order on every store whatever the database's locale.
//! - Times, attempts and versions are `BIGINT` (SQLite's `INTEGER` is 64-bit too).
//! - History ids come from an identity column. Like `AUTOINCREMENT` they only grow, but a
//!   transaction that is run again after a serialization failure has used its numbers, so
//!   the ids of a busy ledger can skip; their order is still the order lines were appended.
//! - Append-only is enforced by triggers that raise on `UPDATE` and `DELETE` (SQLite's
//!   `RAISE(ABORT)`), and on `TRUNCATE`, which PostgreSQL has and row triggers do not see.
//!
//! There is no version 1 here (the store was born at version 2): any other version is refused.

use twice_runtime::ledger::{LedgerError, SCHEMA_VERSION};

use crate::connection::{Connection, ConnectionError};
use crate::error::{classify, classify_connection, detail_of};

/// What `twice_meta` names the schema, as the SQLite store does.
pub const SCHEMA_NAME: &str = "twice-ledger";

const TABLES: &str = r#"
CREATE TABLE twice_meta (
    name  TEXT COLLATE "C" PRIMARY KEY,
    value TEXT COLLATE "C" NOT NULL
);
CREATE TABLE tool_executions (
    idempotency_key     TEXT COLLATE "C" PRIMARY KEY,
    tenant              TEXT COLLATE "C" NOT NULL,
    run_id              TEXT COLLATE "C" NOT NULL,
    tool_call_id        TEXT COLLATE "C" NOT NULL,
    tool                TEXT COLLATE "C" NOT NULL,
    side_effect         TEXT COLLATE "C" NOT NULL CHECK (side_effect IN ('read','write','external','destructive')),
    arguments           TEXT COLLATE "C" NOT NULL,
    status              TEXT COLLATE "C" NOT NULL CHECK (status IN ('started','completed','failed','indeterminate','compensating','compensated')),
    attempts            BIGINT NOT NULL CHECK (attempts >= 0),
    result              TEXT COLLATE "C",
    owner               TEXT COLLATE "C" NOT NULL,
    created_at_ms       BIGINT NOT NULL,
    updated_at_ms       BIGINT NOT NULL,
    lease_expires_at_ms BIGINT
);
CREATE INDEX tool_executions_by_tenant_status ON tool_executions (tenant, status, updated_at_ms, idempotency_key);
CREATE INDEX tool_executions_by_tenant ON tool_executions (tenant, updated_at_ms, idempotency_key);
CREATE INDEX tool_executions_by_status ON tool_executions (status, updated_at_ms, idempotency_key);
CREATE INDEX tool_executions_by_update ON tool_executions (updated_at_ms, idempotency_key);
CREATE TABLE tool_execution_history (
    id              BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    idempotency_key TEXT COLLATE "C" NOT NULL,
    at_ms           BIGINT NOT NULL,
    actor           TEXT COLLATE "C" NOT NULL,
    event           TEXT COLLATE "C" NOT NULL,
    from_status     TEXT COLLATE "C",
    to_status       TEXT COLLATE "C",
    reason          TEXT COLLATE "C",
    detail          TEXT COLLATE "C"
);
CREATE INDEX tool_execution_history_by_key ON tool_execution_history (idempotency_key, id);
CREATE TABLE run_checkpoints (
    run_id        TEXT COLLATE "C" PRIMARY KEY,
    version       BIGINT NOT NULL CHECK (version >= 1),
    status        TEXT COLLATE "C" NOT NULL,
    state         TEXT COLLATE "C" NOT NULL,
    saved_by      TEXT COLLATE "C" NOT NULL,
    updated_at_ms BIGINT NOT NULL
);
CREATE TABLE run_history (
    id     BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    run_id TEXT COLLATE "C" NOT NULL,
    at_ms  BIGINT NOT NULL,
    actor  TEXT COLLATE "C" NOT NULL,
    event  TEXT COLLATE "C" NOT NULL,
    detail TEXT COLLATE "C"
);
CREATE INDEX run_history_by_run ON run_history (run_id, id);
CREATE FUNCTION twice_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION '% is append-only', TG_TABLE_NAME;
END
$$;
CREATE TRIGGER tool_execution_history_no_update BEFORE UPDATE ON tool_execution_history
    FOR EACH ROW EXECUTE FUNCTION twice_append_only();
CREATE TRIGGER tool_execution_history_no_delete BEFORE DELETE ON tool_execution_history
    FOR EACH ROW EXECUTE FUNCTION twice_append_only();
CREATE TRIGGER tool_execution_history_no_truncate BEFORE TRUNCATE ON tool_execution_history
    FOR EACH STATEMENT EXECUTE FUNCTION twice_append_only();
CREATE TRIGGER run_history_no_update BEFORE UPDATE ON run_history
    FOR EACH ROW EXECUTE FUNCTION twice_append_only();
CREATE TRIGGER run_history_no_delete BEFORE DELETE ON run_history
    FOR EACH ROW EXECUTE FUNCTION twice_append_only();
CREATE TRIGGER run_history_no_truncate BEFORE TRUNCATE ON run_history
    FOR EACH STATEMENT EXECUTE FUNCTION twice_append_only();
"#;

/// What a schema holds before the ledger uses it.
#[derive(Debug, PartialEq, Eq)]
enum Found {
    /// The PostgreSQL schema does not exist.
    NoSchema,
    /// It exists and holds no tables.
    Empty,
    /// It holds a ledger of this version.
    Ledger,
}

/// Makes sure the URL's schema holds this build's ledger: creates it (the PostgreSQL schema
/// too) when `create` and it is missing or empty, refuses anything else. Processes opening
/// a new ledger at the same moment create it once: the creation is decided again under an
/// advisory lock named after the schema.
pub(crate) fn ensure(connection: &Connection, location: &str, schema: &str, create: bool) -> Result<(), LedgerError> {
    match inspect(connection, location, schema)? {
        Found::Ledger => Ok(()),
        Found::NoSchema if !create => Err(LedgerError::Missing {
            location: location.to_owned(),
        }),
        Found::Empty if !create => Err(LedgerError::NotALedger {
            location: location.to_owned(),
            detail: "an empty schema; only a new ledger is given its tables".into(),
        }),
        Found::NoSchema | Found::Empty => create_once(connection, location, schema),
    }
}

fn create_once(connection: &Connection, location: &str, schema: &str) -> Result<(), LedgerError> {
    let context = "creating the schema";
    let lock_name = format!("twice-ledger:{schema}");
    // The schema name was checked to be a plain lowercase identifier (see `url.rs`), so it
    // can be written into the statement; quoting keeps it exactly that name.
    let create_schema = format!("CREATE SCHEMA IF NOT EXISTS \"{schema}\"");
    let began = connection
        .run(move |session| -> Result<(), postgres::Error> {
            let client = session.client();
            client.batch_execute("BEGIN")?;
            client.execute("SELECT pg_advisory_xact_lock(hashtext($1))", &[&lock_name])?;
            client.batch_execute(&create_schema)
        })
        .map_err(|error| classify_connection(location, context, &error))?;
    if let Err(error) = began {
        rollback(connection);
        return Err(classify(location, context, &error));
    }
    let created = match inspect(connection, location, schema) {
        // Someone created it while this connection waited for the lock.
        Ok(Found::Ledger) => Ok(()),
        Ok(Found::NoSchema | Found::Empty) => connection
            .run(|session| -> Result<(), postgres::Error> {
                let client = session.client();
                client.batch_execute(TABLES)?;
                client.execute(
                    "INSERT INTO twice_meta (name, value) VALUES ('schema', $1), ('schema_version', $2)",
                    &[&SCHEMA_NAME, &SCHEMA_VERSION.to_string()],
                )?;
                Ok(())
            })
            .map_err(|error| classify_connection(location, context, &error))?
            .map_err(|error| classify(location, context, &error)),
        Err(error) => Err(error),
    };
    if let Err(error) = created {
        rollback(connection);
        return Err(error);
    }
    connection
        .run(|session| session.client().batch_execute("COMMIT"))
        .map_err(|error| classify_connection(location, context, &error))?
        .map_err(|error| classify(location, context, &error))
}

fn rollback(connection: &Connection) {
    let _ = connection.run(|session| session.client().batch_execute("ROLLBACK"));
}

/// What the schema holds: nothing, no tables, or this build's ledger (anything else is an error).
fn inspect(connection: &Connection, location: &str, schema: &str) -> Result<Found, LedgerError> {
    let context = "reading the schema";
    let schema_owned = schema.to_owned();
    let (exists, tables) = connection
        .run(move |session| -> Result<(bool, Vec<String>), postgres::Error> {
            let client = session.client();
            let exists = client
                .query_opt("SELECT 1 FROM pg_namespace WHERE nspname = $1", &[&schema_owned])?
                .is_some();
            let tables = client
                .query(
                    "SELECT table_name::text FROM information_schema.tables WHERE table_schema = $1 ORDER BY 1",
                    &[&schema_owned],
                )?
                .iter()
                .map(|row| row.get::<_, String>(0))
                .collect();
            Ok((exists, tables))
        })
        .map_err(|error| classify_connection(location, context, &error))?
        .map_err(|error| classify(location, context, &error))?;
    if !exists {
        return Ok(Found::NoSchema);
    }
    if tables.is_empty() {
        return Ok(Found::Empty);
    }
    if !tables.iter().any(|table| table == "twice_meta") {
        return Err(LedgerError::NotALedger {
            location: location.to_owned(),
            detail: format!("schema {schema} holds tables {} but no twice_meta", tables.join(", ")),
        });
    }
    let meta = connection
        .run(|session| -> Result<Vec<(String, String)>, postgres::Error> {
            Ok(session
                .client()
                .query("SELECT name::text, value::text FROM twice_meta", &[])?
                .iter()
                .map(|row| (row.get::<_, String>(0), row.get::<_, String>(1)))
                .collect())
        })
        .map_err(|error| classify_connection(location, context, &error))?
        .map_err(|error| LedgerError::NotALedger {
            location: location.to_owned(),
            detail: format!("twice_meta cannot be read: {}", detail_of(&error)),
        })?;
    let value = |name: &str| meta.iter().find(|(key, _)| key == name).map(|(_, value)| value.clone());
    if value("schema").as_deref() != Some(SCHEMA_NAME) {
        return Err(LedgerError::NotALedger {
            location: location.to_owned(),
            detail: "twice_meta does not name the twice-ledger schema".into(),
        });
    }
    let found = value("schema_version").unwrap_or_else(|| "none".into());
    if found != SCHEMA_VERSION.to_string() {
        return Err(LedgerError::SchemaVersion {
            location: location.to_owned(),
            found,
            expected: SCHEMA_VERSION,
        });
    }
    Ok(Found::Ledger)
}

/// A connection-level failure while opening, in the ledger's words.
pub(crate) fn open_error(location: &str, error: &ConnectionError) -> LedgerError {
    let detail = match error {
        ConnectionError::Connect(error) => detail_of(error),
        other => other.to_string(),
    };
    LedgerError::Open {
        location: location.to_owned(),
        detail,
    }
}
