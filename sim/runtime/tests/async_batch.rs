//! The async driver runs a model turn's calls as a provider's parallel tool calls are run:
//! both requests of the turn are out at once (each tool call waits at a barrier the other
//! must reach too), the one that answers first is recorded first, and each call is still its
//! own key, reservation and outcome. A reconcile hook is told when the ledger recorded the
//! send it looks for.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use twice_runtime::driver::{AsyncAgent, AsyncRun, Observer};
use twice_runtime::execution::{AgentError, Attempt, Ending, Exit, moved_on, next_call, next_calls};
use twice_runtime::executor::Executor;
use twice_runtime::ledger::{HistoryEvent, Ledger};
use twice_runtime::rules::Outcome;
use twice_runtime::run::{Arguments, Decision, RunState};
use twice_runtime::tool::SideEffect;
use twice_runtime::toolbox::{CallContext, LookedUp, Tool, ToolFailure, Toolbox};
use twice_runtime::worker::{Worker, WorkerSetup};
use twice_runtime::{IdempotencyKey, Status};

const RUN: &str = "refunds";

#[derive(Serialize, Deserialize)]
struct Credit {
    account: String,
    /// How long the provider takes to answer once both requests are in.
    answer_after_ms: u64,
}

/// A provider that answers a turn's credits only once both have arrived: sent one after
/// another, the first waits for a second that never comes, and is refused.
struct BothAtOnce {
    arrived: Arc<tokio::sync::Barrier>,
}

impl Tool for BothAtOnce {
    type Args = Credit;
    type Output = String;
    const NAME: &'static str = "issue_credit";
    const SIDE_EFFECT: SideEffect = SideEffect::External;

    async fn call(&self, credit: Credit, _context: CallContext<'_>) -> Result<String, ToolFailure> {
        let both = tokio::time::timeout(Duration::from_secs(2), self.arrived.wait()).await;
        if both.is_err() {
            return Err(ToolFailure::Rejected(format!(
                "{}'s credit was alone: the turn's other call was not in flight with it",
                credit.account
            )));
        }
        tokio::time::sleep(Duration::from_millis(credit.answer_after_ms)).await;
        Ok(format!("credit for {}", credit.account))
    }
}

/// One turn of two credits — Ada's answered later than Bob's — then done.
struct TwoCredits;

impl AsyncAgent for TwoCredits {
    async fn decide(&mut self, state: &RunState) -> Result<(Decision, RunState), AgentError> {
        if state.last_told.is_some() {
            return Ok((Decision::Done, moved_on(state).ok_or("no more items")?));
        }
        let credit = |account: &str, answer_after_ms| {
            Arguments::from_typed(&Credit {
                account: account.into(),
                answer_after_ms,
            })
        };
        Ok(next_calls(
            state,
            &[
                ("issue_credit", credit("ada", 150)?),
                ("issue_credit", credit("bob", 0)?),
            ],
        )?)
    }
}

/// The calls' ends, in the order the driver heard them.
#[derive(Default)]
struct Ends(Vec<(String, Attempt)>);

impl Observer for Ends {
    fn attempted(&mut self, key: &IdempotencyKey, _attempt: u32, ended: &Attempt) {
        self.0.push((key.to_string(), ended.clone()));
    }
}

fn key(call: &str) -> IdempotencyKey {
    IdempotencyKey::per_call(RUN, call).expect("a key")
}

#[tokio::test(flavor = "current_thread")]
async fn a_turns_two_calls_are_in_flight_at_once_and_recorded_as_they_answer() {
    let tools = Toolbox::new().with(BothAtOnce {
        arrived: Arc::new(tokio::sync::Barrier::new(2)),
    });
    let setup = WorkerSetup::new("worker-1", RUN, tools.declarations());
    let ledger = Ledger::open_memory_store();
    let mut executor = Executor::new(ledger.connect_again().expect("connects"), &setup);
    let mut worker = Worker::new(setup).expect("a usable setup");
    let mut ends = Ends::default();
    let ending = AsyncRun::new(&mut worker, &mut executor)
        .observer(&mut ends)
        .drive(&mut TwoCredits, &tools)
        .await
        .expect("the ledger answers");
    assert_eq!(ending, Ending::Exited(Exit::Completed));

    for call in ["c1", "c2"] {
        let record = ledger.record(&key(call)).expect("reads").expect("recorded");
        assert_eq!(
            (
                record.status,
                record.result.as_deref().unwrap_or_default().contains("credit for")
            ),
            (Status::Completed, true),
            "{call}: {record:?}"
        );
    }
    let heard: Vec<&str> = ends.0.iter().map(|(key, _)| key.as_str()).collect();
    assert_eq!(
        heard,
        ["refunds:c2", "refunds:c1"],
        "Bob's answer came first: {:?}",
        ends.0
    );
    let completed_line = |call: &str| {
        ledger
            .history(&key(call))
            .expect("reads")
            .into_iter()
            .find(|entry| entry.event == HistoryEvent::Outcome(Outcome::Completed))
            .map(|entry| entry.id)
            .expect("an outcome line")
    };
    assert!(
        completed_line("c2") < completed_line("c1"),
        "the ledger records the outcomes in the order they arrived"
    );
}

