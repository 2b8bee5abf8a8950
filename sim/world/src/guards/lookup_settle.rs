//! Guard `lookup_settle`: a lookup that finds nothing sooner than the provider's declared
//! settle time after the last send proves nothing; the hook asks again before anyone settles
//! the call failed. It weighs only a tool's declared `lookup_settle_ms`.

use super::hand::any_hand;
use super::{Code, DecisionRow, GuardSpec, Origin, Row, RowId, Rule};
use crate::level::Level;
use crate::runtime::guards::Guard;

pub(super) const SPEC: GuardSpec = GuardSpec {
    guard: Guard::LookupSettle,
    words: "the lookup's settle time",
    promise: "a lookup that finds nothing before the provider's settle time proves nothing",
    without: "the first empty lookup taken as proof",
    rule: Rule {
        quote: &[
            "When you can't know, say so, and don't guess.",
            "In both cases, someone has to find out what happened.",
        ],
        origin: Origin::Seed,
    },
    decision_rows: &[DecisionRow {
        table: "Table 6 — nothing found",
        function: "rules::absent_action",
        row: "nothing found within the settle time of the last send: ask again once it has passed",
    }],
    rulebook_rows: &[
        Row::with(
            Guard::LookupSettle,
            RowId::LookupTooSoon,
            "the hook finds nothing sooner than the provider's settle time",
            "not proof yet: look again once it has passed (table 6)",
        ),
        Row::without(
            Guard::LookupSettle,
            RowId::LookupTooSoonNaive,
            "the hook finds nothing sooner than the provider's settle time",
            "a naive hook settles it failed at the first look",
        ),
    ],
    defender_key: "]",
    code: Code {
        on: &[
            "if credit is None and since_send < tool.lookup_settle:",
            "    return ask_again(after=tool.lookup_settle - since_send)",
        ],
        off: &[
            "if credit is None:",
            "    ledger.settle(key, \"failed\")  # at the first look",
        ],
    },
    mentions: &["settle time", "settle"],
    tested_by: any_hand,
    matters_in,
};

/// It weighs only a declared settle time: with none, it is the same on or off.
fn matters_in(level: &Level) -> bool {
    level.tools.iter().any(|tool| tool.lookup_settle_ms.is_some())
}
