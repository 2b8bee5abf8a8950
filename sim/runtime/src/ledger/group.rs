//! Group commit: the ledger writes of many concurrent runs in one process, committed in
//! batches of one transaction (one fsync) each.
//!
//! A ledger write is durable before it is answered (`synchronous = FULL` on SQLite,
//! `synchronous_commit = on` on PostgreSQL): a reservation a crash could take back would let a
//! recovered run call the tool again. One commit per write makes the disk's fsync rate the
//! ceiling of every run in the process together. Here the runs of one process share one
//! write connection, and each write is one member of the batch in progress:
//!
//! - A caller takes the connection, opens the batch's transaction if it is the first member,
//!   and runs its own operation inside a savepoint of it. The operation is the same code as
//!   a lone transaction's (`operations.rs` over [`Tables`]): members are applied one after
//!   another, so each reads what the members before it wrote, exactly as if each had
//!   committed alone in that order. Nothing of the rules is written twice.
//! - A member whose operation refuses (a decision error) or fails is rolled back to its
//!   savepoint: its writes are undone, the others' stand. If its failure took the whole
//!   transaction with it (SQLite rolls back on a full disk, say), the batch is lost: the
//!   failing member gets its error, every other member runs again in a later batch — never
//!   acknowledged for writes that are gone. PostgreSQL's serialization conflicts lose the
//!   batch the same way, and every member runs again.
//! - The member that finds nobody else waiting to join (or the batch full at
//!   [`GroupSettings::batch_max`]; "nobody" after letting the runs the last batch answered
//!   come back, `Group::gather`) commits it, holding the connection, and answers everyone
//!   in the batch. Every member is answered only after that commit returned: a tool never
//!   runs on a reservation that is not on disk. A crash before the commit loses the whole
//!   batch, and nobody in it was answered.
//!
//! Why no timer (and why this module may live in the runtime, whose `clippy.toml` bans the
//! clock and sleeping): a batch closes when nobody is waiting to join it, not after a delay.
//! While one batch's fsync runs, the next batch gathers by itself — every caller that arrives
//! meanwhile queues for the connection — so under load batches grow to the load, and a lone
//! caller commits at once, as without groups. A member's wait is bounded by construction:
//! at most [`GroupSettings::batch_max`] members run before its commit, behind at most the
//! one commit in progress. A `commit_delay`-style timer would need the wall clock, and would
//! make a lone caller wait for nothing. The one pause, before a lost batch's members run
//! again, is the store's own ([`GroupSettings::pause_before_rerun`]: PostgreSQL's, none for
//! SQLite).
//!
//! Reads outside a transaction do not go through the group: each member handle reads on a
//! connection of its own, which sees only committed (so durable) rows, never a batch in
//! progress.

use std::collections::BTreeMap;
use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};
#[cfg(feature = "sqlite")]
use std::path::Path;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

use super::operations::Tables;
#[cfg(feature = "sqlite")]
use super::sqlite::SqliteBatch;
use super::{ExternalStore, Ledger, LedgerError, Location, Store, lock_external};

/// The most members one batch holds by default: 64 runs' writes per fsync.
pub const BATCH_MAX_DEFAULT: u32 = 64;
/// The most members one batch may be set to hold: the bound on how long a member waits.
pub const BATCH_MAX_LIMIT: u32 = 4_096;
/// How many times a write whose batch was lost (not by its own failure) runs again before
/// its caller is told the ledger is locked.
pub const RERUNS_MAX: u32 = 64;
/// How many times, at most, the member about to close a batch gives up its core so that the
/// runs the last batch just answered can come back and join (see [`Group::gather`]).
pub const GATHER_YIELDS_MAX: u32 = 256;

/// One member's operation: answers whether its writes stand (`true`) or are rolled back
/// (`false`, a refusal); it may be run again when its batch was lost, so it keeps no state of
/// its own between runs (as [`ExternalStore::transaction`]'s body).
pub type MemberBody<'a> = dyn FnMut(&mut dyn Tables) -> Result<bool, LedgerError> + 'a;

