//! The stage: Penny with her current decision in a speech bubble, her workers (each a
//! figure with its phase), the wire with requests and responses in flight, and the vault.

use std::sync::Arc;

use bevy_egui::egui::{self, Align2, Color32, FontId, Pos2, Rect, Stroke, StrokeKind};
use twice_world::billing::Answer;
use twice_world::simulator::{Actor, Direction, Message, Simulation, WorkerView, dollars};
use twice_world::text::counted;

use super::timeline::TimelineCache;
use crate::session::Session;
use crate::ui::theme;

pub const STAGE_HEIGHT: f32 = 240.0;
/// The least height a stage is drawn at: Penny, her bubble and one worker's row.
pub const STAGE_HEIGHT_MIN: f32 = 140.0;
/// The least height that keeps the captions over the workers and the wire, and two workers'
/// rows under them (a full screen gives the timeline its rows first: 1280×720 leaves ~187).
const CAPTIONED_HEIGHT_MIN: f32 = 180.0;
const WORKERS_SHOWN_MAX: usize = 4;
/// A worker's figure and its two lines of words need this much height.
const WORKER_ROW_HEIGHT_MIN: f32 = 32.0;
const VAULT_WIDTH: f32 = 204.0;
const WORKER_COLUMN_WIDTH: f32 = 180.0;
/// Where the workers' rows start, below Penny and the captions over the workers and the wire.
const WORKERS_TOP: f32 = 98.0;
/// Where they start on a short stage, which leaves the captions out: just below Penny's name.
const WORKERS_TOP_SHORT: f32 = 84.0;

/// The stage, `height` points tall ([`STAGE_HEIGHT`] on a full screen; on a short one, the
/// height left above the hand and the timeline, so nothing scrolls). A short stage leaves out
/// the captions and shows as many workers as have a row of [`WORKER_ROW_HEIGHT_MIN`].
pub fn draw(ui: &mut egui::Ui, session: &Session, simulation: &Simulation, cache: &TimelineCache, height: f32) {
    let height = height.clamp(STAGE_HEIGHT_MIN, STAGE_HEIGHT);
    let short = height < CAPTIONED_HEIGHT_MIN;
    let (rect, _) = ui.allocate_exact_size(egui::vec2(ui.available_width(), height), egui::Sense::hover());
    let painter = ui.painter_at(rect);
    painter.rect_filled(rect, 6.0, theme::PANEL);
    painter.rect_stroke(rect, 6.0, Stroke::new(1.0, theme::PANEL_BORDER), StrokeKind::Inside);

    // The world's records need more width than billing's money: a row names a change and who.
    let vault_width = if super::records::shown(simulation) {
        super::records::RECORDS_WIDTH
    } else {
        VAULT_WIDTH
    };
    let vault = Rect::from_min_max(
        egui::pos2(rect.right() - vault_width - 8.0, rect.top() + 8.0),
        egui::pos2(rect.right() - 8.0, rect.bottom() - 8.0),
    );
    super::vault::draw_vault(&painter, vault, simulation, cache);

    let penny_center = egui::pos2(rect.left() + 44.0, rect.top() + 38.0);
    draw_penny(&painter, penny_center, simulation);
    let bubble = Rect::from_min_max(
        egui::pos2(rect.left() + 92.0, rect.top() + 8.0),
        egui::pos2(vault.left() - 12.0, rect.top() + 74.0),
    );
    draw_bubble(&painter, bubble, penny_center, simulation, session);

    let workers_top = rect.top() + if short { WORKERS_TOP_SHORT } else { WORKERS_TOP };
    let messages: Vec<&Message> = simulation.messages().collect();
    // As many rows as fit, up to the most workers shown. The footnotes under the workers get
    // a line of their own, below the last worker's row, when a worker or a message is left
    // out: on a full stage that leaves room for one row fewer (four rows there were squeezed
    // until each worker's figure ran into the next one's).
    let rows_in = |footnote_height: f32| {
        let rows_height = rect.bottom() - 10.0 - footnote_height - workers_top;
        (rows_height, rows_that_fit(rows_height))
    };
    let leaves_out = |workers: &[WorkerView]| {
        workers.len() < simulation.workers().len()
            || messages
                .iter()
                .any(|message| !workers.iter().any(|worker| worker.number == message.worker))
    };
    let (mut rows_height, mut rows) = rows_in(0.0);
    let mut workers = shown_workers(simulation, rows);
    if leaves_out(&workers) {
        (rows_height, rows) = rows_in(14.0);
        workers = shown_workers(simulation, rows);
    }
    let wire_left = rect.left() + WORKER_COLUMN_WIDTH + 10.0;
    let wire_right = vault.left() - 10.0;
    let hidden: Vec<WorkerView> = simulation
        .workers()
        .into_iter()
        .filter(|worker| !workers.iter().any(|shown| shown.number == worker.number))
        .collect();
    // Messages whose worker is not shown still travel: say so.
    let unshown = messages
        .iter()
        .filter(|message| !workers.iter().any(|worker| worker.number == message.worker))
        .count();
    let row_height = (rows_height / rows as f32).min(44.0);
    for (row, worker) in workers.iter().enumerate() {
        let y = workers_top + row_height * (row as f32 + 0.5);
        draw_worker(&painter, egui::pos2(rect.left() + 10.0, y), worker);
        // The worker's own wire to the vault.
        let wire_color = if worker.alive {
            Color32::from_rgb(70, 80, 100)
        } else {
            Color32::from_rgb(45, 50, 62)
        };
        painter.line_segment(
            [egui::pos2(wire_left, y), egui::pos2(wire_right, y)],
            Stroke::new(2.0, wire_color),
        );
        for message in messages.iter().filter(|message| message.worker == worker.number) {
            draw_message(&painter, message, wire_left, wire_right, y, simulation.now_ms(), cache);
        }
    }
    footnotes(
        &painter,
        rect,
        wire_left,
        workers_top,
        &hidden,
        workers.is_empty(),
        unshown,
    );
    if !short {
        captions(&painter, rect, wire_left, wire_right, workers_top);
    }
}

