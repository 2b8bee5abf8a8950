//! Dialogs over the level: the `?` key overlay, the target chooser, and the path prompts.

use std::path::PathBuf;

use bevy_egui::egui::{self, RichText};
use twice_world::runtime::rules::Status;
use twice_world::simulator::Simulation;

use super::keyboard::DIGITS;
use super::{Chooser, LevelUi, PromptKind, cards, operator};
use crate::session::{Intent, Session};
use crate::ui::{self, theme, whole_lines};

/// Every key of the level screen, as the overlay lists them: twice-world's one list, which
/// the browser's help lists too (same key, same action, wherever both editions have it).
pub fn shortcuts() -> Vec<(&'static str, &'static str)> {
    twice_world::keys::LEVEL_KEYS
        .iter()
        .map(|row| (row.keys, row.window))
        .collect()
}

/// Why a tape may not be opened yet (a campaign tape of a level not won), or `None`.
pub type TapeLock<'a> = &'a dyn Fn(&std::path::Path) -> Option<String>;

pub fn draw(
    context: &egui::Context,
    session: &Session,
    simulation: &Simulation,
    level_ui: &mut LevelUi,
    tape_lock: TapeLock,
    intents: &mut Vec<Intent>,
) {
    if level_ui.help {
        draw_keys(context, level_ui);
    }
    if let Some(chooser) = level_ui.chooser {
        draw_chooser(context, chooser, session, simulation, level_ui, intents);
    }
    if level_ui.prompt.is_some() {
        draw_prompt(context, level_ui, tape_lock, intents);
    }
}

fn draw_chooser(
    context: &egui::Context,
    chooser: Chooser,
    session: &Session,
    simulation: &Simulation,
    level_ui: &mut LevelUi,
    intents: &mut Vec<Intent>,
) {
    // Every option: a label, the move, and why it cannot be played (if it cannot).
    let (title, options) = match chooser {
        Chooser::Card(card) => (
            format!("{}: choose the target", card.title()),
            cards::targets(card, simulation)
                .into_iter()
                .map(|(label, play)| (label, play, None))
                .collect::<Vec<_>>(),
        ),
        Chooser::Operator => (
            format!(
                "Operator: what about {}?",
                level_ui.selected_key.as_deref().unwrap_or("the selected call")
            ),
            operator::moves(session, simulation, level_ui),
        ),
    };
    let mut chosen = None;
    let mut close = ui::pressed(context, egui::Key::Escape);
    for (index, digit) in DIGITS.iter().enumerate() {
        if ui::pressed(context, *digit)
            && let Some((_, play, None)) = options.get(index)
        {
            chosen = Some(play.clone());
        }
    }
    let held = level_ui.flash.clone();
    let response = egui::Modal::new(egui::Id::new("chooser")).show(context, |ui| {
        ui.set_width(460.0);
        ui.label(RichText::new(title).size(theme::HEADING).strong().color(theme::CREW));
        if let Chooser::Card(card) = chooser
            && !options.is_empty()
        {
            // Said as the browser says it: the card is chosen, not played, until a target is.
            ui::hint(ui, "Not played yet: pick what it acts on.");
            if let Some(held) = held.as_ref().filter(|held| **held == cards::held_step(card)) {
                ui.label(RichText::new(held).color(theme::WARN));
            }
        }
        if options.is_empty() {
            // Said in this run's terms: the card's own reason (nothing on the wire, every
            // worker down), or the console's.
            let why = match chooser {
                Chooser::Card(card) => twice_world::hand::refusal(card, simulation)
                    .unwrap_or_else(|| format!("{} has nothing to aim at now", card.title())),
                Chooser::Operator => "No move fits the selected call now.".to_owned(),
            };
            ui::hint(ui, &why);
        }
        for (index, (label, play, blocked)) in options.iter().enumerate() {
            ui.horizontal(|ui| {
                ui::key_cap(ui, &(index + 1).to_string());
                let button = ui.add_enabled(blocked.is_none(), egui::Button::new(label.as_str()));
                if let Some(why) = blocked {
                    ui::hint(ui, why.as_str());
                }
                if button.clicked() {
                    chosen = Some(play.clone());
                }
            });
        }
        ui.add_space(4.0);
        if ui.button("Cancel (Esc)").clicked() {
            close = true;
        }
    });
    if response.should_close() {
        match chooser {
            // A click beside a card's chooser is most often the Step or Run button under it:
            // closing would drop the card unplayed, so it stays open and says what to do.
            Chooser::Card(card) if !close => level_ui.flash = Some(cards::held_step(card)),
            _ => close = true,
        }
    }
    if let Some(play) = chosen {
        match chooser {
            Chooser::Card(_) => intents.push(Intent::Play(play)),
            Chooser::Operator => level_ui.pending_play = Some(play),
        }
        close = true;
    }
    if close {
        level_ui.chooser = None;
    }
}

