//! The folded send fence and group commit on a real PostgreSQL server: the folded path
//! answers as on every other store (`stores/fold_cases.rs`, shared with the runtime's tests),
//! plain and through a commit group; many runs of one process share batches with every write
//! answered as alone; and a process SIGKILLed mid-batch loses only writes it had not
//! answered — every reservation a tool acted on is in the ledger, every acknowledged outcome
//! too.
//!
//! The crash test runs this test binary again as a child (the ignored test
//! `child_drives_runs_on_a_postgres_commit_group`), which prints a line for each reservation it
//! acted on, and kills it in its chosen batch, just before that batch's commit.
//!
//! Without `TWICE_POSTGRES_URL` the tests say they were skipped and pass; in CI (or with
//! `TWICE_REQUIRE_POSTGRES=1`) they fail instead (see `testing.rs`).

#[path = "../../runtime/tests/stores/mod.rs"]
mod stores;

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

use stores::fold_cases::{self as cases, ARGUMENTS, NOW_MS, request};
use twice_ledger_postgres::PostgresUrl;
use twice_ledger_postgres::testing::TestDatabase;
use twice_runtime::key::IdempotencyKey;
use twice_runtime::ledger::{GroupSettings, Ledger, Recorded, Reservation};
use twice_runtime::rules::{Outcome, ReservationAction, Status};

/// Runs writing at once.
const RUNS: usize = 8;
/// Calls each run makes.
const CALLS: usize = 12;
/// The child's environment: its ledger, and which batch it stops in.
const CHILD_URL: &str = "TWICE_PG_GROUP_CHILD_URL";
const CHILD_STOP_AT_BATCH: &str = "TWICE_PG_GROUP_CHILD_STOP_AT_BATCH";

/// The two stores here: plain, and through a commit group, each a fresh schema.
fn ledgers(database: &TestDatabase) -> Vec<(&'static str, Ledger)> {
    vec![
        (
            "postgres",
            twice_ledger_postgres::open(&database.fresh_schema()).unwrap(),
        ),
        (
            "postgres, commit group",
            twice_ledger_postgres::open_grouped(&database.fresh_schema(), GroupSettings::default()).unwrap(),
        ),
    ]
}

#[test]
fn the_folded_path_answers_as_on_every_store_plain_and_grouped() {
    let Some(database) = TestDatabase::create("pg_fold") else {
        return;
    };
    for (name, mut worker) in ledgers(&database) {
        eprintln!("{name}");
        let mut other = worker.connect_again().unwrap();
        cases::a_new_key_is_reserved_and_its_first_attempt_counted_together(&mut worker);
        cases::what_does_not_run_is_neither_reserved_nor_attempted(&mut worker, &mut other);
        cases::a_failed_call_runs_again_with_its_attempt_counted(&mut worker);
        cases::an_operator_cannot_decide_between_a_folded_reservation_and_its_attempt(&mut worker, &mut other);
        cases::under_contention_no_decision_falls_between(worker.connect_again().unwrap(), other);
    }
}

fn key(run: usize, call: usize) -> IdempotencyKey {
    IdempotencyKey::per_call(&format!("run{run}"), &format!("c{call}")).unwrap()
}

/// One call: the folded reservation, the tool acts (`acted`), the outcome.
fn cycle(ledger: &mut Ledger, run: usize, call: usize, acted: impl FnOnce(&IdempotencyKey)) {
    let key = key(run, call);
    let owner = format!("w{run}");
    let folded = ledger.reserve_and_begin(&request(&key, &owner), 1, NOW_MS).unwrap();
    assert!(
        matches!(
            folded.reservation,
            Reservation::Decided {
                action: ReservationAction::RunNew,
                ..
            }
        ) && folded.attempt_begun == Some(1),
        "{key}: {folded:?}"
    );
    acted(&key);
    let recorded = ledger
        .record_outcome(&key, Outcome::Completed, Some("cr"), &owner, 1, NOW_MS + 1)
        .unwrap();
    assert!(matches!(recorded, Recorded::Recorded(_)), "{key}: {recorded:?}");
}

#[test]
fn concurrent_runs_share_batches_and_every_write_is_answered_as_alone() {
    let Some(database) = TestDatabase::create("pg_group_concurrent") else {
        return;
    };
    let url = database.fresh_schema();
    let ledger = twice_ledger_postgres::open_grouped(&url, GroupSettings::default()).unwrap();
    let runs: Vec<_> = (0..RUNS)
        .map(|run| {
            let mut handle = ledger.connect_again().unwrap();
            std::thread::spawn(move || {
                for call in 0..CALLS {
                    cycle(&mut handle, run, call, |_| {});
                }
            })
        })
        .collect();
    for run in runs {
        run.join().unwrap();
    }
    let stats = ledger.group_stats().unwrap();
    assert_eq!(stats.members, (RUNS * CALLS * 2) as u64, "{stats:?}");
    // Another process's view: a plain connection.
    let reader = twice_ledger_postgres::open_existing(&url).unwrap();
    let records = reader.all_records().unwrap();
    assert_eq!(records.len(), RUNS * CALLS);
    assert!(
        records
            .iter()
            .all(|record| record.status == Status::Completed && record.attempts == 1)
    );
}

