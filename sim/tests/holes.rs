//! Places where a decision that was true when made could become false, or a run could be left
//! unattended, each pinned by a run of the simulator or of a real worker process. (The send
//! fence, the reworded replay and the checker's own checks have tests of their own:
//! `sim/runtime/tests/machine.rs`, `tests/explore.rs`, `tests/runtime_rules.rs`,
//! `tests/checker.rs`.)

mod common;

use std::process::Command;
use twice_sim::cards::{CrashWorker, DuplicateWorker, LoseRequest, LoseResponse, OperatorCompensate};

use common::{BIN, BillingServer};
use twice_sim::billing::EntryKind;
use twice_sim::checker::Outcome;
use twice_sim::ledger::{Ledger, RunEvent};
use twice_sim::level::{Level, Play, parse_level};
use twice_sim::runtime::key::IdempotencyKey;
use twice_sim::runtime::rules::Status;
use twice_sim::runtime::run::RunStatus;
use twice_sim::simulator::{Phase, Simulation, SimulationBuilder};

fn level(billing_keys: &str, cards: &str) -> Level {
    let text = format!(
        r#"(
            id: "holes", title: "holes", briefing: "b",
            lesson: (rule: "r", text: "t"),
            world: (accounts: [(id: "acct_ada", owner: "Ada")], billing_keys: {billing_keys}),
            tools: [(name: "issue_credit", side_effect: external, operation: credit, reconcile: true, compensation: true)],
            runs: [(id: "r1", calls: [(tool: "issue_credit", account: "acct_ada", amount_cents: 2500, memo: "Refund for order #1001")])],
            cards: [{cards}],
            goal: paid_twice,
        )"#
    );
    parse_level(std::path::Path::new("holes.level.ron"), &text).expect("the test level parses")
}

fn status_of(simulation: &Simulation, key: &str) -> Option<Status> {
    simulation
        .ledger()
        .record(&IdempotencyKey::parse(key).unwrap())
        .unwrap()
        .map(|record| record.status)
}

