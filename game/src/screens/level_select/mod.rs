//! The level select: chapters, what is locked and finished, and a level's briefing.

use bevy::prelude::*;
use bevy_egui::egui::{self, RichText};
use bevy_egui::{EguiContexts, EguiPrimaryContextPass};
use twice_world::text::counted;

use twice_world::level::{Level, LoadedLevel};

use super::Screen;
use super::header::Header;
use crate::campaign::Campaign;
use crate::campaign::summary::{self, CampaignSummary};
use crate::defence::DefenceIntent;
use crate::presenter::Presenter;
use crate::progress::Progress;
use crate::session::{Intent, Mode, NextBriefing};
use crate::ui::{self, theme, whole_lines};

mod list;
use list::level_list;

pub(super) fn plugin(app: &mut App) {
    app.add_systems(OnEnter(Screen::LevelSelect), spawn_state);
    app.add_systems(EguiPrimaryContextPass, draw.run_if(in_state(Screen::LevelSelect)));
}

/// What the level select remembers while it is open.
#[derive(Component, Debug, Default)]
pub struct LevelSelectState {
    selected: usize,
    confirm_reset: bool,
    /// The list is to bring the selection into view (opened, or moved by the arrow keys).
    scroll_to_selected: bool,
    /// The screen's size (in points) the list was last drawn for: drawn for another (the
    /// window's first frame, before the projector's zoom applies) the selection is brought
    /// into view again.
    screen: egui::Vec2,
    /// Opened by the debrief's Next: this level's briefing is the one to read before playing.
    next_up: Option<usize>,
    /// The chapter the level before it finished, said over it.
    chapter_done: Option<u32>,
}

impl LevelSelectState {
    /// The level select on level `selected`; `next_up`: it is the one the debrief's Next
    /// opened on (its briefing's "more" opens).
    pub fn new(selected: usize, next_up: bool) -> LevelSelectState {
        LevelSelectState {
            selected,
            confirm_reset: false,
            scroll_to_selected: true,
            screen: egui::Vec2::ZERO,
            next_up: next_up.then_some(selected),
            chapter_done: None,
        }
    }

    /// The level shown.
    pub fn selected(&self) -> usize {
        self.selected
    }
}

fn spawn_state(
    mut commands: Commands,
    campaign: Res<Campaign>,
    progress: Res<Progress>,
    presenter: Res<Presenter>,
    mut next_briefing: ResMut<NextBriefing>,
) {
    let asked = std::mem::take(&mut *next_briefing);
    commands.spawn((
        Name::new("Level select"),
        LevelSelectState::opened(&campaign, &progress, &presenter, &asked),
        DespawnOnExit(Screen::LevelSelect),
    ));
}

impl LevelSelectState {
    /// The level select as it opens: on the level `asked` names (the debrief's Next: the next
    /// level to play, "next up"; leaving a defence: the level defended), else on the chapter
    /// the presenter asked for, else on the first open level not yet finished.
    pub fn opened(
        campaign: &Campaign,
        progress: &Progress,
        presenter: &Presenter,
        asked: &NextBriefing,
    ) -> LevelSelectState {
        let opened_on = asked.index.filter(|index| *index < campaign.levels.len());
        let next_up = opened_on.filter(|_| asked.next_up);
        let selected = opened_on
            .or_else(|| presenter.chapter.and_then(|chapter| campaign.first_of_chapter(chapter)))
            .or_else(|| {
                (0..campaign.levels.len()).find(|index| {
                    campaign.is_unlocked(*index, progress) && !progress.is_finished(&campaign.levels[*index].level.id)
                })
            })
            .unwrap_or(0);
        LevelSelectState {
            selected,
            confirm_reset: false,
            scroll_to_selected: true,
            screen: egui::Vec2::ZERO,
            next_up,
            chapter_done: asked.chapter_done.filter(|_| next_up.is_some()),
        }
    }
}

