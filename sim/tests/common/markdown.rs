//! The user documentation as the tests read it: README.md and the book's chapters under
//! docs/src, split into prose, inline code, fenced code, links and headings, and the commands
//! it shows a reader to type. Shared by `sim/tests/docs.rs`, `sim/tests/doc_commands.rs` and
//! `game/tests/doc_commands.rs` (which checks the game's own flags with the game's binary).
#![allow(dead_code)] // Each test binary uses part of it.

use std::collections::BTreeSet;
use std::path::PathBuf;

#[path = "source_tree.rs"]
pub mod source_tree;

pub use source_tree::workspace_root;

/// The book's source folder.
pub fn book_source() -> PathBuf {
    workspace_root().join("docs/src")
}

/// One Markdown document: its path and its text.
#[derive(Debug)]
pub struct Document {
    pub path: PathBuf,
    pub text: String,
}

impl Document {
    /// The path from the workspace's root, for messages.
    pub fn name(&self) -> String {
        self.path
            .strip_prefix(workspace_root())
            .unwrap_or(&self.path)
            .display()
            .to_string()
    }
}

/// README.md and every `.md` file under docs/src, in a stable order.
pub fn documents() -> Vec<Document> {
    let mut paths = vec![workspace_root().join("README.md")];
    source_tree::files_below(&book_source(), |name| name.ends_with(".md"), &mut paths);
    paths
        .into_iter()
        .map(|path| {
            let text = std::fs::read_to_string(&path).unwrap_or_else(|error| panic!("{}: {error}", path.display()));
            Document { path, text }
        })
        .collect()
}

/// A piece of code the reader sees: a fenced block's line (continuation lines joined) or an
/// inline code span, with the line it starts on.
#[derive(Debug, Clone)]
pub struct Code {
    pub line: usize,
    /// The fenced block's info string (`sh`, `text`, `ron`…); `None` for inline code.
    pub language: Option<String>,
    pub text: String,
}

/// A document split into its fenced code and its prose (fenced lines blanked, so line numbers
/// and offsets stay those of the file).
#[derive(Debug)]
pub struct Split {
    pub fenced: Vec<Code>,
    pub prose: String,
}

pub fn split(text: &str) -> Split {
    let mut fenced = Vec::new();
    let mut prose = String::with_capacity(text.len());
    let mut fence: Option<(String, String)> = None; // (the fence, its language)
    let mut pending: Option<(usize, String)> = None; // a line continued with `\`
    for (index, line) in text.lines().enumerate() {
        let trimmed = line.trim_start();
        match &fence {
            None if trimmed.starts_with("```") || trimmed.starts_with("~~~") => {
                let marker: String = trimmed.chars().take_while(|c| *c == '`' || *c == '~').collect();
                let language = trimmed[marker.len()..].trim().to_owned();
                fence = Some((marker, language));
                prose.push('\n');
            }
            None => {
                prose.push_str(line);
                prose.push('\n');
            }
            Some((marker, _)) if trimmed.starts_with(marker.as_str()) && trimmed.trim_end() == marker => {
                fence = None;
                prose.push('\n');
            }
            Some((_, language)) => {
                let (start, mut joined) = pending.take().unwrap_or((index + 1, String::new()));
                joined.push_str(trimmed);
                match joined.strip_suffix('\\') {
                    Some(continued) => pending = Some((start, format!("{continued} "))),
                    None => fenced.push(Code {
                        line: start,
                        language: Some(language.clone()),
                        text: joined,
                    }),
                }
                prose.push('\n');
            }
        }
    }
    assert!(fence.is_none(), "a fenced code block is never closed");
    Split { fenced, prose }
}

