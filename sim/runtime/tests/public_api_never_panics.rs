//! The public API driven with arbitrary inputs and sequences: arbitrary setups (empty, spaced
//! and overlong names, tools declared twice, attempts and terms out of range), workers fed
//! honest answers, lies and answers out of order, late answers, duplicate workers on one run,
//! operators resolving and compensating at any moment. Whatever happens, nothing panics, and
//! the ledger keeps its invariants:
//!
//! - every record reads back (no row the stores would refuse as bad);
//! - the history is append-only: every line once written stays, in order;
//! - a call that took effect (`completed`, `compensating`, `compensated`) is never unknown or
//!   `failed` again;
//! - with honest drivers, a call that changes the world is sent at most once per reservation.
//!
//! Small enough for `cargo test` (a few seconds); `PROPTEST_CASES` runs more.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use proptest::prelude::*;
use twice_runtime::ToolAnswer;
use twice_runtime::executor::{Drive, Executor, Next};
use twice_runtime::key::IdempotencyKey;
use twice_runtime::ledger::{
    ExecutionRecord, HistoryEntry, HistoryEvent, Ledger, OperatorDecision, Recorded, Reservation, SaveOutcome,
};
use twice_runtime::operator::{
    self, CompensateRequest, CompensationTarget, Effect, HeldLedger, LookupError, ResolveRequest, UndoError,
};
use twice_runtime::rules::Status;
use twice_runtime::run::{Arguments, Decision, RunState, RunStatus, ToolCall};
use twice_runtime::tool::{SideEffect, ToolDeclaration};
use twice_runtime::worker::{Command, Input, Reconciled, Worker, WorkerSetup};

const RUN: &str = "run-1";
/// The tool names a setup and a model pick from: a read, a write, an empty one, a spaced one.
const TOOL_NAMES: [&str; 4] = ["lookup_order", "issue_credit", "", "send email"];
const SIDE_EFFECTS: [SideEffect; 4] = SideEffect::ALL;
/// Worker names, the last ones unusable.
const WORKER_NAMES: [&str; 4] = ["w1", "w2", "", "\u{1b}[31m"];

// ----- what a case is made of -----

#[derive(Clone, Debug)]
struct ToolChoice {
    name: usize,
    side_effect: usize,
    reconcile: bool,
    compensation: bool,
    takes_key: bool,
    attempts: Option<u32>,
    retention_ms: Option<u64>,
    settle_ms: Option<u64>,
}

#[derive(Clone, Debug)]
struct SetupChoice {
    worker: usize,
    run: &'static str,
    tools: Vec<ToolChoice>,
    recovery_limit: Option<u32>,
}

#[derive(Clone, Copy, Debug)]
enum IdChoice {
    /// The run's next id: what an honest agent makes.
    Next,
    /// `c1` to `c3` whatever was used before (a provider reusing ids).
    Reuse(u8),
    /// An id no key can hold.
    Bad,
}

#[derive(Clone, Debug)]
struct ModelChoice {
    done: bool,
    fail: bool,
    /// Calls a tool the worker was given (else any name at all).
    declared: bool,
    tool: usize,
    id: IdChoice,
    argument: u8,
}

#[derive(Clone, Copy, Debug)]
enum SendChoice {
    Applied,
    Repeat,
    Rejected,
    TimedOut,
    NotSent,
}

#[derive(Clone, Copy, Debug)]
enum LookChoice {
    Found,
    Absent,
    CannotTell,
}

/// How a driver answers whatever it is asked next.
#[derive(Clone, Debug)]
struct Answer {
    model: ModelChoice,
    send: SendChoice,
    look: LookChoice,
    look_again: bool,
}

#[derive(Clone, Debug)]
enum OperatorMove {
    Resolve {
        key: usize,
        completed: bool,
        expected: Option<usize>,
        in_flight: bool,
    },
    Compensate {
        key: usize,
        found: bool,
        undone: bool,
    },
}

