//! Integration tests for the SQLite tool-execution ledger (`twice_runtime::ledger`).
//!
//! Each test's name states the rule it checks. File ledgers live in a fresh
//! temporary directory per test; in-memory ledgers get a fresh name per test.

use std::path::{Path, PathBuf};
use std::sync::Barrier;
use std::thread;

use rusqlite::Connection;
use tempfile::TempDir;
use twice_runtime::key::IdempotencyKey;
use twice_runtime::ledger::{
    BUSY_TIMEOUT_MS, Checkpoint, ExecutionRecord, HistoryEntry, HistoryEvent, LIST_LIMIT_MAX, Ledger, LedgerError,
    RecordFilter, Recorded, Reservation, ReserveRequest, RunEvent, SCHEMA_VERSION, SaveOutcome, SettleError,
    Settlement,
};
use twice_runtime::rules::{Outcome, ReservationAction, Status};
use twice_runtime::tool::SideEffect;

const NOW: u64 = 1_700_000_000_000;
const TENANT: &str = "acme";
const ARGS: &str = r#"{"account":"A-17","amount_cents":2500}"#;
const OTHER_ARGS: &str = r#"{"account":"A-17","amount_cents":9900}"#;
const WRITES: [SideEffect; 3] = [SideEffect::Write, SideEffect::External, SideEffect::Destructive];

// ---------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------

fn key(call: &str) -> IdempotencyKey {
    IdempotencyKey::per_call("run-1", call).unwrap()
}

/// The one request builder: an external (credit) call by `worker-1`, no lease.
/// Vary it with its `with_*`: `request(&k, ARGS).with_owner("w2")`.
fn request<'a>(key: &'a IdempotencyKey, arguments: &'a str) -> ReserveRequest<'a> {
    let (run_id, tool_call_id) = key.as_str().split_once(':').expect("a per-call key");
    ReserveRequest::new(
        key,
        run_id,
        tool_call_id,
        "issue_credit",
        SideEffect::External,
        arguments,
        "worker-1",
    )
    .with_tenant(TENANT)
}

/// A fresh ledger file in its own temporary directory (kept alive by the `TempDir`).
fn file_ledger() -> (TempDir, PathBuf, Ledger) {
    let dir = tempfile::tempdir().expect("temporary directory");
    let path = dir.path().join("ledger.sqlite");
    let ledger = Ledger::open(&path).expect("open a new ledger file");
    (dir, path, ledger)
}

/// Unwraps a `Reservation::Decided`, failing the test on a mismatch.
fn decided(reservation: Reservation) -> (ReservationAction, ExecutionRecord, Option<String>) {
    match reservation {
        Reservation::Decided {
            action,
            record,
            previous_owner,
            ..
        } => (action, record, previous_owner.map(String::from)),
        other => panic!("expected a decided reservation, got {other:?}"),
    }
}

fn reserve(
    ledger: &mut Ledger,
    request: &ReserveRequest<'_>,
    now_ms: u64,
) -> (ReservationAction, ExecutionRecord, Option<String>) {
    decided(ledger.reserve(request, now_ms).expect("reserve"))
}

fn record_of(ledger: &Ledger, key: &IdempotencyKey) -> ExecutionRecord {
    ledger.record(key).expect("read a record").expect("the record exists")
}

fn events(history: &[HistoryEntry]) -> Vec<&str> {
    history.iter().map(|entry| entry.event.name()).collect()
}

/// Reserves `key` (as `worker-1`, at `now_ms`) and brings it to `status` through the
/// attempt's own outcome. `Compensated` goes through `Completed` and a settlement.
fn put_in_status(ledger: &mut Ledger, key: &IdempotencyKey, side_effect: SideEffect, status: Status, now_ms: u64) {
    let (action, _, _) = reserve(ledger, &request(key, ARGS).with_side_effect(side_effect), now_ms);
    assert_eq!(action, ReservationAction::RunNew);
    match status {
        Status::Started => {}
        Status::Completed => {
            ledger
                .record_outcome(key, Outcome::Completed, Some("credit-1"), "worker-1", 0, now_ms)
                .expect("completed");
        }
        Status::Failed | Status::Indeterminate => {
            ledger
                .record_outcome(
                    key,
                    Outcome::of_status(status).expect("an outcome"),
                    None,
                    "worker-1",
                    0,
                    now_ms,
                )
                .expect("outcome");
        }
        Status::Compensating | Status::Compensated => {
            ledger
                .record_outcome(key, Outcome::Completed, Some("credit-1"), "worker-1", 0, now_ms)
                .expect("completed");
            ledger
                .settle(key, &settlement(Status::Compensating, Some(Status::Completed)), now_ms)
                .expect("an undo claimed");
            if status == Status::Compensated {
                ledger
                    .settle(
                        key,
                        &settlement(Status::Compensated, Some(Status::Compensating)),
                        now_ms,
                    )
                    .expect("the undo confirmed");
            }
        }
    }
    assert_eq!(record_of(ledger, key).status, status);
}

fn settlement(to: Status, expected: Option<Status>) -> Settlement<'static> {
    Settlement {
        to,
        expected,
        expected_attempts: None,
        actor: "op-ana",
        event: HistoryEvent::Resolved,
        reason: Some("checked the bank statement"),
        result: None,
        detail: None,
        settles_started: true,
    }
}

fn assert_names(error: &dyn std::fmt::Display, path: &Path) {
    let message = error.to_string();
    let path = path.display().to_string();
    assert!(
        message.contains(&path),
        "error message `{message}` does not name the file `{path}`"
    );
}

/// Compares file contents without dumping megabytes of bytes on failure.
fn assert_same_bytes(path: &Path, before: &[u8], what: &str) {
    let after = std::fs::read(path).expect("read the file back");
    if after != before {
        let first = before
            .iter()
            .zip(&after)
            .position(|(a, b)| a != b)
            .unwrap_or(before.len().min(after.len()));
        panic!(
            "{what}: {} changed (length {} -> {}, first difference at byte {first}: {:?} -> {:?})",
            path.display(),
            before.len(),
            after.len(),
            before.get(first..(first + 4).min(before.len())),
            after.get(first..(first + 4).min(after.len())),
        );
    }
}

/// A failed open leaves no `-wal`/`-shm`/`-journal` files behind next to the file.
fn assert_no_side_files(dir: &Path, path: &Path) {
    let names: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .collect();
    assert_eq!(names, [path.to_path_buf()], "only the file itself is in its directory");
}

/// Deterministic garbage (a small LCG), so a failing run can be reproduced.
fn garbage(length: usize) -> Vec<u8> {
    let mut state: u64 = 0x2545_f491_4f6c_dd1d;
    (0..length)
        .map(|_| {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            (state >> 33) as u8
        })
        .collect()
}

// ---------------------------------------------------------------------------
// 1–4. The reservation decision table, as the ledger applies it
// ---------------------------------------------------------------------------

#[test]
fn reserve_with_no_record_runs_new_records_started_and_logs_reserved() {
    let ledger = &mut Ledger::open_memory().unwrap();
    let k = key("c1");
    let (action, record, previous_owner) = reserve(ledger, &request(&k, ARGS), NOW);
    assert_eq!(action, ReservationAction::RunNew);
    assert_eq!(previous_owner, None);
    assert_eq!(record.key, k);
    assert_eq!(record.tenant, TENANT);
    assert_eq!(record.run_id, "run-1");
    assert_eq!(record.tool_call_id, "c1");
    assert_eq!(record.tool, "issue_credit");
    assert_eq!(record.side_effect, SideEffect::External);
    assert_eq!(record.arguments, ARGS);
    assert_eq!(record.status, Status::Started);
    assert_eq!(record.attempts, 0);
    assert_eq!(record.result, None);
    assert_eq!(record.owner, "worker-1");
    assert_eq!(record.created_at_ms, NOW);
    assert_eq!(record.updated_at_ms, NOW);
    assert_eq!(record.lease_expires_at_ms, None);
    assert_eq!(record_of(ledger, &k), record, "the returned record is the stored one");

    let history = ledger.history(&k).unwrap();
    assert_eq!(history.len(), 1);
    let entry = &history[0];
    assert_eq!(entry.key, k);
    assert_eq!(entry.event.name(), "reserved");
    assert_eq!(entry.actor, "worker-1");
    assert_eq!(entry.at_ms, NOW);
    assert_eq!(entry.from_status, None);
    assert_eq!(entry.to_status, Some(Status::Started));
}

#[test]
fn reserve_after_completed_returns_recorded_result_and_writes_nothing() {
    let ledger = &mut Ledger::open_memory().unwrap();
    let k = key("c1");
    reserve(ledger, &request(&k, ARGS), NOW);
    let recorded = ledger
        .record_outcome(&k, Outcome::Completed, Some("credit-77"), "worker-1", 0, NOW + 10)
        .unwrap();
    let Recorded::Recorded(completed) = recorded else {
        panic!("expected Recorded, got {recorded:?}")
    };
    assert_eq!(completed.status, Status::Completed);
    assert_eq!(completed.result.as_deref(), Some("credit-77"));
    let history_before = ledger.history(&k).unwrap();
    assert_eq!(events(&history_before), ["reserved", "completed"]);

    let (action, record, previous_owner) = reserve(ledger, &request(&k, ARGS).with_owner("worker-2"), NOW + 20);
    assert_eq!(action, ReservationAction::ReturnRecorded);
    assert_eq!(record.result.as_deref(), Some("credit-77"));
    assert_eq!(record, completed, "the record is returned as it was");
    assert_eq!(previous_owner.as_deref(), Some("worker-1"));
    assert_eq!(
        record_of(ledger, &k),
        completed,
        "the row is untouched (owner, updated_at)"
    );
    assert_eq!(
        ledger.history(&k).unwrap(),
        history_before,
        "no history entry is written"
    );
    assert_eq!(ledger.all_records().unwrap().len(), 1);
}

