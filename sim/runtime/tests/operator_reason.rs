//! An operator's settlement reaches the model with who decided and why. The seed: a paused run
//! resumes once its call is settled, "and the model then hears the truth". A call an operator
//! resolved `failed`, or had compensated, is told as `Told::SettledByOperator` with the
//! operator's id and reason from the call's history, on both drivers, so an agent can say
//! "billing shows nothing; ops (ada) settled it failed: …". Checkpoints written before the
//! variant existed still load.

use std::sync::{Arc, Mutex};

use twice_runtime::execution::{Agent, AgentError, Ending, Run, moved_on, next_call};
use twice_runtime::executor::Executor;
use twice_runtime::ledger::{ExecutionRecord, HistoryEntry, HistoryEvent, Ledger, OperatorDecision};
use twice_runtime::operator::{
    self, CompensateRequest, CompensationTarget, Effect, HeldLedger, LookupError, ResolveRequest, UndoError,
};
use twice_runtime::run::{Arguments, Decision, RunState, Settled, Told};
use twice_runtime::tool::SideEffect;
use twice_runtime::toolbox::{CallContext, LookedUp, Tool, ToolFailure, Toolbox};
use twice_runtime::worker::{Words, Worker, WorkerSetup};
use twice_runtime::{IdempotencyKey, Status};

const RUN: &str = "refund-1001";
const REASON: &str = "no credit under the key in billing's dashboard";

/// A credit whose answer never comes, with a lookup that cannot tell: the run pauses.
struct Lost;

impl Tool for Lost {
    type Args = serde_json::Value;
    type Output = String;
    const NAME: &'static str = "issue_credit";
    const SIDE_EFFECT: SideEffect = SideEffect::External;
    const RECONCILES: bool = true;

    async fn call(&self, _args: serde_json::Value, _context: CallContext<'_>) -> Result<String, ToolFailure> {
        Err(ToolFailure::Unknown(
            "the connection dropped after the request left".into(),
        ))
    }

    async fn look_up(&self, _args: serde_json::Value, _context: CallContext<'_>) -> LookedUp<String> {
        LookedUp::CannotTell {
            reason: "billing's search is down".into(),
        }
    }
}

/// The agent: one credit; told how it ended, it says so in its own words and is done.
#[derive(Clone, Default)]
struct Refund {
    said: Arc<Mutex<Vec<String>>>,
}

impl Refund {
    /// What an agent can say from what it was told: the operator and their reason included.
    fn words(told: &Told) -> String {
        match told {
            Told::SettledByOperator {
                settled: Settled::DidNotTakeEffect,
                operator,
                reason,
            } => format!("billing shows nothing; ops ({operator}) settled it failed: {reason}"),
            Told::SettledByOperator {
                settled: Settled::Compensated,
                operator,
                reason,
            } => format!("the credit was taken back; ops ({operator}) compensated it: {reason}"),
            other => format!("told {other:?}, and not by whom"),
        }
    }

    fn said(&self) -> Vec<String> {
        self.said.lock().expect("not poisoned").clone()
    }

    fn decide_from(&self, state: &RunState) -> Result<(Decision, RunState), AgentError> {
        let Some(told) = &state.last_told else {
            let credit = Arguments::new(serde_json::json!({"account": "acct_ada", "amount_cents": 2500}));
            return next_call(state, "issue_credit", credit).ok_or_else(|| "no more calls".into());
        };
        self.said.lock().map_err(|_| "poisoned")?.push(Refund::words(told));
        Ok((Decision::Done, moved_on(state).ok_or("no more items")?))
    }
}

impl Agent for Refund {
    fn decide(&mut self, state: &RunState) -> Result<(Decision, RunState), AgentError> {
        self.decide_from(state)
    }
}

fn key() -> IdempotencyKey {
    IdempotencyKey::per_call(RUN, "c1").expect("a key")
}

