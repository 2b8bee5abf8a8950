//! The tool contract check, played (level 22, The Fine Print): a tool may declare the
//! framework's retry policy, and the runtime obeys it — a write given three attempts is retried
//! and, against a billing that ignores keys, pays twice. With guard `tool_contract` on the run
//! whose tool fails `assert_tool_contract` never starts: it is refused before anything is sent,
//! with the check's own words on the timeline. The player declares the tool with
//! `Play::DeclareTool`, only before Penny's first call and only in a level that allows it, and
//! the move is recorded on tapes and replayed.

use std::path::PathBuf;
use twice_world::cards::{DeclareTool, LoseResponse};

use twice_world::checker::Outcome;
use twice_world::level::{self, CardKind, Level, Play, Tape, TimedAction};
use twice_world::replay::{replay_tape, simulation_of};
use twice_world::runtime::guards::Guard;
use twice_world::runtime::tool::SideEffect;
use twice_world::runtime::worker::Held;
use twice_world::simulator::{PlayError, Simulation, SimulationBuilder};

const LEVEL: &str = "22-fine-print.level.ron";

fn levels_folder() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../levels")
}

fn level(file: &str) -> Level {
    level::load_level(&levels_folder().join(file))
        .expect("the level loads")
        .level
}

fn fine_print() -> Level {
    level(LEVEL)
}

fn declare(side_effect: SideEffect, attempts: u32, takes_key: bool) -> Play {
    Play::DeclareTool(DeclareTool {
        tool: "issue_credit".into(),
        side_effect,
        attempts,
        takes_key,
    })
}

/// Steps until billing's answer is on the wire.
fn step_to_the_answer(simulation: &mut Simulation) {
    simulation
        .run_until(|simulation| !simulation.wire_targets(CardKind::LoseResponse).is_empty())
        .expect("steps");
    assert!(
        !simulation.wire_targets(CardKind::LoseResponse).is_empty(),
        "billing's answer never travelled"
    );
}

/// Declares issue_credit at phase 0, loses billing's first answer, runs to the end.
fn declare_and_lose_the_answer(level: Level, declaration: Play) -> Simulation {
    let mut simulation = SimulationBuilder::new(level, 1).build().expect("builds");
    simulation
        .play(declaration)
        .expect("declared before Penny's first call");
    step_to_the_answer(&mut simulation);
    simulation
        .play(Play::LoseResponse(LoseResponse { key: None }))
        .expect("on the wire");
    simulation.run().expect("runs");
    simulation
}

#[test]
fn a_write_declared_with_retries_is_retried_and_pays_twice_with_the_check_off() {
    let level = fine_print();
    assert!(
        !level.guards.is_on(Guard::ToolContract),
        "the level switches the check off"
    );
    assert!(
        level.guards.is_on(Guard::WriteRetryRule),
        "and leaves the write retry rule on"
    );
    let simulation = declare_and_lose_the_answer(level.clone(), declare(SideEffect::External, 3, true));
    let verdict = simulation.verdict().expect("a verdict");
    assert_eq!(verdict.outcome, Outcome::PaidTwice, "{}", verdict.summary);
    assert!(verdict.goal_reached);
    assert_eq!(simulation.billing().entries.len(), 2, "two credits, one per attempt");
    assert!(verdict.stopped_by.is_empty(), "{:?}", verdict.stopped_by);

    // The same answer lost with the tool declared honestly: one attempt, the timeout an unknown.
    let honest = declare_and_lose_the_answer(level, declare(SideEffect::External, 1, true));
    let verdict = honest.verdict().expect("a verdict");
    assert_eq!(verdict.outcome, Outcome::PaidOnce, "{}", verdict.summary);
    assert_eq!(verdict.stopped_by, vec![Guard::WriteRetryRule]);
    assert_eq!(honest.billing().entries.len(), 1);
}

