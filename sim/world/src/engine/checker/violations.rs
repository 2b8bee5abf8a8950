//! The promises the checker holds the runtime (and its ledger) to: each broken one is a typed
//! [`Violation`] with its key, found from billing's credits, the ledger's records and its history.

use std::collections::{BTreeMap, BTreeSet};

use super::{CheckInput, CompensationBy, Violation, ViolationKind};
use crate::ledger::{ExecutionRecord, HistoryEntry, HistoryEvent};
use crate::runtime::guards::Guard;
use crate::runtime::rules::Status;

pub(super) fn violations(input: &CheckInput<'_>) -> Vec<Violation> {
    let mut found = Vec::new();
    let credit_tools: BTreeSet<&str> = input.level.credit_tools();
    // The credits standing (not reversed), and every credit, by the key of the call that made it.
    let reversed: BTreeSet<&str> = input
        .billing
        .entries
        .iter()
        .filter_map(|entry| entry.reverses.as_deref())
        .collect();
    let mut credits_of: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    let mut standing_of: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for (credit, origin) in input.effects {
        credits_of.entry(origin.key.as_str()).or_default().push(credit.as_str());
        if !reversed.contains(credit.as_str()) {
            standing_of
                .entry(origin.key.as_str())
                .or_default()
                .push(credit.as_str());
        }
    }
    let records: BTreeMap<&str, &ExecutionRecord> = input
        .records
        .iter()
        .map(|record| (record.key.as_str(), record))
        .collect();
    for record in input
        .records
        .iter()
        .filter(|record| credit_tools.contains(record.tool.as_str()))
    {
        let key = record.key.as_str();
        let standing = standing_of.get(key).map_or(0, Vec::len);
        match record.status {
            Status::Failed if standing > 0 => found.push(Violation {
                kind: ViolationKind::FailedButPaid,
                key: Some(key.to_owned()),
                detail: format!(
                    "{key} is recorded failed, but its credit {} landed and was never reversed",
                    standing_of[key].join(", ")
                ),
            }),
            Status::Completed if standing == 0 => found.push(Violation {
                kind: ViolationKind::CompletedWithoutEffect,
                key: Some(key.to_owned()),
                detail: format!("{key} is recorded completed, but billing holds no standing credit made by it"),
            }),
            _ => {}
        }
    }
    if input.guards.is_on(Guard::Ledger) {
        for (key, credits) in &credits_of {
            if !records.contains_key(key) {
                found.push(Violation {
                    kind: ViolationKind::EffectWithoutRecord,
                    key: Some((*key).to_owned()),
                    detail: format!(
                        "billing holds credit {} made by call {key}, which has no ledger record: it was sent without being written down first",
                        credits.join(", ")
                    ),
                });
            }
        }
    }
    let histories = [input.history, input.second_node_history];
    for entry in histories
        .iter()
        .flat_map(|history| history.iter())
        .filter(|entry| entry.event == HistoryEvent::Reserved && entry.from_status == Some(Status::Started))
    {
        found.push(Violation {
            kind: ViolationKind::ReservedTwice,
            key: Some(entry.key.to_string()),
            detail: format!(
                "key {} was reserved twice: {}'s check-then-insert overwrote another worker's reservation",
                entry.key, entry.actor
            ),
        });
    }
    for compensation in input
        .compensations
        .iter()
        .filter(|compensation| compensation.by == CompensationBy::Runtime)
    {
        found.push(Violation {
            kind: ViolationKind::UnaskedCompensation,
            key: Some(compensation.key.clone()),
            detail: format!(
                "{} was compensated by the runtime, which nobody asked for",
                compensation.key
            ),
        });
    }
    for history in histories {
        found.extend(decisions_overwritten(history));
    }
    found
}

/// Settled decisions a later entry of one ledger's history overwrote.
fn decisions_overwritten(history: &[HistoryEntry]) -> Vec<Violation> {
    let mut found = Vec::new();
    let mut settled: BTreeMap<&str, Status> = BTreeMap::new();
    for entry in history {
        let key = entry.key.as_str();
        if let (Some(before), Some(to)) = (settled.get(key).copied(), entry.to_status) {
            let allowed =
                matches!(
                    (before, to),
                    (Status::Completed, Status::Compensating)
                        | (Status::Compensating, Status::Compensated)
                        | (Status::Completed, Status::Compensated)
                ) || (before == Status::Failed && to == Status::Started && entry.event == HistoryEvent::ReservedAgain);
            if !allowed && to != before {
                found.push(Violation {
                    kind: ViolationKind::DecisionOverwritten,
                    key: Some(key.to_owned()),
                    detail: format!(
                        "the settled decision {before} on {key} was overwritten with {to} by {}",
                        entry.actor
                    ),
                });
            }
        }
        if let Some(to) = entry.to_status {
            if to.is_settled() {
                settled.insert(key, to);
            } else if to == Status::Started {
                settled.remove(key);
            }
        }
    }
    found
}
