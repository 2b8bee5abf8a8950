//! What the campaign teaches by play, checked in the simulator: a wire card acts only on a
//! message on the wire, a crash names its moment, a loss is explained from the run and never by
//! the win's story, a level waits while an operator's move can still change it, old tapes keep
//! replaying (and upgrade to the same verdict), and a defence is judged by `twice-sim defend`.

use std::path::{Path, PathBuf};
use twice_sim::cards::{CrashWorker, LoseResponse, OperatorResolve};

use twice_sim::checker::Outcome;
use twice_sim::debrief::{self, Standing};
use twice_sim::level::{self, CardKind, Play, TAPE_VERSION, WireRule};
use twice_sim::runtime::rules::Status;
use twice_sim::simulator::{Phase, PlayError, Simulation, SimulationBuilder};

fn levels_folder() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../levels")
}

fn level(file: &str) -> level::Level {
    level::load_level(&levels_folder().join(file))
        .expect("the level loads")
        .level
}

fn tape(file: &str) -> level::LoadedTape {
    level::load_tape(&levels_folder().join(file)).expect("the tape loads")
}

fn run_tape(file: &str) -> Simulation {
    let loaded = tape(file);
    let mut simulation =
        twice_sim::replay::simulation_of(&loaded, twice_sim::ledger::LedgerStore::Memory).expect("builds");
    simulation.run().expect("runs");
    simulation
}

fn step_to(simulation: &mut Simulation, phase: u32) {
    simulation
        .run_until(|simulation| simulation.phase() >= phase)
        .expect("steps");
    assert_eq!(simulation.phase(), phase);
}

#[test]
fn a_wire_card_with_nothing_on_the_wire_is_refused_and_stays_in_the_hand() {
    let mut simulation = SimulationBuilder::new(level("01-naive-retry.level.ron"), 1)
        .build()
        .expect("builds");
    let refused = simulation
        .play(Play::LoseResponse(LoseResponse { key: None }))
        .expect_err("no answer is on the wire at phase 0");
    assert!(matches!(refused, PlayError::NothingOnTheWire { .. }), "{refused}");
    assert!(refused.to_string().contains("no response is on the wire"), "{refused}");
    assert_eq!(
        simulation.hand()[&CardKind::LoseResponse],
        1,
        "a refused card is not spent"
    );
    // Billing applies the credit (Penny's second call, after a balance lookup) in phase 11;
    // its answer is on the wire before phase 12.
    step_to(&mut simulation, 12);
    assert_eq!(simulation.wire_targets(CardKind::LoseResponse).len(), 1);
    simulation
        .play(Play::LoseResponse(LoseResponse { key: None }))
        .expect("the answer is on the wire now");
    assert_eq!(simulation.hand()[&CardKind::LoseResponse], 0);
    // The move as made names the message it hit, so a saved tape says what it meant.
    assert_eq!(
        simulation.played()[0].play,
        Play::LoseResponse(LoseResponse {
            key: Some("r1:c2".into())
        })
    );
    simulation.run().expect("runs");
    assert_eq!(simulation.verdict().expect("a verdict").outcome, Outcome::PaidTwice);
}

#[test]
fn a_crash_aimed_at_another_moment_is_refused_and_a_crash_records_its_moment() {
    let mut simulation = SimulationBuilder::new(level("05-crash-replay.level.ron"), 1)
        .build()
        .expect("builds");
    step_to(&mut simulation, 2);
    let refused = simulation
        .play(Play::CrashWorker(CrashWorker {
            worker: Some(1),
            in_phase: Some(Phase::SaveCheckpoint),
        }))
        .expect_err("w1 is about to send, not to save");
    assert!(refused.to_string().contains("about to send"), "{refused}");
    simulation
        .play(Play::CrashWorker(CrashWorker {
            worker: None,
            in_phase: None,
        }))
        .expect("a crash now");
    assert_eq!(
        simulation.played()[0].play,
        Play::CrashWorker(CrashWorker {
            worker: Some(1),
            in_phase: Some(Phase::Send)
        })
    );
}

