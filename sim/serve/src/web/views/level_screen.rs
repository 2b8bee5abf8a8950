//! The whole level screen, built from a participant's game.

use std::collections::BTreeMap;

use serde::Serialize;

use super::super::game::{Game, Mode};
use super::super::levels::Catalogue;
use super::debrief::end_view;
use super::level_parts::declaration_view;
use super::lobby::{goal_view, guard_views, listed_guards};
use super::*;
use crate::api::views::StoredJson;
use twice_world::billing::{Answer, EntryKind};
use twice_world::billing_tools::{CreditArguments, Operation};
use twice_world::checker::RowTelling;
use twice_world::ledger::{Checkpoint, ExecutionRecord, HistoryEntry};
use twice_world::level::{CardKind, default_operator};
use twice_world::runtime::run::RunStatus;
use twice_world::screen::{Panel, Panels};
use twice_world::simulator::{Actor, Direction, Simulation, TimelineEntry, WorkerView, dollars};

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
    /// The guards the screen names: off here, the lesson's, the rest on demand.
    pub guards_listed: ListedGuardsView,
    /// The panels this level shows.
    pub panels: PanelsView,
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
    /// The runtime's loop as this level runs it, a cursor per worker, Penny's tools.
    pub code: super::code::CodeView,
    pub hand: Vec<CardView>,
    pub armed: Vec<String>,
    pub timeline: TimelineView,
    pub played: Vec<MoveView>,
    pub end: Option<EndView>,
    /// Once the level is quiet: this run as a link's fragment (`replay=1.…`), which opens it
    /// at its end in any room serving the campaign.
    pub replay_link: Option<String>,
    /// Predict, then watch: the prediction made, this run's score, the tally (set by the
    /// request, which knows the participant).
    pub prediction: super::super::prediction::PredictionView,
}

fn level_head(game: &Game, number: &str) -> LevelHeadView {
    let level = game.level();
    LevelHeadView {
        id: level.id.clone(),
        stem: game.stem.clone(),
        number: number.to_owned(),
        goal_words: goal_view(level),
        file_name: game.file_name.clone(),
        title: level.title.clone(),
        chapter: level.chapter,
        chapter_title: level.chapter_title.clone(),
        briefing: level.briefing.clone(),
        goal: outcome_look(level.goal),
        unbeatable: level.unbeatable,
        max_phases: level.max_phases,
        defender: level
            .defender
            .as_ref()
            .filter(|_| level.unbeatable)
            .map(|defender| DefenderHeadView {
                budget: defender.budget,
                minimum_size: u32::try_from(defender.minimum.len()).unwrap_or(u32::MAX),
            }),
    }
}

fn answer_text(answer: &Answer) -> String {
    match answer {
        Answer::Applied { credit_id, .. } => format!("applied {credit_id}"),
        Answer::Repeat { credit_id, .. } => format!("repeat of {credit_id}: nothing applied"),
        Answer::Rejected { reason } => format!("rejected: {reason}"),
        Answer::Balance { balance_cents } => format!("balance {}", dollars(*balance_cents)),
        Answer::Emailed { email_id } => format!("sent {email_id}"),
        Answer::OwnerSet { owner, previous } => format!("owner set to {owner} (was {previous})"),
        Answer::Deleted { record } => format!("deleted {record}"),
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
        // An event this build has no words for (a newer runtime's) shows its stored name.
        event_words: ledger_words::event(entry.event).map_or(entry.event.name(), |words| words.words),
        event_says: ledger_words::event(entry.event).map_or("", |words| words.sentence),
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
        status_words: ledger_words::run_status(&checkpoint.status)
            .unwrap_or(&checkpoint.status)
            .to_owned(),
        saved_by: checkpoint.saved_by.clone(),
        updated_at_ms: checkpoint.updated_at_ms,
    }
}

pub(super) fn billing_view(simulation: &Simulation, looks: &KeyLooks) -> BillingView {
    let billing = simulation.billing();
    let total = billing.entries.len();
    let skipped = total.saturating_sub(BILLING_ENTRIES_SENT_MAX);
    BillingView {
        key_handling: billing.key_handling,
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
        outbox: newest(billing.records.outbox_rows()),
        owners: newest(billing.records.owner_rows()),
        deletions: newest(billing.records.deletion_rows()),
    }
}

