//! The PostgreSQL store: [`ExternalStore`] for the ledger's facade, [`Tables`] for its one
//! decision logic.
//!
//! Every operation is one `SERIALIZABLE` transaction: the reads the decision needs, the
//! decision (in `twice_runtime`, the same pure functions the other stores run), the writes.
//! Serializable is what makes check-then-insert safe inside one transaction: two
//! reservers of one new key both read "no record", both decide to insert, and PostgreSQL
//! lets only one commit; the other fails with a serialization failure (or, when the
//! conflict shows up as the key's unique index, a unique violation), and the whole
//! transaction is run again — it then reads the winner's row and answers from it. The same
//! holds for the checkpoint version a save or a reservation is fenced on, and for the
//! status an operator's decision compares and sets. Runs again for at most
//! [`TRANSACTION_RETRY_MS`] (SQLite's busy timeout) and [`TRANSACTION_ATTEMPTS_MAX`] times;
//! then the caller gets `Locked`, as from SQLite.

use std::time::{Duration, Instant};

use twice_runtime::key::IdempotencyKey;
use twice_runtime::ledger::{
    BUSY_TIMEOUT_MS, Checkpoint, ExecutionRecord, ExternalStore, HistoryEntry, LedgerError, RecordFilter,
    RunHistoryEntry, Tables,
};
use twice_runtime::rules::Status;

use crate::connection::{Connection, Queued, Session};
use crate::error::{Failure, classify, classify_connection, failure_of};
use crate::rows::{
    ALL_CHECKPOINTS, ALL_RECORDS, HISTORY_ALL, HISTORY_OF_KEY, LIST_ALL, LIST_BY_STATUS, LIST_BY_TENANT,
    LIST_BY_TENANT_STATUS, RUN_HISTORY_ALL, RUN_HISTORY_OF_RUN, RawCheckpoint, RawRecord, RawRunHistory,
    SELECT_CHECKPOINT, SELECT_RECORD, history_line, stored_ms,
};
use crate::schema;
use crate::tables::{Ended, PostgresTables};
use crate::url::{PASSWORD_VARIABLE, PostgresUrl};

/// How long connecting may take before the ledger says the server cannot be reached.
pub const CONNECT_TIMEOUT_MS: u64 = 5_000;
/// How long data sent to the server may stay unacknowledged before the connection is given
/// up (`TCP_USER_TIMEOUT`): a network cut longer than this ends the connection, and the
/// process stops rather than wait for a server it cannot reach.
pub const TCP_USER_TIMEOUT_MS: u64 = 5_000;
/// An idle connection is probed after this long, then every [`KEEPALIVE_INTERVAL_MS`], so a
/// dead peer is noticed while waiting for an answer too.
pub const KEEPALIVE_IDLE_MS: u64 = 1_000;
pub const KEEPALIVE_INTERVAL_MS: u64 = 1_000;
pub const KEEPALIVE_RETRIES: u32 = 3;
/// How long a statement waits for a row lock another transaction holds (`lock_timeout`):
/// the same wait as SQLite's busy timeout.
pub const LOCK_TIMEOUT_MS: u64 = BUSY_TIMEOUT_MS;
/// The longest one statement may run (`statement_timeout`).
pub const STATEMENT_TIMEOUT_MS: u64 = 30_000;
/// How long the server keeps a transaction whose client went quiet in the middle of it
/// (`idle_in_transaction_session_timeout`): a process cut off or paused mid-transaction
/// holds its row locks no longer than this.
pub const IDLE_IN_TRANSACTION_TIMEOUT_MS: u64 = 10_000;
/// How long a transaction is run again after serialization failures before `Locked`.
pub const TRANSACTION_RETRY_MS: u64 = BUSY_TIMEOUT_MS;
/// The most times one transaction is run.
pub const TRANSACTION_ATTEMPTS_MAX: u32 = 64;
/// How every ledger transaction begins: serializable is what makes check-then-insert safe.
pub(crate) const BEGIN_SERIALIZABLE: &str = "BEGIN ISOLATION LEVEL SERIALIZABLE";
/// The longest pause between two runs of a transaction (it grows from 1 ms).
const RETRY_PAUSE_MS_MAX: u64 = 20;

