//! How many round trips a ledger call makes to PostgreSQL (issue 25: eleven for a reserve +
//! fence + complete cycle, against one for a raw commit, and round trips, not the fsync, were
//! most of the cycle's time). The store sends a transaction's writes with its `COMMIT`, and
//! its `BEGIN` (or a member's `SAVEPOINT`) with its first read (`tables.rs`).
//!
//! One test in this binary, alone: the round-trip counter is the process's.

#[path = "../../runtime/tests/stores/mod.rs"]
mod stores;

use stores::fold_cases::{NOW_MS, key, request};
use twice_ledger_postgres::round_trips;
use twice_ledger_postgres::testing::TestDatabase;
use twice_runtime::ledger::{GroupSettings, Ledger};
use twice_runtime::rules::{Outcome, Status};

/// Round trips of one full call on a plain ledger: reservation with attempt 1's fence, then its
/// outcome, each two (BEGIN with the record's read, the writes with the COMMIT). Before the
/// writes were queued: eleven, a statement each.
const PLAIN_CYCLE_ROUND_TRIPS_MAX: u64 = 4;
/// The same through a commit group, a lone caller: each write three (BEGIN and SAVEPOINT with
/// the read, the writes with the RELEASE, the batch's COMMIT). Under load the COMMIT is the
/// batch's, shared: two a write. Before: fifteen.
const GROUPED_CYCLE_ROUND_TRIPS_MAX: u64 = 6;

/// One full call on `ledger` for call `call`: the round trips it made.
fn cycle(ledger: &mut Ledger, call: &str) -> u64 {
    let key = key(call);
    let before = round_trips();
    let folded = ledger.reserve_and_begin(&request(&key, "w1"), 1, NOW_MS).unwrap();
    assert_eq!(
        folded.attempt_begun,
        Some(1),
        "{call}: a new call runs, its attempt begun"
    );
    ledger
        .record_outcome(&key, Outcome::Completed, Some("credit"), "w1", 1, NOW_MS + 1)
        .unwrap();
    let after = round_trips();
    let record = ledger.record(&key).unwrap().expect("the call is in the ledger");
    assert_eq!(record.status, Status::Completed, "{call}: completed");
    assert_eq!(record.attempts, 1, "{call}: one attempt counted");
    after - before
}

#[test]
fn a_full_call_makes_four_round_trips_plain_and_six_grouped() {
    let Some(database) = TestDatabase::create("pg_round_trips") else {
        return;
    };
    let mut plain = twice_ledger_postgres::open(&database.fresh_schema()).unwrap();
    let mut grouped = twice_ledger_postgres::open_grouped(&database.fresh_schema(), GroupSettings::default()).unwrap();
    for (name, ledger, most) in [
        ("plain", &mut plain, PLAIN_CYCLE_ROUND_TRIPS_MAX),
        ("grouped", &mut grouped, GROUPED_CYCLE_ROUND_TRIPS_MAX),
    ] {
        // The first call prepares each statement once on the connection.
        cycle(ledger, "warm");
        let made = cycle(ledger, "c1");
        eprintln!("{name}: a full call made {made} round trips");
        assert!(
            made <= most,
            "{name}: a full call made {made} round trips, more than {most}"
        );
    }
}
