//! The five debriefs issue 21 found untrue, each played again and read: the rule lines of the
//! 10, 15, 03 and 18 losses; 09 won by settling the call while it was in flight and 24 won by
//! a refusal (neither gets the lesson's story); 25 with a crash at phase 3; and an operator's
//! false `completed` that leaves Ada unpaid.

use std::path::PathBuf;
use twice_world::cards::{CrashWorker, OperatorResolve, ToolFailsBeforeSending};

use twice_world::debrief::{self, Debrief, Decider, RuleSource, Standing, Tone};
use twice_world::level::{self, Level, Play, TimedAction};
use twice_world::rulebook::OPERATOR_RULE;
use twice_world::runtime::guards::Guard;
use twice_world::runtime::rules::Status;
use twice_world::simulator::{Simulation, SimulationBuilder};

fn levels() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../levels")
}

fn level(stem: &str) -> Level {
    level::load_level(&levels().join(format!("{stem}.level.ron")))
        .expect("the level loads")
        .level
}

fn finished(mut simulation: Simulation) -> (Simulation, Debrief) {
    simulation.run().expect("the run simulates");
    let verdict = simulation.verdict().expect("a verdict");
    let told = debrief::of(&simulation, &verdict);
    (simulation, told)
}

fn tape(name: &str) -> (Simulation, Debrief) {
    let loaded = level::load_tape(&levels().join(name)).expect("the tape loads");
    let simulation = SimulationBuilder::new(loaded.level.level.clone(), loaded.tape.seed)
        .actions(loaded.tape.actions.clone())
        .wire_rule(loaded.tape.wire_rule())
        .guards(loaded.tape.guards.unwrap_or(loaded.level.level.guards))
        .build()
        .expect("the tape builds");
    finished(simulation)
}

fn moves(stem: &str, actions: Vec<(u32, Play)>) -> (Simulation, Debrief) {
    let actions = actions
        .into_iter()
        .map(|(at_phase, play)| TimedAction {
            at_phase,
            play,
            fizzles: false,
        })
        .collect();
    finished(
        SimulationBuilder::new(level(stem), 1)
            .actions(actions)
            .build()
            .expect("the level builds"),
    )
}

fn says(told: &Debrief, words: &str) -> bool {
    told.headline.contains(words) || told.diagnosis.iter().any(|sentence| sentence.contains(words))
}

#[test]
fn the_rule_line_of_a_loss_is_the_deciding_guards_not_the_levels() {
    // 10: the twin came after the insert. The ledger held; atomic reservation (the level's
    // lesson) did not act, and its rule is not quoted.
    let (simulation, told) = tape("10-check-then-insert.too-late.tape.ron");
    assert_eq!(told.headline, "The heist failed: the ledger held.");
    assert_eq!(told.rule_from, RuleSource::HeldGuard { guard: Guard::Ledger });
    assert_eq!(told.rule, twice_world::guards::rule(Guard::Ledger));
    assert_ne!(told.rule, simulation.level().lesson.rule);

    // 15: the twin came before the lease ran out; run again without the write retry rule, the
    // slowed answer's retry pays twice; without the ledger (each move played where it meets
    // what it hit here, not at its phase number), the twin pays again. The rule quoted is the
    // first deciding guard's, not "started".
    let (simulation, told) = tape("15-lease-runs-out.twin-too-early.tape.ron");
    assert_eq!(told.deciding_guards(), [Guard::WriteRetryRule, Guard::Ledger]);
    assert_eq!(
        told.headline,
        "The heist failed: the write retry rule and the ledger held."
    );
    assert_eq!(told.rule, twice_world::guards::rule(Guard::WriteRetryRule));
    assert_ne!(told.rule, simulation.level().lesson.rule);
    // 15 without the slow card: the lease never ran out, and the ledger decided (run again
    // without it, the twin pays again, met where it was played here); "started", the level's
    // lesson, is not quoted.
    let (simulation, told) = tape("15-lease-runs-out.no-slow.tape.ron");
    assert_eq!(told.deciding_guards(), [Guard::Ledger], "{:?}", told.decided_by);
    assert_eq!(told.headline, "The heist failed: the ledger held.");
    assert_eq!(told.rule_from, RuleSource::Guard { guard: Guard::Ledger });
    assert_ne!(told.rule, simulation.level().lesson.rule);

    // 03: the slowed answer alone. The write retry rule decided; the quote is not the level's
    // "a new call from the model is a new key".
    let (simulation, told) = tape("03-model-calls-again.slow-alone.tape.ron");
    assert_eq!(told.deciding_guards(), [Guard::WriteRetryRule]);
    assert!(told.rule.starts_with("Retry reads, not writes."), "{}", told.rule);
    assert_ne!(told.rule, simulation.level().lesson.rule);

    // 18: the pause held (with the write retry rule); the quote is not "the late outcome is
    // logged and ignored", which nothing in this run did.
    let (simulation, told) = tape("18-late-answer.slow-and-honest.tape.ron");
    assert_eq!(
        told.headline,
        "The heist failed: the write retry rule and the pause on unknown calls held."
    );
    assert!(matches!(
        told.rule_from,
        RuleSource::HeldGuard { .. } | RuleSource::Guard { .. }
    ));
    assert_ne!(told.rule, simulation.level().lesson.rule);
}

