//! Plain-text tables for the CLI.

use std::fmt::Write;

use crate::billing::Billing;
use crate::checker::Verdict;
use crate::ledger::{Checkpoint, ExecutionRecord};
use crate::simulator::{TimelineEntry, dollars};

/// A count with its noun, singular for one: `1 tape`, `2 tapes`, `0 tapes`.
pub fn counted(count: u64, one: &str, many: &str) -> String {
    format!("{count} {}", if count == 1 { one } else { many })
}

pub fn timeline(entries: &[TimelineEntry]) -> String {
    let mut out = String::new();
    writeln!(
        out,
        "{:>5} {:>7}  {:<10} {:<18} {:<8} text",
        "phase", "time", "actor", "phase kind", "key"
    )
    .unwrap();
    for entry in entries {
        let marker = match &entry.guard {
            Some(guard) => format!("[guard {guard}] "),
            None => String::new(),
        };
        writeln!(
            out,
            "{:>5} {:>5}ms  {:<10} {:<18} {:<8} {marker}{}",
            entry.phase,
            entry.time_ms,
            entry.actor,
            entry.kind,
            entry.key.as_deref().unwrap_or("-"),
            entry.text
        )
        .unwrap();
    }
    out
}

pub fn ledger(records: &[ExecutionRecord], checkpoints: &[Checkpoint]) -> String {
    let mut out = String::new();
    writeln!(
        out,
        "{:<20} {:<15} {:>8} {:<13} {:<6} result",
        "key", "tool", "attempts", "status", "owner"
    )
    .unwrap();
    for record in records {
        writeln!(
            out,
            "{:<20} {:<15} {:>8} {} {:<11} {:<6} {}",
            record.key.as_str(),
            record.tool,
            record.attempts,
            record.status.glyph(),
            record.status.name(),
            record.owner,
            record.result.as_deref().unwrap_or("-")
        )
        .unwrap();
    }
    if records.is_empty() {
        writeln!(out, "(no records)").unwrap();
    }
    writeln!(out, "\ncheckpoints:").unwrap();
    for checkpoint in checkpoints {
        writeln!(
            out,
            "  {} v{} {} (saved by {} at {} ms)",
            checkpoint.run_id, checkpoint.version, checkpoint.status, checkpoint.saved_by, checkpoint.updated_at_ms
        )
        .unwrap();
    }
    out
}

pub fn billing(billing: &Billing) -> String {
    let mut out = String::new();
    for account in billing.accounts.values() {
        writeln!(
            out,
            "{} ({}): balance {}",
            account.id,
            account.owner,
            dollars(account.balance_cents)
        )
        .unwrap();
    }
    for entry in &billing.entries {
        writeln!(
            out,
            "  {} {:<8} {:>9} to {} key {} intent {}",
            entry.id,
            format!("{:?}", entry.kind).to_lowercase(),
            dollars(entry.amount_cents),
            entry.account,
            entry
                .idempotency_key
                .as_deref()
                .or(entry.metadata.get("idempotency_key").map(String::as_str))
                .unwrap_or("-"),
            entry.metadata.get("intent").map(String::as_str).unwrap_or("-")
        )
        .unwrap();
    }
    out
}

pub fn verdict(verdict: &Verdict) -> String {
    let mut out = verdict.summary.clone();
    out.push('\n');
    for violation in &verdict.violations {
        writeln!(out, "  violation: {violation}").unwrap();
    }
    out
}

pub fn debrief(debrief: &crate::debrief::Debrief) -> String {
    let mut out = format!("{}\n", debrief.headline);
    for sentence in &debrief.diagnosis {
        writeln!(out, "  {sentence}").unwrap();
    }
    if !debrief.story.is_empty() {
        writeln!(out, "\n{}", debrief.story).unwrap();
    }
    writeln!(out, "\nThe rule: {}", debrief.rule).unwrap();
    write!(
        out,
        "{} card(s) played, {} phases",
        debrief.cards_played, debrief.phases
    )
    .unwrap();
    if let Some(par) = &debrief.par {
        write!(
            out,
            "; par {} card(s), {} phases: {}",
            par.par_cards,
            par.par_phases,
            match par.stars() {
                2 => "★★ at par",
                1 => "★ par cards, more phases",
                _ => "over par",
            }
        )
        .unwrap();
    }
    out.push('\n');
    out
}

#[cfg(test)]
mod wording_tests {
    use super::counted;

    #[test]
    fn one_is_singular_and_every_other_count_plural() {
        assert_eq!(counted(1, "tape", "tapes"), "1 tape");
        assert_eq!(counted(0, "tape", "tapes"), "0 tapes");
        assert_eq!(counted(2, "job", "jobs"), "2 jobs");
    }
}
