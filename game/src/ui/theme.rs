//! Colours, glyphs and text styles. Every status is told by a glyph and a word as well as
//! a colour, so nothing depends on telling colours apart.

use bevy::color::Color;
use bevy_egui::egui::{self, Color32, FontFamily, FontId, TextStyle};
use twice_world::checker::Outcome;
use twice_world::runtime::rules::Status;
use twice_world::runtime::worker::WorkerState;

pub const BACKGROUND_BEVY: Color = Color::srgb(0.055, 0.063, 0.082);

pub const BACKGROUND: Color32 = Color32::from_rgb(14, 16, 21);
pub const PANEL: Color32 = Color32::from_rgb(24, 27, 35);
pub const PANEL_RAISED: Color32 = Color32::from_rgb(33, 37, 48);
pub const PANEL_BORDER: Color32 = Color32::from_rgb(52, 58, 74);
pub const TEXT: Color32 = Color32::from_rgb(226, 230, 238);
pub const TEXT_DIM: Color32 = Color32::from_rgb(150, 158, 175);
pub const TEXT_FAINT: Color32 = Color32::from_rgb(105, 112, 128);
/// The crew (the player): a heist's gold.
pub const CREW: Color32 = Color32::from_rgb(255, 196, 70);
/// The level's scripted operator (op-honest): another person at the console, not the player.
pub const SCRIPTED_OPERATOR: Color32 = Color32::from_rgb(235, 130, 190);
/// Penny and the runtime.
pub const RUNTIME: Color32 = Color32::from_rgb(96, 200, 220);
pub const GOOD: Color32 = Color32::from_rgb(110, 210, 120);
pub const BAD: Color32 = Color32::from_rgb(240, 96, 96);
pub const WARN: Color32 = Color32::from_rgb(240, 170, 60);
pub const INFO: Color32 = Color32::from_rgb(120, 160, 255);
pub const VIOLET: Color32 = Color32::from_rgb(190, 140, 255);
pub const MONEY: Color32 = Color32::from_rgb(120, 220, 160);

pub const SMALL: f32 = 12.5;
pub const BODY: f32 = 14.5;
pub const HEADING: f32 = 17.0;
pub const TITLE: f32 = 34.0;

pub fn status_color(status: Status) -> Color32 {
    match status {
        Status::Started => INFO,
        Status::Completed => GOOD,
        Status::Failed => BAD,
        Status::Indeterminate => WARN,
        Status::Compensating | Status::Compensated => VIOLET,
    }
}

/// The status's glyph as the game can draw it. egui's bundled fonts have no ✘ (U+2718),
/// so `failed` is drawn with the heavy ✖ (U+2716); every other glyph is `Status::glyph()`'s own.
pub fn status_glyph(status: Status) -> char {
    match status.glyph() {
        '✘' => '✖',
        glyph => glyph,
    }
}

/// `✔ completed`: glyph and word.
pub fn status_label(status: Status) -> String {
    format!("{} {}", status_glyph(status), status.name())
}

pub fn outcome_color(outcome: Outcome) -> Color32 {
    match outcome {
        Outcome::PaidTwice | Outcome::EmailedTwice | Outcome::ChangeUndone | Outcome::ActedAgain => BAD,
        Outcome::NotPaidButOwed | Outcome::NotDone => WARN,
        Outcome::UnknownFlagged => INFO,
        Outcome::PaidOnce | Outcome::DoneOnce => GOOD,
    }
}

pub fn outcome_glyph(outcome: Outcome) -> &'static str {
    match outcome {
        Outcome::PaidTwice => "💸",
        Outcome::EmailedTwice => "✉",
        Outcome::ChangeUndone => "✏",
        Outcome::ActedAgain => "↻",
        Outcome::NotPaidButOwed | Outcome::NotDone => "✖",
        Outcome::UnknownFlagged => "?",
        Outcome::PaidOnce | Outcome::DoneOnce => "✔",
    }
}

/// What an outcome means, in a few words (the world's, which the browser shows too).
pub fn outcome_words(outcome: Outcome) -> &'static str {
    outcome.words()
}

