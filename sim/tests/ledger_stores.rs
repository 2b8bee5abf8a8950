//! Differential tests: the memory store and the PostgreSQL store must answer exactly as
//! SQLite does.
//!
//! The same random sequences of ledger operations go to a SQLite memory ledger and to a
//! memory-store ledger (and to a PostgreSQL ledger, each sequence in a fresh schema); every
//! answer (values and error kinds) and the final tables must be equal. Then every tape under
//! `levels/` is replayed on every store, and the verdicts, the ledgers' rows and the whole
//! event log must be equal too.
//!
//! The PostgreSQL tests need a server (`TWICE_POSTGRES_URL`); without one they say they were
//! skipped and pass, except in CI, where they fail (see `twice_ledger_postgres::testing`).

use std::path::PathBuf;

use proptest::prelude::*;
use proptest::test_runner::{Config as RunnerConfig, TestCaseError, TestRunner};
use twice_sim::ledger::{
    CheckpointSave, HistoryEvent, Ledger, LedgerError, LedgerStore, Reservation, ReserveRequest, RunEvent, SaveOutcome,
    SettleError, Settlement,
};
use twice_sim::ledger_postgres::testing::TestDatabase;
use twice_sim::level;
use twice_sim::runtime::key::IdempotencyKey;
use twice_sim::runtime::rules::Status;
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
        IdempotencyKey::per_call(RUNS[self.run], CALLS[self.call]).unwrap()
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

/// What an attempt can record: never `started` (the ledger asserts it), never a compensation.
fn outcome_status() -> impl Strategy<Value = Status> {
    proptest::sample::select(vec![Status::Completed, Status::Failed, Status::Indeterminate])
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
        status: Status,
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
        LedgerError::Sqlite { context, source, .. } => {
            format!("sqlite {:?} while {context}", source.sqlite_error_code())
        }
        LedgerError::BadRow { key, detail, .. } => format!("bad row {key}: {detail}"),
        LedgerError::Store { context, detail, .. } => format!("store {detail} while {context}"),
        LedgerError::BadCheckpoint { run_id, detail, .. } => format!("bad checkpoint {run_id}: {detail}"),
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
    let describe = |result: Result<String, LedgerError>| match result {
        Ok(text) => format!("ok {text}"),
        Err(error) => format!("error {}", ledger_error_kind(&error)),
    };
    let ledger = &mut ledgers[connection];
    match operation {
        Operation::Reserve(choice)
        | Operation::ReserveUncommitted(choice)
        | Operation::InsertStartedUnchecked(choice) => {
            let key = choice.key.key();
            let request = ReserveRequest {
                key: &key,
                tenant: TENANTS[choice.tenant],
                run_id: RUNS[choice.key.run],
                tool_call_id: CALLS[choice.key.call],
                tool: TOOLS[choice.tool],
                side_effect: SIDE_EFFECTS[choice.side_effect],
                arguments: ARGUMENTS[choice.arguments],
                owner: OWNERS[choice.owner],
                lease_ms: choice.lease_ms,
                checkpoint_version: choice.checkpoint_version,
            };
            let answer: Result<String, LedgerError> = match operation {
                Operation::Reserve(_) => ledger
                    .reserve(&request, now_ms)
                    .map(|answer: Reservation| format!("{answer:?}")),
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
                .note_attempt(&key.key(), *attempt, OWNERS[*actor], now_ms)
                .map(|()| String::new()),
        ),
        Operation::BeginAttempt { key, attempt, actor } => describe(
            ledger
                .begin_attempt(&key.key(), *attempt, OWNERS[*actor], now_ms)
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
                .record_outcome(&key.key(), *status, result.as_deref(), OWNERS[*actor], *attempt, now_ms)
                .map(|answer| format!("{answer:?}")),
        ),
        Operation::LogLateOutcome { key, detail } => describe(
            ledger
                .log_late_outcome(&key.key(), "w1", detail, now_ms)
                .map(|()| String::new()),
        ),
        Operation::Note { key, event, detail } => describe(
            ledger
                .note(&key.key(), "w2", *event, detail, now_ms)
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
            };
            match ledger.settle(&key.key(), &settlement, now_ms) {
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
            let still_failed = still_failed.map(KeyChoice::key);
            let save = CheckpointSave {
                run_id: RUNS[*run],
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
                .append_run_event(RUNS[*run], "w1", RunEvent::WaitsForPerson, detail, now_ms)
                .map(|()| String::new()),
        ),
        Operation::RunHistory(run) => describe(
            ledger
                .run_history(run.map(|run| RUNS[run]))
                .map(|answer| format!("{answer:?}")),
        ),
        Operation::Record(key) => describe(ledger.record(&key.key()).map(|answer| format!("{answer:?}"))),
        Operation::Records {
            tenant,
            status,
            after,
            limit,
        } => {
            let after_key = after.map(|(_, key)| key.key());
            let after = after.map(|(offset_ms, _)| START_MS + offset_ms).zip(after_key.as_ref());
            describe(
                ledger
                    .records(
                        tenant.map(|tenant| TENANTS[tenant]),
                        *status,
                        after.map(|(ms, key)| (ms, key.as_str())),
                        *limit,
                    )
                    .map(|answer| format!("{answer:?}")),
            )
        }
        Operation::History(key) => describe(ledger.history(&key.key()).map(|answer| format!("{answer:?}"))),
        Operation::LoadCheckpoint(run) => {
            describe(ledger.load_checkpoint(RUNS[*run]).map(|answer| format!("{answer:?}")))
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
        assert!(same.starts_with("error sqlite"), "{store}: {same}");
        apply(&mut ledgers, 0, &Operation::Reconnect, START_MS);
        let after = apply(&mut ledgers, 1, &Operation::Reserve(reserve), START_MS + 1);
        assert!(
            after.contains("RunNew"),
            "{store}: the crashed reservation was rolled back: {after}"
        );
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
