//! The memory store: the ledger's three tables as plain Rust collections.
//!
//! The simulator runs thousands of short scenarios, each on a fresh ledger. With SQLite most
//! of a scenario's time went to SQLite itself (parsing the schema of a new database, preparing
//! statements per connection, its allocator and mutexes). This store holds the same rows in
//! ordered maps; the operations that read and write them are the very same code as for SQLite
//! (see `Tables` in the parent module), so only the storage differs.
//!
//! What the SQLite schema enforces, this store enforces too, with the same error kinds: one
//! record per key (`UNIQUE`), checkpoint versions from 1 (`CHECK`), an append-only history
//! (there is no way to change or remove a line; ids only grow, as `AUTOINCREMENT` makes them).
//! The `CHECK`s on status and side effect and the `NOT NULL`s hold by construction: the
//! columns are Rust enums and non-optional fields.
//!
//! Contention: meant for one thread (the simulator). Every connection of one store shares its
//! tables behind a mutex, so each operation is atomic; like SQLite's shared-cache memory
//! ledger, a connection that finds another's transaction open (only
//! [`super::Ledger::reserve_uncommitted`] leaves one open) is answered `Locked` at once, never
//! queued. Dropping a connection rolls its open transaction back, as SIGKILL would.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};

use super::operations::{CheckpointRow, HistoryLine, RecordWrite, RunHistoryLine, Tables};
use super::{
    Checkpoint, ExecutionRecord, HistoryEntry, LedgerError, RecordFilter, RunHistoryEntry, StoreError, store_error,
};
use crate::key::IdempotencyKey;

/// The tables a transaction may write; a reader of one that another connection's open
/// transaction wrote is answered `Locked`, as SQLite's shared cache locks per table.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct Written {
    pub records: bool,
    pub history: bool,
    pub checkpoints: bool,
    pub run_history: bool,
}

/// Which table a read looks at.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Table {
    Records,
    History,
    Checkpoints,
    RunHistory,
}

impl Written {
    fn includes(self, table: Table) -> bool {
        match table {
            Table::Records => self.records,
            Table::History => self.history,
            Table::Checkpoints => self.checkpoints,
            Table::RunHistory => self.run_history,
        }
    }
}

/// How to undo one write: the transaction's log, replayed backwards on rollback.
#[derive(Debug)]
enum Undo {
    /// Put the record back as it was (`None`: it did not exist).
    Record(IdempotencyKey, Option<ExecutionRecord>),
    /// Remove the last history line and give its id back (a rolled-back `AUTOINCREMENT`).
    History,
    Checkpoint(String, Option<Checkpoint>),
    /// Remove the last run history line.
    RunHistory,
}

/// A transaction left open by [`super::Ledger::reserve_uncommitted`].
#[derive(Debug)]
struct OpenTransaction {
    connection: u64,
    written: Written,
}

/// The rows of one memory ledger.
#[derive(Debug, Default)]
pub(super) struct MemoryTables {
    records: BTreeMap<IdempotencyKey, ExecutionRecord>,
    /// In id order; only ever appended to (and shortened again by a rollback).
    history: Vec<HistoryEntry>,
    checkpoints: BTreeMap<String, Checkpoint>,
    /// In id order; only ever appended to (and shortened again by a rollback).
    run_history: Vec<RunHistoryEntry>,
    /// The undo log of the transaction in progress (one at a time: the mutex serialises them).
    /// Kept here, not per transaction, so that a transaction allocates nothing for it.
    undo: Vec<Undo>,
    open_transaction: Option<OpenTransaction>,
    next_connection: u64,
}

impl MemoryTables {
    fn rollback(&mut self) {
        while let Some(undo) = self.undo.pop() {
            match undo {
                Undo::Record(key, Some(previous)) => {
                    self.records.insert(key, previous);
                }
                Undo::Record(key, None) => {
                    self.records.remove(&key);
                }
                Undo::History => {
                    self.history.pop().expect("a history line to roll back");
                }
                Undo::Checkpoint(run_id, Some(previous)) => {
                    self.checkpoints.insert(run_id, previous);
                }
                Undo::Checkpoint(run_id, None) => {
                    self.checkpoints.remove(&run_id);
                }
                Undo::RunHistory => {
                    self.run_history.pop().expect("a run history line to roll back");
                }
            }
        }
    }

    fn next_history_id(&self) -> u64 {
        self.history.last().map_or(1, |entry| entry.id + 1)
    }
}

/// One connection to a memory ledger.
#[derive(Debug)]
pub(super) struct MemoryConnection {
    tables: Arc<Mutex<MemoryTables>>,
    connection: u64,
}

/// The error SQLite gives for the same refusal (`code`, `message`), so both stores answer alike.
fn sqlite_failure(location: &str, context: &'static str, code: i32, message: &str) -> LedgerError {
    LedgerError::Failed {
        location: location.to_owned(),
        context,
        source: StoreError::like_sqlite(code, message),
    }
}

