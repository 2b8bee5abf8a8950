//! Levels and tapes: RON files with serde types, checked before anything is played.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize, de::DeserializeOwned};

use crate::billing::{Account, KeyHandling};
use crate::billing_tools::Operation;
use crate::error::InputError;
use crate::model::{ModelPolicy, RunScript};
pub use crate::outcome::Expectation;
use crate::outcome::Outcome;
use crate::runtime::guards::{Guard, Guards};
use crate::runtime::rules::Status;
use crate::runtime::tool::{READ_ATTEMPTS_MAX, SideEffect, ToolDeclaration};
use crate::runtime::workflow::Workflow;

/// The most phases any level may run (a limit on everything).
pub const PHASES_MAX: u32 = 100_000;
/// The most runs, calls per run and actions per tape a file may hold.
pub const RUNS_MAX: usize = 64;
pub const CALLS_PER_RUN_MAX: usize = 32;
pub const ACTIONS_MAX: usize = 1_000;
/// The most words a briefing shows before "more" (the rest goes in `briefing_more`).
pub const BRIEFING_WORDS_MAX: usize = 60;
/// The most words a debrief's text shows before "more".
pub const DEBRIEF_WORDS_MAX: usize = 120;
/// The longest phase name a crash may be aimed at (`record outcome` is 14).
pub const PHASE_NAME_BYTES_MAX: usize = 64;
/// The most input a level or tape file may be.
pub const FILE_BYTES_MAX: u64 = 1 << 20;

/// A fault card (or operator move) a level may put in the player's hand.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum CardKind {
    LoseRequest,
    LoseResponse,
    SlowResponse,
    CrashWorker,
    DuplicateWorker,
    ModelCallsAgain,
    ToolFailsBeforeSending,
    OperatorResolve,
    OperatorCompensate,
    DeclareTool,
}

impl CardKind {
    pub const ALL: [CardKind; 10] = [
        CardKind::LoseRequest,
        CardKind::LoseResponse,
        CardKind::SlowResponse,
        CardKind::CrashWorker,
        CardKind::DuplicateWorker,
        CardKind::ModelCallsAgain,
        CardKind::ToolFailsBeforeSending,
        CardKind::OperatorResolve,
        CardKind::OperatorCompensate,
        CardKind::DeclareTool,
    ];

    pub fn name(self) -> &'static str {
        match self {
            CardKind::LoseRequest => "LoseRequest",
            CardKind::LoseResponse => "LoseResponse",
            CardKind::SlowResponse => "SlowResponse",
            CardKind::CrashWorker => "CrashWorker",
            CardKind::DuplicateWorker => "DuplicateWorker",
            CardKind::ModelCallsAgain => "ModelCallsAgain",
            CardKind::ToolFailsBeforeSending => "ToolFailsBeforeSending",
            CardKind::OperatorResolve => "OperatorResolve",
            CardKind::OperatorCompensate => "OperatorCompensate",
            CardKind::DeclareTool => "DeclareTool",
        }
    }

    pub fn title(self) -> &'static str {
        match self {
            CardKind::LoseRequest => "Lose the request",
            CardKind::LoseResponse => "Lose the response",
            CardKind::SlowResponse => "Slow the response",
            CardKind::CrashWorker => "Crash a worker",
            CardKind::DuplicateWorker => "Start a duplicate worker",
            CardKind::ModelCallsAgain => "Model calls again",
            CardKind::ToolFailsBeforeSending => "Tool fails before sending",
            CardKind::OperatorResolve => "Operator resolves",
            CardKind::OperatorCompensate => "Operator compensates",
            CardKind::DeclareTool => "Declare a tool",
        }
    }
}

/// A card in the level's hand, and how many of it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CardAllowance {
    pub card: CardKind,
    pub count: u32,
}

/// What the lesson teaches, shown after the level.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Lesson {
    /// The guards this level is about.
    #[serde(default)]
    pub guards: Vec<Guard>,
    /// The seed's rule, in its own words.
    pub rule: String,
    pub text: String,
}

/// Hints in three tiers, opened one at a time on request: a nudge (where to look), the idea
/// (what the runtime gets wrong here), and the move (what to play, and when).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Hints {
    pub nudge: String,
    pub idea: String,
    /// The move; `None`: the game describes the level's par tape instead.
    #[serde(default, rename = "move")]
    pub the_move: Option<String>,
}

