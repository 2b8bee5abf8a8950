//! What a drill did and found: the report, made from the counters and the check's findings, and its table.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::check::Findings;
use twice_world::billing::KeyHandling;
use twice_world::runtime::worker::counted;

use super::Counters;
use super::config::DrillConfig;

/// What a drill did and found.
#[derive(Clone, Debug, Serialize)]
pub struct DrillReport {
    pub passed: bool,
    pub seed: u64,
    pub guards: String,
    pub guards_off: Vec<String>,
    #[serde(with = "twice_world::billing::key_handling::by_name")]
    pub billing_keys: KeyHandling,
    pub parallel: u32,
    /// Where the ledger was: a file, or a PostgreSQL URL with its schema (no password).
    pub ledger: String,
    /// Worker hosts (0: the workers ran on this machine as they are).
    pub hosts: u32,
    pub runs: u32,
    pub runs_finished: u32,
    pub runs_waiting: u32,
    pub processes_started: u32,
    pub kills_requested: u32,
    pub kills: u32,
    pub kills_during_tool_call: u32,
    pub kills_by_phase: BTreeMap<String, u32>,
    /// Kills sent to a process that had already ended on its own (handed on to another).
    pub kills_missed: u32,
    /// Kills never landed because every run had finished first (the rest of `kills_requested`).
    pub kills_unplaced: u32,
    pub duplicates_started: u32,
    pub partitions_requested: u32,
    /// Hosts cut off the network mid-call (then put back).
    pub partitions: u32,
    pub pauses_requested: u32,
    /// Workers stopped mid-call (SIGSTOP), then woken (SIGCONT) after their run moved on.
    pub pauses: u32,
    /// Workers started on a run whose worker was cut off or paused.
    pub twins_started: u32,
    /// Cut-off or woken workers that then stopped on their own (billing or the ledger out of
    /// reach too long, their session ended by the server): processes that stopped, not errors.
    pub stopped_after_fault: u32,
    pub stood_down: u32,
    pub worker_errors: u32,
    pub worker_error_samples: Vec<String>,
    /// Waiting runs recovered because billing turned out to hold the credit (the hook settled it).
    pub found_after_wait: u32,
    /// Unknown calls the drill's operator resolved: `failed` when billing holds no credit under
    /// the key, `completed` when it does and the hook already had its chance.
    pub operator_resolutions: u32,
    /// Calls a worker that replaced a dead one recorded `recovered_unknown` (`--replacing`).
    pub calls_recovered_unknown: u32,
    /// Calls whose status an operator's decision set, with their reason (from the history).
    pub settled_by_operator: u32,
    /// Of the operator's resolutions, those of a `started` call (acknowledging it in flight).
    pub operator_settled_started: u32,
    pub calls_completed: u32,
    pub calls_failed: u32,
    pub calls_unknown: u32,
    pub calls_compensated: u32,
    pub credits_applied: u32,
    pub reversals: u32,
    pub double_credits: u32,
    pub lost_credits: u32,
    pub guards_held: BTreeMap<String, u32>,
    pub wall_time_ms: u64,
    pub kills_per_minute: f64,
    pub violations_total: u32,
    pub violations: Vec<String>,
    /// Where the ledger and the billing database are (kept with --dir, or when the drill failed).
    pub files: Option<String>,
}

