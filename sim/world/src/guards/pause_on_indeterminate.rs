//! Guard `pause_on_indeterminate`: `on_indeterminate: pause`. A run whose call is unknown
//! waits for someone to settle it; without it the model is told "failed", and a model told
//! "failed" may make the call again, under a new key no ledger recognises.

use super::{Code, DecisionRow, GuardSpec, Origin, Row, RowId, Rule, always};
use crate::runtime::guards::Guard;

pub(super) const SPEC: GuardSpec = GuardSpec {
    guard: Guard::PauseOnIndeterminate,
    words: "the pause on unknown calls",
    promise: "on_indeterminate: pause — the run waits instead of telling the model \"failed\"",
    without: "an unknown call reported to the model as failed",
    rule: Rule {
        quote: &[
            "Meanwhile, the run can wait. With tool_policy.on_indeterminate: pause, a run whose call is unknown pauses in awaiting_reconciliation instead of failing, and settling the call resumes it.",
            "on_indeterminate: pause exists for this reason: the model doesn't hear \"failed\" while the honest answer is \"unknown\".",
        ],
        origin: Origin::Seed,
    },
    decision_rows: &[DecisionRow {
        table: "Table 3 — unknown",
        function: "rules::unknown_action",
        row: "a call still unknown after the hook pauses the run instead of telling the model it failed",
    }],
    rulebook_rows: &[Row::with(
        Guard::PauseOnIndeterminate,
        RowId::Pause,
        "pause on unknown calls",
        "the run waits for an operator",
    )],
    defender_key: "3",
    code: Code {
        on: &[
            "tool_policy.on_indeterminate = \"pause\"",
            "run.status = \"awaiting_reconciliation\"  # the model hears nothing yet",
        ],
        off: &[
            "tool_policy.on_indeterminate = \"fail\"",
            "model.tell(call, \"failed\")  # while the honest answer is unknown",
        ],
    },
    mentions: &["pause on unknown", "pause"],
    tested_by: |hand| hand.unknowns || hand.operators,
    matters_in: always,
};
