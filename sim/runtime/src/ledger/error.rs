//! [`LedgerError`]: everything that can go wrong with a ledger, each naming the file (or store).

use super::{BUSY_TIMEOUT_MS, StoreError};

/// Everything that can go wrong with a ledger, each naming the file (or store).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LedgerError {
    /// The file (or store) is something else than a ledger.
    #[error("{location}: not a Twice ledger ({detail})")]
    NotALedger {
        /// Which ledger.
        location: String,
        /// What it is instead.
        detail: String,
    },
    /// The file's pages do not hold together; nothing was written to it.
    #[error("{location}: the database file is corrupt ({detail}); it was left untouched")]
    Corrupt {
        /// Which ledger.
        location: String,
        /// SQLite's words.
        detail: String,
    },
    /// Another connection held the ledger longer than this one waits.
    #[error(
        "{location}: the ledger is locked by another connection while {context} (a file ledger waits up to {BUSY_TIMEOUT_MS} ms; a shared in-memory ledger does not wait)"
    )]
    Locked {
        /// Which ledger.
        location: String,
        /// What this connection was doing.
        context: &'static str,
    },
    /// A ledger of a schema version this build does not read.
    #[error("{location}: ledger schema version {found}, but this build reads version {expected}")]
    SchemaVersion {
        /// Which ledger.
        location: String,
        /// The version it holds, as stored.
        found: String,
        /// [`super::SCHEMA_VERSION`].
        expected: u32,
    },
    /// The ledger cannot be opened (or set up as asked).
    #[error("{location}: cannot open the ledger: {detail}")]
    Open {
        /// Which ledger.
        location: String,
        /// Why.
        detail: String,
    },
    /// No ledger file where one must already be ([`super::Ledger::open_existing`]).
    #[error("{location}: no ledger file there (it is not created here)")]
    Missing {
        /// Where it was looked for.
        location: String,
    },
    /// The store failed otherwise (SQLite, or the memory store refusing what SQLite would).
    #[error("{location}: {context}: {source}")]
    Failed {
        /// Which ledger.
        location: String,
        /// What the ledger was doing.
        context: &'static str,
        /// The store's error: its words, SQLite's result code, the client's own error
        /// behind `source()`.
        #[source]
        source: StoreError,
    },
    /// A store from another crate failed (its own error, in words).
    #[error("{location}: {context}: {detail}")]
    Store {
        /// Which ledger.
        location: String,
        /// What the ledger was doing.
        context: &'static str,
        /// The store's error, in words.
        detail: String,
    },
    /// A row holds a value this build cannot read (written by something else).
    #[error("{location}: record {key} holds a value this build cannot read: {detail}")]
    BadRow {
        /// Which ledger.
        location: String,
        /// The row's key.
        key: String,
        /// What cannot be read.
        detail: String,
    },
    /// A request the ledger refuses to write: it would store a record with an empty name
    /// (see [`super::ExecutionRecord::broken_invariant`]). Nothing was written.
    #[error("{location}: {detail}")]
    BadRequest {
        /// Which ledger.
        location: String,
        /// What is wrong with the request.
        detail: String,
    },
    /// A checkpoint cannot be saved again (its version is at its limit).
    #[error("{location}: the checkpoint of run {run_id} cannot be saved again: {detail}")]
    BadCheckpoint {
        /// Which ledger.
        location: String,
        /// The run.
        run_id: String,
        /// Why.
        detail: String,
    },
    /// A run id another tenant's run already has: its checkpoint or its calls belong to
    /// `owner`, and a worker for `asked` would load that run's state or meet its keys (which
    /// reach the downstream system as `<run_id>:<call_id>`, the same for both tenants). Nothing
    /// was loaded, written or sent: give each run an id unique across tenants.
    #[error(
        "{location}: run `{run_id}` belongs to tenant `{owner}`, not `{asked}`: run ids are unique across tenants (its keys reach the downstream system as `{run_id}:<call_id>` whatever the tenant), so give this run its own id; nothing was loaded or sent"
    )]
    RunOfAnotherTenant {
        /// Which ledger.
        location: String,
        /// The run id both asked for.
        run_id: String,
        /// The tenant whose run it is (its checkpoint or its records say so).
        owner: String,
        /// The tenant of the worker that asked.
        asked: String,
    },
}
