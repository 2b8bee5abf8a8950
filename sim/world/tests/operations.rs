//! The rest of the seed's side-effect table in the world: an email, an owner change and a
//! delete, each judged "once" by what the world recorded — and the levels that would declare
//! them wrongly refused when they load, with the file, the line and the field.

use std::path::Path;

use twice_world::cards::LoseResponse;
use twice_world::checker::Outcome;
use twice_world::level::{Level, Play, parse_level};
use twice_world::runtime::guards::{Guard, Guards};
use twice_world::simulator::{Simulation, SimulationBuilder};

/// A level of one run making one call of `tool` (declared as `declaration`), with `guards_off`.
fn level_text(declaration: &str, call: &str, keys: &str, model: &str, guards_off: &str) -> String {
    format!(
        r#"(
            id: "ops", title: "ops", briefing: "b",
            lesson: (rule: "r", text: "t"),
            world: (accounts: [(id: "acct_ada", owner: "Ada")], billing_keys: {keys}),
            tools: [{declaration}],
            model: {model},
            runs: [(id: "r1", calls: [{call}])],
            guards: ({guards_off}),
            cards: [(card: LoseResponse, count: 1)],
            goal: paid_twice,
        )"#
    )
}

fn level(declaration: &str, call: &str, keys: &str, model: &str, guards_off: &str) -> Level {
    let text = level_text(declaration, call, keys, model, guards_off);
    parse_level(Path::new("ops.level.ron"), &text).expect("the test level parses")
}

const EMAIL: &str = r#"(name: "send_email", side_effect: external, operation: send_email)"#;
const EMAIL_CALL: &str = r#"(tool: "send_email", account: "acct_ada", memo: "Your refund is on its way")"#;
const DELETE: &str = r#"(name: "delete_record", side_effect: destructive, operation: delete_record)"#;
const DELETE_CALL: &str = r#"(tool: "delete_record", account: "acct_ada", memo: "Closed at the customer's request")"#;

/// Runs `level` with `guards`, losing the first answer on the wire (the call's: it is the only
/// call), to the end.
fn lose_the_answer(level: Level, guards: Guards) -> Simulation {
    let mut simulation = SimulationBuilder::new(level, 1).guards(guards).build().unwrap();
    simulation
        .run_until(|simulation| {
            !simulation
                .wire_targets(Play::LoseResponse(LoseResponse { key: None }).card())
                .is_empty()
        })
        .unwrap();
    simulation.play(Play::LoseResponse(LoseResponse { key: None })).unwrap();
    simulation.run().unwrap();
    simulation
}

fn naive() -> &'static str {
    "write_retry_rule: false, reconcile_hook: false, key_downstream: false"
}

#[test]
fn a_retried_email_is_a_second_email_in_the_outbox_and_the_verdict_names_the_customer() {
    let level = level(EMAIL, EMAIL_CALL, "ignore", "()", naive());
    let guards = level.guards;
    let simulation = lose_the_answer(level.clone(), guards);
    assert_eq!(
        simulation.billing().records.outbox.len(),
        2,
        "the retry delivered again"
    );
    let verdict = simulation.verdict().unwrap();
    assert_eq!(verdict.outcome, Outcome::EmailedTwice, "{}", verdict.summary);
    assert!(verdict.credits.is_empty(), "no money is judged where none is owed");
    let effect = &verdict.effects[0];
    assert_eq!((effect.landed, effect.customer.as_str()), (2, "Ada"));
    assert!(
        effect.words.starts_with("Ada got the same email twice"),
        "{}",
        effect.words
    );

    // One attempt per write: the lost answer is unknown, and Ada reads one email.
    let held = lose_the_answer(level.clone(), guards.with(Guard::WriteRetryRule, true));
    let verdict = held.verdict().unwrap();
    assert_eq!(held.billing().records.outbox.len(), 1);
    assert_eq!(verdict.outcome, Outcome::DoneOnce, "{}", verdict.summary);
    assert!(
        verdict.effects[0].words.contains("once"),
        "{}",
        verdict.effects[0].words
    );
}

#[test]
fn a_mail_server_that_honours_the_key_answers_the_retry_with_the_first_email() {
    let level = level(
        EMAIL,
        EMAIL_CALL,
        "honour",
        "()",
        "write_retry_rule: false, reconcile_hook: false",
    );
    let guards = level.guards;
    let simulation = lose_the_answer(level, guards);
    assert_eq!(simulation.billing().records.outbox.len(), 1);
    assert_eq!(simulation.verdict().unwrap().outcome, Outcome::DoneOnce);
}

