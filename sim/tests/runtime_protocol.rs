//! The runtime protocol end to end: `twice-sim replay --runtime` against Twice's own runtime
//! through the protocol (it must come to each tape's own verdict), against the Python runtime
//! of `examples/runtimes` that follows the seed (it must pass), against the naive one (it must
//! be caught, its tapes named), and against runtimes that break the protocol (each reported
//! with what it sent, within the time limits, exit code 2). A few levels' tapes each, so the
//! file runs in seconds; `.ci/run` plays the whole campaign against the first two.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_twice-sim");

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn tape(name: &str) -> PathBuf {
    root().join("levels").join(format!("{name}.tape.ron"))
}

/// `twice-sim replay --runtime RUNTIME --json TAPES EXTRA`: exit code and the summary.
fn replay(runtime: &str, tapes: &[&str], extra: &[&str]) -> (i32, Value) {
    let output = Command::new(BIN)
        .args(["replay", "--json", "--runtime", runtime])
        .args(extra)
        .args(tapes.iter().map(|name| tape(name)))
        .output()
        .expect("twice-sim runs");
    let summary: Value = serde_json::from_slice(&output.stdout).unwrap_or_else(|error| {
        panic!(
            "--json prints JSON ({error}):\n{}\n{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        )
    });
    (output.status.code().expect("an exit code"), summary)
}

fn python() -> &'static str {
    let found = Command::new("python3").arg("--version").output();
    assert!(
        found.is_ok_and(|output| output.status.success()),
        "these tests run the example runtimes with python3 (3.11 or later), which is not on PATH"
    );
    "python3"
}

fn example(name: &str) -> String {
    format!(
        "{} '{}'",
        python(),
        root().join("examples/runtimes").join(name).display()
    )
}

fn adapter() -> String {
    format!("'{BIN}' runtime-adapter")
}

fn reports(summary: &Value) -> &Vec<Value> {
    summary["reports"].as_array().expect("reports")
}

fn report<'a>(summary: &'a Value, name: &str) -> &'a Value {
    reports(summary)
        .iter()
        .find(|report| {
            report["tape"]
                .as_str()
                .is_some_and(|path| path.ends_with(&format!("{name}.tape.ron")))
        })
        .unwrap_or_else(|| panic!("a report for {name}: {summary:#}"))
}

/// Tapes of several levels, one or more per kind of fault: lost and slowed answers and
/// requests, a crash at a marked step and mid-call, twins racing, a lease, the model asked
/// again, a refusal before sending, a workflow's fresh run, billing's terms, a second node.
const SPREAD: [&str; 16] = [
    "01-naive-retry.win",
    "02-one-attempt.slow-answer",
    "03-model-calls-again.win",
    "05-crash-replay.win",
    "05-crash-replay.mid-call",
    "06-ledger-holds.after-record",
    "10-check-then-insert.win",
    "11-one-stands-down.crash-and-twin",
    "12-stale-twin.win",
    "13-hashed-keys.win",
    "15-lease-runs-out.win",
    "24-workflow-retry.win",
    "26-one-node.crash-and-twin",
    "27-not-attempted.win",
    "32-key-retention.win",
    "33-lookup-settle.win",
];

#[test]
fn twice_s_own_runtime_through_the_protocol_comes_to_each_tape_s_own_verdict() {
    let (code, summary) = replay(&adapter(), &SPREAD, &[]);
    assert_eq!(code, 0, "{summary:#}");
    for name in SPREAD {
        let report = report(&summary, name);
        assert_eq!(report["outcome"]["status"], "passed", "{name}: {report:#}");
        let tape = twice_world::level::load_tape(&tape(name)).expect("a campaign tape");
        let verdict = tape.tape.expect.verdict.name();
        assert_eq!(report["actual"]["outcome"], verdict, "{name}: the tape's own verdict");
        assert_eq!(
            report["expected"]["outcome"], verdict,
            "{name}: the expected run is the tape's"
        );
        assert!(
            report["diverged"].is_null(),
            "{name} follows the simulator step by step: {report:#}"
        );
    }
}

/// Chapter 12, *Not only money*: a second email, a record already gone, an owner change
/// undone by a retry after someone else's (the level's scripted change, played at billing).
const NOT_ONLY_MONEY: [&str; 9] = [
    "40-second-email.win",
    "40-second-email.lost-request",
    "40-second-email.retry-rule-on",
    "41-already-gone.win",
    "41-already-gone.lost-request",
    "41-already-gone.retry-rule-on",
    "42-lost-update.win",
    "42-lost-update.lost-request",
    "42-lost-update.retry-rule-on",
];

