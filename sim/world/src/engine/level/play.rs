//! The player's moves, as the game sends them and tapes store them (both formats).

use serde::{Deserialize, Deserializer, Serialize};

use super::CardKind;
use crate::runtime::rules::Status;
use crate::runtime::tool::SideEffect;
use crate::runtime::worker::Phase;

/// A player's move, as the game sends it and a tape stores it (tape format version 2).
///
/// The wire cards act on a message on the wire at the moment they are played: `key` names it
/// (none: the oldest one on the wire in that direction). With nothing on the wire the move is
/// refused, so *when* a wire card is played decides what it does. Version 1 tapes armed the
/// card for the next message instead; they are read as [`PlayVersion1`] and replayed by that
/// rule ([`WireRule::ArmNextMessage`]).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub enum Play {
    /// The request on the wire is dropped before billing sees it.
    LoseRequest {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        key: Option<String>,
    },
    /// The response on the wire (billing has applied its request) is dropped.
    LoseResponse {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        key: Option<String>,
    },
    /// The response on the wire arrives after the timeout.
    SlowResponse {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        key: Option<String>,
    },
    /// Crash a worker (`w<n>`); without a number, the oldest one alive. With `in_phase`, only
    /// while that worker is about to run that phase (`send`, `record outcome`, …): a tape says
    /// what moment it meant, and a crash aimed at another moment is refused.
    CrashWorker {
        #[serde(default)]
        worker: Option<u32>,
        #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "in_phase")]
        in_phase: Option<Phase>,
    },
    /// Start a second worker on a run that is already being driven.
    DuplicateWorker { run: String },
    /// The model calls the tool again (new tool call id), perhaps rewording.
    ModelCallsAgain {
        run: String,
        #[serde(default)]
        reword: bool,
    },
    /// The run's next tool invocation refuses before sending anything.
    ToolFailsBeforeSending { run: String },
    /// The player, as operator, settles a call. With `expected_status`, compare-and-set: an
    /// operator who expected a status the call no longer has loses the race (409) — the move
    /// is made, and refused by the ledger.
    OperatorResolve {
        key: String,
        status: Status,
        reason: String,
        #[serde(default = "default_operator")]
        operator: String,
        #[serde(default)]
        expected_status: Option<Status>,
    },
    /// The player, as operator, asks for a call's compensation.
    OperatorCompensate {
        key: String,
        reason: String,
        #[serde(default = "default_operator")]
        operator: String,
    },
    /// The player, as the developer, declares a tool: its side effect, the attempts the
    /// framework's retry policy gives it, and whether it passes the idempotency key on.
    /// Legal before Penny's first call, in a level that names the tool in `declarable_tools`;
    /// the runs start again under the new declaration (with guard `tool_contract` on, only if
    /// it passes the contract check). Added in tape format 2 without changing its version:
    /// older twice-sims refuse it by name.
    DeclareTool {
        tool: String,
        side_effect: SideEffect,
        attempts: u32,
        takes_key: bool,
    },
}

/// A move as tape format version 1 stored it: the wire cards were unit variants that armed
/// the next message when none was on the wire. Read only; a tape is always written as version 2.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub enum PlayVersion1 {
    LoseRequest,
    LoseResponse,
    SlowResponse,
    CrashWorker {
        #[serde(default)]
        worker: Option<u32>,
    },
    DuplicateWorker {
        run: String,
    },
    ModelCallsAgain {
        run: String,
        #[serde(default)]
        reword: bool,
    },
    ToolFailsBeforeSending {
        run: String,
    },
    OperatorResolve {
        key: String,
        status: Status,
        reason: String,
        #[serde(default = "default_operator")]
        operator: String,
        #[serde(default)]
        expected_status: Option<Status>,
    },
    OperatorCompensate {
        key: String,
        reason: String,
        #[serde(default = "default_operator")]
        operator: String,
    },
}

impl From<PlayVersion1> for Play {
    fn from(play: PlayVersion1) -> Play {
        match play {
            PlayVersion1::LoseRequest => Play::LoseRequest { key: None },
            PlayVersion1::LoseResponse => Play::LoseResponse { key: None },
            PlayVersion1::SlowResponse => Play::SlowResponse { key: None },
            PlayVersion1::CrashWorker { worker } => Play::CrashWorker { worker, in_phase: None },
            PlayVersion1::DuplicateWorker { run } => Play::DuplicateWorker { run },
            PlayVersion1::ModelCallsAgain { run, reword } => Play::ModelCallsAgain { run, reword },
            PlayVersion1::ToolFailsBeforeSending { run } => Play::ToolFailsBeforeSending { run },
            PlayVersion1::OperatorResolve {
                key,
                status,
                reason,
                operator,
                expected_status,
            } => Play::OperatorResolve {
                key,
                status,
                reason,
                operator,
                expected_status,
            },
            PlayVersion1::OperatorCompensate { key, reason, operator } => {
                Play::OperatorCompensate { key, reason, operator }
            }
        }
    }
}

/// How a wire card finds its message: the rule of the tape format it was recorded in.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub enum WireRule {
    /// Version 1: the message on the wire, or else the next one (the card waits, armed).
    ArmNextMessage,
    /// Version 2: only a message on the wire now; with none, the move is refused.
    #[default]
    OnTheWireNow,
}

/// The tape format this code writes.
pub const TAPE_VERSION: u32 = 2;

impl WireRule {
    /// The rule a tape of this format version was recorded under.
    pub fn of_version(version: u32) -> WireRule {
        if version <= 1 {
            WireRule::ArmNextMessage
        } else {
            WireRule::OnTheWireNow
        }
    }
}

/// Reads `in_phase` by the phase names tapes have always spelled; any other name is refused
/// naming the field (the tape's path and line come with the parse error).
fn in_phase<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<Phase>, D::Error> {
    Option::<String>::deserialize(deserializer)?
        .map(|text| {
            text.parse::<Phase>()
                .map_err(|error| serde::de::Error::custom(format!("in_phase: {error}")))
        })
        .transpose()
}

pub fn default_operator() -> String {
    "op-crew".into()
}

impl Play {
    pub fn card(&self) -> CardKind {
        match self {
            Play::LoseRequest { .. } => CardKind::LoseRequest,
            Play::LoseResponse { .. } => CardKind::LoseResponse,
            Play::SlowResponse { .. } => CardKind::SlowResponse,
            Play::CrashWorker { .. } => CardKind::CrashWorker,
            Play::DuplicateWorker { .. } => CardKind::DuplicateWorker,
            Play::ModelCallsAgain { .. } => CardKind::ModelCallsAgain,
            Play::ToolFailsBeforeSending { .. } => CardKind::ToolFailsBeforeSending,
            Play::OperatorResolve { .. } => CardKind::OperatorResolve,
            Play::OperatorCompensate { .. } => CardKind::OperatorCompensate,
            Play::DeclareTool { .. } => CardKind::DeclareTool,
        }
    }

    pub fn run(&self) -> Option<&str> {
        match self {
            Play::DuplicateWorker { run }
            | Play::ModelCallsAgain { run, .. }
            | Play::ToolFailsBeforeSending { run } => Some(run),
            _ => None,
        }
    }

    /// The idempotency key the move names, if it names one.
    pub fn key(&self) -> Option<&str> {
        match self {
            Play::LoseRequest { key } | Play::LoseResponse { key } | Play::SlowResponse { key } => key.as_deref(),
            Play::OperatorResolve { key, .. } | Play::OperatorCompensate { key, .. } => Some(key),
            _ => None,
        }
    }
}