#[test]
fn a_loss_is_explained_from_the_run_and_never_by_the_win_story() {
    let lost = run_tape("01-naive-retry.lost-request.tape.ron");
    let verdict = lost.verdict().expect("a verdict");
    let told = debrief::of(&lost, &verdict);
    assert_eq!(told.standing, Standing::HeistFailed);
    assert!(told.story.is_empty(), "a loss shows no story: {}", told.story);
    let lesson = &lost.level().lesson.text;
    assert!(!told.diagnosis.iter().any(|sentence| sentence.contains(lesson.as_str())));
    assert!(
        told.diagnosis[0].contains("exactly what was owed, Ada $25.00 of $25.00 owed"),
        "{:?}",
        told.diagnosis
    );
    assert!(
        told.diagnosis
            .iter()
            .any(|sentence| sentence.contains("never reached billing")),
        "the lost request is named: {:?}",
        told.diagnosis
    );
    assert!(!told.headline.contains("worked"), "{}", told.headline);

    let won = run_tape("01-naive-retry.win.tape.ron");
    let told = debrief::of(&won, &won.verdict().expect("a verdict"));
    assert_eq!(told.standing, Standing::HeistWorked);
    assert_eq!(told.story, debrief::plain(lesson));
    let par = told.par.expect("a win is held to par");
    assert_eq!(par.stars(), 2, "the shipped win is at par: {par:?}");

    // A loss a guard decided names the guard and what it did (run again without it, the same
    // moves pay twice: the counterfactual debrief).
    let held = run_tape("12-stale-twin.version-checked.tape.ron");
    let told = debrief::of(&held, &held.verdict().expect("a verdict"));
    assert!(told.headline.contains("held"), "{}", told.headline);
    assert!(
        told.diagnosis.iter().all(|sentence| !sentence.contains('`')),
        "no backticks on screen: {:?}",
        told.diagnosis
    );
}

#[test]
fn an_unbeatable_level_is_not_finished_by_spending_the_hand_and_the_debrief_says_defend_it() {
    let spent = run_tape("02-one-attempt.whole-hand.tape.ron");
    let verdict = spent.verdict().expect("a verdict");
    let told = debrief::of(&spent, &verdict);
    assert_eq!(told.standing, Standing::HeldAgainstTheWholeHand);
    assert!(
        !told.standing.finishes_level(),
        "spending the hand is no choice that can fail"
    );
    assert_eq!(
        told.diagnosis.last().map(String::as_str),
        Some(
            "Spending the whole hand does not finish this level: defend it with at most 2 guards that stop every heist: a defence that holds, with no heist the explorer finds getting through, finishes it."
        ),
        "{:?}",
        told.diagnosis
    );
    let partly = run_tape("02-one-attempt.lost-answer.tape.ron");
    let told = debrief::of(&partly, &partly.verdict().expect("a verdict"));
    assert_eq!(told.standing, Standing::HeldWithCardsLeft { cards_left: 1 });
    assert!(!told.standing.finishes_level());
    assert!(
        told.diagnosis.last().is_some_and(|sentence| sentence
            .starts_with("No play finishes this level, not even with the card left unplayed: defend it")),
        "{:?}",
        told.diagnosis
    );
    // The run is over: the card left is told as unplayed, never as one the player still holds.
    assert_eq!(
        told.headline,
        "The runtime held. 1 card went unplayed: the run is over, so it can no longer be played."
    );
    // Several cards left: the same sentence in the plural, grammatical.
    let many = run_tape("19-vault.refused-twin.tape.ron");
    let told = debrief::of(&many, &many.verdict().expect("a verdict"));
    let Standing::HeldWithCardsLeft { cards_left } = told.standing else {
        panic!("19's refused twin holds with cards left: {:?}", told.standing);
    };
    assert!(cards_left > 1, "{cards_left}");
    assert_eq!(
        told.headline,
        format!(
            "The runtime held. {cards_left} cards went unplayed: the run is over, so they can no longer be played."
        )
    );
    assert!(
        told.diagnosis.last().is_some_and(|sentence| sentence
            .starts_with("No play finishes this level, not even with the cards left unplayed: defend it")),
        "{:?}",
        told.diagnosis
    );
    // A win still finishes its level.
    let won = run_tape("01-naive-retry.win.tape.ron");
    let told = debrief::of(&won, &won.verdict().expect("a verdict"));
    assert!(told.standing.finishes_level());
}