#[test]
fn an_alternate_win_gets_no_lesson_story_but_what_decided_it() {
    // 09 won by settling the call failed while it was still in flight: the pause and the hook
    // never acted, so the level's pause-and-hook story is not told; the operator's decision is.
    let (_, told) = tape("09-settle-it-yourself.shortcut.tape.ron");
    assert_eq!(told.standing, Standing::HeistWorked);
    assert!(!told.follows_lesson);
    assert_eq!(told.story, "");
    assert!(
        matches!(&told.decided_by, Decider::Operator { operator, key, status: Status::Failed } if operator == "op-crew" && key == "r1:c1"),
        "{:?}",
        told.decided_by
    );
    assert!(says(
        &told,
        "op-crew resolved r1:c1 failed, but billing holds a credit made by r1:c1: Ada was paid $50.00 for $25.00 owed."
    ));
    assert_eq!(told.rule, OPERATOR_RULE);
    // The lesson's own path still gets its story.
    let (_, told) = tape("09-settle-it-yourself.win.tape.ron");
    assert!(told.follows_lesson && !told.story.is_empty(), "{told:?}");

    // 24 won by a refusal before the second call: nothing was lost on the wire, so "the refund
    // landed and its answer was lost" is not told.
    let (_, told) = moves(
        "24-workflow-retry",
        vec![(
            6,
            Play::ToolFailsBeforeSending(ToolFailsBeforeSending { run: "r1".into() }),
        )],
    );
    assert_eq!(told.standing, Standing::HeistWorked);
    assert_eq!(told.story, "");
    assert!(!says(&told, "answer was lost"), "{told:?}");
    assert!(says(&told, "Run r1 failed at step 2"), "{:?}", told.diagnosis);
    let (_, told) = tape("24-workflow-retry.win.tape.ron");
    assert!(
        told.story.contains("its answer was lost"),
        "the lesson's own path: {told:?}"
    );
}

#[test]
fn a_crash_before_the_request_left_says_what_followed_it() {
    // 25, w1 killed at phase 3: nothing was paid then, and nothing after — Ada has $0.00 and
    // the run waits. It used to say "the recovery's credit was the only one".
    let (_, told) = moves(
        "25-the-other-side",
        vec![(
            3,
            Play::CrashWorker(CrashWorker {
                worker: Some(1),
                in_phase: None,
            }),
        )],
    );
    assert!(
        !says(&told, "the recovery's credit was the only one"),
        "{:?}",
        told.diagnosis
    );
    assert!(
        says(
            &told,
            "nothing was paid after it either: Ada has $0.00 and r1 waits for someone to settle its call"
        ),
        "{:?}",
        told.diagnosis
    );
    assert!(!told.headline.contains("worked"));
}

