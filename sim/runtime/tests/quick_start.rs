//! The quick start a stranger follows — the book's page (`docs/src/runtime/quick-start.md`,
//! read as raw markdown too) and this crate's README — quotes `examples/agent_loop.rs` and what
//! it prints. These tests run the example's own code and hold the quotes to it, so the page,
//! the README and the program cannot drift apart: the whole program on the page as it is, its
//! output line for line, the `cargo add` lines naming every crate the program uses (and no
//! other), and the story the page tells (w1 dies mid-send, w2 recovers the run, the hook
//! finds the email) as the ledger's history shows it.
//!
//! The book lives in the repository, outside the package: in the repository (the workspace
//! the crate is a member of) its page must be there; the crate built from its package
//! checks its README only.

#[path = "../examples/agent_loop.rs"]
#[allow(dead_code, reason = "the example's `main` runs when it is run as an example")]
mod agent_loop;

/// The example's source, as a stranger copies it.
const PROGRAM: &str = include_str!("../examples/agent_loop.rs");

fn read(relative: &str) -> String {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(relative);
    std::fs::read_to_string(&path).unwrap_or_else(|error| panic!("{}: {error}", path.display()))
}

/// The book's page, in the repository; `None` for the crate outside it (from its package).
fn page() -> Option<String> {
    let workspace = read_if_there("../../Cargo.toml")?;
    // The repository's workspace lists this crate; then the page must be there.
    assert!(
        workspace.contains("\"sim/runtime\""),
        "../../Cargo.toml is not Twice's workspace"
    );
    Some(read("../../docs/src/runtime/quick-start.md"))
}

fn read_if_there(relative: &str) -> Option<String> {
    std::fs::read_to_string(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(relative)).ok()
}

/// The quick start's texts: the README, and the book's page in the repository.
fn texts() -> Vec<(&'static str, String)> {
    let mut texts = vec![("README.md", readme())];
    texts.extend(page().map(|page| ("docs/src/runtime/quick-start.md", page)));
    texts
}

fn readme() -> String {
    read("README.md")
}

/// The fenced ` ```text ` block that follows the first line holding `after`, without fences.
fn block_after(text: &str, after: &str) -> Option<String> {
    let start = text.find(after)?;
    let rest = &text[start..];
    let open = rest.find("```text\n")? + "```text\n".len();
    let close = rest[open..].find("```")?;
    Some(rest[open..open + close].trim_end().to_owned())
}

/// The lines of the page's or the README's output block that differ from the program's.
fn differences(quoted: &str, printed: &[String]) -> Vec<String> {
    let quoted: Vec<&str> = quoted.lines().collect();
    let mut differences = Vec::new();
    for index in 0..quoted.len().max(printed.len()) {
        let (said, ran) = (quoted.get(index).copied(), printed.get(index).map(String::as_str));
        if said != ran {
            differences.push(format!("line {}: quoted {said:?}, printed {ran:?}", index + 1));
        }
    }
    differences
}

#[test]
fn the_page_holds_the_whole_program_as_it_is() {
    let Some(page) = page() else {
        eprintln!("outside the repository: no book page to check");
        return;
    };
    assert!(
        page.contains(&format!("```rust,ignore\n{PROGRAM}```\n")),
        "docs/src/runtime/quick-start.md must hold examples/agent_loop.rs verbatim in one ```rust,ignore block"
    );
    assert!(
        !page.contains("{{#include"),
        "the page is read as raw markdown too: the program is written out, not included"
    );
}

#[test]
fn the_page_and_the_readme_quote_what_the_program_prints() {
    let printed = agent_loop::story();
    for (name, text) in texts() {
        let quoted =
            block_after(&text, "It prints").unwrap_or_else(|| panic!("{name}: no ```text block after `It prints`"));
        let differences = differences(&quoted, &printed);
        assert!(
            differences.is_empty(),
            "{name} quotes other output than the program prints:\n{}\n\nthe program prints:\n{}",
            differences.join("\n"),
            printed.join("\n")
        );
    }
}

/// Every crate the program names is added by the page's and the README's `cargo add` lines,
/// and nothing else is (no `tempfile`, no `tokio` feature for a synchronous program).
#[test]
fn the_cargo_add_lines_name_the_crates_the_program_uses() {
    let used = |krate: &str| PROGRAM.contains(&format!("{krate}::"));
    for (name, text) in texts() {
        let box_start = text
            .find("cargo new ")
            .unwrap_or_else(|| panic!("{name}: no `cargo new` box"));
        let commands: Vec<&str> = text[box_start..]
            .lines()
            .take_while(|line| !line.starts_with("```"))
            .collect();
        let added: Vec<&str> = commands
            .iter()
            .filter_map(|line| line.trim().strip_prefix("cargo add "))
            .filter_map(|rest| rest.split_whitespace().next())
            .collect();
        let crates = [
            ("serde_json", "serde_json"),
            ("serde", "serde"),
            ("tempfile", "tempfile"),
            ("tokio", "tokio"),
            ("twice_runtime", "twice-runtime"),
        ];
        for (krate, package) in crates {
            assert_eq!(
                added.contains(&package),
                used(krate),
                "{name}: the program {} `{krate}`, and the box {} it: {commands:#?}",
                if used(krate) { "uses" } else { "does not use" },
                if added.contains(&package) {
                    "adds"
                } else {
                    "does not add"
                },
            );
        }
        assert!(
            !commands.iter().any(|line| line.contains("--features")),
            "{name}: the synchronous program needs no feature: {commands:#?}"
        );
        for step in ["cp ", "src/main.rs", "cargo run"] {
            assert!(
                commands.iter().any(|line| line.contains(step)),
                "{name}: the box lacks `{step}`: {commands:#?}"
            );
        }
    }
}

/// The story the page tells is the one the ledger holds: w1 reserved and sent the email and
/// died; w2, replacing it, recorded the call `indeterminate`; the hook found the email and
/// the call is `completed` — and the provider delivered one email.
#[test]
fn w1_dies_mid_send_and_w2_reconciles_the_email_by_its_key() {
    let story = agent_loop::story();
    let crash = story
        .iter()
        .position(|line| line.starts_with("== SQLite ledger, w1 dies"))
        .expect("the crash's part");
    let told = &story[crash..];
    let line = |start: &str| {
        told.iter()
            .find(|line| line.trim_start().starts_with(start))
            .unwrap_or_else(|| panic!("no line starting {start:?} in {told:#?}"))
    };
    assert!(line("w1 died after sending onboard-ada:c1").contains("the ledger holds started (owner w1)"));
    assert_eq!(
        line("w2 (replacing w1) ended:"),
        "w2 (replacing w1) ended: Exited(Completed)"
    );
    let events: Vec<String> = told
        .iter()
        .skip_while(|line| !line.starts_with("history of onboard-ada:c1"))
        .skip(1)
        .take_while(|line| line.starts_with("  "))
        .filter_map(|line| {
            let words: Vec<&str> = line.split_whitespace().collect();
            (words.get(1) == Some(&"ms")).then(|| words.get(3).copied().unwrap_or_default().to_owned())
        })
        .collect();
    assert_eq!(
        events,
        ["reserved", "attempt", "recovered_unknown", "reconciled"],
        "{told:#?}"
    );
    assert!(line("the run is completed").contains("1 email delivered"));
}
