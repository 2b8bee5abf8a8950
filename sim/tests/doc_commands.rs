//! Every `twice-sim` command the README and the book show exists, with every flag it is shown
//! with: each invocation (in shell blocks and inline code, `cargo run -p twice-sim -- …` and
//! `./twice-sim …` alike) is held to this build's `twice-sim SUBCOMMAND --help`, and a value
//! the help lists choices for is one of them. The game's own flags are checked the same way by
//! `game/tests/doc_commands.rs`, against the game's binary.

#[path = "common/markdown.rs"]
mod markdown;

use std::collections::BTreeMap;
use std::process::Command;

use markdown::{Help, Invocation, documents, flag_problems, invocations, parse_help};

const BIN: &str = env!("CARGO_BIN_EXE_twice-sim");

/// `twice-sim [SUBCOMMAND] --help`, parsed; `None` when there is no such subcommand.
fn help(subcommand: Option<&str>) -> Option<Help> {
    let output = Command::new(BIN)
        .args(subcommand)
        .arg("--help")
        .output()
        .expect("twice-sim runs");
    output
        .status
        .success()
        .then(|| parse_help(&String::from_utf8_lossy(&output.stdout)))
}

#[test]
fn the_help_parser_reads_flags_and_their_choices() {
    let play = help(Some("play")).expect("twice-sim play --help");
    for flag in ["--seed", "--tape", "--ledger", "--guards", "--json", "--help"] {
        assert!(play.flags.contains(flag), "{flag} in {:?}", play.flags);
    }
    assert!(help(Some("no-such-command")).is_none());
    // clap's two ways of listing choices: in the long help, and on the flag's line.
    let parsed = parse_help(
        "Options:\n      --screen <SCREEN>\n          Which screen.\n\n          Possible values:\n          - title\n          \
         - debrief-other: The debrief with another run\n\n      --store <STORE>  The store [possible values: memory, sqlite]\n  \
         -h, --help\n          Print help\n",
    );
    assert_eq!(
        parsed.flags.iter().collect::<Vec<_>>(),
        ["--help", "--screen", "--store"]
    );
    assert_eq!(
        parsed.possible_values["--screen"].iter().collect::<Vec<_>>(),
        ["debrief-other", "title"]
    );
    assert_eq!(
        parsed.possible_values["--store"].iter().collect::<Vec<_>>(),
        ["memory", "sqlite"]
    );
}

#[test]
fn every_twice_sim_command_the_docs_show_exists_with_its_flags() {
    let shown: Vec<Invocation> = invocations("twice-sim", &documents())
        .into_iter()
        // A placeholder (`twice-sim COMMAND --help`) names no subcommand to check.
        .filter(|invocation| {
            invocation
                .subcommand
                .as_deref()
                .is_none_or(|word| word.chars().all(|c| c.is_ascii_lowercase() || c == '-'))
        })
        .collect();
    assert!(shown.len() > 30, "only {} invocations of twice-sim found", shown.len());
    let subcommands: Vec<Option<String>> = {
        let mut names: Vec<Option<String>> = shown.iter().map(|invocation| invocation.subcommand.clone()).collect();
        names.sort();
        names.dedup();
        names
    };
    assert!(
        subcommands.len() > 12,
        "the docs show {} subcommands: {subcommands:?}",
        subcommands.len()
    );
    let helps: BTreeMap<Option<String>, Option<Help>> = subcommands
        .into_iter()
        .map(|name| {
            let help = help(name.as_deref());
            (name, help)
        })
        .collect();
    let problems = flag_problems(&shown, |invocation| helps[&invocation.subcommand].as_ref());
    assert!(
        problems.is_empty(),
        "commands the docs show that twice-sim does not take:\n{}",
        problems.join("\n")
    );
}

#[test]
fn a_wrong_flag_in_the_docs_would_be_caught() {
    let document = markdown::Document {
        path: markdown::workspace_root().join("README.md"),
        text: "```sh\ntwice-sim play levels/x.level.ron --sede 3\ncargo run -p twice-sim -- web --rooms r\n```\n\
               Or `twice-sim serves --ledger l.sqlite`.\n"
            .to_owned(),
    };
    let shown = invocations("twice-sim", std::slice::from_ref(&document));
    assert_eq!(shown.len(), 3, "{shown:#?}");
    let helps: BTreeMap<String, Help> = ["play", "web", "serves"]
        .into_iter()
        .filter_map(|name| Some((name.to_owned(), help(Some(name))?)))
        .collect();
    let problems = flag_problems(&shown, |invocation| helps.get(invocation.subcommand.as_deref()?));
    assert_eq!(problems.len(), 3, "{problems:#?}");
    assert!(problems[0].contains("--sede"), "{problems:#?}");
    assert!(problems[1].contains("--rooms"), "{problems:#?}");
    assert!(problems[2].contains("no such command"), "{problems:#?}");
}