#[test]
fn a_level_tool_declared_with_retries_is_obeyed_over_the_write_retry_rule() {
    // No move: the level file itself gives the write three attempts.
    let mut level = fine_print();
    level.tools[0].attempts = Some(3);
    let mut simulation = SimulationBuilder::new(level, 1).build().expect("builds");
    step_to_the_answer(&mut simulation);
    simulation
        .play(Play::LoseResponse(LoseResponse { key: None }))
        .expect("on the wire");
    simulation.run().expect("runs");
    assert_eq!(simulation.verdict().expect("a verdict").outcome, Outcome::PaidTwice);
}

#[test]
fn a_misdeclared_write_is_refused_at_start_with_the_check_on_and_nothing_is_sent() {
    let mut level = fine_print();
    level.tools[0].attempts = Some(3);
    let guards = level.guards.with(Guard::ToolContract, true);
    let mut simulation = SimulationBuilder::new(level, 1).guards(guards).build().expect("builds");
    simulation.run().expect("runs");
    assert_eq!(simulation.messages().count(), 0);
    assert!(simulation.billing().entries.is_empty(), "nothing reached billing");
    assert!(
        simulation.ledger_records().expect("records").is_empty(),
        "nothing was reserved"
    );
    let refusal = simulation
        .timeline()
        .iter()
        .find(|entry| entry.guard == Some(Guard::ToolContract))
        .expect("the refusal is on the timeline");
    // The check's own words (its Display), naming the tool and the violation.
    assert!(
        refusal.text.contains("tool contract check failed")
            && refusal.text.contains("issue_credit")
            && refusal.text.contains("declared external but is allowed 3 attempts"),
        "{}",
        refusal.text
    );
    assert!(
        simulation
            .guard_notes()
            .iter()
            .any(|note| matches!(&note.held, Held::ContractRefused { tool, .. } if tool.as_str() == "issue_credit"))
    );
    let verdict = simulation.verdict().expect("a verdict");
    assert_eq!(verdict.stopped_by, vec![Guard::ToolContract]);
    assert_eq!(
        verdict.outcome,
        Outcome::UnknownFlagged,
        "the refused run waits for a person"
    );
    assert_eq!(verdict.waiting, vec!["r1".to_owned()]);
    // The debrief says what the check said.
    let debrief = twice_world::debrief::of(&simulation, &verdict);
    assert!(
        debrief
            .diagnosis
            .iter()
            .any(|sentence| sentence.contains("tool contract check failed") && sentence.contains("3 attempts")),
        "{:?}",
        debrief.diagnosis
    );
    // The rulebook lights the start row the check provides.
    let book = twice_world::rulebook::at_phase(&simulation, simulation.phase());
    let refused = book
        .iter()
        .find(|view| view.row.table == twice_world::rulebook::Table::Start && view.row.then.starts_with("refuse"))
        .expect("the refusal row");
    assert_eq!(refused.fired, 1);
}

#[test]
fn a_write_without_the_key_is_refused_too_and_an_honest_one_runs_with_the_check_on() {
    let level = fine_print();
    let guards = level.guards.with(Guard::ToolContract, true);
    let build = || {
        SimulationBuilder::new(level.clone(), 1)
            .guards(guards)
            .build()
            .expect("builds")
    };
    let mut keyless = build();
    keyless.play(declare(SideEffect::External, 1, false)).expect("declared");
    keyless.run().expect("runs");
    assert_eq!(
        keyless.verdict().expect("a verdict").stopped_by,
        vec![Guard::ToolContract]
    );
    assert!(
        keyless
            .timeline()
            .iter()
            .any(|entry| entry.text.contains("takes no idempotency key")),
        "the check says why"
    );
    assert!(keyless.billing().entries.is_empty());

    // Declared honestly, the run starts: one attempt, and a lost answer is an unknown.
    let mut honest = build();
    honest.play(declare(SideEffect::External, 1, true)).expect("declared");
    step_to_the_answer(&mut honest);
    honest
        .play(Play::LoseResponse(LoseResponse { key: None }))
        .expect("on the wire");
    honest.run().expect("runs");
    let verdict = honest.verdict().expect("a verdict");
    assert_eq!(verdict.outcome, Outcome::PaidOnce);
    assert_eq!(verdict.stopped_by, vec![Guard::WriteRetryRule]);
    let record = &honest.ledger_records().expect("records")[0];
    assert_eq!(record.attempts, 1);
    assert_eq!(record.status.name(), "indeterminate");
}

