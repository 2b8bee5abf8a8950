//! The fault cards in hand. Playing one that needs a target (a worker, a run) opens a
//! chooser; the move is an `Intent::Play` with the same `Play` a tape stores.

use bevy_egui::egui::{self, RichText};
use twice_sim::level::{CardKind, Play};
use twice_sim::simulator::{Direction, Simulation};

use super::{Chooser, LevelUi};
use crate::session::{Intent, Mode, Session};
use crate::ui::{self, theme};

/// The cards in the order the level lists them (the number keys follow this order).
pub fn hand_order(simulation: &Simulation) -> Vec<CardKind> {
    simulation.level().cards.iter().map(|allowance| allowance.card).collect()
}

fn is_operator(card: CardKind) -> bool {
    matches!(card, CardKind::OperatorResolve | CardKind::OperatorCompensate)
}

/// What the card will do now, in the player's words.
fn effect(card: CardKind, simulation: &Simulation) -> String {
    let in_flight = |direction: Direction| {
        simulation
            .messages()
            .find(|message| message.direction == direction && !message.lost)
            .map(|message| message.key.clone())
    };
    match card {
        CardKind::LoseRequest => match in_flight(Direction::Request) {
            Some(key) => format!("drops the request for {key} now on the wire"),
            None => "arms: the next request is dropped before billing sees it".into(),
        },
        CardKind::LoseResponse => match in_flight(Direction::Response) {
            Some(key) => format!("drops the response for {key} now on the wire"),
            None => "arms: the next response is dropped after billing applies it".into(),
        },
        CardKind::SlowResponse => match in_flight(Direction::Response) {
            Some(key) => format!("delays the response for {key} past the timeout"),
            None => "arms: the next response arrives after the timeout".into(),
        },
        CardKind::CrashWorker => "SIGKILL a worker you choose; a fresh one recovers the run".into(),
        CardKind::DuplicateWorker => "start a second worker on a run you choose".into(),
        CardKind::ModelCallsAgain => "Penny calls the tool again (a new tool call) on a run".into(),
        CardKind::ToolFailsBeforeSending => "the run's next call refuses before sending anything".into(),
        CardKind::OperatorResolve => "settle an unknown call: use the operator console".into(),
        CardKind::OperatorCompensate => "undo a call that took effect: use the operator console".into(),
    }
}

/// The choices a card offers: a label and the move it makes. Empty: nothing to target.
pub fn targets(card: CardKind, simulation: &Simulation) -> Vec<(String, Play)> {
    let runs: Vec<String> = simulation.level().runs.iter().map(|run| run.id.clone()).collect();
    match card {
        CardKind::LoseRequest => vec![("now".into(), Play::LoseRequest)],
        CardKind::LoseResponse => vec![("now".into(), Play::LoseResponse)],
        CardKind::SlowResponse => vec![("now".into(), Play::SlowResponse)],
        CardKind::CrashWorker => simulation
            .workers()
            .into_iter()
            .filter(|worker| worker.alive)
            .map(|worker| {
                (
                    format!("{} on {} — about to: {}", worker.id, worker.run, worker.phase),
                    Play::CrashWorker {
                        worker: Some(worker.number),
                    },
                )
            })
            .collect(),
        CardKind::DuplicateWorker => runs
            .into_iter()
            .map(|run| (format!("a twin on run {run}"), Play::DuplicateWorker { run }))
            .collect(),
        CardKind::ToolFailsBeforeSending => runs
            .into_iter()
            .map(|run| (format!("run {run}'s next call"), Play::ToolFailsBeforeSending { run }))
            .collect(),
        CardKind::ModelCallsAgain => runs
            .into_iter()
            .flat_map(|run| {
                [
                    (
                        format!("on run {run}, same words"),
                        Play::ModelCallsAgain {
                            run: run.clone(),
                            reword: false,
                        },
                    ),
                    (
                        format!("on run {run}, reworded memo"),
                        Play::ModelCallsAgain { run, reword: true },
                    ),
                ]
            })
            .collect(),
        CardKind::OperatorResolve | CardKind::OperatorCompensate => Vec::new(),
    }
}

