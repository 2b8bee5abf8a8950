//! The rulebook: the runtime's decision tables (`runtime/rules.rs`), after the check it
//! makes before a run starts (the tool contract, `runtime/tool.rs`), as a player reads
//! them beside the attack, as The Deadlock Empire shows its threads. Each row says when it
//! fires and what the runtime then does; a row a guard provides is struck through when that
//! guard is off; and the rows that fired in a run are lit from the simulator's record of them
//! ([`Simulation::rules_fired`]). The game and the browser only draw it.

use serde::Serialize;

use crate::runtime::guards::{Guard, Guards};
use crate::runtime::rules::{
    AbsentAction, FailedRunAction, Fired, Outcome, OutcomeAction, RecoveryAction, ResendAction, ReservationAction,
    Status, UnknownAction,
};
use crate::simulator::{RuleFiring, RuleRow, Simulation};

/// The four tables, in the order a call (and then its run) meets them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Table {
    /// Before the run: every tool is put to the contract check.
    Start,
    /// Table 1: before the tool runs, what the ledger holds for the key decides.
    Reservation,
    /// Table 2: after an attempt, how it ended decides.
    Outcome,
    /// Table 3: what a run does with a call whose outcome is unknown.
    Unknown,
    /// Table 4: what is undone when a run fails, and whether its workflow starts it again.
    FailedRun,
}

impl Table {
    pub const ALL: [Table; 5] = [
        Table::Start,
        Table::Reservation,
        Table::Outcome,
        Table::Unknown,
        Table::FailedRun,
    ];

    pub fn title(self) -> &'static str {
        match self {
            Table::Start => "0 · Start: the tool contract check, the recovery limit",
            Table::Reservation => "1 · Reservation: what the ledger holds for the key",
            Table::Outcome => "2 · Outcome: how the attempt ended",
            Table::Unknown => "3 · Unknown: what the run does next",
            Table::FailedRun => "4 · Failed run: what is undone, what starts again",
        }
    }

    /// The guard without which the whole table is not consulted.
    pub fn needs(self) -> Option<Guard> {
        match self {
            Table::Reservation => Some(Guard::Ledger),
            Table::Start | Table::Outcome | Table::Unknown | Table::FailedRun => None,
        }
    }
}

/// One row: when it fires, and what the runtime does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Row {
    pub table: Table,
    pub when: &'static str,
    pub then: &'static str,
    /// The row is live only while this guard is on (`true`) or off (`false`, a naive row).
    pub live_when: Option<(Guard, bool)>,
}

const fn row(table: Table, when: &'static str, then: &'static str, live_when: Option<(Guard, bool)>) -> Row {
    Row {
        table,
        when,
        then,
        live_when,
    }
}

