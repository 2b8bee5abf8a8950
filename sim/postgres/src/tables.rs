//! One transaction's rows on PostgreSQL: [`Tables`] for the runtime's one decision logic.
//!
//! Reads need their answer at once; writes do not (the decision logic only needs to know
//! that they stood by the time the transaction commits). So each write is queued, and goes to
//! the server with the next statement that needs an answer: the next read, or the statement
//! that ends the transaction (`COMMIT`) or the member (`RELEASE SAVEPOINT`). The transaction's
//! opening statement (`BEGIN`, `SAVEPOINT`) is queued the same way, and leaves with the first
//! read. A lone reservation is then three round trips, not seven; a completion two, not four.
//!
//! Nothing is answered earlier than before: a write that fails (a unique violation from a
//! reserver that got there first, say) fails the statement it was sent with, the commit counts
//! only when every write before it succeeded ([`Session::pipeline`]), and a conflict still
//! runs the whole transaction again. Reads within the transaction see its own writes, since
//! the queue leaves before the read, in order.

use twice_runtime::key::IdempotencyKey;
use twice_runtime::ledger::{
    CheckpointRow, ExecutionRecord, HistoryLine, LedgerError, RecordWrite, RunHistoryLine, Tables,
};

use twice_runtime::rules::Status;

use crate::connection::{Connection, Queued, Session};
use crate::error::{Failure, classify, classify_connection, failure_of};
use crate::rows::{
    INSERT_HISTORY, INSERT_RECORD, INSERT_RUN_HISTORY, PUT_CHECKPOINT, REPLACE_RECORD, RawRecord,
    SELECT_CHECKPOINT_VERSION, SELECT_RECORD, UPDATE_RECORD, stored_ms,
};

/// The rows one transaction reads and writes, inside the transaction (or savepoint) whose
/// opening statement is the first of [`PostgresTables::queued`] until it is sent.
pub(crate) struct PostgresTables<'a> {
    pub(crate) connection: &'a Connection,
    pub(crate) location: &'a str,
    pub(crate) context: &'static str,
    /// A statement failed because another transaction got there first: the transaction is
    /// run again whatever the operation made of the error.
    pub(crate) conflicted: bool,
    /// Statements not sent yet, in order: the opening statement and writes.
    pub(crate) queued: Vec<Queued>,
    /// Something of this transaction reached the server (so ending it needs a statement).
    pub(crate) sent: bool,
}

/// How ending a transaction (or a member) went, after its last statements were sent.
pub(crate) enum Ended {
    /// Every queued statement and the last one succeeded.
    Done,
    /// The first statement that failed, and its error: nothing after it counts.
    Refused(postgres::Error),
}

