//! The level screen's keyboard: every control has a key (the `?` overlay lists them).

use bevy_egui::egui;
use twice_world::simulator::Simulation;

use super::{
    Chooser, LevelUi, Prompt, PromptKind, SIDE_COLUMNS_AND_NOTES_WIDTH_MIN, cards, controls, ledger, pause_menu,
};
use crate::panels::Panel;
use crate::paths::GamePaths;
use crate::session::{Intent, Session};
use crate::ui;

pub(super) fn read(
    context: &egui::Context,
    level_ui: &mut LevelUi,
    session: &Session,
    simulation: &Simulation,
    paths: &GamePaths,
    intents: &mut Vec<Intent>,
) {
    use egui::Key;
    // Dialogs that take typing take the keyboard first; they handle their own keys when drawn.
    if level_ui.prompt.is_some() || level_ui.predict.is_some() || level_ui.pause_menu.is_some() {
        return;
    }
    // A target chooser keeps only its own keys (a number picks, Esc cancels): any other key
    // closes it and does what it always does, so a key pressed after it is never lost.
    if let Some(chooser) = level_ui.chooser {
        if ui::pressed(context, Key::Escape) || DIGITS.iter().any(|digit| ui::pressed(context, *digit)) {
            return;
        }
        // A key that moves time would carry the run past the moment a card waiting for its
        // target was chosen for, and drop it unplayed: it is held, and the player told why.
        if let Chooser::Card(card) = chooser
            && moves_time(context)
        {
            level_ui.flash = Some(cards::held_step(card));
            return;
        }
        if any_key_pressed(context) {
            level_ui.chooser = None;
        }
    }
    if level_ui.help {
        if ui::pressed(context, Key::Escape) || ui::typed(context, "?") || ui::pressed(context, Key::F1) {
            level_ui.help = false;
        }
        return;
    }
    if ui::pressed(context, Key::T) {
        level_ui.glossary = !level_ui.glossary;
        return;
    }
    // Esc closes the glossary before it leaves the level.
    if level_ui.glossary && ui::pressed(context, Key::Escape) {
        level_ui.glossary = false;
        return;
    }
    if ui::typed(context, "?") || ui::pressed(context, Key::F1) {
        level_ui.help = true;
        return;
    }
    // Esc pauses: the run is kept until the player chooses to leave it in the menu.
    if ui::pressed(context, Key::Escape) {
        pause_menu::open(level_ui, session, simulation, intents);
        return;
    }
    simulation_keys(context, simulation, intents);
    if ui::pressed(context, Key::S) {
        level_ui.prompt = Some(Prompt {
            kind: PromptKind::SaveTape,
            text: controls::suggested_tape_path(paths, session).display().to_string(),
            focus: true,
        });
    }
    if ui::pressed(context, Key::L) {
        level_ui.prompt = Some(Prompt {
            kind: PromptKind::LoadTape,
            text: paths.levels.display().to_string() + "/",
            focus: true,
        });
    }
    if ui::pressed(context, Key::B) {
        if session.panels.shows(Panel::Rulebook) {
            level_ui.rulebook = !level_ui.rulebook;
        } else {
            level_ui.flash = Some(arrives_later(Panel::Rulebook));
        }
    }
    view_keys(context, level_ui);
    if ui::pressed(context, Key::H) {
        intents.push(Intent::OpenHint);
    }
    if ui::pressed(context, Key::G) {
        level_ui.prompt = Some(Prompt {
            kind: PromptKind::GoToPhase,
            text: String::new(),
            focus: true,
        });
    }
    if ui::pressed(context, Key::O) {
        if session.panels.shows(Panel::Console) {
            level_ui.focus_reason = true;
        } else {
            level_ui.flash = Some(arrives_later(Panel::Console));
        }
    }
    for (index, digit) in DIGITS.iter().enumerate() {
        if ui::pressed(context, *digit)
            && let Some(card) = cards::hand_order(simulation).get(index)
        {
            // The key chose the card: the chooser it may open is drawn later in this frame
            // and reads digits too, so left unconsumed "2" also picked its second target.
            context.input_mut(|input| input.consume_key(egui::Modifiers::NONE, *digit));
            cards::choose(*card, session, simulation, level_ui, intents);
        }
    }
    if session.panels.shows(Panel::Ledger) {
        ledger::keyboard(context, level_ui, session);
    }
}

