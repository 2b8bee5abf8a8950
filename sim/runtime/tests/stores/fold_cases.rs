//! The folded send fence ([`Ledger::reserve_and_begin`]) held to the same answers on every
//! store: included by the runtime's tests (SQLite file, SQLite memory, memory store, a commit
//! group) and by the PostgreSQL store's (`#[path]`), each giving a fresh ledger as two
//! connections — the worker's and another's (a second worker, an operator).

#![allow(dead_code)]

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Barrier};

use twice_runtime::key::IdempotencyKey;
use twice_runtime::ledger::{
    AttemptStart, FoldedReservation, HistoryEvent, Ledger, LedgerError, Recorded, Reservation, ReserveRequest,
    RunEvent, SettleError, Settlement,
};
use twice_runtime::rules::{Outcome, ReservationAction, Status};
use twice_runtime::tool::SideEffect;

pub const NOW_MS: u64 = 1_700_000_000_000;
pub const ARGUMENTS: &str = r#"{"account":"acct_ada","amount_cents":2500}"#;
/// Keys the concurrent case folds while an operator tries to settle each one in between.
pub const RACED_KEYS: usize = 60;

pub fn key(call: &str) -> IdempotencyKey {
    IdempotencyKey::per_call("r1", call).unwrap()
}

pub fn request<'a>(key: &'a IdempotencyKey, owner: &'a str) -> ReserveRequest<'a> {
    ReserveRequest::new(
        key,
        "r1",
        key.as_str().rsplit(':').next().unwrap(),
        "issue_credit",
        SideEffect::External,
        ARGUMENTS,
        owner,
    )
    .with_tenant("default")
}

/// The operator's "nothing left": failed, only if no attempt ever passed the send fence.
pub fn nothing_left() -> Settlement<'static> {
    Settlement {
        to: Status::Failed,
        expected: Some(Status::Started),
        expected_attempts: Some(0),
        actor: "operator",
        event: HistoryEvent::NothingToCompensate,
        reason: Some("nothing in billing under the key"),
        result: None,
        detail: None,
        settles_started: true,
    }
}

fn action(folded: &FoldedReservation) -> ReservationAction {
    match &folded.reservation {
        Reservation::Decided { action, .. } => *action,
        other => panic!("not decided: {other:?}"),
    }
}

/// A new key: reserved and attempt 1 counted in one go, the two history lines side by side.
pub fn a_new_key_is_reserved_and_its_first_attempt_counted_together(worker: &mut Ledger) {
    let key = key("c1");
    let folded = worker.reserve_and_begin(&request(&key, "w1"), 1, NOW_MS).unwrap();
    assert_eq!(action(&folded), ReservationAction::RunNew);
    assert_eq!(folded.attempt_begun, Some(1));
    let record = worker.record(&key).unwrap().unwrap();
    assert_eq!(
        (record.status, record.attempts, record.owner.as_str()),
        (Status::Started, 1, "w1")
    );
    let Reservation::Decided { record: answered, .. } = &folded.reservation else {
        unreachable!()
    };
    assert_eq!(answered, &record, "the answer is the record as the attempt left it");
    let events: Vec<HistoryEvent> = worker.history(&key).unwrap().iter().map(|line| line.event).collect();
    assert_eq!(events, [HistoryEvent::Reserved, HistoryEvent::Attempt]);
    // The outcome of that attempt is the worker's own.
    let recorded = worker
        .record_outcome(&key, Outcome::Completed, Some("cr_1"), "w1", 1, NOW_MS + 1)
        .unwrap();
    assert!(matches!(recorded, Recorded::Recorded(_)), "{recorded:?}");
}

