//! The debrief: the verdict as the player's goal reads it, what decided this run (computed by
//! re-running it with each guard switched: `twice_world::counterfactual`), the lines of code
//! of the guard that decided and the other run's fix as a diff, the other outcome side by
//! side with its timeline one key away (O), the prediction's score, the timeline of what
//! happened, and the rule of the guard that decided.

mod code;
mod other_run;
mod take_home;
mod verdict;

pub use other_run::OtherRun;
pub(crate) use verdict::tone_look;

use bevy::prelude::*;
use bevy_egui::egui::{self, RichText};
use bevy_egui::{EguiContexts, EguiPrimaryContextPass};

use super::Screen;
use super::level::timeline::TimelineCache;
use crate::campaign::Campaign;
use crate::campaign::summary::{self, AfterLevel};
use crate::defence::DefenceIntent;
use crate::progress::Progress;
use crate::progress::prediction::Prediction;
use crate::session::{Intent, Leaving, Mode, Session};
use crate::take_home::{TakeHome, TakeHomeIntent};
use crate::ui::{self, theme, whole_lines};

pub(super) fn plugin(app: &mut App) {
    app.add_systems(OnEnter(Screen::Debrief), (spawn_state, take_home::prepare));
    app.add_systems(
        EguiPrimaryContextPass,
        draw.run_if(in_state(Screen::Debrief))
            .run_if(resource_exists::<Session>),
    );
}

fn spawn_state(mut commands: Commands, options: Option<Res<crate::options::Options>>) {
    // `--screenshot --screen debrief-other` pictures the first other outcome open.
    let open_first = options.is_some_and(|options| {
        options.screenshot.is_some() && options.screen == Some(crate::options::ShotScreen::DebriefOther)
    });
    commands.spawn((
        Name::new("Debrief"),
        TimelineCache::default(),
        other_run::OtherRun::opening_first(open_first),
        DespawnOnExit(Screen::Debrief),
    ));
}

/// What the player chose this frame (buttons and keys).
#[derive(Debug, Default)]
struct Chosen {
    intent: Option<Intent>,
    defend: Option<usize>,
    /// Open (or close) the other run: its index among the debrief's what-ifs.
    other_run: Option<usize>,
}

/// What the debrief reads to draw a frame.
#[derive(Debug)]
pub struct DebriefInputs<'a> {
    pub session: &'a Session,
    pub campaign: &'a Campaign,
    pub progress: &'a Progress,
    pub prediction: &'a Prediction,
    pub take_home: &'a TakeHome,
}

/// What a frame of the debrief asks for (the system below sends it).
#[derive(Debug, Default)]
pub struct DebriefAsks {
    /// In the order to send them.
    pub intents: Vec<Intent>,
    /// Defend this campaign level.
    pub defend: Option<usize>,
    pub take_home: Option<TakeHomeIntent>,
}

// A Bevy system: each argument is a resource or message the screen reads or writes.
#[allow(clippy::too_many_arguments)]
fn draw(
    mut contexts: EguiContexts,
    state: Single<(&mut TimelineCache, &mut other_run::OtherRun)>,
    session: Res<Session>,
    (campaign, progress, prediction): (Res<Campaign>, Res<Progress>, Res<Prediction>),
    mut intents: MessageWriter<Intent>,
    mut defence_intents: MessageWriter<DefenceIntent>,
    (take_home, mut take_home_intents, mut copied): (Res<TakeHome>, MessageWriter<TakeHomeIntent>, Local<u64>),
) -> Result {
    let context = contexts.ctx_mut()?;
    let (mut cache, mut other) = state.into_inner();
    let inputs = DebriefInputs {
        session: &session,
        campaign: &campaign,
        progress: &progress,
        prediction: &prediction,
        take_home: &take_home,
    };
    let asks = frame(context, (&mut cache, &mut other), &inputs, &mut copied);
    if let Some(asked) = asks.take_home {
        take_home_intents.write(asked);
    }
    if let Some(index) = asks.defend {
        defence_intents.write(DefenceIntent::Open { index });
        return Ok(());
    }
    intents.write_batch(asks.intents);
    Ok(())
}

