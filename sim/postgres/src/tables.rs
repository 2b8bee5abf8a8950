//! One transaction's rows on PostgreSQL: [`Tables`] for the runtime's one decision logic,
//! each call one prepared statement run on the connection's thread.

use twice_runtime::key::IdempotencyKey;
use twice_runtime::ledger::{
    CheckpointRow, ExecutionRecord, HistoryLine, LedgerError, RecordWrite, RunHistoryLine, Tables,
};

use twice_runtime::rules::Status;

use crate::connection::{Connection, Session};
use crate::error::{Failure, classify, classify_connection, failure_of};
use crate::rows::{
    INSERT_HISTORY, INSERT_RECORD, INSERT_RUN_HISTORY, PUT_CHECKPOINT, REPLACE_RECORD, RawRecord,
    SELECT_CHECKPOINT_VERSION, SELECT_RECORD, UPDATE_RECORD, stored_ms,
};

/// The rows one transaction reads and writes: each call one prepared statement, run on the
/// connection's thread inside the transaction [`crate::PostgresStore`]'s `transaction` began.
pub(crate) struct PostgresTables<'a> {
    pub(crate) connection: &'a Connection,
    pub(crate) location: &'a str,
    pub(crate) context: &'static str,
    /// A statement failed because another transaction got there first: the transaction is
    /// run again whatever the operation made of the error.
    pub(crate) conflicted: bool,
}

impl PostgresTables<'_> {
    fn run<T: Send + 'static>(
        &mut self,
        work: impl FnOnce(&mut Session) -> Result<T, postgres::Error> + Send + 'static,
    ) -> Result<T, LedgerError> {
        match self.connection.run(work) {
            Err(error) => Err(classify_connection(self.location, self.context, &error)),
            Ok(Err(error)) => {
                if failure_of(&error) == Failure::Retry {
                    self.conflicted = true;
                }
                Err(classify(self.location, self.context, &error))
            }
            Ok(Ok(value)) => Ok(value),
        }
    }
}

impl Tables for PostgresTables<'_> {
    fn record(&mut self, key: &IdempotencyKey) -> Result<Option<ExecutionRecord>, LedgerError> {
        let key_text = key.as_str().to_owned();
        let raw = self.run(move |session| {
            let statement = session.statement(SELECT_RECORD)?;
            session
                .client()
                .query_opt(&statement, &[&key_text])?
                .map(|row| RawRecord::from_row(&row))
                .transpose()
        })?;
        raw.map(|raw| raw.into_record(self.location)).transpose()
    }

    fn checkpoint_version(&mut self, run_id: &str) -> Result<Option<u32>, LedgerError> {
        let run_id = run_id.to_owned();
        let location = self.location.to_owned();
        let version = self.run(move |session| {
            let statement = session.statement(SELECT_CHECKPOINT_VERSION)?;
            Ok(session
                .client()
                .query_opt(&statement, &[&run_id])?
                .map(|row| (run_id, row.get::<_, i64>(0))))
        })?;
        version
            .map(|(run_id, version)| {
                u32::try_from(version).map_err(|_| LedgerError::BadRow {
                    location,
                    key: format!("run {run_id}"),
                    detail: format!("checkpoint version {version}"),
                })
            })
            .transpose()
    }

    fn write_record(&mut self, write: RecordWrite, record: &ExecutionRecord) -> Result<(), LedgerError> {
        let sql = match write {
            RecordWrite::Insert => INSERT_RECORD,
            RecordWrite::Replace => REPLACE_RECORD,
            RecordWrite::Update => UPDATE_RECORD,
        };
        let record = record.clone();
        self.run(move |session| {
            let statement = session.statement(sql)?;
            session.client().execute(
                &statement,
                &[
                    &record.key.as_str(),
                    &record.tenant.as_str(),
                    &record.run_id.as_str(),
                    &record.tool_call_id,
                    &record.tool.as_str(),
                    &record.side_effect.name(),
                    &record.arguments,
                    &record.status.name(),
                    &i64::from(record.attempts),
                    &record.result,
                    &record.owner.as_str(),
                    &stored_ms(record.created_at_ms),
                    &stored_ms(record.updated_at_ms),
                    &record.lease_expires_at_ms.map(stored_ms),
                ],
            )?;
            Ok(())
        })
    }

    fn append_history(&mut self, line: &HistoryLine<'_>) -> Result<(), LedgerError> {
        let key = line.key.as_str().to_owned();
        let at_ms = stored_ms(line.at_ms);
        let actor = line.actor.to_owned();
        let event = line.event.name();
        let from_status = line.from_status.map(Status::name);
        let to_status = line.to_status.map(Status::name);
        let reason = line.reason.map(str::to_owned);
        let detail = line.detail.as_deref().map(str::to_owned);
        self.run(move |session| {
            let statement = session.statement(INSERT_HISTORY)?;
            session.client().execute(
                &statement,
                &[&key, &at_ms, &actor, &event, &from_status, &to_status, &reason, &detail],
            )?;
            Ok(())
        })
    }

    fn put_checkpoint(&mut self, checkpoint: &CheckpointRow<'_>) -> Result<(), LedgerError> {
        let run_id = checkpoint.run_id.to_owned();
        let version = i64::from(checkpoint.version);
        let status = checkpoint.status.to_owned();
        let state = checkpoint.state.to_owned();
        let saved_by = checkpoint.saved_by.to_owned();
        let updated_at_ms = stored_ms(checkpoint.updated_at_ms);
        self.run(move |session| {
            let statement = session.statement(PUT_CHECKPOINT)?;
            session.client().execute(
                &statement,
                &[&run_id, &version, &status, &state, &saved_by, &updated_at_ms],
            )?;
            Ok(())
        })
    }

    fn append_run_event(&mut self, line: &RunHistoryLine<'_>) -> Result<(), LedgerError> {
        let run_id = line.run_id.to_owned();
        let at_ms = stored_ms(line.at_ms);
        let actor = line.actor.to_owned();
        let event = line.event.name();
        let detail = line.detail.map(str::to_owned);
        self.run(move |session| {
            let statement = session.statement(INSERT_RUN_HISTORY)?;
            session
                .client()
                .execute(&statement, &[&run_id, &at_ms, &actor, &event, &detail])?;
            Ok(())
        })
    }
}
