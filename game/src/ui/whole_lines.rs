//! A view that scrolls ends on a whole line, never through one: the rule, in one place, for
//! the timeline (rows of one height, stuck to the bottom) and for the panels that scroll from
//! the top (the level select's briefing, the debrief's code). A view cut through a line showed
//! its upper half at the panel's foot, a line a reader could not read nor tell was there.
//!
//! [`view_height`] is the rule: a view is as tall as the lines that fit in it whole. Rows of
//! one height know where they end ([`crate::screens::level::timeline::whole_rows_height`]);
//! text of many sizes learns it from what it painted the frame before ([`scroll`]), the way
//! egui sizes everything.

use bevy_egui::egui::{self, Rect, Shape};

/// The height of a view of at most `available` points onto lines that end at `cuts` (points
/// from the view's top, ascending; a cut is where a line ends and none is halfway): down to
/// the last cut that fits, so the view's foot falls between two lines. All of `available`
/// when every line fits; at least the first line, however tall (less would show nothing).
pub fn view_height(cuts: impl IntoIterator<Item = f32>, available: f32) -> f32 {
    let mut fits = None;
    for cut in cuts {
        if cut <= 0.0 {
            continue;
        }
        if cut > available + CUT_TOLERANCE {
            return fits.unwrap_or(cut);
        }
        fits = Some(cut.min(available));
    }
    available
}

/// Text placed this close across a view's foot counts as above it (rounding to pixels).
const CUT_TOLERANCE: f32 = 0.5;

/// Where a view may end among lines spanning `lines` (top, bottom; any order): at a line's
/// bottom that no other line spans (a title beside a smaller word ends lower than the word).
/// Ascending.
pub fn cuts(lines: &[(f32, f32)]) -> Vec<f32> {
    let mut cuts: Vec<f32> = lines
        .iter()
        .map(|(_, bottom)| *bottom)
        .filter(|cut| {
            !lines
                .iter()
                .any(|(top, bottom)| *top < cut - CUT_TOLERANCE && *bottom > cut + CUT_TOLERANCE)
        })
        .collect();
    cuts.sort_by(f32::total_cmp);
    cuts.dedup_by(|one, other| (*one - *other).abs() < CUT_TOLERANCE);
    cuts
}

/// The lines a scroll area painted in a frame shown with all of its room, in its content's
/// points from the top; how far it was scrolled, how tall its content was and how much room it
/// had then. Only lines in view are painted (egui skips the rest), so a view cut short learns
/// nothing past its foot: the lines are learned with all of the room and kept while the room,
/// the offset and the content stay as they were (learned from a short view, a column grown
/// taller stayed as short as its first frame).
#[derive(Clone, Debug, Default)]
struct Painted {
    lines: Vec<(f32, f32)>,
    offset: f32,
    content: f32,
    available: f32,
}

impl Painted {
    /// Whether what was learned still holds for a view with `available` points of room.
    fn holds(&self, available: f32, offset: f32) -> bool {
        !self.lines.is_empty()
            && (self.available - available).abs() < CUT_TOLERANCE
            && (self.offset - offset).abs() < CUT_TOLERANCE
    }
}