#[derive(Clone, Debug)]
enum Step {
    /// A worker's next command carried out, its driver's part answered honestly.
    Drive { worker: usize, answer: Answer },
    /// A lie, or an input out of order, fed straight to a worker.
    Chaos { worker: usize, input: ChaosInput },
    /// A late answer (or timeout) for some attempt of some key.
    Late {
        worker: usize,
        key: usize,
        attempt: u32,
        send: SendChoice,
    },
    /// An operator acts on some key.
    Operator(OperatorMove),
    /// Another worker starts on the run (a recovery, or a duplicate).
    StartWorker,
    /// Time passes.
    Wait(u64),
}

#[derive(Clone, Debug)]
enum ChaosInput {
    Start,
    Loaded { version: u32, awaiting: bool },
    Reserved { action: usize, status: usize, key: usize },
    Response { attempt: u32 },
    TimedOut { attempt: u32 },
    NotAttempted,
    Backoff,
    Recorded { status: usize, late: bool },
    Reconciled { kind: usize },
    Saved { kind: usize, version: u32 },
    RecordRead { status: Option<usize>, by_operator: bool },
    Woken,
    LookAgain,
    Compensated,
}

/// A tool: mostly one of the two usable names, declared within the limits; now and then
/// anything at all.
fn tool_choice() -> impl Strategy<Value = ToolChoice> {
    (
        prop_oneof![9 => 0..2_usize, 1 => 0..TOOL_NAMES.len()],
        0..SIDE_EFFECTS.len(),
        prop::bool::weighted(0.7),
        any::<bool>(),
        prop::bool::weighted(0.95),
        prop::option::weighted(0.15, 0_u32..5),
        prop::option::weighted(0.15, prop_oneof![1 => Just(0_u64), 9 => 2_000_u64..100_000]),
        prop::option::weighted(0.15, prop_oneof![1 => Just(0_u64), 9 => 1_u64..1_500]),
    )
        .prop_map(
            |(name, side_effect, reconcile, compensation, takes_key, attempts, retention_ms, settle_ms)| ToolChoice {
                name,
                side_effect,
                reconcile,
                compensation,
                takes_key,
                attempts,
                retention_ms,
                settle_ms,
            },
        )
}

fn setup_choice() -> impl Strategy<Value = SetupChoice> {
    (
        prop_oneof![19 => 0..2_usize, 1 => 2..WORKER_NAMES.len()],
        prop_oneof![18 => Just(RUN), 1 => Just(""), 1 => Just("run 1")],
        prop::collection::vec(tool_choice(), 1..4),
        prop::option::weighted(0.2, 0_u32..3),
    )
        .prop_map(|(worker, run, mut tools, recovery_limit)| {
            // Two tools of one name are mostly one tool declared twice by mistake: keep it rare.
            if tools.len() > 1 && tools[0].name == tools[1].name {
                tools[1].name = 1 - tools[0].name.min(1);
            }
            SetupChoice {
                worker,
                run,
                tools,
                recovery_limit,
            }
        })
}

fn send_choice() -> impl Strategy<Value = SendChoice> {
    prop_oneof![
        4 => Just(SendChoice::Applied),
        1 => Just(SendChoice::Repeat),
        1 => Just(SendChoice::Rejected),
        3 => Just(SendChoice::TimedOut),
        1 => Just(SendChoice::NotSent),
    ]
}

fn answer() -> impl Strategy<Value = Answer> {
    let model = (
        prop::bool::weighted(0.1),
        prop::bool::weighted(0.03),
        prop::bool::weighted(0.9),
        0..TOOL_NAMES.len(),
        prop_oneof![8 => Just(IdChoice::Next), 2 => (1_u8..4).prop_map(IdChoice::Reuse), 1 => Just(IdChoice::Bad)],
        0_u8..3,
    )
        .prop_map(|(done, fail, declared, tool, id, argument)| ModelChoice {
            done,
            fail,
            declared,
            tool,
            id,
            argument,
        });
    let look = prop_oneof![
        Just(LookChoice::Found),
        Just(LookChoice::Absent),
        Just(LookChoice::CannotTell)
    ];
    (model, send_choice(), look, any::<bool>()).prop_map(|(model, send, look, look_again)| Answer {
        model,
        send,
        look,
        look_again,
    })
}

