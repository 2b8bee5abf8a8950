//! What the runtime writes down for people — a run's failure, what the model is told, a
//! record's result or history note, a dead-letter reason — in Penny's English. The runtime
//! hands over the facts and stores these words in the ledger ([`super::WORDS`]).

use twice_runtime::run::Told;
use twice_runtime::worker::{DeadLetterReason, FailReason, OperatorNote, RecordNote, ToldFailed, counted};

use super::duration_words;

/// Why the runtime failed a run, as its checkpoint keeps it.
pub fn fail_words(reason: &FailReason) -> String {
    match reason {
        FailReason::UnknownTool { tool } => format!("the model called unknown tool `{tool}`"),
        FailReason::KeyTakenByFailedCall { key } => format!(
            "idempotency key {key} was used with different arguments; the earlier call failed and its key cannot \
             carry a new wording"
        ),
        FailReason::NoRecordToSendUnder { key } => format!("{key} has no record to send under"),
    }
}

/// Why the model is told a call failed, when no tool said so.
pub fn told_failed_words(told: ToldFailed) -> String {
    match told {
        ToldFailed::UnknownReported => "the outcome is unknown; on_indeterminate: fail reports it as failed",
        ToldFailed::UnknownCompensated => "the outcome was unknown; reported as failed and compensated",
        ToldFailed::RecordedWithoutResult => "failed",
        ToldFailed::CallIdReused => {
            "refused: this call id already named an answered call with other arguments; nothing was run"
        }
    }
    .to_owned()
}

/// What the model was told about a call, in a few words (Penny quotes it when she gives up).
pub fn told_words(told: &Told) -> String {
    let settled = match told {
        Told::Result { result } => return format!("result {result}"),
        Told::Failed { reason } => return format!("failed: {reason}"),
        _ if told.compensated() => "compensated",
        _ if told.did_not_take_effect() => "did not take effect",
        // A telling this build has no words for: all the model can act on is that nothing of
        // the call stands (`Told` may grow).
        _ => "nothing of it stands",
    };
    match told.operator_decision() {
        Some((operator, reason)) => format!("{settled}: operator {operator} decided so ({reason})"),
        None => settled.to_owned(),
    }
}

/// A record's result or history note.
pub fn record_words(note: &RecordNote) -> String {
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
            "nothing under {key} {} after the ledger last wrote it, past its provider's {} settle time: it did not \
             take effect",
            duration_words(*since_last_send_ms),
            duration_words(*lookup_settle_ms)
        ),
        RecordNote::NothingFoundTakenAsProof {
            key,
            since_last_send_ms,
        } => format!(
            "a naive hook took nothing under {key}, {} after the ledger last wrote it, as proof that it did not take \
             effect",
            duration_words(*since_last_send_ms)
        ),
        RecordNote::ReflexCompensation => "the runtime compensated by itself".to_owned(),
        RecordNote::FoundByKey => "found in billing by its idempotency key".to_owned(),
    }
}

/// Why a run is dead-lettered, as its checkpoint and history keep it.
pub fn dead_letter_words(reason: &DeadLetterReason) -> String {
    let DeadLetterReason {
        failed_recoveries,
        limit,
        checkpoint_version,
    } = *reason;
    let failed = counted(u64::from(failed_recoveries), "recovery", "recoveries");
    let none_got = if failed_recoveries == 1 {
        "it did not get"
    } else {
        "none got"
    };
    if checkpoint_version == 0 {
        format!(
            "{failed} started from the beginning (the run saved no checkpoint) and {none_got} as far as saving one \
             (the limit is {limit})"
        )
    } else {
        format!("{failed} started from checkpoint v{checkpoint_version} and {none_got} past it (the limit is {limit})")
    }
}

/// What an operator's move writes beside the operator's reason, as the console and the API show it.
pub fn operator_words(note: &OperatorNote) -> String {
    match note {
        OperatorNote::NothingToUndo { finding } => {
            format!("{finding}: the call did not take effect, so nothing was undone")
        }
        OperatorNote::Undone { found, done } => format!("{found}: {done}"),
        OperatorNote::Resumed { status, reason } => format!("resumed as {status}: {reason}"),
        OperatorNote::StateSays { status } => format!("its state says {status}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_operators_moves_are_worded_from_their_facts() {
        let nothing = OperatorNote::NothingToUndo {
            finding: "billing holds no credit under r1:c1".into(),
        };
        assert_eq!(
            operator_words(&nothing),
            "billing holds no credit under r1:c1: the call did not take effect, so nothing was undone"
        );
        let resumed = OperatorNote::Resumed {
            status: "running",
            reason: "fixed the model".into(),
        };
        assert_eq!(operator_words(&resumed), "resumed as running: fixed the model");
        assert_eq!(
            operator_words(&OperatorNote::StateSays { status: "completed" }),
            "its state says completed"
        );
        // A crate user without words gets the facts themselves.
        assert!((twice_runtime::worker::Words::FACTS.operator)(&resumed).starts_with("Resumed {"));
    }

    #[test]
    fn what_the_runtime_writes_down_is_worded_from_its_facts() {
        assert_eq!(record_words(&RecordNote::TimedOut { attempts: 1 }), "timed out 1 time");
        assert_eq!(record_words(&RecordNote::TimedOut { attempts: 3 }), "timed out 3 times");
        let reason = DeadLetterReason {
            failed_recoveries: 2,
            limit: 2,
            checkpoint_version: 0,
        };
        assert_eq!(
            dead_letter_words(&reason),
            "2 recoveries started from the beginning (the run saved no checkpoint) and none got as far as saving one \
             (the limit is 2)"
        );
        let reason = DeadLetterReason {
            failed_recoveries: 1,
            limit: 1,
            checkpoint_version: 4,
        };
        assert_eq!(
            dead_letter_words(&reason),
            "1 recovery started from checkpoint v4 and it did not get past it (the limit is 1)"
        );
        let settled = RecordNote::NothingFoundPastSettle {
            key: twice_runtime::key::IdempotencyKey::per_call("r1", "c1").expect("a key"),
            since_last_send_ms: 5_000,
            lookup_settle_ms: 2_000,
        };
        assert_eq!(
            record_words(&settled),
            "nothing under r1:c1 5 s after the ledger last wrote it, past its provider's 2 s settle time: it did not \
             take effect"
        );
    }
}