/// Every row of the tables, table by table.
pub const ROWS: [Row; 31] = [
    row(
        Table::Start,
        "a tool that changes something is declared with retries, or takes no key",
        "refuse the run before it starts: nothing is sent, it waits for a person",
        Some((Guard::ToolContract, true)),
    ),
    row(
        Table::Start,
        "a write is declared with retries",
        "start anyway: the runtime obeys the declaration and retries the write",
        Some((Guard::ToolContract, false)),
    ),
    row(
        Table::Start,
        "a recovery, after as many failed recoveries as declared",
        "stop the run as dead_lettered: it resumes only when an operator asks (table 8)",
        Some((Guard::DeadLetter, true)),
    ),
    row(
        Table::Start,
        "a recovery, after as many failed recoveries as declared",
        "recover again: a naive runtime retries recovery forever",
        Some((Guard::DeadLetter, false)),
    ),
    row(
        Table::Start,
        "a recovery, fewer failed before it than declared",
        "recover it: drive the run on from its checkpoint",
        None,
    ),
    row(Table::Reservation, "no record", "record started; the tool runs", None),
    row(
        Table::Reservation,
        "completed",
        "return the recorded result; the tool is not called",
        None,
    ),
    row(
        Table::Reservation,
        "compensating or compensated",
        "tell the model it was undone; the tool is not called",
        None,
    ),
    row(
        Table::Reservation,
        "failed",
        "run again under the same key (attempt + 1)",
        None,
    ),
    row(
        Table::Reservation,
        "started or indeterminate, a read",
        "run again: repeating a read changes nothing",
        None,
    ),
    row(
        Table::Reservation,
        "started, a write, its lease ran out",
        "a naive runtime takes it over and runs it again",
        Some((Guard::NoLeaseExpiry, false)),
    ),
    row(
        Table::Reservation,
        "started or indeterminate, a write",
        "the outcome is unknown: the tool is not called (table 3)",
        None,
    ),
    row(
        Table::Outcome,
        "billing answered with a result",
        "record completed",
        None,
    ),
    row(
        Table::Outcome,
        "refused, or failed before sending",
        "record failed: it definitely did not happen",
        Some((Guard::RefusalIsFailed, true)),
    ),
    row(
        Table::Outcome,
        "timed out, attempts left",
        "retry after a backoff (the same key)",
        None,
    ),
    row(
        Table::Outcome,
        "timed out, a write with its one attempt",
        "record indeterminate: it may have happened",
        Some((Guard::WriteRetryRule, true)),
    ),
    row(
        Table::Outcome,
        "timed out, out of attempts",
        "record failed (true only of a read)",
        None,
    ),
    row(
        Table::Outcome,
        "a retry under a key older than the provider keeps keys",
        "do not resend it: record indeterminate (table 7)",
        Some((Guard::KeyRetention, true)),
    ),
    row(
        Table::Unknown,
        "a reconcile hook, not yet asked",
        "ask the hook what billing holds",
        Some((Guard::ReconcileHook, true)),
    ),
    row(
        Table::Unknown,
        "pause on unknown calls",
        "the run waits for an operator",
        Some((Guard::PauseOnIndeterminate, true)),
    ),
    row(Table::Unknown, "otherwise", "tell the model the call failed", None),
    row(
        Table::Unknown,
        "the hook finds nothing under a key older than the provider keeps keys",
        "expired, not absent: it stays unknown (table 6)",
        Some((Guard::KeyRetention, true)),
    ),
    row(
        Table::Unknown,
        "the hook finds nothing under a key older than the provider keeps keys",
        "a naive hook reads it as absent: settle it failed",
        Some((Guard::KeyRetention, false)),
    ),
    row(
        Table::Unknown,
        "the hook finds nothing sooner than the provider's settle time",
        "not proof yet: look again once it has passed (table 6)",
        Some((Guard::LookupSettle, true)),
    ),
    row(
        Table::Unknown,
        "the hook finds nothing sooner than the provider's settle time",
        "a naive hook settles it failed at the first look",
        Some((Guard::LookupSettle, false)),
    ),
    row(
        Table::Unknown,
        "the hook finds nothing, past the settle time",
        "settle it failed: it did not take effect (table 6)",
        None,
    ),
    row(
        Table::Unknown,
        "the hook finds nothing, no settle time declared",
        "nothing is proven: it stays unknown",
        None,
    ),
    row(
        Table::FailedRun,
        "calls of the run took effect",
        "a naive runtime compensates every one of them",
        Some((Guard::NoReflexCompensation, false)),
    ),
    row(
        Table::FailedRun,
        "calls of the run took effect",
        "nothing is undone by reflex: an operator decides",
        Some((Guard::NoReflexCompensation, true)),
    ),
    row(
        Table::FailedRun,
        "workflow recovery_policy: retry, retries left",
        "start a fresh run: a new run id, new keys, from the first step",
        None,
    ),
    row(
        Table::FailedRun,
        "no retries",
        "the run stays failed for a person to see",
        None,
    ),
];

impl Row {
    /// Live under these guards: its guard is as it must be, and its table is consulted.
    pub fn is_live(&self, guards: &Guards) -> bool {
        let table_on = self.table.needs().is_none_or(|guard| guards.is_on(guard));
        let row_on = self.live_when.is_none_or(|(guard, on)| guards.is_on(guard) == on);
        table_on && row_on
    }

    /// The guard that strikes this row through when it is not live.
    pub fn struck_by(&self, guards: &Guards) -> Option<Guard> {
        if let Some(guard) = self.table.needs().filter(|guard| !guards.is_on(*guard)) {
            return Some(guard);
        }
        self.live_when
            .filter(|(guard, on)| guards.is_on(*guard) != *on)
            .map(|(guard, _)| guard)
    }
}