/// How one member's operation ended inside the batch's transaction.
#[derive(Debug)]
pub enum MemberEnd {
    /// Its writes stand in the batch.
    Kept,
    /// It refused (answered `false`): its writes were rolled back to its savepoint.
    Undone,
    /// It failed: its writes were rolled back to its savepoint; the batch stands.
    Failed(LedgerError),
    /// The batch's transaction cannot go on. `Some`: this member's own failure ended it (it
    /// gets the error, the others run again); `None`: a conflict with another transaction
    /// (every member runs again).
    Broken(Option<LedgerError>),
}

/// How a batch's commit ended.
#[derive(Debug)]
pub enum CommitEnd {
    /// Committed and durable.
    Durable,
    /// Refused for a conflict with another transaction (PostgreSQL's serialization failure):
    /// nothing of the batch stands; every member runs again.
    Conflict,
    /// Failed: nothing of the batch may be taken as written.
    Failed(LedgerError),
}

/// The one connection a group's batches run on: a transaction per batch, a savepoint per
/// member. SQLite's is in `sqlite/batch.rs`; PostgreSQL's in its own crate.
pub trait BatchConnection: Send {
    /// Where the store is, for messages; never a secret.
    fn describe(&self) -> String;
    /// Opens the batch's transaction.
    ///
    /// # Errors
    ///
    /// [`LedgerError`]: the store reports its client's failure as [`LedgerError::Store`] (or
    /// [`LedgerError::Locked`] when another connection holds what it needs).
    fn begin(&mut self) -> Result<(), LedgerError>;
    /// Runs one member's operation in a savepoint of the open transaction.
    fn member(&mut self, context: &'static str, body: &mut MemberBody<'_>) -> MemberEnd;
    /// Commits the open transaction, durably.
    fn commit(&mut self) -> CommitEnd;
    /// Rolls back whatever transaction is open (none: nothing to do).
    fn rollback(&mut self);
}

/// How a group batches: [`GroupSettings::default`] and its `with_*`.
#[derive(Clone, Copy, Debug)]
#[non_exhaustive]
pub struct GroupSettings {
    /// The most members a batch holds (from 1 to [`BATCH_MAX_LIMIT`]); 1 commits every write
    /// alone, as a ledger without a group does.
    pub batch_max: u32,
    /// Called before the members of a lost batch run again (with how many times they have):
    /// the store's pause, so that two contenders do not conflict in step.
    pub pause_before_rerun: fn(u32),
    /// Called with the connection held and the batch complete, just before its commit, with
    /// the number of members in it: the "mid-batch" moment, where the crash tests and drills
    /// stop a process (nothing of the batch is durable, nobody in it is answered).
    pub before_commit: fn(u32),
}

impl Default for GroupSettings {
    fn default() -> GroupSettings {
        GroupSettings {
            batch_max: BATCH_MAX_DEFAULT,
            pause_before_rerun: |_| {},
            before_commit: |_| {},
        }
    }
}

impl GroupSettings {
    /// The same settings with at most `batch_max` members a batch.
    #[must_use]
    pub fn with_batch_max(mut self, batch_max: u32) -> GroupSettings {
        self.batch_max = batch_max;
        self
    }

    /// The same settings calling `pause` before the members of a lost batch run again.
    #[must_use]
    pub fn with_pause_before_rerun(mut self, pause: fn(u32)) -> GroupSettings {
        self.pause_before_rerun = pause;
        self
    }

    /// The same settings calling `hook` just before each batch's commit (the crash tests'
    /// mid-batch moment).
    #[must_use]
    pub fn with_before_commit(mut self, hook: fn(u32)) -> GroupSettings {
        self.before_commit = hook;
        self
    }
}

/// What a group has committed so far (for the benchmark and the tests).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct GroupStats {
    /// Batches committed durably.
    pub batches: u64,
    /// Members in those batches.
    pub members: u64,
    /// The most members one committed batch held.
    pub largest: u32,
    /// Batches lost (a conflict, a member whose failure ended the transaction, a failed commit).
    pub lost: u64,
}

