//! The ledger panel: rows from the real SQLite file, a click for a row's history.
//! Only the visible rows are laid out, so a 10,000-row ledger costs what 20 rows do.

use bevy_egui::egui::{self, Align2, Color32, FontId, RichText, Stroke};
use twice_world::ledger::ExecutionRecord;
use twice_world::ledger::HistoryEntry;
use twice_world::runtime::key::IdempotencyKey;
use twice_world::simulator::Simulation;

use super::LevelUi;
use super::timeline::TimelineCache;
use crate::session::Session;
use crate::ui::{self, theme};

const ROW_HEIGHT: f32 = 18.0;
const KEY_FONT_SIZE: f32 = 12.0;
const CELL_FONT_SIZE: f32 = 12.0;
/// Space between two cells, in points.
const CELL_GAP: f32 = 8.0;
/// The key column's share of the table's width at most: past it a key is cut with "…" (its
/// whole text on hover), so it never runs into the tool column.
const KEY_SHARE_MAX: f32 = 0.42;

/// How wide each cell's widest text is: the key in characters (its glyph width given), the
/// tool, attempts, status and owner in points.
#[derive(Clone, Copy, Debug)]
struct CellWidths {
    glyph_width: f32,
    longest_key: usize,
    tool: f32,
    attempts: f32,
    status: f32,
    owner: f32,
}

/// Where each column starts and how many characters of a key fit its column. Each column is
/// as wide as its widest text; the key column keeps within [`KEY_SHARE_MAX`] of `width` (a
/// longer key is cut), and what is left over goes to the status and owner. When even that does
/// not fit, the key gives way first, down to a fifth of the width.
fn columns(width: f32, cells: CellWidths) -> ([f32; 5], usize) {
    // The key's look (a glyph and a space) comes before it.
    let key_wanted = (cells.longest_key + 2) as f32 * cells.glyph_width + CELL_GAP;
    let others = [cells.tool, cells.attempts, cells.status, cells.owner].map(|cell| cell + CELL_GAP);
    let others_width: f32 = others.iter().sum();
    let key_width = key_wanted
        .min(width * KEY_SHARE_MAX)
        .min(width - others_width)
        .max(width * 0.2);
    let fits = (((key_width - CELL_GAP) / cells.glyph_width).floor() as usize)
        .saturating_sub(2)
        .max(4);
    // Whatever is left is shared by status and owner, whose texts vary the most.
    let spare = (width - key_width - others_width).max(0.0);
    let mut starts = [0.0; 5];
    let mut at = key_width;
    for (index, cell) in others.iter().enumerate().take(4) {
        starts[index + 1] = at;
        at += cell + if index >= 2 { spare / 2.0 } else { 0.0 };
    }
    (starts, fits)
}

/// The widest text of each cell in `rows` (the tools: the level's own; the statuses: every one).
fn cell_widths(ui: &egui::Ui, simulation: &Simulation, rows: &[ExecutionRecord]) -> CellWidths {
    ui.ctx().fonts_mut(|fonts| {
        let mut widest = |texts: &mut dyn Iterator<Item = String>| {
            texts
                .map(|text| {
                    fonts
                        .layout_no_wrap(text, FontId::proportional(CELL_FONT_SIZE), Color32::WHITE)
                        .size()
                        .x
                })
                .fold(0.0_f32, f32::max)
        };
        let tool = widest(&mut simulation.level().tools.iter().map(|tool| tool.name.to_string()));
        let status = widest(
            &mut twice_world::runtime::rules::Status::ALL
                .into_iter()
                .map(theme::status_label),
        );
        // Owners are few and short (w1, op-crew): the first rows say how wide.
        let owner = widest(&mut rows.iter().take(64).map(|row| row.owner.to_string())).max(24.0);
        CellWidths {
            glyph_width: fonts.glyph_width(&FontId::monospace(KEY_FONT_SIZE), '0'),
            longest_key: rows.iter().map(|row| row.key.as_str().len()).max().unwrap_or(0),
            tool,
            attempts: 18.0,
            status,
            owner,
        }
    })
}

/// `key` as its column shows it: whole, or its first characters and "…".
fn key_shown(key: &str, fits: usize) -> String {
    if key.chars().count() <= fits {
        key.to_owned()
    } else {
        let kept: String = key.chars().take(fits.saturating_sub(1)).collect();
        kept + "…"
    }
}

