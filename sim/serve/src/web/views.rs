//! Every JSON answer the browser gets, built from the simulator's state in this one file.
//!
//! The simulator's types are changing (typed actors with a lane and a label, typed history
//! events and guard notes, typed violations in the verdict); every conversion from them to
//! what the pages read lives here, so following such a change is an edit in one place.
//! The pages only draw what these views say: the colour and glyph of each key, a status's
//! glyph and word, which targets a card offers — nothing is worked out twice.
//!
//! Integers in these types are fixed-width; amounts are cents (`_cents`), times virtual
//! milliseconds (`_ms`).

use std::collections::BTreeMap;
use twice_world::billing_tools::CreditArguments;

use serde::Serialize;

use super::game::{Conclusion, Game};
use super::levels::{Catalogue, CatalogueLevel};
use super::race::{Race, RaceState};
use super::sessions::{LevelProgress, Participant, Win};
use crate::api::views::StoredJson;
use twice_world::billing::{Answer, EntryKind, KeyHandling};
use twice_world::checker::{Outcome, Verdict};
use twice_world::ledger::{Checkpoint, ExecutionRecord, HistoryEntry, HistoryEvent};
use twice_world::level::{CardKind, Level, Play, default_operator};
use twice_world::runtime::guards::Guard;
use twice_world::runtime::key::fnv1a64;
use twice_world::runtime::rules::Status;
use twice_world::runtime::run::RunStatus;
use twice_world::runtime::tool::{READ_ATTEMPTS_MAX, SideEffect};
use twice_world::runtime::worker::WorkerState;
use twice_world::simulator::{Actor, Direction, Simulation, TimelineEntry, WorkerView, dollars};

pub use crate::api::views::shorten;

/// The most timeline entries one answer carries (the newest); a level runs at most
/// [`super::LEVEL_PHASES_MAX`] phases, so this is only a backstop.
pub const TIMELINE_ENTRIES_SENT_MAX: usize = 3_000;
/// The most ledger history entries one answer carries (the newest).
pub const HISTORY_ENTRIES_SENT_MAX: usize = 500;
/// The most billing entries one answer carries (the newest).
pub const BILLING_ENTRIES_SENT_MAX: usize = 200;

// ----- looks: a glyph and a word for everything, a colour only on top -----

/// Key colours, handed out in order of first appearance (the game's palette).
const KEY_COLOURS: [&str; 8] = [
    "#ff6ec8", "#96e65a", "#7896ff", "#ff965a", "#c896ff", "#ffeb64", "#5ae6c8", "#ff7878",
];
const KEY_GLYPHS: [char; 8] = ['●', '■', '▲', '◆', '★', '▼', '⬟', '◉'];
/// Distinct (colour, glyph) pairs before they repeat.
const KEY_LOOKS: usize = KEY_COLOURS.len() * KEY_GLYPHS.len();

/// One idempotency key's look: a colour and a glyph, so keys are told apart without colour.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct KeyLook {
    pub key: String,
    pub glyph: String,
    pub colour: &'static str,
}

fn key_look_at(key: &str, index: usize) -> KeyLook {
    // Colour `i` goes with glyph `i`, then glyph `i + 1`, …: neighbours differ in both.
    let index = index % KEY_LOOKS;
    KeyLook {
        key: key.to_owned(),
        glyph: KEY_GLYPHS[(index + index / KEY_COLOURS.len()) % KEY_GLYPHS.len()].to_string(),
        colour: KEY_COLOURS[index % KEY_COLOURS.len()],
    }
}

/// Keys numbered by first appearance in the timeline; keys it never showed get a stable
/// look from their hash.
#[derive(Debug, Default)]
struct KeyLooks {
    index: BTreeMap<String, usize>,
}

impl KeyLooks {
    fn from_timeline(entries: &[TimelineEntry]) -> KeyLooks {
        let mut index = BTreeMap::new();
        for key in entries.iter().filter_map(|entry| entry.key.as_ref()) {
            let next = index.len();
            index.entry(key.clone()).or_insert(next);
        }
        KeyLooks { index }
    }

    fn look(&self, key: &str) -> KeyLook {
        let index = self
            .index
            .get(key)
            .copied()
            .unwrap_or_else(|| (fnv1a64(&[key.as_bytes()]) % KEY_LOOKS as u64) as usize);
        key_look_at(key, index)
    }
}

/// A glyph, a word and a tone (a CSS class: `good`, `bad`, `warn`, `info`, `violet`,
/// `crew`, `runtime`, `dim`) for a status of any kind. The glyphs are all in DejaVu Sans
/// (no emoji): a projector's bare Linux still draws every one.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Look {
    pub glyph: &'static str,
    pub word: String,
    pub tone: &'static str,
}

fn look(glyph: &'static str, word: impl Into<String>, tone: &'static str) -> Look {
    Look {
        glyph,
        word: word.into(),
        tone,
    }
}

pub fn status_look(status: Status) -> Look {
    match status {
        Status::Started => look("▶", "started", "info"),
        Status::Completed => look("✔", "completed", "good"),
        Status::Failed => look("✘", "failed", "bad"),
        Status::Indeterminate => look("?", "indeterminate", "warn"),
        Status::Compensating => look("↻", "compensating", "violet"),
        Status::Compensated => look("↺", "compensated", "violet"),
    }
}