fn chaos_input() -> impl Strategy<Value = ChaosInput> {
    prop_oneof![
        Just(ChaosInput::Start),
        (0_u32..4, any::<bool>()).prop_map(|(version, awaiting)| ChaosInput::Loaded { version, awaiting }),
        (0_usize..6, 0..Status::ALL.len(), 0_usize..4).prop_map(|(action, status, key)| ChaosInput::Reserved {
            action,
            status,
            key
        }),
        (0_u32..4).prop_map(|attempt| ChaosInput::Response { attempt }),
        (0_u32..4).prop_map(|attempt| ChaosInput::TimedOut { attempt }),
        Just(ChaosInput::NotAttempted),
        Just(ChaosInput::Backoff),
        (0..Status::ALL.len(), any::<bool>()).prop_map(|(status, late)| ChaosInput::Recorded { status, late }),
        (0_usize..5).prop_map(|kind| ChaosInput::Reconciled { kind }),
        (0_usize..3, 0_u32..4).prop_map(|(kind, version)| ChaosInput::Saved { kind, version }),
        (prop::option::of(0..Status::ALL.len()), any::<bool>())
            .prop_map(|(status, by_operator)| ChaosInput::RecordRead { status, by_operator }),
        Just(ChaosInput::Woken),
        Just(ChaosInput::LookAgain),
        Just(ChaosInput::Compensated),
    ]
}

fn operator_move() -> impl Strategy<Value = OperatorMove> {
    prop_oneof![
        (
            0_usize..4,
            any::<bool>(),
            prop::option::of(0..Status::ALL.len()),
            any::<bool>()
        )
            .prop_map(|(key, completed, expected, in_flight)| OperatorMove::Resolve {
                key,
                completed,
                expected,
                in_flight
            }),
        (0_usize..4, any::<bool>(), any::<bool>()).prop_map(|(key, found, undone)| OperatorMove::Compensate {
            key,
            found,
            undone
        }),
    ]
}

fn step(chaos: bool) -> impl Strategy<Value = Step> {
    let worker = 0_usize..3;
    let honest = prop_oneof![
        24 => (worker.clone(), answer()).prop_map(|(worker, answer)| Step::Drive { worker, answer }),
        2 => (worker.clone(), 0_usize..4, 0_u32..4, send_choice())
            .prop_map(|(worker, key, attempt, send)| Step::Late { worker, key, attempt, send }),
        2 => operator_move().prop_map(Step::Operator),
        1 => Just(Step::StartWorker),
        2 => (0_u64..3_000).prop_map(Step::Wait),
    ];
    let chaotic = (worker, chaos_input()).prop_map(|(worker, input)| Step::Chaos { worker, input });
    let chaos_weight = if chaos { 3 } else { 0 };
    prop_oneof![29 => honest, chaos_weight => chaotic]
}

// ----- the harness -----

struct Driven {
    worker: Worker,
    executor: Executor,
    queue: VecDeque<Command>,
}

struct Case {
    setup: WorkerSetup,
    ledger: Ledger,
    observer: Ledger,
    workers: Vec<Driven>,
    now_ms: u64,
    /// The ledger as last read: each key's status, and the history.
    seen_status: BTreeMap<IdempotencyKey, Status>,
    seen_history: Vec<HistoryEntry>,
    /// Every attempt a driver sent: only an answer to one of these can honestly arrive (late
    /// or not). An answer to an attempt not sent yet is a lie, however true its words.
    sent: BTreeSet<(IdempotencyKey, u32)>,
    honest: bool,
}

fn setup_of(choice: &SetupChoice) -> WorkerSetup {
    let tools = choice
        .tools
        .iter()
        .map(|tool| {
            let mut declared = ToolDeclaration::new(TOOL_NAMES[tool.name], SIDE_EFFECTS[tool.side_effect]);
            declared.reconcile = tool.reconcile;
            declared.compensation = tool.compensation;
            declared.takes_key = tool.takes_key;
            declared.attempts = tool.attempts;
            declared.key_retention_ms = tool.retention_ms;
            declared.lookup_settle_ms = tool.settle_ms;
            declared
        })
        .collect();
    let mut setup = WorkerSetup::new(WORKER_NAMES[choice.worker], choice.run, tools);
    setup.recovery_attempts_max = choice.recovery_limit;
    setup
}

fn key_of(index: usize) -> IdempotencyKey {
    IdempotencyKey::per_call(RUN, &format!("c{}", index + 1)).expect("a key")
}