#[cfg(feature = "simulation")] // the game's naive ledger operations
#[test]
fn reserve_after_failed_runs_again_and_goes_back_to_started() {
    let ledger = &mut Ledger::open_memory().unwrap();
    let k = key("c1");
    reserve(ledger, &request(&k, ARGS).with_lease_ms(Some(500)), NOW);
    ledger.note_attempt(&k, 1, "worker-1", NOW + 1).unwrap();
    ledger
        .record_outcome(&k, Outcome::Failed, Some("declined"), "worker-1", 1, NOW + 5)
        .unwrap();
    let failed = record_of(ledger, &k);
    assert_eq!(failed.status, Status::Failed);
    assert_eq!(failed.lease_expires_at_ms, None, "an outcome clears the lease");

    let (action, record, previous_owner) = reserve(ledger, &request(&k, ARGS).with_owner("worker-2"), NOW + 100);
    assert_eq!(action, ReservationAction::RunAgain);
    assert_eq!(previous_owner.as_deref(), Some("worker-1"));
    assert_eq!(record.status, Status::Started);
    assert_eq!(record.result, None, "the failed attempt's result is cleared");
    assert_eq!(record.owner, "worker-2");
    assert_eq!(record.updated_at_ms, NOW + 100);
    assert_eq!(record.created_at_ms, NOW, "created_at is kept");
    assert_eq!(record.attempts, 1, "the attempt count is kept");
    assert_eq!(record_of(ledger, &k), record);

    let history = ledger.history(&k).unwrap();
    assert_eq!(events(&history), ["reserved", "attempt", "failed", "reserved_again"]);
    let last = history.last().unwrap();
    assert_eq!(last.from_status, Some(Status::Failed));
    assert_eq!(last.to_status, Some(Status::Started));
    assert_eq!(last.actor, "worker-2");
}

#[test]
fn reserve_after_compensated_returns_compensated_and_writes_nothing() {
    let ledger = &mut Ledger::open_memory().unwrap();
    let k = key("c1");
    put_in_status(ledger, &k, SideEffect::External, Status::Compensated, NOW);
    let before = record_of(ledger, &k);
    let history_before = ledger.history(&k).unwrap();

    let (action, record, _) = reserve(ledger, &request(&k, ARGS), NOW + 50);
    assert_eq!(action, ReservationAction::ReturnCompensated);
    assert_eq!(record, before);
    assert_eq!(record_of(ledger, &k), before);
    assert_eq!(ledger.history(&k).unwrap(), history_before);
}

#[test]
fn reserve_started_or_indeterminate_write_is_unknown_and_leaves_the_row_untouched() {
    let ledger = &mut Ledger::open_memory().unwrap();
    for side_effect in WRITES {
        for status in [Status::Started, Status::Indeterminate] {
            let k = key(&format!("{}-{}", side_effect.name(), status.name()));
            put_in_status(ledger, &k, side_effect, status, NOW);
            let before = record_of(ledger, &k);
            let history_before = ledger.history(&k).unwrap();

            let retry = request(&k, ARGS).with_side_effect(side_effect).with_owner("worker-2");
            let (action, record, previous_owner) = reserve(ledger, &retry, NOW + 60_000);
            assert_eq!(action, ReservationAction::Unknown, "{side_effect:?} in {status:?}");
            assert_eq!(
                record, before,
                "{side_effect:?} in {status:?}: the record is returned as it was"
            );
            assert_eq!(previous_owner.as_deref(), Some("worker-1"));
            assert_eq!(
                record_of(ledger, &k),
                before,
                "{side_effect:?} in {status:?}: the row is untouched"
            );
            assert_eq!(
                ledger.history(&k).unwrap(),
                history_before,
                "{side_effect:?} in {status:?}: no history"
            );
        }
    }
}

#[test]
fn reserve_started_or_indeterminate_read_runs_again() {
    let ledger = &mut Ledger::open_memory().unwrap();
    for status in [Status::Started, Status::Indeterminate] {
        let k = key(&format!("read-{}", status.name()));
        put_in_status(ledger, &k, SideEffect::Read, status, NOW);
        let retry = request(&k, ARGS)
            .with_side_effect(SideEffect::Read)
            .with_owner("worker-2");
        let (action, record, _) = reserve(ledger, &retry, NOW + 1);
        assert_eq!(
            action,
            ReservationAction::RunAgain,
            "a read in {status:?} may simply run again"
        );
        assert_eq!(record.status, Status::Started);
        assert_eq!(record.owner, "worker-2");
        let history = ledger.history(&k).unwrap();
        assert_eq!(history.last().unwrap().event.name(), "reserved_again");
        assert_eq!(history.last().unwrap().from_status, Some(status));
    }
}

// ---------------------------------------------------------------------------
// 5. Same key, other arguments
// ---------------------------------------------------------------------------

#[test]
fn reserve_same_key_with_other_arguments_is_refused_and_the_record_is_unchanged() {
    let ledger = &mut Ledger::open_memory().unwrap();
    for status in Status::ALL {
        let k = key(&format!("mismatch-{}", status.name()));
        put_in_status(ledger, &k, SideEffect::External, status, NOW);
        let before = record_of(ledger, &k);
        let history_before = ledger.history(&k).unwrap();

        let other = request(&k, OTHER_ARGS).with_owner("worker-2");
        match ledger.reserve(&other, NOW + 1_000).unwrap() {
            Reservation::ArgumentsMismatch { existing } => {
                assert_eq!(
                    existing, before,
                    "{status:?}: the existing record is reported as it stands"
                );
                assert_eq!(existing.arguments, ARGS);
            }
            decided => panic!("{status:?}: other arguments must be refused, got {decided:?}"),
        }
        assert_eq!(record_of(ledger, &k), before, "{status:?}: the record is unchanged");
        // Never silent: one line in the call's history, one in its run's, naming both sets.
        let history = ledger.history(&k).unwrap();
        assert_eq!(history[..history_before.len()], history_before[..], "{status:?}");
        let refused = &history[history_before.len()..];
        assert_eq!(refused.len(), 1, "{status:?}: {refused:?}");
        assert_eq!(refused[0].event, HistoryEvent::ArgumentsRefused);
        let detail = refused[0].detail.as_deref().unwrap_or_default();
        assert!(detail.contains(OTHER_ARGS) && detail.contains(ARGS), "{detail}");
        let run_line = ledger
            .run_history(Some(other.run_id))
            .unwrap()
            .pop()
            .expect("a run history line");
        assert_eq!(run_line.event, RunEvent::ArgumentsRefused);
        assert_eq!(run_line.detail.as_deref(), Some(detail));
    }
}

// ---------------------------------------------------------------------------
// 6. Leases (naive runtime only)
// ---------------------------------------------------------------------------

#[test]
fn lease_is_honoured_until_it_runs_out_then_taken_over_from_the_first_owner() {
    let ledger = &mut Ledger::open_memory().unwrap();
    let k = key("c1");
    let first = request(&k, ARGS).with_lease_ms(Some(100)).with_owner("worker-1");
    let (action, record, _) = reserve(ledger, &first, NOW);
    assert_eq!(action, ReservationAction::RunNew);
    assert_eq!(record.lease_expires_at_ms, Some(NOW + 100));

    let second = request(&k, ARGS).with_lease_ms(Some(100)).with_owner("worker-2");
    let before = record_of(ledger, &k);
    let (action, _, _) = reserve(ledger, &second, NOW + 50);
    assert_eq!(action, ReservationAction::Unknown, "the lease still runs at now+50");
    let (action, _, _) = reserve(ledger, &second, NOW + 99);
    assert_eq!(action, ReservationAction::Unknown, "the lease still runs at now+99");
    assert_eq!(
        record_of(ledger, &k),
        before,
        "an unexpired lease leaves the row untouched"
    );

    let (action, record, previous_owner) = reserve(ledger, &second, NOW + 100);
    assert_eq!(
        action,
        ReservationAction::TakeOverExpiredLease,
        "the lease ran out exactly at now+100"
    );
    assert_eq!(previous_owner.as_deref(), Some("worker-1"));
    assert_eq!(record.owner, "worker-2");
    assert_eq!(record.status, Status::Started);
    assert_eq!(
        record.lease_expires_at_ms,
        Some(NOW + 200),
        "the new owner gets a fresh lease"
    );
    let history = ledger.history(&k).unwrap();
    assert_eq!(events(&history), ["reserved", "lease_taken_over"]);
    assert_eq!(history[1].actor, "worker-2");
    assert_eq!(history[1].from_status, Some(Status::Started));
    assert!(history[1].detail.as_deref().unwrap_or_default().contains("lease"));

    // And the third worker, well after the second lease, takes it from the second.
    let third = request(&k, ARGS).with_lease_ms(Some(100)).with_owner("worker-3");
    let (action, _, previous_owner) = reserve(ledger, &third, NOW + 1_000);
    assert_eq!(action, ReservationAction::TakeOverExpiredLease);
    assert_eq!(previous_owner.as_deref(), Some("worker-2"));
}

