//! The timeline's lanes' header: each lane's name over its lane, on one line, on two, or
//! upright when the lanes are too narrow for either (a debrief at the projector's zoom).

use bevy_egui::egui::{self, Align2, Color32, FontId};
use twice_world::simulator::Actor;

use super::{Geometry, HEADER_FONT_SIZE, TimelineCache};
use crate::ui::theme;

/// Where each lane's name goes in the header: on one line while every name fits its lane;
/// otherwise alternate lanes drop to a second line so each name has two lanes' width (the
/// first and the last a lane and a half); and where even that would cut a name (a narrow
/// debrief at the projector's zoom, where seven lanes of 12 points cut "crew", "super",
/// "model" and "billing" to "c… s… m… bi…"), every name stands upright over its own lane,
/// whole up to [`UPRIGHT_NAME_WIDTH_MAX`] (the header's tooltip names every lane in full).
#[derive(Clone, Debug, PartialEq)]
pub struct LaneHeader {
    /// Per lane: the text shown and the header line it is on (0 or 1; 0 when upright).
    pub labels: Vec<(String, usize)>,
    pub lines: usize,
    /// The names stand upright (reading upwards), each centred on its lane: the header is as
    /// tall as the widest of them.
    pub upright: bool,
}

/// The widest an upright lane name gets (the header's height), in points: "op-honest" and
/// "billing" whole at the header's size; a longer name is cut with "…".
pub const UPRIGHT_NAME_WIDTH_MAX: f32 = 64.0;

pub fn lane_header(names: &[String], lane_width: f32, mut text_width: impl FnMut(&str) -> f32) -> LaneHeader {
    let mut fits = |name: &str, room: f32| text_width(name) <= room - 2.0;
    if names.iter().all(|name| fits(name, lane_width)) {
        return LaneHeader {
            labels: names.iter().map(|name| (name.clone(), 0)).collect(),
            lines: 1,
            upright: false,
        };
    }
    // The first and the last name have the panel's edge or the phase column on one side:
    // kept inside the lanes ([`label_left`]), they have a lane and a half, not two, so they
    // never reach their neighbour on the same line.
    let last = names.len().saturating_sub(1);
    let two_lines: Vec<(String, usize)> = names
        .iter()
        .enumerate()
        .map(|(column, name)| {
            let room = if column == 0 || column == last {
                lane_width * 1.5
            } else {
                lane_width * 2.0
            };
            (cut_to(name, room, &mut fits), column % 2)
        })
        .collect();
    if two_lines.iter().zip(names).all(|((shown, _), name)| shown == name) {
        return LaneHeader {
            labels: two_lines,
            lines: 2,
            upright: false,
        };
    }
    LaneHeader {
        labels: names
            .iter()
            .map(|name| (cut_to(name, UPRIGHT_NAME_WIDTH_MAX, &mut fits), 0))
            .collect(),
        lines: 1,
        upright: true,
    }
}

/// `name` as it fits `room` (by `fits`), cut with "…" if it must be.
fn cut_to(name: &str, room: f32, fits: &mut impl FnMut(&str, f32) -> bool) -> String {
    let mut kept: Vec<char> = name.chars().collect();
    let mut shown = name.to_owned();
    while !fits(&shown, room) && kept.len() > 1 {
        kept.pop();
        shown = kept.iter().collect::<String>() + "…";
    }
    shown
}

/// Where a lane's name starts, from the lanes' left edge: centred on its lane (`center`), but
/// kept inside the lanes (`lanes_width`), so the first and the last lane's names, which may be
/// two lanes wide, are neither cut at the panel's edge nor drawn over the phase column.
fn label_left(center: f32, label_width: f32, lanes_width: f32) -> f32 {
    (center - label_width / 2.0).min(lanes_width - label_width).max(0.0)
}

