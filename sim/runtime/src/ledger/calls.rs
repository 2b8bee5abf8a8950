//! The ledger's operations as a connection offers them: each one transaction on whichever
//! store holds the rows (the decisions are `operations.rs`'s), and the reads.

use super::operations::{self, HistoryLine, RunHistoryLine};
use super::{
    AttemptStart, Checkpoint, CheckpointSave, Contradiction, ContradictionSource, ExecutionRecord, FoldedReservation,
    HistoryEntry, HistoryEvent, LIST_LIMIT_MAX, LateAnswer, Ledger, LedgerError, OperatorDecision, RecordFilter,
    Recorded, Reservation, ReserveRequest, RunEvent, RunHistoryEntry, SaveOutcome, SettleError, Settlement, Store,
    memory, sqlite,
};
use crate::key::IdempotencyKey;
use crate::rules::Outcome;

impl Ledger {
    /// Reserves a call atomically: one transaction reads the record, applies the decision
    /// table and writes `started` if the call is to run.
    ///
    /// # Errors
    ///
    /// [`LedgerError::BadRequest`] for a request that would store an empty name;
    /// [`LedgerError::RunOfAnotherTenant`] when the key's record is another tenant's run's
    /// (nothing written); otherwise [`LedgerError`] when the store fails: another connection
    /// holds it past the wait ([`LedgerError::Locked`]), a row this build cannot read
    /// ([`LedgerError::BadRow`]), or the store's own failure ([`LedgerError::Failed`],
    /// [`LedgerError::Store`]).
    pub fn reserve(&mut self, request: &ReserveRequest<'_>, now_ms: u64) -> Result<Reservation, LedgerError> {
        self.transaction("reserving", "committing a reservation", |tables| {
            operations::reserve(tables, request, now_ms)
        })
    }

    /// [`Ledger::reserve`] and, if the reservation runs the tool, [`Ledger::begin_attempt`] for
    /// `attempt`, in one transaction: one commit fewer, for a driver that sends right after
    /// reserving (decision table 5, [`crate::rules::fence_place`]). Nothing can come between
    /// the two: an operator's decision lands before the reservation or after the attempt.
    ///
    /// # Errors
    ///
    /// [`LedgerError::BadRequest`] for a request that would store an empty name; otherwise
    /// [`LedgerError`] when the store fails: another connection holds it past the wait
    /// ([`LedgerError::Locked`]), a row this build cannot read ([`LedgerError::BadRow`]), or the
    /// store's own failure ([`LedgerError::Failed`], [`LedgerError::Store`]).
    pub fn reserve_and_begin(
        &mut self,
        request: &ReserveRequest<'_>,
        attempt: u32,
        now_ms: u64,
    ) -> Result<FoldedReservation, LedgerError> {
        self.transaction(
            "reserving and fencing an attempt",
            "committing a reservation",
            |tables| operations::reserve_and_begin(tables, request, attempt, now_ms),
        )
    }

    simulation_api! {
        /// Begins a reservation and stops before its commit, so a test (or a simulated crash)
        /// can drop the connection with the transaction open.
        ///
        /// # Errors
        ///
        /// [`LedgerError::Store`] on a store that keeps no transaction open across calls (an
        /// external store, a commit group); otherwise as [`Ledger::reserve`].
        pub fn reserve_uncommitted(&mut self, request: &ReserveRequest<'_>, now_ms: u64) -> Result<(), LedgerError> {
            let location = &self.location;
            match &mut self.store {
                Store::Sqlite(connection) => sqlite::reserve_uncommitted(connection, location, request, now_ms),
                Store::Memory(connection) => {
                    connection.transaction(&|| location.describe(), "reserving", true, |tables| {
                        operations::reserve(tables, request, now_ms)
                    })?;
                    Ok(())
                }
                Store::External(_) | Store::Grouped(_) => Err(LedgerError::Store {
                    location: location.describe(),
                    context: "reserving",
                    detail: "an external store (or a commit group) keeps no transaction open across calls".into(),
                }),
            }
        }
    }

    simulation_api! {
        /// The naive reservation's first half: a plain read, outside any transaction.
        ///
        /// # Errors
        ///
        /// [`LedgerError`] when the store fails: another connection holds it past the wait
        /// ([`LedgerError::Locked`]), a row this build cannot read ([`LedgerError::BadRow`]), or
        /// the store's own failure ([`LedgerError::Failed`], [`LedgerError::Store`]).
        pub fn check(&self, key: &IdempotencyKey) -> Result<Option<ExecutionRecord>, LedgerError> {
            self.record(key)
        }
    }

