//! PostgreSQL's own single commits, for the benchmark: one single-row `INSERT` per commit,
//! on a connection made exactly as the ledger's (the same client settings, `synchronous_commit
//! = on`, a server with `fsync = on`, the same connection thread). What a durable write costs on
//! this server with nothing of the ledger around it: the ceiling a ledger cycle (two commits)
//! and a commit group are measured against, as raw SQLite inserts are for the file ledger.

use twice_runtime::ledger::LedgerError;

use crate::store::PostgresStore;
use crate::url::PostgresUrl;

/// The table the raw commits go to, beside the ledger's tables in the URL's schema (so that
/// removing the ledger, `remove_ledger`, removes it too).
const CREATE_TABLE: &str = "CREATE TABLE IF NOT EXISTS raw_commits (key TEXT PRIMARY KEY, value TEXT NOT NULL)";
const INSERT: &str = "INSERT INTO raw_commits (key, value) VALUES ($1, $2)";

/// A connection that commits one row per statement.
#[derive(Debug)]
pub struct RawCommits {
    store: PostgresStore,
}

impl RawCommits {
    /// Connects to `url` (creating the ledger's schema there, as [`crate::open`] does, and the
    /// raw table beside it).
    pub fn open(url: &PostgresUrl) -> Result<RawCommits, LedgerError> {
        let store = PostgresStore::open(url)?;
        store.read("creating the raw commits' table", |session| {
            session.client().batch_execute(CREATE_TABLE)
        })?;
        Ok(RawCommits { store })
    }

    /// Inserts one row in a transaction of its own (autocommit): answered once the commit
    /// is durable. A key inserted before is refused with the server's unique violation.
    pub fn insert(&self, key: &str, value: &str) -> Result<(), LedgerError> {
        let (key, value) = (key.to_owned(), value.to_owned());
        self.store.read("inserting a raw commit", move |session| {
            let statement = session.statement(INSERT)?;
            session.client().execute(&statement, &[&key, &value]).map(|_| ())
        })
    }
}