#[test]
fn without_a_lease_a_started_record_is_never_taken_over() {
    let ledger = &mut Ledger::open_memory().unwrap();
    // Neither side has a lease.
    let k = key("no-lease");
    reserve(ledger, &request(&k, ARGS), NOW);
    let later = request(&k, ARGS).with_owner("worker-2");
    for delay in [100, 10_000, 86_400_000] {
        assert_eq!(reserve(ledger, &later, NOW + delay).0, ReservationAction::Unknown);
    }
    // The record has no lease: a naive worker with a lease cannot reclaim it either.
    let naive = request(&k, ARGS).with_owner("worker-3").with_lease_ms(Some(100));
    assert_eq!(reserve(ledger, &naive, NOW + 86_400_000).0, ReservationAction::Unknown);

    // The record has a lease, but the asking worker runs without leases: no takeover.
    let k = key("lease-then-none");
    reserve(ledger, &request(&k, ARGS).with_lease_ms(Some(100)), NOW);
    let without_lease = request(&k, ARGS).with_owner("worker-2").with_lease_ms(None);
    assert_eq!(
        reserve(ledger, &without_lease, NOW + 86_400_000).0,
        ReservationAction::Unknown
    );
    assert_eq!(record_of(ledger, &k).owner, "worker-1");
    assert_eq!(events(&ledger.history(&k).unwrap()), ["reserved"]);
}

#[test]
fn an_indeterminate_record_is_never_taken_over_by_lease() {
    let ledger = &mut Ledger::open_memory().unwrap();
    let k = key("c1");
    reserve(ledger, &request(&k, ARGS).with_lease_ms(Some(100)), NOW);
    ledger
        .record_outcome(&k, Outcome::Indeterminate, None, "worker-1", 0, NOW + 10)
        .unwrap();
    let naive = request(&k, ARGS).with_owner("worker-2").with_lease_ms(Some(100));
    assert_eq!(reserve(ledger, &naive, NOW + 1_000_000).0, ReservationAction::Unknown);
    assert_eq!(record_of(ledger, &k).status, Status::Indeterminate);
}

// ---------------------------------------------------------------------------
// 7. Atomicity across connections
// ---------------------------------------------------------------------------

