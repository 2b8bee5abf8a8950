//! The pieces of the level screen: one view per panel (Penny, workers, the wire, billing,
//! the ledger, the console, the hand, the declaration form, the timeline, the verdict).

use serde::Serialize;

use super::{KeyLook, Look};
use crate::api::views::StoredJson;
use twice_world::billing::{KeyHandling, RecordRow};
use twice_world::level::Play;
use twice_world::runtime::ids::{RunId, ToolName, WorkerId};
use twice_world::runtime::tool::{READ_ATTEMPTS_MAX, SideEffect};
use twice_world::simulator::{Phase, Simulation};

#[derive(Clone, Debug, Serialize)]
pub struct LevelHeadView {
    pub id: String,
    pub stem: String,
    /// `1.3`: the level's campaign position, the number every page shows (its file says `21`).
    pub number: String,
    pub file_name: String,
    pub title: String,
    pub chapter: u32,
    pub chapter_title: String,
    pub briefing: String,
    pub goal: Look,
    /// What finishes the level, in words (a level finished by defending says so).
    pub goal_words: super::GoalView,
    pub unbeatable: bool,
    pub max_phases: u32,
    /// An unbeatable level's defender's challenge: switch on at most `budget` guards.
    pub defender: Option<DefenderHeadView>,
}

#[derive(Clone, Copy, Debug, Serialize)]
pub struct DefenderHeadView {
    pub budget: u32,
    /// How many guards the smallest known defence switches on.
    pub minimum_size: u32,
}

#[derive(Clone, Debug, Serialize)]
pub struct RunView {
    pub id: String,
    pub status: Look,
    /// The key a paused run waits on.
    pub waiting_on: Option<KeyLook>,
    /// The item of the run's script Penny works on, and calls made for it.
    pub item: u32,
    pub items: u32,
    pub calls_for_item: u32,
    pub last_told: Option<String>,
    /// Why the run failed, when it did.
    pub failed: Option<String>,
    /// What the runtime compensated by reflex when it failed.
    pub compensated: Vec<String>,
    /// The fresh run its workflow's retry started in its place.
    pub retried_as: Option<String>,
}

#[derive(Clone, Debug, Serialize)]
pub struct PennyView {
    /// What the model last decided, in words.
    pub speech: Option<String>,
    pub runs: Vec<RunView>,
}

#[derive(Clone, Debug, Serialize)]
pub struct WorkerLookView {
    pub number: u32,
    pub id: WorkerId,
    pub run: RunId,
    pub look: Look,
    /// False once it crashed, exited or stood down.
    pub alive: bool,
    /// The phase it runs next, or last ran (serialized by its name).
    pub phase: Phase,
    pub key: Option<KeyLook>,
    pub attempt: u32,
    pub loaded_version: u32,
}

#[derive(Clone, Debug, Serialize)]
pub struct MessageView {
    pub id: u32,
    /// `request` (worker → billing) or `response` (billing → worker).
    pub direction: &'static str,
    pub worker: u32,
    pub key: KeyLook,
    /// The key that travels with the request, if any (none: billing cannot tell repeats).
    pub downstream_key: Option<String>,
    pub attempt: u32,
    pub account: String,
    pub amount_cents: u32,
    /// What the request asks billing for, in words: a credit's amount, a lookup as a lookup.
    pub asks: String,
    pub answer: Option<String>,
    pub sent_at_ms: u64,
    pub arrives_at_ms: u64,
    pub lost: bool,
    pub slowed: bool,
}

#[derive(Clone, Debug, Serialize)]
pub struct AccountView {
    pub id: String,
    pub owner: String,
    pub balance_cents: i64,
    pub balance: String,
}

#[derive(Clone, Debug, Serialize)]
pub struct BillingEntryView {
    pub id: String,
    /// `credit` or `reversal`.
    pub kind: &'static str,
    pub account: String,
    pub amount_cents: i64,
    pub amount: String,
    pub memo: String,
    /// The key billing holds the credit under (honoured), or keeps in metadata, or none.
    pub key: Option<KeyLook>,
    pub key_kept: &'static str,
    pub at_ms: u64,
    pub reverses: Option<String>,
}

#[derive(Clone, Debug, Serialize)]
pub struct BillingView {
    /// Serialized by its serde name, as level files spell it: `honour`, `metadata_only` or
    /// `ignore` (what the page's script reads).
    pub key_handling: KeyHandling,
    pub accounts: Vec<AccountView>,
    pub entries: Vec<BillingEntryView>,
    pub entries_left_out: u32,
    /// Each customer's outbox, the owner history and the deletes, as the world words them (the
    /// page draws them; it decides nothing).
    pub outbox: Vec<RecordRow>,
    pub owners: Vec<RecordRow>,
    pub deletions: Vec<RecordRow>,
}

