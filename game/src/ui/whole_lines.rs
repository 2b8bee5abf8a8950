//! A view that scrolls ends on a whole line, never through one: the rule, in one place, for
//! the timeline (rows of one height, stuck to the bottom) and for the panels that scroll from
//! the top (the level select's briefing and list, the level's code, the debrief's code). A view
//! cut through a line showed its upper half at the panel's foot, a line a reader could not read
//! nor tell was there. A panel scrolled (to a selection, to a cursor, by the wheel) also comes
//! to rest on a whole line at its top.
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

/// The lines a scroll area painted in a frame shown with all of its room, in points from the
/// view's top; how far it was scrolled, how tall its content was (and where it ended, from the
/// view's top) and how much room it had then. Only lines in view are painted (egui skips the
/// rest), so a view cut short learns nothing past its foot: the lines are learned with all of
/// the room and kept while the room, the offset and the content stay as they were (learned
/// from a short view, a column grown taller stayed as short as its first frame).
#[derive(Clone, Debug, Default)]
struct Painted {
    lines: Vec<(f32, f32)>,
    offset: f32,
    content: f32,
    content_end: f32,
    available: f32,
}

impl Painted {
    /// Whether what was learned still holds for a view with `available` points of room.
    fn holds(&self, available: f32, offset: f32) -> bool {
        !self.lines.is_empty()
            && (self.available - available).abs() < CUT_TOLERANCE
            && (self.offset - offset).abs() < CUT_TOLERANCE
    }

    /// The content's end is in a view of `available` points: scrolled to its end.
    fn at_end(&self, available: f32) -> bool {
        self.offset > CUT_TOLERANCE && self.content_end <= available + CUT_TOLERANCE
    }

    /// The view's height: down to the last line that fits whole. Scrolled to its end, the view
    /// ends with the content (a view taller than what is left to show is scrolled back up by
    /// egui, and its top would fall through a line again).
    fn view_height(&self, available: f32) -> f32 {
        if self.at_end(available) {
            return self.content_end;
        }
        // The content's end is a cut too: past the lines in view, more to scroll to.
        let mut cuts = cuts(&self.lines);
        cuts.push(self.content_end);
        view_height(cuts, available)
    }

    /// Where a view at rest with a line cut by its top settles: up to that line's top, so the
    /// line shows whole; scrolled to its end, down to the first whole line instead (up, the
    /// last line would go under the foot, and the player could never scroll to it). `None`
    /// when the view begins on a whole line already.
    fn settled_offset(&self, available: f32) -> Option<f32> {
        let cut_top = self
            .lines
            .iter()
            .filter(|(top, bottom)| *top < -CUT_TOLERANCE && *bottom > CUT_TOLERANCE)
            .map(|(top, _)| *top)
            .reduce(f32::min)?;
        if self.at_end(available) {
            let below = cuts(&self.lines).into_iter().find(|cut| *cut > CUT_TOLERANCE)?;
            Some(self.offset + below)
        } else {
            Some((self.offset + cut_top).max(0.0))
        }
    }

    /// What this says of the same content scrolled to `offset`: every line moved with it.
    fn scrolled_to(&self, offset: f32) -> Painted {
        let by = offset - self.offset;
        Painted {
            lines: self.lines.iter().map(|(top, bottom)| (top - by, bottom - by)).collect(),
            offset,
            content: self.content,
            content_end: self.content_end - by,
            available: self.available,
        }
    }
}

