//! Differential tests: the memory store and the PostgreSQL store must answer exactly as
//! SQLite does.
//!
//! The same random sequences of ledger operations go to a SQLite memory ledger and to a
//! memory-store ledger (and to a PostgreSQL ledger, each sequence in a fresh schema); every
//! answer (values and error kinds) and the final tables must be equal. Then every tape under
//! `levels/` is replayed on every store, and the verdicts, the ledgers' rows and the whole
//! event log must be equal too.
//!
//! Commit groups too: the same sequences on a SQLite file ledger whose writes go through a
//! commit group (`Ledger::open_grouped`), and on PostgreSQL's group, answer as plain SQLite
//! does; and runs writing at once through one group (batches of several members, each in a
//! savepoint of one transaction) each answer as if it had the ledger alone.
//!
//! The PostgreSQL tests need a server (`TWICE_POSTGRES_URL`); without one they say they were
//! skipped and pass, except in CI, where they fail (see `twice_ledger_postgres::testing`).

use std::path::{Path, PathBuf};
use std::sync::Barrier;
use std::time::Duration;

use proptest::prelude::*;
use proptest::test_runner::{Config as RunnerConfig, TestCaseError, TestRunner};
use twice_sim::ledger::{
    AttemptStart, CheckpointSave, FoldedReservation, GroupSettings, HistoryEvent, Ledger, LedgerError, LedgerStore,
    RecordFilter, Reservation, ReserveRequest, RunEvent, SaveOutcome, SettleError, Settlement,
};
use twice_sim::ledger_postgres::testing::TestDatabase;
use twice_sim::level;
use twice_sim::runtime::key::IdempotencyKey;
use twice_sim::runtime::rules::{Outcome, Status};
use twice_sim::runtime::tool::SideEffect;
use twice_sim::simulator::SimulationBuilder;

