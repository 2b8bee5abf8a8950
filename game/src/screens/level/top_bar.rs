//! The level screen's top bar: back, the level's title, mode and goal; its state; the
//! buttons for the keys, the glossary and the rulebook.

use bevy_egui::egui::{self, RichText};
use twice_world::simulator::Simulation;

use super::LevelUi;
use crate::panels::Panel;
use crate::session::{Intent, Mode, Session};
use crate::ui::{self, theme};

/// Below this width (a projector at presenter zoom is 731 points) the status leaves out its
/// buttons: beside them the title was cut to a few letters.
const ONE_LINE_WIDTH_MIN: f32 = 1000.0;

pub(super) fn draw(
    ui: &mut egui::Ui,
    session: &Session,
    simulation: &Simulation,
    level_ui: &mut LevelUi,
    intents: &mut Vec<Intent>,
) {
    // The right-hand status is laid out first and the title gets what is left (cut with "…"),
    // so the two never draw over each other. On a narrow screen the status drops the buttons
    // whose keys do the same (T, ?, B), so the title keeps its room.
    let narrow = ui.available_width() < ONE_LINE_WIDTH_MIN;
    ui.horizontal(|ui| {
        ui.with_layout(egui::Layout::right_to_left(egui::Align::Center), |ui| {
            status(ui, session, simulation, level_ui, narrow);
            ui.with_layout(egui::Layout::left_to_right(egui::Align::Center), |ui| {
                title(ui, session, simulation, level_ui, intents);
            });
        });
    });
}

/// Right to left: the keys, glossary and rulebook buttons (not on a narrow screen), the
/// run's state, the phase.
fn status(ui: &mut egui::Ui, session: &Session, simulation: &Simulation, level_ui: &mut LevelUi, narrow: bool) {
    if !narrow {
        buttons(ui, session, level_ui);
    }
    let (glyph, word, color) = if session.is_busy() {
        ("⏳", "working", theme::INFO)
    } else if simulation.is_over()
        && session.mode != Mode::Replay
        && simulation
            .moves_that_still_matter()
            .is_ok_and(|moves| !moves.is_empty())
    {
        ("⏸", "waiting for your operator move", theme::WARN)
    } else if simulation.is_over() {
        ("■", "over", theme::TEXT_DIM)
    } else if session.running {
        ("▶", "playing", theme::GOOD)
    } else {
        ("⏸", "paused", theme::WARN)
    };
    ui.label(RichText::new(format!("{glyph} {word}")).strong().color(color));
    let phase = if narrow {
        format!("phase {}", simulation.phase())
    } else {
        format!(
            "phase {} · {} ms · {}/s",
            simulation.phase(),
            simulation.now_ms(),
            session.phases_per_second()
        )
    };
    ui.label(RichText::new(phase).monospace().color(theme::TEXT));
}

/// The keys overlay, the glossary and (from chapter 2) the rulebook.
fn buttons(ui: &mut egui::Ui, session: &Session, level_ui: &mut LevelUi) {
    if ui::button(ui, true, "Keys", "?").clicked() {
        level_ui.help = !level_ui.help;
    }
    if ui::button(ui, true, "Glossary", "T").clicked() {
        level_ui.glossary = !level_ui.glossary;
    }
    if session.panels.shows(Panel::Rulebook) {
        let label = if session.panels.is_new(Panel::Rulebook) {
            "✨ new: Rulebook"
        } else {
            "Rulebook"
        };
        if ui::button(ui, true, label, "B")
            .on_hover_text(Panel::Rulebook.introduction())
            .clicked()
        {
            level_ui.rulebook = !level_ui.rulebook;
        }
    }
}

/// Left to right: back, the level's chapter and title, the mode, the goal.
fn title(
    ui: &mut egui::Ui,
    session: &Session,
    simulation: &Simulation,
    level_ui: &mut LevelUi,
    intents: &mut Vec<Intent>,
) {
    let level = &session.recipe.level.level;
    let back = match session.mode {
        Mode::Campaign => "← Levels",
        Mode::Sandbox => "← Sandbox",
        Mode::Replay => "← Tapes",
    };
    // Like Esc: a run in progress pauses and asks before it is left.
    if ui::button(ui, true, back, "Esc").clicked() {
        super::pause_menu::open(level_ui, session, simulation, intents);
    }
    ui.add(
        egui::Label::new(
            // The campaign's position (1.3), as the level select and the browser number it.
            RichText::new(session.numbered_title())
                .size(theme::HEADING)
                .strong()
                .color(theme::TEXT),
        )
        .truncate(),
    );
    let (badge, color) = match session.mode {
        Mode::Campaign => ("CAMPAIGN", theme::CREW),
        Mode::Sandbox => ("SANDBOX", theme::VIOLET),
        Mode::Replay => ("REPLAY", theme::INFO),
    };
    ui.add(egui::Label::new(RichText::new(badge).size(theme::SMALL).strong().color(color)).truncate());
    ui.add(
        egui::Label::new(
            RichText::new(format!(
                "goal: {} {}",
                theme::outcome_glyph(level.goal),
                theme::outcome_words(level.goal)
            ))
            .size(theme::SMALL)
            .color(theme::outcome_color(level.goal)),
        )
        .truncate(),
    );
}