// A Bevy system: each argument is a resource or message the screen reads or writes.
#[allow(clippy::too_many_arguments)]
fn draw(
    mut contexts: EguiContexts,
    mut state: Single<&mut LevelSelectState>,
    mut next_screen: ResMut<NextState<Screen>>,
    mut intents: MessageWriter<Intent>,
    mut defence_intents: MessageWriter<DefenceIntent>,
    campaign: Res<Campaign>,
    mut progress: ResMut<Progress>,
) -> Result {
    let context = contexts.ctx_mut()?;
    let chosen = frame(context, &mut state, &campaign, &mut progress);
    if chosen.back {
        next_screen.set(Screen::Title);
    }
    if chosen.ending {
        next_screen.set(Screen::Ending);
        return Ok(());
    }
    if chosen.defend
        && campaign
            .levels
            .get(state.selected)
            .is_some_and(|loaded| loaded.level.defender.is_some())
        && campaign.is_unlocked(state.selected, &progress)
    {
        defence_intents.write(DefenceIntent::Open { index: state.selected });
        return Ok(());
    }
    if chosen.play
        && let Some(loaded) = campaign.levels.get(state.selected)
        && campaign.is_unlocked(state.selected, &progress)
    {
        intents.write(Intent::OpenLevel {
            path: loaded.path.clone(),
            mode: Mode::Campaign,
            guards: None,
            seed: 1,
            at_phase: None,
        });
    }
    Ok(())
}

/// One frame of the level select: draws it into `context` and returns what the player chose
/// (the system above acts on it; headless tests read the frame through [`crate::ui::probe`]).
pub fn frame(
    context: &egui::Context,
    state: &mut LevelSelectState,
    campaign: &Campaign,
    progress: &mut Progress,
) -> Chosen {
    let count = campaign.levels.len();
    if count > 0 {
        if ui::pressed(context, egui::Key::ArrowDown) {
            state.selected = (state.selected + 1).min(count - 1);
            state.scroll_to_selected = true;
        }
        if ui::pressed(context, egui::Key::ArrowUp) {
            state.selected = state.selected.saturating_sub(1);
            state.scroll_to_selected = true;
        }
    }
    state.selected = state.selected.min(count.saturating_sub(1));
    let screen = context.viewport_rect().size();
    if state.screen != screen {
        state.screen = screen;
        state.scroll_to_selected = true;
    }
    let mut chosen = Chosen {
        play: ui::pressed(context, egui::Key::Enter),
        defend: ui::pressed(context, egui::Key::D),
        ending: false,
        back: ui::pressed(context, egui::Key::Escape),
    };
    let summary = CampaignSummary::of(campaign, progress);
    chosen.ending = summary.complete && ui::pressed(context, egui::Key::F);

    let mut root = ui::root_ui(context, "level-select");
    if top_bar(&mut root, state, campaign, progress, &summary, &mut chosen) {
        chosen.back = true;
    }
    // At a projector (presenter zoom) the screen is 731 points wide: the briefing takes most.
    let detail_width = (root.available_width() * 0.5).clamp(320.0, 470.0);
    egui::Panel::right("level-select-detail")
        .exact_size(detail_width)
        .frame(
            egui::Frame::new()
                .fill(theme::PANEL)
                .inner_margin(egui::Margin::same(14)),
        )
        .show(&mut root, |ui| detail(ui, state, campaign, progress, &mut chosen));
    egui::CentralPanel::default()
        .frame(
            egui::Frame::new()
                .fill(theme::BACKGROUND)
                .inner_margin(egui::Margin::same(14)),
        )
        .show(&mut root, |ui| level_list(ui, state, campaign, progress, &mut chosen));
    chosen
}

/// What the player chose this frame (buttons and keys).
#[derive(Debug, Default)]
pub struct Chosen {
    pub play: bool,
    pub defend: bool,
    pub ending: bool,
    /// Back to the title (Esc or the back button).
    pub back: bool,
}

