//! Group commit on a real SQLite file: many runs of one process writing at once share
//! batches, every answer is the one a lone transaction would give, a failing write takes
//! nobody else's with it, and a process SIGKILLed mid-batch loses only writes it had not
//! answered — every reservation a tool acted on is in the ledger.
//!
//! The crash tests run this test binary again as a child process (the ignored test
//! `child_drives_runs_on_a_commit_group`), which prints a line for each reservation it acted
//! on, and kill it with SIGKILL: deterministically inside a batch (the group's
//! `before_commit` moment), and at arbitrary moments.

mod stores;

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Barrier, OnceLock};

use stores::fold_cases::{ARGUMENTS, NOW_MS, request};
use twice_runtime::key::IdempotencyKey;
use twice_runtime::ledger::{GroupSettings, Ledger, LedgerError, Recorded, Reservation, SettleError};
use twice_runtime::rules::{Outcome, ReservationAction, Status};

/// Runs writing at once in the concurrency tests.
const RUNS: usize = 12;
/// Calls each run makes.
const CALLS: usize = 20;
/// The child's environment: its ledger file, and which batch it stops in (0: none).
const CHILD_LEDGER: &str = "TWICE_GROUP_CHILD_LEDGER";
const CHILD_STOP_AT_BATCH: &str = "TWICE_GROUP_CHILD_STOP_AT_BATCH";
/// Runs (threads) in the child.
const CHILD_RUNS: usize = 8;

fn key(run: usize, call: usize) -> IdempotencyKey {
    IdempotencyKey::per_call(&format!("run{run}"), &format!("c{call}")).unwrap()
}

/// One call of run `run`: the folded reservation, the tool "acts" (`acted`), the outcome.
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
        ),
        "{key}: {folded:?}"
    );
    acted(&key);
    let recorded = ledger
        .record_outcome(&key, Outcome::Completed, Some("cr"), &owner, 1, NOW_MS + 1)
        .unwrap();
    assert!(matches!(recorded, Recorded::Recorded(_)), "{key}: {recorded:?}");
}

/// Announced by each run just before it writes, for the hook that holds the first batch.
static ANNOUNCED: AtomicU32 = AtomicU32::new(0);
static COMMITS: AtomicU64 = AtomicU64::new(0);

/// Holds the first commit until every run has announced itself and had time to queue.
fn hold_the_first_commit(_members: u32) {
    if COMMITS.fetch_add(1, Ordering::SeqCst) > 0 {
        return;
    }
    while ANNOUNCED.load(Ordering::SeqCst) < RUNS as u32 {
        std::thread::yield_now();
    }
    for _ in 0..200_000 {
        std::thread::yield_now();
    }
}

#[test]
fn concurrent_runs_share_batches_and_every_write_is_answered_as_alone() {
    let folder = tempfile::tempdir().unwrap();
    let path = folder.path().join("ledger.sqlite");
    let settings = GroupSettings::default().with_before_commit(hold_the_first_commit);
    let ledger = Ledger::open_grouped(&path, settings).unwrap();
    // The first write's commit is held while the runs queue behind it.
    let mut first = ledger.connect_again().unwrap();
    let opener = std::thread::spawn(move || {
        cycle(&mut first, RUNS, 0, |_| {});
    });
    let start = Arc::new(Barrier::new(RUNS));
    let runs: Vec<_> = (0..RUNS)
        .map(|run| {
            let mut handle = ledger.connect_again().unwrap();
            let start = Arc::clone(&start);
            std::thread::spawn(move || {
                start.wait();
                ANNOUNCED.fetch_add(1, Ordering::SeqCst);
                for call in 0..CALLS {
                    cycle(&mut handle, run, call, |_| {});
                }
            })
        })
        .collect();
    opener.join().unwrap();
    for run in runs {
        run.join().unwrap();
    }
    let stats = ledger.group_stats().unwrap();
    let writes = (RUNS * CALLS * 2 + 2) as u64;
    assert_eq!(stats.members, writes, "{stats:?}");
    assert!(
        stats.largest >= 2,
        "the runs queued behind a commit share a batch: {stats:?}"
    );
    assert!(stats.batches < writes, "{stats:?}");
    // A plain connection, as another process would read the file.
    let reader = Ledger::open(&path).unwrap();
    let records = reader.all_records().unwrap();
    assert_eq!(records.len(), RUNS * CALLS + 1);
    assert!(
        records
            .iter()
            .all(|record| record.status == Status::Completed && record.attempts == 1)
    );
}

