//! The timeline as a sequence diagram: one lane per actor, time running down, one colour
//! and one glyph per idempotency key, and an arrow wherever a key moves between actors.

use std::collections::HashMap;
use std::sync::Arc;

use bevy::prelude::*;
use bevy_egui::egui::{self, Align2, Color32, FontId, Stroke};
use twice_world::checker::{MoneyWrong, RowTelling};
use twice_world::debrief::Debrief;
use twice_world::runtime::key::fnv1a64;
use twice_world::simulator::{Actor, Simulation, TimelineEntry};

use crate::ui::theme::{self, KeyLook};
use crate::ui::whole_lines;

/// Row height of the diagram, without spacing.
const ROW_HEIGHT: f32 = 19.0;
const LANE_WIDTH: f32 = 46.0;

/// What the diagram needs beyond the entries, worked out once per new entry (not per frame).
#[derive(Component, Debug, Default)]
pub struct TimelineCache {
    /// Entries already scanned.
    scanned: usize,
    /// The first entry's text, to notice a different history (a rewind that changed the past).
    first: Option<String>,
    lane_names: Vec<Actor>,
    lane_ids: HashMap<Actor, usize>,
    /// Lane id → column, in the canonical actor order.
    columns: Vec<usize>,
    /// Per entry: its lane id, and the lane id the same key was last seen in.
    entry_lane: Vec<usize>,
    arrow_from: Vec<Option<usize>>,
    key_index: HashMap<String, usize>,
    last_lane_of_key: HashMap<String, usize>,
    /// The level's scripted operators (op-honest, op-audit), who act against the player:
    /// drawn in a colour of their own, never in the player's.
    scripted_operators: Vec<String>,
    /// How the finished run ended (as written, while it goes on): a guard's row is drawn as
    /// holding only while nobody is owed or paid twice and the debrief tells it as holding
    /// (`TimelineEntry::guard_row`).
    telling: RowTelling,
    /// The history length and end the money was judged for: judged once per change.
    judged: Option<(usize, bool)>,
}

impl TimelineCache {
    /// Scans the entries added since the last frame.
    pub fn update(&mut self, simulation: &Simulation) {
        let entries = simulation.timeline();
        let first = entries.first().map(|entry| entry.text.clone());
        if entries.len() < self.scanned || first != self.first {
            *self = TimelineCache::default();
            self.first = first;
        }
        let level = simulation.level();
        self.scripted_operators = level
            .honest_operator
            .iter()
            .map(|honest| honest.name.clone())
            .chain(level.auditor.iter().map(|auditor| auditor.name.clone()))
            .collect();
        let over = simulation.is_over();
        if self.judged != Some((entries.len(), over)) {
            self.judged = Some((entries.len(), over));
            // A ledger that cannot be read is judged by nobody (the debrief says why); the
            // rows keep what they said at the moment they were written.
            self.telling.money = if over {
                simulation
                    .verdict()
                    .map(|verdict| verdict.money_wrong())
                    .unwrap_or_default()
            } else {
                MoneyWrong::default()
            };
        }
        if self.scanned == entries.len() {
            return;
        }
        let mut new_lane = false;
        for entry in &entries[self.scanned..] {
            let lane = match self.lane_ids.get(&entry.actor) {
                Some(lane) => *lane,
                None => {
                    let lane = self.lane_names.len();
                    self.lane_names.push(entry.actor.clone());
                    self.lane_ids.insert(entry.actor.clone(), lane);
                    new_lane = true;
                    lane
                }
            };
            self.entry_lane.push(lane);
            let last = entry.key.as_ref().and_then(|key| {
                let next = self.key_index.len();
                self.key_index.entry(key.clone()).or_insert(next);
                self.last_lane_of_key.insert(key.clone(), lane)
            });
            // An answer comes from billing, whichever lane its key was drawn in last.
            let from = entry
                .arrow_from()
                .and_then(|origin| self.lane_ids.get(&origin).copied())
                .or(last)
                .filter(|previous| *previous != lane);
            self.arrow_from.push(from);
        }
        self.scanned = entries.len();
        if new_lane {
            let mut order: Vec<usize> = (0..self.lane_names.len()).collect();
            order.sort_by(|left, right| {
                self.lane_names[*left]
                    .lane_order()
                    .cmp(&self.lane_names[*right].lane_order())
            });
            self.columns = vec![0; order.len()];
            for (column, lane) in order.into_iter().enumerate() {
                self.columns[lane] = column;
            }
        }
    }

