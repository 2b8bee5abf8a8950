//! The runtime's `agent_loop` example on PostgreSQL: its two tools (`send_email` external,
//! `delete_record` destructive) each take effect once, and a lost answer is reconciled, not
//! resent — on a plain PostgreSQL ledger and on a PostgreSQL commit group, as on the memory
//! store and SQLite in the example's own test. Skipped (and said so) without
//! `TWICE_POSTGRES_URL`; required in CI.

use twice_ledger_postgres::testing::TestDatabase;
use twice_runtime::Status;
use twice_runtime::ledger::GroupSettings;
use twice_runtime::run::RunStatus;

#[path = "../../runtime/examples/agent_loop.rs"]
#[allow(dead_code)]
mod agent_loop;

#[test]
fn the_agent_loop_takes_each_effect_once_on_postgres() {
    let Some(database) = TestDatabase::create("agent_loop_on_postgres") else {
        return;
    };
    let plain = twice_ledger_postgres::open(&database.fresh_schema()).expect("a PostgreSQL ledger");
    let grouped = twice_ledger_postgres::open_grouped(&database.fresh_schema(), GroupSettings::default())
        .expect("a PostgreSQL commit group");
    for (name, ledger) in [("plain", plain), ("commit group", grouped)] {
        let (records, status, world) = agent_loop::run_on(ledger, true, &mut Vec::new());
        assert_eq!(status, RunStatus::Completed, "{name}: {records:?}");
        assert_eq!(
            records,
            vec![
                ("send_email".to_owned(), Status::Completed),
                ("delete_record".to_owned(), Status::Completed)
            ],
            "{name}"
        );
        assert_eq!(
            world.emails_delivered, 1,
            "{name}: the email w1 sent before it died is reconciled, not resent"
        );
        assert_eq!(
            world.records.get("rec_42"),
            Some(&false),
            "{name}: the record is deleted"
        );
    }
}
