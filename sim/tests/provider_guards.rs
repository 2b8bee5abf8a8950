//! Issue 23 items 3–5 on every store: the provider's key retention (guard `key_retention`),
//! eventually consistent lookups (guard `lookup_settle`) and the dead letter (guard
//! `dead_letter`). Each scenario runs the real machine and executor through
//! `execution::drive_run` against a fake provider that forgets keys after its retention and
//! shows a credit to lookups only after its settle time, on the memory store, SQLite and
//! PostgreSQL (`TWICE_POSTGRES_URL`; skipped without one, except in CI). Each guard's test
//! pays once (or dead-letters) with the guard on and pays twice (or recovers forever) with it off.

use std::cell::Cell;
use std::collections::BTreeMap;
use std::rc::Rc;

use twice_sim::ledger::{Ledger, RunEvent};
use twice_sim::ledger_postgres::testing::TestDatabase;
use twice_sim::runtime::ToolAnswer;
use twice_sim::runtime::execution::{
    Agent, Attempt, Clock, Ending, Exit, Found, LookUp, Sending, ToolExecution, drive_run,
};
use twice_sim::runtime::executor::Executor;
use twice_sim::runtime::guards::{Guard, Guards};
use twice_sim::runtime::key::IdempotencyKey;
use twice_sim::runtime::operator::{self, OperatorError, ResumeRequest};
use twice_sim::runtime::rules::Status;
use twice_sim::runtime::run::{RunState, RunStatus, ToolCall};
use twice_sim::runtime::tool::ToolDeclaration;
use twice_sim::runtime::worker::{WaitReason, Worker, WorkerSetup};
use twice_sim::text::WORDS;
use twice_sim::text::wait_words;

// The refund model, shared with the runtime's own driver tests.
#[path = "../runtime/tests/support/mod.rs"]
mod runtime_support;
use runtime_support::{RefundModel, credit_tool};

const RUN: &str = "r1";
const START_MS: u64 = 1_700_000_000_000;
const HOUR_MS: u64 = 3_600_000;
const DAY_MS: u64 = 24 * HOUR_MS;
const SETTLE_MS: u64 = 2_000;

/// A kind of store every scenario runs on; each [`Store::ledger`] is a fresh, empty ledger.
struct Store {
    name: &'static str,
    folder: std::path::PathBuf,
    database: Option<TestDatabase>,
    ledgers: Cell<u32>,
}

impl Store {
    fn ledger(&self) -> Ledger {
        let number = self.ledgers.get();
        self.ledgers.set(number + 1);
        match &self.database {
            Some(database) => {
                twice_sim::ledger_postgres::open(&database.fresh_schema()).expect("a fresh PostgreSQL ledger")
            }
            None if self.name == "sqlite" => {
                Ledger::open(self.folder.join(format!("ledger-{number}.sqlite"))).expect("a SQLite ledger")
            }
            None => Ledger::open_memory_store(),
        }
    }
}

impl Drop for Store {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.folder);
    }
}