/// The top bar: back, the title, the campaign's summary (finished, stars, defended), the
/// ending once it is open, reset; progress's notice and the campaign folder's problems below.
/// Returns whether the back button was clicked.
fn top_bar(
    root: &mut egui::Ui,
    state: &mut LevelSelectState,
    campaign: &Campaign,
    progress: &mut Progress,
    summary: &CampaignSummary,
    chosen: &mut Chosen,
) -> bool {
    let notice = progress.notice.clone();
    let path = progress.path.display().to_string();
    let mut reset = false;
    let mut dismiss = false;
    let back = Header::new("level-select-top", "← Title", "Choose a heist", theme::CREW).show(
        root,
        |ui| {
            ui.label(RichText::new(summary.line()).color(theme::TEXT_DIM))
                .on_hover_text("★ one star for a win with no more cards than par, one more with no more phases too");
            if summary.complete && ui::button(ui, true, "🏁 The ending", "F").clicked() {
                chosen.ending = true;
            }
            ui.with_layout(egui::Layout::right_to_left(egui::Align::Center), |ui| {
                if state.confirm_reset {
                    if ui.button("Cancel").clicked() {
                        state.confirm_reset = false;
                    }
                    if ui
                        .button(RichText::new("Yes, forget my progress").color(theme::BAD))
                        .clicked()
                    {
                        reset = true;
                        state.confirm_reset = false;
                    }
                } else if ui.button("Reset progress…").clicked() {
                    state.confirm_reset = true;
                }
                ui.add(egui::Label::new(RichText::new(path).size(theme::SMALL).color(theme::TEXT_DIM)).truncate());
            });
        },
        |ui| {
            if let Some(notice) = notice {
                ui.horizontal_wrapped(|ui| {
                    ui.label(RichText::new(format!("⚠ {notice}")).color(theme::WARN));
                    if ui.small_button("Dismiss").clicked() {
                        dismiss = true;
                    }
                });
            }
            if !campaign.problems.is_empty() {
                egui::CollapsingHeader::new(
                    RichText::new(format!(
                        "⚠ {} in the campaign folder",
                        counted(campaign.problems.len() as u64, "problem", "problems")
                    ))
                    .color(theme::WARN),
                )
                .show(ui, |ui| {
                    for problem in &campaign.problems {
                        ui.label(RichText::new(problem).monospace().size(12.0));
                    }
                });
            }
        },
    );
    if reset {
        progress.reset();
    }
    if dismiss {
        progress.notice = None;
    }
    back
}

/// The selected level's briefing, its hand and guards, how the player did, and play / defend.
/// How the player did and the buttons stay at the foot, in view, however long the briefing
/// grows with "more" open: the briefing scrolls above them.
fn detail(ui: &mut egui::Ui, state: &LevelSelectState, campaign: &Campaign, progress: &Progress, chosen: &mut Chosen) {
    let Some(loaded) = campaign.levels.get(state.selected) else {
        ui.label(format!("No levels found in {}.", campaign.folder.display()));
        return;
    };
    egui::Panel::bottom("level-select-actions")
        .frame(egui::Frame::new().inner_margin(egui::Margin {
            top: 8,
            ..Default::default()
        }))
        .show(ui, |ui| {
            record(ui, &loaded.level, progress);
            if campaign.is_unlocked(state.selected, progress) {
                actions(ui, &loaded.level, chosen);
            } else {
                // Players know levels by their titles, not their ids.
                let missing: Vec<String> = campaign
                    .missing_requirements(state.selected, progress)
                    .iter()
                    .map(|id| {
                        campaign
                            .find(id)
                            .map_or_else(|| id.clone(), |index| campaign.levels[index].level.title.clone())
                    })
                    .collect();
                ui.label(RichText::new(format!("🔒 Locked: finish {} first", missing.join(", "))).color(theme::WARN));
            }
        });
    // Its foot on a whole line; each level's briefing opens at its top.
    let id = egui::Id::new(("level-select-briefing", state.selected));
    whole_lines::scroll(ui, egui::ScrollArea::vertical().auto_shrink(false), id, |ui| {
        ui.style_mut().wrap_mode = Some(egui::TextWrapMode::Wrap);
        briefing(ui, state, loaded, progress);
        ui.add_space(6.0);
        ui::hint(ui, loaded.path.display().to_string());
    });
}

