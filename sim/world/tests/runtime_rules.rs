//! Every rule of the seed (`side-effects-once.txt`), each shown end to end in the simulator.
//! A test's name says the rule; its body breaks something and checks the rule held.

use twice_world::billing::EntryKind;
use twice_world::cards::{
    CrashWorker, DuplicateWorker, LoseRequest, LoseResponse, OperatorCompensate, OperatorResolve, SlowResponse,
    ToolFailsBeforeSending,
};
use twice_world::checker::Outcome;
use twice_world::level::{Level, Play, WireRule, parse_level};
use twice_world::runtime::guards::{Guard, Guards};
use twice_world::runtime::key::IdempotencyKey;
use twice_world::runtime::rules::Status;
use twice_world::runtime::run::{RunState, RunStatus, Settled, Told};
use twice_world::simulator::{Simulation, SimulationBuilder};

/// A one-run level: `calls` credits (RON list items), billing key handling, model policy.
fn level(calls: &str, billing_keys: &str, model: &str, cards: &str) -> Level {
    let text = format!(
        r#"(
            id: "rule", title: "rule", briefing: "b",
            lesson: (rule: "r", text: "t"),
            world: (accounts: [(id: "acct_ada", owner: "Ada")], billing_keys: {billing_keys}),
            tools: [
                (name: "issue_credit", side_effect: external, operation: credit, reconcile: true, compensation: true),
                (name: "lookup_balance", side_effect: read, operation: lookup_balance),
            ],
            model: {model},
            runs: [(id: "r1", calls: [{calls}])],
            cards: [{cards}],
            goal: paid_twice,
        )"#
    );
    parse_level(std::path::Path::new("inline.level.ron"), &text).expect("the test level parses")
}

const CREDIT: &str = r#"(tool: "issue_credit", account: "acct_ada", amount_cents: 2500, memo: "Refund order 1001", rewordings: ["Refund for order #1001"])"#;
const ALL_CARDS: &str = "(card: LoseRequest, count: 5), (card: LoseResponse, count: 5), (card: SlowResponse, count: 5), \
    (card: CrashWorker, count: 5), (card: DuplicateWorker, count: 5), (card: ModelCallsAgain, count: 5), \
    (card: ToolFailsBeforeSending, count: 5), (card: OperatorResolve, count: 5), (card: OperatorCompensate, count: 5)";

fn one_credit(billing_keys: &str) -> Level {
    level(CREDIT, billing_keys, "()", ALL_CARDS)
}

fn simulation(level: Level, guards: Guards) -> Simulation {
    // These tests arm wire cards ahead of their message (the version 1 rule): each says which
    // message it means by when it is armed, not by when it is on the wire.
    SimulationBuilder::new(level, 7)
        .guards(guards)
        .wire_rule(WireRule::ArmNextMessage)
        .build()
        .expect("simulation builds")
}

fn key(text: &str) -> IdempotencyKey {
    IdempotencyKey::parse(text).expect("a key")
}

fn status_of(simulation: &Simulation, key_text: &str) -> Option<Status> {
    simulation
        .ledger()
        .record(&key(key_text))
        .expect("ledger reads")
        .map(|record| record.status)
}

fn credits(simulation: &Simulation) -> usize {
    simulation
        .billing()
        .entries
        .iter()
        .filter(|entry| entry.kind == EntryKind::Credit)
        .count()
}

fn run_state(simulation: &Simulation) -> RunState {
    let checkpoint = simulation
        .ledger()
        .load_checkpoint("r1")
        .expect("reads")
        .expect("saved");
    RunState::from_json(&checkpoint.state).expect("parses")
}

fn after_billing_applied(simulation: &mut Simulation, count: usize) {
    simulation
        .run_until(|simulation| credits(simulation) >= count)
        .expect("runs");
    assert_eq!(credits(simulation), count, "billing applied {count} credit(s)");
}

fn verdict(simulation: &mut Simulation) -> Outcome {
    simulation.run().expect("runs");
    simulation.verdict().expect("judges").outcome
}

