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
    assert_eq!(problems(&[("first.level.ron", &keyed_per_call)]).len(), 1);
}

#[test]
fn a_goal_is_unreachable_when_no_run_issues_a_credit() {
    let level = LEVEL.replace("operation: credit", "operation: lookup_balance");
    let problem = one_problem(&[("first.level.ron", &level)]);
    assert!(problem.contains("no run issues a credit"), "{problem}");
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