/// `area`, shown with a view that ends on a whole line of the text it painted last frame at
/// the offset it was scrolled to (every line of every label: a wrapped paragraph may end the
/// view between two of its lines), and that, once at rest, begins on one too (a view scrolled
/// to a selection, or by the wheel, stops wherever the scroll took it). `id` names the area
/// (give it the content's identity, such as the level shown: new content starts at its top
/// and its lines are learned anew). The first frame of new content, which has no lines to go
/// by yet, is drawn again before it is shown (egui's discard, as its grids do).
pub fn scroll<R>(
    ui: &mut egui::Ui,
    area: egui::ScrollArea,
    id: egui::Id,
    add_contents: impl FnOnce(&mut egui::Ui) -> R,
) -> egui::scroll_area::ScrollAreaOutput<R> {
    let memory = id.with("whole-lines");
    let painted: Option<Painted> = ui.data(|data| data.get_temp(memory));
    // The room that is seen: a panel drawn taller than its parent (the level's code at a
    // projector) is clipped by it, and lines under the clip are as cut as lines under the foot.
    let seen = ui.clip_rect().bottom() - ui.available_rect_before_wrap().top();
    let available = ui.available_height().min(seen).max(0.0);
    // The scroll area's own id (it salts the id it is given): read with `id` itself, the
    // offset was always 0, and the lines learned at the top were kept however far the view
    // was scrolled.
    let scroll_id = ui.make_persistent_id(egui::IdSalt::new(id));
    let offset = egui::scroll_area::State::load(ui.ctx(), scroll_id).map_or(0.0, |state| state.offset.y);
    let learned = painted.filter(|painted| painted.holds(available, offset));
    // Nothing learned for this room and offset yet: all of the room, to learn its lines.
    let height = learned
        .as_ref()
        .map_or(available, |painted| painted.view_height(available));
    let layer = ui.layer_id();
    let first_shape = ui
        .ctx()
        .graphics(|graphics| graphics.get(layer).map_or(0, |list| list.next_idx().0));
    // Where the content was placed: a scroll asked for this frame (scroll_to_me) moves the
    // offset only after the content is painted, so the offset after is not the one painted at.
    let mut content_top = None;
    // As short as the lines say: egui keeps a scroll area 64 points tall at least otherwise.
    let area = area.id_salt(id).max_height(height).min_scrolled_height(height);
    let output = area.show(ui, |ui| {
        content_top = Some(ui.max_rect().top());
        add_contents(ui)
    });
    debug_assert_eq!(
        output.id, scroll_id,
        "the offset is read from the scroll area's own state"
    );
    let content_top = content_top.unwrap_or(output.inner_rect.top() - output.state.offset.y);
    let view_top = output.inner_rect.top();
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
        .map(|line| (line.top() - view_top, line.bottom() - view_top))
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
            offset,
            content: output.content_size.y,
            content_end: content_top + output.content_size.y - view_top,
            // New content is learned again next frame, with all of the room.
            available: if content_changed { f32::NAN } else { available },
        };
        ui.data_mut(|data| data.insert_temp(memory, painted));
    } else if let Some(painted) = learned {
        // At rest (the same offset two frames running, nothing scrolling it, no button held
        // on it): a line cut by the top settles whole. The lines are known at the new offset
        // (moved with it), so the next frame ends on a whole line without learning again.
        let moving = output.state.velocity() != egui::Vec2::ZERO
            || (output.state.offset.y - offset).abs() > CUT_TOLERANCE
            || ui.input(|input| input.is_scrolling() || input.pointer.any_down());
        if !moving && let Some(settled) = painted.settled_offset(available) {
            let mut state = output.state;
            state.offset.y = settled;
            state.store(ui.ctx(), scroll_id);
            ui.data_mut(|data| data.insert_temp(memory, painted.scrolled_to(settled)));
            ui.ctx().request_repaint();
        }
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

    /// Lines of 20 points with 2 between, learned at `offset` in a view of 70: the first cut
    /// by the view's top 8 points into it.
    fn painted(offset: f32, content_end: f32) -> Painted {
        Painted {
            lines: vec![(-8.0, 12.0), (14.0, 34.0), (36.0, 56.0), (58.0, 78.0)],
            offset,
            content: 1000.0,
            content_end,
            available: 70.0,
        }
    }

    #[test]
    fn a_view_at_rest_through_a_line_at_its_top_settles_up_to_that_line() {
        let learned = painted(100.0, 900.0);
        assert_eq!(learned.settled_offset(70.0), Some(92.0));
        // Settled, the same lines from the new top: none cut, and the foot on a whole line.
        let settled = learned.scrolled_to(92.0);
        assert_eq!(settled.settled_offset(70.0), None);
        assert_eq!(settled.view_height(70.0), 64.0);
    }

    #[test]
    fn a_view_scrolled_to_its_end_settles_down_and_ends_with_the_content() {
        // The content ends 56 points down a view of 70: scrolled to its end. Up, its last line
        // would go under the foot; down to the first whole line, the view ends with it.
        let learned = Painted {
            lines: painted(100.0, 56.0).lines[..3].to_vec(),
            ..painted(100.0, 56.0)
        };
        assert_eq!(learned.settled_offset(70.0), Some(112.0));
        let settled = learned.scrolled_to(112.0);
        assert_eq!(settled.settled_offset(70.0), None);
        assert_eq!(settled.view_height(70.0), 44.0);
    }
}
