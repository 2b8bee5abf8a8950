//! The send fence folded into the reservation (decision table 5): on every store of this
//! crate the folded path answers as the two steps would and refuses what they refuse
//! (`stores/fold_cases.rs`, shared with the PostgreSQL store's tests); no operator decision
//! can land between the two; and the executor folds only for a driver that declared it sends
//! right after reserving — one commit fewer a call, counted on the SQLite file.

mod stores;

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use stores::fold_cases as cases;
use tempfile::TempDir;
use twice_runtime::executor::{Drive, Executor, Next, Report};
use twice_runtime::ledger::{GroupSettings, HistoryEvent, Ledger};
use twice_runtime::rules::{Outcome, SendTiming, Status};
use twice_runtime::run::{Arguments, Decision, ToolCall};
use twice_runtime::tool::{SideEffect, ToolDeclaration};
use twice_runtime::worker::{Command, Input, Words, Worker, WorkerSetup};
use twice_runtime::{IdempotencyKey, ToolAnswer};

/// The stores of this crate, each a fresh ledger as two connections.
fn stores() -> Vec<(&'static str, TempDir, Ledger, Ledger)> {
    let folder = || tempfile::tempdir().unwrap();
    let file = folder();
    let file_ledger = Ledger::open(file.path().join("ledger.sqlite")).unwrap();
    let grouped = folder();
    let grouped_ledger = Ledger::open_grouped(&grouped.path().join("ledger.sqlite"), GroupSettings::default()).unwrap();
    let memory = Ledger::open_memory().unwrap();
    let memory_store = Ledger::open_memory_store();
    [
        ("sqlite file", file, file_ledger),
        ("sqlite file, commit group", grouped, grouped_ledger),
        ("sqlite memory", folder(), memory),
        ("memory store", folder(), memory_store),
    ]
    .into_iter()
    .map(|(name, folder, ledger)| {
        let other = ledger.connect_again().unwrap();
        (name, folder, ledger, other)
    })
    .collect()
}

#[test]
fn a_new_key_is_reserved_and_attempted_in_one_go_on_every_store() {
    for (name, _folder, mut worker, _other) in stores() {
        eprintln!("{name}");
        cases::a_new_key_is_reserved_and_its_first_attempt_counted_together(&mut worker);
    }
}

#[test]
fn the_folded_path_refuses_what_the_reservation_refuses_on_every_store() {
    for (name, _folder, mut worker, mut other) in stores() {
        eprintln!("{name}");
        cases::what_does_not_run_is_neither_reserved_nor_attempted(&mut worker, &mut other);
        cases::a_failed_call_runs_again_with_its_attempt_counted(&mut worker);
    }
}

#[test]
fn no_operator_decision_lands_between_a_folded_reservation_and_its_attempt_on_every_store() {
    for (name, _folder, mut worker, mut operator) in stores() {
        eprintln!("{name}");
        cases::an_operator_cannot_decide_between_a_folded_reservation_and_its_attempt(&mut worker, &mut operator);
    }
}

#[test]
fn under_contention_no_decision_falls_between_on_files_and_the_memory_store() {
    // The shared-cache SQLite memory ledger answers contention with `Locked` at once (it is
    // for one thread); the others queue.
    for (name, _folder, worker, operator) in stores() {
        if name == "sqlite memory" {
            continue;
        }
        eprintln!("{name}");
        cases::under_contention_no_decision_falls_between(worker, operator);
    }
}

// ----- the executor -----

fn setup() -> WorkerSetup {
    WorkerSetup::new(
        "w1",
        "r1",
        vec![
            ToolDeclaration::new("issue_credit", SideEffect::External)
                .with_operation("credit")
                .with_reconcile()
                .with_compensation(),
        ],
    )
    .with_words(Words::FACTS)
}

fn credit(id: &str) -> ToolCall {
    ToolCall {
        id: id.into(),
        tool: "issue_credit".into(),
        item: 0,
        arguments: Arguments::new(
            serde_json::json!({"account": "acct_ada", "amount_cents": 2500, "memo": "Refund for order #1001"}),
        ),
    }
}

