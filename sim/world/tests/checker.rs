//! Every check the checker makes can fail: each test here breaks the runtime (a guard off, a
//! switch only tests have) or its ledger (rows changed behind its back, as a bug or a person
//! with `sqlite3` would) on purpose, and sees the checker name the broken promise and its key.

use std::path::Path;
use twice_world::cards::{DuplicateWorker, LoseRequest, LoseResponse, OperatorResolve};

use rusqlite::Connection;
use twice_world::checker::{Outcome, ViolationKind};
use twice_world::level::{Level, Play, parse_level};
use twice_world::runtime::guards::{Guard, Guards};
use twice_world::runtime::rules::Status;
use twice_world::simulator::{Simulation, SimulationBuilder};

fn level(billing_keys: &str, model: &str, cards: &str, runs: &str) -> Level {
    let text = format!(
        r#"(
            id: "checks", title: "checks", briefing: "b",
            lesson: (rule: "r", text: "t"),
            world: (accounts: [(id: "acct_ada", owner: "Ada")], billing_keys: {billing_keys}),
            tools: [(name: "issue_credit", side_effect: external, operation: credit, reconcile: true, compensation: true)],
            model: {model},
            runs: [{runs}],
            cards: [{cards}],
            goal: paid_twice,
        )"#
    );
    parse_level(Path::new("checks.level.ron"), &text).expect("the test level parses")
}

const ONE_RUN: &str = r#"(id: "r1", calls: [(tool: "issue_credit", account: "acct_ada", amount_cents: 2500, memo: "Refund for order #1001")])"#;
const ALL_CARDS: &str = "(card: LoseRequest, count: 2), (card: LoseResponse, count: 2), (card: DuplicateWorker, count: 2), \
    (card: OperatorResolve, count: 2), (card: CrashWorker, count: 2)";

fn one_credit() -> Level {
    level("honour", "()", ALL_CARDS, ONE_RUN)
}

/// A simulation on a ledger file the test can open behind its back.
fn on_file(level: Level, guards: Guards, folder: &Path) -> (Simulation, Connection) {
    let path = folder.join("ledger.sqlite");
    let simulation = SimulationBuilder::new(level, 1)
        .guards(guards)
        .ledger_file(&path)
        .build()
        .unwrap();
    (simulation, Connection::open(&path).unwrap())
}

fn kinds(simulation: &Simulation) -> Vec<ViolationKind> {
    simulation.verdict().unwrap().violation_kinds()
}

fn keys_of(simulation: &Simulation, kind: ViolationKind) -> Vec<String> {
    simulation
        .verdict()
        .unwrap()
        .violations
        .into_iter()
        .filter(|violation| violation.kind == kind)
        .filter_map(|violation| violation.key)
        .collect()
}

/// Plays a wire card the moment its message is on the wire: a wire card acts only on a message
/// on the wire when it is played.
fn play_on_the_wire(simulation: &mut Simulation, play: Play) {
    let card = play.card();
    simulation
        .run_until(|simulation| !simulation.wire_targets(card).is_empty())
        .unwrap();
    simulation.play(play).unwrap();
}

#[test]
fn a_clean_run_breaks_no_promise() {
    let folder = tempfile::tempdir().unwrap();
    let (mut simulation, _) = on_file(one_credit(), Guards::all_on(), folder.path());
    simulation.run().unwrap();
    assert!(
        kinds(&simulation).is_empty(),
        "{:?}",
        simulation.verdict().unwrap().violations
    );
    assert_eq!(simulation.verdict().unwrap().outcome, Outcome::PaidOnce);
}

#[test]
fn a_failed_record_whose_credit_stands_is_caught() {
    let folder = tempfile::tempdir().unwrap();
    let (mut simulation, raw) = on_file(one_credit(), Guards::all_on(), folder.path());
    simulation.run().unwrap();
    raw.execute(
        "UPDATE tool_executions SET status = 'failed' WHERE idempotency_key = 'r1:c1'",
        [],
    )
    .unwrap();
    assert_eq!(keys_of(&simulation, ViolationKind::FailedButPaid), ["r1:c1"]);
    // A player reads it in words, never as the kind's identifier (`failed_but_paid`).
    let verdict = simulation.verdict().unwrap();
    let said = verdict.violations[0].sentence();
    assert!(
        said.starts_with("r1:c1 is recorded failed, but its credit ") && said.ends_with("was never reversed."),
        "{said}"
    );
    assert!(
        !said.contains("failed_but_paid"),
        "no identifier in a player's sentence: {said}"
    );
}

#[test]
fn a_completed_record_with_no_credit_behind_it_is_caught() {
    // An operator resolves a lost request `completed`: the ledger now claims an effect billing
    // does not hold.
    let mut simulation = SimulationBuilder::new(one_credit(), 1).build().unwrap();
    play_on_the_wire(&mut simulation, Play::LoseRequest(LoseRequest { key: None }));
    simulation.run().unwrap();
    simulation
        .play(Play::OperatorResolve(OperatorResolve {
            key: "r1:c1".into(),
            status: Status::Completed,
            reason: "I assume it went through".into(),
            operator: "op-ana".into(),
            expected_status: None,
        }))
        .unwrap();
    simulation.run().unwrap();
    assert_eq!(keys_of(&simulation, ViolationKind::CompletedWithoutEffect), ["r1:c1"]);
}

