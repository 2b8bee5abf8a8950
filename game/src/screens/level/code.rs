//! The code view of the level screen: the runtime's loop as this level runs it, a cursor per
//! worker on its line, Penny's tools as declared, and beside them what the model decided, what
//! is on the wire and what billing did. Every line, cursor and word comes from
//! [`twice_world::code`]; this file only draws them. Clicking a line aims a crash there ("kill
//! w1 when it reaches this line"), sent as an [`Intent::AimCrash`].

use bevy_egui::egui::{self, Color32, RichText};
use twice_world::code::{self, CodeView, Cursor, CursorState, Line, WorkerLook};
use twice_world::level::CardKind;
use twice_world::simulator::{Direction, Simulation};

use super::LevelUi;
use crate::session::{Intent, Mode, Session};
use crate::ui::{self, theme, whole_lines};

/// The code's font size, in points: 30 lines fit a 1280×720 screen's centre with the hand.
pub const CODE_SIZE: f32 = 12.5;
/// Below this width the words beside the code go above it, in a row.
const BESIDE_COLUMN_WIDTH_MIN: f32 = 760.0;
const BESIDE_WIDTH: f32 = 210.0;
/// A cursor tag's width in the gutter (`▶ w1`).
const TAG_WIDTH: f32 = 40.0;
/// One line's height: the code's size and a little air, so 18 lines fit a 1280×720 centre.
const ROW_HEIGHT: f32 = CODE_SIZE + 4.5;
/// Below this height (a projector's short screen) the cursors and the words beside the code
/// share one row: in rows of their own (three of them) they left the code no whole line.
const COMPACT_HEIGHT_MAX: f32 = 200.0;

/// A worker's colour on screen.
pub fn worker_color(look: WorkerLook) -> Color32 {
    let [red, green, blue] = look.rgb;
    Color32::from_rgb(red, green, blue)
}

/// The mark of a guard's line: its own line in green, the naive one it replaces in red.
pub fn mark_color(on: bool) -> Color32 {
    if on { theme::GOOD } else { theme::BAD }
}

/// The code view, `height` points tall: the loop and the tools scrolling under what the model,
/// the wire and billing did (beside them on a wide centre, in a row above on a narrow one).
pub fn draw(
    ui: &mut egui::Ui,
    session: &Session,
    simulation: &Simulation,
    level_ui: &mut LevelUi,
    height: f32,
    intents: &mut Vec<Intent>,
) {
    let view = code::view(simulation);
    let aims = session.crash_aims().lines_in(&view.program);
    let wide = ui.available_width() >= BESIDE_COLUMN_WIDTH_MIN;
    let compact = !wide && height < COMPACT_HEIGHT_MAX;
    let frame = egui::Frame::new()
        .fill(theme::PANEL)
        .stroke(egui::Stroke::new(1.0, theme::PANEL_BORDER))
        .corner_radius(6)
        .inner_margin(egui::Margin::same(6));
    frame.show(ui, |ui| {
        ui.set_width(ui.available_width());
        ui.set_height(height - 14.0);
        if wide {
            ui.horizontal_top(|ui| {
                let code_width = ui.available_width() - BESIDE_WIDTH - 8.0;
                ui.vertical(|ui| {
                    ui.set_width(code_width);
                    cursor_row(ui, &view.cursors, level_ui);
                    lines(ui, session, simulation, &view, &aims, level_ui, intents);
                });
                ui.separator();
                ui.vertical(|ui| {
                    ui.set_width(BESIDE_WIDTH);
                    beside_column(ui, simulation, &view);
                });
            });
        } else if compact {
            compact_row(ui, simulation, &view, level_ui);
            lines(ui, session, simulation, &view, &aims, level_ui, intents);
        } else {
            beside_rows(ui, simulation, &view);
            cursor_row(ui, &view.cursors, level_ui);
            lines(ui, session, simulation, &view, &aims, level_ui, intents);
        }
    });
}

/// The hint beside the view's tab: what the code is, and what a click on a line does.
pub(super) fn hint(session: &Session, simulation: &Simulation) -> &'static str {
    let crash_in_hand = simulation
        .hand()
        .get(&CardKind::CrashWorker)
        .is_some_and(|left| *left > 0);
    if session.mode != Mode::Replay && crash_in_hand && !simulation.is_over() {
        "a cursor per worker · click a line to kill a worker when it gets there"
    } else {
        "a cursor per worker · ✔ a guard's line, ✖ the naive line it replaces"
    }
}

