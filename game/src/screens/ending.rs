//! The ending, after the campaign's last level: what the player learned (the guards in the
//! order the campaign met them, the stars of the levels that teach each, their defences, the
//! predictions that named each),
//! the vault defended as the finale, and the credits. Everything drawn is
//! [`CampaignSummary`], worked out from the campaign and progress.

use bevy::prelude::*;
use bevy_egui::egui::{self, Align2, Color32, FontId, RichText, Stroke};
use bevy_egui::{EguiContexts, EguiPrimaryContextPass};
use twice_world::text::counted;

use super::Screen;
use super::header::Header;
use crate::campaign::Campaign;
use crate::campaign::summary::{CampaignSummary, GuardLearned};
use crate::defence::DefenceIntent;
use crate::progress::Progress;
use crate::ui::{self, theme, whole_lines};

pub(super) fn plugin(app: &mut App) {
    app.add_systems(EguiPrimaryContextPass, draw.run_if(in_state(Screen::Ending)));
}

/// Width of the finale and credits column at 1280 points.
const FINALE_WIDTH: f32 = 430.0;

fn draw(
    mut contexts: EguiContexts,
    campaign: Res<Campaign>,
    progress: Res<Progress>,
    mut next_screen: ResMut<NextState<Screen>>,
    mut defence_intents: MessageWriter<DefenceIntent>,
) -> Result {
    let asks = frame(contexts.ctx_mut()?, &campaign, &progress);
    if let Some(index) = asks.defend_vault {
        defence_intents.write(DefenceIntent::Open { index });
        return Ok(());
    }
    if asks.leave {
        next_screen.set(Screen::LevelSelect);
    }
    Ok(())
}

/// What the player asked for on the ending this frame.
#[derive(Debug, Default)]
pub struct EndingAsks {
    /// Back to the level select (Esc or the back button).
    pub leave: bool,
    /// Defend the finale's level (its index), asked by V or its button.
    pub defend_vault: Option<usize>,
}

/// The ending drawn into `context` (the system above acts on what it returns; headless tests
/// read the frame through [`crate::ui::probe`]).
pub fn frame(context: &egui::Context, campaign: &Campaign, progress: &Progress) -> EndingAsks {
    let summary = CampaignSummary::of(campaign, progress);
    let mut leave = ui::pressed(context, egui::Key::Escape);
    let mut defend_vault = ui::pressed(context, egui::Key::V);
    let title = if summary.complete {
        "🏁 The campaign is complete"
    } else {
        "🏁 The ending (it opens when the last level is finished)"
    };
    let mut root = ui::root_ui(context, "ending");
    // Beside the title when it fits, under it when not: at the projector's zoom it ran off the
    // screen's edge ("8 of 8 defende").
    let line = RichText::new(summary.line()).color(theme::TEXT_DIM);
    let under = std::cell::Cell::new(false);
    leave |= Header::new("ending-top", "← Levels", title, theme::CREW).show(
        &mut root,
        |ui| {
            let width = egui::WidgetText::from(line.clone())
                .into_galley(
                    ui,
                    Some(egui::TextWrapMode::Extend),
                    f32::INFINITY,
                    egui::FontSelection::Default,
                )
                .size()
                .x;
            if width <= ui.available_width() {
                ui.label(line.clone());
            } else {
                under.set(true);
            }
        },
        |ui| {
            if under.get() {
                ui.label(line.clone());
            }
        },
    );
    let width = FINALE_WIDTH.min(root.available_width() * 0.45);
    egui::Panel::right("ending-finale")
        .exact_size(width)
        .resizable(false)
        .frame(
            egui::Frame::new()
                .fill(theme::PANEL)
                .inner_margin(egui::Margin::same(14)),
        )
        .show(&mut root, |ui| {
            // Both columns end on a whole line (the guards' list ended through a guard's name).
            let id = egui::Id::new("ending-finale-scroll");
            whole_lines::scroll(ui, egui::ScrollArea::vertical().auto_shrink(false), id, |ui| {
                defend_vault |= finale(ui, campaign, &summary);
                ui.add_space(10.0);
                predictions(ui, &summary);
                ui.add_space(10.0);
                credits(ui);
            });
        });
    egui::CentralPanel::default()
        .frame(
            egui::Frame::new()
                .fill(theme::BACKGROUND)
                .inner_margin(egui::Margin::same(14)),
        )
        .show(&mut root, |ui| {
            let id = egui::Id::new("ending-learned-scroll");
            whole_lines::scroll(ui, egui::ScrollArea::vertical().auto_shrink(false), id, |ui| {
                learned(ui, campaign, &summary);
            });
        });
    EndingAsks {
        leave,
        defend_vault: summary.finale.filter(|_| defend_vault),
    }
}

