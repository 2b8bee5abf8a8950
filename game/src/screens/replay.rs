//! The replay viewer: open a tape file (any path, or one from the campaign or your saved tapes).

use std::path::{Path, PathBuf};

use bevy::prelude::*;
use bevy_egui::egui::{self, RichText};
use bevy_egui::{EguiContexts, EguiPrimaryContextPass};
use twice_world::campaign::TAPE_SUFFIX;

use super::Screen;
use super::header::Header;
use crate::campaign::Campaign;
use crate::paths::GamePaths;
use crate::session::{Intent, OpenProblem};
use crate::ui::{self, theme};

/// The most saved tapes listed.
const SAVED_TAPES_MAX: usize = 500;

pub(super) fn plugin(app: &mut App) {
    app.add_systems(OnEnter(Screen::Replay), spawn_state);
    app.add_systems(EguiPrimaryContextPass, draw.run_if(in_state(Screen::Replay)));
}

#[derive(Component, Debug)]
struct ReplayState {
    path: String,
    focus: bool,
    /// Tapes in the player's data folder, read when the screen opens.
    saved: Vec<PathBuf>,
}

fn spawn_state(mut commands: Commands, paths: Res<GamePaths>) {
    let mut saved = twice_world::level::files_below(&paths.tapes_folder(), TAPE_SUFFIX).unwrap_or_default();
    saved.truncate(SAVED_TAPES_MAX);
    commands.spawn((
        Name::new("Replay viewer"),
        ReplayState {
            path: String::new(),
            focus: true,
            saved,
        },
        DespawnOnExit(Screen::Replay),
    ));
}

fn draw(
    mut contexts: EguiContexts,
    mut state: Single<&mut ReplayState>,
    campaign: Res<Campaign>,
    paths: Res<GamePaths>,
    problem: Res<OpenProblem>,
    mut next_screen: ResMut<NextState<Screen>>,
    mut intents: MessageWriter<Intent>,
) -> Result {
    let context = contexts.ctx_mut()?;
    if ui::pressed(context, egui::Key::Escape) {
        next_screen.set(Screen::Title);
    }
    let mut open: Option<PathBuf> = None;
    let mut root = ui::root_ui(context, "replay");
    let back = Header::new("replay-top", "← Title", "Replay a tape", theme::INFO).show(
        &mut root,
        |ui| {
            ui::hint(
                ui,
                "a tape is a seed and timed moves; the viewer plays them, you step and rewind",
            )
        },
        |ui| {
            ui.horizontal(|ui| {
                ui.label("Tape file");
                let field = ui.add(
                    egui::TextEdit::singleline(&mut state.path)
                        .hint_text("path/to/something.tape.ron")
                        .desired_width(760.0)
                        .char_limit(4_096),
                );
                if state.focus {
                    field.request_focus();
                    state.focus = false;
                }
                if field.lost_focus() && ui.input(|input| input.key_pressed(egui::Key::Enter)) {
                    open = Some(PathBuf::from(state.path.trim()));
                }
                if ui::button(ui, !state.path.trim().is_empty(), "Open", "Enter").clicked() {
                    open = Some(PathBuf::from(state.path.trim()));
                }
            });
            if let Some(problem) = &problem.0 {
                ui.label(RichText::new(format!("⚠ {problem}")).color(theme::WARN));
            }
        },
    );
    if back {
        next_screen.set(Screen::Title);
    }
    egui::CentralPanel::default()
        .frame(
            egui::Frame::new()
                .fill(theme::BACKGROUND)
                .inner_margin(egui::Margin::same(14)),
        )
        .show(&mut root, |ui| {
            egui::ScrollArea::vertical().auto_shrink(false).show(ui, |ui| {
                ui.label(RichText::new(format!("Your saved tapes · {}", paths.tapes_folder().display())).strong());
                if state.saved.is_empty() {
                    ui::hint(ui, "none yet: press S in a level to save one");
                }
                for path in &state.saved {
                    tape_row(ui, path, &mut open);
                }
                ui.add_space(10.0);
                ui.label(RichText::new(format!("The campaign's tapes · {}", campaign.folder.display())).strong());
                for path in &campaign.tapes {
                    tape_row(ui, path, &mut open);
                }
            });
        });
    if let Some(path) = open {
        state.path = path.display().to_string();
        intents.write(Intent::OpenTape { path, at_phase: None });
    }
    Ok(())
}

fn tape_row(ui: &mut egui::Ui, path: &Path, open: &mut Option<PathBuf>) {
    let name = path.file_name().map_or_else(
        || path.display().to_string(),
        |name| name.to_string_lossy().into_owned(),
    );
    ui.horizontal(|ui| {
        if ui.button("▶ open").clicked() {
            *open = Some(path.to_path_buf());
        }
        ui.label(RichText::new(name).monospace());
    });
}