/// The loop with its cursors, then the tools; the view follows the first live cursor.
fn lines(
    ui: &mut egui::Ui,
    session: &Session,
    simulation: &Simulation,
    view: &CodeView,
    aims: &[(u32, usize)],
    level_ui: &mut LevelUi,
    intents: &mut Vec<Intent>,
) {
    let aiming = session.mode != Mode::Replay
        && !simulation.is_over()
        && simulation
            .hand()
            .get(&CardKind::CrashWorker)
            .is_some_and(|left| *left > 0);
    let live: Vec<&Cursor> = view
        .cursors
        .iter()
        .filter(|cursor| cursor.state == CursorState::Live)
        .collect();
    let tags_max = (0..view.program.lines.len())
        .map(|index| {
            view.cursors.iter().filter(|cursor| cursor.line == Some(index)).count()
                + aims.iter().filter(|(_, line)| *line == index).count()
        })
        .max()
        .unwrap_or(0)
        .max(1);
    let gutter = TAG_WIDTH * tags_max as f32;
    let follow = live.first().and_then(|cursor| cursor.line);
    let scroll_to = level_ui
        .code_jump
        .take()
        .or_else(|| (level_ui.code_follow != follow).then_some(follow).flatten());
    level_ui.code_follow = follow;
    // Its foot on a whole line (a half line at the foot was one no one could read).
    let id = egui::Id::new("code-lines");
    whole_lines::scroll(ui, egui::ScrollArea::vertical().auto_shrink(false), id, |ui| {
        ui.spacing_mut().item_spacing.y = 0.0;
        for (index, line) in view.program.lines.iter().enumerate() {
            let row = code_row(ui, index, line, &view.cursors, aims, gutter, aiming);
            if scroll_to == Some(index) {
                ui.scroll_to_rect(row.rect, Some(egui::Align::Center));
            }
            if aiming && row.clicked() && !line.phases.is_empty() {
                match live.as_slice() {
                    // One worker: the click is the aim ("kill w1 when it reaches this line");
                    // the same line clicked again takes it back.
                    [only] => intents.push(Intent::AimCrash {
                        worker: only.worker,
                        line: index,
                    }),
                    _ => level_ui.code_aim_line = (level_ui.code_aim_line != Some(index)).then_some(index),
                }
            }
            if level_ui.code_aim_line == Some(index) {
                aim_choices(ui, index, &live, aims, gutter, level_ui, intents);
            }
        }
        ui.add_space(8.0);
        ui.label(
            RichText::new("Penny's tools, as declared")
                .strong()
                .color(theme::TEXT_DIM),
        );
        for tool_line in &view.tools {
            let color = if tool_line.comment {
                theme::TEXT_FAINT
            } else {
                theme::TEXT
            };
            ui.label(RichText::new(&tool_line.text).monospace().size(CODE_SIZE).color(color));
        }
    });
}

/// The id of line `index`'s row (one code view is drawn at a time): what a click lands on.
pub fn line_id(index: usize) -> egui::Id {
    egui::Id::new(("code-line", index))
}