    simulation_api! {
        /// The naive reservation's second half: an upsert that trusts the earlier read.
        /// Between the two, another worker may have reserved the same key; this overwrites it.
        ///
        /// # Errors
        ///
        /// [`LedgerError::BadRequest`] for a request that would store an empty name; otherwise
        /// [`LedgerError`] when the store fails: another connection holds it past the wait
        /// ([`LedgerError::Locked`]), a row this build cannot read ([`LedgerError::BadRow`]), or
        /// the store's own failure ([`LedgerError::Failed`], [`LedgerError::Store`]).
        pub fn insert_started_unchecked(
            &mut self,
            request: &ReserveRequest<'_>,
            now_ms: u64,
        ) -> Result<Reservation, LedgerError> {
            self.transaction("inserting", "committing", |tables| {
                operations::insert_started_unchecked(tables, request, now_ms)
            })
        }
    }

    /// The send fence: the last step before a request leaves. Compare-and-set on the record
    /// still being `started` and owned by `owner`; if it is, the attempt is counted and noted
    /// and the request may leave. If it is not — an operator settled the call meanwhile, or
    /// another worker took it over — nothing may be sent, and the refusal is noted.
    ///
    /// # Errors
    ///
    /// [`LedgerError`] when the store fails: another connection holds it past the wait
    /// ([`LedgerError::Locked`]), a row this build cannot read ([`LedgerError::BadRow`]), or the
    /// store's own failure ([`LedgerError::Failed`], [`LedgerError::Store`]). Nothing of the
    /// operation was written.
    pub fn begin_attempt(
        &mut self,
        key: &IdempotencyKey,
        attempt: u32,
        owner: &str,
        now_ms: u64,
    ) -> Result<AttemptStart, LedgerError> {
        self.transaction("fencing an attempt", "committing an attempt", |tables| {
            operations::begin_attempt(tables, key, attempt, owner, now_ms)
        })
    }

    simulation_api! {
        /// Counts an attempt without the fence: what a naive runtime without compare-and-set does
        /// (the check-then-insert runtime, and the one test that shows what the fence prevents).
        ///
        /// # Errors
        ///
        /// [`LedgerError`] when the store fails: another connection holds it past the wait
        /// ([`LedgerError::Locked`]), a row this build cannot read ([`LedgerError::BadRow`]), or
        /// the store's own failure ([`LedgerError::Failed`], [`LedgerError::Store`]). Nothing of
        /// the operation was written.
        pub fn note_attempt(
            &mut self,
            key: &IdempotencyKey,
            attempt: u32,
            actor: &str,
            now_ms: u64,
        ) -> Result<(), LedgerError> {
            self.transaction("counting an attempt", "counting an attempt", |tables| {
                operations::note_attempt(tables, key, attempt, actor, now_ms)
            })
        }
    }

    /// Records attempt `attempt`'s own outcome, compare-and-set on the record still being
    /// `actor`'s `started` call at that attempt. Otherwise (someone settled the call, another
    /// worker owns it, a later attempt was made) the outcome is logged and ignored. `result`
    /// is the call's result; for [`Outcome::Indeterminate`] it is why the outcome is unknown,
    /// written in the history line (the record keeps no result).
    ///
    /// # Errors
    ///
    /// [`LedgerError`] when the store fails: another connection holds it past the wait
    /// ([`LedgerError::Locked`]), a row this build cannot read ([`LedgerError::BadRow`]), or the
    /// store's own failure ([`LedgerError::Failed`], [`LedgerError::Store`]). Nothing of the
    /// operation was written.
    pub fn record_outcome(
        &mut self,
        key: &IdempotencyKey,
        outcome: Outcome,
        result: Option<&str>,
        actor: &str,
        attempt: u32,
        now_ms: u64,
    ) -> Result<Recorded, LedgerError> {
        self.transaction("recording an outcome", "committing an outcome", |tables| {
            operations::record_outcome(tables, key, outcome, result, actor, attempt, now_ms)
        })
    }