const START_MS: u64 = 1_700_000_000_000;
/// Random sequences held against PostgreSQL: each opens a fresh schema and two server
/// connections, so a case costs tens of milliseconds where the in-process stores take
/// microseconds; fewer cases, the same operations.
const POSTGRES_CASES: u32 = 128;
/// Connections per ledger: enough for one to leave a transaction open while another asks.
const CONNECTIONS: usize = 2;
const RUNS: [&str; 2] = ["run-1", "run-2"];
const CALLS: [&str; 3] = ["c1", "c2", "c3"];
const ARGUMENTS: [&str; 2] = [r#"{"amount_cents":2500}"#, r#"{"amount_cents":9900}"#];
const TOOLS: [&str; 2] = ["issue_credit", "lookup_order"];
const OWNERS: [&str; 3] = ["w1", "w2", "operator"];
const TENANTS: [&str; 2] = ["acme", "globex"];
const SIDE_EFFECTS: [SideEffect; 4] = [
    SideEffect::Read,
    SideEffect::Write,
    SideEffect::External,
    SideEffect::Destructive,
];

/// A key: one of a few runs and calls, so operations collide often.
#[derive(Clone, Copy, Debug)]
struct KeyChoice {
    run: usize,
    call: usize,
}

impl KeyChoice {
    fn key(self) -> IdempotencyKey {
        self.key_in(&RUNS)
    }

    /// The key among `runs` (a concurrent run's own run ids, say).
    fn key_in(self, runs: &[&str; 2]) -> IdempotencyKey {
        IdempotencyKey::per_call(runs[self.run], CALLS[self.call]).unwrap()
    }
}

fn key_choice() -> impl Strategy<Value = KeyChoice> {
    (0..RUNS.len(), 0..CALLS.len()).prop_map(|(run, call)| KeyChoice { run, call })
}

#[derive(Clone, Copy, Debug)]
struct ReserveChoice {
    key: KeyChoice,
    tenant: usize,
    tool: usize,
    side_effect: usize,
    arguments: usize,
    owner: usize,
    lease_ms: Option<u64>,
    checkpoint_version: Option<u32>,
}

fn reserve_choice() -> impl Strategy<Value = ReserveChoice> {
    (
        key_choice(),
        0..TENANTS.len(),
        0..TOOLS.len(),
        0..SIDE_EFFECTS.len(),
        0..ARGUMENTS.len(),
        0..OWNERS.len(),
        proptest::option::of(0_u64..5),
        proptest::option::of(0_u32..3),
    )
        .prop_map(
            |(key, tenant, tool, side_effect, arguments, owner, lease_ms, checkpoint_version)| ReserveChoice {
                key,
                tenant,
                tool,
                side_effect,
                arguments,
                owner,
                lease_ms,
                checkpoint_version,
            },
        )
}

fn status() -> impl Strategy<Value = Status> {
    proptest::sample::select(Status::ALL.to_vec())
}

/// What an attempt can record: never `started`, never a compensation (the type says so).
fn outcome_status() -> impl Strategy<Value = Outcome> {
    proptest::sample::select(Outcome::ALL.to_vec())
}

fn history_event() -> impl Strategy<Value = HistoryEvent> {
    proptest::sample::select(HistoryEvent::ALL.to_vec())
}

fn short_text() -> impl Strategy<Value = Option<String>> {
    proptest::option::of(
        proptest::sample::select(vec!["", "ok", "refused: no funds", "ünïcode ✔"]).prop_map(String::from),
    )
}

/// One operation on one connection, after the clock moves on by `advance_ms`.
#[derive(Clone, Debug)]
enum Operation {
    Reserve(ReserveChoice),
    /// The reservation with attempt `attempt`'s send fence folded into its transaction.
    ReserveAndBegin {
        choice: ReserveChoice,
        attempt: u32,
    },
    ReserveUncommitted(ReserveChoice),
    InsertStartedUnchecked(ReserveChoice),
    NoteAttempt {
        key: KeyChoice,
        attempt: u32,
        actor: usize,
    },
    BeginAttempt {
        key: KeyChoice,
        attempt: u32,
        actor: usize,
    },
    RecordOutcome {
        key: KeyChoice,
        status: Outcome,
        result: Option<String>,
        actor: usize,
        attempt: u32,
    },
    LogLateOutcome {
        key: KeyChoice,
        detail: String,
    },
    Note {
        key: KeyChoice,
        event: HistoryEvent,
        detail: String,
    },
    Settle {
        key: KeyChoice,
        to: Status,
        expected: Option<Status>,
        expected_attempts: Option<u32>,
        event: HistoryEvent,
        reason: Option<String>,
        result: Option<String>,
    },
    AppendRunEvent {
        run: usize,
        detail: String,
    },
    RunHistory(Option<usize>),
    SaveCheckpoint {
        run: usize,
        status: String,
        expected_version: Option<u32>,
        still_failed: Option<KeyChoice>,
    },
    Record(KeyChoice),
    Records {
        tenant: Option<usize>,
        status: Option<Status>,
        after: Option<(u64, KeyChoice)>,
        limit: u32,
    },
    History(KeyChoice),
    LoadCheckpoint(usize),
    /// Drops the connection (rolling back what it left open, as SIGKILL would) and opens it again.
    Reconnect,
}

fn operation() -> impl Strategy<Value = Operation> {
    prop_oneof![
        6 => reserve_choice().prop_map(Operation::Reserve),
        3 => (reserve_choice(), 1_u32..3).prop_map(|(choice, attempt)| Operation::ReserveAndBegin { choice, attempt }),
        1 => reserve_choice().prop_map(Operation::ReserveUncommitted),
        2 => reserve_choice().prop_map(Operation::InsertStartedUnchecked),
        2 => (key_choice(), 0_u32..4, 0..OWNERS.len())
            .prop_map(|(key, attempt, actor)| Operation::NoteAttempt { key, attempt, actor }),
        3 => (key_choice(), 0_u32..4, 0..OWNERS.len())
            .prop_map(|(key, attempt, actor)| Operation::BeginAttempt { key, attempt, actor }),
        4 => (key_choice(), outcome_status(), short_text(), 0..OWNERS.len(), 0_u32..3)
            .prop_map(|(key, status, result, actor, attempt)| Operation::RecordOutcome { key, status, result, actor, attempt }),
        1 => (key_choice(), "[a-z ]{0,8}").prop_map(|(key, detail)| Operation::LogLateOutcome { key, detail }),
        1 => (key_choice(), history_event(), "[a-z ]{0,8}")
            .prop_map(|(key, event, detail)| Operation::Note { key, event, detail }),
        4 => (
            key_choice(),
            status(),
            proptest::option::of(status()),
            proptest::option::of(0_u32..2),
            history_event(),
            short_text(),
            short_text(),
        )
            .prop_map(|(key, to, expected, expected_attempts, event, reason, result)| Operation::Settle {
                key,
                to,
                expected,
                expected_attempts,
                event,
                reason,
                result,
            }),
        1 => (0..RUNS.len(), "[a-z ]{0,8}").prop_map(|(run, detail)| Operation::AppendRunEvent { run, detail }),
        1 => proptest::option::of(0..RUNS.len()).prop_map(Operation::RunHistory),
        3 => (0..RUNS.len(), "[a-z]{1,5}", proptest::option::of(0_u32..3), proptest::option::of(key_choice()))
            .prop_map(|(run, status, expected_version, still_failed)| Operation::SaveCheckpoint {
                run,
                status,
                expected_version,
                still_failed,
            }),
        2 => key_choice().prop_map(Operation::Record),
        2 => (
            proptest::option::of(0..TENANTS.len()),
            proptest::option::of(status()),
            proptest::option::of((0_u64..20, key_choice())),
            0_u32..5,
        )
            .prop_map(|(tenant, status, after, limit)| Operation::Records { tenant, status, after, limit }),
        1 => key_choice().prop_map(Operation::History),
        1 => (0..RUNS.len()).prop_map(Operation::LoadCheckpoint),
        1 => Just(Operation::Reconnect),
    ]
}

/// An error as both stores must give it: its kind, and SQLite's code where it has one.
/// (Messages name the ledger, which differs between two ledgers by design.)
fn ledger_error_kind(error: &LedgerError) -> String {
    match error {
        LedgerError::NotALedger { .. } => "not a ledger".into(),
        LedgerError::Corrupt { .. } => "corrupt".into(),
        LedgerError::Locked { context, .. } => format!("locked while {context}"),
        LedgerError::SchemaVersion { .. } => "schema version".into(),
        LedgerError::Open { .. } => "open".into(),
        LedgerError::Missing { .. } => "missing".into(),
        LedgerError::Failed { context, source, .. } => {
            format!("store failed (SQLite code {:?}) while {context}", source.sqlite_code())
        }
        LedgerError::BadRow { key, detail, .. } => format!("bad row {key}: {detail}"),
        LedgerError::Store { context, detail, .. } => format!("store {detail} while {context}"),
        LedgerError::BadCheckpoint { run_id, detail, .. } => format!("bad checkpoint {run_id}: {detail}"),
        LedgerError::BadRequest { detail, .. } => format!("bad request: {detail}"),
        LedgerError::RunOfAnotherTenant {
            run_id, owner, asked, ..
        } => {
            format!("run {run_id} of tenant {owner}, asked by {asked}")
        }
        // An error a later runtime adds: compared by its words.
        other => format!("other: {other}"),
    }
}

fn settle_error_kind(error: &SettleError) -> String {
    match error {
        SettleError::Ledger(error) => ledger_error_kind(error),
        other => format!("{other:?}"),
    }
}

/// Applies `operation` on connection `connection` of `ledgers` and describes the answer, so
/// that two stores' answers compare as text.
fn apply(ledgers: &mut [Ledger], connection: usize, operation: &Operation, now_ms: u64) -> String {
    apply_in(&RUNS, ledgers, connection, operation, now_ms)
}

/// What `choice` asks to reserve, for `key` among `runs`.
fn reserve_request<'a>(runs: &[&'a str; 2], choice: &ReserveChoice, key: &'a IdempotencyKey) -> ReserveRequest<'a> {
    ReserveRequest::new(
        key,
        runs[choice.key.run],
        CALLS[choice.key.call],
        TOOLS[choice.tool],
        SIDE_EFFECTS[choice.side_effect],
        ARGUMENTS[choice.arguments],
        OWNERS[choice.owner],
    )
    .with_tenant(TENANTS[choice.tenant])
    .with_lease_ms(choice.lease_ms)
    .with_checkpoint_version(choice.checkpoint_version)
}