#[test]
fn a_run_parked_for_an_operator_is_not_the_end_while_the_player_holds_an_operator_card() {
    let mut simulation = SimulationBuilder::new(level("09-settle-it-yourself.level.ron"), 1)
        .build()
        .expect("builds");
    step_to(&mut simulation, 5);
    simulation
        .play(Play::LoseResponse(LoseResponse { key: None }))
        .expect("the answer is on the wire");
    simulation.run().expect("runs");
    assert!(simulation.is_over(), "the run is parked: nothing is scheduled");
    assert_eq!(
        simulation.moves_that_still_matter().expect("reads"),
        [CardKind::OperatorResolve]
    );
    assert!(
        !simulation.is_concluded().expect("reads"),
        "the level waits for the operator"
    );
    simulation
        .play(Play::OperatorResolve(OperatorResolve {
            key: "r1:c1".into(),
            status: Status::Failed,
            reason: "no answer from billing".into(),
            operator: "op-crew".into(),
            expected_status: Some(Status::Indeterminate),
        }))
        .expect("the operator decides");
    simulation.run().expect("runs");
    assert!(
        simulation.is_concluded().expect("reads"),
        "no card left can change anything"
    );
    assert_eq!(simulation.verdict().expect("a verdict").outcome, Outcome::PaidTwice);
}

#[test]
fn a_lost_operator_race_is_a_move_and_its_409_names_the_winner() {
    let race = run_tape("17-two-operators.race.tape.ron");
    assert_eq!(race.played().len(), 3, "both decisions are moves");
    let refused = race
        .timeline()
        .iter()
        .find(|entry| entry.text.starts_with("409"))
        .expect("the loser sees 409");
    assert!(
        refused.text.contains("op-crew settled it failed first"),
        "{}",
        refused.text
    );
    let record = race
        .ledger()
        .record(&twice_sim::runtime::key::IdempotencyKey::parse("r1:c1").expect("a key"))
        .expect("reads")
        .expect("a record");
    assert_eq!(record.status, Status::Failed, "the winner's decision stands");
}

/// A version 1 tape of level 01: the wire card armed at phase 6 (after the balance lookup's
/// answer arrived) for the next answer, the credit's.
const VERSION_1_TAPE: &str = r#"// The heist, as version 1 recorded it.
(
    level: "01-naive-retry.level.ron",
    seed: 1,
    title: "Lose the answer, not the money",
    actions: [
        (at_phase: 6, play: LoseResponse),
    ],
    expect: (verdict: paid_twice, stopped_by: []),
)"#;

#[test]
fn a_version_1_tape_replays_by_its_own_rule_and_upgrades_to_the_same_verdict() {
    let folder = tempfile::tempdir().expect("a folder");
    std::fs::copy(
        levels_folder().join("01-naive-retry.level.ron"),
        folder.path().join("01-naive-retry.level.ron"),
    )
    .expect("copy the level");
    let path = folder.path().join("01-naive-retry.old.tape.ron");
    std::fs::write(&path, VERSION_1_TAPE).expect("write");
    let old = level::load_tape(&path).expect("a version 1 tape loads");
    assert_eq!((old.tape.version, old.tape.wire_rule()), (1, WireRule::ArmNextMessage));
    let replayed = twice_sim::replay::replay_tape(&old).expect("replays");
    assert!(replayed.as_expected, "{:?}", replayed.verdict.summary);

    let upgraded = twice_sim::upgrade::upgrade_file(&path)
        .expect("upgrades")
        .expect("it was version 1");
    assert_eq!(upgraded.moved, 1);
    let new = level::load_tape(&path).expect("the upgraded tape loads");
    assert_eq!(new.tape.version, TAPE_VERSION);
    assert_eq!(
        new.tape.actions[0].play,
        Play::LoseResponse(LoseResponse {
            key: Some("r1:c2".into())
        })
    );
    assert_eq!(
        new.tape.actions[0].at_phase, 12,
        "played when the answer was on the wire"
    );
    assert!(
        new.text.starts_with("// The heist, as version 1 recorded it."),
        "{}",
        new.text
    );
    assert!(twice_sim::replay::replay_tape(&new).expect("replays").as_expected);
    // Upgrading again changes nothing.
    assert!(twice_sim::upgrade::upgrade_file(&path).expect("reads").is_none());
}