/// The guards in the order the campaign met them: each one's rule, where it was met, the
/// stars of its levels, its defences and the predictions that named it.
fn learned(ui: &mut egui::Ui, campaign: &Campaign, summary: &CampaignSummary) {
    ui.label(
        RichText::new("What you learned")
            .size(theme::HEADING + 3.0)
            .strong()
            .color(theme::RUNTIME),
    );
    ui::hint(
        ui,
        "The guards in the order you met them. Each one keeps one promise; together they make a refund take effect once.",
    );
    for (number, learned) in summary.guards.iter().enumerate() {
        guard_row(ui, campaign, number + 1, learned);
    }
    if !summary.unfinished.is_empty() {
        ui.add_space(6.0);
        let titles: Vec<&str> = summary
            .unfinished
            .iter()
            .map(|index| campaign.levels[*index].level.title.as_str())
            .collect();
        ui.label(
            RichText::new(format!("Still open: {}", titles.join(" · ")))
                .size(theme::SMALL)
                .color(theme::WARN),
        );
    }
}

fn guard_row(ui: &mut egui::Ui, campaign: &Campaign, number: usize, learned: &GuardLearned) {
    let met = &campaign.levels[learned.met_in].level;
    egui::Frame::new()
        .fill(theme::PANEL)
        .stroke(Stroke::new(1.0, theme::PANEL_BORDER))
        .corner_radius(6)
        .inner_margin(egui::Margin::symmetric(10, 2))
        .show(ui, |ui| {
            ui.set_width(ui.available_width());
            ui.spacing_mut().item_spacing.y = 0.0;
            let met = RichText::new(format!("met in ch. {} · {}", met.chapter, met.title))
                .size(theme::SMALL)
                .color(theme::TEXT_DIM);
            // A narrow column (a projector at presenter zoom) puts where it was met and the
            // tallies on a line of their own: right-aligned beside them, the stars were drawn
            // over the level's title.
            let narrow = ui.available_width() < GUARD_ROW_ONE_LINE_WIDTH_MIN;
            ui.horizontal(|ui| {
                ui.label(
                    RichText::new(format!("{number:>2}."))
                        .monospace()
                        .color(theme::TEXT_FAINT),
                );
                ui.label(RichText::new(learned.guard.name()).strong().color(theme::GOOD));
                if !narrow {
                    ui.label(met.clone());
                    ui.with_layout(egui::Layout::right_to_left(egui::Align::Center), |ui| {
                        tallies(ui, learned, true);
                    });
                }
            });
            if narrow {
                ui.horizontal_wrapped(|ui| {
                    ui.label(met);
                    tallies(ui, learned, false);
                });
            }
            ui.label(
                RichText::new(twice_world::guards::promise(learned.guard))
                    .size(theme::SMALL)
                    .color(theme::TEXT),
            );
        });
}

/// Below this width a guard's row puts where it was met and its tallies on a second line.
const GUARD_ROW_ONE_LINE_WIDTH_MIN: f32 = 640.0;

/// A guard's stars, defences and predictions; `right_to_left`: laid out from the row's right
/// edge (the last drawn is the leftmost), so read left to right they are in the same order.
fn tallies(ui: &mut egui::Ui, learned: &GuardLearned, right_to_left: bool) {
    let mut parts: Vec<(RichText, Option<&str>)> = Vec::new();
    if learned.stars.possible > 0 {
        parts.push((RichText::new(learned.stars.glyphs()).color(theme::WARN), None));
    }
    if learned.defendable > 0 {
        parts.push((
            RichText::new(format!("🛡 {}/{}", learned.defended, learned.defendable))
                .size(theme::SMALL)
                .color(if learned.defended == learned.defendable {
                    theme::GOOD
                } else {
                    theme::TEXT_DIM
                }),
            None,
        ));
    }
    if learned.predicted > 0 {
        parts.push((
            RichText::new(format!("🔮 {} of {} right", learned.predicted_right, learned.predicted))
                .size(theme::SMALL)
                .color(theme::VIOLET),
            Some("your predictions that named this guard as the one that decides"),
        ));
    }
    if right_to_left {
        parts.reverse();
    }
    for (text, hover) in parts {
        // Each whole on one line: wrapped, "🛡 2/2" broke after its shield.
        let label = ui.add(egui::Label::new(text).wrap_mode(egui::TextWrapMode::Extend));
        if let Some(hover) = hover {
            label.on_hover_text(hover);
        }
    }
}