#[test]
fn an_operators_false_completed_is_named_and_never_headlined_as_a_guard_holding() {
    // 09, the call resolved completed before its request left: the send fence kept it from
    // leaving, and Ada is owed her $25.00.
    let (_, told) = moves(
        "09-settle-it-yourself",
        vec![(
            3,
            Play::OperatorResolve(OperatorResolve {
                key: "r1:c1".into(),
                status: Status::Completed,
                reason: "it looks done".into(),
                operator: "op-crew".into(),
                expected_status: None,
            }),
        )],
    );
    assert_eq!(told.tone, Tone::Owed);
    assert_eq!(
        told.headline,
        "op-crew resolved r1:c1 completed, but billing holds no credit under r1:c1: Ada is owed $25.00."
    );
    assert!(!told.headline.contains("held"));
    assert!(matches!(
        told.decided_by,
        Decider::Operator {
            status: Status::Completed,
            ..
        }
    ));
}

#[test]
fn the_win_of_05_names_what_decided_it_and_22_says_why_it_cannot() {
    // Each other run plays the moves where they meet what they hit here, not at their phase
    // number. 05: the crash meets w1 about to save its checkpoint however many phases the
    // switched guard adds or removes; with the ledger on, the same crash leaves Ada paid once.
    // (Anchored to phase 5, every other run missed w1 there and "could not say", and the
    // debrief read "nothing this run shows".) `debrief_decided.rs` checks the guards named
    // against each run simulated again from scratch.
    let (_, told) = tape("05-crash-replay.win.tape.ron");
    assert_eq!(told.tone, twice_world::debrief::Tone::Win);
    assert_eq!(told.deciding_guards(), [Guard::Ledger], "{}", told.decided_by.summary());
    assert_eq!(told.headline, "The heist worked: Ada was paid twice.");
    assert_eq!(
        told.what_if
            .iter()
            .map(|what_if| what_if.sentence.as_str())
            .collect::<Vec<_>>(),
        ["With the ledger on, in this same run Ada is paid $25.00 of $25.00 owed: the heist fails."]
    );

    // 22: every guard but the contract check makes no difference, run again. With the check
    // on, the run declared with three attempts is refused before anything is sent: there is
    // no answer on the wire for the lost-answer card to hit, in any phase, so no run with the
    // player's moves exists and that guard's run cannot say. The debrief names no guard.
    let (_, told) = tape("22-fine-print.win.tape.ron");
    assert_eq!(told.tone, twice_world::debrief::Tone::Win);
    assert!(told.deciding_guards().is_empty(), "{}", told.decided_by.summary());
    let counterfactual = told.counterfactual.as_ref().expect("a counterfactual");
    assert_eq!(counterfactual.cannot_say(), [Guard::ToolContract]);
    let alternative = counterfactual
        .alternative_for(Guard::ToolContract)
        .expect("its other run");
    match &alternative.answer {
        twice_world::counterfactual::Answer::CannotSay { fizzled } => assert!(
            fizzled.iter().any(|why| why.contains("never meets what it hit")),
            "{fizzled:?}"
        ),
        other => panic!("the contract check's run says {other:?}"),
    }
}

#[test]
fn a_win_that_relied_on_a_guard_doing_its_ordinary_work_still_tells_its_lesson() {
    // 18 is won by a wrong decision made before billing's answer arrived. Keys per call decided
    // too (switched off, Penny's second call carries r1:c1's hashed key and billing answers it
    // with the first credit), but only by doing its ordinary work: the late-answer story is
    // this run's, and it is told.
    let (simulation, told) = tape("18-late-answer.win.tape.ron");
    assert_eq!(told.standing, Standing::HeistWorked);
    assert!(
        matches!(&told.decided_by, Decider::Guards { deciding, .. } if deciding.iter().all(|found| found.was_on)),
        "{:?}",
        told.decided_by
    );
    assert!(told.follows_lesson, "{:?}", told.decided_by);
    assert_eq!(told.story, twice_world::text::plain(&simulation.level().lesson.text));
}

