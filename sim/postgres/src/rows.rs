//! The statements the PostgreSQL store runs, and its rows as the server gives them, checked
//! into the ledger's types by the same rules as the SQLite store's.

use postgres::Row;
use twice_runtime::key::IdempotencyKey;
use twice_runtime::ledger::{Checkpoint, ExecutionRecord, LedgerError, RunEvent, RunHistoryEntry, StoredHistoryLine};
use twice_runtime::rules::Status;
use twice_runtime::tool::SideEffect;

macro_rules! record_columns {
    () => {
        "idempotency_key, tenant, run_id, tool_call_id, tool, side_effect, arguments, status, attempts, result, \
         owner, created_at_ms, updated_at_ms, lease_expires_at_ms"
    };
}

/// The listing's order and cursor: a range of one index (see `schema.rs`), as in SQLite.
macro_rules! listing_order {
    () => {
        "(updated_at_ms, idempotency_key) > ($1, $2) ORDER BY updated_at_ms, idempotency_key LIMIT $3"
    };
}

pub(crate) const SELECT_RECORD: &str = concat!(
    "SELECT ",
    record_columns!(),
    " FROM tool_executions WHERE idempotency_key = $1"
);
pub(crate) const LIST_BY_TENANT_STATUS: &str = concat!(
    "SELECT ",
    record_columns!(),
    " FROM tool_executions WHERE tenant = $4 AND status = $5 AND ",
    listing_order!()
);
pub(crate) const LIST_BY_TENANT: &str = concat!(
    "SELECT ",
    record_columns!(),
    " FROM tool_executions WHERE tenant = $4 AND ",
    listing_order!()
);
pub(crate) const LIST_BY_STATUS: &str = concat!(
    "SELECT ",
    record_columns!(),
    " FROM tool_executions WHERE status = $4 AND ",
    listing_order!()
);
pub(crate) const LIST_ALL: &str = concat!(
    "SELECT ",
    record_columns!(),
    " FROM tool_executions WHERE ",
    listing_order!()
);
pub(crate) const ALL_RECORDS: &str = concat!(
    "SELECT ",
    record_columns!(),
    " FROM tool_executions ORDER BY created_at_ms, idempotency_key"
);
pub(crate) const INSERT_RECORD: &str = concat!(
    "INSERT INTO tool_executions (",
    record_columns!(),
    ") VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)"
);
/// SQLite's `INSERT OR REPLACE` (the naive runtime's upsert): whatever was there is overwritten.
pub(crate) const REPLACE_RECORD: &str = concat!(
    "INSERT INTO tool_executions (",
    record_columns!(),
    ") VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14) \
     ON CONFLICT (idempotency_key) DO UPDATE SET tenant = EXCLUDED.tenant, run_id = EXCLUDED.run_id, \
     tool_call_id = EXCLUDED.tool_call_id, tool = EXCLUDED.tool, side_effect = EXCLUDED.side_effect, \
     arguments = EXCLUDED.arguments, status = EXCLUDED.status, attempts = EXCLUDED.attempts, \
     result = EXCLUDED.result, owner = EXCLUDED.owner, created_at_ms = EXCLUDED.created_at_ms, \
     updated_at_ms = EXCLUDED.updated_at_ms, lease_expires_at_ms = EXCLUDED.lease_expires_at_ms"
);
pub(crate) const UPDATE_RECORD: &str = "UPDATE tool_executions SET tenant = $2, run_id = $3, tool_call_id = $4, tool = $5, \
     side_effect = $6, arguments = $7, status = $8, attempts = $9, result = $10, owner = $11, created_at_ms = $12, \
     updated_at_ms = $13, lease_expires_at_ms = $14 WHERE idempotency_key = $1";
pub(crate) const INSERT_HISTORY: &str = "INSERT INTO tool_execution_history \
     (idempotency_key, at_ms, actor, event, from_status, to_status, reason, detail) \
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8)";
pub(crate) const HISTORY_ALL: &str = "SELECT id, idempotency_key, at_ms, actor, event, from_status, to_status, reason, \
     detail FROM tool_execution_history ORDER BY id";
