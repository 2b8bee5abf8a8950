//! The commands on the PostgreSQL ledger (`--ledger postgres://…`), run as a user runs them:
//! a worker driving a run, the operator API deciding one call out of sixteen racing
//! requests, the drill on one machine and across hosts (network namespaces, partitions,
//! pauses), and every refusal: a bad URL or an unreachable server exits 2 and never shows
//! the password.
//!
//! The refusals need no server and always run. The rest need `TWICE_POSTGRES_URL` (each test
//! makes a database of its own and drops it); without it they say they were skipped and
//! pass, except in CI, where they fail. The drills across hosts also need root and `ip`;
//! without them they say so and pass, unless `TWICE_REQUIRE_HOSTS=1` (set by `.ci/postgres`).

mod common;

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::{BIN, BillingServer};
use serde_json::{Value, json};
use twice_sim::ledger::ReserveRequest;
use twice_sim::ledger_postgres::testing::TestDatabase;
use twice_sim::runtime::key::IdempotencyKey;
use twice_sim::runtime::rules::Status;
use twice_sim::runtime::tool::SideEffect;

/// Set to `1` where the drills across hosts must run (root and `ip` there).
const REQUIRE_HOSTS_VARIABLE: &str = "TWICE_REQUIRE_HOSTS";
/// A password the tests put in URLs to see that it is never shown.
const SECRET: &str = "hunter2-never-shown";
/// Drills across hosts share the machine's namespace names: one at a time.
static HOSTS: Mutex<()> = Mutex::new(());

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Whether the drills across hosts can run here (root, `ip`); says why not when they cannot.
fn hosts_can_be_made(test: &str) -> bool {
    let root = std::fs::read_to_string("/proc/self/status").is_ok_and(|status| {
        status
            .lines()
            .find(|line| line.starts_with("Uid:"))
            .and_then(|line| line.split_whitespace().nth(2))
            == Some("0")
    });
    let ip = Command::new("ip").arg("-V").output().is_ok();
    if root && ip {
        return true;
    }
    let why = if root { "the `ip` command (iproute2)" } else { "root" };
    assert!(
        std::env::var(REQUIRE_HOSTS_VARIABLE).as_deref() != Ok("1"),
        "{test}: {REQUIRE_HOSTS_VARIABLE}=1 but the drill across hosts needs {why}"
    );
    let _ = writeln!(
        std::io::stderr().lock(),
        "skipped {test}: the drill across hosts needs {why}"
    );
    false
}

fn namespaces_left() -> Vec<String> {
    let output = Command::new("ip").args(["netns", "list"]).output().expect("ip runs");
    text(&output.stdout)
        .lines()
        .filter_map(|line| line.split_whitespace().next())
        .filter(|name| name.starts_with("twice-"))
        .map(str::to_owned)
        .collect()
}

/// Schemas the drills left in `database`.
fn drill_schemas(database: &TestDatabase) -> Vec<String> {
    let url = database.url();
    let mut config = postgres::Config::new();
    config
        .host(url.host())
        .port(url.port())
        .user(url.user())
        .dbname(url.database());
    if let Some(password) = url.password() {
        config.password(password);
    }
    let mut client = config.connect(postgres::NoTls).expect("a raw connection");
    client
        .query(
            "SELECT nspname::text FROM pg_namespace WHERE nspname LIKE 'twice_drill_%' ORDER BY 1",
            &[],
        )
        .unwrap()
        .iter()
        .map(|row| row.get(0))
        .collect()
}

/// The `--ledger` flag for a test database, and the password to pass as `PGPASSWORD` (as a
/// careful user does: out of the command line, where `ps` shows it).
fn ledger_flag(url: &twice_sim::ledger_postgres::PostgresUrl) -> (String, Option<String>) {
    (url.without_password(), url.password().map(str::to_owned))
}

fn twice_with_password(args: &[&str], password: Option<&str>) -> Output {
    twice_in(args, password, None)
}

fn twice_in(args: &[&str], password: Option<&str>, temporary: Option<&std::path::Path>) -> Output {
    let mut command = Command::new(BIN);
    command.args(args);
    if let Some(temporary) = temporary {
        command.env("TMPDIR", temporary);
    }
    if let Some(password) = password {
        command.env("PGPASSWORD", password);
    }
    command.output().expect("twice-sim runs")
}

