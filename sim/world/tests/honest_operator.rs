//! The scripted honest operator of level 35 ("One Decision Lands"): they settle a paused call
//! from billing's records at a fixed time, and of their decision and the player's exactly one
//! lands — whichever reaches the ledger first. The other is refused with a 409 that says who won.

use std::path::{Path, PathBuf};
use twice_world::cards::{OperatorResolve, SlowResponse};

use twice_world::checker::Outcome;
use twice_world::ledger::LedgerStore;
use twice_world::level::{self, Level, Play};
use twice_world::replay;
use twice_world::runtime::key::IdempotencyKey;
use twice_world::runtime::rules::Status;
use twice_world::simulator::{Actor, PlayError, Simulation, SimulationBuilder};

const LEVEL: &str = "35-first-decision.level.ron";
const HONEST: &str = "op-honest";

fn levels_folder() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../levels")
}

fn the_level() -> Level {
    level::load_level(&levels_folder().join(LEVEL))
        .expect("level 35 loads")
        .level
}

fn simulation() -> Simulation {
    SimulationBuilder::new(the_level(), 1).build().expect("level 35 builds")
}

fn status_of(simulation: &Simulation, key: &str) -> Option<Status> {
    simulation
        .ledger_records()
        .expect("the ledger reads")
        .into_iter()
        .find(|record| record.key.as_str() == key)
        .map(|record| record.status)
}

/// Steps until billing's answer for `key` is on the wire, and slows it past the timeout.
fn slow_the_answer(simulation: &mut Simulation, key: &str) {
    loop {
        if simulation
            .play(Play::SlowResponse(SlowResponse { key: Some(key.into()) }))
            .is_ok()
        {
            return;
        }
        assert!(
            simulation.step().expect("steps"),
            "{key}'s answer never went on the wire"
        );
    }
}

fn resolve(key: &str, status: Status, expected: Option<Status>) -> Play {
    Play::OperatorResolve(OperatorResolve {
        key: key.into(),
        status,
        reason: "the test decides".into(),
        operator: "op-crew".into(),
        expected_status: expected,
    })
}

fn said_by(simulation: &Simulation, operator: &str) -> Vec<String> {
    simulation
        .timeline()
        .iter()
        .filter(|entry| entry.actor == Actor::Operator(operator.into()))
        .map(|entry| entry.text.clone())
        .collect()
}

#[test]
fn alone_the_honest_operator_settles_the_paused_call_from_billing() {
    let mut simulation = simulation();
    slow_the_answer(&mut simulation, "r1:c1");
    simulation.run().expect("runs");
    let said = said_by(&simulation, HONEST);
    assert!(
        said.iter()
            .any(|text| text.starts_with("sees r1:c1 indeterminate in the queue")),
        "{said:?}"
    );
    assert!(
        said.iter().any(|text| text.starts_with("resolves r1:c1 as completed")
            && text.contains("checked billing by hand: credit cr_")),
        "{said:?}"
    );
    let key = IdempotencyKey::parse("r1:c1").expect("a key");
    let history = simulation.ledger().history(&key).expect("history reads");
    assert!(
        history
            .iter()
            .any(|entry| entry.actor == HONEST && entry.to_status == Some(Status::Completed)),
        "{history:?}"
    );
    let verdict = simulation.verdict().expect("judged");
    assert_eq!(verdict.outcome, Outcome::PaidOnce, "{}", verdict.summary);
}

#[test]
fn the_first_decision_lands_and_the_honest_one_gets_the_409() {
    let mut simulation = simulation();
    slow_the_answer(&mut simulation, "r1:c1");
    simulation
        .run_until(|simulation| simulation.queued_calls().contains(&"r1:c1".to_owned()))
        .expect("runs");
    simulation
        .play(resolve("r1:c1", Status::Failed, Some(Status::Indeterminate)))
        .expect("the decision lands: the call is in the queue and still indeterminate");
    assert_eq!(status_of(&simulation, "r1:c1"), Some(Status::Failed));
    simulation.run().expect("runs");
    let said = said_by(&simulation, HONEST);
    assert!(
        said.contains(
            &"409 conflict: op-honest expected r1:c1 to be indeterminate, but op-crew settled it failed first; op-honest's completed was refused"
                .to_owned()
        ),
        "{said:?}"
    );
    assert_eq!(
        status_of(&simulation, "r1:c1"),
        Some(Status::Failed),
        "the first decision stands"
    );
    let verdict = simulation.verdict().expect("judged");
    assert_eq!(verdict.outcome, Outcome::PaidTwice, "{}", verdict.summary);
    assert!(verdict.goal_reached);
}

#[test]
fn a_decision_after_the_honest_one_is_a_move_the_ledger_refuses() {
    let mut simulation = simulation();
    slow_the_answer(&mut simulation, "r1:c1");
    simulation
        .run_until(|simulation| status_of(simulation, "r1:c1") == Some(Status::Completed))
        .expect("runs");
    simulation
        .play(resolve("r1:c1", Status::Failed, Some(Status::Indeterminate)))
        .expect("a stale decision is a move: the card is spent and the ledger answers 409");
    let said = said_by(&simulation, "op-crew");
    assert_eq!(
        said.last().map(String::as_str),
        Some(
            "409 conflict: op-crew expected r1:c1 to be indeterminate, but op-honest settled it completed first; op-crew's failed was refused"
        )
    );
    assert_eq!(status_of(&simulation, "r1:c1"), Some(Status::Completed));
    simulation.run().expect("runs");
    let verdict = simulation.verdict().expect("judged");
    assert_eq!(verdict.outcome, Outcome::PaidOnce, "{}", verdict.summary);
}