#[test]
fn emails_owner_changes_and_deletes_through_the_protocol_come_to_each_tape_s_own_verdict() {
    let (code, summary) = replay(&adapter(), &NOT_ONLY_MONEY, &[]);
    assert_eq!(code, 0, "{summary:#}");
    for name in NOT_ONLY_MONEY {
        let report = report(&summary, name);
        assert_eq!(report["outcome"]["status"], "passed", "{name}: {report:#}");
        assert_eq!(
            report["actual"]["outcome"], report["expected"]["outcome"],
            "{name}: {report:#}"
        );
        // The adapter claims the level's guards: a tape that sets guards of its own comes to
        // the level's verdict here, the others to their own.
        let tape = twice_world::level::load_tape(&tape(name)).expect("a campaign tape");
        if tape.tape.guards.is_none() {
            let verdict = tape.tape.expect.verdict.name();
            assert_eq!(report["actual"]["outcome"], verdict, "{name}: the tape's own verdict");
        }
        assert!(report["diverged"].is_null(), "{name}: {report:#}");
        let effects = report["actual"]["per_intent"].as_array().expect("per intent");
        assert!(
            effects.iter().any(|line| line.as_str().is_some_and(|line| {
                ["send_email", "change_owner", "delete_record"]
                    .iter()
                    .any(|operation| line.contains(operation))
            })),
            "{name}: the verdict names the effect: {report:#}"
        );
    }
}

#[test]
fn the_python_runtime_that_follows_the_seed_passes() {
    let tapes = [
        "01-naive-retry.win",
        "02-one-attempt.lost-answer",
        "05-crash-replay.win",
        "11-one-stands-down.twin-at-start",
        "13-hashed-keys.win",
        "15-lease-runs-out.win",
        "24-workflow-retry.every-guard-on",
        "33-lookup-settle.win",
    ];
    let (code, summary) = replay(&example("careful.py"), &tapes, &[]);
    assert_eq!(code, 0, "{summary:#}");
    assert_eq!(summary["passed"], tapes.len(), "{summary:#}");
    let claimed = report(&summary, tapes[0])["claimed"]
        .as_array()
        .expect("claimed guards")
        .len();
    assert!(
        claimed >= 11,
        "it claims the seed's guards, and is held to them: {summary:#}"
    );
}

#[test]
fn the_naive_python_runtime_is_caught_and_its_failing_tapes_named() {
    let tapes = [
        "02-one-attempt.lost-answer",
        "13-hashed-keys.win",
        "21-reads-retried.lost-credit-answer",
        "06-ledger-holds.after-record",
    ];
    let (code, summary) = replay(&example("naive.py"), &tapes, &[]);
    assert_eq!(
        code, 1,
        "a runtime that pays otherwise than its guards must fails: {summary:#}"
    );
    // Retrying a write whose answer was lost pays twice where billing keeps no keys.
    let retried = report(&summary, "21-reads-retried.lost-credit-answer");
    assert_eq!(retried["outcome"]["status"], "failed", "{retried:#}");
    let differences = retried["outcome"]["differences"].to_string();
    assert!(
        differences.contains("Ada got $50.00") && differences.contains("pays $25.00"),
        "{differences}"
    );
    // Two honest $25 credits with the same arguments are one hashed key.
    let merged = report(&summary, "13-hashed-keys.win");
    assert_eq!(merged["outcome"]["status"], "failed", "{merged:#}");
    // A crash after the ledger recorded the answer is survived by its ledger: it passes there.
    assert_eq!(
        report(&summary, "06-ledger-holds.after-record")["outcome"]["status"],
        "passed"
    );
}

/// A runtime written as one shell script: `script` is run for every process.
fn shell(script: &str) -> String {
    format!("sh -c '{}'", script.replace('\'', r"'\''"))
}

const HELLO: &str =
    r#"{"type":"hello","protocol":1,"runtime":"broken","guards":["ledger"],"marks":["load checkpoint"]}"#;

