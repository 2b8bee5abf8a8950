//! The world's scripted owner changes: someone outside the agent sets an account's owner at a
//! declared moment, the timeline says so in true words, and a retried write of Penny's that lands
//! after it is judged a lost update. A change the world cannot make is refused at load with the
//! file, the line and the field.

use std::path::Path;

use twice_world::billing::ChangedBy;
use twice_world::cards::LoseResponse;
use twice_world::checker::Outcome;
use twice_world::level::{Level, Play, parse_level};
use twice_world::runtime::guards::{Guard, Guards};
use twice_world::simulator::{Actor, Simulation, SimulationBuilder};

/// A level whose one run changes acct_ada's owner to Grace; `changes` is the world's
/// `owner_changes` list, one entry a line (the first on line 8).
fn level_text(changes: &str) -> String {
    format!(
        r#"(
    id: "owners", title: "owners", briefing: "b",
    lesson: (rule: "r", text: "t"),
    world: (
        accounts: [(id: "acct_ada", owner: "Ada")],
        billing_keys: ignore,
        owner_changes: [
{changes}
        ],
    ),
    tools: [(name: "change_owner", side_effect: write, operation: change_owner)],
    model: (on_failed: give_up),
    runs: [(id: "r1", calls: [(tool: "change_owner", account: "acct_ada", owner: "Grace", memo: "sold")])],
    guards: (write_retry_rule: false, reconcile_hook: false, key_downstream: false),
    cards: [(card: LoseResponse, count: 1)],
    goal: change_undone,
)"#
    )
}

const SUPPORT_AT_100: &str = r#"            (at_ms: 100, account: "acct_ada", owner: "Hopper Ltd", by: "support"),"#;

fn level(changes: &str) -> Level {
    parse_level(Path::new("owners.level.ron"), &level_text(changes)).expect("the test level parses")
}

/// Runs `level` with `guards`, losing the owner change's first answer on the wire, to the end.
fn lose_the_answer(level: Level, guards: Guards) -> Simulation {
    let lose = Play::LoseResponse(LoseResponse { key: None });
    let mut simulation = SimulationBuilder::new(level, 1).guards(guards).build().unwrap();
    simulation
        .run_until(|simulation| !simulation.wire_targets(lose.card()).is_empty())
        .unwrap();
    simulation.play(lose).unwrap();
    simulation.run().unwrap();
    simulation
}

/// The owner history of acct_ada as (to, made by Penny).
fn history(simulation: &Simulation) -> Vec<(String, bool)> {
    simulation
        .billing()
        .records
        .history_of("acct_ada")
        .map(|change| (change.to.clone(), matches!(change.by, ChangedBy::Intent(_))))
        .collect()
}

#[test]
fn a_retry_landing_after_someones_change_undoes_it_and_the_verdict_says_whose() {
    let level = level(SUPPORT_AT_100);
    let guards = level.guards;
    let simulation = lose_the_answer(level.clone(), guards);
    assert_eq!(
        history(&simulation),
        [
            ("Grace".to_owned(), true),
            ("Hopper Ltd".to_owned(), false),
            ("Grace".to_owned(), true)
        ],
        "Penny's write, support's change, Penny's retry"
    );
    let verdict = simulation.verdict().unwrap();
    assert_eq!(verdict.outcome, Outcome::ChangeUndone, "{}", verdict.summary);
    let words = &verdict.effects[0].words;
    assert!(
        words.contains("support's change") && words.contains("Hopper Ltd") && words.contains("put Grace back"),
        "{words}"
    );

    // One attempt per write: the lost answer is unknown, the run pauses, support's change stands.
    let held = lose_the_answer(level, guards.with(Guard::WriteRetryRule, true));
    assert_eq!(
        history(&held),
        [("Grace".to_owned(), true), ("Hopper Ltd".to_owned(), false)]
    );
    assert_eq!(held.verdict().unwrap().outcome, Outcome::DoneOnce);
}

