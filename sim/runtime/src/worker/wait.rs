//! Why a worker stops driving a run and waits for a person: the facts, typed. The sans-IO
//! machine makes no sentence of them; the application does (a simulation, a worker process
//! and an operator API each put it in their own words), as quinn-proto leaves its
//! events to the application. The executor writes the application's words into the run's
//! history, so it is handed them ([`super::Words::wait`]).

use crate::ids::{RunId, ToolName};
use crate::key::{IdempotencyKey, KeyError};
use crate::tool::ContractViolation;

/// Why a call could not be begun.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CallRefused {
    /// The call names a tool the worker was not given.
    UnknownTool(ToolName),
    /// The call cannot be given an idempotency key.
    BadKey(KeyError),
}

/// Why the run waits for a person: what the worker knew when it stopped.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WaitReason {
    /// The run's checkpoint cannot be read; starting over would run settled calls again
    /// under new keys.
    CheckpointUnreadable {
        /// The run.
        run_id: RunId,
        /// The checkpoint's version.
        version: u32,
        /// What the store said.
        detail: String,
    },
    /// The run's stored state cannot be used.
    StateUnusable {
        /// The run.
        run_id: RunId,
        /// What the store said.
        detail: String,
    },
    /// A declared tool failed the contract check: the run was refused before it started.
    ContractRefused {
        /// The run.
        run_id: RunId,
        /// What the check found.
        violation: ContractViolation,
    },
    /// The run is dead-lettered: only an operator's resume drives it again.
    DeadLettered {
        /// The run.
        run_id: RunId,
        /// Why it was dead-lettered, as its checkpoint says.
        reason: String,
    },
    /// The checkpoint awaits a call's settlement but holds no pending call to look at.
    NoPendingCall {
        /// The key it awaits.
        awaited: String,
    },
    /// The checkpoint's pending call cannot be begun.
    PendingCallRefused(CallRefused),
    /// The checkpoint awaits one key, and its pending call has another.
    KeyMismatch {
        /// The key it awaits.
        awaited: String,
        /// The key its pending call has.
        found: IdempotencyKey,
    },
    /// The model's call cannot be begun (it cannot be given a key).
    ModelCallRefused(CallRefused),
    /// The run would end while a call it reserved after its last checkpoint is unknown: a
    /// worker crashed after reserving it (maybe after sending it), and the model asked again
    /// decided to end the run instead of making it. Nobody would meet that key again; a
    /// person settles the call (`started`: [`crate::operator::ResolveRequest`] with
    /// `acknowledge_in_flight`), and the next start ends the run as the model decides.
    AbandonedCall {
        /// The run.
        run_id: RunId,
        /// The call left unknown.
        key: IdempotencyKey,
        /// Its status.
        status: crate::rules::Status,
    },
    /// The model decided as often as the setup allows one start of the run
    /// ([`super::WorkerSetup::decisions_max`]) and was about to go on: a model repeating a call,
    /// or never ending the run. Its last decision was not taken; the run stays as last saved.
    DecisionLimit {
        /// The run.
        run_id: RunId,
        /// The limit it reached.
        decisions: u32,
    },
}