#[test]
fn a_call_still_in_flight_is_not_in_the_queue() {
    let mut simulation = simulation();
    simulation
        .run_until(|simulation| status_of(simulation, "r1:c1") == Some(Status::Started))
        .expect("runs");
    let refused = simulation
        .play(resolve("r1:c1", Status::Failed, Some(Status::Started)))
        .expect_err("the queue shows indeterminate calls only");
    assert!(
        matches!(refused, PlayError::QueueExpectsIndeterminate { .. }),
        "{refused}"
    );
    assert!(
        refused.to_string().contains("expect indeterminate, not started"),
        "{refused}"
    );
    let refused = simulation
        .play(resolve("r1:c1", Status::Failed, Some(Status::Indeterminate)))
        .expect_err("a call in flight is not listed");
    assert_eq!(
        refused.to_string(),
        "r1:c1 is started, not in the queue you and op-honest work: the console lists a call only once a run is paused on it (indeterminate)"
    );
    assert_eq!(
        status_of(&simulation, "r1:c1"),
        Some(Status::Started),
        "nothing changed"
    );
}

#[test]
fn a_level_and_a_tape_name_the_honest_operator_properly() {
    let path = levels_folder().join(LEVEL);
    let text = std::fs::read_to_string(&path).expect("level 35 reads");
    let broken = text.replace("checks_after_ms: 150", "checks_after_ms: 0");
    assert_ne!(broken, text, "the level sets checks_after_ms: 150");
    let error = level::parse_level(Path::new(LEVEL), &broken).expect_err("no delay is refused");
    assert!(error.to_string().contains("checks_after_ms must be 1 to"), "{error}");
    let tape = r#"(
        version: 2,
        level: "35-first-decision.level.ron",
        seed: 1,
        title: "the player poses as the honest operator",
        actions: [(at_phase: 9, play: OperatorResolve(key: "r1:c1", status: failed, reason: "r", operator: "op-honest", expected_status: Some(indeterminate)))],
        expect: (verdict: paid_once, stopped_by: []),
    )"#;
    let tape = level::parse_tape(Path::new("posing.tape.ron"), tape).expect("the tape parses");
    let error = level::validate_tape(Path::new("posing.tape.ron"), "operator", &tape, &the_level())
        .expect_err("the player cannot act as the scripted operator");
    assert!(
        error
            .to_string()
            .contains("op-honest is the level's scripted honest operator"),
        "{error}"
    );
}

fn debrief_of_tape(name: &str) -> twice_world::debrief::Debrief {
    let loaded = level::load_tape(&levels_folder().join(name)).expect("the tape loads");
    let mut simulation = replay::simulation_of(&loaded, LedgerStore::Sqlite).expect("the tape builds");
    simulation.run().expect("runs");
    let verdict = simulation.verdict().expect("judged");
    twice_world::debrief::of(&simulation, &verdict)
}

#[test]
fn the_debriefs_say_whose_decision_landed_and_why_the_late_one_missed() {
    use twice_world::debrief::{Decider, Standing};
    let won = debrief_of_tape("35-first-decision.win.tape.ron");
    assert_eq!(won.standing, Standing::HeistWorked);
    assert!(
        matches!(&won.decided_by, Decider::Operator { operator, key, status: Status::Failed } if operator == "op-crew" && key == "r1:c1"),
        "{:?}",
        won.decided_by
    );
    assert_eq!(won.rule, twice_world::rulebook::OPERATOR_RULE);
    assert!(
        won.follows_lesson,
        "the race decided the win: the level's story is told"
    );
    let lost = debrief_of_tape("35-first-decision.too-late.tape.ron");
    assert_ne!(lost.standing, Standing::HeistWorked);
    // What stopped it is the 409 (the late decision's moment), not the guards that held: the
    // rule quoted is the compare-and-set the run shows, not the write retry rule.
    assert!(
        matches!(
            &lost.decided_by,
            Decider::Moment {
                card: twice_world::level::CardKind::OperatorResolve,
                at_phase: 35
            }
        ),
        "{:?}",
        lost.decided_by
    );
    assert!(
        lost.rule.starts_with("Every decision is compare-and-set"),
        "{}",
        lost.rule
    );
    assert!(!lost.rule.contains("Retry reads, not writes"), "{}", lost.rule);
    assert_eq!(lost.story, "", "a loss never tells the win's story");
    let told = serde_json::to_string(&lost).expect("a debrief serializes");
    assert!(
        told.contains("The decision on r1:c1 lost its compare-and-set: op-crew expected r1:c1 to be indeterminate, but op-honest settled it completed first; op-crew's failed was refused."),
        "{told}"
    );
}