/// [`apply`] with the run ids `runs` in place of [`RUNS`].
fn apply_in(runs: &[&str; 2], ledgers: &mut [Ledger], connection: usize, operation: &Operation, now_ms: u64) -> String {
    let describe = |result: Result<String, LedgerError>| match result {
        Ok(text) => format!("ok {text}"),
        Err(error) => format!("error {}", ledger_error_kind(&error)),
    };
    let ledger = &mut ledgers[connection];
    match operation {
        Operation::Reserve(choice)
        | Operation::ReserveAndBegin { choice, .. }
        | Operation::ReserveUncommitted(choice)
        | Operation::InsertStartedUnchecked(choice) => {
            let key = choice.key.key_in(runs);
            let request = reserve_request(runs, choice, &key);
            let answer: Result<String, LedgerError> = match operation {
                Operation::Reserve(_) => ledger
                    .reserve(&request, now_ms)
                    .map(|answer: Reservation| format!("{answer:?}")),
                Operation::ReserveAndBegin { attempt, .. } => ledger
                    .reserve_and_begin(&request, *attempt, now_ms)
                    .map(|answer| format!("{answer:?}")),
                Operation::ReserveUncommitted(_) => {
                    ledger.reserve_uncommitted(&request, now_ms).map(|()| String::new())
                }
                _ => ledger
                    .insert_started_unchecked(&request, now_ms)
                    .map(|answer| format!("{answer:?}")),
            };
            describe(answer)
        }
        Operation::NoteAttempt { key, attempt, actor } => describe(
            ledger
                .note_attempt(&key.key_in(runs), *attempt, OWNERS[*actor], now_ms)
                .map(|()| String::new()),
        ),
        Operation::BeginAttempt { key, attempt, actor } => describe(
            ledger
                .begin_attempt(&key.key_in(runs), *attempt, OWNERS[*actor], now_ms)
                .map(|answer| format!("{answer:?}")),
        ),
        Operation::RecordOutcome {
            key,
            status,
            result,
            actor,
            attempt,
        } => describe(
            ledger
                .record_outcome(
                    &key.key_in(runs),
                    *status,
                    result.as_deref(),
                    OWNERS[*actor],
                    *attempt,
                    now_ms,
                )
                .map(|answer| format!("{answer:?}")),
        ),
        Operation::LogLateOutcome { key, detail } => describe(
            ledger
                .log_late_outcome(
                    &key.key_in(runs),
                    "w1",
                    &twice_sim::ledger::LateAnswer {
                        attempt: 1,
                        says: Outcome::Completed,
                        detail,
                    },
                    now_ms,
                )
                .map(|contradiction| format!("{contradiction:?}")),
        ),
        Operation::Note { key, event, detail } => describe(
            ledger
                .note(&key.key_in(runs), "w2", *event, detail, now_ms)
                .map(|()| String::new()),
        ),
        Operation::Settle {
            key,
            to,
            expected,
            expected_attempts,
            event,
            reason,
            result,
        } => {
            let settlement = Settlement {
                to: *to,
                expected: *expected,
                expected_attempts: *expected_attempts,
                actor: "operator",
                event: *event,
                reason: reason.as_deref(),
                result: result.as_deref(),
                detail: None,
                settles_started: true,
            };
            match ledger.settle(&key.key_in(runs), &settlement, now_ms) {
                Ok(record) => format!("ok {record:?}"),
                Err(error) => format!("error {}", settle_error_kind(&error)),
            }
        }
        Operation::SaveCheckpoint {
            run,
            status,
            expected_version,
            still_failed,
        } => {
            let still_failed = still_failed.map(|key| key.key_in(runs));
            let save = CheckpointSave {
                run_id: runs[*run],
                status,
                state: "{\"step\":1}",
                saved_by: "w1",
                expected_version: *expected_version,
                still_failed: still_failed.as_ref(),
            };
            describe(
                ledger
                    .save_checkpoint_fenced(&save, now_ms)
                    .map(|answer: SaveOutcome| format!("{answer:?}")),
            )
        }
        Operation::AppendRunEvent { run, detail } => describe(
            ledger
                .append_run_event(runs[*run], "w1", RunEvent::WaitsForPerson, detail, now_ms)
                .map(|()| String::new()),
        ),
        Operation::RunHistory(run) => describe(
            ledger
                .run_history(run.map(|run| runs[run]))
                .map(|answer| format!("{answer:?}")),
        ),
        Operation::Record(key) => describe(ledger.record(&key.key_in(runs)).map(|answer| format!("{answer:?}"))),
        Operation::Records {
            tenant,
            status,
            after,
            limit,
        } => {
            let after_key = after.map(|(_, key)| key.key_in(runs));
            let after = after.map(|(offset_ms, _)| START_MS + offset_ms).zip(after_key.as_ref());
            describe(
                ledger
                    .records(
                        RecordFilter::default()
                            .with_tenant(tenant.map(|tenant| TENANTS[tenant]))
                            .with_status(*status)
                            .with_after(after.map(|(ms, key)| (ms, key.as_str())))
                            .with_limit(*limit),
                    )
                    .map(|answer| format!("{answer:?}")),
            )
        }
        Operation::History(key) => describe(ledger.history(&key.key_in(runs)).map(|answer| format!("{answer:?}"))),
        Operation::LoadCheckpoint(run) => {
            describe(ledger.load_checkpoint(runs[*run]).map(|answer| format!("{answer:?}")))
        }
        Operation::Reconnect => {
            // The other connection keeps the ledger alive while this one is replaced.
            let keeper = (connection + 1) % CONNECTIONS;
            let again = ledgers[keeper].connect_again().expect("connect again");
            ledgers[connection] = again;
            "reconnected".into()
        }
    }
}