/// The selected row's history, read once per change of selection or simulation.
#[derive(Debug, Default)]
pub struct HistoryCache {
    key: Option<String>,
    generation: u64,
    entries: Vec<HistoryEntry>,
    problem: Option<String>,
}

impl HistoryCache {
    fn refresh(&mut self, key: &str, session: &Session, simulation: &Simulation) {
        if self.key.as_deref() == Some(key) && self.generation == session.generation() {
            return;
        }
        self.key = Some(key.to_owned());
        self.generation = session.generation();
        self.problem = None;
        self.entries.clear();
        match IdempotencyKey::parse(key) {
            Ok(parsed) => match simulation.ledger().history(&parsed) {
                Ok(entries) => self.entries = entries,
                Err(error) => self.problem = Some(error.to_string()),
            },
            Err(error) => self.problem = Some(error.to_string()),
        }
    }
}

/// ↑/↓ move the selection through the rows.
pub fn keyboard(context: &egui::Context, level_ui: &mut LevelUi, session: &Session) {
    let rows = session.ledger().rows();
    if rows.is_empty() {
        return;
    }
    let current = level_ui
        .selected_key
        .as_deref()
        .and_then(|key| rows.iter().position(|row| row.key.as_str() == key));
    let next = if ui::pressed(context, egui::Key::ArrowDown) {
        Some(current.map_or(0, |index| (index + 1).min(rows.len() - 1)))
    } else if ui::pressed(context, egui::Key::ArrowUp) {
        Some(current.map_or(rows.len() - 1, |index| index.saturating_sub(1)))
    } else {
        None
    };
    if let Some(index) = next {
        level_ui.selected_key = Some(rows[index].key.as_str().to_owned());
        level_ui.scroll_to_selected = true;
    }
}

pub fn draw(
    ui: &mut egui::Ui,
    session: &Session,
    simulation: &Simulation,
    level_ui: &mut LevelUi,
    cache: &TimelineCache,
) {
    ui::section(ui, "Ledger · tool_executions", |ui| {
        let view = session.ledger();
        file_line(ui, session);
        if let Some(problem) = &view.problem {
            ui.label(RichText::new(format!("⚠ {problem}")).color(theme::WARN));
        }
        let rows = view.rows();
        let width = ui.available_width();
        let cells = cell_widths(ui, simulation, rows);
        let (columns, key_fits) = columns(width, cells);
        let header = ["key", "tool", "att", "status", "owner"];
        let (rect, _) = ui.allocate_exact_size(egui::vec2(width, 16.0), egui::Sense::hover());
        for (x, text) in columns.iter().zip(header) {
            ui.painter().text(
                egui::pos2(rect.left() + x + 4.0, rect.center().y),
                Align2::LEFT_CENTER,
                text,
                FontId::proportional(11.5),
                theme::TEXT_DIM,
            );
        }
        let history_height = if level_ui.selected_key.is_some() { 118.0 } else { 0.0 };
        let table_height = (ui.available_height() - history_height - 6.0).max(60.0);
        let mut scroll = egui::ScrollArea::vertical()
            .id_salt("ledger-rows")
            .max_height(table_height)
            .auto_shrink([false, false]);
        if level_ui.scroll_to_selected
            && let Some(index) = level_ui
                .selected_key
                .as_deref()
                .and_then(|key| rows.iter().position(|row| row.key.as_str() == key))
        {
            let spacing = ui.spacing().item_spacing.y;
            let offset = (index as f32 * (ROW_HEIGHT + spacing) - table_height / 2.0).max(0.0);
            scroll = scroll.vertical_scroll_offset(offset);
            level_ui.scroll_to_selected = false;
        }
        if rows.is_empty() {
            // Said of this run: a level may switch the ledger off, and then nothing ever is.
            ui::hint(
                ui,
                if simulation.guards().is_on(twice_world::runtime::guards::Guard::Ledger) {
                    "empty: nothing reserved yet"
                } else {
                    "empty: this runtime keeps no ledger (the ledger is off here), so nothing is ever reserved"
                },
            );
        }
        scroll.show_rows(ui, ROW_HEIGHT, rows.len(), |ui, range| {
            for index in range {
                draw_row(ui, &rows[index], index, (&columns, key_fits), level_ui, cache);
            }
        });
        if let Some(key) = level_ui.selected_key.clone() {
            ui.separator();
            level_ui.history.refresh(&key, session, simulation);
            draw_history(
                ui,
                &key,
                &level_ui.history,
                view.row(&key).map(|row| row.result.clone()),
            );
        }
    });
}