/// A closed batch's outcome, as its members are told it.
#[derive(Clone, Debug)]
enum Outcome {
    Durable,
    /// Nothing of it stands, through no fault of the member: it runs again.
    Lost,
    /// The commit failed (in words: each member gets its own error).
    Failed(String),
}

/// A closed batch whose members have not all collected its outcome.
#[derive(Debug)]
struct Closed {
    outcome: Outcome,
    uncollected: u32,
}

#[derive(Debug, Default)]
struct State {
    /// Callers waiting for the connection to join the open batch.
    waiting: u32,
    /// The number of the batch being filled.
    open: u64,
    /// Members in it so far (0: its transaction is not begun).
    members: u32,
    closed: BTreeMap<u64, Closed>,
    stats: GroupStats,
}

/// The group every member handle of one process shares.
pub(super) struct Group {
    connection: Mutex<Box<dyn BatchConnection>>,
    state: Mutex<State>,
    /// Members waiting for their batch's outcome wait on the condition of their batch's
    /// parity: closing a batch wakes its own members, not the next batch's (at most two
    /// batches have waiting members: one closed and not yet collected, and the open one).
    decided: [Condvar; 2],
    settings: GroupSettings,
    location: String,
}

impl std::fmt::Debug for Group {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("Group")
            .field("location", &self.location)
            .field("batch_max", &self.settings.batch_max)
            .finish()
    }
}

/// One pass of a member through a batch.
enum Pass {
    Done(Result<(), LedgerError>),
    Again,
}

impl Group {
    pub(super) fn new(
        connection: Box<dyn BatchConnection>,
        settings: GroupSettings,
    ) -> Result<Arc<Group>, LedgerError> {
        let location = connection.describe();
        if settings.batch_max == 0 || settings.batch_max > BATCH_MAX_LIMIT {
            return Err(LedgerError::Open {
                location,
                detail: format!(
                    "a commit group's batch holds from 1 to {BATCH_MAX_LIMIT} writes, not {}",
                    settings.batch_max
                ),
            });
        }
        Ok(Arc::new(Group {
            connection: Mutex::new(connection),
            state: Mutex::new(State::default()),
            decided: [Condvar::new(), Condvar::new()],
            settings,
            location,
        }))
    }

    pub(super) fn stats(&self) -> GroupStats {
        self.lock_state().stats
    }

    /// Runs `body` as a member of a batch and returns once its batch is durable (or lost for
    /// good, or failed).
    pub(super) fn run(&self, context: &'static str, body: &mut MemberBody<'_>) -> Result<(), LedgerError> {
        for rerun in 0..=RERUNS_MAX {
            if rerun > 0 {
                (self.settings.pause_before_rerun)(rerun);
            }
            if let Pass::Done(result) = self.pass(context, body) {
                return result;
            }
        }
        Err(LedgerError::Locked {
            location: self.location.clone(),
            context,
        })
    }