pub(super) fn report(
    config: &DrillConfig,
    counters: &Counters,
    findings: Findings,
    wall_time_ms: u64,
    ledger: String,
    files: Option<String>,
) -> DrillReport {
    let minutes = wall_time_ms as f64 / 60_000.0;
    DrillReport {
        passed: findings.passed(),
        seed: config.seed,
        guards: config.guards_text.clone(),
        guards_off: config
            .guards
            .off()
            .iter()
            .map(|guard| guard.name().to_owned())
            .collect(),
        billing_keys: config.key_handling,
        parallel: config.parallel,
        ledger,
        hosts: config.hosts,
        runs: config.runs,
        runs_finished: findings.runs_finished,
        runs_waiting: findings.runs_waiting,
        processes_started: counters.processes_started,
        kills_requested: config.kills,
        kills: counters.kills,
        kills_during_tool_call: counters.kills_during_tool_call,
        kills_by_phase: counters.kills_by_phase.clone(),
        kills_missed: counters.kills_missed,
        kills_unplaced: counters.kills_unplaced,
        duplicates_started: counters.duplicates_started,
        partitions_requested: config.partitions,
        partitions: counters.partitions,
        pauses_requested: config.pauses,
        pauses: counters.pauses,
        twins_started: counters.twins_started,
        stopped_after_fault: counters.stopped_after_fault,
        stood_down: counters.stood_down,
        worker_errors: counters.worker_errors,
        worker_error_samples: counters.worker_error_samples.clone(),
        found_after_wait: counters.found_after_wait,
        operator_resolutions: counters.operator_resolutions,
        calls_recovered_unknown: findings.calls_recovered_unknown,
        settled_by_operator: findings.settled_by_operator,
        operator_settled_started: findings.operator_settled_started,
        calls_completed: findings.calls_completed,
        calls_failed: findings.calls_failed,
        calls_unknown: findings.calls_unknown,
        calls_compensated: findings.calls_compensated,
        credits_applied: findings.credits_applied,
        reversals: findings.reversals,
        double_credits: findings.double_credits,
        lost_credits: findings.lost_credits,
        guards_held: counters.guards_held.clone(),
        wall_time_ms,
        kills_per_minute: if minutes > 0.0 {
            (f64::from(counters.kills) / minutes * 10.0).round() / 10.0
        } else {
            0.0
        },
        violations_total: findings.violations_total,
        violations: findings.violations,
        files,
    }
}