/// One frame of the debrief: draws it into `context` and returns what the player asked for
/// (headless tests read the frame through [`crate::ui::probe`]). `copied`: the serial of the
/// last take-home command copied to the clipboard.
pub fn frame(
    context: &egui::Context,
    (cache, other): (&mut TimelineCache, &mut OtherRun),
    inputs: &DebriefInputs,
    copied: &mut u64,
) -> DebriefAsks {
    let DebriefInputs {
        session,
        campaign,
        progress,
        prediction,
        take_home,
    } = *inputs;
    let simulation = session.simulation();
    cache.update(&simulation);
    let told = session
        .conclusion
        .as_ref()
        .and_then(|conclusion| conclusion.debrief.as_ref());
    cache.tell_by(told);
    let level = &session.recipe.level.level;
    let back = super::leaving_to(session.mode, Leaving::Back);
    let after = match (session.mode, session.campaign_index) {
        (Mode::Campaign, Some(index)) => summary::after_level(campaign, progress, index),
        _ => AfterLevel::Nothing,
    };
    // An unbeatable campaign level can be defended from here too.
    let defend = match (session.mode, session.campaign_index) {
        (Mode::Campaign, Some(index)) if level.defender.is_some() => Some(index),
        _ => None,
    };
    // Said on the Next button: the level select's "Next up" says it too.
    let chapter_done = match (session.mode, session.campaign_index) {
        (Mode::Campaign, Some(index)) => campaign.chapter_done(index, progress),
        _ => None,
    };
    let mut chosen = Chosen::default();
    let mut asks = DebriefAsks::default();
    let generation = session.generation();
    let mut root = ui::root_ui(context, "debrief");
    egui::Panel::bottom("debrief-actions")
        .frame(
            egui::Frame::new()
                .fill(theme::PANEL)
                .inner_margin(egui::Margin::symmetric(14, 8)),
        )
        .show(&mut root, |ui| {
            ui.horizontal(|ui| {
                actions(
                    ui,
                    (campaign, after, chapter_done),
                    defend,
                    back,
                    simulation.phase(),
                    &mut chosen,
                );
                asks.take_home = take_home::button(ui, take_home, generation);
            });
            take_home::outcome(ui, take_home, copied);
        });
    // The verdict column is as wide as its table needs; the timeline, the wordiest view,
    // gets the rest of the screen — at least half of a narrow one (a projector), where a
    // 510-point column left the timeline's rows no room for their words.
    let verdict_width = (root.available_width() * 0.5).clamp(300.0, 510.0);
    egui::Panel::left("debrief-verdict")
        .exact_size(verdict_width)
        .resizable(false)
        .frame(
            egui::Frame::new()
                .fill(theme::PANEL)
                .inner_margin(egui::Margin::same(16)),
        )
        .show(&mut root, |ui| {
            // One scroll position per run told: a new debrief opens at its verdict, not where
            // the last one was left (egui keeps a scroll area's offset by its id). Its foot on
            // a whole line.
            let run = (level.id.as_str(), simulation.phase(), simulation.played().len());
            let id = egui::Id::new(("debrief-verdict", run));
            whole_lines::scroll(ui, egui::ScrollArea::vertical().auto_shrink(false), id, |ui| {
                ui.label(
                    RichText::new(format!("Debrief · {}", session.numbered_title()))
                        .size(theme::HEADING)
                        .color(theme::TEXT_DIM),
                );
                verdict::draw(ui, session, prediction.scored.as_ref(), other, &mut chosen);
                ui.add_space(12.0);
                ui.separator();
                verdict::lesson(ui, session, &simulation);
            });
        });
    egui::CentralPanel::default()
        .frame(
            egui::Frame::new()
                .fill(theme::BACKGROUND)
                .inner_margin(egui::Margin::same(10)),
        )
        .show(&mut root, |ui| {
            code::draw(ui, &simulation, told, other.shown());
            other_run::timelines(ui, &simulation, cache, other);
        });

    keyboard(context, after, defend, simulation.phase(), &mut chosen);
    if other.take_open_first() && told.is_some_and(|told| !told.what_if.is_empty()) {
        chosen.other_run = Some(0);
    }
    if ui::pressed(context, egui::Key::O) && told.is_some_and(|told| !told.what_if.is_empty()) {
        // O opens the first other run, or closes the one open.
        chosen.other_run = Some(other.shown().unwrap_or(0));
    }
    if let (Some(which), Some(told)) = (chosen.other_run, told) {
        other.toggle(which, told, &simulation);
    }
    settle(chosen, asks)
}

