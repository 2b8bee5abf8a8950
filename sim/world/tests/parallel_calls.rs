//! Several calls in one model turn (a run with `parallel: true`): the simulator keeps both
//! requests out at once and matches each answer to its call; the regression level
//! `parallel-credits` reproduces two owed credits merged by a hashed key while both are out,
//! and holds with keys per call. Each test here fails if the batch were run one call after
//! another, or the field were dropped.

use std::path::PathBuf;

use twice_world::level::{self, LoadedTape};
use twice_world::outcome::Outcome;
use twice_world::replay::{replay_tape, simulation_of};
use twice_world::simulator::TimelineEntry;

fn regressions() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../levels/regressions")
}

fn tape(name: &str) -> LoadedTape {
    level::load_tape(&regressions().join(name)).unwrap_or_else(|error| panic!("{name}: {error}"))
}

fn timeline(tape: &LoadedTape) -> Vec<TimelineEntry> {
    let mut simulation = simulation_of(tape, twice_world::ledger::LedgerStore::Memory).expect("builds");
    simulation.run().expect("runs");
    simulation.timeline().to_vec()
}

/// Where the first line of `kind` about `key` is, on the timeline.
fn first(timeline: &[TimelineEntry], kind: &str, key: &str) -> Option<usize> {
    timeline
        .iter()
        .position(|entry| entry.kind == kind && entry.key.as_deref() == Some(key))
}

#[test]
fn both_requests_of_the_turn_leave_before_either_answer_comes_back() {
    let held = tape("parallel-credits.held.tape.ron");
    let lines = timeline(&held);
    let sent = |key| first(&lines, "send", key).unwrap_or_else(|| panic!("{key} is sent: {lines:#?}"));
    let answered =
        |key| first(&lines, "response travels", key).unwrap_or_else(|| panic!("{key} is answered: {lines:#?}"));
    // Run one call after another, c2 would be reserved only after c1's answer was recorded.
    assert!(sent("r1:c2") < answered("r1:c1"), "{lines:#?}");
    assert!(sent("r1:c1") < sent("r1:c2"));
    let decided = lines
        .iter()
        .find(|entry| entry.kind == "model decides")
        .expect("the model decides");
    assert!(
        decided.text.contains("in one turn") && decided.text.contains("as c1 and"),
        "{}",
        decided.text
    );
    // One save for the turn, one for `Done`.
    let saves = lines.iter().filter(|entry| entry.kind == "save checkpoint").count();
    assert_eq!(saves, 2, "{lines:#?}");
    let result = replay_tape(&held).expect("replays");
    assert_eq!(result.verdict.outcome, Outcome::PaidOnce);
}

#[test]
fn a_hashed_key_merges_the_second_call_of_the_turn_while_the_first_is_out() {
    let merged = tape("parallel-credits.merged.tape.ron");
    let lines = timeline(&merged);
    // Both calls hash to one key: only one request ever leaves.
    let sends = lines.iter().filter(|entry| entry.kind == "send").count();
    assert_eq!(sends, 1, "{lines:#?}");
    let result = replay_tape(&merged).expect("replays");
    assert_eq!(result.verdict.outcome, Outcome::NotPaidButOwed);
}

#[test]
fn a_parallel_run_that_cannot_be_one_turn_is_refused_at_its_line() {
    let path = regressions().join("parallel-credits.level.ron");
    let text = std::fs::read_to_string(&path).expect("reads");
    let calls_again = text.replace(
        "max_phases: 200,",
        "model: (on_failed: call_again),\n    max_phases: 200,",
    );
    assert_ne!(calls_again, text);
    let error = level::parse_level(&path, &calls_again)
        .expect_err("refused")
        .to_string();
    assert!(error.contains("parallel-credits.level.ron:23:"), "{error}");
    assert!(
        error.contains("parallel: a run whose calls are made in one turn cannot"),
        "{error}"
    );
    let call = "(tool: \"issue_credit\", account: \"acct_ada\", amount_cents: 2500, memo: \"Late delivery credit\"),";
    let many = text.replacen(call, &format!("{call}\n").repeat(17), 1);
    let error = level::parse_level(&path, &many).expect_err("refused").to_string();
    assert!(
        error.contains("one turn makes at most 16 calls, and the run has 18"),
        "{error}"
    );
}

fn sends(lines: &[TimelineEntry]) -> Vec<(String, String)> {
    lines
        .iter()
        .filter(|entry| entry.kind == "send")
        .map(|entry| (format!("{:?}", entry.actor), entry.key.clone().unwrap_or_default()))
        .collect()
}

#[test]
fn a_crash_between_the_turns_two_calls_redoes_neither_and_loses_neither() {
    let between = tape("parallel-crash.between.tape.ron");
    let lines = timeline(&between);
    // Each call is sent once, by w1; the recovered w2 sends nothing.
    let sent = sends(&lines);
    assert_eq!(sent.len(), 2, "{sent:?}");
    assert!(sent.iter().all(|(actor, _)| actor.contains('1')), "{sent:?}");
    let crash = lines
        .iter()
        .position(|entry| entry.kind == "crash a worker")
        .expect("w1 crashes");
    // c1 was recorded before the crash, c2 was not: the crash fell between the two.
    assert!(first(&lines, "record outcome", "r1:c1").is_some_and(|at| at < crash));
    assert!(first(&lines, "record outcome", "r1:c2").is_none());
    // The recovery reads c1 from the ledger and finds c2 through the reconcile hook.
    assert!(
        first(&lines, "reconcile", "r1:c2").is_some_and(|at| at > crash),
        "{lines:#?}"
    );
    assert_eq!(
        replay_tape(&between).expect("replays").verdict.outcome,
        Outcome::PaidOnce
    );
}

#[test]
fn without_a_ledger_the_crash_before_the_turns_save_sends_both_calls_again_and_only_the_crash_does() {
    let resent = tape("parallel-crash.resent.tape.ron");
    assert_eq!(sends(&timeline(&resent)).len(), 4);
    assert_eq!(
        replay_tape(&resent).expect("replays").verdict.outcome,
        Outcome::PaidTwice
    );
    let mut no_crash = resent.clone();
    no_crash.tape.actions.clear();
    assert_eq!(sends(&timeline(&no_crash)).len(), 2);
    assert_eq!(
        replay_tape(&no_crash).expect("replays").verdict.outcome,
        Outcome::PaidOnce
    );
}
