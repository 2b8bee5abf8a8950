//! [`Error`]: the one error type of the crate's driving API, with a typed variant per source.
//! Each module keeps its own precise error (a function that can only fail one way says so in
//! its signature); `Error` gathers them for code that drives a whole run and wants one `?`.
//!
//! ```
//! use twice_runtime::Error;
//! use twice_runtime::worker::{SetupError, Worker, WorkerSetup};
//!
//! fn start() -> Result<Worker, Error> {
//!     Ok(Worker::new(WorkerSetup::new("", "run-1", Vec::new()))?)
//! }
//! let error = start().unwrap_err();
//! assert!(matches!(error, Error::Setup(SetupError::Name { what: "worker id", .. })));
//! assert_eq!(error.to_string(), "the worker id is empty");
//! ```

use crate::key::KeyError;
use crate::ledger::{LedgerError, SettleError};
use crate::operator::OperatorError;
use crate::worker::{InputError, SetupError};

/// Everything that can go wrong driving a run, by where it came from: the underlying error is
/// the variant's field, shown as it is (its own `source()` chain is kept).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The worker's setup was refused: nothing ran.
    #[error(transparent)]
    Setup(#[from] SetupError),
    /// The driver fed the machine an input it does not wait for: nothing was decided on it.
    #[error(transparent)]
    Input(#[from] InputError),
    /// The ledger failed (its store's own error behind `source()`).
    #[error(transparent)]
    Ledger(#[from] LedgerError),
    /// A settlement was refused (stale, settled already, not found).
    #[error(transparent)]
    Settle(#[from] SettleError),
    /// An operator's move was refused or failed.
    #[error(transparent)]
    Operator(#[from] OperatorError),
    /// A text or a pair of parts is not an idempotency key.
    #[error(transparent)]
    Key(#[from] KeyError),
    /// The machine waits for an input no step of the driver brings (a late answer logged,
    /// and nothing else to wait for): a driver that cannot go on.
    #[error("the worker stopped after `{phase}` with nothing to wait for")]
    Stalled {
        /// The phase it stopped after.
        phase: crate::worker::Phase,
    },
}