fn reversals(simulation: &Simulation) -> usize {
    simulation
        .billing()
        .entries
        .iter()
        .filter(|entry| entry.kind == EntryKind::Reversal)
        .count()
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

/// Hole 3: the operator card used to void by key with no lookup, posting a reversal even
/// when no credit existed (taking money never paid). It now takes the API's one path: look
/// the credit up by the call's key, void it by its id, once.
#[test]
fn the_operator_card_compensates_through_the_lookup_and_never_takes_money_never_paid() {
    // The request is lost: no credit exists, the call is unknown, and it did leave.
    let cards = "(card: LoseRequest, count: 1), (card: OperatorCompensate, count: 2)";
    let mut lost = SimulationBuilder::new(level("honour", cards), 1).build().unwrap();
    play_on_the_wire(&mut lost, Play::LoseRequest(LoseRequest { key: None }));
    lost.run().unwrap();
    assert_eq!(status_of(&lost, "r1:c1"), Some(Status::Indeterminate));
    let refused = lost.play(Play::OperatorCompensate(OperatorCompensate {
        key: "r1:c1".into(),
        reason: "void it, just in case".into(),
        operator: "op-ana".into(),
    }));
    // The refusal is a move made (the card is spent), said on the timeline as what it is.
    assert!(refused.is_ok(), "{refused:?}");
    let said = &lost.timeline().last().unwrap().text;
    assert!(
        said.contains("refused, nothing undone") && said.contains("may still be on its way") && said.len() < 200,
        "{said}"
    );
    assert_eq!(reversals(&lost), 0, "no reversal of a credit never paid");
    assert_eq!(lost.billing().balance("acct_ada"), Some(0));

    // The answer is lost after the credit landed: the card voids exactly that credit, once.
    let mut landed = SimulationBuilder::new(
        level(
            "honour",
            "(card: LoseResponse, count: 1), (card: OperatorCompensate, count: 2)",
        ),
        1,
    )
    .build()
    .unwrap();
    play_on_the_wire(&mut landed, Play::LoseResponse(LoseResponse { key: None }));
    landed.run().unwrap();
    assert_eq!(landed.billing().balance("acct_ada"), Some(2500));
    landed
        .play(Play::OperatorCompensate(OperatorCompensate {
            key: "r1:c1".into(),
            reason: "the order was cancelled".into(),
            operator: "op-ana".into(),
        }))
        .unwrap();
    landed.run().unwrap();
    assert_eq!(status_of(&landed, "r1:c1"), Some(Status::Compensated));
    assert_eq!(landed.billing().balance("acct_ada"), Some(0));
    let again = landed.play(Play::OperatorCompensate(OperatorCompensate {
        key: "r1:c1".into(),
        reason: "once more".into(),
        operator: "op-ana".into(),
    }));
    assert!(again.is_err(), "a compensated call is not compensated again");
    assert_eq!(reversals(&landed), 1);
    let reversal = landed
        .billing()
        .entries
        .iter()
        .find(|entry| entry.kind == EntryKind::Reversal)
        .unwrap();
    assert_eq!(reversal.reverses.as_deref(), Some("cr_0001"), "voided by its id");
}

/// Hole 5: a twin parked after asking the hook too early (the call's own worker still had it
/// on the wire) used to wait forever once that worker died: no restart (a worker of the run
/// was alive) and the hook never asked again. A parked run now looks again when something
/// that could settle it changes — its owner dying, billing applying a request under its key.
#[test]
fn a_live_twin_parked_too_early_looks_again_when_the_owner_dies_and_the_credit_lands() {
    let cards = "(card: DuplicateWorker, count: 1), (card: CrashWorker, count: 1)";
    let mut simulation = SimulationBuilder::new(level("honour", cards), 1).build().unwrap();
    // The twin starts at once; w1 reserves first and sends.
    simulation
        .play(Play::DuplicateWorker(DuplicateWorker { run: "r1".into() }))
        .unwrap();
    simulation
        .run_until(|simulation| {
            simulation
                .workers()
                .iter()
                .any(|worker| worker.number == 2 && worker.phase == Phase::Park)
        })
        .unwrap();
    assert!(
        simulation.messages().any(|message| message.key == "r1:c1"),
        "w1's request is on the wire while the twin parks"
    );
    simulation
        .play(Play::CrashWorker(CrashWorker {
            worker: Some(1),
            in_phase: None,
        }))
        .unwrap();
    simulation.run().unwrap();
    assert_eq!(
        status_of(&simulation, "r1:c1"),
        Some(Status::Completed),
        "the hook found the credit"
    );
    let twin = simulation
        .workers()
        .into_iter()
        .find(|worker| worker.number == 2)
        .unwrap();
    assert_eq!(twin.run_state.status, RunStatus::Completed, "the run went on");
    let verdict = simulation.verdict().unwrap();
    assert_eq!(verdict.outcome, Outcome::PaidOnce);
    assert!(verdict.waiting.is_empty(), "nobody waits on a call that is settled");
    assert!(
        simulation.timeline().iter().any(|entry| entry.kind == "look again"),
        "the twin looked again"
    );
}

/// Hole 4, through the real worker process: a checkpoint this build cannot read (a deploy
/// changed the state's format) used to restart the run from scratch, re-running calls settled
/// `failed` under keys billing never saw. Now the run is not driven; it waits for a person,
/// with the reason in the ledger's run history, and the process says so and exits 1.
#[test]
fn a_worker_process_meeting_an_unreadable_checkpoint_waits_for_a_person() {
    let directory = tempfile::tempdir().unwrap();
    let ledger_path = directory.path().join("ledger.sqlite");
    let billing = BillingServer::start(&directory.path().join("billing.sqlite"), "honour");
    let mut ledger = Ledger::open(&ledger_path).unwrap();
    ledger
        .save_checkpoint("run-0001", "running", "{\"format\": 3, \"steps\": []}", "p1", None, 1)
        .unwrap();
    let output = Command::new(BIN)
        .args(["worker", "--ledger"])
        .arg(&ledger_path)
        .args(["--billing", &billing.url, "--run", "run-0001"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stdout}\n{stderr}");
    assert!(
        stderr.contains("waits for a person") && stderr.contains("cannot be read"),
        "{stderr}"
    );
    assert!(stdout.contains("end\twaits_for_person"), "{stdout}");
    let history = ledger.run_history(Some("run-0001")).unwrap();
    assert_eq!(history.len(), 1);
    assert_eq!(history[0].event, RunEvent::WaitsForPerson);
    assert!(ledger.all_records().unwrap().is_empty(), "no call was made again");
}

/// Issue 13, item 10: a worker that cannot reach billing used to record 128 `failed` calls
/// (each connect error is "not attempted", so Penny calls again), print `end exited completed`
/// and exit 0; `--run foo` was accepted. It now checks `--billing` at start, bounds the calls
/// that cannot reach billing, and exits non-zero with the reason.
#[test]
fn a_worker_that_cannot_reach_billing_says_so_and_stops_calling() {
    let directory = tempfile::tempdir().unwrap();
    let ledger_path = directory.path().join("ledger.sqlite");
    let probe = Command::new(BIN)
        .args(["worker", "--ledger"])
        .arg(&ledger_path)
        .args(["--billing", "http://127.0.0.1:1", "--run", "run-0001"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&probe.stderr);
    assert_eq!(probe.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("--billing") && stderr.contains("cannot be reached"),
        "{stderr}"
    );

    let unprobed = Command::new(BIN)
        .args(["worker", "--no-probe", "--ledger"])
        .arg(&ledger_path)
        .args(["--billing", "http://127.0.0.1:1", "--run", "run-0001"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&unprobed.stdout);
    let stderr = String::from_utf8_lossy(&unprobed.stderr);
    assert_eq!(unprobed.status.code(), Some(1), "{stdout}\n{stderr}");
    assert!(stderr.contains("could not be reached"), "{stderr}");
    assert!(stdout.contains("end\ttool_unreachable"), "{stdout}");
    let ledger = Ledger::open(&ledger_path).unwrap();
    let failed = ledger
        .all_records()
        .unwrap()
        .into_iter()
        .filter(|record| record.status == Status::Failed)
        .count();
    assert_eq!(
        failed,
        twice_sim::drill::worker_process::UNREACHABLE_IN_A_ROW_MAX as usize,
        "the calls that could not reach billing are bounded"
    );
}