#[test]
fn key_is_run_id_and_tool_call_id_and_is_passed_downstream() {
    let mut simulation = simulation(one_credit("honour"), Guards::all_on());
    assert_eq!(verdict(&mut simulation), Outcome::PaidOnce);
    let entry = &simulation.billing().entries[0];
    assert_eq!(
        entry.idempotency_key.as_deref(),
        Some("r1:c1"),
        "billing received the runtime's key"
    );
    assert_eq!(status_of(&simulation, "r1:c1"), Some(Status::Completed));
}

#[test]
fn key_is_stable_across_replays_of_the_same_call() {
    let mut simulation = simulation(one_credit("ignore"), Guards::all_on());
    after_billing_applied(&mut simulation, 1);
    simulation
        .play(Play::CrashWorker(CrashWorker {
            worker: Some(1),
            in_phase: None,
        }))
        .expect("crash");
    simulation.run().expect("runs");
    let records = simulation.ledger_records().expect("reads");
    assert_eq!(
        records.len(),
        1,
        "the replay used the same key, so there is one record: {records:?}"
    );
    assert_eq!(records[0].key.as_str(), "r1:c1");
    assert_eq!(credits(&simulation), 1);
}

#[test]
fn key_is_never_derived_from_arguments_so_two_equal_credits_both_land() {
    let calls = format!("{CREDIT}, {CREDIT}");
    let mut simulation = simulation(level(&calls, "honour", "()", ALL_CARDS), Guards::all_on());
    assert_eq!(verdict(&mut simulation), Outcome::PaidOnce);
    assert_eq!(credits(&simulation), 2, "two honest $25 credits are two effects");
    // With keys hashed from the arguments, the second credit is merged into the first.
    let mut hashed = simulation_with(
        level(&calls, "honour", "()", ALL_CARDS),
        Guards::all_on().with(Guard::KeyPerCall, false),
    );
    assert_eq!(verdict(&mut hashed), Outcome::NotPaidButOwed);
    assert_eq!(credits(&hashed), 1);
}

fn simulation_with(level: Level, guards: Guards) -> Simulation {
    simulation(level, guards)
}

#[test]
fn reserve_before_run_the_ledger_says_started_before_billing_sees_the_request() {
    let mut simulation = simulation(one_credit("ignore"), Guards::all_on());
    simulation
        .run_until(|simulation| simulation.messages().next().is_some())
        .expect("runs");
    assert_eq!(credits(&simulation), 0);
    assert_eq!(
        status_of(&simulation, "r1:c1"),
        Some(Status::Started),
        "reserved while the request is on the wire"
    );
}

#[test]
fn completed_call_returns_its_recorded_result_and_the_tool_is_not_called_again() {
    let mut simulation = simulation(one_credit("ignore"), Guards::all_on());
    simulation
        .run_until(|simulation| status_of(simulation, "r1:c1") == Some(Status::Completed))
        .expect("runs");
    simulation
        .play(Play::CrashWorker(CrashWorker {
            worker: Some(1),
            in_phase: None,
        }))
        .expect("crash before the checkpoint");
    assert_eq!(verdict(&mut simulation), Outcome::PaidOnce);
    assert_eq!(credits(&simulation), 1);
    let state = run_state(&simulation);
    assert!(matches!(&state.transcript[0].1, Told::Result { result } if result.contains("cr_0001")));
    assert_eq!(simulation.verdict().unwrap().stopped_by, vec![Guard::Ledger]);
}

#[test]
fn process_that_died_mid_call_leaves_started_and_the_replay_does_not_run_it() {
    let mut simulation = simulation(one_credit("ignore"), Guards::all_on().with(Guard::ReconcileHook, false));
    simulation
        .run_until(|simulation| simulation.messages().next().is_some())
        .expect("runs");
    simulation
        .play(Play::CrashWorker(CrashWorker {
            worker: Some(1),
            in_phase: None,
        }))
        .expect("crash mid-call");
    simulation.run().expect("runs");
    assert_eq!(status_of(&simulation, "r1:c1"), Some(Status::Started));
    assert_eq!(
        credits(&simulation),
        1,
        "the request that left landed once; the replay sent nothing"
    );
    assert!(matches!(
        run_state(&simulation).status,
        RunStatus::AwaitingReconciliation { .. }
    ));
}