/// One line: the cursors on it, its number, its guard's mark, its code. Clickable.
fn code_row(
    ui: &mut egui::Ui,
    index: usize,
    line: &Line,
    cursors: &[Cursor],
    aims: &[(u32, usize)],
    gutter: f32,
    aiming: bool,
) -> egui::Response {
    let here: Vec<&Cursor> = cursors.iter().filter(|cursor| cursor.line == Some(index)).collect();
    let lit = here.iter().find(|cursor| cursor.state == CursorState::Live);
    let row_size = egui::vec2(ui.available_width(), ROW_HEIGHT);
    let inner = ui.allocate_ui_with_layout(row_size, egui::Layout::left_to_right(egui::Align::Center), |ui| {
        ui.set_min_size(row_size);
        ui.spacing_mut().item_spacing.x = 4.0;
        let (tags, _) = ui.allocate_exact_size(egui::vec2(gutter, ROW_HEIGHT), egui::Sense::hover());
        let mut x = tags.left();
        for cursor in &here {
            let color = worker_color(cursor.look);
            let mut tag = RichText::new(cursor.tag()).monospace().size(CODE_SIZE).strong();
            tag = match cursor.state {
                CursorState::Live => tag.color(color),
                CursorState::Crashed => tag.color(color).strikethrough(),
                CursorState::Done => tag.color(theme::TEXT_FAINT),
            };
            let galley = egui::WidgetText::from(tag).into_galley(ui, None, TAG_WIDTH, egui::TextStyle::Monospace);
            ui.painter().galley(egui::pos2(x, tags.top() + 1.0), galley, color);
            x += TAG_WIDTH;
        }
        for (worker, _) in aims.iter().filter(|(_, line)| *line == index) {
            let tag = RichText::new(format!("☠ w{worker}"))
                .monospace()
                .size(CODE_SIZE)
                .color(theme::CREW);
            let galley = egui::WidgetText::from(tag).into_galley(ui, None, TAG_WIDTH, egui::TextStyle::Monospace);
            ui.painter()
                .galley(egui::pos2(x, tags.top() + 1.0), galley, theme::CREW);
            x += TAG_WIDTH;
        }
        ui.label(
            RichText::new(format!("{:>2}", index + 1))
                .monospace()
                .size(CODE_SIZE)
                .color(theme::TEXT_FAINT),
        );
        match line.guard {
            Some(mark) => ui.label(
                RichText::new(mark.glyph().to_string())
                    .monospace()
                    .size(CODE_SIZE)
                    .color(mark_color(mark.on)),
            ),
            None => ui.label(RichText::new(" ").monospace().size(CODE_SIZE)),
        };
        let color = match line.guard {
            _ if line.code.is_empty() => theme::TEXT_DIM,
            Some(mark) if !mark.on => Color32::from_rgb(240, 150, 140),
            _ => theme::TEXT,
        };
        let mut text = RichText::new(line.shown()).monospace().size(CODE_SIZE).color(color);
        if line.code.is_empty() {
            text = text.italics();
        }
        ui.add(egui::Label::new(text).truncate());
    });
    let rect = inner.response.rect;
    if let Some(cursor) = lit {
        ui.painter()
            .rect_filled(rect, 2.0, worker_color(cursor.look).gamma_multiply(0.14));
    }
    let sense = if aiming && !line.phases.is_empty() {
        egui::Sense::click()
    } else {
        egui::Sense::hover()
    };
    let mut response = ui.interact(rect, line_id(index), sense);
    let mut hover = line.hover().unwrap_or_default();
    if !here.is_empty() {
        let at: Vec<String> = here
            .iter()
            .map(|cursor| format!("{} {}: {}", cursor.label, cursor.state.word(), cursor.moment))
            .collect();
        hover = [hover, at.join("\n")].join("\n").trim().to_owned();
    }
    if aiming && !line.phases.is_empty() {
        hover = [
            hover,
            "click: kill a worker when it reaches this line (again: take it back)".to_owned(),
        ]
        .join("\n")
        .trim()
        .to_owned();
    }
    if !hover.is_empty() {
        response = response.on_hover_text(hover);
    }
    response
}

/// Under a clicked line: one button per live worker, "kill w1 when it reaches line 12".
fn aim_choices(
    ui: &mut egui::Ui,
    index: usize,
    live: &[&Cursor],
    aims: &[(u32, usize)],
    gutter: f32,
    level_ui: &mut LevelUi,
    intents: &mut Vec<Intent>,
) {
    ui.horizontal(|ui| {
        ui.add_space(gutter + 30.0);
        if live.is_empty() {
            ui::hint(ui, "no worker is running");
        }
        for cursor in live {
            let aimed = aims.contains(&(cursor.worker, index));
            let words = if aimed {
                format!("take back: kill {} at line {}", cursor.label, index + 1)
            } else {
                format!("kill {} when it reaches line {}", cursor.label, index + 1)
            };
            let button = egui::Button::new(RichText::new(words).size(theme::SMALL).color(theme::CREW))
                .stroke(egui::Stroke::new(1.0, worker_color(cursor.look)));
            if ui.add(button).clicked() {
                intents.push(Intent::AimCrash {
                    worker: cursor.worker,
                    line: index,
                });
                level_ui.code_aim_line = None;
            }
        }
        if ui.small_button("cancel").clicked() {
            level_ui.code_aim_line = None;
        }
    });
}

/// What is on the wire now, in a few words each.
fn wire_words(simulation: &Simulation) -> Vec<String> {
    simulation
        .messages()
        .map(|message| {
            let arrow = match message.direction {
                Direction::Request => format!("w{} → billing", message.worker),
                Direction::Response => format!("billing → w{}", message.worker),
            };
            let fate = if message.lost {
                " · will be lost"
            } else if message.slowed {
                " · slowed"
            } else {
                ""
            };
            format!("{arrow} {}{fate}", message.key)
        })
        .collect()
}

