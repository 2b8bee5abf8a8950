//! `Ending::Exited` says how the run ended, in both drivers, without a second look at the
//! checkpoint: completed, failed with the reason saved, or already over before this start
//! (then nothing ran and nothing was sent).

use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};
use twice_runtime::execution::{Agent, AgentError, Ending, Exit, SystemClock, drive_run, moved_on, next_call};
use twice_runtime::executor::Executor;
use twice_runtime::ledger::Ledger;
use twice_runtime::run::{Arguments, Decision, RunState, RunStatus};
use twice_runtime::tool::SideEffect;
use twice_runtime::toolbox::{CallContext, Tool, ToolFailure, Toolbox};
use twice_runtime::worker::{Worker, WorkerSetup};

#[derive(Serialize, Deserialize)]
struct Email {
    to: String,
}

struct SendEmail(Arc<Mutex<u32>>);

impl Tool for SendEmail {
    type Args = Email;
    type Output = String;
    const NAME: &'static str = "send_email";
    const SIDE_EFFECT: SideEffect = SideEffect::External;

    async fn call(&mut self, _email: Email, _context: CallContext<'_>) -> Result<String, ToolFailure> {
        *self.0.lock().map_err(|_| ToolFailure::NotSent("poisoned".into()))? += 1;
        Ok("sent".into())
    }
}

/// Sends one email (or calls a tool nobody declared), then ends as told.
struct Model {
    tool: &'static str,
    fails: bool,
}

impl Agent for Model {
    fn decide(&mut self, state: &RunState) -> Result<(Decision, RunState), AgentError> {
        if state.last_told.is_none() {
            let email = Arguments::from_typed(&Email {
                to: "ada@example.com".into(),
            })?;
            return next_call(state, self.tool, email).ok_or_else(|| "no more calls".into());
        }
        let next = moved_on(state).ok_or("no more items")?;
        if self.fails {
            return Ok((
                Decision::FailRun {
                    reason: "the customer cancelled".into(),
                },
                next,
            ));
        }
        Ok((Decision::Done, next))
    }
}

fn drive(ledger: &Ledger, run: &str, model: &mut Model, sent: &Arc<Mutex<u32>>) -> Ending {
    let mut tools = Toolbox::new().with(SendEmail(Arc::clone(sent)));
    let setup = WorkerSetup::new("worker-1", run, tools.declarations());
    let mut executor = Executor::new(ledger.connect_again().expect("connects"), &setup);
    let mut worker = Worker::new(setup).expect("a usable setup");
    drive_run(&mut worker, &mut executor, model, &mut tools, &mut SystemClock).expect("drives")
}

#[test]
fn completed_then_driven_again_is_already_over_and_sends_nothing() {
    let ledger = Ledger::open_memory_store();
    let sent = Arc::new(Mutex::new(0));
    let mut model = Model {
        tool: "send_email",
        fails: false,
    };
    assert_eq!(
        drive(&ledger, "order-7", &mut model, &sent),
        Ending::Exited(Exit::Completed)
    );
    assert_eq!(
        drive(&ledger, "order-7", &mut model, &sent),
        Ending::Exited(Exit::AlreadyOver(RunStatus::Completed))
    );
    assert_eq!(*sent.lock().expect("count"), 1, "the second drive sent nothing");
}

#[test]
fn a_failed_run_says_why() {
    let ledger = Ledger::open_memory_store();
    let sent = Arc::new(Mutex::new(0));
    let mut model = Model {
        tool: "send_email",
        fails: true,
    };
    assert_eq!(
        drive(&ledger, "order-8", &mut model, &sent),
        Ending::Exited(Exit::Failed {
            reason: "the customer cancelled".into()
        })
    );
}

#[test]
fn an_undeclared_tool_fails_the_run_with_its_name() {
    let ledger = Ledger::open_memory_store();
    let sent = Arc::new(Mutex::new(0));
    let mut model = Model {
        tool: "send_sms",
        fails: false,
    };
    let ending = drive(&ledger, "order-9", &mut model, &sent);
    let Ending::Exited(Exit::Failed { reason }) = &ending else {
        panic!("the run fails, not {ending:?}");
    };
    assert!(reason.contains("send_sms"), "{reason}");
    assert_eq!(*sent.lock().expect("count"), 0);
}

#[cfg(feature = "tokio")]
#[tokio::test]
async fn the_async_driver_says_the_same() {
    use twice_runtime::driver::{AsyncAgent, DriveOptions, drive};
    struct Async(Model);
    impl AsyncAgent for Async {
        async fn decide(&mut self, state: &RunState) -> Result<(Decision, RunState), AgentError> {
            self.0.decide(state)
        }
    }
    let ledger = Ledger::open_memory_store();
    let sent = Arc::new(Mutex::new(0));
    let mut agent = Async(Model {
        tool: "send_email",
        fails: false,
    });
    for expected in [Exit::Completed, Exit::AlreadyOver(RunStatus::Completed)] {
        let mut tools = Toolbox::new().with(SendEmail(Arc::clone(&sent)));
        let setup = WorkerSetup::new("worker-1", "order-10", tools.declarations());
        let mut executor = Executor::new(ledger.connect_again().expect("connects"), &setup);
        let mut worker = Worker::new(setup).expect("a usable setup");
        let ending = drive(
            &mut worker,
            &mut executor,
            &mut agent,
            &mut tools,
            &mut (),
            &mut SystemClock,
            &DriveOptions::default(),
        )
        .await
        .expect("drives");
        assert_eq!(ending, Ending::Exited(expected));
    }
    assert_eq!(*sent.lock().expect("count"), 1);
}
