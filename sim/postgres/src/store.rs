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

use postgres::Row;
use twice_runtime::key::IdempotencyKey;
use twice_runtime::ledger::{
    BUSY_TIMEOUT_MS, Checkpoint, CheckpointRow, ExecutionRecord, ExternalStore, HistoryEntry, HistoryLine, LedgerError,
    RecordFilter, RecordWrite, RunEvent, RunHistoryEntry, RunHistoryLine, StoredHistoryLine, Tables,
};
use twice_runtime::rules::Status;
use twice_runtime::tool::SideEffect;

use crate::connection::{Connection, Session};
use crate::error::{Failure, classify, classify_connection, failure_of};
use crate::schema;
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
/// The longest pause between two runs of a transaction (it grows from 1 ms).
const RETRY_PAUSE_MS_MAX: u64 = 20;

/// The client's settings for `url`: its schema first on the search path, the timeouts
/// above, durable commits, no TLS (see `url.rs`).
fn client_config(url: &PostgresUrl) -> postgres::Config {
    let mut config = postgres::Config::new();
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
        .options(&format!(
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
    pub(crate) fn tables(&self, context: &'static str) -> PostgresTables<'_> {
        PostgresTables {
            connection: &self.connection,
            location: &self.location,
            context,
            conflicted: false,
        }
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

    /// A read outside any transaction.
    fn read<T: Send + 'static>(
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
            self.frame("BEGIN ISOLATION LEVEL SERIALIZABLE")?
                .map_err(|error| classify(&self.location, context, &error))?;
            let mut tables = PostgresTables {
                connection: &self.connection,
                location: &self.location,
                context,
                conflicted: false,
            };
            let outcome = body(&mut tables);
            // A statement lost to another transaction: whatever the body answered, it
            // answered from a snapshot that lost, so it is run again.
            if !tables.conflicted {
                match outcome {
                    Ok(true) => match self.frame("COMMIT")? {
                        Ok(()) => return Ok(()),
                        Err(error) if failure_of(&error) == Failure::Retry => {}
                        // A commit whose answer was lost may or may not have happened: the
                        // caller stops, and whoever comes next reads what the ledger holds.
                        Err(error) => return Err(classify(&self.location, context, &error)),
                    },
                    Ok(false) => {
                        self.frame("ROLLBACK")?
                            .map_err(|error| classify(&self.location, context, &error))?;
                        return Ok(());
                    }
                    Err(error) => {
                        let _ = self.frame("ROLLBACK");
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

// ----- one transaction's rows -----

/// The rows one transaction reads and writes: each call one prepared statement, run on the
/// connection's thread inside the transaction [`PostgresStore::transaction`] began.
pub(crate) struct PostgresTables<'a> {
    connection: &'a Connection,
    location: &'a str,
    context: &'static str,
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
                    &record.tenant,
                    &record.run_id,
                    &record.tool_call_id,
                    &record.tool,
                    &record.side_effect.name(),
                    &record.arguments,
                    &record.status.name(),
                    &i64::from(record.attempts),
                    &record.result,
                    &record.owner,
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

// ----- statements -----

macro_rules! record_columns {
    () => {
        "idempotency_key, tenant, run_id, tool_call_id, tool, side_effect, arguments, status, attempts, result, \
         owner, created_at_ms, updated_at_ms, lease_expires_at_ms"
    };
}

/// The listing's order and cursor: a range of one index (see `schema.rs`), as in SQLite.
macro_rules! listing_order {
    () => {
        "(updated_at_ms, idempotency_key) > ($1, $2) ORDER BY updated_at_ms, idempotency_key LIMIT $3"
    };
}

const SELECT_RECORD: &str = concat!(
    "SELECT ",
    record_columns!(),
    " FROM tool_executions WHERE idempotency_key = $1"
);
const LIST_BY_TENANT_STATUS: &str = concat!(
    "SELECT ",
    record_columns!(),
    " FROM tool_executions WHERE tenant = $4 AND status = $5 AND ",
    listing_order!()
);
const LIST_BY_TENANT: &str = concat!(
    "SELECT ",
    record_columns!(),
    " FROM tool_executions WHERE tenant = $4 AND ",
    listing_order!()
);
const LIST_BY_STATUS: &str = concat!(
    "SELECT ",
    record_columns!(),
    " FROM tool_executions WHERE status = $4 AND ",
    listing_order!()
);
const LIST_ALL: &str = concat!(
    "SELECT ",
    record_columns!(),
    " FROM tool_executions WHERE ",
    listing_order!()
);
const ALL_RECORDS: &str = concat!(
    "SELECT ",
    record_columns!(),
    " FROM tool_executions ORDER BY created_at_ms, idempotency_key"
);
const INSERT_RECORD: &str = concat!(
    "INSERT INTO tool_executions (",
    record_columns!(),
    ") VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)"
);
/// SQLite's `INSERT OR REPLACE` (the naive runtime's upsert): whatever was there is overwritten.
const REPLACE_RECORD: &str = concat!(
    "INSERT INTO tool_executions (",
    record_columns!(),
    ") VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14) \
     ON CONFLICT (idempotency_key) DO UPDATE SET tenant = EXCLUDED.tenant, run_id = EXCLUDED.run_id, \
     tool_call_id = EXCLUDED.tool_call_id, tool = EXCLUDED.tool, side_effect = EXCLUDED.side_effect, \
     arguments = EXCLUDED.arguments, status = EXCLUDED.status, attempts = EXCLUDED.attempts, \
     result = EXCLUDED.result, owner = EXCLUDED.owner, created_at_ms = EXCLUDED.created_at_ms, \
     updated_at_ms = EXCLUDED.updated_at_ms, lease_expires_at_ms = EXCLUDED.lease_expires_at_ms"
);
const UPDATE_RECORD: &str = "UPDATE tool_executions SET tenant = $2, run_id = $3, tool_call_id = $4, tool = $5, \
     side_effect = $6, arguments = $7, status = $8, attempts = $9, result = $10, owner = $11, created_at_ms = $12, \
     updated_at_ms = $13, lease_expires_at_ms = $14 WHERE idempotency_key = $1";
const INSERT_HISTORY: &str = "INSERT INTO tool_execution_history \
     (idempotency_key, at_ms, actor, event, from_status, to_status, reason, detail) \
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8)";
const HISTORY_ALL: &str = "SELECT id, idempotency_key, at_ms, actor, event, from_status, to_status, reason, \
     detail FROM tool_execution_history ORDER BY id";
const HISTORY_OF_KEY: &str = "SELECT id, idempotency_key, at_ms, actor, event, from_status, to_status, reason, \
     detail FROM tool_execution_history WHERE idempotency_key = $1 ORDER BY id";
const SELECT_CHECKPOINT_VERSION: &str = "SELECT version FROM run_checkpoints WHERE run_id = $1";
const SELECT_CHECKPOINT: &str =
    "SELECT run_id, version, status, state, saved_by, updated_at_ms FROM run_checkpoints WHERE run_id = $1";
const ALL_CHECKPOINTS: &str =
    "SELECT run_id, version, status, state, saved_by, updated_at_ms FROM run_checkpoints ORDER BY run_id";
const PUT_CHECKPOINT: &str = "INSERT INTO run_checkpoints (run_id, version, status, state, saved_by, updated_at_ms) \
     VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (run_id) DO UPDATE SET version = EXCLUDED.version, \
     status = EXCLUDED.status, state = EXCLUDED.state, saved_by = EXCLUDED.saved_by, \
     updated_at_ms = EXCLUDED.updated_at_ms";
const INSERT_RUN_HISTORY: &str =
    "INSERT INTO run_history (run_id, at_ms, actor, event, detail) VALUES ($1, $2, $3, $4, $5)";
const RUN_HISTORY_ALL: &str = "SELECT id, run_id, at_ms, actor, event, detail FROM run_history ORDER BY id";
const RUN_HISTORY_OF_RUN: &str =
    "SELECT id, run_id, at_ms, actor, event, detail FROM run_history WHERE run_id = $1 ORDER BY id";

// ----- rows -----

/// A time as stored (signed 64 bits), as the SQLite store stores it: past `i64::MAX` ms it
/// is the largest there is rather than wrapped.
fn stored_ms(ms: u64) -> i64 {
    i64::try_from(ms).unwrap_or(i64::MAX)
}

/// A time read back; a negative one (written by something else) reads as 0 rather than wrapping.
fn read_ms(ms: i64) -> u64 {
    u64::try_from(ms).unwrap_or(0)
}

/// A record as the server gives it, before its text fields are checked.
struct RawRecord {
    key: String,
    tenant: String,
    run_id: String,
    tool_call_id: String,
    tool: String,
    side_effect: String,
    arguments: String,
    status: String,
    attempts: i64,
    result: Option<String>,
    owner: String,
    created_at_ms: i64,
    updated_at_ms: i64,
    lease_expires_at_ms: Option<i64>,
}

impl RawRecord {
    fn from_row(row: &Row) -> Result<RawRecord, postgres::Error> {
        Ok(RawRecord {
            key: row.try_get(0)?,
            tenant: row.try_get(1)?,
            run_id: row.try_get(2)?,
            tool_call_id: row.try_get(3)?,
            tool: row.try_get(4)?,
            side_effect: row.try_get(5)?,
            arguments: row.try_get(6)?,
            status: row.try_get(7)?,
            attempts: row.try_get(8)?,
            result: row.try_get(9)?,
            owner: row.try_get(10)?,
            created_at_ms: row.try_get(11)?,
            updated_at_ms: row.try_get(12)?,
            lease_expires_at_ms: row.try_get(13)?,
        })
    }

    fn into_record(self, location: &str) -> Result<ExecutionRecord, LedgerError> {
        let bad = |detail: String| LedgerError::BadRow {
            location: location.to_owned(),
            key: self.key.clone(),
            detail,
        };
        Ok(ExecutionRecord {
            key: IdempotencyKey::parse(&self.key).map_err(bad)?,
            status: Status::parse(&self.status).ok_or_else(|| bad(format!("status `{}`", self.status)))?,
            side_effect: SideEffect::parse(&self.side_effect)
                .ok_or_else(|| bad(format!("side effect `{}`", self.side_effect)))?,
            attempts: u32::try_from(self.attempts).map_err(|_| bad(format!("attempts {}", self.attempts)))?,
            tenant: self.tenant,
            run_id: self.run_id,
            tool_call_id: self.tool_call_id,
            tool: self.tool,
            arguments: self.arguments,
            result: self.result,
            owner: self.owner,
            created_at_ms: read_ms(self.created_at_ms),
            updated_at_ms: read_ms(self.updated_at_ms),
            lease_expires_at_ms: self.lease_expires_at_ms.map(read_ms),
        })
    }
}

/// A history row as the server gives it; checked by the runtime's one rule for every store.
fn history_line(row: &Row) -> Result<StoredHistoryLine, postgres::Error> {
    Ok(StoredHistoryLine {
        id: row.try_get(0)?,
        key: row.try_get(1)?,
        at_ms: row.try_get(2)?,
        actor: row.try_get(3)?,
        event: row.try_get(4)?,
        from_status: row.try_get(5)?,
        to_status: row.try_get(6)?,
        reason: row.try_get(7)?,
        detail: row.try_get(8)?,
    })
}

struct RawRunHistory {
    id: i64,
    run_id: String,
    at_ms: i64,
    actor: String,
    event: String,
    detail: Option<String>,
}

impl RawRunHistory {
    fn from_row(row: &Row) -> Result<RawRunHistory, postgres::Error> {
        Ok(RawRunHistory {
            id: row.try_get(0)?,
            run_id: row.try_get(1)?,
            at_ms: row.try_get(2)?,
            actor: row.try_get(3)?,
            event: row.try_get(4)?,
            detail: row.try_get(5)?,
        })
    }

    fn into_entry(self, location: &str) -> Result<RunHistoryEntry, LedgerError> {
        Ok(RunHistoryEntry {
            id: read_ms(self.id),
            event: RunEvent::parse(&self.event).ok_or_else(|| LedgerError::BadRow {
                location: location.to_owned(),
                key: format!("run {}", self.run_id),
                detail: format!("run history event `{}`", self.event),
            })?,
            run_id: self.run_id,
            at_ms: read_ms(self.at_ms),
            actor: self.actor,
            detail: self.detail,
        })
    }
}

struct RawCheckpoint {
    run_id: String,
    version: i64,
    status: String,
    state: String,
    saved_by: String,
    updated_at_ms: i64,
}

impl RawCheckpoint {
    fn from_row(row: &Row) -> Result<RawCheckpoint, postgres::Error> {
        Ok(RawCheckpoint {
            run_id: row.try_get(0)?,
            version: row.try_get(1)?,
            status: row.try_get(2)?,
            state: row.try_get(3)?,
            saved_by: row.try_get(4)?,
            updated_at_ms: row.try_get(5)?,
        })
    }

    fn into_checkpoint(self, location: &str) -> Result<Checkpoint, LedgerError> {
        Ok(Checkpoint {
            version: u32::try_from(self.version).map_err(|_| LedgerError::BadRow {
                location: location.to_owned(),
                key: format!("run {}", self.run_id),
                detail: format!("checkpoint version {}", self.version),
            })?,
            run_id: self.run_id,
            status: self.status,
            state: self.state,
            saved_by: self.saved_by,
            updated_at_ms: read_ms(self.updated_at_ms),
        })
    }
}
