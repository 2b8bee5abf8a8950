//! Recovery asks the model again from the last checkpoint. A worker that reserved (and maybe
//! sent) a call after that checkpoint and then died leaves the call `started`; if the model,
//! asked again, decides to end the run instead of making the call, nothing would ever meet that
//! key again. The run does not end over it: it waits for a person, naming the call, and an
//! operator finds it among the `started` calls, settles it, and the next start ends the run.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Arc, Mutex};

use twice_runtime::execution::{Agent, AgentError, Ending, Exit, SystemClock, drive_run, moved_on, next_call};
use twice_runtime::executor::Executor;
use twice_runtime::ledger::{Ledger, RecordFilter, RunEvent};
use twice_runtime::operator::{ResolveRequest, resolve};
use twice_runtime::run::{Decision, RunState};
use twice_runtime::toolbox::Toolbox;
use twice_runtime::worker::{WaitReason, Worker, WorkerSetup};
use twice_runtime::{IdempotencyKey, Status};

const RUN: &str = "welcome-ada";

mod one_email;
use one_email::{SendEmail, to_ada};

/// The first time: send the email. Asked again after the crash: decides the run is done.
struct Model {
    sends: bool,
}

impl Agent for Model {
    fn decide(&mut self, state: &RunState) -> Result<(Decision, RunState), AgentError> {
        if self.sends && state.last_told.is_none() {
            return next_call(state, "send_email", to_ada()?).ok_or_else(|| "no more calls".into());
        }
        Ok((Decision::Done, moved_on(state).ok_or("no more items")?))
    }
}

fn drive(ledger: &Ledger, worker_id: &str, model: Model, dies: bool, outbox: &Arc<Mutex<Vec<String>>>) -> Ending {
    let mut tools = Toolbox::new().with(SendEmail {
        outbox: Arc::clone(outbox),
        dies_after_send: dies,
    });
    let setup = WorkerSetup::new(worker_id, RUN, tools.declarations());
    let mut executor = Executor::new(ledger.connect_again().expect("connects"), &setup);
    let mut worker = Worker::new(setup).expect("a usable setup");
    let mut model = model;
    drive_run(&mut worker, &mut executor, &mut model, &mut tools, &mut SystemClock).expect("drives")
}

#[test]
fn a_call_a_recovered_run_leaves_started_makes_it_wait_for_a_person_until_settled() {
    let mut ledger = Ledger::open_memory_store();
    let outbox = Arc::new(Mutex::new(Vec::new()));
    let died = catch_unwind(AssertUnwindSafe(|| {
        drive(&ledger, "worker-1", Model { sends: true }, true, &outbox)
    }));
    assert!(died.is_err(), "the first process dies after the send");
    let key = IdempotencyKey::per_call(RUN, "c1").expect("a key");
    assert_eq!(
        ledger.record(&key).expect("reads").expect("reserved").status,
        Status::Started
    );

    // A fresh worker: the model, asked again, decides the run is over.
    let ending = drive(&ledger, "worker-2", Model { sends: false }, false, &outbox);
    assert_eq!(
        ending,
        Ending::WaitsForPerson(WaitReason::AbandonedCall {
            run_id: RUN.into(),
            key: key.clone(),
            status: Status::Started
        })
    );
    let checkpoint = ledger.load_checkpoint(RUN).expect("reads");
    assert!(
        checkpoint.is_none_or(|saved| !saved.run_state().expect("parses").status.is_terminal()),
        "the run is not saved as over"
    );
    let history = ledger.run_history(Some(RUN)).expect("reads");
    let waits = history
        .iter()
        .find(|entry| entry.event == RunEvent::WaitsForPerson)
        .expect("the wait is in the run's history");
    let words = waits.detail.as_deref().unwrap_or_default();
    assert!(words.contains("welcome-ada:c1") && words.contains("started"), "{words}");

    // The operator lists the started calls, finds it, and settles it as sent.
    let started = ledger
        .records(RecordFilter::default().with_status(Status::Started).with_limit(10))
        .expect("lists");
    assert_eq!(started.iter().map(|record| &record.key).collect::<Vec<_>>(), vec![&key]);
    let mut settle = ResolveRequest::new(
        Status::Completed,
        "the provider shows the email sent",
        "ops@example.com",
    );
    settle.acknowledge_in_flight = true;
    resolve(&mut ledger, &key, &settle, 5).expect("settled");

    // The next start ends the run as the model decides; the email was sent once.
    assert_eq!(
        drive(&ledger, "worker-3", Model { sends: false }, false, &outbox),
        Ending::Exited(Exit::Completed)
    );
    let saved = ledger.load_checkpoint(RUN).expect("reads").expect("saved");
    assert_eq!(saved.run_state().expect("parses").status.name(), "completed");
    assert_eq!(outbox.lock().expect("outbox").len(), 1);
}
