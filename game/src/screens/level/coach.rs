//! The coach panel of the guided first level: the step the player is on, what to do, what is
//! on the wire now, and a way to skip. The steps and their progress are `crate::guide`'s.

use bevy_egui::egui::{self, RichText};
use twice_world::glossary::Glossary;
use twice_world::simulator::Simulation;

use crate::guide::{self, GuideStep};
use crate::session::Intent;
use crate::ui::{self, theme};

/// Draws the coach for `step`; returns a glossary entry the player clicked.
pub fn draw(
    ui: &mut egui::Ui,
    step: GuideStep,
    simulation: &Simulation,
    glossary: &Glossary,
    intents: &mut Vec<Intent>,
) -> Option<usize> {
    let mut clicked = None;
    ui.label(
        RichText::new("Your first heist")
            .size(theme::HEADING)
            .strong()
            .color(theme::CREW),
    );
    ui::hint(ui, "A guide for your first moves: it follows what you do.");
    ui.add_space(6.0);
    for each in GuideStep::ALL {
        let (glyph, color) = match each.cmp(&step) {
            std::cmp::Ordering::Less => ("✔", theme::GOOD),
            std::cmp::Ordering::Equal => ("▶", theme::CREW),
            std::cmp::Ordering::Greater => ("·", theme::TEXT_FAINT),
        };
        ui.label(
            RichText::new(format!("{glyph} {}. {}", each.number(), each.title()))
                .strong()
                .color(color),
        );
        if each == step {
            egui::Frame::new()
                .fill(theme::PANEL_RAISED)
                .stroke(egui::Stroke::new(1.0, theme::CREW))
                .corner_radius(6)
                .inner_margin(egui::Margin::symmetric(8, 6))
                .show(ui, |ui| {
                    ui.set_width(ui.available_width());
                    if let Some(entry) = ui::glossary_text(ui, step.text(), glossary, (theme::BODY, theme::TEXT), None)
                    {
                        clicked = Some(entry);
                    }
                    if let Some(cue) = guide::cue(step, simulation) {
                        ui.add_space(4.0);
                        ui.label(RichText::new(cue).size(theme::SMALL + 0.5).color(theme::INFO));
                    }
                });
            ui.add_space(4.0);
        }
    }
    ui.add_space(8.0);
    ui::hint(ui, "Underlined words open the glossary (T).");
    if ui.button("Skip the guide").clicked() {
        intents.push(Intent::SkipGuide);
    }
    clicked
}

/// The coach's column once the guide is done or skipped (until the player leaves the level):
/// what is on the wire now, and where the keys are.
pub fn draw_done(ui: &mut egui::Ui, simulation: &Simulation) {
    ui.label(
        RichText::new("Your first heist")
            .size(theme::HEADING)
            .strong()
            .color(theme::CREW),
    );
    ui.label(RichText::new("✔ The guide is done.").color(theme::GOOD));
    ui.add_space(4.0);
    let cue = if simulation.is_over() {
        guide::cue(GuideStep::ReadTheVerdict, simulation)
    } else {
        guide::cue(GuideStep::PlayACard, simulation)
    };
    if let Some(cue) = cue {
        ui.label(RichText::new(cue).size(theme::SMALL + 0.5).color(theme::INFO));
    }
    ui.add_space(4.0);
    ui::hint(
        ui,
        "Every control has a key: ? lists them. Underlined words open the glossary (T).",
    );
}
