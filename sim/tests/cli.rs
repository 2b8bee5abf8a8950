//! The `twice-sim` command line: exit codes 0 (as expected), 1 (a verdict differs),
//! 2 (bad input, located), and output a newcomer can read.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn twice_sim(arguments: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_twice-sim"))
        .args(arguments)
        .current_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join(".."))
        .output()
        .expect("twice-sim runs")
}

fn text(output: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

/// Copies a shipped level into a temporary folder and edits its text.
fn edited_level(folder: &Path, name: &str, from: &str, to: &str) -> PathBuf {
    let original =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../levels/01-naive-retry.level.ron"))
            .expect("the shipped level reads");
    assert!(original.contains(from), "the level text contains {from:?}");
    let path = folder.join(name);
    std::fs::write(&path, original.replacen(from, to, 1)).unwrap();
    path
}

#[test]
fn replaying_the_shipped_levels_exits_zero() {
    let output = twice_sim(&["replay", "levels"]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    assert!(text(&output).contains("0 differ"), "{}", text(&output));
}

#[test]
fn play_prints_timeline_ledger_billing_and_verdict() {
    let output = twice_sim(&[
        "play",
        "levels/01-naive-retry.level.ron",
        "--tape",
        "levels/01-naive-retry.win.tape.ron",
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    let printed = text(&output);
    for section in [
        "== timeline ==",
        "== ledger",
        "== billing ==",
        "== verdict ==",
        "paid_twice",
        "as expected",
    ] {
        assert!(printed.contains(section), "missing {section:?} in\n{printed}");
    }
}

#[test]
fn play_code_prints_the_loop_with_each_workers_line_the_tools_and_the_fix() {
    let output = twice_sim(&[
        "play",
        "levels/11-one-stands-down.level.ron",
        "--tape",
        "levels/11-one-stands-down.crash-and-twin.tape.ron",
        "--code",
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    let printed = text(&output);
    let code = printed.split("== the code: ").nth(1).expect("a code section");
    assert!(
        code.contains("written for reading") && code.contains("sim/runtime/src/worker/"),
        "{code}"
    );
    // The loop, numbered, every worker's cursor in the gutter; w1 crashed, so struck.
    assert!(code.contains(" 1  def run(run_id):"), "{code}");
    assert!(code.contains("✖ w1"), "{code}");
    assert!(
        code.contains("record = ledger.reserve(key, call)  # ✔ atomic_reservation"),
        "{code}"
    );
    assert!(code.contains("== the loop, phase by phase"), "{code}");
    assert!(
        code.contains("@billing.tool(external(), reconcile=find_credit)"),
        "{code}"
    );
    // Without --code, none of it.
    let plain = twice_sim(&["play", "levels/11-one-stands-down.level.ron"]);
    assert!(!text(&plain).contains("== the code"), "{}", text(&plain));
    // JSON carries the lines, each with its phases, and the cursors.
    let json = twice_sim(&["play", "levels/01-naive-retry.level.ron", "--code", "--json"]);
    let report: serde_json::Value = serde_json::from_slice(&json.stdout).expect("JSON");
    let lines = report["code"]["program"]["lines"].as_array().expect("lines");
    assert!(
        lines.iter().any(|line| line["code"] == "for attempt in range(3):"),
        "{lines:?}"
    );
    assert_eq!(report["code"]["cursors"][0]["label"], "w1");
}

#[test]
fn play_json_is_machine_readable() {
    let output = twice_sim(&["play", "levels/01-naive-retry.level.ron", "--seed", "3", "--json"]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).expect("valid JSON");
    assert_eq!(report["seed"], 3);
    assert_eq!(
        report["verdict"]["outcome"], "paid_once",
        "no cards played: Penny pays once"
    );
}

#[test]
fn play_writes_a_ledger_file_that_sqlite_can_open_and_refuses_to_overwrite_one() {
    let folder = tempfile::tempdir().unwrap();
    let ledger = folder.path().join("ledger.sqlite");
    let ledger_text = ledger.to_str().unwrap();
    let output = twice_sim(&["play", "levels/01-naive-retry.level.ron", "--ledger", ledger_text]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    let connection = rusqlite::Connection::open(&ledger).unwrap();
    let status: String = connection
        .query_row(
            "SELECT status FROM tool_executions WHERE idempotency_key = 'r1:c1'",
            [],
            |row| row.get(0),
        )
        .unwrap();
    assert_eq!(status, "completed");
    let again = twice_sim(&["play", "levels/01-naive-retry.level.ron", "--ledger", ledger_text]);
    assert_eq!(again.status.code(), Some(2));
    assert!(text(&again).contains("already exists"), "{}", text(&again));
}

#[test]
fn a_ledger_in_a_folder_that_does_not_exist_exits_two_naming_the_folder() {
    let folder = tempfile::tempdir().unwrap();
    let missing = folder.path().join("twice-demo");
    let ledger = missing.join("ledger.sqlite");
    let output = twice_sim(&[
        "play",
        "levels/01-naive-retry.level.ron",
        "--ledger",
        ledger.to_str().unwrap(),
    ]);
    assert_eq!(output.status.code(), Some(2), "{}", text(&output));
    let printed = text(&output);
    assert!(
        printed.contains(&format!("the folder {} does not exist", missing.display())),
        "{printed}"
    );
    assert!(printed.contains("mkdir -p"), "{printed}");
    assert!(!missing.exists(), "nothing was made");
}

#[test]
fn a_tape_whose_verdict_differs_exits_one() {
    let folder = tempfile::tempdir().unwrap();
    let level = edited_level(
        folder.path(),
        "x.level.ron",
        "id: \"naive-retry\"",
        "id: \"naive-retry\"",
    );
    std::fs::write(
        folder.path().join("x.tape.ron"),
        format!(
            "(level: \"{}\", seed: 1, actions: [], expect: (verdict: paid_twice))",
            level.file_name().unwrap().to_str().unwrap()
        ),
    )
    .unwrap();
    let output = twice_sim(&["replay", folder.path().to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(1), "{}", text(&output));
    assert!(text(&output).contains("DIFFERS"), "{}", text(&output));
}

#[test]
fn a_malformed_level_exits_two_with_file_line_and_column() {
    let folder = tempfile::tempdir().unwrap();
    let level = edited_level(folder.path(), "bad.level.ron", "order: 1,", "order: 1,,");
    let output = twice_sim(&["play", level.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(2), "{}", text(&output));
    let line = std::fs::read_to_string(&level)
        .unwrap()
        .lines()
        .position(|line| line.contains(",,"))
        .unwrap()
        + 1;
    let printed = text(&output);
    assert!(
        printed.contains(&format!("bad.level.ron:{line}:")),
        "located at line {line}: {printed}"
    );
}

#[test]
fn an_unknown_field_exits_two_and_names_it() {
    let folder = tempfile::tempdir().unwrap();
    let level = edited_level(
        folder.path(),
        "field.level.ron",
        "order: 1,",
        "order: 1, difficulty: 3,",
    );
    let output = twice_sim(&["play", level.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(2));
    assert!(text(&output).contains("difficulty"), "{}", text(&output));
}

#[test]
fn a_negative_amount_exits_two() {
    let folder = tempfile::tempdir().unwrap();
    let level = edited_level(
        folder.path(),
        "negative.level.ron",
        "amount_cents: 2500",
        "amount_cents: -2500",
    );
    let output = twice_sim(&["play", level.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(2));
    assert!(text(&output).contains("negative.level.ron:"), "{}", text(&output));
}

fn tape_with_actions(folder: &Path, actions: &str) -> Output {
    let level = edited_level(folder, "l.level.ron", "id: \"naive-retry\"", "id: \"naive-retry\"");
    let tape = folder.join("t.tape.ron");
    std::fs::write(
        &tape,
        format!(
            "(\n  level: \"{}\",\n  seed: 1,\n  actions: [\n    {actions}\n  ],\n  expect: (verdict: paid_twice),\n)",
            level.file_name().unwrap().to_str().unwrap()
        ),
    )
    .unwrap();
    twice_sim(&["replay", tape.to_str().unwrap()])
}

#[test]
fn an_unknown_card_exits_two_with_its_place() {
    let folder = tempfile::tempdir().unwrap();
    let output = tape_with_actions(folder.path(), "(at_phase: 2, play: StealTheVault)");
    assert_eq!(output.status.code(), Some(2));
    let printed = text(&output);
    assert!(
        printed.contains("t.tape.ron:5:") && printed.contains("StealTheVault"),
        "{printed}"
    );
}

#[test]
fn a_card_the_level_does_not_give_exits_two() {
    let folder = tempfile::tempdir().unwrap();
    let output = tape_with_actions(folder.path(), "(at_phase: 2, play: DuplicateWorker(run: \"r1\"))");
    assert_eq!(output.status.code(), Some(2));
    assert!(text(&output).contains("not in level"), "{}", text(&output));
}

#[test]
fn an_action_after_the_levels_end_exits_two() {
    let folder = tempfile::tempdir().unwrap();
    let output = tape_with_actions(folder.path(), "(at_phase: 5000, play: LoseResponse)");
    assert_eq!(output.status.code(), Some(2));
    assert!(text(&output).contains("after the level's end"), "{}", text(&output));
}

#[test]
fn a_tape_whose_level_is_missing_exits_two() {
    let folder = tempfile::tempdir().unwrap();
    let tape = folder.path().join("lonely.tape.ron");
    std::fs::write(
        &tape,
        "(level: \"nowhere.level.ron\", seed: 1, expect: (verdict: paid_once))",
    )
    .unwrap();
    let output = twice_sim(&["replay", tape.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(2));
    assert!(text(&output).contains("does not exist"), "{}", text(&output));
}

#[test]
fn a_bad_guard_name_exits_two() {
    let output = twice_sim(&["play", "levels/01-naive-retry.level.ron", "--guards", "ledger,moat"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(text(&output).contains("moat"), "{}", text(&output));
}

/// A level given where a tape goes, or a tape where a level goes, says which file it is
/// (it used to say "Unexpected field `id` in `TapeVersion1`"), in every command that loads one.
#[test]
fn a_level_where_a_tape_goes_and_the_reverse_say_which_file_it_is_in_every_command() {
    let level = "levels/01-naive-retry.level.ron";
    let tape = "levels/01-naive-retry.win.tape.ron";
    let level_as_tape: [&[&str]; 3] = [
        &["replay", level],
        &["play", level, "--tape", level],
        &["upgrade", level],
    ];
    let tape_as_level: [&[&str]; 3] = [
        &["play", tape],
        &["defend", tape, "--guards", "all"],
        &["explore", tape],
    ];
    for (cases, said) in [
        (&level_as_tape, "this is a level file"),
        (&tape_as_level, "this is a tape"),
    ] {
        for arguments in cases.iter() {
            let output = twice_sim(arguments);
            // `upgrade` goes on past a file it cannot upgrade and counts it (exit 1).
            let code = if arguments[0] == "upgrade" { 1 } else { 2 };
            assert_eq!(output.status.code(), Some(code), "{arguments:?}: {}", text(&output));
            assert!(text(&output).contains(said), "{arguments:?}: {}", text(&output));
            assert!(
                !text(&output).contains("Unexpected field"),
                "{arguments:?}: {}",
                text(&output)
            );
        }
    }
}

/// `play`'s timeline: every column starts at the same place on every line (the actor column
/// used to take no padding, so the rest of each line shifted with the actor's name).
#[test]
fn plays_timeline_columns_line_up() {
    let output = twice_sim(&[
        "play",
        "levels/01-naive-retry.level.ron",
        "--tape",
        "levels/01-naive-retry.win.tape.ron",
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    let stdout = String::from_utf8_lossy(&output.stdout);
    let table: Vec<&str> = stdout
        .split("== timeline ==\n")
        .nth(1)
        .expect("a timeline")
        .lines()
        .take_while(|line| !line.is_empty() && !line.starts_with("=="))
        .collect();
    let header = table[0];
    let actors: std::collections::BTreeSet<&str> = table[1..]
        .iter()
        .map(|line| line[header.find("actor").unwrap()..header.find("phase kind").unwrap()].trim())
        .collect();
    assert!(actors.len() >= 3, "actors of several name lengths: {actors:?}");
    for column in ["phase kind", "key", "text"] {
        let at = header.find(column).unwrap();
        for line in &table[1..] {
            assert!(line.is_char_boundary(at), "{line}");
            assert_eq!(&line[at - 1..at], " ", "{column} in {line:?}");
            assert_ne!(&line[at..=at], " ", "{column} in {line:?}");
        }
    }
}

#[test]
fn output_cut_short_by_its_reader_ends_quietly_as_command_line_tools_do() {
    // `twice-sim play … | head -2`: the reader closes the pipe after two lines. The campaign
    // replayed eight times prints more than a pipe holds (~98 KB against 64 KB), so the writer
    // is still writing when the pipe closes, however fast it runs.
    let mut child = Command::new(env!("CARGO_BIN_EXE_twice-sim"))
        .args([
            "replay", "levels", "levels", "levels", "levels", "levels", "levels", "levels", "levels",
        ])
        .current_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join(".."))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("twice-sim runs");
    let stdout = child.stdout.take().expect("stdout is piped");
    let mut lines = std::io::BufRead::lines(std::io::BufReader::new(stdout));
    assert!(lines.next().is_some_and(|line| line.is_ok()), "a first line is printed");
    drop(lines);
    let output = child.wait_with_output().expect("twice-sim ends");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(141), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(stderr.is_empty(), "nothing on stderr: {stderr}");
}

#[test]
fn replay_update_shows_the_difference_and_rewrites_only_the_expect_block() {
    let folder = tempfile::tempdir().unwrap();
    let shipped = Path::new(env!("CARGO_MANIFEST_DIR")).join("../levels/regressions");
    let level = "identical-credits-hashed-key.level.ron";
    std::fs::copy(shipped.join(level), folder.path().join(level)).unwrap();
    let tape = folder.path().join("merged.tape.ron");
    let original = std::fs::read_to_string(shipped.join("identical-credits-hashed-key.merged.tape.ron")).unwrap();
    let wrong = original
        .replace("verdict: not_paid_but_owed,", "verdict: paid_once, // I thought so")
        .replace("\"Ada\": 2500", "\"Ada\": 5000");
    assert_ne!(wrong, original);
    std::fs::write(&tape, &wrong).unwrap();
    let path = tape.to_str().unwrap();

    let before = twice_sim(&["replay", path]);
    assert_eq!(before.status.code(), Some(1), "{}", text(&before));
    for line in [
        "verdict: expected paid_once, got not_paid_but_owed",
        "paid_cents: expected Ada $50.00 (5000), got $25.00 (2500)",
    ] {
        assert!(text(&before).contains(line), "missing {line:?} in {}", text(&before));
    }
    assert_eq!(
        std::fs::read_to_string(&tape).unwrap(),
        wrong,
        "without --update nothing is written"
    );

    let updated = twice_sim(&["replay", "--update", path]);
    assert_eq!(updated.status.code(), Some(0), "{}", text(&updated));
    assert!(text(&updated).contains("UPDATED"), "{}", text(&updated));
    assert!(
        text(&updated).contains("paid_cents: expected Ada $50.00"),
        "the difference is shown: {}",
        text(&updated)
    );
    let rewritten = std::fs::read_to_string(&tape).unwrap();
    let head = &original[..original.find("expect:").unwrap()];
    assert!(
        rewritten.starts_with(head),
        "comments and moves stay as written:\n{rewritten}"
    );
    assert!(
        rewritten.contains("\"Ada\": 2500") && rewritten.contains("not_paid_but_owed"),
        "{rewritten}"
    );

    let after = twice_sim(&["replay", path]);
    assert_eq!(after.status.code(), Some(0), "{}", text(&after));
    let runtime = twice_sim(&["replay", "--update", "--runtime", "true", path]);
    assert_eq!(
        runtime.status.code(),
        Some(2),
        "--update judges Twice's own runtime only: {}",
        text(&runtime)
    );
}

/// A format 2 tape of level 01 with these moves, expecting its win, replayed.
fn format_2_tape_with_actions(folder: &Path, actions: &str) -> Output {
    let level = edited_level(folder, "l.level.ron", "id: \"naive-retry\"", "id: \"naive-retry\"");
    let tape = folder.join("t.tape.ron");
    let level = level.file_name().unwrap().to_str().unwrap();
    std::fs::write(
        &tape,
        format!("(\n  version: 2,\n  level: \"{level}\",\n  seed: 1,\n  actions: [\n    {actions}\n  ],\n  expect: (verdict: paid_twice),\n)"),
    )
    .unwrap();
    twice_sim(&["replay", tape.to_str().unwrap()])
}

#[test]
fn a_move_that_fizzles_or_meets_a_quiet_run_exits_two_at_its_line_unless_marked() {
    let folder = tempfile::tempdir().unwrap();
    // The first move wins the level; the second is aimed at a key no message carries.
    let win = "(at_phase: 12, play: LoseResponse(key: Some(\"r1:c2\"))),";
    let stray = "(at_phase: 13, play: LoseRequest(key: Some(\"r9:c9\"))";
    let output = format_2_tape_with_actions(folder.path(), &format!("{win}\n    {stray}),"));
    assert_eq!(output.status.code(), Some(2), "{}", text(&output));
    let printed = text(&output);
    assert!(
        printed.contains("t.tape.ron:7:") && printed.contains("fizzled"),
        "{printed}"
    );
    assert!(printed.contains("fizzles: true"), "it says how to mark it: {printed}");

    let marked = format_2_tape_with_actions(folder.path(), &format!("{win}\n    {stray}, fizzles: true),"));
    assert_eq!(marked.status.code(), Some(0), "{}", text(&marked));

    let quiet = format_2_tape_with_actions(
        folder.path(),
        &format!("{win}\n    (at_phase: 190, play: LoseRequest(key: None)),"),
    );
    assert_eq!(quiet.status.code(), Some(2), "{}", text(&quiet));
    assert!(
        text(&quiet).contains("t.tape.ron:7:") && text(&quiet).contains("went quiet"),
        "{}",
        text(&quiet)
    );

    let wrongly_marked = format_2_tape_with_actions(
        folder.path(),
        "(at_phase: 12, play: LoseResponse(key: Some(\"r1:c2\")), fizzles: true),",
    );
    assert_eq!(wrongly_marked.status.code(), Some(1), "{}", text(&wrongly_marked));
    assert!(
        text(&wrongly_marked).contains("marked to fizzle but took effect"),
        "{}",
        text(&wrongly_marked)
    );
}

/// `twice-sim` run in `folder`.
fn twice_sim_in(folder: &Path, arguments: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_twice-sim"))
        .args(arguments)
        .current_dir(folder)
        .output()
        .expect("twice-sim runs")
}

#[test]
fn explore_and_defend_exit_by_what_they_are_expected_to_find() {
    let folder = tempfile::tempdir().unwrap();
    let levels = Path::new(env!("CARGO_MANIFEST_DIR")).join("../levels");
    let level = levels.join("01-naive-retry.level.ron");
    let level = level.to_str().unwrap();
    let out = folder.path().join("found.tape.ron");
    let out = out.to_str().unwrap();
    // The level's guards let a heist through: found by default, a failure when none is expected.
    let search = [
        "explore",
        level,
        "--schedules",
        "2000",
        "--jobs",
        "1",
        "--out",
        out,
        "--force",
    ];
    let found = twice_sim(&search);
    assert_eq!(found.status.code(), Some(0), "{}", text(&found));
    let expecting_none = twice_sim(&[&search[..], &["--expect", "none"]].concat());
    assert_eq!(expecting_none.status.code(), Some(1), "{}", text(&expecting_none));
    assert!(Path::new(out).is_file(), "the counter-example is written either way");
    // Every guard on: nothing is found, which is what a defence check in CI expects.
    let held = [
        "explore",
        level,
        "--schedules",
        "200",
        "--jobs",
        "1",
        "--out",
        out,
        "--force",
        "--guards",
        "all",
    ];
    let nothing = twice_sim(&held);
    assert_eq!(nothing.status.code(), Some(1), "{}", text(&nothing));
    let as_expected = twice_sim(&[&held[..], &["--expect", "none"]].concat());
    assert_eq!(as_expected.status.code(), Some(0), "{}", text(&as_expected));
    let bad = twice_sim(&[&held[..], &["--expect", "maybe"]].concat());
    assert_eq!(bad.status.code(), Some(2), "{}", text(&bad));

    // A bare file name is a level in the current folder, and its folder is the campaign.
    let defend = [
        "defend",
        "02-one-attempt.level.ron",
        "--guards",
        "write_retry_rule",
        "--schedules",
        "50",
    ];
    let holds = twice_sim_in(&levels, &defend);
    assert_eq!(holds.status.code(), Some(0), "{}", text(&holds));
    assert!(!text(&holds).contains("error: :"), "{}", text(&holds));
    let expecting_a_heist = twice_sim_in(&levels, &[&defend[..], &["--expect", "found"]].concat());
    assert_eq!(expecting_a_heist.status.code(), Some(1), "{}", text(&expecting_a_heist));
    let open = [
        "defend",
        "02-one-attempt.level.ron",
        "--guards",
        "none",
        "--schedules",
        "50",
        "--expect",
        "found",
    ];
    let got_in = twice_sim_in(&levels, &open);
    assert_eq!(got_in.status.code(), Some(0), "{}", text(&got_in));
}

/// `play --json` tells a guard's row as the text form and the screens do: in a run that paid a
/// customer twice, no row says "guard held" (the raw note is re-told as "guard noted", with
/// what the run still did), so a script reading the JSON draws no false shield.
#[test]
fn play_json_tells_guard_rows_by_the_runs_money() {
    let output = twice_sim(&[
        "play",
        "levels/09-settle-it-yourself.level.ron",
        "--tape",
        "levels/09-settle-it-yourself.win.tape.ron",
        "--json",
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).expect("play --json prints JSON");
    assert_eq!(report["verdict"]["outcome"], "paid_twice", "{report:#}");
    let rows = report["timeline"].as_array().expect("a timeline");
    let guard_rows: Vec<&serde_json::Value> = rows.iter().filter(|row| !row["guard"].is_null()).collect();
    assert!(!guard_rows.is_empty(), "09's winning run has guards' rows");
    for row in guard_rows {
        assert_eq!(row["kind"], "guard noted", "{row:#}");
        assert_eq!(row["guard_row"]["holding"], false, "{row:#}");
        let words = row["guard_row"]["words"].as_str().expect("the row's words");
        assert!(words.contains("pays a customer twice"), "{words}");
    }
}