impl Hints {
    /// The tiers written for this level, in the order they open.
    pub fn tiers(&self) -> Vec<&str> {
        let mut tiers = vec![self.nudge.as_str(), self.idea.as_str()];
        if let Some(the_move) = &self.the_move {
            tiers.push(the_move);
        }
        tiers.into_iter().filter(|tier| !tier.trim().is_empty()).collect()
    }
}

/// The best win known: fewest cards, then fewest phases until the level went quiet.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Par {
    pub cards: u32,
    pub phases: u32,
}

/// An unbeatable level played from the other side: switch on the fewest guards, at most
/// `budget`, that stop every heist the campaign knows here ([`crate::defend`]).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Defender {
    pub budget: u32,
    /// A smallest set of guards that holds (checked: it holds, and no smaller set does).
    pub minimum: Vec<Guard>,
}

/// The billing world and the network.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct World {
    pub accounts: Vec<Account>,
    #[serde(default)]
    pub billing_keys: KeyHandling,
    /// One-way network latency.
    #[serde(default = "default_latency_ms")]
    pub latency_ms: u32,
    /// Random extra latency, up to this much, drawn from the seed.
    #[serde(default)]
    pub jitter_ms: u32,
    /// How long a worker waits for a response.
    #[serde(default = "default_timeout_ms")]
    pub timeout_ms: u32,
    /// How late a slowed response arrives (past the timeout).
    #[serde(default = "default_slow_response_ms")]
    pub slow_response_ms: u32,
    /// A crashed worker's run is picked up by a fresh process after this long; `None`: never.
    #[serde(default = "default_restart_ms")]
    pub restart_after_crash_ms: Option<u32>,
    /// The lease a naive runtime puts on `started` calls.
    #[serde(default = "default_lease_ms")]
    pub lease_ms: u32,
    /// A second node: a duplicate worker starts on another machine, whose ledger is its own.
    /// The runtime is hardened for a single node: the twin sees none of this node's records or
    /// checkpoints, and a recovery starts on the node its crashed worker ran on.
    #[serde(default, skip_serializing_if = "is_false")]
    pub second_node: bool,
}

fn is_false(value: &bool) -> bool {
    !*value
}

fn default_latency_ms() -> u32 {
    20
}
fn default_timeout_ms() -> u32 {
    100
}
fn default_slow_response_ms() -> u32 {
    400
}
fn default_restart_ms() -> Option<u32> {
    Some(50)
}
fn default_lease_ms() -> u32 {
    150
}
fn default_max_phases() -> u32 {
    400
}

/// A level: the world, Penny's task, the tools, the guards, the cards and the goal.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Level {
    pub id: String,
    pub title: String,
    #[serde(default)]
    pub chapter: u32,
    #[serde(default)]
    pub chapter_title: String,
    #[serde(default)]
    pub order: u32,
    /// Level ids that must be finished first.
    #[serde(default)]
    pub requires: Vec<String>,
    /// What the player reads first: at most [`BRIEFING_WORDS_MAX`] words.
    pub briefing: String,
    /// The rest of the briefing, behind "more".
    #[serde(default)]
    pub briefing_more: String,
    pub lesson: Lesson,
    #[serde(default)]
    pub hints: Hints,
    #[serde(default)]
    pub par: Option<Par>,
    /// Unbeatable levels: the defender's challenge.
    #[serde(default)]
    pub defender: Option<Defender>,
    /// Unbeatable on purpose: the debrief explains why.
    #[serde(default)]
    pub unbeatable: bool,
    #[serde(default)]
    pub debrief: String,
    pub world: World,
    pub tools: Vec<ToolDeclaration>,
    #[serde(default)]
    pub model: ModelPolicy,
    /// The workflow node around each run: whether a failed run is started again as a fresh run.
    #[serde(default, skip_serializing_if = "is_default_workflow")]
    pub workflow: Workflow,
    pub runs: Vec<RunScript>,
    #[serde(default)]
    pub guards: Guards,
    #[serde(default)]
    pub cards: Vec<CardAllowance>,
    /// The tools whose declaration the player may write (a [`Play::DeclareTool`], with the
    /// DeclareTool card): their side effect, retry policy and key, before Penny's first call.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub declarable_tools: Vec<String>,
    /// What the crew is after.
    pub goal: Outcome,
    #[serde(default = "default_max_phases")]
    pub max_phases: u32,
}