    /// The finished run's debrief, where there is one (the level and debrief screens): the
    /// guards it tells as not holding are not drawn as holding on the timeline either.
    pub fn tell_by(&mut self, debrief: Option<&Debrief>) {
        self.telling.not_holding = debrief.map(Debrief::guards_not_holding).unwrap_or_default();
    }

    /// A key's colour and glyph: by order of first appearance, stable for the whole level.
    pub fn key_look(&self, key: &str) -> KeyLook {
        match self.key_index.get(key) {
            Some(index) => theme::key_look(*index),
            // Keys the timeline has not shown (such as the benchmark's rows) still get a stable look.
            None => theme::key_look(fnv1a64(&[key.as_bytes()]) as usize % 64),
        }
    }

    fn lanes_in_order(&self) -> Vec<&Actor> {
        let mut lanes: Vec<(usize, &Actor)> = self
            .lane_names
            .iter()
            .enumerate()
            .map(|(lane, actor)| (self.columns[lane], actor))
            .collect();
        lanes.sort_by_key(|(column, _)| *column);
        lanes.into_iter().map(|(_, actor)| actor).collect()
    }

    /// The actor is the player (a card, or an operator at the player's console), not the
    /// system and not the level's scripted operator.
    pub fn is_player(&self, actor: &Actor) -> bool {
        actor.is_player() && !self.is_scripted(actor)
    }

    fn is_scripted(&self, actor: &Actor) -> bool {
        matches!(actor, Actor::Operator(name) if self.scripted_operators.contains(name))
    }

    /// The actor's colour ([`actor_color`]), the level's scripted operator in their own.
    pub fn actor_color(&self, actor: &Actor) -> Color32 {
        if self.is_scripted(actor) {
            theme::SCRIPTED_OPERATOR
        } else {
            actor_color(actor)
        }
    }
}

/// Crew and operators in the player's gold, the runtime in teal, the wire and the money in
/// their own colours: by the actor's kind, never by the spelling of its name. (A level's
/// scripted operator is told apart by the level, in [`TimelineCache::actor_color`].)
pub fn actor_color(actor: &Actor) -> Color32 {
    match actor {
        Actor::Crew | Actor::Operator(_) => theme::CREW,
        Actor::Supervisor | Actor::Simulation => theme::TEXT_DIM,
        Actor::Worker(_) | Actor::Model => theme::RUNTIME,
        Actor::Network => theme::INFO,
        Actor::Billing => theme::MONEY,
    }
}

/// How the diagram lays out a row whose text is longer than its column.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RowText {
    /// One line per row, cut with "…" at the column's edge (the whole text on hover): the
    /// level screen, whose timeline may hold thousands of rows and lays out only those shown.
    Truncate,
    /// Rows wrap onto as many lines as their text needs: the debrief, read at leisure. Past
    /// [`WRAPPED_ROWS_MAX`] entries it falls back to [`RowText::Truncate`].
    Wrap,
}

/// The most rows laid out whole in [`RowText::Wrap`] (every row is laid out every frame).
pub const WRAPPED_ROWS_MAX: usize = 2_000;
/// Narrowest a lane gets before the lanes take more than their share of the width.
const LANE_WIDTH_MIN: f32 = 30.0;
/// The lanes' share of the diagram's width at most: the text column keeps the rest.
const LANES_SHARE_MAX: f32 = 0.4;
/// Width of the "phase time" cells between the lanes and the text.
const PHASE_TIME_WIDTH: f32 = 96.0;
const ROW_FONT_SIZE: f32 = 12.5;
const HEADER_FONT_SIZE: f32 = 11.5;

/// The least width the rows' text keeps: the lanes narrow past their minimum before it goes.
const TEXT_WIDTH_MIN: f32 = 160.0;
/// The narrowest a lane gets to leave the text its least width (a narrow debrief at a projector).
const LANE_WIDTH_SQUEEZED: f32 = 12.0;

/// How wide each lane is, given how many there are and the width available: their share of
/// the width within their bounds, narrower still (to [`LANE_WIDTH_SQUEEZED`]) where the
/// rows' text would otherwise have less than [`TEXT_WIDTH_MIN`].
pub fn lane_width(lanes: usize, available_width: f32) -> f32 {
    let lanes = lanes.max(1) as f32;
    let share = (available_width * LANES_SHARE_MAX / lanes).clamp(LANE_WIDTH_MIN, LANE_WIDTH);
    let leaves_text_its_room = (available_width - 8.0 - PHASE_TIME_WIDTH - TEXT_WIDTH_MIN) / lanes;
    share.min(leaves_text_its_room.max(LANE_WIDTH_SQUEEZED))
}

mod header;

pub use header::{LaneHeader, UPRIGHT_NAME_WIDTH_MAX, lane_header, lane_name};