    fn lock_state(&self) -> MutexGuard<'_, State> {
        // The state is only counters, changed in single steps: a panic cannot leave it half-set.
        self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn pass(&self, context: &'static str, body: &mut MemberBody<'_>) -> Pass {
        self.lock_state().waiting += 1;
        let mut connection = self
            .connection
            .lock()
            .expect("a group's connection is never held across a panic (members are caught)");
        let (batch, first) = {
            let mut state = self.lock_state();
            state.waiting -= 1;
            state.members += 1;
            (state.open, state.members == 1)
        };
        if first && let Err(error) = connection.begin() {
            // Nobody else is in a batch that never began: the next caller begins it again.
            self.lock_state().members = 0;
            return Pass::Done(Err(error));
        }
        let end = match catch_unwind(AssertUnwindSafe(|| connection.member(context, body))) {
            Ok(end) => end,
            Err(panic) => {
                connection.rollback();
                self.close(batch, Outcome::Lost);
                drop(connection);
                resume_unwind(panic);
            }
        };
        let mine = match end {
            MemberEnd::Kept | MemberEnd::Undone => Ok(()),
            MemberEnd::Failed(error) => Err(error),
            MemberEnd::Broken(cause) => {
                connection.rollback();
                self.close(batch, Outcome::Lost);
                return match cause {
                    Some(error) => Pass::Done(Err(error)),
                    None => Pass::Again,
                };
            }
        };
        let (closes, members) = self.gather();
        if !closes {
            drop(connection);
            return self.answer(self.wait_for(batch), mine);
        }
        (self.settings.before_commit)(members);
        match connection.commit() {
            CommitEnd::Durable => {
                self.close(batch, Outcome::Durable);
                self.answer(Outcome::Durable, mine)
            }
            CommitEnd::Conflict => {
                connection.rollback();
                self.close(batch, Outcome::Lost);
                Pass::Again
            }
            CommitEnd::Failed(error) => {
                connection.rollback();
                self.close(batch, Outcome::Failed(error.to_string()));
                Pass::Done(Err(error))
            }
        }
    }

    /// Whether the member holding the connection closes the batch now (with how many members
    /// it holds): when it is full, or when nobody is waiting to join it. Before concluding
    /// "nobody", it gives its core to the runs the last batch answered, for as long as some of
    /// them have not yet collected that answer (at most [`GATHER_YIELDS_MAX`] times): they are
    /// runnable, about to come back with their next write, and without this on a machine of
    /// few cores the batch closed before they could, so batches held about half the runs
    /// (24 to 34 writes for 64 runs when measured). No clock: a yield with nothing
    /// else to run returns at once, and a lone caller (no answer uncollected) never yields.
    fn gather(&self) -> (bool, u32) {
        let mut yields = 0;
        loop {
            let state = self.lock_state();
            let full = state.members >= self.settings.batch_max;
            let returning = state.closed.values().any(|closed| closed.uncollected > 0);
            if full || state.waiting > 0 || !returning || yields >= GATHER_YIELDS_MAX {
                return (full || state.waiting == 0, state.members);
            }
            drop(state);
            yields += 1;
            std::thread::yield_now();
        }
    }

    /// Closes batch `batch` (the open one: its closer, one of its members, holds the
    /// connection) with `outcome` for its other members; the next caller opens a new batch.
    fn close(&self, batch: u64, outcome: Outcome) {
        let mut state = self.lock_state();
        assert_eq!(
            state.open, batch,
            "only the open batch is closed, by a member holding the connection"
        );
        let members = state.members;
        state.open += 1;
        state.members = 0;
        match outcome {
            Outcome::Durable => {
                state.stats.batches += 1;
                state.stats.members += u64::from(members);
                state.stats.largest = state.stats.largest.max(members);
            }
            Outcome::Lost | Outcome::Failed(_) => state.stats.lost += 1,
        }
        // The closer answers itself; the others wait for the outcome.
        let others = members.saturating_sub(1);
        if others > 0 {
            state.closed.insert(
                batch,
                Closed {
                    outcome,
                    uncollected: others,
                },
            );
            self.decided[parity(batch)].notify_all();
        }
    }

    /// Waits until batch `batch` is closed and takes its outcome.
    fn wait_for(&self, batch: u64) -> Outcome {
        let mut state = self.lock_state();
        loop {
            if let Some(closed) = state.closed.get_mut(&batch) {
                let outcome = closed.outcome.clone();
                closed.uncollected -= 1;
                if closed.uncollected == 0 {
                    state.closed.remove(&batch);
                }
                return outcome;
            }
            state = self.decided[parity(batch)]
                .wait(state)
                .unwrap_or_else(std::sync::PoisonError::into_inner);
        }
    }

    /// A member's answer once its batch is closed.
    fn answer(&self, outcome: Outcome, mine: Result<(), LedgerError>) -> Pass {
        match outcome {
            Outcome::Durable => Pass::Done(mine),
            Outcome::Lost => Pass::Again,
            Outcome::Failed(detail) => Pass::Done(Err(LedgerError::Store {
                location: self.location.clone(),
                context: "committing a batch of ledger writes",
                detail,
            })),
        }
    }
}

