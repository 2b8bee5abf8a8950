//! The SQLite connection a commit group runs its batches on (see `ledger/group.rs`): one
//! `BEGIN IMMEDIATE` transaction per batch, one savepoint per member, one `COMMIT` (one fsync,
//! `synchronous = FULL`) for all of them.

use rusqlite::Connection;

use super::{SqliteTables, classify_at};
use crate::ledger::group::{BatchConnection, CommitEnd, MemberBody, MemberEnd};
use crate::ledger::{LedgerError, Location};

/// A file ledger's write connection, owned by its group.
pub(in crate::ledger) struct SqliteBatch {
    pub(in crate::ledger) connection: Connection,
    pub(in crate::ledger) location: Location,
}

impl SqliteBatch {
    /// One statement of the batch's frame, through the statement cache.
    fn frame(&self, sql: &'static str, context: &'static str) -> Result<(), LedgerError> {
        self.connection
            .prepare_cached(sql)
            .and_then(|mut statement| statement.execute([]))
            .map(|_| ())
            .map_err(|error| classify_at(&self.location, error, context))
    }

    /// Undoes the member's writes and leaves its savepoint. A failure here leaves the
    /// transaction in a state nobody can vouch for: the batch is broken.
    fn undo_member(&self, context: &'static str) -> Result<(), LedgerError> {
        self.frame("ROLLBACK TO twice_member", context)?;
        self.frame("RELEASE twice_member", context)
    }
}

impl BatchConnection for SqliteBatch {
    fn describe(&self) -> String {
        self.location.describe()
    }

    fn begin(&mut self) -> Result<(), LedgerError> {
        self.frame("BEGIN IMMEDIATE", "beginning a batch of ledger writes")
    }

    fn member(&mut self, context: &'static str, body: &mut MemberBody<'_>) -> MemberEnd {
        if let Err(error) = self.frame("SAVEPOINT twice_member", context) {
            return MemberEnd::Broken(Some(error));
        }
        let outcome = body(&mut SqliteTables {
            connection: &self.connection,
            location: &self.location,
            context,
        });
        // SQLite rolls the whole transaction back on some failures (a full disk, an I/O
        // error): the members before this one lost their writes too.
        if self.connection.is_autocommit() {
            let cause = match outcome {
                Err(error) => error,
                Ok(_) => LedgerError::Store {
                    location: self.location.describe(),
                    context,
                    detail: "the batch's transaction ended inside a member's operation".into(),
                },
            };
            return MemberEnd::Broken(Some(cause));
        }
        let end = match outcome {
            Ok(true) => {
                return self
                    .frame("RELEASE twice_member", context)
                    .map_or_else(|error| MemberEnd::Broken(Some(error)), |()| MemberEnd::Kept);
            }
            Ok(false) => MemberEnd::Undone,
            Err(error) => MemberEnd::Failed(error),
        };
        match self.undo_member(context) {
            Ok(()) => end,
            Err(error) => MemberEnd::Broken(Some(error)),
        }
    }

    fn commit(&mut self) -> CommitEnd {
        match self.frame("COMMIT", "committing a batch of ledger writes") {
            Ok(()) => CommitEnd::Durable,
            Err(error) => CommitEnd::Failed(error),
        }
    }

    fn rollback(&mut self) {
        if !self.connection.is_autocommit() {
            // Nothing more can be done with a failed rollback than with the failure before
            // it: the connection's next BEGIN reports whatever is wrong.
            let _ = self.connection.execute_batch("ROLLBACK");
        }
    }
}
