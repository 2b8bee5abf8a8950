//! The pause menu: Esc (or the back button) in a level stops the run where it is and asks
//! what next — resume, restart, save the tape, or leave. Nothing is lost by pressing Esc: the
//! run is kept, whole, until the player chooses to leave it.

use bevy_egui::egui::{self, RichText};
use twice_world::simulator::Simulation;

use super::{LevelUi, Prompt, PromptKind, controls};
use crate::paths::GamePaths;
use crate::session::{Intent, Leaving, Mode, Session};
use crate::ui::{self, theme};

/// The menu, while open.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PauseMenu {
    /// The run was playing when the menu opened: Resume plays it again.
    pub was_running: bool,
    /// Opened this frame: the Esc that opened it must not close it again.
    pub fresh: bool,
}

/// Whether leaving now loses anything: a run that has moved past its first phase, or a move
/// played. A level just opened has nothing to lose, and leaves at once.
fn has_a_run(simulation: &Simulation) -> bool {
    simulation.phase() > 0 || !simulation.played().is_empty()
}

/// Esc or the back button: opens the menu and stops the run where it is; with no run to
/// lose yet, leaves at once.
pub fn open(level_ui: &mut LevelUi, session: &Session, simulation: &Simulation, intents: &mut Vec<Intent>) {
    if !has_a_run(simulation) {
        intents.push(Intent::Leave(Leaving::Back));
        return;
    }
    level_ui.pause_menu = Some(PauseMenu {
        was_running: session.running,
        fresh: true,
    });
    if session.running {
        intents.push(Intent::SetRunning(false));
    }
}

fn where_to(session: &Session) -> &'static str {
    match session.mode {
        Mode::Campaign => "the level select",
        Mode::Sandbox => "the sandbox",
        Mode::Replay => "the tapes",
    }
}

/// The menu, while open: Resume (Esc), Restart (R), Save the tape (S), Leave (Enter).
pub fn draw(
    context: &egui::Context,
    session: &Session,
    simulation: &Simulation,
    paths: &GamePaths,
    level_ui: &mut LevelUi,
    intents: &mut Vec<Intent>,
) {
    let Some(menu) = level_ui.pause_menu else {
        return;
    };
    let phase = simulation.phase();
    let moves = simulation.played().len();
    // The keys that opened the menu this frame are not answers to it.
    let key = |key| !menu.fresh && ui::pressed(context, key);
    let mut resume = key(egui::Key::Escape);
    let mut restart = key(egui::Key::R);
    let mut save = key(egui::Key::S) && session.mode != Mode::Replay;
    let mut leave = key(egui::Key::Enter);
    let screen = context.viewport_rect();
    let response = egui::Modal::new(egui::Id::new("pause-menu")).show(context, |ui| {
        ui.set_width(460.0_f32.min(screen.width() - 60.0));
        ui.label(
            RichText::new(format!("⏸ Paused at phase {phase}"))
                .size(theme::HEADING)
                .strong()
                .color(theme::WARN),
        );
        ui::hint(
            ui,
            format!(
                "Your run is kept while this is open: {} played so far.",
                twice_world::text::counted(moves as u64, "move", "moves")
            ),
        );
        ui.add_space(6.0);
        if ui::button(ui, true, "▶  Resume", "Esc").clicked() {
            resume = true;
        }
        if ui::button(ui, true, "↺  Restart from phase 0", "R").clicked() {
            restart = true;
        }
        if session.mode != Mode::Replay && ui::button(ui, true, "💾  Save the tape of this run", "S").clicked() {
            save = true;
        }
        ui.add_space(4.0);
        if ui::button(ui, true, &format!("←  Leave to {}", where_to(session)), "Enter").clicked() {
            leave = true;
        }
        ui::hint(
            ui,
            if session.mode == Mode::Replay {
                "Leaving closes the tape; the file stays where it is."
            } else {
                "Leaving ends this run: its moves are not kept unless you save the tape first."
            },
        );
    });
    if response.should_close() && !menu.fresh {
        resume = true;
    }
    level_ui.pause_menu = Some(PauseMenu { fresh: false, ..menu });
    if leave {
        level_ui.pause_menu = None;
        intents.push(Intent::Leave(Leaving::Back));
    } else if restart {
        level_ui.pause_menu = None;
        intents.push(Intent::Restart);
    } else if save {
        level_ui.pause_menu = None;
        level_ui.prompt = Some(Prompt {
            kind: PromptKind::SaveTape,
            text: controls::suggested_tape_path(paths, session).display().to_string(),
            focus: true,
        });
    } else if resume {
        level_ui.pause_menu = None;
        if menu.was_running {
            intents.push(Intent::SetRunning(true));
        }
    }
}
