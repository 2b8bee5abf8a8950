//! Which inputs the machine takes next: each command asks the driver for one kind of answer,
//! and an input that answers something else (or is about another call) is refused with an
//! [`InputError`] before anything is decided — a driver's slip is an error it can report,
//! never a panic and never a decision taken on the wrong facts.

use super::*;

/// What the last command asked the driver for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Awaiting {
    /// Nothing yet: [`Input::Start`].
    Start,
    /// The run's checkpoint (or why it cannot be used).
    Checkpoint,
    /// The model's decision (or why the state cannot be used).
    Model,
    /// The atomic reservation's answer.
    Reservation,
    /// The naive reservation's read.
    Check,
    /// The naive reservation's write.
    Insert,
    /// The attempt's answer, its timeout, a refusal before sending, or the send fence's refusal.
    Answer,
    /// A wait (a backoff, or before looking a call up again) to pass.
    Wait,
    /// The outcome's record.
    Record,
    /// The reconcile hook's answer (or the settlement of what it did not find).
    LookUp,
    /// A reflex compensation's end.
    Undo,
    /// The checkpoint save's answer.
    Save,
    /// A call's record.
    RecordRead,
    /// A wake-up of a parked worker.
    Wake,
    /// Nothing more: the worker is done.
    Nothing,
}

impl Awaiting {
    /// What a command asks for; `None` for a command that asks for nothing new (a late answer
    /// logged: the machine waits on as it was).
    fn of_command(command: &Command) -> Option<Awaiting> {
        Some(match command {
            Command::LoadCheckpoint => Awaiting::Checkpoint,
            Command::AskModel { .. } => Awaiting::Model,
            Command::Reserve { .. } => Awaiting::Reservation,
            Command::CheckLedger { .. } => Awaiting::Check,
            Command::InsertStarted { .. } => Awaiting::Insert,
            Command::Invoke { .. } => Awaiting::Answer,
            Command::Backoff { .. } | Command::WaitToLookAgain { .. } => Awaiting::Wait,
            Command::RecordOutcome { .. } => Awaiting::Record,
            Command::LogLateOutcome { .. } => return None,
            Command::Reconcile { .. } | Command::SettleNotFound { .. } => Awaiting::LookUp,
            Command::Compensate { .. } => Awaiting::Undo,
            Command::SaveCheckpoint { .. } => Awaiting::Save,
            Command::ReadRecord { .. } => Awaiting::RecordRead,
            Command::Park { .. } => Awaiting::Wake,
            Command::StandDown { .. } | Command::WaitForPerson { .. } | Command::Exit => Awaiting::Nothing,
        })
    }

    /// The inputs that answer it, in words.
    fn expected(self) -> &'static str {
        match self {
            Awaiting::Start => "start",
            Awaiting::Checkpoint => "checkpoint loaded, checkpoint unreadable or state unusable",
            Awaiting::Model => "model decided or state unusable",
            Awaiting::Reservation => "reserved",
            Awaiting::Check => "checked",
            Awaiting::Insert => "inserted",
            Awaiting::Answer => "response, timed out, not attempted or attempt refused",
            Awaiting::Wait => "backoff elapsed",
            Awaiting::Record => "recorded",
            Awaiting::LookUp => "reconciled",
            Awaiting::Undo => "compensated",
            Awaiting::Save => "saved",
            Awaiting::RecordRead => "record read",
            Awaiting::Wake => "woken or look again",
            Awaiting::Nothing => "nothing (the worker is done)",
        }
    }

    /// Whether `input` answers it. An answer to an attempt is taken at any time: one nobody
    /// waits for any more is logged as late, a stale timer ignored.
    fn takes(self, input: &Input) -> bool {
        match input {
            Input::Response { .. } | Input::TimedOut { .. } | Input::Unknown { .. } => self != Awaiting::Nothing,
            Input::Start => self == Awaiting::Start,
            Input::CheckpointLoaded { .. } | Input::CheckpointUnreadable { .. } => self == Awaiting::Checkpoint,
            Input::StateUnusable { .. } => matches!(self, Awaiting::Checkpoint | Awaiting::Model),
            Input::ModelDecided { .. } => self == Awaiting::Model,
            Input::Reserved(_) => self == Awaiting::Reservation,
            Input::Checked(_) => self == Awaiting::Check,
            Input::Inserted(_) => self == Awaiting::Insert,
            Input::AttemptRefused { .. } | Input::NotAttempted { .. } | Input::Sent { .. } => self == Awaiting::Answer,
            Input::BackoffElapsed => self == Awaiting::Wait,
            Input::Recorded(_) => self == Awaiting::Record,
            Input::Reconciled(_) => self == Awaiting::LookUp,
            Input::Compensated => self == Awaiting::Undo,
            Input::Saved(_) => self == Awaiting::Save,
            // Also in place of an outcome or a hook's finding that came after an operator
            // settled the call: the record as it stands, with their decision.
            Input::RecordRead { .. } => matches!(self, Awaiting::RecordRead | Awaiting::Record | Awaiting::LookUp),
            Input::Woken | Input::LookAgain => self == Awaiting::Wake,
        }
    }
}