/// What the workers' rows leave out: workers not shown, none yet, messages of unshown workers.
fn footnotes(
    painter: &egui::Painter,
    rect: Rect,
    wire_left: f32,
    workers_top: f32,
    hidden: &[WorkerView],
    no_workers: bool,
    unshown: usize,
) {
    if !hidden.is_empty() {
        // Alive workers are shown first: a hidden one ended (finished, crashed, stood down)
        // earlier, unless the stage is too short for every alive worker.
        let words = if hidden.iter().any(|worker| worker.alive) {
            "not shown"
        } else {
            "ended earlier"
        };
        painter.text(
            egui::pos2(rect.left() + 12.0, rect.bottom() - 6.0),
            Align2::LEFT_BOTTOM,
            format!("+{} {words}", counted(hidden.len() as u64, "worker", "workers")),
            FontId::proportional(11.0),
            theme::TEXT_FAINT,
        );
    }
    if no_workers {
        painter.text(
            egui::pos2(rect.left() + 16.0, workers_top + 20.0),
            Align2::LEFT_CENTER,
            "no workers yet",
            FontId::proportional(12.0),
            theme::TEXT_FAINT,
        );
    }
    if unshown > 0 {
        painter.text(
            egui::pos2(wire_left, rect.bottom() - 6.0),
            Align2::LEFT_BOTTOM,
            format!("{} more in flight", counted(unshown as u64, "message", "messages")),
            FontId::proportional(11.0),
            theme::TEXT_FAINT,
        );
    }
}

/// The captions over the workers and the wire (a full stage only: a short one needs the room).
fn captions(painter: &egui::Painter, rect: Rect, wire_left: f32, wire_right: f32, workers_top: f32) {
    // The wire's caption over the wire, shortened where the wire is short (a projector): it
    // never runs into the vault.
    let caption = ["the wire: requests →   ← responses", "the wire", ""]
        .into_iter()
        .map(|text| painter.layout_no_wrap(text.to_owned(), FontId::proportional(11.0), theme::TEXT_FAINT))
        .find(|galley| galley.size().x <= wire_right - wire_left);
    if let Some(caption) = caption {
        let center = egui::pos2((wire_left + wire_right) / 2.0, workers_top - 6.0);
        painter.galley(center - caption.size() / 2.0, caption, theme::TEXT_FAINT);
    }
    painter.text(
        egui::pos2(rect.left() + 12.0, workers_top - 6.0),
        Align2::LEFT_CENTER,
        "Penny's workers",
        FontId::proportional(11.0),
        theme::TEXT_FAINT,
    );
}