/// Every operation but [`Operation::ReserveUncommitted`], which leaves a transaction open
/// across calls: SQLite (one writer for the whole file) then answers every other
/// connection's write `Locked`, where a server database lets other keys go on and makes a
/// second reserver of the same key wait for the first. What PostgreSQL does with a
/// transaction left open by a process that dies is shown on a real server in
/// `sim/postgres/tests/postgres_store.rs`.
fn operation_without_open_transactions() -> impl Strategy<Value = Operation> {
    operation().prop_filter("an open transaction is SQLite's single-writer behaviour", |operation| {
        !matches!(operation, Operation::ReserveUncommitted(_))
    })
}

fn connections(store: LedgerStore) -> Vec<Ledger> {
    connect_from(Ledger::open_in(store).expect("a fresh memory ledger"))
}

fn connect_from(first: Ledger) -> Vec<Ledger> {
    let mut all = vec![first];
    for _ in 1..CONNECTIONS {
        all.push(all[0].connect_again().expect("another connection"));
    }
    all
}

/// The whole contents of a ledger, as one of its connections reads them.
fn contents(ledger: &Ledger) -> String {
    format!(
        "records {:?}\nhistory {:?}\ncheckpoints {:?}\nrun history {:?}",
        ledger.all_records().map_err(|error| ledger_error_kind(&error)),
        ledger.all_history().map_err(|error| ledger_error_kind(&error)),
        ledger.checkpoints().map_err(|error| ledger_error_kind(&error)),
        ledger.run_history(None).map_err(|error| ledger_error_kind(&error)),
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn the_memory_store_answers_every_operation_as_sqlite_does(
        steps in proptest::collection::vec((0..CONNECTIONS, 0_u64..3, operation()), 1..60)
    ) {
        let mut sqlite = connections(LedgerStore::Sqlite);
        let mut memory = connections(LedgerStore::Memory);
        let mut now_ms = START_MS;
        for (index, (connection, advance_ms, operation)) in steps.iter().enumerate() {
            now_ms += advance_ms;
            let expected = apply(&mut sqlite, *connection, operation, now_ms);
            let found = apply(&mut memory, *connection, operation, now_ms);
            prop_assert_eq!(&found, &expected, "step {} on connection {}: {:?}", index, connection, operation);
        }
        for connection in 0..CONNECTIONS {
            prop_assert_eq!(contents(&memory[connection]), contents(&sqlite[connection]), "connection {}", connection);
        }
        // Every connection gone but one: what was left open is rolled back on both.
        let keeper_sqlite = sqlite.remove(0);
        let keeper_memory = memory.remove(0);
        drop(sqlite);
        drop(memory);
        prop_assert_eq!(contents(&keeper_memory), contents(&keeper_sqlite));
    }
}

/// Runs `steps` on two ledgers of the same operations and holds `found` to `expected`.
fn same_answers(
    steps: &[(usize, u64, Operation)],
    expected: &mut [Ledger],
    found: &mut [Ledger],
) -> Result<(), TestCaseError> {
    let mut now_ms = START_MS;
    for (index, (connection, advance_ms, operation)) in steps.iter().enumerate() {
        now_ms += advance_ms;
        let expected_answer = apply(expected, *connection, operation, now_ms);
        let found_answer = apply(found, *connection, operation, now_ms);
        prop_assert_eq!(
            &found_answer,
            &expected_answer,
            "step {} on connection {}: {:?}",
            index,
            connection,
            operation
        );
    }
    for connection in 0..CONNECTIONS {
        prop_assert_eq!(
            contents(&found[connection]),
            contents(&expected[connection]),
            "connection {}",
            connection
        );
    }
    Ok(())
}

#[test]
fn postgres_answers_every_operation_as_sqlite_does() {
    let Some(database) = TestDatabase::create("postgres_answers_as_sqlite") else {
        return;
    };
    let mut runner = TestRunner::new(RunnerConfig {
        cases: POSTGRES_CASES,
        // Failures are kept in this file's `.proptest-regressions` by the in-process tests;
        // this runner replays its own cases only.
        failure_persistence: None,
        ..RunnerConfig::default()
    });
    let steps = proptest::collection::vec((0..CONNECTIONS, 0_u64..3, operation_without_open_transactions()), 1..60);
    let outcome = runner.run(&steps, |steps| {
        let mut sqlite = connections(LedgerStore::Sqlite);
        let first = twice_sim::ledger_postgres::open(&database.fresh_schema()).expect("a fresh PostgreSQL ledger");
        let mut postgres = connect_from(first);
        same_answers(&steps, &mut sqlite, &mut postgres)
    });
    if let Err(error) = outcome {
        panic!("{error}");
    }
}

#[test]
fn an_open_transaction_locks_out_other_connections_on_both_stores() {
    for store in [LedgerStore::Sqlite, LedgerStore::Memory] {
        let mut ledgers = connections(store);
        let key = KeyChoice { run: 0, call: 0 };
        let reserve = ReserveChoice {
            key,
            tenant: 0,
            tool: 0,
            side_effect: 2,
            arguments: 0,
            owner: 0,
            lease_ms: None,
            checkpoint_version: None,
        };
        assert_eq!(
            apply(&mut ledgers, 0, &Operation::ReserveUncommitted(reserve), START_MS),
            "ok "
        );
        let other = apply(&mut ledgers, 1, &Operation::Reserve(reserve), START_MS);
        assert_eq!(other, "error locked while reserving", "{store}");
        let same = apply(&mut ledgers, 0, &Operation::Reserve(reserve), START_MS);
        // SQLITE_ERROR (1): a transaction begun inside another, answered alike by both stores.
        assert!(
            same.starts_with("error store failed (SQLite code Some(1))"),
            "{store}: {same}"
        );
        apply(&mut ledgers, 0, &Operation::Reconnect, START_MS);
        let after = apply(&mut ledgers, 1, &Operation::Reserve(reserve), START_MS + 1);
        assert!(
            after.contains("RunNew"),
            "{store}: the crashed reservation was rolled back: {after}"
        );
    }
}

/// What [`Ledger::reserve_and_begin`] must answer, made the long way on `ledger`: the
/// reservation in its own transaction, then — if it runs the tool — the send fence in another.
fn reserved_then_begun(ledger: &mut Ledger, request: &ReserveRequest<'_>, attempt: u32, now_ms: u64) -> String {
    let reservation = match ledger.reserve(request, now_ms) {
        Ok(reservation) => reservation,
        Err(error) => return format!("error {}", ledger_error_kind(&error)),
    };
    let folded = match reservation {
        Reservation::Decided {
            action,
            previous_owner,
            previous_status,
            ..
        } if action.runs() => match ledger.begin_attempt(request.key, attempt, request.owner, now_ms) {
            Ok(AttemptStart::Begun(record)) => FoldedReservation {
                reservation: Reservation::Decided {
                    action,
                    record,
                    previous_owner,
                    previous_status,
                },
                attempt_begun: Some(attempt),
            },
            other => return format!("the fence after a reservation that runs refused: {other:?}"),
        },
        reservation => FoldedReservation {
            reservation,
            attempt_begun: None,
        },
    };
    format!("ok {folded:?}")
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn a_folded_reservation_answers_and_writes_as_a_reservation_and_its_fence_do(
        steps in proptest::collection::vec((0..CONNECTIONS, 0_u64..3, operation_without_open_transactions()), 1..60)
    ) {
        let mut folded = connections(LedgerStore::Sqlite);
        let mut separate = connections(LedgerStore::Sqlite);
        let mut now_ms = START_MS;
        for (index, (connection, advance_ms, operation)) in steps.iter().enumerate() {
            now_ms += advance_ms;
            let found = apply(&mut folded, *connection, operation, now_ms);
            let expected = match operation {
                Operation::ReserveAndBegin { choice, attempt } => {
                    let key = choice.key.key();
                    reserved_then_begun(&mut separate[*connection], &reserve_request(&RUNS, choice, &key), *attempt, now_ms)
                }
                other => apply(&mut separate, *connection, other, now_ms),
            };
            prop_assert_eq!(&found, &expected, "step {}: {:?}", index, operation);
        }
        prop_assert_eq!(contents(&folded[0]), contents(&separate[0]));
    }
}

// ----- commit groups -----

/// Random sequences held against a commit group on a file: every write is a durable commit.
const GROUPED_CASES: u32 = 96;
/// Concurrent cases: each is several threads' sequences through one group.
const CONCURRENT_CASES: u32 = 32;
/// Runs writing at once through one group in the concurrent cases.
const THREADS: usize = 4;

/// A SQLite file ledger whose writes go through a commit group, and a second handle on it.
/// `before_commit` holds each batch open a moment, so that concurrent callers join it.
fn grouped_sqlite(path: &Path, before_commit: fn(u32)) -> Vec<Ledger> {
    let settings = GroupSettings::default().with_before_commit(before_commit);
    connect_from(Ledger::open_grouped(path, settings).expect("a grouped file ledger"))
}

/// A batch kept open long enough for the other threads' writes to join it.
fn gather_a_batch(_members: u32) {
    std::thread::sleep(Duration::from_millis(1));
}

proptest! {
    #![proptest_config(ProptestConfig { cases: GROUPED_CASES, ..ProptestConfig::default() })]

    #[test]
    fn a_commit_group_answers_every_operation_as_plain_sqlite_and_the_memory_store_do(
        steps in proptest::collection::vec((0..CONNECTIONS, 0_u64..3, operation_without_open_transactions()), 1..60)
    ) {
        let folder = tempfile::tempdir().expect("a temporary folder");
        let mut grouped = grouped_sqlite(&folder.path().join("grouped.sqlite"), |_| {});
        same_answers(&steps, &mut connections(LedgerStore::Sqlite), &mut grouped)?;
        same_answers(&steps, &mut connections(LedgerStore::Sqlite), &mut connections(LedgerStore::Memory))?;
    }
}

/// An operation that touches only its own run's rows: no listing across runs, which would see
/// the other threads' runs too.
fn operation_of_one_run() -> impl Strategy<Value = Operation> {
    operation_without_open_transactions().prop_filter("a listing reads every run's rows", |operation| {
        !matches!(operation, Operation::Records { .. } | Operation::RunHistory(None))
    })
}

/// Each thread's sequence, on connections of its own.
fn concurrent_steps() -> impl Strategy<Value = Vec<Vec<(usize, u64, Operation)>>> {
    proptest::collection::vec(
        proptest::collection::vec((0..CONNECTIONS, 0_u64..3, operation_of_one_run()), 1..30),
        THREADS,
    )
}

/// Thread `thread`'s run ids: its keys, checkpoints and run history are its own.
fn thread_runs(thread: usize) -> [String; 2] {
    [format!("t{thread}-run-1"), format!("t{thread}-run-2")]
}

/// `text` with every numeric `id: N` made `id: _`: history lines are numbered across every
/// run of a ledger, so runs interleaved through a group number theirs differently than alone.
fn without_ids(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("id: ") {
        out.push_str(&rest[..at + 4]);
        rest = &rest[at + 4..];
        let digits = rest.len() - rest.trim_start_matches(|c: char| c.is_ascii_digit()).len();
        if digits > 0 {
            out.push('_');
            rest = &rest[digits..];
        }
    }
    out.push_str(rest);
    out
}

/// One thread's sequence on `ledgers`: each answer, ids left out.
fn answers_of(runs: &[&str; 2], steps: &[(usize, u64, Operation)], ledgers: &mut [Ledger]) -> Vec<String> {
    let mut now_ms = START_MS;
    steps
        .iter()
        .map(|(connection, advance_ms, operation)| {
            now_ms += advance_ms;
            without_ids(&apply_in(runs, ledgers, *connection, operation, now_ms))
        })
        .collect()
}

/// What a ledger holds of `runs`' rows, ids left out.
fn contents_of(ledger: &Ledger, runs: &[&str; 2]) -> String {
    let keys: Vec<IdempotencyKey> = (0..runs.len())
        .flat_map(|run| (0..CALLS.len()).map(move |call| KeyChoice { run, call }))
        .map(|choice| choice.key_in(runs))
        .collect();
    let records = ledger.all_records().map(|records| {
        records
            .into_iter()
            .filter(|record| runs.contains(&record.run_id.as_str()))
            .collect::<Vec<_>>()
    });
    let history = ledger.all_history().map(|lines| {
        lines
            .into_iter()
            .filter(|line| keys.contains(&line.key))
            .collect::<Vec<_>>()
    });
    let checkpoints = ledger.checkpoints().map(|checkpoints| {
        checkpoints
            .into_iter()
            .filter(|checkpoint| runs.contains(&checkpoint.run_id.as_str()))
            .collect::<Vec<_>>()
    });
    let run_history: Vec<_> = runs.iter().map(|run| ledger.run_history(Some(run))).collect();
    without_ids(&format!(
        "records {:?}\nhistory {:?}\ncheckpoints {:?}\nrun history {:?}",
        records.map_err(|error| ledger_error_kind(&error)),
        history.map_err(|error| ledger_error_kind(&error)),
        checkpoints.map_err(|error| ledger_error_kind(&error)),
        run_history
            .into_iter()
            .map(|lines| lines.map_err(|error| ledger_error_kind(&error)))
            .collect::<Vec<_>>(),
    ))
}

/// Runs every thread's sequence at once through the group `first` belongs to, and holds each
/// thread's answers and rows to those of its sequence run alone on plain SQLite.
fn concurrent_runs_answer_as_alone(
    first: &Ledger,
    sequences: &[Vec<(usize, u64, Operation)>],
) -> Result<(), TestCaseError> {
    let names: Vec<[String; 2]> = (0..sequences.len()).map(thread_runs).collect();
    let runs: Vec<[&str; 2]> = names.iter().map(|[one, two]| [one.as_str(), two.as_str()]).collect();
    let mut handles: Vec<Vec<Ledger>> = sequences
        .iter()
        .map(|_| connect_from(first.connect_again().expect("a run's handle")))
        .collect();
    let start = Barrier::new(sequences.len());
    let found: Vec<Vec<String>> = std::thread::scope(|scope| {
        let threads: Vec<_> = handles
            .iter_mut()
            .zip(sequences)
            .zip(&runs)
            .map(|((ledgers, steps), runs)| {
                let start = &start;
                scope.spawn(move || {
                    start.wait();
                    answers_of(runs, steps, ledgers)
                })
            })
            .collect();
        threads
            .into_iter()
            .map(|thread| thread.join().expect("a run's thread"))
            .collect()
    });
    for (thread, (steps, runs)) in sequences.iter().zip(&runs).enumerate() {
        let mut alone = connections(LedgerStore::Sqlite);
        let expected = answers_of(runs, steps, &mut alone);
        for (index, (found, expected)) in found[thread].iter().zip(&expected).enumerate() {
            prop_assert_eq!(found, expected, "thread {} step {}: {:?}", thread, index, steps[index]);
        }
        prop_assert_eq!(
            contents_of(first, runs),
            contents_of(&alone[0], runs),
            "thread {}",
            thread
        );
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: CONCURRENT_CASES, ..ProptestConfig::default() })]

    #[test]
    fn runs_writing_at_once_through_a_commit_group_each_answer_as_alone(sequences in concurrent_steps()) {
        let folder = tempfile::tempdir().expect("a temporary folder");
        let grouped = grouped_sqlite(&folder.path().join("grouped.sqlite"), gather_a_batch);
        concurrent_runs_answer_as_alone(&grouped[0], &sequences)?;
    }
}