#[test]
fn a_failing_or_refused_write_takes_no_other_write_with_it() {
    let folder = tempfile::tempdir().unwrap();
    let ledger = Ledger::open_grouped(&folder.path().join("ledger.sqlite"), GroupSettings::default()).unwrap();
    let start = Arc::new(Barrier::new(RUNS));
    let runs: Vec<_> = (0..RUNS)
        .map(|run| {
            let mut handle = ledger.connect_again().unwrap();
            let start = Arc::clone(&start);
            std::thread::spawn(move || {
                start.wait();
                for call in 0..CALLS {
                    if run % 3 == 0 {
                        // An outcome for a call never reserved: the operation fails inside
                        // its batch (nothing of it may stand).
                        let stray = IdempotencyKey::per_call("stray", &format!("r{run}c{call}")).unwrap();
                        let error = handle
                            .record_outcome(&stray, Outcome::Completed, None, "w", 1, NOW_MS)
                            .unwrap_err();
                        assert!(matches!(error, LedgerError::BadRow { .. }), "{error}");
                    } else if run % 3 == 1 {
                        // A settlement of a key nobody reserved: refused inside its batch.
                        let stray = IdempotencyKey::per_call("stray", &format!("r{run}c{call}")).unwrap();
                        let refused = handle.settle(&stray, &stores::fold_cases::nothing_left(), NOW_MS);
                        assert!(matches!(refused, Err(SettleError::NotFound(_))), "{refused:?}");
                    } else {
                        cycle(&mut handle, run, call, |_| {});
                    }
                }
            })
        })
        .collect();
    for run in runs {
        run.join().unwrap();
    }
    let records = ledger.all_records().unwrap();
    let cycled = (0..RUNS).filter(|run| run % 3 == 2).count() * CALLS;
    assert_eq!(records.len(), cycled);
    assert!(records.iter().all(|record| record.status == Status::Completed));
    let history = ledger.all_history().unwrap();
    assert!(
        history.iter().all(|line| !line.key.as_str().starts_with("stray:")),
        "a refused write left a line"
    );
    assert_eq!(history.len(), cycled * 3, "reserved, attempt, completed for every call");
}

// ----- crashes -----

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

/// The child: [`CHILD_RUNS`] runs on one commit group, calling until killed, each printing
/// `acted KEY` once the tool may act (its reservation answered) and `recorded KEY` after.
#[test]
#[ignore = "the crash tests' child process; run by them, not alone"]
fn child_drives_runs_on_a_commit_group() {
    let Ok(path) = std::env::var(CHILD_LEDGER) else {
        panic!("run by the crash tests, with {CHILD_LEDGER} set");
    };
    let stop_at: u64 = std::env::var(CHILD_STOP_AT_BATCH).unwrap().parse().unwrap();
    STOP_AT_BATCH.set(stop_at).unwrap();
    let settings = GroupSettings::default().with_before_commit(stop_in_the_chosen_batch);
    let ledger = Ledger::open_grouped(Path::new(&path), settings).unwrap();
    let runs: Vec<_> = (0..CHILD_RUNS)
        .map(|run| {
            let mut handle = ledger.connect_again().unwrap();
            std::thread::spawn(move || {
                for call in 0.. {
                    cycle(&mut handle, run, call, |key| {
                        let mut stdout = std::io::stdout().lock();
                        writeln!(stdout, "acted {key}").unwrap();
                        stdout.flush().unwrap();
                    });
                    let mut stdout = std::io::stdout().lock();
                    writeln!(stdout, "recorded {}", key(run, call)).unwrap();
                    stdout.flush().unwrap();
                }
            })
        })
        .collect();
    for run in runs {
        run.join().unwrap();
    }
}

/// Runs the child on a fresh file, kills it (SIGKILL) when `kill_now` says so on a line of
/// its output (given how many reservations it acted on so far), and checks the file: every reservation the child acted on is there, its
/// attempt counted; every outcome it recorded is there. Returns how many it acted on.
fn crash_child(stop_at_batch: u64, mut kill_now: impl FnMut(&str, usize) -> bool) -> usize {
    let folder = tempfile::tempdir().unwrap();
    let path = folder.path().join("ledger.sqlite");
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "--ignored",
            "--exact",
            "child_drives_runs_on_a_commit_group",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_LEDGER, &path)
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
        }
        if !killed && kill_now(&line, acted.len()) {
            child.kill().unwrap();
            killed = true;
        }
    }
    child.wait().unwrap();
    assert!(killed, "the child ended before it was killed");
    let ledger = Ledger::open(&path).unwrap();
    for key in &acted {
        let record = ledger
            .record(&IdempotencyKey::parse(key).unwrap())
            .unwrap()
            .unwrap_or_else(|| panic!("{key}: the tool acted on a reservation the crash took back"));
        assert_eq!(record.attempts, 1, "{key}");
        assert_eq!(record.arguments, ARGUMENTS);
    }
    for key in &recorded {
        let record = ledger.record(&IdempotencyKey::parse(key).unwrap()).unwrap().unwrap();
        assert_eq!(record.status, Status::Completed, "{key}: an answered outcome was lost");
    }
    acted.len()
}

#[test]
fn killed_mid_batch_a_process_loses_only_writes_it_never_answered() {
    for stop_at_batch in [3, 40] {
        let mut batch_members = 0;
        let acted = crash_child(stop_at_batch, |line, _| {
            if let Some(members) = line.strip_prefix("mid-batch ") {
                batch_members = members.parse().unwrap();
                true
            } else {
                false
            }
        });
        assert!(batch_members >= 1);
        // 39 durable batches hold at least 39 writes of 8 runs: some run wrote twice, and
        // printed `acted` before its second write.
        if stop_at_batch == 40 {
            assert!(acted > 0, "nothing was answered before batch 40");
        }
    }
}

#[test]
fn killed_at_any_moment_a_process_loses_only_writes_it_never_answered() {
    for acted_before_kill in [1, 57, 333] {
        let acted = crash_child(0, |_, acted| acted >= acted_before_kill);
        assert!(acted >= acted_before_kill);
    }
}
