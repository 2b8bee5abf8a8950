//! Guard `lookup_settle`: a lookup that finds nothing sooner than the provider's declared
//! settle time after the last send proves nothing; the hook asks again before anyone settles
//! the call failed. It weighs only a tool's declared `lookup_settle_ms`.

use super::code::{Context, Piece, Slot, taught_or_off};
use super::hand::any_hand;
use super::{DecisionRow, GuardCode, GuardSpec, Origin, Row, RowId, Rule, any_tool};
use crate::level::Level;
use crate::runtime::guards::Guard;
use crate::runtime::worker::Phase;

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
    code: GuardCode {
        // Weighed only on what the hook found.
        needs: &[Guard::Ledger, Guard::ReconcileHook],
        shown: |level| {
            any_tool(level, |tool| tool.lookup_settle_ms.is_some()) || taught_or_off(level, Guard::LookupSettle)
        },
        lines,
    },
    mentions: &["settle time", "settle"],
    tested_by: any_hand,
    matters_in,
};

/// It weighs only a declared settle time: with none, it is the same on or off.
fn matters_in(level: &Level) -> bool {
    level.tools.iter().any(|tool| tool.lookup_settle_ms.is_some())
}

/// Its lines in the runtime's loop: its own when on, the naive ones it replaces when off.
fn lines(_: &Context<'_>, on: bool) -> Vec<Piece> {
    if on {
        vec![
            Piece::new(
                Slot::Settle,
                3,
                "if record.not_found and too_soon(key): look_again_later()",
                &[Phase::WaitToLookAgain],
            )
            .note("nothing yet proves nothing"),
            Piece::new(
                Slot::Settle,
                3,
                "elif record.not_found: ledger.settle(key, FAILED)",
                &[Phase::SettleNotFound],
            )
            .note("still nothing past billing's settle time"),
        ]
    } else {
        vec![
            Piece::new(
                Slot::Settle,
                3,
                "if record.not_found: ledger.settle(key, FAILED)",
                &[Phase::SettleNotFound],
            )
            .note("nothing found at once is taken as proof"),
        ]
    }
}
