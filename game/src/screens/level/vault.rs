//! The vault: billing's entries as the stage draws them, each credit with the key it was
//! kept under (honoured, or only in metadata) in the colour of the call it came from — or, in a
//! level about emails, owners or deletes, the world's records ([`super::records`]).

use bevy_egui::egui::{self, Align2, Color32, FontId, Rect, Stroke, StrokeKind};
use twice_world::billing::{EntryKind, KeyHandling};
use twice_world::simulator::{Simulation, dollars};
use twice_world::text::counted;

use super::timeline::TimelineCache;
use crate::ui::theme;

pub(super) fn draw_vault(painter: &egui::Painter, vault: Rect, simulation: &Simulation, cache: &TimelineCache) {
    painter.rect_filled(vault, 8.0, Color32::from_rgb(30, 44, 40));
    painter.rect_stroke(vault, 8.0, Stroke::new(2.0, theme::MONEY), StrokeKind::Inside);
    // A level about emails, owners or deletes: its records are what moved, not money.
    if super::records::shown(simulation) {
        super::records::draw(painter, vault, simulation);
        return;
    }
    let mut y = vault.top() + 8.0;
    painter.text(
        egui::pos2(vault.center().x, y),
        Align2::CENTER_TOP,
        "🏦 Billing · the vault",
        FontId::proportional(13.5),
        theme::MONEY,
    );
    y += 19.0;
    let billing = simulation.billing();
    let keys = match billing.key_handling {
        KeyHandling::Honour => "honours idempotency keys",
        KeyHandling::MetadataOnly => "keeps keys as metadata only",
        KeyHandling::Ignore => "ignores idempotency keys",
    };
    painter.text(
        egui::pos2(vault.center().x, y),
        Align2::CENTER_TOP,
        keys,
        FontId::proportional(10.5),
        theme::TEXT_DIM,
    );
    y += 18.0;
    let clip = painter.with_clip_rect(vault.shrink(4.0));
    for account in billing.accounts.values() {
        if y > vault.bottom() - 60.0 {
            break;
        }
        clip.text(
            egui::pos2(vault.left() + 10.0, y + 4.0),
            Align2::LEFT_CENTER,
            format!("{} ({})", account.owner, account.id),
            FontId::proportional(11.5),
            theme::TEXT,
        );
        clip.text(
            egui::pos2(vault.right() - 10.0, y + 4.0),
            Align2::RIGHT_CENTER,
            dollars(account.balance_cents),
            FontId::proportional(17.0),
            theme::MONEY,
        );
        y += 22.0;
    }
    y += 4.0;
    clip.line_segment(
        [egui::pos2(vault.left() + 8.0, y), egui::pos2(vault.right() - 8.0, y)],
        Stroke::new(1.0, theme::MONEY.gamma_multiply(0.4)),
    );
    y += 6.0;
    // The money that moved, newest last: every applied credit and reversal, with the key billing
    // kept — beside the amount when both fit the vault's width, else on a line of its own
    // under it (19's "(metadata only)" keys do not fit beside).
    let rows: Vec<VaultRow> = billing
        .entries
        .iter()
        .map(|entry| vault_row(&clip, entry, cache, vault.width() - 20.0))
        .collect();
    let room = (vault.bottom() - 26.0 - y).max(0.0);
    let mut skipped = rows.len();
    let mut height = 0.0;
    while skipped > 0 && height + rows[skipped - 1].height() <= room {
        skipped -= 1;
        height += rows[skipped].height();
    }
    if billing.entries.is_empty() {
        clip.text(
            egui::pos2(vault.left() + 10.0, y),
            Align2::LEFT_TOP,
            "no money has moved yet",
            FontId::proportional(11.0),
            theme::TEXT_FAINT,
        );
    }
    for row in rows.into_iter().skip(skipped) {
        let height = row.height();
        clip.galley(egui::pos2(vault.left() + 10.0, y), row.amount, row.amount_color);
        let key_top = if row.key_below { y + VAULT_LINE_HEIGHT } else { y };
        let key_left = vault.right() - 10.0 - row.key.size().x;
        clip.galley(egui::pos2(key_left, key_top), row.key, row.key_color);
        y += height;
    }
    let credits = billing
        .entries
        .iter()
        .filter(|entry| entry.kind == EntryKind::Credit)
        .count();
    let reversals = billing.entries.len() - credits;
    clip.text(
        egui::pos2(vault.center().x, vault.bottom() - 8.0),
        Align2::CENTER_BOTTOM,
        format!(
            "{} landed · {}",
            counted(credits as u64, "credit", "credits"),
            counted(reversals as u64, "reversal", "reversals")
        ),
        FontId::proportional(11.0),
        theme::TEXT_DIM,
    );
}

