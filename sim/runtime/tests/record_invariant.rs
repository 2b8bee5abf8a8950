//! The record invariant, both halves: a write of a record with an empty name (tenant, run,
//! call, tool, owner) is refused as a `BadRequest`, in every store; a stored row with one,
//! written by something else, is refused as a `BadRow` when read back.

use twice_runtime::key::IdempotencyKey;
use twice_runtime::ledger::{Ledger, LedgerError, ReserveRequest};
use twice_runtime::tool::SideEffect;

const NOW: u64 = 1_700_000_000_000;

fn request(key: &IdempotencyKey) -> ReserveRequest<'_> {
    ReserveRequest::new(
        key,
        "run-1",
        "c1",
        "issue_credit",
        SideEffect::External,
        "{}",
        "worker-1",
    )
    .with_tenant("acme")
}

/// A write of a record with an empty name is refused (`BadRequest`, naming it) and nothing is
/// written, in every store: no panic whatever a caller of the public API hands the ledger.
#[test]
fn a_write_with_an_empty_name_is_refused_and_writes_nothing_in_every_store() {
    let key = IdempotencyKey::per_call("run-1", "c1").unwrap();
    for mut ledger in [Ledger::open_memory().unwrap(), Ledger::open_memory_store()] {
        for (request, named) in [
            (request(&key).with_owner(""), "an empty owner"),
            (request(&key).with_tenant(""), "an empty tenant"),
            (request(&key).with_tool(""), "an empty tool name"),
        ] {
            match ledger.reserve(&request, NOW) {
                Err(LedgerError::BadRequest { detail, .. }) => assert!(detail.contains(named), "{detail}"),
                other => panic!("{named}: {other:?}"),
            }
            match ledger.reserve_and_begin(&request, 1, NOW) {
                Err(LedgerError::BadRequest { detail, .. }) => assert!(detail.contains(named), "{detail}"),
                other => panic!("{named}: {other:?}"),
            }
        }
        assert_eq!(ledger.record(&key).unwrap(), None);
        assert!(ledger.all_history().unwrap().is_empty());
    }
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