impl Input {
    /// The input's name, for errors and logs (`reserved`, `timed out`).
    #[must_use]
    pub fn name(&self) -> &'static str {
        match self {
            Input::Start => "start",
            Input::CheckpointLoaded { .. } => "checkpoint loaded",
            Input::CheckpointUnreadable { .. } => "checkpoint unreadable",
            Input::StateUnusable { .. } => "state unusable",
            Input::ModelDecided { .. } => "model decided",
            Input::Reserved(_) => "reserved",
            Input::Checked(_) => "checked",
            Input::Inserted(_) => "inserted",
            Input::AttemptRefused { .. } => "attempt refused",
            Input::NotAttempted { .. } => "not attempted",
            Input::Sent { .. } => "sent",
            Input::Response { .. } => "response",
            Input::TimedOut { .. } => "timed out",
            Input::Unknown { .. } => "outcome unknown",
            Input::BackoffElapsed => "backoff elapsed",
            Input::Recorded(_) => "recorded",
            Input::Reconciled(_) => "reconciled",
            Input::Compensated => "compensated",
            Input::Saved(_) => "saved",
            Input::RecordRead { .. } => "record read",
            Input::Woken => "woken",
            Input::LookAgain => "look again",
        }
    }

    /// The ledger record the input carries about the call in progress, if it carries one.
    fn record(&self) -> Option<&ExecutionRecord> {
        match self {
            Input::Reserved(reservation) | Input::Inserted(reservation) => match reservation {
                Reservation::Decided { record, .. } => Some(record),
                Reservation::ArgumentsMismatch { existing } => Some(existing),
                Reservation::Fenced { .. } => None,
            },
            Input::Checked(record) | Input::AttemptRefused { record, .. } | Input::RecordRead { record, .. } => {
                record.as_ref()
            }
            Input::Recorded(Recorded::Recorded(record) | Recorded::LateOutcomeIgnored(record)) => Some(record),
            Input::Reconciled(Reconciled::AlreadySettled(record) | Reconciled::SettledFailed(record)) => Some(record),
            Input::Reconciled(Reconciled::NotFound { record, .. }) => record.as_deref(),
            _ => None,
        }
    }
}

/// Why the machine refused an input. Nothing was decided: the worker is as it was, and the
/// driver that fed it has a bug to report.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum InputError {
    /// The worker exited, stood down or waits for a person: it takes no input.
    #[error("worker {worker} is done and takes no input (given {input})")]
    Done {
        /// The worker.
        worker: WorkerId,
        /// The input given.
        input: &'static str,
    },
    /// The input answers another command than the last one the worker gave.
    #[error("worker {worker} waits for {expected}, and was given {input}")]
    OutOfOrder {
        /// The worker.
        worker: WorkerId,
        /// The inputs it waits for, in words.
        expected: &'static str,
        /// The input given.
        input: &'static str,
    },
    /// The input carries the record of another call than the one in progress.
    #[error("worker {worker} is on call {expected}, and was given {input} about {found}")]
    OtherCall {
        /// The worker.
        worker: WorkerId,
        /// The call in progress.
        expected: IdempotencyKey,
        /// The call the input is about.
        found: IdempotencyKey,
        /// The input given.
        input: &'static str,
    },
}

impl Worker {
    /// Refuses an input the machine does not wait for (see [`InputError`]).
    pub(super) fn check_input(&self, input: &Input) -> Result<(), InputError> {
        let worker = || self.setup.worker_id.clone();
        if self.is_done() || self.awaiting == Awaiting::Nothing {
            return Err(InputError::Done {
                worker: worker(),
                input: input.name(),
            });
        }
        if !self.awaiting.takes(input) {
            return Err(InputError::OutOfOrder {
                worker: worker(),
                expected: self.awaiting.expected(),
                input: input.name(),
            });
        }
        // Every state that takes a record about a call has a call in progress; the record
        // must be that call's.
        if let (Some(record), Some(context)) = (input.record(), &self.call)
            && record.key != context.key
        {
            return Err(InputError::OtherCall {
                worker: worker(),
                expected: context.key.clone(),
                found: record.key.clone(),
                input: input.name(),
            });
        }
        Ok(())
    }

    /// Notes what `command` asks the driver for.
    pub(super) fn awaiting_after(&mut self, command: &Command) {
        if let Some(awaiting) = Awaiting::of_command(command) {
            self.awaiting = awaiting;
        }
    }
}