/// How many workers' rows of at least [`WORKER_ROW_HEIGHT_MIN`] fit in `rows_height`: at
/// least one, at most [`WORKERS_SHOWN_MAX`].
fn rows_that_fit(rows_height: f32) -> usize {
    ((rows_height / WORKER_ROW_HEIGHT_MIN).floor() as usize).clamp(1, WORKERS_SHOWN_MAX)
}

/// Alive workers first, then the most recent others, up to `rows` (what fits).
fn shown_workers(simulation: &Simulation, rows: usize) -> Vec<WorkerView> {
    let mut workers = simulation.workers();
    // The living first; among them a stopped one or one with a message on the wire (where
    // the cards act), then the newest. Newest first alone hid w1 stopped with its credit in
    // flight behind the duplicate w2 ("+1 worker not shown") at 1280×720.
    let on_the_wire: Vec<u32> = simulation.messages().map(|message| message.worker).collect();
    workers.sort_by_key(|worker| {
        let telling = worker.stopped_words().is_some() || on_the_wire.contains(&worker.number);
        (!worker.alive, !telling, std::cmp::Reverse(worker.number))
    });
    workers.truncate(rows);
    workers.sort_by_key(|worker| worker.number);
    workers
}

fn draw_penny(painter: &egui::Painter, center: Pos2, simulation: &Simulation) {
    let head = Rect::from_center_size(center, egui::vec2(54.0, 44.0));
    painter.line_segment(
        [head.center_top(), head.center_top() - egui::vec2(0.0, 9.0)],
        Stroke::new(2.0, theme::RUNTIME),
    );
    painter.circle_filled(head.center_top() - egui::vec2(0.0, 10.0), 3.5, theme::CREW);
    painter.rect_filled(head, 10.0, Color32::from_rgb(38, 70, 84));
    painter.rect_stroke(head, 10.0, Stroke::new(2.0, theme::RUNTIME), StrokeKind::Inside);
    // Eyes look toward the vault; closed when the level is over.
    for dx in [-11.0, 11.0] {
        let eye = center + egui::vec2(dx, -4.0);
        if simulation.is_over() {
            painter.line_segment(
                [eye - egui::vec2(5.0, 0.0), eye + egui::vec2(5.0, 0.0)],
                Stroke::new(2.0, theme::TEXT),
            );
        } else {
            painter.circle_filled(eye, 5.0, theme::TEXT);
            painter.circle_filled(eye + egui::vec2(1.5, 0.0), 2.2, Color32::from_rgb(20, 30, 40));
        }
    }
    painter.line_segment(
        [center + egui::vec2(-9.0, 11.0), center + egui::vec2(9.0, 11.0)],
        Stroke::new(2.0, theme::TEXT),
    );
    painter.text(
        center + egui::vec2(0.0, 27.0),
        Align2::CENTER_TOP,
        "Penny (model)",
        FontId::proportional(12.0),
        theme::RUNTIME,
    );
}

