//! The PostgreSQL store on a real server: its schema and refusals, its error kinds, and its
//! guards under real concurrency — many connections (each its own server backend, on its
//! own thread) reserving one key, saving one checkpoint, settling one call at the same time.
//!
//! Each test makes a database of its own and drops it after. Without `TWICE_POSTGRES_URL`
//! the tests say they were skipped and pass; in CI (or with `TWICE_REQUIRE_POSTGRES=1`)
//! they fail instead (see `testing.rs`).

use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use twice_ledger_postgres::testing::TestDatabase;
use twice_ledger_postgres::{LOCK_TIMEOUT_MS, PostgresUrl};
use twice_runtime::key::IdempotencyKey;
use twice_runtime::ledger::{
    HistoryEvent, Ledger, LedgerError, Reservation, ReserveRequest, SaveOutcome, SettleError, Settlement,
};
use twice_runtime::rules::{Outcome, ReservationAction, Status};
use twice_runtime::tool::SideEffect;

const NOW_MS: u64 = 1_700_000_000_000;
/// Connections contending at once in the concurrency tests.
const CONTENDERS: usize = 8;
/// Keys (or rounds) each concurrency test contends on.
const ROUNDS: usize = 25;
const ARGUMENTS: &str = r#"{"account":"acct_ada","amount_cents":2500}"#;

fn request<'a>(key: &'a IdempotencyKey, run_id: &'a str, owner: &'a str, version: Option<u32>) -> ReserveRequest<'a> {
    ReserveRequest::new(
        key,
        run_id,
        "c1",
        "issue_credit",
        SideEffect::External,
        ARGUMENTS,
        owner,
    )
    .with_tenant("default")
    .with_checkpoint_version(version)
}

/// A raw client for what the ledger itself never does (break its rules, hold a lock, die
/// mid-transaction). Test threads run no async runtime, so the synchronous client is fine here.
fn raw_client(url: &PostgresUrl) -> postgres::Client {
    let mut config = postgres::Config::new();
    config
        .host(url.host())
        .port(url.port())
        .user(url.user())
        .dbname(url.database())
        .options(&format!("-c search_path={}", url.schema()));
    if let Some(password) = url.password() {
        config.password(password);
    }
    config.connect(postgres::NoTls).expect("a raw connection")
}

/// Runs `work` on `CONTENDERS` connections at once (released together by a barrier) and
/// returns their answers.
fn contend<T: Send + 'static>(
    url: &PostgresUrl,
    work: impl Fn(usize, &mut Ledger) -> T + Send + Sync + 'static,
) -> Vec<T> {
    let work = Arc::new(work);
    let barrier = Arc::new(Barrier::new(CONTENDERS));
    let threads: Vec<_> = (0..CONTENDERS)
        .map(|number| {
            let (url, work, barrier) = (url.clone(), Arc::clone(&work), Arc::clone(&barrier));
            std::thread::spawn(move || {
                let mut ledger = twice_ledger_postgres::open(&url).expect("a connection");
                barrier.wait();
                work(number, &mut ledger)
            })
        })
        .collect();
    threads
        .into_iter()
        .map(|thread| thread.join().expect("a contender"))
        .collect()
}

#[test]
fn the_schema_is_made_once_and_anything_else_is_refused() {
    let Some(database) = TestDatabase::create("the_schema_is_made_once") else {
        return;
    };
    let url = database.fresh_schema();
    // A schema nobody made yet is not a ledger to serve.
    let missing = twice_ledger_postgres::open_existing(&url).unwrap_err();
    assert!(matches!(missing, LedgerError::Missing { .. }), "{missing}");
    // Eight processes opening a new ledger at once: made once, every one goes on.
    let opened = contend(&url, |_, ledger| ledger.all_records().map(|records| records.len()));
    assert!(opened.iter().all(|count| matches!(count, Ok(0))), "{opened:?}");
    let ledger = twice_ledger_postgres::open_existing(&url).expect("now it exists");
    assert_eq!(ledger.location(), url.redacted());

    let mut raw = raw_client(&url);
    raw.batch_execute("UPDATE twice_meta SET value = '3' WHERE name = 'schema_version'")
        .unwrap();
    match twice_ledger_postgres::open(&url).unwrap_err() {
        LedgerError::SchemaVersion { found, expected, .. } => assert_eq!((found.as_str(), expected), ("3", 2)),
        other => panic!("{other}"),
    }

    let other = database.fresh_schema();
    let mut raw = raw_client(&database.url().clone());
    raw.batch_execute(&format!(
        "CREATE SCHEMA {0}; CREATE TABLE {0}.invoices (id int)",
        other.schema()
    ))
    .unwrap();
    let refused = twice_ledger_postgres::open(&other).unwrap_err();
    assert!(
        matches!(&refused, LedgerError::NotALedger { detail, .. } if detail.contains("invoices")),
        "{refused}"
    );
    let empty = database.fresh_schema();
    raw.batch_execute(&format!("CREATE SCHEMA {}", empty.schema())).unwrap();
    assert!(matches!(
        twice_ledger_postgres::open_existing(&empty).unwrap_err(),
        LedgerError::NotALedger { .. }
    ));
}

