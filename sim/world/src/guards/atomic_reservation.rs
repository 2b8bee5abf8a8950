//! Guard `atomic_reservation`: the reservation is one transaction, so of two workers driving
//! one run only one gets to make the call. Without it the ledger is checked, then written: two
//! workers can both see no record and both run the tool.

use super::code::{Context, Piece, Slot};
use super::{DecisionRow, GuardCode, GuardSpec, Origin, Rule, always};
use crate::runtime::guards::Guard;
use crate::runtime::worker::Phase;

pub(super) const SPEC: GuardSpec = GuardSpec {
    guard: Guard::AtomicReservation,
    words: "atomic reservation",
    promise: "a call is reserved in one transaction, so of two workers driving one run only one makes the call",
    without: "a reservation that checks the ledger, then inserts",
    rule: Rule {
        quote: &[
            "The reservation is atomic, so when two processes drive the same run, only one of them gets to make the call.",
        ],
        origin: Origin::Seed,
    },
    decision_rows: &[
        DecisionRow {
            table: "Table 1 — reservation",
            function: "rules::reservation_action",
            row: "\"no record\" is decided and written in one transaction, so two workers cannot both find it",
        },
        DecisionRow {
            table: "Table 5 — send fence",
            function: "rules::fence_place",
            row: "a send is fenced only when reservations are atomic",
        },
    ],
    rulebook_rows: &[],
    defender_key: "5",
    code: GuardCode {
        needs: &[Guard::Ledger],
        shown: always,
        lines,
    },
    mentions: &["atomic reservation", "reservation"],
    tested_by: |hand| hand.processes || hand.operators,
    matters_in: always,
};

/// Its lines in the runtime's loop: its own when on, the naive ones it replaces when off.
fn lines(_: &Context<'_>, on: bool) -> Vec<Piece> {
    if on {
        vec![
            Piece::new(
                Slot::Reserve,
                2,
                "record = ledger.reserve(key, call)",
                &[Phase::Reserve],
            )
            .note("one transaction, so exactly one worker gets the call"),
        ]
    } else {
        vec![
            Piece::new(Slot::Reserve, 2, "record = ledger.get(key)", &[Phase::CheckLedger]).note("check first…"),
            Piece::new(
                Slot::Reserve,
                2,
                "if record.may_run: ledger.insert(key, STARTED)",
                &[Phase::InsertStarted],
            )
            .note("…then insert, and a twin slips in between"),
        ]
    }
}