/// Where the diagram's columns are: the lanes, then phase and time, then the text.
#[derive(Clone, Copy, Debug)]
struct Geometry {
    lane_width: f32,
    lanes_width: f32,
    text_width: f32,
    row_text: RowText,
    interactive: bool,
}

/// Draws the diagram. When `interactive`, a double-click on a row asks to rewind to just after it.
pub fn draw(
    ui: &mut egui::Ui,
    entries: &[TimelineEntry],
    cache: &TimelineCache,
    interactive: bool,
    row_text: RowText,
    id: &str,
) -> Option<u32> {
    let mut rewind = None;
    let lanes = cache.lanes_in_order();
    let row_text = if entries.len() > WRAPPED_ROWS_MAX {
        RowText::Truncate
    } else {
        row_text
    };
    egui::Frame::new()
        .fill(theme::PANEL)
        .stroke(Stroke::new(1.0, theme::PANEL_BORDER))
        .corner_radius(6)
        .inner_margin(egui::Margin::same(6))
        .show(ui, |ui| {
            ui.set_width(ui.available_width());
            // The heading shares the lanes' header strip (on its right): its own line would
            // cost a row.
            // The scroll bar takes its width from the rows, not the header: keep them aligned.
            let rows_width = ui.available_width() - ui.spacing().scroll.allocated_width();
            let lane_width = lane_width(lanes.len(), rows_width);
            let lanes_width = lane_width * lanes.len().max(1) as f32;
            let geometry = Geometry {
                lane_width,
                lanes_width,
                text_width: (rows_width - lanes_width - 8.0 - PHASE_TIME_WIDTH - 4.0).max(40.0),
                row_text,
                interactive,
            };
            header::draw_lane_header(ui, &lanes, cache, geometry);
            // Rows one under the other, a point apart: the panel's height is rows, not gaps.
            ui.spacing_mut().item_spacing.y = 1.0;
            // A short panel (a projector) gets as many rows as fit: the scroll area's default
            // least height (64) made the timeline taller than its panel.
            let scroll = egui::ScrollArea::vertical()
                .id_salt(id)
                .min_scrolled_height(ROW_HEIGHT)
                .auto_shrink(false)
                .stick_to_bottom(true);
            match row_text {
                RowText::Truncate => {
                    let spacing = ui.spacing().item_spacing.y;
                    let available = ui.available_height();
                    let view = whole_rows_height(entries.len(), spacing, available);
                    scroll
                        .max_height(view)
                        .show_rows(ui, ROW_HEIGHT, entries.len(), |ui, range| {
                            for index in range {
                                let galley = layout_row(ui, &entries[index], cache, geometry);
                                rewind = draw_row(ui, entries, index, galley, cache, geometry).or(rewind);
                            }
                        });
                    // The panel keeps its height: the blank under the last row, less than a row.
                    ui.add_space((available - view - spacing).max(0.0));
                }
                RowText::Wrap => {
                    let galleys: Vec<_> = entries
                        .iter()
                        .map(|entry| layout_row(ui, entry, cache, geometry))
                        .collect();
                    let heights: Vec<f32> = galleys.iter().map(|galley| row_height(galley)).collect();
                    let viewport = ui.available_height() - ui.spacing().scroll.content_margin.sum().y;
                    let pad = bottom_pad(&heights, ui.spacing().item_spacing.y, viewport);
                    scroll.show(ui, |ui| {
                        for (index, galley) in galleys.into_iter().enumerate() {
                            rewind = draw_row(ui, entries, index, galley, cache, geometry).or(rewind);
                        }
                        ui.add_space(pad);
                    });
                }
            }
        });
    rewind
}

/// A row's height: its text's lines, at least one row.
fn row_height(galley: &egui::Galley) -> f32 {
    (galley.size().y + 4.0).max(ROW_HEIGHT)
}

/// The blank to leave under the last row so that, scrolled to the bottom (where the timeline
/// sticks), the top of the view falls on a row's top: without it the first row shown was the
/// lower half of a wrapped row, drawn cut against the lanes' header as if under it. Less than
/// one row; nothing when every row fits.
pub fn bottom_pad(heights: &[f32], spacing: f32, viewport: f32) -> f32 {
    let total: f32 = heights.iter().map(|height| height + spacing).sum();
    let first_shown = total - viewport;
    if first_shown <= 0.0 {
        return 0.0;
    }
    let mut top = 0.0;
    for height in heights {
        if top >= first_shown - 0.5 {
            break;
        }
        top += height + spacing;
    }
    (top - first_shown).max(0.0)
}

