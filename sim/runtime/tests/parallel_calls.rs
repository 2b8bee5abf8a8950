//! Several tool calls in one model turn (a provider's parallel tool calls): each its own key,
//! reservation, send and outcome, all out at once, answered in any order, the checkpoint saved
//! once after the batch; a crash between two of them redoes neither the finished one nor
//! loses the unfinished one.

use twice_runtime::batch::{BATCH_CALLS_MAX, Batch, BatchError};
use twice_runtime::execution::{
    Agent, AgentError, Attempt, Begun, Clock, Ended, Ending, Exit, Found, LookUp, Sending, ToolExecution, drive_run,
    moved_on, next_calls,
};
use twice_runtime::executor::{Drive, Executor, Next};
use twice_runtime::ledger::Ledger;
use twice_runtime::operator::{ResolveRequest, resolve};
use twice_runtime::run::{Arguments, Decision, RunState, RunStatus, Told, ToolCall};
use twice_runtime::tool::{SideEffect, ToolDeclaration};
use twice_runtime::worker::{Command, Input, Worker, WorkerSetup};
use twice_runtime::{IdempotencyKey, Status, ToolAnswer};

const RUN: &str = "refunds";

/// Billing's answer: the credit applied now.
fn applied(receipt: impl Into<String>) -> ToolAnswer {
    ToolAnswer::Applied {
        receipt: receipt.into(),
    }
}

/// Two $25 credits the customer is really owed, in one turn: identical arguments, two calls.
struct TwoCredits;

impl Agent for TwoCredits {
    fn decide(&mut self, state: &RunState) -> Result<(Decision, RunState), AgentError> {
        if state.last_told.is_some() {
            return Ok((Decision::Done, moved_on(state).ok_or("no more items")?));
        }
        let credit = || Arguments::new(serde_json::json!({"account": "acct_ada", "amount_cents": 2500}));
        Ok(next_calls(
            state,
            &[("issue_credit", credit()), ("issue_credit", credit())],
        )?)
    }
}

fn credit_tool() -> ToolDeclaration {
    ToolDeclaration::new("issue_credit", SideEffect::External).with_reconcile()
}

/// A clock that moves 1 ms each time it is read.
struct Ticks(u64);

impl Clock for Ticks {
    fn now_ms(&mut self) -> u64 {
        self.0 += 1;
        self.0
    }
    fn wait_ms(&mut self, duration_ms: u64) {
        self.0 += duration_ms;
    }
}

/// Billing: every request begun stays out until `next_ended` gives its end, newest first (so
/// the answers come back in the other order than the sends); `lost` keys never answer (their
/// end is a timeout), but billing applied them and the hook finds them.
#[derive(Default)]
struct Billing {
    log: Vec<String>,
    out: Vec<(IdempotencyKey, u32)>,
    lost: Vec<String>,
    applied: Vec<String>,
}

impl ToolExecution for Billing {
    fn send(&mut self, sending: &Sending<'_>) -> Attempt {
        self.log.push(format!("send-and-wait {}", sending.key));
        self.applied.push(sending.key.to_string());
        Attempt::Answered(applied(format!("credit for {}", sending.key)))
    }

    fn begin(&mut self, sending: &Sending<'_>) -> Begun {
        self.log.push(format!("begin {}", sending.key));
        self.applied.push(sending.key.to_string());
        self.out.push((sending.key.clone(), sending.attempt));
        Begun::InFlight
    }

    fn next_ended(&mut self) -> Option<Ended> {
        let (key, attempt) = self.out.pop()?;
        self.log.push(format!("end {key}"));
        let how = if self.lost.contains(&key.to_string()) {
            Attempt::TimedOut
        } else {
            Attempt::Answered(applied(format!("credit for {key}")))
        };
        Some(Ended { key, attempt, how })
    }

    fn look_up(&mut self, key: &IdempotencyKey, _call: &ToolCall) -> LookUp {
        self.log.push(format!("look up {key}"));
        if self.applied.contains(&key.to_string()) {
            LookUp::Found(Found {
                receipt: format!("credit for {key}"),
                finding: "billing holds a credit under the key".into(),
            })
        } else {
            LookUp::Absent
        }
    }
}