/// The lanes' names over their lanes (on two lines when they do not fit one), and the text
/// column's heading, in a strip of their own above the rows.
pub(super) fn draw_lane_header(ui: &mut egui::Ui, lanes: &[&Actor], cache: &TimelineCache, geometry: Geometry) {
    let names: Vec<String> = lanes.iter().map(|lane| lane_name(lane)).collect();
    let header_font = FontId::proportional(HEADER_FONT_SIZE);
    let header = ui.ctx().fonts_mut(|fonts| {
        lane_header(&names, geometry.lane_width, |text| {
            fonts
                .layout_no_wrap(text.to_owned(), header_font.clone(), Color32::WHITE)
                .size()
                .x
        })
    });
    let line_height = 15.0;
    let galleys: Vec<_> = lanes
        .iter()
        .zip(&header.labels)
        .map(|(lane, (label, _))| {
            ui.painter()
                .layout_no_wrap(label.clone(), header_font.clone(), cache.actor_color(lane))
        })
        .collect();
    // Upright, the header is as tall as its widest name; the columns' heading keeps its line
    // at the foot, beside the names' feet.
    let height = if header.upright {
        galleys.iter().map(|galley| galley.size().x).fold(line_height, f32::max) + 4.0
    } else {
        line_height * header.lines as f32 + 1.0
    };
    let (header_rect, header_response) =
        ui.allocate_exact_size(egui::vec2(ui.available_width(), height), egui::Sense::hover());
    let painter = ui.painter_at(header_rect);
    for (column, (galley, (_, line))) in galleys.into_iter().zip(&header.labels).enumerate() {
        let color = cache.actor_color(lanes[column]);
        let center = geometry.lane_width * (column as f32 + 0.5);
        if header.upright {
            // Turned a quarter left about its top-left corner, the text reads upwards with its
            // foot on the header's bottom, its line's height centred on the lane.
            let anchor = egui::pos2(
                header_rect.left() + center - galley.size().y / 2.0,
                header_rect.bottom() - 2.0,
            );
            painter.add(egui::epaint::TextShape::new(anchor, galley, color).with_angle(-std::f32::consts::FRAC_PI_2));
            continue;
        }
        let left = label_left(center, galley.size().x, geometry.lanes_width);
        let y = header_rect.top() + line_height * (*line as f32 + 0.5);
        painter.galley(
            egui::pos2(header_rect.left() + left, y - galley.size().y / 2.0),
            galley,
            color,
        );
    }
    let columns_heading = painter.text(
        egui::pos2(
            header_rect.left() + geometry.lanes_width + 8.0,
            header_rect.bottom() - line_height / 2.0,
        ),
        Align2::LEFT_CENTER,
        "phase   time   what happened",
        header_font.clone(),
        theme::TEXT_FAINT,
    );
    // "Timeline" and how to read it, right-aligned on the same strip, where the rows' text
    // column leaves room (a narrow panel keeps only the title).
    let heading = painter.layout_no_wrap(
        if geometry.interactive {
            "Timeline · one lane per actor · colour + glyph per key · double-click a row to rewind there".to_owned()
        } else {
            "Timeline · one lane per actor · colour + glyph per key".to_owned()
        },
        header_font.clone(),
        theme::TEXT_DIM,
    );
    let title = painter.layout_no_wrap(
        "Timeline".to_owned(),
        FontId::proportional(HEADER_FONT_SIZE + 1.5),
        theme::TEXT,
    );
    let room = header_rect.right() - columns_heading.right() - 16.0;
    let shown = if heading.size().x <= room { heading } else { title };
    if shown.size().x <= room {
        painter.galley(
            egui::pos2(
                header_rect.right() - shown.size().x - 4.0,
                header_rect.bottom() - line_height / 2.0 - shown.size().y / 2.0,
            ),
            shown,
            theme::TEXT_DIM,
        );
    }
    if !lanes.is_empty() {
        header_response.on_hover_text(
            lanes
                .iter()
                .map(|lane| lane.to_string())
                .collect::<Vec<_>>()
                .join(" · "),
        );
    }
}

