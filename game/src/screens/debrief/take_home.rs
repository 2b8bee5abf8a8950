//! The debrief's "Take it home" button: this run as a cargo project against `twice-runtime`
//! (`crate::take_home` prepares and saves it). Enabled when the run can be exported; else
//! disabled, with the export's own reason on hover. After a save, the line to run is shown
//! and copied to the clipboard once.

use bevy::prelude::*;
use bevy_egui::egui::{self, RichText};

use crate::take_home::{TakeHome, TakeHomeIntent};
use crate::ui::{self, theme};

/// The debrief opened: work out whether this run can be taken home.
pub(super) fn prepare(mut intents: MessageWriter<TakeHomeIntent>) {
    intents.write(TakeHomeIntent::Prepare);
}

/// The button (and its key, H), in the debrief's bottom row: what the player asked for, if
/// anything. A project prepared for an earlier state of the run is asked for again.
pub(super) fn button(ui: &mut egui::Ui, take_home: &TakeHome, generation: u64) -> Option<TakeHomeIntent> {
    let (enabled, hover) = match take_home.ready_for(generation) {
        Some(Ok(project)) => (
            true,
            format!(
                "save this run as a cargo project against twice-runtime, the library your agent would use: level \
                 {}'s tools and guards, a fake billing, this run's faults where they landed. `cargo run` prints \
                 this verdict.",
                project.level_id
            ),
        ),
        Some(Err(why)) => (false, format!("This run cannot be exported: {why}")),
        None => (false, "working out whether this run can be exported…".to_owned()),
    };
    let response = ui::button(ui, enabled, "↓ Take it home", "H");
    let response = if enabled {
        response.on_hover_text(hover)
    } else {
        response.on_disabled_hover_text(hover)
    };
    if take_home.ready_for(generation).is_none() {
        return Some(TakeHomeIntent::Prepare);
    }
    let asked = response.clicked() || (enabled && ui::pressed(ui.ctx(), egui::Key::H));
    asked.then_some(TakeHomeIntent::Save)
}

/// What came of the last save, on a line of its own: where the project is and what to run
/// (copied to the clipboard the first time it is shown), or why it was not saved.
pub(super) fn outcome(ui: &mut egui::Ui, take_home: &TakeHome, copied: &mut u64) {
    match &take_home.saved {
        Some(Ok(saved)) => {
            if *copied != saved.serial {
                ui.ctx().copy_text(saved.command.clone());
                *copied = saved.serial;
            }
            ui.horizontal(|ui| {
                ui.label(
                    RichText::new(format!(
                        "Saved to {}. Run (copied to the clipboard):",
                        saved.folder.display()
                    ))
                    .size(theme::SMALL)
                    .color(theme::TEXT_DIM),
                );
                ui.add(
                    egui::Label::new(
                        RichText::new(&saved.command)
                            .monospace()
                            .size(theme::SMALL)
                            .color(theme::GOOD),
                    )
                    .truncate(),
                )
                .on_hover_text(&saved.command);
            });
        }
        Some(Err(problem)) => {
            ui.label(RichText::new(problem).size(theme::SMALL).color(theme::BAD));
        }
        None => {}
    }
}
