//! Guard `reconcile_hook`: an unknown call is looked up in the other system by its key before
//! anything else, so a credit that landed is found and the run carries on with it.

use super::code::{Context, Piece, Slot, taught_or_off};
use super::{DecisionRow, GuardCode, GuardSpec, Origin, Row, RowId, Rule, always, any_tool};
use crate::runtime::guards::Guard;
use crate::runtime::worker::Phase;

pub(super) const SPEC: GuardSpec = GuardSpec {
    guard: Guard::ReconcileHook,
    words: "the reconcile hook",
    promise: "an unknown call is looked up in billing by its key",
    without: "no lookup of an unknown call",
    rule: Rule {
        quote: &[
            "Ask the tool. A tool can have a reconcile hook that looks the key up in the external system:",
            // Not the seed's "When a recovered run replays…": this runtime asks the hook at
            // the timeout as well (Table 3), so a level with no recovery (07) must not be told
            // of one; the excerpt keeps what holds for both.
            "the runtime asks the hook first; if the external system says the credit exists, the run carries on with the real result as if the timeout never happened.",
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
    code: GuardCode {
        needs: &[Guard::Ledger],
        shown: |level| any_tool(level, |tool| tool.reconcile) || taught_or_off(level, Guard::ReconcileHook),
        lines,
    },
    mentions: &["reconcile hook", "hook"],
    tested_by: |hand| hand.unknowns || hand.operators,
    matters_in: always,
};

/// Its lines in the runtime's loop: its own when on, the naive ones it replaces when off.
fn lines(_: &Context<'_>, on: bool) -> Vec<Piece> {
    if on {
        vec![
            Piece::new(Slot::Hook, 2, "if record.unknown and tool.reconcile:", &[])
                .note("look the call up in billing by its key"),
            Piece::new(Slot::Hook, 3, "record = tool.reconcile(key)", &[Phase::Reconcile]),
        ]
    } else {
        vec![Piece::new(Slot::Hook, 2, "", &[]).note("nobody looks an unknown call up")]
    }
}
