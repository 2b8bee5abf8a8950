//! The explorer: with every guard on the vault holds; with any load-bearing guard off it finds
//! a heist, shrinks it to a tape where every action is needed, and that tape replays through
//! `twice-sim replay`'s own code; a seed gives the same find whatever the number of jobs.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::AtomicBool;
use twice_sim::cards::{CrashWorker, DuplicateWorker, OperatorResolve, ToolFailsBeforeSending};

use twice_sim::checker::Outcome;
use twice_sim::explore::{Explorer, Found, Progress, Stage};
use twice_sim::level::{self, Level};
use twice_sim::replay::replay_tape;
use twice_sim::runtime::guards::{Guard, Guards};
use twice_sim::runtime::worker::Held;
use twice_sim::simulator::SimulationBuilder;

/// The guards the vault cannot do without (see `sim/tests/campaign.rs`: key_downstream and
/// the reconcile hook stand behind the pause there), and the heist each one stops: hashed
/// keys merge the two identical credits into one, a reflex compensation takes money back, and
/// a refusal swallowed as a success leaves a refund recorded done and never paid, so those
/// under-pay instead of paying twice.
const LOAD_BEARING: [(Guard, Outcome); 9] = [
    (Guard::WriteRetryRule, Outcome::PaidTwice),
    (Guard::PauseOnIndeterminate, Outcome::PaidTwice),
    (Guard::Ledger, Outcome::PaidTwice),
    (Guard::AtomicReservation, Outcome::PaidTwice),
    (Guard::CheckpointVersion, Outcome::PaidTwice),
    (Guard::KeyPerCall, Outcome::NotPaidButOwed),
    (Guard::NoLeaseExpiry, Outcome::PaidTwice),
    (Guard::NoReflexCompensation, Outcome::NotPaidButOwed),
    (Guard::RefusalIsFailed, Outcome::NotPaidButOwed),
];

/// Every single-guard heist in the vault is found well within this many schedules.
const SCHEDULES_TO_FIND_MAX: u64 = 5_000;

fn repository() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn vault() -> Level {
    level::load_level(&repository().join("levels/19-vault.level.ron"))
        .expect("the vault loads")
        .level
}

fn explore(explorer: &Explorer) -> twice_sim::explore::Outcome {
    explorer
        .run(&|_: Progress| {}, &AtomicBool::new(false))
        .expect("the explorer runs")
}

fn goal_reached(level: &Level, guards: Guards, goal: Outcome, found: &Found, actions: &[level::TimedAction]) -> bool {
    let mut level = level.clone();
    level.goal = goal;
    let mut simulation = SimulationBuilder::new(level, found.simulation_seed)
        .guards(guards)
        .actions(actions.to_vec())
        .build()
        .expect("a simulation builds");
    simulation.run().expect("a simulation runs");
    simulation.verdict().expect("a verdict").goal_reached
}

/// Writes the find as a tape next to a copy of the vault, and replays it the way
/// `twice-sim replay` does.
fn replays_to_its_verdict(found: &Found, folder: &Path) -> Outcome {
    std::fs::copy(
        repository().join("levels/19-vault.level.ron"),
        folder.join("19-vault.level.ron"),
    )
    .expect("copy the vault");
    let path = folder.join("found.tape.ron");
    std::fs::write(&path, level::to_ron(&found.to_tape("19-vault.level.ron", "found"))).expect("write the tape");
    let tape = level::load_tape(&path).expect("the written tape loads and is legal in the vault");
    let result = replay_tape(&tape).expect("the tape replays");
    assert!(
        result.as_expected,
        "replayed to {:?}, the tape expects {:?}",
        result.verdict.outcome, result.expected
    );
    result.verdict.outcome
}

#[test]
fn the_vault_with_every_guard_on_holds_for_two_thousand_schedules() {
    let outcome = explore(&Explorer::new(vault(), Guards::all_on(), 1).schedules(2_000).jobs(2));
    assert!(
        outcome.found.is_none(),
        "the vault fell: {:?}",
        outcome.found.map(|found| found.actions)
    );
    assert_eq!(outcome.schedules_run, 2_000);
    assert!(!outcome.cancelled);
}