fn draw_bubble(painter: &egui::Painter, bubble: Rect, penny: Pos2, simulation: &Simulation, session: &Session) {
    if bubble.width() < 60.0 {
        return;
    }
    let decision = simulation
        .timeline()
        .iter()
        .rev()
        .find(|entry| entry.actor == Actor::Model);
    let (text, color) = match decision {
        Some(entry) => (format!("💬 {}", entry.text), theme::TEXT),
        None if session.is_busy() => ("…".to_owned(), theme::TEXT_DIM),
        None => ("Waiting to be asked what to do next…".to_owned(), theme::TEXT_DIM),
    };
    let fill = Color32::from_rgb(232, 238, 246);
    painter.rect_filled(bubble, 10.0, fill);
    // The tail points at Penny.
    let tail_base = egui::pos2(bubble.left(), bubble.top() + 30.0);
    painter.add(egui::Shape::convex_polygon(
        vec![
            tail_base - egui::vec2(0.0, 8.0),
            tail_base + egui::vec2(0.0, 8.0),
            penny + egui::vec2(30.0, -6.0),
        ],
        fill,
        Stroke::NONE,
    ));
    let text_color = if color == theme::TEXT {
        Color32::from_rgb(22, 28, 38)
    } else {
        Color32::from_rgb(90, 96, 110)
    };
    let clip = bubble.shrink(8.0);
    // As many lines as the bubble holds above its phase number, the last ending in "…" (the
    // whole decision is the timeline's row): a long one (42's change_owner beside the wide
    // records panel) was cut mid-line by the bubble's edge.
    let font = FontId::proportional(13.5);
    let row_height = painter
        .layout_no_wrap("Ag".to_owned(), font.clone(), text_color)
        .size()
        .y;
    let rows = (((clip.height() - PHASE_LINE) / row_height).floor() as usize).max(1);
    let mut job = egui::text::LayoutJob::single_section(text, egui::TextFormat::simple(font, text_color));
    job.wrap = egui::text::TextWrapping {
        max_width: bubble.width() - 20.0,
        max_rows: rows,
        break_anywhere: false,
        overflow_character: Some('…'),
    };
    let galley = painter.layout_job(job);
    painter.with_clip_rect(clip).galley(clip.min, galley, text_color);
    if let Some(entry) = decision {
        painter.text(
            bubble.right_bottom() - egui::vec2(8.0, 4.0),
            Align2::RIGHT_BOTTOM,
            format!("phase {}", entry.phase),
            FontId::proportional(10.5),
            Color32::from_rgb(110, 116, 130),
        );
    }
}

fn draw_worker(painter: &egui::Painter, left_center: Pos2, worker: &WorkerView) {
    let stopped = worker.stopped_words();
    let (glyph, word, color) = match &stopped {
        // Stopped (SIGSTOP): its state says what it will do once it runs again, not now.
        Some(_) => ("⏹", "stopped", theme::WARN),
        None => theme::worker_look(worker.state, worker.alive, worker.crashed),
    };
    let figure_color = if worker.alive { color } else { theme::TEXT_FAINT };
    let head = left_center + egui::vec2(12.0, -9.0);
    painter.circle_filled(head, 6.5, figure_color);
    let body = Rect::from_center_size(left_center + egui::vec2(12.0, 7.0), egui::vec2(16.0, 15.0));
    painter.rect_filled(body, 4.0, figure_color);
    if worker.crashed {
        let cross = Rect::from_center_size(left_center + egui::vec2(12.0, 0.0), egui::vec2(24.0, 30.0));
        painter.line_segment([cross.left_top(), cross.right_bottom()], Stroke::new(2.5, theme::BAD));
        painter.line_segment([cross.right_top(), cross.left_bottom()], Stroke::new(2.5, theme::BAD));
    }
    // The worker's words end where the wire begins: a long run id or state is cut with "…"
    // rather than drawn under the messages leaving on the wire.
    let text_width = WORKER_COLUMN_WIDTH - 30.0;
    let title = format!("{} · {}  {glyph} {word}", worker.id, worker.run);
    let title_color = if worker.alive { theme::TEXT } else { theme::TEXT_DIM };
    truncated_text(
        painter,
        left_center + egui::vec2(28.0, -8.0),
        title,
        12.5,
        title_color,
        text_width,
    );
    let mut detail = match &stopped {
        // "stopped until 1450 ms · phase: send": when it runs again, and what it runs then.
        Some(words) => format!("{words} · phase: {}", worker.phase),
        None => format!("phase: {}", worker.phase),
    };
    if let Some(key) = &worker.key {
        // Attempt 0: a recovered worker reconciling has sent nothing of its own to number.
        let attempt = (worker.attempt > 0).then(|| format!(" #{}", worker.attempt));
        detail.push_str(&format!(" · {key}{}", attempt.unwrap_or_default()));
    }
    truncated_text(
        painter,
        left_center + egui::vec2(28.0, 8.0),
        detail,
        11.0,
        theme::TEXT_DIM,
        text_width,
    );
}

