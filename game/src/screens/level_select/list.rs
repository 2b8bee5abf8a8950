//! The level select's list: the levels by chapter, each a row a click selects.

use bevy_egui::egui::{self, RichText};

use super::{Chosen, LevelSelectState};
use crate::campaign::Campaign;
use crate::campaign::summary;
use crate::progress::Progress;
use crate::ui::{theme, whole_lines};

/// Below this width a level's row puts its goal on a second line.
const ROW_ONE_LINE_WIDTH_MIN: f32 = 560.0;

/// The levels by chapter: finished, open or locked, stars and defences.
pub(super) fn level_list(
    ui: &mut egui::Ui,
    state: &mut LevelSelectState,
    campaign: &Campaign,
    progress: &Progress,
    chosen: &mut Chosen,
) {
    // Its foot on a whole line, as the briefing beside it.
    let id = egui::Id::new("level-select-list");
    whole_lines::scroll(ui, egui::ScrollArea::vertical().auto_shrink(false), id, |ui| {
        for chapter in campaign.chapters() {
            ui.add_space(6.0);
            ui.label(
                RichText::new(format!("Chapter {} · {}", chapter.number, chapter.title))
                    .size(theme::HEADING)
                    .strong()
                    .color(theme::RUNTIME),
            );
            for index in chapter.levels {
                let selected = index == state.selected;
                let response = level_row(ui, campaign, progress, index, selected);
                if selected && state.scroll_to_selected {
                    response.scroll_to_me(Some(egui::Align::Center));
                }
                if response.clicked() {
                    state.selected = index;
                }
                if response.double_clicked() {
                    chosen.play = true;
                }
            }
        }
    });
    // Asked again until a pass that is shown: a pass egui discards (a view learning where its
    // lines end, as the briefing beside does when it opens) forgets the scroll asked in it,
    // and the list opened at its top with the selection out of sight.
    if !ui.ctx().will_discard() {
        state.scroll_to_selected = false;
    }
}

/// One level's row: finished / open / locked, its title, its stars or defence, its goal.
fn level_row(
    ui: &mut egui::Ui,
    campaign: &Campaign,
    progress: &Progress,
    index: usize,
    selected: bool,
) -> egui::Response {
    let level = &campaign.levels[index].level;
    let unlocked = campaign.is_unlocked(index, progress);
    let (glyph, word, color) = if progress.is_finished(&level.id) {
        ("✔", "finished", theme::GOOD)
    } else if unlocked {
        ("▶", "open", theme::CREW)
    } else {
        ("🔒", "locked", theme::TEXT_FAINT)
    };
    let stars = summary::level_stars(level, progress);
    egui::Frame::new()
        .fill(if selected { theme::PANEL_RAISED } else { theme::PANEL })
        .stroke(egui::Stroke::new(
            if selected { 2.0 } else { 1.0 },
            if selected { theme::CREW } else { theme::PANEL_BORDER },
        ))
        .corner_radius(6)
        .inner_margin(egui::Margin::symmetric(10, 6))
        .show(ui, |ui| {
            ui.set_width(ui.available_width());
            // A defend-only level is finished by a defence, not by reaching the crew's goal.
            let goal = if level.unbeatable {
                "goal: play it out, then defend it".to_owned()
            } else {
                format!("goal: {}", theme::outcome_words(level.goal))
            };
            let goal = RichText::new(goal).size(theme::SMALL).color(theme::TEXT_DIM);
            // A narrow list (a projector at presenter zoom) puts the goal on a line of its own:
            // right-aligned beside a long title, the two were drawn over each other.
            let narrow = ui.available_width() < ROW_ONE_LINE_WIDTH_MIN;
            ui.horizontal_wrapped(|ui| {
                ui.label(RichText::new(glyph).size(18.0).color(color));
                ui.label(RichText::new(word).size(theme::SMALL).color(color));
                // Numbered by campaign position (1.3), as the browser and the header number it.
                ui.label(
                    RichText::new(campaign.position(index).to_string())
                        .monospace()
                        .color(theme::TEXT_DIM),
                );
                ui.label(
                    RichText::new(&level.title)
                        .size(theme::BODY + 1.0)
                        .strong()
                        .color(if unlocked { theme::TEXT } else { theme::TEXT_DIM }),
                );
                if stars.possible > 0 {
                    ui.label(RichText::new(stars.glyphs()).color(theme::WARN));
                }
                if progress.defended(&level.id).is_some() {
                    ui.label(RichText::new("🛡 defended").size(theme::SMALL).color(theme::GOOD));
                } else if level.defender.is_some() {
                    ui.label(
                        RichText::new("🛡 defend it too")
                            .size(theme::SMALL)
                            .color(theme::TEXT_FAINT),
                    );
                }
                if !narrow {
                    ui.with_layout(egui::Layout::right_to_left(egui::Align::Center), |ui| {
                        ui.label(goal.clone());
                    });
                }
            });
            if narrow {
                ui.label(goal);
            }
        })
        .response
        .interact(egui::Sense::click())
}
