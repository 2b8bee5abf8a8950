//! Item 6 of issue 23: a second reserver of a `started` key is told "in progress, owned by
//! w1 since t" — typed, and distinct from a replayed result and from an unknown outcome.

use twice_runtime::executor::Report;
use twice_runtime::key::IdempotencyKey;
use twice_runtime::ledger::{Ledger, Reservation, ReserveRequest};
use twice_runtime::progress::InProgress;
use twice_runtime::rules::{Outcome, ReservationAction};
use twice_runtime::tool::SideEffect;

const ARGUMENTS: &str = r#"{"to":"ada@example.com"}"#;

fn reserve(ledger: &mut Ledger, key: &IdempotencyKey, owner: &str, now_ms: u64) -> Reservation {
    let request = ReserveRequest::new(key, "r1", "c1", "send_email", SideEffect::External, ARGUMENTS, owner)
        .with_tenant("default");
    ledger.reserve(&request, now_ms).expect("the ledger answers")
}

fn stores() -> Vec<(&'static str, Ledger, Option<tempfile::TempDir>)> {
    let folder = tempfile::tempdir().expect("a temporary folder");
    let sqlite = Ledger::open(folder.path().join("ledger.sqlite")).expect("SQLite opens");
    vec![
        ("memory", Ledger::open_memory_store(), None),
        ("sqlite", sqlite, Some(folder)),
    ]
}

#[test]
fn a_second_reserver_of_a_started_key_is_told_who_owns_it_and_since_when() {
    for (store, mut ledger, _folder) in stores() {
        let key = IdempotencyKey::parse("r1:c1").unwrap();
        let first = reserve(&mut ledger, &key, "w1", 120);
        assert_eq!(
            InProgress::of_reservation(&first),
            None,
            "{store}: the first reserver runs it"
        );
        let second = reserve(&mut ledger, &key, "w2", 300);
        let busy = InProgress::of_reservation(&second).unwrap_or_else(|| panic!("{store}: {second:?}"));
        assert_eq!(
            (busy.owner.as_str(), busy.since_ms, busy.attempts),
            ("w1", 120, 0),
            "{store}"
        );
        let report = Report::Reserved {
            key: key.clone(),
            reservation: second,
            atomic: true,
        };
        assert_eq!(report.in_progress(), Some(busy.clone()));
        // The words are the application's (the simulator's timeline makes them from this).
        assert!(
            busy.to_string().contains("in progress, owned by w1 since 120 ms"),
            "{store}: {busy}"
        );

        // Completed: a replayed result, not "in progress".
        ledger.begin_attempt(&key, 1, "w1", 350).expect("the attempt begins");
        ledger
            .record_outcome(&key, Outcome::Completed, Some("message 1"), "w1", 1, 400)
            .expect("recorded");
        let replayed = reserve(&mut ledger, &key, "w2", 500);
        assert!(
            matches!(
                replayed,
                Reservation::Decided {
                    action: ReservationAction::ReturnRecorded,
                    ..
                }
            ),
            "{store}: {replayed:?}"
        );
        assert_eq!(InProgress::of_reservation(&replayed), None, "{store}");
    }
}

#[test]
fn an_indeterminate_call_is_unknown_not_in_progress() {
    for (store, mut ledger, _folder) in stores() {
        let key = IdempotencyKey::parse("r1:c1").unwrap();
        reserve(&mut ledger, &key, "w1", 120);
        ledger.begin_attempt(&key, 1, "w1", 150).expect("the attempt begins");
        ledger
            .record_outcome(&key, Outcome::Indeterminate, None, "w1", 1, 200)
            .expect("recorded");
        let again = reserve(&mut ledger, &key, "w2", 300);
        assert!(
            matches!(
                again,
                Reservation::Decided {
                    action: ReservationAction::Unknown,
                    ..
                }
            ),
            "{store}: {again:?}"
        );
        assert_eq!(
            InProgress::of_reservation(&again),
            None,
            "{store}: nobody is running it"
        );
    }
}
