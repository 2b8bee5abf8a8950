//! Levels and tapes: RON files with serde types, checked before anything is played.
//!
//! This file holds a level's types; the player's moves are the cards' ([`crate::cards`]), tapes
//! and reading files are in [`tape`], and the checks serde cannot make in [`validate`].

mod tape;
mod validate;

pub use crate::cards::{CardKind, Play, PlayVersion1, TAPE_VERSION, WireRule, default_operator};
pub use crate::outcome::Expectation;
pub use tape::{
    LoadedLevel, LoadedTape, Tape, TimedAction, files_below, load_level, load_tape, parse_level, parse_ron, parse_tape,
    tape_to_ron, to_ron,
};
pub use validate::{actions_problem, validate_level, validate_tape};

use serde::{Deserialize, Serialize};

use crate::billing::{Account, KeyHandling, Terms};
use crate::model::{ModelPolicy, RunScript};
use crate::outcome::Outcome;
use crate::runtime::guards::{Guard, Guards};
use crate::runtime::tool::ToolDeclaration;
use crate::runtime::worker::Phase;
use crate::runtime::workflow::Workflow;

/// How a level file's name ends.
pub const LEVEL_SUFFIX: &str = ".level.ron";
/// How a tape file's name ends.
pub const TAPE_SUFFIX: &str = ".tape.ron";

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
/// The most input a level or tape file may be.
pub const FILE_BYTES_MAX: u64 = 1 << 20;

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
    /// The move the prose describes, as a tape's moves: the campaign plays it (it wins a
    /// beatable level, every move is legal where it is played) and holds the prose to it —
    /// the phases it names, and what it says the run is doing then.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub move_actions: Vec<TimedAction>,
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
/// `budget`, that stop every heist the campaign knows here (the defender's search).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Defender {
    pub budget: u32,
    /// A smallest set of guards that holds (checked: it holds, and no smaller set does).
    pub minimum: Vec<Guard>,
}

/// A scripted, honest operator who works the same queue as the player: the calls runs are
/// paused on (`indeterminate`). `checks_after_ms` after a run pauses on a call, they look the
/// key up in billing's entries by hand and resolve the call with what they find, compare-and-set
/// from the `indeterminate` they saw — so of their decision and the player's, exactly one lands.
/// Deterministic: a fixed delay in virtual time, no randomness.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HonestOperator {
    /// Their operator id, as the ledger's history records it (`op-honest`).
    pub name: String,
    /// How long after a run pauses on a call they check billing and decide.
    pub checks_after_ms: u32,
}

/// The longest an honest operator may take to check a call (a limit like every other).
pub const HONEST_CHECK_MS_MAX: u32 = 100_000;

/// A scripted operator who audits billing against the ledger once, at a time the level
/// declares: for each refund Penny meant to pay, they count the credits standing in billing. Two
/// credits for one refund is a double; they keep the one whose call the ledger records
/// completed (else billing's first) and compensate each other one through the runtime's own
/// compensation: asked on the call's key, with a reason, compare-and-set from the status they
/// saw. An audit sees only what billing has applied: a request still on the wire is not there yet.
/// Deterministic: a fixed moment in virtual time.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Auditor {
    /// Their operator id, as the ledger's history records it (`op-audit`).
    pub name: String,
    /// When they check billing, in milliseconds of the level's virtual time.
    pub audits_at_ms: u32,
}

/// The latest moment a level may schedule its audit (a limit like every other).
pub const AUDIT_AT_MS_MAX: u32 = 100_000;

/// Someone outside the agent changes an account's owner at a fixed moment (support, the customer
/// at the account page): the write Penny's retry can undo. The accounts service records who made
/// each change, so the checker can tell Penny's writes from theirs. Deterministic: a fixed moment
/// in virtual time, like the audit.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptedOwnerChange {
    /// When the change reaches the accounts service, in milliseconds of virtual time.
    pub at_ms: u32,
    /// The account whose owner changes (one of the world's accounts).
    pub account: String,
    /// The new owner.
    pub owner: String,
    /// Who made the change, as the owner history records it (`support`).
    pub by: String,
}

