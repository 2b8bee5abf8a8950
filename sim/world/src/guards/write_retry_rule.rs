//! Guard `write_retry_rule`: a write gets one attempt, and its timeout is an unknown. Without
//! it the runtime retries every tool alike, and a write whose answer was lost is paid again.

use super::{Code, DecisionRow, GuardSpec, Origin, Row, RowId, Rule, always};
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
    code: Code {
        on: &[
            "attempts = 3 if tool.side_effect == \"read\" else 1",
            "except Timeout:",
            "    ledger.record(key, \"indeterminate\")  # a write's timeout is an unknown",
        ],
        off: &[
            "for attempt in range(3):  # writes too",
            "    try: return tool(arguments)",
            "    except Timeout: continue",
        ],
    },
    mentions: &["write retry rule", "retry rule"],
    tested_by: |hand| hand.timeouts,
    matters_in: always,
};
