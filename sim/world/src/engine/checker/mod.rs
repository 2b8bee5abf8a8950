//! The checker: judges a history per credit the level's script owes, and holds the ledger
//! to what billing shows.
//!
//! It judges effects, not claims: money is matched to what the script owes by account and
//! amount, never by what the runtime under test says it was doing; and the ledger's records
//! are compared with the credits billing holds (which request made each credit is the
//! simulator's own knowledge, not the runtime's). Each broken promise is a typed
//! [`Violation`] with its key, and every check can fail: `tests/checker.rs` breaks the
//! runtime (or its ledger) on purpose for each one and sees it.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::billing::{Answer, Billing, EntryKind};
use crate::ledger::{Checkpoint, ExecutionRecord, HistoryEntry, RunEvent, RunHistoryEntry};
use crate::level::Level;
pub use crate::outcome::{Expectation, Outcome, ViolationKind};
use crate::runtime::guards::{Guard, Guards};
use crate::runtime::run::RunState;
use crate::runtime::worker::GuardNote;
use crate::text::dollars;

mod effects;
mod guard_rows;
mod violations;
pub use effects::EffectVerdict;
pub use guard_rows::{GUARD_HELD, GUARD_NOTED, GuardRow, MoneyWrong, RowTelling};
use violations::violations;

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

/// One broken promise, with the key it is about.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Violation {
    pub kind: ViolationKind,
    pub key: Option<String>,
    pub detail: String,
}

/// For a developer (the CLI, a tape's check): the kind's name, then the detail.
impl std::fmt::Display for Violation {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(formatter, "{}: {}", self.kind, self.detail)
    }
}

impl Violation {
    /// The broken promise as a player reads it: the detail alone, ended as a sentence. The
    /// kind's name (`failed_but_paid`) is an identifier a first-time player cannot read; the
    /// detail already says what went wrong ("r1:c1 is recorded failed, but its credit cr_0001
    /// landed and was never reversed"). It is left as it starts: most details start with a key.
    pub fn sentence(&self) -> String {
        format!("{}.", self.detail.trim_end_matches('.'))
    }
}

/// The judgement of one credit the script owes.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CreditVerdict {
    pub run: String,
    pub item: u32,
    pub account: String,
    pub owed_cents: i64,
    /// Credits billing applied that were matched to this item (reversed ones included).
    pub credits_applied: u32,
    pub net_cents: i64,
    /// The keys the runtime used for this item (for drawing; the verdict does not use them).
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
    /// Each email, owner change and delete the script means, judged (empty in a level of
    /// credits only).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub effects: Vec<EffectVerdict>,
    /// Guards that held, in the order they first held.
    pub stopped_by: Vec<Guard>,
    /// What each guard did, first time it held.
    pub stops: Vec<String>,
    /// Broken promises.
    pub violations: Vec<Violation>,
    /// Runs that honestly wait: on a call still unknown, or for a person.
    pub waiting: Vec<String>,
    pub summary: String,
}

impl Verdict {
    /// The kinds of violation found, in order, each once.
    pub fn violation_kinds(&self) -> Vec<ViolationKind> {
        let kinds: BTreeSet<ViolationKind> = self.violations.iter().map(|violation| violation.kind).collect();
        kinds.into_iter().collect()
    }
}

impl Expectation {
    /// What a tape expects to see again: this verdict, its guards and its violations.
    pub fn of(verdict: &Verdict) -> Expectation {
        Expectation {
            verdict: verdict.outcome,
            stopped_by: verdict.stopped_by.clone(),
            violations: verdict.violation_kinds(),
            paid_cents: BTreeMap::new(),
            keys: BTreeMap::new(),
        }
    }

    /// Whether the verdict is what this expects: the outcome, the violation kinds, and every
    /// guard named among those that held. (Money and keys need the run: see
    /// [`crate::replay::matches`].)
    pub fn verdict_matches(&self, verdict: &Verdict) -> bool {
        self.verdict == verdict.outcome
            && self.violations == verdict.violation_kinds()
            && self.stopped_by.iter().all(|guard| verdict.stopped_by.contains(guard))
    }
}