/// The height of the truncating timeline's view: as many whole rows of [`ROW_HEIGHT`] as fit
/// in `available` points (at least one), or all of it when every row fits. Stuck to the
/// bottom, a view of 7.4 rows started on the lower 0.4 of a row, cut under the lanes' header
/// (the projector's zoom showed it on every level); a view of whole rows starts on a row's top.
/// The rule is the one every scrolled view keeps ([`whole_lines::view_height`]).
pub fn whole_rows_height(rows: usize, spacing: f32, available: f32) -> f32 {
    let pitch = ROW_HEIGHT + spacing;
    whole_lines::view_height((1..=rows).map(|row| row as f32 * pitch - spacing), available)
}

/// A row's text, laid out to the text column's width (cut or wrapped).
fn layout_row(ui: &egui::Ui, entry: &TimelineEntry, cache: &TimelineCache, geometry: Geometry) -> Arc<egui::Galley> {
    let guard_row = entry.guard_row(&cache.telling);
    let color = if let Some(row) = &guard_row {
        if row.holding { theme::GOOD } else { theme::WARN }
    } else if cache.is_player(&entry.actor) {
        theme::CREW
    } else if cache.is_scripted(&entry.actor) {
        theme::SCRIPTED_OPERATOR
    } else {
        theme::TEXT
    };
    let mut job = egui::text::LayoutJob::single_section(
        describe(entry, &cache.telling),
        egui::TextFormat::simple(FontId::proportional(ROW_FONT_SIZE), color),
    );
    job.wrap = match geometry.row_text {
        RowText::Truncate => egui::text::TextWrapping::truncate_at_width(geometry.text_width),
        RowText::Wrap => egui::text::TextWrapping::wrap_at_width(geometry.text_width),
    };
    ui.ctx().fonts_mut(|fonts| fonts.layout_job(job))
}

/// One row: the lanes with the entry's key glyph and arrow, phase and time, the text.
/// Returns the phase to rewind to when an interactive row is double-clicked.
fn draw_row(
    ui: &mut egui::Ui,
    entries: &[TimelineEntry],
    index: usize,
    galley: Arc<egui::Galley>,
    cache: &TimelineCache,
    geometry: Geometry,
) -> Option<u32> {
    let entry = &entries[index];
    let lane_width = geometry.lane_width;
    let height = row_height(&galley);
    let (rect, response) = ui.allocate_exact_size(
        egui::vec2(ui.available_width(), height),
        if geometry.interactive {
            egui::Sense::click()
        } else {
            egui::Sense::hover()
        },
    );
    let painter = ui.painter_at(rect);
    if index % 2 == 1 {
        painter.rect_filled(rect, 0.0, Color32::from_rgb(28, 32, 41));
    }
    if response.hovered() {
        painter.rect_filled(rect, 0.0, Color32::from_rgb(40, 46, 60));
    }
    // Glyphs and arrows sit on the row's first line, where its text starts.
    let y = rect.top() + ROW_HEIGHT / 2.0;
    let lane_x = |lane: usize| rect.left() + lane_width * (cache.columns[lane] as f32 + 0.5);
    for column in 0..cache.lane_names.len() {
        let x = rect.left() + lane_width * (column as f32 + 0.5);
        painter.line_segment(
            [egui::pos2(x, rect.top()), egui::pos2(x, rect.bottom())],
            Stroke::new(1.0, Color32::from_rgb(50, 56, 70)),
        );
    }
    let &lane = cache.entry_lane.get(index)?;
    let x = lane_x(lane);
    let look = entry.key.as_deref().map(|key| cache.key_look(key));
    if let (Some(from), Some(look)) = (cache.arrow_from.get(index).copied().flatten(), look) {
        let start = lane_x(from);
        let direction = if x > start { 1.0 } else { -1.0 };
        painter.arrow(
            egui::pos2(start, y),
            egui::vec2(x - start - direction * 7.0, 0.0),
            Stroke::new(1.5, look.color),
        );
    }
    if entry.guard_row(&cache.telling).is_some_and(|row| row.holding) {
        painter.circle_stroke(egui::pos2(x, y), 8.0, Stroke::new(2.0, theme::GOOD));
    }
    match look {
        Some(look) => {
            painter.text(
                egui::pos2(x, y),
                Align2::CENTER_CENTER,
                look.glyph,
                FontId::proportional(13.0),
                look.color,
            );
        }
        None => {
            painter.circle_filled(egui::pos2(x, y), 3.5, cache.actor_color(&entry.actor));
        }
    }
    let text_left = rect.left() + geometry.lanes_width + 8.0;
    painter.text(
        egui::pos2(text_left, y),
        Align2::LEFT_CENTER,
        format!("{:>4} {:>6}", entry.phase, format!("{}ms", entry.time_ms)),
        FontId::monospace(11.5),
        theme::TEXT_FAINT,
    );
    let elided = galley.elided;
    let first_line_height = galley.size().y / galley.rows.len().max(1) as f32;
    painter.galley(
        egui::pos2(text_left + PHASE_TIME_WIDTH, y - first_line_height / 2.0),
        galley,
        theme::TEXT,
    );
    let response = if elided {
        response.on_hover_text(describe(entry, &cache.telling))
    } else {
        response
    };
    (geometry.interactive && response.double_clicked()).then_some(entry.phase + 1)
}

