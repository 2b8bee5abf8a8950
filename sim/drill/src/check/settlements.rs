//! Who settled each call, from the ledger's history: a call nobody is left to hear (a replacing
//! worker recorded it `recovered_unknown`) is settled by the reconcile hook, when the tool has
//! one, or by an operator with a reason; a tool without a hook never has a call settled by
//! one; the model hears an operator's decision as theirs, with their reason; and where every
//! process that ended was replaced, the operator never has to settle a `started` call.

use std::collections::BTreeMap;

use twice_world::ledger::{ExecutionRecord, HistoryEntry, HistoryEvent, OperatorDecision};
use twice_world::runtime::rules::Status;
use twice_world::runtime::run::{RunState, Told};
use twice_world::text::told_words;

use super::{CheckInput, Findings};

pub(super) fn judge_settlements(input: &CheckInput<'_>, findings: &mut Findings) {
    let mut history_by_key: BTreeMap<&str, Vec<HistoryEntry>> = BTreeMap::new();
    for line in input.history {
        history_by_key.entry(line.key.as_str()).or_default().push(line.clone());
    }
    // What each run's checkpoint says its model was told, by (run, call id).
    let states: Vec<(&str, RunState)> = input
        .checkpoints
        .iter()
        .filter_map(|checkpoint| Some((checkpoint.run_id.as_str(), RunState::from_json(&checkpoint.state).ok()?)))
        .collect();
    let told: BTreeMap<(&str, &str), &Told> = states
        .iter()
        .flat_map(|(run, state)| {
            state
                .transcript
                .iter()
                .map(move |(call, heard)| ((*run, call.as_str()), heard))
        })
        .collect();
    for record in input.records {
        let history = history_by_key.get(record.key.as_str()).map_or(&[][..], Vec::as_slice);
        let recovered = history.iter().any(|line| line.event == HistoryEvent::RecoveredUnknown);
        if recovered {
            findings.calls_recovered_unknown += 1;
        }
        let decision = OperatorDecision::behind(record, history);
        if decision.is_some() {
            findings.settled_by_operator += 1;
        }
        judge_record(input, record, history, recovered, decision.as_ref(), &told, findings);
    }
}

fn judge_record(
    input: &CheckInput<'_>,
    record: &ExecutionRecord,
    history: &[HistoryEntry],
    recovered: bool,
    decision: Option<&OperatorDecision>,
    told: &BTreeMap<(&str, &str), &Told>,
    findings: &mut Findings,
) {
    let key = record.key.as_str();
    if !input.hook_declared && history.iter().any(|line| line.event == HistoryEvent::Reconciled) {
        findings.violation(format!(
            "{key} was settled by a reconcile hook, but the workers' tool declares none"
        ));
    }
    let settling = history
        .iter()
        .rev()
        .find(|line| line.to_status == Some(record.status) && record.status.is_settled());
    if recovered
        && let Some(line) = settling
        && decision.is_none()
        && line.event != HistoryEvent::Reconciled
    {
        findings.violation(format!(
            "{key} was recorded recovered_unknown (nobody left to hear it), then settled `{}` by {}'s `{}`: only \
             the reconcile hook or an operator with a reason may settle it",
            record.status, line.actor, line.event
        ));
    }
    for line in history.iter().filter(|line| line.event == HistoryEvent::Resolved) {
        if line.from_status == Some(Status::Started) {
            findings.operator_settled_started += 1;
            if input.every_end_replaced {
                findings.violation(format!(
                    "{key}: {} settled a `started` call, acknowledging it in flight, though every process that \
                     ended was replaced: its owner's successor should have recorded it recovered_unknown first",
                    line.actor
                ));
            }
        }
    }
    let Some(decision) = decision else {
        return;
    };
    if let Some(heard) = told.get(&(record.run_id.as_str(), record.tool_call_id.as_str()))
        && record.status != Status::Completed
        && heard.operator_decision() != Some((decision.operator.as_str(), decision.reason.as_str()))
    {
        findings.violation(format!(
            "the model was told \"{}\" of {key}, not {}'s decision ({})",
            told_words(heard),
            decision.operator,
            decision.reason
        ));
    }
}
