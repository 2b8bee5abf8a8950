//! `Ending::Exited` says how the run ended, in both drivers, without a second look at the
//! checkpoint: completed, failed with the reason saved, or already over before this start
//! (then nothing ran and nothing was sent).

use std::sync::{Arc, Mutex};

use twice_runtime::execution::{Ending, Exit};
use twice_runtime::ledger::Ledger;
use twice_runtime::run::RunStatus;
use twice_runtime::toolbox::Toolbox;
use twice_runtime::worker::WorkerSetup;

mod one_email;
use one_email::{OneEmail, SendEmail};

/// Drives run `run` once; the emails sent land in `outbox`.
fn drive(ledger: &Ledger, run: &str, model: &mut OneEmail, outbox: &Arc<Mutex<Vec<String>>>) -> Ending {
    let mut tools = Toolbox::new().with(SendEmail {
        outbox: Arc::clone(outbox),
        dies_after_send: false,
    });
    one_email::drive(ledger, WorkerSetup::new("worker-1", run, Vec::new()), &mut tools, model)
}

fn sent(outbox: &Arc<Mutex<Vec<String>>>) -> usize {
    outbox.lock().expect("outbox").len()
}

#[test]
fn completed_then_driven_again_is_already_over_and_sends_nothing() {
    let ledger = Ledger::open_memory_store();
    let outbox = Arc::new(Mutex::new(Vec::new()));
    let mut model = OneEmail::default();
    assert_eq!(
        drive(&ledger, "order-7", &mut model, &outbox),
        Ending::Exited(Exit::Completed)
    );
    assert_eq!(
        drive(&ledger, "order-7", &mut model, &outbox),
        Ending::Exited(Exit::AlreadyOver(RunStatus::Completed))
    );
    assert_eq!(sent(&outbox), 1, "the second drive sent nothing");
}

#[test]
fn a_failed_run_says_why() {
    let ledger = Ledger::open_memory_store();
    let outbox = Arc::new(Mutex::new(Vec::new()));
    let mut model = OneEmail {
        fails: Some("the customer cancelled"),
        ..OneEmail::default()
    };
    assert_eq!(
        drive(&ledger, "order-8", &mut model, &outbox),
        Ending::Exited(Exit::Failed {
            reason: "the customer cancelled".into()
        })
    );
}

#[test]
fn an_undeclared_tool_fails_the_run_with_its_name() {
    let ledger = Ledger::open_memory_store();
    let outbox = Arc::new(Mutex::new(Vec::new()));
    let mut model = OneEmail {
        tool: "send_sms",
        ..OneEmail::default()
    };
    let ending = drive(&ledger, "order-9", &mut model, &outbox);
    let Ending::Exited(Exit::Failed { reason }) = &ending else {
        panic!("the run fails, not {ending:?}");
    };
    assert!(reason.contains("send_sms"), "{reason}");
    assert_eq!(sent(&outbox), 0);
}

#[cfg(feature = "tokio")]
#[tokio::test]
async fn the_async_driver_says_the_same() {
    use twice_runtime::driver::{AsyncAgent, DriveOptions, drive};
    use twice_runtime::execution::{Agent, AgentError, SystemClock};
    use twice_runtime::executor::Executor;
    use twice_runtime::run::{Decision, RunState};
    use twice_runtime::worker::Worker;
    struct Async(OneEmail);
    impl AsyncAgent for Async {
        async fn decide(&mut self, state: &RunState) -> Result<(Decision, RunState), AgentError> {
            self.0.decide(state)
        }
    }
    let ledger = Ledger::open_memory_store();
    let outbox = Arc::new(Mutex::new(Vec::new()));
    let mut agent = Async(OneEmail::default());
    for expected in [Exit::Completed, Exit::AlreadyOver(RunStatus::Completed)] {
        let tools = Toolbox::new().with(SendEmail {
            outbox: Arc::clone(&outbox),
            dies_after_send: false,
        });
        let setup = WorkerSetup::new("worker-1", "order-10", tools.declarations());
        let mut executor = Executor::new(ledger.connect_again().expect("connects"), &setup);
        let mut worker = Worker::new(setup).expect("a usable setup");
        let ending = drive(
            &mut worker,
            &mut executor,
            &mut agent,
            &tools,
            &mut (),
            &mut SystemClock,
            &DriveOptions::default(),
        )
        .await
        .expect("drives");
        assert_eq!(ending, Ending::Exited(expected));
    }
    assert_eq!(sent(&outbox), 1);
}
