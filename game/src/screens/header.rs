//! The top bar the menu screens share (level select, sandbox, replay, defender mode, the
//! ending): a back button on Esc, the screen's title in its colour, then whatever the screen
//! adds on that line and below it.

use bevy_egui::egui::{self, RichText};

use crate::ui::{self, theme};

/// The title's size on a screen's top bar.
pub const TITLE_SIZE: f32 = 22.0;

/// What a screen's top bar says.
pub struct Header<'a> {
    pub id: &'a str,
    /// The back button's label ("← Title"); its key is Esc.
    pub back: &'a str,
    pub title: RichText,
}

impl<'a> Header<'a> {
    pub fn new(id: &'a str, back: &'a str, title: impl Into<String>, color: egui::Color32) -> Header<'a> {
        Header {
            id,
            back,
            title: RichText::new(title).size(TITLE_SIZE).strong().color(color),
        }
    }

    /// Draws the bar along the top of `root`: `row` adds to the title's line, `below` adds
    /// lines under it. Returns whether the back button was clicked.
    pub fn show(self, root: &mut egui::Ui, row: impl FnOnce(&mut egui::Ui), below: impl FnOnce(&mut egui::Ui)) -> bool {
        let mut back = false;
        egui::Panel::top(egui::Id::new(self.id))
            .frame(
                egui::Frame::new()
                    .fill(theme::PANEL)
                    .inner_margin(egui::Margin::symmetric(14, 8)),
            )
            .show(root, |ui| {
                ui.horizontal(|ui| {
                    back = ui::button(ui, true, self.back, "Esc").clicked();
                    ui.add_space(8.0);
                    ui.add(egui::Label::new(self.title).truncate());
                    ui.add_space(8.0);
                    row(ui);
                });
                below(ui);
            });
        back
    }
}