/// The newest rows a page is sent, as many as billing's entries (a page polls: it never
/// carries a world's whole history).
fn newest<T>(mut rows: Vec<T>) -> Vec<T> {
    let skipped = rows.len().saturating_sub(BILLING_ENTRIES_SENT_MAX);
    rows.drain(..skipped);
    rows
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

/// The timeline's rows; a guard's row is told by how the finished run ended (`telling`: the
/// default while the run goes on), never as holding while a customer is owed or paid twice.
fn timeline_view(entries: &[TimelineEntry], looks: &KeyLooks, telling: &RowTelling) -> TimelineView {
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
        let last = entry.key.as_deref().and_then(|key| last_lane.insert(key, lane));
        // An answer comes from billing, whichever lane its key was drawn in last.
        let from_lane = entry
            .arrow_from()
            .filter(|origin| actors.contains(&origin))
            .map(|origin| lane_of(&origin))
            .or(last)
            .filter(|previous| *previous != lane);
        if index < skipped {
            continue;
        }
        let guard_row = entry.guard_row(telling);
        rows.push(TimelineRowView {
            phase: entry.phase,
            time_ms: entry.time_ms,
            lane,
            from_lane,
            kind: guard_row
                .as_ref()
                .map_or_else(|| entry.kind.clone(), |row| row.kind.to_owned()),
            key: entry.key.as_deref().map(|key| looks.look(key)),
            text: entry.text.clone(),
            guard: entry.guard.map(|guard| guard.name().to_owned()),
            guard_holding: guard_row.as_ref().is_some_and(|row| row.holding),
            guard_words: guard_row.as_ref().map(twice_world::guards::row_words),
        });
    }
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
        keys: looks.0.in_order().into_iter().map(|(key, _)| looks.look(key)).collect(),
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
                last_told: state.and_then(|state| state.last_told.map(|told| twice_world::text::told_words(&told))),
            }
        })
        .collect();
    PennyView { speech, runs }
}

/// Leaves out of `view.panels.arriving` the panels this participant met on another level they
/// played (its progress holds it): a panel is introduced once, as the window notes it once.
pub fn forget_met_panels(
    view: &mut GameView,
    progress: &std::collections::BTreeMap<String, super::super::sessions::LevelProgress>,
    catalogue: &Catalogue,
) {
    let met = |id: &str| {
        progress
            .keys()
            .filter(|level| **level != view.level.id)
            .filter_map(|level| catalogue.by_id(level))
            .any(|entry| {
                Panel::ALL
                    .into_iter()
                    .any(|panel| panel.id() == id && Panels::for_level(&entry.level).shows(panel))
            })
    };
    let arriving = std::mem::take(&mut view.panels.arriving);
    view.panels.arriving = arriving.into_iter().filter(|panel| !met(panel.id)).collect();
}

fn panels_view(game: &Game) -> PanelsView {
    let level = game.level();
    let (panels, arriving) = if game.mode == Mode::Campaign {
        (Panels::for_level(level), Panels::arriving(level))
    } else {
        (Panels::all(), Vec::new())
    };
    PanelsView {
        rulebook: panels.shows(Panel::Rulebook),
        ledger: panels.shows(Panel::Ledger),
        checkpoints: panels.shows(Panel::Checkpoints),
        console: panels.shows(Panel::Console),
        arriving: arriving
            .into_iter()
            .map(|panel| PanelIntroView {
                id: panel.id(),
                title: panel.title(),
                introduction: panel.introduction(),
            })
            .collect(),
    }
}

