//! Guard `no_lease_expiry`: a `started` record is never reclaimed because a lease ran out; a
//! slow call is not a dead one.

use super::{Code, DecisionRow, GuardSpec, Origin, Row, RowId, Rule, always};
use crate::runtime::guards::Guard;

pub(super) const SPEC: GuardSpec = GuardSpec {
    guard: Guard::NoLeaseExpiry,
    words: "no lease expiry",
    promise: "a started call is never run again because a lease expired",
    without: "leases that expire, so a slow call is taken over and run again",
    rule: Rule {
        quote: &[
            "started or indeterminate: the outcome is unknown. The call doesn't run.",
            "A call ends up indeterminate when it timed out or lost its connection after the request left, and stays started when the process died while it ran.",
        ],
        origin: Origin::Seed,
    },
    decision_rows: &[DecisionRow {
        table: "Table 1 — reservation",
        function: "rules::reservation_action",
        row: "a write's started record stays unknown however old: it is never taken over when a lease runs out",
    }],
    rulebook_rows: &[Row::without(
        Guard::NoLeaseExpiry,
        RowId::LeaseTakenOver,
        "started, a write, its lease ran out",
        "a naive runtime takes it over and runs it again",
    )],
    defender_key: "0",
    code: Code {
        on: &["if record.status == \"started\": return unknown(record)  # never reclaimed"],
        off: &[
            "if record.status == \"started\" and now > record.lease_until:",
            "    run_again(record)  # the lease ran out",
        ],
    },
    mentions: &["no lease expiry", "lease"],
    tested_by: |hand| hand.long_calls,
    matters_in: always,
};