#[test]
fn failed_call_may_run_again_under_the_same_key() {
    let mut simulation = simulation(one_credit("honour"), Guards::all_on());
    simulation
        .play(Play::ToolFailsBeforeSending(ToolFailsBeforeSending {
            run: "r1".into(),
        }))
        .expect("armed");
    simulation
        .run_until(|simulation| status_of(simulation, "r1:c1") == Some(Status::Failed))
        .expect("runs");
    // Crash before the checkpoint: the replay meets `failed` and runs the call again.
    simulation
        .play(Play::CrashWorker(CrashWorker {
            worker: Some(1),
            in_phase: None,
        }))
        .expect("crash");
    assert_eq!(verdict(&mut simulation), Outcome::PaidOnce);
    let history = simulation.ledger().history(&key("r1:c1")).unwrap();
    assert!(
        history.iter().any(|entry| entry.event.name() == "reserved_again"),
        "{history:?}"
    );
    assert_eq!(status_of(&simulation, "r1:c1"), Some(Status::Completed));
}

#[test]
fn not_attempted_error_is_recorded_failed_not_indeterminate() {
    let mut simulation = simulation(one_credit("honour"), Guards::all_on());
    simulation
        .play(Play::ToolFailsBeforeSending(ToolFailsBeforeSending {
            run: "r1".into(),
        }))
        .expect("armed");
    simulation.run().expect("runs");
    assert_eq!(status_of(&simulation, "r1:c1"), Some(Status::Failed));
    assert_eq!(credits(&simulation), 0);
    assert!(simulation.messages().next().is_none());
    assert_eq!(
        simulation.verdict().unwrap().outcome,
        Outcome::NotPaidButOwed,
        "nothing unknown: nothing to reconcile"
    );
}

#[test]
fn reads_get_up_to_three_attempts_with_backoff() {
    let lookup = r#"(tool: "lookup_balance", account: "acct_ada", amount_cents: 0, memo: "balance")"#;
    let mut simulation = simulation(level(lookup, "honour", "()", ALL_CARDS), Guards::all_on());
    simulation
        .play(Play::LoseRequest(LoseRequest { key: None }))
        .expect("armed");
    simulation
        .play(Play::LoseRequest(LoseRequest { key: None }))
        .expect("armed");
    simulation.run().expect("runs");
    let record = simulation.ledger().record(&key("r1:c1")).unwrap().unwrap();
    assert_eq!((record.status, record.attempts), (Status::Completed, 3));
    let backoffs: Vec<u64> = simulation
        .timeline()
        .iter()
        .filter(|entry| entry.text.starts_with("waits"))
        .map(|entry| entry.time_ms)
        .collect();
    assert_eq!(backoffs.len(), 2, "two backoffs between three attempts");
}

#[test]
fn a_write_gets_one_attempt_and_its_timeout_is_indeterminate() {
    let mut simulation = simulation(one_credit("ignore"), Guards::all_on().with(Guard::ReconcileHook, false));
    simulation
        .play(Play::LoseResponse(LoseResponse { key: None }))
        .expect("armed");
    simulation.run().expect("runs");
    let record = simulation.ledger().record(&key("r1:c1")).unwrap().unwrap();
    assert_eq!((record.status, record.attempts), (Status::Indeterminate, 1));
    assert_eq!(credits(&simulation), 1);
    // The naive runtime retries the write and pays twice.
    let mut naive = simulation_with(
        one_credit("ignore"),
        Guards::all_on().with(Guard::WriteRetryRule, false),
    );
    naive
        .play(Play::LoseResponse(LoseResponse { key: None }))
        .expect("armed");
    assert_eq!(verdict(&mut naive), Outcome::PaidTwice);
}

