//! The worker machine driven alone, with the executor on a memory-store ledger and this test
//! as the driver: the sans-IO boundary tested as one. Each test pins one hole the runtime had,
//! where a decision that was true when made could become false, or stored data could panic it.

use twice_runtime::ToolAnswer;
use twice_runtime::executor::{Drive, Executor, Next, Report};
use twice_runtime::guards::Guards;
use twice_runtime::key::IdempotencyKey;
use twice_runtime::ledger::{HistoryEvent, Ledger, RunEvent};
use twice_runtime::operator::{self, ResolveRequest};
use twice_runtime::rules::Status;
use twice_runtime::run::{Arguments, Decision, RunState, RunStatus, Settled, Told, ToolCall};
use twice_runtime::tool::{SideEffect, ToolDeclaration};
use twice_runtime::worker::{CallRefused, Command, Held, Input, WaitReason, Words, Worker, WorkerSetup, WorkerState};

const RUN: &str = "r1";

fn setup() -> WorkerSetup {
    WorkerSetup::new(
        "w1",
        RUN,
        vec![
            ToolDeclaration::new("issue_credit", SideEffect::External)
                .with_operation("credit")
                .with_reconcile()
                .with_compensation(),
        ],
    )
    .with_guards(Guards::all_on())
    .with_lease_ms(150)
    .with_words(Words::FACTS)
}

fn call(id: &str) -> ToolCall {
    ToolCall {
        id: id.into(),
        tool: "issue_credit".into(),
        item: 0,
        arguments: Arguments::new(serde_json::json!({
            "account": "acct_ada",
            "amount_cents": 2500,
            "memo": "Refund for order #1001",
        })),
    }
}

fn key(text: &str) -> IdempotencyKey {
    IdempotencyKey::parse(text).unwrap()
}

/// A worker and its executor on a fresh memory ledger (a second connection is returned for
/// the test's own reads and an operator's moves).
fn machine() -> (Worker, Executor, Ledger) {
    let ledger = Ledger::open_memory_store();
    let operator_ledger = ledger.connect_again().unwrap();
    let setup = setup();
    let executor = Executor::new(ledger, &setup);
    (Worker::new(setup).expect("a usable setup"), executor, operator_ledger)
}

/// Runs the machine's ledger commands through the executor until it needs the driver.
fn until_driven(worker: &mut Worker, executor: &mut Executor, mut next: Option<Command>, now_ms: u64) -> Option<Drive> {
    loop {
        let command = next?;
        let step = executor.perform(command, now_ms).expect("the ledger answers");
        match step.next {
            Next::Feed(input) => next = worker.handle(now_ms, input).expect("the machine takes the input"),
            Next::Drive(drive) => return Some(drive),
            Next::Nothing => return None,
        }
    }
}

/// Starts the machine and answers the model with a call of `c1`; returns what the driver is
/// asked to do after the reservation.
fn start_and_call(worker: &mut Worker, executor: &mut Executor) -> Command {
    let first = worker.handle(0, Input::Start).expect("the machine takes the input");
    let Some(Drive::AskModel { state }) = until_driven(worker, executor, first, 0) else {
        panic!("the model is asked first");
    };
    let mut next_state = state.clone();
    next_state.next_call_number = 2;
    next_state.calls_for_item = 1;
    let reserve = worker
        .handle(
            1,
            Input::ModelDecided {
                decision: Decision::Call(call("c1")),
                state: next_state,
            },
        )
        .expect("the machine takes the input")
        .expect("a reservation");
    assert!(matches!(reserve, Command::Reserve { .. }), "{reserve:?}");
    let step = executor.perform(reserve, 2).unwrap();
    let Next::Feed(input) = step.next else {
        panic!("a reservation feeds the machine")
    };
    worker
        .handle(2, input)
        .expect("the machine takes the input")
        .expect("the send comes next")
}

