//! The PostgreSQL connection a commit group runs its batches on (`twice_runtime`'s
//! `ledger/group.rs`): one `SERIALIZABLE` transaction per batch, one savepoint per member, one
//! `COMMIT` (durable: `synchronous_commit = on`) for all of them.
//!
//! A serialization failure anywhere in the batch — in a member's statement or at the commit —
//! means the batch's snapshot lost to another transaction: nothing of it stands, and every
//! member runs again in a later batch (as a lone transaction runs again), after
//! [`crate::store::retry_pause`]. A member is answered only after the commit returned.

use twice_runtime::ledger::{BatchConnection, CommitEnd, LedgerError, MemberBody, MemberEnd};

use crate::error::{Failure, classify, failure_of};
use crate::store::PostgresStore;

/// A ledger's write connection, owned by its group.
pub(crate) struct PostgresBatch {
    pub(crate) store: PostgresStore,
}

impl PostgresBatch {
    /// One statement of the batch's frame, its failure in the ledger's words.
    fn frame(&self, sql: &'static str, context: &'static str) -> Result<(), LedgerError> {
        let location = self.describe();
        self.store
            .frame(sql)?
            .map_err(|error| classify(&location, context, &error))
    }

    /// Undoes a member's writes and leaves its savepoint; a failure here breaks the batch.
    fn undo_member(&self, context: &'static str, end: MemberEnd) -> MemberEnd {
        match self
            .frame("ROLLBACK TO SAVEPOINT twice_member", context)
            .and_then(|()| self.frame("RELEASE SAVEPOINT twice_member", context))
        {
            Ok(()) => end,
            Err(error) => MemberEnd::Broken(Some(error)),
        }
    }
}

impl BatchConnection for PostgresBatch {
    fn describe(&self) -> String {
        twice_runtime::ledger::ExternalStore::describe(&self.store)
    }

    fn begin(&mut self) -> Result<(), LedgerError> {
        self.frame(
            "BEGIN ISOLATION LEVEL SERIALIZABLE",
            "beginning a batch of ledger writes",
        )
    }

    fn member(&mut self, context: &'static str, body: &mut MemberBody<'_>) -> MemberEnd {
        if let Err(error) = self.frame("SAVEPOINT twice_member", context) {
            return MemberEnd::Broken(Some(error));
        }
        let (outcome, conflicted) = {
            let mut tables = self.store.tables(context);
            let outcome = body(&mut tables);
            (outcome, tables.conflicted)
        };
        if conflicted {
            // The batch's snapshot lost: whatever the member answered, every member runs again.
            return MemberEnd::Broken(None);
        }
        match outcome {
            Ok(true) => match self.frame("RELEASE SAVEPOINT twice_member", context) {
                Ok(()) => MemberEnd::Kept,
                Err(error) => MemberEnd::Broken(Some(error)),
            },
            Ok(false) => self.undo_member(context, MemberEnd::Undone),
            Err(error) => self.undo_member(context, MemberEnd::Failed(error)),
        }
    }

    fn commit(&mut self) -> CommitEnd {
        let context = "committing a batch of ledger writes";
        match self.store.frame("COMMIT") {
            Ok(Ok(())) => CommitEnd::Durable,
            Ok(Err(error)) if failure_of(&error) == Failure::Retry => CommitEnd::Conflict,
            // A commit whose answer was lost may or may not have happened: nobody in the batch
            // is told it is durable, and whoever comes next reads what the ledger holds.
            Ok(Err(error)) => CommitEnd::Failed(classify(&self.describe(), context, &error)),
            Err(error) => CommitEnd::Failed(error),
        }
    }

    fn rollback(&mut self) {
        // Outside a transaction PostgreSQL only warns; a broken connection reports itself at
        // the next BEGIN.
        let _ = self.store.frame("ROLLBACK");
    }
}