/// The client's settings for `url`: its schema first on the search path, the timeouts
/// above, durable commits, no TLS (see `url.rs`).
fn client_config(url: &PostgresUrl) -> tokio_postgres::Config {
    let mut config = tokio_postgres::Config::new();
    config
        .host(url.host())
        .port(url.port())
        .user(url.user())
        .dbname(url.database())
        .application_name("twice-ledger")
        .ssl_mode(postgres::config::SslMode::Disable)
        .connect_timeout(Duration::from_millis(CONNECT_TIMEOUT_MS))
        .tcp_user_timeout(Duration::from_millis(TCP_USER_TIMEOUT_MS))
        .keepalives(true)
        .keepalives_idle(Duration::from_millis(KEEPALIVE_IDLE_MS))
        .keepalives_interval(Duration::from_millis(KEEPALIVE_INTERVAL_MS))
        .keepalives_retries(KEEPALIVE_RETRIES)
        // The schema is a checked plain identifier; the rest are numbers.
        .options(format!(
            "-c search_path={} -c lock_timeout={LOCK_TIMEOUT_MS} -c statement_timeout={STATEMENT_TIMEOUT_MS} \
             -c idle_in_transaction_session_timeout={IDLE_IN_TRANSACTION_TIMEOUT_MS} -c synchronous_commit=on",
            url.schema()
        ));
    let password = url.password().map(str::to_owned).or_else(|| {
        std::env::var(PASSWORD_VARIABLE)
            .ok()
            .filter(|password| !password.is_empty())
    });
    if let Some(password) = password {
        config.password(password);
    }
    config
}

/// A connection to a ledger in PostgreSQL.
pub struct PostgresStore {
    url: PostgresUrl,
    location: String,
    connection: Connection,
}

impl std::fmt::Debug for PostgresStore {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("PostgresStore")
            .field("location", &self.location)
            .finish()
    }
}

impl PostgresStore {
    /// Connects, creating the ledger's tables (and the PostgreSQL schema) if they are missing.
    pub fn open(url: &PostgresUrl) -> Result<PostgresStore, LedgerError> {
        PostgresStore::connect(url, true)
    }

    /// Connects to a ledger that must already exist: never creates anything
    /// ([`LedgerError::Missing`] for no schema, [`LedgerError::NotALedger`] for an empty one).
    pub fn open_existing(url: &PostgresUrl) -> Result<PostgresStore, LedgerError> {
        PostgresStore::connect(url, false)
    }

    fn connect(url: &PostgresUrl, create: bool) -> Result<PostgresStore, LedgerError> {
        let location = url.redacted();
        let connection = Connection::open(client_config(url)).map_err(|error| schema::open_error(&location, &error))?;
        refuse_volatile_commits(&connection, &location)?;
        schema::ensure(&connection, &location, url.schema(), create)?;
        Ok(PostgresStore {
            url: url.clone(),
            location,
            connection,
        })
    }

    /// This transaction's rows, for a member of a commit group's batch (`batch.rs`).
    pub(crate) fn tables(&self, context: &'static str, opening: Vec<Queued>) -> PostgresTables<'_> {
        PostgresTables::new(&self.connection, &self.location, context, opening)
    }

    /// The URL this store connected to (its password is never shown).
    pub fn url(&self) -> &PostgresUrl {
        &self.url
    }

    /// Removes the ledger at `url`: its whole PostgreSQL schema, history and all. For the
    /// drill and the benchmark, which make a fresh schema each and remove it after. Refused
    /// for the `public` schema and for a schema that does not hold a Twice ledger.
    pub fn remove(url: &PostgresUrl) -> Result<(), LedgerError> {
        let location = url.redacted();
        if url.schema() == crate::url::DEFAULT_SCHEMA {
            return Err(LedgerError::Store {
                location,
                context: "removing a ledger",
                detail: "the public schema is never removed; only a ledger in a schema of its own is".into(),
            });
        }
        let store = PostgresStore::open_existing(url)?;
        // A checked plain identifier (see `url.rs`), quoted to stay exactly that name.
        let drop = format!("DROP SCHEMA \"{}\" CASCADE", url.schema());
        store.read("removing a ledger", move |session| {
            session.client().batch_execute(&drop)
        })
    }

    /// A read outside any transaction (or one autocommitted statement: `raw.rs`).
    pub(crate) fn read<T: Send + 'static>(
        &self,
        context: &'static str,
        work: impl FnOnce(&mut Session) -> Result<T, postgres::Error> + Send + 'static,
    ) -> Result<T, LedgerError> {
        self.connection
            .run(work)
            .map_err(|error| classify_connection(&self.location, context, &error))?
            .map_err(|error| classify(&self.location, context, &error))
    }

    /// One statement of the transaction's frame (`BEGIN`, `COMMIT`, `ROLLBACK`, savepoints).
    pub(crate) fn frame(&self, sql: &'static str) -> Result<Result<(), postgres::Error>, LedgerError> {
        self.connection
            .run(move |session| session.client().batch_execute(sql))
            .map_err(|error| classify_connection(&self.location, "running a transaction", &error))
    }
}

