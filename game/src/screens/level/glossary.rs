//! The glossary window (T): the words the game uses — phase, started, indeterminate… — from
//! `glossary.ron` beside the levels. A term clicked in the briefing or the guide opens it at
//! that entry; terms inside a definition link to their own entries.

use bevy_egui::egui::{self, RichText};
use twice_world::glossary::Glossary;

use super::LevelUi;
use crate::ui::{self, theme};

/// The longest filter the search field takes.
const FILTER_CHARACTERS_MAX: usize = 40;

/// Opens the glossary at entry `index`.
pub fn open_at(level_ui: &mut LevelUi, index: usize) {
    level_ui.glossary = true;
    level_ui.glossary_entry = Some(index);
    level_ui.glossary_scroll = true;
    level_ui.glossary_filter.clear();
}

pub fn draw(context: &egui::Context, glossary: &Glossary, level_ui: &mut LevelUi) {
    if !level_ui.glossary {
        return;
    }
    let mut open = true;
    let mut clicked = None;
    egui::Window::new("Glossary: the words of the game")
        .id(egui::Id::new("glossary"))
        .open(&mut open)
        .default_width(460.0)
        .default_pos(context.viewport_rect().center_top() + egui::vec2(-230.0, 70.0))
        .resizable(true)
        .show(context, |ui| {
            ui.horizontal(|ui| {
                ui.label(RichText::new("find").size(theme::SMALL).color(theme::TEXT_DIM));
                ui.add(
                    egui::TextEdit::singleline(&mut level_ui.glossary_filter)
                        .desired_width(220.0)
                        .char_limit(FILTER_CHARACTERS_MAX),
                );
            });
            if glossary.entries.is_empty() {
                ui::hint(
                    ui,
                    format!(
                        "No glossary: add {} beside the levels.",
                        twice_world::glossary::GLOSSARY_FILE
                    ),
                );
            }
            let filter = level_ui.glossary_filter.trim().to_lowercase();
            egui::ScrollArea::vertical().max_height(440.0).show(ui, |ui| {
                for (index, entry) in glossary.entries.iter().enumerate() {
                    let matches = filter.is_empty()
                        || entry.words().any(|word| word.to_lowercase().contains(&filter))
                        || entry.definition.to_lowercase().contains(&filter);
                    if !matches {
                        continue;
                    }
                    let selected = level_ui.glossary_entry == Some(index);
                    let response = egui::Frame::new()
                        .fill(if selected { theme::PANEL_RAISED } else { theme::PANEL })
                        .stroke(egui::Stroke::new(
                            1.0,
                            if selected { theme::CREW } else { theme::PANEL_BORDER },
                        ))
                        .corner_radius(6)
                        .inner_margin(egui::Margin::symmetric(8, 4))
                        .show(ui, |ui| {
                            ui.set_width(ui.available_width());
                            ui.spacing_mut().item_spacing.y = 1.0;
                            ui.horizontal(|ui| {
                                ui.label(RichText::new(&entry.term).strong().color(if selected {
                                    theme::CREW
                                } else {
                                    theme::TEXT
                                }));
                                if !entry.also.is_empty() {
                                    ui::hint(ui, format!("also: {}", entry.also.join(", ")));
                                }
                            });
                            // Other terms in a definition link to their entries (not to itself).
                            let style = (theme::SMALL + 0.5, theme::TEXT_DIM);
                            if let Some(other) = ui::glossary_text(ui, &entry.definition, glossary, style, Some(index))
                            {
                                clicked = Some(other);
                            }
                        })
                        .response;
                    if selected && level_ui.glossary_scroll {
                        response.scroll_to_me(Some(egui::Align::TOP));
                        level_ui.glossary_scroll = false;
                    }
                    ui.add_space(2.0);
                }
            });
            ui::hint(
                ui,
                "T or Esc closes · a term clicked in the briefing or the guide opens here",
            );
        });
    if let Some(index) = clicked {
        open_at(level_ui, index);
    }
    if !open {
        level_ui.glossary = false;
    }
}