#[derive(Clone, Debug, Serialize)]
pub struct RecordRowView {
    pub key: KeyLook,
    pub run_id: RunId,
    pub tool_call_id: String,
    pub tool: ToolName,
    pub status: Look,
    /// The status's name, as an operator's `expected_status` takes it.
    pub status_name: &'static str,
    pub unknown: bool,
    pub attempts: u32,
    pub owner: WorkerId,
    pub arguments: StoredJson,
    pub result: Option<StoredJson>,
    pub updated_at_ms: u64,
    pub lease_expires_at_ms: Option<u64>,
}

#[derive(Clone, Debug, Serialize)]
pub struct HistoryRowView {
    pub id: u64,
    pub key: String,
    pub at_ms: u64,
    pub actor: String,
    /// The event as the ledger stores it (`recovered_unknown`).
    pub event: String,
    /// The event in words for the history line ("recovered as unknown"), and what happened.
    pub event_words: &'static str,
    pub event_says: &'static str,
    pub from_status: Option<Look>,
    pub to_status: Option<Look>,
    pub reason: Option<String>,
    pub detail: Option<String>,
}

#[derive(Clone, Debug, Serialize)]
pub struct CheckpointView {
    pub run_id: RunId,
    pub version: u32,
    /// As the checkpoint stores it (`awaiting_reconciliation`).
    pub status: String,
    /// In words ("awaiting reconciliation"), for the line a player reads.
    pub status_words: String,
    pub saved_by: WorkerId,
    pub updated_at_ms: u64,
}

/// A panel that arrives in this level's chapter, introduced once where it arrives.
#[derive(Clone, Debug, Serialize)]
pub struct PanelIntroView {
    pub id: &'static str,
    pub title: &'static str,
    pub introduction: &'static str,
}

/// Which of the panels that arrive chapter by chapter this level shows (twice-world's rule,
/// the window's too): the campaign introduces them; the sandbox and a replay show them all.
#[derive(Clone, Debug, Serialize)]
pub struct PanelsView {
    pub rulebook: bool,
    pub ledger: bool,
    pub checkpoints: bool,
    pub console: bool,
    /// Shown here for the first time: arriving in this chapter, and not met on a level this
    /// participant played before.
    pub arriving: Vec<PanelIntroView>,
}

/// The operator console: what the crew may do as an operator in this level.
#[derive(Clone, Debug, Serialize)]
pub struct ConsoleView {
    pub operator: String,
    pub resolve_left: Option<u32>,
    pub compensate_left: Option<u32>,
    /// Unknown calls, longest waiting first.
    pub unknown: Vec<KeyLook>,
}

#[derive(Clone, Debug, Serialize)]
pub struct TargetView {
    pub label: String,
    /// The move, exactly as `POST /api/game/play` takes it back (and a tape stores it).
    pub play: Play,
}

#[derive(Clone, Debug, Serialize)]
pub struct CardView {
    pub card: &'static str,
    pub title: &'static str,
    pub left: u32,
    /// What it does now, in the player's words.
    pub effect: String,
    /// An operator card is played from the console, not from the hand.
    pub operator: bool,
    /// A declaration is made in the tool declaration form, not from the hand.
    pub declaration: bool,
    /// With its one target, the hand plays it at once (a wire card with one message to hit):
    /// nothing to choose.
    pub plays_at_once: bool,
    /// Why it cannot be played now, in this run's terms (`None`: it can): the hand's button
    /// is disabled and says so.
    pub refusal: Option<String>,
    pub targets: Vec<TargetView>,
}

/// The contract check's verdict on one draft of a declaration.
#[derive(Clone, Debug, Serialize)]
pub struct DraftVerdictView {
    pub side_effect: &'static str,
    pub attempts: u32,
    pub takes_key: bool,
    pub passes: bool,
    /// The check's own words when it fails.
    pub violation: Option<String>,
    /// The ambiguity policy's refusal (that guard on in this run), which a draft passing the
    /// contract check can still meet at start.
    pub policy: Option<String>,
    /// The tool declared so, as code (`@billing.tool(external(), attempts=3)` …).
    pub code: Vec<String>,
}

/// A tool the player may declare, as it is declared now.
#[derive(Clone, Debug, Serialize)]
pub struct DeclarableView {
    pub tool: ToolName,
    pub side_effect: &'static str,
    pub attempts: u32,
    pub takes_key: bool,
    /// `external, 3 attempts, takes the key`.
    pub summary: String,
    pub passes: bool,
    pub violation: Option<String>,
    /// The ambiguity policy's refusal of the declaration as it stands.
    pub policy: Option<String>,
    /// Every draft the form can make, with the check's verdict on it.
    pub drafts: Vec<DraftVerdictView>,
}

