//! The operator console: calls whose outcome is unknown, longest waiting first; resolve
//! one with a reason, or compensate. The moves are `Play::OperatorResolve` and
//! `Play::OperatorCompensate`, which the simulator carries out with `runtime::operator` —
//! the same functions the HTTP API calls.

use bevy_egui::egui::{self, RichText};
use twice_world::cards::{OperatorCompensate, OperatorResolve};
use twice_world::level::{CardKind, Play, default_operator};
use twice_world::runtime::rules::Status;
use twice_world::simulator::Simulation;

use super::timeline::TimelineCache;
use super::{Chooser, LevelUi};
#[cfg(feature = "operator-api")]
use crate::operator_api::OperatorApi;
use crate::session::{Intent, Mode, Session};
use crate::ui::{self, theme};

const QUEUE_ROWS_SHOWN: f32 = 4.0;
/// The operators the player can act as: two people at two consoles, as level 17 races them.
pub const OPERATORS: [&str; 2] = ["op-crew", "op-other"];
/// The statuses a decision may expect (compare-and-set): the ones an operator may settle.
const EXPECTABLE: [Status; 4] = [
    Status::Indeterminate,
    Status::Started,
    Status::Completed,
    Status::Failed,
];

/// The operator the player acts as now.
pub fn operator_of(level_ui: &LevelUi) -> String {
    if level_ui.operator.trim().is_empty() {
        default_operator()
    } else {
        level_ui.operator.clone()
    }
}

/// The operator moves open on the selected call: label, move, and why not (if not).
pub fn moves(session: &Session, simulation: &Simulation, level_ui: &LevelUi) -> Vec<(String, Play, Option<String>)> {
    let Some(key) = level_ui.selected_key.clone() else {
        return Vec::new();
    };
    let Some(record) = session.ledger().row(&key) else {
        return Vec::new();
    };
    let reason = level_ui.operator_reason.trim().to_owned();
    let left = |card: CardKind| simulation.hand().get(&card).copied().unwrap_or(0);
    // A quiet level is not over for an operator: a run parked on an unknown call waits for one.
    let common = if session.mode == Mode::Replay {
        Some("a tape's moves are fixed".to_owned())
    } else if simulation.is_out_of_phases() {
        Some("the level is out of phases".to_owned())
    } else if reason.is_empty() {
        Some("type a reason first".to_owned())
    } else {
        None
    };
    let resolve_block = common.clone().or_else(|| {
        if left(CardKind::OperatorResolve) == 0 {
            Some("no resolve cards left in this level".into())
        } else if !record.status.is_unknown() && level_ui.expected_status.is_none() {
            // Expecting another status on purpose is the race: the ledger answers 409.
            Some(format!(
                "it is already settled ({}); to race another operator, choose what you expected",
                record.status
            ))
        } else {
            None
        }
    });
    let compensate_block = common.or_else(|| {
        if left(CardKind::OperatorCompensate) == 0 {
            Some("no compensate cards left in this level".into())
        } else if matches!(record.status, Status::Failed | Status::Compensated) {
            Some(format!("it is {}: nothing stands to undo", record.status))
        } else {
            None
        }
    });
    let operator = operator_of(level_ui);
    let expected = level_ui.expected_status.unwrap_or(record.status);
    let resolve = |status: Status| {
        Play::OperatorResolve(OperatorResolve {
            key: key.clone(),
            status,
            reason: reason.clone(),
            operator: operator.clone(),
            expected_status: Some(expected),
        })
    };
    vec![
        (
            format!(
                "{} Resolve: it took effect (completed)",
                theme::status_glyph(Status::Completed)
            ),
            resolve(Status::Completed),
            resolve_block.clone(),
        ),
        (
            format!("{} Resolve: it did not (failed)", theme::status_glyph(Status::Failed)),
            resolve(Status::Failed),
            resolve_block,
        ),
        (
            format!(
                "{} Compensate: undo it in billing",
                theme::status_glyph(Status::Compensated)
            ),
            Play::OperatorCompensate(OperatorCompensate {
                key,
                reason,
                operator: operator.clone(),
            }),
            compensate_block,
        ),
    ]
}

