//! Level 37 ("Undo on Purpose"): compensation is an operator's decision after checking billing.
//! An undo asked before op-honest has looked voids a refund that was right (the runtime can
//! tell that an effect is there, not whether it should stand); an undo of a call whose request
//! never arrived is refused after the runtime looked (nothing moved); an undo asked after
//! op-honest settled the call is a 409. Each is a move made, and each debrief says which.

mod support;

use support::{run_tape, told};
use twice_world::billing::EntryKind;
use twice_world::checker::Outcome;
use twice_world::debrief::{Debrief, Decider, Standing};
use twice_world::level::CardKind;
use twice_world::runtime::rules::Status;
use twice_world::simulator::{Actor, Simulation};

const WIN: &str = "37-undo-on-purpose.win.tape.ron";
const NOTHING_LANDED: &str = "37-undo-on-purpose.nothing-landed.tape.ron";
const AFTER_THE_CHECK: &str = "37-undo-on-purpose.after-the-check.tape.ron";
const TAPES: [&str; 3] = [WIN, NOTHING_LANDED, AFTER_THE_CHECK];

const NOTHING_LANDED_SENTENCE: &str = "You lost r1:c1's request, so billing never saw it. Asked to undo it, the runtime looked under its key first and found no credit; as the request had left, it could not prove none would arrive, so it refused and undid nothing: nothing had moved.";
const TOO_LATE_SENTENCE: &str = "op-honest checked billing and settled r1:c1 completed before your undo reached the ledger: asked on the call as listed (indeterminate), it got a 409 and nothing was undone.";

fn status_of(simulation: &Simulation, key: &str) -> Option<Status> {
    simulation
        .ledger_records()
        .expect("the ledger reads")
        .into_iter()
        .find(|record| record.key.as_str() == key)
        .map(|record| record.status)
}

fn said_by(simulation: &Simulation, operator: &str) -> Vec<String> {
    simulation
        .timeline()
        .iter()
        .filter(|entry| entry.actor == Actor::Operator(operator.into()))
        .map(|entry| entry.text.clone())
        .collect()
}

fn reversals(simulation: &Simulation) -> usize {
    simulation
        .billing()
        .entries
        .iter()
        .filter(|entry| entry.kind == EntryKind::Reversal)
        .count()
}

fn says(told: &Debrief, sentence: &str) -> bool {
    told.diagnosis.iter().any(|said| said == sentence)
}

#[test]
fn an_undo_before_op_honest_checks_voids_a_refund_that_was_right_and_penny_moves_on() {
    let simulation = run_tape(WIN);
    let verdict = simulation.verdict().expect("judged");
    assert_eq!(verdict.outcome, Outcome::NotPaidButOwed);
    assert_eq!(status_of(&simulation, "r1:c1"), Some(Status::Compensated));
    assert_eq!(reversals(&simulation), 1, "the one credit found under r1:c1 was voided");
    // Penny took the undo as a decision: no second refund for Ada.
    assert!(
        !simulation
            .ledger_records()
            .expect("reads")
            .iter()
            .any(|record| record.key.as_str().starts_with("r1:")
                && record.tool.as_str() == "issue_credit"
                && record.key.as_str() != "r1:c1"),
        "Penny issued Ada's refund again after an accepted undo"
    );
    // op-honest looked afterwards and was refused: the undo had landed first.
    assert!(
        said_by(&simulation, "op-honest").iter().any(|text| text.starts_with(
            "409 conflict: op-honest expected r1:c1 to be indeterminate, but op-crew settled it compensated first"
        )),
        "{:?}",
        said_by(&simulation, "op-honest")
    );
    let told = told(&simulation);
    assert_eq!(told.standing, Standing::HeistWorked);
    assert!(told.follows_lesson, "{:?}", told.decided_by);
    // The undo decided, and the rule quoted is the seed's on compensation, not on resolving.
    assert!(
        matches!(&told.decided_by, Decider::Operator { operator, key, status: Status::Compensated } if operator == "op-crew" && key == "r1:c1"),
        "{:?}",
        told.decided_by
    );
    assert_eq!(told.rule, twice_world::rulebook::COMPENSATE_RULE);
    assert!(
        told.story
            .contains("the runtime found the credit under the call's key and voided it")
    );
}

#[test]
fn an_undo_of_a_call_that_never_landed_is_a_move_the_runtime_refuses_and_nothing_moves() {
    let simulation = run_tape(NOTHING_LANDED);
    assert_eq!(simulation.verdict().expect("judged").outcome, Outcome::PaidOnce);
    assert_eq!(reversals(&simulation), 0, "nothing was voided");
    assert_eq!(
        simulation.hand().get(&CardKind::OperatorCompensate),
        Some(&0),
        "the move was made"
    );
    assert!(
        said_by(&simulation, "op-crew")
            .iter()
            .any(|text| text.starts_with("asks to undo r1:c1: refused, nothing undone")),
        "{:?}",
        said_by(&simulation, "op-crew")
    );
    let told = told(&simulation);
    assert_eq!(told.standing, Standing::HeistFailed);
    assert!(says(&told, NOTHING_LANDED_SENTENCE), "{:?}", told.diagnosis);
    assert!(
        matches!(
            told.decided_by,
            Decider::Moment {
                card: CardKind::OperatorCompensate,
                ..
            }
        ),
        "{:?}",
        told.decided_by
    );
}

#[test]
fn an_undo_after_op_honest_settled_the_call_is_a_409_and_nothing_is_undone() {
    let simulation = run_tape(AFTER_THE_CHECK);
    assert_eq!(simulation.verdict().expect("judged").outcome, Outcome::PaidOnce);
    assert_eq!(status_of(&simulation, "r1:c1"), Some(Status::Completed));
    assert_eq!(reversals(&simulation), 0);
    let told = told(&simulation);
    assert!(says(&told, TOO_LATE_SENTENCE), "{:?}", told.diagnosis);
    assert_eq!(told.story, "", "a loss never tells the win's story");
}

#[test]
fn each_loss_sentence_is_told_only_for_its_own_run() {
    for tape in TAPES {
        let told = told(&run_tape(tape));
        assert_eq!(
            says(&told, NOTHING_LANDED_SENTENCE),
            tape == NOTHING_LANDED,
            "{tape}: {:?}",
            told.diagnosis
        );
        assert_eq!(
            says(&told, TOO_LATE_SENTENCE),
            tape == AFTER_THE_CHECK,
            "{tape}: {:?}",
            told.diagnosis
        );
    }
}
