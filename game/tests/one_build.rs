//! The README's two commands, `cargo run` and `cargo test --workspace --locked`, must build Bevy
//! once. Both use the dev profile's settings (the test profile inherits them), so they share
//! every dependency whose features are the same in both. The test command also builds the
//! workspace's dev-dependencies, and a feature one of them turns on in a crate Bevy depends on
//! gives that crate, and all of Bevy above it, a second build: proptest's `std` turned on
//! `rand` 0.10's `sys_rng`, under `bevy_math`, and the test command compiled Bevy again after
//! the play command had (`game/Cargo.toml` now asks for those features itself).
//!
//! Read with `cargo tree`, every package and feature set the play command builds must be one the
//! test command builds too.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

/// `cargo tree`'s packages with their features, one `name vX.Y.Z feature,feature` a line.
fn packages_with_features(selection: &[&str]) -> BTreeSet<String> {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join("../Cargo.toml");
    let output = Command::new(env!("CARGO"))
        .args([
            "tree",
            "--locked",
            "--prefix",
            "none",
            "--format",
            "{p} {f}",
            "--manifest-path",
        ])
        .arg(&manifest)
        .args(selection)
        .output()
        .expect("cargo runs");
    assert!(
        output.status.success(),
        "cargo tree {selection:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout)
        .lines()
        // A package seen before is marked `(*)`; its features are the same.
        .map(|line| line.trim_end_matches("(*)").trim_end().to_owned())
        .filter(|line| !line.is_empty())
        .collect()
}

#[test]
fn the_play_command_builds_nothing_the_test_command_does_not() {
    let play = packages_with_features(&["--package", "twice", "--edges", "normal,build"]);
    let test = packages_with_features(&["--workspace", "--edges", "normal,build,dev"]);
    assert!(
        play.iter().any(|line| line.starts_with("bevy v")),
        "the play command's graph holds Bevy: {play:#?}"
    );
    let built_twice: Vec<&String> = play.difference(&test).collect();
    assert!(
        built_twice.is_empty(),
        "`cargo run` builds these with features `cargo test --workspace` does not, so the test command \
         builds them (and everything above them, Bevy included) a second time; ask for the test command's \
         features in game/Cargo.toml:\n{built_twice:#?}"
    );
}

#[test]
fn building_the_workspace_after_the_tests_builds_nothing_new() {
    // `.ci/run` runs `cargo build --workspace` after the tests to put the dev-profile twice-sim
    // in place, instead of building a release one.
    let workspace = packages_with_features(&["--workspace", "--edges", "normal,build"]);
    let test = packages_with_features(&["--workspace", "--edges", "normal,build,dev"]);
    let built_twice: Vec<&String> = workspace.difference(&test).collect();
    assert!(built_twice.is_empty(), "{built_twice:#?}");
}
