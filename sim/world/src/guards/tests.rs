//! Every guard has every part, and each part is true: its quote is the seed's own words, its
//! decision rows name functions the runtime has, its rows and key are its own.

use std::collections::BTreeSet;
use std::path::Path;

use super::*;

/// The seed's text, as the quotes are held to it (the runtime's specification).
const SEED: &str = include_str!("side-effects-once.txt");

/// Text without whitespace or backticks: the seed's copy lost some spaces around the statuses
/// it set in code ("startedorindeterminate"), and a quote may wrap where the seed does not.
fn squeezed(text: &str) -> String {
    text.chars()
        .filter(|character| !character.is_whitespace() && *character != '`')
        .collect()
}

#[test]
fn the_registry_holds_every_guard_once_in_order() {
    assert_eq!(REGISTRY.len(), Guard::EVERY.len());
    for (spec, guard) in REGISTRY.iter().zip(Guard::EVERY) {
        assert_eq!(spec.guard, guard, "REGISTRY is in Guard::EVERY order");
        assert_eq!(super::spec(guard).guard, guard);
    }
}

#[test]
fn every_guard_has_every_part() {
    let mut words = BTreeSet::new();
    let mut keys = BTreeSet::new();
    let mut mentioned = BTreeSet::new();
    for spec in REGISTRY {
        let name = spec.guard.name();
        assert!(words.insert(spec.words), "{name}: its words are another guard's");
        assert!(keys.insert(spec.defender_key), "{name}: its key is another guard's");
        assert_eq!(guard_for_key(spec.defender_key), Some(spec.guard));
        for part in [spec.words, spec.promise, spec.without, spec.defender_key] {
            assert!(!part.trim().is_empty(), "{name} has an empty part");
        }
        assert!(!spec.rule.quote.is_empty(), "{name} quotes no rule");
        assert!(!spec.decision_rows.is_empty(), "{name} names no decision it changes");
        assert!(
            !spec.mentions.is_empty(),
            "{name}: the words that name it in a sentence"
        );
        for mention in spec.mentions {
            assert_eq!(
                *mention,
                mention.to_lowercase(),
                "{name}: mentions are matched in lower case"
            );
            assert!(
                mentioned.insert(*mention),
                "{name}: {mention:?} names another guard too"
            );
        }
        // The runtime without it is described, never named by the guard with a negation in
        // front ("without no reflex compensation").
        let without = spec.without.to_lowercase();
        assert!(
            !without.contains(spec.words) && !without.starts_with("without"),
            "{name}: `without` must describe the naive runtime: {without}"
        );
        for row in spec.rulebook_rows {
            assert_eq!(
                row.live_when.map(|(guard, _)| guard),
                Some(spec.guard),
                "{name}: {row:?}"
            );
            assert_eq!(row.table, row.id.table(), "{name}: {row:?}");
        }
    }
}

#[test]
fn every_quote_from_the_seed_is_the_seeds_own_words() {
    let seed = squeezed(SEED);
    assert!(seed.len() > 5_000, "the seed was read");
    for spec in REGISTRY {
        let name = spec.guard.name();
        match spec.rule.origin {
            Origin::Seed => {
                for excerpt in spec.rule.quote {
                    assert!(
                        seed.contains(&squeezed(excerpt)),
                        "{name}: not the seed's words: {excerpt}"
                    );
                }
            }
            Origin::Beyond { source } => {
                assert!(
                    source.contains("beyond the seed"),
                    "{name}: say where it comes from: {source}"
                );
                assert!(
                    !seed.contains(&squeezed(&spec.rule.text())),
                    "{name}: a seed rule is quoted as such"
                );
            }
        }
    }
}

#[test]
fn every_decision_row_names_a_function_the_runtime_has() {
    let runtime = Path::new(env!("CARGO_MANIFEST_DIR")).join("../runtime/src");
    for spec in REGISTRY {
        for row in spec.decision_rows {
            let (module, function) = row.function.split_once("::").expect("module::function");
            let function = function.rsplit("::").next().expect("a function");
            let mut sources = Vec::new();
            let file = runtime.join(format!("{module}.rs"));
            if file.exists() {
                sources.push(file);
            }
            if let Ok(entries) = std::fs::read_dir(runtime.join(module)) {
                sources.extend(entries.map(|entry| entry.expect("an entry").path()));
            }
            let found = sources.iter().any(|source| {
                std::fs::read_to_string(source).is_ok_and(|text| {
                    text.contains(&format!("fn {function}(")) || text.contains(&format!("fn {function}<"))
                })
            });
            assert!(
                found,
                "{}: no `fn {function}` in the runtime's `{module}`",
                spec.guard.name()
            );
        }
    }
}

#[test]
fn the_sentences_never_name_a_guard_that_was_on_as_what_the_other_run_had() {
    for spec in REGISTRY {
        let on = Switched {
            guard: spec.guard,
            was_on: true,
        };
        let off = Switched {
            guard: spec.guard,
            was_on: false,
        };
        assert_eq!(switched(on), format!("with {}", spec.without));
        assert!(switched(off).ends_with(" on"), "{}", switched(off));
        let money = "Ada is paid $50.00 of $25.00 owed";
        for sentence in [
            decided_the_heist(on, false, money),
            decided_the_heist(off, true, money),
            protected_the_money(on, false, OtherRun::Worse, money),
            protected_the_money(on, false, OtherRun::Better, money),
            protected_the_money(on, true, OtherRun::Mixed, money),
            protected_the_money(off, true, OtherRun::Worse, money),
        ] {
            assert!(sentence.contains(money), "{sentence}");
            assert!(!sentence.to_lowercase().contains("without no"), "{sentence}");
        }
    }
    // A guard that was on and cost a customer is told as its price, never as protection
    // (22's contract check: refusing the run left Ada's refund waiting).
    let cost = protected_the_money(
        Switched {
            guard: Guard::ToolContract,
            was_on: true,
        },
        false,
        OtherRun::Better,
        "Ada is paid $25.00 of $25.00 owed",
    );
    assert!(
        cost.starts_with(
            "The tool contract check cost a customer here, the price of what it promises (a run whose write"
        ),
        "{cost}"
    );
    assert!(!cost.contains("not needed") && !cost.contains(" but "), "{cost}");
    assert_eq!(not_needed(&[], 0), None);
    let one = not_needed(&[Guard::Ledger], 0).expect("a sentence");
    assert!(
        one.starts_with("Not needed this time: the ledger — switched off alone, it leaves"),
        "{one}"
    );
    let two = not_needed(&[Guard::Ledger, Guard::KeyPerCall], 0).expect("a sentence");
    assert!(
        two.contains("the ledger and keys per call — switched off alone, each"),
        "{two}"
    );
    // Guards the level's screen does not name are counted, never named.
    let counted = not_needed(&[Guard::Ledger], 14).expect("a sentence");
    assert!(
        counted.starts_with(
            "Not needed this time: the ledger and 14 other guards on here that this level is not about — \
             switched off alone, each leaves"
        ),
        "{counted}"
    );
    let only_counted = not_needed(&[], 1).expect("a sentence");
    assert!(
        only_counted.starts_with(
            "Not needed this time: 1 guard on here that this level is not about — switched off alone, it leaves"
        ),
        "{only_counted}"
    );
}