/// The number keys, which play the hand's cards (and pick a chooser's targets).
pub(super) const DIGITS: [egui::Key; 9] = [
    egui::Key::Num1,
    egui::Key::Num2,
    egui::Key::Num3,
    egui::Key::Num4,
    egui::Key::Num5,
    egui::Key::Num6,
    egui::Key::Num7,
    egui::Key::Num8,
    egui::Key::Num9,
];

/// A key went down this frame (typed text counts: `?`, `+`).
/// A key of [`simulation_keys`] that moves the run on: run/pause, step, run to the end.
fn moves_time(context: &egui::Context) -> bool {
    use egui::Key;
    [Key::Space, Key::Period, Key::ArrowRight, Key::E]
        .into_iter()
        .any(|key| ui::pressed(context, key))
}

fn any_key_pressed(context: &egui::Context) -> bool {
    context.input(|input| {
        input
            .events
            .iter()
            .any(|event| matches!(event, egui::Event::Key { pressed: true, .. } | egui::Event::Text(_)))
    })
}

/// The keys that show or hide parts of the screen: the side columns, the notes, the code and
/// the declaration.
fn view_keys(context: &egui::Context, level_ui: &mut LevelUi) {
    use egui::Key;
    let narrow = context.viewport_rect().width() < SIDE_COLUMNS_AND_NOTES_WIDTH_MIN;
    if ui::pressed(context, Key::P) {
        level_ui.side_panels = !level_ui.side_panels;
        // On a narrow screen the side columns and the notes take turns: all three would
        // leave the stage no room at all.
        if narrow && level_ui.side_panels {
            level_ui.notes = false;
        }
    }
    if ui::pressed(context, Key::N) {
        level_ui.notes = !level_ui.notes;
        if narrow && level_ui.notes {
            level_ui.side_panels = false;
        }
    }
    if ui::pressed(context, Key::C) {
        level_ui.code = !level_ui.code;
        level_ui.code_aim_line = None;
    }
    if ui::pressed(context, Key::D) {
        level_ui.declaration_hidden = !level_ui.declaration_hidden;
    }
}

/// The simulation's keys: play, step, rewind, speed, restart, to the end, the debrief.
fn simulation_keys(context: &egui::Context, simulation: &Simulation, intents: &mut Vec<Intent>) {
    use egui::Key;
    if ui::pressed(context, Key::Space) {
        intents.push(Intent::ToggleRunning);
    }
    if ui::pressed(context, Key::Period) || ui::pressed(context, Key::ArrowRight) {
        intents.push(Intent::Step);
    }
    if ui::pressed(context, Key::Comma) || ui::pressed(context, Key::ArrowLeft) {
        intents.push(Intent::Rewind {
            phase: simulation.phase().saturating_sub(1),
        });
    }
    if ui::pressed(context, Key::Home) {
        intents.push(Intent::Rewind { phase: 0 });
    }
    if ui::typed(context, "+") || ui::typed(context, "=") {
        intents.push(Intent::ChangeSpeed(1));
    }
    if ui::typed(context, "-") {
        intents.push(Intent::ChangeSpeed(-1));
    }
    if ui::pressed(context, Key::R) {
        intents.push(Intent::Restart);
    }
    if ui::pressed(context, Key::E) {
        intents.push(Intent::RunToEnd);
    }
    if ui::pressed(context, Key::Enter) {
        intents.push(Intent::Debrief);
    }
}

/// Why a key for a panel that has not arrived yet did nothing.
fn arrives_later(panel: Panel) -> String {
    let title = panel.title();
    let mut letters = title.chars();
    let capitalised: String = letters
        .next()
        .map(|first| first.to_uppercase().chain(letters).collect())
        .unwrap_or_default();
    format!(
        "{capitalised} arrives in chapter {} of the campaign (the sandbox shows everything).",
        panel.arrives_in_chapter()
    )
}