/// The messages on the wire, each with its key's look and what it carries.
fn wire_view(simulation: &Simulation, looks: &KeyLooks) -> Vec<MessageView> {
    let tools = &simulation.level().tools;
    simulation
        .messages()
        .map(|message| MessageView {
            asks: {
                let arguments = CreditArguments::of_call(&message.call);
                match Operation::of_tool(tools, &message.call.tool) {
                    Some(operation) => operation.asks(&arguments),
                    None => format!(
                        "{} to {}",
                        dollars(i64::from(arguments.amount_cents)),
                        arguments.account
                    ),
                }
            },
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
        .collect()
}

/// What a card will do now, in the player's words (as the game's hand says it).
fn card_effect(card: CardKind, simulation: &Simulation) -> String {
    twice_world::hand::effect(card, simulation)
}

/// The moves a card offers now (the game's chooser). Operator cards: none here, the
/// console builds them from a chosen call and a reason.
fn card_targets(card: CardKind, simulation: &Simulation) -> Vec<TargetView> {
    twice_world::hand::targets(card, simulation)
        .into_iter()
        .map(|target| TargetView {
            label: target.label,
            play: target.play,
        })
        .collect()
}

/// The level screen, from a participant's game and the simulation its caller holds (the view
/// only reads it; `game.simulation()` is not reentrant, so the caller locks it once).
pub fn game_view(
    game: &Game,
    simulation: &Simulation,
    catalogue: &Catalogue,
) -> Result<GameView, twice_world::ledger::LedgerError> {
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
            let card = allowance.card;
            let left = hand.get(&card).copied().unwrap_or(0);
            let targets = if left > 0 && playable {
                card_targets(card, simulation)
            } else {
                Vec::new()
            };
            CardView {
                card: card.name(),
                title: card.title(),
                left,
                effect: card_effect(card, simulation),
                operator: twice_world::hand::is_operator(card),
                declaration: twice_world::hand::is_declaration(card),
                plays_at_once: !targets.is_empty() && twice_world::hand::plays_at_once(card, simulation).is_some(),
                refusal: twice_world::hand::refusal(card, simulation),
                targets,
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
    let end = game.conclusion().map(|conclusion| EndView {
        code: super::code::debrief_code(simulation, &conclusion.debrief),
        ..end_view(game, simulation.played(), conclusion, catalogue, &looks)
    });
    let number = catalogue
        .levels()
        .get(game.level_index)
        .map_or("", |entry| entry.number());
    Ok(GameView {
        level: level_head(game, number),
        guards_listed: listed_guards(game.level(), simulation.guards()),
        panels: panels_view(game),
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
                phase: worker.phase,
                key: worker.key.as_deref().map(|key| looks.look(key)),
                attempt: worker.attempt,
                loaded_version: worker.loaded_version,
            })
            .collect(),
        wire: wire_view(simulation, &looks),
        billing: billing_view(simulation, &looks),
        ledger: records.iter().map(|record| record_row(record, &looks)).collect(),
        history: history[history_skipped..].iter().map(history_row).collect(),
        checkpoints: checkpoints.iter().map(checkpoint_view).collect(),
        console,
        declaration: declaration_view(simulation),
        code: super::code::code_view(game, simulation),
        hand: cards,
        armed: twice_world::hand::armed_lines(simulation.armed()),
        timeline: timeline_view(
            simulation.timeline(),
            &looks,
            &game
                .conclusion()
                .map(|conclusion| conclusion.debrief.row_telling(&conclusion.verdict))
                .unwrap_or_default(),
        ),
        played: simulation
            .played()
            .iter()
            .map(|action| MoveView {
                at_phase: action.at_phase,
                title: action.play.card().title(),
                play: action.play.clone(),
            })
            .collect(),
        replay_link: end.as_ref().map(|_| replay_link(game, simulation)),
        prediction: Default::default(),
        end,
    })
}

/// The run so far as a replay link's fragment. It takes the simulation its caller already holds:
/// `game.simulation()` locks a mutex that is not reentrant, so locking it again here while the
/// level screen is being drawn from it would wait forever.
pub fn replay_link(game: &Game, simulation: &Simulation) -> String {
    twice_world::replay_link::ReplayLink {
        level: game.stem.clone(),
        seed: game.seed,
        guards: (game.mode == Mode::Sandbox).then(|| simulation.guards()),
        moves: simulation.played().to_vec(),
    }
    .to_fragment()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A paused run's checkpoint line reads "awaiting reconciliation", not the stored name.
    #[test]
    fn a_checkpoints_status_is_said_in_words() {
        let checkpoint = Checkpoint::new("r1", 2, "awaiting_reconciliation", "{}", "w1", 0);
        let view = checkpoint_view(&checkpoint);
        assert_eq!(
            (view.status.as_str(), view.status_words.as_str()),
            ("awaiting_reconciliation", "awaiting reconciliation")
        );
    }
}
