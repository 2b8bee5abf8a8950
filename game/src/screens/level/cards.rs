//! The fault cards in hand. Playing one that needs a target (a worker, a run) opens a
//! chooser; the move is an `Intent::Play` with the same `Play` a tape stores. A card that
//! cannot be played now says why in this run's terms (the world's words, as the browser's),
//! on the status line: nothing opens, so no key is swallowed.

use bevy_egui::egui::{self, RichText};
use twice_world::hand;
use twice_world::level::{CardKind, Play};
use twice_world::simulator::Simulation;

use super::{Chooser, LevelUi};
use crate::session::{Intent, Mode, Session};
use crate::ui::{self, theme};

/// The cards in the order the level lists them (the number keys follow this order).
/// More kinds of card than this are drawn as one-line chips.
const FULL_CARDS_MAX: usize = 4;
/// The widest a full card gets, in points.
const FULL_CARD_WIDTH_MAX: f32 = 300.0;
/// The narrowest a chip gets before the hand wraps to fewer columns.
const COMPACT_CARD_WIDTH_MIN: f32 = 180.0;

pub fn hand_order(simulation: &Simulation) -> Vec<CardKind> {
    simulation
        .level()
        .cards
        .iter()
        .map(|allowance| allowance.card)
        .collect()
}

fn is_operator(card: CardKind) -> bool {
    hand::is_operator(card)
}

/// What the card will do now, in the player's words (the same words the browser shows).
fn effect(card: CardKind, simulation: &Simulation) -> String {
    hand::effect(card, simulation)
}

/// Why a card of the hand cannot be played now, in this run's terms (`None`: it can). The
/// console's and the declaration's cards are made there; the hand says nothing for them.
fn hand_refusal(card: CardKind, simulation: &Simulation) -> Option<String> {
    hand::refusal(card, simulation).filter(|_| card.aims().from_the_hand())
}

/// The choices a card offers: a label and the move it makes. Empty: nothing to target now.
pub fn targets(card: CardKind, simulation: &Simulation) -> Vec<(String, Play)> {
    hand::targets(card, simulation)
        .into_iter()
        .map(|target| (target.label, target.play))
        .collect()
}

/// Plays `card`: at once when it has one target, else opens the chooser.
pub fn choose(
    card: CardKind,
    session: &Session,
    simulation: &Simulation,
    level_ui: &mut LevelUi,
    intents: &mut Vec<Intent>,
) {
    if is_operator(card) {
        level_ui.focus_reason = true;
        return;
    }
    if hand::is_declaration(card) {
        // Declared in the tool declaration window, from a draft and its verdict.
        level_ui.declaration_hidden = false;
        return;
    }
    if session.mode == Mode::Replay {
        level_ui.flash = Some("A tape plays its own cards: open the level to play yours.".into());
        return;
    }
    if let Some(why) = hand::refusal(card, simulation) {
        level_ui.flash = Some(format!("{}: {why}", card.title()));
        return;
    }
    // One message on the wire, one worker alive, one run: nothing to choose, it plays now.
    if let Some(play) = hand::plays_at_once(card, simulation) {
        intents.push(Intent::Play(play));
        return;
    }
    // A message, a worker or a run to pick: the chooser shows them (or says there is none).
    // Time stands still while it is open: a run going on would move the targets under the
    // player's pointer (and a step is held until a target is picked or the card cancelled).
    if session.running {
        intents.push(Intent::SetRunning(false));
    }
    level_ui.chooser = Some(Chooser::Card(card));
}

/// What a step or a run pressed while `card` waits for its target says: time would move past
/// the moment the card was chosen for, and the card would be dropped unplayed.
pub fn held_step(card: CardKind) -> String {
    format!(
        "{} is not played yet: pick its target (1–9), or Cancel (Esc), then step.",
        card.title()
    )
}

/// The narrowest a chip gets in the strip of a short screen (a projector): four to a line, so
/// even the vault's seven kinds take two lines and leave the stage its height.
const STRIP_CARD_WIDTH_MIN: f32 = 100.0;

/// How many chips a line of the compact hand holds, in this width, each at least `width_min`.
fn chip_columns(available_width: f32, spacing: f32, width_min: f32) -> f32 {
    ((available_width + spacing) / (width_min + spacing))
        .floor()
        .clamp(1.0, 4.0)
}

/// A chip's height in the compact hand.
const CHIP_HEIGHT: f32 = 26.0;

