//! The checker: judges a history per intended credit, and checks the ledger's promises.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::billing::{Answer, Billing};
use crate::ledger::{Checkpoint, ExecutionRecord, HistoryEntry};
use crate::level::Level;
use crate::runtime::guards::Guard;
use crate::runtime::rules::Status;
use crate::runtime::run::RunState;
use crate::runtime::tool::Operation;
use crate::runtime::worker::GuardNote;
use crate::simulator::dollars;

/// What happened to one credit Penny meant to issue, and to the level as a whole.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// More money landed than was owed: the heist worked.
    PaidTwice,
    /// Less landed than was owed, and nothing is flagged as unknown.
    NotPaidButOwed,
    /// Not (fully) paid, but a call is honestly flagged unknown and waiting.
    UnknownFlagged,
    /// Exactly what was owed.
    PaidOnce,
}

impl Outcome {
    pub fn name(self) -> &'static str {
        match self {
            Outcome::PaidTwice => "paid_twice",
            Outcome::NotPaidButOwed => "not_paid_but_owed",
            Outcome::UnknownFlagged => "unknown_flagged",
            Outcome::PaidOnce => "paid_once",
        }
    }
}

impl std::fmt::Display for Outcome {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str(self.name())
    }
}

/// Who ran a compensation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CompensationBy {
    Operator,
    Runtime,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CompensationLog {
    pub key: String,
    pub by: CompensationBy,
    pub answer: Answer,
}

/// The judgement of one intended credit.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CreditVerdict {
    pub run: String,
    pub item: u32,
    pub account: String,
    pub owed_cents: i64,
    pub credits_applied: u32,
    pub net_cents: i64,
    pub keys: Vec<String>,
    pub outcome: Outcome,
}

/// The checker's verdict.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Verdict {
    pub outcome: Outcome,
    pub goal: Outcome,
    pub goal_reached: bool,
    pub credits: Vec<CreditVerdict>,
    /// Guards that held, in the order they first held.
    pub stopped_by: Vec<Guard>,
    /// What each guard did, first time it held.
    pub stops: Vec<String>,
    /// Broken promises: more than one record per key, unasked compensation, an overwritten decision.
    pub violations: Vec<String>,
    pub summary: String,
}

/// What the checker reads.
#[derive(Debug)]
pub struct CheckInput<'a> {
    pub level: &'a Level,
    pub billing: &'a Billing,
    pub records: &'a [ExecutionRecord],
    pub history: &'a [HistoryEntry],
    pub checkpoints: &'a [Checkpoint],
    pub notes: &'a [GuardNote],
    /// Which (run, item) each key served.
    pub call_items: &'a BTreeMap<String, BTreeSet<(String, u32)>>,
    pub compensations: &'a [CompensationLog],
}