#[test]
fn reconcile_hook_is_asked_first_and_the_run_carries_on_with_the_real_result() {
    let mut simulation = simulation(one_credit("metadata_only"), Guards::all_on());
    simulation
        .play(Play::LoseResponse(LoseResponse { key: None }))
        .expect("armed");
    assert_eq!(verdict(&mut simulation), Outcome::PaidOnce);
    assert_eq!(status_of(&simulation, "r1:c1"), Some(Status::Completed));
    let history = simulation.ledger().history(&key("r1:c1")).unwrap();
    assert!(
        history
            .iter()
            .any(|entry| entry.event.name() == "reconciled" && entry.actor == "reconcile-hook"),
        "{history:?}"
    );
    assert_eq!(run_state(&simulation).status, RunStatus::Completed);
}

#[test]
fn reconcile_hook_cannot_find_what_billing_never_stored() {
    let mut simulation = simulation(one_credit("ignore"), Guards::all_on());
    simulation
        .play(Play::LoseResponse(LoseResponse { key: None }))
        .expect("armed");
    simulation.run().expect("runs");
    assert_eq!(status_of(&simulation, "r1:c1"), Some(Status::Indeterminate));
    assert!(matches!(
        run_state(&simulation).status,
        RunStatus::AwaitingReconciliation { .. }
    ));
}

#[test]
fn pause_on_indeterminate_waits_and_is_resumed_with_the_truth_when_settled() {
    let mut simulation = simulation(one_credit("ignore"), Guards::all_on());
    simulation
        .play(Play::LoseRequest(LoseRequest { key: None }))
        .expect("armed");
    simulation.run().expect("runs");
    assert!(matches!(run_state(&simulation).status, RunStatus::AwaitingReconciliation { ref key } if key == "r1:c1"));
    assert_eq!(simulation.verdict().unwrap().outcome, Outcome::UnknownFlagged);
    let mut resumed = SimulationBuilder::new(one_credit("ignore"), 7)
        .wire_rule(WireRule::ArmNextMessage)
        .actions(vec![
            twice_world::level::TimedAction {
                at_phase: 0,
                play: Play::LoseRequest(LoseRequest { key: None }),
                fizzles: false,
            },
            twice_world::level::TimedAction {
                at_phase: 1_000,
                play: Play::OperatorResolve(OperatorResolve {
                    key: "r1:c1".into(),
                    status: Status::Failed,
                    reason: "billing has no credit for r1:c1".into(),
                    operator: "op-ana".into(),
                    expected_status: Some(Status::Indeterminate),
                }),
                fizzles: false,
            },
        ])
        .build()
        .unwrap();
    resumed.run().unwrap();
    let state = run_state(&resumed);
    assert_eq!(state.status, RunStatus::Completed);
    assert_eq!(
        state.transcript[0].1,
        Told::SettledByOperator {
            settled: Settled::DidNotTakeEffect,
            operator: "op-ana".into(),
            reason: "billing has no credit for r1:c1".into(),
        },
        "the model hears the truth, not \"failed\", with whose decision it is and why"
    );
}

#[test]
fn on_indeterminate_fail_by_default_tells_the_model_the_call_failed() {
    let guards = Guards::all_on()
        .with(Guard::PauseOnIndeterminate, false)
        .with(Guard::ReconcileHook, false);
    let mut simulation = simulation(one_credit("ignore"), guards);
    simulation
        .play(Play::LoseResponse(LoseResponse { key: None }))
        .expect("armed");
    simulation.run().unwrap();
    let state = run_state(&simulation);
    assert!(matches!(&state.transcript[0].1, Told::Failed { .. }));
    assert_eq!(
        status_of(&simulation, "r1:c1"),
        Some(Status::Indeterminate),
        "settling later is record-keeping only"
    );
}

