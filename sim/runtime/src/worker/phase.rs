//! Where a worker is: the phase it runs next (one per [`super::Command`]), or the moment it
//! waits in between. Fault schedules, timelines and crash drills
//! markers spell each by its [`Phase::name`].

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::Command;

/// A worker's phase. Its name is the serialized form (a schedule writes `in_phase:
/// Some("record outcome")`), so the names never change.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Phase {
    /// Started, before the machine has asked for anything.
    Start,
    /// Reading the run's checkpoint.
    LoadCheckpoint,
    /// The model decides.
    ModelDecides,
    /// Reserving the call in the ledger.
    Reserve,
    /// The naive reservation's read.
    CheckLedger,
    /// The naive reservation's write.
    InsertStarted,
    /// Sending the request.
    Send,
    /// Waiting before another attempt.
    Backoff,
    /// Recording how the call ended.
    RecordOutcome,
    /// Logging an answer nobody waits for.
    LogLateOutcome,
    /// Asking the reconcile hook.
    Reconcile,
    /// Settling a call the hook found nothing of, past the settle time.
    SettleNotFound,
    /// Waiting before asking the hook again.
    WaitToLookAgain,
    /// A naive runtime's reflex compensation.
    Compensate,
    /// Saving the checkpoint.
    SaveCheckpoint,
    /// Reading a call's record.
    ReadRecord,
    /// Pausing the run on an unknown call.
    Park,
    /// Standing down: another worker owns the run.
    StandDown,
    /// The run's stored state cannot be used: waiting for a person.
    WaitForAPerson,
    /// Exiting.
    Exit,
    /// Between phases once its request has left: waiting for the answer.
    WaitForAnswer,
    /// Parked: waiting for someone to settle the call.
    Parked,
}

impl Phase {
    /// Every phase, in the order a call usually meets them.
    pub const ALL: [Phase; 22] = [
        Phase::Start,
        Phase::LoadCheckpoint,
        Phase::ModelDecides,
        Phase::Reserve,
        Phase::CheckLedger,
        Phase::InsertStarted,
        Phase::Send,
        Phase::Backoff,
        Phase::RecordOutcome,
        Phase::LogLateOutcome,
        Phase::Reconcile,
        Phase::SettleNotFound,
        Phase::WaitToLookAgain,
        Phase::Compensate,
        Phase::SaveCheckpoint,
        Phase::ReadRecord,
        Phase::Park,
        Phase::StandDown,
        Phase::WaitForAPerson,
        Phase::Exit,
        Phase::WaitForAnswer,
        Phase::Parked,
    ];

    /// The phase's name, as timelines, schedules and markers spell it.
    pub fn name(self) -> &'static str {
        match self {
            Phase::Start => "start",
            Phase::LoadCheckpoint => "load checkpoint",
            Phase::ModelDecides => "model decides",
            Phase::Reserve => "reserve",
            Phase::CheckLedger => "check ledger",
            Phase::InsertStarted => "insert started",
            Phase::Send => "send",
            Phase::Backoff => "backoff",
            Phase::RecordOutcome => "record outcome",
            Phase::LogLateOutcome => "log late outcome",
            Phase::Reconcile => "reconcile",
            Phase::SettleNotFound => "settle not found",
            Phase::WaitToLookAgain => "wait to look again",
            Phase::Compensate => "compensate",
            Phase::SaveCheckpoint => "save checkpoint",
            Phase::ReadRecord => "read record",
            Phase::Park => "park",
            Phase::StandDown => "stand down",
            Phase::WaitForAPerson => "wait for a person",
            Phase::Exit => "exit",
            Phase::WaitForAnswer => "wait for answer",
            Phase::Parked => "parked",
        }
    }
}

impl fmt::Display for Phase {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(self.name())
    }
}

/// A name that is no phase's.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "`{0}` is not a phase a worker runs (one of: {choices})",
    choices = Phase::ALL.map(Phase::name).join(", ")
)]
pub struct UnknownPhase(pub String);

impl FromStr for Phase {
    type Err = UnknownPhase;

    /// Reads a phase by its exact name (as a saved schedule spells it).
    fn from_str(text: &str) -> Result<Phase, UnknownPhase> {
        Phase::ALL
            .into_iter()
            .find(|phase| phase.name() == text)
            .ok_or_else(|| UnknownPhase(text.to_owned()))
    }
}

impl Serialize for Phase {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.name())
    }
}

impl<'de> Deserialize<'de> for Phase {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Phase, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

// Each command is one phase: the map lives beside the phases so a new command names its phase here.
impl Command {
    /// The phase the command runs.
    pub fn phase(&self) -> Phase {
        match self {
            Command::LoadCheckpoint => Phase::LoadCheckpoint,
            Command::AskModel { .. } => Phase::ModelDecides,
            Command::Reserve { .. } => Phase::Reserve,
            Command::CheckLedger { .. } => Phase::CheckLedger,
            Command::InsertStarted { .. } => Phase::InsertStarted,
            Command::Invoke { .. } => Phase::Send,
            Command::Backoff { .. } => Phase::Backoff,
            Command::RecordOutcome { .. } => Phase::RecordOutcome,
            Command::LogLateOutcome { .. } => Phase::LogLateOutcome,
            Command::Reconcile { .. } => Phase::Reconcile,
            Command::SettleNotFound { .. } => Phase::SettleNotFound,
            Command::WaitToLookAgain { .. } => Phase::WaitToLookAgain,
            Command::Compensate { .. } => Phase::Compensate,
            Command::SaveCheckpoint { .. } => Phase::SaveCheckpoint,
            Command::ReadRecord { .. } => Phase::ReadRecord,
            Command::Park { .. } => Phase::Park,
            Command::StandDown { .. } => Phase::StandDown,
            Command::WaitForPerson { .. } => Phase::WaitForAPerson,
            Command::Exit => Phase::Exit,
        }
    }

    /// The phase's name, as the timeline and the drill's markers show it.
    pub fn phase_name(&self) -> &'static str {
        self.phase().name()
    }
}
