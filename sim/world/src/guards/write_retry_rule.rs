//! Guard `write_retry_rule`: a write gets one attempt, and its timeout is an unknown. Without
//! it the runtime retries every tool alike, and a write whose answer was lost is paid again.

use super::code::{Context, Piece, Slot};
use super::{DecisionRow, GuardCode, GuardSpec, Origin, Row, RowId, Rule, always};
use crate::runtime::guards::Guard;

pub(super) const SPEC: GuardSpec = GuardSpec {
    guard: Guard::WriteRetryRule,
    words: "the write retry rule",
    promise: "writes get one attempt; a write timeout is unknown, not failed",
    without: "writes retried after a timeout",
    rule: Rule {
        quote: &[
            "Retry reads, not writes. A tool that changes something gets one attempt. A timeout on a write isn't a failure; it's an unknown.",
        ],
        origin: Origin::Seed,
    },
    decision_rows: &[DecisionRow {
        table: "Table 2 — outcome",
        function: "rules::outcome_action",
        row: "a write that timed out has one attempt allowed, so it is recorded indeterminate instead of retried",
    }],
    rulebook_rows: &[Row::with(
        Guard::WriteRetryRule,
        RowId::WriteIndeterminate,
        "timed out, a write with its one attempt",
        "record indeterminate: it may have happened",
    )],
    defender_key: "1",
    code: GuardCode {
        needs: &[],
        shown: always,
        lines,
    },
    mentions: &["write retry rule", "retry rule"],
    tested_by: |hand| hand.timeouts,
    matters_in: always,
};

/// Its lines in the runtime's loop: its own when on, the naive ones it replaces when off.
fn lines(context: &Context<'_>, on: bool) -> Vec<Piece> {
    let declared = context.declares_attempts();
    let attempts = match (on, declared) {
        (true, false) => "1 if tool.writes else 3",
        (true, true) => "tool.attempts or (1 if tool.writes else 3)",
        (false, false) => "3",
        (false, true) => "tool.attempts or 3",
    };
    let note = if on {
        "a write gets one attempt; its timeout is unknown"
    } else {
        "every timeout is retried, a write's too"
    };
    vec![Piece::new(Slot::Attempts, 3, format!("for attempt in range({attempts}):"), &[]).note(note)]
}
