//! The control bar: play, pause, step, speed, rewind, restart, run to the end, tapes, debrief.

use std::path::PathBuf;

use bevy_egui::egui::{self, RichText};
use twice_world::simulator::Simulation;

use super::{LevelUi, Prompt, PromptKind, predict};
use crate::paths::GamePaths;
use crate::progress::prediction::Prediction;
use crate::session::{Intent, Mode, Session};
use crate::ui::{self, theme};

/// `<data>/tapes/<level>-<n>.tape.ron`, the first that does not exist.
pub fn suggested_tape_path(paths: &GamePaths, session: &Session) -> PathBuf {
    let folder = paths.tapes_folder();
    let id = &session.recipe.level.level.id;
    (1..10_000)
        .map(|number| folder.join(format!("{id}-{number}.tape.ron")))
        .find(|path| !path.exists())
        .unwrap_or_else(|| folder.join(format!("{id}.tape.ron")))
}

/// Room the "rewind to", its slider and "Go" take on one line.
const REWIND_ROW_WIDTH: f32 = 270.0;

// Each argument is a piece of state the controls show or a place their intents go.
#[allow(clippy::too_many_arguments)]
pub fn draw(
    ui: &mut egui::Ui,
    session: &Session,
    simulation: &Simulation,
    level_ui: &mut LevelUi,
    paths: &GamePaths,
    compact: bool,
    prediction: &Prediction,
    intents: &mut Vec<Intent>,
) {
    let idle = !session.is_busy();
    // On a short screen (a projector) the buttons fit one line: their glyphs and keys, no
    // rewind slider, no tape buttons (G, S and L still work).
    let label = |full: &'static str, short: &'static str| if compact { short } else { full };
    let over = simulation.is_over();
    let phase = simulation.phase();
    // Wrapped: on a narrow screen (a projector at presenter zoom is 731 points wide) the
    // controls take a second line rather than run off the right edge.
    ui.horizontal_wrapped(|ui| {
        if ui::button(ui, idle, label("⏮ Restart", "⏮"), "R").clicked() {
            intents.push(Intent::Restart);
        }
        if ui::button(ui, idle && phase > 0, label("◀ Back", "◀"), ",")
            .on_hover_text("rewind one phase")
            .clicked()
        {
            intents.push(Intent::Rewind {
                phase: phase.saturating_sub(1),
            });
        }
        let play_label = match (session.running, compact) {
            (true, false) => "⏸ Pause",
            (true, true) => "⏸",
            (false, false) => "▶ Play",
            (false, true) => "▶",
        };
        if ui::button(ui, idle && !over, play_label, "Space").clicked() {
            intents.push(Intent::ToggleRunning);
        }
        if ui::button(ui, idle && !over, label("Step ▶|", "▶|"), ".")
            .on_hover_text("run one phase of one actor")
            .clicked()
        {
            intents.push(Intent::Step);
        }
        if ui::button(ui, idle && !over, label("⏭ To the end", "⏭"), "E").clicked() {
            intents.push(Intent::RunToEnd);
        }
        ui.separator();
        if ui
            .add_enabled(session.speed > 0, egui::Button::new("−"))
            .on_hover_text("slower (-)")
            .clicked()
        {
            intents.push(Intent::ChangeSpeed(-1));
        }
        ui.label(RichText::new(format!("{}/s", session.phases_per_second())).monospace());
        if ui
            .add_enabled(session.speed + 1 < crate::session::SPEEDS.len(), egui::Button::new("+"))
            .on_hover_text("faster (+)")
            .clicked()
        {
            intents.push(Intent::ChangeSpeed(1));
        }
        if !compact {
            rewind_and_tapes(ui, session, level_ui, paths, phase, intents);
        }
        ui.separator();
        if ui::button(
            ui,
            idle && !over && session.mode != Mode::Replay,
            label("🔮 Predict", "🔮"),
            "V",
        )
        .on_hover_text("before the run plays out: will the heist work, and which guard will decide it?")
        .clicked()
        {
            predict::open(level_ui, prediction);
        }
        let debrief = egui::Button::new(RichText::new("Debrief").strong().color(if over {
            theme::CREW
        } else {
            theme::TEXT_FAINT
        }))
        .shortcut_text(RichText::new("Enter").monospace().size(11.5).color(theme::TEXT_FAINT));
        if ui.add_enabled(over && idle, debrief).clicked() {
            intents.push(Intent::Debrief);
        }
    });
    last_word(ui, session, simulation, level_ui, prediction);
}

