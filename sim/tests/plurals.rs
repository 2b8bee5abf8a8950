//! Counts are said in words (`1 card`, `2 cards`), never as `card(s)`: no `(s)` in the
//! source of anything a player, a presenter or an operator reads — the game, the sim crates
//! (their messages, errors and printed lines, examples included) and the browser's static
//! files. Comments and test code are not read by them and are not searched: lines that start
//! a comment, files under a `tests/` folder or named `*_tests.rs`, and the body of every
//! `#[cfg(test)] mod … { … }`. Each hit is printed with its path and line.
//!
//! Say a count with `counted(count, "card", "cards")` (`twice_world::text::counted`, or
//! `twice_runtime::worker::counted` inside the runtime; `counted` in the browser's common.js).

#[path = "common/source_tree.rs"]
mod source_tree;

use source_tree::{files_below, workspace_root};

/// A file a user's words can come from (test files named `*_tests.rs` are not).
fn is_user_source(name: &str) -> bool {
    [".rs", ".js", ".html", ".css"]
        .iter()
        .any(|suffix| name.ends_with(suffix))
        && !name.ends_with("_tests.rs")
}

/// The lines of `text` (numbered from 1) that are neither comments nor inside a
/// `#[cfg(test)]` module written inline (`mod tests {` … the `}` that closes it at the
/// module's own indentation).
fn user_lines(text: &str) -> Vec<(usize, &str)> {
    let lines: Vec<&str> = text.lines().collect();
    let mut kept = Vec::new();
    let mut index = 0;
    while index < lines.len() {
        let line = lines[index];
        let trimmed = line.trim_start();
        if trimmed.starts_with("#[cfg(test)]") {
            // The item it gates: past any further attributes.
            let mut item = index + 1;
            while item < lines.len() && lines[item].trim_start().starts_with("#[") {
                item += 1;
            }
            let gated = lines.get(item).copied().unwrap_or_default();
            let indent = &gated[..gated.len() - gated.trim_start().len()];
            if gated.trim_start().starts_with("mod ") && gated.trim_end().ends_with('{') {
                let close = format!("{indent}}}");
                let end = (item + 1..lines.len())
                    .find(|&candidate| lines[candidate].trim_end() == close)
                    .unwrap_or_else(|| panic!("the test module at line {} never closes", item + 1));
                index = end + 1;
                continue;
            }
        }
        let comment = ["//", "/*", "* ", "*/"].iter().any(|start| trimmed.starts_with(start)) || trimmed == "*";
        if !comment {
            kept.push((index + 1, line));
        }
        index += 1;
    }
    kept
}

/// `path:line: text` for every `(s)` in user-facing source below the workspace's `game/` and `sim/`.
fn plural_hits() -> Vec<String> {
    let root = workspace_root();
    let mut files = Vec::new();
    files_below(&root.join("game"), is_user_source, &mut files);
    files_below(&root.join("sim"), is_user_source, &mut files);
    assert!(
        files.iter().any(|file| file.ends_with("sim/serve/web/app.js")),
        "the browser's static files are searched"
    );
    let mut hits = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap_or_else(|error| panic!("{}: {error}", file.display()));
        for (number, line) in user_lines(&text) {
            if line.contains("(s)") {
                let relative = file.strip_prefix(&root).unwrap_or(file);
                hits.push(format!("{}:{number}: {}", relative.display(), line.trim()));
            }
        }
    }
    hits
}

#[test]
fn no_count_is_said_as_noun_with_s_in_brackets() {
    let hits = plural_hits();
    assert!(
        hits.is_empty(),
        "say counts in words with `counted(count, \"card\", \"cards\")`, not `card(s)`:\n{}",
        hits.join("\n")
    );
}

#[test]
fn comments_and_inline_test_modules_are_not_user_facing_but_everything_else_is() {
    let text = "\
fn shown() -> &'static str {
    \"1 card(s)\"
}
// a comment about card(s)
/// a doc comment about card(s)
/** a JS doc comment
 * about card(s)
 */
#[cfg(test)]
mod tests {
    fn nested() {
        let _ = \"card(s)\";
    }
}
const LATER: &str = \"guard(s)\";
";
    let lines: Vec<usize> = user_lines(text)
        .into_iter()
        .filter(|(_, line)| line.contains("(s)"))
        .map(|(number, _)| number)
        .collect();
    assert_eq!(lines, [2, 15], "the string in code and the one after the test module");
}
