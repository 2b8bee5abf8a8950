//! The checker beyond money: "once" judged per operation. An email is counted in the
//! customer's outbox per intent; an owner change is read from the account's history (did a
//! change of Penny's land again after someone else's?); a delete from the requests that reached
//! the records service (did a new call of Penny's meet "not found" after her own delete?).
//! Effects, not claims: what the world recorded, matched to the level's script by intent.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use super::{RunNodes, node_of};
use crate::billing::{Billing, ChangedBy, Records};
use crate::billing_tools::Operation;
use crate::level::Level;
use crate::outcome::Outcome;

/// The judgement of one email, owner change or delete the script means.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct EffectVerdict {
    pub run: String,
    pub item: u32,
    pub account: String,
    /// The customer, by the name the level's accounts give the account's owner at the start.
    pub customer: String,
    pub operation: Operation,
    /// How many times the effect landed for this intent (emails sent, owner changes written,
    /// deletes that found the record).
    pub landed: u32,
    pub outcome: Outcome,
    /// What happened, naming the customer and the effect: "Ada got the same email twice".
    pub words: String,
}

impl EffectVerdict {
    /// One line, as reports print it: `r1/1 send_email acct_ada: Ada got the same email twice →
    /// emailed_twice`.
    pub fn line(&self) -> String {
        format!(
            "{} {} {}: {} → {}",
            crate::text::step_name(&self.run, self.item),
            self.operation.name(),
            self.account,
            self.words,
            self.outcome
        )
    }
}

/// One effect the script means, before it is judged.
pub(super) struct Meant<'a> {
    pub(super) run: &'a str,
    pub(super) item: u32,
    pub(super) account: &'a str,
    pub(super) operation: Operation,
    pub(super) memo: &'a str,
    pub(super) owner: Option<&'a str>,
}

/// Every email, owner change and delete the level's script means, in script order.
pub(super) fn meant(level: &Level) -> Vec<Meant<'_>> {
    let mut meant = Vec::new();
    for run in &level.runs {
        for (item, call) in run.calls.iter().enumerate() {
            let operation = level
                .tools
                .iter()
                .find(|tool| tool.name == call.tool)
                .and_then(Operation::of);
            let Some(operation) = operation.filter(|operation| {
                matches!(
                    operation,
                    Operation::SendEmail | Operation::ChangeOwner | Operation::DeleteRecord
                )
            }) else {
                continue;
            };
            meant.push(Meant {
                run: &run.id,
                item: u32::try_from(item).unwrap_or(u32::MAX),
                account: &call.account,
                operation,
                memo: &call.memo,
                owner: call.owner.as_deref(),
            });
        }
    }
    meant
}

/// Whether an intent (`run_id/item`) the world recorded is this one: its run belongs to the
/// meant run's workflow node, at the same step.
fn is_intent(nodes: &RunNodes, intent: &str, run: &str, item: u32) -> bool {
    intent
        .rsplit_once('/')
        .is_some_and(|(of_run, of_item)| node_of(nodes, of_run) == run && of_item == item.to_string())
}

/// Judges each meant effect. `flagged`: the step is honestly flagged (its run waits, or failed
/// at it or before it and says so), so a missing effect is "unknown", not "not done".
pub(super) fn judge_effects(
    level: &Level,
    billing: &Billing,
    nodes: &RunNodes,
    flagged: impl Fn(&str, u32) -> bool,
) -> Vec<EffectVerdict> {
    meant(level)
        .into_iter()
        .map(|meant| {
            let customer = level.world.owner_of(meant.account);
            let (landed, done) = match meant.operation {
                Operation::SendEmail => email(&billing.records, nodes, &meant, &customer),
                Operation::ChangeOwner => owner_change(&billing.records, nodes, &meant, &customer),
                _ => deletion(&billing.records, nodes, &meant, &customer),
            };
            let (outcome, words) = match done {
                Done::Never if flagged(meant.run, meant.item) => (
                    Outcome::UnknownFlagged,
                    format!(
                        "{customer}'s {} is not done, and the run says so",
                        noun(meant.operation)
                    ),
                ),
                Done::Never => (Outcome::NotDone, never_words(&customer, &meant)),
                Done::Once => (Outcome::DoneOnce, once_words(&customer, &meant)),
                Done::OnceSaying(words) => (Outcome::DoneOnce, words),
                Done::Again(words) => (repeat_outcome(meant.operation), words),
            };
            EffectVerdict {
                run: meant.run.to_owned(),
                item: meant.item,
                account: meant.account.to_owned(),
                customer,
                operation: meant.operation,
                landed,
                outcome,
                words,
            }
        })
        .collect()
}

/// How a meant effect came out, before it is named.
enum Done {
    Never,
    Once,
    /// Once, with more to say than [`once_words`] does.
    OnceSaying(String),
    /// More than once, or undoing someone's change: what happened, in words.
    Again(String),
}

fn noun(operation: Operation) -> &'static str {
    match operation {
        Operation::SendEmail => "email",
        Operation::ChangeOwner => "owner change",
        _ => "delete",
    }
}

