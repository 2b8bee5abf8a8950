//! Shared UI: the egui style, the root `Ui` every screen draws into, and small widgets.

use bevy::prelude::*;
use bevy_egui::egui::{self, Color32, RichText};
use bevy_egui::{EguiContexts, EguiPrimaryContextPass};
use twice_world::runtime::rules::Status;

use crate::presenter::Presenter;

pub mod probe;
pub mod theme;
pub mod whole_lines;

pub(super) fn plugin(app: &mut App) {
    app.add_systems(EguiPrimaryContextPass, apply_style);
}

/// Sets fonts and colours once the primary egui context exists.
fn apply_style(mut contexts: EguiContexts, presenter: Res<Presenter>, mut applied: Local<bool>) -> Result {
    if !*applied {
        let context = contexts.ctx_mut()?;
        theme::apply(context);
        // At a projector everything is drawn larger: text, the timeline, the panels' widths.
        context.set_zoom_factor(presenter.zoom());
        *applied = true;
    }
    Ok(())
}

/// The whole window as one `Ui`, for panels (egui 0.36 panels are shown inside a `Ui`).
pub fn root_ui(context: &egui::Context, id: &str) -> egui::Ui {
    egui::Ui::new(
        context.clone(),
        egui::Id::new(id),
        egui::UiBuilder::new()
            .layer_id(egui::LayerId::background())
            .max_rect(context.viewport_rect()),
    )
}

/// A titled box with the game's frame.
pub fn section<R>(ui: &mut egui::Ui, title: &str, add_contents: impl FnOnce(&mut egui::Ui) -> R) -> R {
    egui::Frame::new()
        .fill(theme::PANEL_RAISED)
        .stroke(egui::Stroke::new(1.0, theme::PANEL_BORDER))
        .corner_radius(6)
        .inner_margin(egui::Margin::symmetric(8, 6))
        .show(ui, |ui| {
            ui.set_width(ui.available_width());
            ui.label(RichText::new(title).size(theme::HEADING).strong().color(theme::TEXT));
            ui.add_space(2.0);
            add_contents(ui)
        })
        .inner
}

/// `✔ completed` in the status's colour.
pub fn status_text(status: Status) -> RichText {
    RichText::new(theme::status_label(status)).color(theme::status_color(status))
}

/// A keyboard key, drawn as a key cap.
pub fn key_cap(ui: &mut egui::Ui, key: &str) {
    egui::Frame::new()
        .fill(Color32::from_rgb(50, 56, 72))
        .stroke(egui::Stroke::new(1.0, Color32::from_rgb(90, 98, 120)))
        .corner_radius(4)
        .inner_margin(egui::Margin::symmetric(5, 1))
        .show(ui, |ui| {
            ui.label(key_cap_text(key));
        });
}

/// A key cap's words.
fn key_cap_text(key: &str) -> RichText {
    RichText::new(key).size(12.0).strong().color(theme::TEXT)
}

/// How tall [`key_cap`] draws a key: a line of its words, its margins and its edge.
pub const KEY_CAP_HEIGHT: f32 = 20.0;

/// How wide [`key_cap`] draws `key`: its words, its margins and its edge.
pub fn key_cap_width(ui: &egui::Ui, key: &str) -> f32 {
    let galley = egui::WidgetText::from(key_cap_text(key)).into_galley(
        ui,
        Some(egui::TextWrapMode::Extend),
        f32::INFINITY,
        egui::FontSelection::Default,
    );
    galley.size().x + 2.0 * 5.0 + 2.0
}

/// A button with its keyboard shortcut shown beside the label.
pub fn button(ui: &mut egui::Ui, enabled: bool, label: &str, shortcut: &str) -> egui::Response {
    // The key in the proportional face: the monospace "O" (the debrief's other run) was drawn
    // exactly like a zero, and a newcomer pressed 0.
    let button = egui::Button::new(RichText::new(label).size(theme::BODY))
        .shortcut_text(RichText::new(shortcut).size(11.5).color(theme::TEXT_FAINT));
    ui.add_enabled(enabled, button)
}

/// A line of small, dim text.
pub fn hint(ui: &mut egui::Ui, text: impl Into<String>) {
    ui.label(RichText::new(text.into()).size(theme::SMALL).color(theme::TEXT_DIM));
}

/// True when a text field has the keyboard: shortcuts must not fire then.
pub fn typing(context: &egui::Context) -> bool {
    context.egui_wants_keyboard_input()
}

/// Whether `key` was pressed this frame (and no text field has the keyboard).
pub fn pressed(context: &egui::Context, key: egui::Key) -> bool {
    !typing(context) && context.input(|input| input.key_pressed(key))
}

/// Whether `text` (such as `?` or `+`) was typed this frame, outside text fields.
pub fn typed(context: &egui::Context, text: &str) -> bool {
    !typing(context)
        && context.input(|input| {
            input
                .events
                .iter()
                .any(|event| matches!(event, egui::Event::Text(typed) if typed == text))
        })
}

/// `text` with the glossary's words drawn as links — the first mention of each, and never
/// the entry `except` (a definition does not link to itself): hovering one shows its
/// definition, clicking it returns its entry (the caller opens the glossary there).
pub fn glossary_text(
    ui: &mut egui::Ui,
    text: &str,
    glossary: &twice_world::glossary::Glossary,
    (size, color): (f32, Color32),
    except: Option<usize>,
) -> Option<usize> {
    let mut linked = std::collections::BTreeSet::new();
    let mentions: Vec<_> = glossary
        .mentions(text)
        .into_iter()
        .filter(|mention| Some(mention.entry) != except && linked.insert(mention.entry))
        .collect();
    let mut clicked = None;
    ui.horizontal_wrapped(|ui| {
        ui.spacing_mut().item_spacing.x = 0.0;
        let mut at = 0;
        for mention in &mentions {
            if mention.range.start > at {
                ui.label(RichText::new(&text[at..mention.range.start]).size(size).color(color));
            }
            let Some(entry) = glossary.entries.get(mention.entry) else {
                continue;
            };
            let word = RichText::new(&text[mention.range.clone()])
                .size(size)
                .color(theme::INFO)
                .underline();
            let response = ui
                .add(egui::Label::new(word).sense(egui::Sense::click()))
                .on_hover_text(format!("{}: {}", entry.term, entry.definition));
            if response.clicked() {
                clicked = Some(mention.entry);
            }
            at = mention.range.end;
        }
        if at < text.len() {
            ui.label(RichText::new(&text[at..]).size(size).color(color));
        }
    });
    clicked
}
