//! Tests of `campaign`: `twice-sim check` over small folders of levels and tapes.

use super::*;

/// A small valid level; tests change one line of it with `replace`.
const LEVEL: &str = r#"(
    id: "first",
    title: "First",
    chapter: 1,
    order: 1,
    requires: [],
    briefing: "Penny refunds Ada.",
    lesson: (rule: "Retry reads, not writes.", text: "One attempt."),
    hints: (nudge: "Watch the wire.", idea: "A lost answer looks like a lost request."),
    par: (cards: 1, phases: 17),
    world: (accounts: [(id: "acct_ada", owner: "Ada")]),
    tools: [(name: "issue_credit", side_effect: external, operation: credit)],
    runs: [(id: "r1", calls: [(tool: "issue_credit", account: "acct_ada", amount_cents: 2500, memo: "Refund")])],
    cards: [(card: LoseResponse, count: 1)],
    goal: paid_twice,
)"#;

const TAPE: &str = r#"(
    level: "first.level.ron",
    seed: 1,
    actions: [
        (at_phase: 0, play: LoseResponse),
    ],
    expect: (verdict: paid_once, stopped_by: [write_retry_rule]),
)"#;

fn folder(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("a temporary folder");
    for (name, text) in files {
        std::fs::write(dir.path().join(name), text).expect("write a test file");
    }
    dir
}

fn problems(files: &[(&str, &str)]) -> Vec<String> {
    let dir = folder(files);
    check(&[dir.path().to_path_buf()])
        .problems
        .iter()
        .map(|problem| {
            let text = problem.to_string();
            text.replace(&format!("{}/", dir.path().display()), "")
        })
        .collect()
}

fn one_problem(files: &[(&str, &str)]) -> String {
    let found = problems(files);
    assert_eq!(found.len(), 1, "expected exactly one problem, got {found:#?}");
    found.into_iter().next().expect("one problem")
}

#[test]
fn a_valid_level_and_tape_have_no_problems() {
    let dir = folder(&[("first.level.ron", LEVEL), ("first.win.tape.ron", TAPE)]);
    let report = check(&[dir.path().to_path_buf()]);
    assert!(report.problems.is_empty(), "{:#?}", report.problems);
    assert_eq!((report.levels, report.tapes), (1, 1));
}

#[test]
fn an_unknown_field_is_named_with_its_line_and_column() {
    let level = LEVEL.replace("    goal: paid_twice,", "    goal: paid_twice,\n    gaol: 3,");
    let problem = one_problem(&[("first.level.ron", &level)]);
    assert!(problem.starts_with("first.level.ron:16:"), "{problem}");
    assert!(problem.contains("gaol"), "{problem}");
}

#[test]
fn malformed_ron_is_named_with_its_line_and_column() {
    let level = LEVEL.replace("order: 1,", "order: 1,,");
    let problem = one_problem(&[("first.level.ron", &level)]);
    assert!(problem.starts_with("first.level.ron:5:"), "{problem}");
}

#[test]
fn a_card_the_level_does_not_hold_is_refused() {
    let tape = TAPE.replace("play: LoseResponse", "play: CrashWorker(worker: 1)");
    let problem = one_problem(&[("first.level.ron", LEVEL), ("first.win.tape.ron", &tape)]);
    assert!(problem.starts_with("first.win.tape.ron:5:10:"), "{problem}");
    assert!(
        problem.contains("card CrashWorker is not in level `first`'s hand"),
        "{problem}"
    );
}

#[test]
fn more_cards_than_the_level_gives_are_refused() {
    let tape = TAPE.replace(
        "(at_phase: 0, play: LoseResponse),",
        "(at_phase: 0, play: LoseResponse),\n        (at_phase: 3, play: LoseResponse),",
    );
    let problem = one_problem(&[("first.level.ron", LEVEL), ("first.win.tape.ron", &tape)]);
    assert!(problem.starts_with("first.win.tape.ron:6:10:"), "{problem}");
    assert!(problem.contains("played 2 times; the level gives 1"), "{problem}");
}