/// The things beside the code, each as (heading, colour, words).
fn beside_parts(simulation: &Simulation, view: &CodeView) -> Vec<(&'static str, Color32, String)> {
    let said = |said: &Option<code::Said>| {
        said.as_ref().map_or_else(
            || "nothing yet".to_owned(),
            |said| format!("{} (phase {})", said.text, said.phase),
        )
    };
    let wire = wire_words(simulation);
    let mut parts = vec![
        ("the model decided", theme::RUNTIME, said(&view.beside.model)),
        (
            "on the wire",
            theme::TEXT_DIM,
            if wire.is_empty() {
                "nothing".to_owned()
            } else {
                wire.join(" · ")
            },
        ),
        ("billing did", theme::MONEY, said(&view.beside.billing)),
    ];
    if view.beside.operator.is_some() {
        parts.push((
            "an operator decided",
            theme::SCRIPTED_OPERATOR,
            said(&view.beside.operator),
        ));
    }
    parts
}

/// Beside the code, in a column: each part under its heading, wrapped.
fn beside_column(ui: &mut egui::Ui, simulation: &Simulation, view: &CodeView) {
    for (heading, color, words) in beside_parts(simulation, view) {
        ui.label(RichText::new(heading).size(theme::SMALL).strong().color(color));
        ui.label(RichText::new(words).size(theme::SMALL).color(theme::TEXT));
        ui.add_space(4.0);
    }
}

/// On a short screen: the cursors, then the words beside the code, in one row, each part cut
/// to its share and whole on hover.
fn compact_row(ui: &mut egui::Ui, simulation: &Simulation, view: &CodeView, level_ui: &mut LevelUi) {
    ui.horizontal(|ui| {
        cursor_chips(ui, &view.cursors, level_ui);
        let parts = beside_parts(simulation, view);
        let share = (ui.available_width() / parts.len() as f32 - 6.0).max(40.0);
        for (heading, color, words) in &parts {
            beside_part(ui, share, heading, *color, words);
        }
    });
}

/// Beside the code, above it: two parts a row, each cut to its share, whole on hover.
fn beside_rows(ui: &mut egui::Ui, simulation: &Simulation, view: &CodeView) {
    let parts = beside_parts(simulation, view);
    let share = ui.available_width() / 2.0 - 6.0;
    for pair in parts.chunks(2) {
        ui.horizontal(|ui| {
            for (heading, color, words) in pair {
                beside_part(ui, share, heading, *color, words);
            }
        });
    }
}

/// One part beside the code, "heading: words", cut to `share` points, whole on hover.
fn beside_part(ui: &mut egui::Ui, share: f32, heading: &str, color: Color32, words: &str) {
    ui.allocate_ui(egui::vec2(share, 16.0), |ui| {
        let font = egui::FontId::proportional(theme::SMALL);
        let mut job = egui::text::LayoutJob::default();
        job.append(
            &format!("{heading}: "),
            0.0,
            egui::TextFormat::simple(font.clone(), color),
        );
        job.append(words, 0.0, egui::TextFormat::simple(font, theme::TEXT));
        ui.add(egui::Label::new(job).truncate())
            .on_hover_text(format!("{heading}: {words}"));
    });
}

/// Every worker's cursor in a row, with the line it is on: a click brings that line into view
/// (the view follows the first running worker by itself).
fn cursor_row(ui: &mut egui::Ui, cursors: &[Cursor], level_ui: &mut LevelUi) {
    if cursors.is_empty() {
        return;
    }
    ui.horizontal_wrapped(|ui| cursor_chips(ui, cursors, level_ui));
}

/// Each worker's cursor and its line, a chip each; a click brings that line into view.
fn cursor_chips(ui: &mut egui::Ui, cursors: &[Cursor], level_ui: &mut LevelUi) {
    let spacing = ui.spacing().item_spacing.x;
    ui.spacing_mut().item_spacing.x = 10.0;
    for cursor in cursors {
        let line = cursor
            .line
            .map_or_else(|| "no line".to_owned(), |line| format!("line {}", line + 1));
        let mut text = RichText::new(format!("{} {line}", cursor.tag()))
            .monospace()
            .size(theme::SMALL);
        text = match cursor.state {
            CursorState::Live => text.color(worker_color(cursor.look)).strong(),
            CursorState::Crashed => text.color(worker_color(cursor.look)).strikethrough(),
            CursorState::Done => text.color(theme::TEXT_FAINT),
        };
        let chip = ui
            .add(egui::Label::new(text).sense(egui::Sense::click()))
            .on_hover_text(format!("{} {}: {}", cursor.label, cursor.state.word(), cursor.moment));
        if chip.clicked() {
            level_ui.code_jump = cursor.line;
        }
    }
    ui.spacing_mut().item_spacing.x = spacing;
}