#[test]
fn a_decision_made_before_the_send_stays_true_the_send_is_fenced_on_its_record() {
    let (mut worker, mut executor, mut operator_ledger) = machine();
    let invoke = start_and_call(&mut worker, &mut executor);
    assert!(matches!(invoke, Command::Invoke { .. }), "{invoke:?}");
    // Between the reservation and the send, an operator settles the call `failed`: true now,
    // nothing has left. The call is `started`, so the operator has to say they know it may be
    // in flight; without that, the resolve is refused and nothing is recorded.
    let mut request = ResolveRequest::new(Status::Failed, "billing has nothing for it", "op-ana");
    request.expected_status = Some(Status::Started);
    assert!(matches!(
        operator::resolve(&mut operator_ledger, &key("r1:c1"), &request, 3),
        Err(operator::OperatorError::InFlight { attempts: 0, .. })
    ));
    request.acknowledge_in_flight = true;
    operator::resolve(&mut operator_ledger, &key("r1:c1"), &request, 3).unwrap();
    let step = executor.perform(invoke, 4).unwrap();
    assert!(
        matches!(step.report, Some(Report::SendRefused { .. })),
        "the fence refused: {:?}",
        step.report
    );
    let Next::Feed(refused) = step.next else {
        panic!("nothing is sent: {:?}", step.next)
    };
    let save = worker
        .handle(4, refused)
        .expect("the machine takes the input")
        .expect("the worker follows the record");
    let notes = worker.take_notes();
    assert!(notes.iter().any(|note| matches!(
        note.held,
        Held::SendRefused {
            status: Some(Status::Failed),
            ..
        }
    )));
    let Command::SaveCheckpoint { state, .. } = save else {
        panic!("{save:?}")
    };
    assert_eq!(
        state.last_told,
        Some(Told::SettledByOperator {
            settled: Settled::DidNotTakeEffect,
            operator: "op-ana".into(),
            reason: "billing has nothing for it".into(),
        }),
        "the model hears the decision, whose it is and why"
    );
    let history = operator_ledger.history(&key("r1:c1")).unwrap();
    assert_eq!(history.last().unwrap().event, HistoryEvent::SendRefused);
    assert_eq!(operator_ledger.record(&key("r1:c1")).unwrap().unwrap().attempts, 0);
}

#[test]
fn an_unreadable_checkpoint_makes_the_run_wait_for_a_person_not_start_over() {
    let (mut worker, mut executor, mut operator_ledger) = machine();
    operator_ledger
        .save_checkpoint(RUN, "running", "{\"a state\": \"of another build\"}", "w0", None, 1)
        .unwrap();
    let first = worker.handle(10, Input::Start).expect("the machine takes the input");
    let drive = until_driven(&mut worker, &mut executor, first, 10);
    let Some(Drive::WaitForPerson { reason }) = drive else {
        panic!("the run is not driven: {drive:?}")
    };
    assert!(
        matches!(&reason, WaitReason::CheckpointUnreadable { run_id, version: 1, .. } if run_id.as_str() == RUN),
        "{reason:?}"
    );
    assert_eq!(worker.state(), WorkerState::WaitingForPerson);
    assert!(worker.is_done());
    let run_history = operator_ledger.run_history(Some(RUN)).unwrap();
    assert_eq!(run_history.len(), 1);
    assert_eq!(run_history[0].event, RunEvent::WaitsForPerson);
    assert_eq!(
        run_history[0].detail.as_deref(),
        Some((Words::FACTS.wait)(&reason).as_str())
    );
    assert!(
        operator_ledger.all_records().unwrap().is_empty(),
        "nothing was called again"
    );
    assert_eq!(
        operator_ledger.load_checkpoint(RUN).unwrap().unwrap().version,
        1,
        "the checkpoint is kept"
    );
}

/// A checkpoint that says the run waits on a call, and holds `pending`.
fn awaiting(pending: ToolCall, key_text: &str) -> String {
    RunState {
        status: RunStatus::AwaitingReconciliation { key: key_text.into() },
        pending: Some(pending),
        ..RunState::default()
    }
    .to_json()
}