/// The latest moment a scripted owner change may land (a limit like the audit's).
pub const OWNER_CHANGE_AT_MS_MAX: u32 = 100_000;
/// The most scripted owner changes one world holds.
pub const OWNER_CHANGES_MAX: usize = 16;

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
    /// How long billing keeps an idempotency key (its published terms, [`Terms`]): past it a
    /// resend is paid again and a lookup by the key finds nothing. `None`: forever.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub billing_key_retention_ms: Option<u64>,
    /// How long after a credit billing's lookups by key still do not show it. `None`: at once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub billing_lookup_settle_ms: Option<u64>,
    /// The runtime's declared `recovery_attempts_max` for every run of the level: recoveries
    /// that start from the same checkpoint and get no further, before the run is dead-lettered
    /// (guard `dead_letter`). `None`: no limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recovery_attempts_max: Option<u32>,
    /// A crash loop: a bug in the recovery path kills (as SIGKILL) every worker that picks up a
    /// run after a crash, just before it runs this phase (`"reconcile"`: the hook's client dies
    /// on what the lookup returns). Deterministic, so every recovery of the run dies the same
    /// way and none gets past the checkpoint it loaded. `None`: recoveries run clean.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recovery_crashes_at: Option<Phase>,
    /// Owner changes made by someone outside the agent, each at its moment.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub owner_changes: Vec<ScriptedOwnerChange>,
}

impl World {
    /// Billing's terms as the level declares them.
    pub fn billing_terms(&self) -> Terms {
        Terms {
            key_retention_ms: self.billing_key_retention_ms,
            lookup_settle_ms: self.billing_lookup_settle_ms,
        }
    }

    /// The customer who owns account `account` ("Ada"), or the account's id if none does.
    pub fn owner_of(&self, account: &str) -> String {
        self.accounts
            .iter()
            .find(|known| known.id == account)
            .map_or_else(|| account.to_owned(), |known| known.owner.clone())
    }
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
    /// A scripted operator the player races for each paused call (see [`HonestOperator`]).
    /// With one, the player's console lists what theirs does: paused (`indeterminate`) calls.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub honest_operator: Option<HonestOperator>,
    /// A scripted operator who audits billing once and compensates doubles (see [`Auditor`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auditor: Option<Auditor>,
    /// What the crew is after.
    pub goal: Outcome,
    #[serde(default = "default_max_phases")]
    pub max_phases: u32,
    /// A regression case, not a campaign level: a failure someone wants to keep out, whose
    /// tapes replay as tests. It needs no hints, par, win tape, chapter or order, and the
    /// campaign (the game, a room) leaves it out; everything else is checked as for any level.
    #[serde(default, skip_serializing_if = "is_false")]
    pub regression: bool,
}

impl Level {
    /// The names of the level's tools that issue credits (whose calls move money).
    pub fn credit_tools(&self) -> std::collections::BTreeSet<&str> {
        self.tools
            .iter()
            .filter(|tool| crate::billing_tools::Operation::Credit.is_of(tool))
            .map(|tool| tool.name.as_str())
            .collect()
    }

    /// Every credit the script asks for, in script order: its run, its index in the run's
    /// calls (from 0) and the call. The one list the checker owes and the campaign's goal
    /// reads, so the two never disagree on which calls move money.
    pub fn credit_calls(&self) -> impl Iterator<Item = (&RunScript, usize, &crate::model::ScriptCall)> {
        let tools = self.credit_tools();
        self.runs
            .iter()
            .flat_map(|run| {
                run.calls
                    .iter()
                    .enumerate()
                    .map(move |(index, call)| (run, index, call))
            })
            .filter(move |(_, _, call)| tools.contains(call.tool.as_str()))
    }

    /// Who the level's first call is for, by name ("the customer" when no account says).
    pub fn first_owner(&self) -> String {
        let account = self
            .runs
            .first()
            .and_then(|run| run.calls.first())
            .map(|call| &call.account);
        account
            .and_then(|id| self.world.accounts.iter().find(|account| &account.id == id))
            .map_or_else(|| "the customer".to_owned(), |account| account.owner.clone())
    }
}

fn is_default_workflow(workflow: &Workflow) -> bool {
    *workflow == Workflow::default()
}
