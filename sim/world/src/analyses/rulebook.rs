//! The rulebook: the runtime's decision tables (`runtime/rules.rs`), after the check it
//! makes before a run starts (the tool contract, `runtime/tool.rs`), as a player reads
//! them beside the attack, as The Deadlock Empire shows its threads. Each row says when it
//! fires and what the runtime then does; a row a guard provides is struck through when that
//! guard is off; and the rows that fired in a run are lit from the simulator's record of them
//! ([`Simulation::rules_fired`]). The game and the browser only draw it.

use std::sync::LazyLock;

use serde::Serialize;

use crate::guards::REGISTRY;
use crate::runtime::guards::Guard;
use crate::runtime::rules::{
    AbsentAction, FailedRunAction, Fired, Outcome, OutcomeAction, RecoveryAction, ResendAction, ReservationAction,
    Status, UnknownAction,
};
use crate::simulator::{RuleFiring, RuleRow, Simulation};

pub use crate::guards::{Row, RowId, Table};

/// The rows no guard changes; every other row is in its guard's file ([`crate::guards`]).
const ROWS_OF_NO_GUARD: [Row; 15] = [
    Row::always(
        RowId::Recovered,
        "a recovery, fewer failed before it than declared",
        "recover it: drive the run on from its checkpoint",
    ),
    Row::always(RowId::NoRecord, "no record", "record started; the tool runs"),
    Row::always(
        RowId::Completed,
        "completed",
        "return the recorded result; the tool is not called",
    ),
    Row::always(
        RowId::Compensated,
        "compensating or compensated",
        "tell the model it was undone; the tool is not called",
    ),
    Row::always(RowId::Failed, "failed", "run again under the same key (attempt + 1)"),
    Row::always(
        RowId::UnknownRead,
        "started or indeterminate, a read",
        "run again: repeating a read changes nothing",
    ),
    Row::always(
        RowId::UnknownWrite,
        "started or indeterminate, a write",
        "the outcome is unknown: the tool is not called (table 3)",
    ),
    Row::always(RowId::Answered, "billing answered with a result", "record completed"),
    Row::always(
        RowId::Retried,
        "timed out, attempts left",
        "retry after a backoff (the same key)",
    ),
    Row::always(
        RowId::OutOfAttempts,
        "timed out, out of attempts",
        "record failed (true only of a read)",
    ),
    Row::always(RowId::TellModelFailed, "otherwise", "tell the model the call failed"),
    Row::always(
        RowId::LookupSettledFailed,
        "the hook finds nothing, past the settle time",
        "settle it failed: it did not take effect (table 6)",
    ),
    Row::always(
        RowId::LookupProvesNothing,
        "the hook finds nothing, no settle time declared",
        "nothing is proven: it stays unknown",
    ),
    Row::always(
        RowId::FreshRun,
        "workflow recovery_policy: retry, retries left",
        "start a fresh run: a new run id, new keys, from the first step",
    ),
    Row::always(
        RowId::StaysFailed,
        "no retries",
        "the run stays failed for a person to see",
    ),
];

/// Every row of the tables, in [`RowId`] order (table by table): the rows no guard changes and
/// each guard's own. Each row id stands once (a test holds it).
pub static ROWS: LazyLock<Vec<Row>> = LazyLock::new(|| {
    let mut rows: Vec<Row> = ROWS_OF_NO_GUARD
        .into_iter()
        .chain(REGISTRY.iter().flat_map(|spec| spec.rulebook_rows.iter().copied()))
        .collect();
    rows.sort_by_key(|row| row.id);
    rows
});

/// The row a start check lights when it refuses a run: the start-table row its guard provides,
/// read from the guard's own file (the seed's contract check's, the ambiguity policy's).
fn refusal_row(guard: Guard) -> RowId {
    crate::guards::spec(guard)
        .rulebook_rows
        .iter()
        .find(|row| row.table == crate::guards::Table::Start && row.live_when == Some((guard, true)))
        .map(|row| row.id)
        .expect("a guard that refuses a run provides its start-table row (rulebook tests hold it)")
}

