//! One transaction's rows in SQLite: a record as SQLite gives it (checked before it becomes an
//! [`ExecutionRecord`]), and [`SqliteTables`], the `Tables` seam with one cached statement per
//! row read or written, inside the caller's transaction.

use rusqlite::{Connection, OptionalExtension, params};

use super::{classify_at, execute_cached, name_at, query_row_cached, read_ms, stored_ms};
use crate::ids::{RunId, Tenant, ToolName, WorkerId};
use crate::key::IdempotencyKey;
use crate::ledger::operations::{CheckpointRow, HistoryLine, RecordWrite, RunHistoryLine, Tables};
use crate::ledger::{Checkpoint, ExecutionRecord, LedgerError, Location};
use crate::rules::Status;
use crate::tool::SideEffect;

/// A row as SQLite gives it, before its text fields are checked.
pub(super) struct RawRecord {
    key: String,
    tenant: Tenant,
    run_id: RunId,
    tool_call_id: String,
    tool: ToolName,
    side_effect: String,
    arguments: String,
    status: String,
    attempts: u32,
    result: Option<String>,
    owner: WorkerId,
    created_at_ms: i64,
    updated_at_ms: i64,
    lease_expires_at_ms: Option<i64>,
}

impl RawRecord {
    pub(super) fn from_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<RawRecord> {
        Ok(RawRecord {
            key: row.get("idempotency_key")?,
            tenant: name_at(row, "tenant")?,
            run_id: name_at(row, "run_id")?,
            tool_call_id: row.get("tool_call_id")?,
            tool: name_at(row, "tool")?,
            side_effect: row.get("side_effect")?,
            arguments: row.get("arguments")?,
            status: row.get("status")?,
            attempts: row.get("attempts")?,
            result: row.get("result")?,
            owner: name_at(row, "owner")?,
            created_at_ms: row.get("created_at_ms")?,
            updated_at_ms: row.get("updated_at_ms")?,
            lease_expires_at_ms: row.get("lease_expires_at_ms")?,
        })
    }

    pub(super) fn into_record(self, location: &Location) -> Result<ExecutionRecord, LedgerError> {
        let bad = |detail: String| LedgerError::BadRow {
            location: location.describe(),
            key: self.key.clone(),
            detail,
        };
        let record = ExecutionRecord {
            key: IdempotencyKey::parse(&self.key).map_err(|error| bad(error.to_string()))?,
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
        };
        // The read half of the invariant every write asserts: a row written by something
        // else is refused here, not trusted.
        match record.broken_invariant() {
            Some(broken) => Err(bad(format!("a record with {broken}"))),
            None => Ok(record),
        }
    }
}

pub(super) fn select_record(connection: &Connection, key: &IdempotencyKey) -> rusqlite::Result<Option<RawRecord>> {
    connection
        .prepare_cached("SELECT * FROM tool_executions WHERE idempotency_key = ?1")?
        .query_row([key.as_str()], RawRecord::from_row)
        .optional()
}

pub(super) fn checkpoint_from_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<Checkpoint> {
    Ok(Checkpoint {
        run_id: name_at(row, 0)?,
        version: row.get(1)?,
        status: row.get(2)?,
        state: row.get(3)?,
        saved_by: name_at(row, 4)?,
        updated_at_ms: read_ms(row.get::<_, i64>(5)?),
    })
}

/// The SQLite store: each row read and written with one cached statement, inside the
/// caller's `BEGIN IMMEDIATE` transaction.
pub(super) struct SqliteTables<'a> {
    pub(super) connection: &'a Connection,
    pub(super) location: &'a Location,
    pub(super) context: &'static str,
}

impl SqliteTables<'_> {
    fn classify(&self, error: rusqlite::Error) -> LedgerError {
        classify_at(self.location, error, self.context)
    }
}

impl Tables for SqliteTables<'_> {
    fn location(&self) -> String {
        self.location.describe()
    }

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
                record.tenant.as_str(),
                record.run_id.as_str(),
                record.tool_call_id,
                record.tool.as_str(),
                record.side_effect.name(),
                record.arguments,
                record.status.name(),
                record.attempts,
                record.result,
                record.owner.as_str(),
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