fn is_default_workflow(workflow: &Workflow) -> bool {
    *workflow == Workflow::default()
}

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
        #[serde(default, skip_serializing_if = "Option::is_none")]
        in_phase: Option<String>,
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

/// A move at a point of the simulation: before phase `at_phase` runs.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TimedAction {
    pub at_phase: u32,
    pub play: Play,
}

/// A recorded game: a level, a seed, the player's timed moves, and the verdict expected.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Tape {
    /// The tape format: 1 (wire cards armed the next message) or 2 (they act on the wire now).
    #[serde(default = "first_tape_version")]
    pub version: u32,
    /// The level file, relative to the tape's folder.
    pub level: String,
    pub seed: u64,
    #[serde(default)]
    pub title: String,
    /// Guards as the player toggled them in the sandbox; `None`: as the level says.
    #[serde(default)]
    pub guards: Option<Guards>,
    #[serde(default)]
    pub actions: Vec<TimedAction>,
    pub expect: Expectation,
}

fn first_tape_version() -> u32 {
    1
}

impl Tape {
    /// The rule its wire cards were recorded under.
    pub fn wire_rule(&self) -> WireRule {
        WireRule::of_version(self.version)
    }
}

/// Only the version of a tape file, read before the rest (other fields are skipped).
#[derive(Deserialize)]
struct TapeVersionOnly {
    #[serde(default = "first_tape_version")]
    version: u32,
}

/// A tape as format version 1 stored it.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TapeVersion1 {
    #[serde(default = "first_tape_version")]
    version: u32,
    level: String,
    seed: u64,
    #[serde(default)]
    title: String,
    #[serde(default)]
    guards: Option<Guards>,
    #[serde(default)]
    actions: Vec<TimedActionVersion1>,
    expect: Expectation,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TimedActionVersion1 {
    at_phase: u32,
    play: PlayVersion1,
}

/// Parses a tape of either format: version 1 moves are read as they were written and keep
/// their version, so they replay by the rule they were recorded under.
pub fn parse_tape(path: &Path, text: &str) -> Result<Tape, InputError> {
    let version = parse_ron::<TapeVersionOnly>(path, text)?.version;
    match version {
        1 => {
            let old: TapeVersion1 = parse_ron(path, text)?;
            Ok(Tape {
                version: old.version,
                level: old.level,
                seed: old.seed,
                title: old.title,
                guards: old.guards,
                actions: old
                    .actions
                    .into_iter()
                    .map(|action| TimedAction {
                        at_phase: action.at_phase,
                        play: action.play.into(),
                    })
                    .collect(),
                expect: old.expect,
            })
        }
        TAPE_VERSION => parse_ron(path, text),
        other => Err(InputError::at(
            path,
            text,
            "version",
            0,
            format!("tape format version {other} is not one this twice-sim reads (1 and {TAPE_VERSION})"),
        )),
    }
}

/// A level loaded from its file, with its text (for locating later problems).
#[derive(Clone, Debug)]
pub struct LoadedLevel {
    pub path: PathBuf,
    pub text: String,
    pub level: Level,
}

/// A tape loaded with the level it names.
#[derive(Clone, Debug)]
pub struct LoadedTape {
    pub path: PathBuf,
    pub text: String,
    pub tape: Tape,
    pub level: LoadedLevel,
}

fn ron_options() -> ron::Options {
    ron::Options::default().with_default_extension(ron::extensions::Extensions::IMPLICIT_SOME)
}

fn read_text(path: &Path) -> Result<String, InputError> {
    let metadata =
        std::fs::metadata(path).map_err(|error| InputError::new(path, None, format!("cannot read: {error}")))?;
    if metadata.len() > FILE_BYTES_MAX {
        return Err(InputError::new(
            path,
            None,
            format!("{} bytes, more than the {FILE_BYTES_MAX} a file may be", metadata.len()),
        ));
    }
    std::fs::read_to_string(path).map_err(|error| InputError::new(path, None, format!("cannot read: {error}")))
}