/// Height of one line of the vault's list of money moved.
const VAULT_LINE_HEIGHT: f32 = 15.0;

/// One credit or reversal in the vault, laid out.
struct VaultRow {
    amount: std::sync::Arc<egui::Galley>,
    amount_color: Color32,
    key: std::sync::Arc<egui::Galley>,
    key_color: Color32,
    /// The key does not fit beside the amount: it goes on the next line.
    key_below: bool,
}

impl VaultRow {
    fn height(&self) -> f32 {
        if self.key_below {
            2.0 * VAULT_LINE_HEIGHT
        } else {
            VAULT_LINE_HEIGHT
        }
    }
}

fn vault_row(
    painter: &egui::Painter,
    entry: &twice_world::billing::Entry,
    cache: &TimelineCache,
    width: f32,
) -> VaultRow {
    let (sign, amount_color) = match entry.kind {
        EntryKind::Credit => ("+", theme::MONEY),
        EntryKind::Reversal => ("↺", theme::VIOLET),
    };
    let amount = painter.layout_no_wrap(
        format!("{sign} {} {}", entry.id, dollars(entry.amount_cents)),
        FontId::monospace(11.0),
        amount_color,
    );
    let (key_text, key_color) = vault_key(entry, cache);
    let key = painter.layout_no_wrap(key_text, FontId::proportional(10.5), key_color);
    VaultRow {
        key_below: amount.size().x + 8.0 + key.size().x > width,
        amount,
        amount_color,
        key,
        key_color,
    }
}

/// The key a credit carries, as the vault shows it: honoured by billing, or only kept in its
/// metadata (billing stored it and ignored it: level 08's lesson), or none at all.
pub fn vault_key(entry: &twice_world::billing::Entry, cache: &TimelineCache) -> (String, Color32) {
    match (&entry.idempotency_key, entry.metadata.get("idempotency_key")) {
        (Some(key), _) => {
            let look = cache.key_look(key);
            (format!("{} {key}", look.glyph), look.color)
        }
        (None, Some(key)) => {
            let look = cache.key_look(key);
            (format!("{} {key} (metadata only)", look.glyph), look.color)
        }
        (None, None) => ("no key".to_owned(), theme::TEXT_FAINT),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn credit(honoured: Option<&str>, in_metadata: Option<&str>) -> twice_world::billing::Entry {
        twice_world::billing::Entry {
            id: "cr_0001".into(),
            kind: EntryKind::Credit,
            account: "acct_ada".into(),
            amount_cents: 2500,
            memo: "Refund".into(),
            idempotency_key: honoured.map(str::to_owned),
            metadata: in_metadata
                .map(|key| [("idempotency_key".to_owned(), key.to_owned())].into_iter().collect())
                .unwrap_or_default(),
            at_ms: 0,
            reverses: None,
        }
    }

    #[test]
    fn the_vault_shows_a_key_kept_only_in_metadata() {
        let cache = TimelineCache::default();
        assert!(vault_key(&credit(Some("r1:c1"), None), &cache).0.ends_with("r1:c1"));
        let (kept, _) = vault_key(&credit(None, Some("r1:c1")), &cache);
        assert!(kept.contains("r1:c1 (metadata only)"), "{kept}");
        assert_eq!(vault_key(&credit(None, None), &cache).0, "no key");
    }
}
