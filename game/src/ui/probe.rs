//! A screen drawn without a window, read back as text: what the headless tests look at.
//!
//! The game's screens draw into an `egui::Context`. Here one is made with the game's own fonts
//! and style ([`super::theme::apply`]) at a chosen size and zoom (1280×720 at 1.0, a projector
//! at [`crate::presenter::PRESENTER_ZOOM`]), a screen's drawing runs for a few frames (egui
//! sizes panels from the frame before), and every piece of text it painted comes back with
//! where it landed, what it was clipped to and whether it was cut with "…". A test can then
//! ask what a player sees: how many timeline rows, whether a row is cut, whether a button is
//! on screen.

use bevy_egui::egui::{self, Rect, Shape};

/// Frames a probe draws before it reads: panels take their sizes from the frame before.
pub const PROBE_FRAMES: usize = 4;

/// One piece of text as painted.
#[derive(Clone, Debug, PartialEq)]
pub struct Drawn {
    pub text: String,
    /// Where the text's galley landed, in points.
    pub rect: Rect,
    /// What it was clipped to: the part of `rect` outside is not seen.
    pub clip: Rect,
    /// Cut short with "…" to fit its width.
    pub elided: bool,
    /// Each of its lines (a wrapped label has several), where it landed; none for turned text.
    pub lines: Vec<Rect>,
}

impl Drawn {
    /// The whole text is inside its clip rectangle and the screen: nothing of it is hidden.
    pub fn fully_visible(&self, screen: Rect) -> bool {
        let seen = self.clip.intersect(screen);
        seen.expand(0.5).contains_rect(self.rect)
    }

    /// Its lines that the edge of what shows (its clip rectangle and the screen) runs
    /// through, above or below: drawn in part, a half line. Lines wholly hidden (scrolled out
    /// of view) are not among them.
    pub fn half_lines(&self, screen: Rect) -> Vec<Rect> {
        let seen = self.clip.intersect(screen);
        self.lines
            .iter()
            .filter(|line| {
                let shown = line.top().max(seen.top()) < line.bottom().min(seen.bottom()) - 0.5;
                let whole = line.top() >= seen.top() - 0.5 && line.bottom() <= seen.bottom() + 0.5;
                shown && !whole && line.intersects(seen)
            })
            .copied()
            .collect()
    }
}

/// A context as the game makes one: its fonts and style, `zoom` points per pixel, and a
/// `width` × `height` pixel screen.
pub fn context(zoom: f32) -> egui::Context {
    let context = egui::Context::default();
    super::theme::apply(&context);
    context.set_zoom_factor(zoom);
    context
}

/// The screen's rectangle in points for a `width` × `height` pixel window at `zoom`.
pub fn screen(width: f32, height: f32, zoom: f32) -> Rect {
    Rect::from_min_size(egui::Pos2::ZERO, egui::vec2(width / zoom, height / zoom))
}

/// Draws `frames` frames of `draw` on a `width` × `height` pixel screen; `events` (key
/// presses, typed text) arrive in the first frame only, so what they open (a window sizes
/// itself unseen in its first frame) is drawn by the last. Returns the last frame's text.
pub fn frames(
    context: &egui::Context,
    (width, height): (f32, f32),
    frames: usize,
    events: Vec<egui::Event>,
    mut draw: impl FnMut(&egui::Context),
) -> Vec<Drawn> {
    assert!(frames >= 1, "at least one frame is drawn");
    let mut drawn = Vec::new();
    for frame in 0..frames {
        // The screen in points: egui divides the window's pixels by the zoom itself.
        let input = egui::RawInput {
            screen_rect: Some(Rect::from_min_size(
                egui::Pos2::ZERO,
                egui::vec2(width, height) / context.zoom_factor(),
            )),
            events: if frame == 0 { events.clone() } else { Vec::new() },
            ..Default::default()
        };
        // As bevy_egui drives the game's context: a pass begun, the screen drawn, the pass ended.
        context.begin_pass(input);
        draw(context);
        let mut output = context.end_pass();
        if frame + 1 == frames {
            for clipped in std::mem::take(&mut output.shapes) {
                collect(&clipped.shape, clipped.clip_rect, &mut drawn);
            }
        }
        output.drop_without_applying_deltas();
    }
    drawn
}

/// Draws `frames` frames as the game's window shows them: each through egui's `run_ui`, as
/// bevy_egui runs the game's context, so a pass a widget asks to discard (a grid's first) is
/// drawn again before it is shown. Returns the text of every frame shown.
pub fn shown_frames(
    context: &egui::Context,
    (width, height): (f32, f32),
    frames: usize,
    mut draw: impl FnMut(&egui::Context),
) -> Vec<Vec<Drawn>> {
    (0..frames)
        .map(|_| {
            let input = egui::RawInput {
                screen_rect: Some(Rect::from_min_size(
                    egui::Pos2::ZERO,
                    egui::vec2(width, height) / context.zoom_factor(),
                )),
                ..Default::default()
            };
            let mut output = context.run_ui(input, |ui| draw(ui.ctx()));
            let mut drawn = Vec::new();
            for clipped in std::mem::take(&mut output.shapes) {
                collect(&clipped.shape, clipped.clip_rect, &mut drawn);
            }
            output.drop_without_applying_deltas();
            drawn
        })
        .collect()
}

fn collect(shape: &Shape, clip: Rect, drawn: &mut Vec<Drawn>) {
    match shape {
        Shape::Vec(shapes) => {
            for shape in shapes {
                collect(shape, clip, drawn);
            }
        }
        Shape::Text(text) => {
            let rect = text.galley.rect.translate(text.pos.to_vec2());
            drawn.push(Drawn {
                text: text.galley.text().to_owned(),
                rect,
                clip,
                elided: text.galley.elided,
                // Turned text (the lanes' upright names) is no line read down the screen.
                lines: if text.angle == 0.0 {
                    text.galley
                        .rows
                        .iter()
                        .map(|row| row.rect().translate(text.pos.to_vec2()))
                        .collect()
                } else {
                    Vec::new()
                },
            });
        }
        _ => {}
    }
}

/// A key pressed (and released) this frame.
pub fn key(key: egui::Key) -> Vec<egui::Event> {
    [true, false]
        .into_iter()
        .map(|pressed| egui::Event::Key {
            key,
            physical_key: None,
            pressed,
            repeat: false,
            modifiers: egui::Modifiers::NONE,
        })
        .collect()
}