/// One call driven from the model's decision to its recorded outcome, with the commits on the
/// worker's file ledger counted; returns the commits and the history events of the call.
fn one_call(timing: SendTiming) -> (u32, Vec<HistoryEvent>) {
    let folder = tempfile::tempdir().unwrap();
    let ledger = Ledger::open(folder.path().join("ledger.sqlite")).unwrap();
    let commits = Arc::new(AtomicU32::new(0));
    let counter = Arc::clone(&commits);
    ledger
        .refuse_commits_unless(move || {
            counter.fetch_add(1, Ordering::Relaxed);
            true
        })
        .unwrap();
    let setup = setup();
    let mut executor = Executor::new(ledger, &setup).with_send_timing(timing);
    let mut worker = Worker::new(setup).expect("a usable setup");
    let mut next = worker.handle(0, Input::Start).expect("the machine takes the input");
    let mut answered = false;
    let mut commits_at_decision = 0;
    let mut state_seen = None;
    while let Some(command) = next.take() {
        let step = executor.perform(command, 1).unwrap();
        next = match step.next {
            Next::Feed(input) => worker.handle(1, input).expect("the machine takes the input"),
            Next::Drive(Drive::AskModel { state }) if state_seen.is_none() => {
                commits_at_decision = commits.load(Ordering::Relaxed);
                state_seen = Some(state.clone());
                let mut after = state;
                after.next_call_number = 2;
                after.calls_for_item = 1;
                worker
                    .handle(
                        1,
                        Input::ModelDecided {
                            decision: Decision::Call(credit("c1")),
                            state: after,
                        },
                    )
                    .expect("the machine takes the input")
            }
            Next::Drive(Drive::Send { key, attempt, .. }) => {
                assert!(!answered, "one send");
                answered = true;
                if let Some(Report::AttemptBegun { fenced, .. }) = &step.report {
                    assert!(fenced, "the send passed the fence");
                } else {
                    panic!("a send is reported as begun: {:?}", step.report);
                }
                worker
                    .handle(
                        1,
                        Input::Response {
                            key,
                            attempt,
                            answer: ToolAnswer::Applied { receipt: "cr_1".into() },
                        },
                    )
                    .expect("the machine takes the input")
            }
            // The outcome is recorded: stop before the checkpoint save.
            Next::Drive(_) | Next::Nothing => None,
        };
        if let Some(Command::SaveCheckpoint { .. }) = &next {
            break;
        }
    }
    assert!(answered, "the call was sent");
    let key = IdempotencyKey::per_call("r1", "c1").unwrap();
    let record = executor.ledger().record(&key).unwrap().unwrap();
    assert_eq!((record.status, record.attempts), (Status::Completed, 1));
    let events = executor
        .ledger()
        .history(&key)
        .unwrap()
        .iter()
        .map(|line| line.event)
        .collect();
    (commits.load(Ordering::Relaxed) - commits_at_decision, events)
}

#[test]
fn a_driver_that_sends_right_after_reserving_makes_one_commit_fewer_a_call() {
    let (split_commits, split_events) = one_call(SendTiming::Separate);
    let (folded_commits, folded_events) = one_call(SendTiming::RightAfterReserving);
    assert_eq!(split_commits, 3, "reserve, the fence, the outcome");
    assert_eq!(folded_commits, 2, "reserve with the fence, the outcome");
    // The same rows and lines either way: only the commits between them differ.
    assert_eq!(split_events, folded_events);
    assert_eq!(
        folded_events,
        [
            HistoryEvent::Reserved,
            HistoryEvent::Attempt,
            HistoryEvent::Outcome(Outcome::Completed)
        ]
    );
}

