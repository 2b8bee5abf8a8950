//! A limit on everything: a model that repeats one call id (each time served the recorded
//! result) or never ends the run stops after the setup's model decisions per start, and the run
//! waits for a person, instead of looping thousands of times.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use twice_runtime::execution::{Agent, AgentError, Ending, SystemClock, drive_run};
use twice_runtime::executor::Executor;
use twice_runtime::ledger::Ledger;
use twice_runtime::run::{Arguments, Decision, RunState, ToolCall};
use twice_runtime::tool::SideEffect;
use twice_runtime::toolbox::{CallContext, Tool, ToolFailure, Toolbox};
use twice_runtime::worker::{DECISIONS_MAX_DEFAULT, SetupError, WaitReason, Worker, WorkerSetup};

/// Counts sends; answers each.
struct SendEmail(Arc<AtomicU32>);

impl Tool for SendEmail {
    type Args = serde_json::Value;
    type Output = String;
    const NAME: &'static str = "send_email";
    const SIDE_EFFECT: SideEffect = SideEffect::External;

    async fn call(&self, _email: serde_json::Value, _context: CallContext<'_>) -> Result<String, ToolFailure> {
        self.0.fetch_add(1, Ordering::SeqCst);
        Ok("sent".into())
    }
}

/// Makes call `c1` again and again, whatever it is told; counts how often it was asked.
struct Stuck {
    asked: u32,
}

impl Agent for Stuck {
    fn decide(&mut self, state: &RunState) -> Result<(Decision, RunState), AgentError> {
        self.asked += 1;
        let call = ToolCall {
            id: "c1".into(),
            tool: "send_email".into(),
            item: state.item,
            arguments: Arguments::new(serde_json::json!({"to": "ada@example.com"})),
        };
        Ok((Decision::Call(call), state.clone()))
    }
}

fn drive(setup: impl FnOnce(WorkerSetup) -> WorkerSetup) -> (Ending, u32, u32) {
    let ledger = Ledger::open_memory_store();
    let sent = Arc::new(AtomicU32::new(0));
    let mut tools = Toolbox::new().with(SendEmail(Arc::clone(&sent)));
    let setup = setup(WorkerSetup::new("worker-1", "stuck", tools.declarations()));
    let mut executor = Executor::new(ledger.connect_again().expect("connects"), &setup);
    let mut worker = Worker::new(setup).expect("a usable setup");
    let mut model = Stuck { asked: 0 };
    let ending = drive_run(&mut worker, &mut executor, &mut model, &mut tools, &mut SystemClock).expect("drives");
    (ending, model.asked, sent.load(Ordering::SeqCst))
}

#[test]
fn a_model_repeating_one_call_stops_at_the_default_limit() {
    let (ending, asked, sent) = drive(|setup| setup);
    assert_eq!(
        ending,
        Ending::WaitsForPerson(WaitReason::DecisionLimit {
            run_id: "stuck".into(),
            decisions: DECISIONS_MAX_DEFAULT
        })
    );
    assert_eq!(
        asked,
        DECISIONS_MAX_DEFAULT + 1,
        "the decision past the limit is not taken"
    );
    assert_eq!(
        sent, 1,
        "the email went once; every repeat was served the recorded result"
    );
}

#[test]
fn the_limit_is_the_setups() {
    let (ending, asked, _) = drive(|setup| setup.with_decisions_max(5));
    assert!(matches!(
        ending,
        Ending::WaitsForPerson(WaitReason::DecisionLimit { decisions: 5, .. })
    ));
    assert_eq!(asked, 6);
    assert_eq!(
        Worker::new(WorkerSetup::new("w", "r", Vec::new()).with_decisions_max(0)).err(),
        Some(SetupError::DecisionLimitZero)
    );
}
