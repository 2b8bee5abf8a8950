//! `twice-sim drill-batch-crash`, run as a user runs it: a process of many runs on a commit
//! group, SIGKILLed in the middle of a batch, round after round; the drill checks that every
//! call billing saw is in the ledger with its attempt counted and every acknowledged outcome
//! is there as completed. On a SQLite file always; on PostgreSQL with `TWICE_POSTGRES_URL`
//! (skipped without it, failed in CI without it: see `twice_ledger_postgres::testing`).

use std::process::{Command, Output};

use twice_sim::ledger_postgres::testing::TestDatabase;

const BIN: &str = env!("CARGO_BIN_EXE_twice-sim");

/// The drill on `ledger` (a PostgreSQL password, if any, by the environment).
fn drill(ledger: &str, password: Option<&str>, billing: &std::path::Path) -> Output {
    let mut command = Command::new(BIN);
    if let Some(password) = password {
        command.env("PGPASSWORD", password);
    }
    command
        .args([
            "drill-batch-crash",
            "--ledger",
            ledger,
            "--runs",
            "12",
            "--rounds",
            "3",
            "--billing",
        ])
        .arg(billing)
        .output()
        .expect("twice-sim runs")
}

fn assert_every_round_checked(output: &Output) {
    let printed = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(output.status.code(), Some(0), "{printed}");
    for round in 1..=3 {
        assert!(
            printed.contains(&format!("round {round}: killed before batch")),
            "{printed}"
        );
    }
    assert_eq!(printed.matches("every one is in the ledger").count(), 3, "{printed}");
    // By the last round's batch 36, 35 durable batches had answered calls the tool acted on.
    let last = printed.lines().find(|line| line.starts_with("round 3:")).unwrap();
    let acted: u64 = last
        .split("; ")
        .find(|part| part.contains(" calls acted on"))
        .and_then(|part| part.split_whitespace().next())
        .and_then(|count| count.parse().ok())
        .unwrap_or_else(|| panic!("{last}"));
    assert!(acted > 0, "{last}");
}

#[test]
fn killed_mid_batch_on_sqlite_nothing_billed_or_acknowledged_is_missing() {
    let folder = tempfile::tempdir().unwrap();
    let ledger = folder.path().join("ledger.sqlite");
    let output = drill(ledger.to_str().unwrap(), None, &folder.path().join("billing.log"));
    assert_every_round_checked(&output);
}

#[test]
fn killed_mid_batch_on_postgres_nothing_billed_or_acknowledged_is_missing() {
    let Some(database) = TestDatabase::create("drill_batch_crash") else {
        return;
    };
    let folder = tempfile::tempdir().unwrap();
    let url = database.fresh_schema();
    let output = drill(
        &url.without_password(),
        url.password(),
        &folder.path().join("billing.log"),
    );
    assert_every_round_checked(&output);
}

#[test]
fn a_billing_file_that_exists_is_refused() {
    let folder = tempfile::tempdir().unwrap();
    let billing = folder.path().join("billing.log");
    std::fs::write(&billing, "").unwrap();
    let output = drill(folder.path().join("ledger.sqlite").to_str().unwrap(), None, &billing);
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("already exists"));
}
