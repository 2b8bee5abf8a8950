//! Guard `atomic_reservation`: the reservation is one transaction, so of two workers driving
//! one run only one gets to make the call. Without it the ledger is checked, then written: two
//! workers can both see no record and both run the tool.

use super::{Code, DecisionRow, GuardSpec, Origin, Rule, always};
use crate::runtime::guards::Guard;

pub(super) const SPEC: GuardSpec = GuardSpec {
    guard: Guard::AtomicReservation,
    words: "atomic reservation",
    promise: "the reservation is one SQLite transaction (BEGIN IMMEDIATE)",
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
    code: Code {
        on: &[
            "with ledger.transaction():  # BEGIN IMMEDIATE",
            "    record = ledger.reserve(key)",
        ],
        off: &[
            "if ledger.get(key) is None:  # check…",
            "    ledger.insert(key, \"started\")  # …then insert",
        ],
    },
    mentions: &["atomic reservation", "reservation"],
    tested_by: |hand| hand.processes || hand.operators,
    matters_in: always,
};
