//! The level screen: the billing world, Penny and her workers, the wire, the ledger, the
//! checkpoints, the timeline, the cards and the operator console — and the controls.
//!
//! Nothing here changes the simulation: every control becomes an [`Intent`].

use bevy::prelude::*;
use bevy_egui::egui::{self, RichText};
use bevy_egui::{EguiContexts, EguiPrimaryContextPass};
use twice_sim::level::CardKind;
use twice_sim::simulator::Simulation;

use super::Screen;
use crate::campaign::Campaign;
use crate::operator_api::OperatorApi;
use crate::paths::GamePaths;
use crate::presenter::Presenter;
use crate::progress::Progress;
use crate::session::{Intent, Mode, Session};
use crate::ui::{self, theme};

mod cards;
mod controls;
mod declaration;
mod ledger;
mod operator;
mod overlays;
mod rulebook;
mod stage;
pub mod timeline;
mod world;

pub(super) fn plugin(app: &mut App) {
    app.add_systems(OnEnter(Screen::Level), spawn_state);
    app.add_systems(
        EguiPrimaryContextPass,
        draw.run_if(in_state(Screen::Level)).run_if(resource_exists::<Session>),
    );
}

/// What the level screen remembers between frames (selection, open dialogs, typed text).
#[derive(Component, Debug, Default)]
pub struct LevelUi {
    /// The ledger row (idempotency key) selected in the ledger or the operator queue.
    pub selected_key: Option<String>,
    pub scroll_to_selected: bool,
    pub history: ledger::HistoryCache,
    /// A card or operator move waiting for its target.
    pub chooser: Option<Chooser>,
    pub operator_reason: String,
    /// Which operator the player acts as in the console (empty: the crew's own, `op-crew`).
    pub operator: String,
    /// The status the player's decision expects the call to have (compare-and-set); `None`:
    /// the status the console shows now.
    pub expected_status: Option<twice_sim::runtime::rules::Status>,
    pub focus_reason: bool,
    pub help: bool,
    /// The rulebook panel is open (B); `rulebook_phase`: the phase whose rows it lights
    /// (`None`: the latest phase in which a row fired).
    pub rulebook: bool,
    pub rulebook_phase: Option<u32>,
    /// The left and right columns (task, guards, checkpoints; ledger, operator). Always shown
    /// but in presenter mode, where they come on demand (P) so the stage and timeline fit.
    pub side_panels: bool,
    /// The chapter's presenter notes (N); open at the start in presenter mode.
    pub notes: bool,
    pub prompt: Option<Prompt>,
    /// The phase the rewind slider points at.
    pub rewind_to: Option<u32>,
    /// An operator move chosen in the console, sent at the end of the frame.
    pub pending_play: Option<twice_sim::level::Play>,
    /// A line from the screen itself (not the session), such as why a key did nothing.
    pub flash: Option<String>,
    /// The tool declaration window is hidden (D); shown by default in a level that lets the
    /// player declare a tool.
    pub declaration_hidden: bool,
    /// The declaration window's drafts, by tool.
    pub declaration_drafts: std::collections::BTreeMap<String, declaration::Draft>,
}

