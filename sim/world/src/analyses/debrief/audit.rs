//! What the level's audit did, told from this run's audit report and billing: who looked and
//! when, the credits they found paying one refund, which one the runtime undid and why that is
//! what compensation is for; or, when a double stands, why the audit could not see it (its
//! request still on the wire, or its credit landing after the look).

use crate::billing::Entry;
use crate::runtime::rules::Status;
use crate::simulator::{AuditReport, AuditUndo, Simulation};
use crate::text::counted;

/// The audit's sentence for this run, if the level has an audit and it has looked.
pub(super) fn audit_sentence(simulation: &Simulation) -> Option<String> {
    let report = simulation.audit_report()?;
    if let Some(undo) = report.undos.first() {
        return Some(undo_sentence(report, undo));
    }
    match double_after(simulation, report) {
        Some((late, memo)) => Some(unseen_sentence(report, &late, &memo)),
        None => Some(format!(
            "{} checked billing at {} ms: {} standing, none paying a refund twice, so they undid nothing.",
            report.auditor,
            report.at_ms,
            counted(report.standing as u64, "credit", "credits")
        )),
    }
}

/// An extra credit the audit asked the runtime to undo.
fn undo_sentence(report: &AuditReport, undo: &AuditUndo) -> String {
    let key = |key: &Option<String>| key.clone().unwrap_or_else(|| "no key".to_owned());
    let (kept_key, extra_key) = (key(&undo.kept_key), key(&undo.extra_key));
    let found = format!(
        "{} checked billing at {} ms and found two credits for the {}, {} ({kept_key}) and {} ({extra_key})",
        report.auditor,
        report.at_ms,
        crate::simulator::lowercase_first(&undo.memo),
        undo.kept_credit,
        undo.extra_credit
    );
    let why_kept = if undo.kept_status == Some(Status::Completed) {
        "whose call the ledger records completed"
    } else {
        "billing's first"
    };
    let more = if report.undos.len() > 1 {
        format!(
            " (and {} more)",
            counted(report.undos.len() as u64 - 1, "double", "doubles")
        )
    } else {
        String::new()
    };
    if undo.undone {
        format!(
            "{found}. They kept {}, {why_kept}, and compensated {extra_key}{more}: the runtime looked under its key, found {} and voided it. That is compensation's right use: an undo decided by someone who checked the other system, never a reflex.",
            undo.kept_credit, undo.extra_credit
        )
    } else {
        format!(
            "{found}, but the runtime could not undo {} (the timeline says why), so both stand.",
            undo.extra_credit
        )
    }
}

/// The standing credit that pays a refund twice and landed after the audit looked, with its
/// refund's memo: the double the audit could not see.
fn double_after(simulation: &Simulation, report: &AuditReport) -> Option<(Entry, String)> {
    let billing = simulation.billing();
    let standing: Vec<&Entry> = billing.standing_credits().collect();
    standing.iter().find_map(|entry| {
        let intent = entry.metadata.get("intent")?;
        let paying = standing
            .iter()
            .filter(|other| other.metadata.get("intent") == Some(intent))
            .count();
        (paying >= 2 && entry.at_ms > report.at_ms).then(|| ((*entry).clone(), entry.memo.clone()))
    })
}

/// A double the audit could not see: on the wire when they looked, or sent after.
fn unseen_sentence(report: &AuditReport, late: &Entry, memo: &str) -> String {
    let key = late
        .idempotency_key
        .clone()
        .or_else(|| late.metadata.get("idempotency_key").cloned());
    let memo = crate::simulator::lowercase_first(memo);
    match key.filter(|key| report.in_flight.contains(key)) {
        Some(key) => format!(
            "When {} checked billing at {} ms, {key}'s request was still on the wire: billing had not applied it, so the audit found the {memo} paid once and undid nothing. Its credit {} landed at {} ms and stands.",
            report.auditor, report.at_ms, late.id, late.at_ms
        ),
        None => format!(
            "{} checked billing at {} ms and found the {memo} paid once; the second credit, {}, landed at {} ms, after the audit, and stands.",
            report.auditor, report.at_ms, late.id, late.at_ms
        ),
    }
}
