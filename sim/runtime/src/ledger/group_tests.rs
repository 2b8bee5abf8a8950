//! The commit group's scheme on a scripted connection: which writes stand, who is answered
//! what, and how batches form, with every interleaving that matters forced (the first batch's
//! commit is held until the others are queued behind it).

use std::sync::{Arc, Condvar, Mutex};
use std::thread;

use super::*;
use crate::key::IdempotencyKey;
use crate::ledger::operations::{CheckpointRow, HistoryLine, RecordWrite, RunHistoryLine};
use crate::ledger::{ExecutionRecord, RunEvent};

/// What the scripted store holds and is told to do.
#[derive(Debug, Default)]
struct Script {
    committed: Vec<String>,
    pending: Vec<String>,
    /// The next commits that fail for a conflict.
    conflicts: u32,
    /// The next commit fails outright.
    fail_commit: bool,
    /// Commit number this (counting from 1) fails outright.
    fail_at_commit: Option<u32>,
    /// The first commit waits until the test opens the gate.
    hold_first_commit: bool,
    gate_open: bool,
    commits: u32,
}

#[derive(Clone, Debug, Default)]
struct Shared {
    script: Arc<Mutex<Script>>,
    gate: Arc<Condvar>,
}

impl Shared {
    /// The script, also after a member panicked while it held it (the panic test).
    fn lock(&self) -> std::sync::MutexGuard<'_, Script> {
        self.script.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn open_gate(&self) {
        self.lock().gate_open = true;
        self.gate.notify_all();
    }

    fn committed(&self) -> Vec<String> {
        let mut committed = self.lock().committed.clone();
        committed.sort();
        committed
    }
}

struct Scripted(Shared);

/// A write a member makes: a run event whose detail names it. A detail of `break` ends the
/// transaction (as SQLite does on a full disk).
struct ScriptedTables<'a>(&'a mut Vec<String>);

impl Tables for ScriptedTables<'_> {
    fn record(&mut self, _key: &IdempotencyKey) -> Result<Option<ExecutionRecord>, LedgerError> {
        Ok(None)
    }
    fn checkpoint_version(&mut self, _run_id: &str) -> Result<Option<u32>, LedgerError> {
        Ok(None)
    }
    fn write_record(&mut self, _write: RecordWrite, _record: &ExecutionRecord) -> Result<(), LedgerError> {
        Ok(())
    }
    fn append_history(&mut self, _line: &HistoryLine<'_>) -> Result<(), LedgerError> {
        Ok(())
    }
    fn put_checkpoint(&mut self, _checkpoint: &CheckpointRow<'_>) -> Result<(), LedgerError> {
        Ok(())
    }
    fn append_run_event(&mut self, line: &RunHistoryLine<'_>) -> Result<(), LedgerError> {
        self.0.push(line.detail.unwrap_or_default().to_owned());
        Ok(())
    }
}

fn failure(detail: &str) -> LedgerError {
    LedgerError::Store {
        location: "scripted".into(),
        context: "testing",
        detail: detail.into(),
    }
}

impl BatchConnection for Scripted {
    fn describe(&self) -> String {
        "scripted".into()
    }

    fn begin(&mut self) -> Result<(), LedgerError> {
        assert!(self.0.lock().pending.is_empty(), "a batch begins empty");
        Ok(())
    }

    fn member(&mut self, _context: &'static str, body: &mut MemberBody<'_>) -> MemberEnd {
        let mut script = self.0.lock();
        let savepoint = script.pending.len();
        let outcome = body(&mut ScriptedTables(&mut script.pending));
        if script.pending[savepoint..].iter().any(|write| write == "break") {
            script.pending.clear();
            return MemberEnd::Broken(Some(failure("the transaction ended")));
        }
        match outcome {
            Ok(true) => MemberEnd::Kept,
            Ok(false) => {
                script.pending.truncate(savepoint);
                MemberEnd::Undone
            }
            Err(error) => {
                script.pending.truncate(savepoint);
                MemberEnd::Failed(error)
            }
        }
    }

    fn commit(&mut self) -> CommitEnd {
        let mut script = self.0.lock();
        script.commits += 1;
        if script.commits == 1 && script.hold_first_commit {
            while !script.gate_open {
                script = self
                    .0
                    .gate
                    .wait(script)
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
            }
        }
        if script.conflicts > 0 {
            script.conflicts -= 1;
            script.pending.clear();
            return CommitEnd::Conflict;
        }
        if std::mem::take(&mut script.fail_commit) || script.fail_at_commit == Some(script.commits) {
            script.pending.clear();
            return CommitEnd::Failed(failure("the disk is gone"));
        }
        let pending = std::mem::take(&mut script.pending);
        script.committed.extend(pending);
        CommitEnd::Durable
    }

