//! The level screen's side columns: the guide's coach, the right column (the ledger and the
//! operator console) and the left one (briefing, task, guards, checkpoints).

use bevy_egui::egui::{self, RichText};
use twice_world::simulator::Simulation;

use super::{LevelUi, SIDE_COLUMNS_AND_NOTES_WIDTH_MIN, briefing, coach, ledger, operator, timeline, world};
use crate::campaign::Campaign;
use crate::guide::GuideStep;
#[cfg(feature = "operator-api")]
use crate::operator_api::OperatorApi;
use crate::panels::{Panel, Panels};
use crate::progress::Progress;
use crate::session::{Intent, Session};
use crate::ui::{self, theme};

/// Width of the left column (task, guards, checkpoints) and the right one (ledger, operator)
/// on a 1280-point screen; narrower screens get narrower columns ([`side_widths`]).
const LEFT_WIDTH: f32 = 256.0;
const RIGHT_WIDTH: f32 = 410.0;
/// Width of the guided first level's coach, on the right where the ledger arrives later.
const COACH_WIDTH: f32 = 300.0;
/// The least height the operator console gets under the ledger before the two share the
/// column half and half (each scrolls inside its share).
const CONSOLE_HEIGHT: f32 = 260.0;
/// The console of a level with no operator moves: its title and one line about the queue.
const CONSOLE_QUIET_HEIGHT: f32 = 64.0;

/// The left and right columns' widths on a screen this many points wide: their full widths
/// from 1280 points up, in proportion below, never so narrow their tables stop making sense.
pub(super) fn side_widths(screen_width: f32) -> (f32, f32) {
    let share = (screen_width / 1280.0).min(1.0);
    ((LEFT_WIDTH * share).max(170.0), (RIGHT_WIDTH * share).max(300.0))
}

/// A panel's first appearance, said once: "new: the ledger" and what it is for.
pub(super) fn new_panel(ui: &mut egui::Ui, panels: &Panels, panel: Panel) {
    if panels.is_new(panel) {
        ui.label(
            RichText::new(format!("✨ new: {} — {}", panel.title(), panel.introduction()))
                .size(theme::SMALL)
                .color(theme::CREW),
        );
    }
}

/// The guide's coach, on the right. Once shown it keeps its column until the player leaves
/// the level (saying the guide is done), so finishing or skipping it does not make the stage
/// jump wider. Returns a glossary entry the player clicked.
pub(super) fn coach(
    root: &mut egui::Ui,
    step: Option<GuideStep>,
    simulation: &Simulation,
    campaign: &Campaign,
    level_ui: &mut LevelUi,
    intents: &mut Vec<Intent>,
) -> Option<usize> {
    level_ui.coach_shown |= step.is_some();
    if !level_ui.coach_shown {
        return None;
    }
    column(root, egui::Panel::right("level-coach"), COACH_WIDTH, 10, |ui| {
        scrolled(ui, "coach-scroll", |ui| match step {
            Some(step) => coach::draw(ui, step, simulation, &campaign.glossary, intents),
            None => {
                coach::draw_done(ui, simulation);
                None
            }
        })
    })
}