pub(crate) const HISTORY_OF_KEY: &str = "SELECT id, idempotency_key, at_ms, actor, event, from_status, to_status, reason, \
     detail FROM tool_execution_history WHERE idempotency_key = $1 ORDER BY id";
pub(crate) const SELECT_CHECKPOINT_VERSION: &str = "SELECT version FROM run_checkpoints WHERE run_id = $1";
pub(crate) const SELECT_CHECKPOINT: &str =
    "SELECT run_id, version, status, state, saved_by, updated_at_ms FROM run_checkpoints WHERE run_id = $1";
pub(crate) const ALL_CHECKPOINTS: &str =
    "SELECT run_id, version, status, state, saved_by, updated_at_ms FROM run_checkpoints ORDER BY run_id";
pub(crate) const PUT_CHECKPOINT: &str = "INSERT INTO run_checkpoints (run_id, version, status, state, saved_by, updated_at_ms) \
     VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (run_id) DO UPDATE SET version = EXCLUDED.version, \
     status = EXCLUDED.status, state = EXCLUDED.state, saved_by = EXCLUDED.saved_by, \
     updated_at_ms = EXCLUDED.updated_at_ms";
pub(crate) const INSERT_RUN_HISTORY: &str =
    "INSERT INTO run_history (run_id, at_ms, actor, event, detail) VALUES ($1, $2, $3, $4, $5)";
pub(crate) const RUN_HISTORY_ALL: &str = "SELECT id, run_id, at_ms, actor, event, detail FROM run_history ORDER BY id";
pub(crate) const RUN_HISTORY_OF_RUN: &str =
    "SELECT id, run_id, at_ms, actor, event, detail FROM run_history WHERE run_id = $1 ORDER BY id";

// ----- rows -----

/// A time as stored (signed 64 bits), as the SQLite store stores it: past `i64::MAX` ms it
/// is the largest there is rather than wrapped.
pub(crate) fn stored_ms(ms: u64) -> i64 {
    i64::try_from(ms).unwrap_or(i64::MAX)
}

/// A time read back; a negative one (written by something else) reads as 0 rather than wrapping.
pub(crate) fn read_ms(ms: i64) -> u64 {
    u64::try_from(ms).unwrap_or(0)
}

/// A record as the server gives it, before its text fields are checked.
pub(crate) struct RawRecord {
    key: String,
    tenant: String,
    run_id: String,
    tool_call_id: String,
    tool: String,
    side_effect: String,
    arguments: String,
    status: String,
    attempts: i64,
    result: Option<String>,
    owner: String,
    created_at_ms: i64,
    updated_at_ms: i64,
    lease_expires_at_ms: Option<i64>,
}

impl RawRecord {
    pub(crate) fn from_row(row: &Row) -> Result<RawRecord, postgres::Error> {
        Ok(RawRecord {
            key: row.try_get(0)?,
            tenant: row.try_get(1)?,
            run_id: row.try_get(2)?,
            tool_call_id: row.try_get(3)?,
            tool: row.try_get(4)?,
            side_effect: row.try_get(5)?,
            arguments: row.try_get(6)?,
            status: row.try_get(7)?,
            attempts: row.try_get(8)?,
            result: row.try_get(9)?,
            owner: row.try_get(10)?,
            created_at_ms: row.try_get(11)?,
            updated_at_ms: row.try_get(12)?,
            lease_expires_at_ms: row.try_get(13)?,
        })
    }

