//! Plain-text tables for the CLI.

use std::fmt::Write;

use crate::billing::Billing;
use crate::checker::{GuardRow, RowTelling, Verdict};
use crate::ledger::{Checkpoint, ExecutionRecord};
use crate::simulator::{TimelineEntry, dollars};
// `counted` is written once, in `crate::text` with the other word helpers; it is re-exported
// here only so branches in flight that still name `report::counted` keep compiling.
pub use crate::text::counted;

/// The timeline as a table. The actor and kind columns are as wide as their longest cell
/// (an operator's name can be long), so every line's columns start at the same place. A
/// guard's row is told by how the finished run ended (`telling`: `Debrief::row_telling`; the
/// default while it goes on): never "held" in a run that leaves a customer owed or paid twice.
pub fn timeline(entries: &[TimelineEntry], telling: &RowTelling) -> String {
    let actors: Vec<String> = entries.iter().map(|entry| entry.actor.to_string()).collect();
    let guard_rows: Vec<Option<GuardRow>> = entries.iter().map(|entry| entry.guard_row(telling)).collect();
    let kind_of = |index: usize| {
        guard_rows[index]
            .as_ref()
            .map_or(entries[index].kind.as_str(), |row| row.kind)
    };
    let widest = |header: &str, cells: &mut dyn Iterator<Item = usize>| cells.chain([header.len()]).max().unwrap_or(0);
    let actor_width = widest("actor", &mut actors.iter().map(|actor| actor.chars().count()));
    let kind_width = widest(
        "phase kind",
        &mut (0..entries.len()).map(|index| kind_of(index).chars().count()),
    );
    let key_width = widest(
        "key",
        &mut entries
            .iter()
            .map(|entry| entry.key.as_deref().map_or(1, |key| key.chars().count())),
    );
    let mut out = String::new();
    writeln!(
        out,
        "{:>5} {:>7}  {:<actor_width$} {:<kind_width$} {:<key_width$} text",
        "phase", "time", "actor", "phase kind", "key"
    )
    .unwrap();
    for (index, (entry, actor)) in entries.iter().zip(&actors).enumerate() {
        let marker = match &guard_rows[index] {
            Some(row) if row.holding => format!("[guard {}] ", row.guard),
            Some(row) => format!("[{}] ", row.words),
            None => String::new(),
        };
        writeln!(
            out,
            "{:>5} {:>5}ms  {:<actor_width$} {:<kind_width$} {:<key_width$} {marker}{}",
            entry.phase,
            entry.time_ms,
            actor,
            kind_of(index),
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
            entry
                .metadata
                .get("intent")
                .map_or_else(|| "-".to_owned(), |intent| crate::text::intent_step_name(intent))
        )
        .unwrap();
    }
    records(&mut out, billing);
    out
}

