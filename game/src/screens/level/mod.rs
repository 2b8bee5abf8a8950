//! The level screen: the billing world, Penny and her workers, the wire, the ledger, the
//! checkpoints, the timeline, the cards and the operator console — and the controls.
//!
//! Nothing here changes the simulation: every control becomes an [`Intent`].

use bevy::prelude::*;
use bevy_egui::egui::{self, RichText};
use bevy_egui::{EguiContexts, EguiPrimaryContextPass};
use twice_world::level::CardKind;
use twice_world::simulator::Simulation;

use super::Screen;
use crate::campaign::Campaign;
use crate::guide::Guide;
#[cfg(feature = "operator-api")]
use crate::operator_api::OperatorApi;
use crate::options::{Options, ShotScreen};
use crate::panels::Panel;
use crate::paths::GamePaths;
use crate::presenter::Presenter;
use crate::progress::Progress;
use crate::session::{Intent, Mode, Session};
use crate::ui::{self, theme};

mod cards;
mod coach;
mod controls;
mod declaration;
mod glossary;
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
    pub expected_status: Option<twice_world::runtime::rules::Status>,
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
    pub pending_play: Option<twice_world::level::Play>,
    /// A line from the screen itself (not the session), such as why a key did nothing.
    pub flash: Option<String>,
    /// The glossary window is open (T), at this entry, scrolled to it once.
    pub glossary: bool,
    pub glossary_entry: Option<usize>,
    pub glossary_scroll: bool,
    pub glossary_filter: String,
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

fn spawn_state(mut commands: Commands, presenter: Res<Presenter>, options: Option<Res<Options>>) {
    // `--screenshot --screen glossary` pictures the level with its glossary open.
    let glossary =
        options.is_some_and(|options| options.screenshot.is_some() && options.screen == Some(ShotScreen::Glossary));
    commands.spawn((
        Name::new("Level screen"),
        LevelUi {
            side_panels: !presenter.on,
            notes: presenter.on,
            glossary,
            ..LevelUi::default()
        },
        timeline::TimelineCache::default(),
        DespawnOnExit(Screen::Level),
    ));
}

/// Width of the left column (task, guards, checkpoints) and the right one (ledger, operator)
/// on a 1280-point screen; narrower screens get narrower columns ([`side_widths`]).
const LEFT_WIDTH: f32 = 256.0;
const RIGHT_WIDTH: f32 = 410.0;
/// Below this many points of width (a projector at presenter zoom is 731), the side columns
/// and the presenter notes take turns.
const SIDE_COLUMNS_AND_NOTES_WIDTH_MIN: f32 = 1000.0;

/// The left and right columns' widths on a screen this many points wide: their full widths
/// from 1280 points up, in proportion below, never so narrow their tables stop making sense.
fn side_widths(screen_width: f32) -> (f32, f32) {
    let share = (screen_width / 1280.0).min(1.0);
    ((LEFT_WIDTH * share).max(170.0), (RIGHT_WIDTH * share).max(300.0))
}
/// Width of the guided first level's coach, on the right where the ledger arrives later.
const COACH_WIDTH: f32 = 300.0;
/// Height of the timeline along the bottom, at most.
const TIMELINE_HEIGHT: f32 = 222.0;

/// The timeline's height on a screen this many points tall: its full height on a 1280×720
/// screen, a bit over a third of a projector's 411 points at presenter zoom, so the stage
/// above it keeps room to show Penny, the wire and billing.
fn timeline_height(screen_height: f32) -> f32 {
    (screen_height * 0.36).clamp(120.0, TIMELINE_HEIGHT)
}