#[test]
fn both_histories_refuse_update_delete_and_truncate() {
    let Some(database) = TestDatabase::create("both_histories_refuse") else {
        return;
    };
    let url = database.fresh_schema();
    let mut ledger = twice_ledger_postgres::open(&url).unwrap();
    let key = IdempotencyKey::parse("run-1:c1").unwrap();
    ledger.reserve(&request(&key, "run-1", "w1", None), NOW_MS).unwrap();
    ledger
        .append_run_event(
            "run-1",
            "w1",
            twice_runtime::ledger::RunEvent::WaitsForPerson,
            "why",
            NOW_MS,
        )
        .unwrap();
    let mut raw = raw_client(&url);
    for statement in [
        "UPDATE tool_execution_history SET actor = 'mallory'",
        "DELETE FROM tool_execution_history",
        "TRUNCATE tool_execution_history",
        "UPDATE run_history SET actor = 'mallory'",
        "DELETE FROM run_history",
        "TRUNCATE run_history",
    ] {
        let error = raw.batch_execute(statement).unwrap_err();
        let message = error.as_db_error().map(|database| database.message().to_owned());
        assert!(
            message
                .as_deref()
                .is_some_and(|message| message.ends_with("is append-only")),
            "{statement}: {error:?}"
        );
    }
    assert_eq!(ledger.history(&key).unwrap().len(), 1);
    assert_eq!(ledger.run_history(None).unwrap().len(), 1);
}

#[test]
fn of_many_reservers_of_one_key_exactly_one_is_told_to_run() {
    let Some(database) = TestDatabase::create("one_reserver_runs") else {
        return;
    };
    let url = database.fresh_schema();
    let answers = contend(&url, |number, ledger| {
        let owner = format!("w{number}");
        (0..ROUNDS)
            .map(|round| {
                let key = IdempotencyKey::per_call("run-1", &format!("c{round}")).unwrap();
                match ledger.reserve(&request(&key, "run-1", &owner, None), NOW_MS) {
                    Ok(Reservation::Decided { action, .. }) => Ok(action),
                    Ok(other) => Err(format!("{other:?}")),
                    Err(error) => Err(error.to_string()),
                }
            })
            .collect::<Vec<_>>()
    });
    let observer = twice_ledger_postgres::open_existing(&url).unwrap();
    for round in 0..ROUNDS {
        let told: Vec<&Result<ReservationAction, String>> = answers.iter().map(|answers| &answers[round]).collect();
        let runs = told
            .iter()
            .filter(|answer| matches!(answer, Ok(ReservationAction::RunNew)))
            .count();
        assert_eq!(runs, 1, "key c{round}: {told:?}");
        assert!(
            told.iter()
                .all(|answer| matches!(answer, Ok(ReservationAction::RunNew | ReservationAction::Unknown))),
            "key c{round}: every other reserver hears `started` (unknown): {told:?}"
        );
        let key = IdempotencyKey::per_call("run-1", &format!("c{round}")).unwrap();
        let reserved = observer
            .history(&key)
            .unwrap()
            .into_iter()
            .filter(|line| line.event == HistoryEvent::Reserved)
            .count();
        assert_eq!(reserved, 1, "key c{round}: one `reserved` line");
    }
    assert_eq!(observer.all_records().unwrap().len(), ROUNDS);
}