/// The inline code spans of prose, and the prose with them blanked out (same offsets).
pub fn inline_code(prose: &str) -> (Vec<Code>, String) {
    let bytes = prose.as_bytes();
    let mut spans = Vec::new();
    let mut blanked = prose.as_bytes().to_vec();
    let mut index = 0;
    while index < bytes.len() {
        if bytes[index] != b'`' {
            index += 1;
            continue;
        }
        let run = bytes[index..].iter().take_while(|byte| **byte == b'`').count();
        let fence = &prose[index..index + run];
        let body_start = index + run;
        // The closing run: the same number of backticks, not part of a longer run, before the
        // paragraph ends.
        let mut search = body_start;
        let mut closing = None;
        while let Some(offset) = prose[search..].find(fence) {
            let at = search + offset;
            let longer = prose[at + run..].starts_with('`');
            if prose[body_start..at].contains("\n\n") {
                break;
            }
            if !longer {
                closing = Some(at);
                break;
            }
            search = at + prose[at..].chars().take_while(|c| *c == '`').count();
        }
        let Some(end) = closing else {
            index = body_start;
            continue;
        };
        let body = prose[body_start..end].replace('\n', " ");
        spans.push(Code {
            line: prose[..index].matches('\n').count() + 1,
            language: None,
            text: body.trim().to_owned(),
        });
        for byte in &mut blanked[index..end + run] {
            if *byte != b'\n' {
                *byte = b' ';
            }
        }
        index = end + run;
    }
    (
        spans,
        String::from_utf8(blanked).expect("only ASCII bytes were blanked"),
    )
}

/// A link or a picture in prose: `[text](target)` or `![alt](target)`.
#[derive(Debug)]
pub struct Link {
    pub line: usize,
    pub picture: bool,
    pub target: String,
}

/// The links and pictures of prose whose inline code has been blanked out.
pub fn links(prose: &str) -> Vec<Link> {
    let mut found = Vec::new();
    let mut from = 0;
    while let Some(offset) = prose[from..].find("](") {
        let close = from + offset;
        let target_start = close + 2;
        let Some(length) = prose[target_start..].find(')') else {
            break;
        };
        let target = prose[target_start..target_start + length].trim();
        // The link's text starts at the `[` that matches this `]`.
        let mut depth = 0usize;
        let mut open = None;
        for (at, character) in prose[..close].char_indices().rev() {
            match character {
                ']' => depth += 1,
                '[' if depth == 0 => {
                    open = Some(at);
                    break;
                }
                '[' => depth -= 1,
                _ => {}
            }
        }
        if let Some(open) = open {
            let target = target.split_whitespace().next().unwrap_or_default();
            found.push(Link {
                line: prose[..open].matches('\n').count() + 1,
                picture: open > 0 && prose[..open].ends_with('!'),
                target: target.trim_start_matches('<').trim_end_matches('>').to_owned(),
            });
        }
        from = target_start;
    }
    found
}

/// mdBook's `{{#include PATH}}` directives (an anchor or line range after `:` left off).
pub fn includes(text: &str) -> Vec<(usize, String)> {
    text.lines()
        .enumerate()
        .flat_map(|(index, line)| {
            line.match_indices("{{#include ")
                .map(move |(at, directive)| (index + 1, &line[at + directive.len()..]))
        })
        .map(|(line, rest)| {
            let path = rest.split("}}").next().unwrap_or_default().trim();
            (line, path.split(':').next().unwrap_or_default().to_owned())
        })
        .collect()
}

/// The anchors mdBook (and GitHub, for the README) gives a document's headings: the heading's
/// text, lower case, letters, digits, `_` and `-` kept, white space as `-`, the rest dropped;
/// a repeated one gets `-1`, `-2`…
pub fn heading_anchors(text: &str) -> BTreeSet<String> {
    let prose = split(text).prose;
    let mut used = BTreeSet::new();
    for line in prose.lines() {
        let hashes = line.chars().take_while(|c| *c == '#').count();
        if hashes == 0 || hashes > 6 || !line[hashes..].starts_with(' ') {
            continue;
        }
        let mut title = line[hashes..].trim().to_owned();
        // A link in a heading shows its text.
        while let (Some(open), Some(middle)) = (title.find('['), title.find("](")) {
            let Some(close) = title[middle..].find(')') else { break };
            title = format!(
                "{}{}{}",
                &title[..open],
                &title[open + 1..middle],
                &title[middle + close + 1..]
            );
        }
        let id: String = title
            .trim()
            .to_lowercase()
            .chars()
            .filter_map(|c| {
                if c.is_alphanumeric() || c == '_' || c == '-' {
                    Some(c)
                } else if c.is_whitespace() {
                    Some('-')
                } else {
                    None
                }
            })
            .collect();
        let mut unique = id.clone();
        let mut counter = 1;
        while !used.insert(unique.clone()) {
            unique = format!("{id}-{counter}");
            counter += 1;
        }
    }
    used
}