/// The index in [`ROWS`] of the row a firing lit.
pub fn row_of(firing: &RuleFiring) -> usize {
    let first = |table: Table| ROWS.iter().position(|row| row.table == table).unwrap_or(0);
    match &firing.row {
        RuleRow::ContractRefused { .. } => first(Table::Start),
        RuleRow::Decided(Fired::Recovery {
            action,
            failed_before,
            limit,
        }) => {
            let at_limit = limit.is_some_and(|limit| failed_before >= &limit);
            first(Table::Start)
                + match (action, at_limit) {
                    (RecoveryAction::DeadLetter, _) => 2,
                    (RecoveryAction::Recover, true) => 3,
                    (RecoveryAction::Recover, false) => 4,
                }
        }
        RuleRow::Decided(Fired::Resend { action, .. }) => {
            first(Table::Outcome)
                + match action {
                    ResendAction::RefuseExpiredKey => 5,
                    // A resend that goes out is the retry row's.
                    ResendAction::Send => 2,
                }
        }
        RuleRow::Decided(Fired::Absent { action, facts }) => {
            let expired = facts
                .key_retention_ms
                .is_some_and(|retention| facts.since_reserved_ms >= retention);
            let too_soon = facts
                .lookup_settle_ms
                .is_some_and(|settle| facts.since_last_send_ms < settle);
            first(Table::Unknown)
                + match action {
                    AbsentAction::Expired => 3,
                    AbsentAction::SettleFailed if expired => 4,
                    AbsentAction::AskAgain { .. } => 5,
                    AbsentAction::SettleFailed if too_soon => 6,
                    AbsentAction::SettleFailed => 7,
                    AbsentAction::StillUnknown => 8,
                }
        }
        RuleRow::Reservation { existing, action, .. } => {
            first(Table::Reservation)
                + match action {
                    ReservationAction::RunNew => 0,
                    ReservationAction::ReturnRecorded => 1,
                    ReservationAction::ReturnCompensated => 2,
                    ReservationAction::RunAgain if *existing == Some(Status::Failed) => 3,
                    ReservationAction::RunAgain => 4,
                    ReservationAction::TakeOverExpiredLease => 5,
                    ReservationAction::Unknown => 6,
                }
        }
        RuleRow::Decided(Fired::Outcome { end, action, .. }) => {
            use crate::runtime::rules::AttemptEnd;
            first(Table::Outcome)
                + match (action, end) {
                    (OutcomeAction::Record(Outcome::Completed), _) => 0,
                    (OutcomeAction::Record(_), AttemptEnd::Rejected | AttemptEnd::NotAttempted) => 1,
                    (OutcomeAction::Retry { .. }, _) => 2,
                    (OutcomeAction::Record(Outcome::Indeterminate), _) => 3,
                    (OutcomeAction::Record(_), _) => 4,
                }
        }
        RuleRow::Decided(Fired::Unknown { action, .. }) => {
            first(Table::Unknown)
                + match action {
                    UnknownAction::AskReconcileHook => 0,
                    UnknownAction::Pause => 1,
                    UnknownAction::TellModelFailed => 2,
                }
        }
        RuleRow::Decided(Fired::FailedRunUndo { action, .. } | Fired::Workflow { action, .. }) => {
            first(Table::FailedRun)
                + match action {
                    FailedRunAction::CompensateWhatTookEffect => 0,
                    FailedRunAction::LeaveToOperator => 1,
                    FailedRunAction::StartFreshRun { .. } => 2,
                    FailedRunAction::StayFailed => 3,
                }
        }
    }
}

/// A row as the rulebook shows it at one phase.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct RowView {
    pub row: Row,
    /// Struck through: the guard that provides it is off (or the naive row's guard is on).
    pub struck_by: Option<Guard>,
    /// The row fired in the selected phase.
    pub lit: bool,
    /// Times the row fired up to the selected phase.
    pub fired: u32,
    /// The last time it fired up to the selected phase: "phase 7 · w1 · r1:c1".
    pub last: Option<String>,
}

/// The rulebook at `phase`: every row, struck through by the guards in force, lit if it fired
/// in that phase, with how often it fired up to then.
pub fn at_phase(simulation: &Simulation, phase: u32) -> Vec<RowView> {
    let guards = simulation.guards();
    let mut views: Vec<RowView> = ROWS
        .iter()
        .map(|row| RowView {
            row: *row,
            struck_by: row.struck_by(&guards),
            lit: false,
            fired: 0,
            last: None,
        })
        .collect();
    for firing in simulation.rules_fired().iter().filter(|firing| firing.phase <= phase) {
        let view = &mut views[row_of(firing)];
        view.fired += 1;
        view.lit |= firing.phase == phase;
        view.last = Some(format!(
            "phase {} · w{}{}",
            firing.phase,
            firing.worker,
            firing.key.as_deref().map(|key| format!(" · {key}")).unwrap_or_default()
        ));
    }
    views
}