#[test]
fn stored_calls_it_cannot_key_or_run_stop_the_run_for_a_person_never_panic() {
    let unknown_tool = ToolCall {
        tool: "wire_money".into(),
        ..call("c1")
    };
    let empty_id = ToolCall {
        id: String::new(),
        ..call("c1")
    };
    // A stored call, the key the run is stuck on, and what the reason to wait must say.
    type Check<'a> = (ToolCall, &'a str, fn(&WaitReason) -> bool);
    let checks: [Check; 3] = [
        (
            unknown_tool,
            "r1:c1",
            |reason| matches!(reason, WaitReason::PendingCallRefused(CallRefused::UnknownTool(tool)) if tool.as_str() == "wire_money"),
        ),
        (empty_id, "r1:", |reason| {
            matches!(reason, WaitReason::PendingCallRefused(CallRefused::BadKey(_)))
        }),
        (
            call("c2"),
            "r1:c1",
            |reason| matches!(reason, WaitReason::KeyMismatch { awaited, found } if awaited == "r1:c1" && found.as_str() == "r1:c2"),
        ),
    ];
    for (pending, key_text, expected) in checks {
        let (mut worker, mut executor, mut operator_ledger) = machine();
        operator_ledger
            .save_checkpoint(
                RUN,
                "awaiting_reconciliation",
                &awaiting(pending, key_text),
                "w0",
                None,
                1,
            )
            .unwrap();
        let first = worker.handle(10, Input::Start).expect("the machine takes the input");
        let drive = until_driven(&mut worker, &mut executor, first, 10);
        let Some(Drive::WaitForPerson { reason }) = drive else {
            panic!("{key_text}: {drive:?}")
        };
        assert!(expected(&reason), "{reason:?}");
        assert_eq!(operator_ledger.run_history(Some(RUN)).unwrap().len(), 1);
    }
}

#[test]
fn a_state_the_driver_cannot_use_stops_the_run_for_a_person() {
    let (mut worker, mut executor, operator_ledger) = machine();
    let first = worker.handle(0, Input::Start).expect("the machine takes the input");
    assert!(matches!(
        until_driven(&mut worker, &mut executor, first, 0),
        Some(Drive::AskModel { .. })
    ));
    let next = worker
        .handle(
            1,
            Input::StateUnusable {
                detail: "the run's next tool call number is 4294967295, the most it may be".into(),
            },
        )
        .expect("the machine takes the input");
    assert!(matches!(
        until_driven(&mut worker, &mut executor, next, 1),
        Some(Drive::WaitForPerson { .. })
    ));
    assert_eq!(operator_ledger.run_history(None).unwrap().len(), 1);
}

#[test]
fn a_late_answer_is_logged_under_its_own_key_whatever_the_worker_is_doing() {
    let (mut worker, mut executor, operator_ledger) = machine();
    let invoke = start_and_call(&mut worker, &mut executor);
    assert!(matches!(
        until_driven(&mut worker, &mut executor, Some(invoke), 3),
        Some(Drive::Send { .. })
    ));
    // An answer to some other call (an earlier one of this run, say) arrives while r1:c1 waits.
    let answer = ToolAnswer::Applied {
        receipt: "{\"applied\":{\"credit_id\":\"cr_0009\"}}".into(),
    };
    let log = worker
        .handle(
            5,
            Input::Response {
                key: key("r1:c0"),
                attempt: 1,
                answer: answer.clone(),
            },
        )
        .expect("the machine takes the input")
        .expect("a late answer is logged");
    let Command::LogLateOutcome { key: logged, .. } = &log else {
        panic!("{log:?}")
    };
    assert_eq!(logged.as_str(), "r1:c0", "under its own key, not the call in progress");
    let step = executor.perform(log, 5).unwrap();
    assert_eq!(
        step.next,
        Next::Nothing,
        "the worker goes on waiting for its own answer"
    );
    let history = operator_ledger.history(&key("r1:c0")).unwrap();
    assert_eq!(history.len(), 1);
    assert_eq!(history[0].event, HistoryEvent::LateOutcomeIgnored);
    assert_eq!(worker.awaiting_attempt(), Some(1), "r1:c1 is still awaited");
}

#[test]
fn a_parked_worker_asked_to_look_again_asks_the_hook_anew() {
    let (mut worker, mut executor, _operator_ledger) = machine();
    let invoke = start_and_call(&mut worker, &mut executor);
    assert!(matches!(
        until_driven(&mut worker, &mut executor, Some(invoke), 3),
        Some(Drive::Send { .. })
    ));
    let record = worker
        .handle(
            200,
            Input::TimedOut {
                key: key("r1:c1"),
                attempt: 1,
            },
        )
        .unwrap()
        .unwrap();
    let Some(Drive::LookUp { key: looked_up, .. }) = until_driven(&mut worker, &mut executor, Some(record), 200) else {
        panic!("an unknown call asks the hook first")
    };
    let step = executor.reconciled(looked_up, None, 210).unwrap();
    let Next::Feed(unknown) = step.next else { panic!() };
    let pause = worker.handle(210, unknown).expect("the machine takes the input");
    assert!(matches!(
        until_driven(&mut worker, &mut executor, pause, 210),
        Some(Drive::Park { .. })
    ));
    assert_eq!(worker.state(), WorkerState::Parked);
    // Something that could settle it changed (its owner died, billing applied a request): look.
    let read = worker
        .handle(300, Input::LookAgain)
        .expect("the machine takes the input");
    let drive = until_driven(&mut worker, &mut executor, read, 300);
    assert!(
        matches!(drive, Some(Drive::LookUp { .. })),
        "the hook is asked again: {drive:?}"
    );
    // Still nothing: it parks again without saving a second time (the checkpoint says so already).
    let step = executor.reconciled(key("r1:c1"), None, 310).unwrap();
    let Next::Feed(unknown) = step.next else { panic!() };
    let again = worker.handle(310, unknown).expect("the machine takes the input");
    assert!(matches!(again, Some(Command::Park { .. })), "{again:?}");
}