/// Which request made a credit: the run whose worker sent it and the runtime's key for the
/// call — the simulator's own knowledge of its workers and its wire, not a claim of the runtime.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CreditOrigin {
    pub run: String,
    pub key: String,
}

/// Which workflow node a run belongs to: a level's run is its own node's first run (retry
/// 0); a fresh run the node's `recovery_policy: retry` started is retry 1, 2, …
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunNode {
    /// The level's run (its script) this run carries out.
    pub node: String,
    pub retry: u32,
}

/// Every run started, by id → its node. A run missing here is its own node's first run.
pub type RunNodes = BTreeMap<String, RunNode>;

/// The node a run belongs to.
pub fn node_of<'a>(nodes: &'a RunNodes, run: &'a str) -> &'a str {
    nodes.get(run).map_or(run, |node| node.node.as_str())
}

/// What the checker reads.
#[derive(Debug)]
pub struct CheckInput<'a> {
    pub level: &'a Level,
    pub guards: Guards,
    pub billing: &'a Billing,
    /// Each credit billing applied → the request that made it.
    pub effects: &'a BTreeMap<String, CreditOrigin>,
    /// Every node's records (a level with a second node has two ledgers).
    pub records: &'a [ExecutionRecord],
    /// The first node's ledger history.
    pub history: &'a [HistoryEntry],
    /// The second node's ledger history, in a level that has one (empty otherwise): read
    /// apart, since each ledger keeps its own decisions.
    pub second_node_history: &'a [HistoryEntry],
    pub checkpoints: &'a [Checkpoint],
    pub run_history: &'a [RunHistoryEntry],
    pub notes: &'a [GuardNote],
    /// Which (run, item) each key served, as the workers reserved them (for drawing only).
    pub call_items: &'a BTreeMap<String, BTreeSet<(String, u32)>>,
    pub compensations: &'a [CompensationLog],
    /// The runs started and their workflow nodes (fresh runs of a retried node included).
    pub nodes: &'a RunNodes,
}

/// One credit the script owes.
struct Owed<'a> {
    run: &'a str,
    item: u32,
    account: &'a str,
    owed_cents: i64,
    credits_applied: u32,
    net_cents: i64,
}

/// Where the money ended: each owed credit and each effect judged, the run's outcome, and
/// whether the level's goal was reached. Reads no ledger history, no guard notes and no
/// compensations: [`Simulation::goal_reached`](crate::simulator::Simulation::goal_reached)
/// hands it none, so a search that asks only "did this schedule reach the goal?" skips
/// copying the history and checking every promise.
#[derive(Clone, Debug)]
pub struct Money {
    pub credits: Vec<CreditVerdict>,
    pub effects: Vec<EffectVerdict>,
    pub outcome: Outcome,
    pub goal_reached: bool,
    /// Runs that honestly wait (see [`Verdict::waiting`]).
    waiting: Vec<String>,
}

