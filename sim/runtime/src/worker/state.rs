//! Where a worker is, as a console or a timeline shows it.

use serde::{Deserialize, Serialize};

use crate::run::RunStatus;

/// Where the worker is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WorkerState {
    /// Loading the checkpoint.
    Booting,
    /// Waiting for the model.
    Deciding,
    /// Reserving a call in the ledger.
    Reserving,
    /// A request is out.
    Calling,
    /// Recording an outcome.
    Recording,
    /// Asking the reconcile hook, or waiting to ask it again.
    Reconciling,
    /// Saving the checkpoint.
    Saving,
    /// Paused on an unknown call (`awaiting_reconciliation`).
    Parked,
    /// Another worker owns the run now.
    StoodDown,
    /// The run's stored state could not be used: nothing is driven until a person looks.
    WaitingForPerson,
    /// Done with the run.
    Exited,
}

/// How a run ended for the worker that exited it ([`super::Worker::exit`]): what
/// [`crate::execution::Ending::Exited`] carries, so a driver's caller knows without reading the
/// checkpoint.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Exit {
    /// The model decided the run was done, and this start saved it `completed`.
    Completed,
    /// This start saved the run `failed` (the model failed it, or the runtime did: an
    /// undeclared tool, a key a failed call holds…).
    Failed {
        /// Why, in the words saved with the run.
        reason: String,
    },
    /// This start stopped the run as `dead_lettered`: its recoveries kept failing, and it waits
    /// for an operator to resume it.
    DeadLettered {
        /// Why, in the words saved with the run.
        reason: String,
    },
    /// The run was already over when this start loaded it: nothing ran, nothing was sent. A
    /// per-order run id driven a second time lands here — a new piece of work needs a new run id.
    AlreadyOver(RunStatus),
}

impl Exit {
    /// Whether the run completed in this start.
    pub fn is_completed(&self) -> bool {
        matches!(self, Exit::Completed)
    }
}