#[test]
fn a_new_call_from_the_model_is_a_new_key_which_pause_prevents() {
    let model = "(on_failed: call_again)";
    let guards = Guards::all_on()
        .with(Guard::PauseOnIndeterminate, false)
        .with(Guard::ReconcileHook, false);
    let mut told_failed = simulation(level(CREDIT, "ignore", model, ALL_CARDS), guards);
    told_failed
        .play(Play::LoseResponse(LoseResponse { key: None }))
        .unwrap();
    assert_eq!(verdict(&mut told_failed), Outcome::PaidTwice);
    assert!(
        status_of(&told_failed, "r1:c2").is_some(),
        "the second call had its own key"
    );
    let mut paused = simulation(
        level(CREDIT, "ignore", model, ALL_CARDS),
        guards.with(Guard::PauseOnIndeterminate, true),
    );
    paused.play(Play::LoseResponse(LoseResponse { key: None })).unwrap();
    assert_eq!(verdict(&mut paused), Outcome::PaidOnce);
}

#[test]
fn operator_resolve_is_compare_and_set_needs_a_reason_and_is_appended_to_history() {
    let mut simulation = simulation(one_credit("ignore"), Guards::all_on());
    simulation.play(Play::LoseRequest(LoseRequest { key: None })).unwrap();
    simulation.run().unwrap();
    let resolve = |reason: &str, expected: Option<Status>| {
        Play::OperatorResolve(OperatorResolve {
            key: "r1:c1".into(),
            status: Status::Failed,
            reason: reason.into(),
            operator: "op-ana".into(),
            expected_status: expected,
        })
    };
    assert!(simulation.play(resolve("  ", None)).is_err(), "a reason is required");
    // Compare-and-set lost: the operator's move is made — it is the race — and the ledger
    // refuses it, so nothing changes but the timeline's 409.
    simulation
        .play(resolve("checked billing", Some(Status::Started)))
        .expect("a lost race is a move");
    assert_eq!(status_of(&simulation, "r1:c1"), Some(Status::Indeterminate));
    let refused = &simulation.timeline().last().expect("a line").text;
    assert!(
        refused.contains("409") && refused.contains("expected r1:c1 to be started"),
        "{refused}"
    );
    simulation
        .play(resolve("checked billing", Some(Status::Indeterminate)))
        .unwrap();
    let again = simulation.play(resolve("me too", None)).unwrap_err();
    assert!(again.to_string().contains("never overwritten"), "{again}");
    let history = simulation.ledger().history(&key("r1:c1")).unwrap();
    let decision = history
        .iter()
        .find(|entry| entry.event.name() == "resolved")
        .expect("the decision is in the history");
    assert_eq!(
        (decision.actor.as_str(), decision.reason.as_deref()),
        ("op-ana", Some("checked billing"))
    );
}

#[test]
fn a_late_outcome_after_an_operator_decision_is_logged_as_a_contradiction_and_ignored() {
    let mut simulation = simulation(one_credit("ignore"), Guards::all_on());
    simulation.play(Play::SlowResponse(SlowResponse { key: None })).unwrap();
    simulation
        .run_until(|simulation| status_of(simulation, "r1:c1") == Some(Status::Indeterminate))
        .unwrap();
    simulation
        .play(Play::OperatorResolve(OperatorResolve {
            key: "r1:c1".into(),
            status: Status::Failed,
            reason: "looked too early".into(),
            operator: "op-ana".into(),
            expected_status: None,
        }))
        .unwrap();
    simulation.run().unwrap();
    let history = simulation.ledger().history(&key("r1:c1")).unwrap();
    // The late answer says completed where the operator said failed: it changes nothing, and
    // is written as the contradiction it is, for a person to look at.
    let contradicted = history
        .iter()
        .find(|entry| entry.event.name() == "contradicted")
        .unwrap_or_else(|| panic!("the late answer is a contradiction: {history:?}"));
    assert!(
        contradicted
            .detail
            .as_deref()
            .is_some_and(|detail| detail.starts_with("settled failed, but attempt 1's answer says completed")),
        "{contradicted:?}"
    );
    assert_eq!(
        status_of(&simulation, "r1:c1"),
        Some(Status::Failed),
        "the decision stands"
    );
    // The decision was wrong (the slowed credit had landed), and the checker says so.
    assert_eq!(
        simulation.verdict().unwrap().violation_kinds(),
        [twice_world::checker::ViolationKind::FailedButPaid]
    );
}

