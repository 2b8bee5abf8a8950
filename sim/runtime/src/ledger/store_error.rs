//! [`StoreError`]: a store's own failure, opaque. The ledger's errors carry it rather than
//! SQLite's (or any client library's) error type, so which version of which client the crate
//! uses is not part of its API; the original error stays reachable through `source()`.

use std::error::Error as StdError;

/// SQLite's extended result codes the memory store answers with where SQLite would refuse the
/// same write, so both stores report a refusal alike. Fixed numbers of SQLite's C interface.
pub(crate) mod code {
    /// `SQLITE_ERROR`: a generic error (a transaction begun inside another).
    pub(crate) const ERROR: i32 = 1;
    /// `SQLITE_CONSTRAINT_CHECK`: a CHECK constraint failed.
    pub(crate) const CONSTRAINT_CHECK: i32 = 275;
    /// `SQLITE_CONSTRAINT_PRIMARYKEY`: a second row under one primary key.
    pub(crate) const CONSTRAINT_PRIMARYKEY: i32 = 1555;
}

/// An extended result code's low byte is its primary code (SQLite's C interface).
const PRIMARY_CODE_MASK: i32 = 0xff;

/// A store's failure that is none of the ledger's named ones ([`super::LedgerError::Failed`]):
/// the store's message, SQLite's result code where the store speaks SQLite's, and the
/// store's own error behind [`std::error::Error::source`].
///
/// ```
/// use std::error::Error as _;
/// use twice_runtime::ledger::StoreError;
///
/// let io = std::io::Error::other("disk full");
/// let error = StoreError::with_source("writing the record", io);
/// assert_eq!(error.to_string(), "writing the record");
/// assert_eq!(error.source().map(ToString::to_string).as_deref(), Some("disk full"));
/// assert_eq!(error.sqlite_code(), None);
/// ```
#[derive(Debug)]
pub struct StoreError {
    message: String,
    sqlite_code: Option<i32>,
    source: Option<Box<dyn StdError + Send + Sync + 'static>>,
}

impl StoreError {
    /// A failure described by `message` alone.
    pub fn new(message: impl Into<String>) -> StoreError {
        StoreError {
            message: message.into(),
            sqlite_code: None,
            source: None,
        }
    }

    /// A failure described by `message`, caused by the store's own error `source`.
    pub fn with_source(message: impl Into<String>, source: impl StdError + Send + Sync + 'static) -> StoreError {
        StoreError {
            message: message.into(),
            sqlite_code: None,
            source: Some(Box::new(source)),
        }
    }

    /// The store's words.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// SQLite's primary result code (`SQLITE_CONSTRAINT` is 19, `SQLITE_ERROR` 1, …) when the
    /// store is SQLite, or the memory store refusing what SQLite would refuse; `None` for other
    /// stores' failures. The primary code, not the extended one, so the answer does not depend
    /// on whether a connection asked SQLite for extended codes.
    pub fn sqlite_code(&self) -> Option<i32> {
        self.sqlite_code
    }

    /// What SQLite would answer: `code` and its message (the memory store's refusals).
    pub(crate) fn like_sqlite(code: i32, message: &str) -> StoreError {
        StoreError {
            message: message.to_owned(),
            sqlite_code: Some(code & PRIMARY_CODE_MASK),
            source: None,
        }
    }

    /// SQLite's own error, its words and code kept, the error itself behind `source()`.
    #[cfg(feature = "sqlite")]
    pub(crate) fn sqlite(error: rusqlite::Error) -> StoreError {
        StoreError {
            message: error.to_string(),
            sqlite_code: error
                .sqlite_error()
                .map(|failure| failure.extended_code & PRIMARY_CODE_MASK),
            source: Some(Box::new(error)),
        }
    }
}

impl std::fmt::Display for StoreError {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str(&self.message)
    }
}

impl StdError for StoreError {
    fn source(&self) -> Option<&(dyn StdError + 'static)> {
        self.source.as_deref().map(|source| source as &(dyn StdError + 'static))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(feature = "sqlite")]
    #[test]
    fn sqlites_error_keeps_its_words_and_code_and_is_the_source() {
        let connection = rusqlite::Connection::open_in_memory().expect("a memory database");
        let refused = connection
            .execute_batch("INSERT INTO no_such_table VALUES (1)")
            .expect_err("no such table");
        let words = refused.to_string();
        let error = StoreError::sqlite(refused);
        assert_eq!(error.to_string(), words);
        assert!(words.contains("no_such_table"), "{words}");
        assert_eq!(error.sqlite_code(), Some(code::ERROR));
        let source = error.source().expect("SQLite's error is the source");
        assert!(source.downcast_ref::<rusqlite::Error>().is_some(), "{source:?}");
    }

    #[test]
    fn the_memory_stores_refusal_reads_as_sqlites_primary_code() {
        let error = StoreError::like_sqlite(code::CONSTRAINT_PRIMARYKEY, "UNIQUE constraint failed");
        // SQLITE_CONSTRAINT: the primary code of every constraint failure.
        assert_eq!(error.sqlite_code(), Some(19));
        assert_eq!(error.message(), "UNIQUE constraint failed");
        assert!(error.source().is_none());
        assert_eq!(StoreError::new("gone").sqlite_code(), None);
    }
}