fn key(call: &str) -> IdempotencyKey {
    IdempotencyKey::per_call(RUN, call).expect("a key")
}

fn setup(worker: &str) -> WorkerSetup {
    WorkerSetup::new(worker, RUN, vec![credit_tool()])
}

fn run(ledger: &Ledger, worker: &str, billing: &mut Billing, clock: &mut Ticks) -> Ending {
    let setup = setup(worker);
    let mut executor = Executor::new(ledger.connect_again().expect("connects"), &setup);
    let mut worker = Worker::new(setup).expect("a usable setup");
    drive_run(&mut worker, &mut executor, &mut TwoCredits, billing, clock).expect("drives")
}

fn state(ledger: &Ledger) -> (u32, RunState) {
    let checkpoint = ledger.load_checkpoint(RUN).expect("reads").expect("saved");
    (checkpoint.version, checkpoint.run_state().expect("parses"))
}

fn status(ledger: &Ledger, call: &str) -> Status {
    ledger.record(&key(call)).expect("reads").expect("recorded").status
}

#[test]
fn both_requests_are_out_before_either_answer_and_the_answers_come_back_in_the_other_order() {
    let ledger = Ledger::open_memory_store();
    let mut billing = Billing::default();
    let ending = run(&ledger, "w1", &mut billing, &mut Ticks(0));
    assert_eq!(ending, Ending::Exited(Exit::Completed));
    assert_eq!(
        billing.log,
        [
            "begin refunds:c1",
            "begin refunds:c2",
            "end refunds:c2",
            "end refunds:c1"
        ],
        "both sends leave before any answer is taken; c2's answer is taken first"
    );
    let (version, state) = state(&ledger);
    assert_eq!(state.status, RunStatus::Completed);
    // Two calls with identical arguments are two credits under two keys, both completed.
    assert_eq!(
        (status(&ledger, "c1"), status(&ledger, "c2")),
        (Status::Completed, Status::Completed)
    );
    let told: Vec<&str> = state.transcript.iter().map(|(id, _)| id.as_str()).collect();
    assert_eq!(told, ["c2", "c1"], "the model is told in the order the answers came");
    // One save after the batch, one for `Done`: a worker saving after each call makes 3.
    assert_eq!(version, 2, "the checkpoint is saved once for the whole batch");
    let c1 = ledger.record(&key("c1")).expect("reads").expect("recorded");
    let c2 = ledger.record(&key("c2")).expect("reads").expect("recorded");
    assert!(c2.updated_at_ms < c1.updated_at_ms, "c2's outcome was recorded first");
}

#[test]
fn a_tool_that_sends_and_waits_runs_the_batch_one_call_after_another() {
    // The default `begin` sends and waits: correct, only nothing overlaps.
    struct Waits(Billing);
    impl ToolExecution for Waits {
        fn send(&mut self, sending: &Sending<'_>) -> Attempt {
            self.0.send(sending)
        }
        fn look_up(&mut self, key: &IdempotencyKey, call: &ToolCall) -> LookUp {
            self.0.look_up(key, call)
        }
    }
    let ledger = Ledger::open_memory_store();
    let setup = setup("w1");
    let mut executor = Executor::new(ledger.connect_again().expect("connects"), &setup);
    let mut worker = Worker::new(setup).expect("a usable setup");
    let mut tools = Waits(Billing::default());
    let ending = drive_run(&mut worker, &mut executor, &mut TwoCredits, &mut tools, &mut Ticks(0)).expect("drives");
    assert_eq!(ending, Ending::Exited(Exit::Completed));
    assert_eq!(tools.0.log, ["send-and-wait refunds:c1", "send-and-wait refunds:c2"]);
    let (version, state) = state(&ledger);
    assert_eq!((version, state.status), (2, RunStatus::Completed));
}