/// Parses RON text into `T`, with the file, line and column of any error.
pub fn parse_ron<T: DeserializeOwned>(path: &Path, text: &str) -> Result<T, InputError> {
    ron_options().from_str(text).map_err(|error| {
        InputError::new(
            path,
            Some((error.position.line, error.position.col)),
            error.code.to_string(),
        )
    })
}

/// Serializes to pretty RON (what the game writes when it saves a tape).
pub fn to_ron<T: Serialize>(value: &T) -> String {
    let config = ron::ser::PrettyConfig::new().struct_names(false).depth_limit(6);
    ron::ser::to_string_pretty(value, config).expect("tapes and levels serialize")
}

/// A tape as its file holds it: one line per move, so a tape reads as a list of moves.
pub fn tape_to_ron(tape: &Tape) -> String {
    let config = ron::ser::PrettyConfig::new().struct_names(false).depth_limit(2);
    ron::ser::to_string_pretty(tape, config).expect("tapes serialize")
}

pub fn parse_level(path: &Path, text: &str) -> Result<Level, InputError> {
    let level: Level = parse_ron(path, text)?;
    validate_level(path, text, &level)?;
    Ok(level)
}

pub fn load_level(path: &Path) -> Result<LoadedLevel, InputError> {
    let text = read_text(path)?;
    let level = parse_level(path, &text)?;
    Ok(LoadedLevel {
        path: path.to_path_buf(),
        text,
        level,
    })
}

pub fn load_tape(path: &Path) -> Result<LoadedTape, InputError> {
    let text = read_text(path)?;
    let tape = parse_tape(path, &text)?;
    let level_path = path.parent().unwrap_or(Path::new(".")).join(&tape.level);
    if !level_path.is_file() {
        return Err(InputError::at(
            path,
            &text,
            "level",
            0,
            format!(
                "the tape's level `{}` does not exist (looked for {})",
                tape.level,
                level_path.display()
            ),
        ));
    }
    let level = load_level(&level_path)?;
    validate_tape(path, &text, &tape, &level.level)?;
    Ok(LoadedTape {
        path: path.to_path_buf(),
        text,
        tape,
        level,
    })
}

