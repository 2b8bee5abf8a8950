//! The executor reports what it did, typed; the simulator's timeline makes the words.

use twice_sim::ledger::{Ledger, Reservation, ReserveRequest};
use twice_sim::runtime::executor::Report;
use twice_sim::runtime::key::IdempotencyKey;
use twice_sim::runtime::tool::SideEffect;
use twice_sim::simulator::report_words;

fn reserve(ledger: &mut Ledger, key: &IdempotencyKey, owner: &str, now_ms: u64) -> Reservation {
    let request = ReserveRequest::new(
        key,
        "r1",
        "c1",
        "send_email",
        SideEffect::External,
        r#"{"to":"ada@example.com"}"#,
        owner,
    )
    .with_tenant("default");
    ledger.reserve(&request, now_ms).expect("the ledger answers")
}

#[test]
fn a_second_reserver_reads_who_owns_the_call_and_that_the_tool_is_not_called() {
    let mut ledger = Ledger::open_memory_store();
    let key = IdempotencyKey::parse("r1:c1").unwrap();
    reserve(&mut ledger, &key, "w1", 120);
    let report = Report::Reserved {
        key: key.clone(),
        reservation: reserve(&mut ledger, &key, "w2", 300),
        atomic: true,
    };
    let words = report_words("r1", &report);
    assert!(
        words.starts_with("reserves r1:c1: r1:c1 is in progress, owned by w1 since 120 ms"),
        "{words}"
    );
    assert!(words.ends_with(" — the tool is not called"), "{words}");
}

#[test]
fn a_first_reservation_names_what_the_ledger_held_and_the_action() {
    let mut ledger = Ledger::open_memory_store();
    let key = IdempotencyKey::parse("r1:c1").unwrap();
    let report = Report::Reserved {
        key: key.clone(),
        reservation: reserve(&mut ledger, &key, "w1", 120),
        atomic: true,
    };
    assert!(
        report_words("r1", &report).starts_with("reserves r1:c1: the ledger held no record → "),
        "{}",
        report_words("r1", &report)
    );
    let loaded = Report::Loaded {
        version: 0,
        state: None,
        failed_recoveries: None,
    };
    assert_eq!(
        report_words("r1", &loaded),
        "no checkpoint: the run starts from the beginning"
    );
}
