//! The chapter's presenter notes, as a column beside the stage (N).

use bevy_egui::egui::{self, RichText};

use super::LevelUi;
use crate::campaign::Campaign;
use crate::session::Session;
use crate::ui::theme;

/// The chapter's presenter notes as a column beside the stage (N): a column, not a window, so
/// at a projector's 1280×720 (731×411 points at presenter zoom) they never cover the stage.
pub(super) fn draw(root: &mut egui::Ui, session: &Session, campaign: &Campaign, level_ui: &mut LevelUi) {
    if !level_ui.notes {
        return;
    }
    let chapter = session.recipe.level.level.chapter;
    let notes = campaign.notes.chapter(chapter);
    let width = notes_width(root.available_width());
    egui::Panel::right("presenter-notes")
        .exact_size(width)
        .resizable(false)
        .frame(
            egui::Frame::new()
                .fill(theme::PANEL_RAISED)
                .stroke(egui::Stroke::new(1.0, theme::PANEL_BORDER))
                .inner_margin(egui::Margin::same(8)),
        )
        .show(root, |ui| {
            ui.style_mut().wrap_mode = Some(egui::TextWrapMode::Wrap);
            ui.horizontal(|ui| {
                ui.label(RichText::new(format!("Notes · chapter {chapter}")).strong());
                if ui.small_button("hide").on_hover_text("N").clicked() {
                    level_ui.notes = false;
                }
            });
            // A solid scroll bar: at a projector the notes run past the column's foot.
            ui.spacing_mut().scroll = egui::style::ScrollStyle::solid();
            egui::ScrollArea::vertical()
                .auto_shrink(false)
                .show(ui, |ui| match notes {
                    None => {
                        ui.label(
                            RichText::new(format!(
                                "No notes for chapter {chapter}: add them to {} beside the levels.",
                                twice_world::presenter_notes::NOTES_FILE
                            ))
                            .color(theme::TEXT_DIM),
                        );
                    }
                    Some(notes) => {
                        if notes.minutes > 0 {
                            ui.label(
                                RichText::new(format!("about {} minutes", notes.minutes)).color(theme::TEXT_FAINT),
                            );
                        }
                        ui.label(RichText::new("Say").strong().color(theme::CREW));
                        ui.label(RichText::new(&notes.say).color(theme::TEXT));
                        if !notes.ask.is_empty() {
                            ui.add_space(4.0);
                            ui.label(RichText::new("Ask the room").strong().color(theme::CREW));
                            for question in &notes.ask {
                                ui.label(RichText::new(format!("• {question}")).color(theme::TEXT));
                            }
                        }
                        ui.add_space(4.0);
                        ui.label(
                            RichText::new("N hides these notes · P shows the side panels").color(theme::TEXT_FAINT),
                        );
                    }
                });
        });
}

/// The notes column's width: a quarter of the screen, never too narrow to read or so wide the
/// stage has no room.
fn notes_width(screen_width: f32) -> f32 {
    (screen_width * 0.26).clamp(180.0, 340.0)
}