#[test]
fn each_load_bearing_guard_off_lets_the_explorer_in_and_the_shrunk_tape_replays() {
    let vault = vault();
    for (guard, goal) in LOAD_BEARING {
        let guards = Guards::all_on().with(guard, false);
        let outcome = explore(
            &Explorer::new(vault.clone(), guards, 1)
                .schedules(SCHEDULES_TO_FIND_MAX)
                .jobs(2)
                .goal(goal),
        );
        let found = outcome
            .found
            .unwrap_or_else(|| panic!("{guard} off: nothing found in {SCHEDULES_TO_FIND_MAX} schedules"));
        assert!(
            found.actions.len() <= found.dealt.len(),
            "{guard} off: shrinking grew the tape"
        );
        assert!(
            found
                .actions
                .windows(2)
                .all(|pair| pair[0].at_phase <= pair[1].at_phase),
            "{guard} off: the shrunk tape is out of phase order"
        );
        assert_eq!(
            found.tape_guards,
            Some(guards),
            "{guard} off: the tape keeps the sandbox's guards"
        );
        // Minimal: without any one of its actions the tape no longer reaches the goal.
        for position in 0..found.actions.len() {
            let mut without = found.actions.clone();
            without.remove(position);
            assert!(
                !goal_reached(&vault, guards, goal, &found, &without),
                "{guard} off: action {position} of {:?} is not needed",
                found.actions
            );
        }
        // With the guard back on, the same tape is stopped.
        assert!(
            !goal_reached(&vault, Guards::all_on(), goal, &found, &found.actions),
            "{guard} off: the tape {:?} beats the vault with every guard on",
            found.actions
        );
        let folder = tempfile::tempdir().expect("a temporary folder");
        assert_eq!(replays_to_its_verdict(&found, folder.path()), found.verdict.outcome);
        assert!(
            found.verdict.goal_reached,
            "{guard} off: the found verdict misses {goal}"
        );
    }
}

#[test]
fn the_guards_behind_the_pause_are_found_off_in_their_own_lessons() {
    for (file, guard) in [
        ("levels/07-look-it-up.level.ron", Guard::ReconcileHook),
        ("levels/08-key-left-behind.level.ron", Guard::KeyDownstream),
    ] {
        let lesson = level::load_level(&repository().join(file))
            .expect("the lesson loads")
            .level;
        assert!(
            !lesson.guards.is_on(guard),
            "{file} teaches {guard} by switching it off"
        );
        let off = explore(&Explorer::new(lesson.clone(), lesson.guards, 1).schedules(2_000).jobs(2));
        let found = off
            .found
            .unwrap_or_else(|| panic!("{file}: nothing found with {guard} off"));
        assert!(found.verdict.goal_reached && found.tape_guards.is_none());
        let on = explore(
            &Explorer::new(lesson.clone(), lesson.guards.with(guard, true), 1)
                .schedules(2_000)
                .jobs(2),
        );
        assert!(
            on.found.is_none(),
            "{file}: with {guard} back on, {:?} still gets through",
            on.found.map(|found| found.actions)
        );
    }
}

#[test]
fn a_seed_finds_the_same_heist_with_one_job_or_several() {
    let guards = Guards::all_on().with(Guard::CheckpointVersion, false);
    let find = |jobs: usize| {
        explore(
            &Explorer::new(vault(), guards, 7)
                .schedules(SCHEDULES_TO_FIND_MAX)
                .jobs(jobs),
        )
        .found
        .expect("a stale twin gets through")
    };
    let (one, three) = (find(1), find(3));
    assert_eq!(one.schedule_index, three.schedule_index);
    assert_eq!(one.simulation_seed, three.simulation_seed);
    assert_eq!(one.dealt, three.dealt);
    assert_eq!(one.actions, three.actions);
    let other_seed = explore(
        &Explorer::new(vault(), guards, 8)
            .schedules(SCHEDULES_TO_FIND_MAX)
            .jobs(1),
    )
    .found
    .expect("a stale twin gets through");
    assert_ne!(
        (other_seed.schedule_index, other_seed.dealt),
        (one.schedule_index, one.dealt),
        "another seed deals other schedules"
    );
}

#[test]
fn progress_is_reported_and_a_cancelled_search_stops_early() {
    let cancel = AtomicBool::new(true);
    let outcome = Explorer::new(vault(), Guards::all_on(), 1)
        .schedules(1_000_000)
        .jobs(2)
        .run(&|_| {}, &cancel)
        .expect("the explorer runs");
    assert!(outcome.cancelled);
    assert!(outcome.schedules_run < 1_000_000, "ran {}", outcome.schedules_run);
    let reports = std::cell::RefCell::new(Vec::new());
    let outcome = Explorer::new(vault(), Guards::all_on(), 1)
        .schedules(300)
        .jobs(1)
        .run(&|progress| reports.borrow_mut().push(progress), &AtomicBool::new(false))
        .expect("the explorer runs");
    let reports = reports.into_inner();
    let last = reports.last().expect("at least the final report");
    assert_eq!(
        (last.stage, last.schedules_done, last.schedules_total),
        (Stage::Searching, 300, 300)
    );
    assert_eq!(outcome.schedules_run, 300);
}

