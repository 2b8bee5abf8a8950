//! The verdict an exported program prints, from the simulator's billing: the same words and
//! figures `program/verdict.rs` computes from the program's own, so a test compares the two
//! line for line. Per customer account: what the script owed, what landed net and in how many
//! credits, and whether it was paid twice.

use twice_world::billing::{Billing, EntryKind};
use twice_world::level::Level;
use twice_world::text::dollars;

/// The program's lines for a run that left `billing` as it is.
pub fn lines(level: &Level, billing: &Billing) -> Vec<String> {
    let mut lines = Vec::new();
    let mut paid_twice = false;
    for account in &level.world.accounts {
        let owed_cents: i64 = level
            .credit_calls()
            .filter(|(_, _, call)| call.account == account.id)
            .map(|(_, _, call)| i64::from(call.amount_cents))
            .sum();
        let on_account = || billing.entries.iter().filter(|entry| entry.account == account.id);
        let credits = on_account().filter(|entry| entry.kind == EntryKind::Credit).count();
        let net_cents: i64 = on_account().map(|entry| entry.amount_cents).sum();
        let judged = if net_cents > owed_cents {
            paid_twice = true;
            "paid twice"
        } else if net_cents == owed_cents {
            "paid as owed"
        } else {
            "paid less than owed"
        };
        lines.push(format!(
            "{}: owed {}, got {} net in {credits} {}: {judged}",
            account.id,
            dollars(owed_cents),
            dollars(net_cents),
            if credits == 1 { "credit" } else { "credits" }
        ));
    }
    lines.push(if paid_twice {
        "Verdict: someone was paid twice.".to_owned()
    } else {
        "Verdict: nobody was paid twice.".to_owned()
    });
    lines
}
