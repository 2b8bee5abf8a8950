//! The verdict, as billing's entries show it: per customer, what the script owed, what landed
//! (credits, and reversals taking money back), and whether anyone was paid twice. Judged from
//! billing alone, never from what the runtime says it did.

use crate::billing::Billing;

/// `$25.00`, `-$25.00`.
fn dollars(cents: i64) -> String {
    let sign = if cents < 0 { "-" } else { "" };
    let cents = cents.unsigned_abs();
    format!("{sign}${}.{:02}", cents / 100, cents % 100)
}

/// One line per customer account, then the verdict's line.
pub fn lines(billing: &Billing, accounts: &[&str], owed: &[(&str, i64)]) -> Vec<String> {
    let mut lines = Vec::new();
    let mut paid_twice = false;
    for account in accounts {
        let owed_cents: i64 = owed.iter().filter(|(to, _)| to == account).map(|(_, cents)| cents).sum();
        let on_account = || billing.entries.iter().filter(|entry| entry.account == *account);
        let credits = on_account().filter(|entry| entry.amount_cents > 0).count();
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
            "{account}: owed {}, got {} net in {credits} {}: {judged}",
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
