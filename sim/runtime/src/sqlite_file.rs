//! Opening a SQLite file the way every Twice database is opened (the ledger, the billing
//! server's store), and telling what kind of failure a SQLite error is.
//!
//! Each store keeps its own error type, so its messages name the store ("not a ledger",
//! "not a Twice billing database"); what they share — the open flags, the busy timeout,
//! WAL with full sync, reading the table names, sorting an error into a kind — lives here
//! once.

use std::path::Path;
use std::time::Duration;

use rusqlite::{Connection, ErrorCode, OpenFlags};

/// How long a connection waits for another's write lock before failing as locked.
pub use crate::ledger::BUSY_TIMEOUT_MS;

/// What kind of failure a SQLite error is, for an error that names the problem.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Failure {
    /// The file is not a SQLite database at all.
    NotADatabase,
    /// A SQLite database whose pages do not hold together.
    Corrupt,
    /// Another connection holds the lock (past the busy timeout).
    Locked,
    /// Anything else: the store reports it with its context and the SQLite error.
    Other,
}

/// Sorts `error` into a [`Failure`].
pub fn failure_of(error: &rusqlite::Error) -> Failure {
    match error.sqlite_error_code() {
        Some(ErrorCode::NotADatabase) => Failure::NotADatabase,
        Some(ErrorCode::DatabaseCorrupt) => Failure::Corrupt,
        Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked) => Failure::Locked,
        _ => Failure::Other,
    }
}

/// Opens `path` for reading and writing, creating it if `create` and it does not exist.
/// The connection is used by one thread at a time (`NO_MUTEX`), as every store here does.
///
/// # Errors
///
/// SQLite's error when the file cannot be opened (or created).
pub fn open(path: &Path, create: bool) -> rusqlite::Result<Connection> {
    let mut flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    if create {
        flags |= OpenFlags::SQLITE_OPEN_CREATE;
    }
    Connection::open_with_flags(path, flags)
}

/// Makes the connection wait up to [`BUSY_TIMEOUT_MS`] for another's lock.
///
/// # Errors
///
/// SQLite's error when the timeout cannot be set.
pub fn wait_when_busy(connection: &Connection) -> rusqlite::Result<()> {
    connection.busy_timeout(Duration::from_millis(BUSY_TIMEOUT_MS))
}

/// The names of the database's tables, in order. Reading them changes nothing, so a store
/// can identify a file before touching it.
///
/// # Errors
///
/// SQLite's error when the schema cannot be read (not a database, locked).
pub fn table_names(connection: &Connection) -> rusqlite::Result<Vec<String>> {
    let mut statement = connection.prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")?;
    let rows = statement.query_map([], |row| row.get::<_, String>(0))?;
    rows.collect()
}

/// Why a file could not be made durable.
#[derive(Debug)]
pub enum DurabilityError {
    /// A pragma failed; `context` says which step, for the store's message.
    Sqlite {
        /// What was being done.
        context: &'static str,
        /// SQLite's error.
        error: rusqlite::Error,
    },
    /// SQLite kept another journal mode (`mode`), so WAL could not be set.
    NotWal {
        /// The journal mode SQLite kept.
        mode: String,
    },
}

impl DurabilityError {
    /// The store's message for a journal mode that is not WAL.
    pub fn not_wal_detail(mode: &str) -> String {
        format!("journal mode is {mode}, WAL could not be set")
    }
}

/// Switches to WAL with full sync: a write a store answered as done (a credit billing
/// applied, a reservation the ledger granted) is on disk before the answer, and readers do
/// not block the writer. Changes the file's header, so identify a file first.
///
/// # Errors
///
/// [`DurabilityError::NotWal`] when SQLite keeps another journal mode; [`DurabilityError::Sqlite`]
/// when a pragma fails.
pub fn make_durable(connection: &Connection) -> Result<(), DurabilityError> {
    let mode = switch_to_wal(connection).map_err(|error| DurabilityError::Sqlite {
        context: "switching to WAL",
        error,
    })?;
    if !mode.eq_ignore_ascii_case("wal") {
        return Err(DurabilityError::NotWal { mode });
    }
    connection
        .execute_batch("PRAGMA synchronous = FULL;")
        .map_err(|error| DurabilityError::Sqlite {
            context: "setting durability",
            error,
        })
}

/// How long to pause between attempts to switch a new file to WAL while another
/// connection is switching it too.
const WAL_SWITCH_RETRY_PAUSE_MS: u64 = 2;

/// Sets `journal_mode = WAL` and returns the mode SQLite answered.
///
/// Switching needs the file to itself, and SQLite does not call the busy handler for it:
/// two connections that both read the new file in rollback mode and both ask to switch would
/// wait for each other forever, so the loser gets `SQLITE_BUSY` at once. This happens when
/// several processes open a new ledger at the same moment. The switch is idempotent, so it is
/// retried here — bounded by the same [`BUSY_TIMEOUT_MS`] as any other wait — and usually
/// finds that the winner already switched the file.
// The one wait in this crate: opening a file, not a decision, and bounded by a count of
// pauses rather than a clock, so nothing here reads the time.
#[allow(clippy::disallowed_methods)]
fn switch_to_wal(connection: &Connection) -> rusqlite::Result<String> {
    let mut pauses_left = BUSY_TIMEOUT_MS / WAL_SWITCH_RETRY_PAUSE_MS;
    loop {
        let current: String = connection.query_row("PRAGMA journal_mode", [], |row| row.get(0))?;
        if current.eq_ignore_ascii_case("wal") {
            return Ok(current);
        }
        match connection.query_row("PRAGMA journal_mode = WAL", [], |row| row.get(0)) {
            Err(error) if failure_of(&error) == Failure::Locked && pauses_left > 0 => {
                pauses_left -= 1;
                std::thread::sleep(Duration::from_millis(WAL_SWITCH_RETRY_PAUSE_MS));
            }
            answered => return answered,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_file_is_created_only_when_asked_and_made_durable() {
        let directory = tempfile::tempdir().unwrap();
        let path = directory.path().join("new.sqlite");
        let refused = open(&path, false).unwrap_err();
        assert_eq!(failure_of(&refused), Failure::Other, "{refused}");
        assert!(!path.exists(), "not created without being asked");
        let connection = open(&path, true).unwrap();
        wait_when_busy(&connection).unwrap();
        assert!(table_names(&connection).unwrap().is_empty());
        make_durable(&connection).unwrap();
        connection
            .execute_batch("CREATE TABLE b (x); CREATE TABLE a (x);")
            .unwrap();
        assert_eq!(table_names(&connection).unwrap(), ["a", "b"]);
        let mode: String = connection
            .query_row("PRAGMA journal_mode", [], |row| row.get(0))
            .unwrap();
        assert_eq!(mode, "wal");
    }

    #[test]
    fn a_file_that_is_not_a_database_is_told_apart() {
        let directory = tempfile::tempdir().unwrap();
        let path = directory.path().join("notes.sqlite");
        // Longer than a SQLite header, so SQLite reads it rather than taking it for an empty file.
        std::fs::write(&path, "these are notes. ".repeat(64)).unwrap();
        let connection = open(&path, false).unwrap();
        let error = table_names(&connection).unwrap_err();
        assert_eq!(failure_of(&error), Failure::NotADatabase, "{error}");
    }
}