/// The level's chapter, title, briefing, goal, hand and the guards it switches off.
fn briefing(ui: &mut egui::Ui, state: &LevelSelectState, loaded: &LoadedLevel, progress: &Progress) {
    let level = &loaded.level;
    // Only over a level still to play: a finished one is not next.
    let next_up = state.next_up == Some(state.selected) && !progress.is_finished(&level.id);
    if next_up {
        if let Some(chapter) = state.chapter_done.filter(|chapter| *chapter != level.chapter) {
            ui.label(
                RichText::new(format!("✔ Chapter {chapter} done"))
                    .strong()
                    .color(theme::GOOD),
            );
        }
        ui.label(
            RichText::new("▶ Next up: read the briefing, then play")
                .strong()
                .color(theme::CREW),
        );
    }
    ui.label(RichText::new(format!("Chapter {} · {}", level.chapter, level.chapter_title)).color(theme::TEXT_DIM));
    ui.label(RichText::new(&level.title).size(24.0).strong().color(theme::TEXT));
    ui.add_space(6.0);
    ui.label(RichText::new(&level.briefing).size(theme::BODY + 0.5));
    if !level.briefing_more.trim().is_empty() {
        egui::CollapsingHeader::new(RichText::new("more").size(theme::SMALL))
            .id_salt(("level-select-briefing-more", state.selected))
            .default_open(next_up)
            .show(ui, |ui| {
                ui.label(RichText::new(&level.briefing_more).size(theme::BODY));
            });
    }
    ui.add_space(10.0);
    ui.horizontal_wrapped(|ui| {
        ui.label(RichText::new("Goal:").strong());
        ui.label(
            RichText::new(format!(
                "{} {}",
                theme::outcome_glyph(level.goal),
                theme::outcome_words(level.goal)
            ))
            .color(theme::outcome_color(level.goal)),
        );
        if level.unbeatable {
            ui.label(
                RichText::new("· unbeatable on purpose: play it out, then defend it (D) to finish")
                    .color(theme::VIOLET),
            );
        }
    });
    ui.add_space(6.0);
    ui.label(RichText::new("Cards in hand").strong());
    if level.cards.is_empty() {
        ui::hint(ui, "none — you watch, and you may step and rewind");
    }
    for card in &level.cards {
        ui.label(format!("  {} × {}", card.count, card.card.title()));
    }
    ui.add_space(6.0);
    let off = level.guards.off();
    ui.label(RichText::new("Guards switched off here").strong());
    if off.is_empty() {
        ui::hint(ui, "none: every guard is on");
    }
    for guard in off {
        ui.label(
            RichText::new(format!(
                "  ✖ {} — {}",
                twice_world::guards::words(guard),
                twice_world::guards::promise(guard)
            ))
            .color(theme::TEXT_DIM),
        );
    }
}

/// How the player did: the last verdict, the best win and its stars, the defence.
fn record(ui: &mut egui::Ui, level: &Level, progress: &Progress) {
    if let Some(outcome) = progress.file.outcomes.get(&level.id) {
        // For the player's goal: reached in the crew's gold, anything else plain.
        let color = if *outcome == level.goal {
            theme::CREW
        } else {
            theme::TEXT_DIM
        };
        ui.label(
            RichText::new(format!(
                "Last time: {} {}",
                theme::outcome_glyph(*outcome),
                theme::outcome_words(*outcome)
            ))
            .color(color),
        );
    }
    let stars = summary::level_stars(level, progress);
    if let (Some(par), true) = (level.par, stars.possible > 0) {
        let best = progress.file.best.get(&level.id).map_or_else(
            || "not won yet".to_owned(),
            |best| {
                format!(
                    "best {} in {} phases",
                    counted(u64::from(best.cards), "card", "cards"),
                    best.phases
                )
            },
        );
        ui.label(
            RichText::new(format!(
                "{} {best} · par {} in {} phases",
                stars.glyphs(),
                counted(u64::from(par.cards), "card", "cards"),
                par.phases
            ))
            .color(theme::WARN),
        );
    }
    if let (Some(defender), Some(guards)) = (&level.defender, progress.defended(&level.id)) {
        let names: Vec<&str> = guards.iter().map(|guard| guard.name()).collect();
        let at_minimum = guards.len() <= defender.minimum.len();
        ui.label(
            RichText::new(format!(
                "🛡 Defended with {}: {}{}",
                counted(guards.len() as u64, "guard", "guards"),
                names.join(", "),
                if at_minimum { " · the minimum" } else { "" }
            ))
            .color(theme::GOOD),
        );
    }
}

/// Play it (Enter) and, for an unbeatable level, defend it (D).
fn actions(ui: &mut egui::Ui, level: &Level, chosen: &mut Chosen) {
    let button = egui::Button::new(RichText::new("▶  Play this level").size(theme::HEADING))
        .shortcut_text(RichText::new("Enter").monospace().color(theme::TEXT_FAINT))
        .min_size(egui::vec2(260.0, 36.0));
    if ui.add(button).clicked() {
        chosen.play = true;
    }
    if let Some(defender) = &level.defender {
        let button = egui::Button::new(RichText::new("🛡  Defend it").size(theme::HEADING))
            .shortcut_text(RichText::new("D").monospace().color(theme::TEXT_FAINT))
            .min_size(egui::vec2(260.0, 36.0));
        if ui
            .add(button)
            .on_hover_text(format!(
                "Switch on the fewest guards (at most {}) that stop every known heist",
                defender.budget
            ))
            .clicked()
        {
            chosen.defend = true;
        }
    }
}