impl Case {
    fn new(setup: WorkerSetup, sqlite: bool, honest: bool) -> Case {
        // Without the SQLite store (feature `sqlite` off) every case runs on the memory store.
        #[cfg(feature = "sqlite")]
        let ledger = if sqlite {
            Ledger::open_memory().expect("a memory ledger")
        } else {
            Ledger::open_memory_store()
        };
        #[cfg(not(feature = "sqlite"))]
        let ledger = {
            let _ = sqlite;
            Ledger::open_memory_store()
        };
        let observer = ledger.connect_again().expect("a connection");
        Case {
            setup,
            ledger,
            observer,
            workers: Vec::new(),
            now_ms: 1_000,
            seen_status: BTreeMap::new(),
            seen_history: Vec::new(),
            sent: BTreeSet::new(),
            honest,
        }
    }

    fn start_worker(&mut self) {
        if self.workers.len() >= 3 {
            return;
        }
        let mut setup = self.setup.clone();
        setup.worker_id = format!("w{}", self.workers.len() + 1).into();
        let executor = Executor::new(self.ledger.connect_again().expect("a connection"), &setup);
        let Ok(mut worker) = Worker::new(setup) else {
            return;
        };
        let mut queue = VecDeque::new();
        let first = worker
            .handle(self.now_ms, Input::Start)
            .expect("a fresh worker takes start");
        queue.extend(first);
        self.workers.push(Driven {
            worker,
            executor,
            queue,
        });
    }

    fn feed(&mut self, index: usize, input: Input, honest_input: bool) {
        let now_ms = self.now_ms;
        let driven = &mut self.workers[index];
        match driven.worker.handle(now_ms, input) {
            Ok(next) => driven.queue.extend(next),
            Err(error) => assert!(
                !(self.honest && honest_input),
                "an honest driver's input was refused: {error}"
            ),
        }
    }

    fn drive(&mut self, index: usize, answer: &Answer) {
        let now_ms = self.now_ms;
        let driven = &mut self.workers[index];
        let Some(command) = driven.queue.pop_front() else {
            return;
        };
        let step = match driven.executor.perform(command, now_ms) {
            Ok(step) => step,
            // A ledger that is locked or refuses is an error to report, never a panic.
            Err(_) => return,
        };
        let input = match step.next {
            Next::Nothing => return,
            Next::Feed(input) => input,
            Next::Drive(drive) => match self.driven_input(index, drive, answer) {
                Some(input) => input,
                None => return,
            },
        };
        self.feed(index, input, true);
    }

    /// The driver's part, answered as `answer` says.
    fn driven_input(&mut self, index: usize, drive: Drive, answer: &Answer) -> Option<Input> {
        let now_ms = self.now_ms;
        let executor = &mut self.workers[index].executor;
        Some(match drive {
            Drive::AskModel { state } => {
                let names: Vec<&str> = self.setup.tools.iter().map(|tool| tool.name.as_str()).collect();
                model_input(&state, &answer.model, &names)
            }
            Drive::Send { key, attempt, .. } => {
                self.sent.insert((key.clone(), attempt));
                send_input(key, attempt, answer.send)
            }
            Drive::Backoff { .. } | Drive::WaitToLookAgain { .. } => Input::BackoffElapsed,
            Drive::LookUp { key, .. } => {
                let step = match answer.look {
                    LookChoice::Found => executor.reconciled(key, Some(("receipt-found", "found by key")), now_ms),
                    LookChoice::Absent => executor.reconciled(key, None, now_ms),
                    LookChoice::CannotTell => Ok(executor.cannot_tell(key, "the system is down")),
                };
                match step.ok()?.next {
                    Next::Feed(input) => input,
                    _ => return None,
                }
            }
            Drive::Undo { key, .. } => match executor.undone(key, "voided", now_ms).ok()?.next {
                Next::Feed(input) => input,
                _ => return None,
            },
            Drive::Park { .. } if answer.look_again => Input::LookAgain,
            Drive::Park { key } => {
                let settled = self
                    .observer
                    .record(&key)
                    .ok()
                    .flatten()
                    .is_some_and(|record| record.status.is_settled());
                if !settled {
                    // A parked worker waits; it is put back to ask again later.
                    self.workers[index].queue.push_back(Command::Park { key });
                    return None;
                }
                Input::Woken
            }
            Drive::StandDown { .. } | Drive::WaitForPerson { .. } | Drive::Exit => return None,
        })
    }

