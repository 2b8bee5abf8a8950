//! The sandbox: any level, with every guard a toggle and any seed.

use bevy::prelude::*;
use bevy_egui::egui::{self, RichText};
use bevy_egui::{EguiContexts, EguiPrimaryContextPass};
use twice_world::explore::Stage;
use twice_world::runtime::guards::{Guard, Guards};

use super::Screen;
use super::header::Header;
use crate::campaign::Campaign;
use crate::defence;
use crate::explorer::{ExplorerIntent, ExplorerRun};
use crate::session::{Intent, Mode, OpenProblem};
use crate::ui::{self, theme};

pub(super) fn plugin(app: &mut App) {
    app.add_systems(OnEnter(Screen::Sandbox), spawn_state);
    app.add_systems(EguiPrimaryContextPass, draw.run_if(in_state(Screen::Sandbox)));
}

#[derive(Component, Debug)]
struct SandboxState {
    selected: usize,
    guards: Guards,
    seed: u64,
}

fn spawn_state(mut commands: Commands, campaign: Res<Campaign>) {
    let guards = campaign
        .levels
        .first()
        .map_or_else(Guards::all_on, |loaded| loaded.level.guards);
    commands.spawn((
        Name::new("Sandbox"),
        SandboxState {
            selected: 0,
            guards,
            seed: 1,
        },
        DespawnOnExit(Screen::Sandbox),
    ));
}

// A Bevy system: each argument is a resource or message the screen reads or writes.
#[allow(clippy::too_many_arguments)]
fn draw(
    mut contexts: EguiContexts,
    mut state: Single<&mut SandboxState>,
    campaign: Res<Campaign>,
    problem: Res<OpenProblem>,
    explorer: Res<ExplorerRun>,
    mut next_screen: ResMut<NextState<Screen>>,
    mut intents: MessageWriter<Intent>,
    mut explorer_intents: MessageWriter<ExplorerIntent>,
) -> Result {
    let context = contexts.ctx_mut()?;
    let count = campaign.levels.len();
    let select = |state: &mut SandboxState, index: usize| {
        state.selected = index;
        if let Some(loaded) = campaign.levels.get(index) {
            state.guards = loaded.level.guards;
        }
    };
    if count > 0 && ui::pressed(context, egui::Key::ArrowDown) {
        let index = (state.selected + 1).min(count - 1);
        select(&mut state, index);
    }
    if ui::pressed(context, egui::Key::ArrowUp) {
        let index = state.selected.saturating_sub(1);
        select(&mut state, index);
    }
    if ui::pressed(context, egui::Key::Escape) {
        if explorer.is_running() {
            explorer_intents.write(ExplorerIntent::Cancel);
        } else {
            next_screen.set(Screen::Title);
        }
    }
    let mut start = ui::pressed(context, egui::Key::Enter);
    let mut ask_explorer = ui::pressed(context, egui::Key::X) && !explorer.is_running();
    // The guards' keys are defender mode's (1–9, 0, then -): every guard has one.
    for guard in Guard::ALL {
        if egui::Key::from_name(defence::guard_key(guard)).is_some_and(|key| ui::pressed(context, key)) {
            let on = state.guards.is_on(guard);
            state.guards.set(guard, !on);
        }
    }

    let mut root = ui::root_ui(context, "sandbox");
    let back = Header::new("sandbox-top", "← Title", "Sandbox", theme::VIOLET).show(
        &mut root,
        |ui| {
            ui::hint(
                ui,
                "any level, every guard a toggle; nothing here counts toward progress",
            )
        },
        |ui| {
            if let Some(problem) = &problem.0 {
                ui.label(RichText::new(format!("⚠ {problem}")).color(theme::WARN));
            }
        },
    );
    if back {
        next_screen.set(Screen::Title);
    }
    if let Some((index, open)) = level_list(&mut root, &campaign, state.selected) {
        select(&mut state, index);
        start |= open;
    }
    egui::CentralPanel::default()
        .frame(
            egui::Frame::new()
                .fill(theme::BACKGROUND)
                .inner_margin(egui::Margin::same(16)),
        )
        .show(&mut root, |ui| {
            let Some(loaded) = campaign.levels.get(state.selected) else {
                ui.label(format!("No levels in {}.", campaign.folder.display()));
                return;
            };
            ui.label(RichText::new(&loaded.level.title).size(22.0).strong());
            ui.label(RichText::new(&loaded.level.briefing).color(theme::TEXT_DIM));
            ui.add_space(10.0);
            guard_toggles(ui, &mut state.guards, loaded.level.guards);
            ui.add_space(10.0);
            ui.horizontal(|ui| {
                ui.label("Seed");
                ui.add(egui::DragValue::new(&mut state.seed).range(0..=u64::MAX / 2));
                ui::hint(ui, "the network's jitter comes from the seed");
            });
            ui.add_space(10.0);
            let button = egui::Button::new(RichText::new("▶  Open in the sandbox").size(theme::HEADING))
                .shortcut_text(RichText::new("Enter").monospace().color(theme::TEXT_FAINT))
                .min_size(egui::vec2(280.0, 36.0));
            if ui.add(button).clicked() {
                start = true;
            }
            ui.add_space(14.0);
            draw_explorer(ui, &explorer, &mut ask_explorer, &mut explorer_intents);
        });
    if ask_explorer && let Some(loaded) = campaign.levels.get(state.selected) {
        explorer_intents.write(ExplorerIntent::Start {
            level: Box::new(loaded.clone()),
            guards: state.guards,
            seed: state.seed,
        });
    }
    if start && let Some(loaded) = campaign.levels.get(state.selected) {
        intents.write(Intent::OpenLevel {
            path: loaded.path.clone(),
            mode: Mode::Sandbox,
            guards: Some(state.guards),
            seed: state.seed,
            at_phase: None,
        });
    }
    Ok(())
}

