//! The glossary: the words the game uses (phase, started, indeterminate, idempotency key…),
//! each with a short definition a player reads in the middle of a heist. It lives beside the
//! levels (`glossary.ron`), so a campaign that changes its words changes its glossary in the
//! same folder, and `twice-sim check` holds it to the rules: every entry names a term and
//! defines it in at most [`DEFINITION_WORDS_MAX`] words, no word is defined twice.
//!
//! [`Glossary::mentions`] finds the glossary's words in a text (whole words, longest first),
//! so a screen can make them clickable wherever they appear.

use std::collections::BTreeSet;
use std::ops::Range;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::InputError;
use crate::level;

/// The glossary's file name, beside the levels.
pub const GLOSSARY_FILE: &str = "glossary.ron";
/// The most entries a glossary may hold, and the most other words one entry may go by.
pub const ENTRIES_MAX: usize = 64;
pub const ALSO_MAX: usize = 8;
/// The longest a definition may be: read in a glance, between two steps.
pub const DEFINITION_WORDS_MAX: usize = 40;
/// The longest a term may be, in characters.
pub const TERM_CHARACTERS_MAX: usize = 40;
/// The most mentions [`Glossary::mentions`] returns for one text (a limit on everything).
pub const MENTIONS_MAX: usize = 256;

/// One word and what it means.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Entry {
    /// The word as the glossary lists it (lower case unless a name).
    pub term: String,
    pub definition: String,
    /// Other forms the game uses for the same idea ("unknown" for indeterminate, "keys").
    #[serde(default)]
    pub also: Vec<String>,
}

impl Entry {
    /// The term and its other forms.
    pub fn words(&self) -> impl Iterator<Item = &str> {
        std::iter::once(self.term.as_str()).chain(self.also.iter().map(String::as_str))
    }
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Glossary {
    pub entries: Vec<Entry>,
}

/// A glossary word found in a text: where (a byte range of the text) and which entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mention {
    pub range: Range<usize>,
    /// Index into [`Glossary::entries`].
    pub entry: usize,
}

impl Glossary {
    /// The entry a word names (its term or another form), ignoring case.
    pub fn find(&self, word: &str) -> Option<&Entry> {
        let word = word.trim().to_lowercase();
        self.entries
            .iter()
            .find(|entry| entry.words().any(|known| known.to_lowercase() == word))
    }

    /// Every glossary word in `text`, in order, not overlapping: whole words only, ignoring
    /// case, the longest form first where two start together ("idempotency key" before "key").
    pub fn mentions(&self, text: &str) -> Vec<Mention> {
        let lower = text.to_lowercase();
        // Lower-casing can change byte lengths outside ASCII; then positions would not match.
        if lower.len() != text.len() {
            return Vec::new();
        }
        let mut forms: Vec<(String, usize)> = self
            .entries
            .iter()
            .enumerate()
            .flat_map(|(index, entry)| entry.words().map(move |word| (word.to_lowercase(), index)))
            .filter(|(word, _)| !word.is_empty())
            .collect();
        forms.sort_by(|left, right| right.0.len().cmp(&left.0.len()).then(left.0.cmp(&right.0)));
        let bytes = lower.as_bytes();
        let is_word = |byte: u8| byte.is_ascii_alphanumeric() || byte == b'_';
        let mut mentions = Vec::new();
        let mut at = 0;
        while at < lower.len() && mentions.len() < MENTIONS_MAX {
            let starts_word = at == 0 || !is_word(bytes[at - 1]);
            let found = starts_word
                .then(|| {
                    forms.iter().find(|(word, _)| {
                        lower[at..].starts_with(word.as_str())
                            && bytes.get(at + word.len()).is_none_or(|next| !is_word(*next))
                    })
                })
                .flatten();
            match found {
                Some((word, entry)) => {
                    mentions.push(Mention {
                        range: at..at + word.len(),
                        entry: *entry,
                    });
                    at += word.len();
                }
                None => {
                    // On to the next character (never into the middle of one).
                    at += lower[at..].chars().next().map_or(1, char::len_utf8);
                }
            }
        }
        mentions
    }
}

/// The glossary file of a campaign folder.
pub fn path_in(folder: &Path) -> PathBuf {
    folder.join(GLOSSARY_FILE)
}

