//! The timeline as a sequence diagram: one lane per actor, time running down, one colour
//! and one glyph per idempotency key, and an arrow wherever a key moves between actors.

use std::collections::HashMap;

use bevy::prelude::*;
use bevy_egui::egui::{self, Align2, Color32, FontId, RichText, Stroke};
use twice_sim::runtime::key::fnv1a64;
use twice_sim::simulator::{Actor, Simulation, TimelineEntry};

use crate::ui::theme::{self, KeyLook};

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
            let from = entry.key.as_ref().and_then(|key| {
                let next = self.key_index.len();
                self.key_index.entry(key.clone()).or_insert(next);
                let previous = self.last_lane_of_key.insert(key.clone(), lane);
                previous.filter(|previous| *previous != lane)
            });
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
}

/// Crew and operators in the player's gold, the runtime in teal, the wire and the money in
/// their own colours: by the actor's kind, never by the spelling of its name.
pub fn actor_color(actor: &Actor) -> Color32 {
    match actor {
        Actor::Crew | Actor::Operator(_) => theme::CREW,
        Actor::Supervisor | Actor::Simulation => theme::TEXT_DIM,
        Actor::Worker(_) | Actor::Model => theme::RUNTIME,
        Actor::Network => theme::INFO,
        Actor::Billing => theme::MONEY,
    }
}

/// Draws the diagram. When `interactive`, a double-click on a row asks to rewind to just after it.
pub fn draw(
    ui: &mut egui::Ui,
    entries: &[TimelineEntry],
    cache: &TimelineCache,
    interactive: bool,
    id: &str,
) -> Option<u32> {
    let mut rewind = None;
    let lanes = cache.lanes_in_order();
    let lanes_width = (lanes.len().max(1) as f32 * LANE_WIDTH).min(ui.available_width() * 0.5);
    let lane_width = lanes_width / lanes.len().max(1) as f32;
    egui::Frame::new()
        .fill(theme::PANEL)
        .stroke(Stroke::new(1.0, theme::PANEL_BORDER))
        .corner_radius(6)
        .inner_margin(egui::Margin::same(6))
        .show(ui, |ui| {
            ui.set_width(ui.available_width());
            ui.horizontal(|ui| {
                ui.label(RichText::new("Timeline").size(theme::HEADING).strong());
                crate::ui::hint(
                    ui,
                    if interactive {
                        "one lane per actor · colour + glyph per key · double-click a row to rewind there"
                    } else {
                        "one lane per actor · colour + glyph per key"
                    },
                );
            });
            // Lane headers.
            let (header, _) = ui.allocate_exact_size(egui::vec2(ui.available_width(), 16.0), egui::Sense::hover());
            let painter = ui.painter();
            for (column, lane) in lanes.iter().enumerate() {
                let x = header.left() + lane_width * (column as f32 + 0.5);
                painter.text(
                    egui::pos2(x, header.center().y),
                    Align2::CENTER_CENTER,
                    short_actor(lane),
                    FontId::proportional(11.5),
                    actor_color(lane),
                );
            }
            painter.text(
                egui::pos2(header.left() + lanes_width + 8.0, header.center().y),
                Align2::LEFT_CENTER,
                "phase   time   what happened",
                FontId::proportional(11.5),
                theme::TEXT_FAINT,
            );
            egui::ScrollArea::vertical()
                .id_salt(id)
                .auto_shrink(false)
                .stick_to_bottom(true)
                .show_rows(ui, ROW_HEIGHT, entries.len(), |ui, range| {
                    for index in range {
                        let entry = &entries[index];
                        let (rect, response) = ui.allocate_exact_size(
                            egui::vec2(ui.available_width(), ROW_HEIGHT),
                            if interactive {
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
                        let y = rect.center().y;
                        let lane_x = |lane: usize| rect.left() + lane_width * (cache.columns[lane] as f32 + 0.5);
                        for column in 0..lanes.len() {
                            let x = rect.left() + lane_width * (column as f32 + 0.5);
                            painter.line_segment(
                                [egui::pos2(x, rect.top()), egui::pos2(x, rect.bottom())],
                                Stroke::new(1.0, Color32::from_rgb(50, 56, 70)),
                            );
                        }
                        let Some(&lane) = cache.entry_lane.get(index) else {
                            continue;
                        };
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
                        if entry.guard.is_some() {
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
                                painter.circle_filled(egui::pos2(x, y), 3.5, actor_color(&entry.actor));
                            }
                        }
                        let text = describe(entry);
                        let text_left = rect.left() + lanes_width + 8.0;
                        painter.text(
                            egui::pos2(text_left, y),
                            Align2::LEFT_CENTER,
                            format!("{:>4} {:>6}", entry.phase, format!("{}ms", entry.time_ms)),
                            FontId::monospace(11.5),
                            theme::TEXT_FAINT,
                        );
                        let color = if entry.guard.is_some() {
                            theme::GOOD
                        } else if entry.actor.is_player() {
                            theme::CREW
                        } else {
                            theme::TEXT
                        };
                        let galley = painter.layout(text.clone(), FontId::proportional(12.5), color, f32::INFINITY);
                        painter.galley(egui::pos2(text_left + 96.0, y - galley.size().y / 2.0), galley, color);
                        let response = response.on_hover_text(text);
                        if interactive && response.double_clicked() {
                            rewind = Some(entry.phase + 1);
                        }
                    }
                });
        });
    rewind
}

/// `w1`, `model`, … short enough for a lane header.
fn short_actor(actor: &Actor) -> String {
    match actor {
        Actor::Supervisor => "super".into(),
        Actor::Network => "net".into(),
        other => {
            let label = other.label();
            if label.chars().count() > 8 {
                label.chars().take(7).collect::<String>() + "…"
            } else {
                label
            }
        }
    }
}

/// One line: the actor, the phase kind, the key's glyph, and the text.
fn describe(entry: &TimelineEntry) -> String {
    let guard = entry
        .guard
        .map(|guard| format!("🛡 {guard} held — "))
        .unwrap_or_default();
    format!("{} · {}: {guard}{}", entry.actor, entry.kind, entry.text)
}
