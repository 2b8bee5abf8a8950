//! Runs that fail: a model that gives up ends its run failed; a naive runtime undoes a failed
//! run's effects by reflex (and the checker calls the customer owed); the runtime with the
//! guard on leaves them for an operator; and a workflow node set to `recovery_policy: retry`
//! starts a fresh run with new keys — at-least-once across runs.

use std::path::PathBuf;
use twice_world::cards::{LoseResponse, ToolFailsBeforeSending};

use twice_world::checker::{Outcome, ViolationKind};
use twice_world::debrief::{self, Standing};
use twice_world::level::{self, CardKind, Play};
use twice_world::rulebook::{self, ROWS, Table};
use twice_world::runtime::guards::{Guard, Guards};
use twice_world::runtime::rules::Status;
use twice_world::runtime::run::RunStatus;
use twice_world::runtime::worker::Held;
use twice_world::simulator::{Actor, Simulation, SimulationBuilder};

const UNDO: &str = "23-undo-by-decision.level.ron";
const RETRY: &str = "24-workflow-retry.level.ron";

fn levels_folder() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../levels")
}

fn level(file: &str) -> level::Level {
    level::load_level(&levels_folder().join(file))
        .expect("the level loads")
        .level
}

fn simulation(level: level::Level, guards: Option<Guards>) -> Simulation {
    let builder = SimulationBuilder::new(level, 1);
    match guards {
        Some(guards) => builder.guards(guards),
        None => builder,
    }
    .build()
    .expect("builds")
}

/// Steps until a request for `key` is on the wire.
fn until_request_of(simulation: &mut Simulation, key: &str) {
    simulation
        .run_until(|simulation| {
            simulation
                .wire_targets(CardKind::LoseRequest)
                .iter()
                .any(|message| message.key == key)
        })
        .expect("steps");
    assert!(!simulation.is_over(), "the request for {key} never left");
}

/// Steps until billing's answer for `key` is on the wire.
fn until_answer_of(simulation: &mut Simulation, key: &str) {
    simulation
        .run_until(|simulation| {
            simulation
                .wire_targets(CardKind::LoseResponse)
                .iter()
                .any(|message| message.key == key)
        })
        .expect("steps");
    assert!(!simulation.is_over(), "the answer for {key} never came");
}

fn refuse_next_call(simulation: &mut Simulation) {
    simulation
        .play(Play::ToolFailsBeforeSending(ToolFailsBeforeSending {
            run: "r1".into(),
        }))
        .expect("the card is in hand");
}

fn record_status(simulation: &Simulation, key: &str) -> Option<Status> {
    simulation
        .ledger_records()
        .expect("records")
        .into_iter()
        .find(|record| record.key.as_str() == key)
        .map(|record| record.status)
}

/// The refund lands, then the balance read refuses before sending: the run fails at step 2.
fn fail_the_second_step(guards: Option<Guards>) -> Simulation {
    let mut simulation = simulation(level(UNDO), guards);
    until_request_of(&mut simulation, "r1:c1");
    refuse_next_call(&mut simulation);
    simulation.run().expect("runs");
    simulation
}

#[test]
fn a_model_that_gives_up_ends_its_run_failed_in_its_state_and_on_the_timeline() {
    let guarded = fail_the_second_step(Some(Guards::all_on()));
    let failed = guarded.failed_runs();
    assert_eq!(failed.len(), 1, "{failed:?}");
    assert_eq!(
        (failed[0].run.as_str(), failed[0].item),
        ("r1", 1),
        "it failed at step 2"
    );
    assert_eq!(failed[0].took_effect, 1);
    let last = guarded.workers().into_iter().last().expect("a worker");
    assert!(
        matches!(&last.run_state.status, RunStatus::Failed { reason } if reason.contains("gave up on step 2")),
        "{:?}",
        last.run_state.status
    );
    let checkpoint = guarded.checkpoints().expect("checkpoints");
    assert_eq!(checkpoint[0].status, "failed");
    assert!(
        guarded
            .timeline()
            .iter()
            .any(|entry| entry.actor == Actor::Model && entry.text.starts_with("the run fails"))
    );
    assert!(
        guarded
            .timeline()
            .iter()
            .any(|entry| entry.actor == Actor::Supervisor && entry.kind == "run failed"),
        "the failure is on the timeline"
    );
    // The guard held: the refund that took effect was left standing for an operator.
    let note = guarded
        .guard_notes()
        .iter()
        .find(|note| note.guard == Guard::NoReflexCompensation)
        .expect("no reflex compensation held");
    assert_eq!(
        note.held,
        Held::FailedRunNotUndone {
            keys: vec!["r1:c1".into()]
        }
    );
    assert_eq!(record_status(&guarded, "r1:c1"), Some(Status::Completed));
    let verdict = guarded.verdict().expect("a verdict");
    assert_eq!(verdict.outcome, Outcome::PaidOnce, "{}", verdict.summary);
    assert!(verdict.violations.is_empty(), "{:?}", verdict.violations);
}

