//! The verdict, as the world shows it: per customer, what the script owed, what landed
//! (credits, and reversals taking money back); every email, owner change and delete; and
//! whether anything was done twice. Judged from billing's records alone, never from what the
//! runtime says it did.

use crate::billing::Billing;
use crate::records::Records;

/// `$25.00`, `-$25.00`.
fn dollars(cents: i64) -> String {
    let sign = if cents < 0 { "-" } else { "" };
    let cents = cents.unsigned_abs();
    format!("{sign}${}.{:02}", cents / 100, cents % 100)
}

/// One line per customer account, one per record, then the verdict's line.
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
    let records = &billing.records;
    for email in &records.outbox {
        lines.push(format!("email to {} for {}: \"{}\"", email.account, email.intent, email.subject));
    }
    for change in &records.owner_history {
        lines.push(format!("owner of {}: {} -> {}, by {}", change.account, change.from, change.to, change.by));
    }
    for deletion in &records.deletions {
        let found = if deletion.deleted { "deleted" } else { "not found" };
        lines.push(format!("delete of {} for {} ({}): {found}", deletion.account, deletion.intent, deletion.call_key));
    }
    lines.push(verdict(paid_twice, records).to_owned());
    lines
}

fn verdict(paid_twice: bool, records: &Records) -> &'static str {
    let emailed_twice = records.outbox.iter().enumerate().any(|(index, email)| {
        records.outbox[index + 1..]
            .iter()
            .any(|later| later.intent == email.intent)
    });
    // A change of Penny's that landed again after someone else's put their value back.
    let change_undone = records.owner_history.iter().enumerate().any(|(first, ours)| {
        !ours.by_someone
            && records.owner_history[first..].iter().enumerate().any(|(offset, theirs)| {
                theirs.by_someone
                    && theirs.account == ours.account
                    && records.owner_history[first + offset..]
                        .iter()
                        .any(|later| later.by == ours.by && later.account == ours.account)
            })
    });
    // After Penny's delete found the record, a new call of hers (not a retry) met "not found".
    let acted_again = records.deletions.iter().enumerate().any(|(index, deleted)| {
        deleted.deleted
            && records.deletions[index..].iter().any(|later| {
                !later.deleted && later.intent == deleted.intent && later.call_key != deleted.call_key
            })
    });
    let anything = !records.outbox.is_empty() || !records.owner_history.is_empty() || !records.deletions.is_empty();
    if paid_twice {
        "Verdict: someone was paid twice."
    } else if emailed_twice {
        "Verdict: someone got the same email twice."
    } else if change_undone {
        "Verdict: an owner change someone made was undone."
    } else if acted_again {
        "Verdict: Penny was told a delete failed and acted again."
    } else if anything {
        "Verdict: nothing was done twice."
    } else {
        "Verdict: nobody was paid twice."
    }
}