#[test]
fn concurrent_reserves_from_eight_connections_on_one_file_run_exactly_once() {
    let (_dir, path, ledger) = file_ledger();
    let k = key("contended");
    const WORKERS: usize = 8;
    // Each thread gets its own connection, opened before the race starts.
    let connections: Vec<Ledger> = (0..WORKERS)
        .map(|index| {
            if index % 2 == 0 {
                ledger.connect_again()
            } else {
                Ledger::open(&path)
            }
            .unwrap()
        })
        .collect();
    let barrier = Barrier::new(WORKERS);
    let owners: Vec<String> = (0..WORKERS).map(|index| format!("worker-{index}")).collect();
    let outcomes: Vec<(String, ReservationAction)> = thread::scope(|scope| {
        let handles: Vec<_> = connections
            .into_iter()
            .zip(&owners)
            .map(|(mut connection, owner)| {
                let (barrier, k) = (&barrier, &k);
                scope.spawn(move || {
                    let request = request(k, ARGS).with_owner(owner);
                    barrier.wait();
                    let (action, _, _) = decided(connection.reserve(&request, NOW).expect("reserve under contention"));
                    (owner.clone(), action)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|handle| handle.join().expect("worker thread"))
            .collect()
    });

    let winners: Vec<&String> = outcomes
        .iter()
        .filter(|(_, action)| *action == ReservationAction::RunNew)
        .map(|(owner, _)| owner)
        .collect();
    assert_eq!(winners.len(), 1, "exactly one RunNew: {outcomes:?}");
    assert!(
        outcomes
            .iter()
            .all(|(_, action)| matches!(action, ReservationAction::RunNew | ReservationAction::Unknown)),
        "everyone else is told Unknown: {outcomes:?}"
    );
    let records = ledger.all_records().unwrap();
    assert_eq!(records.len(), 1);
    assert_eq!(&records[0].owner, winners[0], "the row belongs to the one that ran");
    assert_eq!(events(&ledger.history(&k).unwrap()), ["reserved"]);
}

#[test]
fn concurrent_first_opens_of_a_new_file_all_succeed() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("fresh.sqlite");
    const OPENERS: usize = 8;
    let barrier = Barrier::new(OPENERS);
    let results: Vec<Result<Ledger, LedgerError>> = thread::scope(|scope| {
        let handles: Vec<_> = (0..OPENERS)
            .map(|_| {
                scope.spawn(|| {
                    barrier.wait();
                    Ledger::open(&path)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|handle| handle.join().expect("opener thread"))
            .collect()
    });
    let failures: Vec<String> = results
        .iter()
        .filter_map(|result| result.as_ref().err())
        .map(ToString::to_string)
        .collect();
    assert!(
        failures.is_empty(),
        "every process opening a new ledger at once must succeed: {failures:?}"
    );
    let mut ledger = Ledger::open(&path).unwrap();
    assert_eq!(
        reserve(&mut ledger, &request(&key("c1"), ARGS), NOW).0,
        ReservationAction::RunNew
    );
}

/// Eight threads, each with its own connection to one memory ledger, reserve one key at once.
fn race_on_a_memory_ledger() -> (Ledger, Vec<Result<ReservationAction, LedgerError>>) {
    let ledger = Ledger::open_memory().unwrap();
    let k = key("contended");
    const WORKERS: usize = 8;
    let connections: Vec<Ledger> = (0..WORKERS).map(|_| ledger.connect_again().unwrap()).collect();
    let barrier = Barrier::new(WORKERS);
    let owners: Vec<String> = (0..WORKERS).map(|index| format!("worker-{index}")).collect();
    let outcomes = thread::scope(|scope| {
        let handles: Vec<_> = connections
            .into_iter()
            .zip(&owners)
            .map(|(mut connection, owner)| {
                let (barrier, k) = (&barrier, &k);
                scope.spawn(move || {
                    let request = request(k, ARGS).with_owner(owner);
                    barrier.wait();
                    connection
                        .reserve(&request, NOW)
                        .map(|reservation| decided(reservation).0)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|handle| handle.join().expect("worker thread"))
            .collect()
    });
    (ledger, outcomes)
}

#[test]
fn concurrent_reserves_on_one_memory_ledger_never_run_twice() {
    let (ledger, outcomes) = race_on_a_memory_ledger();
    let runs = outcomes
        .iter()
        .filter(|outcome| matches!(outcome, Ok(ReservationAction::RunNew)))
        .count();
    assert_eq!(runs, 1, "exactly one RunNew: {outcomes:?}");
    for outcome in &outcomes {
        match outcome {
            Ok(action) => assert!(
                matches!(action, ReservationAction::RunNew | ReservationAction::Unknown),
                "{outcomes:?}"
            ),
            // A shared in-memory ledger reports contention as Locked at once (documented on `open_memory`).
            Err(error) => {
                assert!(matches!(error, LedgerError::Locked { .. }), "{error:?}");
                assert!(error.to_string().contains(&ledger.location()), "{error}");
            }
        }
    }
    assert_eq!(ledger.all_records().unwrap().len(), 1);
}

#[cfg(feature = "simulation")] // the game's naive ledger operations
#[test]
fn an_uncommitted_reservation_is_invisible_to_other_connections() {
    let (_dir, _path, mut a) = file_ledger();
    let b = a.connect_again().unwrap();
    let k = key("c1");
    a.reserve_uncommitted(&request(&k, ARGS), NOW).unwrap();
    assert_eq!(b.record(&k).unwrap(), None, "B does not see A's open transaction");
    assert_eq!(b.check(&k).unwrap(), None);
    assert!(b.all_records().unwrap().is_empty());
    drop(a);
}

// ---------------------------------------------------------------------------
// 8. A crash mid-reservation rolls it back
// ---------------------------------------------------------------------------

#[cfg(feature = "simulation")] // the game's naive ledger operations
fn assert_crash_rolls_back(keeper: &Ledger) {
    let k = key("crashed");
    let mut a = keeper.connect_again().unwrap();
    a.reserve_uncommitted(&request(&k, ARGS), NOW).unwrap();
    drop(a); // as SIGKILL would: the open transaction is rolled back

    let mut b = keeper.connect_again().unwrap();
    assert_eq!(b.record(&k).unwrap(), None, "no record survives the crash");
    assert!(b.history(&k).unwrap().is_empty(), "no history survives the crash");
    let (action, record, previous_owner) = reserve(&mut b, &request(&k, ARGS).with_owner("worker-2"), NOW + 1);
    assert_eq!(action, ReservationAction::RunNew);
    assert_eq!(previous_owner, None);
    assert_eq!(record.owner, "worker-2");
    assert_eq!(keeper.all_records().unwrap().len(), 1);
}

#[cfg(feature = "simulation")] // the game's naive ledger operations
#[test]
fn crash_before_commit_rolls_back_a_file_reservation() {
    let (_dir, path, keeper) = file_ledger();
    assert_crash_rolls_back(&keeper);
    drop(keeper);
    // And after every connection is gone, a reopened file still has just the one reservation.
    let reopened = Ledger::open(&path).unwrap();
    let records = reopened.all_records().unwrap();
    assert_eq!(records.len(), 1);
    assert_eq!(records[0].owner, "worker-2");
}

#[cfg(feature = "simulation")] // the game's naive ledger operations
#[test]
fn crash_before_commit_rolls_back_a_memory_reservation() {
    let keeper = Ledger::open_memory().unwrap();
    assert!(keeper.path().is_none());
    assert_crash_rolls_back(&keeper);
}

#[test]
fn crash_after_a_committed_reservation_keeps_it() {
    let (_dir, path, keeper) = file_ledger();
    let k = key("committed");
    let mut a = keeper.connect_again().unwrap();
    reserve(&mut a, &request(&k, ARGS), NOW);
    drop(a);
    drop(keeper);
    let mut b = Ledger::open(&path).unwrap();
    assert_eq!(record_of(&b, &k).status, Status::Started);
    assert_eq!(
        reserve(&mut b, &request(&k, ARGS).with_owner("worker-2"), NOW + 1).0,
        ReservationAction::Unknown
    );
}

#[test]
fn memory_ledgers_are_separate_and_shared_by_their_connections() {
    let mut first = Ledger::open_memory().unwrap();
    let second = Ledger::open_memory().unwrap();
    assert_ne!(first.location(), second.location());
    let k = key("c1");
    reserve(&mut first, &request(&k, ARGS), NOW);
    assert!(second.record(&k).unwrap().is_none(), "a new memory ledger starts empty");
    let again = first.connect_again().unwrap();
    assert_eq!(again.location(), first.location());
    assert!(
        again.record(&k).unwrap().is_some(),
        "connect_again sees the same memory ledger"
    );
}

// ---------------------------------------------------------------------------
// 9. The naive check-then-insert race
// ---------------------------------------------------------------------------

#[cfg(feature = "simulation")] // used only by the naive operations' tests
fn decided_record(reservation: Reservation) -> ExecutionRecord {
    decided(reservation).1
}

#[cfg(feature = "simulation")] // the game's naive ledger operations
#[test]
fn a_reservation_is_fenced_on_the_checkpoint_version_the_worker_loaded() {
    let (_dir, _path, mut a) = file_ledger();
    let k = key("c1");
    let fenced = |version| request(&k, ARGS).with_checkpoint_version(Some(version));
    assert!(matches!(
        a.save_checkpoint("run-1", "running", "{}", "w2", Some(0), NOW).unwrap(),
        SaveOutcome::Saved { version: 1 }
    ));
    let stale = a.reserve(&fenced(0), NOW).unwrap();
    assert_eq!(stale, Reservation::Fenced { expected: 0, found: 1 });
    assert_eq!(a.record(&k).unwrap(), None, "a fenced reservation writes nothing");
    let stale_insert = a.insert_started_unchecked(&fenced(0), NOW).unwrap();
    assert_eq!(stale_insert, Reservation::Fenced { expected: 0, found: 1 });
    assert!(matches!(
        a.reserve(&fenced(1), NOW).unwrap(),
        Reservation::Decided {
            action: ReservationAction::RunNew,
            ..
        }
    ));
}

#[cfg(feature = "simulation")] // the game's naive ledger operations
#[test]
fn naive_check_then_insert_lets_both_workers_run_and_overwrites_the_first() {
    let (_dir, _path, mut a) = file_ledger();
    let mut b = a.connect_again().unwrap();
    let k = key("c1");
    assert_eq!(a.check(&k).unwrap(), None);
    assert_eq!(b.check(&k).unwrap(), None);

    let first = a
        .insert_started_unchecked(&request(&k, ARGS).with_owner("worker-a"), NOW)
        .unwrap();
    let first = decided_record(first);
    assert_eq!(first.status, Status::Started);
    assert_eq!(first.owner, "worker-a");
    let second = b
        .insert_started_unchecked(&request(&k, ARGS).with_owner("worker-b"), NOW + 1)
        .unwrap();
    let second = decided_record(second);
    assert_eq!(second.status, Status::Started);
    assert_eq!(second.owner, "worker-b");

    let records = a.all_records().unwrap();
    assert_eq!(records.len(), 1, "one row, the second overwrote the first");
    assert_eq!(records[0].owner, "worker-b");

    let history = a.history(&k).unwrap();
    assert_eq!(
        events(&history),
        ["reserved", "reserved"],
        "both workers went on to run the tool"
    );
    assert_eq!(history[0].from_status, None);
    assert!(!history[0].detail.as_deref().unwrap_or_default().contains("overwrote"));
    assert_eq!(history[1].actor, "worker-b");
    assert_eq!(history[1].from_status, Some(Status::Started));
    assert!(
        history[1].detail.as_deref().unwrap_or_default().contains("overwrote"),
        "the overwrite is visible in the history: {:?}",
        history[1].detail
    );
}

// ---------------------------------------------------------------------------
// 10. Outcomes, attempts and late outcomes
// ---------------------------------------------------------------------------

/// The decision said `failed`; the tool's answer then says it took effect: the decision
/// stands, and the disagreement is written as a contradiction, never as a routine late line.
#[test]
fn outcome_after_a_settlement_that_contradicts_it_is_ignored_and_logged_as_a_contradiction() {
    let ledger = &mut Ledger::open_memory().unwrap();
    let k = key("c1");
    put_in_status(ledger, &k, SideEffect::External, Status::Indeterminate, NOW);
    let settle = Settlement {
        to: Status::Failed,
        expected: Some(Status::Indeterminate),
        expected_attempts: None,
        actor: "op-ana",
        event: HistoryEvent::Resolved,
        reason: Some("the bank has no such credit"),
        result: None,
        detail: None,
        settles_started: true,
    };
    let settled = ledger.settle(&k, &settle, NOW + 100).unwrap();
    assert_eq!(settled.status, Status::Failed);
    let history = ledger.history(&k).unwrap();
    let entry = history.last().unwrap();
    assert_eq!(entry.actor, "op-ana");
    assert_eq!(entry.event.name(), "resolved");
    assert_eq!(entry.from_status, Some(Status::Indeterminate));
    assert_eq!(entry.to_status, Some(Status::Failed));
    assert_eq!(entry.reason.as_deref(), Some("the bank has no such credit"));

    let late = ledger
        .record_outcome(&k, Outcome::Completed, Some("credit-9"), "worker-1", 0, NOW + 200)
        .unwrap();
    let Recorded::LateOutcomeIgnored(current) = late else {
        panic!("expected LateOutcomeIgnored, got {late:?}")
    };
    assert_eq!(current, settled, "the settled record is reported as it stands");
    assert_eq!(record_of(ledger, &k), settled, "the status stays as settled");

    let history = ledger.history(&k).unwrap();
    assert_eq!(
        events(&history),
        ["reserved", "indeterminate", "resolved", "contradicted"]
    );
    let late_entry = history.last().unwrap();
    assert_eq!(late_entry.actor, "worker-1");
    assert_eq!(late_entry.at_ms, NOW + 200);
    assert_eq!(late_entry.from_status, Some(Status::Failed));
    assert_eq!(late_entry.to_status, None);
    let detail = late_entry.detail.as_deref().unwrap_or_default();
    assert!(
        detail.contains("completed") && detail.contains("failed"),
        "detail names both statuses: {detail}"
    );
}

#[test]
fn a_second_outcome_for_the_same_attempt_is_ignored() {
    let ledger = &mut Ledger::open_memory().unwrap();
    let k = key("c1");
    put_in_status(ledger, &k, SideEffect::External, Status::Completed, NOW);
    let before = record_of(ledger, &k);
    let again = ledger
        .record_outcome(&k, Outcome::Failed, None, "worker-1", 0, NOW + 1)
        .unwrap();
    assert_eq!(again, Recorded::LateOutcomeIgnored(before.clone()));
    assert_eq!(record_of(ledger, &k), before);
}

#[test]
fn outcome_for_a_call_never_reserved_is_an_error_naming_the_key() {
    let ledger = &mut Ledger::open_memory().unwrap();
    let k = key("ghost");
    let error = ledger
        .record_outcome(&k, Outcome::Completed, Some("x"), "worker-1", 0, NOW)
        .unwrap_err();
    assert!(
        matches!(&error, LedgerError::BadRow { key, .. } if key == k.as_str()),
        "{error:?}"
    );
    assert!(error.to_string().contains(k.as_str()));
    assert!(ledger.all_records().unwrap().is_empty());
    assert!(ledger.all_history().unwrap().is_empty());
}

#[cfg(feature = "simulation")] // the game's naive ledger operations
#[test]
fn note_attempt_counts_attempts_and_logs_them() {
    let ledger = &mut Ledger::open_memory().unwrap();
    let k = key("c1");
    reserve(ledger, &request(&k, ARGS), NOW);
    ledger.note_attempt(&k, 1, "worker-1", NOW + 1).unwrap();
    ledger.note_attempt(&k, 2, "worker-1", NOW + 2).unwrap();
    let record = record_of(ledger, &k);
    assert_eq!(record.attempts, 2);
    assert_eq!(record.updated_at_ms, NOW + 2);
    let history = ledger.history(&k).unwrap();
    assert_eq!(events(&history), ["reserved", "attempt", "attempt"]);
    assert_eq!(history[2].detail.as_deref(), Some("attempt 2"));

    // An attempt on a key with no record changes nothing and logs nothing.
    ledger.note_attempt(&key("ghost"), 1, "worker-1", NOW).unwrap();
    assert!(ledger.history(&key("ghost")).unwrap().is_empty());
    assert_eq!(ledger.all_records().unwrap().len(), 1);
}

#[test]
fn log_late_outcome_and_note_append_history_without_touching_the_record() {
    let ledger = &mut Ledger::open_memory().unwrap();
    let k = key("c1");
    put_in_status(ledger, &k, SideEffect::External, Status::Indeterminate, NOW);
    let before = record_of(ledger, &k);
    ledger
        .log_late_outcome(
            &k,
            "worker-1",
            &twice_runtime::ledger::LateAnswer {
                attempt: 1,
                says: Outcome::Indeterminate,
                detail: "the credit answered after the timeout",
            },
            NOW + 5,
        )
        .unwrap();
    ledger
        .note(
            &k,
            "runtime",
            HistoryEvent::GuardHeld,
            "no_write_retry stopped a retry",
            NOW + 6,
        )
        .unwrap();
    assert_eq!(record_of(ledger, &k), before);
    let history = ledger.history(&k).unwrap();
    assert_eq!(
        events(&history),
        ["reserved", "indeterminate", "late_outcome_ignored", "guard_held"]
    );
    assert_eq!(
        history[2].detail.as_deref(),
        Some("the credit answered after the timeout")
    );
    assert_eq!(history[2].at_ms, NOW + 5);
    assert_eq!(history[3].actor, "runtime");
    assert!(
        history.windows(2).all(|pair| pair[0].id < pair[1].id),
        "history ids increase"
    );
}

// ---------------------------------------------------------------------------
// 11. Settlements: compare-and-set, never overwriting a decision
// ---------------------------------------------------------------------------

#[test]
fn settle_with_a_stale_expected_status_is_refused_naming_the_current_status() {
    let ledger = &mut Ledger::open_memory().unwrap();
    let k = key("c1");
    put_in_status(ledger, &k, SideEffect::External, Status::Indeterminate, NOW);
    let before = record_of(ledger, &k);
    let history_before = ledger.history(&k).unwrap();

    let error = ledger
        .settle(&k, &settlement(Status::Failed, Some(Status::Started)), NOW + 1)
        .unwrap_err();
    match &error {
        SettleError::Stale { key, expected, current } => {
            assert_eq!(key, &k);
            assert_eq!(*expected, Status::Started);
            assert_eq!(**current, before);
        }
        other => panic!("expected Stale, got {other:?}"),
    }
    let message = error.to_string();
    assert!(
        message.contains("indeterminate") && message.contains("started"),
        "{message}"
    );
    assert_eq!(record_of(ledger, &k), before);
    assert_eq!(ledger.history(&k).unwrap(), history_before);
}

#[test]
fn settle_started_or_indeterminate_with_no_expected_status_is_allowed() {
    let ledger = &mut Ledger::open_memory().unwrap();
    for status in [Status::Started, Status::Indeterminate] {
        let k = key(&format!("settle-{}", status.name()));
        put_in_status(ledger, &k, SideEffect::External, status, NOW);
        let settled = Settlement {
            result: Some("credit-5"),
            ..settlement(Status::Completed, None)
        };
        let after = ledger.settle(&k, &settled, NOW + 1).unwrap();
        assert_eq!(after.status, Status::Completed);
        assert_eq!(after.result.as_deref(), Some("credit-5"));
        assert_eq!(after.updated_at_ms, NOW + 1);
        assert_eq!(after.lease_expires_at_ms, None);
        let entry = ledger.history(&k).unwrap().pop().unwrap();
        assert_eq!(
            (entry.from_status, entry.to_status),
            (Some(status), Some(Status::Completed))
        );
        assert_eq!(entry.detail.as_deref(), Some("credit-5"));
    }
}

#[test]
fn settling_a_settled_record_other_than_compensating_is_already_settled() {
    let ledger = &mut Ledger::open_memory().unwrap();
    let k = key("c1");
    put_in_status(ledger, &k, SideEffect::External, Status::Completed, NOW);
    let before = record_of(ledger, &k);

    for expected in [Some(Status::Completed), None] {
        let error = ledger
            .settle(&k, &settlement(Status::Failed, expected), NOW + 1)
            .unwrap_err();
        match &error {
            SettleError::AlreadySettled { key, current } => {
                assert_eq!(key, &k);
                assert_eq!(**current, before);
            }
            other => panic!("expected AlreadySettled with expected {expected:?}, got {other:?}"),
        }
        assert!(error.to_string().contains("completed"), "{error}");
    }
    // Failed → anything is refused too.
    let f = key("failed");
    put_in_status(ledger, &f, SideEffect::External, Status::Failed, NOW);
    for to in [Status::Completed, Status::Compensated, Status::Indeterminate] {
        let error = ledger
            .settle(&f, &settlement(to, Some(Status::Failed)), NOW + 1)
            .unwrap_err();
        assert!(
            matches!(error, SettleError::AlreadySettled { .. }),
            "failed → {to:?}: {error:?}"
        );
    }
    assert_eq!(record_of(ledger, &k), before);
    assert_eq!(record_of(ledger, &f).status, Status::Failed);
}

#[test]
fn compensating_a_completed_record_is_allowed_once_and_keeps_its_result() {
    let ledger = &mut Ledger::open_memory().unwrap();
    let k = key("c1");
    put_in_status(ledger, &k, SideEffect::External, Status::Completed, NOW);
    let straight = ledger
        .settle(&k, &settlement(Status::Compensated, Some(Status::Completed)), NOW + 5)
        .unwrap_err();
    assert!(
        matches!(straight, SettleError::AlreadySettled { .. }),
        "an undo is claimed before it is confirmed: {straight:?}"
    );
    let claim = Settlement {
        event: HistoryEvent::CompensationClaimed,
        reason: Some("customer asked"),
        ..settlement(Status::Compensating, Some(Status::Completed))
    };
    let claimed = ledger.settle(&k, &claim, NOW + 10).unwrap();
    assert_eq!(claimed.status, Status::Compensating);
    let confirm = Settlement {
        event: HistoryEvent::CompensationApplied,
        ..settlement(Status::Compensated, Some(Status::Compensating))
    };
    let after = ledger.settle(&k, &confirm, NOW + 11).unwrap();
    assert_eq!(after.status, Status::Compensated);
    assert_eq!(after.result.as_deref(), Some("credit-1"), "the original result is kept");
    let history = ledger.history(&k).unwrap();
    assert_eq!(
        events(&history)[history.len() - 2..],
        ["compensation_claimed", "compensation_applied"]
    );
    assert_eq!(history[history.len() - 2].reason.as_deref(), Some("customer asked"));

    let again = ledger
        .settle(
            &k,
            &settlement(Status::Compensated, Some(Status::Compensated)),
            NOW + 20,
        )
        .unwrap_err();
    assert!(matches!(again, SettleError::AlreadySettled { .. }), "{again:?}");
    let back = ledger
        .settle(&k, &settlement(Status::Completed, Some(Status::Compensated)), NOW + 20)
        .unwrap_err();
    assert!(matches!(back, SettleError::AlreadySettled { .. }), "{back:?}");
}

#[test]
fn settling_an_unknown_key_is_not_found() {
    let ledger = &mut Ledger::open_memory().unwrap();
    let k = key("ghost");
    let error = ledger.settle(&k, &settlement(Status::Failed, None), NOW).unwrap_err();
    assert!(
        matches!(&error, SettleError::NotFound(missing) if missing == &k),
        "{error:?}"
    );
    assert!(error.to_string().contains(k.as_str()));
    assert!(ledger.all_records().unwrap().is_empty());
    assert!(ledger.all_history().unwrap().is_empty());
}

#[test]
fn two_concurrent_settlements_of_one_indeterminate_call_exactly_one_wins() {
    let (_dir, path, mut ledger) = file_ledger();
    for round in 0..6 {
        let k = key(&format!("race-{round}"));
        put_in_status(&mut ledger, &k, SideEffect::External, Status::Indeterminate, NOW);
        // Odd rounds settle with compare-and-set on the seen status, even rounds with `None`.
        let expected = if round % 2 == 0 {
            None
        } else {
            Some(Status::Indeterminate)
        };
        let choices = [
            Settlement {
                actor: "op-ana",
                ..settlement(Status::Failed, expected)
            },
            Settlement {
                actor: "op-ben",
                result: Some("credit-3"),
                ..settlement(Status::Completed, expected)
            },
        ];
        let barrier = Barrier::new(choices.len());
        let results: Vec<(Status, Result<ExecutionRecord, SettleError>)> = thread::scope(|scope| {
            let handles: Vec<_> = choices
                .iter()
                .map(|choice| {
                    let mut connection = Ledger::open(&path).unwrap();
                    let (barrier, k) = (&barrier, &k);
                    scope.spawn(move || {
                        barrier.wait();
                        (choice.to, connection.settle(k, choice, NOW + 100))
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|handle| handle.join().expect("settling thread"))
                .collect()
        });
        let winners: Vec<Status> = results
            .iter()
            .filter(|(_, result)| result.is_ok())
            .map(|(to, _)| *to)
            .collect();
        assert_eq!(
            winners.len(),
            1,
            "round {round}: exactly one settlement wins: {results:?}"
        );
        let winner = winners[0];
        for (_, result) in &results {
            match result {
                Ok(record) => assert_eq!(record.status, winner),
                Err(SettleError::Stale { current, .. } | SettleError::AlreadySettled { current, .. }) => {
                    assert_eq!(current.status, winner, "round {round}: the loser is told what won")
                }
                Err(other) => panic!("round {round}: unexpected error {other:?}"),
            }
        }
        assert_eq!(record_of(&ledger, &k).status, winner);
        let settlements = ledger
            .history(&k)
            .unwrap()
            .into_iter()
            .filter(|entry| entry.event.name() == "resolved")
            .count();
        assert_eq!(settlements, 1, "round {round}: one settlement in the history");
    }
}

// ---------------------------------------------------------------------------
// 12. History is append-only, even to raw SQL
// ---------------------------------------------------------------------------

#[test]
fn history_is_append_only_even_to_raw_sql() {
    let (_dir, path, mut ledger) = file_ledger();
    let k = key("c1");
    reserve(&mut ledger, &request(&k, ARGS), NOW);
    ledger
        .record_outcome(&k, Outcome::Completed, Some("credit-1"), "worker-1", 0, NOW + 1)
        .unwrap();
    let before = ledger.history(&k).unwrap();

    let raw = Connection::open(&path).unwrap();
    for statement in [
        "UPDATE tool_execution_history SET actor = 'mallory'",
        "UPDATE tool_execution_history SET to_status = 'failed' WHERE event = 'completed'",
        "DELETE FROM tool_execution_history",
        "DELETE FROM tool_execution_history WHERE event = 'reserved'",
    ] {
        let error = raw.execute(statement, []).expect_err(statement);
        assert!(
            error.to_string().contains("tool_execution_history is append-only"),
            "{statement}: {error}"
        );
    }
    // Appending is still allowed (that is how the ledger writes it).
    raw.execute(
        "INSERT INTO tool_execution_history (idempotency_key, at_ms, actor, event) VALUES (?1, ?2, 'sqlite3', 'guard_held')",
        rusqlite::params![k.as_str(), NOW as i64 + 2],
    )
    .unwrap();
    let after = ledger.history(&k).unwrap();
    assert_eq!(&after[..before.len()], &before[..], "earlier entries unchanged");
    assert_eq!(after.len(), before.len() + 1);
    // An event this build does not know is a bad row that names it, never a guess.
    raw.execute(
        "INSERT INTO tool_execution_history (idempotency_key, at_ms, actor, event) VALUES (?1, ?2, 'sqlite3', 'moved_money')",
        rusqlite::params![k.as_str(), NOW as i64 + 3],
    )
    .unwrap();
    let error = ledger.history(&k).unwrap_err();
    assert!(
        matches!(&error, LedgerError::BadRow { detail, .. } if detail.contains("`moved_money`")),
        "{error}"
    );
}

/// Version 1 (before `compensating` and the run history) as it was written.
const SCHEMA_VERSION_1: &str = r#"
CREATE TABLE twice_meta (name TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE tool_executions (
    idempotency_key TEXT PRIMARY KEY, tenant TEXT NOT NULL, run_id TEXT NOT NULL, tool_call_id TEXT NOT NULL,
    tool TEXT NOT NULL,
    side_effect TEXT NOT NULL CHECK (side_effect IN ('read','write','external','destructive')),
    arguments TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('started','completed','failed','indeterminate','compensated')),
    attempts INTEGER NOT NULL CHECK (attempts >= 0), result TEXT, owner TEXT NOT NULL,
    created_at_ms INTEGER NOT NULL, updated_at_ms INTEGER NOT NULL, lease_expires_at_ms INTEGER
);
CREATE INDEX tool_executions_by_status ON tool_executions (tenant, status, updated_at_ms);
CREATE TABLE tool_execution_history (
    id INTEGER PRIMARY KEY AUTOINCREMENT, idempotency_key TEXT NOT NULL, at_ms INTEGER NOT NULL,
    actor TEXT NOT NULL, event TEXT NOT NULL, from_status TEXT, to_status TEXT, reason TEXT, detail TEXT
);
CREATE INDEX tool_execution_history_by_key ON tool_execution_history (idempotency_key, id);
CREATE TRIGGER tool_execution_history_no_update BEFORE UPDATE ON tool_execution_history
BEGIN SELECT RAISE(ABORT, 'tool_execution_history is append-only'); END;
CREATE TRIGGER tool_execution_history_no_delete BEFORE DELETE ON tool_execution_history
BEGIN SELECT RAISE(ABORT, 'tool_execution_history is append-only'); END;
CREATE TABLE run_checkpoints (
    run_id TEXT PRIMARY KEY, version INTEGER NOT NULL CHECK (version >= 1), status TEXT NOT NULL,
    state TEXT NOT NULL, saved_by TEXT NOT NULL, updated_at_ms INTEGER NOT NULL
);
INSERT INTO twice_meta (name, value) VALUES ('schema', 'twice-ledger'), ('schema_version', '1');
INSERT INTO tool_executions VALUES ('run-1:c1', 'default', 'run-1', 'c1', 'issue_credit', 'external',
    '{"amount_cents":2500}', 'compensated', 1, '{"applied":{}}', 'w1', 10, 30, NULL);
INSERT INTO tool_execution_history (idempotency_key, at_ms, actor, event, from_status, to_status)
    VALUES ('run-1:c1', 10, 'w1', 'reserved', NULL, 'started'),
           ('run-1:c1', 20, 'ada', 'compensated', 'completed', 'compensated');
INSERT INTO run_checkpoints VALUES ('r1', 3, 'completed', '{}', 'w1', 30);
"#;

#[test]
fn a_version_1_ledger_is_migrated_when_opened_and_keeps_every_row() {
    let directory = tempfile::tempdir().unwrap();
    let path = directory.path().join("old.sqlite");
    Connection::open(&path)
        .unwrap()
        .execute_batch(SCHEMA_VERSION_1)
        .unwrap();
    let mut ledger = Ledger::open(&path).expect("a version 1 ledger opens");
    let record = record_of(&ledger, &key("c1"));
    assert_eq!(
        (record.status, record.attempts, record.owner.as_str()),
        (Status::Compensated, 1, "w1")
    );
    let history = ledger.history(&key("c1")).unwrap();
    assert_eq!(
        events(&history),
        ["reserved", "compensated"],
        "the old history reads back"
    );
    assert_eq!(ledger.checkpoints().unwrap().len(), 1);
    let version: String = Connection::open(&path)
        .unwrap()
        .query_row(
            "SELECT value FROM twice_meta WHERE name = 'schema_version'",
            [],
            |row| row.get(0),
        )
        .unwrap();
    assert_eq!(version, SCHEMA_VERSION.to_string());
    // What version 2 adds works on the migrated file.
    let k = key("c2");
    put_in_status(&mut ledger, &k, SideEffect::External, Status::Compensating, NOW);
    ledger
        .append_run_event(
            "r1",
            "w1",
            twice_runtime::ledger::RunEvent::WaitsForPerson,
            "checked",
            NOW,
        )
        .unwrap();
    assert_eq!(ledger.run_history(Some("r1")).unwrap().len(), 1);
    // And opening it again migrates nothing twice.
    drop(ledger);
    let again = Ledger::open(&path).unwrap();
    assert_eq!(record_of(&again, &k).status, Status::Compensating);
}

// ---------------------------------------------------------------------------
// 13. Checkpoints
// ---------------------------------------------------------------------------

#[test]
fn checkpoint_saves_are_compare_and_set_on_the_version() {
    let ledger = &mut Ledger::open_memory().unwrap();
    assert_eq!(ledger.load_checkpoint("run-1").unwrap(), None);

    assert_eq!(
        ledger
            .save_checkpoint("run-1", "running", "{\"step\":1}", "worker-1", Some(0), NOW)
            .unwrap(),
        SaveOutcome::Saved { version: 1 }
    );
    assert_eq!(
        ledger
            .save_checkpoint("run-1", "running", "{\"step\":1}", "worker-2", Some(0), NOW + 1)
            .unwrap(),
        SaveOutcome::Stale { expected: 0, found: 1 }
    );
    let loaded = ledger.load_checkpoint("run-1").unwrap().unwrap();
    assert_eq!(loaded.saved_by, "worker-1", "a stale save writes nothing");
    assert_eq!(loaded.version, 1);

    assert_eq!(
        ledger
            .save_checkpoint("run-1", "running", "{\"step\":2}", "worker-1", Some(1), NOW + 2)
            .unwrap(),
        SaveOutcome::Saved { version: 2 }
    );
    assert_eq!(
        ledger
            .save_checkpoint("run-1", "running", "{\"step\":9}", "worker-2", Some(5), NOW + 3)
            .unwrap(),
        SaveOutcome::Stale { expected: 5, found: 2 }
    );
    // Without an expected version (guard off) the save overwrites blindly.
    assert_eq!(
        ledger
            .save_checkpoint("run-1", "done", "{\"step\":3}", "worker-2", None, NOW + 4)
            .unwrap(),
        SaveOutcome::Saved { version: 3 }
    );
    // A blind save on a new run starts at version 1.
    assert_eq!(
        ledger
            .save_checkpoint("run-2", "running", "{}", "worker-3", None, NOW + 5)
            .unwrap(),
        SaveOutcome::Saved { version: 1 }
    );

    let loaded = ledger.load_checkpoint("run-1").unwrap().unwrap();
    assert_eq!(
        loaded,
        Checkpoint::new("run-1", 3, "done", "{\"step\":3}", "worker-2", NOW + 4)
    );
    let all = ledger.checkpoints().unwrap();
    assert_eq!(
        all.iter()
            .map(|checkpoint| (checkpoint.run_id.as_str(), checkpoint.version))
            .collect::<Vec<_>>(),
        [("run-1", 3), ("run-2", 1)]
    );
    assert_eq!(all[0], loaded);
}

#[test]
fn checkpoint_round_trips_through_a_file_and_another_connection() {
    let (_dir, path, mut ledger) = file_ledger();
    let state = r#"{"messages":["héllo","wörld ✔"],"quote":"\"x\"","newline":"a\nb"}"#;
    assert_eq!(
        ledger
            .save_checkpoint("run-é", "awaiting_reconciliation", state, "worker-1", Some(0), NOW)
            .unwrap(),
        SaveOutcome::Saved { version: 1 }
    );
    drop(ledger);
    let mut reopened = Ledger::open(&path).unwrap();
    let loaded = reopened.load_checkpoint("run-é").unwrap().unwrap();
    assert_eq!(loaded.state, state);
    assert_eq!(loaded.status, "awaiting_reconciliation");
    assert_eq!(loaded.updated_at_ms, NOW);
    assert_eq!(
        reopened
            .save_checkpoint("run-é", "running", state, "worker-2", Some(1), NOW + 1)
            .unwrap(),
        SaveOutcome::Saved { version: 2 }
    );
}

// ---------------------------------------------------------------------------
// 14. Bad files: clear errors naming the file, never panics, files untouched
// ---------------------------------------------------------------------------

#[test]
fn a_text_file_is_not_a_ledger_and_is_left_unchanged() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("notes.txt");
    std::fs::write(&path, b"hello").unwrap();
    let error = Ledger::open(&path).unwrap_err();
    assert!(matches!(error, LedgerError::NotALedger { .. }), "{error:?}");
    assert_names(&error, &path);
    assert_same_bytes(&path, b"hello", "the file is unchanged");
    assert_no_side_files(dir.path(), &path);
}

#[test]
fn a_larger_non_sqlite_file_is_not_a_ledger_and_is_left_unchanged() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("picture.bin");
    let bytes = garbage(20_000);
    std::fs::write(&path, &bytes).unwrap();
    let error = Ledger::open(&path).unwrap_err();
    assert!(matches!(error, LedgerError::NotALedger { .. }), "{error:?}");
    assert_names(&error, &path);
    assert_same_bytes(&path, &bytes, "the file is unchanged");
}

#[test]
fn a_sqlite_database_of_another_application_is_not_a_ledger_and_is_left_unchanged() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("other.sqlite");
    {
        let raw = Connection::open(&path).unwrap();
        raw.execute_batch(
            "CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT); INSERT INTO customers (name) VALUES ('ana');",
        )
        .unwrap();
    }
    let bytes = std::fs::read(&path).unwrap();
    let error = Ledger::open(&path).unwrap_err();
    match &error {
        LedgerError::NotALedger { detail, .. } => assert!(detail.contains("customers"), "{detail}"),
        other => panic!("expected NotALedger, got {other:?}"),
    }
    assert_names(&error, &path);
    assert_same_bytes(&path, &bytes, "the other application's file is unchanged");
}

#[test]
fn a_sqlite_database_of_another_application_is_not_a_ledger_naming_its_tables() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("other.sqlite");
    Connection::open(&path)
        .unwrap()
        .execute_batch("CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT);")
        .unwrap();
    let error = Ledger::open(&path).unwrap_err();
    match &error {
        LedgerError::NotALedger { detail, .. } => assert!(detail.contains("customers"), "{detail}"),
        other => panic!("expected NotALedger, got {other:?}"),
    }
    assert_names(&error, &path);
    let tables: Vec<String> = Connection::open(&path)
        .unwrap()
        .prepare("SELECT name FROM sqlite_master WHERE type = 'table'")
        .unwrap()
        .query_map([], |row| row.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(
        tables,
        ["customers"],
        "no ledger table was added to the other application's database"
    );
}

#[test]
fn a_ledger_of_another_schema_version_is_refused() {
    let (_dir, path, ledger) = file_ledger();
    drop(ledger);
    {
        let raw = Connection::open(&path).unwrap();
        let changed = raw
            .execute("UPDATE twice_meta SET value = '99' WHERE name = 'schema_version'", [])
            .unwrap();
        assert_eq!(changed, 1);
    }
    let error = Ledger::open(&path).unwrap_err();
    match &error {
        LedgerError::SchemaVersion { found, expected, .. } => {
            assert_eq!(found, "99");
            assert_eq!(*expected, SCHEMA_VERSION);
        }
        other => panic!("expected SchemaVersion, got {other:?}"),
    }
    assert_names(&error, &path);
    assert!(error.to_string().contains('2'));
}

#[test]
fn a_twice_meta_naming_another_schema_is_not_a_ledger() {
    let (_dir, path, ledger) = file_ledger();
    drop(ledger);
    Connection::open(&path)
        .unwrap()
        .execute(
            "UPDATE twice_meta SET value = 'something-else' WHERE name = 'schema'",
            [],
        )
        .unwrap();
    let error = Ledger::open(&path).unwrap_err();
    assert!(matches!(error, LedgerError::NotALedger { .. }), "{error:?}");
    assert_names(&error, &path);
}

/// Writes a ledger with a few hundred rows, closes it, and overwrites `range` of the file with garbage.
fn garbled_ledger(range: impl Fn(usize) -> std::ops::Range<usize>) -> (TempDir, PathBuf, Vec<u8>) {
    let (dir, path, mut ledger) = file_ledger();
    for index in 0..200 {
        let k = key(&format!("c{index}"));
        reserve(&mut ledger, &request(&k, ARGS), NOW + index);
        ledger
            .record_outcome(&k, Outcome::Completed, Some("credit"), "worker-1", 0, NOW + index)
            .unwrap();
    }
    drop(ledger); // the last connection checkpoints the WAL into the file
    let mut bytes = std::fs::read(&path).unwrap();
    let range = range(bytes.len());
    assert!(
        range.end <= bytes.len(),
        "the ledger is large enough to garble {range:?}"
    );
    bytes[range.clone()].copy_from_slice(&garbage(range.len()));
    std::fs::write(&path, &bytes).unwrap();
    (dir, path, bytes)
}

/// Opening may not notice a garbled page; the first read of the data must.
fn open_garbled(path: &Path) -> LedgerError {
    match Ledger::open(path) {
        Ok(opened) => match opened.all_records() {
            Ok(records) => panic!("a garbled ledger opened and read as {} records", records.len()),
            Err(error) => error,
        },
        Err(error) => error,
    }
}

#[test]
fn a_ledger_garbled_in_its_first_page_is_corrupt_naming_it_and_left_unchanged() {
    let (_dir, path, bytes) = garbled_ledger(|_| 100..4_000);
    let error = open_garbled(&path);
    assert!(
        matches!(error, LedgerError::Corrupt { .. } | LedgerError::NotALedger { .. }),
        "{error:?}"
    );
    assert_names(&error, &path);
    assert_same_bytes(&path, &bytes, "the corrupt file was left untouched");
}

#[test]
fn a_ledger_garbled_in_a_middle_page_is_corrupt_naming_it_and_left_unchanged() {
    let (_dir, path, bytes) = garbled_ledger(|length| {
        let page = length / 4_096 / 2;
        page * 4_096..page * 4_096 + 4_096
    });
    let error = open_garbled(&path);
    assert!(
        matches!(error, LedgerError::Corrupt { .. } | LedgerError::NotALedger { .. }),
        "{error:?}"
    );
    assert_names(&error, &path);
    assert_same_bytes(&path, &bytes, "the corrupt file was left untouched");
}

#[test]
fn a_path_in_a_missing_directory_is_an_open_error_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("no-such-directory").join("ledger.sqlite");
    let error = Ledger::open(&path).unwrap_err();
    assert!(matches!(error, LedgerError::Open { .. }), "{error:?}");
    assert_names(&error, &path);
}

#[test]
fn a_directory_is_an_open_error_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let error = Ledger::open(dir.path()).unwrap_err();
    assert!(
        matches!(error, LedgerError::Open { .. } | LedgerError::Failed { .. }),
        "{error:?}"
    );
    assert_names(&error, dir.path());
}

#[test]
fn an_empty_file_becomes_a_new_ledger() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("empty.sqlite");
    std::fs::write(&path, b"").unwrap();
    let mut ledger = Ledger::open(&path).unwrap();
    assert_eq!(ledger.path(), Some(path.as_path()));
    assert_eq!(ledger.location(), path.display().to_string());
    assert_eq!(
        reserve(&mut ledger, &request(&key("c1"), ARGS), NOW).0,
        ReservationAction::RunNew
    );
}

#[cfg(feature = "simulation")] // the game's naive ledger operations
#[test]
fn a_file_ledger_is_in_wal_mode_so_a_player_can_read_it_while_a_reservation_is_open() {
    let (_dir, path, mut ledger) = file_ledger();
    let k = key("committed");
    reserve(&mut ledger, &request(&k, ARGS), NOW);
    let mut writer = ledger.connect_again().unwrap();
    writer.reserve_uncommitted(&request(&key("open"), ARGS), NOW).unwrap();

    let player = Connection::open(&path).unwrap();
    let mode: String = player.query_row("PRAGMA journal_mode", [], |row| row.get(0)).unwrap();
    assert_eq!(mode, "wal");
    let keys: Vec<String> = player
        .prepare("SELECT idempotency_key FROM tool_executions")
        .unwrap()
        .query_map([], |row| row.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(
        keys,
        [k.as_str()],
        "the reader sees committed rows only, without waiting"
    );
    let meta: Vec<(String, String)> = player
        .prepare("SELECT name, value FROM twice_meta ORDER BY name")
        .unwrap()
        .query_map([], |row| Ok((row.get(0)?, row.get(1)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(
        meta,
        [
            ("schema".to_owned(), "twice-ledger".to_owned()),
            ("schema_version".to_owned(), SCHEMA_VERSION.to_string())
        ]
    );
    drop(writer);
}

#[test]
// The test, as a driver would, reads the wall clock to see that the ledger waited for the lock
// before it gave up; the runtime itself never does (clippy.toml).
#[allow(clippy::disallowed_methods)]
fn a_ledger_locked_by_another_process_is_reported_as_locked() {
    let (_dir, path, mut ledger) = file_ledger();
    let holder = Connection::open(&path).unwrap();
    holder.execute_batch("BEGIN EXCLUSIVE").unwrap();

    let k = key("c1");
    let started = std::time::Instant::now();
    let error = ledger.reserve(&request(&k, ARGS), NOW).unwrap_err();
    let waited = started.elapsed();
    assert!(matches!(error, LedgerError::Locked { .. }), "{error:?}");
    assert_names(&error, &path);
    assert!(error.to_string().contains(&BUSY_TIMEOUT_MS.to_string()), "{error}");
    assert!(
        waited.as_millis() >= u128::from(BUSY_TIMEOUT_MS) / 2,
        "it waited for the lock first ({waited:?})"
    );

    // Once the other process lets go, the same connection works.
    holder.execute_batch("ROLLBACK").unwrap();
    assert_eq!(
        reserve(&mut ledger, &request(&k, ARGS), NOW).0,
        ReservationAction::RunNew
    );
}

#[cfg(feature = "simulation")] // the game's naive ledger operations
#[test]
fn errors_of_a_memory_ledger_name_it() {
    let keeper = Ledger::open_memory().unwrap();
    let mut a = keeper.connect_again().unwrap();
    let k = key("c1");
    // A reservation that was never committed: the next begin on the same connection fails.
    a.reserve_uncommitted(&request(&k, ARGS), NOW).unwrap();
    let error = a.reserve(&request(&key("c2"), ARGS), NOW).unwrap_err();
    assert!(error.to_string().contains(&keeper.location()), "{error}");
    assert!(keeper.location().starts_with("memory ledger"));
}

// ---------------------------------------------------------------------------
// 15. Listings
// ---------------------------------------------------------------------------

#[test]
fn unknown_records_page_by_cursor_longest_waiting_first() {
    let ledger = &mut Ledger::open_memory().unwrap();
    // Five indeterminate calls, made in an order unrelated to their keys, plus noise.
    let waits = [("c-e", 10), ("c-a", 20), ("c-d", 30), ("c-b", 40), ("c-c", 50)];
    for (call, at) in waits {
        put_in_status(
            ledger,
            &key(call),
            SideEffect::External,
            Status::Indeterminate,
            NOW + at,
        );
    }
    put_in_status(ledger, &key("done"), SideEffect::External, Status::Completed, NOW);
    put_in_status(ledger, &key("running"), SideEffect::External, Status::Started, NOW);
    let other_tenant = key("other-tenant");
    reserve(ledger, &request(&other_tenant, ARGS).with_tenant("globex"), NOW);
    ledger
        .record_outcome(&other_tenant, Outcome::Indeterminate, None, "worker-1", 0, NOW)
        .unwrap();

    let mut seen = Vec::new();
    let mut cursor: Option<(u64, String)> = None;
    let mut pages = 0;
    loop {
        let page = ledger
            .records(
                RecordFilter::default()
                    .with_tenant(TENANT)
                    .with_status(Status::Indeterminate)
                    .with_after(cursor.as_ref().map(|(ms, key)| (*ms, key.as_str())))
                    .with_limit(2),
            )
            .unwrap();
        if page.is_empty() {
            break;
        }
        pages += 1;
        assert!(page.len() <= 2);
        assert!(
            page.iter()
                .all(|record| record.status == Status::Indeterminate && record.tenant == TENANT)
        );
        let last = page.last().unwrap();
        cursor = Some((last.updated_at_ms, last.key.as_str().to_owned()));
        seen.extend(page.into_iter().map(|record| record.key.as_str().to_owned()));
        assert!(pages <= 5, "paging does not end: {seen:?}");
    }
    let expected: Vec<String> = waits.iter().map(|(call, _)| key(call).as_str().to_owned()).collect();
    assert_eq!(seen, expected, "all five, each once, longest-waiting first");
    assert_eq!(pages, 3);
}

#[test]
fn records_with_equal_times_page_by_key_without_skipping_or_repeating() {
    let ledger = &mut Ledger::open_memory().unwrap();
    for call in ["c5", "c3", "c1", "c4", "c2"] {
        put_in_status(ledger, &key(call), SideEffect::External, Status::Started, NOW);
    }
    let first = ledger
        .records(RecordFilter::default().with_status(Status::Started).with_limit(2))
        .unwrap();
    let second = ledger
        .records(
            RecordFilter::default()
                .with_status(Status::Started)
                .with_after((NOW, first[1].key.as_str()))
                .with_limit(2),
        )
        .unwrap();
    let third = ledger
        .records(
            RecordFilter::default()
                .with_status(Status::Started)
                .with_after((NOW, second[1].key.as_str()))
                .with_limit(2),
        )
        .unwrap();
    let keys: Vec<&str> = first
        .iter()
        .chain(&second)
        .chain(&third)
        .map(|record| record.tool_call_id.as_str())
        .collect();
    assert_eq!(keys, ["c1", "c2", "c3", "c4", "c5"]);
}

#[test]
fn records_never_return_more_than_the_listing_maximum() {
    let ledger = &mut Ledger::open_memory().unwrap();
    let total = LIST_LIMIT_MAX as u64 + 5;
    for index in 0..total {
        reserve(ledger, &request(&key(&format!("c{index:05}")), ARGS), NOW + index);
    }
    let page = ledger.records(RecordFilter::default().with_limit(u32::MAX)).unwrap();
    assert_eq!(page.len(), LIST_LIMIT_MAX as usize);
    let last = page.last().unwrap();
    let rest = ledger
        .records(
            RecordFilter::default()
                .with_after((last.updated_at_ms, last.key.as_str()))
                .with_limit(u32::MAX),
        )
        .unwrap();
    assert_eq!(rest.len(), 5);
    assert_eq!(
        ledger.all_records().unwrap().len() as u64,
        total,
        "all_records is not limited"
    );
}

#[test]
fn records_filter_by_tenant_and_status_and_clamp_the_limit() {
    let ledger = &mut Ledger::open_memory().unwrap();
    put_in_status(ledger, &key("a"), SideEffect::External, Status::Completed, NOW);
    put_in_status(ledger, &key("b"), SideEffect::External, Status::Failed, NOW + 1);
    let k = key("c");
    reserve(ledger, &request(&k, ARGS).with_tenant("globex"), NOW + 2);

    assert_eq!(ledger.records(RecordFilter::default()).unwrap().len(), 3);
    assert_eq!(
        ledger
            .records(RecordFilter::default().with_tenant(TENANT))
            .unwrap()
            .len(),
        2
    );
    assert_eq!(
        ledger.records(RecordFilter::default().with_tenant("globex")).unwrap()[0].key,
        k
    );
    assert_eq!(
        ledger.records(RecordFilter::default().with_tenant("nobody")).unwrap(),
        []
    );
    let failed = ledger
        .records(RecordFilter::default().with_status(Status::Failed))
        .unwrap();
    assert_eq!(failed.len(), 1);
    assert_eq!(failed[0].tool_call_id, "b");
    assert_eq!(
        ledger.records(RecordFilter::default().with_limit(0)).unwrap().len(),
        1,
        "a limit of 0 is clamped to 1"
    );
    assert_eq!(ledger.all_records().unwrap().len(), 3);
}

// ---------------------------------------------------------------------------
// Opening without creating, guarded commits, cursors at the end of time
// ---------------------------------------------------------------------------

#[test]
fn open_existing_never_creates_a_file_or_a_schema() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing.sqlite");
    assert!(matches!(
        Ledger::open_existing(&missing),
        Err(LedgerError::Missing { .. })
    ));
    assert!(!missing.exists(), "no file is created");
    let empty = dir.path().join("empty.sqlite");
    std::fs::write(&empty, b"").unwrap();
    assert!(matches!(
        Ledger::open_existing(&empty),
        Err(LedgerError::NotALedger { .. })
    ));
    assert_eq!(std::fs::read(&empty).unwrap(), b"", "an empty file is left empty");
    let (_dir, path, mut ledger) = file_ledger();
    ledger.reserve(&request(&key("c1"), ARGS), NOW).unwrap();
    let again = Ledger::open_existing(&path).unwrap();
    assert_eq!(again.all_records().unwrap().len(), 1);
}

#[test]
fn a_commit_the_guard_refuses_is_rolled_back() {
    let (_dir, path, mut ledger) = file_ledger();
    ledger.reserve(&request(&key("c1"), ARGS), NOW).unwrap();
    let mut guarded = Ledger::open_existing(&path).unwrap();
    let allowed = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let flag = std::sync::Arc::clone(&allowed);
    guarded
        .refuse_commits_unless(move || flag.load(std::sync::atomic::Ordering::SeqCst))
        .unwrap();
    let settlement = Settlement {
        to: Status::Failed,
        expected: None,
        expected_attempts: None,
        actor: "ada",
        event: HistoryEvent::Resolved,
        reason: Some("not in billing"),
        result: None,
        detail: None,
        settles_started: true,
    };
    assert!(guarded.settle(&key("c1"), &settlement, NOW + 1).is_err());
    assert_eq!(ledger.record(&key("c1")).unwrap().unwrap().status, Status::Started);
    assert_eq!(ledger.history(&key("c1")).unwrap().len(), 1, "no history line either");
    allowed.store(true, std::sync::atomic::Ordering::SeqCst);
    guarded.settle(&key("c1"), &settlement, NOW + 2).unwrap();
    assert_eq!(ledger.record(&key("c1")).unwrap().unwrap().status, Status::Failed);
    assert!(Ledger::open_memory_store().refuse_commits_unless(|| true).is_err());
}

#[test]
fn nothing_comes_after_a_cursor_beyond_the_stored_time_range() {
    for mut ledger in [Ledger::open_memory().unwrap(), Ledger::open_memory_store()] {
        ledger.reserve(&request(&key("c1"), ARGS), NOW).unwrap();
        for after_ms in [i64::MAX as u64 + 1, u64::MAX] {
            let after = ledger
                .records(RecordFilter::default().with_after((after_ms, "")).with_limit(10))
                .unwrap();
            assert!(
                after.is_empty(),
                "{after_ms}: {} records, the listing restarted",
                after.len()
            );
        }
        assert_eq!(
            ledger
                .records(RecordFilter::default().with_after((NOW - 1, "")).with_limit(10))
                .unwrap()
                .len(),
            1
        );
    }
}

/// The operator API's listing reads an index for every combination of its filters: no scan of
/// the table, no temporary B-tree to sort it, so a page costs the same at any size (measured
/// in `benches/listing.rs`).
#[test]
fn every_listing_reads_an_index_never_scans_or_sorts_the_table() {
    let (_dir, _path, ledger) = file_ledger();
    for tenant in [false, true] {
        for status in [false, true] {
            let plan = twice_runtime::ledger::listing_plan(&ledger, tenant, status).unwrap();
            let text = plan.join(" | ");
            assert!(
                plan.iter()
                    .any(|step| step.contains("USING INDEX") || step.contains("USING COVERING INDEX")),
                "tenant {tenant}, status {status}: {text}"
            );
            assert!(
                !plan
                    .iter()
                    .any(|step| step.starts_with("SCAN tool_executions") && !step.contains("INDEX")),
                "tenant {tenant}, status {status}: a scan: {text}"
            );
            assert!(
                !text.contains("TEMP B-TREE"),
                "tenant {tenant}, status {status}: a sort: {text}"
            );
        }
    }
}