#[test]
fn a_naive_runtime_undoes_a_failed_run_by_reflex_and_the_customer_is_left_owed() {
    let naive = fail_the_second_step(None);
    assert!(!naive.guards().is_on(Guard::NoReflexCompensation));
    let failed = &naive.failed_runs()[0];
    assert_eq!(failed.compensated, vec!["r1:c1".to_owned()]);
    // The record of the refund moved from completed to compensated, and billing reversed it.
    assert_eq!(record_status(&naive, "r1:c1"), Some(Status::Compensated));
    let reversal = naive
        .billing()
        .entries
        .iter()
        .find(|entry| entry.amount_cents < 0)
        .expect("a reversal");
    assert_eq!(reversal.amount_cents, -2500);
    assert!(reversal.reverses.is_some(), "the void reversed the real credit");
    assert!(naive.timeline().iter().any(|entry| entry.actor == Actor::Worker(1)
        && entry.kind == "compensate"
        && entry.key.as_deref() == Some("r1:c1")));
    let verdict = naive.verdict().expect("a verdict");
    assert_eq!(verdict.outcome, Outcome::NotPaidButOwed, "{}", verdict.summary);
    assert!(verdict.goal_reached);
    assert_eq!(verdict.violation_kinds(), vec![ViolationKind::UnaskedCompensation]);
    // The debrief says what the reflex did, from the run.
    let told = debrief::of(&naive, &verdict);
    assert_eq!(told.standing, Standing::HeistWorked);
    assert!(
        told.diagnosis
            .iter()
            .any(|sentence| sentence.contains("compensated r1:c1 by reflex")),
        "{:?}",
        told.diagnosis
    );
}

#[test]
fn failing_the_first_step_leaves_nothing_to_undo_and_the_failed_run_is_flagged_not_owed() {
    let mut early = simulation(level(UNDO), None);
    refuse_next_call(&mut early);
    early.run().expect("runs");
    let failed = &early.failed_runs()[0];
    assert_eq!((failed.item, failed.took_effect), (0, 0));
    assert!(failed.compensated.is_empty());
    let verdict = early.verdict().expect("a verdict");
    // Ada is unpaid, but the run failed at her step and says so: that is not a heist.
    assert_eq!(verdict.outcome, Outcome::UnknownFlagged, "{}", verdict.summary);
    assert!(!verdict.goal_reached);
    let told = debrief::of(&early, &verdict);
    assert_eq!(told.standing, Standing::HeistFailed);
    assert!(
        told.diagnosis
            .iter()
            .any(|sentence| sentence.contains("before anything of it had landed in billing: there was nothing to undo")),
        "{:?}",
        told.diagnosis
    );
}

#[test]
fn a_workflow_retry_starts_a_fresh_run_whose_new_key_billing_pays_again() {
    let mut retried = simulation(level(RETRY), None);
    until_answer_of(&mut retried, "r1:c1");
    retried
        .play(Play::LoseResponse(LoseResponse { key: None }))
        .expect("the answer is on the wire");
    retried.run().expect("runs");
    let failed = &retried.failed_runs()[0];
    assert_eq!(failed.fresh_run.as_deref(), Some("r1.retry1"));
    assert_eq!(retried.node_of("r1.retry1"), "r1");
    assert_eq!(retried.nodes()["r1.retry1"].retry, 1);
    // Two credits, two keys: billing honours keys, but it had never seen the fresh run's.
    let keys: Vec<Option<&str>> = retried
        .billing()
        .entries
        .iter()
        .map(|entry| entry.idempotency_key.as_deref())
        .collect();
    assert_eq!(keys, vec![Some("r1:c1"), Some("r1.retry1:c1")]);
    assert!(retried.timeline().iter().any(|entry| entry.actor == Actor::Supervisor
        && entry.kind == "workflow retry"
        && entry.text.contains("r1.retry1")));
    let verdict = retried.verdict().expect("a verdict");
    assert_eq!(verdict.outcome, Outcome::PaidTwice, "{}", verdict.summary);
    // Both credits are judged against r1's one refund.
    assert_eq!(verdict.credits.len(), 1);
    assert_eq!(verdict.credits[0].credits_applied, 2);
    let told = debrief::of(&retried, &verdict);
    assert!(
        told.diagnosis.iter().any(|sentence| sentence
            .contains("after billing had applied a credit the run never heard about")
            && sentence.contains("fresh run, r1.retry1")),
        "{:?}",
        told.diagnosis
    );
    // Table 4's row lit, with the worker that exited.
    let book = rulebook::at_phase(&retried, retried.phase());
    let fresh = ROWS
        .iter()
        .position(|row| row.table == Table::FailedRun && row.then.starts_with("start a fresh run"))
        .expect("the row");
    assert_eq!(book[fresh].fired, 1);
}

