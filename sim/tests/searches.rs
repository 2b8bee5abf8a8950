//! The searches in CI: `defend` on any level, counter-examples written as tapes with `--out`
//! (for `explore` and `defend`) that replay to the verdict they were found with, and `check`
//! holding what a level declares — a defender's minimum and budget, par — to what the
//! searches find.

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

fn levels() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../levels")
}

fn path(path: &Path) -> &str {
    path.to_str().expect("UTF-8 paths")
}

/// A copy of the shipped campaign (levels and tapes, not the regression cases) in `folder`,
/// with `from` replaced by `to` in the level file `name`.
fn campaign_copy(folder: &Path, name: &str, from: &str, to: &str) -> PathBuf {
    for entry in std::fs::read_dir(levels()).unwrap() {
        let entry = entry.unwrap();
        if entry.file_type().unwrap().is_file() {
            std::fs::copy(entry.path(), folder.join(entry.file_name())).unwrap();
        }
    }
    let level = folder.join(name);
    let original = std::fs::read_to_string(&level).unwrap();
    assert!(original.contains(from), "{name} contains {from:?}");
    std::fs::write(&level, original.replacen(from, to, 1)).unwrap();
    level
}

#[test]
fn defend_takes_a_winnable_level_and_writes_its_counter_example_as_a_tape_that_replays() {
    let out = tempfile::tempdir().unwrap();
    let level = levels().join("01-naive-retry.level.ron");
    let defend = ["defend", path(&level), "--schedules", "500", "--out", path(out.path())];
    // A winnable level is defended like any other: with no guard on, the explorer gets in.
    let got_in = twice_sim(&defend);
    assert_eq!(got_in.status.code(), Some(1), "{}", text(&got_in));
    assert!(text(&got_in).contains("the defence does not hold"), "{}", text(&got_in));
    assert!(!text(&got_in).contains("not unbeatable"), "{}", text(&got_in));
    let written = out.path().join("01-naive-retry.counter.tape.ron");
    assert!(written.is_file(), "{}", text(&got_in));
    assert!(
        text(&got_in).contains(&format!("to {}", written.display())),
        "{}",
        text(&got_in)
    );
    // What was written replays, on its own, to the verdict the defence found.
    let replayed = twice_sim(&["replay", path(&written)]);
    assert_eq!(replayed.status.code(), Some(0), "{}", text(&replayed));
    assert!(text(&replayed).contains("paid_twice"), "{}", text(&replayed));
    // The same file again is refused without --force (exit 2, naming it), kept with it.
    let again = twice_sim(&defend);
    assert_eq!(again.status.code(), Some(2), "{}", text(&again));
    assert!(text(&again).contains("already exists"), "{}", text(&again));
    let forced = twice_sim(&[&defend[..], &["--force", "--expect", "found"]].concat());
    assert_eq!(forced.status.code(), Some(0), "{}", text(&forced));
}

#[test]
fn a_regression_levels_defence_replays_its_own_tapes_as_known_heists() {
    let level = levels().join("regressions/lease-expiry-in-flight.level.ron");
    let report = twice_sim(&[
        "defend",
        path(&level),
        "--guards",
        "no_lease_expiry",
        "--schedules",
        "20",
        "--expect",
        "found",
    ]);
    let said = text(&report);
    assert!(report.status.code().is_some_and(|code| code < 2), "{said}");
    // The bug its tape reproduces is a heist here (it needs the level's own ledger on to fire),
    // and the fix holds it.
    let line = said
        .lines()
        .find(|line| line.contains("lease-expiry-in-flight.reproduced.tape.ron"))
        .unwrap_or_else(|| panic!("the regression's own tape is a known heist: {said}"));
    assert!(line.trim_start().starts_with("held "), "{said}");
}