// ----- a crash mid-batch -----

static STOP_AT_BATCH: OnceLock<u64> = OnceLock::new();
static CHILD_COMMITS: AtomicU64 = AtomicU64::new(0);

/// The child's mid-batch moment: at the chosen batch, say so and wait to be killed.
fn stop_in_the_chosen_batch(members: u32) {
    let commit = CHILD_COMMITS.fetch_add(1, Ordering::SeqCst) + 1;
    if Some(&commit) == STOP_AT_BATCH.get() {
        let mut stdout = std::io::stdout().lock();
        writeln!(stdout, "mid-batch {members}").unwrap();
        stdout.flush().unwrap();
        loop {
            std::thread::park();
        }
    }
}

/// The child: [`RUNS`] runs on one commit group, calling until killed, each printing `acted
/// KEY` once its reservation is answered and `recorded KEY` once its outcome is.
#[test]
#[ignore = "the crash test's child process; run by it, not alone"]
fn child_drives_runs_on_a_postgres_commit_group() {
    let Ok(url) = std::env::var(CHILD_URL) else {
        panic!("run by the crash test, with {CHILD_URL} set");
    };
    let url = PostgresUrl::parse(&url).unwrap();
    STOP_AT_BATCH
        .set(std::env::var(CHILD_STOP_AT_BATCH).unwrap().parse().unwrap())
        .unwrap();
    let settings = GroupSettings::default().with_before_commit(stop_in_the_chosen_batch);
    let ledger = twice_ledger_postgres::open_grouped(&url, settings).unwrap();
    let say = |line: String| {
        let mut stdout = std::io::stdout().lock();
        writeln!(stdout, "{line}").unwrap();
        stdout.flush().unwrap();
    };
    let runs: Vec<_> = (0..RUNS)
        .map(|run| {
            let mut handle = ledger.connect_again().unwrap();
            std::thread::spawn(move || {
                for call in 0.. {
                    cycle(&mut handle, run, call, |key| say(format!("acted {key}")));
                    say(format!("recorded {}", key(run, call)));
                }
            })
        })
        .collect();
    for run in runs {
        run.join().unwrap();
    }
}

#[test]
fn killed_mid_batch_a_process_loses_only_writes_it_never_answered() {
    let Some(database) = TestDatabase::create("pg_group_crash") else {
        return;
    };
    for stop_at_batch in [2_u64, 30] {
        let url = database.fresh_schema();
        // The schema made before the child starts, so the child only connects.
        drop(twice_ledger_postgres::open(&url).unwrap());
        let mut command = Command::new(std::env::current_exe().unwrap());
        // The password (if any) by the environment, as the ledger's own commands take it.
        if let Some(password) = url.password() {
            command.env(twice_ledger_postgres::PASSWORD_VARIABLE, password);
        }
        let mut child = command
            .args([
                "--ignored",
                "--exact",
                "child_drives_runs_on_a_postgres_commit_group",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(CHILD_URL, url.without_password())
            .env(CHILD_STOP_AT_BATCH, stop_at_batch.to_string())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let (mut acted, mut recorded) = (BTreeSet::new(), BTreeSet::new());
        let mut killed = false;
        for line in stdout.lines() {
            let line = line.unwrap();
            if let Some(key) = line.strip_prefix("acted ") {
                acted.insert(key.to_owned());
            } else if let Some(key) = line.strip_prefix("recorded ") {
                recorded.insert(key.to_owned());
            } else if line.starts_with("mid-batch ") && !killed {
                child.kill().unwrap();
                killed = true;
            }
        }
        child.wait().unwrap();
        assert!(killed, "the child ended before its batch {stop_at_batch}");
        if stop_at_batch == 30 {
            assert!(!acted.is_empty(), "nothing was answered in 29 durable batches");
        }
        let ledger = twice_ledger_postgres::open_existing(&url).unwrap();
        for key in &acted {
            let record = ledger
                .record(&IdempotencyKey::parse(key).unwrap())
                .unwrap()
                .unwrap_or_else(|| panic!("{key}: the tool acted on a reservation the crash took back"));
            assert_eq!((record.attempts, record.arguments.as_str()), (1, ARGUMENTS), "{key}");
        }
        for key in &recorded {
            let record = ledger.record(&IdempotencyKey::parse(key).unwrap()).unwrap().unwrap();
            assert_eq!(record.status, Status::Completed, "{key}: an answered outcome was lost");
        }
    }
}