/// A choice the player makes with the number keys or the mouse.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Chooser {
    Card(CardKind),
    Operator,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Prompt {
    pub kind: PromptKind,
    pub text: String,
    pub focus: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PromptKind {
    SaveTape,
    LoadTape,
    GoToPhase,
}

fn spawn_state(mut commands: Commands, presenter: Res<Presenter>) {
    commands.spawn((
        Name::new("Level screen"),
        LevelUi {
            side_panels: !presenter.on,
            notes: presenter.on,
            ..LevelUi::default()
        },
        timeline::TimelineCache::default(),
        DespawnOnExit(Screen::Level),
    ));
}

/// Width of the left column (task, guards, checkpoints) and the right one (ledger, operator).
const LEFT_WIDTH: f32 = 256.0;
const RIGHT_WIDTH: f32 = 410.0;
/// Height of the timeline along the bottom.
const TIMELINE_HEIGHT: f32 = 222.0;

fn draw(
    mut contexts: EguiContexts,
    state: Single<(&mut LevelUi, &mut timeline::TimelineCache)>,
    session: Res<Session>,
    paths: Res<GamePaths>,
    operator_api: Option<Res<OperatorApi>>,
    // The campaign for the chapter's presenter notes, beside the player's progress.
    (progress, campaign): (Res<Progress>, Res<Campaign>),
    mut writer: MessageWriter<Intent>,
) -> Result {
    let context = contexts.ctx_mut()?;
    let (mut level_ui, mut cache) = state.into_inner();
    let level_ui = &mut *level_ui;
    let mut intents = Vec::new();
    let simulation = session.simulation();
    cache.update(&simulation);

    keyboard(context, level_ui, &session, &simulation, &paths, &mut intents);

    let mut root = ui::root_ui(context, "level");
    egui::Panel::top("level-top")
        .frame(
            egui::Frame::new()
                .fill(theme::PANEL)
                .inner_margin(egui::Margin::symmetric(10, 6)),
        )
        .show(&mut root, |ui| {
            top_bar(ui, &session, &simulation, level_ui, &mut intents)
        });
    egui::Panel::bottom("level-controls")
        .frame(
            egui::Frame::new()
                .fill(theme::PANEL)
                .inner_margin(egui::Margin::symmetric(10, 6)),
        )
        .show(&mut root, |ui| {
            controls::draw(ui, &session, &simulation, level_ui, &paths, &mut intents)
        });
    if level_ui.side_panels {
        egui::Panel::right("level-right")
            .exact_size(RIGHT_WIDTH)
            .resizable(false)
            .frame(
                egui::Frame::new()
                    .fill(theme::PANEL)
                    .inner_margin(egui::Margin::same(6)),
            )
            .show(&mut root, |ui| {
                let operator_height = 206.0;
                let ledger_height = (ui.available_height() - operator_height - 8.0).max(160.0);
                ui.allocate_ui(egui::vec2(ui.available_width(), ledger_height), |ui| {
                    ledger::draw(ui, &session, &simulation, level_ui, &cache);
                });
                ui.add_space(4.0);
                operator::draw(ui, &session, &simulation, level_ui, &cache);
                if let Some(operator_api) = &operator_api {
                    operator::draw_http_hint(ui, operator_api);
                }
            });
    }
    // The timeline spans everything left of the ledger: it is the widest, wordiest view.
    egui::Panel::bottom("level-timeline")
        .exact_size(TIMELINE_HEIGHT)
        .resizable(false)
        .frame(
            egui::Frame::new()
                .fill(theme::BACKGROUND)
                .inner_margin(egui::Margin::same(6)),
        )
        .show(&mut root, |ui| {
            if let Some(phase) = timeline::draw(ui, simulation.timeline(), &cache, true, "level-timeline") {
                intents.push(Intent::Rewind { phase });
            }
        });
    if level_ui.side_panels {
        egui::Panel::left("level-left")
            .exact_size(LEFT_WIDTH)
            .resizable(false)
            .frame(
                egui::Frame::new()
                    .fill(theme::PANEL)
                    .inner_margin(egui::Margin::same(6)),
            )
            .show(&mut root, |ui| {
                egui::ScrollArea::vertical()
                    .id_salt("left-scroll")
                    .auto_shrink(false)
                    .show(ui, |ui| {
                        draw_briefing(ui, &session, &progress, &mut intents);
                        ui.add_space(4.0);
                        world::draw_task(ui, &simulation);
                        ui.add_space(4.0);
                        world::draw_guards(ui, &simulation);
                        ui.add_space(4.0);
                        world::draw_checkpoints(ui, &session);
                    });
            });
    }
    egui::CentralPanel::default()
        .frame(
            egui::Frame::new()
                .fill(theme::BACKGROUND)
                .inner_margin(egui::Margin::same(6)),
        )
        .show(&mut root, |ui| {
            stage::draw(ui, &session, &simulation, &cache);
            ui.add_space(4.0);
            cards::draw(ui, &session, &simulation, level_ui, &mut intents);
        });

    overlays::draw(context, &session, &simulation, level_ui, &mut intents);
    rulebook::draw(context, &simulation, level_ui);
    declaration::draw(context, &session, &simulation, level_ui, &mut intents);
    draw_notes(context, &session, &campaign, level_ui);
    operator::take_pending(level_ui, &mut intents);

    drop(simulation);
    if !intents.is_empty() {
        level_ui.flash = None;
    }
    for intent in intents {
        writer.write(intent);
    }
    Ok(())
}

/// The chapter's presenter notes: what to say while the room watches, what to ask it.
fn draw_notes(context: &egui::Context, session: &Session, campaign: &Campaign, level_ui: &mut LevelUi) {
    if !level_ui.notes {
        return;
    }
    let chapter = session.recipe.level.level.chapter;
    let notes = campaign.notes.chapter(chapter);
    let mut open = true;
    egui::Window::new(format!("Presenter notes · chapter {chapter}"))
        .id(egui::Id::new("presenter-notes"))
        .open(&mut open)
        .default_width(300.0)
        .default_pos(context.viewport_rect().right_top() + egui::vec2(-320.0, 60.0))
        .show(context, |ui| match notes {
            None => {
                ui.label(
                    RichText::new(format!(
                        "No notes for chapter {chapter}: add them to {} beside the levels.",
                        twice_sim::presenter_notes::NOTES_FILE
                    ))
                    .color(theme::TEXT_DIM),
                );
            }
            Some(notes) => {
                egui::ScrollArea::vertical().max_height(320.0).show(ui, |ui| {
                    if notes.minutes > 0 {
                        ui.label(RichText::new(format!("about {} minutes", notes.minutes)).color(theme::TEXT_FAINT));
                    }
                    ui.label(RichText::new("Say").strong().color(theme::CREW));
                    ui.label(RichText::new(&notes.say).color(theme::TEXT));
                    if !notes.ask.is_empty() {
                        ui.add_space(4.0);
                        ui.label(RichText::new("Ask the room").strong().color(theme::CREW));
                        for question in &notes.ask {
                            ui.label(RichText::new(format!("• {question}")).color(theme::TEXT));
                        }
                    }
                });
                ui.label(RichText::new("N hides these notes · P shows the side panels").color(theme::TEXT_FAINT));
            }
        });
    if !open {
        level_ui.notes = false;
    }
}

/// The briefing stays on the level screen (collapsible, the rest behind "more"), with the
/// level's hints opened one tier at a time (H): a nudge, the idea, the move.
fn draw_briefing(ui: &mut egui::Ui, session: &Session, progress: &Progress, intents: &mut Vec<Intent>) {
    let level = &session.recipe.level.level;
    egui::CollapsingHeader::new(RichText::new("Briefing").strong())
        .id_salt("level-briefing")
        .default_open(true)
        .show(ui, |ui| {
            ui.label(RichText::new(&level.briefing).size(theme::SMALL));
            if !level.briefing_more.trim().is_empty() {
                egui::CollapsingHeader::new(RichText::new("more").size(theme::SMALL))
                    .id_salt("level-briefing-more")
                    .show(ui, |ui| {
                        ui.label(RichText::new(&level.briefing_more).size(theme::SMALL));
                    });
            }
        });
    let tiers = level.hints.tiers();
    if tiers.is_empty() {
        return;
    }
    let opened = usize::try_from(progress.hints_opened(&level.id)).unwrap_or(usize::MAX);
    const TIER_NAMES: [&str; 3] = ["nudge", "idea", "move"];
    for (index, tier) in tiers.iter().enumerate().take(opened) {
        let name = TIER_NAMES.get(index).copied().unwrap_or("hint");
        ui.label(
            RichText::new(format!("💡 {name}: {tier}"))
                .size(theme::SMALL)
                .color(theme::INFO),
        );
    }
    if opened < tiers.len() {
        let name = TIER_NAMES.get(opened).copied().unwrap_or("hint");
        if ui::button(ui, true, &format!("💡 Hint: the {name}"), "H").clicked() {
            intents.push(Intent::OpenHint);
        }
    }
}

fn top_bar(
    ui: &mut egui::Ui,
    session: &Session,
    simulation: &Simulation,
    level_ui: &mut LevelUi,
    intents: &mut Vec<Intent>,
) {
    let level = &session.recipe.level.level;
    ui.horizontal(|ui| {
        let back = match session.mode {
            Mode::Campaign => ("← Levels", Screen::LevelSelect),
            Mode::Sandbox => ("← Sandbox", Screen::Sandbox),
            Mode::Replay => ("← Tapes", Screen::Replay),
        };
        if ui::button(ui, true, back.0, "Esc").clicked() {
            intents.push(Intent::Leave { to: back.1 });
        }
        ui.label(
            RichText::new(format!("Ch. {} · {}", level.chapter, level.title))
                .size(theme::HEADING)
                .strong()
                .color(theme::TEXT),
        );
        let (badge, color) = match session.mode {
            Mode::Campaign => ("CAMPAIGN", theme::CREW),
            Mode::Sandbox => ("SANDBOX", theme::VIOLET),
            Mode::Replay => ("REPLAY", theme::INFO),
        };
        ui.label(RichText::new(badge).size(theme::SMALL).strong().color(color));
        ui.label(
            RichText::new(format!(
                "goal: {} {}",
                theme::outcome_glyph(level.goal),
                theme::outcome_words(level.goal)
            ))
            .size(theme::SMALL)
            .color(theme::outcome_color(level.goal)),
        );
        ui.with_layout(egui::Layout::right_to_left(egui::Align::Center), |ui| {
            if ui::button(ui, true, "Keys", "?").clicked() {
                level_ui.help = !level_ui.help;
            }
            if ui::button(ui, true, "Rulebook", "B").clicked() {
                level_ui.rulebook = !level_ui.rulebook;
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
            ui.label(
                RichText::new(format!(
                    "phase {} · {} ms · {}/s",
                    simulation.phase(),
                    simulation.now_ms(),
                    session.phases_per_second()
                ))
                .monospace()
                .color(theme::TEXT),
            );
        });
    });
}

/// The keyboard: every control has a key (the `?` overlay lists them).
fn keyboard(
    context: &egui::Context,
    level_ui: &mut LevelUi,
    session: &Session,
    simulation: &Simulation,
    paths: &GamePaths,
    intents: &mut Vec<Intent>,
) {
    use egui::Key;
    // Dialogs take the keyboard first; they handle their own keys when drawn.
    if level_ui.prompt.is_some() || level_ui.chooser.is_some() {
        return;
    }
    if level_ui.help {
        if ui::pressed(context, Key::Escape) || ui::typed(context, "?") || ui::pressed(context, Key::F1) {
            level_ui.help = false;
        }
        return;
    }
    if ui::typed(context, "?") || ui::pressed(context, Key::F1) {
        level_ui.help = true;
        return;
    }
    if ui::pressed(context, Key::Escape) {
        let to = match session.mode {
            Mode::Campaign => Screen::LevelSelect,
            Mode::Sandbox => Screen::Sandbox,
            Mode::Replay => Screen::Replay,
        };
        intents.push(Intent::Leave { to });
        return;
    }
    if ui::pressed(context, Key::Space) {
        intents.push(Intent::ToggleRunning);
    }
    if ui::pressed(context, Key::Period) || ui::pressed(context, Key::ArrowRight) {
        intents.push(Intent::Step);
    }
    if ui::pressed(context, Key::Comma) || ui::pressed(context, Key::ArrowLeft) {
        intents.push(Intent::Rewind {
            phase: simulation.phase().saturating_sub(1),
        });
    }
    if ui::pressed(context, Key::Home) {
        intents.push(Intent::Rewind { phase: 0 });
    }
    if ui::typed(context, "+") || ui::typed(context, "=") {
        intents.push(Intent::ChangeSpeed(1));
    }
    if ui::typed(context, "-") {
        intents.push(Intent::ChangeSpeed(-1));
    }
    if ui::pressed(context, Key::R) {
        intents.push(Intent::Restart);
    }
    if ui::pressed(context, Key::E) {
        intents.push(Intent::RunToEnd);
    }
    if ui::pressed(context, Key::Enter) {
        intents.push(Intent::Debrief);
    }
    if ui::pressed(context, Key::S) {
        level_ui.prompt = Some(Prompt {
            kind: PromptKind::SaveTape,
            text: controls::suggested_tape_path(paths, session).display().to_string(),
            focus: true,
        });
    }
    if ui::pressed(context, Key::L) {
        level_ui.prompt = Some(Prompt {
            kind: PromptKind::LoadTape,
            text: paths.levels.display().to_string() + "/",
            focus: true,
        });
    }
    if ui::pressed(context, Key::B) {
        level_ui.rulebook = !level_ui.rulebook;
    }
    if ui::pressed(context, Key::P) {
        level_ui.side_panels = !level_ui.side_panels;
    }
    if ui::pressed(context, Key::N) {
        level_ui.notes = !level_ui.notes;
    }
    if ui::pressed(context, Key::D) {
        level_ui.declaration_hidden = !level_ui.declaration_hidden;
    }
    if ui::pressed(context, Key::H) {
        intents.push(Intent::OpenHint);
    }
    if ui::pressed(context, Key::G) {
        level_ui.prompt = Some(Prompt {
            kind: PromptKind::GoToPhase,
            text: String::new(),
            focus: true,
        });
    }
    if ui::pressed(context, Key::O) {
        level_ui.focus_reason = true;
    }
    let digits = [
        Key::Num1,
        Key::Num2,
        Key::Num3,
        Key::Num4,
        Key::Num5,
        Key::Num6,
        Key::Num7,
        Key::Num8,
        Key::Num9,
    ];
    for (index, digit) in digits.iter().enumerate() {
        if ui::pressed(context, *digit)
            && let Some(card) = cards::hand_order(simulation).get(index)
        {
            cards::choose(*card, session, simulation, level_ui, intents);
        }
    }
    ledger::keyboard(context, level_ui, session);
}
