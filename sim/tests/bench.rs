//! `twice-sim bench --quick` with tiny counts: the command keeps working, prints all five
//! figures, and finds zero duplicate reservations under contention; `--figures` measures and
//! prints exactly the rows of the figures it names (on PostgreSQL too, given a server), so no
//! row can go missing from the table unnoticed. The figures themselves are not checked here (a
//! test machine is no benchmark machine); the book's "Performance" chapter has them.

use std::collections::BTreeMap;
use std::path::Path;
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

const TINY: [&str; 11] = [
    "bench",
    "--quick",
    "--cycles",
    "6",
    "--rounds",
    "2",
    "--scenarios",
    "6",
    "--keys",
    "12",
    "--processes=2,4",
];

/// How many rows of the table each figure has: the table runs from its header line ("figure
/// measured against …") to the first empty line, and each row begins with its figure's number.
fn rows_by_figure(printed: &str) -> BTreeMap<u8, usize> {
    let mut rows = BTreeMap::new();
    let table = printed
        .lines()
        .skip_while(|line| !line.starts_with("figure "))
        .skip(1)
        .take_while(|line| !line.is_empty());
    for line in table {
        let number = line.split(' ').next().and_then(|word| word.parse::<u8>().ok());
        let number = number.unwrap_or_else(|| panic!("a row that names no figure: {line:?} in {printed}"));
        *rows.entry(number).or_insert(0) += 1;
    }
    rows
}

/// The rows a tiny run prints per figure: figure 3 on two stores, figure 4 for `--processes=2,4`.
const ALL_ROWS: [(u8, usize); 5] = [(1, 1), (2, 1), (3, 2), (4, 2), (5, 1)];

#[test]
fn a_quick_bench_prints_five_figures_and_no_duplicates() {
    let output = twice_sim(&TINY);
    let printed = text(&output);
    assert_eq!(output.status.code(), Some(0), "{printed}");
    assert_eq!(rows_by_figure(&printed), BTreeMap::from(ALL_ROWS), "{printed}");
    assert!(!printed.contains("not measured in this run"), "{printed}");
    assert!(printed.contains("1 ledger: reserve+fence + complete"), "{printed}");
    assert!(printed.contains("2 peer"), "{printed}");
    assert!(printed.contains("5 64 runs, one process, group commit"), "{printed}");
    assert!(
        printed.contains("3 simulator: vault scenarios, 1 thread, sqlite store"),
        "{printed}"
    );
    assert!(
        printed.contains("3 simulator: vault scenarios, 1 thread, memory store"),
        "{printed}"
    );
    assert!(printed.contains("4 contention: 2 processes"), "{printed}");
    assert!(printed.contains("4 contention: 4 processes"), "{printed}");
    // Under the table, what a call costs here and the bound it puts on figure 5.
    assert!(printed.contains("figure 1, the cost: a cycle "), "{printed}");
    assert!(printed.contains("B pages): ledger "), "{printed}");
    assert!(printed.contains("a cycle waited "), "{printed}");
    assert!(
        printed.contains("figure 5, SQLite: the runs' threads took "),
        "{printed}"
    );
    assert!(
        printed.contains("the most this build can show on this machine"),
        "{printed}"
    );
    assert!(
        printed.contains("duplicate reservations: 0; lost reservations: 0"),
        "{printed}"
    );
    // Each ratio with its spread over the rounds, and how busy the machine was.
    assert!(printed.contains("per round: min / median / max"), "{printed}");
    assert!(printed.contains("(2 rounds)"), "{printed}");
    // A run this short may be too short to tell how busy the machine was; it says either.
    assert!(
        printed.contains("\nthe machine was ") || printed.contains("\nthe machine: how busy it was is unknown"),
        "{printed}"
    );
    // Six scenarios are too short to time on the CPU: that is said, never a rate of 0.
    assert!(!printed.contains(" 0 scenarios/CPU-s"), "{printed}");
    assert!(
        printed.contains("memory store: ") && printed.contains("too short to time there"),
        "{printed}"
    );
}

