//! `twice-sim replay`: play tapes again and compare each run with what its tape expects; with
//! `--update`, show each difference and rewrite the tape's `expect` block to what the run did.

use std::path::{Path, PathBuf};

use serde::Serialize;

use twice_world::exit::{EXIT_BAD_INPUT, EXIT_DIFFERS, EXIT_OK};
use twice_world::level::{self, Expectation};
use twice_world::replay::{ReplayResult, replay_tape};
use twice_world::text::counted;

use crate::cli::guard_list;

/// Replays every tape below `paths`; with `update`, rewrites the expectations that differ.
pub fn replay(files: &[PathBuf], json: bool, update: bool) -> u8 {
    let mut results = Vec::new();
    let mut errors = Vec::new();
    for file in files {
        match level::load_tape(file)
            .map_err(|error| error.to_string())
            .and_then(|tape| replay_tape(&tape).map_err(|error| error.to_string()))
        {
            Ok(result) => results.push(result),
            Err(error) => errors.push(error),
        }
    }
    let mut updated = 0;
    if update {
        for result in results.iter().filter(|result| !result.as_expected) {
            match rewrite_expectation(&result.tape, &result.updated_expectation()) {
                Ok(()) => updated += 1,
                Err(error) => errors.push(format!("{}: cannot update: {error}", result.tape.display())),
            }
        }
    }
    let differ = results.iter().filter(|result| !result.as_expected).count();
    if json {
        #[derive(Serialize)]
        struct Summary<'a> {
            tapes: usize,
            as_expected: usize,
            differ: usize,
            updated: usize,
            errors: &'a [String],
            results: &'a [ReplayResult],
        }
        let summary = Summary {
            tapes: files.len(),
            as_expected: results.len() - differ,
            differ,
            updated,
            errors: &errors,
            results: &results,
        };
        println!("{}", serde_json::to_string_pretty(&summary).expect("reports serialize"));
    } else {
        for result in &results {
            let violations = result.verdict.violation_kinds();
            let got = format!(
                "{} [{}]{}",
                result.verdict.outcome,
                guard_list(&result.verdict.stopped_by),
                crate::cli::violation_list(&violations)
            );
            if result.as_expected {
                println!("ok      {}  {got}", result.tape.display());
            } else {
                let verb = if update { "UPDATED" } else { "DIFFERS" };
                println!("{verb} {}  got {got}", result.tape.display());
                for difference in &result.differences {
                    println!("        {difference}");
                }
            }
        }
        for error in &errors {
            eprintln!("error: {error}");
        }
        let differing = if update {
            format!("{differ} differed ({updated} updated)")
        } else {
            format!("{differ} differ")
        };
        println!(
            "{}: {} as expected, {differing}, {} bad",
            counted(files.len() as u64, "tape", "tapes"),
            results.len() - differ,
            errors.len()
        );
    }
    if !errors.is_empty() {
        EXIT_BAD_INPUT
    } else if differ > updated {
        EXIT_DIFFERS
    } else {
        EXIT_OK
    }
}

/// Rewrites only the text of the tape's `expect` block, so its comments and the layout of
/// everything else stay as the author wrote them.
fn rewrite_expectation(path: &Path, expectation: &Expectation) -> Result<(), String> {
    let text = std::fs::read_to_string(path).map_err(|error| error.to_string())?;
    let rewritten = with_expectation(&text, expectation)?;
    std::fs::write(path, rewritten).map_err(|error| error.to_string())
}

/// `text` with its top-level `expect: (…)` value replaced by `expectation`, indented as the
/// field is.
pub fn with_expectation(text: &str, expectation: &Expectation) -> Result<String, String> {
    let (start, end) = expect_value_span(text).ok_or("no `expect: (…)` block found")?;
    let line_start = text[..start].rfind('\n').map_or(0, |at| at + 1);
    let indent: String = text[line_start..]
        .chars()
        .take_while(|character| *character == ' ' || *character == '\t')
        .collect();
    let value = expectation_text(expectation, &indent);
    Ok(format!("{}{value}{}", &text[..start], &text[end..]))
}