/// The tool declaration form: present in levels that let the player declare a tool.
#[derive(Clone, Debug, Serialize)]
pub struct DeclarationView {
    pub tools: Vec<DeclarableView>,
    /// Guard `tool_contract`: a run whose tool fails the check does not start.
    pub check_on: bool,
    /// Why no tool can be declared any more (Penny's first call was made); `None`: open.
    pub closed: Option<String>,
    pub left: u32,
    pub side_effects: Vec<&'static str>,
    pub attempts_max: u32,
}

pub(super) fn declaration_view(simulation: &Simulation) -> Option<DeclarationView> {
    let declaration = twice_world::hand::declaration(simulation)?;
    Some(DeclarationView {
        tools: declaration
            .tools
            .iter()
            .map(|declarable| DeclarableView {
                tool: declarable.tool.name.clone(),
                side_effect: declarable.tool.side_effect.name(),
                attempts: declarable.tool.declared_attempts(),
                takes_key: declarable.tool.takes_key,
                summary: declarable.tool.summary(),
                passes: declarable.violation.is_none(),
                violation: declarable.violation.clone(),
                policy: declarable.policy.clone(),
                drafts: declarable
                    .drafts
                    .iter()
                    .map(|draft| DraftVerdictView {
                        side_effect: draft.side_effect.name(),
                        attempts: draft.attempts,
                        takes_key: draft.takes_key,
                        passes: draft.violation.is_none(),
                        violation: draft.violation.clone(),
                        policy: draft.policy.clone(),
                        code: twice_world::code::declaration_code(&declarable.tool.declared_as(
                            draft.side_effect,
                            draft.attempts,
                            draft.takes_key,
                        ))
                        .into_iter()
                        .map(|line| line.text)
                        .collect(),
                    })
                    .collect(),
            })
            .collect(),
        check_on: declaration.check_on,
        closed: declaration.closed,
        left: declaration.left,
        side_effects: SideEffect::ALL.iter().map(|side_effect| side_effect.name()).collect(),
        attempts_max: READ_ATTEMPTS_MAX,
    })
}

#[derive(Clone, Debug, Serialize)]
pub struct LaneView {
    pub id: String,
    pub label: String,
}

#[derive(Clone, Debug, Serialize)]
pub struct TimelineRowView {
    pub phase: u32,
    pub time_ms: u64,
    /// Index in [`TimelineView::lanes`].
    pub lane: u32,
    /// The lane this key was last seen in, when it moved: an arrow from there.
    pub from_lane: Option<u32>,
    pub kind: String,
    pub key: Option<KeyLook>,
    pub text: String,
    pub guard: Option<String>,
    /// A guard's row may be drawn as the guard holding (nobody in the finished run is owed or
    /// paid twice, or the run goes on).
    pub guard_holding: bool,
    /// A guard's part of the row in words: "the tool contract check held", or what it did and what the
    /// finished run still did to the money.
    pub guard_words: Option<String>,
}

#[derive(Clone, Debug, Serialize)]
pub struct TimelineView {
    pub lanes: Vec<LaneView>,
    pub rows: Vec<TimelineRowView>,
    pub rows_left_out: u32,
    pub keys: Vec<KeyLook>,
}

#[derive(Clone, Debug, Serialize)]
pub struct MoveView {
    pub at_phase: u32,
    pub title: &'static str,
    pub play: Play,
}

#[derive(Clone, Debug, Serialize)]
pub struct CreditView {
    /// The credit in words: its memo and its place in Penny's script, counted from one.
    pub label: String,
    /// The account's owner ("Ada").
    pub owner: String,
    pub run: String,
    /// The call's index in the run's script, from zero (`label` counts from one).
    pub item: u32,
    pub account: String,
    pub owed: String,
    pub credits_applied: u32,
    pub net: String,
    pub keys: Vec<KeyLook>,
    pub outcome: Look,
}

#[derive(Clone, Debug, Serialize)]
pub struct StopView {
    pub guard: &'static str,
    pub describe: &'static str,
    /// What it did, the first time it held.
    pub what: Option<String>,
}

#[derive(Clone, Debug, Serialize)]
pub struct VerdictView {
    pub outcome: Look,
    pub outcome_name: &'static str,
    pub goal: Look,
    pub goal_reached: bool,
    pub credits: Vec<CreditView>,
    pub stopped_by: Vec<StopView>,
    pub violations: Vec<String>,
    pub summary: String,
}
