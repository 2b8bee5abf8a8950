//! The checker, on a runtime's real run: billing's money per customer and per intent (which
//! request made each credit is the wire's knowledge, not the runtime's claim), judged as the
//! simulator's checker judges it; a run that honestly waits (paused on an unknown call, or
//! stopped for a person) flags what it has not paid. And what the runtime reported against
//! what billing applied: a call it recorded `failed` whose credit stands is a lie a later
//! run would act on.

use std::collections::BTreeMap;

use super::{Conductor, State};
use twice_world::billing::Billing;
use twice_world::checker::{self, CheckInput, CreditOrigin, Outcome, Verdict};
use twice_world::level::Level;
use twice_world::runtime::guards::Guards;

/// Money landed per customer, net of reversals, in cents: customer's name → cents.
pub type Money = BTreeMap<String, i64>;

/// The net money billing moved to each of the level's customers.
pub fn money_of(billing: &Billing, level: &Level) -> Money {
    let mut money: Money = level
        .world
        .accounts
        .iter()
        .map(|account| (account.owner.clone(), 0))
        .collect();
    for entry in &billing.entries {
        // Signed already: a reversal's amount is negative.
        *money.entry(level.world.owner_of(&entry.account)).or_default() += entry.amount_cents;
    }
    money
}

/// What the runtime's real run came to.
#[derive(Clone, Debug)]
pub struct Actual {
    pub money: Money,
    pub verdict: Verdict,
    /// The runs (workflow nodes) that ended waiting for someone or failed, saying so.
    pub waiting: Vec<String>,
    /// What the runtime reported that billing contradicts.
    pub contradictions: Vec<String>,
}

/// Statuses a run's `exit` may give that say it is not done and someone must look.
const WAITING_STATUSES: [&str; 3] = ["awaiting_reconciliation", "dead_lettered", "waits_for_person"];

/// How a workflow node's newest run ended, as the runtime left it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum RunEnd {
    /// Paused on a call, or stopped for a person: what it has not paid is flagged.
    Waiting,
    /// Failed at this step (script item): that step and the later ones are flagged.
    FailedAt(u32),
    Other,
}

impl Conductor<'_> {
    /// How each node's newest run ended: its newest process's word on it.
    fn run_ends(&self, nodes: &checker::RunNodes) -> BTreeMap<String, RunEnd> {
        let mut newest: BTreeMap<String, (u32, u32, RunEnd)> = BTreeMap::new();
        for (worker, proc) in &self.procs {
            let run = proc.spawn.run.as_str();
            let node = checker::node_of(nodes, run).to_owned();
            let retry = nodes.get(run).map_or(0, |node| node.retry);
            let end = if self.parked_at_end.contains(worker) {
                RunEnd::Waiting
            } else {
                match proc.exit_status.as_deref() {
                    Some(status) if WAITING_STATUSES.contains(&status) => RunEnd::Waiting,
                    Some("failed") => RunEnd::FailedAt(self.model.last_item(run)),
                    // Stood down: another process drives the run, and says how it ends.
                    Some("stood_down") => continue,
                    Some(_) => RunEnd::Other,
                    // Killed, or gone without a word: it says nothing of the run.
                    None => continue,
                }
            };
            let entry = newest.entry(node).or_insert((retry, *worker, end));
            if (retry, *worker) >= (entry.0, entry.1) {
                *entry = (retry, *worker, end);
            }
        }
        newest.into_iter().map(|(node, (_, _, end))| (node, end)).collect()
    }

    /// Judges billing as it stands now.
    pub fn judge(&self, nodes: &checker::RunNodes) -> Actual {
        let billing = self.billing.as_ref().map_or_else(
            || Billing::new(self.level.world.billing_keys, &[]),
            |billing| billing.billing(),
        );
        let effects: BTreeMap<String, CreditOrigin> = self
            .effects
            .iter()
            .map(|(credit, (run, call))| {
                (
                    credit.clone(),
                    CreditOrigin {
                        run: run.clone(),
                        key: call.clone(),
                    },
                )
            })
            .collect();
        let call_items = BTreeMap::new();
        let input = CheckInput {
            level: self.level,
            // Nothing of the runtime's ledger is read here: it is the runtime's own.
            guards: Guards::all_off(),
            billing: &billing,
            effects: &effects,
            records: &[],
            history: &[],
            second_node_history: &[],
            checkpoints: &[],
            run_history: &[],
            notes: &[],
            call_items: &call_items,
            compensations: &[],
            nodes,
        };
        let mut verdict = checker::judge(&input);
        let ends = self.run_ends(nodes);
        let flagged = |run: &str, item: u32| match ends.get(run) {
            Some(RunEnd::Waiting) => true,
            Some(RunEnd::FailedAt(failed_at)) => item >= *failed_at,
            Some(RunEnd::Other) | None => false,
        };
        for credit in &mut verdict.credits {
            if credit.outcome == Outcome::NotPaidButOwed && flagged(&credit.run, credit.item) {
                credit.outcome = Outcome::UnknownFlagged;
            }
        }
        // Emails, owner changes and deletes the same way: a step its run honestly waits on is
        // flagged, not "never done".
        for effect in &mut verdict.effects {
            if effect.outcome == Outcome::NotDone && flagged(&effect.run, effect.item) {
                effect.outcome = Outcome::UnknownFlagged;
            }
        }
        let waiting: Vec<String> = ends
            .iter()
            .filter(|(_, end)| **end != RunEnd::Other)
            .map(|(node, _)| node.clone())
            .collect();
        // As the simulator's checker: a level of credits comes to "paid once" when nothing was
        // owed; one of other effects to "done once".
        let nothing = if verdict.credits.is_empty() && !verdict.effects.is_empty() {
            Outcome::DoneOnce
        } else {
            Outcome::PaidOnce
        };
        let outcomes = || {
            verdict
                .credits
                .iter()
                .map(|credit| credit.outcome)
                .chain(verdict.effects.iter().map(|effect| effect.outcome))
        };
        let outcome = outcomes().min().unwrap_or(nothing);
        let goal_reached = outcomes().any(|outcome| outcome == verdict.goal);
        verdict.outcome = outcome;
        verdict.goal_reached = goal_reached;
        verdict.violations.clear();
        verdict.stopped_by.clear();
        verdict.stops.clear();
        let mut contradictions = Vec::new();
        for ((run, call), status) in &self.recorded {
            if status != "failed" {
                continue;
            }
            for (credit, (credit_run, credit_call)) in &self.effects {
                if credit_run == run && credit_call == call && !billing.is_reversed(credit) {
                    contradictions.push(format!(
                        "{run} {call} was recorded failed, but billing holds its credit {credit}: a run that believes the ledger pays again"
                    ));
                }
            }
        }
        Actual {
            money: money_of(&billing, self.level),
            verdict,
            waiting,
            contradictions,
        }
    }

    /// Ends every process still there (a run parked at the end is noted as waiting).
    pub async fn finish(&mut self) {
        let parked: Vec<u32> = self
            .procs
            .iter()
            .filter(|(_, proc)| proc.state == State::Parked)
            .map(|(worker, _)| *worker)
            .collect();
        self.parked_at_end.extend(parked);
        let live: Vec<u32> = self
            .procs
            .iter()
            .filter(|(_, proc)| !matches!(proc.state, State::Gone { .. }))
            .map(|(worker, _)| *worker)
            .collect();
        for worker in live {
            if let Some(proc) = self.procs.get_mut(&worker) {
                proc.process.signal(super::super::process::Signal::Kill);
                proc.state = State::Gone { killed: true };
            }
        }
    }
}
