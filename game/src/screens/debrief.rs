//! The debrief: the checker's verdict, the timeline of what happened, and the lesson.

use bevy::prelude::*;
use bevy_egui::egui::{self, RichText};
use bevy_egui::{EguiContexts, EguiPrimaryContextPass};
use twice_world::checker::{Outcome, Verdict};
use twice_world::debrief::Standing;
use twice_world::simulator::dollars;

use super::Screen;
use super::level::timeline::{self, TimelineCache};
use crate::campaign::Campaign;
use crate::campaign::summary::{self, AfterLevel};
use crate::defence::DefenceIntent;
use crate::progress::Progress;
use crate::session::{Intent, Mode, Session};
use crate::ui::{self, theme};

pub(super) fn plugin(app: &mut App) {
    app.add_systems(OnEnter(Screen::Debrief), spawn_state);
    app.add_systems(
        EguiPrimaryContextPass,
        draw.run_if(in_state(Screen::Debrief))
            .run_if(resource_exists::<Session>),
    );
}

fn spawn_state(mut commands: Commands) {
    commands.spawn((
        Name::new("Debrief"),
        TimelineCache::default(),
        DespawnOnExit(Screen::Debrief),
    ));
}

/// What the player chose this frame (buttons and keys).
#[derive(Debug, Default)]
struct Chosen {
    intent: Option<Intent>,
    defend: Option<usize>,
}

// A Bevy system: each argument is a resource or message the screen reads or writes.
#[allow(clippy::too_many_arguments)]
fn draw(
    mut contexts: EguiContexts,
    mut cache: Single<&mut TimelineCache>,
    session: Res<Session>,
    campaign: Res<Campaign>,
    progress: Res<Progress>,
    mut intents: MessageWriter<Intent>,
    mut defence_intents: MessageWriter<DefenceIntent>,
) -> Result {
    let context = contexts.ctx_mut()?;
    let simulation = session.simulation();
    cache.update(&simulation);
    let level = &session.recipe.level.level;
    let back = match session.mode {
        Mode::Campaign => Screen::LevelSelect,
        Mode::Sandbox => Screen::Sandbox,
        Mode::Replay => Screen::Replay,
    };
    let after = match (session.mode, session.campaign_index) {
        (Mode::Campaign, Some(index)) => summary::after_level(&campaign, &progress, index),
        _ => AfterLevel::Nothing,
    };
    // An unbeatable campaign level can be defended from here too.
    let defend = match (session.mode, session.campaign_index) {
        (Mode::Campaign, Some(index)) if level.defender.is_some() => Some(index),
        _ => None,
    };
    let mut chosen = Chosen::default();
    let mut root = ui::root_ui(context, "debrief");
    egui::Panel::bottom("debrief-actions")
        .frame(
            egui::Frame::new()
                .fill(theme::PANEL)
                .inner_margin(egui::Margin::symmetric(14, 8)),
        )
        .show(&mut root, |ui| {
            actions(ui, &campaign, after, defend, back, simulation.phase(), &mut chosen)
        });
    // The verdict column is as wide as its table needs; the timeline, the wordiest view,
    // gets the rest of the screen.
    egui::Panel::left("debrief-verdict")
        .exact_size(510.0)
        .resizable(false)
        .frame(
            egui::Frame::new()
                .fill(theme::PANEL)
                .inner_margin(egui::Margin::same(16)),
        )
        .show(&mut root, |ui| {
            egui::ScrollArea::vertical().auto_shrink(false).show(ui, |ui| {
                ui.label(
                    RichText::new(format!("Debrief · {}", level.title))
                        .size(theme::HEADING)
                        .color(theme::TEXT_DIM),
                );
                verdict(ui, &session);
                ui.add_space(12.0);
                ui.separator();
                lesson(ui, &session);
            });
        });
    egui::CentralPanel::default()
        .frame(
            egui::Frame::new()
                .fill(theme::BACKGROUND)
                .inner_margin(egui::Margin::same(10)),
        )
        .show(&mut root, |ui| {
            timeline::draw(
                ui,
                simulation.timeline(),
                &cache,
                false,
                timeline::RowText::Wrap,
                "debrief-timeline",
            );
        });

    keyboard(context, after, defend, back, simulation.phase(), &mut chosen);
    drop(simulation);
    if let Some(index) = chosen.defend {
        defence_intents.write(DefenceIntent::Open { index });
        return Ok(());
    }
    if let Some(intent) = chosen.intent {
        // Back in the level for a restart or a rewind; the rest open their own screens.
        let stays = matches!(intent, Intent::Restart | Intent::Rewind { .. });
        intents.write(intent);
        if stays {
            intents.write(Intent::Resume);
        }
    }
    Ok(())
}