/// `w1`, `model`, … as a lane header names them ([`lane_header`] fits them to their lanes).
pub fn lane_name(actor: &Actor) -> String {
    match actor {
        Actor::Supervisor => "super".into(),
        Actor::Network => "net".into(),
        other => other.label(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Eight pixels a character: enough to reason about fitting without fonts.
    fn width(text: &str) -> f32 {
        text.chars().count() as f32 * 8.0
    }

    #[test]
    fn the_first_and_last_lane_names_stay_inside_the_lanes() {
        // Thirty lanes of 19 points: "crew", 28 points wide, centred on the first lane
        // started 4.5 points left of the panel (cut to ":rew").
        assert_eq!(label_left(9.5, 28.0, 570.0), 0.0);
        assert_eq!(
            label_left(560.5, 28.0, 570.0),
            542.0,
            "the last one ends where the lanes do"
        );
        assert_eq!(label_left(100.0, 20.0, 570.0), 90.0, "the others stay centred");
        // Moved inside, an edge name still ends before its neighbour on the same line starts.
        let lane = 40.0;
        let names: Vec<String> = ["crew", "w1", "op-honest", "w2", "model", "billing"]
            .map(String::from)
            .to_vec();
        let header = lane_header(&names, lane, width);
        assert_eq!((header.lines, header.upright), (2, false));
        let lanes_width = lane * names.len() as f32;
        let span = |column: usize| {
            let label_width = width(&header.labels[column].0);
            let left = label_left(lane * (column as f32 + 0.5), label_width, lanes_width);
            (left, left + label_width)
        };
        assert!(span(0).1 <= span(2).0, "{:?} {:?}", span(0), span(2));
        assert!(span(3).1 <= span(5).0, "{:?} {:?}", span(3), span(5));
        assert!(span(5).1 <= lanes_width);
    }

    #[test]
    fn lane_names_that_fit_stay_on_one_line_whole() {
        let names: Vec<String> = ["w1", "net", "sim"].map(String::from).to_vec();
        let header = lane_header(&names, 46.0, width);
        assert_eq!(header.lines, 1);
        assert_eq!(
            header.labels,
            vec![("w1".into(), 0), ("net".into(), 0), ("sim".into(), 0)]
        );
    }

    #[test]
    fn lane_names_too_wide_for_their_lane_alternate_lines_while_two_lanes_hold_them_whole() {
        let names: Vec<String> = ["crew", "op-honest", "model", "bill"].map(String::from).to_vec();
        let header = lane_header(&names, 38.0, width);
        assert_eq!((header.lines, header.upright), (2, false));
        let lines: Vec<usize> = header.labels.iter().map(|(_, line)| *line).collect();
        assert_eq!(lines, vec![0, 1, 0, 1], "neighbours never share a line");
        assert!(
            header.labels.iter().zip(&names).all(|((shown, _), name)| shown == name),
            "{:?}",
            header.labels
        );
    }

    #[test]
    fn lane_names_two_lanes_would_cut_stand_upright_whole_up_to_their_maximum() {
        // The debrief at the projector's zoom: seven lanes of 12 points.
        let names: Vec<String> = [
            "crew",
            "super",
            "w1",
            "model",
            "net",
            "billing",
            "op-workshop-presenter",
        ]
        .map(String::from)
        .to_vec();
        let header = lane_header(&names, 12.0, width);
        assert!(header.upright, "{header:?}");
        for ((shown, line), name) in header.labels.iter().zip(&names) {
            assert_eq!(*line, 0);
            if width(name) <= UPRIGHT_NAME_WIDTH_MAX - 2.0 {
                assert_eq!(shown, name, "a name up to the maximum is whole");
            } else {
                assert!(
                    shown.ends_with('…') && width(shown) <= UPRIGHT_NAME_WIDTH_MAX - 2.0,
                    "{shown}"
                );
            }
        }
        assert_eq!(header.labels[5].0, "billing");
        assert_eq!(header.labels[6].0, "op-wor…");
    }
}