/// Runs a drill with `--json` (its billing database in a folder removed after); its exit
/// code and report. With `--dir` the drill would keep its schema: it is not given one here.
fn drill(args: &[&str], password: Option<&str>) -> (i32, Value) {
    let dir = tempfile::tempdir().unwrap();
    let inside = dir.path().join("drill");
    let mut all = vec!["drill", "--json"];
    all.extend_from_slice(args);
    // A drill that fails keeps its files in a temporary folder of its own; TMPDIR puts that
    // folder inside this test's, so nothing is left behind.
    std::fs::create_dir_all(&inside).unwrap();
    let output = twice_in(&all, password, Some(&inside));
    let stdout = text(&output.stdout);
    let report: Value = serde_json::from_str(&stdout).unwrap_or_else(|error| {
        panic!(
            "the drill prints a JSON report ({error}):\n{stdout}\nstderr:\n{}",
            text(&output.stderr)
        )
    });
    (output.status.code().expect("the drill exits by itself"), report)
}

fn number(report: &Value, field: &str) -> u64 {
    report[field]
        .as_u64()
        .unwrap_or_else(|| panic!("report field {field}: {report:#}"))
}

// ----- refusals: no server needed -----

#[test]
fn a_bad_url_or_an_unreachable_server_exits_2_and_never_shows_the_password() {
    let unreachable = format!("postgres://twice:{SECRET}@127.0.0.1:1/twice");
    let bad_port = format!("postgres://twice:{SECRET}@127.0.0.1:0/twice");
    let tokens = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(
        tokens.path(),
        format!(
            "(operators: [(id: \"ada\", token_sha256: \"{}\", tenants: [\"default\"])])",
            twice_sim::api::hash_token("ada-token-0123456789abcdef")
        ),
    )
    .unwrap();
    let tokens = tokens.path().to_str().unwrap();
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (
            vec![
                "worker",
                "--ledger",
                &unreachable,
                "--billing",
                "http://127.0.0.1:1",
                "--run",
                "run-0001",
                "--no-probe",
            ],
            "cannot open the ledger",
        ),
        (
            vec![
                "worker",
                "--ledger",
                &bad_port,
                "--billing",
                "http://127.0.0.1:1",
                "--run",
                "run-0001",
            ],
            "--ledger: port `0`",
        ),
        (
            vec![
                "serve",
                "--ledger",
                &unreachable,
                "--tokens",
                tokens,
                "--addr",
                "127.0.0.1:0",
            ],
            "cannot open the ledger",
        ),
        (
            vec!["drill", "--ledger", &unreachable, "--runs", "1"],
            "cannot open the ledger",
        ),
        (
            vec!["drill", "--ledger", "/tmp/ledger.sqlite"],
            "--ledger takes a postgres:// URL",
        ),
        (vec!["drill", "--hosts", "2"], "give --ledger postgres://"),
        (
            vec!["drill", "--hosts", "1", "--partitions", "1", "--ledger", &unreachable],
            "give --hosts 2 or more",
        ),
        (
            vec!["drill", "--hosts", "99", "--ledger", &unreachable],
            "--hosts 99 is outside 1..=16",
        ),
        (
            vec!["bench", "--quick", "--ledger", &unreachable, "--processes", "2"],
            "cannot open the ledger",
        ),
        (
            vec![
                "bench-worker",
                "--ledger",
                "mysql://root@db/x",
                "--worker-id",
                "p0",
                "--keys",
                "1",
            ],
            "`mysql://` is not a ledger",
        ),
    ];
    for (args, expected) in cases {
        let output = Command::new(BIN)
            .args(&args)
            .current_dir(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(".."))
            .output()
            .unwrap();
        let all = format!("{}{}", text(&output.stdout), text(&output.stderr));
        assert_eq!(output.status.code(), Some(2), "{args:?}: {all}");
        assert!(all.contains(expected), "{args:?}: expected `{expected}` in: {all}");
        assert!(!all.contains(SECRET), "{args:?} showed the password: {all}");
    }
}

// ----- one machine -----