#[test]
fn an_action_after_the_level_ends_is_refused() {
    let level = LEVEL.replace("    goal: paid_twice,", "    goal: paid_twice,\n    max_phases: 50,");
    let tape = TAPE.replace("at_phase: 0", "at_phase: 51");
    let problem = one_problem(&[("first.level.ron", &level), ("first.win.tape.ron", &tape)]);
    assert!(problem.starts_with("first.win.tape.ron:5:10:"), "{problem}");
    assert!(problem.contains("after the level's end (max_phases 50)"), "{problem}");
}

#[test]
fn a_tape_whose_level_is_missing_is_refused() {
    let problem = one_problem(&[("first.win.tape.ron", TAPE)]);
    assert!(problem.starts_with("first.win.tape.ron:2:5:"), "{problem}");
    assert!(problem.contains("level `first.level.ron` does not exist"), "{problem}");
}

#[test]
fn duplicate_level_ids_are_refused_at_the_second_file() {
    let second = LEVEL.replace("order: 1", "order: 2");
    let problem = one_problem(&[("a.level.ron", LEVEL), ("b.level.ron", &second)]);
    assert!(problem.starts_with("b.level.ron:2:5:"), "{problem}");
    assert!(problem.contains("level id `first` is already used by"), "{problem}");
    assert!(problem.contains("a.level.ron"), "{problem}");
}

#[test]
fn requires_naming_an_unknown_level_is_refused() {
    let level = LEVEL.replace("requires: [],", "requires: [\"zeroth\"],");
    let problem = one_problem(&[("first.level.ron", &level)]);
    assert!(problem.starts_with("first.level.ron:6:16:"), "{problem}");
    assert!(problem.contains("names level `zeroth`"), "{problem}");
}

#[test]
fn requires_may_name_a_neighbour_that_is_not_being_checked() {
    let second = LEVEL
        .replace("\"first\"", "\"second\"")
        .replace("order: 1", "order: 2")
        .replace("requires: [],", "requires: [\"first\"],");
    let dir = folder(&[("first.level.ron", LEVEL), ("second.level.ron", &second)]);
    let report = check(&[dir.path().join("second.level.ron")]);
    assert!(report.problems.is_empty(), "{:#?}", report.problems);
    assert_eq!(report.levels, 1);
}

#[test]
fn requirements_that_go_round_in_a_circle_are_refused() {
    let first = LEVEL.replace("requires: [],", "requires: [\"second\"],");
    let second = LEVEL
        .replace("\"first\"", "\"second\"")
        .replace("order: 1", "order: 2")
        .replace("requires: [],", "requires: [\"first\"],");
    let found = problems(&[("first.level.ron", &first), ("second.level.ron", &second)]);
    assert_eq!(found.len(), 2, "{found:#?}");
    assert!(
        found[0].contains("go round in a circle (first → second → first)"),
        "{found:#?}"
    );
}

#[test]
fn two_levels_in_one_level_select_slot_are_refused() {
    let second = LEVEL.replace("\"first\"", "\"second\"");
    let problem = one_problem(&[("a.level.ron", LEVEL), ("b.level.ron", &second)]);
    assert!(problem.starts_with("b.level.ron:5:5:"), "{problem}");
    assert!(problem.contains("both claim chapter 1 order 1"), "{problem}");
}

#[test]
fn paid_twice_with_no_card_that_can_repeat_a_call_is_unreachable() {
    let level = LEVEL.replace("card: LoseResponse", "card: LoseRequest");
    let problem = one_problem(&[("first.level.ron", &level)]);
    assert!(problem.starts_with("first.level.ron:15:5:"), "{problem}");
    assert!(
        problem.contains("goal paid_twice can never be reached: no card in hand (LoseRequest)"),
        "{problem}"
    );
}