/// Everything in a document a reader may type: each fenced line of a shell-like block and each
/// inline code span.
pub fn typed_code(text: &str) -> Vec<Code> {
    let Split { fenced, prose } = split(text);
    let (inline, _) = inline_code(&prose);
    let shell_like = |code: &Code| {
        matches!(
            code.language.as_deref(),
            Some("" | "sh" | "bash" | "shell" | "console" | "text")
        )
    };
    fenced.into_iter().filter(shell_like).chain(inline).collect()
}

/// One invocation of a program the documentation shows.
#[derive(Debug, Clone)]
pub struct Invocation {
    pub document: String,
    pub line: usize,
    /// The subcommand (`play`, `web`…) when the program has them and one is named.
    pub subcommand: Option<String>,
    /// The long flags given, without their values (`--seed`).
    pub flags: Vec<String>,
    /// Each long flag with the value after it, when that value is a literal word.
    pub values: Vec<(String, String)>,
    pub text: String,
}

/// Tokens that end a command on a shell line.
const TERMINATORS: [&str; 8] = ["|", "||", "&&", ";", "&", ">", ">>", "2>&1"];

/// The invocations of `program` (`twice-sim` or `twice`) in every document: the program's
/// name as a path's last part (`twice-sim`, `./twice-sim`, `target/debug/twice-sim`) followed
/// by its arguments, or `cargo run [-p PACKAGE] [--release] [--features F] -- ARGUMENTS`
/// (`cargo run` without `-p` runs the workspace's default member, the game).
pub fn invocations(program: &str, documents: &[Document]) -> Vec<Invocation> {
    let mut found = Vec::new();
    for document in documents {
        for code in typed_code(&document.text) {
            let line = code.text.trim_start_matches("$ ");
            let tokens = shell_tokens(line);
            for start in invocation_starts(program, &tokens) {
                let arguments: Vec<&str> = tokens[start..]
                    .iter()
                    .map(String::as_str)
                    .take_while(|token| !TERMINATORS.contains(token) && !token.starts_with('#'))
                    .collect();
                found.push(invocation(document, code.line, program, &arguments, line));
            }
        }
    }
    found
}

/// A shell line's words, with quotes and the brackets of optional parts taken off.
fn shell_tokens(line: &str) -> Vec<String> {
    line.split_whitespace()
        .map(|token| {
            token
                .trim_matches(|c| matches!(c, '\'' | '"' | '[' | ']' | '(' | ')' | ','))
                .to_owned()
        })
        .filter(|token| !token.is_empty())
        .collect()
}

/// Where the arguments of each invocation of `program` start, as token indices.
fn invocation_starts(program: &str, tokens: &[String]) -> Vec<usize> {
    let mut starts = Vec::new();
    for (index, token) in tokens.iter().enumerate() {
        let last_part = token.rsplit('/').next().unwrap_or(token);
        let previous = index.checked_sub(1).map(|before| tokens[before].as_str());
        if last_part == program && previous != Some("-p") && previous != Some("--package") {
            // `cp target/dist/twice twice-workshop/`: a path handed to another program, not
            // a run of it, is followed by no flag and no subcommand word.
            let next = tokens.get(index + 1).map(String::as_str);
            let runs = match next {
                None => true,
                Some(next) => {
                    next.starts_with("--")
                        || TERMINATORS.contains(&next)
                        || next.starts_with('#')
                        || next.chars().all(|c| c.is_ascii_lowercase() || c == '-')
                }
            };
            if runs {
                starts.push(index + 1);
            }
        }
        if token == "cargo" && tokens.get(index + 1).is_some_and(|word| word == "run") {
            let rest = &tokens[index + 2..];
            let end = rest
                .iter()
                .position(|word| TERMINATORS.contains(&word.as_str()))
                .unwrap_or(rest.len());
            let rest = &rest[..end];
            let package = rest
                .iter()
                .position(|word| word == "-p" || word == "--package")
                .and_then(|at| rest.get(at + 1))
                .map(String::as_str)
                .unwrap_or(DEFAULT_MEMBER);
            if let Some(separator) = rest.iter().position(|word| word == "--")
                && package == program
            {
                starts.push(index + 2 + separator + 1);
            }
        }
    }
    starts
}

