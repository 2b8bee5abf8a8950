//! What the runtime writes down for people — a run's failure, what the model is told, a
//! record's result or history note, a dead-letter reason — typed. The machine makes no
//! sentence of them: the application hands it its words ([`Words`], in [`super::WorkerSetup`]),
//! and the ledger keeps those words, so an operator reads the application's language. The
//! application writes its own (Twice's simulator and operator API use its refund bot's
//! English); [`Words::FACTS`] writes the typed facts themselves, for a user of the
//! crate with no words of its own.

use crate::ids::ToolName;
use crate::key::IdempotencyKey;

use super::WaitReason;

/// Why the runtime ends a run failed by itself (a model that gives up says why in its own
/// words).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FailReason {
    /// The model called a tool the worker was not given.
    UnknownTool {
        /// The tool it named.
        tool: ToolName,
    },
    /// The call's key belongs to a failed call with other arguments: nothing of it stands,
    /// and its key cannot carry the new wording.
    KeyTakenByFailedCall {
        /// The call.
        key: IdempotencyKey,
    },
    /// The send fence found no record under the call's key.
    NoRecordToSendUnder {
        /// The call.
        key: IdempotencyKey,
    },
}

/// Why the runtime tells the model a call failed, when no tool said so.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ToldFailed {
    /// The outcome is unknown, and `on_indeterminate: fail` reports it as failed.
    UnknownReported,
    /// The outcome was unknown; a naive runtime reported it failed and compensated it.
    UnknownCompensated,
    /// The call was recorded `failed` with no result to say why.
    RecordedWithoutResult,
    /// The call reused the id of a call this run was already told about, with other
    /// arguments: it was refused, nothing was run, and the run's history says so.
    CallIdReused,
}

/// What the runtime writes into a call's record or its history.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RecordNote {
    /// A read's result after its last attempt timed out.
    TimedOut {
        /// How many attempts timed out.
        attempts: u32,
    },
    /// The tool refused before sending anything.
    NotAttempted {
        /// Why, in the tool's words.
        reason: String,
    },
    /// An answer came for an attempt nobody waits for any more.
    AnsweredLate {
        /// The attempt.
        attempt: u32,
        /// What the answer said (the tool's receipt).
        receipt: String,
    },
    /// A lookup found nothing past the tool's settle time: the call is settled `failed`.
    NothingFoundPastSettle {
        /// The call.
        key: IdempotencyKey,
        /// How long after the ledger last wrote the call, in ms.
        since_last_send_ms: u64,
        /// The provider's declared settle time, in ms.
        lookup_settle_ms: u64,
    },
    /// A naive hook (guard `lookup_settle` off) took "nothing found" as proof.
    NothingFoundTakenAsProof {
        /// The call.
        key: IdempotencyKey,
        /// How long after the ledger last wrote the call, in ms.
        since_last_send_ms: u64,
    },
    /// A naive runtime compensated the call by itself.
    ReflexCompensation,
    /// The reconcile hook found the call's effect in the tool's world by its idempotency key:
    /// the call is settled `completed`.
    FoundByKey,
}

/// Why a run is dead-lettered (table 8): its checkpoint and its history keep the words.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DeadLetterReason {
    /// How many recoveries failed.
    pub failed_recoveries: u32,
    /// The declared limit.
    pub limit: u32,
    /// The checkpoint they started from (0: none, the run never saved one).
    pub checkpoint_version: u32,
}

/// What an operator's move writes beside the operator's own reason: a call's history detail,
/// a run's history, a listing of dead-lettered runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum OperatorNote {
    /// A compensation found nothing under the key, and nothing can still arrive: the call is
    /// settled `failed` and nothing is undone.
    NothingToUndo {
        /// What the tool's world answered, in its words.
        finding: String,
    },
    /// A compensation undid the effect it found.
    Undone {
        /// What it found, in the tool's world's words.
        found: String,
        /// What undoing it did, in the same words.
        done: String,
    },
    /// A dead-lettered run was resumed.
    Resumed {
        /// The status its checkpoint goes back to.
        status: &'static str,
        /// The operator's reason.
        reason: String,
    },
    /// A checkpoint listed as dead-lettered whose state says another status.
    StateSays {
        /// The status its state says.
        status: &'static str,
    },
}

/// The application's words for what the runtime writes down: one function per kind of text.
/// Pure functions of the facts, so a replay writes the same words.
#[derive(Clone, Copy, Debug)]
pub struct Words {
    /// Why a run waits for a person (its history).
    pub wait: fn(&WaitReason) -> String,
    /// Why the runtime failed a run (its checkpoint).
    pub fail: fn(&FailReason) -> String,
    /// Why the model is told a call failed (the run's transcript).
    pub told_failed: fn(ToldFailed) -> String,
    /// A record's result or history note.
    pub record: fn(&RecordNote) -> String,
    /// Why a run is dead-lettered (its checkpoint and history).
    pub dead_letter: fn(&DeadLetterReason) -> String,
    /// What an operator's move writes beside the operator's reason.
    pub operator: fn(&OperatorNote) -> String,
}

impl Words {
    /// The typed facts as they are (`Debug`), for a user of the crate without words of its
    /// own: readable by whoever wrote the code, not by an operator.
    pub const FACTS: Words = Words {
        wait: facts,
        fail: facts,
        told_failed: told_facts,
        record: facts,
        dead_letter: facts,
        operator: facts,
    };
}

fn facts<T: std::fmt::Debug + ?Sized>(value: &T) -> String {
    format!("{value:?}")
}

fn told_facts(told: ToldFailed) -> String {
    format!("{told:?}")
}

/// A count and its noun, the noun plural unless the count is one: `1 attempt`, `2 attempts`,
/// `0 credits`. The runtime's own error messages count with it; the application's words
/// do too.
pub fn counted(count: u64, one: &str, many: &str) -> String {
    format!("{count} {}", if count == 1 { one } else { many })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_take_the_singular_only_for_one() {
        assert_eq!(counted(1, "attempt", "attempts"), "1 attempt");
        assert_eq!(counted(2, "attempt", "attempts"), "2 attempts");
        assert_eq!(counted(0, "credit", "credits"), "0 credits");
    }

    #[test]
    fn the_facts_words_write_the_typed_value() {
        let reason = DeadLetterReason {
            failed_recoveries: 2,
            limit: 2,
            checkpoint_version: 3,
        };
        assert_eq!(
            (Words::FACTS.dead_letter)(&reason),
            "DeadLetterReason { failed_recoveries: 2, limit: 2, checkpoint_version: 3 }"
        );
        assert_eq!(
            (Words::FACTS.told_failed)(ToldFailed::UnknownReported),
            "UnknownReported"
        );
    }
}