#[test]
fn postgres_commit_groups_answer_as_sqlite_does_alone_and_at_once() {
    let Some(database) = TestDatabase::create("postgres_groups_answer_as_sqlite") else {
        return;
    };
    let grouped = |database: &TestDatabase, before_commit: fn(u32)| {
        let settings = GroupSettings::default().with_before_commit(before_commit);
        twice_sim::ledger_postgres::open_grouped(&database.fresh_schema(), settings)
            .expect("a grouped PostgreSQL ledger")
    };
    let config = |cases| RunnerConfig {
        cases,
        failure_persistence: None,
        ..RunnerConfig::default()
    };
    let steps = proptest::collection::vec((0..CONNECTIONS, 0_u64..3, operation_without_open_transactions()), 1..60);
    let outcome = TestRunner::new(config(GROUPED_CASES / 2)).run(&steps, |steps| {
        let mut postgres = connect_from(grouped(&database, |_| {}));
        same_answers(&steps, &mut connections(LedgerStore::Sqlite), &mut postgres)
    });
    if let Err(error) = outcome {
        panic!("one at a time: {error}");
    }
    let outcome = TestRunner::new(config(CONCURRENT_CASES / 2)).run(&concurrent_steps(), |sequences| {
        concurrent_runs_answer_as_alone(&grouped(&database, gather_a_batch), &sequences)
    });
    if let Err(error) = outcome {
        panic!("at once: {error}");
    }
}