/// The hand, laid out like cards on a table: one column each; `compact`: one-line chips (a
/// short screen, where the hand sits in a strip of its own above the timeline). Returns the
/// height of card words the panel could not show (0: every card is whole).
pub fn draw(
    ui: &mut egui::Ui,
    session: &Session,
    simulation: &Simulation,
    level_ui: &mut LevelUi,
    compact: bool,
    intents: &mut Vec<Intent>,
) -> f32 {
    let hand = simulation.hand();
    let cards = hand_order(simulation);
    let playable = session.mode != Mode::Replay && !simulation.is_over() && !session.is_busy();
    if !compact {
        ui.horizontal(|ui| {
            ui.label(
                RichText::new("Your hand")
                    .size(theme::HEADING)
                    .strong()
                    .color(theme::CREW),
            );
            ui::hint(ui, status_line(session, simulation));
        });
    }
    if cards.is_empty() {
        ui.horizontal(|ui| {
            if compact {
                hand_label(ui, session, simulation);
            }
            ui::hint(ui, "This level gives you no cards: watch, step and rewind.");
        });
        return 0.0;
    }
    let mut chosen = None;
    let mut hidden = 0.0;
    let spacing = ui.spacing().item_spacing.x;
    if cards.len() > FULL_CARDS_MAX || compact {
        // A big hand (the vault has seven kinds) does not fit as full cards above the
        // timeline at 1280×720: each card becomes a one-line chip, its effect on hover.
        ui.horizontal_wrapped(|ui| {
            // In the strip of a short screen the label shares the chips' line (what is armed,
            // or why nothing can be played, on hover): the strip is one line high.
            let line_width = ui.available_width();
            let label_width = if compact {
                hand_label(ui, session, simulation).rect.width() + spacing
            } else {
                0.0
            };
            let available = line_width - label_width;
            let width_min = if compact {
                STRIP_CARD_WIDTH_MIN
            } else {
                COMPACT_CARD_WIDTH_MIN
            };
            let columns = chip_columns(available, spacing, width_min).min(cards.len() as f32);
            // Two pixels of slack: a row that fills the width exactly wraps its last chip.
            let width = (available - spacing * (columns - 1.0)) / columns - 2.0;
            for (index, card) in cards.iter().enumerate() {
                let left = hand.get(card).copied().unwrap_or(0);
                let refusal = hand_refusal(*card, simulation);
                // A card the run can still take: an arming card ("Model calls again") has no
                // target to lack, so after the end it looked as playable as before.
                let live = left > 0 && refusal.is_none() && !simulation.is_over();
                let key = if index < 9 {
                    format!("{}", index + 1)
                } else {
                    "·".to_owned()
                };
                let text = RichText::new(format!("{key}  ×{left}  {}", card.title()))
                    .size(12.5)
                    .color(if live { theme::CREW } else { theme::TEXT_FAINT });
                let button = egui::Button::new(text)
                    .min_size(egui::vec2(width, CHIP_HEIGHT))
                    .fill(if live { theme::PANEL_RAISED } else { theme::PANEL })
                    .stroke(egui::Stroke::new(
                        1.0,
                        if live { theme::CREW } else { theme::PANEL_BORDER },
                    ))
                    .truncate();
                // A narrow chip may cut its title: the hover says it whole, and why it cannot
                // be played now when it cannot.
                let hover = match &refusal {
                    Some(why) => format!("{}: {why}", card.title()),
                    None => format!("{}: {}", card.title(), effect(*card, simulation)),
                };
                // Its own box of the chip's width: a title longer than that is cut with "…",
                // so the chips keep to their columns.
                let response = ui
                    .allocate_ui(egui::vec2(width, CHIP_HEIGHT), |ui| {
                        ui.add_enabled(playable && live, button)
                    })
                    .inner
                    .on_hover_text(&hover)
                    .on_disabled_hover_text(&hover);
                if response.clicked() {
                    chosen = Some(*card);
                }
            }
        });
    } else {
        hidden = draw_full_cards(ui, simulation, &cards, playable, &mut chosen);
    }
    if let Some(card) = chosen {
        choose(card, session, simulation, level_ui, intents);
    }
    hidden
}

/// "Your hand" in the strip of a short screen, the hand's status on hover.
fn hand_label(ui: &mut egui::Ui, session: &Session, simulation: &Simulation) -> egui::Response {
    ui.label(RichText::new("Your hand").strong().color(theme::CREW))
        .on_hover_text(status_line(session, simulation))
}

/// The foot of a card under its words: the frame's inner margin and stroke, in points.
const CARD_FOOT: f32 = 5.0 + 1.5 + 1.0;