pub fn outcome_look(outcome: Outcome) -> Look {
    match outcome {
        Outcome::PaidTwice => look("2×", "paid twice", "bad"),
        Outcome::NotPaidButOwed => look("✘", "not paid, though owed", "warn"),
        Outcome::UnknownFlagged => look("?", "honestly unknown, flagged and waiting", "info"),
        Outcome::PaidOnce => look("✔", "paid exactly once", "good"),
    }
}

fn worker_look(worker: &WorkerView) -> Look {
    if worker.crashed {
        return look("✘", "crashed", "bad");
    }
    if !worker.alive {
        return match worker.state {
            WorkerState::StoodDown => look("⏏", "stood down", "dim"),
            WorkerState::WaitingForPerson => look("✋", "waits for a person", "bad"),
            _ => look("■", "exited", "dim"),
        };
    }
    match worker.state {
        WorkerState::Booting => look("…", "booting", "dim"),
        WorkerState::Deciding => look("☁", "asking Penny", "runtime"),
        WorkerState::Reserving => look("⚑", "reserving", "info"),
        WorkerState::Calling => look("✉", "calling billing", "crew"),
        WorkerState::Recording => look("✎", "recording", "info"),
        WorkerState::Reconciling => look("⌕", "reconciling", "violet"),
        WorkerState::Saving => look("⛁", "saving", "info"),
        WorkerState::Parked => look("‖", "parked", "warn"),
        WorkerState::StoodDown => look("⏏", "stood down", "dim"),
        WorkerState::WaitingForPerson => look("✋", "waits for a person", "bad"),
        WorkerState::Exited => look("■", "exited", "dim"),
    }
}

fn run_status_look(status: &RunStatus) -> Look {
    match status {
        RunStatus::Running => look("▶", "running", "runtime"),
        RunStatus::AwaitingReconciliation { .. } => look("‖", "awaiting reconciliation", "warn"),
        RunStatus::Completed => look("✔", "completed", "good"),
        RunStatus::Failed { .. } => look("✘", "failed", "bad"),
    }
}

// ----- the room and the levels -----

/// Who the browser is.
#[derive(Clone, Debug, Serialize)]
pub struct MeView {
    pub name: String,
    pub unlock_all: bool,
    /// The level open in this session, by stem.
    pub game: Option<String>,
    pub finished: u32,
    pub idle_minutes: u64,
}

pub fn me_view(participant: &Participant, unlock_all: bool, idle_minutes: u64) -> MeView {
    MeView {
        name: participant.name.clone(),
        unlock_all,
        game: participant.game.as_ref().map(|game| game.stem.clone()),
        finished: u32::try_from(
            participant
                .progress
                .values()
                .filter(|progress| progress.finished)
                .count(),
        )
        .unwrap_or(u32::MAX),
        idle_minutes,
    }
}

/// A level's target: the fewest cards, then phases, of the best win known (`par` in its file).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct ParView {
    pub cards: u32,
    pub phases: u32,
}

/// The par of a level, if it has one (unbeatable levels have none).
pub fn par_of(level: &Level) -> Option<ParView> {
    level.par.map(|par| ParView {
        cards: par.cards,
        phases: par.phases,
    })
}

#[derive(Clone, Debug, Serialize)]
pub struct GuardView {
    pub name: &'static str,
    pub on: bool,
    pub describe: &'static str,
}

fn guard_views(guards: twice_world::runtime::guards::Guards) -> Vec<GuardView> {
    Guard::ALL
        .into_iter()
        .map(|guard| GuardView {
            name: guard.name(),
            on: guards.is_on(guard),
            describe: guard.describe(),
        })
        .collect()
}

#[derive(Clone, Debug, Serialize)]
pub struct CardCountView {
    pub card: &'static str,
    pub title: &'static str,
    pub count: u32,
}

#[derive(Clone, Debug, Serialize)]
pub struct WinView {
    pub cards: u32,
    pub phases: u32,
    pub outcome: Look,
}

fn win_view(win: &Win) -> WinView {
    WinView {
        cards: win.cards,
        phases: win.phases,
        outcome: outcome_look(win.outcome),
    }
}

/// A level on the level-select screen.
#[derive(Clone, Debug, Serialize)]
pub struct LevelSummaryView {
    pub id: String,
    pub stem: String,
    pub title: String,
    pub chapter: u32,
    pub chapter_title: String,
    pub briefing: String,
    pub goal: Look,
    pub unbeatable: bool,
    pub cards: Vec<CardCountView>,
    /// The guards this level switches off.
    pub guards_off: Vec<GuardView>,
    /// Titles of the levels to finish first.
    pub requires: Vec<String>,
    /// `locked`, `open` or `finished`, with a glyph.
    pub state: Look,
    pub playable: bool,
    pub best: Option<WinView>,
    pub par: Option<ParView>,
}