#[test]
fn a_credit_with_no_record_is_caught_when_the_ledger_guard_is_on() {
    let folder = tempfile::tempdir().unwrap();
    let (mut simulation, raw) = on_file(one_credit(), Guards::all_on(), folder.path());
    simulation.run().unwrap();
    raw.execute("DELETE FROM tool_executions WHERE idempotency_key = 'r1:c1'", [])
        .unwrap();
    assert_eq!(keys_of(&simulation, ViolationKind::EffectWithoutRecord), ["r1:c1"]);
    // Without a ledger nothing is written down, and that is the lesson, not a broken promise.
    let mut naive = SimulationBuilder::new(one_credit(), 1)
        .guards(Guards::all_on().with(Guard::Ledger, false))
        .build()
        .unwrap();
    naive.run().unwrap();
    assert!(keys_of(&naive, ViolationKind::EffectWithoutRecord).is_empty());
}

#[test]
fn a_compensation_nobody_asked_for_is_caught() {
    let guards = Guards::all_on()
        .with(Guard::NoReflexCompensation, false)
        .with(Guard::PauseOnIndeterminate, false)
        .with(Guard::ReconcileHook, false);
    let mut simulation = SimulationBuilder::new(one_credit(), 1).guards(guards).build().unwrap();
    play_on_the_wire(&mut simulation, Play::LoseResponse(LoseResponse { key: None }));
    simulation.run().unwrap();
    assert_eq!(keys_of(&simulation, ViolationKind::UnaskedCompensation), ["r1:c1"]);
}

#[test]
fn an_overwritten_decision_is_caught() {
    let folder = tempfile::tempdir().unwrap();
    let (mut simulation, raw) = on_file(one_credit(), Guards::all_on(), folder.path());
    simulation.run().unwrap();
    // Someone flips the settled `completed` to `failed` by hand (history is append-only, so
    // the flip is on record).
    raw.execute(
        "INSERT INTO tool_execution_history (idempotency_key, at_ms, actor, event, from_status, to_status)
         VALUES ('r1:c1', 999, 'sqlite3', 'resolved', 'completed', 'failed')",
        [],
    )
    .unwrap();
    assert_eq!(keys_of(&simulation, ViolationKind::DecisionOverwritten), ["r1:c1"]);
}

#[test]
fn two_workers_reserving_one_call_are_caught() {
    let guards = Guards::all_on().with(Guard::AtomicReservation, false);
    let mut simulation = SimulationBuilder::new(one_credit(), 1)
        .guards(guards)
        .actions(vec![twice_world::level::TimedAction {
            at_phase: 1,
            play: Play::DuplicateWorker(DuplicateWorker { run: "r1".into() }),
            fizzles: false,
        }])
        .build()
        .unwrap();
    simulation.run().unwrap();
    assert_eq!(keys_of(&simulation, ViolationKind::ReservedTwice), ["r1:c1"]);
}

/// A run counts as honestly waiting only while the call it waits on is still unknown.
#[test]
fn a_run_paused_on_a_call_that_was_settled_is_not_waiting_honestly() {
    let folder = tempfile::tempdir().unwrap();
    let (mut simulation, raw) = on_file(one_credit(), Guards::all_on(), folder.path());
    play_on_the_wire(&mut simulation, Play::LoseRequest(LoseRequest { key: None }));
    simulation.run().unwrap();
    let verdict = simulation.verdict().unwrap();
    assert_eq!(verdict.outcome, Outcome::UnknownFlagged);
    assert_eq!(verdict.waiting, ["r1"]);
    // Settled behind the run's back and never woken: the run is stuck, the customer owed.
    raw.execute(
        "UPDATE tool_executions SET status = 'failed' WHERE idempotency_key = 'r1:c1'",
        [],
    )
    .unwrap();
    let verdict = simulation.verdict().unwrap();
    assert!(verdict.waiting.is_empty());
    assert_eq!(verdict.outcome, Outcome::NotPaidButOwed);
}

/// Money is matched to what the script owes (account and amount, and the run whose worker
/// sent the request), never to what the runtime says it was doing.
#[test]
fn credits_are_matched_to_what_the_script_owes_not_to_the_runtimes_claims() {
    // Two runs owe Ada $25 each; r2's credit lands, r1 waits on a lost request.
    let runs = format!(
        "{ONE_RUN}, (id: \"r2\", calls: [(tool: \"issue_credit\", account: \"acct_ada\", amount_cents: 2500, memo: \"Refund for order #2002\")])"
    );
    let mut simulation = SimulationBuilder::new(level("honour", "()", ALL_CARDS, &runs), 1)
        .build()
        .unwrap();
    play_on_the_wire(&mut simulation, Play::LoseRequest(LoseRequest { key: None }));
    simulation.run().unwrap();
    let verdict = simulation.verdict().unwrap();
    let outcome_of = |run: &str| {
        verdict
            .credits
            .iter()
            .find(|credit| credit.run == run)
            .map(|credit| credit.outcome)
            .unwrap()
    };
    let lost_run = if simulation
        .ledger_records()
        .unwrap()
        .iter()
        .any(|record| record.key.as_str() == "r1:c1" && record.status.is_unknown())
    {
        "r1"
    } else {
        "r2"
    };
    let paid_run = if lost_run == "r1" { "r2" } else { "r1" };
    assert_eq!(outcome_of(paid_run), Outcome::PaidOnce, "{verdict:?}");
    assert_eq!(outcome_of(lost_run), Outcome::UnknownFlagged, "{verdict:?}");
}

/// Every broken promise has words a player can read: never its identifier (`failed_but_paid`).
#[test]
fn every_broken_promise_has_words_without_an_identifier() {
    for kind in ViolationKind::ALL {
        let words = kind.words();
        assert!(!words.contains('_') && !words.is_empty(), "{kind}: {words}");
        assert_ne!(words, kind.name());
    }
}