fn draw_prompt(context: &egui::Context, level_ui: &mut LevelUi, tape_lock: TapeLock, intents: &mut Vec<Intent>) {
    let Some(prompt) = level_ui.prompt.as_mut() else {
        return;
    };
    let (title, hint, action) = match prompt.kind {
        PromptKind::SaveTape => (
            "Save the tape of what you did",
            "A tape is the seed and your moves; its expected verdict is this run's. Replay it with `twice-sim replay FILE`.",
            "Save",
        ),
        PromptKind::LoadTape => (
            "Load a tape",
            "Any *.tape.ron file: it opens in the replay viewer.",
            "Open",
        ),
        PromptKind::GoToPhase => (
            "Go to phase",
            "A phase that already happened: the level is re-simulated to it.",
            "Go",
        ),
    };
    let mut submit = false;
    let mut close = false;
    let response = egui::Modal::new(egui::Id::new("prompt")).show(context, |ui| {
        ui.set_width(620.0);
        ui.label(RichText::new(title).size(theme::HEADING).strong().color(theme::CREW));
        ui::hint(ui, hint);
        let field = ui.add(
            egui::TextEdit::singleline(&mut prompt.text)
                .desired_width(600.0)
                .char_limit(4_096),
        );
        if prompt.focus {
            field.request_focus();
            prompt.focus = false;
        }
        if field.lost_focus() && ui.input(|input| input.key_pressed(egui::Key::Enter)) {
            submit = true;
        }
        if ui.input(|input| input.key_pressed(egui::Key::Escape)) {
            close = true;
        }
        ui.horizontal(|ui| {
            if ui::button(ui, true, action, "Enter").clicked() {
                submit = true;
            }
            if ui::button(ui, true, "Cancel", "Esc").clicked() {
                close = true;
            }
        });
    });
    if response.should_close() {
        close = true;
    }
    if submit {
        let text = prompt.text.trim().to_owned();
        match prompt.kind {
            PromptKind::SaveTape => intents.push(Intent::SaveTape {
                path: PathBuf::from(text),
            }),
            // The replay viewer's lock holds here too: a level's tapes show its solution.
            PromptKind::LoadTape => match tape_lock(std::path::Path::new(&text)) {
                Some(why) => level_ui.flash = Some(why),
                None => intents.push(Intent::OpenTape {
                    path: PathBuf::from(text),
                    at_phase: None,
                }),
            },
            PromptKind::GoToPhase => match text.parse::<u32>() {
                Ok(phase) => intents.push(Intent::Rewind { phase }),
                Err(_) => {
                    level_ui.flash = Some(format!("“{text}” is not a phase number"));
                }
            },
        }
        close = true;
    }
    if close {
        level_ui.prompt = None;
    }
}

/// The `?` overlay: every key. Two columns on a wide screen; it scrolls when the screen is
/// short (at a projector), so its first and last rows are never cut off, and its view ends
/// under a whole row ([`whole_lines`]), never through one.
fn draw_keys(context: &egui::Context, level_ui: &mut LevelUi) {
    let screen = context.viewport_rect();
    let two_columns = screen.width() >= 1000.0;
    let width = if two_columns {
        (screen.width() - 80.0).min(1100.0)
    } else {
        (screen.width() - 40.0).min(560.0)
    };
    let rows_room = (screen.height() - 150.0).max(100.0);
    // The modal measures itself in an unseen first frame, within its area's default size
    // (egui's is shorter than the keys): measured short, its first frame seen was centred for
    // a shorter overlay and ran off the screen's foot. The whole screen is its room.
    let id = egui::Id::new("help");
    let area = egui::Modal::default_area(id).default_size(screen.size());
    let response = egui::Modal::new(id).area(area).show(context, |ui| {
        ui.set_width(width);
        ui.label(RichText::new("Keys").size(theme::HEADING).strong().color(theme::CREW));
        let statuses: Vec<String> = Status::ALL.iter().map(|status| theme::status_label(*status)).collect();
        let table = KeyTable::measure(
            ui,
            &shortcuts(),
            if two_columns { 2 } else { 1 },
            format!("Statuses read by glyph and word: {}", statuses.join(" · ")),
        );
        // The view's height from the rows' own sizes, the same in every frame (the first,
        // unseen one too): learned from what the frame before painted, as other views learn
        // theirs, the modal changed height between its first frames and jumped.
        let view = whole_lines::view_height(table.cuts(), rows_room);
        egui::ScrollArea::vertical()
            .max_height(view)
            .show(ui, |ui| table.show(ui));
        ui.horizontal(|ui| {
            if ui.button("Close (Esc)").clicked() {
                level_ui.help = false;
            }
            if ui.button("The glossary (T)").clicked() {
                level_ui.help = false;
                level_ui.glossary = true;
            }
        });
    });
    if response.should_close() {
        level_ui.help = false;
    }
}

