//! The title screen.

use bevy::prelude::*;
use bevy_egui::egui::{self, Align2, Color32, FontId, RichText, Stroke};
use bevy_egui::{EguiContexts, EguiPrimaryContextPass};

use super::Screen;
use crate::campaign::Campaign;
use crate::progress::Progress;
use crate::ui::{self, theme};

pub(super) fn plugin(app: &mut App) {
    app.add_systems(EguiPrimaryContextPass, draw.run_if(in_state(Screen::Title)));
}

fn draw(
    mut contexts: EguiContexts,
    mut next_screen: ResMut<NextState<Screen>>,
    mut exit: MessageWriter<AppExit>,
    campaign: Res<Campaign>,
    progress: Res<Progress>,
) -> Result {
    let context = contexts.ctx_mut()?;
    let mut root = ui::root_ui(context, "title");
    let finished = campaign
        .levels
        .iter()
        .filter(|loaded| progress.is_finished(&loaded.level.id))
        .count();
    let mut go = None;
    egui::CentralPanel::default()
        .frame(egui::Frame::new().fill(theme::BACKGROUND))
        .show(&mut root, |ui| {
            let area = ui.max_rect();
            // A short screen (a projector at presenter zoom is 411 points tall) gets less air
            // above a smaller title, and the menu scrolls rather than run off the bottom.
            let short = area.height() < 600.0;
            // The two coins sit in the air above the title, which a short screen does not have.
            if !short {
                paint_backdrop(ui.painter(), area);
            }
            let (top_space, title_size) = if short {
                (8.0, 48.0)
            } else {
                (area.height() * 0.16, 72.0)
            };
            egui::ScrollArea::vertical().auto_shrink(false).show(ui, |ui| {
                ui.vertical_centered(|ui| {
                    ui.add_space(top_space);
                    ui.label(RichText::new("TWICE").size(title_size).strong().color(theme::CREW));
                    ui.label(
                        RichText::new("a heist game about side effects that must happen once")
                            .size(theme::HEADING)
                            .color(theme::TEXT_DIM),
                    );
                    ui.add_space(if short { 8.0 } else { 18.0 });
                    ui.label(
                        RichText::new(
                            "Penny is a refund bot. Your crew wants her to pay a customer twice.\n\
                         Lose her messages, crash her workers, start a twin — and watch the runtime's guards hold.",
                        )
                        .size(theme::BODY + 1.0)
                        .color(theme::TEXT),
                    );
                    ui.add_space(if short { 12.0 } else { 28.0 });
                    let width = 300.0;
                    // Enter plays the campaign, so that entry is drawn selected: the highlight
                    // and the Enter hint sit on the same button, wherever the pointer rests.
                    let mut entry = |ui: &mut egui::Ui, label: &str, key: &str, screen: Option<Screen>| {
                        let is_default = screen == Some(Screen::LevelSelect);
                        let button = egui::Button::new(RichText::new(label).size(theme::HEADING))
                            .shortcut_text(RichText::new(key).monospace().color(theme::TEXT_FAINT))
                            .selected(is_default)
                            .min_size(egui::vec2(width, 38.0));
                        if ui.add(button).clicked() {
                            go = Some(screen);
                        }
                        ui.add_space(4.0);
                    };
                    entry(ui, "▶  Play the campaign", "Enter", Some(Screen::LevelSelect));
                    entry(ui, "⚙  Sandbox: any level, any guards", "S", Some(Screen::Sandbox));
                    entry(ui, "📼  Replay a tape", "R", Some(Screen::Replay));
                    entry(ui, "Quit", "Q", None);
                    ui.add_space(16.0);
                    ui.label(
                        RichText::new(format!(
                            "{finished} of {} levels finished · press ? in a level for the keys",
                            campaign.levels.len()
                        ))
                        .size(theme::SMALL)
                        .color(theme::TEXT_DIM),
                    );
                    if let Some(notice) = &progress.notice {
                        ui.add_space(8.0);
                        ui.label(
                            RichText::new(format!("⚠ {notice}"))
                                .size(theme::SMALL)
                                .color(theme::WARN),
                        );
                    }
                });
            });
        });
    if ui::pressed(context, egui::Key::Enter) {
        go = Some(Some(Screen::LevelSelect));
    }
    if ui::pressed(context, egui::Key::S) {
        go = Some(Some(Screen::Sandbox));
    }
    if ui::pressed(context, egui::Key::R) {
        go = Some(Some(Screen::Replay));
    }
    if ui::pressed(context, egui::Key::Q) {
        go = Some(None);
    }
    match go {
        Some(Some(screen)) => next_screen.set(screen),
        Some(None) => {
            exit.write(AppExit::Success);
        }
        None => {}
    }
    Ok(())
}

/// Two coins falling into a vault: the heist, in a picture.
fn paint_backdrop(painter: &egui::Painter, area: egui::Rect) {
    let center = egui::pos2(area.center().x, area.top() + area.height() * 0.09);
    let faint = Color32::from_rgba_unmultiplied(255, 196, 70, 40);
    for (offset, radius) in [(-26.0, 14.0), (26.0, 14.0)] {
        let coin = center + egui::vec2(offset, 0.0);
        painter.circle(coin, radius, faint, Stroke::new(2.0, theme::CREW.gamma_multiply(0.7)));
        painter.text(
            coin,
            Align2::CENTER_CENTER,
            "$",
            FontId::proportional(15.0),
            theme::CREW,
        );
    }
}