#[test]
fn of_many_savers_of_one_checkpoint_version_exactly_one_saves() {
    let Some(database) = TestDatabase::create("one_saver_saves") else {
        return;
    };
    let url = database.fresh_schema();
    let answers = contend(&url, |number, ledger| {
        let mut saved = Vec::new();
        for round in 0..ROUNDS {
            // Everyone loaded version `round`; only one may move it on.
            let expected = u32::try_from(round).unwrap();
            // Wait until the version is there to be contended for (the last round's winner saved it).
            let deadline = Instant::now() + Duration::from_secs(30);
            while ledger
                .load_checkpoint("run-1")
                .unwrap()
                .map_or(0, |checkpoint| checkpoint.version)
                < expected
            {
                assert!(Instant::now() < deadline, "version {expected} never came");
                std::thread::sleep(Duration::from_millis(1));
            }
            let outcome = ledger
                .save_checkpoint("run-1", "running", "{}", &format!("w{number}"), Some(expected), NOW_MS)
                .unwrap();
            saved.push(outcome);
        }
        saved
    });
    for round in 0..ROUNDS {
        let expected = u32::try_from(round).unwrap();
        let outcomes: Vec<&SaveOutcome> = answers.iter().map(|answers| &answers[round]).collect();
        let winners = outcomes
            .iter()
            .filter(|outcome| ***outcome == SaveOutcome::Saved { version: expected + 1 })
            .count();
        assert_eq!(winners, 1, "round {round}: {outcomes:?}");
        assert!(
            outcomes
                .iter()
                .all(|outcome| matches!(outcome, SaveOutcome::Saved { .. } | SaveOutcome::Stale { .. })),
            "{outcomes:?}"
        );
    }
    let ledger = twice_ledger_postgres::open_existing(&url).unwrap();
    assert_eq!(
        ledger.load_checkpoint("run-1").unwrap().unwrap().version,
        u32::try_from(ROUNDS).unwrap()
    );
}

#[test]
fn a_reservation_begun_after_a_newer_save_is_fenced_and_stays_fenced() {
    let Some(database) = TestDatabase::create("reservations_are_fenced") else {
        return;
    };
    let url = database.fresh_schema();
    // Stale workers loaded version 0 and reserve call after call; a twin saves version 1 in
    // the middle of it. Each reservation notes whether it began after the save had returned.
    let saved_at = Arc::new(std::sync::OnceLock::<Instant>::new());
    let saved = Arc::clone(&saved_at);
    let answers = contend(&url, move |number, ledger| {
        if number == 0 {
            std::thread::sleep(Duration::from_millis(20));
            let outcome = ledger
                .save_checkpoint("run-1", "running", "{}", "twin", Some(0), NOW_MS)
                .unwrap();
            assert_eq!(outcome, SaveOutcome::Saved { version: 1 });
            saved.set(Instant::now()).unwrap();
            return Vec::new();
        }
        let owner = format!("w{number}");
        let mut answers = Vec::new();
        for call in 0..ROUNDS * 4 {
            let key = IdempotencyKey::per_call("run-1", &format!("w{number}c{call}")).unwrap();
            let began_after_save = saved.get().is_some();
            let answer = ledger
                .reserve(&request(&key, "run-1", &owner, Some(0)), NOW_MS)
                .unwrap();
            answers.push((began_after_save, answer));
        }
        answers
    });
    assert!(saved_at.get().is_some());
    let mut fenced_total = 0;
    for answers in answers.iter().skip(1) {
        let mut fenced_seen = false;
        for (began_after_save, answer) in answers {
            let fenced = matches!(answer, Reservation::Fenced { expected: 0, found: 1 });
            if *began_after_save {
                assert!(fenced, "a reservation begun after the save was not fenced: {answer:?}");
            }
            assert!(
                !fenced_seen || fenced,
                "once fenced, a stale worker stays fenced: {answers:?}"
            );
            fenced_seen |= fenced;
            fenced_total += usize::from(fenced);
        }
    }
    assert!(fenced_total > 0, "some reservations came after the save");
}

#[test]
fn of_many_operators_settling_one_call_exactly_one_wins() {
    let Some(database) = TestDatabase::create("one_operator_wins") else {
        return;
    };
    let url = database.fresh_schema();
    {
        let mut setup = twice_ledger_postgres::open(&url).unwrap();
        for round in 0..ROUNDS {
            let key = IdempotencyKey::per_call("run-1", &format!("c{round}")).unwrap();
            setup.reserve(&request(&key, "run-1", "w1", None), NOW_MS).unwrap();
            setup.begin_attempt(&key, 1, "w1", NOW_MS).unwrap();
            setup
                .record_outcome(&key, Outcome::Indeterminate, None, "w1", 1, NOW_MS)
                .unwrap();
        }
    }
    let answers = contend(&url, |number, ledger| {
        let operator = format!("op{number}");
        (0..ROUNDS)
            .map(|round| {
                let key = IdempotencyKey::per_call("run-1", &format!("c{round}")).unwrap();
                let settlement = Settlement {
                    to: if number % 2 == 0 {
                        Status::Completed
                    } else {
                        Status::Failed
                    },
                    expected: Some(Status::Indeterminate),
                    expected_attempts: None,
                    actor: &operator,
                    event: HistoryEvent::Resolved,
                    reason: Some("looked in billing"),
                    result: None,
                    detail: None,
                    settles_started: true,
                };
                match ledger.settle(&key, &settlement, NOW_MS + 1) {
                    Ok(record) => Ok(record.status),
                    Err(SettleError::Stale { .. }) => Err("stale"),
                    Err(other) => panic!("{other}"),
                }
            })
            .collect::<Vec<_>>()
    });
    let observer = twice_ledger_postgres::open_existing(&url).unwrap();
    for round in 0..ROUNDS {
        let winners: Vec<Status> = answers.iter().filter_map(|answers| answers[round].ok()).collect();
        assert_eq!(winners.len(), 1, "round {round}: {answers:?}");
        let key = IdempotencyKey::per_call("run-1", &format!("c{round}")).unwrap();
        assert_eq!(observer.record(&key).unwrap().unwrap().status, winners[0]);
        let resolutions = observer
            .history(&key)
            .unwrap()
            .into_iter()
            .filter(|line| line.event == HistoryEvent::Resolved)
            .count();
        assert_eq!(resolutions, 1, "one decision recorded, never overwritten");
    }
}

