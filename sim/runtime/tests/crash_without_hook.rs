//! A worker dies after its request left, and its tool has no reconcile hook. The seed: "a
//! restarted worker that finds a started record with no outcome treats it as indeterminate".
//! The worker that recovers the run records it so when nobody is left to send it or hear its
//! answer — it is the same worker id restarted, or it replaces a worker whose process is known
//! to have ended — and the operator finds it among the `indeterminate` calls and settles it
//! without acknowledging a request in flight. Any other worker's `started` call is left as it
//! is: that worker may be alive, and its own outcome still lands; the operator's refusal then
//! says what the run is doing and what settles the call.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Arc, Mutex};

use twice_runtime::execution::Ending;
use twice_runtime::ledger::{HistoryEvent, Ledger, RecordFilter, Recorded, ReserveRequest};
use twice_runtime::operator::{OperatorError, ResolveRequest, resolve};
use twice_runtime::rules::Outcome;
use twice_runtime::tool::SideEffect;
use twice_runtime::toolbox::Toolbox;
use twice_runtime::worker::WorkerSetup;
use twice_runtime::{IdempotencyKey, Status};

mod one_email;
use one_email::{OneEmail, SendEmail, to_ada};

const RUN: &str = "welcome-ada";

fn drive(ledger: &Ledger, setup: WorkerSetup, dies: bool, outbox: &Arc<Mutex<Vec<String>>>) -> Ending {
    let mut tools = Toolbox::new().with(SendEmail {
        outbox: Arc::clone(outbox),
        dies_after_send: dies,
    });
    one_email::drive(ledger, setup, &mut tools, &mut OneEmail::default())
}

fn setup(worker_id: &str) -> WorkerSetup {
    WorkerSetup::new(worker_id, RUN, Vec::new())
}

fn key() -> IdempotencyKey {
    IdempotencyKey::per_call(RUN, "c1").expect("a key")
}

/// Worker `worker-1` sends the email and dies before it records the answer.
fn crashed(outbox: &Arc<Mutex<Vec<String>>>) -> Ledger {
    let ledger = Ledger::open_memory_store();
    let died = catch_unwind(AssertUnwindSafe(|| drive(&ledger, setup("worker-1"), true, outbox)));
    assert!(died.is_err(), "the first process dies after the send");
    let record = ledger.record(&key()).expect("reads").expect("reserved");
    assert_eq!((record.status, record.attempts), (Status::Started, 1));
    ledger
}

/// The recovered run parks on the call, which is `indeterminate` with a line saying why;
/// the operator finds it, settles it without acknowledging anything, and the next start
/// finishes the run. The email was sent once.
fn settled_by_an_operator_after(recovering: WorkerSetup) {
    let outbox = Arc::new(Mutex::new(Vec::new()));
    let mut ledger = crashed(&outbox);
    let recoverer = recovering.worker_id.clone();
    assert_eq!(drive(&ledger, recovering, false, &outbox), Ending::Parked(key()));
    let record = ledger.record(&key()).expect("reads").expect("there");
    assert_eq!(record.status, Status::Indeterminate);
    assert_eq!(
        record.owner.as_str(),
        "worker-1",
        "the owner still says whose request may have left"
    );
    let history = ledger.history(&key()).expect("reads");
    let line = history
        .iter()
        .find(|entry| entry.event == HistoryEvent::RecoveredUnknown)
        .expect("the recovery's line");
    assert_eq!(line.actor, recoverer.as_str());
    assert_eq!(
        (line.from_status, line.to_status),
        (Some(Status::Started), Some(Status::Indeterminate))
    );

    let unknown = ledger
        .records(RecordFilter::default().with_status(Status::Indeterminate))
        .expect("lists");
    assert_eq!(
        unknown.iter().map(|record| &record.key).collect::<Vec<_>>(),
        vec![&key()]
    );
    let request = ResolveRequest::new(
        Status::Completed,
        "the provider shows the email sent",
        "ops@example.com",
    )
    .with_expected_status(Status::Indeterminate);
    resolve(&mut ledger, &key(), &request, 5).expect("settled without acknowledging anything in flight");

    drive(&ledger, setup("worker-3"), false, &outbox);
    let saved = ledger.load_checkpoint(RUN).expect("reads").expect("saved");
    assert_eq!(saved.run_state().expect("parses").status.name(), "completed");
    assert_eq!(outbox.lock().expect("outbox").len(), 1, "sent once");
}

#[test]
fn the_same_worker_id_restarted_records_its_own_started_call_indeterminate() {
    settled_by_an_operator_after(setup("worker-1"));
}

#[test]
fn a_worker_replacing_the_dead_one_records_its_started_call_indeterminate() {
    settled_by_an_operator_after(setup("worker-2").replacing("worker-1"));
}

#[test]
fn another_worker_leaves_the_call_started_and_the_refusal_says_what_settles_it() {
    let outbox = Arc::new(Mutex::new(Vec::new()));
    let mut ledger = crashed(&outbox);
    assert_eq!(drive(&ledger, setup("worker-2"), false, &outbox), Ending::Parked(key()));
    assert_eq!(
        ledger.record(&key()).expect("reads").expect("there").status,
        Status::Started,
        "worker-1 may be alive: nothing is taken from it"
    );
    let request = ResolveRequest::new(
        Status::Completed,
        "the provider shows the email sent",
        "ops@example.com",
    );
    let refused = resolve(&mut ledger, &key(), &request, 5).expect_err("in flight as far as the ledger knows");
    let OperatorError::InFlight { parked_by, .. } = &refused else {
        panic!("refused as in flight, not {refused:?}");
    };
    assert_eq!(parked_by.as_ref().map(|worker| worker.as_str()), Some("worker-2"));
    let words = refused.to_string();
    for needed in [
        "worker-2",
        "worker-1",
        "acknowledge_in_flight",
        "WorkerSetup::replacing",
    ] {
        assert!(words.contains(needed), "{needed:?} missing from: {words}");
    }
    resolve(&mut ledger, &key(), &request.acknowledging_in_flight(), 6).expect("settled on purpose");
}

/// A live twin: worker-1 holds the call and its request is out when worker-2 recovers the run.
/// Worker-2 (not told worker-1 is gone) leaves the record alone, and worker-1's own outcome
/// lands as the call's truth.
#[test]
fn a_live_holders_outcome_still_lands_after_another_worker_parks() {
    let mut ledger = Ledger::open_memory_store();
    let key = key();
    let arguments = to_ada().expect("arguments").canonical();
    let request = ReserveRequest::new(
        &key,
        RUN,
        "c1",
        "send_email",
        SideEffect::External,
        &arguments,
        "worker-1",
    );
    ledger.reserve(&request, 1).expect("reserves");
    ledger.begin_attempt(&key, 1, "worker-1", 2).expect("fences");

    let outbox = Arc::new(Mutex::new(Vec::new()));
    assert_eq!(
        drive(&ledger, setup("worker-2"), false, &outbox),
        Ending::Parked(key.clone())
    );
    assert_eq!(
        ledger.record(&key).expect("reads").expect("there").status,
        Status::Started
    );

    let recorded = ledger
        .record_outcome(&key, Outcome::Completed, Some("\"sent\""), "worker-1", 1, 9)
        .expect("records");
    assert!(matches!(recorded, Recorded::Recorded(record) if record.status == Status::Completed));
}

#[test]
fn a_replaced_worker_id_is_checked_like_any_name() {
    let refused = WorkerSetup::new("worker-2", RUN, Vec::new()).replacing(" ").check();
    assert!(refused.is_err_and(|error| error.to_string().contains("replaced worker id")));
}