/// Parses and checks a glossary.
pub fn parse(path: &Path, text: &str) -> Result<Glossary, InputError> {
    let glossary: Glossary = level::parse_ron(path, text)?;
    let error = |needle: &str, nth: usize, message: String| Err(InputError::at(path, text, needle, nth, message));
    if glossary.entries.is_empty() {
        return error("entries", 0, "the glossary has no entries".into());
    }
    if glossary.entries.len() > ENTRIES_MAX {
        return error("entries", 0, format!("at most {ENTRIES_MAX} entries"));
    }
    let mut seen = BTreeSet::new();
    for (index, entry) in glossary.entries.iter().enumerate() {
        let term = entry.term.trim();
        if term.is_empty() {
            return error("term:", index, format!("entry {} names no term", index + 1));
        }
        if term.chars().count() > TERM_CHARACTERS_MAX || term != entry.term {
            return error(
                "term:",
                index,
                format!(
                    "\"{}\": a term is 1 to {TERM_CHARACTERS_MAX} characters, without spaces around it",
                    entry.term
                ),
            );
        }
        let words = crate::text::words(&entry.definition);
        if words == 0 {
            return error("definition:", index, format!("\"{term}\" has no definition"));
        }
        if words > DEFINITION_WORDS_MAX {
            return error(
                "definition:",
                index,
                format!("\"{term}\"'s definition is {words} words; at most {DEFINITION_WORDS_MAX}"),
            );
        }
        if entry.definition.contains('`') || entry.term.contains('`') {
            return error(
                "term:",
                index,
                format!("\"{term}\" has a backtick; players see it as a stray mark"),
            );
        }
        if entry.also.len() > ALSO_MAX {
            return error(
                "term:",
                index,
                format!("\"{term}\" goes by at most {ALSO_MAX} other words"),
            );
        }
        for word in entry.words() {
            if word.trim().is_empty() || word.trim() != word || word.chars().count() > TERM_CHARACTERS_MAX {
                return error(
                    "term:",
                    index,
                    format!(
                        "\"{term}\": \"{word}\" is not a word the glossary can match (1 to {TERM_CHARACTERS_MAX} characters, no spaces around it)"
                    ),
                );
            }
            if !seen.insert(word.to_lowercase()) {
                return error("term:", index, format!("\"{word}\" is in the glossary twice"));
            }
        }
    }
    Ok(glossary)
}

/// Loads the glossary in `folder`; `Ok(None)` when the folder has none.
pub fn load(folder: &Path) -> Result<Option<Glossary>, InputError> {
    let path = path_in(folder);
    if !path.is_file() {
        return Ok(None);
    }
    let text = std::fs::read_to_string(&path)
        .map_err(|error| InputError::new(&path, None, format!("cannot read: {error}")))?;
    parse(&path, &text).map(Some)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn glossary() -> Glossary {
        parse(
            Path::new("glossary.ron"),
            r#"(entries: [
                (term: "key", definition: "A name."),
                (term: "idempotency key", definition: "The name of one effect.", also: ["idempotency keys"]),
                (term: "indeterminate", definition: "Nobody knows.", also: ["unknown"]),
            ])"#,
        )
        .expect("parses")
    }

    #[test]
    fn mentions_are_whole_words_longest_first_and_ignore_case() {
        let glossary = glossary();
        let text = "The Idempotency key is unknown; keys and a keystone are not.";
        let found: Vec<(&str, &str)> = glossary
            .mentions(text)
            .iter()
            .map(|mention| {
                (
                    &text[mention.range.clone()],
                    glossary.entries[mention.entry].term.as_str(),
                )
            })
            .collect();
        assert_eq!(
            found,
            [("Idempotency key", "idempotency key"), ("unknown", "indeterminate")]
        );
        assert_eq!(
            glossary.find("Unknown").map(|entry| entry.term.as_str()),
            Some("indeterminate")
        );
        assert!(glossary.find("keystone").is_none());
        // Text beyond ASCII is searched too, at character boundaries.
        let accented = "Café: the key — unknown.";
        let mentions = glossary.mentions(accented);
        assert_eq!(mentions.len(), 2);
        assert_eq!(&accented[mentions[1].range.clone()], "unknown");
    }

    #[test]
    fn a_bad_glossary_is_refused_with_the_entry_named() {
        let refuse = |text: &str| parse(Path::new("glossary.ron"), text).expect_err("refused").to_string();
        let long = vec!["word"; DEFINITION_WORDS_MAX + 1].join(" ");
        let error = refuse(&format!(r#"(entries: [(term: "phase", definition: "{long}")])"#));
        assert!(error.contains("\"phase\"'s definition is 41 words"), "{error}");
        let error = refuse(r#"(entries: [(term: "", definition: "x")])"#);
        assert!(error.contains("names no term"), "{error}");
        let error = refuse(r#"(entries: [(term: "lease", definition: "x"), (term: "Lease", definition: "y")])"#);
        assert!(error.contains("\"Lease\" is in the glossary twice"), "{error}");
        let error = refuse(r#"(entries: [(term: "lease", definition: "see `x`")])"#);
        assert!(error.contains("backtick"), "{error}");
        let error = refuse(r#"(entries: [])"#);
        assert!(error.contains("no entries"), "{error}");
        let error = refuse(r#"(entries: [(term: "lease", definition: "x", colour: 1)])"#);
        assert!(error.contains("colour"), "{error}");
    }
}