#[test]
fn a_connection_that_dies_mid_reservation_leaves_nothing_and_the_next_reserver_waited() {
    let Some(database) = TestDatabase::create("dies_mid_reservation") else {
        return;
    };
    let url = database.fresh_schema();
    let mut ledger = twice_ledger_postgres::open(&url).unwrap();
    let key = IdempotencyKey::parse("run-1:c1").unwrap();
    // A process that inserted its reservation and died before committing.
    let mut crashed = raw_client(&url);
    crashed
        .batch_execute(
            "BEGIN; INSERT INTO tool_executions VALUES ('run-1:c1', 'default', 'run-1', 'c1', 'issue_credit', \
             'external', '{}', 'started', 0, NULL, 'ghost', 1, 1, NULL)",
        )
        .unwrap();
    let reserver = std::thread::spawn(move || {
        let started = Instant::now();
        let answer = ledger.reserve(&request(&key, "run-1", "w2", None), NOW_MS);
        (answer, started.elapsed())
    });
    std::thread::sleep(Duration::from_millis(300));
    drop(crashed);
    let (answer, waited) = reserver.join().unwrap();
    match answer.unwrap() {
        Reservation::Decided { action, record, .. } => {
            assert_eq!(action, ReservationAction::RunNew);
            assert_eq!(record.owner, "w2");
        }
        other => panic!("{other:?}"),
    }
    assert!(
        waited >= Duration::from_millis(250),
        "the reserver waited for the open transaction ({waited:?})"
    );
}

#[test]
fn errors_come_in_the_ledgers_own_kinds() {
    let Some(database) = TestDatabase::create("errors_in_own_kinds") else {
        return;
    };
    let url = database.fresh_schema();
    let mut ledger = twice_ledger_postgres::open(&url).unwrap();
    let key = IdempotencyKey::parse("run-1:c1").unwrap();
    ledger.reserve(&request(&key, "run-1", "w1", None), NOW_MS).unwrap();

    // A row lock held longer than the lock timeout: Locked, as SQLite's busy timeout.
    let mut holder = raw_client(&url);
    holder
        .batch_execute("BEGIN; SELECT * FROM tool_executions WHERE idempotency_key = 'run-1:c1' FOR UPDATE")
        .unwrap();
    let started = Instant::now();
    let locked = ledger.begin_attempt(&key, 1, "w1", NOW_MS).unwrap_err();
    assert!(
        matches!(
            locked,
            LedgerError::Locked {
                context: "fencing an attempt",
                ..
            }
        ),
        "{locked}"
    );
    assert!(started.elapsed() >= Duration::from_millis(LOCK_TIMEOUT_MS / 2));
    holder.batch_execute("ROLLBACK").unwrap();

    // A row this build cannot read: BadRow, naming the key.
    let mut raw = raw_client(&url);
    raw.batch_execute("UPDATE tool_executions SET attempts = 9999999999 WHERE idempotency_key = 'run-1:c1'")
        .unwrap();
    let bad = ledger.record(&key).unwrap_err();
    assert!(
        matches!(&bad, LedgerError::BadRow { key, .. } if key == "run-1:c1"),
        "{bad}"
    );

    // No server there: Open, with the password shown as ***.
    let nowhere = PostgresUrl::parse("postgres://twice:hunter2@127.0.0.1:1/nowhere").unwrap();
    let refused = twice_ledger_postgres::open(&nowhere).unwrap_err();
    let text = refused.to_string();
    assert!(matches!(refused, LedgerError::Open { .. }), "{text}");
    assert!(text.contains("postgres://twice:***@127.0.0.1:1/nowhere"), "{text}");
    assert!(!text.contains("hunter2"), "{text}");
}