/// Worker `worker_id` drives the run with the synchronous driver until it ends or parks.
fn drive(ledger: &Ledger, worker_id: &str, agent: &mut Refund) -> Ending {
    let tools = Toolbox::new().with(Lost);
    let setup = WorkerSetup::new(worker_id, RUN, tools.declarations());
    let mut executor = Executor::new(ledger.connect_again().expect("connects"), &setup);
    let mut worker = Worker::new(setup).expect("a usable setup");
    let mut tools = tools;
    Run::new(&mut worker, &mut executor)
        .drive(agent, &mut tools)
        .expect("drives")
}

/// What the model was told of `c1`, as the run's checkpoint keeps it.
fn told_of_c1(ledger: &Ledger) -> Told {
    let saved = ledger.load_checkpoint(RUN).expect("reads").expect("saved");
    let state = saved.run_state().expect("parses");
    assert_eq!(state.status.name(), "completed", "the settlement resumed the run");
    state
        .transcript
        .iter()
        .find(|(call, _)| call == "c1")
        .map(|(_, told)| told.clone())
        .expect("c1 was told")
}

/// A run paused on its unknown call, by the synchronous driver.
fn paused() -> Ledger {
    let ledger = Ledger::open_memory_store();
    assert_eq!(drive(&ledger, "w1", &mut Refund::default()), Ending::Parked(key()));
    ledger
}

fn settle_failed(ledger: &mut Ledger) {
    let request = ResolveRequest::new(Status::Failed, REASON, "ada").with_expected_status(Status::Indeterminate);
    operator::resolve(ledger, &key(), &request, 5).expect("settled");
}

#[test]
fn a_call_an_operator_settled_failed_is_told_with_the_operator_and_the_reason() {
    let mut ledger = paused();
    settle_failed(&mut ledger);
    let agent = Refund::default();
    assert_eq!(
        drive(&ledger, "w2", &mut agent.clone()),
        Ending::Exited(twice_runtime::execution::Exit::Completed)
    );
    let told = told_of_c1(&ledger);
    assert_eq!(
        told,
        Told::SettledByOperator {
            settled: Settled::DidNotTakeEffect,
            operator: "ada".into(),
            reason: REASON.into(),
        }
    );
    assert!(told.nothing_stands() && told.did_not_take_effect() && !told.compensated());
    assert_eq!(told.operator_decision(), Some(("ada", REASON)));
    assert_eq!(
        agent.said(),
        [format!("billing shows nothing; ops (ada) settled it failed: {REASON}")]
    );
}

/// Billing holds the credit; the operator voids it.
struct Voids;

impl CompensationTarget for Voids {
    fn has_compensation(&self, tool: &str) -> bool {
        tool == "issue_credit"
    }

    fn find_effect(&mut self, _record: &ExecutionRecord) -> Result<Effect, LookupError> {
        Ok(Effect::Found {
            reference: "cr_0001".into(),
            detail: "billing holds credit cr_0001".into(),
        })
    }

    fn undo(&mut self, _record: &ExecutionRecord, reference: &str) -> Result<String, UndoError> {
        Ok(format!("voided {reference}"))
    }
}

#[test]
fn a_call_an_operator_had_compensated_is_told_with_the_operator_and_the_reason() {
    let mut ledger = paused();
    let reason = "the order was cancelled; take the refund back";
    let mut access = HeldLedger {
        ledger: &mut ledger,
        now_ms: 5,
    };
    let key = key();
    let request = CompensateRequest::new(&key, reason, "bo");
    operator::compensate(&mut access, &mut Voids, &request, &Words::ENGLISH).expect("compensated");
    let agent = Refund::default();
    drive(&ledger, "w2", &mut agent.clone());
    let told = told_of_c1(&ledger);
    assert_eq!(
        told,
        Told::SettledByOperator {
            settled: Settled::Compensated,
            operator: "bo".into(),
            reason: reason.into(),
        }
    );
    assert!(told.compensated() && !told.did_not_take_effect());
    assert_eq!(
        agent.said(),
        [format!("the credit was taken back; ops (bo) compensated it: {reason}")]
    );
}

#[cfg(feature = "tokio")]
impl twice_runtime::driver::AsyncAgent for Refund {
    async fn decide(&mut self, state: &RunState) -> Result<(Decision, RunState), AgentError> {
        self.decide_from(state)
    }
}

