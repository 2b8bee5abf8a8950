//! The SQLite store's reads outside any transaction: a record, the listing (one index range
//! per combination of filters), every record, history, run history and checkpoints.

use rusqlite::{Connection, OptionalExtension, params};

use super::tables::{RawRecord, checkpoint_from_row, select_record};
use super::{classify_at, query_row_cached, read_ms, stored_ms};
use crate::ids::RunId;
use crate::key::IdempotencyKey;
use crate::ledger::{
    Checkpoint, ExecutionRecord, HistoryEntry, HistoryEvent, Ledger, LedgerError, Location, RecordFilter, RunEvent,
    RunHistoryEntry, Store, StoredHistoryLine,
};
use crate::rules::Status;

pub(in crate::ledger) fn record(
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
pub(in crate::ledger) fn records(
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
///
/// # Errors
///
/// [`LedgerError`] when the store fails: another connection holds it past the wait
/// ([`LedgerError::Locked`]), a row this build cannot read ([`LedgerError::BadRow`]), or the
/// store's own failure ([`LedgerError::Failed`], [`LedgerError::Store`]).
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

pub(in crate::ledger) fn all_records(
    connection: &Connection,
    location: &Location,
) -> Result<Vec<ExecutionRecord>, LedgerError> {
    records_where(
        connection,
        location,
        "SELECT * FROM tool_executions ORDER BY created_at_ms, idempotency_key",
        [],
        "listing records",
    )
}

pub(in crate::ledger) fn history(
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

pub(in crate::ledger) fn contradictions(
    connection: &Connection,
    location: &Location,
    tenant: Option<&str>,
    limit: usize,
) -> Result<Vec<HistoryEntry>, LedgerError> {
    let lines: Vec<StoredHistoryLine> = rows(
        connection,
        location,
        "listing contradictions",
        "SELECT h.id, h.idempotency_key, h.at_ms, h.actor, h.event, h.from_status, h.to_status, h.reason, h.detail
         FROM tool_execution_history h JOIN tool_executions r ON r.idempotency_key = h.idempotency_key
         WHERE h.event = ?1 AND (?2 IS NULL OR r.tenant = ?2) ORDER BY h.id DESC LIMIT ?3",
        params![
            HistoryEvent::Contradicted.name(),
            tenant,
            i64::try_from(limit).unwrap_or(i64::MAX)
        ],
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

pub(in crate::ledger) fn run_history(
    connection: &Connection,
    location: &Location,
    run_id: Option<&str>,
) -> Result<Vec<RunHistoryEntry>, LedgerError> {
    let raws: Vec<(i64, RunId, i64, String, String, Option<String>)> = rows(
        connection,
        location,
        "reading run history",
        "SELECT id, run_id, at_ms, actor, event, detail FROM run_history WHERE (?1 IS NULL OR run_id = ?1) ORDER BY id",
        params![run_id],
        |row| {
            Ok((
                row.get(0)?,
                super::name_at(row, 1)?,
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

pub(in crate::ledger) fn checkpoint(
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

pub(in crate::ledger) fn checkpoints(
    connection: &Connection,
    location: &Location,
) -> Result<Vec<Checkpoint>, LedgerError> {
    rows(
        connection,
        location,
        "listing checkpoints",
        "SELECT run_id, version, status, state, saved_by, updated_at_ms FROM run_checkpoints ORDER BY run_id",
        [],
        checkpoint_from_row,
    )
}