/// An expectation as an author writes one: a field a line, lists and maps on one line, a key's
/// status bare (`completed`, or `None` for no record).
fn expectation_text(expectation: &Expectation, indent: &str) -> String {
    let mut fields = vec![format!("verdict: {}", expectation.verdict)];
    if !expectation.stopped_by.is_empty() {
        let guards: Vec<&str> = expectation.stopped_by.iter().map(|guard| guard.name()).collect();
        fields.push(format!("stopped_by: [{}]", guards.join(", ")));
    }
    if !expectation.violations.is_empty() {
        let kinds: Vec<&str> = expectation.violations.iter().map(|kind| kind.name()).collect();
        fields.push(format!("violations: [{}]", kinds.join(", ")));
    }
    let quoted = |text: &str| serde_json::to_string(text).expect("a string serializes");
    if !expectation.paid_cents.is_empty() {
        let paid: Vec<String> = expectation
            .paid_cents
            .iter()
            .map(|(customer, cents)| format!("{}: {cents}", quoted(customer)))
            .collect();
        fields.push(format!("paid_cents: {{{}}}", paid.join(", ")));
    }
    if !expectation.keys.is_empty() {
        let keys: Vec<String> = expectation
            .keys
            .iter()
            .map(|(key, status)| format!("{}: {}", quoted(key), status.map_or("None", |status| status.name())))
            .collect();
        fields.push(format!("keys: {{{}}}", keys.join(", ")));
    }
    let inner = format!("{indent}    ");
    let lines: String = fields.iter().map(|field| format!("{inner}{field},\n")).collect();
    format!("(\n{lines}{indent})")
}

/// The byte span of the value of the top-level `expect` field (its parentheses included),
/// skipping strings and comments.
fn expect_value_span(text: &str) -> Option<(usize, usize)> {
    let bytes = text.as_bytes();
    let mut depth = 0usize;
    let mut at = 0;
    let mut value_start = None;
    while at < bytes.len() {
        match bytes[at] {
            b'/' if bytes.get(at + 1) == Some(&b'/') => {
                at = text[at..].find('\n').map_or(bytes.len(), |offset| at + offset);
                continue;
            }
            b'/' if bytes.get(at + 1) == Some(&b'*') => {
                at = text[at..].find("*/").map_or(bytes.len(), |offset| at + offset + 2);
                continue;
            }
            b'"' => {
                at += 1;
                while at < bytes.len() && bytes[at] != b'"' {
                    at += if bytes[at] == b'\\' { 2 } else { 1 };
                }
            }
            b'(' | b'[' | b'{' => {
                if depth == 1 && value_start.is_none() && is_expect_field(text, at) {
                    value_start = Some(at);
                }
                depth += 1;
            }
            b')' | b']' | b'}' => {
                depth = depth.checked_sub(1)?;
                if depth == 1
                    && let Some(start) = value_start
                {
                    return Some((start, at + 1));
                }
            }
            _ => {}
        }
        at += 1;
    }
    None
}

/// Whether the bracket at `at` opens the value of a field named `expect`.
fn is_expect_field(text: &str, at: usize) -> bool {
    let before = text[..at].trim_end();
    let Some(before) = before.strip_suffix(':') else {
        return false;
    };
    let before = before.trim_end();
    before.ends_with("expect")
        && !before[..before.len() - "expect".len()]
            .chars()
            .next_back()
            .is_some_and(|character| character.is_alphanumeric() || character == '_')
}

#[cfg(test)]
mod tests {
    use super::*;
    use twice_world::checker::Outcome;

    #[test]
    fn only_the_expect_block_is_rewritten_and_comments_stay() {
        let text = "// why this tape exists\n(\n    level: \"a.level.ron\", // the level\n    seed: 1,\n    title: \"expect: (not this)\",\n    expect: (\n        // old\n        verdict: paid_once,\n        stopped_by: [ledger],\n    ),\n)\n// the end\n";
        let expectation = Expectation {
            verdict: Outcome::PaidTwice,
            stopped_by: Vec::new(),
            violations: Vec::new(),
            paid_cents: [("Ada".to_owned(), 5000)].into(),
            keys: [
                ("r1:c1".to_owned(), Some(twice_world::runtime::rules::Status::Completed)),
                ("r1:c2".to_owned(), None),
            ]
            .into(),
        };
        let rewritten = with_expectation(text, &expectation).unwrap();
        assert!(rewritten.starts_with("// why this tape exists\n(\n    level: \"a.level.ron\", // the level\n"));
        assert!(rewritten.contains("title: \"expect: (not this)\","), "{rewritten}");
        assert!(rewritten.ends_with("    ),\n)\n// the end\n"), "{rewritten}");
        assert!(rewritten.contains("verdict: paid_twice"), "{rewritten}");
        assert!(rewritten.contains("    expect: (\n        verdict: paid_twice,\n        paid_cents: {\"Ada\": 5000},\n        keys: {\"r1:c1\": completed, \"r1:c2\": None},\n    ),\n"), "{rewritten}");
        assert!(!rewritten.contains("// old"), "{rewritten}");
        let parsed: twice_world::level::Tape =
            twice_world::level::parse_ron(Path::new("t.tape.ron"), &rewritten).unwrap();
        assert_eq!(parsed.expect, expectation);
        assert!(with_expectation("(level: \"a\", seed: 1)", &expectation).is_err());
    }
}
