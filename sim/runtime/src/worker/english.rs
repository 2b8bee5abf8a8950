//! [`Words::ENGLISH`]: plain English for everything the runtime writes down for people, the
//! default of a [`super::WorkerSetup`]. An application with a voice of its own hands the
//! worker its own [`Words`].

use crate::tool::ContractViolation;

use super::{
    CallRefused, DeadLetterReason, FailReason, OperatorNote, RecordNote, ToldFailed, WaitReason, Words, counted,
};

impl Words {
    /// Plain English, naming the facts: what a user of the crate gets unless it words them
    /// itself.
    ///
    /// ```
    /// use twice_runtime::worker::{ToldFailed, Words};
    /// assert_eq!(
    ///     (Words::ENGLISH.told_failed)(ToldFailed::UnknownReported),
    ///     "the outcome is unknown; it is reported as failed (on_indeterminate: fail)"
    /// );
    /// ```
    pub const ENGLISH: Words = Words {
        wait,
        fail,
        told_failed,
        record,
        dead_letter,
        operator,
    };
}

fn wait(reason: &WaitReason) -> String {
    match reason {
        WaitReason::CheckpointUnreadable {
            run_id,
            version,
            detail,
        } => format!(
            "the checkpoint of run {run_id} (v{version}) cannot be read: {detail}; starting over would run settled \
             calls again under new keys, so the run waits for a person"
        ),
        WaitReason::StateUnusable { run_id, detail } => {
            format!("the state of run {run_id} cannot be used: {detail}; the run waits for a person")
        }
        WaitReason::ContractRefused { run_id, violation } => {
            let check = match violation {
                ContractViolation::NoAmbiguityPolicy { .. } => "the ambiguity policy check",
                ContractViolation::TooManyAttempts { .. } | ContractViolation::NoIdempotencyKey { .. } => {
                    "the tool contract check"
                }
            };
            format!("{check} failed: {violation}; run {run_id} was refused before it started and nothing was sent")
        }
        WaitReason::DeadLettered { run_id, reason } => {
            format!("run {run_id} is dead-lettered ({reason}); it runs again only when an operator resumes it")
        }
        WaitReason::NoPendingCall { awaited } => {
            format!("the checkpoint awaits {awaited} but holds no pending call")
        }
        WaitReason::PendingCallRefused(refused) => format!("the checkpoint's pending call {}", refused_words(refused)),
        WaitReason::KeyMismatch { awaited, found } => {
            format!("the checkpoint awaits {awaited}, but its pending call has the key {found}")
        }
        WaitReason::ModelCallRefused(refused) => format!("the model's call {}", refused_words(refused)),
        WaitReason::DecisionLimit { run_id, decisions } => format!(
            "run {run_id} stopped after {decisions} model decisions in one start (its limit): a model repeating a call or never ending the run; it stays as last saved"
        ),
        WaitReason::AbandonedCall { run_id, key, status } => format!(
            "run {run_id} would end, but call {key} (reserved after its last checkpoint, by a worker that stopped) is still {status}: it may have been sent; settle it, then start the run again"
        ),
    }
}

fn refused_words(refused: &CallRefused) -> String {
    match refused {
        CallRefused::UnknownTool(tool) => format!("names tool `{tool}`, which is not declared"),
        CallRefused::BadKey(detail) => format!("cannot be given a key: {detail}"),
    }
}

fn fail(reason: &FailReason) -> String {
    match reason {
        FailReason::UnknownTool { tool } => format!("the model called tool `{tool}`, which is not declared"),
        FailReason::KeyTakenByFailedCall { key } => {
            format!("key {key} belongs to a failed call with other arguments; its key cannot carry the new arguments")
        }
        FailReason::NoRecordToSendUnder { key } => format!("{key} has no ledger record to send under"),
    }
}

fn told_failed(told: ToldFailed) -> String {
    match told {
        ToldFailed::UnknownReported => "the outcome is unknown; it is reported as failed (on_indeterminate: fail)",
        ToldFailed::UnknownCompensated => "the outcome was unknown; it was reported as failed and compensated",
        ToldFailed::RecordedWithoutResult => "failed",
        ToldFailed::CallIdReused => {
            "refused: this call id already named an answered call with other arguments; nothing was run"
        }
    }
    .to_owned()
}

fn record(note: &RecordNote) -> String {
    match note {
        RecordNote::TimedOut { attempts } => format!("timed out {}", counted(u64::from(*attempts), "time", "times")),
        RecordNote::NotAttempted { reason } => format!("not attempted: {reason}"),
        RecordNote::AnsweredLate { attempt, receipt } => {
            format!("attempt {attempt} answered after its timeout: {receipt}")
        }
        RecordNote::NothingFoundPastSettle {
            key,
            since_last_send_ms,
            lookup_settle_ms,
        } => format!(
            "nothing under {key} {since_last_send_ms} ms after the ledger last wrote it, past the declared \
             {lookup_settle_ms} ms settle time: it did not take effect"
        ),
        RecordNote::NothingFoundTakenAsProof {
            key,
            since_last_send_ms,
        } => format!(
            "nothing under {key} {since_last_send_ms} ms after the ledger last wrote it was taken as proof that \
             it did not take effect"
        ),
        RecordNote::ReflexCompensation => "compensated by the runtime itself".to_owned(),
        RecordNote::FoundByKey => "found by its idempotency key".to_owned(),
    }
}

fn dead_letter(reason: &DeadLetterReason) -> String {
    let failed = counted(u64::from(reason.failed_recoveries), "recovery", "recoveries");
    let limit = reason.limit;
    match reason.checkpoint_version {
        0 => format!("{failed} started with no checkpoint and none saved one (the limit is {limit})"),
        version => format!("{failed} started from checkpoint v{version} and none got past it (the limit is {limit})"),
    }
}

fn operator(note: &OperatorNote) -> String {
    match note {
        OperatorNote::NothingToUndo { finding } => {
            format!("{finding}: the call did not take effect, so nothing was undone")
        }
        OperatorNote::Undone { found, done } => format!("{found}: {done}"),
        OperatorNote::Resumed { status, reason } => format!("resumed as {status}: {reason}"),
        OperatorNote::StateSays { status } => format!("its state says {status}"),
    }
}
