//! Which ledger a server serves: a SQLite file (whose identity the pool checks on every
//! request), or a ledger in another store, opened through a function its caller gives.
//!
//! The PostgreSQL store lives in a crate the game never links (`twice-ledger-postgres`); the
//! command line's `--ledger postgres://…` (`twice_drill::ledger_target`) hands the server an
//! opener for it, so this crate needs no database client of its own.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use twice_world::ledger::{Ledger, LedgerError};

/// Opens a connection to a ledger that must already exist; never creates one.
pub type OpenExisting = Arc<dyn Fn() -> Result<Ledger, LedgerError> + Send + Sync>;

/// The ledger a server serves.
#[derive(Clone)]
pub enum ServedLedger {
    /// A SQLite file.
    File(PathBuf),
    /// A ledger in another store.
    Store {
        /// For messages and logs; never holds a password.
        description: String,
        /// A new connection to it.
        open_existing: OpenExisting,
    },
}

impl ServedLedger {
    /// The served file (`None` for a ledger in another store).
    pub fn path(&self) -> Option<&Path> {
        match self {
            ServedLedger::File(path) => Some(path),
            ServedLedger::Store { .. } => None,
        }
    }

    /// A new connection to the served ledger, never creating one.
    pub fn open_existing(&self) -> Result<Ledger, LedgerError> {
        match self {
            ServedLedger::File(path) => Ledger::open_existing(path),
            ServedLedger::Store { open_existing, .. } => open_existing(),
        }
    }
}

impl fmt::Display for ServedLedger {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ServedLedger::File(path) => write!(formatter, "{}", path.display()),
            ServedLedger::Store { description, .. } => formatter.write_str(description),
        }
    }
}

impl fmt::Debug for ServedLedger {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ServedLedger::File(path) => write!(formatter, "ServedLedger::File({})", path.display()),
            ServedLedger::Store { description, .. } => write!(formatter, "ServedLedger::Store({description})"),
        }
    }
}