/// Memory, SQLite and (with a server) PostgreSQL.
fn stores(test: &str) -> Vec<Store> {
    let store = |name, database| {
        let folder = std::env::temp_dir().join(format!("twice-provider-guards-{test}-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&folder);
        std::fs::create_dir_all(&folder).expect("a temporary folder");
        Store {
            name,
            folder,
            database,
            ledgers: Cell::new(0),
        }
    };
    let mut stores = vec![store("memory", None), store("sqlite", None)];
    if let Some(database) = TestDatabase::create(test) {
        stores.push(store("postgres", Some(database)));
    }
    stores
}

/// The time, shared by the clock, the provider and the test; a wait may be stretched to show a
/// run paused for hours.
#[derive(Clone)]
struct TestClock {
    now: Rc<Cell<u64>>,
    /// The next wait lasts this long instead (the run paused), then waits are as asked.
    pause_next_wait_ms: Rc<Cell<Option<u64>>>,
}

impl TestClock {
    fn new() -> TestClock {
        TestClock {
            now: Rc::new(Cell::new(START_MS)),
            pause_next_wait_ms: Rc::new(Cell::new(None)),
        }
    }
}

impl Clock for TestClock {
    fn now_ms(&mut self) -> u64 {
        self.now.get()
    }

    fn wait_ms(&mut self, duration_ms: u64) {
        let waited = self.pause_next_wait_ms.take().unwrap_or(duration_ms);
        self.now.set(self.now.get() + waited);
    }
}

/// A provider that honours idempotency keys for `retention_ms` from their first use and shows
/// a credit to lookups only `settle_ms` after it applied it; it can lose answers or requests.
struct Provider {
    now: Rc<Cell<u64>>,
    retention_ms: u64,
    settle_ms: u64,
    /// Applied credits: the key each carried and when it landed.
    credits: Vec<(Option<String>, u64)>,
    /// Keys it still honours: key → (credit index, first used at).
    keys: BTreeMap<String, (usize, u64)>,
    /// Answers to lose (the credit lands, the answer does not come back).
    answers_to_lose: u32,
    /// Requests to lose (nothing lands).
    requests_to_lose: u32,
}

impl Provider {
    fn new(clock: &TestClock, retention_ms: u64, settle_ms: u64) -> Provider {
        Provider {
            now: clock.now.clone(),
            retention_ms,
            settle_ms,
            credits: Vec::new(),
            keys: BTreeMap::new(),
            answers_to_lose: 0,
            requests_to_lose: 0,
        }
    }

    fn kept(&self, key: &str) -> Option<usize> {
        let now = self.now.get();
        self.keys
            .get(key)
            .filter(|(_, first_used)| now - first_used < self.retention_ms)
            .map(|(credit, _)| *credit)
    }
}

impl ToolExecution for Provider {
    fn send(&mut self, sending: &Sending<'_>) -> Attempt {
        if self.requests_to_lose > 0 {
            self.requests_to_lose -= 1;
            return Attempt::TimedOut;
        }
        let key = sending.downstream_key.map(|key| key.to_string());
        if let Some(credit) = key.as_deref().and_then(|key| self.kept(key)) {
            return Attempt::Answered(ToolAnswer::Repeat {
                first: format!("cr_{credit}"),
                receipt: format!("{{\"repeat\":\"cr_{credit}\"}}"),
            });
        }
        let now = self.now.get();
        self.credits.push((key.clone(), now));
        let credit = self.credits.len() - 1;
        if let Some(key) = key {
            self.keys.insert(key, (credit, now));
        }
        if self.answers_to_lose > 0 {
            self.answers_to_lose -= 1;
            return Attempt::TimedOut;
        }
        Attempt::Answered(ToolAnswer::Applied {
            receipt: format!("{{\"credit\":\"cr_{credit}\"}}"),
        })
    }

    fn look_up(&mut self, key: &IdempotencyKey, _call: &ToolCall) -> LookUp {
        let Some(credit) = self.kept(key.as_str()) else {
            return LookUp::Absent;
        };
        let landed_at = self.credits[credit].1;
        if self.now.get() >= landed_at + self.settle_ms {
            LookUp::Found(Found {
                receipt: format!("{{\"credit\":\"cr_{credit}\"}}"),
                finding: format!("credit cr_{credit}"),
            })
        } else {
            LookUp::Absent
        }
    }
}

fn setup(worker: &str, guards: Guards, tool: ToolDeclaration, recovery_attempts_max: Option<u32>) -> WorkerSetup {
    let mut setup = WorkerSetup::new(worker, RUN, vec![tool])
        .with_guards(guards)
        .with_lease_ms(150)
        .with_words(WORDS);
    setup.recovery_attempts_max = recovery_attempts_max;
    setup
}

/// Drives one worker on `ledger` (a new connection) to its end.
fn drive(
    ledger: &Ledger,
    setup: WorkerSetup,
    model: &mut RefundModel,
    provider: &mut Provider,
    clock: &mut TestClock,
) -> Ending {
    let mut executor = Executor::new(ledger.connect_again().expect("a second connection"), &setup);
    let mut worker = Worker::new(setup).expect("a usable setup");
    drive_run(&mut worker, &mut executor, model, provider, clock).expect("the ledger answers")
}

fn record(ledger: &Ledger, call: &str) -> Option<Status> {
    let key = IdempotencyKey::per_call(RUN, call).unwrap();
    ledger.record(&key).unwrap().map(|record| record.status)
}

/// Item 3, the resend: a runtime that retries a write under its key (the write retry rule off,
/// trusting the provider to recognise the key) loses the first answer, and the run pauses for
/// two hours before the retry. The provider keeps keys one hour.
fn paused_past_retention(guards: Guards, ledger: &Ledger) -> (Provider, Ending) {
    let mut clock = TestClock::new();
    let mut provider = Provider::new(&clock, HOUR_MS, 0);
    provider.answers_to_lose = 1;
    clock.pause_next_wait_ms.set(Some(2 * HOUR_MS));
    let guards = guards.with(Guard::WriteRetryRule, false);
    let tool = credit_tool(Some(HOUR_MS), None);
    let ending = drive(
        ledger,
        setup("w1", guards, tool, None),
        &mut RefundModel { calls_max: 3 },
        &mut provider,
        &mut clock,
    );
    (provider, ending)
}

#[test]
fn a_key_past_its_retention_is_never_resent_and_its_lookup_says_expired() {
    for kind in stores("retention_resend") {
        let (store, ledger) = (kind.name, kind.ledger());
        let (provider, ending) = paused_past_retention(Guards::all_on(), &ledger);
        assert_eq!(provider.credits.len(), 1, "{store}: paid once");
        assert_eq!(record(&ledger, "c1"), Some(Status::Indeterminate), "{store}");
        assert!(
            matches!(ending, Ending::Parked(_)),
            "{store}: the run waits for a person: {ending:?}"
        );
        let history = ledger.history(&IdempotencyKey::per_call(RUN, "c1").unwrap()).unwrap();
        assert_eq!(
            history.iter().filter(|entry| entry.event.name() == "attempt").count(),
            1,
            "{store}: the second attempt never left"
        );
        let checkpoint = ledger.load_checkpoint(RUN).unwrap().expect("a checkpoint");
        assert_eq!(checkpoint.status, "awaiting_reconciliation", "{store}");

        let (naive, _) = paused_past_retention(Guards::all_on().with(Guard::KeyRetention, false), &kind.ledger());
        assert_eq!(naive.credits.len(), 2, "{store}: the naive resend is paid again");
    }
}

/// Item 3, the lookup: the answer is lost, the run pauses a day and a half, then looks the call
/// up; the provider (a day's retention, lookups authoritative after two seconds) finds nothing
/// because it forgot the key, not because nothing happened.
fn looked_up_past_retention(guards: Guards, ledger: &Ledger) -> Provider {
    let mut clock = TestClock::new();
    let mut provider = Provider::new(&clock, DAY_MS, SETTLE_MS);
    provider.answers_to_lose = 1;
    let tool = credit_tool(Some(DAY_MS), Some(SETTLE_MS));
    let mut model = RefundModel { calls_max: 3 };
    // The first worker (an older deploy, without the hook) pauses the run on the lost answer.
    let mut first = setup("w1", guards, tool.clone(), None);
    let guards_without_hook = first.guards().with(Guard::ReconcileHook, false);
    first = first.with_guards(guards_without_hook);
    let ending = drive(
        &ledger.connect_again().unwrap(),
        first,
        &mut model,
        &mut provider,
        &mut clock,
    );
    assert!(matches!(ending, Ending::Parked(_)), "{ending:?}");
    clock.now.set(clock.now.get() + DAY_MS + 12 * HOUR_MS);
    drive(
        ledger,
        setup("w2", guards, tool, None),
        &mut model,
        &mut provider,
        &mut clock,
    );
    provider
}

#[test]
fn nothing_found_under_an_expired_key_is_expired_not_absent() {
    for kind in stores("retention_lookup") {
        let (store, ledger) = (kind.name, kind.ledger());
        let provider = looked_up_past_retention(Guards::all_on(), &ledger);
        assert_eq!(provider.credits.len(), 1, "{store}: paid once");
        assert_eq!(
            record(&ledger, "c1"),
            Some(Status::Indeterminate),
            "{store}: still unknown"
        );
        assert_eq!(record(&ledger, "c2"), None, "{store}: the model was not told it failed");

        let fresh_ledger = kind.ledger();
        let naive = looked_up_past_retention(Guards::all_on().with(Guard::KeyRetention, false), &fresh_ledger);
        assert_eq!(
            record(&fresh_ledger, "c1"),
            Some(Status::Failed),
            "{store}: settled on nothing"
        );
        assert_eq!(
            naive.credits.len(),
            2,
            "{store}: the model called again and was paid twice"
        );
    }
}

/// Item 4: the answer is lost, and the provider shows the credit to lookups two seconds later.
fn eventually_consistent(guards: Guards, ledger: &Ledger, lose_request: bool) -> (Provider, Ending) {
    let mut clock = TestClock::new();
    let mut provider = Provider::new(&clock, DAY_MS, SETTLE_MS);
    if lose_request {
        provider.requests_to_lose = 1;
    } else {
        provider.answers_to_lose = 1;
    }
    let tool = credit_tool(Some(DAY_MS), Some(SETTLE_MS));
    let ending = drive(
        ledger,
        setup("w1", guards, tool, None),
        &mut RefundModel { calls_max: 3 },
        &mut provider,
        &mut clock,
    );
    (provider, ending)
}

#[test]
fn nothing_found_within_the_settle_time_is_asked_again_before_anyone_settles_failed() {
    for kind in stores("lookup_settle") {
        let (store, ledger) = (kind.name, kind.ledger());
        let (provider, ending) = eventually_consistent(Guards::all_on(), &ledger, false);
        assert_eq!(ending, Ending::Exited(Exit::Completed), "{store}");
        assert_eq!(provider.credits.len(), 1, "{store}: paid once");
        assert_eq!(
            record(&ledger, "c1"),
            Some(Status::Completed),
            "{store}: found on the second look"
        );
        assert_eq!(record(&ledger, "c2"), None, "{store}");

        // The request really was lost: past the settle time nothing is proof, and the run pays
        // once (not zero times): nothing lost.
        let lost = kind.ledger();
        let (provider, _) = eventually_consistent(Guards::all_on(), &lost, true);
        assert_eq!(
            record(&lost, "c1"),
            Some(Status::Failed),
            "{store}: settled failed after the settle time"
        );
        assert_eq!(provider.credits.len(), 1, "{store}: paid once, by the second call");

        let naive_ledger = kind.ledger();
        let (naive, _) = eventually_consistent(Guards::all_on().with(Guard::LookupSettle, false), &naive_ledger, false);
        assert_eq!(
            record(&naive_ledger, "c1"),
            Some(Status::Failed),
            "{store}: settled on the first look"
        );
        assert_eq!(naive.credits.len(), 2, "{store}: the naive hook's run paid twice");
    }
}

/// A poison run: the first worker pays and saves, then every worker is killed when the run
/// next needs its model, recovery after recovery. Returns how each recovery ended.
fn crash_looping(guards: Guards, ledger: &Ledger, recoveries: u32) -> Vec<Option<Ending>> {
    crash_looping_after(guards, ledger, recoveries, 1)
}

/// [`crash_looping`], the first worker killed after `first_decisions` answered decisions
/// (0: before the run saved any checkpoint).
fn crash_looping_after(guards: Guards, ledger: &Ledger, recoveries: u32, first_decisions: u32) -> Vec<Option<Ending>> {
    let mut clock = TestClock::new();
    let mut provider = Provider::new(&clock, DAY_MS, 0);
    let tool = credit_tool(None, None);
    let mut model = RefundModel { calls_max: 3 };
    let first = setup("w0", guards, tool.clone(), Some(2));
    let ending = drive_killed_at_model(ledger, first, first_decisions, &mut model, &mut provider, &mut clock);
    assert_eq!(ending, killed(), "the first worker dies");
    (1..=recoveries)
        .map(|worker| {
            let setup = setup(&format!("w{worker}"), guards, tool.clone(), Some(2));
            drive_killed_at_model(ledger, setup, 0, &mut model, &mut provider, &mut clock)
        })
        .collect()
}

/// A worker killed when it asked the model: it never ended by itself.
fn killed() -> Option<Ending> {
    None
}

/// Drives a worker whose process is killed the moment it asks the model after
/// `decisions` answered decisions: how it ended, `None` when it was killed.
fn drive_killed_at_model(
    ledger: &Ledger,
    setup: WorkerSetup,
    mut decisions: u32,
    model: &mut RefundModel,
    provider: &mut Provider,
    clock: &mut TestClock,
) -> Option<Ending> {
    use twice_sim::runtime::executor::{Drive, Next};
    use twice_sim::runtime::worker::Input;
    let mut executor = Executor::new(ledger.connect_again().unwrap(), &setup);
    let mut worker = Worker::new(setup).expect("a usable setup");
    let mut command = worker
        .handle(clock.now_ms(), Input::Start)
        .expect("a fresh worker starts");
    while let Some(current) = command.take() {
        let step = executor.perform(current, clock.now_ms()).unwrap();
        let input = match step.next {
            Next::Feed(input) => input,
            Next::Drive(Drive::AskModel { state }) if decisions > 0 => {
                decisions -= 1;
                let (decision, state) = model.decide(&state).unwrap();
                Input::ModelDecided { decision, state }
            }
            Next::Drive(Drive::AskModel { .. }) => return killed(),
            Next::Drive(Drive::Send {
                key,
                downstream_key,
                call,
                attempt,
                recorded_at_ms,
            }) => {
                let sending = Sending {
                    key: &key,
                    downstream_key: downstream_key.as_ref(),
                    call: &call,
                    attempt,
                    recorded_at_ms,
                };
                provider.send(&sending).into_input(key, attempt)
            }
            Next::Drive(Drive::WaitForPerson { reason }) => return Some(Ending::WaitsForPerson(reason)),
            Next::Drive(Drive::Exit) | Next::Nothing => return worker.exit().cloned().map(Ending::Exited),
            Next::Drive(other) => panic!("this run needs only its model and one send: {other:?}"),
        };
        command = worker
            .handle(clock.now_ms(), input)
            .expect("the input answers the command");
    }
    worker.exit().cloned().map(Ending::Exited)
}

#[test]
fn a_run_whose_recoveries_keep_failing_is_dead_lettered_and_resumed_only_by_an_operator() {
    for kind in stores("dead_letter") {
        let (store, ledger) = (kind.name, kind.ledger());
        let endings = crash_looping(Guards::all_on(), &ledger, 4);
        assert_eq!(endings[..2], [killed(), killed()], "{store}: two recoveries tried");
        assert!(
            matches!(&endings[2], Some(Ending::Exited(Exit::DeadLettered { .. }))),
            "{store}: the third is not tried: dead-lettered, not {:?}",
            endings[2]
        );
        assert!(
            matches!(&endings[3], Some(Ending::WaitsForPerson(reason @ WaitReason::DeadLettered { .. })) if wait_words(reason).contains("dead-lettered")),
            "{store}: a dead-lettered run is not driven: {:?}",
            endings[3]
        );
        let checkpoint = ledger.load_checkpoint(RUN).unwrap().expect("a checkpoint");
        assert_eq!(checkpoint.status, "dead_lettered", "{store}");
        let history = ledger.run_history(Some(RUN)).unwrap();
        let dead = history
            .iter()
            .find(|entry| entry.event == RunEvent::DeadLettered)
            .expect("its reason in the run's history");
        assert!(
            dead.detail
                .as_deref()
                .is_some_and(|reason| reason.contains("2 recoveries")),
            "{store}: {dead:?}"
        );
        let listed = operator::dead_lettered_runs(&ledger, &WORDS).unwrap();
        assert_eq!(listed.len(), 1, "{store}");
        assert_eq!(
            (listed[0].run_id.as_str(), listed[0].resumes_as.as_str()),
            (RUN, "running")
        );

        // Resume: reason required, compare-and-set on the version the operator saw.
        let mut operator_ledger = ledger.connect_again().unwrap();
        let request = |reason, expected_version| {
            let mut request = ResumeRequest::new(RUN, reason, "op-ana");
            request.expected_version = expected_version;
            request
        };
        assert!(matches!(
            operator::resume(&mut operator_ledger, &request("", None), START_MS, &WORDS),
            Err(OperatorError::Reason(_))
        ));
        assert!(matches!(
            operator::resume(
                &mut operator_ledger,
                &request("fixed the model", Some(listed[0].version + 1)),
                START_MS,
                &WORDS
            ),
            Err(OperatorError::RunChanged { .. })
        ));
        let version = operator::resume(
            &mut operator_ledger,
            &request("fixed the model", Some(listed[0].version)),
            START_MS,
            &WORDS,
        )
        .expect("resumed");
        assert!(matches!(
            operator::resume(
                &mut operator_ledger,
                &request("again", Some(listed[0].version)),
                START_MS,
                &WORDS
            ),
            Err(OperatorError::RunChanged { .. })
        ));
        assert!(matches!(
            operator::resume(&mut operator_ledger, &request("again", Some(version)), START_MS, &WORDS),
            Err(OperatorError::NotDeadLettered { .. })
        ));
        let state = RunState::from_json(&ledger.load_checkpoint(RUN).unwrap().unwrap().state).unwrap();
        assert_eq!(state.status, RunStatus::Running, "{store}: back where it stopped");
        // The next recovery is tried again (its count starts afresh) and finishes the run.
        let mut clock = TestClock::new();
        let mut provider = Provider::new(&clock, DAY_MS, 0);
        let ending = drive(
            &ledger,
            setup("w9", Guards::all_on(), credit_tool(None, None), Some(2)),
            &mut RefundModel { calls_max: 3 },
            &mut provider,
            &mut clock,
        );
        assert_eq!(ending, Ending::Exited(Exit::Completed), "{store}");
        assert_eq!(
            ledger.load_checkpoint(RUN).unwrap().unwrap().status,
            "completed",
            "{store}"
        );

        // Without the guard, recovery is tried again and again (here, ten times), each visible.
        let naive_ledger = kind.ledger();
        let naive = crash_looping(Guards::all_on().with(Guard::DeadLetter, false), &naive_ledger, 10);
        assert!(naive.iter().all(|ending| *ending == killed()), "{store}: {naive:?}");
        let recoveries = naive_ledger
            .run_history(Some(RUN))
            .unwrap()
            .iter()
            .filter(|entry| entry.event == RunEvent::RecoveryStarted)
            .count();
        assert_eq!(recoveries, 10, "{store}: every recovery is in the run's history");
    }
}

/// A run that crashes before its first checkpoint is recovered from the beginning, and each
/// such recovery that fails counts against the limit like any other: the history shows the
/// first start (`started`) apart from the recoveries (`recovery_started`).
#[test]
fn a_run_that_crashes_before_its_first_checkpoint_counts_every_failed_recovery() {
    for kind in stores("dead_letter_no_checkpoint") {
        let (store, ledger) = (kind.name, kind.ledger());
        let endings = crash_looping_after(Guards::all_on(), &ledger, 4, 0);
        assert_eq!(endings[..2], [killed(), killed()], "{store}: two recoveries tried");
        assert!(
            matches!(&endings[2], Some(Ending::Exited(Exit::DeadLettered { .. }))),
            "{store}: the third is not tried: dead-lettered, not {:?}",
            endings[2]
        );
        assert!(
            matches!(&endings[3], Some(Ending::WaitsForPerson(reason @ WaitReason::DeadLettered { .. })) if wait_words(reason).contains("dead-lettered")),
            "{store}: a dead-lettered run is not driven: {:?}",
            endings[3]
        );
        let checkpoint = ledger
            .load_checkpoint(RUN)
            .unwrap()
            .expect("the dead letter's checkpoint");
        assert_eq!(
            (checkpoint.status.as_str(), checkpoint.version),
            ("dead_lettered", 1),
            "{store}"
        );
        let history = ledger.run_history(Some(RUN)).unwrap();
        let events: Vec<&str> = history.iter().map(|entry| entry.event.name()).collect();
        assert_eq!(
            events,
            [
                "started",
                "recovery_started",
                "recovery_started",
                "recovery_started",
                "dead_lettered",
                "waits_for_person"
            ],
            "{store}: the fourth worker finds it dead-lettered and leaves it for a person"
        );
        let reason = history
            .iter()
            .find(|entry| entry.event == RunEvent::DeadLettered)
            .and_then(|entry| entry.detail.as_deref())
            .unwrap_or_default();
        assert!(
            reason.contains("2 recoveries started from the beginning (the run saved no checkpoint)"),
            "{store}: {reason}"
        );

        // Without the guard, every recovery is tried, and each is in the run's history.
        let naive_ledger = kind.ledger();
        let naive = crash_looping_after(Guards::all_on().with(Guard::DeadLetter, false), &naive_ledger, 10, 0);
        assert!(naive.iter().all(|ending| *ending == killed()), "{store}: {naive:?}");
        let recoveries = naive_ledger
            .run_history(Some(RUN))
            .unwrap()
            .iter()
            .filter(|entry| entry.event == RunEvent::RecoveryStarted)
            .count();
        assert_eq!(recoveries, 10, "{store}: every recovery is in the run's history");
    }
}