#[test]
fn with_the_pause_or_the_hook_on_an_unknown_call_never_fails_the_run_so_nothing_is_retried() {
    for guard in [Guard::PauseOnIndeterminate, Guard::ReconcileHook] {
        let guards = level(RETRY).guards.with(guard, true);
        let mut held = simulation(level(RETRY), Some(guards));
        until_answer_of(&mut held, "r1:c1");
        held.play(Play::LoseResponse(LoseResponse { key: None }))
            .expect("on the wire");
        held.run().expect("runs");
        assert!(held.failed_runs().is_empty(), "{guard}: {:?}", held.failed_runs());
        assert_eq!(held.nodes().len(), 1, "{guard}: no fresh run");
        let verdict = held.verdict().expect("a verdict");
        assert_ne!(verdict.outcome, Outcome::PaidTwice, "{guard}: {}", verdict.summary);
        assert!(verdict.stopped_by.contains(&guard), "{guard}: {:?}", verdict.stopped_by);
    }
}

#[test]
fn a_definite_later_failure_still_restarts_the_node_and_repeats_the_write_with_every_guard_on() {
    let mut node = simulation(level(RETRY), Some(Guards::all_on()));
    until_request_of(&mut node, "r1:c1");
    refuse_next_call(&mut node);
    node.run().expect("runs");
    let failed = &node.failed_runs()[0];
    assert_eq!((failed.item, failed.fresh_run.as_deref()), (1, Some("r1.retry1")));
    let verdict = node.verdict().expect("a verdict");
    assert_eq!(verdict.outcome, Outcome::PaidTwice, "{}", verdict.summary);
}

#[test]
fn a_workflow_retries_at_most_retries_max_times_then_the_run_stays_failed() {
    let mut level = level(RETRY);
    level.workflow.retries_max = 2;
    level.cards = vec![level::CardAllowance {
        card: CardKind::ToolFailsBeforeSending,
        count: 5,
    }];
    let mut node = simulation(level, None);
    // Every run's first call refuses: r1, r1.retry1 and r1.retry2 all fail at step 1.
    for _ in 0..5 {
        refuse_next_call(&mut node);
    }
    node.run().expect("runs");
    let failed: Vec<(&str, Option<&str>)> = node
        .failed_runs()
        .iter()
        .map(|failed| (failed.run.as_str(), failed.fresh_run.as_deref()))
        .collect();
    assert_eq!(
        failed,
        vec![
            ("r1", Some("r1.retry1")),
            ("r1.retry1", Some("r1.retry2")),
            ("r1.retry2", None)
        ]
    );
    assert!(
        node.timeline()
            .iter()
            .any(|entry| entry.kind == "run failed" && entry.text.contains("no retries left"))
    );
    assert!(node.billing().entries.is_empty(), "nothing was paid");
    let verdict = node.verdict().expect("a verdict");
    assert_eq!(verdict.outcome, Outcome::UnknownFlagged, "{}", verdict.summary);
}

#[test]
fn level_16s_reflex_on_a_timed_out_call_fails_no_run() {
    let loaded = level::load_tape(&levels_folder().join("16-reflex-compensation.win.tape.ron")).expect("loads");
    let mut simulation =
        twice_world::replay::simulation_of(&loaded, twice_world::ledger::LedgerStore::Memory).expect("builds");
    simulation.run().expect("runs");
    assert!(simulation.failed_runs().is_empty());
    let verdict = simulation.verdict().expect("a verdict");
    assert_eq!(verdict.outcome, Outcome::NotPaidButOwed, "{}", verdict.summary);
}

#[test]
fn workflow_settings_out_of_bounds_are_refused_with_their_place() {
    let path = levels_folder().join(RETRY);
    let text = std::fs::read_to_string(&path).expect("reads");
    for (from, to, says) in [
        ("retries_max: 1", "retries_max: 9", "at most 8"),
        ("retries_max: 1", "retries_max: 0", "retries_max of 1 or more"),
        ("recovery_policy: retry", "recovery_policy: fail", "nothing is retried"),
    ] {
        let broken = text.replace(from, to);
        assert_ne!(broken, text);
        let error = level::parse_level(&path, &broken).expect_err("refused");
        let message = error.to_string();
        assert!(message.contains(says), "{message}");
        assert!(message.contains("24-workflow-retry.level.ron:"), "{message}");
    }
    let unknown = text.replace("recovery_policy: retry", "recovery_policy: retry, backoff_ms: 5");
    assert!(level::parse_level(&path, &unknown).is_err());
}

#[test]
fn the_explorer_finds_the_reflex_void_and_the_fresh_runs_second_payment() {
    for file in [UNDO, RETRY] {
        let level = level(file);
        let outcome = twice_world::explore::Explorer::new(level.clone(), level.guards, 1)
            .schedules(2_000)
            .run(&|_| {}, &std::sync::atomic::AtomicBool::new(false))
            .expect("the explorer runs");
        let found = outcome.found.unwrap_or_else(|| panic!("no heist found in {file}"));
        assert_eq!(found.verdict.outcome, level.goal, "{file}: {}", found.verdict.summary);
        // Replayed, the find fails the run it needs to fail.
        let mut replay = SimulationBuilder::new(level, found.simulation_seed)
            .actions(found.actions.clone())
            .build()
            .expect("builds");
        replay.run().expect("runs");
        assert!(!replay.failed_runs().is_empty(), "{file}: {:?}", found.actions);
    }
}