#[test]
fn a_lost_answer_for_one_of_two_is_looked_up_and_the_other_is_not_touched() {
    let ledger = Ledger::open_memory_store();
    let mut billing = Billing {
        lost: vec!["refunds:c1".into()],
        ..Billing::default()
    };
    let ending = run(&ledger, "w1", &mut billing, &mut Ticks(0));
    assert_eq!(ending, Ending::Exited(Exit::Completed));
    assert_eq!(
        billing.log,
        [
            "begin refunds:c1",
            "begin refunds:c2",
            "end refunds:c2",
            "end refunds:c1",
            "look up refunds:c1"
        ],
        "the timed-out call is looked up, never sent again; the answered one is not looked up"
    );
    assert_eq!(
        billing.applied,
        ["refunds:c1", "refunds:c2"],
        "each credit applied once"
    );
    assert_eq!(
        (status(&ledger, "c1"), status(&ledger, "c2")),
        (Status::Completed, Status::Completed)
    );
    assert_eq!(state(&ledger).1.status, RunStatus::Completed);
}

/// Drives `worker` by hand through the executor until it asks for the model, a send, or
/// nothing; feeds the model's decisions from `TwoCredits`.
fn step_until_send(
    worker: &mut Worker,
    executor: &mut Executor,
    mut command: Option<Command>,
    now: u64,
) -> Option<Drive> {
    while let Some(current) = command.take() {
        let step = executor.perform(current, now).expect("ledger");
        let input = match step.next {
            Next::Feed(input) => input,
            Next::Drive(Drive::AskModel { state }) => {
                let (decision, state) = TwoCredits.decide(&state).expect("decides");
                Input::ModelDecided { decision, state }
            }
            Next::Drive(drive) => return Some(drive),
            Next::Nothing => return None,
        };
        command = worker.handle(now, input).expect("takes it");
    }
    None
}

/// Worker w1 starts the batch; c1's answer comes before its driver says the request left (a
/// tool that sends and waits): the machine records it, and its next command (returned) is
/// c2's reservation.
fn first_answered(ledger: &Ledger) -> (Worker, Executor, Option<Command>) {
    let first = setup("w1");
    let mut executor = Executor::new(ledger.connect_again().expect("connects"), &first);
    let mut worker = Worker::new(first).expect("a usable setup");
    let start = worker.handle(1, Input::Start).expect("starts");
    let Some(Drive::Send { key: sent, attempt, .. }) = step_until_send(&mut worker, &mut executor, start, 2) else {
        panic!("the batch's first call is sent");
    };
    assert_eq!(sent, key("c1"));
    let answer = Input::Response {
        key: sent,
        attempt,
        answer: applied("credit for refunds:c1"),
    };
    let next = worker.handle(3, answer).expect("takes the answer");
    (worker, executor, next)
}

#[test]
fn a_crash_after_one_of_two_completed_redoes_nothing_and_waits_on_the_other() {
    let ledger = Ledger::open_memory_store();
    let (mut worker, mut executor, next) = first_answered(&ledger);
    let next = step_until_send(&mut worker, &mut executor, next, 4);
    assert!(
        matches!(&next, Some(Drive::Send { key: sent, .. }) if *sent == key("c2")),
        "{next:?}"
    );
    assert_eq!(status(&ledger, "c1"), Status::Completed);
    // The process dies here: c2 is reserved (started) and passed its send fence, nothing left.
    drop(worker);
    assert!(
        ledger.load_checkpoint(RUN).expect("reads").is_none(),
        "nothing was saved: the batch had not ended"
    );

    let mut billing = Billing::default();
    let ending = run(&ledger, "w2", &mut billing, &mut Ticks(10));
    // Recovery: the model makes the same batch; c1 comes back from the ledger, c2 is unknown
    // (reserved, past its send fence: it may have left): looked up, never sent again, and,
    // the hook finding nothing it can weigh, the run waits on c2 for a person.
    assert_eq!(
        billing.log,
        ["look up refunds:c2"],
        "nothing is sent again after the crash"
    );
    assert_eq!(ending, Ending::Parked(key("c2")));
    let (_, state) = state(&ledger);
    assert_eq!(status(&ledger, "c1"), Status::Completed);
    assert_eq!(
        status(&ledger, "c2"),
        Status::Started,
        "it stays started: the process died while it ran"
    );
    assert_eq!(
        state.status,
        RunStatus::AwaitingReconciliation {
            key: "refunds:c2".into()
        }
    );
    assert!(
        state
            .transcript
            .iter()
            .any(|(id, told)| id == "c1" && matches!(told, Told::Result { .. })),
        "c1's recorded result is the model's: {:?}",
        state.transcript
    );
}

