//! Twice's ledger on PostgreSQL: the third store, for a runtime that outgrows one machine.
//!
//! The SQLite ledger is a file, so every worker, drill and operator API that shares it runs
//! on one machine. This crate puts the same ledger in PostgreSQL, where workers on many
//! hosts can share it. It is only a store: the ledger's operations and every decision they
//! make are `twice_runtime`'s (`decide_*` over `runtime::rules`, through its `Tables` seam),
//! the same code the SQLite and memory stores run. [`PostgresStore`] implements
//! `ExternalStore` (connections, transactions, reads) and, per transaction, `Tables` (one
//! prepared statement per row read or written).
//!
//! It is its own crate because its client, `tokio-postgres`, runs on tokio, and
//! `twice_runtime` keeps async runtimes out. Each connection lives on a thread of its own
//! with a runtime of its own (`connection.rs`), so the store is synchronous and safe to call
//! from any thread, async runtime or not; the asynchronous client is there to pipeline (a
//! transaction's writes leave with its COMMIT: [`round_trips`] counts them).
//!
//! - `url.rs`: [`PostgresUrl`], parsed once at the command line, the password never shown.
//! - `schema.rs`: the tables, checks, indexes and append-only triggers; `twice_meta`.
//! - `store.rs`: `SERIALIZABLE` transactions run again on serialization failures, and the reads.
//! - `tables.rs`: one transaction's rows (`Tables`), a prepared statement each, writes queued
//!   to leave with the next statement that needs an answer.
//! - `rows.rs`: the statements, and rows as the server gives them, checked into the ledger's types.
//! - `batch.rs`: a commit group's batches (one transaction, one durable commit each).
//! - `raw.rs`: [`RawCommits`], single-row INSERTs each its own durable commit: the benchmark's
//!   ceiling for one write on the same server and the same client path.
//! - `error.rs`: PostgreSQL's errors as the ledger's kinds (`Locked`, `BadRow`, `Store`).
//! - [`testing`]: a fresh database per test; skipped, or failed in CI, without a server.

mod batch;
mod connection;
mod error;
mod raw;
mod rows;
mod schema;
mod store;
mod tables;
pub mod testing;
mod url;

use twice_runtime::ledger::{GroupSettings, Ledger, LedgerError};

pub use connection::round_trips;
pub use raw::RawCommits;
pub use schema::SCHEMA_NAME;
pub use store::{
    CONNECT_TIMEOUT_MS, IDLE_IN_TRANSACTION_TIMEOUT_MS, KEEPALIVE_IDLE_MS, KEEPALIVE_INTERVAL_MS, KEEPALIVE_RETRIES,
    LOCK_TIMEOUT_MS, PostgresStore, STATEMENT_TIMEOUT_MS, TCP_USER_TIMEOUT_MS, TRANSACTION_ATTEMPTS_MAX,
    TRANSACTION_RETRY_MS,
};
pub use url::{
    DEFAULT_PORT, DEFAULT_SCHEMA, PASSWORD_VARIABLE, PostgresUrl, SCHEMA_CHARS_MAX, URL_CHARS_MAX, UrlError,
};

/// A ledger in PostgreSQL at `url`, its tables created if missing (as [`Ledger::open`]
/// creates a file).
pub fn open(url: &PostgresUrl) -> Result<Ledger, LedgerError> {
    Ok(Ledger::on_external(Box::new(PostgresStore::open(url)?)))
}

/// Removes the ledger at `url` (its schema); see [`PostgresStore::remove`].
pub fn remove_ledger(url: &PostgresUrl) -> Result<(), LedgerError> {
    PostgresStore::remove(url)
}

/// A ledger in PostgreSQL at `url` that must already exist (as [`Ledger::open_existing`]).
pub fn open_existing(url: &PostgresUrl) -> Result<Ledger, LedgerError> {
    Ok(Ledger::on_external(Box::new(PostgresStore::open_existing(url)?)))
}

/// A ledger in PostgreSQL at `url` (created as [`open`] creates it) whose writes go through a
/// commit group, as `Ledger::open_grouped` for a file: every handle made from it with
/// `connect_again` (one per run of this process) joins the group, and concurrent writes share
/// one transaction and one durable commit, each answered only once committed. Reads go to a
/// connection of each handle's own. A batch that loses a serialization conflict runs again
/// after this store's own pause (`settings.pause_before_rerun` is set to it).
pub fn open_grouped(url: &PostgresUrl, settings: GroupSettings) -> Result<Ledger, LedgerError> {
    let writes = PostgresStore::open(url)?;
    let reads = PostgresStore::open_existing(url)?;
    let settings = settings.with_pause_before_rerun(store::retry_pause);
    Ledger::on_group(Box::new(batch::PostgresBatch::new(writes)), Box::new(reads), settings)
}