/// A commit that a crash could undo lets a recovered run call the tool again: refused, as
/// the SQLite store refuses a file that cannot be in WAL with `synchronous = FULL`.
/// (`synchronous_commit` is set on for every connection; `fsync` is the server's.)
fn refuse_volatile_commits(connection: &Connection, location: &str) -> Result<(), LedgerError> {
    let fsync = connection
        .run(|session| -> Result<String, postgres::Error> {
            Ok(session.client().query_one("SHOW fsync", &[])?.get::<_, String>(0))
        })
        .map_err(|error| schema::open_error(location, &error))?
        .map_err(|error| classify(location, "reading the server's settings", &error))?;
    if fsync != "on" {
        return Err(LedgerError::Open {
            location: location.to_owned(),
            detail: format!(
                "the server runs with fsync = {fsync}: a committed reservation could vanish in a crash and let a \
                 recovered run call the tool again; run the ledger on a server with fsync = on"
            ),
        });
    }
    Ok(())
}

/// A pause before running a transaction again: growing, and different per process and
/// attempt so that two contenders do not retry in step.
pub(crate) fn retry_pause(attempt: u32) {
    let ceiling_ms = (1_u64 << attempt.min(5)).min(RETRY_PAUSE_MS_MAX);
    let spread = u64::from(std::process::id()).wrapping_mul(2_654_435_761) ^ u64::from(attempt).wrapping_mul(40_503);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |elapsed| u64::from(elapsed.subsec_nanos()));
    let pause_us = (spread ^ nanos) % (ceiling_ms * 1_000 + 1);
    std::thread::sleep(Duration::from_micros(pause_us));
}

impl ExternalStore for PostgresStore {
    fn describe(&self) -> String {
        self.location.clone()
    }

    fn connect_again(&self) -> Result<Box<dyn ExternalStore>, LedgerError> {
        Ok(Box::new(PostgresStore::connect(&self.url, false)?))
    }

    fn transaction(
        &mut self,
        context: &'static str,
        body: &mut dyn FnMut(&mut dyn Tables) -> Result<bool, LedgerError>,
    ) -> Result<(), LedgerError> {
        let started = Instant::now();
        let mut attempt: u32 = 0;
        loop {
            attempt += 1;
            // `BEGIN` leaves with the first read (`tables.rs`): one round trip fewer.
            let mut tables = PostgresTables::new(
                &self.connection,
                &self.location,
                context,
                vec![Queued::frame(BEGIN_SERIALIZABLE)],
            );
            let outcome = body(&mut tables);
            // A statement lost to another transaction: whatever the body answered, it
            // answered from a snapshot that lost, so it is run again.
            if !tables.conflicted {
                match outcome {
                    // The queued writes and the COMMIT, sent together.
                    Ok(true) => match tables.end("COMMIT")? {
                        Ended::Done => return Ok(()),
                        Ended::Refused(error) if failure_of(&error) == Failure::Retry => {}
                        // A commit whose answer was lost may or may not have happened: the
                        // caller stops, and whoever comes next reads what the ledger holds.
                        Ended::Refused(error) => {
                            let _ = self.frame("ROLLBACK");
                            return Err(classify(&self.location, context, &error));
                        }
                    },
                    // Nothing sent yet: the transaction never began on the server, and its
                    // queued writes are dropped unsent.
                    Ok(false) if !tables.sent => return Ok(()),
                    Ok(false) => {
                        self.frame("ROLLBACK")?
                            .map_err(|error| classify(&self.location, context, &error))?;
                        return Ok(());
                    }
                    Err(error) => {
                        if tables.sent {
                            let _ = self.frame("ROLLBACK");
                        }
                        return Err(error);
                    }
                }
            }
            let _ = self.frame("ROLLBACK");
            if attempt >= TRANSACTION_ATTEMPTS_MAX || started.elapsed() >= Duration::from_millis(TRANSACTION_RETRY_MS) {
                return Err(LedgerError::Locked {
                    location: self.location.clone(),
                    context,
                });
            }
            retry_pause(attempt);
        }
    }

    fn record(&mut self, key: &IdempotencyKey) -> Result<Option<ExecutionRecord>, LedgerError> {
        let key_text = key.as_str().to_owned();
        let raw = self.read("reading a record", move |session| {
            let statement = session.statement(SELECT_RECORD)?;
            session
                .client()
                .query_opt(&statement, &[&key_text])?
                .map(|row| RawRecord::from_row(&row))
                .transpose()
        })?;
        raw.map(|raw| raw.into_record(&self.location)).transpose()
    }