/// The last word: the session's notice, or the screen's own. The verdict on the right is
/// laid out first, so a long notice is cut short ("…", whole on hover) instead of running
/// under it.
fn last_word(
    ui: &mut egui::Ui,
    session: &Session,
    simulation: &Simulation,
    level_ui: &LevelUi,
    prediction: &Prediction,
) {
    let over = simulation.is_over();
    ui.horizontal(|ui| {
        ui.with_layout(egui::Layout::right_to_left(egui::Align::Center), |ui| {
            if over
                && let Some(conclusion) = &session.conclusion
                && let Ok(verdict) = &conclusion.verdict
            {
                // In the debrief's tone: a loss is never a green tick here either.
                let (glyph, color) = conclusion
                    .debrief
                    .as_ref()
                    .map_or((theme::outcome_glyph(verdict.outcome), theme::TEXT), |told| {
                        crate::screens::debrief::tone_look(told.tone)
                    });
                ui.label(
                    RichText::new(format!(
                        "Level over: {glyph} {} — press Enter for the debrief",
                        theme::outcome_words(verdict.outcome)
                    ))
                    .strong()
                    .color(color),
                );
            }
            if let Some((text, color)) = predict::status(prediction) {
                ui.add(egui::Label::new(RichText::new(text).color(color)).truncate());
            }
            ui.with_layout(egui::Layout::left_to_right(egui::Align::Center), |ui| {
                let line = |ui: &mut egui::Ui, text: RichText| {
                    ui.add(egui::Label::new(text).truncate());
                };
                if let Some(job) = &session.job {
                    ui.spinner();
                    line(ui, RichText::new(job.describe()).color(theme::INFO));
                } else if let Some(flash) = &level_ui.flash {
                    line(ui, RichText::new(flash).color(theme::WARN));
                } else if let Some(notice) = &session.notice {
                    let (glyph, color) = if notice.problem {
                        ("⚠", theme::WARN)
                    } else {
                        ("ℹ", theme::TEXT_DIM)
                    };
                    line(ui, RichText::new(format!("{glyph} {}", notice.text)).color(color));
                } else {
                    line(
                        ui,
                        RichText::new(
                            "Space play/pause · . step · , back · 1–9 cards · O operator · S save · ? all keys",
                        )
                        .size(theme::SMALL)
                        .color(theme::TEXT_DIM),
                    );
                }
            });
        });
    });
}

/// The rewind slider and its Go, then saving and loading tapes.
fn rewind_and_tapes(
    ui: &mut egui::Ui,
    session: &Session,
    level_ui: &mut LevelUi,
    paths: &GamePaths,
    phase: u32,
    intents: &mut Vec<Intent>,
) {
    let idle = !session.is_busy();
    ui.separator();
    // Rewind to any earlier point: pick the phase, then go. The slider is laid out as one
    // piece, so the row wraps before it rather than let it run past the edge (which would
    // also widen the panel for every line below it).
    if ui.available_rect_before_wrap().width() < REWIND_ROW_WIDTH {
        ui.end_row();
    }
    let mut target = level_ui.rewind_to.unwrap_or(phase).min(phase);
    ui.label(RichText::new("rewind to").size(theme::SMALL));
    // A short slider: with the prediction's button the controls still fit one line at 1280.
    ui.spacing_mut().slider_width = 56.0;
    let slider = egui::Slider::new(&mut target, 0..=phase.max(1))
        .integer()
        .show_value(true);
    let response = ui.add_enabled(idle && phase > 0, slider);
    if response.changed() {
        level_ui.rewind_to = Some(target);
    }
    if ui::button(ui, idle && target < phase, "Go", "G")
        .on_hover_text("re-simulate from the seed to that phase")
        .clicked()
    {
        intents.push(Intent::Rewind { phase: target });
        level_ui.rewind_to = None;
    }
    ui.separator();
    if ui::button(ui, idle, "Save", "S")
        .on_hover_text("save the tape of what you did")
        .clicked()
    {
        level_ui.prompt = Some(Prompt {
            kind: PromptKind::SaveTape,
            text: suggested_tape_path(paths, session).display().to_string(),
            focus: true,
        });
    }
    if ui::button(ui, true, "Load", "L")
        .on_hover_text("load a tape into the replay viewer")
        .clicked()
    {
        level_ui.prompt = Some(Prompt {
            kind: PromptKind::LoadTape,
            text: paths.levels.display().to_string() + "/",
            focus: true,
        });
    }
}