/// One line: the actor, the phase kind, the key's glyph, and the text.
/// A guard's row says "held" with a shield only while nobody in the finished run is owed or
/// paid twice and its debrief tells it as holding (`telling`); otherwise it says what the
/// guard did and what the run still did.
pub fn describe(entry: &TimelineEntry, telling: &RowTelling) -> String {
    let row = entry.guard_row(telling);
    let (kind, guard) = match &row {
        Some(row) if row.holding => (row.kind, format!("🛡 {} — ", twice_world::guards::row_words(row))),
        Some(row) => (row.kind, format!("⚠ {} — ", twice_world::guards::row_words(row))),
        None => (entry.kind.as_str(), String::new()),
    };
    format!("{} · {kind}: {guard}{}", entry.actor, entry.text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scrolled_to_the_bottom_the_first_row_shown_starts_at_the_top_of_the_view() {
        // Rows of 19, 36 (wrapped) and 19 points, a point apart; a view of 40 points.
        let heights = [19.0, 36.0, 19.0, 36.0];
        let pad = bottom_pad(&heights, 1.0, 40.0);
        let total: f32 = heights.iter().map(|height| height + 1.0).sum::<f32>() + pad;
        let first_shown = total - 40.0;
        let tops: Vec<f32> = heights
            .iter()
            .scan(0.0, |top, height| {
                let this = *top;
                *top += height + 1.0;
                Some(this)
            })
            .collect();
        assert!(
            tops.iter().any(|top| (top - first_shown).abs() < 0.01),
            "{first_shown} in {tops:?}"
        );
        assert!((0.0..37.0).contains(&pad), "{pad}");
        // Every row fits: nothing to pad.
        assert_eq!(bottom_pad(&heights, 1.0, 500.0), 0.0);
        // Already on a row's top: nothing either.
        assert_eq!(bottom_pad(&[19.0, 19.0, 19.0], 1.0, 40.0), 0.0);
    }

    #[test]
    fn a_view_of_truncated_rows_holds_whole_rows_only_when_they_scroll() {
        let pitch = ROW_HEIGHT + 1.0;
        // 100 rows in 150 points: seven whole rows, the eighth (10 points of it) left blank.
        let view = whole_rows_height(100, 1.0, 150.0);
        assert_eq!(view, 7.0 * pitch - 1.0);
        // Stuck to the bottom, the first row shown starts at the top of the view.
        let content = 100.0 * pitch - 1.0;
        let first_shown = content - view;
        assert!((first_shown / pitch).fract().abs() < 1e-3, "{first_shown}");
        // Every row fits: the view keeps the whole height (nothing scrolls, nothing is cut).
        assert_eq!(whole_rows_height(3, 1.0, 150.0), 150.0);
        // Less than a row of room still shows one row.
        assert_eq!(whole_rows_height(100, 1.0, 5.0), ROW_HEIGHT);
    }

    #[test]
    fn lanes_share_the_width_and_narrow_past_their_minimum_only_to_leave_the_text_its_room() {
        assert_eq!(lane_width(5, 2000.0), LANE_WIDTH);
        let narrow = lane_width(9, 700.0);
        assert!((LANE_WIDTH_MIN..LANE_WIDTH).contains(&narrow), "{narrow}");
        assert!(narrow * 9.0 <= 700.0 * LANES_SHARE_MAX + 0.01);
        assert_eq!(lane_width(0, 700.0), LANE_WIDTH);
        // Too many lanes for their minimum: they narrow so the text keeps its room, down to
        // the squeezed width at most.
        let squeezed = lane_width(7, 360.0);
        assert!(squeezed < LANE_WIDTH_MIN, "{squeezed}");
        assert!(360.0 - 8.0 - PHASE_TIME_WIDTH - 7.0 * squeezed >= TEXT_WIDTH_MIN - 0.01);
        assert_eq!(lane_width(40, 700.0), LANE_WIDTH_SQUEEZED);
    }
}