fn is_identifier(text: &str) -> bool {
    !text.is_empty() && text.len() <= 64 && text.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

/// Checks what serde cannot: references, limits, amounts.
pub fn validate_level(path: &Path, text: &str, level: &Level) -> Result<(), InputError> {
    let error = |needle: &str, nth: usize, message: String| Err(InputError::at(path, text, needle, nth, message));
    if !is_identifier(&level.id) {
        return error(
            "id",
            0,
            format!("level id `{}` must be 1 to 64 letters, digits, `-` or `_`", level.id),
        );
    }
    if level.runs.is_empty() || level.runs.len() > RUNS_MAX {
        return error(
            "runs",
            0,
            format!("a level has 1 to {RUNS_MAX} runs, this one has {}", level.runs.len()),
        );
    }
    if level.max_phases == 0 || level.max_phases > PHASES_MAX {
        return error(
            "max_phases",
            0,
            format!("max_phases must be 1 to {PHASES_MAX}, not {}", level.max_phases),
        );
    }
    if let Some(problem) = level.workflow.problem() {
        return error("workflow", 0, problem);
    }
    if level.world.timeout_ms == 0 {
        return error("timeout_ms", 0, "timeout_ms must be positive".into());
    }
    if level.world.slow_response_ms <= level.world.timeout_ms {
        return error(
            "slow_response_ms",
            0,
            format!(
                "slow_response_ms ({}) must be more than timeout_ms ({}), or a slowed response is not late",
                level.world.slow_response_ms, level.world.timeout_ms
            ),
        );
    }
    let mut accounts = BTreeSet::new();
    for (index, account) in level.world.accounts.iter().enumerate() {
        if !accounts.insert(account.id.as_str()) {
            return error(
                &format!("\"{}\"", account.id),
                1,
                format!("account `{}` is listed twice (account {index})", account.id),
            );
        }
    }
    let mut tools = BTreeMap::new();
    for tool in &level.tools {
        if tools.insert(tool.name.as_str(), tool).is_some() {
            return error(
                &format!("\"{}\"", tool.name),
                1,
                format!("tool `{}` is declared twice", tool.name),
            );
        }
        if let Some(problem) = tool.attempts_problem() {
            return error("attempts", 0, problem);
        }
        if let Some(problem) = Operation::problem(tool) {
            return error(&format!("\"{}\"", tool.name), 1, problem);
        }
    }
    let mut declarable = BTreeSet::new();
    for name in &level.declarable_tools {
        if !tools.contains_key(name.as_str()) {
            let known: Vec<&str> = tools.keys().copied().collect();
            return error(
                "declarable_tools",
                0,
                format!(
                    "declarable_tools names `{name}`, which the level does not declare; its tools: {}",
                    known.join(", ")
                ),
            );
        }
        if !declarable.insert(name.as_str()) {
            return error("declarable_tools", 0, format!("declarable_tools names `{name}` twice"));
        }
    }
    let deals_declarations = level
        .cards
        .iter()
        .any(|allowance| allowance.card == CardKind::DeclareTool);
    let names_declarable_tools = !level.declarable_tools.is_empty();
    if deals_declarations != names_declarable_tools {
        return error(
            if deals_declarations {
                "DeclareTool"
            } else {
                "declarable_tools"
            },
            0,
            "a level that deals the DeclareTool card names the tools it may declare in declarable_tools, and \
             a level with declarable_tools deals the card"
                .into(),
        );
    }
    let mut run_ids = BTreeSet::new();
    let mut call_index = 0;
    for run in &level.runs {
        if !is_identifier(&run.id) || !run_ids.insert(run.id.as_str()) {
            return error(
                &format!("\"{}\"", run.id),
                0,
                format!("run id `{}` must be a unique identifier", run.id),
            );
        }
        if run.calls.is_empty() || run.calls.len() > CALLS_PER_RUN_MAX {
            return error(
                &format!("\"{}\"", run.id),
                0,
                format!("run `{}` must make 1 to {CALLS_PER_RUN_MAX} calls", run.id),
            );
        }
        for call in &run.calls {
            let Some(tool) = tools.get(call.tool.as_str()) else {
                let known: Vec<&str> = tools.keys().copied().collect();
                return error(
                    "tool:",
                    call_index,
                    format!(
                        "run `{}` calls undeclared tool `{}`; declared: {}",
                        run.id,
                        call.tool,
                        known.join(", ")
                    ),
                );
            };
            if !accounts.contains(call.account.as_str()) {
                return error(
                    "account:",
                    call_index,
                    format!(
                        "run `{}` names account `{}`, which the world does not have",
                        run.id, call.account
                    ),
                );
            }
            if Operation::Credit.is_of(tool) && call.amount_cents == 0 {
                return error(
                    "amount_cents",
                    call_index,
                    "a credit's amount_cents must be positive".into(),
                );
            }
            call_index += 1;
        }
    }
    let mut kinds = BTreeSet::new();
    for (index, allowance) in level.cards.iter().enumerate() {
        if !kinds.insert(allowance.card) {
            return error(
                "card:",
                index,
                format!("card {} is listed twice", allowance.card.name()),
            );
        }
        if allowance.count == 0 || allowance.count > 99 {
            return error(
                "count",
                index,
                format!("a card's count must be 1 to 99, not {}", allowance.count),
            );
        }
    }
    for required in &level.requires {
        if required == &level.id {
            return error("requires", 0, "a level cannot require itself".into());
        }
    }
    Ok(())
}

/// Checks a tape against its level: cards allowed, counts, phases, references.
pub fn validate_tape(path: &Path, text: &str, tape: &Tape, level: &Level) -> Result<(), InputError> {
    let error = |nth: usize, message: String| Err(InputError::at(path, text, "at_phase", nth, message));
    if tape.actions.len() > ACTIONS_MAX {
        return error(ACTIONS_MAX, format!("a tape holds at most {ACTIONS_MAX} actions"));
    }
    let allowed: BTreeMap<CardKind, u32> = level
        .cards
        .iter()
        .map(|allowance| (allowance.card, allowance.count))
        .collect();
    let mut used: BTreeMap<CardKind, u32> = BTreeMap::new();
    let mut previous_phase = 0;
    for (index, action) in tape.actions.iter().enumerate() {
        let card = action.play.card();
        let Some(count) = allowed.get(&card) else {
            let hand: Vec<&str> = allowed.keys().map(|card| card.name()).collect();
            return error(
                index,
                format!(
                    "card {} is not in level `{}`'s hand (the hand: {})",
                    card.name(),
                    level.id,
                    if hand.is_empty() {
                        "no cards".into()
                    } else {
                        hand.join(", ")
                    }
                ),
            );
        };
        let used_now = used.entry(card).or_default();
        *used_now += 1;
        if *used_now > *count {
            return error(
                index,
                format!(
                    "card {} played {} times; the level gives {count}",
                    card.name(),
                    used_now
                ),
            );
        }
        if action.at_phase > level.max_phases {
            return error(
                index,
                format!(
                    "action at phase {} is after the level's end (max_phases {})",
                    action.at_phase, level.max_phases
                ),
            );
        }
        if action.at_phase < previous_phase {
            return error(
                index,
                format!(
                    "actions must be in phase order; {} comes after {previous_phase}",
                    action.at_phase
                ),
            );
        }
        previous_phase = action.at_phase;
        if let Some(run) = action.play.run()
            && !level.runs.iter().any(|script| script.id == run)
        {
            return error(index, format!("no run `{run}` in level `{}`", level.id));
        }
        match &action.play {
            Play::OperatorResolve {
                status,
                reason,
                operator,
                key,
                ..
            } => {
                if !matches!(status, Status::Completed | Status::Failed) {
                    return error(
                        index,
                        format!("an operator resolves to completed or failed, not {status}"),
                    );
                }
                if reason.trim().is_empty() {
                    return error(index, format!("resolving {key} needs a reason"));
                }
                if operator.trim().is_empty() {
                    return error(index, "an operator id is required".into());
                }
            }
            Play::OperatorCompensate { reason, key, operator } => {
                if reason.trim().is_empty() {
                    return error(index, format!("compensating {key} needs a reason"));
                }
                if operator.trim().is_empty() {
                    return error(index, "an operator id is required".into());
                }
            }
            Play::CrashWorker { worker: Some(0), .. } => {
                return error(index, "workers are numbered from 1 (w1)".into());
            }
            Play::DeclareTool { tool, attempts, .. } => {
                if !level.declarable_tools.contains(tool) {
                    return error(
                        index,
                        format!(
                            "tool `{tool}` cannot be declared in level `{}` (declarable: {})",
                            level.id,
                            if level.declarable_tools.is_empty() {
                                "none".to_owned()
                            } else {
                                level.declarable_tools.join(", ")
                            }
                        ),
                    );
                }
                if !(1..=READ_ATTEMPTS_MAX).contains(attempts) {
                    return error(
                        index,
                        format!("a tool is declared with 1 to {READ_ATTEMPTS_MAX} attempts, not {attempts}"),
                    );
                }
            }
            Play::CrashWorker {
                in_phase: Some(phase), ..
            } if phase.trim().is_empty() || phase.len() > PHASE_NAME_BYTES_MAX => {
                return error(
                    index,
                    format!("in_phase names the phase a worker is about to run (1 to {PHASE_NAME_BYTES_MAX} bytes)"),
                );
            }
            _ => {}
        }
    }
    Ok(())
}

/// Every `*.tape.ron` (or `*.level.ron`) below `path`, sorted; `path` itself if it is a file.
pub fn files_below(path: &Path, suffix: &str) -> Result<Vec<PathBuf>, InputError> {
    if path.is_file() {
        return Ok(vec![path.to_path_buf()]);
    }
    if !path.is_dir() {
        return Err(InputError::new(path, None, "no such file or folder"));
    }
    let mut found = Vec::new();
    let mut folders = vec![path.to_path_buf()];
    while let Some(folder) = folders.pop() {
        let entries = std::fs::read_dir(&folder).map_err(|error| InputError::new(&folder, None, error.to_string()))?;
        for entry in entries {
            let entry = entry.map_err(|error| InputError::new(&folder, None, error.to_string()))?;
            let entry_path = entry.path();
            if entry_path.is_dir() {
                folders.push(entry_path);
            } else if entry_path.to_string_lossy().ends_with(suffix) {
                found.push(entry_path);
            }
        }
    }
    found.sort();
    Ok(found)
}
