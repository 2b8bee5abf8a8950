//! The user documentation — README.md and the book under docs/src — held to the repository:
//! every relative link, anchor, picture and `{{#include}}` resolves (in the built book too: a
//! chapter links only inside the book), every repository path it names in code exists, every
//! picture is one `.ci/screenshots` makes, every chapter is in SUMMARY.md, the README is a
//! front door (short, the two commands and the way on in its first screen), and no page
//! speaks of issue numbers, stops or the dates work was done. `.ci/book` checks the built
//! HTML as well, and the rustdoc links that only exist there.

#[path = "common/markdown.rs"]
mod markdown;

use std::collections::BTreeSet;
use std::path::{Component, Path, PathBuf};

use markdown::{
    Document, book_source, documents, heading_anchors, includes, inline_code, links, split, workspace_root,
};

/// The library crates whose rustdoc `.ci/book` puts in the built book's `api/` folder.
const RUSTDOC_CRATES: [&str; 2] = ["twice_runtime", "twice_ledger_postgres"];
/// The README's first screen, in lines.
const FIRST_SCREEN_LINES: usize = 40;
/// The README's length, in lines.
const README_LINES_MAX: usize = 200;

/// `path` with `.` and `..` folded, without touching the file system.
fn normalised(path: &Path) -> PathBuf {
    let mut parts: Vec<Component> = Vec::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir if matches!(parts.last(), Some(Component::Normal(_))) => {
                parts.pop();
            }
            other => parts.push(other),
        }
    }
    parts.iter().collect()
}

fn is_external(target: &str) -> bool {
    target.contains("://") || target.starts_with("mailto:")
}

/// Checks one link of `document`; answers the problem, if any.
fn link_problem(document: &Document, target: &str, picture: bool) -> Option<String> {
    if is_external(target) {
        return None;
    }
    let (path_part, anchor) = match target.split_once('#') {
        Some((path, anchor)) => (path, Some(anchor)),
        None => (target, None),
    };
    let folder = document.path.parent().expect("a document sits in a folder");
    let resolved = if path_part.is_empty() {
        document.path.clone()
    } else {
        normalised(&folder.join(path_part))
    };
    let book = book_source();
    let in_book = document.path.starts_with(&book);
    if in_book && !resolved.starts_with(&book) {
        return Some(format!(
            "{target} leaves docs/src: the built book would not have it (name the file in code, or {{{{#include}}}} it)"
        ));
    }
    // The rustdoc lives in the built book only (`.ci/book` puts it in `api/`).
    if let Ok(inside) = resolved.strip_prefix(book.join("api")) {
        let krate = inside.components().next().and_then(|part| part.as_os_str().to_str());
        return match krate {
            Some(krate) if RUSTDOC_CRATES.contains(&krate) => None,
            _ => Some(format!(
                "{target}: .ci/book builds the rustdoc of {RUSTDOC_CRATES:?} only"
            )),
        };
    }
    if !resolved.exists() {
        return Some(format!("{target}: no such file ({})", resolved.display()));
    }
    if picture && !resolved.is_file() {
        return Some(format!("{target}: a picture must be a file"));
    }
    let anchor = anchor?;
    if resolved.extension().is_none_or(|extension| extension != "md") {
        return Some(format!("{target}: an anchor into a file that is not Markdown"));
    }
    let text = std::fs::read_to_string(&resolved).expect("the linked file reads");
    let anchors = heading_anchors(&text);
    (!anchors.contains(anchor)).then(|| format!("{target}: no heading makes #{anchor} (it has {anchors:?})"))
}

#[test]
fn every_link_picture_and_include_in_the_docs_resolves() {
    let mut problems = Vec::new();
    let mut checked = 0;
    for document in documents() {
        let (_, prose) = inline_code(&split(&document.text).prose);
        for link in links(&prose) {
            checked += 1;
            if let Some(problem) = link_problem(&document, &link.target, link.picture) {
                problems.push(format!("{}:{}: {problem}", document.name(), link.line));
            }
        }
        for (line, path) in includes(&document.text) {
            checked += 1;
            let resolved = document.path.parent().unwrap().join(&path);
            if !resolved.is_file() {
                problems.push(format!(
                    "{}:{line}: {{{{#include {path}}}}}: no such file",
                    document.name()
                ));
            }
        }
    }
    assert!(checked > 50, "only {checked} links found: is the parser blind?");
    assert!(problems.is_empty(), "broken links:\n{}", problems.join("\n"));
}