/// What does not run is not attempted, and nothing is written: a decided record, another
/// owner's `started` call, other arguments, a stale checkpoint.
pub fn what_does_not_run_is_neither_reserved_nor_attempted(worker: &mut Ledger, other: &mut Ledger) {
    let decided = key("decided");
    worker.reserve_and_begin(&request(&decided, "w1"), 1, NOW_MS).unwrap();
    worker
        .record_outcome(&decided, Outcome::Completed, Some("cr_1"), "w1", 1, NOW_MS)
        .unwrap();
    let taken = key("taken");
    other.reserve_and_begin(&request(&taken, "w2"), 1, NOW_MS).unwrap();
    let history_before = worker.all_history().unwrap().len();

    let again = worker
        .reserve_and_begin(&request(&decided, "w1"), 1, NOW_MS + 5)
        .unwrap();
    assert_eq!(action(&again), ReservationAction::ReturnRecorded);
    assert_eq!(again.attempt_begun, None);

    let refused = worker.reserve_and_begin(&request(&taken, "w1"), 1, NOW_MS + 5).unwrap();
    assert_eq!(action(&refused), ReservationAction::Unknown);
    assert_eq!(refused.attempt_begun, None);
    let record = worker.record(&taken).unwrap().unwrap();
    assert_eq!(
        (record.owner.as_str(), record.attempts),
        ("w2", 1),
        "another's call is left as it was"
    );

    let mismatched = request(&decided, "w1").with_arguments(r#"{"account":"acct_bob","amount_cents":9900}"#);
    let folded = worker.reserve_and_begin(&mismatched, 1, NOW_MS + 5).unwrap();
    assert!(matches!(folded.reservation, Reservation::ArgumentsMismatch { .. }));
    assert_eq!(folded.attempt_begun, None);

    let fresh = key("fenced");
    let fenced = request(&fresh, "w1").with_checkpoint_version(Some(0));
    other
        .save_checkpoint("r1", "running", "{}", "w2", Some(0), NOW_MS)
        .unwrap();
    let folded = worker.reserve_and_begin(&fenced, 1, NOW_MS + 5).unwrap();
    assert_eq!(folded.reservation, Reservation::Fenced { expected: 0, found: 1 });
    assert_eq!(folded.attempt_begun, None);
    assert_eq!(worker.record(&fresh).unwrap(), None);

    // Nothing that does not run writes a line, but for the refusal of other arguments, which
    // is never silent: one line in the call's history, one in its run's.
    let history = worker.all_history().unwrap();
    assert_eq!(history.len(), history_before + 1, "{history:?}");
    assert_eq!(history[history_before].event, HistoryEvent::ArgumentsRefused);
    let run_history = worker.run_history(Some("r1")).unwrap();
    assert_eq!(
        run_history.iter().map(|line| line.event).collect::<Vec<_>>(),
        [RunEvent::ArgumentsRefused]
    );
}

/// A failed call runs again: reserved again and its attempt counted together.
pub fn a_failed_call_runs_again_with_its_attempt_counted(worker: &mut Ledger) {
    let key = key("retry");
    worker.reserve_and_begin(&request(&key, "w1"), 1, NOW_MS).unwrap();
    worker
        .record_outcome(&key, Outcome::Failed, Some("not attempted"), "w1", 1, NOW_MS)
        .unwrap();
    let again = worker.reserve_and_begin(&request(&key, "w9"), 1, NOW_MS + 1).unwrap();
    assert_eq!(action(&again), ReservationAction::RunAgain);
    assert_eq!(again.attempt_begun, Some(1));
    let record = worker.record(&key).unwrap().unwrap();
    assert_eq!(
        (record.status, record.owner.as_str(), record.attempts),
        (Status::Started, "w9", 1)
    );
}

/// Split, an operator's "nothing left" can land between the reservation and the fence (and
/// the fence then refuses the send); folded, there is no between: it is refused, because an
/// attempt is already counted.
pub fn an_operator_cannot_decide_between_a_folded_reservation_and_its_attempt(
    worker: &mut Ledger,
    operator: &mut Ledger,
) {
    let split = key("split");
    worker.reserve(&request(&split, "w1"), NOW_MS).unwrap();
    operator.settle(&split, &nothing_left(), NOW_MS + 1).unwrap();
    let fence = worker.begin_attempt(&split, 1, "w1", NOW_MS + 2).unwrap();
    assert!(matches!(fence, AttemptStart::Refused(Some(_))), "{fence:?}");

    let folded = key("folded");
    worker.reserve_and_begin(&request(&folded, "w1"), 1, NOW_MS).unwrap();
    let refused = operator.settle(&folded, &nothing_left(), NOW_MS + 1);
    assert!(matches!(refused, Err(SettleError::AttemptNoted { .. })), "{refused:?}");
}

/// Two connections on two threads at once: one folds reservations of [`RACED_KEYS`] keys,
/// the other tries the operator's "nothing left" on every key again and again meanwhile. It
/// must never succeed: every record it can see already has its attempt counted.
pub fn under_contention_no_decision_falls_between(mut worker: Ledger, mut operator: Ledger) {
    let done = Arc::new(AtomicBool::new(false));
    let start = Arc::new(Barrier::new(2));
    let settler = {
        let (done, start) = (Arc::clone(&done), Arc::clone(&start));
        std::thread::spawn(move || {
            start.wait();
            let mut settled = Vec::new();
            let mut tries = 0_u64;
            loop {
                let last_pass = done.load(Ordering::Acquire);
                for number in 0..RACED_KEYS {
                    let key = key(&format!("k{number}"));
                    tries += 1;
                    match operator.settle(&key, &nothing_left(), NOW_MS) {
                        Ok(record) => settled.push(record),
                        Err(SettleError::NotFound(_) | SettleError::AttemptNoted { .. }) => {}
                        Err(SettleError::Ledger(LedgerError::Locked { .. })) => {}
                        Err(error) => panic!("{key}: {error}"),
                    }
                }
                if last_pass {
                    break;
                }
            }
            (settled, tries)
        })
    };
    start.wait();
    for number in 0..RACED_KEYS {
        let key = key(&format!("k{number}"));
        let folded = worker.reserve_and_begin(&request(&key, "w1"), 1, NOW_MS).unwrap();
        assert_eq!(folded.attempt_begun, Some(1), "{key}");
        // Give the operator its turn between reservations.
        std::thread::yield_now();
    }
    done.store(true, Ordering::Release);
    let (settled, tries) = settler.join().unwrap();
    assert!(tries > 0);
    assert!(
        settled.is_empty(),
        "decisions landed between a reservation and its attempt: {settled:?}"
    );
    for number in 0..RACED_KEYS {
        let record = worker.record(&key(&format!("k{number}"))).unwrap().unwrap();
        assert_eq!((record.status, record.attempts), (Status::Started, 1));
    }
}