pub(super) fn joined(counts: &BTreeMap<String, u32>) -> String {
    let mut counts: Vec<(&String, &u32)> = counts.iter().collect();
    counts.sort_by(|left, right| right.1.cmp(left.1).then(left.0.cmp(right.0)));
    counts
        .iter()
        .map(|(name, count)| format!("{name} {count}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The report as a table.
pub fn table(report: &DrillReport) -> String {
    let mut lines = Vec::new();
    lines.push(format!(
        "Persistence drill — seed {}, guards {}{}, billing keys {}, {} at a time",
        report.seed,
        report.guards,
        if report.guards_off.is_empty() || report.guards == "none" {
            String::new()
        } else {
            format!(" (off: {})", report.guards_off.join(", "))
        },
        report.billing_keys,
        counted(u64::from(report.parallel), "run", "runs")
    ));
    process_rows(report, &mut lines);
    call_rows(report, &mut lines);
    verdict_lines(report, &mut lines);
    lines.join("\n")
}

/// One row of the table: a name, a figure, a note.
fn row(name: &str, value: String, note: String) -> String {
    format!("  {name:<26}{value:>10}  {note}")
}

/// The rows of what the drill did: its runs, processes, kills, duplicates and faults.
fn process_rows(report: &DrillReport, lines: &mut Vec<String>) {
    lines.push(row("ledger", String::new(), report.ledger.clone()));
    lines.push(row(
        "runs",
        report.runs.to_string(),
        format!(
            "{} finished, {} waiting on an unknown call",
            report.runs_finished, report.runs_waiting
        ),
    ));
    lines.push(row(
        "processes started",
        report.processes_started.to_string(),
        format!(
            "{} stood down, {}",
            report.stood_down,
            counted(u64::from(report.worker_errors), "worker error", "worker errors")
        ),
    ));
    lines.push(row(
        "kills",
        report.kills.to_string(),
        format!(
            "of {} asked for (SIGKILL; {} sent too late, handed on; {} left when every run had finished)",
            report.kills_requested, report.kills_missed, report.kills_unplaced
        ),
    ));
    lines.push(row(
        "kills during a tool call",
        report.kills_during_tool_call.to_string(),
        "request sent, outcome not yet recorded".into(),
    ));
    lines.push(row(
        "duplicates started",
        report.duplicates_started.to_string(),
        String::new(),
    ));
    if report.hosts > 0 {
        lines.push(row(
            "hosts",
            report.hosts.to_string(),
            format!(
                "network namespaces twice-h1..twice-h{}; ledger and billing on twice-hub",
                report.hosts
            ),
        ));
    }
    if report.partitions_requested > 0 {
        lines.push(row(
            "partitions",
            report.partitions.to_string(),
            format!(
                "of {} asked for (a worker's host cut off mid-call; a twin on another host took the run)",
                report.partitions_requested
            ),
        ));
    }
    if report.pauses_requested > 0 {
        lines.push(row(
            "pauses",
            report.pauses.to_string(),
            format!(
                "of {} asked for (SIGSTOP mid-call, a twin took the run, SIGCONT after)",
                report.pauses_requested
            ),
        ));
    }
    if report.partitions_requested + report.pauses_requested > 0 {
        lines.push(row(
            "twins started",
            report.twins_started.to_string(),
            format!(
                "{} stopped on their own afterwards",
                counted(
                    u64::from(report.stopped_after_fault),
                    "cut-off or woken worker",
                    "cut-off or woken workers"
                )
            ),
        ));
    }
}

/// The rows of what the ledger and billing hold afterwards.
fn call_rows(report: &DrillReport, lines: &mut Vec<String>) {
    lines.push(row(
        "calls completed",
        report.calls_completed.to_string(),
        "ledger records".into(),
    ));
    lines.push(row("calls failed", report.calls_failed.to_string(), String::new()));
    lines.push(row(
        "calls unknown",
        report.calls_unknown.to_string(),
        "started or indeterminate, waiting".into(),
    ));
    lines.push(row(
        "settled after a wait",
        (report.found_after_wait + report.operator_resolutions).to_string(),
        format!(
            "{} found in billing by the hook, {} resolved by the operator",
            report.found_after_wait, report.operator_resolutions
        ),
    ));
    if report.calls_recovered_unknown + report.settled_by_operator > 0 {
        lines.push(row(
            "recovered unknown",
            report.calls_recovered_unknown.to_string(),
            format!(
                "dead workers' calls; {} settled by an operator with a reason; {} of a started call",
                counted(u64::from(report.settled_by_operator), "call", "calls"),
                counted(u64::from(report.operator_settled_started), "resolution", "resolutions")
            ),
        ));
    }
    lines.push(row(
        "credits applied",
        report.credits_applied.to_string(),
        format!(
            "billing's entries ({})",
            counted(u64::from(report.reversals), "reversal", "reversals")
        ),
    ));
    lines.push(row(
        "double credits",
        report.double_credits.to_string(),
        "must be 0".into(),
    ));
    lines.push(row("lost credits", report.lost_credits.to_string(), "must be 0".into()));
    lines.push(row(
        "wall time",
        format!("{:.1} s", report.wall_time_ms as f64 / 1000.0),
        format!("{} kills per minute", report.kills_per_minute),
    ));
}

/// Where the kills landed, the guards that held, the worker errors, and the verdict.
fn verdict_lines(report: &DrillReport, lines: &mut Vec<String>) {
    if !report.kills_by_phase.is_empty() {
        lines.push(format!("  kills by phase: {}", joined(&report.kills_by_phase)));
    }
    if !report.guards_held.is_empty() {
        lines.push(format!("  guards that held: {}", joined(&report.guards_held)));
    }
    for sample in &report.worker_error_samples {
        lines.push(format!("  worker error: {sample}"));
    }
    if report.passed {
        lines.push("verdict: PASSED — nothing paid twice, nothing lost, every promise kept".into());
    } else {
        lines.push(format!(
            "verdict: FAILED — {}:",
            counted(u64::from(report.violations_total), "violation", "violations")
        ));
        for violation in &report.violations {
            lines.push(format!("  - {violation}"));
        }
        let unshown = report.violations_total as usize - report.violations.len();
        if unshown > 0 {
            lines.push(format!("  … and {unshown} more"));
        }
    }
    if let Some(files) = &report.files {
        lines.push(format!("files: {files}"));
    }
}
