//! The vault beyond money: each customer's outbox, the owner history and the deleted records,
//! drawn in a level whose tools send emails, change owners or delete records. Each row is the
//! world's own ([`twice_world::billing::RecordRow`]): what landed, who made it, and what it did
//! wrong in the world's words (a second email, a write that undid someone's change, a delete that
//! found nothing). The game decides nothing here.

use bevy_egui::egui::{self, Align2, FontId, Rect};
use twice_world::billing::{KeyHandling, RecordRow};
use twice_world::billing_tools::Operation;
use twice_world::simulator::Simulation;
use twice_world::text::counted;

use crate::ui::theme;

/// Height of one record: what it is, then who made it (or the harm, when there is one).
const RECORD_HEIGHT: f32 = 24.0;
/// How wide the vault is drawn when it holds records: a row names a change and who made it.
pub(super) const RECORDS_WIDTH: f32 = 290.0;

/// The header: what the world holds, only the kinds it has ("3 owner changes").
fn header(records: &twice_world::billing::Records) -> String {
    let kinds: Vec<String> = [
        (records.outbox.len(), "email", "emails"),
        (records.owner_changes.len(), "owner change", "owner changes"),
        (records.deletions.len(), "delete request", "delete requests"),
    ]
    .into_iter()
    .filter(|(count, ..)| *count > 0)
    .map(|(count, one, many)| counted(count as u64, one, many))
    .collect();
    if kinds.is_empty() {
        "The world's records".to_owned()
    } else {
        format!("The world's records · {}", kinds.join(" · "))
    }
}

/// Whether the level's tools touch the world beyond money: then the vault shows its records.
pub(super) fn shown(simulation: &Simulation) -> bool {
    simulation.level().tools.iter().any(|tool| {
        matches!(
            Operation::of(tool),
            Some(Operation::SendEmail | Operation::ChangeOwner | Operation::DeleteRecord)
        )
    })
}

/// The world's records in the vault's place: a line on keys, a line on the accounts' owners, then
/// the records newest last, as many as fit (a short stage at 1280×720 holds three).
pub(super) fn draw(painter: &egui::Painter, vault: Rect, simulation: &Simulation) {
    let billing = simulation.billing();
    let records = &billing.records;
    let clip = painter.with_clip_rect(vault.shrink(4.0));
    let painter = &clip;
    let width = vault.width() - 20.0;
    let keys = match billing.key_handling {
        KeyHandling::Honour => "honours keys",
        KeyHandling::MetadataOnly => "keeps keys as metadata",
        KeyHandling::Ignore => "ignores keys",
    };
    let mut rows: Vec<(&str, RecordRow)> = Vec::new();
    rows.extend(records.outbox_rows().into_iter().map(|row| ("✉", row)));
    rows.extend(records.owner_rows().into_iter().map(|row| ("👤", row)));
    rows.extend(records.deletion_rows().into_iter().map(|row| ("🗑", row)));
    // One list in the order things landed: a lost update reads top to bottom.
    rows.sort_by_key(|(_, row)| row.at_ms);
    // Two header lines, then the rows: as many as fit, newest last.
    let rows_top = vault.top() + 40.0;
    let fits = ((vault.bottom() - 4.0 - rows_top).max(0.0) / RECORD_HEIGHT).floor() as usize;
    let skipped = rows.len().saturating_sub(fits.max(1));
    let mut y = vault.top() + 6.0;
    super::stage::truncated_text(
        painter,
        egui::pos2(vault.left() + 10.0, y + 7.0),
        header(records),
        12.0,
        theme::MONEY,
        width,
    );
    y += 16.0;
    let owners: Vec<String> = billing
        .accounts
        .values()
        .map(|account| format!("{} owned by {}", account.id, account.owner))
        .collect();
    super::stage::truncated_text(
        painter,
        egui::pos2(vault.left() + 10.0, y + 7.0),
        if skipped > 0 {
            format!("+{skipped} earlier · {} · {keys}", owners.join(" · "))
        } else {
            format!("{} · {keys}", owners.join(" · "))
        },
        11.0,
        theme::TEXT_DIM,
        width,
    );
    y = rows_top;
    if rows.is_empty() {
        painter.text(
            egui::pos2(vault.left() + 10.0, y),
            Align2::LEFT_TOP,
            "nothing sent, changed or deleted yet",
            FontId::proportional(11.0),
            theme::TEXT_FAINT,
        );
    }
    for (glyph, row) in rows.iter().skip(skipped) {
        let color = if row.harm.is_some() { theme::BAD } else { theme::TEXT };
        // Each line ends in "…" where the vault is too narrow: the timeline has the whole text.
        super::stage::truncated_text(
            painter,
            egui::pos2(vault.left() + 10.0, y + 6.0),
            format!("{glyph} {} ms · {}", row.at_ms, row.what),
            11.0,
            color,
            width,
        );
        let (under, under_color) = match &row.harm {
            Some(harm) => (format!("✖ {harm}"), theme::BAD),
            None => (format!("by {}", row.by), theme::TEXT_DIM),
        };
        super::stage::truncated_text(
            painter,
            egui::pos2(vault.left() + 22.0, y + 19.0),
            under,
            10.0,
            under_color,
            width - 12.0,
        );
        y += RECORD_HEIGHT;
    }
}
