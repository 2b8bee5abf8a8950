//! Every `twice` command line the README and the book show — `twice --presenter`,
//! `cargo run -- --screenshot …`, `target/debug/twice --bench-frames 600` — takes only flags the
//! game has, and only values its help lists (`--screen debrief-other`). Read from this build's
//! `twice --help`, which prints and exits before any window opens. `sim/tests/doc_commands.rs`
//! does the same for `twice-sim`.

#[path = "../../sim/tests/common/markdown.rs"]
mod markdown;

use std::process::Command;

use markdown::{documents, flag_problems, invocations, parse_help};

#[test]
fn every_game_command_line_the_docs_show_takes_the_games_flags() {
    let output = Command::new(env!("CARGO_BIN_EXE_twice"))
        .arg("--help")
        .env_remove("DISPLAY")
        .env_remove("WAYLAND_DISPLAY")
        .output()
        .expect("twice --help runs");
    assert!(
        output.status.success(),
        "twice --help: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let help = parse_help(&String::from_utf8_lossy(&output.stdout));
    for flag in ["--presenter", "--screenshot", "--screen", "--tape", "--level"] {
        assert!(help.flags.contains(flag), "{flag} in {:?}", help.flags);
    }
    assert!(
        help.possible_values
            .get("--screen")
            .is_some_and(|screens| screens.contains("debrief-other")),
        "the screens --screen takes: {:?}",
        help.possible_values
    );
    let shown = invocations("twice", &documents());
    assert!(
        shown.len() > 10,
        "only {} game command lines found: {shown:#?}",
        shown.len()
    );
    let flags_shown: usize = shown.iter().map(|invocation| invocation.flags.len()).sum();
    assert!(flags_shown > 20, "only {flags_shown} flags found");
    let problems = flag_problems(&shown, |_| Some(&help));
    assert!(
        problems.is_empty(),
        "game command lines the docs show that twice does not take:\n{}",
        problems.join("\n")
    );
}