#[test]
fn a_goal_with_no_cards_is_reachable_when_answers_can_miss_the_timeout() {
    let level = LEVEL
        .replace("    cards: [(card: LoseResponse, count: 1)],\n", "")
        .replace("world: (", "world: (latency_ms: 40, jitter_ms: 10, ");
    assert!(problems(&[("first.level.ron", &level)]).is_empty());
}

#[test]
fn not_paid_but_owed_with_no_cards_needs_identical_credits_and_hashed_keys() {
    let base = LEVEL
        .replace("    cards: [(card: LoseResponse, count: 1)],\n", "")
        .replace("goal: paid_twice", "goal: not_paid_but_owed");
    let problem = one_problem(&[("first.level.ron", &base)]);
    assert!(problem.contains("no two credits are identical calls"), "{problem}");
    let merged = base
        .replace(
            "memo: \"Refund\")]",
            "memo: \"Refund\"), (tool: \"issue_credit\", account: \"acct_ada\", amount_cents: 2500, memo: \"Refund\")]",
        )
        .replace("    goal:", "    guards: (key_per_call: false),\n    goal:");
    assert!(problems(&[("first.level.ron", &merged)]).is_empty());
    let keyed_per_call = merged.replace("    guards: (key_per_call: false),\n", "");
    // The two credits ARE identical; keys per call keep them apart. The problem says so, and
    // never that no two credits are identical.
    let problem = one_problem(&[("first.level.ron", &keyed_per_call)]);
    assert!(
        problem.contains(
            "though run r1's call 1 and run r1's call 2 are identical credits, keys are made per call (key_per_call is on)"
        ),
        "{problem}"
    );
    assert!(!problem.contains("no two credits are identical"), "{problem}");
}

#[test]
fn a_goal_is_unreachable_when_no_run_issues_a_credit() {
    // Declared honestly as the read it runs (a read declared external is refused on its own).
    let level = LEVEL.replace(
        "side_effect: external, operation: credit",
        "side_effect: read, operation: lookup_balance",
    );
    let problem = one_problem(&[("first.level.ron", &level)]);
    assert!(problem.contains("no run issues a credit"), "{problem}");
    let lying = LEVEL.replace("operation: credit", "operation: lookup_balance");
    let problem = one_problem(&[("first.level.ron", &lying)]);
    assert!(
        problem.contains("which is read, but is declared side_effect: external"),
        "{problem}"
    );
}

#[test]
fn an_unbeatable_level_needs_a_debrief() {
    let level = LEVEL.replace("    goal: paid_twice,", "    goal: paid_twice,\n    unbeatable: true,");
    let problem = one_problem(&[("first.level.ron", &level)]);
    assert!(problem.starts_with("first.level.ron:16:5:"), "{problem}");
    assert!(problem.contains("has no `debrief`"), "{problem}");
}

#[test]
fn a_worker_that_can_never_exist_is_refused() {
    let level = LEVEL.replace("card: LoseResponse", "card: CrashWorker");
    let tape = TAPE.replace("play: LoseResponse", "play: CrashWorker(worker: 65)");
    let problem = one_problem(&[("first.level.ron", &level), ("first.win.tape.ron", &tape)]);
    assert!(problem.starts_with("first.win.tape.ron:5:10:"), "{problem}");
    assert!(problem.contains("w65 can never exist"), "{problem}");
}

#[test]
fn an_operator_key_that_is_not_a_key_is_refused() {
    let level = LEVEL.replace("card: LoseResponse", "card: OperatorResolve");
    let tape = TAPE.replace(
        "play: LoseResponse",
        "play: OperatorResolve(key: \"r1 c1\", status: failed, reason: \"lost\")",
    );
    let problem = one_problem(&[("first.level.ron", &level), ("first.win.tape.ron", &tape)]);
    assert!(problem.contains("`r1 c1` is not an idempotency key"), "{problem}");
}