    pub(crate) fn into_record(self, location: &str) -> Result<ExecutionRecord, LedgerError> {
        let bad = |detail: String| LedgerError::BadRow {
            location: location.to_owned(),
            key: self.key.clone(),
            detail,
        };
        let key = IdempotencyKey::parse(&self.key).map_err(|error| bad(error.to_string()))?;
        let status = Status::parse(&self.status).ok_or_else(|| bad(format!("status `{}`", self.status)))?;
        let side_effect =
            SideEffect::parse(&self.side_effect).ok_or_else(|| bad(format!("side effect `{}`", self.side_effect)))?;
        let attempts = u32::try_from(self.attempts).map_err(|_| bad(format!("attempts {}", self.attempts)))?;
        let record = ExecutionRecord::new(
            key,
            self.run_id,
            self.tool_call_id,
            self.tool,
            side_effect,
            self.arguments,
            self.owner,
        )
        .with_tenant(self.tenant)
        .with_outcome(status, attempts, self.result)
        .with_times(read_ms(self.created_at_ms), read_ms(self.updated_at_ms))
        .with_lease_expires_at_ms(self.lease_expires_at_ms.map(read_ms));
        // The read half of the invariant every write asserts (as the SQLite store reads it).
        match record.broken_invariant() {
            Some(broken) => Err(bad(format!("a record with {broken}"))),
            None => Ok(record),
        }
    }
}

/// A history row as the server gives it; checked by the runtime's one rule for every store.
pub(crate) fn history_line(row: &Row) -> Result<StoredHistoryLine, postgres::Error> {
    Ok(StoredHistoryLine {
        id: row.try_get(0)?,
        key: row.try_get(1)?,
        at_ms: row.try_get(2)?,
        actor: row.try_get(3)?,
        event: row.try_get(4)?,
        from_status: row.try_get(5)?,
        to_status: row.try_get(6)?,
        reason: row.try_get(7)?,
        detail: row.try_get(8)?,
    })
}

pub(crate) struct RawRunHistory {
    id: i64,
    run_id: String,
    at_ms: i64,
    actor: String,
    event: String,
    detail: Option<String>,
}

impl RawRunHistory {
    pub(crate) fn from_row(row: &Row) -> Result<RawRunHistory, postgres::Error> {
        Ok(RawRunHistory {
            id: row.try_get(0)?,
            run_id: row.try_get(1)?,
            at_ms: row.try_get(2)?,
            actor: row.try_get(3)?,
            event: row.try_get(4)?,
            detail: row.try_get(5)?,
        })
    }

    pub(crate) fn into_entry(self, location: &str) -> Result<RunHistoryEntry, LedgerError> {
        Ok(RunHistoryEntry {
            id: read_ms(self.id),
            event: RunEvent::parse(&self.event).ok_or_else(|| LedgerError::BadRow {
                location: location.to_owned(),
                key: format!("run {}", self.run_id),
                detail: format!("run history event `{}`", self.event),
            })?,
            run_id: self.run_id.into(),
            at_ms: read_ms(self.at_ms),
            actor: self.actor,
            detail: self.detail,
        })
    }
}

pub(crate) struct RawCheckpoint {
    run_id: String,
    version: i64,
    status: String,
    state: String,
    saved_by: String,
    updated_at_ms: i64,
}

impl RawCheckpoint {
    pub(crate) fn from_row(row: &Row) -> Result<RawCheckpoint, postgres::Error> {
        Ok(RawCheckpoint {
            run_id: row.try_get(0)?,
            version: row.try_get(1)?,
            status: row.try_get(2)?,
            state: row.try_get(3)?,
            saved_by: row.try_get(4)?,
            updated_at_ms: row.try_get(5)?,
        })
    }

    pub(crate) fn into_checkpoint(self, location: &str) -> Result<Checkpoint, LedgerError> {
        let version = u32::try_from(self.version).map_err(|_| LedgerError::BadRow {
            location: location.to_owned(),
            key: format!("run {}", self.run_id),
            detail: format!("checkpoint version {}", self.version),
        })?;
        Ok(Checkpoint::new(
            self.run_id,
            version,
            self.status,
            self.state,
            self.saved_by,
            read_ms(self.updated_at_ms),
        ))
    }
}