#[test]
fn a_run_refused_by_the_check_starts_once_the_tool_is_declared_honestly() {
    let mut level = fine_print();
    level.tools[0].attempts = Some(3);
    let guards = level.guards.with(Guard::ToolContract, true);
    let mut simulation = SimulationBuilder::new(level, 1).guards(guards).build().expect("builds");
    simulation.run().expect("runs");
    assert!(simulation.billing().entries.is_empty(), "refused");
    // Nothing was called, so the declaration is still open; the run starts again under it.
    simulation
        .play(declare(SideEffect::External, 1, true))
        .expect("still open");
    simulation.run().expect("runs");
    assert_eq!(simulation.billing().entries.len(), 1, "the honest run paid once");
    assert!(
        simulation
            .timeline()
            .iter()
            .any(|entry| entry.text.contains("starts the run under the new declaration")),
    );
}

#[test]
fn declaring_is_refused_once_the_first_call_has_left_and_the_card_stays_in_hand() {
    let mut simulation = SimulationBuilder::new(fine_print(), 1).build().expect("builds");
    simulation
        .run_until(|simulation| !simulation.wire_targets(CardKind::LoseRequest).is_empty())
        .expect("steps");
    let error = simulation
        .play(declare(SideEffect::External, 3, true))
        .expect_err("too late");
    assert!(matches!(error, PlayError::TooLateToDeclare { .. }), "{error}");
    let text = error.to_string();
    assert!(
        text.contains("too late to declare issue_credit") && text.contains("r1:c1"),
        "{text}"
    );
    assert_eq!(
        simulation.hand()[&CardKind::DeclareTool],
        1,
        "a refused move uses no card"
    );
    assert!(simulation.played().is_empty());
    assert!(simulation.declaring_is_open().is_err());
    // A tape's declaration that comes too late fizzles on the timeline; the run goes on as declared.
    let late = SimulationBuilder::new(fine_print(), 1)
        .actions(vec![TimedAction {
            at_phase: simulation.phase(),
            play: declare(SideEffect::External, 3, true),
            fizzles: false,
        }])
        .build()
        .and_then(|mut late| late.run().map(|_| late))
        .expect("runs");
    assert!(late.played().is_empty());
    assert!(
        late.timeline()
            .iter()
            .any(|entry| entry.kind == "fizzled" && entry.text.contains("too late to declare"))
    );
}

#[test]
fn declaring_is_refused_in_a_level_that_does_not_allow_it_and_an_unknown_tool_is_named() {
    let mut naive = SimulationBuilder::new(level("01-naive-retry.level.ron"), 1)
        .build()
        .expect("builds");
    let error = naive
        .play(declare(SideEffect::External, 1, true))
        .expect_err("level 01 lets no tool be declared");
    assert!(matches!(error, PlayError::NotDeclarable { .. }), "{error}");
    assert!(
        error
            .to_string()
            .contains("issue_credit cannot be declared in this level"),
        "{error}"
    );

    let mut simulation = SimulationBuilder::new(fine_print(), 1).build().expect("builds");
    let error = simulation
        .play(Play::DeclareTool(DeclareTool {
            tool: "refund_everything".into(),
            side_effect: SideEffect::Read,
            attempts: 3,
            takes_key: true,
        }))
        .expect_err("no such tool");
    let text = error.to_string();
    assert!(
        text.contains("refund_everything") && text.contains("issue_credit"),
        "the error names the unknown tool and the level's tools: {text}"
    );
    let error = simulation
        .play(declare(SideEffect::External, 0, true))
        .expect_err("zero attempts");
    assert!(matches!(error, PlayError::AttemptsOutOfRange(0)), "{error}");
    assert!(simulation.played().is_empty());
}