/// Keys and what they do, in rows across one or two columns, striped, with a last line under
/// them. Laid out from the words alone, every size computed before anything is placed: the
/// overlay measures itself in an unseen first frame (an egui modal does), and in an egui grid
/// (sized by the frame before) or in rows egui sizes as it goes, that frame's rows came out
/// another height than the next frame's. The overlay was then drawn off-centre and growing,
/// its rows apart, until it settled some frames later: long enough to see under Xvfb's
/// software renderer, whatever the renderer. Measured first, the rows also say where the view
/// may end ([`KeyTable::cuts`]).
struct KeyTable<'a> {
    width: f32,
    /// The first column holds the first half of the keys.
    columns: Vec<KeyColumn<'a>>,
    /// Each row's height: its tallest cell.
    heights: Vec<f32>,
    /// The line under the rows, across the table.
    footer: std::sync::Arc<egui::Galley>,
}

/// One column of the keys table.
struct KeyColumn<'a> {
    /// Its left edge, from the table's.
    left: f32,
    /// Its key caps' width: the widest.
    key_width: f32,
    /// Its rows: a key and its measured words.
    cells: Vec<(&'a str, std::sync::Arc<egui::Galley>)>,
}

const KEY_GAP: f32 = 12.0;
const KEY_ROW_PAD: f32 = 4.0;
const KEY_FOOTER_SPACE: f32 = 6.0;

impl<'a> KeyTable<'a> {
    fn measure(ui: &egui::Ui, keys: &[(&'a str, &'a str)], columns: usize, footer: String) -> KeyTable<'a> {
        let width = ui.available_width();
        let spacing = ui.spacing().item_spacing.x;
        let column_width = (width - spacing * (columns - 1) as f32) / columns as f32;
        let per_column = keys.len().div_ceil(columns).max(1);
        let mut heights = vec![0.0_f32; per_column.min(keys.len())];
        let columns = keys
            .chunks(per_column)
            .enumerate()
            .map(|(column, keys)| {
                let key_width = keys
                    .iter()
                    .map(|(key, _)| ui::key_cap_width(ui, key))
                    .fold(0.0, f32::max);
                let text_width = (column_width - key_width - KEY_GAP).max(40.0);
                let cells = keys
                    .iter()
                    .enumerate()
                    .map(|(row, (key, what))| {
                        let galley = egui::WidgetText::from(*what).into_galley(
                            ui,
                            Some(egui::TextWrapMode::Wrap),
                            text_width,
                            egui::FontSelection::Default,
                        );
                        heights[row] = heights[row].max(galley.size().y.max(ui::KEY_CAP_HEIGHT) + KEY_ROW_PAD);
                        (*key, galley)
                    })
                    .collect();
                KeyColumn {
                    left: column as f32 * (column_width + spacing),
                    key_width,
                    cells,
                }
            })
            .collect();
        let footer = egui::WidgetText::from(RichText::new(footer).size(theme::SMALL).color(theme::TEXT_DIM))
            .into_galley(ui, Some(egui::TextWrapMode::Wrap), width, egui::FontSelection::Default);
        KeyTable {
            width,
            columns,
            heights,
            footer,
        }
    }

    /// Where a view of the table may end: under each row, and under the last line.
    fn cuts(&self) -> Vec<f32> {
        let mut bottom = 0.0;
        let mut cuts: Vec<f32> = self
            .heights
            .iter()
            .map(|height| {
                bottom += height;
                bottom
            })
            .collect();
        cuts.push(bottom + KEY_FOOTER_SPACE + self.footer.size().y);
        cuts
    }

    fn show(&self, ui: &mut egui::Ui) {
        let text_color = ui.visuals().text_color();
        ui.spacing_mut().item_spacing.y = 0.0;
        for (row, height) in self.heights.iter().enumerate() {
            let (rect, _) = ui.allocate_exact_size(egui::vec2(self.width, *height), egui::Sense::hover());
            if row % 2 == 1 {
                ui.painter().rect_filled(rect, 0.0, ui.visuals().faint_bg_color);
            }
            for column in &self.columns {
                let Some((key, galley)) = column.cells.get(row) else {
                    continue;
                };
                let key_width = column.key_width;
                let x = rect.left() + column.left;
                let key_rect = egui::Rect::from_min_size(
                    egui::pos2(x, rect.center().y - ui::KEY_CAP_HEIGHT / 2.0),
                    egui::vec2(key_width, ui::KEY_CAP_HEIGHT),
                );
                // A child placed in the row, not allocated after it: the row holds the place.
                let mut cap = ui.new_child(egui::UiBuilder::new().max_rect(key_rect));
                ui::key_cap(&mut cap, key);
                let text_at = egui::pos2(x + key_width + KEY_GAP, rect.center().y - galley.size().y / 2.0);
                ui.painter().galley(text_at, galley.clone(), text_color);
            }
        }
        let (rect, _) = ui.allocate_exact_size(
            egui::vec2(self.width, KEY_FOOTER_SPACE + self.footer.size().y),
            egui::Sense::hover(),
        );
        ui.painter().galley(
            egui::pos2(rect.left(), rect.top() + KEY_FOOTER_SPACE),
            self.footer.clone(),
            theme::TEXT_DIM,
        );
    }
}
