//! The drill's checker: reads what the ledger says and what billing did, per tool-call key
//! and per intended credit, and counts every broken promise.
//!
//! Effects are counted from billing's own entries (each carries the intent it served),
//! never from what a worker claimed. The promises, from the seed:
//!
//! - at most one ledger record per key;
//! - a `completed` call has exactly one applied credit behind it, a `failed` one none;
//! - a call still unknown (`started`, `indeterminate`) has no credit billing could have
//!   told the reconcile hook about — where billing can be asked, an unknown call whose
//!   credit exists is one the hook failed to settle;
//! - every credit owed lands once: never twice (a double credit), and never not at all
//!   unless its run honestly waits on an unknown call (a lost credit);
//! - nobody asked for a compensation, so billing holds no reversal.

mod settlements;

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use super::script;
use twice_world::billing::{Billing, Entry, EntryKind, KeyHandling};
use twice_world::ledger::{Checkpoint, ExecutionRecord, HistoryEntry};
use twice_world::model::RunScript;
use twice_world::runtime::guards::{Guard, Guards};
use twice_world::runtime::rules::Status;
use twice_world::runtime::run::{RunState, RunStatus};
use twice_world::runtime::worker::counted;
use twice_world::simulator::dollars;

/// The most violations a report spells out (all are counted).
pub const VIOLATIONS_SHOWN_MAX: usize = 25;

/// What the checker reads.
#[derive(Debug)]
pub struct CheckInput<'a> {
    pub scripts: &'a [RunScript],
    pub records: &'a [ExecutionRecord],
    pub checkpoints: &'a [Checkpoint],
    pub billing: &'a Billing,
    pub guards: Guards,
    /// Every record's history lines, in the order they were written.
    pub history: &'a [HistoryEntry],
    /// The workers' tool declares a reconcile hook.
    pub hook_declared: bool,
    /// Every process that ended was replaced by the one that recovered its run, and none ran
    /// beside another ([`crate::supervisor::DrillConfig::every_end_replaced`]).
    pub every_end_replaced: bool,
}

/// What the checker found.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Findings {
    pub runs_finished: u32,
    pub runs_waiting: u32,
    pub runs_unfinished: u32,
    pub calls_completed: u32,
    pub calls_failed: u32,
    pub calls_unknown: u32,
    pub calls_compensated: u32,
    pub credits_applied: u32,
    pub reversals: u32,
    pub intents: u32,
    pub intents_paid_once: u32,
    /// Not (yet) paid, and the run waits on an unknown call: honest, not lost.
    pub intents_waiting: u32,
    /// Credits beyond the first for one intent.
    pub double_credits: u32,
    /// Intents owed, not paid, and not flagged unknown.
    pub lost_credits: u32,
    /// Unknown calls whose credit billing holds under their key, where the hook could have asked.
    pub unsettled_but_found: u32,
    /// Calls a worker that replaced a dead one recorded `recovered_unknown`.
    pub calls_recovered_unknown: u32,
    /// Calls whose status an operator's decision set, with their reason.
    pub settled_by_operator: u32,
    /// Operator resolutions of a `started` call (acknowledging it may be in flight).
    pub operator_settled_started: u32,
    pub violations_total: u32,
    /// The first [`VIOLATIONS_SHOWN_MAX`] violations, spelled out.
    pub violations: Vec<String>,
}

impl Findings {
    fn violation(&mut self, text: String) {
        self.violations_total += 1;
        if self.violations.len() < VIOLATIONS_SHOWN_MAX {
            self.violations.push(text);
        }
    }

    pub fn passed(&self) -> bool {
        self.violations_total == 0
    }
}

/// Where a run stands, from its checkpoint.
enum RunStanding {
    Finished,
    /// Waiting on an unknown call; items from `item` on are not reached yet.
    Waiting {
        item: u32,
    },
    Unfinished(String),
}