#[test]
fn a_tape_with_a_declaration_is_refused_for_a_level_that_does_not_allow_it() {
    let naive = level("01-naive-retry.level.ron");
    let tape = Tape {
        version: level::TAPE_VERSION,
        level: "01-naive-retry.level.ron".into(),
        seed: 1,
        title: String::new(),
        guards: None,
        actions: vec![TimedAction {
            at_phase: 0,
            play: declare(SideEffect::External, 1, true),
            fizzles: false,
        }],
        expect: level::Expectation {
            verdict: Outcome::PaidOnce,
            stopped_by: Vec::new(),
            paid_cents: Default::default(),
            keys: Default::default(),
            violations: Vec::new(),
        },
    };
    let text = level::tape_to_ron(&tape);
    let path = PathBuf::from("declared.tape.ron");
    let error = level::validate_tape(&path, &text, &tape, &naive).expect_err("not declarable there");
    assert!(
        error.to_string().contains("card DeclareTool is not in level"),
        "{error}"
    );
    // In a level that deals the card, a tool it does not name is refused by name.
    let mut other = tape.clone();
    other.level = LEVEL.into();
    other.actions[0].play = Play::DeclareTool(DeclareTool {
        tool: "refund_all".into(),
        side_effect: SideEffect::Read,
        attempts: 3,
        takes_key: true,
    });
    let text = level::tape_to_ron(&other);
    let error = level::validate_tape(&path, &text, &other, &fine_print()).expect_err("not declarable");
    assert!(
        error
            .to_string()
            .contains("tool `refund_all` cannot be declared in level `fine-print`"),
        "{error}"
    );
    other.actions[0].play = declare(SideEffect::External, 4, true);
    let text = level::tape_to_ron(&other);
    let error = level::validate_tape(&path, &text, &other, &fine_print()).expect_err("four attempts");
    assert!(error.to_string().contains("1 to 3 attempts, not 4"), "{error}");
}

#[test]
fn a_played_declaration_is_recorded_on_a_tape_and_replays_to_the_same_verdict_and_history() {
    let played = declare_and_lose_the_answer(fine_print(), declare(SideEffect::External, 3, true));
    assert!(matches!(played.played()[0].play, Play::DeclareTool(DeclareTool { .. })));
    let verdict = played.verdict().expect("a verdict");
    let tape = Tape {
        version: level::TAPE_VERSION,
        level: LEVEL.into(),
        seed: played.seed(),
        title: "declared and replayed".into(),
        guards: None,
        actions: played.played().to_vec(),
        expect: level::Expectation::of(&verdict),
    };
    let text = level::tape_to_ron(&tape);
    assert!(text.contains("DeclareTool"), "{text}");
    let folder = tempfile::tempdir().expect("a folder");
    std::fs::copy(levels_folder().join(LEVEL), folder.path().join(LEVEL)).expect("the level copied");
    let path = folder.path().join("22-fine-print.declared.tape.ron");
    std::fs::write(&path, &text).expect("the tape written");
    let loaded = level::load_tape(&path).expect("the tape loads");
    assert_eq!(loaded.tape.actions, played.played());
    let replayed = replay_tape(&loaded).expect("replays");
    assert!(replayed.as_expected, "{text}");
    assert_eq!(replayed.verdict.outcome, Outcome::PaidTwice);
    let mut again = simulation_of(&loaded, twice_world::ledger::LedgerStore::Sqlite).expect("builds");
    again.run().expect("runs");
    assert_eq!(
        again.history_text().expect("history"),
        played.history_text().expect("history"),
        "the replay is the same run, byte for byte"
    );
}

