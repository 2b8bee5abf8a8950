//! What a ledger commit writes: the WAL pages of a full call on a new file (fewer pages, less
//! to checksum, write and sync per commit), and ledgers made with the earlier layout (a rowid
//! `tool_executions`, `AUTOINCREMENT` histories) still read and written alike.

use std::path::Path;

use rusqlite::Connection;
use twice_runtime::key::IdempotencyKey;
use twice_runtime::ledger::{FoldedReservation, Ledger, RecordFilter, Recorded, ReserveRequest};
use twice_runtime::rules::Outcome;
use twice_runtime::tool::SideEffect;

const ARGUMENTS: &str = r#"{"account":"acct_ada","amount_cents":2500,"memo":"Late delivery credit"}"#;
const RESULT: &str = r#"{"credit_id":"cr_1","status":"applied"}"#;

/// One full call as the worker makes it: the reservation with attempt 1's fence folded in,
/// then the completed outcome (two commits).
fn full_call(ledger: &mut Ledger, item: u64) -> IdempotencyKey {
    let key = IdempotencyKey::per_call("bench", &format!("g{item}")).unwrap();
    let request = ReserveRequest::new(
        &key,
        "bench",
        "c",
        "issue_credit",
        SideEffect::External,
        ARGUMENTS,
        "bench",
    )
    .with_tenant("bench");
    let FoldedReservation { attempt_begun, .. } = ledger.reserve_and_begin(&request, 1, 1_000 + item).unwrap();
    assert_eq!(attempt_begun, Some(1), "{key}");
    let recorded = ledger
        .record_outcome(&key, Outcome::Completed, Some(RESULT), "bench", 1, 1_000 + item)
        .unwrap();
    assert!(matches!(recorded, Recorded::Recorded(_)), "{key}: {recorded:?}");
    key
}

/// Frames in the WAL so far: it only grows until a checkpoint (at 1,000 frames).
fn wal_frames(path: &Path) -> u64 {
    let page_size: u64 = Connection::open(path)
        .unwrap()
        .query_row("PRAGMA page_size", [], |row| row.get(0))
        .unwrap();
    let mut wal = path.as_os_str().to_owned();
    wal.push("-wal");
    (std::fs::metadata(&wal).unwrap().len() - 32) / (page_size + 24)
}

/// A commit of a full call wrote 8.3 WAL pages on average with the rowid table (its key's
/// index a b-tree of its own) and `AUTOINCREMENT` (`sqlite_sequence` rewritten on every history
/// line); without them 7.4: the record, its four listing indexes, the history line and its index.
#[test]
fn a_full_calls_commit_writes_at_most_seven_and_a_half_wal_pages() {
    let folder = tempfile::tempdir().unwrap();
    let path = folder.path().join("ledger.sqlite");
    let mut ledger = Ledger::open(&path).unwrap();
    for item in 0..5 {
        full_call(&mut ledger, item);
    }
    let before = wal_frames(&path);
    let calls = 30;
    for item in 5..5 + calls {
        full_call(&mut ledger, item);
    }
    let per_commit = (wal_frames(&path) - before) as f64 / (2 * calls) as f64;
    assert!(per_commit <= 7.5, "{per_commit:.2} WAL pages per commit");
    let tables: Vec<String> = Connection::open(&path)
        .unwrap()
        .prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
        .unwrap()
        .query_map([], |row| row.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert!(!tables.iter().any(|table| table == "sqlite_sequence"), "{tables:?}");
}

/// The layout ledgers were made with before (schema version 2 all the same).
const EARLIER_LAYOUT: &str = r#"
CREATE TABLE twice_meta (name TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE tool_execution_history (
    id INTEGER PRIMARY KEY AUTOINCREMENT, idempotency_key TEXT NOT NULL, at_ms INTEGER NOT NULL,
    actor TEXT NOT NULL, event TEXT NOT NULL, from_status TEXT, to_status TEXT, reason TEXT, detail TEXT
);
CREATE INDEX tool_execution_history_by_key ON tool_execution_history (idempotency_key, id);
CREATE TABLE run_checkpoints (
    run_id TEXT PRIMARY KEY, version INTEGER NOT NULL CHECK (version >= 1), status TEXT NOT NULL,
    state TEXT NOT NULL, saved_by TEXT NOT NULL, updated_at_ms INTEGER NOT NULL
);
CREATE TABLE tool_executions (
    idempotency_key TEXT PRIMARY KEY, tenant TEXT NOT NULL, run_id TEXT NOT NULL, tool_call_id TEXT NOT NULL,
    tool TEXT NOT NULL,
    side_effect TEXT NOT NULL CHECK (side_effect IN ('read','write','external','destructive')),
    arguments TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('started','completed','failed','indeterminate','compensating','compensated')),
    attempts INTEGER NOT NULL CHECK (attempts >= 0), result TEXT, owner TEXT NOT NULL,
    created_at_ms INTEGER NOT NULL, updated_at_ms INTEGER NOT NULL, lease_expires_at_ms INTEGER
);
CREATE INDEX tool_executions_by_tenant_status ON tool_executions (tenant, status, updated_at_ms, idempotency_key);
CREATE INDEX tool_executions_by_tenant ON tool_executions (tenant, updated_at_ms, idempotency_key);
CREATE INDEX tool_executions_by_status ON tool_executions (status, updated_at_ms, idempotency_key);
CREATE INDEX tool_executions_by_update ON tool_executions (updated_at_ms, idempotency_key);
CREATE TABLE run_history (
    id INTEGER PRIMARY KEY AUTOINCREMENT, run_id TEXT NOT NULL, at_ms INTEGER NOT NULL, actor TEXT NOT NULL,
    event TEXT NOT NULL, detail TEXT
);
CREATE INDEX run_history_by_run ON run_history (run_id, id);
INSERT INTO twice_meta (name, value) VALUES ('schema', 'twice-ledger'), ('schema_version', '2');
"#;

#[test]
fn a_ledger_made_with_the_earlier_layout_is_read_and_written_alike() {
    let folder = tempfile::tempdir().unwrap();
    let earlier = folder.path().join("earlier.sqlite");
    Connection::open(&earlier)
        .unwrap()
        .execute_batch(EARLIER_LAYOUT)
        .unwrap();
    let now = folder.path().join("now.sqlite");
    let mut ledgers = [Ledger::open(&earlier).unwrap(), Ledger::open(&now).unwrap()];
    for ledger in &mut ledgers {
        for item in 0..3 {
            full_call(ledger, item);
        }
    }
    let [earlier_ledger, now_ledger] = &ledgers;
    assert_eq!(earlier_ledger.all_records().unwrap(), now_ledger.all_records().unwrap());
    assert_eq!(earlier_ledger.all_history().unwrap(), now_ledger.all_history().unwrap());
    assert_eq!(
        earlier_ledger.records(RecordFilter::default().with_limit(10)).unwrap(),
        now_ledger.records(RecordFilter::default().with_limit(10)).unwrap()
    );
    let ids: Vec<u64> = now_ledger.all_history().unwrap().iter().map(|line| line.id).collect();
    assert_eq!(
        ids,
        (1..=9).collect::<Vec<u64>>(),
        "history ids count up from 1 as before"
    );
}