pub fn level_summaries(catalogue: &Catalogue, participant: &Participant, unlock_all: bool) -> Vec<LevelSummaryView> {
    catalogue
        .levels()
        .iter()
        .map(|entry| {
            let level = &entry.level;
            let progress: Option<&LevelProgress> = participant.progress.get(&level.id);
            let open = unlock_all || level.requires.iter().all(|id| participant.is_finished(id));
            let state = match (progress.is_some_and(|progress| progress.finished), open) {
                (true, _) => look("✔", "finished", "good"),
                (false, true) => look("○", "open", "info"),
                (false, false) => look("⊘", "locked", "dim"),
            };
            LevelSummaryView {
                id: level.id.clone(),
                stem: entry.stem.clone(),
                title: level.title.clone(),
                chapter: level.chapter,
                chapter_title: level.chapter_title.clone(),
                briefing: level.briefing.clone(),
                goal: outcome_look(level.goal),
                unbeatable: level.unbeatable,
                cards: level
                    .cards
                    .iter()
                    .map(|allowance| CardCountView {
                        card: allowance.card.name(),
                        title: allowance.card.title(),
                        count: allowance.count,
                    })
                    .collect(),
                guards_off: guard_views(level.guards)
                    .into_iter()
                    .filter(|guard| !guard.on)
                    .collect(),
                requires: level
                    .requires
                    .iter()
                    .map(|id| {
                        catalogue
                            .by_id(id)
                            .map_or_else(|| id.clone(), |required| required.level.title.clone())
                    })
                    .collect(),
                state,
                playable: open,
                best: progress.and_then(|progress| progress.best.as_ref()).map(win_view),
                par: par_of(level),
            }
        })
        .collect()
}

/// Whether a participant may open a level with its own guards.
pub fn is_open(catalogue_level: &CatalogueLevel, participant: &Participant, unlock_all: bool) -> bool {
    unlock_all
        || catalogue_level
            .level
            .requires
            .iter()
            .all(|id| participant.is_finished(id))
}

// ----- the level screen -----

#[derive(Clone, Debug, Serialize)]
pub struct LevelHeadView {
    pub id: String,
    pub stem: String,
    pub file_name: String,
    pub title: String,
    pub chapter: u32,
    pub chapter_title: String,
    pub briefing: String,
    pub goal: Look,
    pub unbeatable: bool,
    pub max_phases: u32,
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
    pub id: String,
    pub run: String,
    pub look: Look,
    /// False once it crashed, exited or stood down.
    pub alive: bool,
    /// The phase it runs next, or last ran.
    pub phase: String,
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
    /// `honour`, `metadata_only` or `ignore`.
    pub key_handling: &'static str,
    pub accounts: Vec<AccountView>,
    pub entries: Vec<BillingEntryView>,
    pub entries_left_out: u32,
}

#[derive(Clone, Debug, Serialize)]
pub struct RecordRowView {
    pub key: KeyLook,
    pub run_id: String,
    pub tool_call_id: String,
    pub tool: String,
    pub status: Look,
    /// The status's name, as an operator's `expected_status` takes it.
    pub status_name: &'static str,
    pub unknown: bool,
    pub attempts: u32,
    pub owner: String,
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
    pub event: String,
    pub from_status: Option<Look>,
    pub to_status: Option<Look>,
    pub reason: Option<String>,
    pub detail: Option<String>,
}

#[derive(Clone, Debug, Serialize)]
pub struct CheckpointView {
    pub run_id: String,
    pub version: u32,
    pub status: String,
    pub saved_by: String,
    pub updated_at_ms: u64,
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
}

