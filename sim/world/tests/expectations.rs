//! What a tape can expect, and how honestly a replay judges it: guards as a set the run must
//! include, money per customer, the ledger status of chosen keys, and a named key or customer
//! the run never had as an error at the tape's line.

use twice_world::level::{self, LoadedTape};
use twice_world::replay::{ReplayError, replay_tape};
use twice_world::runtime::guards::Guard;
use twice_world::runtime::rules::Status;

fn levels_folder() -> std::path::PathBuf {
    std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../levels")
}

/// The shipped tape `name`, its text's `expect` block replaced by `expect` and parsed again
/// (in a temporary copy beside its level, so lines are the edited text's).
fn with_expect(name: &str, expect: &str) -> Result<LoadedTape, twice_world::error::InputError> {
    let source = levels_folder().join(name);
    let text = std::fs::read_to_string(&source).unwrap();
    let start = text.find("    expect: (").expect("the tape has an expect block");
    let edited = format!("{}    expect: {expect},\n)\n", &text[..start]);
    let folder = source.parent().unwrap();
    static COPIES: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let nth = COPIES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let name = source.file_name().unwrap().to_string_lossy();
    let copy = folder.join(format!("test-{}-{nth}-{name}", std::process::id()));
    std::fs::write(&copy, edited).unwrap();
    let loaded = level::load_tape(&copy);
    std::fs::remove_file(&copy).unwrap();
    loaded
}

const LEASE: &str = "regressions/lease-expiry-in-flight.held.tape.ron";

#[test]
fn stopped_by_is_a_set_the_run_must_include_and_may_be_left_out() {
    let shipped = level::load_tape(&levels_folder().join("13-hashed-keys.win.tape.ron")).unwrap();
    let full = replay_tape(&shipped).unwrap();
    assert!(full.as_expected, "{:?}", full.differences);
    assert_eq!(full.verdict.stopped_by, [Guard::WriteRetryRule, Guard::Ledger]);
    for expect in [
        "(verdict: not_paid_but_owed, stopped_by: [ledger])",
        "(verdict: not_paid_but_owed, stopped_by: [ledger, write_retry_rule])",
        "(verdict: not_paid_but_owed)",
    ] {
        let tape = with_expect("13-hashed-keys.win.tape.ron", expect).unwrap();
        let result = replay_tape(&tape).unwrap();
        assert!(result.as_expected, "{expect}: {:?}", result.differences);
    }
    let tape = with_expect(
        "13-hashed-keys.win.tape.ron",
        "(verdict: not_paid_but_owed, stopped_by: [ledger, key_per_call])",
    )
    .unwrap();
    let result = replay_tape(&tape).unwrap();
    assert!(!result.as_expected);
    assert_eq!(
        result.differences,
        ["stopped_by: expected key_per_call to hold, got [write_retry_rule, ledger]"]
    );
}

#[test]
fn money_per_customer_and_key_statuses_are_checked() {
    let shipped = level::load_tape(&levels_folder().join(LEASE)).unwrap();
    let result = replay_tape(&shipped).unwrap();
    assert!(result.as_expected, "{:?}", result.differences);
    assert_eq!(result.paid_cents.get("Ada"), Some(&2500));
    assert_eq!(result.keys.get("r1:c1"), Some(&Some(Status::Indeterminate)));

    let tape = with_expect(
        LEASE,
        r#"(verdict: paid_once, paid_cents: {"Ada": 5000}, keys: {"r1:c1": completed})"#,
    )
    .unwrap();
    let result = replay_tape(&tape).unwrap();
    assert_eq!(
        result.differences,
        [
            "paid_cents: expected Ada $50.00 (5000), got $25.00 (2500)",
            "keys: expected r1:c1 completed, got indeterminate",
        ]
    );
    let updated = result.updated_expectation();
    assert_eq!(updated.paid_cents.get("Ada"), Some(&2500));
    assert_eq!(updated.keys.get("r1:c1"), Some(&Some(Status::Indeterminate)));
    assert!(updated.stopped_by.is_empty(), "a tape that named no guards gets none");
}

#[test]
fn a_key_the_run_never_had_or_a_customer_with_no_account_is_an_error_at_the_tapes_line() {
    let tape = with_expect(
        LEASE,
        r#"(
        verdict: paid_once,
        keys: {"r1:c9": completed},
    )"#,
    )
    .unwrap();
    let Err(ReplayError::Tape(error)) = replay_tape(&tape) else {
        panic!("a key no message carries is an error");
    };
    let expect_line = tape.text.lines().position(|line| line.contains("expect:")).unwrap() + 1;
    assert_eq!(error.position.map(|(line, _)| line), Some(expect_line + 2), "{error}");
    assert!(
        error.message.contains("r1:c9") && error.message.contains("r1:c1"),
        "{error}"
    );

    let error = with_expect(LEASE, r#"(verdict: paid_once, paid_cents: {"Bob": 2500})"#).unwrap_err();
    assert!(error.position.is_some(), "{error}");
    assert!(
        error.message.contains("Bob") && error.message.contains("Ada"),
        "{error}"
    );
}

/// A tape of level 26 (a twin on a second machine, whose ledger is its own) written beside the
/// level with these moves, guards and keys expected, then loaded.
fn one_node_tape(guards: &str, actions: &str, keys: &str) -> LoadedTape {
    let text = format!(
        "(\n    version: 2,\n    level: \"26-one-node.level.ron\",\n    seed: 1,\n    title: \"Keys on two nodes\",\n    \
         guards: {guards},\n    actions: [\n{actions}    ],\n    expect: (\n        verdict: paid_once,\n        \
         keys: {keys},\n    ),\n)\n"
    );
    static COPIES: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let nth = COPIES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let copy = levels_folder().join(format!("test-{}-{nth}-keys-on-two-nodes.tape.ron", std::process::id()));
    std::fs::write(&copy, text).unwrap();
    let loaded = level::load_tape(&copy);
    std::fs::remove_file(&copy).unwrap();
    loaded.unwrap()
}

#[test]
fn a_key_expectation_reads_every_nodes_ledger() {
    let twin = "        (at_phase: 0, play: DuplicateWorker(run: \"r1\")),\n";
    // Both machines' ledgers record r1:c1 completed: the expectation holds.
    let agreed = replay_tape(&one_node_tape("None", twin, "{\"r1:c1\": completed}")).unwrap();
    assert!(agreed.as_expected, "{:?}", agreed.differences);
    // The twin on the second machine dies before it records its outcome, and with the hook off
    // its recovery cannot settle the call: the first machine's ledger says completed, the
    // second's started. An expectation read from the first ledger only would pass.
    let crash = "        (at_phase: 13, play: CrashWorker(worker: Some(2), in_phase: Some(\"record outcome\"))),\n";
    let tape = one_node_tape(
        "Some((reconcile_hook: false))",
        &format!("{twin}{crash}"),
        "{\"r1:c1\": completed}",
    );
    let split = replay_tape(&tape).unwrap();
    assert!(!split.as_expected);
    assert_eq!(
        split.differences,
        ["keys: r1:c1 is completed in node 1's ledger and started in node 2's ledger: the ledgers disagree"]
    );
}