/// Where Enter goes after this level: the next level's briefing, or the ending.
fn onward(after: AfterLevel) -> Option<Intent> {
    match after {
        AfterLevel::NextBriefing(_) => Some(Intent::NextBriefing),
        AfterLevel::Ending => Some(Intent::Leave { to: Screen::Ending }),
        AfterLevel::Nothing => None,
    }
}

fn keyboard(
    context: &egui::Context,
    after: AfterLevel,
    defend: Option<usize>,
    back: Screen,
    phase: u32,
    chosen: &mut Chosen,
) {
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
        chosen.intent = Some(Intent::Leave { to: back });
    }
}

/// The bottom bar: next (or the ending), defend, try again, back to the level, leave.
fn actions(
    ui: &mut egui::Ui,
    campaign: &Campaign,
    after: AfterLevel,
    defend: Option<usize>,
    back: Screen,
    phase: u32,
    chosen: &mut Chosen,
) {
    ui.horizontal(|ui| {
        match after {
            // Through the next level's briefing, never straight into play.
            AfterLevel::NextBriefing(index) => {
                let title = &campaign.levels[index].level.title;
                if ui::button(ui, true, &format!("▶ Next: {title}"), "Enter")
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
            chosen.intent = Some(Intent::Leave { to: back });
        }
    });
}

/// The verdict: outcome, headline and diagnosis, stars, every credit, what held, the tape.
fn verdict(ui: &mut egui::Ui, session: &Session) {
    match session.conclusion.as_ref().map(|conclusion| &conclusion.verdict) {
        Some(Ok(verdict)) => {
            let told = session
                .conclusion
                .as_ref()
                .and_then(|conclusion| conclusion.debrief.as_ref());
            let level = &session.recipe.level.level;
            let standing = told.map_or_else(|| Standing::of(level, verdict, 0), |told| told.standing);
            let (glyph, color) = verdict_look(standing, verdict.outcome);
            ui.label(
                RichText::new(format!("{glyph} {}", theme::outcome_words(verdict.outcome)))
                    .size(30.0)
                    .strong()
                    .color(color),
            );
            if let Some(told) = told {
                let color = match told.standing {
                    Standing::HeistWorked => theme::CREW,
                    Standing::HeistFailed | Standing::HeldWithCardsLeft { .. } => theme::RUNTIME,
                    Standing::HeldAgainstTheWholeHand => theme::GOOD,
                };
                ui.label(RichText::new(&told.headline).size(theme::HEADING).color(color));
                // What happened to the money, from this run: a loss is diagnosed,
                // never told the win's story.
                for sentence in &told.diagnosis {
                    ui.label(RichText::new(sentence).size(theme::BODY + 0.5));
                }
                if let Some(par) = &told.par {
                    let stars = match par.stars() {
                        2 => "★★",
                        1 => "★☆",
                        _ => "☆☆",
                    };
                    ui.label(
                        RichText::new(format!(
                            "{stars}  {} card(s) in {} phases · par: {} card(s) in {} phases",
                            par.cards, par.phases, par.par_cards, par.par_phases
                        ))
                        .strong()
                        .color(theme::WARN),
                    );
                }
            }
            ui.label(RichText::new(&verdict.summary).color(theme::TEXT_DIM));
            ui.add_space(8.0);
            credits(ui, verdict);
            ui.add_space(8.0);
            if verdict.stops.is_empty() {
                // A failed heist is diagnosed above; "no guard held" would contradict it.
                if verdict.goal_reached {
                    ui.label(RichText::new("No guard held.").color(theme::TEXT_DIM));
                }
            } else {
                ui.label(RichText::new("What held").strong());
                for stop in &verdict.stops {
                    ui.label(RichText::new(format!("🛡 {stop}")).color(theme::GOOD));
                }
            }
            for violation in &verdict.violations {
                ui.label(RichText::new(format!("⚠ broken promise: {violation}")).color(theme::BAD));
            }
            if let Some(conclusion) = &session.conclusion {
                if let (Some(as_expected), Some(source)) = (conclusion.as_expected, &session.recipe.tape) {
                    let expected = &source.tape.expect;
                    let (text, color) = if as_expected {
                        (format!("✔ as the tape expects ({})", expected.verdict), theme::GOOD)
                    } else {
                        (
                            format!("✖ the tape expects {}, this is {}", expected.verdict, verdict.outcome),
                            theme::BAD,
                        )
                    };
                    ui.label(RichText::new(text).color(color));
                }
                if conclusion.finished {
                    ui.label(RichText::new("✔ Level finished: saved to your progress.").color(theme::GOOD));
                }
            }
        }
        Some(Err(error)) => {
            ui.label(RichText::new(format!("⚠ The checker could not judge this run: {error}")).color(theme::BAD));
        }
        None => {
            ui.spinner();
        }
    }
}

/// The lesson: the level's story when it happened, its rule and its guards.
fn lesson(ui: &mut egui::Ui, session: &Session) {
    let level = &session.recipe.level.level;
    ui.label(
        RichText::new("The lesson")
            .size(theme::HEADING)
            .strong()
            .color(theme::RUNTIME),
    );
    // The level's story only when it happened: a win's explanation, or why an
    // unbeatable level holds. A loss shows the rule, never the answer.
    let story = session
        .conclusion
        .as_ref()
        .and_then(|conclusion| conclusion.debrief.as_ref())
        .map(|told| told.story.clone())
        .unwrap_or_default();
    if !story.is_empty() {
        ui.label(RichText::new(&story).size(theme::BODY + 0.5));
        ui.add_space(6.0);
    }
    ui.label(
        RichText::new(format!("“{}”", level.lesson.rule))
            .italics()
            .size(theme::BODY + 0.5)
            .color(theme::CREW),
    );
    ui.add_space(4.0);
    for guard in &level.lesson.guards {
        ui.label(
            RichText::new(format!("🛡 {} — {}", guard.name(), guard.describe()))
                .size(theme::SMALL)
                .color(theme::GOOD),
        );
    }
}

/// Every credit Penny meant to issue: owed, landed, and its verdict.
fn credits(ui: &mut egui::Ui, verdict: &Verdict) {
    ui.label(RichText::new("Every credit Penny meant to issue").strong());
    egui::Grid::new("credits")
        .striped(true)
        .num_columns(5)
        .spacing([12.0, 3.0])
        .show(ui, |ui| {
            for heading in ["intent", "account", "owed", "landed", "verdict"] {
                ui.label(RichText::new(heading).size(theme::SMALL).color(theme::TEXT_DIM));
            }
            ui.end_row();
            for credit in &verdict.credits {
                ui.label(format!("{}/{}", credit.run, credit.item));
                ui.label(&credit.account);
                ui.label(dollars(credit.owed_cents));
                ui.label(format!(
                    "{} credit(s), net {}",
                    credit.credits_applied,
                    dollars(credit.net_cents)
                ));
                ui.label(
                    RichText::new(format!(
                        "{} {}",
                        theme::outcome_glyph(credit.outcome),
                        theme::outcome_words(credit.outcome)
                    ))
                    .color(theme::outcome_color(credit.outcome)),
                );
                ui.end_row();
            }
        });
}

/// The big verdict's glyph and colour, as the player's goal reads it: a win in the crew's
/// gold; a customer owed money a warning, whatever held; an unbeatable level held against the
/// whole hand a shield; any other loss a cross, never a green tick.
fn verdict_look(standing: Standing, outcome: Outcome) -> (&'static str, egui::Color32) {
    match (standing, outcome) {
        (Standing::HeistWorked, _) => ("💰", theme::CREW),
        (_, Outcome::NotPaidButOwed) => ("⚠", theme::WARN),
        (Standing::HeldAgainstTheWholeHand, _) => ("🛡", theme::RUNTIME),
        (Standing::HeldWithCardsLeft { .. } | Standing::HeistFailed, _) => ("✖", theme::BAD),
    }
}