impl<'a> PostgresTables<'a> {
    /// A transaction's rows whose first statement, `opening`, waits for the first read.
    pub(crate) fn new(
        connection: &'a Connection,
        location: &'a str,
        context: &'static str,
        opening: Vec<Queued>,
    ) -> PostgresTables<'a> {
        PostgresTables {
            connection,
            location,
            context,
            conflicted: false,
            queued: opening,
            sent: false,
        }
    }

    /// Sends every queued statement and `last`, together, and answers `last`'s rows through
    /// `answer` if every one before it succeeded.
    fn send<T: Send + 'static>(
        &mut self,
        last: Queued,
        answer: impl FnOnce(Vec<postgres::Row>) -> Result<T, postgres::Error> + Send + 'static,
    ) -> Result<T, LedgerError> {
        let mut statements = std::mem::take(&mut self.queued);
        statements.push(last);
        self.sent = true;
        let outcome = self.connection.run(move |session: &mut Session| {
            let answers = session.pipeline(&statements)?;
            let mut rows = Vec::new();
            // The first failure is the one that counts: everything after it failed (or, for
            // a COMMIT, rolled back) because of it.
            for statement_answer in answers {
                rows = statement_answer?;
            }
            answer(rows)
        });
        match outcome {
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

    /// Sends what is queued and `last` (`COMMIT`, `RELEASE SAVEPOINT`): whether all of it
    /// succeeded, or the first server error; `Err` only for a connection that is gone.
    pub(crate) fn end(mut self, last: &'static str) -> Result<Ended, LedgerError> {
        let mut statements = std::mem::take(&mut self.queued);
        statements.push(Queued::frame(last));
        let outcome = self.connection.run(move |session: &mut Session| {
            for statement_answer in session.pipeline(&statements)? {
                statement_answer?;
            }
            Ok::<(), postgres::Error>(())
        });
        match outcome {
            Err(error) => Err(classify_connection(self.location, self.context, &error)),
            Ok(Err(error)) => Ok(Ended::Refused(error)),
            Ok(Ok(())) => Ok(Ended::Done),
        }
    }

    /// Queues a write: it leaves with the next statement that needs an answer.
    fn queue(&mut self, sql: &'static str, parameters: Vec<crate::connection::Parameter>) {
        self.queued.push(Queued { sql, parameters });
    }
}

impl Tables for PostgresTables<'_> {
    fn location(&self) -> String {
        self.location.to_owned()
    }

    fn record(&mut self, key: &IdempotencyKey) -> Result<Option<ExecutionRecord>, LedgerError> {
        let read = Queued {
            sql: SELECT_RECORD,
            parameters: vec![Box::new(key.as_str().to_owned())],
        };
        let raw = self.send(read, |rows| rows.first().map(RawRecord::from_row).transpose())?;
        raw.map(|raw| raw.into_record(self.location)).transpose()
    }

    fn checkpoint_version(&mut self, run_id: &str) -> Result<Option<u32>, LedgerError> {
        let read = Queued {
            sql: SELECT_CHECKPOINT_VERSION,
            parameters: vec![Box::new(run_id.to_owned())],
        };
        let version = self.send(read, |rows| Ok(rows.first().map(|row| row.get::<_, i64>(0))))?;
        version
            .map(|version| {
                u32::try_from(version).map_err(|_| LedgerError::BadRow {
                    location: self.location.to_owned(),
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
        self.queue(
            sql,
            vec![
                Box::new(record.key.as_str().to_owned()),
                Box::new(record.tenant.as_str().to_owned()),
                Box::new(record.run_id.as_str().to_owned()),
                Box::new(record.tool_call_id),
                Box::new(record.tool.as_str().to_owned()),
                Box::new(record.side_effect.name()),
                Box::new(record.arguments),
                Box::new(record.status.name()),
                Box::new(i64::from(record.attempts)),
                Box::new(record.result),
                Box::new(record.owner.as_str().to_owned()),
                Box::new(stored_ms(record.created_at_ms)),
                Box::new(stored_ms(record.updated_at_ms)),
                Box::new(record.lease_expires_at_ms.map(stored_ms)),
            ],
        );
        Ok(())
    }

    fn append_history(&mut self, line: &HistoryLine<'_>) -> Result<(), LedgerError> {
        self.queue(
            INSERT_HISTORY,
            vec![
                Box::new(line.key.as_str().to_owned()),
                Box::new(stored_ms(line.at_ms)),
                Box::new(line.actor.to_owned()),
                Box::new(line.event.name()),
                Box::new(line.from_status.map(Status::name)),
                Box::new(line.to_status.map(Status::name)),
                Box::new(line.reason.map(str::to_owned)),
                Box::new(line.detail.as_deref().map(str::to_owned)),
            ],
        );
        Ok(())
    }

    fn put_checkpoint(&mut self, checkpoint: &CheckpointRow<'_>) -> Result<(), LedgerError> {
        self.queue(
            PUT_CHECKPOINT,
            vec![
                Box::new(checkpoint.run_id.to_owned()),
                Box::new(i64::from(checkpoint.version)),
                Box::new(checkpoint.status.to_owned()),
                Box::new(checkpoint.state.to_owned()),
                Box::new(checkpoint.saved_by.to_owned()),
                Box::new(stored_ms(checkpoint.updated_at_ms)),
            ],
        );
        Ok(())
    }

    fn append_run_event(&mut self, line: &RunHistoryLine<'_>) -> Result<(), LedgerError> {
        self.queue(
            INSERT_RUN_HISTORY,
            vec![
                Box::new(line.run_id.to_owned()),
                Box::new(stored_ms(line.at_ms)),
                Box::new(line.actor.to_owned()),
                Box::new(line.event.name()),
                Box::new(line.detail.map(str::to_owned)),
            ],
        );
        Ok(())
    }
}
