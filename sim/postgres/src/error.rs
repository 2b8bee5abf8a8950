//! PostgreSQL's errors in the ledger's own kinds, so every store answers alike: a lock or
//! serialization wait that ran out is [`LedgerError::Locked`] (as SQLite's busy timeout is),
//! a row this build cannot read is [`LedgerError::BadRow`], anything else
//! [`LedgerError::Store`] with the server's words. None of them carries the password: the
//! location is always the redacted URL, and the client's errors never include it.

use postgres::error::SqlState;
use twice_runtime::ledger::LedgerError;

use crate::connection::ConnectionError;

/// What the store does about a failed statement.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Failure {
    /// Another transaction got there first (a serialization failure, a deadlock, a key it
    /// inserted meanwhile): the whole transaction runs again and reads what that one wrote.
    Retry,
    /// A lock was not granted within `lock_timeout`.
    Locked,
    Other,
}

pub(crate) fn failure_of(error: &postgres::Error) -> Failure {
    match error.code() {
        Some(code)
            if *code == SqlState::T_R_SERIALIZATION_FAILURE
                || *code == SqlState::T_R_DEADLOCK_DETECTED
                // Two serializable transactions inserting one new key: PostgreSQL reports the
                // loser as a unique violation when it cannot tell it was a serialization
                // conflict. Run again, it reads the winner's row.
                || *code == SqlState::UNIQUE_VIOLATION =>
        {
            Failure::Retry
        }
        Some(code) if *code == SqlState::LOCK_NOT_AVAILABLE => Failure::Locked,
        _ => Failure::Other,
    }
}

/// The server's words for an error (code, message, detail), or the client's for a lost
/// connection.
pub(crate) fn detail_of(error: &postgres::Error) -> String {
    match error.as_db_error() {
        Some(database) => {
            let mut text = format!(
                "{} {}: {}",
                database.severity(),
                database.code().code(),
                database.message()
            );
            if let Some(detail) = database.detail() {
                text.push_str(&format!(" ({detail})"));
            }
            text
        }
        None if error.is_closed() => format!("the connection to the server is closed ({error})"),
        None => error.to_string(),
    }
}

/// A statement's error as the ledger's.
pub(crate) fn classify(location: &str, context: &'static str, error: &postgres::Error) -> LedgerError {
    match failure_of(error) {
        Failure::Locked | Failure::Retry => LedgerError::Locked {
            location: location.to_owned(),
            context,
        },
        Failure::Other => LedgerError::Store {
            location: location.to_owned(),
            context,
            detail: detail_of(error),
        },
    }
}

/// A connection-level error as the ledger's.
pub(crate) fn classify_connection(location: &str, context: &'static str, error: &ConnectionError) -> LedgerError {
    match error {
        ConnectionError::Connect(error) => classify(location, context, error),
        other => LedgerError::Store {
            location: location.to_owned(),
            context,
            detail: other.to_string(),
        },
    }
}