pub fn judge(input: &CheckInput<'_>) -> Verdict {
    let credit_tools: BTreeSet<&str> = input
        .level
        .tools
        .iter()
        .filter(|tool| tool.operation == Operation::Credit)
        .map(|tool| tool.name.as_str())
        .collect();
    let mut credits = Vec::new();
    for run in &input.level.runs {
        for (item, call) in run.calls.iter().enumerate() {
            if !credit_tools.contains(call.tool.as_str()) {
                continue;
            }
            let item = item as u32;
            let intent = format!("{}/{item}", run.id);
            let (credits_applied, net_cents) = input.billing.effects_for(&intent);
            let keys: Vec<String> = input
                .call_items
                .iter()
                .filter(|(_, items)| items.contains(&(run.id.clone(), item)))
                .map(|(key, _)| key.clone())
                .collect();
            // Honestly waiting: the call is recorded unknown and its run is paused on it.
            // A run that told the model "failed" and moved on is not waiting for anything.
            // An item after the one a paused run waits on was never reached: it waits too.
            let waiting_at = input
                .checkpoints
                .iter()
                .find(|checkpoint| checkpoint.run_id == run.id && checkpoint.status == "awaiting_reconciliation")
                .map(|checkpoint| RunState::from_json(&checkpoint.state).map_or(0, |state| state.item));
            let flagged = waiting_at.is_some_and(|waiting_item| {
                item > waiting_item
                    || input
                        .records
                        .iter()
                        .any(|record| keys.contains(&record.key.to_string()) && record.status.is_unknown())
            });
            let owed_cents = i64::from(call.amount_cents);
            let outcome = if net_cents > owed_cents {
                Outcome::PaidTwice
            } else if net_cents == owed_cents {
                Outcome::PaidOnce
            } else if flagged {
                Outcome::UnknownFlagged
            } else {
                Outcome::NotPaidButOwed
            };
            credits.push(CreditVerdict {
                run: run.id.clone(),
                item,
                account: call.account.clone(),
                owed_cents,
                credits_applied,
                net_cents,
                keys,
                outcome,
            });
        }
    }
    let outcome = credits
        .iter()
        .map(|credit| credit.outcome)
        .min()
        .unwrap_or(Outcome::PaidOnce);

    let mut stopped_by = Vec::new();
    let mut stops = Vec::new();
    for note in input.notes {
        if !stopped_by.contains(&note.guard) {
            stopped_by.push(note.guard);
            stops.push(format!("{}: {}", note.guard, note.detail));
        }
    }

    let violations = violations(input);
    let goal = input.level.goal;
    let goal_reached = credits.iter().any(|credit| credit.outcome == goal);
    let summary = summarize(outcome, goal_reached, &credits, &stops);
    Verdict {
        outcome,
        goal,
        goal_reached,
        credits,
        stopped_by,
        stops,
        violations,
        summary,
    }
}

fn violations(input: &CheckInput<'_>) -> Vec<String> {
    let mut found = Vec::new();
    let mut per_key: BTreeMap<&str, u32> = BTreeMap::new();
    for record in input.records {
        *per_key.entry(record.key.as_str()).or_default() += 1;
    }
    for (key, count) in per_key.iter().filter(|(_, count)| **count > 1) {
        found.push(format!("{count} ledger records for key {key}; at most one is allowed"));
    }
    for entry in input.history {
        if entry
            .detail
            .as_deref()
            .is_some_and(|detail| detail.contains("overwrote"))
        {
            found.push(format!(
                "key {} was reserved twice: {}'s check-then-insert overwrote another worker's reservation",
                entry.key, entry.actor
            ));
        }
    }
    for compensation in input
        .compensations
        .iter()
        .filter(|compensation| compensation.by == CompensationBy::Runtime)
    {
        found.push(format!(
            "{} was compensated by the runtime, which nobody asked for",
            compensation.key
        ));
    }
    let mut settled: BTreeMap<&str, Status> = BTreeMap::new();
    for entry in input.history {
        let key = entry.key.as_str();
        if let (Some(before), Some(to)) = (settled.get(key).copied(), entry.to_status) {
            let allowed = (before == Status::Completed && to == Status::Compensated)
                || (before == Status::Failed && to == Status::Started && entry.event == "reserved_again");
            if !allowed && to != before {
                found.push(format!(
                    "the settled decision {before} on {key} was overwritten with {to} by {}",
                    entry.actor
                ));
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

fn summarize(outcome: Outcome, goal_reached: bool, credits: &[CreditVerdict], stops: &[String]) -> String {
    let mut lines = Vec::new();
    lines.push(format!(
        "{outcome}{}",
        if goal_reached {
            " — the heist worked"
        } else {
            " — the heist was stopped"
        }
    ));
    for credit in credits {
        lines.push(format!(
            "  {}/{} to {}: owed {}, {} credit(s) landed, net {} → {}",
            credit.run,
            credit.item,
            credit.account,
            dollars(credit.owed_cents),
            credit.credits_applied,
            dollars(credit.net_cents),
            credit.outcome
        ));
    }
    for stop in stops {
        lines.push(format!("  held: {stop}"));
    }
    lines.join("\n")
}