/// One line of text starting at `left_center`, cut with "…" past `width`.
pub(super) fn truncated_text(
    painter: &egui::Painter,
    left_center: Pos2,
    text: String,
    size: f32,
    color: Color32,
    width: f32,
) {
    let mut job =
        egui::text::LayoutJob::single_section(text, egui::TextFormat::simple(FontId::proportional(size), color));
    job.wrap = egui::text::TextWrapping::truncate_at_width(width.max(10.0));
    let galley = painter.layout_job(job);
    let top_left = left_center - egui::vec2(0.0, galley.size().y / 2.0);
    painter.galley(top_left, galley, color);
}

fn draw_message(
    painter: &egui::Painter,
    message: &Message,
    left: f32,
    right: f32,
    y: f32,
    now_ms: u64,
    cache: &TimelineCache,
) {
    let span = message.arrives_at_ms.saturating_sub(message.sent_at_ms).max(1) as f32;
    let progress = (now_ms.saturating_sub(message.sent_at_ms) as f32 / span).clamp(0.0, 1.0);
    let (x, lane_y) = match message.direction {
        Direction::Request => (left + (right - left) * progress, y - 9.0),
        Direction::Response => (right - (right - left) * progress, y + 9.0),
    };
    let look = cache.key_look(&message.key);
    let envelope = Rect::from_center_size(egui::pos2(x, lane_y), egui::vec2(24.0, 14.0));
    let fill = if message.lost {
        Color32::from_rgb(70, 40, 44)
    } else {
        look.color.gamma_multiply(0.35)
    };
    painter.rect_filled(envelope, 3.0, fill);
    painter.rect_stroke(envelope, 3.0, Stroke::new(1.5, look.color), StrokeKind::Inside);
    painter.text(
        envelope.center(),
        Align2::CENTER_CENTER,
        look.glyph,
        FontId::proportional(10.0),
        look.color,
    );
    let arrow = match message.direction {
        Direction::Request => "→",
        Direction::Response => "←",
    };
    let what = match (&message.direction, &message.answer) {
        (Direction::Request, _) => format!("{} #{}", message.key, message.attempt),
        (Direction::Response, Some(answer)) => answer_words(answer),
        (Direction::Response, None) => "answer".to_owned(),
    };
    let mut flags = Vec::new();
    if message.lost {
        flags.push("✖ LOST");
    }
    if message.slowed {
        flags.push("🐌 slowed");
    }
    let label_color = if message.lost { theme::BAD } else { look.color };
    let font = FontId::proportional(10.5);
    // The label sits on the envelope's own line, beside it: above or below it, it ran into
    // the stage's captions and the next worker's row.
    let full = std::iter::once(format!("{arrow} {what}"))
        .chain(flags.iter().map(|flag| (*flag).to_owned()))
        .collect::<Vec<_>>()
        .join("  ");
    let galley = painter.layout_no_wrap(full, font.clone(), label_color);
    let (label_x, anchor, room) = label_place(x, left, right);
    let place = |galley: Arc<egui::Galley>, y: f32| {
        let top_left = anchor
            .align_size_within_rect(
                galley.size(),
                Rect::from_center_size(egui::pos2(label_x, y), egui::Vec2::ZERO),
            )
            .min;
        painter.galley(top_left, galley, label_color);
    };
    // A line cut to that side's width if it must be, rather than drawn over the envelope
    // (the answer's words are in the timeline too).
    let line = |text: String| {
        let mut job = egui::text::LayoutJob::single_section(text, egui::TextFormat::simple(font.clone(), label_color));
        job.wrap = egui::text::TextWrapping::truncate_at_width(room.max(1.0));
        painter.layout_job(job)
    };
    if galley.size().x <= room {
        place(galley, lane_y);
        return;
    }
    place(line(format!("{arrow} {what}")), lane_y);
    if flags.is_empty() {
        return;
    }
    // Too wide for one line beside the envelope: the card's flags get a line of their own,
    // away from the wire (above a request, below an answer), so neither is cut mid-word.
    let away = match message.direction {
        Direction::Request => -LABEL_LINE,
        Direction::Response => LABEL_LINE,
    };
    place(line(flags.join("  ")), lane_y + away);
}