/// A send whose answer is lost; the hook reads what its context says of the send.
struct Lost {
    hook_saw: Arc<Mutex<Vec<(u32, u64, bool)>>>,
}

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

    async fn look_up(&self, _args: serde_json::Value, context: CallContext<'_>) -> LookedUp<String> {
        self.hook_saw.lock().unwrap_or_else(PoisonError::into_inner).push((
            context.attempt(),
            context.recorded_at_ms(),
            context.idempotency_key().is_some(),
        ));
        LookedUp::Found {
            output: "sent".into(),
            finding: "the provider holds the message".into(),
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

/// A clock at 1,000 ms that moves 1 ms a reading.
struct Ticks(u64);

impl twice_runtime::execution::Clock for Ticks {
    fn now_ms(&mut self) -> u64 {
        self.0 += 1;
        self.0
    }
    fn wait_ms(&mut self, duration_ms: u64) {
        self.0 += duration_ms;
    }
}

#[tokio::test(flavor = "current_thread")]
async fn a_reconcile_hook_is_told_when_the_ledger_recorded_the_send() {
    let hook_saw = Arc::new(Mutex::new(Vec::new()));
    let tools = Toolbox::new().with(Lost {
        hook_saw: Arc::clone(&hook_saw),
    });
    let setup = WorkerSetup::new("worker-1", RUN, tools.declarations());
    let ledger = Ledger::open_memory_store();
    let mut executor = Executor::new(ledger.connect_again().expect("connects"), &setup);
    let mut worker = Worker::new(setup).expect("a usable setup");
    let ending = AsyncRun::new(&mut worker, &mut executor)
        .clock(Ticks(1_000))
        .drive(&mut OneEmail, &tools)
        .await
        .expect("the ledger answers");
    assert_eq!(ending, Ending::Exited(Exit::Completed));
    let sent_at_ms = ledger
        .history(&key("c1"))
        .expect("reads")
        .into_iter()
        .find(|entry| entry.event == HistoryEvent::Attempt)
        .map(|entry| entry.at_ms)
        .expect("the send's line");
    assert!(sent_at_ms > 1_000, "{sent_at_ms}");
    let saw = hook_saw.lock().unwrap_or_else(PoisonError::into_inner).clone();
    assert_eq!(
        saw,
        [(0, sent_at_ms, true)],
        "attempt 0, the send's time, the key to pass on"
    );
}

/// Ada's credit is lost at once and looked up by its hook, while Bob's request of the same turn
/// is still out; the provider can tell about Ada's only once Bob's has been answered. A driver
/// that stopped polling the turn's requests while it awaits a look-up would never see Bob
/// answered, and the hook could not tell.
struct LookedUpBesideAnother {
    bob_answered: Arc<tokio::sync::Notify>,
}

impl Tool for LookedUpBesideAnother {
    type Args = Credit;
    type Output = String;
    const NAME: &'static str = "issue_credit";
    const SIDE_EFFECT: SideEffect = SideEffect::External;
    const RECONCILES: bool = true;

    async fn call(&self, credit: Credit, _context: CallContext<'_>) -> Result<String, ToolFailure> {
        if credit.account == "ada" {
            return Err(ToolFailure::Unknown(
                "the connection dropped after the request left".into(),
            ));
        }
        // Still on its way when the driver sets it out.
        tokio::time::sleep(Duration::from_millis(30)).await;
        self.bob_answered.notify_one();
        Ok(format!("credit for {}", credit.account))
    }

    async fn look_up(&self, credit: Credit, _context: CallContext<'_>) -> LookedUp<String> {
        match tokio::time::timeout(Duration::from_secs(1), self.bob_answered.notified()).await {
            Ok(()) => LookedUp::Found {
                output: format!("credit for {}", credit.account),
                finding: "the provider's log, caught up once Bob's request was in, holds Ada's credit".into(),
            },
            Err(_) => LookedUp::CannotTell {
                reason: "Bob's request was never answered while Ada's was looked up".into(),
            },
        }
    }
}

#[tokio::test(flavor = "current_thread")]
async fn a_look_up_does_not_hold_up_the_turns_other_request() {
    let tools = Toolbox::new().with(LookedUpBesideAnother {
        bob_answered: Arc::new(tokio::sync::Notify::new()),
    });
    let setup = WorkerSetup::new("worker-1", RUN, tools.declarations());
    let ledger = Ledger::open_memory_store();
    let mut executor = Executor::new(ledger.connect_again().expect("connects"), &setup);
    let mut worker = Worker::new(setup).expect("a usable setup");
    let ending = AsyncRun::new(&mut worker, &mut executor)
        .drive(&mut TwoCredits, &tools)
        .await
        .expect("the ledger answers");
    assert_eq!(ending, Ending::Exited(Exit::Completed), "nothing paused");
    let history = ledger.history(&key("c1")).expect("reads");
    assert!(
        history.iter().any(|entry| entry.event == HistoryEvent::Reconciled),
        "Ada's call was settled by the hook: {history:?}"
    );
    for call in ["c1", "c2"] {
        let record = ledger.record(&key(call)).expect("reads").expect("recorded");
        assert_eq!(record.status, Status::Completed, "{call}: {record:?}");
    }
}