/// `area`, shown with a view that ends on a whole line of the text it painted last frame at
/// the offset it was scrolled to (every line of every label: a wrapped paragraph may end the
/// view between two of its lines). `id` names the area (give it the content's identity, such
/// as the level shown: new content starts at its top and its lines are learned anew). The
/// first frame of new content, which has no lines to go by yet, is drawn again before it is
/// shown (egui's discard, as its grids do).
pub fn scroll<R>(
    ui: &mut egui::Ui,
    area: egui::ScrollArea,
    id: egui::Id,
    add_contents: impl FnOnce(&mut egui::Ui) -> R,
) -> egui::scroll_area::ScrollAreaOutput<R> {
    let memory = id.with("whole-lines");
    let painted: Option<Painted> = ui.data(|data| data.get_temp(memory));
    let available = ui.available_height();
    let offset =
        egui::scroll_area::State::load(ui.ctx(), ui.make_persistent_id(id)).map_or(0.0, |state| state.offset.y);
    let learned = painted.filter(|painted| painted.holds(available, offset));
    let height = match &learned {
        Some(painted) => {
            let lines: Vec<(f32, f32)> = painted
                .lines
                .iter()
                .map(|(top, bottom)| (top - painted.offset, bottom - painted.offset))
                .collect();
            // The content's end is a cut too: past the lines in view, more to scroll to.
            let mut cuts = cuts(&lines);
            cuts.push(painted.content - painted.offset);
            view_height(cuts, available)
        }
        // Nothing learned for this room and offset yet: all of the room, to learn its lines.
        None => available,
    };
    let layer = ui.layer_id();
    let first_shape = ui
        .ctx()
        .graphics(|graphics| graphics.get(layer).map_or(0, |list| list.next_idx().0));
    let output = area.id_salt(id).max_height(height).show(ui, add_contents);
    let content_top = output.inner_rect.top() - output.state.offset.y;
    let lines = ui.ctx().graphics(|graphics| {
        let mut lines = Vec::new();
        if let Some(list) = graphics.get(layer) {
            for clipped in list.all_entries().skip(first_shape) {
                text_lines(&clipped.shape, &mut lines);
            }
        }
        lines
    });
    let lines: Vec<(f32, f32)> = lines
        .into_iter()
        .map(|line| (line.top() - content_top, line.bottom() - content_top))
        .collect();
    let overflows = output.content_size.y > output.inner_rect.height() + CUT_TOLERANCE;
    let content_changed = learned
        .as_ref()
        .is_some_and(|painted| (painted.content - output.content_size.y).abs() > CUT_TOLERANCE);
    if learned.is_none() || content_changed {
        if overflows && ui.is_visible() {
            ui.ctx().request_discard("a scroll area learning where its lines end");
        }
        let painted = Painted {
            lines,
            offset: output.state.offset.y,
            content: output.content_size.y,
            // New content is learned again next frame, with all of the room.
            available: if content_changed { f32::NAN } else { available },
        };
        ui.data_mut(|data| data.insert_temp(memory, painted));
    }
    output
}

/// Every line of text in `shape`, where it was painted.
fn text_lines(shape: &Shape, lines: &mut Vec<Rect>) {
    match shape {
        Shape::Vec(shapes) => {
            for shape in shapes {
                text_lines(shape, lines);
            }
        }
        Shape::Text(text) => {
            for row in &text.galley.rows {
                lines.push(row.rect().translate(text.pos.to_vec2()));
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_view_ends_under_the_last_line_that_fits_whole() {
        // Lines ending at 20, 40, 62 and 80 points; 70 points of room: the view ends at 62.
        assert_eq!(view_height([20.0, 40.0, 62.0, 80.0], 70.0), 62.0);
        // Everything fits: the view keeps its room (nothing scrolls, nothing is cut).
        assert_eq!(view_height([20.0, 40.0], 70.0), 70.0);
        // Not even the first line fits: the first line, whole.
        assert_eq!(view_height([90.0, 120.0], 70.0), 90.0);
        // Lines scrolled above the view's top are not where it can end.
        assert_eq!(view_height([-10.0, 0.0, 30.0, 75.0], 70.0), 30.0);
        // A line ending at the foot but for rounding fits, and the view keeps to its room.
        assert_eq!(view_height([20.0, 70.3, 90.0], 70.0), 70.0);
    }

    #[test]
    fn a_view_never_ends_through_a_taller_line_beside_a_short_one() {
        // "Goal:" (4 to 20) beside a title (0 to 30), then a line under both (32 to 50).
        let cuts = cuts(&[(4.0, 20.0), (0.0, 30.0), (32.0, 50.0)]);
        assert_eq!(cuts, [30.0, 50.0]);
        assert_eq!(view_height(cuts, 45.0), 30.0);
    }
}
