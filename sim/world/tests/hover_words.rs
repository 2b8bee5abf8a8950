//! The words under a pointer and the words of a level, in both editions: a guard's hover text
//! (its promise: the guards panel, the level list, predictions, the defender, the ending), every
//! ledger status and history event, and every level's briefing, lesson, hints and debrief. A
//! playtest found these quoting the runtime ("on_indeterminate: pause — …",
//! `<run_id>:<tool_call_id>`, `BEGIN IMMEDIATE`, "stops as dead_lettered") and a history event,
//! `recovered_unknown`, with no words at all. Where a runtime name teaches, the level's rule
//! gives it once as the name of the thing (04's rule quotes the seed's
//! `tool_policy.on_indeterminate: pause`); the level's own sentences say what it does.

#[allow(dead_code)] // Only the levels folder is used here.
mod support;

use std::collections::BTreeSet;

use support::levels_folder;
use twice_world::campaign::Campaign;
use twice_world::guards;
use twice_world::ledger::HistoryEvent;
use twice_world::ledger_words;
use twice_world::runtime::guards::Guard;
use twice_world::runtime::rules::Status;

/// The code-like words of `line`: a snake_case name, a `<placeholder>`, an all-capitals
/// keyword (`BEGIN`), a CamelCase name. Text between backticks is code on purpose and skipped.
fn identifiers_in(line: &str) -> Vec<String> {
    let prose: String = line
        .split('`')
        .enumerate()
        .filter(|(index, _)| index % 2 == 0)
        .map(|(_, part)| part)
        .collect::<Vec<_>>()
        .join(" ");
    prose
        .split(|character: char| !(character.is_alphanumeric() || matches!(character, '_' | '<' | '>')))
        .filter(|word| {
            let letters: Vec<char> = word.chars().collect();
            let snake = letters
                .windows(3)
                .any(|three| three[0].is_alphanumeric() && three[1] == '_' && three[2].is_alphanumeric());
            let placeholder = word.starts_with('<') && word.len() > 2;
            let keyword = letters.len() >= 5 && letters.iter().all(char::is_ascii_uppercase);
            let camel = letters
                .windows(2)
                .any(|two| two[0].is_ascii_lowercase() && two[1].is_ascii_uppercase());
            snake || placeholder || keyword || camel
        })
        .map(str::to_owned)
        .collect()
}

#[test]
fn the_identifier_rule_finds_what_the_playtest_found() {
    assert_eq!(
        identifiers_in("on_indeterminate: pause — the run waits"),
        ["on_indeterminate"]
    );
    assert_eq!(
        identifiers_in("the key is <run_id>:<tool_call_id>"),
        ["<run_id>", "<tool_call_id>"]
    );
    assert_eq!(
        identifiers_in("one SQLite transaction (BEGIN IMMEDIATE)"),
        ["BEGIN", "IMMEDIATE"]
    );
    assert_eq!(identifiers_in("play LoseRequest"), ["LoseRequest"]);
    assert!(identifiers_in("the pause (`on_indeterminate: pause`) holds; r1:c1 at $25, 2× paid").is_empty());
}

#[test]
fn every_guards_hover_text_says_its_promise_in_words() {
    let mut problems = Vec::new();
    for guard in Guard::EVERY {
        let name = guard.name();
        for (part, text) in [
            ("promise (its hover text)", guards::promise(guard)),
            ("words", guards::words(guard)),
            ("without", guards::spec(guard).without),
        ] {
            let found = identifiers_in(text);
            // "ledger" is a guard's name and a word too: only a name no sentence says counts.
            if !found.is_empty() || (name.contains('_') && text.contains(name)) {
                problems.push(format!("{name}'s {part} quotes the runtime ({found:?}): {text}"));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn every_status_has_a_sentence_of_its_own() {
    let mut sentences = BTreeSet::new();
    for status in Status::ALL {
        let words = ledger_words::status(status);
        assert!(
            words.sentence.ends_with('.') && words.sentence.split_whitespace().count() >= 6,
            "{status}: a sentence, not a label: {}",
            words.sentence
        );
        assert!(
            identifiers_in(words.sentence).is_empty() && identifiers_in(words.word).is_empty(),
            "{status}: {words:?}"
        );
        assert!(
            sentences.insert(words.sentence),
            "{status} says what another status says"
        );
    }
}

#[test]
fn every_history_event_has_words_of_its_own() {
    let mut said = BTreeSet::new();
    let mut problems = Vec::new();
    for event in HistoryEvent::ALL {
        let name = event.name();
        let Some(words) = ledger_words::event(event) else {
            problems.push(format!("{name} has no words"));
            continue;
        };
        let found: Vec<String> = [words.words, words.sentence]
            .into_iter()
            .flat_map(identifiers_in)
            .collect();
        if !found.is_empty() {
            problems.push(format!("{name}'s words quote the runtime: {found:?}"));
        }
        if !words.sentence.ends_with('.') || words.sentence.split_whitespace().count() < 5 {
            problems.push(format!("{name}: a sentence, not a label: {}", words.sentence));
        }
        if !said.insert(words.words) || !said.insert(words.sentence) {
            problems.push(format!("{name} says what another event says: {words:?}"));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// The runtime's names a level's sentences must not use as words: every guard's, every
/// history event's and every run status's with an underscore, and the tool policy's keys.
fn runtime_names() -> Vec<&'static str> {
    let mut names: Vec<&'static str> = Guard::EVERY.map(|guard| guard.name()).into();
    names.extend(HistoryEvent::ALL.map(HistoryEvent::name));
    names.extend([
        "awaiting_reconciliation",
        "dead_lettered",
        "on_indeterminate",
        "tool_policy",
        "recovery_attempts_max",
    ]);
    names.retain(|name| name.contains('_'));
    names
}

/// A level's rule is quoted (from the seed, or Twice's own rule with its source): it keeps
/// the runtime's names, and introduces them. Everything else a level says is read as
/// sentences (and holds no backtick: the campaign refuses one as a stray mark).
#[test]
fn level_sentences_say_what_the_runtime_does_not_its_names() {
    let campaign = Campaign::load(&levels_folder()).expect("the campaign loads");
    let names = runtime_names();
    let mut problems = Vec::new();
    for loaded in &campaign.levels {
        let level = &loaded.level;
        let hints = &level.hints;
        let mut texts = vec![
            ("briefing", level.briefing.as_str()),
            ("briefing_more", level.briefing_more.as_str()),
            ("lesson text", level.lesson.text.as_str()),
            ("debrief", level.debrief.as_str()),
            ("nudge", hints.nudge.as_str()),
            ("idea", hints.idea.as_str()),
        ];
        texts.extend(hints.the_move.as_deref().map(|text| ("move", text)));
        for (part, text) in texts {
            for name in &names {
                let said = text
                    .split(|character: char| !(character.is_alphanumeric() || character == '_'))
                    .any(|word| word == *name);
                if said {
                    problems.push(format!("{}'s {part} says {name}: {text}", level.id));
                }
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
