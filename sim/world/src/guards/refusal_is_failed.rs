//! Guard `refusal_is_failed`: a call its tool refused before sending anything
//! (`ToolNotAttemptedError`) is recorded failed, so it may run again once the cause is fixed.
//! A naive runtime swallows the refusal as a success, or records it unknown and waits on a
//! call that never left.

use super::{Code, DecisionRow, GuardSpec, Origin, Row, RowId, Rule, always};
use crate::runtime::guards::Guard;

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
    code: Code {
        on: &[
            "except ToolNotAttemptedError:",
            "    ledger.record(key, \"failed\")  # nothing left: it may run again",
        ],
        off: &[
            "except ToolNotAttemptedError:",
            "    pass  # swallowed: the call reads as done",
        ],
    },
    mentions: &["refusal as failed", "refusal"],
    tested_by: |hand| hand.refusals,
    matters_in: always,
};