#[test]
fn a_cancel_after_a_find_still_returns_it_with_its_verdict_unshrunk() {
    let cancel = AtomicBool::new(false);
    let cancel_on_find = |progress: Progress| {
        if progress.lowest_find.is_some() {
            cancel.store(true, std::sync::atomic::Ordering::Relaxed);
        }
    };
    let outcome = Explorer::new(vault(), Guards::all_on().with(Guard::Ledger, false), 1)
        .schedules(1_000)
        .jobs(1)
        .run(&cancel_on_find, &cancel)
        .expect("the explorer runs");
    assert!(outcome.cancelled);
    let found = outcome.found.expect("the find made before the cancel");
    assert!(found.shrink_cancelled);
    assert_eq!(
        found.actions, found.dealt,
        "a cancelled shrink keeps the schedule as dealt"
    );
    assert!(found.verdict.goal_reached);
}

#[test]
fn bad_limits_are_refused_by_the_library() {
    let run = |explorer: Explorer| {
        explorer
            .run(&|_| {}, &AtomicBool::new(false))
            .expect_err("refused")
            .to_string()
    };
    assert!(run(Explorer::new(vault(), Guards::all_on(), 1).schedules(0)).contains("1 to 100000000, not 0"));
    assert!(run(Explorer::new(vault(), Guards::all_on(), 1).jobs(65)).contains("1 to 64, not 65"));
}

// ----- the command line -----

fn twice_sim(arguments: &[&str], folder: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_twice-sim"))
        .args(arguments)
        .current_dir(folder)
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

#[test]
fn explore_writes_a_tape_that_replay_accepts_and_never_overwrites_without_force() {
    let folder = tempfile::tempdir().expect("a temporary folder");
    let vault = repository().join("levels/19-vault.level.ron");
    let vault = vault.to_str().expect("a UTF-8 path");
    let arguments = [
        "explore",
        vault,
        "--guards-off",
        "ledger",
        "--schedules",
        "5000",
        "--jobs",
        "2",
    ];
    let output = twice_sim(&arguments, folder.path());
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    let printed = text(&output);
    assert!(printed.contains("schedules/s"), "{printed}");
    assert!(printed.contains("found: schedule"), "{printed}");
    let tape = folder.path().join("19-vault.explored.tape.ron");
    let written = std::fs::read_to_string(&tape).expect("the default out file");
    assert!(
        written.contains("../"),
        "the level is named relative to the tape: {written}"
    );
    let replay = twice_sim(&["replay", "19-vault.explored.tape.ron"], folder.path());
    assert_eq!(replay.status.code(), Some(0), "{}", text(&replay));
    assert!(text(&replay).contains("1 as expected"), "{}", text(&replay));

    let again = twice_sim(&arguments, folder.path());
    assert_eq!(again.status.code(), Some(2), "{}", text(&again));
    assert!(
        text(&again).contains("already exists; pass --force"),
        "{}",
        text(&again)
    );
    assert_eq!(std::fs::read_to_string(&tape).expect("still there"), written);
    let forced = twice_sim(&[&arguments[..], &["--force", "--json"]].concat(), folder.path());
    assert_eq!(forced.status.code(), Some(0), "{}", text(&forced));
    let report: serde_json::Value = serde_json::from_slice(&forced.stdout).expect("valid JSON");
    assert_eq!(report["guards_off"], serde_json::json!(["ledger"]));
    assert_eq!(report["found"]["verdict"], "paid_twice");
    assert!(report["schedules_per_second"].as_f64().expect("a number") > 0.0);
}

#[test]
fn explore_counts_in_words_that_agree_with_the_count() {
    let folder = tempfile::tempdir().expect("a temporary folder");
    let vault = repository().join("levels/19-vault.level.ron");
    let output = twice_sim(
        &["explore", vault.to_str().unwrap(), "--schedules", "1", "--jobs", "1"],
        folder.path(),
    );
    assert_eq!(output.status.code(), Some(1), "{}", text(&output));
    let printed = text(&output);
    assert!(printed.contains("up to 1 schedule, seed 1, 1 job,"), "{printed}");
    assert!(
        printed.contains("nothing reached paid_twice in 1 schedule ("),
        "{printed}"
    );
}

#[test]
fn explore_exits_one_when_nothing_is_found() {
    let folder = tempfile::tempdir().expect("a temporary folder");
    let vault = repository().join("levels/19-vault.level.ron");
    let output = twice_sim(
        &["explore", vault.to_str().unwrap(), "--schedules", "200", "--json"],
        folder.path(),
    );
    assert_eq!(output.status.code(), Some(1), "{}", text(&output));
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).expect("valid JSON");
    assert_eq!(report["schedules_run"], 200);
    assert!(report["found"].is_null());
    assert!(!folder.path().join("19-vault.explored.tape.ron").exists());
}

