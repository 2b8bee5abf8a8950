//! The replay viewer: open a tape file (any path, or one from the campaign or your saved tapes).
//! A campaign tape shows its level's solution, so it opens only once that level is won (or with
//! every level open: `--unlock-all`, presenter mode); the player's own tapes always open.

use std::path::{Path, PathBuf};

use bevy::prelude::*;
use bevy_egui::egui::{self, RichText};
use bevy_egui::{EguiContexts, EguiPrimaryContextPass};
use twice_world::campaign::TAPE_SUFFIX;
use twice_world::text::counted;

use super::Screen;
use super::header::Header;
use crate::campaign::Campaign;
use crate::paths::GamePaths;
use crate::progress::Progress;
use crate::session::{Intent, OpenProblem};
use crate::ui::{self, theme};

/// The most saved tapes listed.
const SAVED_TAPES_MAX: usize = 500;

pub(super) fn plugin(app: &mut App) {
    app.add_systems(OnEnter(Screen::Replay), spawn_state);
    app.add_systems(EguiPrimaryContextPass, draw.run_if(in_state(Screen::Replay)));
}

#[derive(Component, Debug)]
pub struct ReplayState {
    path: String,
    focus: bool,
    /// Tapes in the player's data folder, read when the screen opens.
    saved: Vec<PathBuf>,
    /// Why the last tape asked for stays shut.
    refused: Option<String>,
}

impl ReplayState {
    /// The viewer as it opens, with the player's tapes in `paths`.
    pub fn new(paths: &GamePaths) -> ReplayState {
        let mut saved = twice_world::level::files_below(&paths.tapes_folder(), TAPE_SUFFIX).unwrap_or_default();
        saved.truncate(SAVED_TAPES_MAX);
        ReplayState {
            path: String::new(),
            focus: true,
            saved,
            refused: None,
        }
    }

    /// Puts `path` in the tape field, which takes the keyboard (Enter opens it).
    pub fn set_path(&mut self, path: &str) {
        path.clone_into(&mut self.path);
        self.focus = true;
    }
}

fn spawn_state(mut commands: Commands, paths: Res<GamePaths>) {
    commands.spawn((
        Name::new("Replay viewer"),
        ReplayState::new(&paths),
        DespawnOnExit(Screen::Replay),
    ));
}

fn draw(
    mut contexts: EguiContexts,
    mut state: Single<&mut ReplayState>,
    (campaign, progress): (Res<Campaign>, Res<Progress>),
    paths: Res<GamePaths>,
    problem: Res<OpenProblem>,
    mut next_screen: ResMut<NextState<Screen>>,
    mut intents: MessageWriter<Intent>,
) -> Result {
    let context = contexts.ctx_mut()?;
    let asked = frame(context, &mut state, &campaign, &progress, &paths, &problem);
    if asked.back {
        next_screen.set(Screen::Title);
    }
    if let Some(path) = asked.open {
        intents.write(Intent::OpenTape { path, at_phase: None });
    }
    Ok(())
}

/// What the player asked of the replay viewer this frame.
#[derive(Debug, Default)]
pub struct ReplayAsks {
    pub back: bool,
    pub open: Option<PathBuf>,
    /// A tape that stays shut, and why (shown on the screen).
    pub refused: Option<String>,
}

/// One frame of the replay viewer (the system above acts on what it returns; headless tests
/// read it through [`crate::ui::probe`]).
pub fn frame(
    context: &egui::Context,
    state: &mut ReplayState,
    campaign: &Campaign,
    progress: &Progress,
    paths: &GamePaths,
    problem: &OpenProblem,
) -> ReplayAsks {
    let mut asked = ReplayAsks {
        back: ui::pressed(context, egui::Key::Escape),
        ..ReplayAsks::default()
    };
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
                        .desired_width(760.0_f32.min(ui.available_width() - 120.0))
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
            let refused = state.refused.as_ref();
            if let Some(problem) = refused.or(problem.0.as_ref()) {
                ui.label(RichText::new(format!("⚠ {problem}")).color(theme::WARN));
            }
        },
    );
    asked.back |= back;
    let locked = campaign
        .tapes
        .iter()
        .filter(|tape| !campaign.tape_opens(tape, progress))
        .count();
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
                    tape_row(ui, path, None, &mut open);
                }
                ui.add_space(10.0);
                ui.label(RichText::new(format!("The campaign's tapes · {}", campaign.folder.display())).strong());
                if locked > 0 {
                    ui::hint(
                        ui,
                        format!(
                            "{} of levels you have not won yet stay shut: a level's tapes show its solution. Win the level and its tapes open.",
                            counted(locked as u64, "tape", "tapes")
                        ),
                    );
                }
                for path in campaign.tapes.iter().filter(|tape| campaign.tape_opens(tape, progress)) {
                    let level = campaign
                        .level_of_tape(path)
                        .map(|index| campaign.levels[index].level.title.as_str());
                    tape_row(ui, path, level, &mut open);
                }
            });
        });
    if let Some(path) = open {
        state.path = path.display().to_string();
        // A campaign tape typed or pasted in is held to the same lock as the list.
        match campaign.level_of_tape(&path) {
            Some(index) if !campaign.tape_opens(&path, progress) => {
                let why = format!(
                    "{}: {}",
                    path.file_name()
                        .map_or_else(String::new, |name| name.to_string_lossy().into_owned()),
                    twice_world::campaign::path::tape_locked_words(&campaign.levels[index].level)
                );
                state.refused = Some(why.clone());
                asked.refused = Some(why);
            }
            _ => {
                state.refused = None;
                asked.open = Some(path);
            }
        }
    }
    asked
}

fn tape_row(ui: &mut egui::Ui, path: &Path, level: Option<&str>, open: &mut Option<PathBuf>) {
    let name = path.file_name().map_or_else(
        || path.display().to_string(),
        |name| name.to_string_lossy().into_owned(),
    );
    ui.horizontal(|ui| {
        if ui.button("▶ open").clicked() {
            *open = Some(path.to_path_buf());
        }
        ui.label(RichText::new(name).monospace());
        if let Some(level) = level {
            ui::hint(ui, format!("· {level}"));
        }
    });
}