/// Where the ledger file is, on one line: the file's name (its whole path on hover) and a
/// button that copies the sqlite3 command to open it while playing. One line, so the rows
/// below keep their room at 1280×720.
fn file_line(ui: &mut egui::Ui, session: &Session) {
    match session.ledger_path() {
        Some(path) => {
            let command = format!("sqlite3 {} 'select * from tool_executions'", path.display());
            ui.horizontal(|ui| {
                if ui
                    .small_button("copy sqlite3")
                    .on_hover_text(format!("copy the command that opens it while you play:\n{command}"))
                    .clicked()
                {
                    ui.ctx().copy_text(command.clone());
                }
                let name = path
                    .file_name()
                    .map_or_else(|| short_path(path), |name| name.to_string_lossy().into_owned());
                ui.add(
                    egui::Label::new(
                        RichText::new(format!("a real SQLite file: {name}"))
                            .size(11.0)
                            .color(theme::TEXT_DIM),
                    )
                    .truncate(),
                )
                .on_hover_text(format!(
                    "the real SQLite file the simulated workers write:\n{}",
                    short_path(path)
                ));
            });
        }
        None => ui::hint(ui, "the ledger is in memory this time (no file could be made)"),
    }
}

/// One row of the table: the key in its look, tool, attempts, status, owner; a click
/// selects it (or lets it go).
fn draw_row(
    ui: &mut egui::Ui,
    record: &ExecutionRecord,
    index: usize,
    (columns, key_fits): (&[f32; 5], usize),
    level_ui: &mut LevelUi,
    cache: &TimelineCache,
) {
    let (rect, response) = ui.allocate_exact_size(egui::vec2(ui.available_width(), ROW_HEIGHT), egui::Sense::click());
    let selected = level_ui.selected_key.as_deref() == Some(record.key.as_str());
    let painter = ui.painter_at(rect);
    if selected {
        painter.rect_filled(rect, 3.0, Color32::from_rgb(60, 74, 104));
        painter.rect_stroke(rect, 3.0, Stroke::new(1.0, theme::TEXT), egui::StrokeKind::Inside);
    } else if response.hovered() {
        painter.rect_filled(rect, 3.0, Color32::from_rgb(44, 50, 64));
    } else if index % 2 == 1 {
        painter.rect_filled(rect, 0.0, Color32::from_rgb(36, 40, 52));
    }
    let look = cache.key_look(record.key.as_str());
    let y = rect.center().y;
    let cell = |column: usize| egui::pos2(rect.left() + columns[column] + 4.0, y);
    let key = record.key.as_str();
    let shown = key_shown(key, key_fits);
    painter.text(
        cell(0),
        Align2::LEFT_CENTER,
        format!("{} {shown}", look.glyph),
        FontId::monospace(KEY_FONT_SIZE),
        look.color,
    );
    painter.text(
        cell(1),
        Align2::LEFT_CENTER,
        &record.tool,
        FontId::proportional(12.0),
        theme::TEXT,
    );
    painter.text(
        cell(2),
        Align2::LEFT_CENTER,
        record.attempts.to_string(),
        FontId::monospace(12.0),
        theme::TEXT,
    );
    painter.text(
        cell(3),
        Align2::LEFT_CENTER,
        theme::status_label(record.status),
        FontId::proportional(12.0),
        theme::status_color(record.status),
    );
    painter.text(
        cell(4),
        Align2::LEFT_CENTER,
        &record.owner,
        FontId::proportional(12.0),
        theme::TEXT_DIM,
    );
    if response.clicked() {
        level_ui.selected_key = if selected {
            None
        } else {
            Some(record.key.as_str().to_owned())
        };
    }
    if shown != key {
        response.on_hover_text(key);
    }
}

