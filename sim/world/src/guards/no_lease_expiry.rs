//! Guard `no_lease_expiry`: a `started` record is never reclaimed because a lease ran out; a
//! slow call is not a dead one.

use super::code::{Context, Piece, Slot, deals, taught_or_off};
use super::{DecisionRow, GuardCode, GuardSpec, Origin, Row, RowId, Rule, always};
use crate::level::CardKind;
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
    code: GuardCode {
        needs: &[Guard::Ledger],
        // A lease matters only where a second worker can meet a `started` call: a twin, or the
        // fresh worker that recovers a crashed one.
        shown: |level| {
            deals(level, CardKind::DuplicateWorker)
                || deals(level, CardKind::CrashWorker)
                || taught_or_off(level, Guard::NoLeaseExpiry)
        },
        lines,
    },
    mentions: &["no lease expiry", "lease"],
    tested_by: |hand| hand.long_calls,
    matters_in: always,
};

/// Its lines in the runtime's loop: its own when on, the naive ones it replaces when off.
fn lines(context: &Context<'_>, on: bool) -> Vec<Piece> {
    vec![if on {
        Piece::new(Slot::Lease, 2, "", &[]).note("a started call is never taken over, however long it runs")
    } else {
        let lease_ms = context.level.world.lease_ms;
        Piece::new(Slot::Lease, 2, "", &[]).note(format!(
            "a started call older than its {lease_ms} ms lease is taken over and sent again"
        ))
    }]
}
