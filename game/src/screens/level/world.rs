//! The billing world in detail (Penny's task, every credit that landed) and the checkpoint store.

use bevy_egui::egui::{self, RichText};
use twice_sim::billing::EntryKind;
use twice_sim::simulator::{Simulation, dollars};

use super::timeline::TimelineCache;
use crate::session::Session;
use crate::ui::{self, theme};

/// The most billing entries listed (the newest ones).
const ENTRIES_SHOWN_MAX: usize = 12;

pub fn draw_billing(ui: &mut egui::Ui, simulation: &Simulation, cache: &TimelineCache) {
    ui::section(ui, "Penny's task", |ui| {
        for run in &simulation.level().runs {
            for (item, call) in run.calls.iter().enumerate() {
                let owner = simulation
                    .billing()
                    .accounts
                    .get(&call.account)
                    .map_or(call.account.as_str(), |account| account.owner.as_str());
                ui.label(
                    RichText::new(format!(
                        "{}/{item} · {} {} to {owner}",
                        run.id,
                        call.tool,
                        dollars(i64::from(call.amount_cents))
                    ))
                    .size(theme::SMALL + 0.5),
                );
            }
        }
    });
    ui.add_space(4.0);
    ui::section(ui, "Money that moved", |ui| {
        let entries = &simulation.billing().entries;
        if entries.is_empty() {
            ui::hint(ui, "nothing yet");
        }
        let skipped = entries.len().saturating_sub(ENTRIES_SHOWN_MAX);
        if skipped > 0 {
            ui::hint(ui, format!("… {skipped} earlier"));
        }
        for entry in entries.iter().skip(skipped) {
            let (glyph, color) = match entry.kind {
                EntryKind::Credit => ("+", theme::MONEY),
                EntryKind::Reversal => ("↺", theme::VIOLET),
            };
            ui.horizontal(|ui| {
                ui.label(RichText::new(glyph).color(color));
                ui.label(
                    RichText::new(format!("{} {}", entry.id, dollars(entry.amount_cents)))
                        .monospace()
                        .color(color),
                );
                match &entry.idempotency_key {
                    Some(key) => {
                        let look = cache.key_look(key);
                        ui.label(RichText::new(format!("{} {key}", look.glyph)).size(theme::SMALL).color(look.color));
                    }
                    None => {
                        ui.label(RichText::new("no key").size(theme::SMALL).color(theme::TEXT_FAINT));
                    }
                }
            })
            .response
            .on_hover_text(format!("{} · {} at {} ms", entry.account, entry.memo, entry.at_ms));
        }
    });
}

pub fn draw_checkpoints(ui: &mut egui::Ui, session: &Session) {
    ui::section(ui, "Checkpoint store", |ui| {
        let checkpoints = session.ledger().checkpoints();
        if checkpoints.is_empty() {
            ui::hint(ui, "no checkpoint saved yet: a recovered run starts over");
        }
        egui::Grid::new("checkpoints").num_columns(4).spacing([10.0, 2.0]).show(ui, |ui| {
            if !checkpoints.is_empty() {
                for heading in ["run", "version", "status", "saved by"] {
                    ui.label(RichText::new(heading).size(theme::SMALL).color(theme::TEXT_DIM));
                }
                ui.end_row();
            }
            for checkpoint in checkpoints {
                ui.label(RichText::new(&checkpoint.run_id).monospace());
                ui.label(RichText::new(format!("v{}", checkpoint.version)).monospace());
                let (glyph, color) = match checkpoint.status.as_str() {
                    "completed" => ("✔", theme::GOOD),
                    "awaiting_reconciliation" => ("⏸", theme::WARN),
                    "failed" => ("✘", theme::BAD),
                    _ => ("▶", theme::INFO),
                };
                ui.label(RichText::new(format!("{glyph} {}", checkpoint.status)).size(theme::SMALL).color(color));
                ui.label(RichText::new(&checkpoint.saved_by).size(theme::SMALL));
                ui.end_row();
            }
        });
    });
}