    fn rollback(&mut self) {
        self.0.lock().pending.clear();
    }
}

fn group(shared: &Shared, batch_max: u32) -> Arc<Group> {
    let settings = GroupSettings {
        batch_max,
        ..GroupSettings::default()
    };
    Group::new(Box::new(Scripted(shared.clone())), settings).unwrap()
}

/// What a member does: write `name`, then keep it, refuse, fail, or panic.
#[derive(Clone, Copy, Debug)]
enum Act {
    Keep,
    Refuse,
    Fail,
    Panic,
}

fn write(group: &Group, name: &str, act: Act) -> Result<(), LedgerError> {
    group.run("testing", &mut |tables| {
        tables.append_run_event(&RunHistoryLine {
            run_id: "r",
            at_ms: 0,
            actor: "test",
            event: RunEvent::WaitsForPerson,
            detail: Some(name),
        })?;
        match act {
            Act::Keep => Ok(true),
            Act::Refuse => Ok(false),
            Act::Fail => Err(failure("refused by the test")),
            Act::Panic => panic!("a member panics"),
        }
    })
}

/// Until `count` callers wait for the connection (the first batch's commit is held).
fn until_waiting(group: &Group, count: u32) {
    for _ in 0..50_000_000_u64 {
        if group.lock_state().waiting == count {
            return;
        }
        thread::yield_now();
    }
    panic!("{count} callers never queued for the connection");
}

