//! The glossary beside the levels (`levels/glossary.ron`): it parses, every entry names a term
//! and defines it briefly, it covers the words the campaign teaches with, and `twice-sim check`
//! refuses a broken one.

use std::path::PathBuf;

use twice_world::glossary::{self, DEFINITION_WORDS_MAX, GLOSSARY_FILE};

fn levels_folder() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../levels")
}

/// The words a player meets before they are explained: the glossary must define each.
const TAUGHT: [&str; 13] = [
    "phase",
    "started",
    "indeterminate",
    "unknown",
    "completed",
    "failed",
    "idempotency key",
    "ledger",
    "reconcile hook",
    "compensation",
    "checkpoint",
    "twin",
    "lease",
];

#[test]
fn the_glossary_parses_and_defines_every_word_the_campaign_teaches_with() {
    let glossary = glossary::load(&levels_folder())
        .expect("the glossary parses")
        .expect("the campaign ships a glossary");
    for word in TAUGHT {
        assert!(glossary.find(word).is_some(), "the glossary does not define \"{word}\"");
    }
    for entry in &glossary.entries {
        assert!(!entry.term.trim().is_empty());
        let words = twice_world::campaign::words(&entry.definition);
        assert!(
            (1..=DEFINITION_WORDS_MAX).contains(&words),
            "\"{}\": {words} words",
            entry.term
        );
    }
    // "unknown" is the word the screens use for indeterminate: both open the same entry.
    assert_eq!(glossary.find("unknown"), glossary.find("indeterminate"));
    // Every term is a word the campaign's levels actually use somewhere a player reads.
    let campaign = twice_world::campaign::Campaign::load(&levels_folder()).expect("the campaign loads");
    // Text by text: `mentions` stops at MENTIONS_MAX, which the whole campaign at once passes.
    let used: std::collections::BTreeSet<usize> = campaign
        .levels
        .iter()
        .flat_map(|loaded| twice_world::campaign::player_text(&loaded.level))
        .flat_map(|(_, text)| glossary.mentions(text))
        .map(|mention| mention.entry)
        .collect();
    for (index, entry) in glossary.entries.iter().enumerate() {
        assert!(
            used.contains(&index),
            "\"{}\" is in the glossary but no level's text uses it",
            entry.term
        );
    }
}

#[test]
fn twice_sim_check_refuses_a_broken_glossary_and_names_it() {
    let folder = tempfile::tempdir().expect("a temp dir");
    for file in ["01-naive-retry.level.ron", GLOSSARY_FILE] {
        std::fs::copy(levels_folder().join(file), folder.path().join(file)).expect("copy");
    }
    let clean = twice_world::campaign::check(&[folder.path().to_path_buf()]);
    assert!(clean.problems.is_empty(), "{:?}", clean.problems);

    let text = std::fs::read_to_string(levels_folder().join(GLOSSARY_FILE)).expect("reads");
    let long = vec!["word"; DEFINITION_WORDS_MAX + 5].join(" ");
    let broken = text.replacen("definition: \"", &format!("definition: \"{long} "), 1);
    std::fs::write(folder.path().join(GLOSSARY_FILE), broken).expect("write");
    let report = twice_world::campaign::check(&[folder.path().to_path_buf()]);
    let problems: Vec<String> = report.problems.iter().map(ToString::to_string).collect();
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert!(
        problems[0].contains(GLOSSARY_FILE) && problems[0].contains("\"phase\"'s definition is"),
        "{}",
        problems[0]
    );
}