/// The money of a history: what [`judge`] says of it, without the promises and the words.
pub fn money(input: &CheckInput<'_>) -> Money {
    let waiting = waiting_runs(input);
    let waiting_nodes: BTreeSet<&str> = waiting.iter().map(|run| node_of(input.nodes, run)).collect();
    let failed_at = failed_nodes(input);
    let mut owed = owed_credits(input.level);
    match_money(input.billing, input.effects, input.nodes, &mut owed);
    let credits: Vec<CreditVerdict> = owed
        .iter()
        .map(|item| {
            let outcome = if item.net_cents > item.owed_cents {
                Outcome::PaidTwice
            } else if item.net_cents == item.owed_cents {
                Outcome::PaidOnce
            } else if waiting_nodes.contains(item.run)
                || failed_at
                    .get(item.run)
                    .is_some_and(|failed_item| item.item >= *failed_item)
            {
                // The run waits, or failed at this step or before it and says so: a person
                // looking at it sees this step was never done. A step the run got past and
                // then lost (a reflex void) is not flagged by anything.
                Outcome::UnknownFlagged
            } else {
                Outcome::NotPaidButOwed
            };
            CreditVerdict {
                run: item.run.to_owned(),
                item: item.item,
                account: item.account.to_owned(),
                owed_cents: item.owed_cents,
                credits_applied: item.credits_applied,
                net_cents: item.net_cents,
                keys: input
                    .call_items
                    .iter()
                    .filter(|(_, items)| items.contains(&(item.run.to_owned(), item.item)))
                    .map(|(key, _)| key.clone())
                    .collect(),
                outcome,
            }
        })
        .collect();
    let effects = effects::judge_effects(input.level, input.billing, input.nodes, |run, item| {
        waiting_nodes.contains(run) || failed_at.get(run).is_some_and(|failed_item| item >= *failed_item)
    });
    // A level of credits only comes to "paid once" when nothing was owed; one of other
    // effects only to "done once".
    let nothing = if credits.is_empty() && !effects.is_empty() {
        Outcome::DoneOnce
    } else {
        Outcome::PaidOnce
    };
    let outcome = credits
        .iter()
        .map(|credit| credit.outcome)
        .chain(effects.iter().map(|effect| effect.outcome))
        .min()
        .unwrap_or(nothing);
    let goal = input.level.goal;
    let goal_reached =
        credits.iter().any(|credit| credit.outcome == goal) || effects.iter().any(|effect| effect.outcome == goal);
    Money {
        credits,
        effects,
        outcome,
        goal_reached,
        waiting: waiting.into_iter().map(str::to_owned).collect(),
    }
}

pub fn judge(input: &CheckInput<'_>) -> Verdict {
    let Money {
        credits,
        effects,
        outcome,
        goal_reached,
        waiting,
    } = money(input);
    let mut stopped_by = Vec::new();
    let mut stops = Vec::new();
    for note in input.notes {
        if !stopped_by.contains(&note.guard) {
            stopped_by.push(note.guard);
            stops.push(format!("{}: {}", note.guard, crate::text::note_words(note)));
        }
    }

    let violations = violations(input);
    let goal = input.level.goal;
    let mut summary = summarize(outcome, goal_reached, &credits, &stops);
    for effect in &effects {
        summary.push_str(&format!("\n  {}", effect.line()));
    }
    Verdict {
        outcome,
        goal,
        goal_reached,
        credits,
        effects,
        stopped_by,
        stops,
        violations,
        waiting,
        summary,
    }
}

/// Every credit the level's script owes, in script order.
fn owed_credits(level: &Level) -> Vec<Owed<'_>> {
    level
        .credit_calls()
        .map(|(run, item, call)| Owed {
            run: &run.id,
            item: u32::try_from(item).unwrap_or(u32::MAX),
            account: &call.account,
            owed_cents: i64::from(call.amount_cents),
            credits_applied: 0,
            net_cents: 0,
        })
        .collect()
}