fn standing(checkpoint: Option<&Checkpoint>, records: &BTreeMap<&str, &ExecutionRecord>) -> RunStanding {
    let Some(checkpoint) = checkpoint else {
        return RunStanding::Unfinished("it has no checkpoint".into());
    };
    let state = match RunState::from_json(&checkpoint.state) {
        Ok(state) => state,
        Err(error) => return RunStanding::Unfinished(error.to_string()),
    };
    match &state.status {
        status if status.is_terminal() => RunStanding::Finished,
        RunStatus::AwaitingReconciliation { key } => {
            let still_unknown = records
                .get(key.as_str())
                .is_none_or(|record| record.status.is_unknown());
            if still_unknown {
                RunStanding::Waiting { item: state.item }
            } else {
                RunStanding::Unfinished(format!("it awaits {key}, which is settled, and nobody resumed it"))
            }
        }
        status => RunStanding::Unfinished(format!("its checkpoint says {}", status.name())),
    }
}

/// The key billing stored a credit under, as its key or in its metadata.
fn stored_key(entry: &Entry) -> Option<&str> {
    entry
        .idempotency_key
        .as_deref()
        .or_else(|| entry.metadata.get("idempotency_key").map(String::as_str))
}

pub fn judge(input: &CheckInput<'_>) -> Findings {
    let mut findings = Findings::default();
    let scripts: BTreeMap<&str, &RunScript> = input
        .scripts
        .iter()
        .map(|script| (script.id.as_str(), script))
        .collect();
    let records: BTreeMap<&str, &ExecutionRecord> = input
        .records
        .iter()
        .map(|record| (record.key.as_str(), record))
        .collect();
    let checkpoints: BTreeMap<&str, &Checkpoint> = input
        .checkpoints
        .iter()
        .map(|checkpoint| (checkpoint.run_id.as_str(), checkpoint))
        .collect();
    let landed = judge_billing(input, &scripts, &mut findings);
    judge_intents(input, &checkpoints, &records, &landed, &mut findings);
    judge_keys(input, &scripts, &records, &landed, &mut findings);
    settlements::judge_settlements(input, &mut findings);
    findings
}

/// What billing's entries show, per intent (each entry carries the intent it served).
struct Landed<'a> {
    credits_by_intent: BTreeMap<&'a str, Vec<&'a Entry>>,
    net_by_intent: BTreeMap<&'a str, i64>,
}

/// Billing's side: what landed, per intent; a reversal nobody asked for, an entry for an
/// intent no run owes.
fn judge_billing<'a>(
    input: &CheckInput<'a>,
    scripts: &BTreeMap<&str, &RunScript>,
    findings: &mut Findings,
) -> Landed<'a> {
    let mut credits_by_intent: BTreeMap<&str, Vec<&Entry>> = BTreeMap::new();
    let mut net_by_intent: BTreeMap<&str, i64> = BTreeMap::new();
    for entry in &input.billing.entries {
        let intent = entry.metadata.get("intent").map(String::as_str).unwrap_or_default();
        *net_by_intent.entry(intent).or_default() += entry.amount_cents;
        match entry.kind {
            EntryKind::Credit => {
                findings.credits_applied += 1;
                credits_by_intent.entry(intent).or_default().push(entry);
            }
            EntryKind::Reversal => {
                findings.reversals += 1;
                findings.violation(format!(
                    "billing posted reversal {} ({}, {}): the runtime compensated by itself, and nobody asked it to",
                    entry.id,
                    entry.memo,
                    dollars(entry.amount_cents)
                ));
            }
        }
        let known = intent.rsplit_once('/').is_some_and(|(run, item)| {
            scripts
                .get(run)
                .is_some_and(|script| item.parse::<usize>().is_ok_and(|item| item < script.calls.len()))
        });
        if !known {
            findings.violation(format!(
                "billing entry {} serves intent `{intent}`, which no run of this drill owes",
                entry.id
            ));
        }
    }
    Landed {
        credits_by_intent,
        net_by_intent,
    }
}