/// The console's body (its title is drawn above the scroll by the column, so it stays put).
/// The console of a level that gives the crew no operator moves: one line, the queue counted.
pub fn draw_quiet(ui: &mut egui::Ui, session: &Session, simulation: &Simulation) {
    ui::hint(
        ui,
        format!("No operator moves in this level · {}", quiet_queue(session, simulation)),
    );
}

/// The quiet console's count: an unknown call waits for a person only while its run is paused
/// on it or stopped for one; a call still being retried or looked up is counted apart.
fn quiet_queue(session: &Session, simulation: &Simulation) -> String {
    let unknown = session.ledger().unknown().count();
    let waiting = session
        .ledger()
        .unknown()
        .filter(|record| simulation.waits_for_a_person(record))
        .count();
    let calls = twice_world::text::counted(unknown as u64, "unknown call", "unknown calls");
    match (unknown, waiting) {
        (0, _) => "no call's outcome is unknown".to_owned(),
        (_, 0) => format!("{calls}, none waiting for a person"),
        (_, waiting) if waiting == unknown => format!("{calls}, waiting for a person"),
        (_, waiting) => format!("{calls}, {waiting} waiting for a person"),
    }
}

pub fn draw(
    ui: &mut egui::Ui,
    session: &Session,
    simulation: &Simulation,
    level_ui: &mut LevelUi,
    cache: &TimelineCache,
) {
    let resolve_left = simulation.hand().get(&CardKind::OperatorResolve).copied();
    let compensate_left = simulation.hand().get(&CardKind::OperatorCompensate).copied();
    let cards = match (resolve_left, compensate_left) {
        (None, None) => "this level gives the crew no operator moves".to_owned(),
        (resolve, compensate) => format!(
            "you are {} · resolve × {} · compensate × {}",
            operator_of(level_ui),
            resolve.unwrap_or(0),
            compensate.unwrap_or(0)
        ),
    };
    ui::hint(ui, cards);
    let unknown = session.ledger().unknown();
    let waiting = unknown.len();
    // With nothing selected, the call waiting longest is: the decisions below are for it.
    if level_ui.selected_key.is_none()
        && let Some(first) = session.ledger().unknown().next()
    {
        level_ui.selected_key = Some(first.key.as_str().to_owned());
    }
    ui.label(RichText::new(format!("Unknown calls, longest waiting first: {waiting}")).size(theme::SMALL));
    let now = simulation.now_ms();
    egui::ScrollArea::vertical()
        .id_salt("operator-queue")
        .max_height(QUEUE_ROWS_SHOWN * 20.0)
        .auto_shrink([false, true])
        .show_rows(ui, 16.0, waiting, |ui, range| {
            for record in session.ledger().unknown().skip(range.start).take(range.len()) {
                let look = cache.key_look(record.key.as_str());
                let selected = level_ui.selected_key.as_deref() == Some(record.key.as_str());
                let text = RichText::new(format!(
                    "{} {}  {}  waiting {} ms · {}",
                    look.glyph,
                    record.key.as_str(),
                    theme::status_label(record.status),
                    now.saturating_sub(record.updated_at_ms),
                    record.owner
                ))
                .size(theme::SMALL)
                .color(look.color);
                if ui.selectable_label(selected, text).clicked() {
                    level_ui.selected_key = Some(record.key.as_str().to_owned());
                    level_ui.scroll_to_selected = true;
                }
            }
        });
    if waiting == 0 {
        ui::hint(ui, "none: every call's outcome is known");
    }
    let selected = level_ui.selected_key.clone();
    match selected.as_deref().and_then(|key| session.ledger().row(key)) {
        Some(record) => {
            ui.horizontal(|ui| {
                ui.label(RichText::new("Selected:").size(theme::SMALL));
                ui.label(
                    RichText::new(record.key.as_str())
                        .monospace()
                        .color(cache.key_look(record.key.as_str()).color),
                );
                ui.label(ui::status_text(record.status).size(theme::SMALL));
            });
        }
        None => ui::hint(ui, "select a call here or in the ledger"),
    }
    if resolve_left.is_none() && compensate_left.is_none() {
        // The queue stays (the calls are unknown all the same); a reason and buttons for
        // moves the level does not deal would only be drawn to be refused.
        level_ui.focus_reason = false;
        return;
    }
    ui.horizontal(|ui| {
        ui::key_cap(ui, "O");
        let field = egui::TextEdit::singleline(&mut level_ui.operator_reason)
            .hint_text("reason (required), e.g. billing shows cr_0001")
            .desired_width(ui.available_width())
            .char_limit(twice_world::runtime::operator::REASON_CHARS_MAX);
        let response = ui.add(field);
        if level_ui.focus_reason {
            response.request_focus();
            level_ui.focus_reason = false;
        }
        if response.lost_focus() && ui.input(|input| input.key_pressed(egui::Key::Enter)) && selected.is_some() {
            level_ui.chooser = Some(Chooser::Operator);
        }
    });
    if resolve_left.is_some() {
        operator_and_expectation(ui, level_ui);
    }
    let mut played = None;
    ui.horizontal_wrapped(|ui| {
        for (label, play, blocked) in moves(session, simulation, level_ui) {
            let button = ui.add_enabled(
                blocked.is_none(),
                egui::Button::new(RichText::new(label).size(theme::SMALL)),
            );
            let button = match &blocked {
                Some(why) => button.on_disabled_hover_text(why.clone()),
                None => button,
            };
            if button.clicked() {
                played = Some(play);
            }
        }
    });
    if let Some(play) = played {
        level_ui.pending_play = Some(play);
    }
}