#[test]
fn a_delete_retried_meets_not_found_and_penny_told_failed_acts_again() {
    let model = "(on_failed: call_again)";
    let level = level(DELETE, DELETE_CALL, "ignore", model, naive());
    let guards = level.guards;
    let simulation = lose_the_answer(level.clone(), guards);
    let deletions = &simulation.billing().records.deletions;
    assert!(deletions[0].deleted, "{deletions:?}");
    assert!(deletions[1..].iter().all(|deletion| !deletion.deleted), "{deletions:?}");
    assert!(
        deletions
            .iter()
            .any(|deletion| deletion.call_key != deletions[0].call_key),
        "a new call of Penny's met not found: {deletions:?}"
    );
    let verdict = simulation.verdict().unwrap();
    assert_eq!(verdict.outcome, Outcome::ActedAgain, "{}", verdict.summary);
    assert!(
        verdict.effects[0].words.contains("Ada's record was deleted by r1:c1")
            && verdict.effects[0].words.contains("acted again"),
        "{}",
        verdict.effects[0].words
    );

    // One attempt: the lost answer is unknown and the run pauses; nobody tells Penny "failed".
    let held = lose_the_answer(level, guards.with(Guard::WriteRetryRule, true));
    let verdict = held.verdict().unwrap();
    assert_eq!(verdict.outcome, Outcome::DoneOnce, "{}", verdict.summary);
    assert_eq!(held.billing().records.deletions.len(), 1);
}

#[test]
fn a_runtime_retry_alone_meeting_not_found_is_not_penny_acting_again() {
    // Penny gives up when told "failed": only the runtime's own retry (the same call) met
    // "not found", so the record was deleted once and she made no new call.
    let level = level(DELETE, DELETE_CALL, "ignore", "(on_failed: give_up)", naive());
    let guards = level.guards;
    let simulation = lose_the_answer(level, guards);
    let deletions = &simulation.billing().records.deletions;
    assert!(deletions.len() >= 2 && deletions.iter().all(|deletion| deletion.call_key == "r1:c1"));
    assert_eq!(simulation.verdict().unwrap().outcome, Outcome::DoneOnce);
}

/// The error a level text is refused with, as its user reads it.
fn refusal(text: &str) -> String {
    parse_level(Path::new("ops.level.ron"), text)
        .expect_err("the level is refused")
        .to_string()
}

#[test]
fn a_level_naming_an_operation_the_world_lacks_is_refused_with_its_line() {
    let text = level_text(
        r#"(name: "send_sms", side_effect: external, operation: send_sms)"#,
        r#"(tool: "send_sms", account: "acct_ada", memo: "hi")"#,
        "ignore",
        "()",
        "",
    );
    let problem = refusal(&text);
    assert!(
        problem.contains("ops.level.ron:") && problem.contains("`send_sms`") && problem.contains("send_email"),
        "{problem}"
    );
}

#[test]
fn a_tool_declared_against_its_operations_side_effect_is_refused_with_the_field() {
    let text = level_text(
        "\n(name: \"delete_record\", side_effect: read, operation: delete_record)",
        DELETE_CALL,
        "ignore",
        "()",
        "",
    );
    let problem = refusal(&text);
    // The declaration sits on the level's sixth line.
    assert!(problem.contains("ops.level.ron:6:"), "{problem}");
    assert!(
        problem.contains("side_effect: read") && problem.contains("destructive") && problem.contains("delete_record"),
        "{problem}"
    );
    let hooked = level_text(
        r#"(name: "send_email", side_effect: external, operation: send_email, reconcile: true)"#,
        EMAIL_CALL,
        "ignore",
        "()",
        "",
    );
    assert!(refusal(&hooked).contains("cannot look up"), "{}", refusal(&hooked));
}

#[test]
fn an_owner_change_names_the_new_owner_and_only_it_does() {
    let change = r#"(name: "change_owner", side_effect: write, operation: change_owner)"#;
    let without = level_text(
        change,
        r#"(tool: "change_owner", account: "acct_ada", memo: "Transfer")"#,
        "ignore",
        "()",
        "",
    );
    assert!(
        refusal(&without).contains("names the new owner"),
        "{}",
        refusal(&without)
    );
    let email_with_owner = level_text(
        EMAIL,
        r#"(tool: "send_email", account: "acct_ada", memo: "hi", owner: "Grace")"#,
        "ignore",
        "()",
        "",
    );
    assert!(
        refusal(&email_with_owner).contains("leave out owner"),
        "{}",
        refusal(&email_with_owner)
    );
    let email_with_money = level_text(
        EMAIL,
        r#"(tool: "send_email", account: "acct_ada", amount_cents: 100, memo: "hi")"#,
        "ignore",
        "()",
        "",
    );
    assert!(
        refusal(&email_with_money).contains("moves no money"),
        "{}",
        refusal(&email_with_money)
    );
}
