//! Guard `refusal_is_failed`: a call its tool refused before sending anything
//! (`ToolNotAttemptedError`) is recorded failed, so it may run again once the cause is fixed.
//! A naive runtime swallows the refusal as a success, or records it unknown and waits on a
//! call that never left.

use super::code::{Context, Piece, Slot, deals, taught_or_off};
use super::{DecisionRow, GuardCode, GuardSpec, Origin, Row, RowId, Rule, always};
use crate::level::CardKind;
use crate::runtime::guards::{Guard, NaiveRefusal};

pub(super) const SPEC: GuardSpec = GuardSpec {
    guard: Guard::RefusalIsFailed,
    words: "recording a refusal as failed",
    promise: "a call the tool refused before sending is recorded failed, not a success",
    without: "a refusal before sending not recorded as failed",
    rule: Rule {
        quote: &[
            "A tool that refuses a call before sending anything, because the user's token expired or the account is locked, raises ToolNotAttemptedError. The call is recorded failed, not indeterminate: nothing left the building, so there's nothing to look up, and it can run again once the problem is fixed.",
        ],
        origin: Origin::Seed,
    },
    decision_rows: &[DecisionRow {
        table: "Table 2 — outcome",
        function: "rules::outcome_action",
        row: "an attempt that ended not attempted is recorded failed",
    }],
    rulebook_rows: &[Row::with(
        Guard::RefusalIsFailed,
        RowId::RefusedRecordedFailed,
        "refused, or failed before sending",
        "record failed: it definitely did not happen",
    )],
    defender_key: "=",
    code: GuardCode {
        needs: &[],
        shown: |level| deals(level, CardKind::ToolFailsBeforeSending) || taught_or_off(level, Guard::RefusalIsFailed),
        lines,
    },
    mentions: &["refusal as failed", "refusal"],
    tested_by: |hand| hand.refusals,
    matters_in: always,
};

/// Its lines in the runtime's loop: its own when on, the naive ones it replaces when off.
fn lines(context: &Context<'_>, on: bool) -> Vec<Piece> {
    let (answer, note) = match (on, context.guards.naive_refusal()) {
        (true, _) => ("FAILED", "nothing left, so failed, and it may run again"),
        (false, NaiveRefusal::Completed) => ("COMPLETED", "the refusal is swallowed and recorded a success"),
        (false, NaiveRefusal::Indeterminate) => {
            ("TIMEOUT", "taken for a timeout, so it waits on a call that never left")
        }
    };
    vec![
        Piece::new(
            Slot::Refusal,
            4,
            format!("if sent.not_attempted: answer = {answer}"),
            &[],
        )
        .note(note),
    ]
}