#[test]
fn a_folded_fence_counts_only_for_the_send_right_after_its_reservation() {
    // The simulator's default keeps the phases split: a decision between them is seen.
    let ledger = Ledger::open_memory_store();
    let mut operator = ledger.connect_again().unwrap();
    let setup = setup();
    let mut executor = Executor::new(ledger, &setup).with_send_timing(SendTiming::RightAfterReserving);
    let key = IdempotencyKey::per_call("r1", "c1").unwrap();
    let reserve = Command::Reserve {
        key: key.clone(),
        call: credit("c1"),
        side_effect: SideEffect::External,
        lease_ms: None,
        checkpoint_version: None,
    };
    executor.perform(reserve, 1).unwrap();
    // Something else comes first (a read), so the fold does not carry over to a later send:
    // that send is fenced on its own, and here refused after an operator's decision.
    executor.perform(Command::ReadRecord { key: key.clone() }, 2).unwrap();
    let resolve = twice_runtime::ledger::Settlement {
        to: Status::Failed,
        expected: Some(Status::Started),
        expected_attempts: None,
        actor: "op",
        event: HistoryEvent::Resolved,
        reason: Some("billing has nothing"),
        result: None,
        detail: None,
        settles_started: true,
    };
    operator.settle(&key, &resolve, 3).unwrap();
    let invoke = Command::Invoke {
        key: key.clone(),
        downstream_key: Some(key.clone()),
        call: credit("c1"),
        attempt: 1,
    };
    let step = executor.perform(invoke, 4).unwrap();
    assert!(
        matches!(step.report, Some(Report::SendRefused { .. })),
        "{:?}",
        step.report
    );
}

/// The time a send hands its driver to stamp the request with, when the send command is
/// performed `late_by_ms` after the reservation (a process paused between the two), and the
/// call's record as the ledger then holds it.
fn send_stamp(timing: SendTiming, late_by_ms: u64) -> (u64, u64) {
    let reserved_at_ms = 1_000;
    let ledger = Ledger::open_memory_store();
    let setup = setup();
    let mut executor = Executor::new(ledger, &setup).with_send_timing(timing);
    let mut worker = Worker::new(setup).expect("a usable setup");
    let mut now_ms = reserved_at_ms;
    let mut next = worker
        .handle(now_ms, Input::Start)
        .expect("the machine takes the input");
    let mut decided = false;
    while let Some(command) = next.take() {
        let reserving = matches!(command, Command::Reserve { .. });
        let step = executor.perform(command, now_ms).unwrap();
        if reserving {
            now_ms += late_by_ms;
        }
        next = match step.next {
            Next::Feed(input) => worker.handle(now_ms, input).expect("the machine takes the input"),
            Next::Drive(Drive::AskModel { state }) if !decided => {
                decided = true;
                let mut after = state;
                after.next_call_number = 2;
                after.calls_for_item = 1;
                worker
                    .handle(
                        now_ms,
                        Input::ModelDecided {
                            decision: Decision::Call(credit("c1")),
                            state: after,
                        },
                    )
                    .expect("the machine takes the input")
            }
            Next::Drive(Drive::Send {
                key, recorded_at_ms, ..
            }) => {
                let record = executor.ledger().record(&key).unwrap().unwrap();
                return (recorded_at_ms, record.updated_at_ms);
            }
            other => panic!("a call reserved and sent, not {other:?}"),
        };
    }
    panic!("the call was never sent");
}

/// A provider that refuses requests arriving too long after their stamp only bounds what the
/// ledger knows if the stamp is the ledger's: with the fence folded into the reservation the
/// send command writes nothing, so a process paused before it must still stamp the
/// reservation's time, never the later clock (the drill's guarded double of issue 23).
#[test]
fn a_send_is_stamped_with_the_ledgers_record_of_its_attempt_however_late_it_leaves() {
    assert_eq!(
        send_stamp(SendTiming::RightAfterReserving, 700),
        (1_000, 1_000),
        "folded: the reservation's time, not the send's"
    );
    assert_eq!(
        send_stamp(SendTiming::Separate, 700),
        (1_700, 1_700),
        "separate: the fence's own write, at the send"
    );
    assert_eq!(send_stamp(SendTiming::RightAfterReserving, 0), (1_000, 1_000));
}
