//! The registry's promises: every card answers for itself, and a tape spells every card as it
//! always has (both formats), in RON and in the browser's JSON.

use std::collections::BTreeSet;
use std::path::Path;

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use super::*;
use crate::level::{self, Tape};

/// A version 2 tape holding one move of every card, as the game writes it.
const EVERY_CARD: &str = r#"(
    version: 2,
    level: "x.level.ron",
    seed: 1,
    title: "",
    guards: None,
    actions: [
        (at_phase: 1, play: LoseRequest(key: Some("r1:c1"))),
        (at_phase: 1, play: LoseResponse()),
        (at_phase: 2, play: SlowResponse(key: Some("r1:c2"))),
        (at_phase: 3, play: CrashWorker(worker: Some(1), in_phase: Some("save checkpoint"))),
        (at_phase: 3, play: CrashWorker(worker: None)),
        (at_phase: 4, play: DuplicateWorker(run: "r1")),
        (at_phase: 5, play: ModelCallsAgain(run: "r1", reword: true)),
        (at_phase: 6, play: ToolFailsBeforeSending(run: "r2")),
        (at_phase: 7, play: OperatorResolve(key: "r1:c1", status: failed, reason: "checked", operator: "op-crew", expected_status: Some(indeterminate))),
        (at_phase: 8, play: OperatorCompensate(key: "r1:c1", reason: "double", operator: "op-other")),
        (at_phase: 9, play: DeclareTool(tool: "issue_credit", side_effect: external, attempts: 3, takes_key: false)),
        (at_phase: 10, play: PauseWorker(worker: Some(1), ms: 500, in_phase: Some("wait for answer"))),
        (at_phase: 11, play: DelayApply(key: Some("r1:c1"), ms: 1000)),
    ],
    expect: (
        verdict: paid_twice,
        stopped_by: [],
    ),
)"#;

fn parse(text: &str) -> Result<Tape, String> {
    level::parse_tape(Path::new("x.tape.ron"), text).map_err(|error| error.to_string())
}

#[test]
fn a_tape_spells_every_card_as_it_always_has_and_writes_it_back_the_same() {
    let tape = parse(EVERY_CARD).expect("every card reads");
    let cards: BTreeSet<CardKind> = tape.actions.iter().map(|action| action.play.card()).collect();
    assert_eq!(
        cards.len(),
        CardKind::ALL.len(),
        "the tape holds one move of every card"
    );
    assert_eq!(
        tape.actions[0].play,
        Play::LoseRequest(LoseRequest {
            key: Some("r1:c1".into())
        })
    );
    assert_eq!(
        tape.actions[3].play,
        Play::CrashWorker(CrashWorker {
            worker: Some(1),
            in_phase: Some(crate::runtime::worker::Phase::SaveCheckpoint)
        })
    );
    let written = level::tape_to_ron(&tape);
    // Written as a tape has always been: a key left to be chosen is left out, a worker not.
    for line in [
        "(at_phase: 1, play: LoseRequest(key: Some(\"r1:c1\"))),",
        "(at_phase: 1, play: LoseResponse()),",
        "(at_phase: 3, play: CrashWorker(worker: Some(1), in_phase: Some(\"save checkpoint\"))),",
        "(at_phase: 3, play: CrashWorker(worker: None)),",
        "(at_phase: 5, play: ModelCallsAgain(run: \"r1\", reword: true)),",
        "(at_phase: 9, play: DeclareTool(tool: \"issue_credit\", side_effect: external, attempts: 3, takes_key: false)),",
        "(at_phase: 10, play: PauseWorker(worker: Some(1), ms: 500, in_phase: Some(\"wait for answer\"))),",
        "(at_phase: 11, play: DelayApply(key: Some(\"r1:c1\"), ms: 1000)),",
    ] {
        assert!(written.contains(line), "{line} not in\n{written}");
    }
    assert_eq!(parse(&written).expect("reads back"), tape);
}

#[test]
fn the_browser_sends_and_gets_every_move_as_json_of_the_same_shape() {
    let tape = parse(EVERY_CARD).expect("every card reads");
    for action in &tape.actions {
        let json = serde_json::to_string(&action.play).expect("writes");
        let name = action.play.card().name();
        assert!(json.starts_with(&format!("{{\"{name}\":{{")), "{json}");
        let back: Play = serde_json::from_str(&json).expect("reads back");
        assert_eq!(back, action.play);
    }
    let resolve: Play = serde_json::from_str(
        r#"{"OperatorResolve":{"key":"r1:c1","status":"failed","reason":"checked","expected_status":"indeterminate"}}"#,
    )
    .expect("the console's move reads, its operator by default");
    assert_eq!(resolve.operator(), Some("op-crew"));
}