/// What the player chose this frame, as the asks the system carries out.
fn settle(chosen: Chosen, mut asks: DebriefAsks) -> DebriefAsks {
    asks.defend = chosen.defend;
    if let Some(intent) = chosen.intent {
        // Back in the level for a restart or a rewind; the rest open their own screens.
        let stays = matches!(intent, Intent::Restart | Intent::Rewind { .. });
        asks.intents.push(intent);
        if stays {
            asks.intents.push(Intent::Resume);
        }
    }
    asks
}

/// Where Enter goes after this level: the next level's briefing, or the ending.
fn onward(after: AfterLevel) -> Option<Intent> {
    match after {
        AfterLevel::NextBriefing(_) => Some(Intent::NextBriefing),
        AfterLevel::Ending => Some(Intent::Leave(Leaving::ToTheEnding)),
        AfterLevel::Nothing => None,
    }
}

fn keyboard(context: &egui::Context, after: AfterLevel, defend: Option<usize>, phase: u32, chosen: &mut Chosen) {
    if ui::pressed(context, egui::Key::Enter)
        && let Some(intent) = onward(after)
    {
        chosen.intent = Some(intent);
    }
    if ui::pressed(context, egui::Key::D) && defend.is_some() {
        chosen.defend = defend;
    }
    if ui::pressed(context, egui::Key::R) {
        chosen.intent = Some(Intent::Restart);
    }
    if ui::pressed(context, egui::Key::B) {
        chosen.intent = Some(Intent::Rewind {
            phase: phase.saturating_sub(1),
        });
    }
    if ui::pressed(context, egui::Key::Escape) {
        chosen.intent = Some(Intent::Leave(Leaving::Back));
    }
}

/// The bottom bar: next (or the ending), defend, try again, back to the level, leave.
/// `chapter_done`: the chapter of the level played, when every level of it is finished.
fn actions(
    ui: &mut egui::Ui,
    (campaign, after, chapter_done): (&Campaign, AfterLevel, Option<u32>),
    defend: Option<usize>,
    back: Screen,
    phase: u32,
    chosen: &mut Chosen,
) {
    ui.horizontal(|ui| {
        match after {
            // Through the next level's briefing, never straight into play.
            AfterLevel::NextBriefing(index) => {
                let next = &campaign.levels[index].level;
                // A chapter finished says so, and the next is another chapter's.
                let label = match chapter_done.filter(|chapter| *chapter != next.chapter) {
                    Some(chapter) => format!("✔ Chapter {chapter} done · ▶ Next: {}", next.title),
                    None => format!("▶ Next: {}", next.title),
                };
                if ui::button(ui, true, &label, "Enter")
                    .on_hover_text("its briefing first, on the level select")
                    .clicked()
                {
                    chosen.intent = onward(after);
                }
            }
            AfterLevel::Ending => {
                if ui::button(ui, true, "🏁 The ending: what you learned", "Enter").clicked() {
                    chosen.intent = onward(after);
                }
            }
            AfterLevel::Nothing => {}
        }
        if let Some(index) = defend
            && ui::button(ui, true, "🛡 Defend it", "D")
                .on_hover_text("switch on the fewest guards that stop every known heist")
                .clicked()
        {
            chosen.defend = Some(index);
        }
        if ui::button(ui, true, "↺ Try again", "R").clicked() {
            chosen.intent = Some(Intent::Restart);
        }
        if ui::button(ui, true, "◀ Back to the level", "B").clicked() {
            chosen.intent = Some(Intent::Rewind {
                phase: phase.saturating_sub(1),
            });
        }
        let label = match back {
            Screen::Sandbox => "Sandbox",
            Screen::Replay => "Tapes",
            _ => "Level select",
        };
        if ui::button(ui, true, label, "Esc").clicked() {
            chosen.intent = Some(Intent::Leave(Leaving::Back));
        }
    });
}
