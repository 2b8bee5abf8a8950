//! The rulebook's rows, as the guards and the rulebook share them: a guard's file holds the
//! rows it provides or leaves, the rulebook holds the rows no guard changes, and [`RowId`]'s
//! order is the order the rulebook shows them in.

use serde::Serialize;

use crate::runtime::guards::{Guard, Guards};

/// The tables, in the order a call (and then its run) meets them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Table {
    /// Before the run: every tool is put to the start checks.
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
            Table::Start => "0 · Start: the checks before a run, the recovery limit",
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

/// Every row of the rulebook, in the order it shows them: table by table. A row is named here
/// once and written once, in the file of the guard it belongs to or in the rulebook.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RowId {
    ContractRefused,
    ContractIgnored,
    AmbiguityRefused,
    AmbiguityIgnored,
    DeadLettered,
    RecoveredForEver,
    Recovered,
    NoRecord,
    Completed,
    Compensated,
    Failed,
    UnknownRead,
    LeaseTakenOver,
    UnknownWrite,
    Answered,
    RefusedRecordedFailed,
    Retried,
    WriteIndeterminate,
    OutOfAttempts,
    ExpiredKeyNotResent,
    AskHook,
    Pause,
    TellModelFailed,
    LookupExpired,
    LookupExpiredNaive,
    LookupTooSoon,
    LookupTooSoonNaive,
    LookupSettledFailed,
    LookupProvesNothing,
    ReflexCompensation,
    LeftToOperator,
    FreshRun,
    StaysFailed,
}

impl RowId {
    /// The table the row sits in.
    pub const fn table(self) -> Table {
        use RowId::*;
        match self {
            ContractRefused | ContractIgnored | AmbiguityRefused | AmbiguityIgnored | DeadLettered
            | RecoveredForEver | Recovered => Table::Start,
            NoRecord | Completed | Compensated | Failed | UnknownRead | LeaseTakenOver | UnknownWrite => {
                Table::Reservation
            }
            Answered | RefusedRecordedFailed | Retried | WriteIndeterminate | OutOfAttempts | ExpiredKeyNotResent => {
                Table::Outcome
            }
            AskHook | Pause | TellModelFailed | LookupExpired | LookupExpiredNaive | LookupTooSoon
            | LookupTooSoonNaive | LookupSettledFailed | LookupProvesNothing => Table::Unknown,
            ReflexCompensation | LeftToOperator | FreshRun | StaysFailed => Table::FailedRun,
        }
    }
}

/// One row: when it fires, and what the runtime does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Row {
    pub id: RowId,
    /// Its table (`id.table()`, kept beside it for the screens that group rows).
    pub table: Table,
    pub when: &'static str,
    pub then: &'static str,
    /// The row is live only while this guard is on (`true`) or off (`false`, a naive row).
    pub live_when: Option<(Guard, bool)>,
}

impl Row {
    /// A row no guard changes.
    pub const fn always(id: RowId, when: &'static str, then: &'static str) -> Row {
        Row {
            id,
            table: id.table(),
            when,
            then,
            live_when: None,
        }
    }

    /// A row `guard` provides (live while it is on).
    pub const fn with(guard: Guard, id: RowId, when: &'static str, then: &'static str) -> Row {
        Row {
            id,
            table: id.table(),
            when,
            then,
            live_when: Some((guard, true)),
        }
    }

    /// A naive row: live while `guard` is off.
    pub const fn without(guard: Guard, id: RowId, when: &'static str, then: &'static str) -> Row {
        Row {
            id,
            table: id.table(),
            when,
            then,
            live_when: Some((guard, false)),
        }
    }
}

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