#[test]
fn a_crash_before_the_second_call_was_reserved_sends_only_that_one_on_recovery() {
    let ledger = Ledger::open_memory_store();
    // c1 recorded completed; the machine's next command would reserve c2: the crash comes first.
    let (mut worker, mut executor, mut next) = first_answered(&ledger);
    while let Some(command) = next.take() {
        if matches!(command, Command::Reserve { .. }) {
            assert_eq!(command.key(), Some(&key("c2")));
            break;
        }
        let Next::Feed(input) = executor.perform(command, 4).expect("ledger").next else {
            panic!("only ledger steps until c2's reservation");
        };
        next = worker.handle(4, input).expect("takes it");
    }
    drop(worker);
    assert!(
        ledger.record(&key("c2")).expect("reads").is_none(),
        "c2 was never reserved"
    );

    let mut billing = Billing::default();
    assert_eq!(
        run(&ledger, "w2", &mut billing, &mut Ticks(10)),
        Ending::Exited(Exit::Completed)
    );
    assert_eq!(
        billing.log,
        ["begin refunds:c2", "end refunds:c2"],
        "only c2 is sent on recovery"
    );
    assert_eq!(
        (status(&ledger, "c1"), status(&ledger, "c2")),
        (Status::Completed, Status::Completed)
    );
}

#[test]
fn a_batch_of_answers_out_of_order_fed_by_hand_matches_each_to_its_call() {
    let ledger = Ledger::open_memory_store();
    let first = setup("w1");
    let mut executor = Executor::new(ledger.connect_again().expect("connects"), &first);
    let mut worker = Worker::new(first).expect("a usable setup");
    let start = worker.handle(1, Input::Start).expect("starts");
    let mut sends = Vec::new();
    let mut next = start;
    while let Some(Drive::Send { key, attempt, .. }) = step_until_send(&mut worker, &mut executor, next, 2) {
        sends.push((key.clone(), attempt));
        next = worker.handle(2, Input::Sent { key, attempt }).expect("takes sent");
    }
    assert_eq!(sends.len(), 2);
    assert_eq!(worker.in_flight().len(), 2, "both requests are out");
    // A timeout of an attempt no call waits on changes nothing.
    assert_eq!(
        worker
            .handle(
                3,
                Input::TimedOut {
                    key: key("c9"),
                    attempt: 1
                }
            )
            .expect("a stale timer"),
        None
    );
    for (key, attempt) in sends.into_iter().rev() {
        let answer = Input::Response {
            key: key.clone(),
            attempt,
            answer: applied(format!("credit for {key}")),
        };
        let next = worker.handle(4, answer).expect("takes the answer");
        step_until_send(&mut worker, &mut executor, next, 5);
    }
    assert!(worker.in_flight().is_empty());
    assert_eq!(
        (status(&ledger, "c1"), status(&ledger, "c2")),
        (Status::Completed, Status::Completed)
    );
}

