//! The verdict an exported program prints, from the simulator's world: the same words and
//! figures `program/verdict.rs` computes from the program's own, so a test compares the two
//! line for line. Per customer account: what the script owed, what landed net and in how many
//! credits, and whether it was paid twice; every email, owner change and delete; and whether
//! anything was done twice. (The program's copy stands alone: it depends on no Twice crate.)

use crate::billing::{Billing, ChangedBy, EntryKind};
use crate::level::Level;
use crate::text::dollars;

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
    let records = &billing.records;
    let intent_of =
        |metadata: &std::collections::BTreeMap<String, String>| metadata.get("intent").cloned().unwrap_or_default();
    let emails: Vec<(String, String)> = records
        .outbox
        .iter()
        .map(|email| (email.account.clone(), intent_of(&email.metadata)))
        .collect();
    for (email, (account, intent)) in records.outbox.iter().zip(&emails) {
        lines.push(format!("email to {account} for {intent}: \"{}\"", email.subject));
    }
    // (account, by, by someone)
    let changes: Vec<(&str, &str, bool)> = records
        .owner_changes
        .iter()
        .map(|change| match &change.by {
            ChangedBy::Intent(intent) => (change.account.as_str(), intent.as_str(), false),
            ChangedBy::Someone(who) => (change.account.as_str(), who.as_str(), true),
        })
        .collect();
    for (change, (_, by, _)) in records.owner_changes.iter().zip(&changes) {
        lines.push(format!(
            "owner of {}: {} -> {}, by {by}",
            change.account, change.from, change.to
        ));
    }
    for deletion in &records.deletions {
        let found = if deletion.deleted { "deleted" } else { "not found" };
        lines.push(format!(
            "delete of {} for {} ({}): {found}",
            deletion.account, deletion.intent, deletion.call_key
        ));
    }
    let emailed_twice = emails
        .iter()
        .enumerate()
        .any(|(index, (_, intent))| emails[index + 1..].iter().any(|(_, later)| later == intent));
    // A change of Penny's that landed again after someone else's put their value back.
    let change_undone = changes.iter().enumerate().any(|(first, (account, by, someone))| {
        !someone
            && changes[first..]
                .iter()
                .enumerate()
                .any(|(offset, (theirs, _, by_someone))| {
                    *by_someone
                        && theirs == account
                        && changes[first + offset..]
                            .iter()
                            .any(|(later_account, later_by, _)| later_by == by && later_account == account)
                })
    });
    // After Penny's delete found the record, a new call of hers (not a retry) met "not found".
    let deletions = &records.deletions;
    let acted_again = deletions.iter().enumerate().any(|(index, deleted)| {
        deleted.deleted
            && deletions[index..]
                .iter()
                .any(|later| !later.deleted && later.intent == deleted.intent && later.call_key != deleted.call_key)
    });
    let anything = !emails.is_empty() || !changes.is_empty() || !deletions.is_empty();
    lines.push(
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
        .to_owned(),
    );
    lines
}