#[test]
fn explore_writes_into_a_folder_given_as_out() {
    let out = tempfile::tempdir().unwrap();
    let level = levels().join("01-naive-retry.level.ron");
    let found = twice_sim(&[
        "explore",
        path(&level),
        "--schedules",
        "2000",
        "--jobs",
        "1",
        "--out",
        path(out.path()),
    ]);
    assert_eq!(found.status.code(), Some(0), "{}", text(&found));
    let written = out.path().join("01-naive-retry.explored.tape.ron");
    assert!(written.is_file(), "{}", text(&found));
    let replayed = twice_sim(&["replay", path(&written)]);
    assert_eq!(replayed.status.code(), Some(0), "{}", text(&replayed));
}

#[test]
fn check_holds_a_defenders_declared_minimum_and_budget_to_the_search() {
    // A minimum that does not hold: the explorer beats it.
    let folder = tempfile::tempdir().unwrap();
    let level = campaign_copy(
        folder.path(),
        "02-one-attempt.level.ron",
        "minimum: [write_retry_rule]",
        "minimum: [ledger]",
    );
    let checked = twice_sim(&["check", path(&level)]);
    assert_eq!(checked.status.code(), Some(2), "{}", text(&checked));
    assert!(
        text(&checked).contains("02-one-attempt.level.ron:27:27: the minimum [ledger] does not hold"),
        "{}",
        text(&checked)
    );
    // A minimum with a guard too many: it holds without it.
    let folder = tempfile::tempdir().unwrap();
    let level = campaign_copy(
        folder.path(),
        "02-one-attempt.level.ron",
        "minimum: [write_retry_rule]",
        "minimum: [write_retry_rule, tool_contract]",
    );
    let checked = twice_sim(&["check", path(&level)]);
    assert_eq!(checked.status.code(), Some(2), "{}", text(&checked));
    assert!(
        text(&checked).contains("is not the smallest: without tool_contract it holds too"),
        "{}",
        text(&checked)
    );
    // A minimum over its budget (refused as the level loads).
    let folder = tempfile::tempdir().unwrap();
    let level = campaign_copy(folder.path(), "02-one-attempt.level.ron", "budget: 2,", "budget: 0,");
    let checked = twice_sim(&["check", path(&level)]);
    assert_eq!(checked.status.code(), Some(2), "{}", text(&checked));
    assert!(
        text(&checked).contains("02-one-attempt.level.ron:27:16: the defender's budget 0 must be at least its minimum"),
        "{}",
        text(&checked)
    );
    // The shipped level, as it is: no problem.
    let shipped = twice_sim(&["check", path(&levels().join("02-one-attempt.level.ron"))]);
    assert_eq!(shipped.status.code(), Some(0), "{}", text(&shipped));
}

#[test]
fn check_holds_par_to_the_explorers_find() {
    // Level 32 alone in a folder (no other level's moves to excuse a shorter win), claiming a
    // par of two cards when one crash wins it.
    let folder = tempfile::tempdir().unwrap();
    let original = std::fs::read_to_string(levels().join("32-key-retention.level.ron")).unwrap();
    let requires = original
        .lines()
        .find(|line| line.trim_start().starts_with("requires:"))
        .expect("level 32 requires a level");
    let edited = original
        .replacen(requires, "    requires: [],", 1)
        .replacen("par: (cards: 1,", "par: (cards: 2,", 1);
    let level = folder.path().join("32-key-retention.level.ron");
    std::fs::write(&level, &edited).unwrap();
    let checked = twice_sim(&["check", path(&level)]);
    assert_eq!(checked.status.code(), Some(2), "{}", text(&checked));
    assert!(
        text(&checked).contains("32-key-retention.level.ron:25:5: par says 2 cards, and the explorer wins with 1"),
        "{}",
        text(&checked)
    );
    // Its true par: no problem.
    std::fs::write(&level, edited.replacen("par: (cards: 2,", "par: (cards: 1,", 1)).unwrap();
    let checked = twice_sim(&["check", path(&level)]);
    assert_eq!(checked.status.code(), Some(0), "{}", text(&checked));
}
