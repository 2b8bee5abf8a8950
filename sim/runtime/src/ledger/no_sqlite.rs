//! The SQLite store of a build without the `sqlite` feature: its connection is a type with no
//! values, so no `Store::Sqlite` can be made and every function here is unreachable by type
//! (each body is an empty `match` on the connection). The ledger's operations keep their SQLite
//! arm unchanged and the compiler proves it dead, instead of a `cfg` on every arm.

use super::operations::Tables;
use super::{
    Checkpoint, ExecutionRecord, HistoryEntry, Ledger, LedgerError, Location, RecordFilter, ReserveRequest,
    RunHistoryEntry,
};
use crate::key::IdempotencyKey;

/// A SQLite connection in a build without SQLite: there is none.
#[derive(Debug)]
pub(super) enum Connection {}

pub(super) fn record(
    connection: &Connection,
    _: &Location,
    _: &IdempotencyKey,
) -> Result<Option<ExecutionRecord>, LedgerError> {
    match *connection {}
}

pub(super) fn records(
    connection: &Connection,
    _: &Location,
    _: &RecordFilter<'_>,
) -> Result<Vec<ExecutionRecord>, LedgerError> {
    match *connection {}
}

pub(super) fn all_records(connection: &Connection, _: &Location) -> Result<Vec<ExecutionRecord>, LedgerError> {
    match *connection {}
}

pub(super) fn history(
    connection: &Connection,
    _: &Location,
    _: Option<&IdempotencyKey>,
) -> Result<Vec<HistoryEntry>, LedgerError> {
    match *connection {}
}

pub(super) fn contradictions(
    connection: &Connection,
    _: &Location,
    _: Option<&str>,
    _: usize,
) -> Result<Vec<HistoryEntry>, LedgerError> {
    match *connection {}
}

pub(super) fn run_history(
    connection: &Connection,
    _: &Location,
    _: Option<&str>,
) -> Result<Vec<RunHistoryEntry>, LedgerError> {
    match *connection {}
}

pub(super) fn checkpoint(connection: &Connection, _: &Location, _: &str) -> Result<Option<Checkpoint>, LedgerError> {
    match *connection {}
}

pub(super) fn checkpoints(connection: &Connection, _: &Location) -> Result<Vec<Checkpoint>, LedgerError> {
    match *connection {}
}

pub(super) fn connect_again(connection: &Connection, _: &Location) -> Result<Ledger, LedgerError> {
    match *connection {}
}

pub(super) fn read_connection_again(connection: &Connection, _: &Location) -> Result<Connection, LedgerError> {
    match *connection {}
}

pub(super) fn transaction<T, E: From<LedgerError>>(
    connection: &mut Connection,
    _: &Location,
    _: &'static str,
    _: &'static str,
    _: impl FnMut(&mut dyn Tables) -> Result<T, E>,
) -> Result<T, E> {
    match *connection {}
}

pub(super) fn reserve_uncommitted(
    connection: &mut Connection,
    _: &Location,
    _: &ReserveRequest<'_>,
    _: u64,
) -> Result<(), LedgerError> {
    match *connection {}
}