#[test]
fn the_runtime_never_compensates_by_itself() {
    let guards = Guards::all_on()
        .with(Guard::PauseOnIndeterminate, false)
        .with(Guard::ReconcileHook, false);
    let mut simulation = simulation(one_credit("ignore"), guards);
    simulation.play(Play::LoseRequest(LoseRequest { key: None })).unwrap();
    simulation.run().unwrap();
    assert!(
        simulation
            .billing()
            .entries
            .iter()
            .all(|entry| entry.kind != EntryKind::Reversal)
    );
    let mut reflex = simulation_with(one_credit("ignore"), guards.with(Guard::NoReflexCompensation, false));
    reflex.play(Play::LoseRequest(LoseRequest { key: None })).unwrap();
    assert_eq!(
        verdict(&mut reflex),
        Outcome::NotPaidButOwed,
        "voiding a credit never issued takes Ada's money"
    );
    assert!(
        !reflex.verdict().unwrap().violations.is_empty(),
        "the checker flags the unasked compensation"
    );
}

#[test]
fn operator_compensation_runs_once() {
    let mut simulation = simulation(one_credit("honour"), Guards::all_on());
    simulation.run().unwrap();
    let compensate = || {
        Play::OperatorCompensate(OperatorCompensate {
            key: "r1:c1".into(),
            reason: "customer asked to cancel".into(),
            operator: "op-ana".into(),
        })
    };
    simulation.play(compensate()).unwrap();
    assert!(
        simulation.play(compensate()).is_err(),
        "a second request does not compensate again"
    );
    let reversals = simulation
        .billing()
        .entries
        .iter()
        .filter(|entry| entry.kind == EntryKind::Reversal)
        .count();
    assert_eq!(reversals, 1);
    assert_eq!(status_of(&simulation, "r1:c1"), Some(Status::Compensated));
}

#[test]
fn a_stale_checkpoint_save_makes_the_second_worker_stand_down() {
    let mut simulation = simulation(one_credit("ignore"), Guards::all_on());
    simulation
        .play(Play::DuplicateWorker(DuplicateWorker { run: "r1".into() }))
        .unwrap();
    assert_eq!(verdict(&mut simulation), Outcome::PaidOnce);
    let stood_down = simulation.timeline().iter().any(|entry| entry.kind == "stand down");
    assert!(stood_down, "one of the two workers stood down");
    assert!(
        simulation
            .verdict()
            .unwrap()
            .stopped_by
            .contains(&Guard::CheckpointVersion)
    );
}

#[test]
fn check_then_insert_lets_two_workers_call_the_tool() {
    let guards = Guards::all_on()
        .with(Guard::AtomicReservation, false)
        .with(Guard::KeyDownstream, false);
    let mut simulation = simulation(one_credit("ignore"), guards);
    simulation
        .play(Play::DuplicateWorker(DuplicateWorker { run: "r1".into() }))
        .unwrap();
    assert_eq!(verdict(&mut simulation), Outcome::PaidTwice);
    let mut atomic = simulation_with(one_credit("ignore"), guards.with(Guard::AtomicReservation, true));
    atomic
        .play(Play::DuplicateWorker(DuplicateWorker { run: "r1".into() }))
        .unwrap();
    assert_eq!(verdict(&mut atomic), Outcome::PaidOnce);
}