#[test]
fn a_runtime_that_breaks_the_protocol_is_reported_with_what_it_sent_and_never_hangs_the_suite() {
    let cases: [(&str, String, &str); 6] = [
        ("garbage", shell("read hello; echo hello there"), "`hello there`"),
        (
            "an early exit",
            shell("read hello; exit 3"),
            "exited with code 3 before it answered `hello`",
        ),
        (
            "a hang",
            shell("read hello; sleep 30"),
            "hangs: nothing came for 1500 ms",
        ),
        (
            "a mark before its hello",
            shell(r#"read hello; echo '{"type":"mark","phase":"load checkpoint"}'; sleep 30"#),
            r#"sent `{"type":"mark","phase":"load checkpoint"}` before its `hello`"#,
        ),
        (
            "a second hello where a step belongs",
            shell(&format!(
                r#"read hello; echo '{HELLO}'; echo '{{"type":"mark","phase":"load checkpoint"}}'; read go; echo '{HELLO}'; sleep 30"#
            )),
            "said `hello` twice",
        ),
        (
            "a mark it did not declare",
            shell(&format!(
                r#"read hello; echo '{HELLO}'; echo '{{"type":"mark","phase":"reserve","call":"c1"}}'; sleep 30"#
            )),
            "marked `reserve`, which its hello did not say it marks",
        ),
    ];
    for (case, runtime, quoted) in cases {
        let started = Instant::now();
        let (code, summary) = replay(&runtime, &["01-naive-retry.win"], &["--step-timeout-ms", "1500"]);
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "{case}: the suite moved on within its limits"
        );
        assert_eq!(code, 2, "{case}: {summary:#}");
        let outcome = &report(&summary, "01-naive-retry.win")["outcome"];
        assert_eq!(outcome["status"], "broken", "{case}: {outcome:#}");
        let what = outcome["what"].as_str().expect("what it did");
        assert!(what.contains(quoted), "{case}: {what}");
        assert!(what.starts_with("w1 "), "{case}: the process is named: {what}");
    }
}

#[test]
fn the_tapes_the_protocol_cannot_express_are_counted_and_explained() {
    let tapes = [
        "09-settle-it-yourself.win",
        "22-fine-print.win",
        "35-first-decision.win",
        "38-the-audit.win",
        "regressions/paused-worker-lease.reproduced",
        "regressions/delayed-apply-retry.paid-again",
        "regressions/parallel-credits.held",
    ];
    let output = Command::new(BIN)
        .args(["replay", "--runtime", &adapter()])
        .args(tapes.iter().map(|name| tape(name)))
        .output()
        .expect("twice-sim runs");
    let text = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(2), "nothing to play is bad input: {text}");
    assert!(text.contains("7 tapes: the protocol can express 0"), "{text}");
    assert!(
        text.contains("1 acts as an operator: the tape settles or undoes a call as an operator"),
        "{text}"
    );
    assert!(text.contains("2 has a scripted operator"), "{text}");
    assert!(text.contains("1 rewrites a tool's declaration"), "{text}");
    assert!(
        text.contains("2 pauses a worker or delays billing's apply: the tape stops a worker (SIGSTOP)"),
        "{text}"
    );
    assert!(
        text.contains("1 makes several calls in one turn: a run of the level makes several tool calls in one turn"),
        "{text}"
    );
    assert!(String::from_utf8_lossy(&output.stderr).contains("none of these tapes"));
}

#[test]
fn the_explorer_finds_a_heist_against_a_runtime_and_writes_a_tape_that_replays() {
    let folder = tempfile::tempdir().expect("a folder");
    let out = folder.path().join("found.tape.ron");
    // Level 02: billing ignores keys, and a naive runtime retries a write whose answer it lost.
    let level = root().join("levels/02-one-attempt.level.ron");
    let explore = |runtime: &str, out: &Path, candidates: &str| {
        Command::new(BIN)
            .args(["explore", "--runtime", runtime, "--candidates", candidates, "--out"])
            .arg(out)
            .arg(&level)
            .output()
            .expect("twice-sim runs")
    };
    let found = explore(&example("naive.py"), &out, "5");
    let text = String::from_utf8_lossy(&found.stdout);
    assert_eq!(found.status.code(), Some(0), "{text}");
    assert!(text.contains("HEIST") && text.contains("Ada $50.00"), "{text}");
    assert!(text.contains("the runtime does not do what it claims"), "{text}");
    // The tape it wrote is a tape of the level: it replays in the simulator as it says, and
    // against the runtime it fails again.
    let replayed = Command::new(BIN).arg("replay").arg(&out).output().expect("replays");
    assert!(
        replayed.status.success(),
        "{}",
        String::from_utf8_lossy(&replayed.stdout)
    );
    let (code, summary) = {
        let output = Command::new(BIN)
            .args(["replay", "--json", "--runtime", &example("naive.py")])
            .arg(&out)
            .output()
            .expect("replays");
        (
            output.status.code(),
            serde_json::from_slice::<Value>(&output.stdout).expect("JSON"),
        )
    };
    assert_eq!(code, Some(1), "{summary:#}");
    // Against the runtime that follows the seed, the same search finds nothing.
    let held = explore(&example("careful.py"), &folder.path().join("none.tape.ron"), "3");
    let text = String::from_utf8_lossy(&held.stdout);
    assert_eq!(held.status.code(), Some(1), "{text}");
    assert!(
        text.contains("3 played on the runtime") && text.contains("no heist"),
        "{text}"
    );
}