    /// Logs an answer that arrived after its attempt had already timed out (or after the
    /// worker moved on): under its own key, changing nothing. One that contradicts how the
    /// call was settled meanwhile is written as a contradiction and returned.
    ///
    /// # Errors
    ///
    /// The ledger failed; nothing was written.
    pub fn log_late_outcome(
        &mut self,
        key: &IdempotencyKey,
        actor: &str,
        late: &LateAnswer<'_>,
        now_ms: u64,
    ) -> Result<Option<Contradiction>, LedgerError> {
        self.transaction("noting a late answer", "noting", |tables| {
            let current = tables.record(key)?;
            let contradiction = current.as_ref().and_then(|record| {
                Contradiction::of(
                    record,
                    late.says,
                    ContradictionSource::LateAnswer { attempt: late.attempt },
                    late.detail,
                )
            });
            let (event, detail) = match &contradiction {
                Some(contradiction) => (HistoryEvent::Contradicted, contradiction.describe()),
                None => (HistoryEvent::LateOutcomeIgnored, late.detail.to_owned()),
            };
            tables.append_history(&HistoryLine {
                from_status: current.map(|record| record.status),
                detail: Some(std::borrow::Cow::Owned(detail)),
                ..HistoryLine::note(key, now_ms, actor, event)
            })?;
            Ok(contradiction)
        })
    }

    /// Appends a note to a record's history without changing it (a guard that held, say).
    ///
    /// # Errors
    ///
    /// [`LedgerError`] when the store fails: another connection holds it past the wait
    /// ([`LedgerError::Locked`]), a row this build cannot read ([`LedgerError::BadRow`]), or the
    /// store's own failure ([`LedgerError::Failed`], [`LedgerError::Store`]). Nothing of the
    /// operation was written.
    pub fn note(
        &mut self,
        key: &IdempotencyKey,
        actor: &str,
        event: HistoryEvent,
        detail: &str,
        now_ms: u64,
    ) -> Result<(), LedgerError> {
        self.transaction("noting", "noting", |tables| {
            tables.append_history(&HistoryLine {
                detail: Some(std::borrow::Cow::Borrowed(detail)),
                ..HistoryLine::note(key, now_ms, actor, event)
            })
        })
    }

    /// Settles a call: compare-and-set on its status (and, if asked, its attempts), appended
    /// to its history. Used by operators (resolve, compensate) and by reconcile hooks.
    ///
    /// # Errors
    ///
    /// [`SettleError`]: the record is not there, not in a status the settlement expects
    /// (compare-and-set), or the ledger failed ([`SettleError::Ledger`]). Nothing was written.
    pub fn settle(
        &mut self,
        key: &IdempotencyKey,
        settlement: &Settlement<'_>,
        now_ms: u64,
    ) -> Result<ExecutionRecord, SettleError> {
        self.transaction("settling", "committing a settlement", |tables| {
            operations::settle(tables, key, settlement, now_ms)
        })
    }

    /// Appends a line to a run's own history (a run that waits for a person, and why).
    ///
    /// # Errors
    ///
    /// [`LedgerError`] when the store fails: another connection holds it past the wait
    /// ([`LedgerError::Locked`]), a row this build cannot read ([`LedgerError::BadRow`]), or the
    /// store's own failure ([`LedgerError::Failed`], [`LedgerError::Store`]). Nothing of the
    /// operation was written.
    pub fn append_run_event(
        &mut self,
        run_id: &str,
        actor: &str,
        event: RunEvent,
        detail: &str,
        now_ms: u64,
    ) -> Result<(), LedgerError> {
        self.transaction("noting a run event", "noting a run event", |tables| {
            tables.append_run_event(&RunHistoryLine {
                run_id,
                at_ms: now_ms,
                actor,
                event,
                detail: Some(detail),
            })
        })
    }

    /// The record of `key`, if there is one.
    ///
    /// # Errors
    ///
    /// [`LedgerError`] when the store fails: another connection holds it past the wait
    /// ([`LedgerError::Locked`]), a row this build cannot read ([`LedgerError::BadRow`]), or the
    /// store's own failure ([`LedgerError::Failed`], [`LedgerError::Store`]).
    pub fn record(&self, key: &IdempotencyKey) -> Result<Option<ExecutionRecord>, LedgerError> {
        self.read(
            "reading a record",
            memory::Table::Records,
            |connection, location| sqlite::record(connection, location, key),
            |tables| tables.record(key),
            |store| store.record(key),
        )
    }

