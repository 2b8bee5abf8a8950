//! Guard `key_per_call`: a call's key is its run and call, never a hash of its arguments. A
//! hash merges two honest credits with the same arguments and misses a replay that reworded
//! one.

use super::code::{Context, Piece, Slot};
use super::{DecisionRow, GuardCode, GuardSpec, Origin, Rule, always};
use crate::runtime::guards::Guard;

pub(super) const SPEC: GuardSpec = GuardSpec {
    guard: Guard::KeyPerCall,
    words: "keys per call",
    promise: "a call's key is its run and its call (r1:c1), never a hash of the arguments",
    without: "keys hashed from the arguments",
    rule: Rule {
        quote: &[
            "The key isn't derived from the arguments. Two different calls with identical arguments, say two separate $25 credits the customer really is owed, are two effects, and a hash of the arguments would merge them. And a key that changed whenever the model reworded an argument wouldn't catch a replay at all.",
        ],
        origin: Origin::Seed,
    },
    decision_rows: &[DecisionRow {
        table: "The key",
        function: "key::IdempotencyKey::make",
        row: "the key scheme: per call, not the arguments' hash",
    }],
    rulebook_rows: &[],
    defender_key: "9",
    code: GuardCode {
        needs: &[],
        shown: always,
        lines,
    },
    mentions: &["keys per call", "key per call"],
    tested_by: |hand| hand.calls_again || hand.processes,
    matters_in: always,
};

/// Its lines in the runtime's loop: its own when on, the naive ones it replaces when off.
fn lines(_: &Context<'_>, on: bool) -> Vec<Piece> {
    vec![if on {
        Piece::new(Slot::Key, 2, "key = f\"{run_id}:{call.id}\"", &[]).note("one key per call, whatever its arguments")
    } else {
        Piece::new(Slot::Key, 2, "key = hash(call.tool, call.arguments)", &[])
            .note("equal calls share a key; a reworded replay gets a new one")
    }]
}