/// Which operator the player acts as, and the status their decision expects (compare-and-set).
fn operator_and_expectation(ui: &mut egui::Ui, level_ui: &mut LevelUi) {
    ui.horizontal_wrapped(|ui| {
        ui.label(RichText::new("act as").size(theme::SMALL));
        let current = operator_of(level_ui);
        for operator in OPERATORS {
            let text = RichText::new(operator).size(theme::SMALL).monospace();
            if ui.selectable_label(current == operator, text).clicked() {
                level_ui.operator = operator.to_owned();
            }
        }
        ui.label(RichText::new("expecting").size(theme::SMALL));
        let shown = RichText::new("what it shows").size(theme::SMALL);
        if ui
            .selectable_label(level_ui.expected_status.is_none(), shown)
            .on_hover_text("compare-and-set on the status the console shows now")
            .clicked()
        {
            level_ui.expected_status = None;
        }
        for status in EXPECTABLE {
            let text = RichText::new(status.name()).size(theme::SMALL);
            if ui
                .selectable_label(level_ui.expected_status == Some(status), text)
                .on_hover_text("decide as if you last saw it so: if it changed, the ledger answers 409")
                .clicked()
            {
                level_ui.expected_status = Some(status);
            }
        }
    });
}

/// Sends the move the console chose (kept out of the drawing code so the chooser can use it too).
pub fn take_pending(level_ui: &mut LevelUi, intents: &mut Vec<Intent>) {
    if let Some(play) = level_ui.pending_play.take() {
        level_ui.operator_reason.clear();
        intents.push(Intent::Play(play));
    }
}

#[cfg(feature = "operator-api")]
/// `--operator-api`: where the game's ledger can be reached over HTTP, ready to paste.
pub fn draw_http_hint(ui: &mut egui::Ui, operator_api: &OperatorApi) {
    ui.add_space(4.0);
    let command = operator_api.curl_hint();
    ui.horizontal(|ui| {
        if ui.small_button("copy").on_hover_text("copy the curl command").clicked() {
            ui.ctx().copy_text(command.clone());
        }
        ui.add(
            egui::Label::new(
                RichText::new(format!("HTTP API · http://{}", operator_api.address()))
                    .monospace()
                    .size(11.0)
                    .color(theme::INFO),
            )
            .truncate(),
        )
        .on_hover_text(format!(
            "the operator HTTP API serves this level's ledger; decisions made there wake parked runs\n{command}"
        ));
    });
    if let Some(problem) = &operator_api.problem {
        ui.label(RichText::new(format!("⚠ {problem}")).size(11.0).color(theme::WARN));
    }
}