    fn operator(&mut self, operator_move: &OperatorMove) {
        let now_ms = self.now_ms;
        match *operator_move {
            OperatorMove::Resolve {
                key,
                completed,
                expected,
                in_flight,
            } => {
                let mut request = ResolveRequest::new(
                    if completed { Status::Completed } else { Status::Failed },
                    "checked the other system by hand",
                    "op-ana",
                );
                request.expected_status = expected.map(|index| Status::ALL[index]);
                request.acknowledge_in_flight = in_flight;
                let _ = operator::resolve(&mut self.observer, &key_of(key), &request, now_ms);
            }
            OperatorMove::Compensate { key, found, undone } => {
                let key = key_of(key);
                let request = CompensateRequest::new(&key, "the customer asked for it back", "op-ana");
                let mut target = Target { found, undone };
                let mut access = HeldLedger {
                    ledger: &mut self.observer,
                    now_ms,
                };
                let _ = operator::compensate(
                    &mut access,
                    &mut target,
                    &request,
                    &twice_runtime::worker::Words::ENGLISH,
                );
            }
        }
    }

    fn chaos(&mut self, index: usize, chaos: &ChaosInput) {
        let template = self
            .observer
            .all_records()
            .ok()
            .and_then(|records| records.into_iter().next());
        let call_key = self.workers[index]
            .worker
            .current_call()
            .map(|(_, key, _)| key.clone())
            .unwrap_or_else(|| key_of(0));
        let record = |status: usize, key: &IdempotencyKey| -> Option<ExecutionRecord> {
            template.clone().map(|mut record| {
                record.key = key.clone();
                record.status = Status::ALL[status % Status::ALL.len()];
                record
            })
        };
        let input = match *chaos {
            ChaosInput::Start => Input::Start,
            ChaosInput::Loaded { version, awaiting } => Input::CheckpointLoaded {
                version,
                state: Some(RunState {
                    status: if awaiting {
                        RunStatus::AwaitingReconciliation {
                            key: call_key.to_string(),
                        }
                    } else {
                        RunStatus::Running
                    },
                    ..RunState::default()
                }),
                failed_recoveries: Some(version),
            },
            ChaosInput::Reserved { action, status, key } => {
                use twice_runtime::rules::ReservationAction as Action;
                let actions = [
                    Action::RunNew,
                    Action::RunAgain,
                    Action::ReturnRecorded,
                    Action::ReturnCompensated,
                    Action::Unknown,
                    Action::TakeOverExpiredLease,
                ];
                let key = if key == 0 { call_key.clone() } else { key_of(key) };
                match record(status, &key) {
                    Some(record) if action % 2 == 0 => Input::Reserved(Reservation::Decided {
                        action: actions[action],
                        record,
                        previous_owner: None,
                        previous_status: None,
                    }),
                    Some(existing) => Input::Reserved(Reservation::ArgumentsMismatch { existing }),
                    None => Input::Reserved(Reservation::Fenced { expected: 0, found: 1 }),
                }
            }
            ChaosInput::Response { attempt } => Input::Response {
                key: call_key,
                attempt,
                answer: ToolAnswer::Applied { receipt: "lie".into() },
            },
            ChaosInput::TimedOut { attempt } => Input::TimedOut { key: call_key, attempt },
            ChaosInput::NotAttempted => Input::NotAttempted {
                reason: "nothing was sent".into(),
            },
            ChaosInput::Backoff => Input::BackoffElapsed,
            ChaosInput::Recorded { status, late } => match record(status, &call_key) {
                Some(record) if late => Input::Recorded(Recorded::LateOutcomeIgnored(record)),
                Some(record) => Input::Recorded(Recorded::Recorded(record)),
                None => Input::BackoffElapsed,
            },
            ChaosInput::Reconciled { kind } => Input::Reconciled(match (kind, record(kind, &call_key)) {
                (0, _) => Reconciled::Completed { result: "found".into() },
                (1, _) => Reconciled::Unknown,
                (2, Some(record)) => Reconciled::AlreadySettled(Box::new(record)),
                (3, record) => Reconciled::NotFound {
                    record: record.map(Box::new),
                    asked_at_ms: self.now_ms,
                },
                (_, Some(record)) => Reconciled::SettledFailed(Box::new(record)),
                (_, None) => Reconciled::Unknown,
            }),
            ChaosInput::Saved { kind, version } => Input::Saved(match kind {
                0 => SaveOutcome::Saved { version },
                1 => SaveOutcome::Stale {
                    expected: version,
                    found: version + 1,
                },
                _ => SaveOutcome::TakenOver {
                    key: call_key.to_string(),
                    status: Status::Started,
                    owner: "w9".into(),
                },
            }),
            ChaosInput::RecordRead { status, by_operator } => Input::RecordRead {
                record: status.and_then(|status| record(status, &call_key)),
                decision: by_operator.then(|| OperatorDecision::new("op-ana", "looked in billing")),
            },
            ChaosInput::Woken => Input::Woken,
            ChaosInput::LookAgain => Input::LookAgain,
            ChaosInput::Compensated => Input::Compensated,
        };
        self.feed(index, input, false);
    }