/// What `.ci/screenshots` writes: `shoot NAME …` for the game, and the browser's names.
fn screenshots_made() -> BTreeSet<String> {
    let script = std::fs::read_to_string(workspace_root().join(".ci/screenshots")).expect(".ci/screenshots");
    let mut names: BTreeSet<String> = script
        .lines()
        .filter_map(|line| line.trim().strip_prefix("shoot "))
        .filter_map(|rest| rest.split_whitespace().next())
        .map(|name| format!("{name}.png"))
        .collect();
    let browser = script
        .lines()
        .find_map(|line| line.trim().strip_prefix("for name in web-"))
        .expect("the browser's pictures in .ci/screenshots (`for name in web-…`)");
    // `for name in web-levels web-level …; do`: the names up to the `;`.
    let list = browser.split(';').next().unwrap_or_default();
    names.extend(
        format!("web-{list}")
            .split_whitespace()
            .map(|name| format!("{name}.png")),
    );
    names
}

#[test]
fn every_picture_is_one_the_screenshot_script_makes() {
    let made = screenshots_made();
    assert!(made.len() > 5, "{made:?}");
    let folder = book_source().join("screenshots");
    let mut shown = BTreeSet::new();
    let mut problems = Vec::new();
    for document in documents() {
        let (_, prose) = inline_code(&split(&document.text).prose);
        for link in links(&prose).into_iter().filter(|link| link.picture) {
            let resolved = normalised(&document.path.parent().unwrap().join(&link.target));
            let name = resolved.file_name().unwrap().to_string_lossy().into_owned();
            if resolved.parent() != Some(folder.as_path()) || !made.contains(&name) {
                problems.push(format!(
                    "{}:{}: {} is not a picture .ci/screenshots makes into docs/src/screenshots",
                    document.name(),
                    link.line,
                    link.target
                ));
            }
            shown.insert(name);
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    let on_disk: BTreeSet<String> = std::fs::read_dir(&folder)
        .expect("docs/src/screenshots")
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(
        on_disk, made,
        "the pictures on disk (left) and those .ci/screenshots makes (right)"
    );
    let unused: Vec<&String> = made.difference(&shown).collect();
    assert!(unused.is_empty(), "pictures no page shows: {unused:?}");
}

/// A repository path named in code (`sim/tests/campaign.rs`), without placeholders.
fn repository_path(code: &str) -> Option<&str> {
    let roots = ["sim/", "game/", "levels/", "docs/", "assets/", ".ci/"];
    let plain = code
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '/' | '.' | '_' | '-'));
    (plain && roots.iter().any(|root| code.starts_with(root))).then_some(code)
}