/// The last phase at or before `phase` in which a row fired (the rulebook's default selection).
pub fn last_firing_phase(simulation: &Simulation, phase: u32) -> Option<u32> {
    simulation
        .rules_fired()
        .iter()
        .map(|firing| firing.phase)
        .filter(|fired| *fired <= phase)
        .max()
}

/// The seed's rule for what a guard keeps, in its own words: the rule line of a debrief this
/// guard decided (the level's rule is about the level, not necessarily about the run).
pub fn guard_rule(guard: Guard) -> &'static str {
    match guard {
        Guard::WriteRetryRule => {
            "Retry reads, not writes. A tool that changes something gets one attempt. A timeout on a write isn't a failure; it's an unknown."
        }
        Guard::ToolContract => {
            "The runtime's test helper assert_tool_contract fails any tool that writes, sends or deletes and is allowed more than one attempt or has no idempotency key, so the rule is checked in CI, not just documented."
        }
        Guard::PauseOnIndeterminate => {
            "Meanwhile, the run can wait. With tool_policy.on_indeterminate: pause, a run whose call is unknown pauses in awaiting_reconciliation instead of failing, and settling the call resumes it. on_indeterminate: pause exists for this reason: the model doesn't hear \"failed\" while the honest answer is \"unknown\"."
        }
        Guard::Ledger => {
            "Write it down before you run it. The call is reserved in a ledger under that key first. A key that already completed returns its recorded result instead of running again."
        }
        Guard::AtomicReservation => {
            "The reservation is atomic, so when two processes drive the same run, only one of them gets to make the call."
        }
        Guard::KeyDownstream => {
            "Each tool call gets an idempotency key from its run and call, and the tool passes it to the system it changes. Send the same key twice and the second request gets the first one's answer instead of a second charge."
        }
        Guard::CheckpointVersion => {
            "The reservation is atomic, so when two processes drive the same run, only one of them gets to make the call. A version check on the run's checkpoint makes the other one stand down at its next save."
        }
        Guard::ReconcileHook => {
            "Ask the tool. A tool can have a reconcile hook that looks the key up in the external system. When a recovered run replays a call that's still unknown, the runtime asks the hook first."
        }
        Guard::KeyPerCall => {
            "The key isn't derived from the arguments. Two different calls with identical arguments are two effects, and a hash of the arguments would merge them. And a key that changed whenever the model reworded an argument wouldn't catch a replay at all."
        }
        Guard::NoLeaseExpiry => {
            "started or indeterminate: the outcome is unknown. The call doesn't run. A call stays started when the process died while it ran."
        }
        Guard::NoReflexCompensation => {
            "Undo only on purpose. Compensation exists, but the runtime never runs it automatically. It can't tell whether a failure later in the run makes an earlier effect wrong."
        }
        Guard::RefusalIsFailed => {
            "Not attempted is failed. A tool that refuses before sending anything raises ToolNotAttemptedError, and the call is recorded failed: it definitely did not happen, so it may run again once the cause is fixed."
        }
        Guard::KeyRetention => {
            "When you do have to send it again, send the same key. Passing the key is half the job; the other system has to honour it."
        }
        Guard::LookupSettle | Guard::DeadLetter => {
            "When you can't know, say so, and don't guess. In both cases, someone has to find out what happened."
        }
    }
}

/// The seed's rule when the other system's key handling decided: billing recognised a repeat.
pub const KEYS_HONOURED_RULE: &str = "What you can have is an effect that happens once: send the request as many times as you need to, and make the receiver recognise a repeat. That's what an idempotency key is for.";

/// The seed's rule when an operator's decision decided.
pub const OPERATOR_RULE: &str = "Ask a person. When the hook can't tell, an operator can. POST /v1/tool-executions/{key}/resolve records what the operator found, completed or failed, with a required reason. Every decision is compare-and-set on the ledger status, so of two operators acting at once exactly one wins.";

/// The seed's rule when an operator's undo decided.
pub const COMPENSATE_RULE: &str = "Undo it. If an effect shouldn't stand, POST .../compensate runs the tool's compensation, such as voiding the credit. The runtime never compensates by itself, not when a run fails, is cancelled or is recovered. It can't tell whether a failure later in the run makes an earlier effect wrong, and compensating a call that never happened, like voiding a credit that was never issued, can be a side effect of its own. Someone who can check the other system decides.";

/// The seed's rule when the other system could not recognise a repeat.
pub const OTHER_SIDE_RULE: &str =
    "The other system has to cooperate. The key makes a repeat recognisable; only the receiver can refuse it.";