#[test]
fn the_shipped_tapes_show_the_win_the_refusal_and_the_honest_declaration() {
    let replay = |name: &str| {
        let loaded = level::load_tape(&levels_folder().join(name)).expect("the tape loads");
        let replayed = replay_tape(&loaded).expect("replays");
        assert!(replayed.as_expected, "{name}");
        (loaded, replayed.verdict)
    };
    let (_, win) = replay("22-fine-print.win.tape.ron");
    assert_eq!(win.outcome, Outcome::PaidTwice);
    let (refused_tape, refused) = replay("22-fine-print.check-on.tape.ron");
    assert!(
        refused_tape
            .tape
            .guards
            .is_some_and(|guards| guards.is_on(Guard::ToolContract))
    );
    assert_eq!(refused.stopped_by.first(), Some(&Guard::ToolContract));
    let (honest_tape, honest) = replay("22-fine-print.honest.tape.ron");
    assert!(
        honest_tape
            .tape
            .guards
            .is_some_and(|guards| guards.is_on(Guard::ToolContract))
    );
    assert!(honest_tape.tape.actions.iter().any(|action| matches!(
        action.play,
        Play::DeclareTool(DeclareTool {
            attempts: 1,
            takes_key: true,
            ..
        })
    )));
    assert_eq!(honest.outcome, Outcome::PaidOnce);
    assert_eq!(honest.stopped_by, vec![Guard::WriteRetryRule]);
}

#[test]
fn the_declaration_panel_shows_the_checks_verdict_on_every_draft() {
    let mut simulation = SimulationBuilder::new(fine_print(), 1).build().expect("builds");
    let declaration = twice_world::hand::declaration(&simulation).expect("the level lets a tool be declared");
    assert!(!declaration.check_on);
    assert_eq!(declaration.closed, None);
    assert_eq!(declaration.left, 1);
    let tool = &declaration.tools[0];
    assert_eq!(tool.tool.name, "issue_credit");
    assert_eq!(tool.violation, None, "declared by its side effect, it passes");
    assert_eq!(tool.drafts.len(), SideEffect::ALL.len() * 3 * 2);
    for draft in &tool.drafts {
        let fails = draft.side_effect.changes_something() && (draft.attempts > 1 || !draft.takes_key);
        assert_eq!(draft.violation.is_some(), fails, "{draft:?}");
    }
    simulation
        .play(declare(SideEffect::External, 3, true))
        .expect("declared");
    let declaration = twice_world::hand::declaration(&simulation).expect("still there");
    assert!(
        declaration.tools[0]
            .violation
            .as_deref()
            .is_some_and(|violation| violation.contains("3 attempts"))
    );
    assert_eq!(declaration.left, 0);
    assert!(
        twice_world::hand::declaration(
            &SimulationBuilder::new(level("01-naive-retry.level.ron"), 1)
                .build()
                .expect("builds")
        )
        .is_none()
    );
}