    /// Records in a stable order, (updated_at_ms, key), as `filter` says
    /// ([`RecordFilter::default`] and its `with_*`): its status and tenant filter; unknown
    /// calls come longest-waiting first; its cursor is the (updated_at_ms, key) of the last
    /// row of the previous page. Every combination of filters reads an index (no scan of the
    /// table, no sort): a page costs the same with 2,000 records or 100,000.
    ///
    /// ```
    /// use twice_runtime::Status;
    /// use twice_runtime::ledger::{Ledger, RecordFilter};
    /// let ledger = Ledger::open_memory_store();
    /// let started = ledger.records(RecordFilter::default().with_status(Status::Started))?;
    /// assert!(started.is_empty());
    /// # Ok::<(), twice_runtime::ledger::LedgerError>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`LedgerError`] when the store fails: another connection holds it past the wait
    /// ([`LedgerError::Locked`]), a row this build cannot read ([`LedgerError::BadRow`]), or the
    /// store's own failure ([`LedgerError::Failed`], [`LedgerError::Store`]).
    pub fn records(&self, filter: RecordFilter<'_>) -> Result<Vec<ExecutionRecord>, LedgerError> {
        // Times are stored as i64: nothing comes after a cursor beyond that range (cast, it
        // would wrap to a negative time and restart the listing from the beginning).
        if filter.after.is_some_and(|(ms, _)| i64::try_from(ms).is_err()) {
            return Ok(Vec::new());
        }
        let filter = RecordFilter {
            limit: filter.limit.clamp(1, LIST_LIMIT_MAX),
            ..filter
        };
        self.read(
            "listing records",
            memory::Table::Records,
            |connection, location| sqlite::records(connection, location, &filter),
            |tables| tables.records(&filter),
            |store| store.records(&filter),
        )
    }

    /// Every record, in creation order then key order (for drawing and for the checker).
    ///
    /// # Errors
    ///
    /// [`LedgerError`] when the store fails: another connection holds it past the wait
    /// ([`LedgerError::Locked`]), a row this build cannot read ([`LedgerError::BadRow`]), or the
    /// store's own failure ([`LedgerError::Failed`], [`LedgerError::Store`]).
    pub fn all_records(&self) -> Result<Vec<ExecutionRecord>, LedgerError> {
        self.read(
            "listing records",
            memory::Table::Records,
            sqlite::all_records,
            memory::MemoryTables::all_records,
            |store| store.all_records(),
        )
    }

    /// `key`'s history, in the order it was written.
    ///
    /// # Errors
    ///
    /// [`LedgerError`] when the store fails: another connection holds it past the wait
    /// ([`LedgerError::Locked`]), a row this build cannot read ([`LedgerError::BadRow`]), or the
    /// store's own failure ([`LedgerError::Failed`], [`LedgerError::Store`]).
    pub fn history(&self, key: &IdempotencyKey) -> Result<Vec<HistoryEntry>, LedgerError> {
        self.history_where(Some(key))
    }

    /// The operator's decision behind `record`'s status ([`OperatorDecision::behind`]), read
    /// from its history; `None` for no record, for a call still unknown (its history is not
    /// read then: a call on its way never costs the read), and for one no operator settled.
    ///
    /// # Errors
    ///
    /// [`LedgerError`] when the history cannot be read, as for [`Ledger::history`].
    pub fn operator_decision(&self, record: Option<&ExecutionRecord>) -> Result<Option<OperatorDecision>, LedgerError> {
        match record {
            Some(record) if record.status.is_settled() => {
                Ok(OperatorDecision::behind(record, &self.history(&record.key)?))
            }
            _ => Ok(None),
        }
    }

    /// Every record's history, in the order it was written.
    ///
    /// # Errors
    ///
    /// [`LedgerError`] when the store fails: another connection holds it past the wait
    /// ([`LedgerError::Locked`]), a row this build cannot read ([`LedgerError::BadRow`]), or the
    /// store's own failure ([`LedgerError::Failed`], [`LedgerError::Store`]).
    pub fn all_history(&self) -> Result<Vec<HistoryEntry>, LedgerError> {
        self.history_where(None)
    }

    fn history_where(&self, key: Option<&IdempotencyKey>) -> Result<Vec<HistoryEntry>, LedgerError> {
        self.read(
            "reading history",
            memory::Table::History,
            |connection, location| sqlite::history(connection, location, key),
            |tables| tables.history(key),
            |store| store.history(key),
        )
    }

    /// The contradictions the ledger holds ([`HistoryEvent::Contradicted`] lines), newest
    /// first, at most `limit` (1 to [`LIST_LIMIT_MAX`]), of `tenant`'s calls or of every
    /// tenant's: what an operator looks at first. Contradictions are rare, so this reads the
    /// history rather than an index of its own.
    ///
    /// # Errors
    ///
    /// The ledger cannot be read, or holds a line this build cannot read.
    pub fn contradictions(&self, tenant: Option<&str>, limit: u32) -> Result<Vec<HistoryEntry>, LedgerError> {
        let limit = usize::try_from(limit.clamp(1, LIST_LIMIT_MAX)).unwrap_or(usize::MAX);
        let lines = self.read(
            "listing contradictions",
            memory::Table::History,
            |connection, location| sqlite::contradictions(connection, location, tenant, limit),
            |tables| tables.contradictions(tenant, limit),
            |store| store.contradictions(tenant, limit),
        )?;
        Ok(lines)
    }