#[test]
fn every_repository_path_the_docs_name_exists() {
    let root = workspace_root();
    let mut problems = Vec::new();
    let mut checked = 0;
    for document in documents() {
        let (inline, _) = inline_code(&split(&document.text).prose);
        for code in inline {
            let Some(path) = repository_path(&code.text) else {
                continue;
            };
            checked += 1;
            if !root.join(path).exists() {
                problems.push(format!("{}:{}: `{path}` does not exist", document.name(), code.line));
            }
        }
    }
    assert!(checked > 20, "only {checked} paths found");
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn every_chapter_is_in_the_summary_and_every_summary_entry_exists() {
    let book = book_source();
    let summary = std::fs::read_to_string(book.join("SUMMARY.md")).expect("docs/src/SUMMARY.md");
    let (_, prose) = inline_code(&split(&summary).prose);
    let listed: BTreeSet<PathBuf> = links(&prose)
        .iter()
        .map(|link| normalised(&book.join(&link.target)))
        .collect();
    for chapter in &listed {
        assert!(
            chapter.is_file(),
            "SUMMARY.md lists {}, which does not exist",
            chapter.display()
        );
    }
    let chapters: BTreeSet<PathBuf> = documents()
        .into_iter()
        .map(|document| document.path)
        .filter(|path| path.starts_with(&book) && !path.ends_with("SUMMARY.md"))
        .collect();
    let orphans: Vec<_> = chapters.difference(&listed).collect();
    assert!(orphans.is_empty(), "pages SUMMARY.md does not list: {orphans:?}");
}

#[test]
fn the_readme_is_a_front_door() {
    let readme = std::fs::read_to_string(workspace_root().join("README.md")).expect("README.md");
    let lines = readme.lines().count();
    assert!(
        lines <= README_LINES_MAX,
        "README.md is {lines} lines; at most {README_LINES_MAX}"
    );
    let first_screen: String = readme.lines().take(FIRST_SCREEN_LINES).collect::<Vec<_>>().join("\n");
    for needle in [
        "cargo run ",
        "cargo test --workspace --locked",
        "(docs/src/workshop/plan.md)",
        "(docs/src/runtime/quick-start.md)",
        "(docs/src/playing/game.md)",
    ] {
        assert!(
            first_screen.contains(needle),
            "the README's first {FIRST_SCREEN_LINES} lines do not show {needle}"
        );
    }
}

/// "issue 38", "stop 34", "5 December 2026", "2026-12-02": the history of the work, which
/// stays in git.
fn work_history(line: &str) -> Option<String> {
    const MONTHS: [&str; 12] = [
        "january",
        "february",
        "march",
        "april",
        "may",
        "june",
        "july",
        "august",
        "september",
        "october",
        "november",
        "december",
    ];
    let lower = line.to_lowercase();
    let words: Vec<&str> = lower
        .split(|c: char| !c.is_alphanumeric() && c != '-')
        .filter(|word| !word.is_empty())
        .collect();
    for key in ["issue ", "issues ", "stop ", "stops "] {
        for (at, _) in lower.match_indices(key) {
            let word_starts = !lower[..at].ends_with(|c: char| c.is_alphanumeric());
            let rest = &lower[at + key.len()..];
            if word_starts && rest.starts_with(|c: char| c.is_ascii_digit()) {
                let number: String = rest.chars().take_while(char::is_ascii_digit).collect();
                return Some(format!("{key}{number}"));
            }
        }
    }
    for pair in words.windows(2) {
        let year = |word: &str| word.len() == 4 && word.starts_with("20") && word.parse::<u32>().is_ok();
        if MONTHS.contains(&pair[0]) && year(pair[1]) {
            return Some(format!("{} {}", pair[0], pair[1]));
        }
    }
    words
        .iter()
        .find(|word| {
            let parts: Vec<&str> = word.split('-').collect();
            parts.len() == 3
                && parts[0].len() == 4
                && parts[0].starts_with("20")
                && parts.iter().all(|part| part.parse::<u32>().is_ok())
        })
        .map(|word| (*word).to_owned())
}

#[test]
fn no_page_speaks_of_issues_stops_or_dates_of_work() {
    assert_eq!(
        work_history("measured on 5 December 2026"),
        Some("december 2026".into())
    );
    assert_eq!(work_history("see Issue 25 and stop 3"), Some("issue 25".into()));
    assert_eq!(work_history("(2026-12-02, same VM)"), Some("2026-12-02".into()));
    assert_eq!(work_history("an issue: 25 levels"), None);
    let mut problems = Vec::new();
    for document in documents() {
        for (index, line) in document.text.lines().enumerate() {
            if let Some(found) = work_history(line) {
                problems.push(format!("{}:{}: \"{found}\"", document.name(), index + 1));
            }
        }
    }
    assert!(
        problems.is_empty(),
        "the history of the work stays in git:\n{}",
        problems.join("\n")
    );
}

/// The library crates' doc comments are user documentation too: the book carries their
/// rustdoc (`.ci/book`), source pages included.
#[test]
fn the_library_crates_doc_comments_speak_of_no_issues_stops_or_dates_of_work() {
    let root = workspace_root();
    let mut files = Vec::new();
    for folder in ["sim/runtime/src", "sim/postgres/src"] {
        markdown::source_tree::files_below(&root.join(folder), |name| name.ends_with(".rs"), &mut files);
    }
    assert!(files.len() > 10, "{files:?}");
    let mut problems = Vec::new();
    for path in files {
        let text = std::fs::read_to_string(&path).expect("a source file");
        for (index, line) in text.lines().enumerate() {
            let trimmed = line.trim_start();
            if !(trimmed.starts_with("///") || trimmed.starts_with("//!")) {
                continue;
            }
            if let Some(found) = work_history(trimmed) {
                problems.push(format!("{}:{}: \"{found}\"", path.display(), index + 1));
            }
        }
    }
    assert!(
        problems.is_empty(),
        "the history of the work stays in git:\n{}",
        problems.join("\n")
    );
}
