//! Where a worker is, as a console or a timeline shows it.

use serde::{Deserialize, Serialize};

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