#[test]
fn a_path_with_no_level_or_tape_files_is_a_problem() {
    let dir = folder(&[("notes.txt", "nothing here")]);
    let report = check(&[dir.path().to_path_buf()]);
    assert_eq!(report.problems.len(), 1, "{:#?}", report.problems);
    assert!(
        report.problems[0]
            .to_string()
            .contains("no .level.ron or .tape.ron files here")
    );
    let missing = check(&[dir.path().join("absent")]);
    assert!(missing.problems[0].to_string().contains("no such file or folder"));
}

#[test]
fn a_file_named_twice_is_checked_once() {
    let dir = folder(&[("first.level.ron", LEVEL)]);
    let report = check(&[dir.path().to_path_buf(), dir.path().join("first.level.ron")]);
    assert!(report.problems.is_empty(), "{:#?}", report.problems);
    assert_eq!(report.levels, 1);
}

#[test]
fn a_broken_level_is_reported_once_even_when_its_tape_is_checked_too() {
    let level = LEVEL.replace("order: 1,", "order: 1,,");
    let found = problems(&[("first.level.ron", &level), ("first.win.tape.ron", TAPE)]);
    assert_eq!(found.len(), 1, "{found:#?}");
}

#[test]
fn the_campaign_loads_in_level_select_order() {
    let second = LEVEL
        .replace("\"first\"", "\"second\"")
        .replace("chapter: 1", "chapter: 0")
        .replace("order: 1", "order: 5");
    let dir = folder(&[
        ("first.level.ron", LEVEL),
        ("b.level.ron", &second),
        ("first.win.tape.ron", TAPE),
    ]);
    let campaign = Campaign::load(dir.path()).expect("a valid campaign");
    let ids: Vec<&str> = campaign.levels.iter().map(|loaded| loaded.level.id.as_str()).collect();
    assert_eq!(ids, ["second", "first"]);
    assert_eq!(campaign.tapes_for("first").count(), 1);
    assert!(campaign.level("second").is_some());
    let broken = folder(&[("a.level.ron", "(")]);
    assert!(Campaign::load(broken.path()).is_err());
}

#[test]
fn a_par_the_win_tape_cannot_reach_is_refused_and_a_sandbox_or_other_tape_is_not_held_to_it() {
    let level = LEVEL.replace(
        "cards: [(card: LoseResponse, count: 1)],",
        "cards: [(card: LoseResponse, count: 1), (card: LoseRequest, count: 1)],",
    );
    let two_cards = TAPE.replace(
        "        (at_phase: 0, play: LoseResponse),",
        "        (at_phase: 0, play: LoseRequest),\n        (at_phase: 0, play: LoseResponse),",
    );
    let problem = one_problem(&[("first.level.ron", &level), ("first.win.tape.ron", &two_cards)]);
    assert!(problem.starts_with("first.win.tape.ron:4:"), "{problem}");
    assert!(
        problem.contains("plays 2 cards (LoseRequest, LoseResponse) but level `first`'s par says 1"),
        "{problem}"
    );
    // Another tape of the level may play more cards than par, and so may a sandbox win.
    assert!(
        problems(&[
            ("first.level.ron", &level),
            ("first.win.tape.ron", TAPE),
            ("first.lost.tape.ron", &two_cards)
        ])
        .is_empty()
    );
    let sandbox = two_cards.replace("    seed: 1,", "    seed: 1,\n    guards: Some((ledger: true)),");
    assert!(
        problems(&[
            ("first.level.ron", &level),
            ("first.win.tape.ron", TAPE),
            ("first.sandbox.tape.ron", &sandbox)
        ])
        .is_empty()
    );
}

#[test]
fn a_level_that_ships_tapes_but_no_win_tape_is_refused() {
    let problem = one_problem(&[("first.level.ron", LEVEL), ("first.lost.tape.ron", TAPE)]);
    assert!(problem.starts_with("first.level.ron:10:5:"), "{problem}");
    assert!(
        problem.contains("level `first` ships 1 tape but no win tape"),
        "{problem}"
    );
    // A sandbox win (other guards) does not show the level's own path either.
    let sandbox = TAPE.replace("    seed: 1,", "    seed: 1,\n    guards: Some((ledger: true)),");
    assert_eq!(
        problems(&[("first.level.ron", LEVEL), ("first.win.tape.ron", &sandbox)]).len(),
        1
    );
    // A level file checked without its tapes is not held to them.
    assert!(problems(&[("first.level.ron", LEVEL)]).is_empty());
}