/// Drives `c1` to completion and then has the model give up on the run: what the machine
/// does with the failed run's completed refund under `guards`. Returns the worker, the
/// compensations the driver was asked for, and the test's ledger.
fn refund_then_give_up(guards: Guards) -> (Worker, Vec<IdempotencyKey>, Ledger) {
    let ledger = Ledger::open_memory_store();
    let observer = ledger.connect_again().unwrap();
    let setup = setup().with_guards(guards);
    let mut executor = Executor::new(ledger, &setup);
    let mut worker = Worker::new(setup).expect("a usable setup");
    let invoke = start_and_call(&mut worker, &mut executor);
    let Some(Drive::Send { key: sent, attempt, .. }) = until_driven(&mut worker, &mut executor, Some(invoke), 3) else {
        panic!("the refund is sent");
    };
    let answer = ToolAnswer::Applied {
        receipt: "credit_id=cr_0001".into(),
    };
    let after = worker
        .handle(
            4,
            Input::Response {
                key: sent,
                attempt,
                answer,
            },
        )
        .expect("the machine takes the input");
    let Some(Drive::AskModel { state }) = until_driven(&mut worker, &mut executor, after, 5) else {
        panic!("the model hears the refund took effect");
    };
    assert_eq!(state.took_effect, vec![call("c1")], "the run knows what took effect");
    let mut next = worker
        .handle(
            6,
            Input::ModelDecided {
                decision: Decision::FailRun {
                    reason: "a later step failed".into(),
                },
                state,
            },
        )
        .expect("the machine takes the input");
    let mut compensations = Vec::new();
    loop {
        match until_driven(&mut worker, &mut executor, next, 7) {
            Some(Drive::Undo { key, .. }) => {
                compensations.push(key.clone());
                let step = executor.undone(key, "billing posts a reversal", 8).unwrap();
                let Next::Feed(input) = step.next else {
                    panic!("the machine hears the compensation")
                };
                next = worker.handle(8, input).expect("the machine takes the input");
            }
            Some(Drive::Exit) => break,
            other => panic!("unexpected {other:?}"),
        }
    }
    assert!(
        matches!(&worker.run_state().status, RunStatus::Failed { reason } if reason == "a later step failed"),
        "{:?}",
        worker.run_state().status
    );
    (worker, compensations, observer)
}

#[test]
fn a_naive_runtime_compensates_every_call_of_a_failed_run_that_took_effect() {
    let naive = Guards::all_on().with(twice_runtime::Guard::NoReflexCompensation, false);
    let (worker, compensations, observer) = refund_then_give_up(naive);
    assert_eq!(compensations, vec![key("r1:c1")]);
    assert_eq!(worker.undone_on_failure(), [key("r1:c1")]);
    let record = observer.record(&key("r1:c1")).unwrap().expect("a record");
    assert_eq!(record.status, Status::Compensated, "completed → compensated, by reflex");
    let checkpoint = observer.load_checkpoint(RUN).unwrap().expect("saved");
    assert_eq!(checkpoint.status, "failed");
}

#[test]
fn the_runtime_leaves_a_failed_runs_effects_for_an_operator() {
    let (mut worker, compensations, observer) = refund_then_give_up(Guards::all_on());
    assert!(compensations.is_empty(), "nothing is undone by reflex");
    let notes = worker.take_notes();
    assert!(
        notes.iter().any(|note| note.held
            == Held::FailedRunNotUndone {
                keys: vec!["r1:c1".into()]
            }),
        "{notes:?}"
    );
    let record = observer.record(&key("r1:c1")).unwrap().expect("a record");
    assert_eq!(record.status, Status::Completed, "the refund stands");
}