#[cfg(feature = "tokio")]
#[tokio::test]
async fn the_async_driver_tells_the_operators_decision_too() {
    use twice_runtime::driver::AsyncRun;

    async fn drive_async(ledger: &Ledger, worker_id: &str, agent: &mut Refund) -> Ending {
        let tools = Toolbox::new().with(Lost);
        let setup = WorkerSetup::new(worker_id, RUN, tools.declarations());
        let mut executor = Executor::new(ledger.connect_again().expect("connects"), &setup);
        let mut worker = Worker::new(setup).expect("a usable setup");
        AsyncRun::new(&mut worker, &mut executor)
            .drive(agent, &tools)
            .await
            .expect("drives")
    }

    let mut ledger = Ledger::open_memory_store();
    assert_eq!(
        drive_async(&ledger, "w1", &mut Refund::default()).await,
        Ending::Parked(key())
    );
    settle_failed(&mut ledger);
    let agent = Refund::default();
    drive_async(&ledger, "w2", &mut agent.clone()).await;
    assert_eq!(
        told_of_c1(&ledger).operator_decision(),
        Some(("ada", REASON)),
        "{:?}",
        told_of_c1(&ledger)
    );
    assert_eq!(
        agent.said(),
        [format!("billing shows nothing; ops (ada) settled it failed: {REASON}")]
    );
}

/// A credit whose request is out when an operator settles it `failed` (acknowledging it may be
/// in flight), and whose answer then says it took effect; or, with `lost`, whose answer is lost
/// and whose hook finds the credit after the operator's decision. Either way the operator's
/// decision stands (a contradiction is reported), and the model hears it as theirs.
struct SettledMeanwhile {
    operator: Mutex<Ledger>,
    lost: bool,
}

impl SettledMeanwhile {
    fn settle(&self, acknowledge: bool) {
        let mut request = ResolveRequest::new(Status::Failed, REASON, "ada");
        if acknowledge {
            request = request.acknowledging_in_flight();
        }
        let mut ledger = self.operator.lock().expect("not poisoned");
        operator::resolve(&mut ledger, &key(), &request, 5).expect("settled");
    }
}

impl Tool for SettledMeanwhile {
    type Args = serde_json::Value;
    type Output = String;
    const NAME: &'static str = "issue_credit";
    const SIDE_EFFECT: SideEffect = SideEffect::External;
    const RECONCILES: bool = true;

    async fn call(&self, _args: serde_json::Value, _context: CallContext<'_>) -> Result<String, ToolFailure> {
        if self.lost {
            return Err(ToolFailure::Unknown(
                "the connection dropped after the request left".into(),
            ));
        }
        self.settle(true);
        Ok("cr_0001".into())
    }

    async fn look_up(&self, _args: serde_json::Value, _context: CallContext<'_>) -> LookedUp<String> {
        self.settle(false);
        LookedUp::Found {
            output: "cr_0001".into(),
            finding: "billing holds cr_0001 under the key".into(),
        }
    }
}

/// The run with [`SettledMeanwhile`]: what its model was told of `c1`.
fn settled_meanwhile(lost: bool) -> Told {
    let ledger = Ledger::open_memory_store();
    let tools = Toolbox::new().with(SettledMeanwhile {
        operator: Mutex::new(ledger.connect_again().expect("connects")),
        lost,
    });
    let setup = WorkerSetup::new("w1", RUN, tools.declarations());
    let mut executor = Executor::new(ledger.connect_again().expect("connects"), &setup);
    let mut worker = Worker::new(setup).expect("a usable setup");
    let mut tools = tools;
    Run::new(&mut worker, &mut executor)
        .drive(&mut Refund::default(), &mut tools)
        .expect("drives");
    let contradicted = ledger.history(&key()).expect("reads");
    assert!(
        contradicted.iter().any(|line| line.event == HistoryEvent::Contradicted),
        "{contradicted:?}"
    );
    told_of_c1(&ledger)
}

