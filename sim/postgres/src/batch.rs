//! The PostgreSQL connection a commit group runs its batches on (`twice_runtime`'s
//! `ledger/group.rs`): one `SERIALIZABLE` transaction per batch, one savepoint per member, one
//! `COMMIT` (durable: `synchronous_commit = on`) for all of them.
//!
//! A serialization failure anywhere in the batch — in a member's statement or at the commit —
//! means the batch's snapshot lost to another transaction: nothing of it stands, and every
//! member runs again in a later batch (as a lone transaction runs again), after
//! [`crate::store::retry_pause`]. A member is answered only after the commit returned.

use twice_runtime::ledger::{BatchConnection, CommitEnd, LedgerError, MemberBody, MemberEnd};

use crate::connection::Queued;
use crate::error::{Failure, classify, failure_of};
use crate::store::{BEGIN_SERIALIZABLE, PostgresStore};
use crate::tables::Ended;

/// A ledger's write connection, owned by its group.
pub(crate) struct PostgresBatch {
    pub(crate) store: PostgresStore,
    /// The batch's `BEGIN`, until the first member's first read takes it along.
    pub(crate) queued: Vec<Queued>,
}

impl PostgresBatch {
    /// A batch connection on `store`, no batch open.
    pub(crate) fn new(store: PostgresStore) -> PostgresBatch {
        PostgresBatch {
            store,
            queued: Vec::new(),
        }
    }

    /// Undoes a member's writes and leaves its savepoint (one round trip); a failure here
    /// breaks the batch.
    fn undo_member(&self, context: &'static str, end: MemberEnd) -> MemberEnd {
        let undo = self
            .store
            .tables(context, vec![Queued::frame("ROLLBACK TO SAVEPOINT twice_member")]);
        match undo.end("RELEASE SAVEPOINT twice_member") {
            Ok(Ended::Done) => end,
            Ok(Ended::Refused(error)) => MemberEnd::Broken(Some(classify(&self.describe(), context, &error))),
            Err(error) => MemberEnd::Broken(Some(error)),
        }
    }
}

impl BatchConnection for PostgresBatch {
    fn describe(&self) -> String {
        twice_runtime::ledger::ExternalStore::describe(&self.store)
    }

    fn begin(&mut self) -> Result<(), LedgerError> {
        assert!(self.queued.is_empty(), "a batch begins only after the last one ended");
        self.queued.push(Queued::frame(BEGIN_SERIALIZABLE));
        Ok(())
    }

    fn member(&mut self, context: &'static str, body: &mut MemberBody<'_>) -> MemberEnd {
        // The savepoint (and the batch's BEGIN, for its first member) leaves with the
        // member's first read; its writes with its RELEASE.
        let mut opening = std::mem::take(&mut self.queued);
        let opened_before = opening.len();
        opening.push(Queued::frame("SAVEPOINT twice_member"));
        let mut tables = self.store.tables(context, opening);
        let outcome = body(&mut tables);
        if tables.conflicted {
            // The batch's snapshot lost: whatever the member answered, every member runs again.
            return MemberEnd::Broken(None);
        }
        if !tables.sent && !matches!(outcome, Ok(true)) {
            // Nothing of the member reached the server: its savepoint and writes are dropped
            // unsent, and the batch's own opening waits for the next member.
            let mut unsent = std::mem::take(&mut tables.queued);
            unsent.truncate(opened_before);
            self.queued = unsent;
            return match outcome {
                Ok(_) => MemberEnd::Undone,
                Err(error) => MemberEnd::Failed(error),
            };
        }
        match outcome {
            Ok(true) => match tables.end("RELEASE SAVEPOINT twice_member") {
                Ok(Ended::Done) => MemberEnd::Kept,
                // A write lost to another transaction: the batch's snapshot lost.
                Ok(Ended::Refused(error)) if failure_of(&error) == Failure::Retry => MemberEnd::Broken(None),
                Ok(Ended::Refused(error)) => {
                    let error = classify(&self.describe(), context, &error);
                    self.undo_member(context, MemberEnd::Failed(error))
                }
                Err(error) => MemberEnd::Broken(Some(error)),
            },
            Ok(false) => self.undo_member(context, MemberEnd::Undone),
            Err(error) => self.undo_member(context, MemberEnd::Failed(error)),
        }
    }

    fn commit(&mut self) -> CommitEnd {
        let context = "committing a batch of ledger writes";
        let queued = std::mem::take(&mut self.queued);
        match self.store.tables(context, queued).end("COMMIT") {
            Ok(Ended::Done) => CommitEnd::Durable,
            Ok(Ended::Refused(error)) if failure_of(&error) == Failure::Retry => CommitEnd::Conflict,
            // A commit whose answer was lost may or may not have happened: nobody in the batch
            // is told it is durable, and whoever comes next reads what the ledger holds.
            Ok(Ended::Refused(error)) => CommitEnd::Failed(classify(&self.describe(), context, &error)),
            Err(error) => CommitEnd::Failed(error),
        }
    }

    fn rollback(&mut self) {
        self.queued.clear();
        // Outside a transaction PostgreSQL only warns; a broken connection reports itself at
        // the next BEGIN.
        let _ = self.store.frame("ROLLBACK");
    }
}
