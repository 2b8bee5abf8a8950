//! Guard `key_retention`: a key older than its provider keeps keys is never resent as if it
//! were safe, and a lookup that finds nothing under it says "expired", not "absent". It weighs
//! only a tool's declared `key_retention_ms`.

use super::code::{Context, Piece, Slot, taught_or_off};
use super::hand::any_hand;
use super::{DecisionRow, GuardCode, GuardSpec, Origin, Row, RowId, Rule, any_tool};
use crate::level::Level;
use crate::runtime::guards::Guard;

pub(super) const SPEC: GuardSpec = GuardSpec {
    guard: Guard::KeyRetention,
    words: "the key's retention",
    promise: "a key older than the provider keeps keys is never resent; finding nothing under it means expired, not absent",
    without: "keys resent and looked up however old",
    rule: Rule {
        quote: &[
            "When you do have to send it again, send the same key.",
            "Passing the key is half the job; the other system has to honour it.",
        ],
        origin: Origin::Seed,
    },
    decision_rows: &[
        DecisionRow {
            table: "Table 7 — resend",
            function: "rules::resend_action",
            row: "a key older than the tool's declared retention is not resent",
        },
        DecisionRow {
            table: "Table 6 — nothing found",
            function: "rules::absent_action",
            row: "nothing under a key older than the retention is \"expired\", not proof",
        },
    ],
    rulebook_rows: &[
        Row::with(
            Guard::KeyRetention,
            RowId::ExpiredKeyNotResent,
            "a retry under a key older than the provider keeps keys",
            "do not resend it: record indeterminate (table 7)",
        ),
        Row::with(
            Guard::KeyRetention,
            RowId::LookupExpired,
            "the hook finds nothing under a key older than the provider keeps keys",
            "expired, not absent: it stays unknown (table 6)",
        ),
        Row::without(
            Guard::KeyRetention,
            RowId::LookupExpiredNaive,
            "the hook finds nothing under a key older than the provider keeps keys",
            "a naive hook reads it as absent: settle it failed",
        ),
    ],
    defender_key: "[",
    code: GuardCode {
        // The runtime weighs a resend's key age only for a key it passes on.
        needs: &[Guard::KeyDownstream],
        shown: |level| {
            any_tool(level, |tool| tool.key_retention_ms.is_some()) || taught_or_off(level, Guard::KeyRetention)
        },
        lines,
    },
    mentions: &["key's retention", "retention"],
    tested_by: any_hand,
    matters_in,
};

/// It weighs only a declared retention: with none, it is the same on or off.
fn matters_in(level: &Level) -> bool {
    level.tools.iter().any(|tool| tool.key_retention_ms.is_some())
}

/// Its lines in the runtime's loop: its own when on, the naive ones it replaces when off.
fn lines(_: &Context<'_>, on: bool) -> Vec<Piece> {
    vec![if on {
        Piece::new(
            Slot::Retention,
            4,
            "if attempt and key_age(key) >= tool.key_retention: break",
            &[],
        )
        .note("never resend a key billing has forgotten")
    } else {
        Piece::new(Slot::Retention, 4, "", &[]).note("a key billing has forgotten is resent, and paid again")
    }]
}