#[test]
fn figures_prints_the_rows_of_the_figures_it_names_and_says_which_it_left_out() {
    // Figures 1 and 2 are measured side by side: either brings both.
    let cases: [(&str, &[u8], &str); 6] = [
        ("1", &[1, 2], "3, 4, 5"),
        ("2", &[1, 2], "3, 4, 5"),
        ("3", &[3], "1 and 2, 4, 5"),
        ("4", &[4], "1 and 2, 3, 5"),
        ("5", &[5], "1 and 2, 3, 4"),
        ("5,1", &[1, 2, 5], "3, 4"),
    ];
    for (asked, figures, left_out) in cases {
        let mut arguments = TINY.to_vec();
        arguments.push("--figures");
        arguments.push(asked);
        let output = twice_sim(&arguments);
        let printed = text(&output);
        assert_eq!(output.status.code(), Some(0), "--figures {asked}: {printed}");
        let expected: BTreeMap<u8, usize> = ALL_ROWS
            .into_iter()
            .filter(|(figure, _)| figures.contains(figure))
            .collect();
        assert_eq!(rows_by_figure(&printed), expected, "--figures {asked}: {printed}");
        assert!(
            printed.contains(&format!("not measured in this run (--figures): {left_out}\n")),
            "--figures {asked}: {printed}"
        );
    }
    // The JSON report holds what was measured and null for the rest.
    let mut arguments = TINY.to_vec();
    arguments.extend(["--figures", "5", "--json"]);
    let output = twice_sim(&arguments);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).expect("the report is JSON");
    assert!(
        report["group"]["grouped"]["per_second"]
            .as_f64()
            .is_some_and(|rate| rate > 0.0),
        "{report:#}"
    );
    for left_out in [
        "ledger",
        "peer",
        "simulator",
        "simulator_sqlite",
        "contention",
        "postgres_group",
    ] {
        assert!(report[left_out].is_null(), "{left_out}: {report:#}");
    }
    // No figure, or one that does not exist, is refused with the flag named.
    for (asked, message) in [
        ("6", "--figures 6: there are figures 1 to 5"),
        ("0", "--figures 0: there are figures 1 to 5"),
    ] {
        let output = twice_sim(&["bench", "--quick", "--figures", asked]);
        assert_eq!(output.status.code(), Some(2), "{}", text(&output));
        assert!(text(&output).contains(message), "{}", text(&output));
    }
}

#[test]
fn on_postgres_figures_1_and_5_have_their_rows_against_postgres_own_single_commits() {
    let Some(database) = twice_sim::ledger_postgres::testing::TestDatabase::create(
        "on_postgres_figures_1_and_5_have_their_rows_against_postgres_own_single_commits",
    ) else {
        return;
    };
    let url = database.url();
    let mut arguments = TINY.to_vec();
    let flag = url.without_password();
    arguments.extend(["--figures", "1,5", "--ledger", &flag]);
    let mut command = Command::new(env!("CARGO_BIN_EXE_twice-sim"));
    command
        .args(&arguments)
        .current_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join(".."));
    if let Some(password) = url.password() {
        command.env("PGPASSWORD", password);
    }
    let output = command.output().expect("twice-sim runs");
    let printed = text(&output);
    assert_eq!(output.status.code(), Some(0), "{printed}");
    assert_eq!(
        rows_by_figure(&printed),
        BTreeMap::from([(1, 2), (2, 1), (5, 3)]),
        "{printed}"
    );
    let postgres_rows: Vec<&str> = printed.lines().filter(|line| line.contains("on PostgreSQL")).collect();
    assert_eq!(postgres_rows.len(), 3, "{printed}");
    for row in postgres_rows {
        assert!(row.contains("PostgreSQL INSERT+commit "), "{row}");
    }
}

#[test]
fn run_outside_the_repository_it_names_the_level_flag() {
    let folder = tempfile::tempdir().unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_twice-sim"))
        .args(["bench", "--quick"])
        .current_dir(folder.path())
        .output()
        .expect("twice-sim runs");
    assert_eq!(output.status.code(), Some(2), "{}", text(&output));
    let printed = text(&output);
    assert!(
        printed.contains("--level levels/19-vault.level.ron: no such file"),
        "{printed}"
    );
    assert!(printed.contains("pass --level"), "{printed}");
}