    fn late(&mut self, index: usize, key: usize, attempt: u32, send: SendChoice) {
        let sent = self.sent.contains(&(key_of(key), attempt));
        let input = send_input(key_of(key), attempt, send);
        // A worker that is done hears nothing more from an honest driver (it would be refused).
        if matches!(input, Input::NotAttempted { .. }) || self.workers[index].worker.is_done() {
            return;
        }
        // An answer to an attempt never sent (its send still queued, or never to be) cannot
        // arrive from an honest driver: such a case skips it (a worker that took it would be
        // lied to for the rest of the case); a case of lies feeds it, and it must only never
        // panic.
        if !sent && self.honest {
            return;
        }
        self.feed(index, input, sent);
    }

    fn apply(&mut self, step: &Step) {
        let count = self.workers.len().max(1);
        match step {
            Step::Drive { worker, answer } if !self.workers.is_empty() => self.drive(worker % count, answer),
            Step::Chaos { worker, input } if !self.workers.is_empty() => self.chaos(worker % count, input),
            Step::Late {
                worker,
                key,
                attempt,
                send,
            } if !self.workers.is_empty() => self.late(worker % count, *key, *attempt, *send),
            Step::Operator(operator_move) => self.operator(operator_move),
            Step::StartWorker => self.start_worker(),
            Step::Wait(ms) => self.now_ms += ms,
            _ => {}
        }
        self.now_ms += 1;
    }

    /// The ledger's invariants, against what it held after the last step.
    fn check_ledger(&mut self) {
        let records = self.observer.all_records().expect("every record reads back");
        for record in &records {
            assert_eq!(record.broken_invariant(), None, "{record:?}");
            if let Some(before) = self.seen_status.get(&record.key) {
                let took_effect = matches!(before, Status::Completed | Status::Compensating | Status::Compensated);
                assert!(
                    !(took_effect && matches!(record.status, Status::Started | Status::Indeterminate | Status::Failed)),
                    "{} went from {before} to {}",
                    record.key,
                    record.status
                );
            }
            self.seen_status.insert(record.key.clone(), record.status);
        }
        let history = self.observer.all_history().expect("the history reads back");
        assert!(
            history.len() >= self.seen_history.len() && history[..self.seen_history.len()] == self.seen_history[..],
            "the history is append-only"
        );
        if self.honest {
            for record in records.iter().filter(|record| record.side_effect.changes_something()) {
                let lines: Vec<&HistoryEntry> = history.iter().filter(|line| line.key == record.key).collect();
                let count = |event: HistoryEvent| lines.iter().filter(|line| line.event == event).count();
                let reservations = count(HistoryEvent::Reserved) + count(HistoryEvent::ReservedAgain);
                assert!(
                    count(HistoryEvent::Attempt) <= reservations,
                    "{}: {} sends for {reservations} reservations: {lines:#?}",
                    record.key,
                    count(HistoryEvent::Attempt)
                );
            }
        }
        self.seen_history = history;
    }
}