/// The selected row's history. Every line wraps inside the panel (a long reason, a result
/// or a detail with no spaces included): a line wider than the panel would widen the panel's
/// contents past the screen's right edge, pushing the ledger and the console off screen.
fn draw_history(ui: &mut egui::Ui, key: &str, history: &HistoryCache, result: Option<Option<String>>) {
    ui.add(egui::Label::new(RichText::new(format!("History of {key}")).strong()).wrap());
    if let Some(Some(result)) = result {
        ui.add(
            egui::Label::new(
                RichText::new(format!("result {result}"))
                    .monospace()
                    .size(11.0)
                    .color(theme::TEXT_DIM),
            )
            .wrap(),
        );
    }
    if let Some(problem) = &history.problem {
        ui.add(egui::Label::new(RichText::new(format!("⚠ {problem}")).color(theme::WARN)).wrap());
    }
    // At most 92 px, and never more than what is left of the ledger's share (a short share,
    // beside a tall console, clipped the history's last lines mid-line).
    let room = (ui.available_height() - 2.0).clamp(18.0, 92.0);
    egui::ScrollArea::vertical()
        .id_salt("ledger-history")
        .max_height(room)
        .auto_shrink([false, true])
        .stick_to_bottom(true)
        .show(ui, |ui| {
            for entry in &history.entries {
                let color = entry.to_status.map_or(theme::TEXT_DIM, theme::status_color);
                let label =
                    ui.add(egui::Label::new(RichText::new(history_line(entry)).size(theme::SMALL).color(color)).wrap());
                if let Some(words) = twice_world::ledger_words::event(entry.event) {
                    label.on_hover_text(words.sentence);
                }
            }
        });
}

/// One history line: when, who, what, the status change, the reason and the detail.
pub fn history_line(entry: &HistoryEntry) -> String {
    let change = match (entry.from_status, entry.to_status) {
        (Some(from), Some(to)) => {
            format!(
                "{} {from} → {} {to}",
                theme::status_glyph(from),
                theme::status_glyph(to)
            )
        }
        (None, Some(to)) => format!("→ {} {to}", theme::status_glyph(to)),
        _ => String::new(),
    };
    // The event in words ("recovered as unknown"), as the browser's history says it; an event
    // this build has no words for keeps the ledger's name rather than saying nothing.
    let event = twice_world::ledger_words::event(entry.event)
        .map_or_else(|| entry.event.to_string(), |words| words.words.to_owned());
    let mut line = format!("{:>5} ms  {}  {event}  {change}", entry.at_ms, entry.actor);
    if let Some(reason) = &entry.reason {
        line.push_str(&format!("  “{reason}”"));
    }
    if let Some(detail) = &entry.detail {
        line.push_str(&format!("  ({detail})"));
    }
    line
}