#[test]
fn an_answer_after_the_operators_decision_leaves_the_model_told_their_decision() {
    let told = settled_meanwhile(false);
    assert_eq!(told.operator_decision(), Some(("ada", REASON)), "{told:?}");
    assert!(told.did_not_take_effect());
}

#[test]
fn a_hooks_find_after_the_operators_decision_leaves_the_model_told_their_decision() {
    let told = settled_meanwhile(true);
    assert_eq!(told.operator_decision(), Some(("ada", REASON)), "{told:?}");
    assert!(told.did_not_take_effect());
}

/// A checkpoint written before `Told::SettledByOperator` existed: unit variants as bare
/// strings, a failure as an object. It loads as it was.
#[test]
fn a_checkpoint_of_the_old_form_still_loads() {
    let old = r#"{"status":"running","item":1,"calls_for_item":0,"next_call_number":4,
        "last_told":"did_not_take_effect","pending":null,
        "transcript":[["c1","did_not_take_effect"],["c2","compensated"],
                      ["c3",{"failed":{"reason":"account locked"}}],["c4",{"result":{"result":"ok"}}]]}"#;
    let state = RunState::from_json(old).expect("an old checkpoint loads");
    assert_eq!(state.last_told, Some(Told::DidNotTakeEffect));
    let told: Vec<&Told> = state.transcript.iter().map(|(_, told)| told).collect();
    assert_eq!(
        told,
        [
            &Told::DidNotTakeEffect,
            &Told::Compensated,
            &Told::Failed {
                reason: "account locked".into()
            },
            &Told::Result { result: "ok".into() },
        ]
    );
    // And the old forms are still what these variants write: an older build reads them.
    assert_eq!(
        serde_json::to_string(&Told::DidNotTakeEffect).expect("writes"),
        r#""did_not_take_effect""#
    );
    let settled = Told::SettledByOperator {
        settled: Settled::Compensated,
        operator: "bo".into(),
        reason: "cancelled".into(),
    };
    let written = serde_json::to_string(&settled).expect("writes");
    assert_eq!(
        written,
        r#"{"settled_by_operator":{"settled":"compensated","operator":"bo","reason":"cancelled"}}"#
    );
    assert_eq!(serde_json::from_str::<Told>(&written).expect("reads back"), settled);
}

fn line(event: HistoryEvent, actor: &str, to: Status, reason: Option<&str>) -> HistoryEntry {
    HistoryEntry {
        id: 1,
        key: key(),
        at_ms: 1,
        actor: actor.into(),
        event,
        from_status: Some(Status::Indeterminate),
        to_status: Some(to),
        reason: reason.map(str::to_owned),
        detail: None,
    }
}

/// Only an operator's line is an operator's decision: a reconcile hook's settlement, a
/// naive runtime's reflex, or a call still unknown tells the model no operator.
#[test]
fn only_an_operators_line_is_an_operators_decision() {
    let failed = ExecutionRecord::new(key(), RUN, "c1", "issue_credit", SideEffect::External, "{}", "w1").with_outcome(
        Status::Failed,
        1,
        None,
    );
    let decided = |event, actor| OperatorDecision::behind(&failed, &[line(event, actor, Status::Failed, Some("why"))]);
    assert_eq!(
        decided(HistoryEvent::Resolved, "ada"),
        Some(OperatorDecision::new("ada", "why"))
    );
    assert_eq!(
        decided(HistoryEvent::NothingToCompensate, "bo"),
        Some(OperatorDecision::new("bo", "why"))
    );
    assert_eq!(decided(HistoryEvent::Reconciled, "w2"), None);
    // The last line to put the record in its status decides: an earlier operator's is not it.
    let history = [
        line(HistoryEvent::Resolved, "ada", Status::Failed, Some("why")),
        line(HistoryEvent::Reconciled, "w2", Status::Failed, None),
    ];
    assert_eq!(OperatorDecision::behind(&failed, &history), None);
    let unknown = failed.clone().with_outcome(Status::Indeterminate, 1, None);
    assert_eq!(
        OperatorDecision::behind(
            &unknown,
            &[line(HistoryEvent::Resolved, "ada", Status::Indeterminate, Some("why"))]
        ),
        None
    );
}
