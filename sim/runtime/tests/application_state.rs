//! The application's slot in the checkpoint: what an agent keeps in `RunState::application`
//! is saved with the run and handed back after a crash, so a recovered run resumes with the
//! application's own state as well as the runtime's (and the email is still sent once).

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};
use serde_json::json;
use twice_runtime::execution::{Agent, AgentError, Ending, Exit, SystemClock, drive_run, next_call};
use twice_runtime::executor::Executor;
use twice_runtime::ledger::Ledger;
use twice_runtime::run::{Arguments, Decision, RunState, Told};
use twice_runtime::tool::SideEffect;
use twice_runtime::toolbox::{CallContext, Tool, ToolFailure, Toolbox};
use twice_runtime::worker::{Worker, WorkerSetup};

const RUN: &str = "welcome-ada";

#[derive(Serialize, Deserialize)]
struct Email {
    to: String,
}

#[derive(Serialize)]
struct Sent {
    message_id: String,
}

/// Sends into a shared outbox, so the test sees every email however many workers run.
struct SendEmail(Arc<Mutex<Vec<String>>>);

impl Tool for SendEmail {
    type Args = Email;
    type Output = Sent;
    const NAME: &'static str = "send_email";
    const SIDE_EFFECT: SideEffect = SideEffect::External;

    async fn call(&self, email: Email, _context: CallContext<'_>) -> Result<Sent, ToolFailure> {
        let mut outbox = self
            .0
            .lock()
            .map_err(|_| ToolFailure::NotSent("outbox poisoned".into()))?;
        outbox.push(email.to);
        Ok(Sent {
            message_id: format!("m-{}", outbox.len()),
        })
    }
}

/// Item 0: send the welcome email, keeping a draft in the application's state. Item 1: the
/// first process dies as it asks the model (`dies`); a later one finds the draft and the
/// "sent" mark it made after the email went, and finishes.
struct Mailer {
    dies: bool,
    /// The application's state as this process was handed it when item 1 began.
    resumed_with: Option<serde_json::Value>,
}

impl Agent for Mailer {
    fn decide(&mut self, state: &RunState) -> Result<(Decision, RunState), AgentError> {
        match (state.item, &state.last_told) {
            (0, None) => {
                let email = Arguments::from_typed(&Email {
                    to: "ada@example.com".into(),
                })?;
                let (decision, mut next) = next_call(state, "send_email", email).ok_or("no more calls")?;
                next.application = json!({"draft": "Welcome, Ada", "sent": false});
                Ok((decision, next))
            }
            (0, Some(Told::Result { .. })) => {
                // Told the email went: mark it, and move on to item 1.
                let mut next = state.clone();
                next.application["sent"] = json!(true);
                next.item = 1;
                next.calls_for_item = 0;
                next.last_told = None;
                let follow_up = Arguments::from_typed(&Email {
                    to: "ops@example.com".into(),
                })?;
                let (decision, mut next) = next_call(&next, "send_email", follow_up).ok_or("no more calls")?;
                next.application["follow_up"] = json!("queued");
                Ok((decision, next))
            }
            (1, Some(Told::Result { .. })) if self.dies => {
                // The process is killed here: nothing after this point happens in it.
                panic!("SIGKILL while asking the model")
            }
            (1, Some(Told::Result { .. })) => {
                self.resumed_with = Some(state.application.clone());
                Ok((Decision::Done, state.clone()))
            }
            (item, told) => Err(format!("unexpected item {item} after {told:?}").into()),
        }
    }
}

fn worker(ledger: &Ledger, name: &str, outbox: &Arc<Mutex<Vec<String>>>) -> (Worker, Executor, Toolbox) {
    let tools = Toolbox::new().with(SendEmail(Arc::clone(outbox)));
    let setup = WorkerSetup::new(name, RUN, tools.declarations());
    let executor = Executor::new(ledger.connect_again().expect("a connection"), &setup);
    (Worker::new(setup).expect("a usable setup"), executor, tools)
}

#[test]
fn the_applications_state_is_saved_with_the_run_and_handed_back_after_a_crash() {
    let ledger = Ledger::open_memory_store();
    let outbox = Arc::new(Mutex::new(Vec::new()));

    // The first process sends both emails, then dies asking the model what comes next.
    let (mut first, mut executor, mut tools) = worker(&ledger, "worker-1", &outbox);
    let mut dying = Mailer {
        dies: true,
        resumed_with: None,
    };
    let died = catch_unwind(AssertUnwindSafe(|| {
        drive_run(&mut first, &mut executor, &mut dying, &mut tools, &mut SystemClock)
    }));
    assert!(died.is_err(), "the first process dies");
    drop((first, executor, tools));

    let saved = ledger.load_checkpoint(RUN).expect("reads").expect("a checkpoint");
    assert_eq!(
        saved.application_state().expect("parses"),
        json!({"draft": "Welcome, Ada", "sent": true, "follow_up": "queued"}),
        "the last decision's application state is in the checkpoint"
    );

    // A fresh process recovers the run: it is handed the application's state, and sends nothing.
    let (mut second, mut executor, mut tools) = worker(&ledger, "worker-2", &outbox);
    let mut recovering = Mailer {
        dies: false,
        resumed_with: None,
    };
    let ending = drive_run(
        &mut second,
        &mut executor,
        &mut recovering,
        &mut tools,
        &mut SystemClock,
    )
    .expect("the run finishes");
    assert_eq!(ending, Ending::Exited(Exit::Completed));
    assert_eq!(
        recovering.resumed_with,
        Some(json!({"draft": "Welcome, Ada", "sent": true, "follow_up": "queued"}))
    );
    assert_eq!(
        *outbox.lock().expect("outbox"),
        vec!["ada@example.com".to_owned(), "ops@example.com".to_owned()],
        "each email once, though two processes ran the run"
    );
}

#[test]
fn a_checkpoint_without_an_application_state_reads_as_null_and_older_ones_still_parse() {
    let mut ledger = Ledger::open_memory_store();
    // A state with none set does not write the field: exactly what was written before the slot
    // existed.
    let older = RunState::default().to_json();
    assert!(!older.contains("application"), "{older}");
    ledger
        .save_checkpoint(RUN, "running", &older, "worker-1", Some(0), 1)
        .expect("saves");
    let checkpoint = ledger.load_checkpoint(RUN).expect("reads").expect("saved");
    assert_eq!(checkpoint.application_state().expect("parses"), serde_json::Value::Null);
    ledger
        .save_checkpoint(RUN, "running", "not json", "worker-1", Some(1), 2)
        .expect("saves");
    let damaged = ledger.load_checkpoint(RUN).expect("reads").expect("saved");
    assert!(
        damaged.application_state().is_err(),
        "a damaged state is an error, not a panic"
    );
}
