//! Predict, then watch: the window (V) where the player says, before the run plays out,
//! whether the heist will work and which guard will decide it. The prediction and its score
//! are `crate::progress::prediction`'s; this only draws and sends intents.

use bevy_egui::egui::{self, RichText};
use twice_world::prediction::{Expected, Pick};

use super::LevelUi;
use crate::progress::prediction::{Prediction, PredictionIntent};
use crate::session::Session;
use crate::ui::{self, theme};

/// The window's choices while it is open.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Draft {
    pub verdict: Expected,
    pub pick: Option<Pick>,
}

/// Opens the window on the prediction made (or a first guess to change).
pub fn open(level_ui: &mut LevelUi, prediction: &Prediction) {
    level_ui.predict = Some(match prediction.made {
        Some((made, _)) => Draft {
            verdict: made.verdict,
            pick: made.pick(),
        },
        None => Draft {
            verdict: Expected::HeistWorks,
            pick: None,
        },
    });
}

fn verdict_words(verdict: Expected) -> &'static str {
    match verdict {
        Expected::HeistWorks => "the heist works",
        Expected::HeistFails => "the heist fails",
    }
}

/// The line on the controls bar: the prediction made, or why the last one was refused.
pub fn status(prediction: &Prediction) -> Option<(String, egui::Color32)> {
    if let Some(notice) = &prediction.notice {
        return Some((notice.clone(), theme::WARN));
    }
    prediction.made.map(|(made, phase)| {
        let guard = match made.pick() {
            Some(Pick::Guard(guard)) => format!(", decided by {}", twice_world::guards::words(guard)),
            Some(Pick::NoGuard) => ", and no guard decides it".to_owned(),
            None => String::new(),
        };
        (
            format!("🔮 predicted at phase {phase}: {}{guard}", verdict_words(made.verdict)),
            theme::VIOLET,
        )
    })
}

/// The window, while open: the verdict, what decides it (the choices the world offers for
/// this level: the guards it is about, on or off, and "no guard"), and Predict.
pub fn draw(context: &egui::Context, session: &Session, level_ui: &mut LevelUi, intents: &mut Vec<PredictionIntent>) {
    let Some(mut draft) = level_ui.predict else {
        return;
    };
    let choices = twice_world::prediction::choices(&session.recipe.level.level, session.recipe.guards_in_force());
    let mut close = ui::pressed(context, egui::Key::Escape);
    let mut submit = ui::pressed(context, egui::Key::Enter);
    let screen = context.viewport_rect();
    let response = egui::Modal::new(egui::Id::new("predict")).show(context, |ui| {
        ui.set_width(560.0_f32.min(screen.width() - 60.0));
        ui.label(
            RichText::new("🔮 Predict, then watch")
                .size(theme::HEADING)
                .strong()
                .color(theme::VIOLET),
        );
        ui::hint(
            ui,
            "Before the run plays out: will the heist work, and what will decide it? The debrief scores both halves (a guard is right when switching it, on or off, changes this run's verdict), and your progress keeps the tally.",
        );
        egui::ScrollArea::vertical()
            .max_height((screen.height() - 170.0).max(120.0))
            .show(ui, |ui| {
                ui.horizontal(|ui| {
                    for verdict in [Expected::HeistWorks, Expected::HeistFails] {
                        ui.radio_value(&mut draft.verdict, verdict, verdict_words(verdict));
                    }
                });
                ui.add_space(4.0);
                ui.label(RichText::new("What decides it (optional)").strong());
                ui.radio_value(&mut draft.pick, None, "I won't say");
                for choice in &choices {
                    let label = match choice.on {
                        Some(on) => format!("{} ({})", choice.words, if on { "on" } else { "off" }),
                        None => choice.words.to_owned(),
                    };
                    let radio = ui.radio_value(&mut draft.pick, Some(choice.pick), label);
                    if !choice.promise.is_empty() {
                        radio.on_hover_text(choice.promise);
                    }
                }
            });
        ui.horizontal(|ui| {
            if ui::button(ui, true, "Predict", "Enter").clicked() {
                submit = true;
            }
            if ui::button(ui, true, "Cancel", "Esc").clicked() {
                close = true;
            }
        });
    });
    if response.should_close() {
        close = true;
    }
    level_ui.predict = Some(draft);
    if submit {
        intents.push(PredictionIntent::Make {
            verdict: draft.verdict,
            pick: draft.pick,
        });
        close = true;
    }
    if close {
        level_ui.predict = None;
    }
}