#[test]
fn the_same_key_with_different_arguments_is_not_run_again_and_its_record_is_the_truth() {
    let model = "(reword_on_replay: true)";
    let mut simulation = simulation(level(CREDIT, "ignore", model, ALL_CARDS), Guards::all_on());
    simulation
        .run_until(|simulation| status_of(simulation, "r1:c1") == Some(Status::Completed))
        .unwrap();
    simulation
        .play(Play::CrashWorker(CrashWorker {
            worker: Some(1),
            in_phase: None,
        }))
        .unwrap();
    simulation.run().unwrap();
    let state = run_state(&simulation);
    assert_eq!(
        state.status,
        RunStatus::Completed,
        "the reworded replay is the same call"
    );
    assert!(
        state
            .transcript
            .iter()
            .any(|(call, told)| call == "c1" && matches!(told, Told::Result { result } if result.contains("credit_id"))),
        "the model hears the recorded result, not the new wording run: {:?}",
        state.transcript
    );
    assert!(
        simulation
            .guard_notes()
            .iter()
            .any(|note| matches!(note.held, twice_world::runtime::worker::Held::ArgumentsRefused { .. })),
        "the new wording was refused"
    );
    assert_eq!(credits(&simulation), 1);
}

#[test]
fn a_reworded_replay_of_an_unknown_call_leaves_it_attended_not_orphaned() {
    // Hole: the run used to fail on the mismatch, leaving r1:c1 `started` with nobody
    // reconciling it and the customer owed.
    let model = "(reword_on_replay: true)";
    let mut simulation = simulation(level(CREDIT, "ignore", model, ALL_CARDS), Guards::all_on());
    simulation.play(Play::LoseResponse(LoseResponse { key: None })).unwrap();
    simulation
        .run_until(|simulation| simulation.timeline().iter().any(|entry| entry.kind == "response lost"))
        .unwrap();
    simulation
        .play(Play::CrashWorker(CrashWorker {
            worker: Some(1),
            in_phase: None,
        }))
        .unwrap();
    simulation.run().unwrap();
    assert_eq!(status_of(&simulation, "r1:c1"), Some(Status::Started));
    let state = run_state(&simulation);
    assert!(
        matches!(&state.status, RunStatus::AwaitingReconciliation { key } if key == "r1:c1"),
        "the run waits on the recorded call, in the open: {:?}",
        state.status
    );
    let verdict = simulation.verdict().unwrap();
    assert_eq!(
        verdict.waiting,
        ["r1"],
        "honestly waiting on its unknown call, in the open"
    );
    assert_eq!(
        verdict.outcome,
        Outcome::PaidOnce,
        "the lost answer's credit did land, once"
    );
    assert_eq!(credits(&simulation), 1);
}

#[test]
fn every_tool_the_campaign_declares_passes_the_contract_with_the_write_retry_rule() {
    let folder = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../levels");
    let files = twice_world::level::files_below(&folder, ".level.ron").unwrap();
    assert!(!files.is_empty());
    for file in files {
        let loaded = twice_world::level::load_level(&file).unwrap();
        for tool in &loaded.level.tools {
            twice_world::runtime::assert_tool_contract(tool, tool.attempts_allowed(true))
                .unwrap_or_else(|violation| panic!("{}: {violation}", file.display()));
            if tool.side_effect.changes_something() {
                assert!(twice_world::runtime::assert_tool_contract(tool, tool.attempts_allowed(false)).is_err());
            }
        }
    }
}

#[test]
fn an_item_a_paused_run_has_not_reached_is_flagged_waiting_not_unpaid() {
    let calls = format!("{CREDIT}, {CREDIT}");
    let mut simulation = simulation(level(&calls, "ignore", "()", ALL_CARDS), Guards::all_on());
    simulation.play(Play::LoseResponse(LoseResponse { key: None })).unwrap();
    simulation.run().unwrap();
    let verdict = simulation.verdict().unwrap();
    let outcomes: Vec<Outcome> = verdict.credits.iter().map(|credit| credit.outcome).collect();
    assert_eq!(
        outcomes,
        vec![Outcome::PaidOnce, Outcome::UnknownFlagged],
        "{}",
        verdict.summary
    );
}