    /// A run's own history, or every run's (`None`), in order.
    ///
    /// # Errors
    ///
    /// [`LedgerError`] when the store fails: another connection holds it past the wait
    /// ([`LedgerError::Locked`]), a row this build cannot read ([`LedgerError::BadRow`]), or the
    /// store's own failure ([`LedgerError::Failed`], [`LedgerError::Store`]).
    pub fn run_history(&self, run_id: Option<&str>) -> Result<Vec<RunHistoryEntry>, LedgerError> {
        self.read(
            "reading run history",
            memory::Table::RunHistory,
            |connection, location| sqlite::run_history(connection, location, run_id),
            |tables| tables.run_history(run_id),
            |store| store.run_history(run_id),
        )
    }

    /// The run's checkpoint, if it saved one.
    ///
    /// # Errors
    ///
    /// [`LedgerError`] when the store fails: another connection holds it past the wait
    /// ([`LedgerError::Locked`]), a row this build cannot read ([`LedgerError::BadRow`]), or the
    /// store's own failure ([`LedgerError::Failed`], [`LedgerError::Store`]).
    pub fn load_checkpoint(&self, run_id: &str) -> Result<Option<Checkpoint>, LedgerError> {
        self.read(
            "loading a checkpoint",
            memory::Table::Checkpoints,
            |connection, location| sqlite::checkpoint(connection, location, run_id),
            |tables| tables.checkpoint(run_id),
            |store| store.checkpoint(run_id),
        )
    }

    /// Every run's checkpoint, by run id.
    ///
    /// # Errors
    ///
    /// [`LedgerError`] when the store fails: another connection holds it past the wait
    /// ([`LedgerError::Locked`]), a row this build cannot read ([`LedgerError::BadRow`]), or the
    /// store's own failure ([`LedgerError::Failed`], [`LedgerError::Store`]).
    pub fn checkpoints(&self) -> Result<Vec<Checkpoint>, LedgerError> {
        self.read(
            "listing checkpoints",
            memory::Table::Checkpoints,
            sqlite::checkpoints,
            memory::MemoryTables::checkpoints,
            |store| store.checkpoints(),
        )
    }

    /// Saves a run's checkpoint. With `expected_version`, compare-and-set: the save
    /// succeeds only if nobody saved since this worker loaded version `expected_version`
    /// (0: nothing saved yet). Without it (the guard off), the save overwrites blindly.
    ///
    /// # Errors
    ///
    /// [`LedgerError::BadCheckpoint`] when the checkpoint's version is at its limit; otherwise
    /// [`LedgerError`] when the store fails: another connection holds it past the wait
    /// ([`LedgerError::Locked`]), a row this build cannot read ([`LedgerError::BadRow`]), or the
    /// store's own failure ([`LedgerError::Failed`], [`LedgerError::Store`]). A stale version is no
    /// error: it is [`SaveOutcome::Stale`].
    pub fn save_checkpoint(
        &mut self,
        run_id: &str,
        status: &str,
        state: &str,
        saved_by: &str,
        expected_version: Option<u32>,
        now_ms: u64,
    ) -> Result<SaveOutcome, LedgerError> {
        let save = CheckpointSave {
            run_id,
            status,
            state,
            saved_by,
            expected_version,
            still_failed: None,
        };
        self.save_checkpoint_fenced(&save, now_ms)
    }

    /// [`Ledger::save_checkpoint`], also compare-and-set on `still_failed`'s record still being
    /// `failed`: a save that tells the model a call failed must not land after another worker
    /// ran that call again (`failed` may run again), or the run would act on a stale failure.
    ///
    /// # Errors
    ///
    /// As [`Ledger::save_checkpoint`].
    pub fn save_checkpoint_fenced(
        &mut self,
        save: &CheckpointSave<'_>,
        now_ms: u64,
    ) -> Result<SaveOutcome, LedgerError> {
        self.transaction("saving a checkpoint", "committing a checkpoint", |tables| {
            operations::save_checkpoint(tables, save, now_ms)
        })
    }
}