/// The row a firing lit.
pub fn row_id_of(firing: &RuleFiring) -> RowId {
    match &firing.row {
        RuleRow::ContractRefused { guard, .. } => refusal_row(*guard),
        RuleRow::Decided(Fired::Recovery {
            action,
            failed_before,
            limit,
        }) => {
            let at_limit = limit.is_some_and(|limit| failed_before >= &limit);
            match (action, at_limit) {
                (RecoveryAction::DeadLetter, _) => RowId::DeadLettered,
                (RecoveryAction::Recover, true) => RowId::RecoveredForEver,
                (RecoveryAction::Recover, false) => RowId::Recovered,
            }
        }
        RuleRow::Decided(Fired::Resend { action, .. }) => match action {
            ResendAction::RefuseExpiredKey => RowId::ExpiredKeyNotResent,
            // A resend that goes out is the retry row's.
            ResendAction::Send => RowId::Retried,
        },
        RuleRow::Decided(Fired::Absent { action, facts }) => {
            let expired = facts
                .key_retention_ms
                .is_some_and(|retention| facts.since_reserved_ms >= retention);
            let too_soon = facts
                .lookup_settle_ms
                .is_some_and(|settle| facts.since_last_send_ms < settle);
            match action {
                AbsentAction::Expired => RowId::LookupExpired,
                AbsentAction::SettleFailed if expired => RowId::LookupExpiredNaive,
                AbsentAction::AskAgain { .. } => RowId::LookupTooSoon,
                AbsentAction::SettleFailed if too_soon => RowId::LookupTooSoonNaive,
                AbsentAction::SettleFailed => RowId::LookupSettledFailed,
                AbsentAction::StillUnknown => RowId::LookupProvesNothing,
            }
        }
        RuleRow::Reservation { existing, action, .. } => match action {
            ReservationAction::RunNew => RowId::NoRecord,
            ReservationAction::ReturnRecorded => RowId::Completed,
            ReservationAction::ReturnCompensated => RowId::Compensated,
            ReservationAction::RunAgain if *existing == Some(Status::Failed) => RowId::Failed,
            ReservationAction::RunAgain => RowId::UnknownRead,
            ReservationAction::TakeOverExpiredLease => RowId::LeaseTakenOver,
            ReservationAction::Unknown => RowId::UnknownWrite,
        },
        RuleRow::Decided(Fired::Outcome { end, action, .. }) => {
            use crate::runtime::rules::AttemptEnd;
            match (action, end) {
                (OutcomeAction::Record(Outcome::Completed), _) => RowId::Answered,
                (OutcomeAction::Record(_), AttemptEnd::Rejected | AttemptEnd::NotAttempted) => {
                    RowId::RefusedRecordedFailed
                }
                (OutcomeAction::Retry { .. }, _) => RowId::Retried,
                (OutcomeAction::Record(Outcome::Indeterminate), _) => RowId::WriteIndeterminate,
                (OutcomeAction::Record(_), _) => RowId::OutOfAttempts,
            }
        }
        RuleRow::Decided(Fired::Unknown { action, .. }) => match action {
            UnknownAction::AskReconcileHook => RowId::AskHook,
            UnknownAction::Pause => RowId::Pause,
            UnknownAction::TellModelFailed => RowId::TellModelFailed,
        },
        RuleRow::Decided(Fired::FailedRunUndo { action, .. } | Fired::Workflow { action, .. }) => match action {
            FailedRunAction::CompensateWhatTookEffect => RowId::ReflexCompensation,
            FailedRunAction::LeaveToOperator => RowId::LeftToOperator,
            FailedRunAction::StartFreshRun { .. } => RowId::FreshRun,
            FailedRunAction::StayFailed => RowId::StaysFailed,
        },
    }
}

/// The index in [`ROWS`] of the row a firing lit.
pub fn row_of(firing: &RuleFiring) -> usize {
    let id = row_id_of(firing);
    ROWS.iter()
        .position(|row| row.id == id)
        .expect("every row id has its row (the rulebook's test holds it)")
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

/// The seed's rule when the other system's key handling decided: billing recognised a repeat.
pub const KEYS_HONOURED_RULE: &str = "What you can have is an effect that happens once: send the request as many times as you need to, and make the receiver recognise a repeat. That's what an idempotency key is for.";

/// The seed's rule when an operator's decision decided.
pub const OPERATOR_RULE: &str = "Ask a person. When the hook can't tell, an operator can. POST /v1/tool-executions/{key}/resolve records what the operator found, completed or failed, with a required reason. Every decision is compare-and-set on the ledger status, so of two operators acting at once exactly one wins.";

/// The seed's rule when an operator's undo decided.
pub const COMPENSATE_RULE: &str = "Undo it. If an effect shouldn't stand, POST .../compensate runs the tool's compensation, such as voiding the credit. The runtime never compensates by itself, not when a run fails, is cancelled or is recovered. It can't tell whether a failure later in the run makes an earlier effect wrong, and compensating a call that never happened, like voiding a credit that was never issued, can be a side effect of its own. Someone who can check the other system decides.";

/// The seed's rule when the other system could not recognise a repeat.
pub const OTHER_SIDE_RULE: &str =
    "The other system has to cooperate. The key makes a repeat recognisable; only the receiver can refuse it.";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_row_stands_once_in_its_table_order() {
        let ids: Vec<RowId> = ROWS.iter().map(|row| row.id).collect();
        let mut sorted = ids.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(ids, sorted, "each row id once, in order");
        // Every id has its row: one written in the rulebook or in a guard's file.
        assert_eq!(
            ids.len(),
            ROWS_OF_NO_GUARD.len() + REGISTRY.iter().map(|spec| spec.rulebook_rows.len()).sum::<usize>()
        );
        for row in ROWS.iter() {
            assert_eq!(row.table, row.id.table());
        }
        let tables: Vec<Table> = ROWS.iter().map(|row| row.table).collect();
        assert!(tables.is_sorted(), "table by table");
    }

    #[test]
    fn each_start_check_lights_its_own_refusal_row() {
        // The seed's contract check and the ambiguity policy are two guards: a refusal lights
        // the row of the guard that refused, never the other's.
        assert_eq!(refusal_row(Guard::ToolContract), RowId::ContractRefused);
        assert_eq!(refusal_row(Guard::AmbiguityPolicy), RowId::AmbiguityRefused);
    }
}