/// An unbeatable version of [`LEVEL`] with this id, chapter and order (a defence to finish it).
fn defended(id: &str, chapter: u32, order: u32) -> String {
    LEVEL
        .replace("\"first\"", &format!("\"{id}\""))
        .replace("chapter: 1", &format!("chapter: {chapter}"))
        .replace("order: 1", &format!("order: {order}"))
        .replace("    par: (cards: 1, phases: 17),\n", "")
        .replace(
            "    goal: paid_twice,",
            "    goal: paid_twice,\n    unbeatable: true,\n    debrief: \"It held.\",\n    defender: (budget: 1, minimum: [write_retry_rule]),",
        )
}

/// A beatable version of [`LEVEL`] with this id, chapter and order, and its win tape.
fn beatable(id: &str, chapter: u32, order: u32) -> (String, String) {
    let level = LEVEL
        .replace("\"first\"", &format!("\"{id}\""))
        .replace("chapter: 1", &format!("chapter: {chapter}"))
        .replace("order: 1", &format!("order: {order}"));
    (level, TAPE.replace("first.level.ron", &format!("{id}.level.ron")))
}

/// The first hour's problems of a campaign made of these files.
fn first_hour(files: &[(String, String)]) -> Vec<String> {
    let borrowed: Vec<(&str, &str)> = files
        .iter()
        .map(|(name, text)| (name.as_str(), text.as_str()))
        .collect();
    let dir = folder(&borrowed);
    let campaign = Campaign::load(dir.path()).expect("a valid campaign");
    let levels: Vec<&Level> = campaign.levels.iter().map(|loaded| &loaded.level).collect();
    crate::campaign::path::first_hour_repeats(&levels, &campaign.tapes)
}

fn files_of(levels: Vec<(&str, String)>, tapes: Vec<(&str, String)>) -> Vec<(String, String)> {
    levels
        .into_iter()
        .map(|(id, text)| (format!("{id}.level.ron"), text))
        .chain(tapes.into_iter().map(|(id, text)| (format!("{id}.win.tape.ron"), text)))
        .collect()
}

#[test]
fn the_first_hour_has_no_two_defend_only_levels_in_a_row() {
    let (one, one_win) = beatable("one", 1, 1);
    let (four, four_win) = beatable("four", 2, 2);
    let row = files_of(
        vec![
            ("one", one.clone()),
            ("two", defended("two", 1, 2)),
            ("three", defended("three", 2, 1)),
            ("four", four.clone()),
        ],
        vec![("one", one_win.clone()), ("four", four_win.clone())],
    );
    let found = first_hour(&row);
    assert!(
        found
            .iter()
            .any(|problem| problem.contains("`two` and `three` are defend-only levels one after the other")),
        "{found:#?}"
    );
    // A level to win between them mends it; after the first hour the rule does not apply.
    let (between, between_win) = beatable("between", 1, 3);
    let between = between.replace(
        "cards: [(card: LoseResponse, count: 1)],",
        "cards: [(card: LoseResponse, count: 1), (card: LoseRequest, count: 1)],",
    );
    let between_win = between_win.replace("play: LoseResponse", "play: LoseRequest");
    let mended = files_of(
        vec![
            ("one", one.clone()),
            ("two", defended("two", 1, 2)),
            ("between", between),
            ("three", defended("three", 2, 1)),
            ("four", four.clone()),
            ("five", defended("five", 4, 1)),
            ("six", defended("six", 4, 2)),
        ],
        vec![("one", one_win), ("between", between_win), ("four", four_win)],
    );
    assert!(first_hour(&mended).is_empty(), "{:#?}", first_hour(&mended));
}

