//! The async driver's default for a paused run: it returns `Ending::Parked` with the call's
//! key, rather than polling the ledger for as long as nobody settles the call.
//! `ParkPolicy::waiting()` holds the run in the process instead.

use std::time::Duration;

use twice_runtime::driver::{AsyncAgent, DriveOptions, ParkPolicy, drive};
use twice_runtime::execution::{AgentError, Ending, SystemClock, moved_on, next_call};
use twice_runtime::executor::Executor;
use twice_runtime::ledger::Ledger;
use twice_runtime::run::{Arguments, Decision, RunState};
use twice_runtime::tool::SideEffect;
use twice_runtime::toolbox::{CallContext, LookedUp, Tool, ToolFailure, Toolbox};
use twice_runtime::worker::{Worker, WorkerSetup};
use twice_runtime::{IdempotencyKey, Status};

/// A send whose answer never comes, and a provider that cannot be asked about it.
struct Lost;

impl Tool for Lost {
    type Args = serde_json::Value;
    type Output = String;
    const NAME: &'static str = "send_email";
    const SIDE_EFFECT: SideEffect = SideEffect::External;
    const RECONCILES: bool = true;

    async fn call(&self, _args: serde_json::Value, _context: CallContext<'_>) -> Result<String, ToolFailure> {
        Err(ToolFailure::Unknown(
            "the connection dropped after the request left".into(),
        ))
    }

    async fn look_up(&self, _args: serde_json::Value, _context: CallContext<'_>) -> LookedUp<String> {
        LookedUp::CannotTell {
            reason: "the provider's search is down".into(),
        }
    }
}

struct OneEmail;

impl AsyncAgent for OneEmail {
    async fn decide(&mut self, state: &RunState) -> Result<(Decision, RunState), AgentError> {
        if state.last_told.is_some() {
            return Ok((Decision::Done, moved_on(state).ok_or("no more items")?));
        }
        next_call(state, "send_email", Arguments::new(serde_json::json!({"to": "ada"})))
            .ok_or_else(|| "no more calls".into())
    }
}

async fn run(options: DriveOptions) -> Result<Result<Ending, twice_runtime::Error>, tokio::time::error::Elapsed> {
    let tools = Toolbox::new().with(Lost);
    let setup = WorkerSetup::new("worker-1", "welcome", tools.declarations());
    let ledger = Ledger::open_memory_store();
    let mut executor = Executor::new(ledger.connect_again().expect("connects"), &setup);
    let mut worker = Worker::new(setup).expect("a usable setup");
    let (mut model, mut observer, mut clock) = (OneEmail, (), SystemClock);
    let driving = drive(
        &mut worker,
        &mut executor,
        &mut model,
        &tools,
        &mut observer,
        &mut clock,
        &options,
    );
    let ended = tokio::time::timeout(Duration::from_secs(2), driving).await;
    let key = IdempotencyKey::per_call("welcome", "c1").expect("a key");
    let record = ledger.record(&key).expect("reads").expect("recorded");
    assert_eq!(
        record.status,
        Status::Indeterminate,
        "the call stays unknown either way"
    );
    ended
}

#[tokio::test]
async fn a_paused_run_returns_parked_by_default() {
    let ending = run(DriveOptions::default())
        .await
        .expect("returns at once, not after polling")
        .expect("drives");
    assert_eq!(
        ending,
        Ending::Parked(IdempotencyKey::per_call("welcome", "c1").expect("a key"))
    );
}

#[tokio::test]
async fn a_waiting_policy_holds_the_run_until_the_call_is_settled() {
    let mut options = DriveOptions::default();
    options.park = ParkPolicy::waiting();
    assert!(run(options).await.is_err(), "still waiting when the test gives up");
}