/// Plays `card`: at once when it has one target, else opens the chooser.
pub fn choose(card: CardKind, session: &Session, simulation: &Simulation, level_ui: &mut LevelUi, intents: &mut Vec<Intent>) {
    if is_operator(card) {
        level_ui.focus_reason = true;
        return;
    }
    if session.mode == Mode::Replay {
        level_ui.flash = Some("A tape plays its own cards: open the level to play yours.".into());
        return;
    }
    match card {
        // The wire cards hit whatever is on the wire (or the next message): no target to pick.
        CardKind::LoseRequest => intents.push(Intent::Play(Play::LoseRequest)),
        CardKind::LoseResponse => intents.push(Intent::Play(Play::LoseResponse)),
        CardKind::SlowResponse => intents.push(Intent::Play(Play::SlowResponse)),
        // A worker or a run: the chooser shows them (or says there is none).
        _ => level_ui.chooser = Some(Chooser::Card(card)),
    }
}

pub fn draw(
    ui: &mut egui::Ui,
    session: &Session,
    simulation: &Simulation,
    level_ui: &mut LevelUi,
    intents: &mut Vec<Intent>,
) {
    ui::section(ui, "Fault cards in hand", |ui| {
        let hand = simulation.hand();
        let cards = hand_order(simulation);
        if cards.is_empty() {
            ui::hint(ui, "This level gives you no cards: watch, step and rewind.");
        }
        let playable = session.mode != Mode::Replay && !simulation.is_over() && !session.is_busy();
        let mut chosen = None;
        for (index, card) in cards.iter().enumerate() {
            let left = hand.get(card).copied().unwrap_or(0);
            let key = if index < 9 { format!("{}", index + 1) } else { String::new() };
            let frame = egui::Frame::new()
                .fill(if left > 0 { theme::PANEL } else { theme::BACKGROUND })
                .stroke(egui::Stroke::new(1.0, if left > 0 { theme::CREW } else { theme::PANEL_BORDER }))
                .corner_radius(5)
                .inner_margin(egui::Margin::symmetric(6, 4));
            frame.show(ui, |ui| {
                ui.set_width(ui.available_width());
                ui.horizontal(|ui| {
                    ui::key_cap(ui, &key);
                    let title = RichText::new(card.title())
                        .strong()
                        .color(if left > 0 { theme::CREW } else { theme::TEXT_FAINT });
                    ui.label(title);
                    ui.with_layout(egui::Layout::right_to_left(egui::Align::Center), |ui| {
                        let label = if is_operator(*card) { "console" } else { "play" };
                        if ui.add_enabled(playable && left > 0, egui::Button::new(label)).clicked() {
                            chosen = Some(*card);
                        }
                        ui.label(RichText::new(format!("× {left}")).monospace().color(if left > 0 {
                            theme::TEXT
                        } else {
                            theme::TEXT_FAINT
                        }));
                    });
                });
                ui.label(RichText::new(effect(*card, simulation)).size(theme::SMALL).color(theme::TEXT_DIM));
            });
        }
        if let Some(card) = chosen {
            choose(card, session, simulation, level_ui, intents);
        }
        let armed = simulation.armed();
        let mut armed_lines = Vec::new();
        if armed.lose_request > 0 {
            armed_lines.push(format!("next {} request(s) lost", armed.lose_request));
        }
        if armed.lose_response > 0 {
            armed_lines.push(format!("next {} response(s) lost", armed.lose_response));
        }
        if armed.slow_response > 0 {
            armed_lines.push(format!("next {} response(s) slowed", armed.slow_response));
        }
        for (run, reword) in &armed.call_again {
            armed_lines.push(format!("Penny calls again on {run}{}", if *reword { ", reworded" } else { "" }));
        }
        for (run, count) in &armed.not_attempted {
            armed_lines.push(format!("{count} call(s) on {run} refuse before sending"));
        }
        if !armed_lines.is_empty() {
            ui.label(RichText::new(format!("Armed: {}", armed_lines.join(" · "))).size(theme::SMALL).color(theme::CREW));
        }
        if session.mode == Mode::Replay {
            ui::hint(ui, "A tape plays its own cards; you watch, step and rewind.");
        }
    });
}
