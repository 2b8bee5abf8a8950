//! Guard `key_per_call`: a call's key is its run and call, never a hash of its arguments. A
//! hash merges two honest credits with the same arguments and misses a replay that reworded
//! one.

use super::{Code, DecisionRow, GuardSpec, Origin, Rule, always};
use crate::runtime::guards::Guard;

pub(super) const SPEC: GuardSpec = GuardSpec {
    guard: Guard::KeyPerCall,
    words: "keys per call",
    promise: "the key is <run_id>:<tool_call_id>, never a hash of the arguments",
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
    code: Code {
        on: &["key = f\"{run_id}:{tool_call_id}\""],
        off: &["key = hash(arguments)"],
    },
    mentions: &["keys per call", "key per call"],
    tested_by: |hand| hand.calls_again || hand.processes,
    matters_in: always,
};