#[test]
fn a_paused_batch_saves_every_call_it_waits_on_in_the_checkpoint() {
    // No hook: an unknown call pauses the run. Both answers are lost.
    let ledger = Ledger::open_memory_store();
    let setup = WorkerSetup::new(
        "w1",
        RUN,
        vec![ToolDeclaration::new("issue_credit", SideEffect::External)],
    );
    let mut executor = Executor::new(ledger.connect_again().expect("connects"), &setup);
    let mut worker = Worker::new(setup).expect("a usable setup");
    let mut billing = Billing {
        lost: vec!["refunds:c1".into(), "refunds:c2".into()],
        ..Billing::default()
    };
    let ending = drive_run(&mut worker, &mut executor, &mut TwoCredits, &mut billing, &mut Ticks(0)).expect("drives");
    assert_eq!(
        ending,
        Ending::Parked(key("c2")),
        "parked on the first call left unknown"
    );
    let (_, paused) = state(&ledger);
    assert_eq!(
        paused.status,
        RunStatus::AwaitingReconciliation {
            key: "refunds:c2".into()
        }
    );
    let pending: Vec<&str> = paused
        .pending
        .iter()
        .chain(&paused.pending_calls)
        .map(|call| call.id.as_str())
        .collect();
    assert_eq!(
        pending,
        ["c2", "c1"],
        "the checkpoint holds every call the run waits on"
    );
    assert_eq!(
        (status(&ledger, "c1"), status(&ledger, "c2")),
        (Status::Indeterminate, Status::Indeterminate)
    );

    // An operator settles c2 only: the run resumed tells it, then waits on c1 (saved first).
    let mut operator_ledger = ledger.connect_again().expect("connects");
    let settle = |status: Status| ResolveRequest::new(status, "billing's books checked by hand", "ops@example.com");
    resolve(&mut operator_ledger, &key("c2"), &settle(Status::Completed), 100).expect("settled");
    let again = |worker: &str| {
        let setup = WorkerSetup::new(
            worker,
            RUN,
            vec![ToolDeclaration::new("issue_credit", SideEffect::External)],
        );
        let mut executor = Executor::new(ledger.connect_again().expect("connects"), &setup);
        let mut worker = Worker::new(setup).expect("a usable setup");
        let mut billing = Billing::default();
        let ending = drive_run(
            &mut worker,
            &mut executor,
            &mut TwoCredits,
            &mut billing,
            &mut Ticks(200),
        )
        .expect("drives");
        assert!(billing.log.is_empty(), "nothing is sent again: {:?}", billing.log);
        ending
    };
    assert_eq!(again("w2"), Ending::Parked(key("c1")));
    let (_, waiting) = state(&ledger);
    assert_eq!(
        (
            waiting.status.clone(),
            waiting.pending.map(|call| call.id),
            waiting.pending_calls.len()
        ),
        (
            RunStatus::AwaitingReconciliation {
                key: "refunds:c1".into()
            },
            Some("c1".to_owned()),
            0
        )
    );
    resolve(&mut operator_ledger, &key("c1"), &settle(Status::Failed), 300).expect("settled");
    assert_eq!(again("w3"), Ending::Exited(Exit::Completed));
    let (_, done) = state(&ledger);
    assert_eq!(done.status, RunStatus::Completed);
    let told: Vec<(&str, bool)> = done
        .transcript
        .iter()
        .map(|(id, told)| (id.as_str(), told.nothing_stands()))
        .collect();
    assert_eq!(told, [("c2", false), ("c1", true)], "each call told as it was settled");
}

#[test]
fn a_bad_batch_is_a_typed_error_naming_what_is_wrong() {
    let call = |id: &str| ToolCall {
        id: id.into(),
        tool: "issue_credit".into(),
        item: 0,
        arguments: Arguments::new(serde_json::json!({})),
    };
    assert_eq!(Batch::new(Vec::new()), Err(BatchError::Empty));
    let twice = Batch::new(vec![call("c1"), call("c2"), call("c1")]).expect_err("an id twice");
    assert_eq!(
        twice,
        BatchError::DuplicateCallId {
            id: "c1".into(),
            first: 1,
            second: 3
        }
    );
    assert!(twice.to_string().contains("`c1` is used twice"), "{twice}");
    let many: Vec<ToolCall> = (0..=BATCH_CALLS_MAX).map(|n| call(&format!("c{n}"))).collect();
    assert!(
        matches!(Batch::new(many), Err(BatchError::TooMany { calls, max }) if calls == BATCH_CALLS_MAX + 1 && max == BATCH_CALLS_MAX)
    );
    // Read from JSON (a decision a driver received), the same checks hold.
    let text = serde_json::to_string(&vec![call("c1"), call("c1")]).expect("JSON");
    let read: Result<Decision, _> = serde_json::from_str(&format!(r#"{{"Calls": {text}}}"#));
    let error = read.expect_err("a batch with an id twice does not parse").to_string();
    assert!(error.contains("used twice"), "{error}");
    assert_eq!(
        next_calls(&RunState::default(), &[]).map(|(decision, _)| decision),
        Err(BatchError::Empty)
    );
}
