//! The left column: Penny's task, which guards are on, and the checkpoint store.

use bevy_egui::egui::{self, RichText};
use twice_world::billing_tools::Operation;
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
                let operation = simulation
                    .level()
                    .tools
                    .iter()
                    .find(|tool| tool.name == call.tool)
                    .and_then(Operation::of);
                // Only a credit moves money: the others say what they do, not "$0.00".
                let what = match operation {
                    Some(Operation::SendEmail) => format!("\"{}\" to {owner}", call.memo),
                    Some(Operation::ChangeOwner) => {
                        format!("{}'s owner → {}", call.account, call.owner.as_deref().unwrap_or("?"))
                    }
                    Some(Operation::DeleteRecord) => format!("{}'s record", call.account),
                    Some(Operation::LookupBalance) => format!("{}'s balance", call.account),
                    Some(Operation::Credit) | None => {
                        format!("{} to {owner}", dollars(i64::from(call.amount_cents)))
                    }
                };
                ui.label(RichText::new(format!("{}/{item} · {} {what}", run.id, call.tool)).size(theme::SMALL + 0.5));
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

/// Which of the runtime's guards are on here: the ones that are off are the crew's way in.
pub fn draw_guards(ui: &mut egui::Ui, simulation: &Simulation) {
    ui::section(ui, "The runtime's guards", |ui| {
        let guards = simulation.guards();
        // One guard per line: a wrapped row splits names from their marks at 1280×720.
        ui.spacing_mut().item_spacing = egui::vec2(6.0, 0.0);
        for guard in Guard::ALL {
            let on = guards.is_on(guard);
            let (text, color) = if on {
                (format!("✔ {}", guard.name()), theme::TEXT_DIM)
            } else {
                (format!("✖ {} — off", guard.name()), theme::BAD)
            };
            ui.label(RichText::new(text).size(11.5).color(color))
                .on_hover_text(twice_world::guards::promise(guard));
        }
    });
}

pub fn draw_checkpoints(ui: &mut egui::Ui, session: &Session) {
    ui::section(ui, "Checkpoint store", |ui| {
        let checkpoints = session.ledger().checkpoints();
        if checkpoints.is_empty() {
            ui::hint(ui, "no checkpoint saved yet: a recovered run starts over");
        }
        // Two lines per checkpoint: "awaiting_reconciliation" needs the column's whole width.
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
                "failed" => ("✖", theme::BAD),
                _ => ("▶", theme::INFO),
            };
            ui.label(
                RichText::new(format!("   {glyph} {}", checkpoint.status))
                    .size(theme::SMALL)
                    .color(color),
            );
        }
    });
}