#[test]
fn a_tool_that_fails_the_contract_check_keeps_its_run_from_starting_only_while_the_check_is_on() {
    for (attempts, takes_key, words) in [
        (Some(3), true, "declared external but is allowed 3 attempts"),
        (None, false, "takes no idempotency key"),
    ] {
        let ledger = Ledger::open_memory_store();
        let operator_ledger = ledger.connect_again().unwrap();
        let mut setup = setup();
        setup.tools[0].attempts = attempts;
        setup.tools[0].takes_key = takes_key;
        let mut executor = Executor::new(ledger, &setup);
        let mut worker = Worker::new(setup.clone()).expect("a usable setup");
        let first = worker.handle(0, Input::Start).expect("the machine takes the input");
        assert!(
            matches!(first, Some(Command::WaitForPerson { .. })),
            "refused before the checkpoint is even loaded: {first:?}"
        );
        let notes = worker.take_notes();
        assert_eq!(notes.len(), 1);
        let Held::ContractRefused { tool, violation } = &notes[0].held else {
            panic!("{notes:?}")
        };
        assert_eq!(tool.as_str(), "issue_credit");
        assert!(violation.to_string().contains(words), "{violation}");
        let drive = until_driven(&mut worker, &mut executor, first, 0);
        let Some(Drive::WaitForPerson { reason }) = drive else {
            panic!("the run is not driven: {drive:?}")
        };
        assert!(
            matches!(&reason, WaitReason::ContractRefused { violation, .. } if violation.to_string().contains(words)),
            "{reason:?}"
        );
        assert!(worker.is_done());
        assert!(operator_ledger.all_records().unwrap().is_empty(), "nothing reserved");
        assert_eq!(
            operator_ledger.run_history(Some(RUN)).unwrap()[0].event,
            RunEvent::WaitsForPerson
        );

        // The check off: the run starts, and the declaration is obeyed as written.
        let unchecked_guards = setup.guards().with(twice_runtime::guards::Guard::ToolContract, false);
        setup = setup.with_guards(unchecked_guards);
        let mut unchecked = Worker::new(setup).expect("a usable setup");
        assert_eq!(
            unchecked.handle(0, Input::Start).expect("the machine takes the input"),
            Some(Command::LoadCheckpoint)
        );
        assert!(unchecked.take_notes().is_empty());
    }
}

/// Table 6 weighs "nothing there" as of when the lookup was asked: an answer that comes back
/// after the settle time has passed proves nothing if the question was put before it — a
/// request the provider applied while the lookup was on its way would not be in the answer.
#[test]
fn nothing_found_is_weighed_as_of_when_the_lookup_was_asked_not_when_it_answered() {
    let settled_at = |asked_at_ms: u64| {
        let ledger = Ledger::open_memory_store();
        let mut setup = setup();
        setup.tools[0].lookup_settle_ms = Some(500);
        let mut executor = Executor::new(ledger, &setup);
        let mut worker = Worker::new(setup).expect("a usable setup");
        let invoke = start_and_call(&mut worker, &mut executor);
        assert!(matches!(
            until_driven(&mut worker, &mut executor, Some(invoke), 3),
            Some(Drive::Send { .. })
        ));
        let record = worker
            .handle(
                200,
                Input::TimedOut {
                    key: key("r1:c1"),
                    attempt: 1,
                },
            )
            .expect("the machine takes the input");
        let Some(Drive::LookUp { key: looked_up, .. }) = until_driven(&mut worker, &mut executor, record, 200) else {
            panic!("an unknown call asks the hook first")
        };
        let step = executor.reconciled(looked_up, None, asked_at_ms).unwrap();
        let Next::Feed(not_found) = step.next else { panic!() };
        // The answer is handled at 800 ms, 600 ms after the unknown outcome was written.
        worker.handle(800, not_found).expect("the machine takes the input")
    };
    let asked_too_soon = settled_at(600);
    assert!(
        matches!(asked_too_soon, Some(Command::WaitToLookAgain { after_ms: 100, .. })),
        "asked 400 ms after the last write, within the 500 ms settle time: {asked_too_soon:?}"
    );
    let asked_past = settled_at(750);
    assert!(
        matches!(asked_past, Some(Command::SettleNotFound { .. })),
        "asked 550 ms after: {asked_past:?}"
    );
}