fn draw(
    mut contexts: EguiContexts,
    state: Single<(&mut LevelUi, &mut timeline::TimelineCache)>,
    session: Res<Session>,
    paths: Res<GamePaths>,
    #[cfg(feature = "operator-api")] operator_api: Option<Res<OperatorApi>>,
    // The campaign for the chapter's presenter notes and the glossary, beside the player's
    // progress and the guided first level's step.
    (progress, campaign, guide): (Res<Progress>, Res<Campaign>, Res<Guide>),
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
    let mut glossary_clicked = None;
    egui::Panel::bottom("level-controls")
        .frame(
            egui::Frame::new()
                .fill(theme::PANEL)
                .inner_margin(egui::Margin::symmetric(10, 6)),
        )
        .show(&mut root, |ui| {
            controls::draw(ui, &session, &simulation, level_ui, &paths, &mut intents)
        });
    // Beside everything below the top bar, so the notes have the screen's height to fill.
    draw_notes(&mut root, &session, &campaign, level_ui);
    if let Some(step) = guide.step() {
        egui::Panel::right("level-coach")
            .exact_size(COACH_WIDTH)
            .resizable(false)
            .frame(
                egui::Frame::new()
                    .fill(theme::PANEL)
                    .inner_margin(egui::Margin::same(10)),
            )
            .show(&mut root, |ui| {
                if let Some(entry) = coach::draw(ui, step, &simulation, &campaign.glossary, &mut intents) {
                    glossary_clicked = Some(entry);
                }
            });
    }
    let panels = &session.panels;
    let (show_ledger, show_console) = (panels.shows(Panel::Ledger), panels.shows(Panel::Console));
    if level_ui.side_panels && (show_ledger || show_console) {
        egui::Panel::right("level-right")
            .exact_size(side_widths(context.viewport_rect().width()).1)
            .resizable(false)
            .frame(
                egui::Frame::new()
                    .fill(theme::PANEL)
                    .inner_margin(egui::Margin::same(6)),
            )
            .show(&mut root, |ui| {
                // Text in the side columns wraps, even in a row of widgets: a line wider than the
                // column would widen its contents past the screen's edge.
                ui.style_mut().wrap_mode = Some(egui::TextWrapMode::Wrap);
                let operator_height = if show_console { 206.0 } else { 0.0 };
                if show_ledger {
                    new_panel(ui, panels, Panel::Ledger);
                    let ledger_height = if show_console {
                        (ui.available_height() - operator_height - 8.0).max(160.0)
                    } else {
                        ui.available_height()
                    };
                    ui.allocate_ui(egui::vec2(ui.available_width(), ledger_height), |ui| {
                        ledger::draw(ui, &session, &simulation, level_ui, &cache);
                    });
                    ui.add_space(4.0);
                }
                if show_console {
                    new_panel(ui, panels, Panel::Console);
                    operator::draw(ui, &session, &simulation, level_ui, &cache);
                    #[cfg(feature = "operator-api")]
                    if let Some(operator_api) = &operator_api {
                        operator::draw_http_hint(ui, operator_api);
                    }
                }
            });
    }
    // The timeline spans everything left of the ledger: it is the widest, wordiest view.
    egui::Panel::bottom("level-timeline")
        .exact_size(timeline_height(context.viewport_rect().height()))
        .resizable(false)
        .frame(
            egui::Frame::new()
                .fill(theme::BACKGROUND)
                .inner_margin(egui::Margin::same(6)),
        )
        .show(&mut root, |ui| {
            if let Some(phase) = timeline::draw(
                ui,
                simulation.timeline(),
                &cache,
                true,
                timeline::RowText::Truncate,
                "level-timeline",
            ) {
                intents.push(Intent::Rewind { phase });
            }
        });
    // On a narrow screen only the right column (the ledger and the console) joins the stage:
    // with both, the stage would be too narrow to draw Penny, the wire and billing apart.
    if level_ui.side_panels && context.viewport_rect().width() >= SIDE_COLUMNS_AND_NOTES_WIDTH_MIN {
        egui::Panel::left("level-left")
            .exact_size(side_widths(context.viewport_rect().width()).0)
            .resizable(false)
            .frame(
                egui::Frame::new()
                    .fill(theme::PANEL)
                    .inner_margin(egui::Margin::same(6)),
            )
            .show(&mut root, |ui| {
                ui.style_mut().wrap_mode = Some(egui::TextWrapMode::Wrap);
                egui::ScrollArea::vertical()
                    .id_salt("left-scroll")
                    .auto_shrink(false)
                    .show(ui, |ui| {
                        if let Some(entry) = draw_briefing(ui, &session, &progress, &campaign, &mut intents) {
                            glossary_clicked = Some(entry);
                        }
                        ui.add_space(4.0);
                        world::draw_task(ui, &simulation);
                        ui.add_space(4.0);
                        world::draw_guards(ui, &simulation);
                        if session.panels.shows(Panel::Checkpoints) {
                            ui.add_space(4.0);
                            new_panel(ui, &session.panels, Panel::Checkpoints);
                            world::draw_checkpoints(ui, &session);
                        }
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
            // Scrolls when the screen is short (a projector at presenter zoom), so the hand
            // below the stage can always be reached.
            egui::ScrollArea::vertical()
                .id_salt("level-centre")
                .auto_shrink(false)
                .show(ui, |ui| {
                    stage::draw(ui, &session, &simulation, &cache);
                    ui.add_space(4.0);
                    cards::draw(ui, &session, &simulation, level_ui, &mut intents);
                });
        });

    overlays::draw(context, &session, &simulation, level_ui, &mut intents);
    if session.panels.shows(Panel::Rulebook) {
        rulebook::draw(context, &simulation, level_ui);
    }
    if let Some(entry) = glossary_clicked {
        glossary::open_at(level_ui, entry);
    }
    glossary::draw(context, &campaign.glossary, level_ui);
    declaration::draw(context, &session, &simulation, level_ui, &mut intents);
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
/// The chapter's presenter notes as a column beside the stage (N): a column, not a window, so
/// at a projector's 1280×720 (731×411 points at presenter zoom) they never cover the stage.
fn draw_notes(root: &mut egui::Ui, session: &Session, campaign: &Campaign, level_ui: &mut LevelUi) {
    if !level_ui.notes {
        return;
    }
    let chapter = session.recipe.level.level.chapter;
    let notes = campaign.notes.chapter(chapter);
    let width = notes_width(root.available_width());
    egui::Panel::right("presenter-notes")
        .exact_size(width)
        .resizable(false)
        .frame(
            egui::Frame::new()
                .fill(theme::PANEL_RAISED)
                .stroke(egui::Stroke::new(1.0, theme::PANEL_BORDER))
                .inner_margin(egui::Margin::same(8)),
        )
        .show(root, |ui| {
            ui.style_mut().wrap_mode = Some(egui::TextWrapMode::Wrap);
            ui.horizontal(|ui| {
                ui.label(RichText::new(format!("Notes · chapter {chapter}")).strong());
                if ui.small_button("hide").on_hover_text("N").clicked() {
                    level_ui.notes = false;
                }
            });
            egui::ScrollArea::vertical()
                .auto_shrink(false)
                .show(ui, |ui| match notes {
                    None => {
                        ui.label(
                            RichText::new(format!(
                                "No notes for chapter {chapter}: add them to {} beside the levels.",
                                twice_world::presenter_notes::NOTES_FILE
                            ))
                            .color(theme::TEXT_DIM),
                        );
                    }
                    Some(notes) => {
                        if notes.minutes > 0 {
                            ui.label(
                                RichText::new(format!("about {} minutes", notes.minutes)).color(theme::TEXT_FAINT),
                            );
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
                        ui.add_space(4.0);
                        ui.label(
                            RichText::new("N hides these notes · P shows the side panels").color(theme::TEXT_FAINT),
                        );
                    }
                });
        });
}

/// The notes column's width: a quarter of the screen, never too narrow to read or so wide the
/// stage has no room.
fn notes_width(screen_width: f32) -> f32 {
    (screen_width * 0.26).clamp(180.0, 340.0)
}

/// A panel's first appearance, said once: "new: the ledger" and what it is for.
fn new_panel(ui: &mut egui::Ui, panels: &crate::panels::Panels, panel: Panel) {
    if panels.is_new(panel) {
        ui.label(
            RichText::new(format!("✨ new: {} — {}", panel.title(), panel.introduction()))
                .size(theme::SMALL)
                .color(theme::CREW),
        );
    }
}

/// The briefing stays on the level screen (collapsible, the rest behind "more"), with the
/// level's hints opened one tier at a time (H): a nudge, the idea, the move. The glossary's
/// words are links; returns the entry clicked.
fn draw_briefing(
    ui: &mut egui::Ui,
    session: &Session,
    progress: &Progress,
    campaign: &Campaign,
    intents: &mut Vec<Intent>,
) -> Option<usize> {
    let level = &session.recipe.level.level;
    let glossary = &campaign.glossary;
    let mut clicked = None;
    egui::CollapsingHeader::new(RichText::new("Briefing").strong())
        .id_salt("level-briefing")
        .default_open(true)
        .show(ui, |ui| {
            clicked = ui::glossary_text(ui, &level.briefing, glossary, (theme::SMALL, theme::TEXT), None);
            if !level.briefing_more.trim().is_empty() {
                egui::CollapsingHeader::new(RichText::new("more").size(theme::SMALL))
                    .id_salt("level-briefing-more")
                    .show(ui, |ui| {
                        if let Some(entry) =
                            ui::glossary_text(ui, &level.briefing_more, glossary, (theme::SMALL, theme::TEXT), None)
                        {
                            clicked = Some(entry);
                        }
                    });
            }
        });
    let tiers = level.hints.tiers();
    if tiers.is_empty() {
        return clicked;
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
    clicked
}

fn top_bar(
    ui: &mut egui::Ui,
    session: &Session,
    simulation: &Simulation,
    level_ui: &mut LevelUi,
    intents: &mut Vec<Intent>,
) {
    let level = &session.recipe.level.level;
    // The right-hand status is laid out first and the title gets what is left (cut with "…"),
    // so on a narrow screen the two never draw over each other.
    ui.horizontal(|ui| {
        ui.with_layout(egui::Layout::right_to_left(egui::Align::Center), |ui| {
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
            ui.with_layout(egui::Layout::left_to_right(egui::Align::Center), |ui| {
                let back = match session.mode {
                    Mode::Campaign => ("← Levels", Screen::LevelSelect),
                    Mode::Sandbox => ("← Sandbox", Screen::Sandbox),
                    Mode::Replay => ("← Tapes", Screen::Replay),
                };
                if ui::button(ui, true, back.0, "Esc").clicked() {
                    intents.push(Intent::Leave { to: back.1 });
                }
                ui.add(
                    egui::Label::new(
                        RichText::new(format!("Ch. {} · {}", level.chapter, level.title))
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
            });
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
    if ui::pressed(context, Key::T) {
        level_ui.glossary = !level_ui.glossary;
        return;
    }
    // Esc closes the glossary before it leaves the level.
    if level_ui.glossary && ui::pressed(context, Key::Escape) {
        level_ui.glossary = false;
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
        if session.panels.shows(Panel::Rulebook) {
            level_ui.rulebook = !level_ui.rulebook;
        } else {
            level_ui.flash = Some(arrives_later(Panel::Rulebook));
        }
    }
    let narrow = context.viewport_rect().width() < SIDE_COLUMNS_AND_NOTES_WIDTH_MIN;
    if ui::pressed(context, Key::P) {
        level_ui.side_panels = !level_ui.side_panels;
        // On a narrow screen the side columns and the notes take turns: all three would
        // leave the stage no room at all.
        if narrow && level_ui.side_panels {
            level_ui.notes = false;
        }
    }
    if ui::pressed(context, Key::N) {
        level_ui.notes = !level_ui.notes;
        if narrow && level_ui.notes {
            level_ui.side_panels = false;
        }
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
        if session.panels.shows(Panel::Console) {
            level_ui.focus_reason = true;
        } else {
            level_ui.flash = Some(arrives_later(Panel::Console));
        }
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
    if session.panels.shows(Panel::Ledger) {
        ledger::keyboard(context, level_ui, session);
    }
}

/// Why a key for a panel that has not arrived yet did nothing.
fn arrives_later(panel: Panel) -> String {
    let title = panel.title();
    let mut letters = title.chars();
    let capitalised: String = letters
        .next()
        .map(|first| first.to_uppercase().chain(letters).collect())
        .unwrap_or_default();
    format!(
        "{capitalised} arrives in chapter {} of the campaign (the sandbox shows everything).",
        panel.arrives_in_chapter()
    )
}