/// The package `cargo run` runs without `-p`: the workspace's `default-members`.
const DEFAULT_MEMBER: &str = "twice";

fn invocation(document: &Document, line: usize, program: &str, arguments: &[&str], text: &str) -> Invocation {
    let has_subcommands = program == "twice-sim";
    let subcommand = arguments
        .first()
        .filter(|word| has_subcommands && !word.starts_with('-'))
        .map(|word| (*word).to_owned());
    let mut flags = Vec::new();
    let mut values = Vec::new();
    for (index, argument) in arguments.iter().enumerate() {
        if !argument.starts_with("--") || *argument == "--" {
            continue;
        }
        let (flag, inline_value) = match argument.split_once('=') {
            Some((flag, value)) => (flag, Some(value)),
            None => (*argument, None),
        };
        flags.push(flag.to_owned());
        let value = inline_value.or_else(|| arguments.get(index + 1).copied());
        if let Some(value) = value.filter(|value| !value.starts_with('-')) {
            values.push((flag.to_owned(), value.to_owned()));
        }
    }
    Invocation {
        document: document.name(),
        line,
        subcommand,
        flags,
        values,
        text: text.to_owned(),
    }
}

/// What a program's `--help` says about its flags: each long flag, and the values it takes
/// when clap lists them (`[possible values: a, b]`, or `- a:` lines in the long help).
#[derive(Debug, Default)]
pub struct Help {
    pub flags: BTreeSet<String>,
    pub possible_values: std::collections::BTreeMap<String, BTreeSet<String>>,
}

/// Reads clap's long `--help` text.
pub fn parse_help(text: &str) -> Help {
    let mut help = Help::default();
    let mut current: Option<String> = None;
    let mut listing_values = false;
    for line in text.lines() {
        let trimmed = line.trim_start();
        let flag_line = trimmed.starts_with("--") || (trimmed.starts_with('-') && trimmed.contains(", --"));
        if flag_line {
            let flag = trimmed[trimmed.find("--").unwrap_or(0)..]
                .split(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
                .next()
                .unwrap_or_default()
                .to_owned();
            if let Some(list) = trimmed.split("[possible values: ").nth(1) {
                let values = list.trim_end_matches(']').split(", ").map(str::to_owned);
                help.possible_values.entry(flag.clone()).or_default().extend(values);
            }
            help.flags.insert(flag.clone());
            current = Some(flag);
            listing_values = false;
        } else if !line.starts_with(' ') && !trimmed.is_empty() {
            // A section heading (`Options:`, `Arguments:`) ends the flag before it.
            current = None;
            listing_values = false;
        } else if trimmed == "Possible values:" {
            listing_values = current.is_some();
        } else if let (true, Some(flag), Some(value)) = (listing_values, &current, trimmed.strip_prefix("- ")) {
            let value = value.split(':').next().unwrap_or_default().trim();
            help.possible_values
                .entry(flag.clone())
                .or_default()
                .insert(value.to_owned());
        }
    }
    help
}

/// The problems with the flags and values of `invocations`, given each one's help (`None`:
/// no such subcommand).
pub fn flag_problems<'a>(invocations: &[Invocation], help_of: impl Fn(&Invocation) -> Option<&'a Help>) -> Vec<String> {
    let mut problems = Vec::new();
    for invocation in invocations {
        let place = format!("{}:{}: `{}`", invocation.document, invocation.line, invocation.text);
        let Some(help) = help_of(invocation) else {
            problems.push(format!("{place}: no such command"));
            continue;
        };
        for flag in &invocation.flags {
            if !help.flags.contains(flag) {
                problems.push(format!("{place}: {flag} is not a flag of this command"));
            }
        }
        for (flag, value) in &invocation.values {
            let Some(possible) = help.possible_values.get(flag) else {
                continue;
            };
            // `--screen title|levels`: each literal choice; a placeholder (upper case) is not one.
            for choice in value
                .split('|')
                .filter(|choice| choice.chars().all(|c| !c.is_uppercase()))
            {
                if !possible.contains(choice) {
                    problems.push(format!("{place}: {flag} takes none of {choice:?} ({possible:?})"));
                }
            }
        }
    }
    problems
}
