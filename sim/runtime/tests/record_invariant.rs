//! The record invariant, both halves: a write of a record with an empty name (tenant, run,
//! call, tool, owner) is a bug the ledger asserts against, in every store; a stored row with
//! one, written by something else, is refused as a `BadRow` when read back.

use twice_runtime::key::IdempotencyKey;
use twice_runtime::ledger::{Ledger, LedgerError, ReserveRequest};
use twice_runtime::tool::SideEffect;

const NOW: u64 = 1_700_000_000_000;

fn request(key: &IdempotencyKey) -> ReserveRequest<'_> {
    ReserveRequest {
        key,
        tenant: "acme",
        run_id: "run-1",
        tool_call_id: "c1",
        tool: "issue_credit",
        side_effect: SideEffect::External,
        arguments: "{}",
        owner: "worker-1",
        lease_ms: None,
        checkpoint_version: None,
    }
}

#[test]
#[should_panic(expected = "with an empty owner")]
fn a_write_with_an_empty_owner_is_a_bug_in_sqlite() {
    let key = IdempotencyKey::per_call("run-1", "c1").unwrap();
    let mut ledger = Ledger::open_memory().unwrap();
    let _ = ledger.reserve(
        &ReserveRequest {
            owner: "",
            ..request(&key)
        },
        NOW,
    );
}

#[test]
#[should_panic(expected = "with an empty tenant")]
fn a_write_with_an_empty_tenant_is_a_bug_in_the_memory_store() {
    let key = IdempotencyKey::per_call("run-1", "c1").unwrap();
    let mut ledger = Ledger::open_memory_store();
    let _ = ledger.reserve(
        &ReserveRequest {
            tenant: "",
            ..request(&key)
        },
        NOW,
    );
}

#[test]
fn a_stored_row_with_an_empty_name_is_refused_when_read() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ledger.sqlite");
    let key = IdempotencyKey::per_call("run-1", "c1").unwrap();
    let mut ledger = Ledger::open(&path).unwrap();
    ledger.reserve(&request(&key), NOW).unwrap();
    assert_eq!(ledger.record(&key).unwrap().unwrap().owner, "worker-1");
    // Something other than this runtime empties the owner behind its back.
    let connection = rusqlite::Connection::open(&path).unwrap();
    connection
        .execute(
            "UPDATE tool_executions SET owner = '' WHERE idempotency_key = ?1",
            [key.as_str()],
        )
        .unwrap();
    drop(connection);
    match Ledger::open_existing(&path).unwrap().record(&key) {
        Err(LedgerError::BadRow { key: row, detail, .. }) => {
            assert_eq!(row, "run-1:c1");
            assert_eq!(detail, "a record with an empty owner");
        }
        other => panic!("an emptied owner read back as {other:?}"),
    }
}
