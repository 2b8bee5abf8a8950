//! Billing's terms and the dead letter in the simulator: billing forgets keys after its
//! retention and lags its lookups by its settle time on the simulator's clock, and a level's
//! `recovery_attempts_max` dead-letters a run through the same executor a real worker uses.

use twice_sim::cards::CrashWorker;
use twice_sim::checker::Outcome;
use twice_sim::level::{Level, Play, TimedAction, parse_level};
use twice_sim::runtime::guards::{Guard, Guards};
use twice_sim::runtime::worker::Held;
use twice_sim::simulator::{Phase, Simulation, SimulationBuilder};

/// A refund whose recovery after a crash comes `restart_ms` later, against billing that keeps
/// keys a day and shows credits to lookups 1.5 s after they land; the tool declares the day and
/// 2 s from the send (the lag plus the way to billing).
fn level(restart_ms: u32) -> Level {
    let text = format!(
        r#"(
            id: "terms", title: "terms", briefing: "b",
            lesson: (rule: "r", text: "t"),
            world: (accounts: [(id: "acct_ada", owner: "Ada")], billing_keys: honour,
                    restart_after_crash_ms: Some({restart_ms}),
                    billing_key_retention_ms: Some(86400000), billing_lookup_settle_ms: Some(1500)),
            tools: [(name: "issue_credit", side_effect: external, operation: credit, reconcile: true,
                     key_retention_ms: Some(86400000), lookup_settle_ms: Some(2000))],
            model: (on_failed: call_again),
            runs: [(id: "r1", calls: [(tool: "issue_credit", account: "acct_ada", amount_cents: 2500, memo: "Refund")])],
            cards: [(card: CrashWorker, count: 3)],
            goal: paid_twice,
            max_phases: 400,
        )"#
    );
    parse_level(std::path::Path::new("terms.level.ron"), &text).expect("the level parses")
}

/// Crashes w1 while billing's answer is on its way, and runs to the end.
fn crash_mid_call(level: Level, guards: Guards) -> Simulation {
    let crash = TimedAction {
        at_phase: 4,
        play: Play::CrashWorker(CrashWorker {
            worker: Some(1),
            in_phase: Some(Phase::WaitForAnswer),
        }),
        fizzles: false,
    };
    let mut simulation = SimulationBuilder::new(level, 1)
        .guards(guards)
        .actions(vec![crash])
        .build()
        .expect("builds");
    simulation.run().expect("runs");
    simulation
}

fn outcome(simulation: &Simulation) -> Outcome {
    simulation.verdict().expect("a verdict").outcome
}

fn held(simulation: &Simulation, guard: Guard) -> Vec<Held> {
    simulation
        .guard_notes()
        .iter()
        .filter(|note| note.guard == guard)
        .map(|note| note.held.clone())
        .collect()
}

#[test]
fn a_recovery_past_billings_retention_finds_nothing_and_only_the_guard_keeps_it_unknown() {
    let thirty_hours = 30 * 3_600_000;
    let guarded = crash_mid_call(level(thirty_hours), Guards::all_on());
    assert_eq!(outcome(&guarded), Outcome::PaidOnce);
    assert!(
        matches!(held(&guarded, Guard::KeyRetention)[..], [Held::LookupExpired { key_age_ms, key_retention_ms: 86_400_000 }] if key_age_ms >= 108_000_000),
        "{:?}",
        guarded.guard_notes()
    );
    assert_eq!(guarded.billing().effects_for("r1/0"), (1, 2500));

    let naive = crash_mid_call(level(thirty_hours), Guards::all_on().with(Guard::KeyRetention, false));
    assert_eq!(outcome(&naive), Outcome::PaidTwice, "{}", naive.history_text().unwrap());
    assert_eq!(naive.billing().effects_for("r1/0"), (2, 5000));
}