#[test]
fn the_timeline_says_when_the_change_will_come_and_when_it_came_in_the_runs_own_words() {
    let simulation = lose_the_answer(level(SUPPORT_AT_100), level(SUPPORT_AT_100).guards);
    let rows: Vec<_> = simulation
        .timeline()
        .iter()
        .filter(|entry| entry.kind == "owner change")
        .collect();
    assert_eq!(rows.len(), 2, "announced at the start, then made");
    assert_eq!((rows[0].time_ms, rows[0].actor.clone()), (0, Actor::Billing));
    assert!(
        rows[0]
            .text
            .contains("support will set acct_ada's owner to Hopper Ltd at 100 ms"),
        "{}",
        rows[0].text
    );
    assert_eq!(rows[1].time_ms, 100);
    // The value it replaced is the one the history holds at that moment, not a scripted guess.
    let replaced = &simulation.billing().records.owner_changes[1].from;
    assert!(
        rows[1]
            .text
            .contains(&format!("support sets acct_ada's owner to Hopper Ltd (was {replaced})")),
        "{}",
        rows[1].text
    );
}

#[test]
fn a_change_before_pennys_only_write_is_replaced_by_it_but_nothing_is_undone() {
    let early = r#"            (at_ms: 5, account: "acct_ada", owner: "Hopper Ltd", by: "support"),"#;
    let level = level(early);
    let guards = level.guards;
    let mut simulation = SimulationBuilder::new(level, 1).guards(guards).build().unwrap();
    simulation.run().unwrap();
    assert_eq!(
        history(&simulation),
        [("Hopper Ltd".to_owned(), false), ("Grace".to_owned(), true)]
    );
    let verdict = simulation.verdict().unwrap();
    assert_eq!(verdict.outcome, Outcome::DoneOnce, "{}", verdict.summary);
    assert!(
        verdict.effects[0]
            .words
            .contains("after support's change to Hopper Ltd"),
        "{}",
        verdict.effects[0].words
    );
}

/// The error a level with these owner changes is refused with, as its user reads it.
fn refusal(changes: &str) -> String {
    parse_level(Path::new("owners.level.ron"), &level_text(changes))
        .expect_err("the level is refused")
        .to_string()
}

#[test]
fn an_owner_change_the_world_cannot_make_is_refused_at_its_line_and_field() {
    // The second change is the bad one (line 9): the error points at its field, not the first's.
    let unknown = format!(
        "{SUPPORT_AT_100}\n{}",
        r#"            (at_ms: 150, account: "acct_bob", owner: "Bob", by: "support"),"#
    );
    let problem = refusal(&unknown);
    assert!(
        problem.contains("owners.level.ron:9:")
            && problem.contains("owner_changes[1].account")
            && problem.contains("`acct_bob`"),
        "{problem}"
    );

    let late = r#"            (at_ms: 100001, account: "acct_ada", owner: "Bob", by: "support"),"#;
    let problem = refusal(late);
    assert!(
        problem.contains("owners.level.ron:8:")
            && problem.contains("owner_changes[0].at_ms")
            && problem.contains("100000")
            && problem.contains("100001"),
        "{problem}"
    );
    let never = r#"            (at_ms: 0, account: "acct_ada", owner: "Bob", by: "support"),"#;
    assert!(refusal(never).contains("owner_changes[0].at_ms"));

    let nameless = r#"            (at_ms: 100, account: "acct_ada", owner: " ", by: "support"),"#;
    let problem = refusal(nameless);
    assert!(
        problem.contains("owners.level.ron:8:") && problem.contains("owner_changes[0].owner"),
        "{problem}"
    );

    let nobody = r#"            (at_ms: 100, account: "acct_ada", owner: "Bob", by: ""),"#;
    let problem = refusal(nobody);
    assert!(
        problem.contains("owners.level.ron:8:") && problem.contains("owner_changes[0].by"),
        "{problem}"
    );

    // A field the world does not know is serde's refusal, still with its line.
    let typo = r#"            (at_ms: 100, account: "acct_ada", owner: "Bob", by: "support", when: 3),"#;
    let problem = refusal(typo);
    assert!(
        problem.contains("owners.level.ron:8:") && problem.contains("when"),
        "{problem}"
    );
}