/// The world beyond money: each email in an outbox, each owner change, each delete request.
fn records(out: &mut String, billing: &Billing) {
    let records = &billing.records;
    for email in &records.outbox {
        writeln!(
            out,
            "  {} email    to {} \"{}\" key {} intent {}",
            email.id,
            email.account,
            email.subject,
            email
                .idempotency_key
                .as_deref()
                .or(email.metadata.get("idempotency_key").map(String::as_str))
                .unwrap_or("-"),
            email
                .metadata
                .get("intent")
                .map_or_else(|| "-".to_owned(), |intent| crate::text::intent_step_name(intent))
        )
        .unwrap();
    }
    for change in &records.owner_changes {
        let by = match &change.by {
            crate::billing::ChangedBy::Intent(intent) => format!("intent {}", crate::text::intent_step_name(intent)),
            crate::billing::ChangedBy::Someone(who) => format!("by {who}"),
        };
        writeln!(
            out,
            "  owner of {}: {} → {} {by}",
            change.account, change.from, change.to
        )
        .unwrap();
    }
    for deletion in &records.deletions {
        writeln!(
            out,
            "  delete {} by {}: {} intent {}",
            deletion.account,
            deletion.call_key,
            if deletion.deleted { "deleted" } else { "not found" },
            crate::text::intent_step_name(&deletion.intent)
        )
        .unwrap();
    }
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
    let names = |guards: &[crate::runtime::guards::Guard]| {
        guards
            .iter()
            .map(|guard| crate::guards::words(*guard))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let deciding = debrief.deciding_guards();
    if deciding.is_empty() {
        writeln!(out, "\nDecided by: {}", debrief.decided_by.summary()).unwrap();
    } else {
        writeln!(out, "\nDecided by: {}", names(&deciding)).unwrap();
    }
    // The guards' lines, as the game and the browser draw them: a shield only where one held.
    for line in &debrief.guard_lines {
        let glyph = if line.holding { "🛡" } else { "·" };
        write!(out, "  {glyph} {}", line.sentence).unwrap();
        match line.what_if.and_then(|index| debrief.what_if.get(index)) {
            Some(what_if) => writeln!(out, " (see it: other run {})", what_if.alternative).unwrap(),
            None => out.push('\n'),
        }
    }
    // Other runs no line offers (none today: every what-if belongs to a line).
    for (index, what_if) in debrief.what_if.iter().enumerate() {
        if debrief.guard_lines.iter().all(|line| line.what_if != Some(index)) {
            writeln!(
                out,
                "  {} (see it: other run {})",
                what_if.sentence, what_if.alternative
            )
            .unwrap();
        }
    }
    if !debrief.story.is_empty() {
        writeln!(out, "\n{}", debrief.story).unwrap();
    }
    let rule_label = match debrief.rule_from {
        crate::debrief::RuleSource::Level => "This level's rule (no guard decided this run)",
        crate::debrief::RuleSource::LevelUnsaid => "This level's rule (no guard was shown to decide this run)",
        crate::debrief::RuleSource::Lesson => {
            "This level's rule (the guards that decided were on, and the heist used their ordinary work)"
        }
        _ => "The rule",
    };
    writeln!(out, "\n{rule_label}: {}", debrief.rule).unwrap();
    out.push_str(&score_line(debrief.cards_played, debrief.phases, debrief.par.as_ref()));
    out.push('\n');
    out
}

/// The cards and phases a run took, and how they compare with the level's par, counted in words.
fn score_line(cards_played: u32, phases: u32, par: Option<&crate::debrief::ParCheck>) -> String {
    let mut line = format!(
        "{} played, {}",
        counted(u64::from(cards_played), "card", "cards"),
        counted(u64::from(phases), "phase", "phases")
    );
    if let Some(par) = par {
        let stars = match par.stars() {
            2 => "★★ at par",
            1 => "★ par cards, more phases",
            _ => "over par",
        };
        write!(
            line,
            "; par {}, {}: {stars}",
            counted(u64::from(par.par_cards), "card", "cards"),
            counted(u64::from(par.par_phases), "phase", "phases")
        )
        .unwrap();
    }
    line
}

/// Each guard switched alone, and the pairs tried: what the same moves came to.
pub fn counterfactual(counterfactual: &crate::counterfactual::Counterfactual) -> String {
    use crate::counterfactual::{Answer, Role};
    let mut out = String::new();
    if !counterfactual.reproduced {
        writeln!(
            out,
            "  the same moves did not give this run again: no other run can say"
        )
        .unwrap();
    }
    let result_words = |answer: &Answer| match answer {
        Answer::Ran(result) => format!(
            "{}{}{}",
            result.outcome,
            // A level where no money is owed or moved says no amounts.
            if result.net_cents == 0 && result.owed_cents == 0 {
                String::new()
            } else {
                format!(" ({} of {})", dollars(result.net_cents), dollars(result.owed_cents))
            },
            if result.goal_reached {
                ", the heist works"
            } else {
                ", the heist fails"
            }
        ),
        Answer::CannotSay { fizzled } => format!("cannot say: {}", fizzled.join("; ")),
    };
    for finding in &counterfactual.guards {
        let alternative = &counterfactual.alternatives[finding.alternative];
        writeln!(
            out,
            "  {:<8} {:<24} {} → {}",
            match finding.role {
                Role::Decided => "DECIDED",
                Role::NoDifference => "same",
                Role::CannotSay => "?",
            },
            finding.guard.name(),
            if finding.was_on { "off" } else { "on " },
            result_words(&alternative.answer)
        )
        .unwrap();
    }
    for pair in &counterfactual.pairs {
        writeln!(
            out,
            "  DECIDED  {} + {} together → {}",
            pair.guards[0].name(),
            pair.guards[1].name(),
            result_words(&counterfactual.alternatives[pair.alternative].answer)
        )
        .unwrap();
    }
    write!(
        out,
        "  {}{}",
        counted(u64::from(counterfactual.reruns), "run", "runs"),
        if counterfactual.bounded {
            ", pairs cut at the bound"
        } else {
            ""
        }
    )
    .unwrap();
    out
}

#[cfg(test)]
mod wording_tests {
    use super::score_line;
    use crate::debrief::ParCheck;

    #[test]
    fn the_score_line_counts_cards_and_phases_in_words() {
        assert_eq!(score_line(1, 12, None), "1 card played, 12 phases");
        let par = ParCheck {
            cards: 2,
            phases: 14,
            par_cards: 1,
            par_phases: 1,
        };
        assert_eq!(
            score_line(2, 14, Some(&par)),
            "2 cards played, 14 phases; par 1 card, 1 phase: over par"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::simulator::Actor;

    fn entry(actor: Actor, kind: &str, key: Option<&str>) -> TimelineEntry {
        TimelineEntry {
            phase: 3,
            time_ms: 120,
            actor,
            kind: kind.into(),
            run: None,
            key: key.map(str::to_owned),
            text: "said".into(),
            guard: None,
        }
    }

    #[test]
    fn every_timeline_column_starts_at_the_same_place_on_every_line() {
        let entries = [
            entry(Actor::Worker(1), "load checkpoint", Some("r1:c1")),
            entry(Actor::Operator("a-long-operator-name".into()), "resolve", None),
            entry(
                Actor::Billing,
                "a rather long phase kind here",
                Some("run-0001:call-0001"),
            ),
        ];
        let table = timeline(&entries, &RowTelling::default());
        let lines: Vec<&str> = table.lines().collect();
        let header = lines[0];
        for column in ["phase kind", "key", "text"] {
            let at = header.find(column).unwrap();
            for line in &lines[1..] {
                assert_eq!(&line[at - 1..at], " ", "{column} in {line:?}\n{table}");
                assert_ne!(&line[at..=at], " ", "{column} in {line:?}\n{table}");
            }
        }
        assert!(lines[2].contains("a-long-operator-name resolve"), "{table}");
    }
}
