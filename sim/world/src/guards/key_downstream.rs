//! Guard `key_downstream`: the call's idempotency key travels with the request, so a billing
//! that honours keys answers a repeat with its first credit. Without it billing never sees
//! the key and cannot tell a repeat from a new credit.

use super::code::{Context, Piece, Slot};
use super::{DecisionRow, GuardCode, GuardSpec, Origin, Rule, always};
use crate::runtime::guards::Guard;
use crate::runtime::worker::Phase;

pub(super) const SPEC: GuardSpec = GuardSpec {
    guard: Guard::KeyDownstream,
    words: "passing the key",
    promise: "the idempotency key travels to billing with the request",
    without: "the key kept back from billing",
    rule: Rule {
        quote: &[
            "Each tool call gets an idempotency key from its run and call, <run_id>:<tool_call_id>, and the tool passes it to the system it changes.",
            "Send the same key twice and the second request gets the first one's answer instead of a second charge.",
        ],
        origin: Origin::Seed,
    },
    decision_rows: &[
        DecisionRow {
            table: "The send",
            function: "worker::invoke",
            row: "the request carries the call's key, so billing can answer a repeat and a hook can look it up",
        },
        DecisionRow {
            table: "Table 7 — resend",
            function: "rules::resend_action",
            row: "a resend under a key billing sees is weighed against the provider's retention",
        },
    ],
    rulebook_rows: &[],
    defender_key: "6",
    code: GuardCode {
        needs: &[],
        shown: always,
        lines,
    },
    mentions: &["passing the key", "key downstream"],
    tested_by: |hand| hand.unknowns || hand.operators,
    matters_in: always,
};

/// Its lines in the runtime's loop: its own when on, the naive ones it replaces when off.
fn lines(_: &Context<'_>, on: bool) -> Vec<Piece> {
    vec![if on {
        Piece::new(
            Slot::Send,
            4,
            "sent = tool.send(call, idempotency_key=key)",
            &[Phase::Send],
        )
        .note("the key travels with the request")
    } else {
        Piece::new(Slot::Send, 4, "sent = tool.send(call)", &[Phase::Send])
            .note("the key stays here, so billing cannot spot a repeat")
    }]
}