#[test]
fn another_run_short_of_what_is_owed_says_whether_it_flags_the_shortfall() {
    // 36's win: Ada unpaid and nobody told. The runs with the reconcile hook off or the dead
    // letter on pay her nothing too, but flag it for a person; "pays $0.00 of $25.00 owed:
    // the heist fails" alone read as a contradiction.
    let (_, told) = tape("36-crash-loop.win.tape.ron");
    assert_eq!(told.tone, twice_world::debrief::Tone::Win);
    let sentences: Vec<&str> = told.what_if.iter().map(|what_if| what_if.sentence.as_str()).collect();
    assert!(
        sentences.contains(
            &"With the dead letter on, in this same run Ada holds $0.00 of $25.00 owed, flagged for a person to find out the rest: the heist fails."
        ),
        "{sentences:#?}"
    );
    assert!(
        sentences
            .iter()
            .filter(|sentence| sentence.contains("Ada is paid $25.00 of $25.00 owed"))
            .all(|sentence| !sentence.contains("flagged")),
        "a run that pays what is owed flags nothing: {sentences:#?}"
    );
}

#[test]
fn a_loss_no_guard_decided_says_nothing_held_only_when_nothing_did() {
    // 36, the crash once the request has left: Ada is paid once. The ledger and the lease
    // rule held in this run (the timeline shows them refusing every replay) without deciding
    // the verdict; "Nothing held" contradicted the timeline beside it.
    let (simulation, told) = tape("36-crash-loop.in-flight.tape.ron");
    assert!(!simulation.guard_notes().is_empty(), "guards held in this run");
    assert!(!says(&told, "Nothing held"), "{:#?}", told.diagnosis);
    assert!(
        says(
            &told,
            "Guards held, but none decided this verdict, and no move landed where the money moves"
        ),
        "{:#?}",
        told.diagnosis
    );
}

/// The newcomer's playtest of 7 December: 22 won with the contract check off was told
/// "nothing this run shows turned the heist: no guard's switch …", while its lesson says the
/// check refuses that declaration; 21 lost was pointed at "when its answer travels" though its
/// goal needs a request never applied; 22 lost never named the player's declaration.
#[test]
fn a_guard_whose_rerun_cannot_say_is_never_dropped_and_a_losss_pointer_follows_the_goal() {
    let (_, won) = tape("22-fine-print.win.tape.ron");
    assert!(
        matches!(&won.decided_by, Decider::Unsaid { guards } if guards.iter().any(|found| found.guard == Guard::ToolContract && !found.was_on)),
        "22 won: {:?}",
        won.decided_by
    );
    assert!(won.decided_by.told_by_guard_lines());
    assert!(
        won.guard_lines.iter().any(|line| line.guards == [Guard::ToolContract]
            && !line.was_on
            && line
                .sentence
                .starts_with("The tool contract check was off; switched on")),
        "22 won: no line names the contract check: {:#?}",
        won.guard_lines
    );
    assert_eq!(won.rule_from, RuleSource::LevelUnsaid);
    assert!(!won.rule_from.words().contains("no guard decided"));

    let (_, lost) = tape("21-reads-retried.lost-credit-answer.tape.ron");
    assert!(
        says(&lost, "before billing applies it") && !says(&lost, "when its answer travels"),
        "21 lost (goal: owed) pointed the wrong way: {:?}",
        lost.diagnosis
    );

    let declared = Play::DeclareTool(twice_world::cards::DeclareTool {
        tool: "issue_credit".into(),
        side_effect: twice_world::runtime::tool::SideEffect::Read,
        attempts: 1,
        takes_key: true,
    });
    let lose = Play::LoseResponse(twice_world::cards::LoseResponse {
        key: Some("r1:c1".into()),
    });
    let (_, lost) = moves("22-fine-print", vec![(0, declared), (5, lose)]);
    assert_eq!(lost.tone, Tone::Loss, "{:?}", lost.headline);
    assert!(
        says(&lost, "issue_credit was declared read, 1 attempt"),
        "22 lost never names the declaration: {:?}",
        lost.diagnosis
    );
}
