//! Levels and tapes: RON files with serde types, checked before anything is played.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize, de::DeserializeOwned};

use crate::billing::{Account, KeyHandling};
use crate::checker::{Outcome, ViolationKind};
use crate::error::InputError;
use crate::model::{ModelPolicy, RunScript};
use crate::runtime::guards::{Guard, Guards};
use crate::runtime::rules::Status;
use crate::runtime::tool::{Operation, ToolDeclaration};

/// The most phases any level may run (a limit on everything).
pub const PHASES_MAX: u32 = 100_000;
/// The most runs, calls per run and actions per tape a file may hold.
pub const RUNS_MAX: usize = 64;
pub const CALLS_PER_RUN_MAX: usize = 32;
pub const ACTIONS_MAX: usize = 1_000;
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
}

impl CardKind {
    pub const ALL: [CardKind; 9] = [
        CardKind::LoseRequest,
        CardKind::LoseResponse,
        CardKind::SlowResponse,
        CardKind::CrashWorker,
        CardKind::DuplicateWorker,
        CardKind::ModelCallsAgain,
        CardKind::ToolFailsBeforeSending,
        CardKind::OperatorResolve,
        CardKind::OperatorCompensate,
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
    pub briefing: String,
    pub lesson: Lesson,
    /// Unbeatable on purpose: the debrief explains why.
    #[serde(default)]
    pub unbeatable: bool,
    #[serde(default)]
    pub debrief: String,
    pub world: World,
    pub tools: Vec<ToolDeclaration>,
    #[serde(default)]
    pub model: ModelPolicy,
    pub runs: Vec<RunScript>,
    #[serde(default)]
    pub guards: Guards,
    #[serde(default)]
    pub cards: Vec<CardAllowance>,
    /// What the crew is after.
    pub goal: Outcome,
    #[serde(default = "default_max_phases")]
    pub max_phases: u32,
}

/// A player's move, as the game sends it and a tape stores it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub enum Play {
    /// The next (or in-flight) request is dropped before billing sees it.
    LoseRequest,
    /// The next (or in-flight) response is dropped after billing applied the request.
    LoseResponse,
    /// The next (or in-flight) response arrives after the timeout.
    SlowResponse,
    /// Crash a worker (`w<n>`); without a number, the oldest one alive.
    CrashWorker {
        #[serde(default)]
        worker: Option<u32>,
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
    /// The player, as operator, settles a call.
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
}

pub fn default_operator() -> String {
    "op-crew".into()
}

impl Play {
    pub fn card(&self) -> CardKind {
        match self {
            Play::LoseRequest => CardKind::LoseRequest,
            Play::LoseResponse => CardKind::LoseResponse,
            Play::SlowResponse => CardKind::SlowResponse,
            Play::CrashWorker { .. } => CardKind::CrashWorker,
            Play::DuplicateWorker { .. } => CardKind::DuplicateWorker,
            Play::ModelCallsAgain { .. } => CardKind::ModelCallsAgain,
            Play::ToolFailsBeforeSending { .. } => CardKind::ToolFailsBeforeSending,
            Play::OperatorResolve { .. } => CardKind::OperatorResolve,
            Play::OperatorCompensate { .. } => CardKind::OperatorCompensate,
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
}

/// A move at a point of the simulation: before phase `at_phase` runs.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TimedAction {
    pub at_phase: u32,
    pub play: Play,
}

/// What a tape expects the checker to say.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Expectation {
    pub verdict: Outcome,
    /// The guards that held, in the order they first held.
    #[serde(default)]
    pub stopped_by: Vec<Guard>,
    /// The kinds of broken promise the checker is expected to find (a level with a guard off
    /// may break one on purpose). Any other violation fails the replay.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub violations: Vec<ViolationKind>,
}

impl Expectation {
    /// What a tape expects to see again: this verdict, its guards and its violations.
    pub fn of(verdict: &crate::checker::Verdict) -> Expectation {
        Expectation {
            verdict: verdict.outcome,
            stopped_by: verdict.stopped_by.clone(),
            violations: verdict.violation_kinds(),
        }
    }
}

/// A recorded game: a level, a seed, the player's timed moves, and the verdict expected.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Tape {
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
    let tape: Tape = parse_ron(path, &text)?;
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
            if tool.operation == Operation::Credit && call.amount_cents == 0 {
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
            Play::CrashWorker { worker: Some(0) } => return error(index, "workers are numbered from 1 (w1)".into()),
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