impl MemoryConnection {
    pub(super) fn new() -> MemoryConnection {
        let tables = MemoryTables {
            next_connection: 1,
            ..MemoryTables::default()
        };
        MemoryConnection {
            tables: Arc::new(Mutex::new(tables)),
            connection: 0,
        }
    }

    pub(super) fn connect_again(&self) -> MemoryConnection {
        let connection = {
            let mut tables = self.lock();
            tables.next_connection += 1;
            tables.next_connection - 1
        };
        MemoryConnection {
            tables: Arc::clone(&self.tables),
            connection,
        }
    }

    fn lock(&self) -> MutexGuard<'_, MemoryTables> {
        // A panic while the lock was held happened mid-operation: the undo log puts the tables
        // back before the lock is released only on the normal path, so a poisoned lock means
        // the tables may be half-written. Nothing may read them after that.
        self.tables
            .lock()
            .expect("a memory ledger whose operation panicked is not used again")
    }

    /// Runs `body` as one transaction: committed if it returns `Ok` (and `keep_open` is false),
    /// rolled back if it returns `Err`. With `keep_open`, the transaction stays open until this
    /// connection is dropped, which rolls it back.
    pub(super) fn transaction<T, E: From<LedgerError>>(
        &mut self,
        location: &dyn Fn() -> String,
        context: &'static str,
        keep_open: bool,
        mut body: impl FnMut(&mut dyn Tables) -> Result<T, E>,
    ) -> Result<T, E> {
        let mut tables = self.lock();
        if let Some(open) = &tables.open_transaction {
            if open.connection == self.connection {
                return Err(sqlite_failure(
                    &location(),
                    context,
                    store_error::code::ERROR,
                    "cannot start a transaction within a transaction",
                )
                .into());
            }
            return Err(LedgerError::Locked {
                location: location(),
                context,
            }
            .into());
        }
        assert!(tables.undo.is_empty(), "no transaction is in progress");
        let mut transaction = MemoryTransaction {
            tables: &mut tables,
            location,
            context,
            written: Written::default(),
        };
        let outcome = body(&mut transaction);
        let written = transaction.written;
        match &outcome {
            Err(_) => tables.rollback(),
            Ok(_) if keep_open => {
                tables.open_transaction = Some(OpenTransaction {
                    connection: self.connection,
                    written,
                });
            }
            Ok(_) => tables.undo.clear(),
        }
        outcome
    }

    /// Reads `table` outside any transaction, as SQLite's autocommit reads do.
    pub(super) fn read<T>(
        &self,
        location: &dyn Fn() -> String,
        context: &'static str,
        table: Table,
        body: impl FnOnce(&MemoryTables) -> T,
    ) -> Result<T, LedgerError> {
        let tables = self.lock();
        if let Some(open) = &tables.open_transaction
            && open.connection != self.connection
            && open.written.includes(table)
        {
            return Err(LedgerError::Locked {
                location: location(),
                context,
            });
        }
        Ok(body(&tables))
    }
}

impl Drop for MemoryConnection {
    fn drop(&mut self) {
        // A connection that goes away with its transaction open rolls it back, as SIGKILL would.
        let Ok(mut tables) = self.tables.lock() else {
            return;
        };
        if tables
            .open_transaction
            .as_ref()
            .is_some_and(|open| open.connection == self.connection)
        {
            tables.rollback();
            tables.open_transaction = None;
        }
    }
}

/// The rows as one transaction sees them: its own writes applied, each logged for undo.
struct MemoryTransaction<'a, 'b> {
    tables: &'a mut MemoryTables,
    location: &'b dyn Fn() -> String,
    context: &'static str,
    written: Written,
}

impl Tables for MemoryTransaction<'_, '_> {
    fn location(&self) -> String {
        (self.location)()
    }

    fn record(&mut self, key: &IdempotencyKey) -> Result<Option<ExecutionRecord>, LedgerError> {
        Ok(self.tables.records.get(key).cloned())
    }

    fn checkpoint_version(&mut self, run_id: &str) -> Result<Option<u32>, LedgerError> {
        Ok(self.tables.checkpoints.get(run_id).map(|checkpoint| checkpoint.version))
    }

    fn write_record(&mut self, write: RecordWrite, record: &ExecutionRecord) -> Result<(), LedgerError> {
        let exists = self.tables.records.contains_key(&record.key);
        match write {
            RecordWrite::Insert if exists => {
                return Err(sqlite_failure(
                    &(self.location)(),
                    self.context,
                    store_error::code::CONSTRAINT_PRIMARYKEY,
                    "UNIQUE constraint failed: tool_executions.idempotency_key",
                ));
            }
            // SQLite's UPDATE of a key that is not there changes nothing and is no error.
            RecordWrite::Update if !exists => return Ok(()),
            RecordWrite::Insert | RecordWrite::Update | RecordWrite::Replace => {}
        }
        let previous = self.tables.records.insert(record.key.clone(), record.clone());
        self.tables.undo.push(Undo::Record(record.key.clone(), previous));
        self.written.records = true;
        Ok(())
    }