#[test]
fn the_first_hour_is_never_won_twice_in_a_row_by_the_same_move() {
    let (one, one_win) = beatable("one", 1, 1);
    let (two, two_win) = beatable("two", 3, 1);
    // The same move, with a defend-only level between: still the same move twice.
    let same = files_of(
        vec![
            ("one", one.clone()),
            ("between", defended("between", 2, 1)),
            ("two", two.clone()),
        ],
        vec![("one", one_win.clone()), ("two", two_win.clone())],
    );
    let found = first_hour(&same);
    assert_eq!(found.len(), 1, "{found:#?}");
    assert!(
        found[0].contains("`two` is won by the same move as `one` just before it (LoseResponse)"),
        "{found:#?}"
    );
    // The first level after the first hour is held to it too; the second is not.
    let (later, later_win) = beatable("later", 4, 1);
    let (last, last_win) = beatable("last", 4, 2);
    let other = two.replace(
        "cards: [(card: LoseResponse, count: 1)],",
        "cards: [(card: SlowResponse, count: 1)],",
    );
    let other_win = two_win.replace("play: LoseResponse", "play: SlowResponse");
    let slow = |text: String| {
        text.replace(
            "cards: [(card: LoseResponse, count: 1)],",
            "cards: [(card: SlowResponse, count: 1)],",
        )
        .replace("play: LoseResponse", "play: SlowResponse")
    };
    let (later, later_win, last, last_win) = (slow(later), slow(later_win), slow(last), slow(last_win));
    let found = first_hour(&files_of(
        vec![("one", one), ("two", other), ("later", later), ("last", last)],
        vec![
            ("one", one_win),
            ("two", other_win),
            ("later", later_win),
            ("last", last_win),
        ],
    ));
    assert_eq!(found.len(), 1, "{found:#?}");
    assert!(
        found[0].contains("`later` is won by the same move as `two`"),
        "{found:#?}"
    );
}

#[test]
fn a_defended_level_that_names_its_defence_before_the_defence_is_refused() {
    let told = defended("first", 1, 1).replace(
        "debrief: \"It held.\"",
        "debrief: \"It held. Defending, the write retry rule alone holds.\"",
    );
    let problem = one_problem(&[("first.level.ron", &told)]);
    assert!(
        problem.contains("debrief hands over the defence before the player defends (\"Defending, the write retry rule alone holds.\")"),
        "{problem}"
    );
    let hinted = defended("first", 1, 1).replace(
        "idea: \"A lost answer looks like a lost request.\"",
        "idea: \"A lost answer looks like a lost request. To defend, switch on the pause.\"",
    );
    assert!(one_problem(&[("first.level.ron", &hinted)]).contains("idea hands over the defence"));
    // Saying that a defence finishes the level names no guard: that is the instruction.
    let instructed = defended("first", 1, 1).replace(
        "debrief: \"It held.\"",
        "debrief: \"It held; your defence, not the hand, finishes the level.\"",
    );
    assert!(problems(&[("first.level.ron", &instructed)]).is_empty());
}

#[test]
fn a_levels_tapes_open_once_it_is_won_or_in_the_sandbox() {
    use crate::campaign::path::tape_opens;
    let won = |id: &str| id == "first";
    assert!(tape_opens(Some("first"), won, false));
    assert!(
        !tape_opens(Some("second"), won, false),
        "a level not won keeps its solutions"
    );
    assert!(tape_opens(Some("second"), won, true), "the sandbox opens every tape");
    assert!(
        tape_opens(None, won, false),
        "a tape of no campaign level is the player's own"
    );
    let dir = folder(&[("first.level.ron", LEVEL), ("first.win.tape.ron", TAPE)]);
    let level_file =
        crate::campaign::path::tape_level_file(&dir.path().join("first.win.tape.ron")).expect("it names its level");
    assert_eq!(level_file, dir.path().join("first.level.ron"));
    let missing = crate::campaign::path::tape_level_file(&dir.path().join("nope.tape.ron")).expect_err("no such tape");
    assert!(missing.to_string().contains("nope.tape.ron"), "{missing}");
}