/// A card's words (what it does, or why it cannot be played now), as many lines as the
/// hand's panel shows above its foot: a reason longer than that ends in "…" and is whole on
/// hover, rather than cut in half by the panel's edge. Returns the height of the lines left
/// out, so the stage gives them up next frame if it can.
fn card_words(ui: &mut egui::Ui, said: String, color: egui::Color32) -> f32 {
    let font = egui::FontId::proportional(11.5);
    let width = ui.available_width();
    let whole = ui
        .ctx()
        .fonts_mut(|fonts| fonts.layout(said.clone(), font.clone(), color, width));
    let rows = whole.rows.len().max(1);
    let row_height = whole.size().y / rows as f32;
    let room = ui.clip_rect().bottom() - ui.cursor().top() - CARD_FOOT;
    let rows_shown = ((room / row_height).floor().max(1.0) as usize).min(rows);
    if rows_shown == rows {
        ui.label(whole);
        return 0.0;
    }
    let mut job = egui::text::LayoutJob::single_section(said.clone(), egui::TextFormat::simple(font, color));
    job.wrap = egui::text::TextWrapping {
        max_width: width,
        max_rows: rows_shown,
        break_anywhere: false,
        overflow_character: Some('…'),
    };
    let shown = ui.ctx().fonts_mut(|fonts| fonts.layout_job(job));
    ui.label(shown).on_hover_text(said);
    (rows - rows_shown) as f32 * row_height
}

/// Up to [`FULL_CARDS_MAX`] cards, each with its count, title and effect spelled out. Returns
/// the height of the words the panel could not show (see [`card_words`]).
fn draw_full_cards(
    ui: &mut egui::Ui,
    simulation: &Simulation,
    cards: &[CardKind],
    playable: bool,
    chosen: &mut Option<CardKind>,
) -> f32 {
    let mut hidden = 0.0_f32;
    let hand = simulation.hand();
    let spacing = ui.spacing().item_spacing.x;
    // Each card is its content width plus the frame's margins (2 × 7) and stroke (2 × 1.5).
    let frame_extra = 14.0 + 3.0;
    let columns = cards.len() as f32;
    // Few cards share the row (two at 1280×720 are 270 points each): their words take fewer
    // lines than at 220, where the rest of the row stayed empty.
    let width = ((ui.available_width() - spacing * (columns - 1.0)) / columns).clamp(120.0, FULL_CARD_WIDTH_MAX);
    ui.horizontal_top(|ui| {
        for (index, card) in cards.iter().enumerate() {
            let left = hand.get(card).copied().unwrap_or(0);
            let key = if index < 9 {
                format!("{}", index + 1)
            } else {
                "·".to_owned()
            };
            let refusal = hand_refusal(*card, simulation);
            let live = left > 0 && refusal.is_none() && !simulation.is_over();
            egui::Frame::new()
                .fill(if live { theme::PANEL_RAISED } else { theme::PANEL })
                .stroke(egui::Stroke::new(
                    if live { 1.5 } else { 1.0 },
                    if live { theme::CREW } else { theme::PANEL_BORDER },
                ))
                .corner_radius(8)
                .inner_margin(egui::Margin::symmetric(7, 5))
                .show(ui, |ui| {
                    ui.set_width(width - frame_extra);
                    ui.vertical(|ui| {
                        ui.horizontal(|ui| {
                            ui::key_cap(ui, &key);
                            ui.label(RichText::new(format!("× {left}")).monospace().color(if live {
                                theme::TEXT
                            } else {
                                theme::TEXT_FAINT
                            }));
                            ui.with_layout(egui::Layout::right_to_left(egui::Align::Center), |ui| {
                                let label = if is_operator(*card) {
                                    "console"
                                } else if hand::is_declaration(*card) {
                                    "declare"
                                } else {
                                    "play"
                                };
                                let button = ui.add_enabled(playable && live, egui::Button::new(label));
                                if let Some(why) = &refusal {
                                    button.on_disabled_hover_text(why.as_str());
                                } else if button.clicked() {
                                    *chosen = Some(*card);
                                }
                            });
                        });
                        ui.label(RichText::new(card.title()).strong().color(if live {
                            theme::CREW
                        } else {
                            theme::TEXT_FAINT
                        }));
                        // What it does now, or why it cannot be played now.
                        let (said, color) = match &refusal {
                            Some(why) if left > 0 => (why.clone(), theme::WARN),
                            _ => (effect(*card, simulation), theme::TEXT_DIM),
                        };
                        hidden = hidden.max(card_words(ui, said, color));
                    });
                });
        }
    });
    hidden
}

/// What is armed, or why the hand cannot be played now.
fn status_line(session: &Session, simulation: &Simulation) -> String {
    if session.mode == Mode::Replay {
        return "a tape plays its own cards; you watch, step and rewind".into();
    }
    if simulation.is_over() {
        let waiting = simulation.moves_that_still_matter().unwrap_or_default();
        if !waiting.is_empty() {
            return "Penny waits for an operator: settle the call in the operator console".into();
        }
        return "the level is over".into();
    }
    let lines = twice_world::hand::armed_lines(simulation.armed());
    if lines.is_empty() {
        "press a number to play; cards take effect before the next phase".into()
    } else {
        format!("armed: {}", lines.join(" · "))
    }
}