    fn records(&mut self, filter: &RecordFilter<'_>) -> Result<Vec<ExecutionRecord>, LedgerError> {
        let (after_ms, after_key) = filter
            .after
            .map_or((-1_i64, String::new()), |(ms, key)| (stored_ms(ms), key.to_owned()));
        let limit = i64::from(filter.limit);
        let tenant = filter.tenant.map(str::to_owned);
        let status = filter.status.map(Status::name);
        let raws = self.read("listing records", move |session| {
            let rows = match (tenant, status) {
                (Some(tenant), Some(status)) => {
                    let statement = session.statement(LIST_BY_TENANT_STATUS)?;
                    session
                        .client()
                        .query(&statement, &[&after_ms, &after_key, &limit, &tenant, &status])?
                }
                (Some(tenant), None) => {
                    let statement = session.statement(LIST_BY_TENANT)?;
                    session
                        .client()
                        .query(&statement, &[&after_ms, &after_key, &limit, &tenant])?
                }
                (None, Some(status)) => {
                    let statement = session.statement(LIST_BY_STATUS)?;
                    session
                        .client()
                        .query(&statement, &[&after_ms, &after_key, &limit, &status])?
                }
                (None, None) => {
                    let statement = session.statement(LIST_ALL)?;
                    session.client().query(&statement, &[&after_ms, &after_key, &limit])?
                }
            };
            rows.iter().map(RawRecord::from_row).collect::<Result<Vec<_>, _>>()
        })?;
        raws.into_iter().map(|raw| raw.into_record(&self.location)).collect()
    }

    fn all_records(&mut self) -> Result<Vec<ExecutionRecord>, LedgerError> {
        let raws = self.read("listing records", |session| {
            let statement = session.statement(ALL_RECORDS)?;
            session
                .client()
                .query(&statement, &[])?
                .iter()
                .map(RawRecord::from_row)
                .collect::<Result<Vec<_>, _>>()
        })?;
        raws.into_iter().map(|raw| raw.into_record(&self.location)).collect()
    }

    fn history(&mut self, key: Option<&IdempotencyKey>) -> Result<Vec<HistoryEntry>, LedgerError> {
        let key_text = key.map(|key| key.as_str().to_owned());
        let raws = self.read("reading history", move |session| {
            let rows = match key_text {
                Some(key) => {
                    let statement = session.statement(HISTORY_OF_KEY)?;
                    session.client().query(&statement, &[&key])?
                }
                None => {
                    let statement = session.statement(HISTORY_ALL)?;
                    session.client().query(&statement, &[])?
                }
            };
            rows.iter().map(history_line).collect::<Result<Vec<_>, _>>()
        })?;
        raws.into_iter().map(|raw| raw.into_entry(&self.location)).collect()
    }

    fn checkpoint(&mut self, run_id: &str) -> Result<Option<Checkpoint>, LedgerError> {
        let run_id = run_id.to_owned();
        let raw = self.read("loading a checkpoint", move |session| {
            let statement = session.statement(SELECT_CHECKPOINT)?;
            session
                .client()
                .query_opt(&statement, &[&run_id])?
                .map(|row| RawCheckpoint::from_row(&row))
                .transpose()
        })?;
        raw.map(|raw| raw.into_checkpoint(&self.location)).transpose()
    }

    fn checkpoints(&mut self) -> Result<Vec<Checkpoint>, LedgerError> {
        let raws = self.read("listing checkpoints", |session| {
            let statement = session.statement(ALL_CHECKPOINTS)?;
            session
                .client()
                .query(&statement, &[])?
                .iter()
                .map(RawCheckpoint::from_row)
                .collect::<Result<Vec<_>, _>>()
        })?;
        raws.into_iter()
            .map(|raw| raw.into_checkpoint(&self.location))
            .collect()
    }

    fn run_history(&mut self, run_id: Option<&str>) -> Result<Vec<RunHistoryEntry>, LedgerError> {
        let run_id = run_id.map(str::to_owned);
        let raws = self.read("reading run history", move |session| {
            let rows = match run_id {
                Some(run_id) => {
                    let statement = session.statement(RUN_HISTORY_OF_RUN)?;
                    session.client().query(&statement, &[&run_id])?
                }
                None => {
                    let statement = session.statement(RUN_HISTORY_ALL)?;
                    session.client().query(&statement, &[])?
                }
            };
            rows.iter().map(RawRunHistory::from_row).collect::<Result<Vec<_>, _>>()
        })?;
        raws.into_iter().map(|raw| raw.into_entry(&self.location)).collect()
    }
}