#[test]
fn explore_bad_input_exits_two_and_names_the_problem() {
    let folder = tempfile::tempdir().expect("a temporary folder");
    let vault = repository().join("levels/19-vault.level.ron");
    let vault = vault.to_str().unwrap();
    let cases: [(&[&str], &str); 7] = [
        (&["explore", "absent.level.ron"], "absent.level.ron"),
        (&["explore", vault, "--guards", "ledger,moat"], "`moat`"),
        (&["explore", vault, "--guards-off", "drawbridge"], "`drawbridge`"),
        (&["explore", vault, "--schedules", "0"], "--schedules"),
        (&["explore", vault, "--schedules", "100000001"], "--schedules"),
        (&["explore", vault, "--jobs", "65"], "--jobs"),
        (&["explore", vault, "--goal", "rich"], "unknown outcome `rich`"),
    ];
    for (arguments, expected) in cases {
        let output = twice_sim(arguments, folder.path());
        assert_eq!(output.status.code(), Some(2), "{arguments:?}: {}", text(&output));
        assert!(text(&output).contains(expected), "{arguments:?}: {}", text(&output));
    }
    let missing_folder = twice_sim(&["explore", vault, "--out", "no/such/folder/x.tape.ron"], folder.path());
    assert_eq!(missing_folder.status.code(), Some(2), "{}", text(&missing_folder));
    assert!(
        text(&missing_folder).contains("--out folder"),
        "{}",
        text(&missing_folder)
    );
}

/// The explorer's first find in the vault with every guard on (seed 1, schedule 27,099 of a
/// 1,000,000-schedule run): a twin (w3) and the crashed worker's replacement (w4) both drive
/// r1 from checkpoint v0. The twin's call is refused before sending and recorded `failed`;
/// before the twin saves its checkpoint, w4 reserves the same key — `failed` may run again —
/// and sends it (cr_0002), while Penny, told "failed", calls again as r1:c2 (cr_0003). The
/// checkpoint version stopped w4 only at its next save, after the money moved. Now the twin's
/// save is compare-and-set on r1:c1 still being `failed`: w4 ran it again, so the twin stands
/// down before Penny hears "failed" (`levels/19-vault.refused-twin.tape.ron` replays it).
#[test]
fn the_vault_holds_against_the_explorers_first_find() {
    use twice_sim::level::{Play, TimedAction};
    let actions = vec![
        TimedAction {
            at_phase: 3,
            play: Play::CrashWorker(CrashWorker {
                worker: None,
                in_phase: None,
            }),
            fizzles: false,
        },
        TimedAction {
            at_phase: 9,
            play: Play::DuplicateWorker(DuplicateWorker { run: "r1".into() }),
            fizzles: false,
        },
        TimedAction {
            at_phase: 9,
            play: Play::ToolFailsBeforeSending(ToolFailsBeforeSending { run: "r1".into() }),
            fizzles: false,
        },
    ];
    let mut simulation = SimulationBuilder::new(vault(), 1_729_225_177_232_492_609)
        .actions(actions)
        .build()
        .expect("a simulation builds");
    simulation.run().expect("a simulation runs");
    let verdict = simulation.verdict().expect("a verdict");
    assert_eq!(verdict.outcome, Outcome::PaidOnce, "{}", verdict.summary);
    assert!(
        simulation.guard_notes().iter().any(
            |note| matches!(&note.held, Held::FailureTakenOver { key, .. } if key == "r1:c1")
                && twice_sim::text::note_words(note).contains("relied on r1:c1 having failed")
        ),
        "the twin stood down on the failed record: {:?}",
        simulation.guard_notes()
    );
}

