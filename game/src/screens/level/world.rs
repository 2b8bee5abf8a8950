//! The left column: Penny's task, which guards are on, and the checkpoint store.

use bevy_egui::egui::{self, RichText};
use twice_world::billing_tools::{CreditArguments, Operation};
use twice_world::model::ScriptCall;
use twice_world::runtime::guards::Guard;
use twice_world::simulator::{Simulation, dollars};

use crate::session::Session;
use crate::ui::{self, theme};

pub fn draw_task(ui: &mut egui::Ui, simulation: &Simulation) {
    ui::section(ui, "Penny's task", |ui| {
        for run in &simulation.level().runs {
            for (item, call) in run.calls.iter().enumerate() {
                let owner = simulation
                    .billing()
                    .accounts
                    .get(&call.account)
                    .map_or(call.account.as_str(), |account| account.owner.as_str());
                let step = twice_world::text::step_name(run.id.as_str(), u32::try_from(item).unwrap_or(u32::MAX));
                ui.label(
                    RichText::new(format!("{step} · {}: {}", call.tool, asks(simulation, call, owner)))
                        .size(theme::SMALL + 0.5),
                );
            }
        }
        let level = simulation.level();
        ui::hint(
            ui,
            format!(
                "timeout {} ms · latency {} ms · slowed answers {} ms",
                level.world.timeout_ms, level.world.latency_ms, level.world.slow_response_ms
            ),
        );
    });
}

/// What a step of the script asks for, naming the account by its owner: a credit's amount, a
/// lookup as a lookup (it moves no money).
fn asks(simulation: &Simulation, call: &ScriptCall, owner: &str) -> String {
    let operation = Operation::of_tool(&simulation.level().tools, call.tool.as_str());
    // An owner change names the account (its owner is what changes: "make Grace the owner of
    // Ada" would read as a person owning a person); the rest name the customer.
    let account = if operation == Some(Operation::ChangeOwner) {
        &call.account
    } else {
        owner
    };
    let arguments = CreditArguments {
        account: account.to_owned(),
        amount_cents: call.amount_cents,
        memo: call.memo.clone(),
        owner: call.owner.clone(),
    };
    match operation {
        Some(operation) => operation.asks(&arguments),
        None => format!("{} to {owner}", dollars(i64::from(call.amount_cents))),
    }
}

/// Which of the runtime's guards are on here: the ones that are off are the crew's way in.
pub fn draw_guards(ui: &mut egui::Ui, simulation: &Simulation) {
    ui::section(ui, "The runtime's guards", |ui| {
        let guards = simulation.guards();
        // One guard per line: a wrapped row splits names from their marks at 1280×720.
        ui.spacing_mut().item_spacing = egui::vec2(6.0, 0.0);
        for guard in Guard::ALL {
            let on = guards.is_on(guard);
            let color = if on { theme::TEXT_DIM } else { theme::BAD };
            ui.label(RichText::new(guard_row(on, guard)).size(11.5).color(color))
                .on_hover_text(guard_hover(guard));
        }
    });
}

/// A guard's row in the panel: on or off, in the player's words (as the browser's guard chips
/// and the debrief say it), never the runtime's identifier.
pub fn guard_row(on: bool, guard: Guard) -> String {
    let words = twice_world::guards::words(guard);
    if on {
        format!("✔ {words}")
    } else {
        format!("✖ {words} — off")
    }
}

/// What a guard does, and the name the runtime's configuration gives it (for a developer who
/// looks it up in the book).
pub fn guard_hover(guard: Guard) -> String {
    format!(
        "{}\n\nIn the runtime: {}",
        twice_world::guards::promise(guard),
        guard.name()
    )
}

pub fn draw_checkpoints(ui: &mut egui::Ui, session: &Session) {
    ui::section(ui, "Checkpoint store", |ui| {
        let checkpoints = session.ledger().checkpoints();
        if checkpoints.is_empty() {
            ui::hint(ui, "no checkpoint saved yet: a recovered run starts over");
        }
        // Two lines per checkpoint: "awaiting reconciliation" needs the column's whole width.
        for checkpoint in checkpoints {
            ui.label(
                RichText::new(format!(
                    "{} · v{} · saved by {}",
                    checkpoint.run_id, checkpoint.version, checkpoint.saved_by
                ))
                .monospace()
                .size(theme::SMALL),
            );
            let (glyph, color) = match checkpoint.status.as_str() {
                "completed" => ("✔", theme::GOOD),
                "awaiting_reconciliation" => ("⏸", theme::WARN),
                "failed" | "dead_lettered" => ("✖", theme::BAD),
                _ => ("▶", theme::INFO),
            };
            ui.label(
                RichText::new(checkpoint_status_line(glyph, &checkpoint.status))
                    .size(theme::SMALL)
                    .color(color),
            );
        }
    });
}

/// A checkpoint's status in words ("awaiting reconciliation"), as the browser says it; a
/// status this build has no words for keeps its stored name rather than saying nothing.
fn checkpoint_status_line(glyph: &str, stored: &str) -> String {
    format!(
        "   {glyph} {}",
        twice_world::ledger_words::run_status(stored).unwrap_or(stored)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_guards_panel_names_each_guard_in_words_and_its_hover_gives_the_runtimes_name() {
        for guard in Guard::ALL {
            for on in [true, false] {
                let row = guard_row(on, guard);
                assert!(row.contains(twice_world::guards::words(guard)), "{row}");
                // Identifiers of more than one word are written with underscores ("the ledger"
                // is both a word and a name).
                assert!(!row.contains('_'), "{guard:?} shows its identifier: {row}");
            }
            let hover = guard_hover(guard);
            assert!(hover.starts_with(twice_world::guards::promise(guard)), "{hover}");
            assert!(hover.ends_with(guard.name()), "{hover}");
        }
    }

    #[test]
    fn a_checkpoints_status_is_said_in_words() {
        for stored in [
            "running",
            "awaiting_reconciliation",
            "completed",
            "failed",
            "dead_lettered",
        ] {
            let line = checkpoint_status_line("▶", stored);
            assert!(!line.contains('_'), "{line}");
        }
        assert!(checkpoint_status_line("⏸", "awaiting_reconciliation").ends_with("awaiting reconciliation"));
    }
}