/// Matches billing's money to what is owed, by account and amount: each credit goes to the
/// first item of its account and amount not yet paid — of the run whose worker sent it, when
/// that run owes such an item — or, all paid, to the last such item (a second payment); any
/// other credit to the account's first item. A reversal takes back from the item its credit
/// went to, and a reversal of nothing (a blind void) from the account's first item that holds
/// money.
fn match_money(billing: &Billing, effects: &BTreeMap<String, CreditOrigin>, nodes: &RunNodes, owed: &mut [Owed<'_>]) {
    let mut item_of_credit: BTreeMap<&str, usize> = BTreeMap::new();
    for entry in &billing.entries {
        let on_account: Vec<usize> = (0..owed.len())
            .filter(|index| owed[*index].account == entry.account)
            .collect();
        let Some(first) = on_account.first().copied() else {
            // Money moved on an account nothing is owed to: no item to judge it by.
            continue;
        };
        match entry.kind {
            EntryKind::Credit => {
                let mut same_amount: Vec<usize> = on_account
                    .iter()
                    .copied()
                    .filter(|index| owed[*index].owed_cents == entry.amount_cents)
                    .collect();
                if let Some(origin) = effects.get(&entry.id) {
                    let of_its_run: Vec<usize> = same_amount
                        .iter()
                        .copied()
                        .filter(|index| owed[*index].run == node_of(nodes, &origin.run))
                        .collect();
                    if !of_its_run.is_empty() {
                        same_amount = of_its_run;
                    }
                }
                let index = same_amount
                    .iter()
                    .copied()
                    .find(|index| owed[*index].net_cents < owed[*index].owed_cents)
                    .or(same_amount.last().copied())
                    .unwrap_or(first);
                owed[index].credits_applied += 1;
                owed[index].net_cents += entry.amount_cents;
                item_of_credit.insert(entry.id.as_str(), index);
            }
            EntryKind::Reversal => {
                let index = entry
                    .reverses
                    .as_deref()
                    .and_then(|credit| item_of_credit.get(credit).copied())
                    .or_else(|| on_account.iter().copied().find(|index| owed[*index].net_cents > 0))
                    .unwrap_or(first);
                owed[index].net_cents += entry.amount_cents;
            }
        }
    }
}

/// The runs that honestly wait: paused on a call whose record is still unknown, or stopped
/// for a person because their stored state could not be used, or dead-lettered after its
/// recoveries kept failing. A run paused on a call that
/// was settled, and never went on, is not waiting honestly: it is stuck.
fn waiting_runs<'a>(input: &'a CheckInput<'_>) -> BTreeSet<&'a str> {
    let unknown: BTreeSet<&str> = input
        .records
        .iter()
        .filter(|record| record.status.is_unknown())
        .map(|record| record.key.as_str())
        .collect();
    let mut waiting: BTreeSet<&str> = input
        .checkpoints
        .iter()
        .filter(|checkpoint| checkpoint.status == "awaiting_reconciliation")
        .filter(|checkpoint| {
            RunState::from_json(&checkpoint.state).is_ok_and(|state| match state.status {
                crate::runtime::run::RunStatus::AwaitingReconciliation { key } => unknown.contains(key.as_str()),
                _ => false,
            })
        })
        .map(|checkpoint| checkpoint.run_id.as_str())
        .collect();
    // A dead-lettered run is listed for an operator (`GET /v1/runs?status=dead_lettered`) and
    // driven again only when one resumes it: it waits for a person, and says why.
    waiting.extend(
        input
            .checkpoints
            .iter()
            .filter(|checkpoint| checkpoint.status == "dead_lettered")
            .map(|checkpoint| checkpoint.run_id.as_str()),
    );
    waiting.extend(
        input
            .run_history
            .iter()
            .filter(|entry| entry.event == RunEvent::WaitsForPerson)
            .map(|entry| entry.run_id.as_str()),
    );
    waiting
}

/// The nodes whose last run failed, each with the item (step) it failed at: the run's own
/// checkpoint says where it stopped. A node whose failed run was started again is judged by
/// its newest run.
fn failed_nodes<'a>(input: &'a CheckInput<'_>) -> BTreeMap<&'a str, u32> {
    let mut newest: BTreeMap<&str, (u32, &Checkpoint)> = BTreeMap::new();
    for checkpoint in input.checkpoints {
        let run = checkpoint.run_id.as_str();
        let retry = input.nodes.get(run).map_or(0, |node| node.retry);
        let node = node_of(input.nodes, run);
        if newest.get(node).is_none_or(|(newest_retry, _)| retry >= *newest_retry) {
            newest.insert(node, (retry, checkpoint));
        }
    }
    newest
        .into_iter()
        .filter(|(_, (_, checkpoint))| checkpoint.status == "failed")
        .filter_map(|(node, (_, checkpoint))| {
            let state = RunState::from_json(&checkpoint.state).ok()?;
            Some((node, state.item))
        })
        .collect()
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
            // The step as every screen names it ("r1/1"), not the script's index from 0.
            "  {} to {}: owed {}, {} landed, net {} → {}",
            crate::text::step_name(&credit.run, credit.item),
            credit.account,
            dollars(credit.owed_cents),
            crate::text::counted(u64::from(credit.credits_applied), "credit", "credits"),
            dollars(credit.net_cents),
            credit.outcome
        ));
    }
    for stop in stops {
        lines.push(format!("  held: {stop}"));
    }
    lines.join("\n")
}