/// A regression case: no hints, par, chapter or order, and its only tape is not a win tape.
fn regression_level(id: &str) -> String {
    LEVEL
        .replace("id: \"first\"", &format!("id: \"{id}\", regression: true"))
        .replace("    chapter: 1,\n    order: 1,\n", "")
        .replace(
            "    hints: (nudge: \"Watch the wire.\", idea: \"A lost answer looks like a lost request.\"),\n",
            "",
        )
        .replace("    par: (cards: 1, phases: 17),\n", "")
}

#[test]
fn a_regression_level_needs_no_hints_par_win_tape_or_chapter_and_the_campaign_leaves_it_out() {
    let first = regression_level("first");
    let second = regression_level("second");
    let tape = TAPE.replace("first.level.ron", "second.level.ron");
    let files = [
        ("first.level.ron", first.as_str()),
        ("second.level.ron", second.as_str()),
        ("second.lost-answer.tape.ron", tape.as_str()),
    ];
    assert_eq!(problems(&files), Vec::<String>::new());
    let dir = folder(&files);
    let campaign = Campaign::load(dir.path()).expect("a folder of regression cases loads");
    assert!(campaign.levels.is_empty() && campaign.tapes.is_empty(), "{campaign:?}");
    // The same levels without the flag are campaign levels, held to the campaign's rules.
    let plain = first.replace(", regression: true", "");
    let found = problems(&[("first.level.ron", plain.as_str())]);
    assert!(
        found.iter().any(|problem| problem.contains("needs hints")),
        "{found:#?}"
    );
}

#[test]
fn a_regression_level_is_still_checked_for_everything_else() {
    let long = regression_level("first").replace(
        "briefing: \"Penny refunds Ada.\"",
        &format!("briefing: \"{}\"", "word ".repeat(level::BRIEFING_WORDS_MAX + 1)),
    );
    assert!(one_problem(&[("first.level.ron", &long)]).contains("briefing"));
    let no_way = regression_level("first").replace("cards: [(card: LoseResponse, count: 1)],", "cards: [],");
    assert!(
        one_problem(&[("first.level.ron", &no_way)]).contains("can never be reached"),
        "a regression case's goal must still be reachable"
    );
}

/// Chapter 1's levels are files 01, 02, 21, 20 and 22: a player sees 1.1 to 1.5, in the order
/// the level select plays them, and every level of the campaign has a place of its own.
#[test]
fn every_level_has_a_campaign_position_in_level_select_order() {
    let folder = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../levels");
    let campaign = Campaign::load(&folder).expect("the campaign loads");
    let chapter_one: Vec<(String, String)> = campaign
        .levels
        .iter()
        .filter(|loaded| loaded.level.chapter == 1)
        .map(|loaded| {
            let file = loaded.path.file_name().unwrap().to_string_lossy();
            (file[..2].to_owned(), campaign.position(&loaded.level).to_string())
        })
        .collect();
    let expected: Vec<(String, String)> = [
        ("01", "1.1"),
        ("02", "1.2"),
        ("21", "1.3"),
        ("20", "1.4"),
        ("22", "1.5"),
    ]
    .map(|(file, position)| (file.to_owned(), position.to_owned()))
    .into();
    assert_eq!(chapter_one, expected);
    let mut seen = BTreeSet::new();
    for loaded in &campaign.levels {
        let position = campaign.position(&loaded.level);
        assert_eq!(position.chapter, loaded.level.chapter);
        assert!(seen.insert(position), "{position} given twice");
    }
    // The position does not depend on the order the levels are listed in.
    let reversed: Vec<&Level> = campaign.levels.iter().rev().map(|loaded| &loaded.level).collect();
    let third = &campaign.levels[2].level;
    assert_eq!(position(reversed, third).to_string(), "1.3");
}