/// The levels to pick from; returns the one clicked, and whether it was double-clicked.
fn level_list(root: &mut egui::Ui, campaign: &Campaign, selected: usize) -> Option<(usize, bool)> {
    let mut picked = None;
    egui::Panel::left("sandbox-levels")
        .exact_size(420.0)
        .resizable(false)
        .frame(
            egui::Frame::new()
                .fill(theme::PANEL)
                .inner_margin(egui::Margin::same(12)),
        )
        .show(root, |ui| {
            ui.label(RichText::new("Level (↑/↓)").strong());
            egui::ScrollArea::vertical().auto_shrink(false).show(ui, |ui| {
                for (index, loaded) in campaign.levels.iter().enumerate() {
                    let level = &loaded.level;
                    let label = format!("Ch. {} · {}", level.chapter, level.title);
                    let response = ui.selectable_label(index == selected, label);
                    if response.clicked() || response.double_clicked() {
                        picked = Some((index, response.double_clicked()));
                    }
                }
            });
        });
    picked
}

/// The guards as toggles, each with its key (defender mode's), and three presets.
fn guard_toggles(ui: &mut egui::Ui, guards: &mut Guards, level_guards: Guards) {
    ui.horizontal(|ui| {
        ui.label(RichText::new("Guards").size(theme::HEADING).strong());
        if ui.button("as the level has them").clicked() {
            *guards = level_guards;
        }
        if ui.button("all on").clicked() {
            *guards = Guards::all_on();
        }
        if ui.button("all off").clicked() {
            *guards = Guards::all_off();
        }
    });
    for guard in Guard::ALL {
        let mut on = guards.is_on(guard);
        // Wrapped: the longest promise runs on under its guard rather than past the edge.
        ui.horizontal_wrapped(|ui| {
            ui::key_cap(ui, defence::guard_key(guard));
            let word = if on { "✔ on " } else { "✖ off" };
            let color = if on { theme::GOOD } else { theme::BAD };
            if ui
                .checkbox(&mut on, RichText::new(word).monospace().color(color))
                .changed()
            {
                guards.set(guard, on);
            }
            ui.label(RichText::new(twice_world::guards::words(guard)).strong());
            ui::hint(ui, twice_world::guards::promise(guard));
        });
    }
}

/// "Ask the explorer": a search for a heist with these guards, off the main thread.
fn draw_explorer(
    ui: &mut egui::Ui,
    explorer: &ExplorerRun,
    ask: &mut bool,
    explorer_intents: &mut MessageWriter<ExplorerIntent>,
) {
    ui.label(
        RichText::new("The explorer")
            .size(theme::HEADING)
            .strong()
            .color(theme::CREW),
    );
    ui::hint(
        ui,
        format!(
            "an automatic heist crew: deals up to {} random schedules of this level's cards against these guards, \
             stops at the first that reaches the goal, shrinks it, and plays it as a tape",
            crate::explorer::EXPLORER_SCHEDULES
        ),
    );
    match explorer.progress() {
        Some((title, progress)) => {
            let (fraction, text) = match progress {
                Some(progress) => {
                    let stage = match progress.stage {
                        Stage::Searching => "searching",
                        Stage::Shrinking => "shrinking the find",
                    };
                    (
                        progress.schedules_done as f32 / progress.schedules_total.max(1) as f32,
                        format!(
                            "{title}: {stage} · {} of {} · {:.1} s",
                            progress.schedules_done,
                            progress.schedules_total,
                            progress.elapsed.as_secs_f32()
                        ),
                    )
                }
                None => (0.0, format!("{title}: starting")),
            };
            ui.add(egui::ProgressBar::new(fraction).text(text).desired_width(520.0));
            if ui::button(ui, true, "Cancel", "Esc").clicked() {
                explorer_intents.write(ExplorerIntent::Cancel);
            }
        }
        None => {
            if ui::button(ui, true, "🔍 Ask the explorer", "X").clicked() {
                *ask = true;
            }
        }
    }
    if let Some(report) = &explorer.last {
        let color = if report.problem { theme::WARN } else { theme::TEXT };
        ui.label(RichText::new(&report.text).size(theme::SMALL).color(color));
    }
}