/// Which of the two conditions batch `batch`'s members wait on.
fn parity(batch: u64) -> usize {
    usize::from(batch % 2 == 1)
}

/// Where a group member reads outside any transaction: a connection of its own.
#[derive(Debug)]
pub(super) enum Reads {
    #[cfg_attr(
        not(feature = "sqlite"),
        expect(dead_code, reason = "without SQLite the variant holds a type with no values")
    )]
    Sqlite(super::sqlite::Connection),
    External(Mutex<Box<dyn ExternalStore>>),
}

/// One run's handle on a process's commit group: the shared group for writes, its own
/// connection for reads.
#[derive(Debug)]
pub(super) struct Member {
    pub(super) group: Arc<Group>,
    pub(super) reads: Reads,
}

impl Member {
    /// Another member of the same group, with a read connection of its own.
    pub(super) fn join(&self, location: &Location) -> Result<Ledger, LedgerError> {
        let reads = match (&self.reads, location) {
            (Reads::Sqlite(connection), location) => {
                Reads::Sqlite(super::sqlite::read_connection_again(connection, location)?)
            }
            (Reads::External(store), location) => {
                Reads::External(Mutex::new(lock_external(store, location)?.connect_again()?))
            }
        };
        Ok(Ledger {
            store: Store::Grouped(Member {
                group: Arc::clone(&self.group),
                reads,
            }),
            location: location.clone(),
        })
    }
}

impl Ledger {
    #[cfg(feature = "sqlite")]
    /// Opens a ledger file (as [`Ledger::open`]) whose writes go through a commit group:
    /// every handle made from this one with [`Ledger::connect_again`] — one per run this
    /// process drives — joins the same group, and concurrent writes share one transaction
    /// and one fsync, each answered only once durable (see the module `group.rs`). Reads go
    /// to a connection of each handle's own and see only what is committed.
    ///
    /// # Errors
    ///
    /// As [`Ledger::open`], for either of its two connections.
    pub fn open_grouped(path: &Path, settings: GroupSettings) -> Result<Ledger, LedgerError> {
        let writes = Ledger::open(path)?;
        let reads = Ledger::open(path)?;
        let (Store::Sqlite(write_connection), Store::Sqlite(read_connection)) = (writes.store, reads.store) else {
            unreachable!("a file ledger is SQLite");
        };
        let batch = SqliteBatch {
            connection: write_connection,
            location: writes.location.clone(),
        };
        Ok(Ledger {
            store: Store::Grouped(Member {
                group: Group::new(Box::new(batch), settings)?,
                reads: Reads::Sqlite(read_connection),
            }),
            location: writes.location,
        })
    }

    /// A ledger on a store from another crate whose writes go through a commit group on
    /// `batch` (its write connection), reading on `reads` (see [`Ledger::open_grouped`]).
    ///
    /// # Errors
    ///
    /// [`LedgerError::Open`] when the settings cannot be used (a batch size of 0 or over
    /// [`BATCH_MAX_LIMIT`]).
    pub fn on_group(
        batch: Box<dyn BatchConnection>,
        reads: Box<dyn ExternalStore>,
        settings: GroupSettings,
    ) -> Result<Ledger, LedgerError> {
        let location = Location::External(batch.describe());
        Ok(Ledger {
            store: Store::Grouped(Member {
                group: Group::new(batch, settings)?,
                reads: Reads::External(Mutex::new(reads)),
            }),
            location,
        })
    }

    /// What this ledger's commit group has committed so far; `None` without a group.
    pub fn group_stats(&self) -> Option<GroupStats> {
        match &self.store {
            Store::Grouped(member) => Some(member.group.stats()),
            Store::Sqlite(_) | Store::Memory(_) | Store::External(_) => None,
        }
    }
}

#[cfg(test)]
#[path = "group_tests.rs"]
mod tests;
