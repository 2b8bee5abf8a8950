//! What a first-time player reads in chapter 1, in words: a newcomer's playtest found raw
//! identifiers (`LoseRequest`, `failed_but_paid`) in lines a player reads, and a debrief's
//! "not needed" line naming fourteen guards the campaign had not introduced. Every chapter-1
//! tape is played to its end here, and every line the editions draw from it is read.

mod support;

use support::{levels_folder, run_tape, told};
use twice_world::campaign::Campaign;
use twice_world::debrief::LinePart;
use twice_world::guards;
use twice_world::level::CardKind;
use twice_world::runtime::guards::Guard;

fn chapter_one_tapes() -> Vec<(String, twice_world::level::Level)> {
    let campaign = Campaign::load(&levels_folder()).expect("the campaign loads");
    let tapes: Vec<(String, twice_world::level::Level)> = campaign
        .tapes
        .iter()
        .filter(|tape| tape.level.level.chapter == 1)
        .map(|tape| {
            let name = tape.path.file_name().expect("a file").to_string_lossy().into_owned();
            (name, tape.level.level.clone())
        })
        .collect();
    assert!(tapes.len() >= 10, "chapter 1 has its tapes: {}", tapes.len());
    tapes
}

/// Identifiers a player must never read: every card's, every broken promise's and every
/// guard's.
fn identifiers() -> Vec<&'static str> {
    let mut names: Vec<&'static str> = CardKind::ALL.iter().map(|card| card.name()).collect();
    names.extend(twice_world::checker::ViolationKind::ALL.map(|kind| kind.name()));
    // "ledger" is a guard's name and a word too: only the names no sentence says.
    names.extend(
        Guard::EVERY
            .map(|guard| guard.name())
            .into_iter()
            .filter(|name| name.contains('_')),
    );
    names
}

#[test]
fn chapter_one_debriefs_name_only_the_guards_its_screens_name() {
    for (tape, level) in chapter_one_tapes() {
        let simulation = run_tape(&tape);
        let debrief = told(&simulation);
        let named_on_screen = |guard: Guard| level.lesson.guards.contains(&guard) || !level.guards.is_on(guard);
        for line in debrief
            .guard_lines
            .iter()
            .filter(|line| line.part == LinePart::NotNeeded)
        {
            for guard in Guard::EVERY.into_iter().filter(|guard| !named_on_screen(*guard)) {
                let words = guards::words(guard);
                assert!(
                    !line.sentence.contains(words),
                    "{tape}: the not-needed line names {words}, which this level's screen never names: {}",
                    line.sentence
                );
            }
        }
    }
}

#[test]
fn chapter_one_lines_hold_no_identifier() {
    let identifiers = identifiers();
    for (tape, _) in chapter_one_tapes() {
        let simulation = run_tape(&tape);
        let verdict = simulation.verdict().expect("judged");
        let debrief = told(&simulation);
        let mut read: Vec<String> = simulation.timeline().iter().map(|entry| entry.text.clone()).collect();
        // Both editions draw a row as "actor · kind: text": a crew move's kind is the card as the
        // hand names it.
        read.extend(simulation.timeline().iter().map(|entry| entry.kind.clone()));
        read.extend(debrief.guard_lines.iter().map(|line| line.sentence.clone()));
        read.extend(debrief.diagnosis.iter().cloned());
        read.extend(debrief.what_if.iter().map(|what_if| what_if.sentence.clone()));
        read.extend(verdict.violations.iter().map(|violation| violation.sentence()));
        // A guard's row of the timeline, as both editions draw it: the guard in words.
        let telling = debrief.row_telling(&verdict);
        read.extend(
            simulation
                .timeline()
                .iter()
                .filter_map(|entry| entry.guard_row(&telling))
                .map(|row| guards::row_words(&row)),
        );
        for line in read {
            for identifier in &identifiers {
                assert!(
                    !line
                        .split(|c: char| !c.is_alphanumeric() && c != '_')
                        .any(|word| word == *identifier),
                    "{tape}: a player reads the identifier {identifier}: {line}"
                );
            }
        }
    }
}