fn model_input(state: &RunState, choice: &ModelChoice, declared: &[&str]) -> Input {
    let mut next = twice_runtime::execution::moved_on(state).unwrap_or_else(|| state.clone());
    if choice.fail {
        return Input::ModelDecided {
            decision: Decision::FailRun {
                reason: "gave up".into(),
            },
            state: next,
        };
    }
    if choice.done || next.item > 3 {
        return Input::ModelDecided {
            decision: Decision::Done,
            state: next,
        };
    }
    let id = match choice.id {
        IdChoice::Next => format!("c{}", next.next_call_number),
        IdChoice::Reuse(number) => format!("c{number}"),
        IdChoice::Bad => "c 1".into(),
    };
    next.next_call_number = next.next_call_number.saturating_add(1);
    next.calls_for_item = next.calls_for_item.saturating_add(1);
    let call = ToolCall {
        id,
        tool: match declared {
            [] => TOOL_NAMES[choice.tool].into(),
            _ if !choice.declared => TOOL_NAMES[choice.tool].into(),
            names => names[choice.tool % names.len()].into(),
        },
        item: next.item,
        arguments: Arguments::new(serde_json::json!({ "amount_cents": 2500, "memo": choice.argument })),
    };
    Input::ModelDecided {
        decision: Decision::Call(call),
        state: next,
    }
}

fn send_input(key: IdempotencyKey, attempt: u32, send: SendChoice) -> Input {
    let answer = match send {
        SendChoice::Applied => ToolAnswer::Applied {
            receipt: format!("receipt of {key}"),
        },
        SendChoice::Repeat => ToolAnswer::Repeat {
            first: "first".into(),
            receipt: format!("receipt of {key}"),
        },
        SendChoice::Rejected => ToolAnswer::Rejected {
            reason: "declined".into(),
            receipt: "declined".into(),
        },
        SendChoice::TimedOut => return Input::TimedOut { key, attempt },
        SendChoice::NotSent => {
            return Input::NotAttempted {
                reason: "the token expired".into(),
            };
        }
    };
    Input::Response { key, attempt, answer }
}

struct Target {
    found: bool,
    undone: bool,
}

impl CompensationTarget for Target {
    fn has_compensation(&self, _tool: &str) -> bool {
        true
    }

    fn find_effect(&mut self, record: &ExecutionRecord) -> Result<Effect, LookupError> {
        Ok(if self.found {
            Effect::Found {
                reference: format!("effect of {}", record.key),
                detail: "found".into(),
            }
        } else {
            Effect::Absent {
                detail: "nothing under the key".into(),
            }
        })
    }

    fn undo(&mut self, _record: &ExecutionRecord, _reference: &str) -> Result<String, UndoError> {
        if self.undone {
            Ok("voided".into())
        } else {
            Err(UndoError::Unknown("no answer".into()))
        }
    }
}

fn run_case(setup: &SetupChoice, steps: &[Step], sqlite: bool, honest: bool) {
    let setup = setup_of(setup);
    let valid = setup.check().is_ok();
    let made = Worker::new(setup.clone());
    assert_eq!(made.is_ok(), valid, "Worker::new agrees with WorkerSetup::check");
    if !valid {
        return;
    }
    let mut case = Case::new(setup, sqlite, honest);
    case.start_worker();
    for step in steps {
        case.apply(step);
        case.check_ledger();
    }
    // What the workers decided is readable to the end: their run's checkpoint parses.
    if let Ok(Some(checkpoint)) = case.observer.load_checkpoint(RUN) {
        assert!(RunState::from_json(&checkpoint.state).is_ok(), "{}", checkpoint.state);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, max_shrink_iters: 2_000, ..ProptestConfig::default() })]

    /// Honest drivers, duplicates, late answers and operators: no panic, no input refused,
    /// and every invariant, including at most one send per reservation of a write.
    #[test]
    fn honest_drivers_keep_every_invariant(
        setup in setup_choice(),
        steps in prop::collection::vec(step(false), 20..160),
        sqlite in prop::bool::weighted(0.15),
    ) {
        run_case(&setup, &steps, sqlite, true);
    }

    /// Lies and inputs out of order besides: no panic, and the ledger's own invariants hold.
    #[test]
    fn lies_and_disorder_never_panic(
        setup in setup_choice(),
        steps in prop::collection::vec(step(true), 20..160),
    ) {
        run_case(&setup, &steps, false, false);
    }
}