#[test]
fn a_worker_drives_its_run_on_postgres_and_a_second_one_pays_nothing_again() {
    let Some(database) = TestDatabase::create("worker_on_postgres") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let billing = BillingServer::start(&dir.path().join("billing.sqlite"), "honour");
    let url = database.fresh_schema();
    let (ledger, password) = ledger_flag(&url);
    let worker = |id: &str| {
        twice_with_password(
            &[
                "worker",
                "--ledger",
                &ledger,
                "--billing",
                &billing.url,
                "--run",
                "run-0003",
                "--worker-id",
                id,
            ],
            password.as_deref(),
        )
    };
    let first = worker("w1");
    assert_eq!(first.status.code(), Some(0), "{}", text(&first.stderr));
    let stdout = text(&first.stdout);
    assert!(
        stdout.lines().last().unwrap().starts_with("end\texited\tcompleted"),
        "{stdout}"
    );
    let sends = stdout.lines().filter(|line| line.starts_with("phase\tsend")).count();
    let second = worker("w2");
    assert_eq!(second.status.code(), Some(0), "{}", text(&second.stderr));
    assert!(
        !text(&second.stdout).contains("phase\tsend"),
        "a finished run sends nothing"
    );

    let ledger = twice_sim::ledger_postgres::open_existing(&url).unwrap();
    let records = ledger.all_records().unwrap();
    assert_eq!(records.len(), sends);
    assert!(
        records
            .iter()
            .all(|record| record.status == Status::Completed && record.owner == "w1")
    );
    assert!(ledger.load_checkpoint("run-0003").unwrap().is_some());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_on_postgres_lets_exactly_one_of_sixteen_racing_operators_decide() {
    let Some(database) = TestDatabase::create("serve_on_postgres") else {
        return;
    };
    let url = database.fresh_schema();
    let mut ledger = twice_sim::ledger_postgres::open(&url).unwrap();
    let key = IdempotencyKey::parse("r1:c1").unwrap();
    ledger
        .reserve(
            &ReserveRequest::new(&key, "r1", "c1", "issue_credit", SideEffect::External, "{}", "w1")
                .with_tenant("default"),
            100,
        )
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let token = "ada-token-0123456789abcdef";
    let tokens = dir.path().join("tokens.ron");
    std::fs::write(
        &tokens,
        format!(
            "(operators: [(id: \"ada\", token_sha256: \"{}\", tenants: [\"default\"])])",
            twice_sim::api::hash_token(token)
        ),
    )
    .unwrap();
    let (ledger_text, password) = ledger_flag(&url);
    let mut command = Command::new(BIN);
    if let Some(password) = &password {
        command.env("PGPASSWORD", password);
    }
    let mut server = command
        .args(["serve", "--addr", "127.0.0.1:0", "--ledger", &ledger_text])
        .arg("--tokens")
        .arg(&tokens)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = server.stdout.take().unwrap();
    let line = tokio::task::spawn_blocking(move || {
        let mut line = String::new();
        BufReader::new(stdout).read_line(&mut line).unwrap();
        line
    })
    .await
    .unwrap();
    let base = line
        .split_whitespace()
        .find(|word| word.starts_with("http://"))
        .and_then(|word| word.strip_suffix("/v1/tool-executions"))
        .unwrap_or_else(|| panic!("the server prints its address: {line}"))
        .to_owned();
    assert!(line.contains("postgres://"), "{line}");
    if let Some(password) = url.password() {
        assert!(!line.contains(password), "{line}");
    }
    let client = reqwest::Client::builder().no_proxy().build().unwrap();
    let barrier = Arc::new(tokio::sync::Barrier::new(16));
    let mut tasks = Vec::new();
    for number in 0..16 {
        let (client, barrier, base) = (client.clone(), Arc::clone(&barrier), base.clone());
        tasks.push(tokio::spawn(async move {
            let status = if number % 2 == 0 { "completed" } else { "failed" };
            barrier.wait().await;
            let response = client
                .post(format!("{base}/v1/tool-executions/r1:c1/resolve"))
                .bearer_auth(token)
                .json(&json!({"status": status, "reason": format!("operator {number} decided"), "expected_status": "started", "acknowledge_in_flight": true}))
                .send()
                .await
                .unwrap();
            response.status().as_u16()
        }));
    }
    let mut codes = Vec::new();
    for task in tasks {
        codes.push(task.await.unwrap());
    }
    let _ = server.kill();
    let _ = server.wait();
    assert_eq!(codes.iter().filter(|code| **code == 200).count(), 1, "{codes:?}");
    assert_eq!(codes.iter().filter(|code| **code == 409).count(), 15, "{codes:?}");
    let history = ledger.history(&key).unwrap();
    assert_eq!(history.iter().filter(|line| line.event.name() == "resolved").count(), 1);
}

#[test]
fn a_drill_on_postgres_pays_once_with_every_guard_and_twice_without() {
    let Some(database) = TestDatabase::create("drill_on_postgres") else {
        return;
    };
    let (ledger, password) = ledger_flag(database.url());
    let password = password.as_deref();
    let (code, report) = drill(
        &["--ledger", &ledger, "--runs", "12", "--kills", "30", "--seed", "5"],
        password,
    );
    assert_eq!(code, 0, "{report:#}");
    assert_eq!(number(&report, "double_credits"), 0);
    assert_eq!(number(&report, "lost_credits"), 0);
    assert!(number(&report, "kills") > 0);
    assert!(report["ledger"].as_str().unwrap().contains("schema=twice_drill_"));
    assert_eq!(
        drill_schemas(&database),
        Vec::<String>::new(),
        "a passing drill removes its schema"
    );

    let (code, report) = drill(
        &[
            "--ledger", &ledger, "--runs", "12", "--kills", "30", "--seed", "5", "--guards", "none",
        ],
        password,
    );
    assert_eq!(code, 1, "{report:#}");
    assert!(number(&report, "double_credits") > 0, "{report:#}");
    assert_eq!(
        drill_schemas(&database).len(),
        1,
        "a failed drill keeps its ledger to look at"
    );
}

// ----- across hosts -----

#[test]
fn a_drill_across_hosts_with_partitions_and_pauses_pays_once_and_without_guards_pays_twice() {
    let Some(database) = TestDatabase::create("drill_across_hosts") else {
        return;
    };
    if !hosts_can_be_made("drill_across_hosts") {
        return;
    }
    let _one_at_a_time = HOSTS.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    let (ledger, password) = ledger_flag(database.url());
    let password = password.as_deref();
    let faults = [
        "--ledger",
        &ledger,
        "--hosts",
        "2",
        "--runs",
        "16",
        "--kills",
        "30",
        "--partitions",
        "2",
        "--pauses",
        "2",
        "--partition-ms",
        "600",
        "--pause-ms",
        "600",
        "--seed",
        "3",
    ];
    let (code, report) = drill(&faults, password);
    assert_eq!(code, 0, "{report:#}");
    assert_eq!(number(&report, "hosts"), 2);
    assert_eq!(number(&report, "double_credits"), 0, "{report:#}");
    assert_eq!(number(&report, "lost_credits"), 0, "{report:#}");
    assert!(number(&report, "partitions") >= 1, "{report:#}");
    assert_eq!(number(&report, "pauses"), 2, "{report:#}");
    // Every pause twins its run; a cut twins a run only if a worker is still on the cut host
    // (its process may have been killed or finished first), so only the pauses are certain.
    assert!(
        number(&report, "twins_started") >= number(&report, "pauses"),
        "{report:#}"
    );
    assert_eq!(namespaces_left(), Vec::<String>::new(), "the drill removes its hosts");

    let mut without = faults.to_vec();
    without.extend(["--guards", "none"]);
    let (code, report) = drill(&without, password);
    assert_eq!(code, 1, "{report:#}");
    assert!(number(&report, "double_credits") > 0, "{report:#}");
    assert_eq!(
        namespaces_left(),
        Vec::<String>::new(),
        "a failed drill removes its hosts too"
    );
}

#[test]
fn an_interrupted_drill_across_hosts_removes_its_hosts() {
    let Some(database) = TestDatabase::create("interrupted_across_hosts") else {
        return;
    };
    if !hosts_can_be_made("interrupted_across_hosts") {
        return;
    }
    let _one_at_a_time = HOSTS.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    let (ledger, password) = ledger_flag(database.url());
    // An interrupted drill keeps its files; they go in this folder, removed after.
    let temporary = tempfile::tempdir().unwrap();
    let mut command = Command::new(BIN);
    command.env("TMPDIR", temporary.path());
    if let Some(password) = &password {
        command.env("PGPASSWORD", password);
    }
    let mut drill = command
        .args([
            "drill", "--hosts", "2", "--runs", "400", "--kills", "100", "--ledger", &ledger,
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while namespaces_left().len() < 3 {
        assert!(Instant::now() < deadline, "the drill makes its hosts");
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(500));
    let signalled = Command::new("kill")
        .args(["-TERM", &drill.id().to_string()])
        .status()
        .unwrap();
    assert!(signalled.success());
    let status = drill.wait().unwrap();
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut drill.stderr.take().unwrap(), &mut stderr).unwrap();
    assert_eq!(status.code(), Some(130), "{stderr}");
    assert_eq!(namespaces_left(), Vec::<String>::new(), "{stderr}");
}