/// Per intended credit: paid once, twice, waiting, or lost; per run: finished, waiting or not.
fn judge_intents(
    input: &CheckInput<'_>,
    checkpoints: &BTreeMap<&str, &Checkpoint>,
    records: &BTreeMap<&str, &ExecutionRecord>,
    landed: &Landed<'_>,
    findings: &mut Findings,
) {
    let Landed {
        credits_by_intent,
        net_by_intent,
    } = landed;
    for script in input.scripts {
        let standing = standing(checkpoints.get(script.id.as_str()).copied(), records);
        match &standing {
            RunStanding::Finished => findings.runs_finished += 1,
            RunStanding::Waiting { .. } => findings.runs_waiting += 1,
            RunStanding::Unfinished(why) => {
                findings.runs_unfinished += 1;
                findings.violation(format!(
                    "run {} neither finished nor waits on an unknown call: {why}",
                    script.id
                ));
            }
        }
        for (item, call) in script.calls.iter().enumerate() {
            let item = item as u32;
            let intent = script::intent(&script.id, item);
            findings.intents += 1;
            let credits = credits_by_intent.get(intent.as_str()).map_or(&[][..], Vec::as_slice);
            let net = net_by_intent.get(intent.as_str()).copied().unwrap_or(0);
            let owed = i64::from(call.amount_cents);
            if credits.len() > 1 {
                findings.double_credits += credits.len() as u32 - 1;
                let ids: Vec<&str> = credits.iter().map(|entry| entry.id.as_str()).collect();
                findings.violation(format!(
                    "{intent} ({} owed {}): {} landed ({}) — paid {} times",
                    call.account,
                    dollars(owed),
                    counted(credits.len() as u64, "credit", "credits"),
                    ids.join(", "),
                    credits.len()
                ));
            }
            if credits.len() == 1 && net == owed {
                findings.intents_paid_once += 1;
            } else if net < owed {
                let waiting = matches!(standing, RunStanding::Waiting { item: from } if item >= from);
                if waiting {
                    findings.intents_waiting += 1;
                } else {
                    findings.lost_credits += 1;
                    findings.violation(format!(
                        "{intent} ({} owed {}): {} landed, and no call for it is flagged unknown — a lost credit",
                        call.account,
                        dollars(owed),
                        dollars(net)
                    ));
                }
            }
        }
    }
}

