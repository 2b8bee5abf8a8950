//! Timers belong to an attempt, not to a key: a call whose key and attempt number repeat an
//! earlier call's (hashed keys, two identical credits) must not be timed out by the earlier
//! call's timer.

use twice_world::level::parse_level;
use twice_world::simulator::SimulationBuilder;

/// One run issuing two identical $25 credits for Ada. With `key_per_call` off both calls hash
/// to one key, and each is attempt 1; the ledger is off so nothing else tells them apart.
fn two_identical_credits(timeout_ms: u32, latency_ms: u32) -> twice_world::level::Level {
    level(timeout_ms, latency_ms, timeout_ms * 3, "()", 2)
}

/// `credits` identical $25 credits in one run; the model as `model` says.
fn level(timeout_ms: u32, latency_ms: u32, slow_ms: u32, model: &str, credits: usize) -> twice_world::level::Level {
    let credit = r#"(tool: "issue_credit", account: "acct_ada", amount_cents: 2500, memo: "Late delivery credit"),"#;
    let calls = credit.repeat(credits);
    let text = format!(
        r#"(
            id: "timers", title: "timers", briefing: "b",
            lesson: (rule: "r", text: "t"),
            world: (accounts: [(id: "acct_ada", owner: "Ada")], billing_keys: ignore,
                    latency_ms: {latency_ms}, timeout_ms: {timeout_ms}, slow_response_ms: {slow_ms}),
            tools: [(name: "issue_credit", side_effect: external, operation: credit)],
            model: {model},
            runs: [(id: "r1", calls: [{calls}])],
            guards: (key_per_call: false, ledger: false, pause_on_indeterminate: false, tool_contract: false, ambiguity_policy: false),
            cards: [(card: SlowResponse, count: 1)],
            goal: paid_twice,
        )"#,
    );
    parse_level(std::path::Path::new("timers.level.ron"), &text).expect("the timer level parses")
}

#[test]
fn an_earlier_calls_timer_never_fires_on_a_later_call_with_the_same_key_and_attempt() {
    let level = two_identical_credits(100, 20);
    let mut simulation = SimulationBuilder::new(level, 1).build().unwrap();
    simulation.run().unwrap();
    let timeline = simulation.timeline();
    let sends: Vec<_> = timeline.iter().filter(|entry| entry.kind == "send").collect();
    assert_eq!(sends.len(), 2, "two calls, each sent once: {timeline:#?}");
    assert_eq!(sends[0].key, sends[1].key, "both calls hash to one key");
    let second_sent_ms = sends[1].time_ms;
    assert!(
        second_sent_ms < sends[0].time_ms + 100,
        "the test needs the first call's timer to fall while the second call is in flight"
    );
    let timeouts: Vec<_> = timeline.iter().filter(|entry| entry.kind == "timeout").collect();
    assert!(timeouts.is_empty(), "no attempt outlived its own timer: {timeouts:#?}");
    let answered = timeline
        .iter()
        .filter(|entry| entry.kind == "response travels" && entry.time_ms > second_sent_ms)
        .count();
    assert_eq!(
        answered, 1,
        "the second credit is answered, not timed out: {timeline:#?}"
    );
    assert_eq!(simulation.billing().entries.len(), 2, "both credits landed");
}

#[test]
fn an_earlier_calls_late_answer_is_not_taken_for_a_later_identical_calls_answer() {
    // The first credit's answer is slowed past its timeout; told "failed", the model issues
    // the credit again, with the same hashed key and attempt number, and the slowed answer
    // arrives while that second call is in flight.
    let level = level(100, 20, 140, "(on_failed: call_again)", 1);
    let actions = vec![twice_world::level::TimedAction {
        at_phase: 4,
        play: twice_world::level::Play::SlowResponse(twice_world::cards::SlowResponse { key: None }),
        fizzles: false,
    }];
    let mut simulation = SimulationBuilder::new(level, 1).actions(actions).build().unwrap();
    simulation.run().unwrap();
    let timeline = simulation.timeline();
    let sends: Vec<_> = timeline.iter().filter(|entry| entry.kind == "send").collect();
    assert_eq!(sends.len(), 2, "the first call and the model's second: {timeline:#?}");
    assert_eq!(sends[0].key, sends[1].key, "both calls hash to one key");
    let second_sent_ms = sends[1].time_ms;
    let ignored: Vec<_> = timeline.iter().filter(|entry| entry.kind == "late outcome").collect();
    assert_eq!(
        ignored.len(),
        1,
        "the first call's answer is ignored as late: {timeline:#?}"
    );
    assert!(
        ignored[0].time_ms > second_sent_ms,
        "it arrived while the second call was in flight"
    );
    let received: Vec<_> = timeline
        .iter()
        .filter(|entry| entry.kind == "response travels" && entry.time_ms > second_sent_ms)
        .collect();
    assert_eq!(received.len(), 1, "the second call gets its own answer: {timeline:#?}");
    assert!(received[0].time_ms > ignored[0].time_ms, "{timeline:#?}");
}