#[test]
fn an_unknown_tape_version_is_refused_with_its_line() {
    let text = VERSION_1_TAPE.replace("    level:", "    version: 7,\n    level:");
    let error = level::parse_tape(Path::new("future.tape.ron"), &text).expect_err("version 7");
    assert!(error.to_string().contains("version 7"), "{error}");
    assert!(error.to_string().starts_with("future.tape.ron:3:"), "{error}");
}

#[test]
fn twice_sim_defend_exits_zero_when_the_defence_holds_and_one_when_it_does_not() {
    let defend = |guards: &str| {
        std::process::Command::new(env!("CARGO_BIN_EXE_twice-sim"))
            .arg("defend")
            .arg(levels_folder().join("02-one-attempt.level.ron"))
            .args(["--guards", guards])
            .output()
            .expect("twice-sim runs")
    };
    let holds = defend("write_retry_rule");
    let printed = String::from_utf8_lossy(&holds.stdout);
    assert_eq!(holds.status.code(), Some(0), "{printed}");
    assert!(printed.contains("the defence holds"), "{printed}");
    let open = defend("none");
    let printed = String::from_utf8_lossy(&open.stdout);
    assert_eq!(open.status.code(), Some(1), "{printed}");
    assert!(printed.contains("GOT IN"), "{printed}");
    let beatable = std::process::Command::new(env!("CARGO_BIN_EXE_twice-sim"))
        .arg("defend")
        .arg(levels_folder().join("01-naive-retry.level.ron"))
        .output()
        .expect("twice-sim runs");
    // Any level can be defended (`defend` on a level with no defender section has every guard
    // for its budget): 01 with no guard on lets a heist in, exit 1.
    let printed = String::from_utf8_lossy(&beatable.stdout);
    assert_eq!(
        beatable.status.code(),
        Some(1),
        "a beatable level with no guard on is beaten: {printed}"
    );
    assert!(printed.contains("GOT IN"), "{printed}");
}

#[test]
fn the_rows_of_the_decision_tables_that_fired_are_recorded_with_their_phase() {
    use twice_sim::runtime::rules::{AttemptEnd, Fired, OutcomeAction, ReservationAction, UnknownAction};
    use twice_sim::simulator::RuleRow;
    let won = run_tape("01-naive-retry.win.tape.ron");
    let rows: Vec<&RuleRow> = won.rules_fired().iter().map(|firing| &firing.row).collect();
    assert!(
        matches!(
            rows[0],
            RuleRow::Reservation {
                existing: None,
                action: ReservationAction::RunNew,
                ..
            }
        ),
        "{rows:?}"
    );
    // The naive runtime's table 2: a write that timed out with attempts left is retried.
    assert!(rows.iter().any(|row| matches!(
        row,
        RuleRow::Decided(Fired::Outcome {
            end: AttemptEnd::TimedOut,
            action: OutcomeAction::Retry { .. },
            ..
        })
    )));
    let paused = run_tape("04-pause.lost-answer.tape.ron");
    let firing = paused
        .rules_fired()
        .iter()
        .find(|firing| matches!(firing.row, RuleRow::Decided(Fired::Unknown { .. })))
        .expect("table 3 fired");
    assert_eq!(
        firing.row,
        RuleRow::Decided(Fired::Unknown {
            hook_available: false,
            hook_already_asked: false,
            pause: true,
            action: UnknownAction::Pause,
        })
    );
    assert_eq!(firing.key.as_deref(), Some("r1:c1"));
    assert!(
        paused
            .timeline()
            .iter()
            .any(|entry| entry.phase == firing.phase && entry.guard.is_some())
    );
}