/// The bubble's foot the phase number takes, in points.
const PHASE_LINE: f32 = 8.0;

/// A wire label's second line, this far from its first, in points.
const LABEL_LINE: f32 = 12.0;

/// Where a message's label goes on its line, and how wide it may be there: after the
/// envelope while it is in the wire's first half, before it in the second (the roomier side).
/// The width is that side's, so a label too wide for it (a short wire, an envelope in the
/// middle) is cut rather than drawn over the envelope or past the wire.
fn label_place(x: f32, left: f32, right: f32) -> (f32, Align2, f32) {
    /// From the envelope's centre to the label: half the envelope and a small gap.
    const GAP: f32 = 16.0;
    if x < (left + right) / 2.0 {
        (x + GAP, Align2::LEFT_CENTER, (right - x - GAP).max(0.0))
    } else {
        (x - GAP, Align2::RIGHT_CENTER, (x - GAP - left).max(0.0))
    }
}

/// An answer on the wire in a word or two: the wire beside its envelope is about a hundred
/// points at 1280×720, and with a card's flag ("slowed") an id ("applied cr_0001") was cut to
/// "applied cr_…". The ids are in the vault and the timeline's row of the same answer.
fn answer_words(answer: &Answer) -> String {
    match answer {
        Answer::Applied { .. } => "✔ applied".into(),
        Answer::Repeat { .. } => "↺ a repeat".into(),
        Answer::Rejected { .. } => "✖ refused".into(),
        Answer::Balance { balance_cents } => dollars(*balance_cents),
        Answer::Emailed { .. } => "✉ sent".into(),
        Answer::OwnerSet { owner, .. } => format!("✏ {owner}"),
        Answer::Deleted { .. } => "✖ deleted".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_stage_leaves_out_a_row_rather_than_squeeze_the_workers_under_a_footnote() {
        let rows_height = |footnote: f32| STAGE_HEIGHT - 10.0 - footnote - WORKERS_TOP;
        assert_eq!(rows_that_fit(rows_height(0.0)), WORKERS_SHOWN_MAX);
        let with_footnote = rows_that_fit(rows_height(14.0));
        assert_eq!(with_footnote, 3, "four rows under a footnote are 29.5 points each");
        assert!(rows_height(14.0) / with_footnote as f32 >= WORKER_ROW_HEIGHT_MIN);
        assert_eq!(rows_that_fit(0.0), 1, "always one row");
    }

    #[test]
    fn a_message_label_stays_on_its_wire_beside_the_envelope() {
        // The first half: after the envelope; the second: before it; as wide as the wire
        // leaves on that side.
        assert_eq!(label_place(10.0, 0.0, 400.0), (26.0, Align2::LEFT_CENTER, 374.0));
        assert_eq!(label_place(190.0, 0.0, 400.0), (206.0, Align2::LEFT_CENTER, 194.0));
        assert_eq!(label_place(290.0, 0.0, 400.0), (274.0, Align2::RIGHT_CENTER, 274.0));
        assert_eq!(label_place(390.0, 0.0, 400.0), (374.0, Align2::RIGHT_CENTER, 374.0));
        // The stage's wire at 1280×720 (190 points) with a slowed answer in its middle: the
        // label gets the 84 points before the envelope, never the envelope's own place
        // (it was clamped back over the envelope).
        let (label_x, anchor, room) = label_place(100.0, 0.0, 190.0);
        assert_eq!((label_x, anchor, room), (84.0, Align2::RIGHT_CENTER, 84.0));
        assert!(
            label_x <= 100.0 - 12.0,
            "the label ends before the envelope's left edge"
        );
        // Not there at all: no room, never a panic.
        assert_eq!(label_place(30.0, 100.0, 40.0), (46.0, Align2::LEFT_CENTER, 0.0));
    }
}