#[test]
fn a_lookup_sooner_than_billings_settle_time_finds_nothing_and_only_the_guard_asks_again() {
    let guarded = crash_mid_call(level(50), Guards::all_on());
    assert_eq!(outcome(&guarded), Outcome::PaidOnce);
    assert!(
        matches!(
            held(&guarded, Guard::LookupSettle)[..],
            [Held::NotFoundTooSoon {
                lookup_settle_ms: 2_000,
                ..
            }]
        ),
        "{:?}",
        guarded.guard_notes()
    );
    assert!(
        matches!(held(&guarded, Guard::ReconcileHook)[..], [Held::Reconciled]),
        "the second look finds the credit: {:?}",
        guarded.guard_notes()
    );

    let naive = crash_mid_call(level(50), Guards::all_on().with(Guard::LookupSettle, false));
    assert_eq!(outcome(&naive), Outcome::PaidTwice, "{}", naive.history_text().unwrap());
}

/// Two credits, and a limit of one failed recovery: w1 pays the first and saves checkpoint v1,
/// then is killed as Penny asks for the second; the recovery (w2) is killed at the same step,
/// before it gets past v1; the next recovery meets the limit.
fn crash_looping(guards: Guards) -> Simulation {
    let text = r#"(
        id: "crash-loop", title: "crash loop", briefing: "b",
        lesson: (rule: "r", text: "t"),
        world: (accounts: [(id: "acct_ada", owner: "Ada")], billing_keys: honour,
                restart_after_crash_ms: Some(50), recovery_attempts_max: Some(1)),
        tools: [(name: "issue_credit", side_effect: external, operation: credit, reconcile: true)],
        model: (on_failed: call_again),
        runs: [(id: "r1", calls: [
            (tool: "issue_credit", account: "acct_ada", amount_cents: 2500, memo: "Refund"),
            (tool: "issue_credit", account: "acct_ada", amount_cents: 1000, memo: "Goodwill"),
        ])],
        cards: [(card: CrashWorker, count: 2)],
        goal: paid_twice,
        max_phases: 400,
    )"#;
    let level = parse_level(std::path::Path::new("crash-loop.level.ron"), text).expect("the level parses");
    let crash = |at_phase, worker| TimedAction {
        at_phase,
        play: Play::CrashWorker(CrashWorker {
            worker: Some(worker),
            in_phase: None,
        }),
        fizzles: false,
    };
    let mut simulation = SimulationBuilder::new(level, 1)
        .guards(guards)
        .actions(vec![crash(9, 1), crash(12, 2)])
        .build()
        .expect("builds");
    simulation.run().expect("runs");
    simulation
}

#[test]
fn a_levels_recovery_limit_dead_letters_a_run_whose_recoveries_keep_failing() {
    let guarded = crash_looping(Guards::all_on());
    let checkpoint = guarded
        .checkpoints()
        .unwrap()
        .into_iter()
        .find(|checkpoint| checkpoint.run_id == "r1")
        .expect("r1's checkpoint");
    assert_eq!(
        checkpoint.status,
        "dead_lettered",
        "{}",
        guarded.history_text().unwrap()
    );
    assert!(
        matches!(
            held(&guarded, Guard::DeadLetter)[..],
            [Held::DeadLettered {
                failed_recoveries: 1,
                ..
            }]
        ),
        "{:?}",
        guarded.guard_notes()
    );

    let naive = crash_looping(Guards::all_on().with(Guard::DeadLetter, false));
    let checkpoint = naive
        .checkpoints()
        .unwrap()
        .into_iter()
        .find(|checkpoint| checkpoint.run_id == "r1")
        .expect("r1's checkpoint");
    assert_ne!(checkpoint.status, "dead_lettered", "{}", naive.history_text().unwrap());
    assert!(held(&naive, Guard::DeadLetter).is_empty());
    assert_eq!(
        naive.billing().effects_for("r1/1"),
        (1, 1000),
        "the third worker went on and paid"
    );
    assert_eq!(
        guarded.billing().effects_for("r1/1"),
        (0, 0),
        "nothing is driven until an operator resumes"
    );
}
