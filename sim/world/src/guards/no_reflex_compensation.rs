//! Guard `no_reflex_compensation`: the runtime never undoes an effect by itself. A naive
//! runtime compensates a failed run's calls by reflex, and voids credits the customer was owed.

use super::code::{Context, Piece, Slot, taught_or_off};
use super::{DecisionRow, GuardCode, GuardSpec, Origin, Row, RowId, Rule, always, any_tool};
use crate::runtime::guards::Guard;
use crate::runtime::worker::Phase;

pub(super) const SPEC: GuardSpec = GuardSpec {
    guard: Guard::NoReflexCompensation,
    words: "no reflex compensation",
    promise: "the runtime never compensates by itself",
    without: "compensation by reflex when a run fails",
    rule: Rule {
        quote: &[
            "Undo only on purpose. Compensation exists, but the runtime never runs it automatically.",
            "It can't tell whether a failure later in the run makes an earlier effect wrong, and compensating a call that never happened, like voiding a credit that was never issued, can be a side effect of its own.",
        ],
        origin: Origin::Seed,
    },
    decision_rows: &[DecisionRow {
        table: "Table 4 — failed run",
        function: "rules::failed_run_undo",
        row: "what took effect before a run failed stands until an operator decides",
    }],
    rulebook_rows: &[
        Row::without(
            Guard::NoReflexCompensation,
            RowId::ReflexCompensation,
            "calls of the run took effect",
            "a naive runtime compensates every one of them",
        ),
        Row::with(
            Guard::NoReflexCompensation,
            RowId::LeftToOperator,
            "calls of the run took effect",
            "nothing is undone by reflex: an operator decides",
        ),
    ],
    defender_key: "-",
    code: GuardCode {
        needs: &[],
        shown: |level| any_tool(level, |tool| tool.compensation) || taught_or_off(level, Guard::NoReflexCompensation),
        lines,
    },
    mentions: &["no reflex compensation", "compensation"],
    tested_by: |hand| hand.compensation || hand.operators,
    matters_in: always,
};

/// Its lines in the runtime's loop: its own when on, the naive ones it replaces when off.
fn lines(_: &Context<'_>, on: bool) -> Vec<Piece> {
    vec![if on {
        Piece::new(Slot::Compensate, 2, "", &[]).note("never undone by reflex; an operator decides")
    } else {
        Piece::new(
            Slot::Compensate,
            2,
            "if not record.completed: tool.compensate(call)",
            &[Phase::Compensate],
        )
        .note("undone by reflex, whatever billing holds")
    }]
}