#[test]
fn a_version_1_tape_reads_its_wire_cards_as_units_and_knows_no_declaration() {
    let v1 = |actions: &str| {
        format!(
            "(level: \"x.level.ron\", seed: 1, actions: [{actions}], expect: (verdict: paid_twice, stopped_by: []))"
        )
    };
    let tape = parse(&v1(
        "(at_phase: 0, play: LoseRequest), (at_phase: 1, play: SlowResponse), (at_phase: 2, play: CrashWorker(worker: Some(2)))",
    ))
    .expect("a version 1 tape reads");
    assert_eq!(tape.version, 1);
    assert_eq!(tape.actions[0].play, Play::LoseRequest(LoseRequest { key: None }));
    assert_eq!(tape.actions[1].play, Play::SlowResponse(SlowResponse { key: None }));
    assert_eq!(
        tape.actions[2].play,
        Play::CrashWorker(CrashWorker {
            worker: Some(2),
            in_phase: None
        })
    );
    let declared = parse(&v1(
        "(at_phase: 0, play: DeclareTool(tool: \"t\", side_effect: read, attempts: 1, takes_key: true))",
    ))
    .expect_err("version 1 had no declarations");
    assert!(declared.contains("variant named `DeclareTool`"), "{declared}");
    for newer in ["PauseWorker(worker: Some(1), ms: 500)", "DelayApply(ms: 500)"] {
        let refused = parse(&v1(&format!("(at_phase: 0, play: {newer})"))).expect_err("version 1 had neither");
        assert!(refused.contains("variant named"), "{refused}");
    }
    let phased = parse(&v1(
        "(at_phase: 0, play: CrashWorker(worker: Some(1), in_phase: \"send\"))",
    ))
    .expect_err("version 1 crashes named no phase");
    assert!(phased.contains("in_phase"), "{phased}");
}

#[test]
fn an_unknown_card_or_field_is_refused_by_name() {
    let with = |play: &str| EVERY_CARD.replace("LoseRequest(key: Some(\"r1:c1\"))", play);
    let unknown = parse(&with("LoseEverything(key: None)")).expect_err("no such card");
    assert!(
        unknown.contains("variant named `LoseEverything`") && unknown.contains("`DeclareTool`"),
        "{unknown}"
    );
    let field = parse(&with("LoseRequest(message: 3)")).expect_err("no such field");
    assert!(field.contains("field named `message` in `LoseRequest`"), "{field}");
    let phase = parse(&with("CrashWorker(worker: Some(1), in_phase: Some(\"nap\"))")).expect_err("no such phase");
    assert!(phase.contains("in_phase"), "{phase}");
}

#[test]
fn every_card_answers_for_itself() {
    let titles: BTreeSet<&str> = CardKind::ALL.iter().map(|card| card.title()).collect();
    let names: BTreeSet<&str> = CardKind::ALL.iter().map(|card| card.name()).collect();
    assert_eq!(titles.len(), CardKind::ALL.len(), "titles are told apart");
    assert_eq!(names.len(), CardKind::ALL.len());
    let level =
        crate::level::load_level(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../../levels/19-vault.level.ron"))
            .expect("the vault loads")
            .level;
    let mut with_declaration = level.clone();
    with_declaration.declarable_tools = vec![level.tools[0].name.to_string()];
    let runs: Vec<String> = level.runs.iter().map(|run| run.id.to_string()).collect();
    for card in CardKind::ALL {
        let space = DealSpace {
            level: &with_declaration,
            runs: &runs,
            workers_max: 4,
        };
        let (dealt, pick) = card.deal(&space, &mut ChaCha8Rng::seed_from_u64(7));
        assert_eq!(dealt.card(), *card, "{card:?} deals itself");
        assert_eq!(
            pick.is_some(),
            card.aims() == Aims::Call,
            "only a call's key is picked when played"
        );
        assert_eq!(
            dealt.with_key("r9:c9").key().is_some(),
            matches!(card.aims(), Aims::Message { .. } | Aims::Call),
            "{card:?} names a key only when it aims at a message or a call"
        );
    }
}