    fn append_history(&mut self, line: &HistoryLine<'_>) -> Result<(), LedgerError> {
        let id = self.tables.next_history_id();
        assert!(
            self.tables.history.last().is_none_or(|last| last.id < id),
            "history ids only grow"
        );
        self.tables.history.push(HistoryEntry {
            id,
            key: line.key.clone(),
            at_ms: line.at_ms,
            actor: line.actor.to_owned(),
            event: line.event,
            from_status: line.from_status,
            to_status: line.to_status,
            reason: line.reason.map(str::to_owned),
            detail: line.detail.as_ref().map(|detail| Cow::into_owned(detail.clone())),
        });
        self.tables.undo.push(Undo::History);
        self.written.history = true;
        Ok(())
    }

    fn put_checkpoint(&mut self, checkpoint: &CheckpointRow<'_>) -> Result<(), LedgerError> {
        if checkpoint.version < 1 {
            return Err(sqlite_failure(
                &(self.location)(),
                self.context,
                store_error::code::CONSTRAINT_CHECK,
                "CHECK constraint failed: version >= 1",
            ));
        }
        let row = Checkpoint {
            run_id: checkpoint.run_id.into(),
            version: checkpoint.version,
            status: checkpoint.status.to_owned(),
            state: checkpoint.state.to_owned(),
            saved_by: checkpoint.saved_by.into(),
            updated_at_ms: checkpoint.updated_at_ms,
        };
        let previous = self.tables.checkpoints.insert(row.run_id.to_string(), row);
        self.tables
            .undo
            .push(Undo::Checkpoint(checkpoint.run_id.to_owned(), previous));
        self.written.checkpoints = true;
        Ok(())
    }

    fn append_run_event(&mut self, line: &RunHistoryLine<'_>) -> Result<(), LedgerError> {
        let id = self.tables.run_history.last().map_or(1, |entry| entry.id + 1);
        self.tables.run_history.push(RunHistoryEntry {
            id,
            run_id: line.run_id.into(),
            at_ms: line.at_ms,
            actor: line.actor.to_owned(),
            event: line.event,
            detail: line.detail.map(str::to_owned),
        });
        self.tables.undo.push(Undo::RunHistory);
        self.written.run_history = true;
        Ok(())
    }
}

// ----- reads outside a transaction: the same rows, in the same order, as the SQL gives them -----

impl MemoryTables {
    pub(super) fn record(&self, key: &IdempotencyKey) -> Option<ExecutionRecord> {
        self.records.get(key).cloned()
    }

    /// `records` of the parent module: filters, a cursor on (updated_at_ms, key), a limit.
    /// Times compare as SQLite stores them, as signed 64-bit integers.
    pub(super) fn records(&self, filter: &RecordFilter<'_>) -> Vec<ExecutionRecord> {
        let stored = |ms: u64| i64::try_from(ms).unwrap_or(i64::MAX);
        let after = filter.after.map_or((-1, ""), |(ms, key)| (stored(ms), key));
        let mut found: Vec<&ExecutionRecord> = self
            .records
            .values()
            .filter(|record| filter.tenant.is_none_or(|tenant| record.tenant == tenant))
            .filter(|record| filter.status.is_none_or(|status| record.status == status))
            .filter(|record| (stored(record.updated_at_ms), record.key.as_str()) > after)
            .collect();
        found.sort_by(|a, b| (stored(a.updated_at_ms), &a.key).cmp(&(stored(b.updated_at_ms), &b.key)));
        found.into_iter().take(filter.limit as usize).cloned().collect()
    }

    /// Every record, by creation time then key.
    pub(super) fn all_records(&self) -> Vec<ExecutionRecord> {
        let mut all: Vec<ExecutionRecord> = self.records.values().cloned().collect();
        all.sort_by(|a, b| (a.created_at_ms as i64, &a.key).cmp(&(b.created_at_ms as i64, &b.key)));
        all
    }

    pub(super) fn history(&self, key: Option<&IdempotencyKey>) -> Vec<HistoryEntry> {
        self.history
            .iter()
            .filter(|entry| key.is_none_or(|key| &entry.key == key))
            .cloned()
            .collect()
    }

    pub(super) fn contradictions(&self, tenant: Option<&str>, limit: usize) -> Vec<HistoryEntry> {
        self.history
            .iter()
            .rev()
            .filter(|entry| entry.event == super::HistoryEvent::Contradicted)
            .filter(|entry| {
                tenant.is_none_or(|tenant| {
                    self.records
                        .get(&entry.key)
                        .is_some_and(|record| record.tenant == tenant)
                })
            })
            .take(limit)
            .cloned()
            .collect()
    }

    pub(super) fn checkpoint(&self, run_id: &str) -> Option<Checkpoint> {
        self.checkpoints.get(run_id).cloned()
    }

    /// Every checkpoint, by run id.
    pub(super) fn checkpoints(&self) -> Vec<Checkpoint> {
        self.checkpoints.values().cloned().collect()
    }

    pub(super) fn run_history(&self, run_id: Option<&str>) -> Vec<RunHistoryEntry> {
        self.run_history
            .iter()
            .filter(|entry| run_id.is_none_or(|run_id| entry.run_id == run_id))
            .cloned()
            .collect()
    }
}