fn levels_folder() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../levels")
}

/// What a tape's replay comes to: phases, verdict, the event log with the ledger's contents,
/// and the moves played.
type Replayed = (
    u32,
    twice_sim::checker::Verdict,
    String,
    Vec<twice_sim::level::TimedAction>,
);

/// Replays every tape under `levels/` on `store` and on SQLite, and holds the two alike.
fn every_tape_replays_alike(
    store_name: &str,
    mut build: impl FnMut(SimulationBuilder) -> twice_sim::simulator::Simulation,
) {
    let tapes = level::files_below(&levels_folder(), ".tape.ron").expect("levels/ is readable");
    assert!(!tapes.is_empty(), "levels/ holds tapes");
    for path in tapes {
        let tape = level::load_tape(&path).unwrap_or_else(|error| panic!("{}: {error}", path.display()));
        let mut builder =
            SimulationBuilder::new(tape.level.level.clone(), tape.tape.seed).actions(tape.tape.actions.clone());
        if let Some(guards) = tape.tape.guards {
            builder = builder.guards(guards);
        }
        let play = |mut simulation: twice_sim::simulator::Simulation| -> Replayed {
            let phases = simulation.run().expect("the simulation runs");
            (
                phases,
                simulation.verdict().expect("a verdict"),
                simulation.history_text().expect("the history"),
                simulation.played().to_vec(),
            )
        };
        let sqlite = builder
            .clone()
            .ledger_store(LedgerStore::Sqlite)
            .build()
            .expect("the simulation builds");
        assert_eq!(sqlite.ledger().store(), Some(LedgerStore::Sqlite));
        let (sqlite_phases, sqlite_verdict, sqlite_history, sqlite_played) = play(sqlite);
        let (phases, verdict, history, played) = play(build(builder));
        let name = path.display();
        assert_eq!(phases, sqlite_phases, "{name} on {store_name}: phases");
        assert_eq!(verdict, sqlite_verdict, "{name} on {store_name}: verdict");
        assert_eq!(played, sqlite_played, "{name} on {store_name}: moves played");
        // The timeline, every ledger record, its history, the checkpoints, billing and guard notes.
        assert_eq!(
            history, sqlite_history,
            "{name} on {store_name}: event log and ledger contents"
        );
    }
}

#[test]
fn every_tape_replays_identically_on_both_stores() {
    every_tape_replays_alike("the memory store", |builder| {
        let simulation = builder
            .ledger_store(LedgerStore::Memory)
            .build()
            .expect("the simulation builds");
        assert_eq!(simulation.ledger().store(), Some(LedgerStore::Memory));
        simulation
    });
}

#[test]
fn every_tape_replays_identically_on_postgres() {
    let Some(database) = TestDatabase::create("every_tape_on_postgres") else {
        return;
    };
    every_tape_replays_alike("PostgreSQL", |builder| {
        let ledger = twice_sim::ledger_postgres::open(&database.fresh_schema()).expect("a fresh PostgreSQL ledger");
        let simulation = builder.build_on(ledger).expect("the simulation builds");
        assert_eq!(simulation.ledger().store(), None, "an external store");
        simulation
    });
}