fn repeat_outcome(operation: Operation) -> Outcome {
    match operation {
        Operation::SendEmail => Outcome::EmailedTwice,
        Operation::ChangeOwner => Outcome::ChangeUndone,
        _ => Outcome::ActedAgain,
    }
}

fn never_words(customer: &str, meant: &Meant<'_>) -> String {
    match meant.operation {
        Operation::SendEmail => format!("{customer} never got the email \"{}\"", meant.memo),
        Operation::ChangeOwner => format!(
            "{customer}'s account never got its new owner, {}",
            meant.owner.unwrap_or("?")
        ),
        _ => format!("{customer}'s record was never deleted"),
    }
}

fn once_words(customer: &str, meant: &Meant<'_>) -> String {
    match meant.operation {
        Operation::SendEmail => format!("{customer} got the email \"{}\" once", meant.memo),
        Operation::ChangeOwner => format!(
            "{customer}'s account got its new owner, {}, once, and no later change was undone",
            meant.owner.unwrap_or("?")
        ),
        _ => format!("{customer}'s record was deleted once, and Penny was never told it failed"),
    }
}

/// Emails in the customer's outbox for this intent.
fn email(records: &Records, nodes: &RunNodes, meant: &Meant<'_>, customer: &str) -> (u32, Done) {
    let sent = records
        .outbox
        .iter()
        .filter(|email| {
            email
                .metadata
                .get("intent")
                .is_some_and(|intent| is_intent(nodes, intent, meant.run, meant.item))
        })
        .count();
    let landed = u32::try_from(sent).unwrap_or(u32::MAX);
    let done = match sent {
        0 => Done::Never,
        1 => Done::Once,
        count => Done::Again(format!(
            "{customer} got the same email {}: \"{}\"",
            times(count),
            meant.memo
        )),
    };
    (landed, done)
}

fn times(count: usize) -> String {
    match count {
        2 => "twice".to_owned(),
        count => format!("{count} times"),
    }
}

/// The account's history: Penny's change for this intent, and whether one of hers landed again
/// after someone else's change (putting the value back that they had replaced).
fn owner_change(records: &Records, nodes: &RunNodes, meant: &Meant<'_>, customer: &str) -> (u32, Done) {
    let ours =
        |by: &ChangedBy| matches!(by, ChangedBy::Intent(intent) if is_intent(nodes, intent, meant.run, meant.item));
    let history: Vec<_> = records.history_of(meant.account).collect();
    let landed = u32::try_from(history.iter().filter(|change| ours(&change.by)).count()).unwrap_or(u32::MAX);
    let Some(first) = history.iter().position(|change| ours(&change.by)) else {
        return (landed, Done::Never);
    };
    let undone = history[first..].iter().enumerate().find_map(|(offset, change)| {
        let ChangedBy::Someone(who) = &change.by else {
            return None;
        };
        history[first + offset..]
            .iter()
            .find(|later| ours(&later.by))
            .map(|later| (who, change, later))
    });
    // Someone's change that landed before Penny's first write was replaced by it, as any write
    // replaces: they never saw hers, so the run undid nothing made after it. Said, because the
    // history shows their value gone.
    let earlier = history[..first].iter().rev().find_map(|change| match &change.by {
        ChangedBy::Someone(who) => Some((who, &change.to)),
        ChangedBy::Intent(_) => None,
    });
    let done = match (undone, earlier) {
        (Some((who, theirs, ours)), _) => Done::Again(format!(
            "{customer}'s account lost {who}'s change of its owner to {}: Penny's retried write landed after it and \
             put {} back",
            theirs.to, ours.to
        )),
        (None, Some((who, theirs))) => Done::OnceSaying(format!(
            "{}'s account got its new owner, {}, once: that one write landed after {who}'s change to {theirs} and \
             replaced it, as any write does, but no change made after Penny's was undone",
            customer, history[first].to
        )),
        (None, None) => Done::Once,
    };
    (landed, done)
}

/// The delete requests for this intent: the one that deleted the record, and any later one
/// of a new call (not the runtime's retry of the same call) that met "not found".
fn deletion(records: &Records, nodes: &RunNodes, meant: &Meant<'_>, customer: &str) -> (u32, Done) {
    let ours: Vec<_> = records
        .deletions
        .iter()
        .filter(|deletion| {
            deletion.account == meant.account && is_intent(nodes, &deletion.intent, meant.run, meant.item)
        })
        .collect();
    let landed = u32::try_from(ours.iter().filter(|deletion| deletion.deleted).count()).unwrap_or(u32::MAX);
    let Some(deleted) = ours.iter().position(|deletion| deletion.deleted) else {
        return (landed, Done::Never);
    };
    let again: BTreeSet<&str> = ours[deleted..]
        .iter()
        .filter(|later| !later.deleted && later.call_key != ours[deleted].call_key)
        .map(|later| later.call_key.as_str())
        .collect();
    let done = if again.is_empty() {
        Done::Once
    } else {
        Done::Again(format!(
            "{customer}'s record was deleted by {}, but Penny was told it failed and acted again: {} met \"not found\"",
            ours[deleted].call_key,
            again.into_iter().collect::<Vec<_>>().join(", ")
        ))
    };
    (landed, done)
}
