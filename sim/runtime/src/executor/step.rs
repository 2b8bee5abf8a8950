//! What a step of the executor hands back: what the driver does next, and what was done.

use super::Report;
use crate::key::IdempotencyKey;
use crate::ledger::Contradiction;
use crate::run::{RunState, ToolCall};
use crate::worker::{GuardNote, Input, WaitReason};

/// What the driver does next.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Next {
    /// Feed this to the machine now.
    Feed(Input),
    /// The driver's part of the command.
    Drive(Drive),
    /// Nothing follows from this step (a late answer logged): the machine waits on as it was.
    Nothing,
}

/// What only a driver can do: the model, the network, the tool's world, time, the process.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Drive {
    /// Ask the model; feed [`Input::ModelDecided`].
    AskModel {
        /// The run's state.
        state: RunState,
    },
    /// The send fence passed: send the request now; feed the answer, the timeout or
    /// [`Input::NotAttempted`] when the tool refuses before sending anything.
    Send {
        /// The call.
        key: IdempotencyKey,
        /// The key the request carries (`None`: the tool passes none).
        downstream_key: Option<IdempotencyKey>,
        /// The call.
        call: ToolCall,
        /// The attempt.
        attempt: u32,
        /// When the ledger recorded this attempt as begun (the clock reading its write was
        /// given; with the fence folded into the reservation, the reservation's). Where the
        /// system called refuses requests that arrive too long after their send, stamp the
        /// request with this, not with the clock at the send: a process paused between the
        /// record and the send would otherwise stamp it later than the ledger says, and a
        /// lookup past the settle time counted from the record could miss it (decision
        /// table 6). Without a ledger (guard `ledger` off), the clock at the send.
        recorded_at_ms: u64,
    },
    /// Wait, then feed [`Input::BackoffElapsed`].
    Backoff {
        /// How long to wait before asking again.
        after_ms: u64,
        /// The attempt sent after the wait.
        next_attempt: u32,
    },
    /// A lookup found nothing sooner than the tool's settle time: wait `after_ms`, then feed
    /// [`Input::BackoffElapsed`] (the machine then asks for the lookup again).
    WaitToLookAgain {
        /// The call.
        key: IdempotencyKey,
        /// How long to wait before asking again.
        after_ms: u64,
    },
    /// The reconcile hook's read: look the key up in the tool's world, then call
    /// [`super::Executor::reconciled`] with what was found.
    LookUp {
        /// The call.
        key: IdempotencyKey,
        /// The call.
        call: ToolCall,
        /// When the ledger recorded the attempt looked for as begun (what the send was told
        /// as [`Drive::Send`]'s `recorded_at_ms`); 0 when none was recorded.
        recorded_at_ms: u64,
    },
    /// A naive runtime's reflex compensation (guard `no_reflex_compensation` off): undo by
    /// key, then call [`super::Executor::undone`].
    Undo {
        /// The call.
        key: IdempotencyKey,
        /// The call.
        call: ToolCall,
    },
    /// Wait until `key` is settled; feed [`Input::Woken`] then, or [`Input::LookAgain`] when
    /// something that could settle it changes.
    Park {
        /// The call.
        key: IdempotencyKey,
    },
    /// This worker stands down: another drives the run.
    StandDown {
        /// Why: the guard note of the `checkpoint_version` hold (the application words it).
        note: GuardNote,
    },
    /// The run's stored state cannot be used: stop driving it; a person looks.
    WaitForPerson {
        /// Why: the facts (the application words them).
        reason: WaitReason,
    },
    /// The run is over for this worker.
    Exit,
}

/// One step's result: what the driver does next, and what the executor did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Step {
    /// What the driver does next.
    pub next: Next,
    /// What the executor did to the ledger, if anything, for the timeline.
    pub report: Option<Report>,
    /// A late word this step met that contradicts how its call was settled: the decision
    /// stands, the ledger's history says so ([`crate::ledger::HistoryEvent::Contradicted`]),
    /// and the driver reports it to whoever should look.
    pub contradiction: Option<Contradiction>,
}

impl Step {
    pub(super) fn feed(input: Input, report: Report) -> Step {
        Step {
            next: Next::Feed(input),
            report: Some(report),
            contradiction: None,
        }
    }

    pub(super) fn drive(drive: Drive) -> Step {
        Step {
            next: Next::Drive(drive),
            report: None,
            contradiction: None,
        }
    }
}