/// Per tool-call key: what the ledger says against what billing did.
fn judge_keys(
    input: &CheckInput<'_>,
    scripts: &BTreeMap<&str, &RunScript>,
    records: &BTreeMap<&str, &ExecutionRecord>,
    landed: &Landed<'_>,
    findings: &mut Findings,
) {
    let credits_by_intent = &landed.credits_by_intent;
    let mut per_key: BTreeMap<&str, u32> = BTreeMap::new();
    for record in input.records {
        *per_key.entry(record.key.as_str()).or_default() += 1;
    }
    for (key, count) in per_key.iter().filter(|(_, count)| **count > 1) {
        findings.violation(format!("{count} ledger records for key {key}; at most one is allowed"));
    }
    let keys_reach_billing =
        input.billing.key_handling != KeyHandling::Ignore && input.guards.is_on(Guard::KeyDownstream);
    let hook_could_ask =
        keys_reach_billing && input.guards.is_on(Guard::ReconcileHook) && input.guards.is_on(Guard::Ledger);
    // Where billing keeps the key, each credit can be traced to the call that made it.
    let mut credits_by_key: BTreeMap<&str, u32> = BTreeMap::new();
    for entry in input
        .billing
        .entries
        .iter()
        .filter(|entry| entry.kind == EntryKind::Credit)
    {
        if let Some(key) = stored_key(entry) {
            *credits_by_key.entry(key).or_default() += 1;
        }
    }
    for record in input.records {
        let key = record.key.as_str();
        match record.status {
            Status::Completed => findings.calls_completed += 1,
            Status::Failed => findings.calls_failed += 1,
            Status::Started | Status::Indeterminate => findings.calls_unknown += 1,
            Status::Compensating | Status::Compensated => findings.calls_compensated += 1,
        }
        let Some(script) = scripts.get(record.run_id.as_str()) else {
            findings.violation(format!(
                "ledger record {key} belongs to run {}, which this drill did not start",
                record.run_id
            ));
            continue;
        };
        let Some(item) = script::item_of(script, &record.arguments) else {
            findings.violation(format!(
                "ledger record {key} holds arguments {} that are not a call of run {}",
                record.arguments, record.run_id
            ));
            continue;
        };
        let intent = script::intent(&record.run_id, item);
        let landed = credits_by_intent.get(intent.as_str()).map_or(0, Vec::len);
        let under_key = keys_reach_billing.then(|| credits_by_key.get(key).copied().unwrap_or(0));
        match record.status {
            Status::Completed if landed != 1 => findings.violation(format!(
                "{key} is completed in the ledger, but {} landed for {intent}",
                counted(landed as u64, "credit", "credits")
            )),
            Status::Completed if under_key.is_some_and(|count| count != 1) => findings.violation(format!(
                "{key} is completed in the ledger, but billing holds {} under that key",
                counted(under_key.unwrap_or(0) as u64, "credit", "credits")
            )),
            // A failed call may be followed by a new call for the same credit, so only the
            // credits billing keeps under this very key can show that it did land.
            Status::Failed if under_key.is_some_and(|count| count != 0) => findings.violation(format!(
                "{key} is failed in the ledger, but billing holds {} under that key",
                counted(under_key.unwrap_or(0) as u64, "credit", "credits")
            )),
            Status::Started | Status::Indeterminate if hook_could_ask => {
                if let Some(credit) = input.billing.find_credit(key) {
                    findings.unsettled_but_found += 1;
                    findings.violation(format!(
                        "{key} is still {} in the ledger, but billing holds credit {} under that key: the reconcile hook should have settled it",
                        record.status, credit.id
                    ));
                }
            }
            _ => {}
        }
    }
    if input.guards.is_on(Guard::Ledger) && keys_reach_billing {
        let reserved: BTreeSet<&str> = records.keys().copied().collect();
        for entry in input
            .billing
            .entries
            .iter()
            .filter(|entry| entry.kind == EntryKind::Credit)
        {
            if let Some(key) = stored_key(entry)
                && !reserved.contains(key)
            {
                findings.violation(format!(
                    "credit {} was paid under key {key}, which the ledger never reserved",
                    entry.id
                ));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use twice_world::billing::CreditRequest;
    use twice_world::billing_tools::CreditArguments;
    use twice_world::ledger::HistoryEvent;
    use twice_world::runtime::key::IdempotencyKey;
    use twice_world::runtime::run::Told;
    use twice_world::runtime::tool::SideEffect;

    fn one_credit_script() -> RunScript {
        // The first drill run that owes exactly one credit.
        (1..)
            .map(|number| script::script_for(&script::run_id(number)))
            .find(|script| script.calls.len() == 1)
            .expect("some run owes one credit")
    }

    fn record(script: &RunScript, status: Status) -> ExecutionRecord {
        let call = &script.calls[0];
        let arguments = CreditArguments {
            account: call.account.clone(),
            amount_cents: call.amount_cents,
            memo: call.memo.clone(),
            owner: None,
        }
        .to_arguments()
        .canonical();
        ExecutionRecord::new(
            IdempotencyKey::per_call(&script.id, "c1").unwrap(),
            script.id.clone(),
            "c1",
            script::TOOL_NAME,
            SideEffect::External,
            arguments,
            "w1",
        )
        .with_tenant(script::TENANT)
        .with_outcome(status, 1, None)
        .with_times(1, 2)
    }

    fn checkpoint(script: &RunScript, status: RunStatus) -> Checkpoint {
        let mut state = RunState::default();
        if let RunStatus::AwaitingReconciliation { .. } = status {
            state.item = 0;
        } else {
            state.item = script.calls.len() as u32;
            state
                .transcript
                .push(("c1".into(), Told::Result { result: "ok".into() }));
        }
        state.status = status;
        Checkpoint::new(script.id.clone(), 3, state.status.name(), state.to_json(), "w1", 3)
    }

    fn billing_with(script: &RunScript, credits: u32) -> Billing {
        // Metadata-only: a repeated key lands again, as a naive runtime's repeat would.
        let mut billing = Billing::new(KeyHandling::MetadataOnly, &script::accounts());
        let call = &script.calls[0];
        for _ in 0..credits {
            billing.credit(
                &CreditRequest {
                    account: call.account.clone(),
                    amount_cents: call.amount_cents,
                    memo: call.memo.clone(),
                    idempotency_key: Some(format!("{}:c1", script.id)),
                    intent: script::intent(&script.id, 0),
                },
                5,
            );
        }
        billing
    }

    fn judged(
        script: &RunScript,
        records: &[ExecutionRecord],
        checkpoints: &[Checkpoint],
        billing: &Billing,
    ) -> Findings {
        judge(&CheckInput {
            scripts: std::slice::from_ref(script),
            records,
            checkpoints,
            billing,
            guards: Guards::all_on(),
            history: &[],
            hook_declared: true,
            every_end_replaced: false,
        })
    }

    #[test]
    fn one_completed_call_and_one_credit_pass() {
        let script = one_credit_script();
        let findings = judged(
            &script,
            &[record(&script, Status::Completed)],
            &[checkpoint(&script, RunStatus::Completed)],
            &billing_with(&script, 1),
        );
        assert!(findings.passed(), "{findings:?}");
        assert_eq!((findings.intents_paid_once, findings.calls_completed), (1, 1));
    }

    #[test]
    fn two_credits_for_one_intent_are_a_double_credit() {
        let script = one_credit_script();
        let findings = judged(
            &script,
            &[record(&script, Status::Completed)],
            &[checkpoint(&script, RunStatus::Completed)],
            &billing_with(&script, 2),
        );
        assert_eq!(findings.double_credits, 1);
        assert!(!findings.passed());
        assert!(
            findings.violations.iter().any(|text| text.contains("paid 2 times")),
            "{findings:?}"
        );
    }

    #[test]
    fn a_finished_run_with_nothing_paid_lost_a_credit_but_a_waiting_one_did_not() {
        let script = one_credit_script();
        let lost = judged(
            &script,
            &[record(&script, Status::Completed)],
            &[checkpoint(&script, RunStatus::Completed)],
            &billing_with(&script, 0),
        );
        assert_eq!(lost.lost_credits, 1);
        assert!(
            lost.violations
                .iter()
                .any(|text| text.contains("is completed in the ledger, but 0 credits"))
        );

        let key = format!("{}:c1", script.id);
        let waiting = judged(
            &script,
            &[record(&script, Status::Started)],
            &[checkpoint(&script, RunStatus::AwaitingReconciliation { key })],
            &billing_with(&script, 0),
        );
        assert!(waiting.passed(), "{waiting:?}");
        assert_eq!(
            (waiting.intents_waiting, waiting.runs_waiting, waiting.calls_unknown),
            (1, 1, 1)
        );
    }

    #[test]
    fn an_unknown_call_whose_credit_billing_can_find_was_not_reconciled() {
        let script = one_credit_script();
        let key = format!("{}:c1", script.id);
        let findings = judged(
            &script,
            &[record(&script, Status::Indeterminate)],
            &[checkpoint(&script, RunStatus::AwaitingReconciliation { key })],
            &billing_with(&script, 1),
        );
        assert_eq!(findings.unsettled_but_found, 1);
        assert!(!findings.passed());
    }

    #[test]
    fn reversals_unreserved_credits_and_runs_left_running_are_violations() {
        let script = one_credit_script();
        let mut billing = billing_with(&script, 1);
        let call = &script.calls[0];
        billing.void_credit(
            &format!("{}:c1", script.id),
            &call.account,
            call.amount_cents,
            &script::intent(&script.id, 0),
            9,
        );
        let findings = judged(&script, &[], &[checkpoint(&script, RunStatus::Running)], &billing);
        assert_eq!(findings.reversals, 1);
        assert_eq!(findings.runs_unfinished, 1);
        let text = findings.violations.join("\n");
        assert!(text.contains("compensated by itself"), "{text}");
        assert!(text.contains("never reserved"), "{text}");
        assert!(text.contains("neither finished"), "{text}");
    }

    /// One history line of the one-credit script's `c1`.
    fn line(script: &RunScript, id: u64, event: HistoryEvent, actor: &str, moved: (Status, Status)) -> HistoryEntry {
        HistoryEntry {
            id,
            key: IdempotencyKey::per_call(&script.id, "c1").unwrap(),
            at_ms: id,
            actor: actor.into(),
            event,
            from_status: Some(moved.0),
            to_status: Some(moved.1),
            reason: (event == HistoryEvent::Resolved).then(|| "billing holds nothing under the key".into()),
            detail: None,
        }
    }

    /// The one-credit script's `c1`, now `status` after `history`, its model told `told`; the
    /// settlement violations only (a failed call's credit is owed, which is another finding).
    fn settlement_violations(
        history: &[HistoryEntry],
        status: Status,
        told: Told,
        hook_declared: bool,
        every_end_replaced: bool,
    ) -> (Findings, Vec<String>) {
        let script = one_credit_script();
        let mut state = RunState::from_json(&checkpoint(&script, RunStatus::Completed).state).unwrap();
        state.transcript = vec![("c1".into(), told)];
        let checkpoint = Checkpoint::new(script.id.clone(), 3, "completed", state.to_json(), "w1", 3);
        let findings = judge(&CheckInput {
            scripts: std::slice::from_ref(&script),
            records: &[record(&script, status)],
            checkpoints: &[checkpoint],
            billing: &billing_with(&script, u32::from(status == Status::Completed)),
            guards: Guards::all_on(),
            history,
            hook_declared,
            every_end_replaced,
        });
        let settling = findings
            .violations
            .iter()
            .filter(|violation| !violation.contains("lost credit") && !violation.contains("credits landed"))
            .cloned()
            .collect();
        (findings, settling)
    }

    #[test]
    fn a_tool_without_a_hook_never_has_a_call_settled_by_one() {
        let script = one_credit_script();
        let history = [line(
            &script,
            1,
            HistoryEvent::Reconciled,
            "w2",
            (Status::Indeterminate, Status::Completed),
        )];
        let result = || Told::Result { result: "ok".into() };
        let (_, none_declared) = settlement_violations(&history, Status::Completed, result(), false, false);
        assert!(none_declared[0].contains("declares none"), "{none_declared:?}");
        let (_, declared) = settlement_violations(&history, Status::Completed, result(), true, false);
        assert!(declared.is_empty(), "{declared:?}");
    }

    #[test]
    fn a_call_recovered_unknown_is_settled_only_by_the_hook_or_an_operator() {
        let script = one_credit_script();
        let recovered = line(
            &script,
            1,
            HistoryEvent::RecoveredUnknown,
            "w2",
            (Status::Started, Status::Indeterminate),
        );
        let result = || Told::Result { result: "ok".into() };
        let by_an_outcome = [
            recovered.clone(),
            line(
                &script,
                2,
                HistoryEvent::Outcome(twice_world::runtime::rules::Outcome::Completed),
                "w9",
                (Status::Indeterminate, Status::Completed),
            ),
        ];
        let (_, wrong) = settlement_violations(&by_an_outcome, Status::Completed, result(), true, true);
        assert!(wrong[0].contains("only the reconcile hook or an operator"), "{wrong:?}");
        let by_the_operator = [
            recovered,
            line(
                &script,
                2,
                HistoryEvent::Resolved,
                "drill-operator",
                (Status::Indeterminate, Status::Completed),
            ),
        ];
        let (findings, right) = settlement_violations(&by_the_operator, Status::Completed, result(), false, true);
        assert!(right.is_empty(), "{right:?}");
        assert_eq!(
            (
                findings.calls_recovered_unknown,
                findings.settled_by_operator,
                findings.operator_settled_started
            ),
            (1, 1, 0)
        );
    }

    #[test]
    fn where_every_ended_process_was_replaced_the_operator_never_settles_a_started_call() {
        let script = one_credit_script();
        let history = [line(
            &script,
            1,
            HistoryEvent::Resolved,
            "drill-operator",
            (Status::Started, Status::Completed),
        )];
        let result = || Told::Result { result: "ok".into() };
        let (findings, replaced) = settlement_violations(&history, Status::Completed, result(), true, true);
        assert_eq!(findings.operator_settled_started, 1);
        assert!(replaced[0].contains("acknowledging it in flight"), "{replaced:?}");
        let (_, not_replaced) = settlement_violations(&history, Status::Completed, result(), true, false);
        assert!(not_replaced.is_empty(), "{not_replaced:?}");
    }

    #[test]
    fn the_model_hears_an_operators_decision_as_theirs() {
        let script = one_credit_script();
        let history = [line(
            &script,
            1,
            HistoryEvent::Resolved,
            "drill-operator",
            (Status::Indeterminate, Status::Failed),
        )];
        let (_, plain) = settlement_violations(&history, Status::Failed, Told::DidNotTakeEffect, true, true);
        assert!(
            plain[0].contains("the model was told \"did not take effect\"") && plain[0].contains("drill-operator"),
            "{plain:?}"
        );
        let theirs = Told::SettledByOperator {
            settled: twice_world::runtime::run::Settled::DidNotTakeEffect,
            operator: "drill-operator".into(),
            reason: "billing holds nothing under the key".into(),
        };
        let (_, heard) = settlement_violations(&history, Status::Failed, theirs, true, true);
        assert!(heard.is_empty(), "{heard:?}");
    }
}