/// A draft that passes the seed's contract check is still refused at start when the ambiguity
/// policy is on and the tool has no way to settle an unknown outcome: the panel says so, the
/// same check the worker makes, and the run is refused as the panel said.
#[test]
fn the_declaration_panel_names_the_ambiguity_policy_when_it_would_refuse_a_draft() {
    let mut level = fine_print();
    for tool in &mut level.tools {
        tool.reconcile = false;
    }
    let guards = SimulationBuilder::new(level.clone(), 1)
        .build()
        .expect("builds")
        .guards()
        .with(Guard::AmbiguityPolicy, true)
        .with(Guard::PauseOnIndeterminate, false)
        .with(Guard::ToolContract, true);
    let mut simulation = SimulationBuilder::new(level.clone(), 1)
        .guards(guards)
        .build()
        .expect("builds");
    let declaration = twice_world::hand::declaration(&simulation).expect("declarable");
    let tool = &declaration.tools[0];
    let honest = tool
        .drafts
        .iter()
        .find(|draft| draft.side_effect == SideEffect::External && draft.attempts == 1 && draft.takes_key)
        .expect("the honest draft");
    assert_eq!(honest.violation, None, "it passes the seed's contract check");
    assert!(
        honest
            .policy
            .as_deref()
            .is_some_and(|policy| policy.contains("no ambiguity policy")),
        "{honest:?}"
    );
    let read = tool
        .drafts
        .iter()
        .find(|draft| draft.side_effect == SideEffect::Read)
        .expect("a read draft");
    assert_eq!(read.policy, None, "a read needs no ambiguity policy");
    // Declared so, the run is refused before anything is sent, by the policy, as the panel said.
    simulation
        .play(declare(SideEffect::External, 1, true))
        .expect("declared");
    while simulation.step().expect("steps") {}
    assert!(
        simulation
            .guard_notes()
            .iter()
            .any(|note| note.guard == Guard::AmbiguityPolicy),
        "the ambiguity policy refused the run"
    );
    // The same level with the policy off: no draft names it.
    let off = guards.with(Guard::AmbiguityPolicy, false);
    let plain = SimulationBuilder::new(level, 1).guards(off).build().expect("builds");
    let declaration = twice_world::hand::declaration(&plain).expect("declarable");
    assert!(declaration.tools[0].drafts.iter().all(|draft| draft.policy.is_none()));
}

#[test]
fn the_contract_check_is_inert_where_every_tool_passes_it_so_the_defender_may_skip_it() {
    let vault = level("19-vault.level.ron");
    let fine_print = fine_print();
    assert!(!twice_world::defend::guards_that_matter(&vault).contains(&Guard::ToolContract));
    assert!(twice_world::defend::guards_that_matter(&fine_print).contains(&Guard::ToolContract));
    // Inert: the vault's heists give the same history, byte for byte, with the check on or off.
    let loaded = level::load_tape(&levels_folder().join("19-vault.whole-hand.tape.ron")).expect("the tape loads");
    let history = |on: bool| {
        let mut simulation = SimulationBuilder::new(vault.clone(), loaded.tape.seed)
            .guards(vault.guards.with(Guard::ToolContract, on))
            .actions(loaded.tape.actions.clone())
            .build()
            .expect("builds");
        simulation.run().expect("runs");
        simulation.history_text().expect("history")
    };
    assert_eq!(history(true), history(false));
}

#[test]
fn a_level_file_with_a_bad_retry_policy_or_declaration_is_refused_and_named() {
    let path = levels_folder().join(LEVEL);
    let text = std::fs::read_to_string(&path).expect("the level");
    let with = |from: &str, to: &str| {
        assert!(text.contains(from), "{from}");
        text.replacen(from, to, 1)
    };
    let zero = with("reconcile: true),", "reconcile: true, attempts: 0),");
    let error = level::parse_level(&path, &zero).expect_err("zero attempts");
    assert!(
        error.to_string().contains("declares 0 attempts; a tool gets 1 to 3"),
        "{error}"
    );
    let unknown = with(
        "declarable_tools: [\"issue_credit\"]",
        "declarable_tools: [\"refund_all\"]",
    );
    let error = level::parse_level(&path, &unknown).expect_err("an unknown tool");
    assert!(error.to_string().contains("`refund_all`"), "{error}");
    let without_card = with("(card: DeclareTool, count: 1), ", "");
    let error = level::parse_level(&path, &without_card).expect_err("declarable but not dealt");
    assert!(error.to_string().contains("DeclareTool card"), "{error}");
    let three = with("reconcile: true),", "reconcile: true, attempts: 3),");
    let parsed = level::parse_level(&path, &three).expect("three attempts is a policy a tool may declare");
    assert_eq!(parsed.tools[0].attempts, Some(3));
}
