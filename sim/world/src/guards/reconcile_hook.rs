//! Guard `reconcile_hook`: an unknown call is looked up in the other system by its key before
//! anything else, so a credit that landed is found and the run carries on with it.

use super::{Code, DecisionRow, GuardSpec, Origin, Row, RowId, Rule, always};
use crate::runtime::guards::Guard;

pub(super) const SPEC: GuardSpec = GuardSpec {
    guard: Guard::ReconcileHook,
    words: "the reconcile hook",
    promise: "an unknown call is looked up in billing by its key",
    without: "no lookup of an unknown call",
    rule: Rule {
        quote: &[
            "Ask the tool. A tool can have a reconcile hook that looks the key up in the external system:",
            "When a recovered run replays a call that's still unknown, the runtime asks the hook first; if the external system says the credit exists, the run carries on with the real result as if the timeout never happened.",
        ],
        origin: Origin::Seed,
    },
    decision_rows: &[DecisionRow {
        table: "Table 3 — unknown",
        function: "rules::unknown_action",
        row: "an unknown call of a tool with a hook is looked up first, before the pause or \"failed\"",
    }],
    rulebook_rows: &[Row::with(
        Guard::ReconcileHook,
        RowId::AskHook,
        "a reconcile hook, not yet asked",
        "ask the hook what billing holds",
    )],
    defender_key: "8",
    code: Code {
        on: &["outcome = await find_credit(record, context)  # look the key up first"],
        off: &["# an unknown call is never looked up"],
    },
    mentions: &["reconcile hook", "hook"],
    tested_by: |hand| hand.unknowns || hand.operators,
    matters_in: always,
};