/// The vault, defended as the finale: the player's defence if they made one, else the way
/// to make it (V). Returns whether the player asked to defend it.
fn finale(ui: &mut egui::Ui, campaign: &Campaign, summary: &CampaignSummary) -> bool {
    ui.label(
        RichText::new("The finale: the vault")
            .size(theme::HEADING + 3.0)
            .strong()
            .color(theme::CREW),
    );
    let Some(index) = summary.finale else {
        ui::hint(ui, "This campaign has no vault level to defend.");
        return false;
    };
    let level = &campaign.levels[index].level;
    let minimum = level.defender.as_ref().map_or(0, |defender| defender.minimum.len());
    let (rect, _) = ui.allocate_exact_size(egui::vec2(ui.available_width(), 130.0), egui::Sense::hover());
    paint_vault(
        ui.painter_at(rect),
        rect,
        summary.finale_defence.as_deref().unwrap_or(&[]),
    );
    match &summary.finale_defence {
        Some(guards) => {
            ui.label(
                RichText::new(format!(
                    "🛡 You defended {} with {}{}.",
                    level.title,
                    counted(guards.len() as u64, "guard", "guards"),
                    if guards.len() <= minimum {
                        ", the fewest anyone knows"
                    } else {
                        ""
                    }
                ))
                .color(theme::GOOD),
            );
            let names: Vec<&str> = guards.iter().map(|guard| guard.name()).collect();
            ui::hint(ui, names.join(" · "));
            ui::button(ui, true, "🛡 Defend it again", "V").clicked()
        }
        None => {
            ui.label(RichText::new(format!(
                "Every heist you learned, against one vault: switch on the fewest guards that stop them all ({minimum} is the fewest known)."
            )));
            ui::button(ui, true, "🛡 Defend the vault", "V").clicked()
        }
    }
}

/// A vault door, with one shield lit around it per guard of the player's defence.
fn paint_vault(painter: egui::Painter, rect: egui::Rect, guards: &[twice_world::runtime::guards::Guard]) {
    let center = rect.center();
    // Room for the ring of shields (10 points out, 8 points of glyph) inside the rect the
    // painter clips to: 14 points left the top and bottom shields cut in half.
    let radius = (rect.height() / 2.0 - 18.0).max(10.0);
    painter.circle(center, radius, theme::PANEL_RAISED, Stroke::new(3.0, theme::CREW));
    painter.circle_stroke(center, radius * 0.55, Stroke::new(2.0, theme::CREW.gamma_multiply(0.7)));
    for spoke in 0..6 {
        let angle = spoke as f32 * std::f32::consts::TAU / 6.0;
        let direction = egui::vec2(angle.cos(), angle.sin());
        painter.line_segment(
            [center + direction * radius * 0.2, center + direction * radius * 0.55],
            Stroke::new(2.0, theme::CREW.gamma_multiply(0.7)),
        );
    }
    painter.text(
        center,
        Align2::CENTER_CENTER,
        "$",
        FontId::proportional(22.0),
        theme::CREW,
    );
    let slots = twice_world::runtime::guards::Guard::ALL.len();
    for slot in 0..slots {
        let angle = -std::f32::consts::FRAC_PI_2 + slot as f32 * std::f32::consts::TAU / slots as f32;
        let at = center + egui::vec2(angle.cos(), angle.sin()) * (radius + 10.0) + egui::vec2(0.0, 0.0);
        let lit = twice_world::runtime::guards::Guard::ALL
            .get(slot)
            .is_some_and(|guard| guards.contains(guard));
        let color = if lit {
            theme::GOOD
        } else {
            Color32::from_rgb(60, 66, 82)
        };
        painter.text(at, Align2::CENTER_CENTER, "🛡", FontId::proportional(14.0), color);
    }
}

/// The tally of the player's predictions (predict, then watch: V in a level).
fn predictions(ui: &mut egui::Ui, summary: &CampaignSummary) {
    ui.label(RichText::new("Your predictions").strong());
    let tally = summary.predictions;
    if tally.predictions == 0 {
        ui::hint(
            ui,
            "None made. In a level, V before the run plays out predicts whether the heist works and which guard decides it.",
        );
        return;
    }
    ui.label(
        RichText::new(format!(
            "🔮 {} made · the verdict right {} · a deciding guard named {}, right {}",
            tally.predictions,
            counted(u64::from(tally.verdicts_right), "time", "times"),
            counted(u64::from(tally.guards_named), "time", "times"),
            tally.guards_right
        ))
        .color(theme::VIOLET),
    );
}

fn credits(ui: &mut egui::Ui) {
    ui.label(RichText::new("Credits").strong());
    for line in [
        "Twice: a game about side effects that must happen once.",
        "The rules are the blog post's on how an agent runtime makes a tool call take effect once: key every call, write it down before it runs, retry reads not writes, unknown is an answer, undo only on purpose.",
        "Made by the Twice project. Built with Rust, Bevy and egui (bevy_egui); the ledger is SQLite (rusqlite) or PostgreSQL; levels and tapes are RON.",
        "Penny, Ada and the crew are made up; the failures are real.",
    ] {
        ui.label(RichText::new(line).size(theme::SMALL).color(theme::TEXT_DIM));
    }
}
