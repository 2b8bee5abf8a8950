//! The rulebook panel: the runtime's decision tables beside the attack, after the tool
//! contract check it makes before a run starts. The row that
//! fired in the selected phase is lit, rows a switched-off guard provides are struck through,
//! and each row says how often it fired so far. The tables and the lighting come from
//! `twice_world::rulebook`; this only draws them.

use bevy_egui::egui::{self, RichText};
use twice_world::rulebook::{self, Table};
use twice_world::simulator::Simulation;

use super::LevelUi;
use crate::ui::theme;

pub fn draw(context: &egui::Context, simulation: &Simulation, level_ui: &mut LevelUi) {
    if !level_ui.rulebook {
        return;
    }
    let now = simulation.phase();
    let selected = level_ui
        .rulebook_phase
        .filter(|phase| *phase <= now)
        .or_else(|| rulebook::last_firing_phase(simulation, now))
        .unwrap_or(now);
    let book = rulebook::at_phase(simulation, selected);
    let mut open = true;
    egui::Window::new("Rulebook: what the runtime decides")
        .id(egui::Id::new("rulebook"))
        .open(&mut open)
        .default_width(620.0)
        .resizable(true)
        .show(context, |ui| {
            ui.horizontal(|ui| {
                ui.label(RichText::new("rows that fired in phase").size(theme::SMALL));
                let mut phase = selected;
                if ui.add(egui::Slider::new(&mut phase, 0..=now.max(1))).changed() {
                    level_ui.rulebook_phase = Some(phase);
                }
                if ui.small_button("latest").clicked() {
                    level_ui.rulebook_phase = None;
                }
            });
            egui::ScrollArea::vertical().max_height(420.0).show(ui, |ui| {
                for table in Table::ALL {
                    let off = table.needs().filter(|guard| !simulation.guards().is_on(*guard));
                    let mut title = RichText::new(table.title()).strong().color(theme::RUNTIME);
                    if off.is_some() {
                        title = title.strikethrough().color(theme::TEXT_FAINT);
                    }
                    ui.label(title);
                    if let Some(guard) = off {
                        ui.label(
                            RichText::new(format!("{} is off: this table is never consulted", guard.name()))
                                .size(theme::SMALL)
                                .color(theme::WARN),
                        );
                    }
                    egui::Grid::new(("rulebook", table))
                        .num_columns(3)
                        .spacing([10.0, 2.0])
                        .striped(true)
                        .show(ui, |ui| {
                            for view in book.iter().filter(|view| view.row.table == table) {
                                let style = |text: String| {
                                    let mut text = RichText::new(text).size(theme::SMALL);
                                    if view.struck_by.is_some() {
                                        text = text.strikethrough().color(theme::TEXT_FAINT);
                                    } else if view.lit {
                                        text = text.strong().color(theme::CREW).background_color(theme::PANEL_RAISED);
                                    }
                                    text
                                };
                                let marker = if view.lit { "▶ " } else { "" };
                                ui.label(style(format!("{marker}{}", view.row.when)));
                                ui.label(style(format!("→ {}", view.row.then)));
                                let note = match (view.struck_by, &view.last) {
                                    (Some(guard), _) => format!("off: {}", guard.name()),
                                    (None, Some(last)) => format!("×{} · last {last}", view.fired),
                                    (None, None) => String::new(),
                                };
                                ui.label(RichText::new(note).size(theme::SMALL).color(theme::TEXT_DIM));
                                ui.end_row();
                            }
                        });
                    ui.add_space(6.0);
                }
            });
        });
    if !open {
        level_ui.rulebook = false;
    }
}