/// The path with the home folder written as `~`, so the hint fits the panel.
fn short_path(path: &std::path::Path) -> String {
    let text = path.display().to_string();
    match std::env::var("HOME") {
        Ok(home) if !home.is_empty() && text.starts_with(&home) => format!("~{}", &text[home.len()..]),
        _ => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use twice_world::ledger::HistoryEvent;
    use twice_world::runtime::rules::Status;

    /// Lays out the history in a right panel as wide as the level screen's, on a 1280×720
    /// screen, and returns how wide the panel's contents came out.
    fn laid_out_width(history: &HistoryCache, key: &str, result: Option<String>) -> f32 {
        let context = egui::Context::default();
        let mut used_width = 0.0;
        let input = egui::RawInput {
            screen_rect: Some(egui::Rect::from_min_size(egui::Pos2::ZERO, egui::vec2(1280.0, 720.0))),
            ..Default::default()
        };
        let mut output = context.run_ui(input, |root| {
            egui::Panel::right("right")
                .exact_size(PANEL_WIDTH)
                .resizable(false)
                .show(root, |ui| {
                    ui::section(ui, "Ledger", |ui| draw_history(ui, key, history, Some(result.clone())));
                    used_width = ui.min_rect().width();
                });
        });
        // Nothing draws these textures here: say so, or egui's debug check objects.
        output.textures_delta.clear();
        used_width
    }

    const PANEL_WIDTH: f32 = 410.0;

    #[test]
    fn the_key_column_fits_the_longest_key_or_cuts_it_before_the_tool_column() {
        let cells = |longest_key| CellWidths {
            glyph_width: 7.2,
            longest_key,
            tool: 85.0,
            attempts: 18.0,
            status: 96.0,
            owner: 24.0,
        };
        // A hashed key (18 characters, its look before it) and the other cells' widest texts,
        // each with its gap, need 407 points: in a table that wide the key is whole, and each
        // column starts after the one before it has its widest text.
        let widths = [85.0, 18.0, 96.0];
        let (starts, fits) = columns(PANEL_WIDTH, cells(18));
        assert!(fits >= 18, "{fits}");
        assert!(starts[1] >= 20.0 * 7.2, "{starts:?}");
        for (index, width) in widths.iter().enumerate() {
            assert!(starts[index + 2] - starts[index + 1] >= *width, "{starts:?}");
        }
        // A little narrower, the key gives way first: cut to what its column holds, while the
        // other columns keep their widest texts.
        let (starts, fits) = columns(398.0, cells(18));
        assert!(fits < 18, "{fits}");
        assert!(((fits + 2) as f32 * 7.2) <= starts[1], "{fits} {starts:?}");
        for (index, width) in widths.iter().enumerate() {
            assert!(starts[index + 2] - starts[index + 1] >= *width, "{starts:?}");
        }
        // Per-call keys leave the other columns more room.
        let (short, _) = columns(398.0, cells(5));
        assert!(short[1] < starts[1]);
        // A key too long for its share is cut, never wider than its column.
        let (starts, fits) = columns(300.0, cells(60));
        assert!(fits < 60);
        assert!(((fits + 2) as f32 * 7.2) <= starts[1], "{fits} {starts:?}");
        assert_eq!(key_shown("h:0123456789abcdef", 10), "h:0123456…");
        assert_eq!(key_shown("r1:c2", 10), "r1:c2");
    }

    #[test]
    fn a_long_history_line_wraps_inside_the_panel_instead_of_widening_it() {
        let key = IdempotencyKey::parse("r1:issue_credit:0").expect("a key");
        let entry = |reason: Option<String>, detail: Option<String>| HistoryEntry {
            id: 1,
            key: key.clone(),
            at_ms: 120,
            actor: "op-ada".into(),
            event: HistoryEvent::Resolved,
            from_status: Some(Status::Indeterminate),
            to_status: Some(Status::Completed),
            reason,
            detail,
        };
        let short = HistoryCache {
            key: Some(key.as_str().to_owned()),
            entries: vec![entry(Some("checked billing".into()), None)],
            ..Default::default()
        };
        let short_width = laid_out_width(&short, key.as_str(), None);
        assert!(short_width <= PANEL_WIDTH, "a short line fits: {short_width}");
        let long = HistoryCache {
            key: Some(key.as_str().to_owned()),
            entries: vec![entry(
                Some("checked billing by hand and found the credit there, ".repeat(6)),
                Some("x".repeat(400)),
            )],
            problem: Some("y".repeat(300)),
            ..Default::default()
        };
        let long_result = format!("{{\"applied\":{{\"credit_id\":\"{}\"}}}}", "c".repeat(300));
        let long_width = laid_out_width(&long, &"k".repeat(200), Some(long_result));
        assert!(
            long_width <= PANEL_WIDTH,
            "the history of a long line must stay inside the {PANEL_WIDTH} px panel, it took {long_width} px"
        );
    }

    #[test]
    fn every_history_line_says_its_event_in_words_not_the_ledgers_name() {
        let key = IdempotencyKey::parse("r1:issue_credit:0").expect("a key");
        for event in HistoryEvent::ALL {
            let line = history_line(&HistoryEntry {
                id: 1,
                key: key.clone(),
                at_ms: 120,
                actor: "w2".into(),
                event,
                from_status: None,
                to_status: None,
                reason: None,
                detail: None,
            });
            let words = twice_world::ledger_words::event(event)
                .expect("every event has words")
                .words;
            assert!(line.contains(words), "{event:?}: {line}");
            // Names of more than one word are written with underscores: none may show.
            assert!(!line.contains('_'), "{event:?} shows the ledger's name: {line}");
        }
    }
}
