//! Guard `ledger`: every call is reserved under its key before it runs, so a replay reads the
//! ledger instead of running the tool again. Without it table 1 is never consulted at all.

use super::code::{Context, Piece, Slot};
use super::{DecisionRow, GuardCode, GuardSpec, Origin, Rule, always};
use crate::runtime::guards::Guard;
use crate::runtime::worker::Phase;

pub(super) const SPEC: GuardSpec = GuardSpec {
    guard: Guard::Ledger,
    words: "the ledger",
    promise: "every call is reserved in the ledger before it runs",
    without: "no ledger: every call made as if it were new",
    rule: Rule {
        quote: &[
            "Write it down before you run it. The call is reserved in a ledger under that key first. A key that already completed returns its recorded result instead of running again.",
        ],
        origin: Origin::Seed,
    },
    decision_rows: &[
        DecisionRow {
            table: "Table 1 — reservation",
            function: "rules::reservation_action",
            row: "every row: what the ledger holds for the key decides whether the tool runs",
        },
        DecisionRow {
            table: "Table 5 — send fence",
            function: "rules::fence_place",
            row: "with no ledger there is no record to fence a send on",
        },
    ],
    // The whole reservation table is its (`Table::needs`): struck through when it is off.
    rulebook_rows: &[],
    defender_key: "4",
    code: GuardCode {
        needs: &[],
        shown: always,
        lines,
    },
    mentions: &["ledger"],
    tested_by: |hand| hand.processes || hand.operators || hand.compensation,
    matters_in: always,
};

/// Its lines in the runtime's loop: its own when on, the naive ones it replaces when off.
fn lines(_: &Context<'_>, on: bool) -> Vec<Piece> {
    if on {
        vec![
            Piece::new(Slot::Late, 4, "sent.on_late(ledger.log_late)", &[Phase::LogLateOutcome])
                .note("a late answer is logged, never recorded"),
            Piece::new(
                Slot::Record,
                3,
                "record = ledger.record(key, answer or INDETERMINATE)",
                &[Phase::RecordOutcome],
            )
            .note("the outcome is written down under the key"),
        ]
    } else {
        vec![
            Piece::new(Slot::Reserve, 2, "record = NEW", &[])
                .note("nothing is reserved, so a replay runs the call again"),
            Piece::new(Slot::Record, 3, "record = answer or INDETERMINATE", &[]).note("nothing is written down"),
        ]
    }
}
