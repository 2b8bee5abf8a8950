//! The debrief points at code: the lines of the guards that decided the run, lit, and the
//! other run's fix as a diff — the naive line struck and the guard's own line added, or the
//! reverse for a guard that was on. With another run open (O), the diff is that run's guards;
//! else the deciding guards'. Lines and diff come from [`twice_world::code`].

use bevy_egui::egui::{self, Color32, RichText};
use twice_world::code::{self, Change, Excerpt};
use twice_world::debrief::Debrief;
use twice_world::simulator::Simulation;

use crate::screens::level::code::{CODE_SIZE, mark_color};
use crate::ui::{self, theme, whole_lines};

/// Unchanged lines shown around each change of the fix.
const CONTEXT_LINES: usize = 1;
/// The most of the central panel's height the code takes; the timeline keeps the rest.
const SHARE_MAX: f32 = 0.42;

/// The code that decided, above the timelines. Nothing when no guard decided (an operator,
/// billing's keys): no guard's line can be pointed at then.
pub fn draw(ui: &mut egui::Ui, simulation: &Simulation, told: Option<&Debrief>, other_run: Option<usize>) {
    let Some(told) = told else {
        return;
    };
    let deciding = told.deciding_guards();
    let switched = told.fix_guards(other_run);
    if switched.is_empty() {
        return;
    }
    let program = code::program_of(simulation);
    let fix = code::fix(simulation.level(), simulation.guards(), &switched);
    let max_height = ui.available_height() * SHARE_MAX;
    ui.allocate_ui(egui::vec2(ui.available_width(), max_height), |ui| {
        ui::section(ui, "The code that decided", |ui| {
            // The lines under its heading, its foot on a whole line: one per run told (the
            // other run's fix is other lines).
            let id = egui::Id::new(("debrief-code", simulation.phase(), other_run));
            whole_lines::scroll(ui, egui::ScrollArea::vertical(), id, |ui| {
                ui.spacing_mut().item_spacing.y = 1.0;
                for (index, line) in program.lines.iter().enumerate() {
                    if line.guard.is_some_and(|mark| deciding.contains(&mark.guard)) {
                        code_line(ui, &format!("{:>2}", index + 1), line, theme::CREW, false)
                            .on_hover_text(line.hover().unwrap_or_default());
                    }
                }
                ui.add_space(4.0);
                ui::hint(ui, fix.caption.clone());
                for piece in fix.excerpt(CONTEXT_LINES) {
                    match piece {
                        Excerpt::Gap { lines } => {
                            ui::hint(
                                ui,
                                format!("… {lines} unchanged line{}", if lines == 1 { "" } else { "s" }),
                            );
                        }
                        Excerpt::Line(diff) => {
                            let (sign, color, struck) = match diff.change {
                                Change::Same => (" ", theme::TEXT_DIM, false),
                                Change::Removed => ("-", theme::BAD, true),
                                Change::Added => ("+", theme::GOOD, false),
                            };
                            code_line(ui, sign, &diff.line, color, struck)
                                .on_hover_text(diff.line.hover().unwrap_or_default());
                        }
                    }
                }
            });
        });
    });
    ui.add_space(6.0);
}

/// One line: a margin (its number, or the diff's sign), the guard's mark, the code.
fn code_line(ui: &mut egui::Ui, margin: &str, line: &code::Line, color: Color32, struck: bool) -> egui::Response {
    ui.horizontal(|ui| {
        ui.spacing_mut().item_spacing.x = 4.0;
        ui.label(
            RichText::new(margin)
                .monospace()
                .size(CODE_SIZE)
                .color(theme::TEXT_FAINT),
        );
        match line.guard {
            Some(mark) => ui.label(
                RichText::new(mark.glyph().to_string())
                    .monospace()
                    .size(CODE_SIZE)
                    .color(mark_color(mark.on)),
            ),
            None => ui.label(RichText::new(" ").monospace().size(CODE_SIZE)),
        };
        let mut text = RichText::new(line.shown()).monospace().size(CODE_SIZE).color(color);
        if struck {
            text = text.strikethrough();
        }
        ui.add(egui::Label::new(text).truncate());
    })
    .response
}
