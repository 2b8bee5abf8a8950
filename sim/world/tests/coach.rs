//! The guided first level's coach says what the run shows: what travels on the wire now and
//! whose, whether it moves money, and which key to press — only a key whose card can hit a
//! message on the wire now. Walked phase by phase through level 01, and followed: the key it
//! asks for on the credit's answer wins the level.

use std::path::PathBuf;

use twice_world::hand::{self, WireCoach};
use twice_world::ledger::LedgerStore;
use twice_world::level;
use twice_world::simulator::{Direction, Simulation, SimulationBuilder};

fn level_01() -> level::Level {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../levels/01-naive-retry.level.ron");
    level::load_level(&path).expect("level 01 loads").level
}

fn simulation() -> Simulation {
    SimulationBuilder::new(level_01(), 1)
        .ledger_store(LedgerStore::Memory)
        .build()
        .expect("builds")
}

/// The tools that move money in level 01 (the credit), by name.
fn moves_money(simulation: &Simulation, tool: &str) -> bool {
    simulation
        .level()
        .tools
        .iter()
        .any(|declared| declared.name == tool && declared.side_effect.changes_something())
}

/// What the coach must say at this moment, checked against the simulation.
fn check(simulation: &Simulation, coach: &WireCoach) {
    let phase = simulation.phase();
    let messages: Vec<_> = simulation.messages().collect();
    assert_eq!(
        coach.on_the_wire.len(),
        messages.len(),
        "phase {phase}: one line a message on the wire: {coach:?}"
    );
    for (line, message) in coach.on_the_wire.iter().zip(&messages) {
        assert!(line.contains(&message.key), "phase {phase}: {line}");
        assert!(
            line.contains(&format!("w{}", message.worker)),
            "phase {phase}: whose: {line}"
        );
        assert_eq!(
            line.contains("moves no money"),
            !moves_money(simulation, &message.call.tool),
            "phase {phase}: a read is said to move no money, a credit never: {line}"
        );
    }
    let credit_answer = messages.iter().any(|message| {
        message.direction == Direction::Response && !message.lost && moves_money(simulation, &message.call.tool)
    });
    let credit_request = messages.iter().any(|message| {
        message.direction == Direction::Request && !message.lost && moves_money(simulation, &message.call.tool)
    });
    assert_eq!(
        coach.advice.contains("The money has moved"),
        credit_answer,
        "phase {phase}: billing has paid only when the credit's answer travels: {}",
        coach.advice
    );
    assert!(
        !coach.advice.contains("press") || !coach.keys.is_empty(),
        "phase {phase}: a key asked for is a key listed: {coach:?}"
    );
    if !credit_answer && !credit_request {
        assert!(
            coach.keys.is_empty(),
            "phase {phase}: no key while only a read travels: {coach:?}"
        );
    }
    // Every key it asks for plays a card of the hand that hits a credit on the wire now.
    let cards = &simulation.level().cards;
    for (key, card) in &coach.keys {
        assert!(
            coach.advice.contains(&format!("{key} ({})", card.title())),
            "{}",
            coach.advice
        );
        assert_eq!(cards[key - 1].card, *card, "key {key} is the hand's card {card:?}");
        let hits_a_credit = hand::targets(*card, simulation).iter().any(|target| {
            messages
                .iter()
                .any(|message| target.play.key() == Some(&message.key) && moves_money(simulation, &message.call.tool))
        });
        assert!(hits_a_credit, "phase {phase}: key {key} ({card:?}) hits the credit");
    }
}

#[test]
fn level_01s_coach_says_what_travels_and_asks_only_for_a_card_that_hits_the_credit() {
    let mut simulation = simulation();
    let mut saw_a_read_alone = false;
    let mut saw_the_credits_answer = false;
    loop {
        let coach = hand::wire_coach(&simulation);
        check(&simulation, &coach);
        let only_reads = simulation.messages().next().is_some()
            && simulation
                .messages()
                .all(|message| !moves_money(&simulation, &message.call.tool));
        if only_reads {
            saw_a_read_alone = true;
            assert!(
                coach.advice.starts_with("Only a read travels now"),
                "the balance lookup alone on the wire: {}",
                coach.advice
            );
        }
        saw_the_credits_answer |= coach.advice.contains("The money has moved");
        if !simulation.step().expect("steps") {
            break;
        }
    }
    assert!(saw_a_read_alone, "level 01's lookup travels alone at some phase");
    assert!(
        saw_the_credits_answer,
        "level 01's credit's answer travels at some phase"
    );
}

#[test]
fn following_level_01s_coach_wins_it() {
    let mut simulation = simulation();
    let key = loop {
        let coach = hand::wire_coach(&simulation);
        if coach.advice.contains("The money has moved") {
            break coach
                .keys
                .first()
                .copied()
                .expect("the coach names a key for the credit's answer");
        }
        assert!(
            simulation.step().expect("steps"),
            "the credit's answer travels before the level ends"
        );
    };
    let (number, card) = key;
    let target = hand::targets(card, &simulation)
        .into_iter()
        .next()
        .expect("the card it names has a target");
    simulation
        .play(target.play)
        .expect("the move the coach asks for is played");
    simulation.run().expect("runs");
    let verdict = simulation.verdict().expect("judged");
    assert!(
        verdict.goal_reached,
        "pressing {number} ({}) as the coach says pays Ada twice: {verdict:?}",
        card.title()
    );
}