/// Writes `a` alone (its commit held), queues `others` behind it, then opens the gate;
/// returns every caller's answer, `a`'s first.
fn held_then(
    shared: &Shared,
    group: &Arc<Group>,
    others: &[(&'static str, Act)],
) -> Vec<thread::Result<Result<(), LedgerError>>> {
    shared.lock().hold_first_commit = true;
    let first = {
        let group = Arc::clone(group);
        thread::spawn(move || write(&group, "a", Act::Keep))
    };
    until_commit_held(shared);
    let queued: Vec<_> = others
        .iter()
        .map(|&(name, act)| {
            let group = Arc::clone(group);
            thread::spawn(move || write(&group, name, act))
        })
        .collect();
    until_waiting(group, others.len() as u32);
    shared.open_gate();
    std::iter::once(first)
        .chain(queued)
        .map(|handle| handle.join())
        .collect()
}

fn until_commit_held(shared: &Shared) {
    for _ in 0..50_000_000_u64 {
        if shared.lock().commits == 1 {
            return;
        }
        thread::yield_now();
    }
    panic!("the first commit never came");
}

#[test]
fn a_lone_caller_commits_at_once_each_write_its_own_batch() {
    let shared = Shared::default();
    let group = group(&shared, BATCH_MAX_DEFAULT);
    for name in ["a", "b", "c"] {
        write(&group, name, Act::Keep).unwrap();
        assert!(
            shared.committed().contains(&name.to_owned()),
            "{name} is durable when answered"
        );
    }
    let stats = group.stats();
    assert_eq!((stats.batches, stats.members, stats.largest), (3, 3, 1));
}

#[test]
fn callers_queued_behind_a_commit_share_the_next_batch() {
    let shared = Shared::default();
    let group = group(&shared, BATCH_MAX_DEFAULT);
    let others = [("b", Act::Keep), ("c", Act::Keep), ("d", Act::Keep), ("e", Act::Keep)];
    for answer in held_then(&shared, &group, &others) {
        answer.unwrap().unwrap();
    }
    assert_eq!(shared.committed(), ["a", "b", "c", "d", "e"]);
    let stats = group.stats();
    assert_eq!((stats.batches, stats.members, stats.largest), (2, 5, 4));
}

#[test]
fn a_batch_never_holds_more_than_batch_max() {
    let shared = Shared::default();
    let group = group(&shared, 2);
    let others = [
        ("b", Act::Keep),
        ("c", Act::Keep),
        ("d", Act::Keep),
        ("e", Act::Keep),
        ("f", Act::Keep),
    ];
    for answer in held_then(&shared, &group, &others) {
        answer.unwrap().unwrap();
    }
    assert_eq!(shared.committed(), ["a", "b", "c", "d", "e", "f"]);
    let stats = group.stats();
    assert_eq!(stats.largest, 2);
    assert!(stats.batches >= 4, "{stats:?}");
}

#[test]
fn a_refusing_or_failing_member_loses_only_its_own_writes() {
    let shared = Shared::default();
    let group = group(&shared, BATCH_MAX_DEFAULT);
    let others = [
        ("b", Act::Keep),
        ("refused", Act::Refuse),
        ("failed", Act::Fail),
        ("c", Act::Keep),
    ];
    let answers = held_then(&shared, &group, &others);
    let answers: Vec<_> = answers.into_iter().map(|answer| answer.unwrap()).collect();
    assert!(answers[0].is_ok() && answers[1].is_ok() && answers[2].is_ok() && answers[4].is_ok());
    assert!(matches!(&answers[3], Err(LedgerError::Store { detail, .. }) if detail == "refused by the test"));
    assert_eq!(shared.committed(), ["a", "b", "c"]);
    assert_eq!(group.stats().lost, 0);
}

#[test]
fn a_member_that_ends_the_transaction_gets_its_error_and_the_others_run_again() {
    let shared = Shared::default();
    let group = group(&shared, BATCH_MAX_DEFAULT);
    let others = [("b", Act::Keep), ("break", Act::Keep), ("c", Act::Keep)];
    let answers: Vec<_> = held_then(&shared, &group, &others)
        .into_iter()
        .map(|answer| answer.unwrap())
        .collect();
    assert!(answers[0].is_ok() && answers[1].is_ok() && answers[3].is_ok());
    assert!(
        answers[2].is_err(),
        "the member whose failure ended the batch is told so"
    );
    // Whatever order they joined in, b and c are durable exactly once.
    assert_eq!(shared.committed(), ["a", "b", "c"]);
    assert_eq!(group.stats().lost, 1);
}

#[test]
fn a_conflict_at_commit_runs_every_member_again() {
    let shared = Shared::default();
    shared.lock().conflicts = 1;
    let group = group(&shared, BATCH_MAX_DEFAULT);
    write(&group, "a", Act::Keep).unwrap();
    assert_eq!(shared.committed(), ["a"]);
    let stats = group.stats();
    assert_eq!((stats.batches, stats.lost), (1, 1));
}

#[test]
fn conflicts_without_end_are_locked_after_the_reruns() {
    let shared = Shared::default();
    shared.lock().conflicts = u32::MAX;
    let group = group(&shared, BATCH_MAX_DEFAULT);
    assert!(matches!(write(&group, "a", Act::Keep), Err(LedgerError::Locked { .. })));
    assert!(shared.committed().is_empty());
    assert_eq!(group.stats().lost, u64::from(RERUNS_MAX) + 1);
}

#[test]
fn a_failed_commit_answers_every_member_with_an_error_and_acknowledges_nothing() {
    let shared = Shared::default();
    // The first batch (a alone) commits; the second (b, c, d together) fails.
    shared.lock().fail_at_commit = Some(2);
    let group = group(&shared, BATCH_MAX_DEFAULT);
    let answers = held_then(&shared, &group, &[("b", Act::Keep), ("c", Act::Keep), ("d", Act::Keep)]);
    let answers: Vec<_> = answers.into_iter().map(|answer| answer.unwrap()).collect();
    assert!(answers[0].is_ok());
    for answer in &answers[1..] {
        assert!(
            matches!(answer, Err(LedgerError::Store { detail, .. }) if detail.contains("the disk is gone")),
            "{answer:?}"
        );
    }
    assert_eq!(shared.committed(), ["a"]);
    let stats = group.stats();
    assert_eq!((stats.batches, stats.lost), (1, 1));
}

#[test]
fn a_failed_commit_fails_every_member_of_its_batch() {
    let shared = Shared::default();
    shared.lock().fail_commit = true;
    let group = group(&shared, BATCH_MAX_DEFAULT);
    assert!(write(&group, "a", Act::Keep).is_err());
    assert!(shared.committed().is_empty());
    // The group goes on: the next write commits.
    write(&group, "b", Act::Keep).unwrap();
    assert_eq!(shared.committed(), ["b"]);
    let stats = group.stats();
    assert_eq!((stats.batches, stats.lost), (1, 1));
}

#[test]
fn a_panicking_member_loses_the_batch_for_the_others_who_run_again() {
    let shared = Shared::default();
    let group = group(&shared, BATCH_MAX_DEFAULT);
    let answers = held_then(
        &shared,
        &group,
        &[("b", Act::Keep), ("panics", Act::Panic), ("c", Act::Keep)],
    );
    assert!(answers[2].is_err(), "the panic reaches its own caller");
    for index in [0, 1, 3] {
        assert!(matches!(&answers[index], Ok(Ok(()))), "{index}: {:?}", answers[index]);
    }
    assert_eq!(shared.committed(), ["a", "b", "c"]);
    write(&group, "d", Act::Keep).unwrap();
}

#[test]
fn a_batch_size_outside_its_bounds_is_refused() {
    let shared = Shared::default();
    for batch_max in [0, BATCH_MAX_LIMIT + 1] {
        let settings = GroupSettings {
            batch_max,
            ..GroupSettings::default()
        };
        let error = Group::new(Box::new(Scripted(shared.clone())), settings).unwrap_err();
        assert!(error.to_string().contains("from 1 to"), "{error}");
    }
}