/// A level where the send fence is the only thing between an operator's "failed" and a
/// double payment: every guard on, billing honouring keys, and a Penny who, told a call did
/// not take effect, calls again with a new key. The crew holds one operator decision.
fn operator_before_the_send() -> Level {
    let text = r#"(
        id: "operator-before-the-send", title: "Decided Before It Left", briefing: "b",
        lesson: (rule: "r", text: "t"),
        world: (accounts: [(id: "acct_ada", owner: "Ada")], billing_keys: honour),
        tools: [(name: "issue_credit", side_effect: external, operation: credit, reconcile: true, compensation: true)],
        model: (on_failed: call_again),
        runs: [(id: "r1", calls: [(tool: "issue_credit", account: "acct_ada", amount_cents: 2500, memo: "Refund for order #1001")])],
        cards: [(card: OperatorResolve, count: 1)],
        goal: paid_twice,
    )"#;
    level::parse_level(Path::new("operator-before-the-send.level.ron"), text).expect("the level parses")
}

/// How many attempts `r1:c1` had noted when the first of `actions` was played: 0 means the
/// decision came before any request passed the send fence (nothing could have landed).
fn attempts_when_decided(level: &Level, seed: u64, actions: &[level::TimedAction]) -> u32 {
    let decided_at = actions[0].at_phase;
    let mut simulation = SimulationBuilder::new(level.clone(), seed).build().unwrap();
    simulation
        .run_until(|simulation| simulation.phase() >= decided_at)
        .unwrap();
    let key = twice_sim::runtime::key::IdempotencyKey::parse("r1:c1").unwrap();
    simulation
        .ledger()
        .record(&key)
        .unwrap()
        .map_or(0, |record| record.attempts)
}

/// Hole: an operator resolves `r1:c1` failed after it was reserved and before its request
/// left (compare-and-set from `started`, true then: nothing was sent). Without the send fence
/// the worker sends anyway, billing pays, Penny hears "did not take effect", calls again as
/// `r1:c2`, and Ada is paid twice. The explorer deals operator decisions at any phase, on any
/// key that exists then, with any expected status, so it finds this within a bounded number
/// of schedules (and shrinks it to the decision made before the send). With the fence, that
/// move pays once; what the same search can still find is an operator's wrong "failed" given
/// after the request left — a decision the checker calls out (failed_but_paid).
#[test]
fn the_explorer_finds_the_unfenced_send_and_the_fence_holds_against_the_same_search() {
    use twice_sim::checker::ViolationKind;
    const SCHEDULES: u64 = 5_000;
    let level = operator_before_the_send();
    let unfenced = explore(
        &Explorer::new(level.clone(), level.guards, 1)
            .schedules(SCHEDULES)
            .without_send_fence_for_tests(),
    );
    let found = unfenced
        .found
        .expect("without the fence, an operator's early `failed` pays twice");
    assert!(found.schedule_index < SCHEDULES);
    assert_eq!(found.verdict.outcome, Outcome::PaidTwice);
    assert_eq!(found.actions.len(), 1, "one decision is enough: {:?}", found.actions);
    assert!(
        matches!(
            &found.actions[0].play,
            level::Play::OperatorResolve(OperatorResolve { key, status, .. })
                if key == "r1:c1" && *status == twice_sim::runtime::rules::Status::Failed
        ),
        "{:?}",
        found.actions
    );
    assert_eq!(
        attempts_when_decided(&level, found.simulation_seed, &found.actions),
        0,
        "shrunk, the decision comes before any request left: it was true when made"
    );
    // The very move the explorer found, on the runtime as it is: the fence refuses the send.
    let mut fenced_replay = SimulationBuilder::new(level.clone(), found.simulation_seed)
        .actions(found.actions.clone())
        .build()
        .unwrap();
    fenced_replay.run().unwrap();
    let verdict = fenced_replay.verdict().unwrap();
    assert_eq!(verdict.outcome, Outcome::PaidOnce);
    assert!(
        fenced_replay
            .guard_notes()
            .iter()
            .any(|note| matches!(note.held, twice_sim::runtime::worker::Held::SendRefused { .. })),
        "the send fence held"
    );
    assert!(verdict.violations.is_empty(), "{:?}", verdict.violations);

    let fenced = explore(&Explorer::new(level.clone(), level.guards, 1).schedules(SCHEDULES));
    if let Some(lie) = fenced.found {
        assert!(
            attempts_when_decided(&level, lie.simulation_seed, &lie.actions) >= 1,
            "with the fence, a double payment needs a `failed` given after the request left: {:?}",
            lie.actions
        );
        assert!(
            lie.verdict.violation_kinds().contains(&ViolationKind::FailedButPaid),
            "and the checker calls that decision out: {:?}",
            lie.verdict.violations
        );
    }
}