#[test]
fn the_json_report_has_every_figure_measured() {
    let mut arguments = TINY.to_vec();
    arguments.push("--json");
    let output = twice_sim(&arguments);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).expect("the report is JSON");
    let positive = |pointer: &str| {
        let value = report
            .pointer(pointer)
            .and_then(serde_json::Value::as_f64)
            .unwrap_or_else(|| panic!("{pointer} missing in {report:#}"));
        assert!(value > 0.0, "{pointer} is {value}");
    };
    positive("/ledger/ours/per_second");
    positive("/ledger/raw/per_second");
    positive("/ledger/ratio");
    positive("/simulator/per_second");
    positive("/simulator_sqlite/per_second");
    assert_eq!(report["simulator"]["store"], "memory");
    assert_eq!(report["simulator_sqlite"]["store"], "sqlite");
    assert_eq!(report["simulator_sqlite"]["scenarios"], 6);
    positive("/contention/alone/reservations_per_second");
    assert_eq!(report["ledger"]["ours"]["items"], 6);
    assert_eq!(report["ledger"]["ratio_spread"]["rounds"], 2, "{report:#}");
    assert_eq!(
        report["ledger"]["ours"]["round_rates"].as_array().map(Vec::len),
        Some(2)
    );
    assert_eq!(report["simulator"]["ratio_spread"]["rounds"], 2, "{report:#}");
    // Null when the run spans too few clock ticks to tell (`machine::WINDOW_TICKS_MIN`).
    if !report["other_work"].is_null() {
        let share = report["other_work"]["share_of_machine"].as_f64().expect("a share");
        assert!((0.0..=1.0).contains(&share), "{share}");
        assert_eq!(report["other_work"]["busy"].as_bool(), Some(share > 0.25));
    }
    assert_eq!(report["simulator"]["scenarios"], 6);
    let contended = report["contention"]["contended"].as_array().expect("contended runs");
    assert_eq!(contended.len(), 2);
    for row in contended {
        assert_eq!(row["duplicates"], 0, "{row:#}");
        assert_eq!(row["unreserved"], 0, "{row:#}");
        // Every process reserved every key.
        assert_eq!(row["reservations"], row["processes"].as_u64().unwrap() * 12, "{row:#}");
        positive_value(&row["reservations_per_second"]);
    }
    assert_eq!(report["duplicates"], 0);
    // With the peer built in, figure 2 is measured too; without it, the report says why.
    if cfg!(feature = "peer-benchmark") {
        positive("/peer/measured/per_second");
        positive("/peer/ratio");
    } else {
        assert!(report["peer"]["measured"].is_null());
        assert!(
            report["peer"]["peer"]
                .as_str()
                .unwrap()
                .contains("--features peer-benchmark"),
            "{report:#}"
        );
    }
}

fn positive_value(value: &serde_json::Value) {
    assert!(value.as_f64().is_some_and(|value| value > 0.0), "{value}");
}

#[test]
fn bad_counts_are_refused_with_the_flag_named() {
    let output = twice_sim(&["bench", "--cycles", "0"]);
    assert_eq!(output.status.code(), Some(2), "{}", text(&output));
    assert!(text(&output).contains("--cycles 0: from 1 to"), "{}", text(&output));
    let output = twice_sim(&["bench", "--processes", "2,65"]);
    assert_eq!(output.status.code(), Some(2), "{}", text(&output));
    assert!(text(&output).contains("--processes 65"), "{}", text(&output));
    let output = twice_sim(&["bench", "--quick", "--level", "levels/no-such.level.ron"]);
    assert_eq!(output.status.code(), Some(2), "{}", text(&output));
    assert!(
        text(&output).contains("--level levels/no-such.level.ron: no such file"),
        "{}",
        text(&output)
    );
}

#[test]
fn a_worker_refuses_a_ledger_that_does_not_exist() {
    let folder = tempfile::tempdir().unwrap();
    let missing = folder.path().join("missing.sqlite");
    let output = twice_sim(&[
        "bench-worker",
        "--ledger",
        missing.to_str().unwrap(),
        "--worker-id",
        "p0",
        "--keys",
        "3",
    ]);
    assert_ne!(output.status.code(), Some(0), "{}", text(&output));
    assert!(
        text(&output).contains("missing.sqlite: no such file"),
        "{}",
        text(&output)
    );
    assert!(!missing.exists(), "the worker must not create the ledger");
}
