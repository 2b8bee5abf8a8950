//! What a guard did when it made a difference: the facts, typed. The machine makes no
//! sentence of them; the application does, in its own words, as with [`super::WaitReason`].

use crate::guards::Guard;
use crate::ids::{RunId, ToolName, WorkerId};
use crate::rules::Status;
use crate::tool::ContractViolation;

/// What a guard did when it made a difference: typed, so code and tests match on it, and
/// carrying every fact a sentence about it needs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Held {
    /// `tool_contract`: a tool failed the contract check, so the run was refused before it
    /// started; nothing was sent.
    ContractRefused {
        /// The tool that failed the check.
        tool: ToolName,
        /// What the check found.
        violation: ContractViolation,
    },
    /// `ledger`: the call was `completed`; its recorded result was returned.
    ReturnedRecordedResult,
    /// `ledger`: the call was unknown (`started`/`indeterminate`); it was not run again.
    ReplayNotRun {
        /// The record's status.
        status: Status,
        /// The run the call belongs to, when not this one.
        other_run: Option<RunId>,
    },
    /// `ledger`: the key belongs to other arguments; the call was refused, not served the other result.
    ArgumentsRefused {
        /// The arguments the key's record holds (canonical JSON).
        recorded_arguments: String,
    },
    /// `ledger`: the send fence refused: the record was no longer this worker's `started` call.
    SendRefused {
        /// Its status.
        status: Option<Status>,
        /// The worker that owns the call.
        owner: Option<WorkerId>,
    },
    /// `key_per_call`: a reworded replay kept its key, so the ledger recognised it.
    RewordedReplayRecognised,
    /// `atomic_reservation`: another worker reserved the call first; only one calls the tool.
    RacingReservationLost {
        /// The worker that reserved it first.
        winner: WorkerId,
    },
    /// `no_lease_expiry`: a `started` call past its lease was not reclaimed.
    LeaseNotReclaimed {
        /// How long it has been `started`, in ms.
        started_for_ms: u64,
        /// The lease a naive runtime would have put on it, in ms.
        lease_ms: u64,
    },
    /// `key_downstream`: the other system recognised the key and answered with the first effect.
    FirstAnswerRepeated {
        /// The first effect, as the other system named it.
        first: String,
    },
    /// `write_retry_rule`: a write's timeout was recorded `indeterminate`, not retried.
    WriteNotRetried,
    /// `refusal_is_failed`: a write the tool refused before sending was recorded `failed`,
    /// not swallowed as a success, so the run hears it did not happen.
    RefusalRecordedFailed,
    /// `pause_on_indeterminate`: the run paused instead of telling the model "failed".
    Paused,
    /// `reconcile_hook`: the hook found the effect; the run went on with the real result.
    Reconciled,
    /// `no_reflex_compensation`: an unknown or failed call was not compensated by the runtime.
    NotCompensated {
        /// A recovered run met the call unknown (otherwise: this worker's call failed or is
        /// unknown).
        recovered: bool,
    },
    /// `no_reflex_compensation`: the run failed, and the calls of it that took effect (these
    /// keys) were left standing for an operator to decide, not compensated by the runtime.
    FailedRunNotUndone {
        /// The calls left standing.
        keys: Vec<String>,
    },
    /// `checkpoint_version`: the reservation was fenced on the checkpoint version; stood down before sending.
    StoodDownBeforeSending {
        /// The checkpoint version this worker loaded.
        expected: u32,
        /// The version the ledger holds now.
        found: u32,
    },
    /// `checkpoint_version`: a stale save; stood down.
    StaleSave {
        /// The checkpoint version this worker loaded.
        expected: u32,
        /// The version the ledger holds now.
        found: u32,
    },
    /// `checkpoint_version`: a save relied on a failure another worker had already re-run; stood down.
    FailureTakenOver {
        /// The call whose failure the save relied on.
        key: String,
        /// The worker that re-ran it.
        owner: WorkerId,
        /// The record's status now.
        status: Status,
    },
    /// `key_retention`: a resend of a key older than the provider keeps keys was refused; the
    /// call was recorded `indeterminate` instead.
    ExpiredKeyNotResent {
        /// How long ago the key was reserved, in ms.
        key_age_ms: u64,
        /// How long the provider keeps keys, as the tool declares it.
        key_retention_ms: u64,
    },
    /// `key_retention`: the hook found nothing under a key older than the provider keeps keys:
    /// "expired", not "absent"; the call stays unknown.
    LookupExpired {
        /// How long ago the key was reserved, in ms.
        key_age_ms: u64,
        /// How long the provider keeps keys, as the tool declares it.
        key_retention_ms: u64,
    },
    /// `lookup_settle`: the hook found nothing sooner than the provider's settle time after the
    /// last send: not proof; it looks again after the rest of it.
    NotFoundTooSoon {
        /// How long ago the ledger last wrote the call, in ms.
        since_last_send_ms: u64,
        /// How long the provider's lookups may lag, as the tool declares it.
        lookup_settle_ms: u64,
        /// How long the worker waits before looking again, in ms.
        look_again_in_ms: u64,
    },
    /// `dead_letter`: the run's recoveries failed as often as declared; it stopped as
    /// `dead_lettered` until an operator resumes it.
    DeadLettered {
        /// How many recoveries had failed.
        failed_recoveries: u32,
        /// Why, as the run's checkpoint and history keep it.
        reason: String,
    },
}

/// A guard that made a difference: who it held for and what it did, typed (the application
/// words it).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GuardNote {
    /// The guard that held.
    pub guard: Guard,
    /// The worker it held for.
    pub worker_id: WorkerId,
    /// The run that worker drives.
    pub run_id: RunId,
    /// The call it held on, if it was about one.
    pub key: Option<String>,
    /// What it did, typed.
    pub held: Held,
}