/// A worker's state as a glyph, a word and a colour.
pub fn worker_look(state: WorkerState, alive: bool, crashed: bool) -> (&'static str, &'static str, Color32) {
    if crashed {
        return ("✖", "crashed", BAD);
    }
    if !alive {
        return match state {
            WorkerState::StoodDown => ("⏏", "stood down", TEXT_DIM),
            WorkerState::WaitingForPerson => ("✋", "waits for a person", BAD),
            _ => ("■", "exited", TEXT_DIM),
        };
    }
    match state {
        WorkerState::Booting => ("…", "booting", TEXT_DIM),
        WorkerState::Deciding => ("💭", "asking Penny", RUNTIME),
        WorkerState::Reserving => ("🔑", "reserving", INFO),
        WorkerState::Calling => ("📨", "calling billing", CREW),
        WorkerState::Recording => ("📝", "recording", INFO),
        WorkerState::Reconciling => ("🔍", "reconciling", VIOLET),
        WorkerState::Saving => ("💾", "saving", INFO),
        WorkerState::Parked => ("⏸", "parked", WARN),
        WorkerState::StoodDown => ("⏏", "stood down", TEXT_DIM),
        WorkerState::WaitingForPerson => ("✋", "waits for a person", BAD),
        WorkerState::Exited => ("■", "exited", TEXT_DIM),
    }
}

/// One key's look: a colour and a glyph, distinct for the first 64 keys. Worked out by
/// [`twice_world::key_look`], which the browser draws from too; here only made egui's colour.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KeyLook {
    pub color: Color32,
    pub glyph: char,
}

impl From<twice_world::key_look::KeyLook> for KeyLook {
    fn from(look: twice_world::key_look::KeyLook) -> KeyLook {
        let [red, green, blue] = look.rgb;
        KeyLook {
            color: Color32::from_rgb(red, green, blue),
            glyph: look.glyph,
        }
    }
}

/// The look of the key numbered `index` by first appearance.
pub fn key_look(index: usize) -> KeyLook {
    twice_world::key_look::KeyLook::at(index).into()
}

/// Dark, readable, with the game's text sizes.
pub fn apply(context: &egui::Context) {
    let mut fonts = egui::FontDefinitions::default();
    // Hack carries the geometric glyphs (▲ ◆ ▼ ◉) the key markers use.
    if let Some(family) = fonts.families.get_mut(&FontFamily::Proportional) {
        family.push("Hack".into());
    }
    context.set_fonts(fonts);
    // The game is dark whatever the desktop prefers.
    context.set_theme(egui::Theme::Dark);
    context.all_styles_mut(|style| {
        style.text_styles = [
            (TextStyle::Small, FontId::proportional(SMALL)),
            (TextStyle::Body, FontId::proportional(BODY)),
            (TextStyle::Button, FontId::proportional(BODY)),
            (TextStyle::Heading, FontId::proportional(HEADING)),
            (TextStyle::Monospace, FontId::monospace(13.0)),
        ]
        .into();
        style.spacing.item_spacing = egui::vec2(8.0, 5.0);
        style.spacing.button_padding = egui::vec2(8.0, 4.0);
        style.spacing.interact_size.y = 24.0;
        let visuals = &mut style.visuals;
        *visuals = egui::Visuals::dark();
        visuals.panel_fill = PANEL;
        visuals.window_fill = PANEL_RAISED;
        visuals.extreme_bg_color = BACKGROUND;
        visuals.faint_bg_color = Color32::from_rgb(29, 33, 43);
        visuals.override_text_color = Some(TEXT);
        visuals.window_stroke = egui::Stroke::new(1.0, PANEL_BORDER);
        visuals.widgets.noninteractive.bg_stroke = egui::Stroke::new(1.0, PANEL_BORDER);
        visuals.widgets.inactive.weak_bg_fill = Color32::from_rgb(44, 50, 64);
        visuals.widgets.inactive.bg_fill = Color32::from_rgb(44, 50, 64);
        visuals.widgets.hovered.weak_bg_fill = Color32::from_rgb(62, 70, 90);
        visuals.widgets.active.weak_bg_fill = Color32::from_rgb(80, 90, 116);
        visuals.selection.bg_fill = Color32::from_rgb(70, 88, 130);
        visuals.selection.stroke = egui::Stroke::new(1.0, TEXT);
    });
}