#[test]
fn the_rulebook_lights_the_rows_that_fired_and_strikes_rows_whose_guard_is_off() {
    use twice_sim::rulebook::{self, ROWS, Table};
    use twice_sim::runtime::guards::{Guard, Guards};
    let row_index = |table: Table, then_starts: &str| {
        ROWS.iter()
            .position(|row| row.table == table && row.then.starts_with(then_starts))
            .expect("a row")
    };
    let indeterminate = row_index(Table::Outcome, "record indeterminate");
    let retry = row_index(Table::Outcome, "retry");
    let pause = row_index(Table::Unknown, "the run waits");
    let run_new = row_index(Table::Reservation, "record started");

    // The pause level: one attempt, the answer lost, the run waits for an operator.
    let paused = run_tape("04-pause.lost-answer.tape.ron");
    let book = rulebook::at_phase(&paused, paused.phase());
    assert_eq!(book.len(), ROWS.len());
    for index in [run_new, indeterminate, pause] {
        assert!(book[index].fired >= 1, "{:?} fired", book[index].row);
        assert!(book[index].struck_by.is_none(), "{:?}", book[index]);
    }
    assert_eq!(book[retry].fired, 0, "a write is not retried");
    let fired_at = rulebook::last_firing_phase(&paused, paused.phase()).expect("rows fired");
    let lit = rulebook::at_phase(&paused, fired_at);
    assert!(
        lit.iter().any(|view| view.lit),
        "the rows of the selected phase are lit"
    );
    assert!(
        book[pause].last.as_deref().is_some_and(|last| last.contains("r1:c1")),
        "{:?}",
        book[pause].last
    );

    // The same answer lost with the write retry rule and the ledger off: the row the rule
    // provides is struck, a whole table goes with the ledger, and the write is retried.
    let guards = Guards::all_on()
        .with(Guard::WriteRetryRule, false)
        .with(Guard::Ledger, false);
    let mut naive = SimulationBuilder::new(level("04-pause.level.ron"), 1)
        .guards(guards)
        .build()
        .expect("builds");
    // Without a ledger there is no reservation phase: the answer travels earlier.
    naive
        .run_until(|simulation| !simulation.wire_targets(CardKind::LoseResponse).is_empty())
        .expect("steps");
    naive
        .play(Play::LoseResponse(LoseResponse { key: None }))
        .expect("on the wire");
    naive.run().expect("runs");
    let book = rulebook::at_phase(&naive, naive.phase());
    assert_eq!(book[indeterminate].struck_by, Some(Guard::WriteRetryRule));
    assert_eq!(book[run_new].struck_by, Some(Guard::Ledger));
    assert!(book[retry].fired >= 1, "the write was retried like a read");
    assert_eq!(book[indeterminate].fired, 0);
}

/// A refusal before sending that hits Penny's first lookup misses: the debrief says which call
/// it hit and what this runtime did with it, and only where that happened.
#[test]
fn a_refusal_that_hit_a_lookup_says_what_became_of_the_read_in_this_run() {
    let told_of = |file: &str| {
        let simulation = run_tape(file);
        let verdict = simulation.verdict().expect("a verdict");
        assert_eq!(verdict.outcome, Outcome::PaidOnce, "{file}");
        debrief::of(&simulation, &verdict)
    };
    // 28's runtime takes a refusal for a timeout: the read is tried again and reaches billing.
    let retried = told_of("28-waiting-on-nothing.refused-lookup.tape.ron");
    assert_eq!(retried.standing, Standing::HeistFailed);
    assert!(
        retried.diagnosis.contains(
            &"Your refusal hit r1:c1, lookup_balance, a read that moves no money: the runtime tried the read again, it reached billing this time, and the ledger holds it completed, so the only credit, r1:c2, went out untouched and paid once."
                .to_owned()
        ),
        "{:?}",
        retried.diagnosis
    );
    assert!(retried.headline.contains("missed their moment"), "{}", retried.headline);
    // 27's runtime swallows the refusal: recorded as done, nothing sent, never tried again.
    let swallowed = told_of("27-not-attempted.refused-lookup.tape.ron");
    assert!(
        swallowed.diagnosis.contains(
            &"Your refusal hit r1:c1, lookup_balance, a read that moves no money: the ledger recorded it completed with nothing sent, and Penny went on, so the only credit, r1:c2, went out untouched and paid once."
                .to_owned()
        ),
        "{:?}",
        swallowed.diagnosis
    );
    // Where the refusal hit the credit, no sentence speaks of a read.
    for file in [
        "27-not-attempted.recorded-failed.tape.ron",
        "28-waiting-on-nothing.recorded-failed.tape.ron",
        "27-not-attempted.win.tape.ron",
        "28-waiting-on-nothing.win.tape.ron",
    ] {
        let simulation = run_tape(file);
        let told = debrief::of(&simulation, &simulation.verdict().expect("a verdict"));
        assert!(
            told.diagnosis
                .iter()
                .all(|sentence| !sentence.contains("a read that moves no money")),
            "{file}: {:?}",
            told.diagnosis
        );
    }
}