/// A tool the player may declare, as it is declared now.
#[derive(Clone, Debug, Serialize)]
pub struct DeclarableView {
    pub tool: String,
    pub side_effect: &'static str,
    pub attempts: u32,
    pub takes_key: bool,
    /// `external, 3 attempts, takes the key`.
    pub summary: String,
    pub passes: bool,
    pub violation: Option<String>,
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

fn declaration_view(simulation: &Simulation) -> Option<DeclarationView> {
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
                drafts: declarable
                    .drafts
                    .iter()
                    .map(|draft| DraftVerdictView {
                        side_effect: draft.side_effect.name(),
                        attempts: draft.attempts,
                        takes_key: draft.takes_key,
                        passes: draft.violation.is_none(),
                        violation: draft.violation.clone(),
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
    pub run: String,
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

fn verdict_view(verdict: &Verdict, looks: &KeyLooks) -> VerdictView {
    VerdictView {
        outcome: outcome_look(verdict.outcome),
        outcome_name: verdict.outcome.name(),
        goal: outcome_look(verdict.goal),
        goal_reached: verdict.goal_reached,
        credits: verdict
            .credits
            .iter()
            .map(|credit| CreditView {
                run: credit.run.clone(),
                item: credit.item,
                account: credit.account.clone(),
                owed: dollars(credit.owed_cents),
                credits_applied: credit.credits_applied,
                net: dollars(credit.net_cents),
                keys: credit.keys.iter().map(|key| looks.look(key)).collect(),
                outcome: outcome_look(credit.outcome),
            })
            .collect(),
        stopped_by: verdict
            .stopped_by
            .iter()
            .enumerate()
            .map(|(index, guard)| StopView {
                guard: guard.name(),
                describe: guard.describe(),
                what: verdict.stops.get(index).cloned(),
            })
            .collect(),
        violations: verdict.violations.iter().map(ToString::to_string).collect(),
        summary: verdict.summary.clone(),
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct LessonView {
    pub guards: Vec<&'static str>,
    pub rule: String,
    pub text: String,
    pub debrief: String,
}

/// The debrief: the verdict, what it means for progress, and the lesson.
#[derive(Clone, Debug, Serialize)]
pub struct EndView {
    pub verdict: VerdictView,
    /// The goal was reached (or the level cannot be beaten and was played out).
    pub finished: bool,
    /// The play counts for progress and the scoreboard (a campaign play, not a sandbox).
    pub counted: bool,
    pub cards: u32,
    pub phases: u32,
    pub lesson: LessonView,
    /// The debrief drawn from the run: headline, diagnosis, the story only when it happened, par.
    pub debrief: twice_world::debrief::Debrief,
    /// The next level in level-select order, by stem.
    pub next: Option<String>,
}

/// The whole level screen.
#[derive(Clone, Debug, Serialize)]
pub struct GameView {
    pub level: LevelHeadView,
    /// `campaign` (the level's own guards; progress counts) or `sandbox` (chosen guards).
    pub mode: &'static str,
    pub seed: u64,
    pub phase: u32,
    pub now_ms: u64,
    /// Quiet: nothing is left to happen (a move may still wake it).
    pub over: bool,
    /// The phase limit is reached: no more moves.
    pub out_of_phases: bool,
    pub guards: Vec<GuardView>,
    pub penny: PennyView,
    pub workers: Vec<WorkerLookView>,
    pub wire: Vec<MessageView>,
    pub billing: BillingView,
    pub ledger: Vec<RecordRowView>,
    pub history: Vec<HistoryRowView>,
    pub checkpoints: Vec<CheckpointView>,
    pub console: ConsoleView,
    /// The tool declaration form, in levels that let the player declare a tool.
    pub declaration: Option<DeclarationView>,
    pub hand: Vec<CardView>,
    pub armed: Vec<String>,
    pub timeline: TimelineView,
    pub played: Vec<MoveView>,
    pub end: Option<EndView>,
}

fn level_head(game: &Game) -> LevelHeadView {
    let level = game.level();
    LevelHeadView {
        id: level.id.clone(),
        stem: game.stem.clone(),
        file_name: game.file_name.clone(),
        title: level.title.clone(),
        chapter: level.chapter,
        chapter_title: level.chapter_title.clone(),
        briefing: level.briefing.clone(),
        goal: outcome_look(level.goal),
        unbeatable: level.unbeatable,
        max_phases: level.max_phases,
    }
}

fn answer_text(answer: &Answer) -> String {
    match answer {
        Answer::Applied { credit_id, .. } => format!("applied {credit_id}"),
        Answer::Repeat { credit_id, .. } => format!("repeat of {credit_id}: nothing applied"),
        Answer::Rejected { reason } => format!("rejected: {reason}"),
        Answer::Balance { balance_cents } => format!("balance {}", dollars(*balance_cents)),
    }
}

fn key_handling_name(handling: KeyHandling) -> &'static str {
    match handling {
        KeyHandling::Honour => "honour",
        KeyHandling::MetadataOnly => "metadata_only",
        KeyHandling::Ignore => "ignore",
    }
}

fn stored_json(text: &str) -> StoredJson {
    StoredJson::from_stored(text)
}

fn record_row(record: &ExecutionRecord, looks: &KeyLooks) -> RecordRowView {
    RecordRowView {
        key: looks.look(record.key.as_str()),
        run_id: record.run_id.clone(),
        tool_call_id: record.tool_call_id.clone(),
        tool: record.tool.clone(),
        status: status_look(record.status),
        status_name: record.status.name(),
        unknown: record.status.is_unknown(),
        attempts: record.attempts,
        owner: record.owner.clone(),
        arguments: stored_json(&record.arguments),
        result: record.result.as_deref().map(stored_json),
        updated_at_ms: record.updated_at_ms,
        lease_expires_at_ms: record.lease_expires_at_ms,
    }
}

fn history_row(entry: &HistoryEntry) -> HistoryRowView {
    HistoryRowView {
        id: entry.id,
        key: entry.key.to_string(),
        at_ms: entry.at_ms,
        actor: entry.actor.clone(),
        event: entry.event.name().to_owned(),
        from_status: entry.from_status.map(status_look),
        to_status: entry.to_status.map(status_look),
        reason: entry.reason.clone(),
        detail: entry.detail.clone(),
    }
}

fn checkpoint_view(checkpoint: &Checkpoint) -> CheckpointView {
    CheckpointView {
        run_id: checkpoint.run_id.clone(),
        version: checkpoint.version,
        status: checkpoint.status.clone(),
        saved_by: checkpoint.saved_by.clone(),
        updated_at_ms: checkpoint.updated_at_ms,
    }
}

fn billing_view(simulation: &Simulation, looks: &KeyLooks) -> BillingView {
    let billing = simulation.billing();
    let total = billing.entries.len();
    let skipped = total.saturating_sub(BILLING_ENTRIES_SENT_MAX);
    BillingView {
        key_handling: key_handling_name(billing.key_handling),
        accounts: billing
            .accounts
            .values()
            .map(|account| AccountView {
                id: account.id.clone(),
                owner: account.owner.clone(),
                balance_cents: account.balance_cents,
                balance: dollars(account.balance_cents),
            })
            .collect(),
        entries: billing.entries[skipped..]
            .iter()
            .map(|entry| {
                let (key, key_kept) = match (&entry.idempotency_key, entry.metadata.get("idempotency_key")) {
                    (Some(key), _) => (Some(looks.look(key)), "honoured"),
                    (None, Some(key)) => (Some(looks.look(key)), "metadata only"),
                    (None, None) => (None, "no key"),
                };
                BillingEntryView {
                    id: entry.id.clone(),
                    kind: match entry.kind {
                        EntryKind::Credit => "credit",
                        EntryKind::Reversal => "reversal",
                    },
                    account: entry.account.clone(),
                    amount_cents: entry.amount_cents,
                    amount: dollars(entry.amount_cents),
                    memo: entry.memo.clone(),
                    key,
                    key_kept,
                    at_ms: entry.at_ms,
                    reverses: entry.reverses.clone(),
                }
            })
            .collect(),
        entries_left_out: u32::try_from(skipped).unwrap_or(u32::MAX),
    }
}

/// A lane's words: the typed actor's label, with a word for the player's own lanes.
fn lane_label(actor: &Actor) -> String {
    match actor {
        Actor::Crew => "crew (you)".into(),
        Actor::Model => "Penny".into(),
        Actor::Simulation => "simulator".into(),
        Actor::Worker(number) => format!("worker w{number}"),
        other => other.label(),
    }
}

fn timeline_view(entries: &[TimelineEntry], looks: &KeyLooks) -> TimelineView {
    let mut actors: Vec<&Actor> = Vec::new();
    for entry in entries {
        if !actors.contains(&&entry.actor) {
            actors.push(&entry.actor);
        }
    }
    actors.sort_by(|left, right| left.lane_order().cmp(&right.lane_order()));
    let lane_of = |actor: &Actor| actors.iter().position(|lane| *lane == actor).unwrap_or(0) as u32;
    let mut last_lane: BTreeMap<&str, u32> = BTreeMap::new();
    let skipped = entries.len().saturating_sub(TIMELINE_ENTRIES_SENT_MAX);
    let mut rows = Vec::with_capacity(entries.len() - skipped);
    for (index, entry) in entries.iter().enumerate() {
        let lane = lane_of(&entry.actor);
        let from_lane = entry
            .key
            .as_deref()
            .and_then(|key| last_lane.insert(key, lane))
            .filter(|previous| *previous != lane);
        if index < skipped {
            continue;
        }
        rows.push(TimelineRowView {
            phase: entry.phase,
            time_ms: entry.time_ms,
            lane,
            from_lane,
            kind: entry.kind.clone(),
            key: entry.key.as_deref().map(|key| looks.look(key)),
            text: entry.text.clone(),
            guard: entry.guard.map(|guard| guard.name().to_owned()),
        });
    }
    let mut keys: Vec<(usize, KeyLook)> = looks
        .index
        .iter()
        .map(|(key, index)| (*index, key_look_at(key, *index)))
        .collect();
    keys.sort_by_key(|(index, _)| *index);
    TimelineView {
        lanes: actors
            .iter()
            .map(|actor| LaneView {
                id: actor.label(),
                label: lane_label(actor),
            })
            .collect(),
        rows,
        rows_left_out: u32::try_from(skipped).unwrap_or(u32::MAX),
        keys: keys.into_iter().map(|(_, look)| look).collect(),
    }
}

fn penny_view(simulation: &Simulation, workers: &[WorkerView], looks: &KeyLooks) -> PennyView {
    let speech = simulation
        .timeline()
        .iter()
        .rev()
        .find(|entry| entry.actor == Actor::Model)
        .map(|entry| entry.text.clone());
    // Each of the level's runs, then the fresh runs a workflow's retry started for it.
    let mut started: Vec<(usize, u32, &str)> = simulation
        .nodes()
        .iter()
        .filter_map(|(run, node)| {
            let position = simulation
                .level()
                .runs
                .iter()
                .position(|script| script.id == node.node)?;
            Some((position, node.retry, run.as_str()))
        })
        .collect();
    started.sort_unstable();
    let runs = started
        .into_iter()
        .map(|(position, _, run)| {
            let script = &simulation.level().runs[position];
            // The run as its newest worker knows it (a crashed one's replacement comes later).
            let state = workers
                .iter()
                .rev()
                .find(|worker| worker.run == run)
                .map(|worker| worker.run_state.clone());
            let status = state.as_ref().map_or(RunStatus::Running, |state| state.status.clone());
            let failed = simulation.failed_runs().iter().find(|failed| failed.run == run);
            RunView {
                id: run.to_owned(),
                failed: match &status {
                    RunStatus::Failed { reason } => Some(twice_world::debrief::plain(reason)),
                    _ => None,
                },
                compensated: failed.map(|failed| failed.compensated.clone()).unwrap_or_default(),
                retried_as: failed.and_then(|failed| failed.fresh_run.clone()),
                waiting_on: match &status {
                    RunStatus::AwaitingReconciliation { key } => Some(looks.look(key)),
                    _ => None,
                },
                status: run_status_look(&status),
                item: state.as_ref().map_or(0, |state| state.item),
                items: u32::try_from(script.calls.len()).unwrap_or(u32::MAX),
                calls_for_item: state.as_ref().map_or(0, |state| state.calls_for_item),
                last_told: state.and_then(|state| state.last_told.map(|told| told.describe())),
            }
        })
        .collect();
    PennyView { speech, runs }
}

/// What a card will do now, in the player's words (as the game's hand says it).
fn card_effect(card: CardKind, simulation: &Simulation) -> String {
    twice_world::hand::effect(card, simulation)
}

/// The moves a card offers now (the game's chooser). Operator cards: none here, the
/// console builds them from a chosen call and a reason.
fn card_targets(card: CardKind, simulation: &Simulation, _workers: &[WorkerView]) -> Vec<TargetView> {
    twice_world::hand::targets(card, simulation)
        .into_iter()
        .map(|target| TargetView {
            label: target.label,
            play: target.play,
        })
        .collect()
}

fn armed_lines(simulation: &Simulation) -> Vec<String> {
    let armed = simulation.armed();
    let mut lines = Vec::new();
    if armed.lose_request > 0 {
        lines.push(format!("the next {} request(s) will be lost", armed.lose_request));
    }
    if armed.lose_response > 0 {
        lines.push(format!("the next {} response(s) will be lost", armed.lose_response));
    }
    if armed.slow_response > 0 {
        lines.push(format!("the next {} response(s) will be slowed", armed.slow_response));
    }
    for (run, reword) in &armed.call_again {
        lines.push(format!(
            "Penny will call again on {run}{}",
            if *reword { ", reworded" } else { "" }
        ));
    }
    for (run, count) in &armed.not_attempted {
        lines.push(format!("{count} call(s) on {run} will refuse before sending"));
    }
    lines
}

/// The level screen, from a participant's game.
pub fn game_view(game: &Game, catalogue: &Catalogue) -> Result<GameView, twice_world::ledger::LedgerError> {
    let simulation = game.simulation();
    let looks = KeyLooks::from_timeline(simulation.timeline());
    let workers = simulation.workers();
    let mut records = simulation.ledger_records()?;
    let history = simulation.ledger_history()?;
    let checkpoints = simulation.checkpoints()?;
    let hand = simulation.hand();
    let playable = !simulation.is_out_of_phases();
    let cards: Vec<CardView> = simulation
        .level()
        .cards
        .iter()
        .map(|allowance| {
            let left = hand.get(&allowance.card).copied().unwrap_or(0);
            let operator = matches!(allowance.card, CardKind::OperatorResolve | CardKind::OperatorCompensate);
            CardView {
                card: allowance.card.name(),
                title: allowance.card.title(),
                left,
                effect: card_effect(allowance.card, simulation),
                operator,
                declaration: twice_world::hand::is_declaration(allowance.card),
                targets: if left > 0 && playable {
                    card_targets(allowance.card, simulation, &workers)
                } else {
                    Vec::new()
                },
            }
        })
        .collect();
    records
        .sort_by(|left, right| (left.created_at_ms, left.key.as_str()).cmp(&(right.created_at_ms, right.key.as_str())));
    let mut unknown: Vec<&ExecutionRecord> = records.iter().filter(|record| record.status.is_unknown()).collect();
    unknown.sort_by_key(|record| (record.updated_at_ms, record.key.as_str().to_owned()));
    let console = ConsoleView {
        operator: default_operator(),
        resolve_left: hand.get(&CardKind::OperatorResolve).copied(),
        compensate_left: hand.get(&CardKind::OperatorCompensate).copied(),
        unknown: unknown.iter().map(|record| looks.look(record.key.as_str())).collect(),
    };
    let history_skipped = history.len().saturating_sub(HISTORY_ENTRIES_SENT_MAX);
    let end = game
        .conclusion()
        .map(|conclusion| end_view(game, conclusion, catalogue, &looks));
    Ok(GameView {
        level: level_head(game),
        mode: game.mode.name(),
        seed: game.seed,
        phase: simulation.phase(),
        now_ms: simulation.now_ms(),
        over: simulation.is_over(),
        out_of_phases: simulation.is_out_of_phases(),
        guards: guard_views(simulation.guards()),
        penny: penny_view(simulation, &workers, &looks),
        workers: workers
            .iter()
            .map(|worker| WorkerLookView {
                number: worker.number,
                id: worker.id.clone(),
                run: worker.run.clone(),
                look: worker_look(worker),
                alive: worker.alive,
                phase: worker.phase.clone(),
                key: worker.key.as_deref().map(|key| looks.look(key)),
                attempt: worker.attempt,
                loaded_version: worker.loaded_version,
            })
            .collect(),
        wire: simulation
            .messages()
            .map(|message| MessageView {
                id: message.id,
                direction: match message.direction {
                    Direction::Request => "request",
                    Direction::Response => "response",
                },
                worker: message.worker,
                key: looks.look(&message.key),
                downstream_key: message.downstream_key.clone(),
                attempt: message.attempt,
                account: CreditArguments::of_call(&message.call).account,
                amount_cents: CreditArguments::of_call(&message.call).amount_cents,
                answer: message.answer.as_ref().map(answer_text),
                sent_at_ms: message.sent_at_ms,
                arrives_at_ms: message.arrives_at_ms,
                lost: message.lost,
                slowed: message.slowed,
            })
            .collect(),
        billing: billing_view(simulation, &looks),
        ledger: records.iter().map(|record| record_row(record, &looks)).collect(),
        history: history[history_skipped..].iter().map(history_row).collect(),
        checkpoints: checkpoints.iter().map(checkpoint_view).collect(),
        console,
        declaration: declaration_view(simulation),
        hand: cards,
        armed: armed_lines(simulation),
        timeline: timeline_view(simulation.timeline(), &looks),
        played: simulation
            .played()
            .iter()
            .map(|action| MoveView {
                at_phase: action.at_phase,
                title: action.play.card().title(),
                play: action.play.clone(),
            })
            .collect(),
        end,
    })
}

fn end_view(game: &Game, conclusion: &Conclusion, catalogue: &Catalogue, looks: &KeyLooks) -> EndView {
    let level = game.level();
    EndView {
        verdict: verdict_view(&conclusion.verdict, looks),
        finished: conclusion.finished,
        counted: game.mode == super::game::Mode::Campaign,
        cards: conclusion.cards,
        phases: conclusion.phases,
        lesson: LessonView {
            guards: level.lesson.guards.iter().map(|guard| guard.name()).collect(),
            rule: level.lesson.rule.clone(),
            text: level.lesson.text.clone(),
            debrief: level.debrief.clone(),
        },
        debrief: conclusion.debrief.clone(),
        next: catalogue.next(game.level_index).map(|next| next.stem.clone()),
    }
}

/// The name a downloaded tape gets: the level's stem, then the player, so saved beside
/// `levels/` it sits with the level's other tapes (`01-naive-retry.web-ada.tape.ron`).
pub fn tape_file_name(stem: &str, player: &str) -> String {
    let player: String = player
        .chars()
        .map(|character| {
            if character.is_ascii_alphanumeric() {
                character.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect();
    let player = player.trim_matches('-');
    let player = if player.is_empty() { "player" } else { player };
    format!("{stem}.web-{player}{}", twice_world::campaign::TAPE_SUFFIX)
}

// ----- the race -----

/// A decision on a call, as its history records it: who, what, why.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct DecisionView {
    pub operator: String,
    pub status: Look,
    pub reason: Option<String>,
    pub event: String,
}

/// The first settling decision in a record's history (a resolve or a compensation): the
/// one that won, since a settled decision is never overwritten.
pub fn decision_of(history: &[HistoryEntry]) -> Option<DecisionView> {
    history
        .iter()
        .find(|entry| {
            matches!(
                entry.event,
                HistoryEvent::Resolved | HistoryEvent::CompensationClaimed | HistoryEvent::LegacyCompensated
            )
        })
        .map(|entry| DecisionView {
            operator: entry.actor.clone(),
            status: entry.to_status.map_or_else(|| look("·", "settled", "dim"), status_look),
            reason: entry.reason.clone(),
            event: entry.event.name().to_owned(),
        })
}

#[derive(Clone, Debug, Serialize)]
pub struct TryView {
    pub name: String,
    pub status: Look,
    pub won: bool,
}

/// The room's race, for a participant (`tries` left empty) or the presenter.
#[derive(Clone, Debug, Serialize)]
pub struct RaceView {
    pub open: bool,
    pub number: u32,
    pub tape: String,
    pub title: String,
    pub level_title: String,
    pub key: Option<KeyLook>,
    /// The status the room was shown; every resolve is compare-and-set on it.
    pub opened_status: Option<Look>,
    pub status_now: Option<Look>,
    pub account: String,
    pub amount: String,
    pub memo: String,
    /// What billing holds for the account: what an operator would look up before deciding.
    pub billing: Vec<BillingEntryView>,
    pub briefing: String,
    pub winner: Option<DecisionView>,
    pub tries_total: u32,
    pub tries: Vec<TryView>,
    /// What the run did with the winning decision, once it ran on.
    pub after: Option<VerdictView>,
}

pub fn no_race_view() -> RaceView {
    RaceView {
        open: false,
        number: 0,
        tape: String::new(),
        title: String::new(),
        level_title: String::new(),
        key: None,
        opened_status: None,
        status_now: None,
        account: String::new(),
        amount: String::new(),
        memo: String::new(),
        billing: Vec::new(),
        briefing: String::new(),
        winner: None,
        tries_total: 0,
        tries: Vec::new(),
        after: None,
    }
}

pub fn race_view(race: &Race, catalogue: &Catalogue, with_tries: bool) -> RaceView {
    let tape = &catalogue.tapes()[race.tape];
    let level = &catalogue.levels()[tape.level].level;
    let simulation = race.simulation();
    let looks = KeyLooks::from_timeline(simulation.timeline());
    let record = simulation.ledger().record(&race.key).ok().flatten();
    let arguments: Option<CreditArguments> = record
        .as_ref()
        .and_then(|record| serde_json::from_str(&record.arguments).ok());
    let billing = billing_view(&simulation, &looks);
    let account = arguments
        .as_ref()
        .map(|arguments| arguments.account.clone())
        .unwrap_or_default();
    let state: std::sync::MutexGuard<'_, RaceState> = race.state();
    RaceView {
        open: true,
        number: race.number,
        tape: tape.stem.clone(),
        title: tape.tape.title.clone(),
        level_title: level.title.clone(),
        key: Some(looks.look(race.key.as_str())),
        opened_status: Some(status_look(race.opened_status)),
        status_now: record.as_ref().map(|record| status_look(record.status)),
        amount: arguments
            .as_ref()
            .map(|arguments| dollars(i64::from(arguments.amount_cents)))
            .unwrap_or_default(),
        memo: arguments
            .as_ref()
            .map(|arguments| arguments.memo.clone())
            .unwrap_or_default(),
        billing: billing
            .entries
            .into_iter()
            .filter(|entry| entry.account == account)
            .collect(),
        account,
        briefing: level.briefing.clone(),
        winner: state.winner.clone(),
        tries_total: state.tries_total,
        tries: if with_tries {
            state
                .tries
                .iter()
                .map(|attempt| TryView {
                    name: attempt.name.clone(),
                    status: status_look(attempt.status),
                    won: attempt.won,
                })
                .collect()
        } else {
            Vec::new()
        },
        after: state.after.as_ref().map(|verdict| verdict_view(verdict, &looks)),
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct RaceCandidateView {
    pub tape: String,
    pub title: String,
    pub level_title: String,
    pub key: String,
    pub status: Look,
}

pub fn race_candidates(catalogue: &Catalogue) -> Vec<RaceCandidateView> {
    catalogue
        .race_candidates()
        .iter()
        .map(|candidate| {
            let tape = &catalogue.tapes()[candidate.tape];
            RaceCandidateView {
                tape: tape.stem.clone(),
                title: tape.tape.title.clone(),
                level_title: catalogue.levels()[tape.level].level.title.clone(),
                key: candidate.key.to_string(),
                status: status_look(candidate.status),
            }
        })
        .collect()
}

// ----- the presenter's room -----

#[derive(Clone, Debug, Serialize)]
pub struct WinLineView {
    pub level: String,
    pub level_title: String,
    pub win: WinView,
}

#[derive(Clone, Debug, Serialize)]
pub struct ParticipantView {
    pub name: String,
    /// The level open now, by title, and its phase.
    pub level: Option<String>,
    pub mode: Option<&'static str>,
    pub phase: Option<u32>,
    pub finished: u32,
    pub wins: Vec<WinLineView>,
    pub idle_seconds: u64,
}

pub fn participant_view(participant: &Participant, catalogue: &Catalogue, idle_seconds: u64) -> ParticipantView {
    ParticipantView {
        name: participant.name.clone(),
        level: participant.game.as_ref().map(|game| game.level().title.clone()),
        mode: participant.game.as_ref().map(|game| game.mode.name()),
        phase: participant.game.as_ref().map(|game| game.simulation().phase()),
        finished: u32::try_from(
            participant
                .progress
                .values()
                .filter(|progress| progress.finished)
                .count(),
        )
        .unwrap_or(u32::MAX),
        wins: catalogue
            .levels()
            .iter()
            .filter_map(|entry| {
                let best = participant.progress.get(&entry.level.id)?.best?;
                Some(WinLineView {
                    level: entry.stem.clone(),
                    level_title: entry.level.title.clone(),
                    win: win_view(&best),
                })
            })
            .collect(),
        idle_seconds,
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct ScoreView {
    pub rank: u32,
    pub name: String,
    pub cards: u32,
    pub phases: u32,
    pub outcome: Look,
    /// How far over par (cards, then phases), once the level has one.
    pub over_par: Option<ParView>,
}

#[derive(Clone, Debug, Serialize)]
pub struct BoardView {
    pub level: String,
    pub level_title: String,
    pub par: Option<ParView>,
    pub scores: Vec<ScoreView>,
}

/// One board per level anyone finished: fewest cards, then fewest phases, then name.
pub fn scoreboard(catalogue: &Catalogue, wins: &[(String, BTreeMap<String, LevelProgress>)]) -> Vec<BoardView> {
    catalogue
        .levels()
        .iter()
        .filter_map(|entry| {
            let par = par_of(&entry.level);
            let mut scores: Vec<(String, Win)> = wins
                .iter()
                .filter_map(|(name, progress)| Some((name.clone(), progress.get(&entry.level.id)?.best?)))
                .collect();
            if scores.is_empty() {
                return None;
            }
            scores.sort_by(|left, right| {
                (left.1.cards, left.1.phases, left.0.to_lowercase()).cmp(&(
                    right.1.cards,
                    right.1.phases,
                    right.0.to_lowercase(),
                ))
            });
            Some(BoardView {
                level: entry.stem.clone(),
                level_title: entry.level.title.clone(),
                par,
                scores: scores
                    .into_iter()
                    .enumerate()
                    .map(|(index, (name, win))| ScoreView {
                        rank: u32::try_from(index + 1).unwrap_or(u32::MAX),
                        name,
                        cards: win.cards,
                        phases: win.phases,
                        outcome: outcome_look(win.outcome),
                        over_par: par.map(|par| ParView {
                            cards: win.cards.saturating_sub(par.cards),
                            phases: win.phases.saturating_sub(par.phases),
                        }),
                    })
                    .collect(),
            })
        })
        .collect()
}

/// The presenter's page.
#[derive(Clone, Debug, Serialize)]
pub struct RoomView {
    pub sessions: Vec<ParticipantView>,
    pub sessions_max: u32,
    pub idle_minutes: u64,
    pub unlock_all: bool,
    pub scoreboard: Vec<BoardView>,
    pub race: RaceView,
    pub race_candidates: Vec<RaceCandidateView>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_keys_differ_in_colour_and_in_glyph() {
        let looks: Vec<KeyLook> = (0..KEY_COLOURS.len()).map(|index| key_look_at("k", index)).collect();
        for (index, look) in looks.iter().enumerate() {
            for other in &looks[index + 1..] {
                assert_ne!(look.colour, other.colour);
                assert_ne!(look.glyph, other.glyph);
            }
        }
        // All 64 pairs are distinct.
        let pairs: std::collections::BTreeSet<(String, &str)> = (0..KEY_LOOKS)
            .map(|index| {
                let look = key_look_at("k", index);
                (look.glyph, look.colour)
            })
            .collect();
        assert_eq!(pairs.len(), KEY_LOOKS);
    }

    #[test]
    fn every_status_has_a_glyph_and_a_word() {
        for status in Status::ALL {
            let look = status_look(status);
            assert!(!look.glyph.is_empty());
            assert_eq!(look.word, status.name());
        }
    }

    #[test]
    fn tape_names_keep_to_safe_characters() {
        assert_eq!(
            tape_file_name("01-naive-retry", "Ada"),
            "01-naive-retry.web-ada.tape.ron"
        );
        assert_eq!(
            tape_file_name("01-naive-retry", "Zoë O'Brien"),
            "01-naive-retry.web-zo--o-brien.tape.ron"
        );
        assert_eq!(
            tape_file_name("01-naive-retry", "ëë"),
            "01-naive-retry.web-player.tape.ron"
        );
    }
}