/// The right column: the ledger above the operator console, each scrolling in its share.
pub(super) fn right(
    root: &mut egui::Ui,
    session: &Session,
    simulation: &Simulation,
    level_ui: &mut LevelUi,
    cache: &timeline::TimelineCache,
    #[cfg(feature = "operator-api")] operator_api: Option<&OperatorApi>,
) {
    let panels = &session.panels;
    let (show_ledger, show_console) = (panels.shows(Panel::Ledger), panels.shows(Panel::Console));
    if !level_ui.side_panels || !(show_ledger || show_console) {
        return;
    }
    let width = side_widths(root.ctx().viewport_rect().width()).1;
    // A level whose hand holds no operator move shows its console as one line under the
    // ledger: the ledger's rows need the column more than an empty console does.
    let operator_moves = simulation.level().cards.iter().any(|allowance| {
        matches!(
            allowance.card,
            twice_world::level::CardKind::OperatorResolve | twice_world::level::CardKind::OperatorCompensate
        )
    });
    column(root, egui::Panel::right("level-right"), width, 6, |ui| {
        let height = ui.available_height();
        let console_height = if !show_console {
            0.0
        } else if !show_ledger {
            height
        } else if !operator_moves {
            CONSOLE_QUIET_HEIGHT
        } else {
            CONSOLE_HEIGHT.max(height / 2.0).min(height - 120.0)
        };
        if show_ledger {
            new_panel(ui, panels, Panel::Ledger);
            let ledger_height = (ui.available_height() - console_height - 8.0).max(120.0);
            // The ledger keeps to its share, clipped there: a selected call's history that
            // grows past it must not push the console (and its title) down out of sight.
            let (share, _) =
                ui.allocate_exact_size(egui::vec2(ui.available_width(), ledger_height), egui::Sense::hover());
            let mut ledger_ui = ui.new_child(egui::UiBuilder::new().max_rect(share));
            ledger_ui.set_clip_rect(share.intersect(ui.clip_rect()));
            ledger::draw(&mut ledger_ui, session, simulation, level_ui, cache);
            ui.add_space(4.0);
        }
        if show_console && !operator_moves && show_ledger {
            new_panel(ui, panels, Panel::Console);
            ui::section(ui, "Operator console", |ui| {
                operator::draw_quiet(ui, session, simulation)
            });
        } else if show_console {
            new_panel(ui, panels, Panel::Console);
            // The title stays put; the console's decisions (reason, expected status, both
            // resolve buttons, compensate) scroll beneath it rather than run off the screen.
            ui::section(ui, "Operator console", |ui| {
                scrolled(ui, "console-scroll", |ui| {
                    operator::draw(ui, session, simulation, level_ui, cache);
                    #[cfg(feature = "operator-api")]
                    if let Some(operator_api) = operator_api {
                        operator::draw_http_hint(ui, operator_api);
                    }
                });
            });
        }
    });
}

/// The left column: briefing and hints, the task, the guards, the checkpoints; it scrolls.
/// On a narrow screen only the right column joins the stage: with both, the stage would be
/// too narrow to draw Penny, the wire and billing apart. Returns a glossary entry clicked.
pub(super) fn left(
    root: &mut egui::Ui,
    session: &Session,
    simulation: &Simulation,
    progress: &Progress,
    campaign: &Campaign,
    level_ui: &LevelUi,
    intents: &mut Vec<Intent>,
) -> Option<usize> {
    let screen_width = root.ctx().viewport_rect().width();
    if !level_ui.side_panels || screen_width < SIDE_COLUMNS_AND_NOTES_WIDTH_MIN {
        return None;
    }
    let width = side_widths(screen_width).0;
    column(root, egui::Panel::left("level-left"), width, 6, |ui| {
        scrolled(ui, "left-scroll", |ui| {
            let clicked = briefing::draw(
                ui,
                (session, progress, campaign),
                |ui| world::draw_task(ui, simulation),
                intents,
            );
            ui.add_space(4.0);
            world::draw_guards(ui, simulation);
            if session.panels.shows(Panel::Checkpoints) {
                ui.add_space(4.0);
                new_panel(ui, &session.panels, Panel::Checkpoints);
                world::draw_checkpoints(ui, session);
            }
            clicked
        })
    })
}

/// A side column `width` points wide on the panel colour. Its text wraps, even in a row of
/// widgets: a line wider than the column would widen its contents past the screen's edge.
fn column<R>(
    root: &mut egui::Ui,
    panel: egui::Panel,
    width: f32,
    margin: i8,
    contents: impl FnOnce(&mut egui::Ui) -> R,
) -> R {
    panel
        .exact_size(width)
        .resizable(false)
        .frame(
            egui::Frame::new()
                .fill(theme::PANEL)
                .inner_margin(egui::Margin::same(margin)),
        )
        .show(root, |ui| {
            ui.style_mut().wrap_mode = Some(egui::TextWrapMode::Wrap);
            contents(ui)
        })
        .inner
}

/// `contents` scrolling in the rest of `ui`, with a solid bar: a column's last lines are cut
/// at its foot, and a bar that only shows on hover does not say there is more below.
fn scrolled<R>(ui: &mut egui::Ui, id: &str, contents: impl FnOnce(&mut egui::Ui) -> R) -> R {
    ui.spacing_mut().scroll = egui::style::ScrollStyle::solid();
    egui::ScrollArea::vertical()
        .id_salt(id)
        .auto_shrink(false)
        .show(ui, contents)
        .inner
}
