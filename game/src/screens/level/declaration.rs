//! The tool declaration: in a level that lets the player write a tool's declaration (its side
//! effect, the attempts the framework's retry policy gives it, whether it passes the key), a
//! window shows the declaration as it stands, a draft, and the contract check's verdict on
//! both. Declaring sends `Play::DeclareTool` as an intent; the verdicts and whether declaring
//! is still open come from `twice_world::hand::declaration`, so the browser says the same.

use bevy_egui::egui::{self, RichText};
use twice_world::cards::DeclareTool;
use twice_world::hand::{self, Declarable};
use twice_world::level::Play;
use twice_world::runtime::tool::{READ_ATTEMPTS_MAX, SideEffect};
use twice_world::simulator::Simulation;

use super::LevelUi;
use crate::session::{Intent, Mode, Session};
use crate::ui::theme;

/// A draft of one tool's declaration, as the window edits it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Draft {
    pub side_effect: SideEffect,
    pub attempts: u32,
    pub takes_key: bool,
}

impl Draft {
    fn of(declarable: &Declarable) -> Draft {
        Draft {
            side_effect: declarable.tool.side_effect,
            attempts: declarable.tool.declared_attempts(),
            takes_key: declarable.tool.takes_key,
        }
    }
}

/// Why the player cannot declare now, if they cannot.
fn blocked(session: &Session, simulation: &Simulation, closed: Option<&str>, left: u32) -> Option<String> {
    if session.mode == Mode::Replay {
        Some("a tape's moves are fixed".into())
    } else if session.is_busy() {
        Some("the simulation is busy".into())
    } else if simulation.is_out_of_phases() {
        Some("the level is out of phases".into())
    } else if let Some(closed) = closed {
        Some(closed.to_owned())
    } else if left == 0 {
        Some("no declarations left in this level".into())
    } else {
        None
    }
}

pub fn draw(
    context: &egui::Context,
    session: &Session,
    simulation: &Simulation,
    level_ui: &mut LevelUi,
    intents: &mut Vec<Intent>,
) {
    let Some(declaration) = hand::declaration(simulation) else {
        return;
    };
    if level_ui.declaration_hidden {
        return;
    }
    let blocked = blocked(session, simulation, declaration.closed.as_deref(), declaration.left);
    let mut open = true;
    egui::Window::new("Tool declaration")
        .id(egui::Id::new("tool-declaration"))
        .open(&mut open)
        .default_width(430.0)
        .default_pos(context.viewport_rect().center_top() + egui::vec2(-215.0, 70.0))
        .show(context, |ui| {
            let (check, color) = if declaration.check_on {
                (
                    "The tool contract check is on: a run whose tool fails it is refused before anything is sent.",
                    theme::GOOD,
                )
            } else {
                (
                    "The tool contract check is off: the runtime obeys the declaration, retries and all.",
                    theme::WARN,
                )
            };
            ui.label(RichText::new(check).size(theme::SMALL).color(color));
            for declarable in &declaration.tools {
                ui.separator();
                draw_tool(ui, declarable, blocked.as_deref(), level_ui, intents);
            }
            ui.separator();
            let footer = match &blocked {
                Some(why) => format!("Declaring: {why}."),
                None => format!(
                    "Declarations left × {}. Legal until Penny's first call; the runs start again under it. D hides this.",
                    declaration.left
                ),
            };
            ui.label(RichText::new(footer).size(theme::SMALL).color(theme::TEXT_DIM));
        });
    if !open {
        level_ui.declaration_hidden = true;
    }
}

fn draw_tool(
    ui: &mut egui::Ui,
    declarable: &Declarable,
    blocked: Option<&str>,
    level_ui: &mut LevelUi,
    intents: &mut Vec<Intent>,
) {
    let name = declarable.tool.name.to_string();
    ui.horizontal_wrapped(|ui| {
        ui.label(RichText::new(&name).monospace().strong().color(theme::TEXT));
        ui.label(RichText::new(format!("is declared {}", declarable.tool.summary())).color(theme::TEXT));
    });
    verdict_line(ui, "now", declarable.violation.as_deref(), declarable.policy.as_deref());
    let mut draft = level_ui
        .declaration_drafts
        .get(&name)
        .copied()
        .unwrap_or_else(|| Draft::of(declarable));
    ui.horizontal(|ui| {
        ui.label(RichText::new("draft").size(theme::SMALL).color(theme::TEXT_DIM));
        egui::ComboBox::from_id_salt(("declare-side-effect", name.as_str()))
            .selected_text(draft.side_effect.name())
            .show_ui(ui, |ui| {
                for side_effect in SideEffect::ALL {
                    ui.selectable_value(&mut draft.side_effect, side_effect, side_effect.name());
                }
            });
        ui.add(egui::Slider::new(&mut draft.attempts, 1..=READ_ATTEMPTS_MAX).text("attempts"));
        ui.checkbox(&mut draft.takes_key, "takes the key");
    });
    let draft_verdict = declarable.drafts.iter().find(|verdict| {
        verdict.side_effect == draft.side_effect
            && verdict.attempts == draft.attempts
            && verdict.takes_key == draft.takes_key
    });
    if let Some(verdict) = draft_verdict {
        verdict_line(ui, "draft", verdict.violation.as_deref(), verdict.policy.as_deref());
    }
    // The draft as the code it would be: the decorator and the body the developer writes.
    let drafted = declarable
        .tool
        .declared_as(draft.side_effect, draft.attempts, draft.takes_key);
    for line in twice_world::code::declaration_code(&drafted) {
        ui.label(
            RichText::new(line.text)
                .monospace()
                .size(super::code::CODE_SIZE)
                .color(theme::TEXT_DIM),
        );
    }
    let button = ui
        .add_enabled(blocked.is_none(), egui::Button::new(format!("Declare {name} so")))
        .on_disabled_hover_text(blocked.unwrap_or_default());
    if button.clicked() {
        intents.push(Intent::Play(Play::DeclareTool(DeclareTool {
            tool: name.clone(),
            side_effect: draft.side_effect,
            attempts: draft.attempts,
            takes_key: draft.takes_key,
        })));
    }
    level_ui.declaration_drafts.insert(name, draft);
}

/// The contract check's words on a declaration: passes, or what it would refuse.
/// The start checks' verdict on a declaration: the contract check's, then the ambiguity
/// policy's (on in this run) for a declaration that passes the first.
fn verdict_line(ui: &mut egui::Ui, which: &str, violation: Option<&str>, policy: Option<&str>) {
    let (text, color) = match (violation, policy) {
        (None, None) => (format!("✔ {which}: passes the tool contract check"), theme::GOOD),
        (None, Some(policy)) => (
            format!(
                "✖ {which}: passes the tool contract check, but the ambiguity policy check (on here) refuses it: {}",
                twice_world::debrief::plain(policy)
            ),
            theme::BAD,
        ),
        (Some(violation), _) => (
            format!("✖ {which}: {}", twice_world::debrief::plain(violation)),
            theme::BAD,
        ),
    };
    ui.label(RichText::new(text).size(theme::SMALL).color(color));
}
