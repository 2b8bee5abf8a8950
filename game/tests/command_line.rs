//! The `twice` binary's command line, run as a newcomer types it: every refusal must come
//! before a window opens, at once, with exit code 2 and a message that names the problem.
//! The display is taken away, so a command line that got as far as opening a window fails
//! here instead of hanging or showing a title screen that says nothing.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// A refusal is immediate; a run that got past the checks would wait for a display (or, as
/// `--screen sandbox --tape` did, for 120 s) and be stopped here.
const REFUSAL_TIMEOUT: Duration = Duration::from_secs(30);

fn levels_folder() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../levels")
}

fn some_campaign_tape() -> PathBuf {
    let tapes = twice_world::level::files_below(&levels_folder(), twice_world::campaign::TAPE_SUFFIX)
        .expect("the campaign folder");
    tapes.into_iter().next().expect("a tape in the campaign")
}

/// Runs `twice` with `arguments` and no display; kills it if it outlives [`REFUSAL_TIMEOUT`].
fn twice(arguments: &[&str]) -> Output {
    let data = tempfile::tempdir().expect("temp dir");
    let mut child = Command::new(env!("CARGO_BIN_EXE_twice"))
        .args(arguments)
        .arg("--data-dir")
        .arg(data.path())
        .env_remove("DISPLAY")
        .env_remove("WAYLAND_DISPLAY")
        .env_remove("WAYLAND_SOCKET")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start twice");
    let started = Instant::now();
    while child.try_wait().expect("wait for twice").is_none() {
        if started.elapsed() > REFUSAL_TIMEOUT {
            let _ = child.kill();
            let output = child.wait_with_output().expect("collect twice");
            panic!(
                "twice {arguments:?} still ran after {REFUSAL_TIMEOUT:?}; stderr:\n{}",
                String::from_utf8_lossy(&output.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().expect("collect twice")
}

fn assert_refused(arguments: &[&str], expected: &[&str]) {
    let output = twice(arguments);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "twice {arguments:?}: {stderr}");
    for text in expected {
        assert!(stderr.contains(text), "twice {arguments:?}: {text:?} not in:\n{stderr}");
    }
}

#[test]
fn a_screenshot_of_a_screen_a_tape_never_reaches_is_refused_at_once() {
    let tape = some_campaign_tape();
    let tape = tape.to_str().expect("utf-8 path");
    for screen in ["sandbox", "replay", "title", "levels"] {
        assert_refused(
            &["--screenshot", "out.png", "--screen", screen, "--tape", tape],
            &[&format!("--screen {screen}"), "--screen level"],
        );
    }
}

#[test]
fn a_tape_that_does_not_exist_is_an_error_naming_it() {
    assert_refused(
        &["--tape", "nope.tape.ron"],
        &["--tape", "nope.tape.ron", "cannot read"],
    );
    assert_refused(
        &["--level", "nope.level.ron"],
        &["--level", "nope.level.ron", "cannot read"],
    );
}

/// Over SSH or in CI there is no display: the game says so in one line and exits 2, where
/// winit used to panic (exit 101, a backtrace).
#[test]
fn without_a_display_it_says_so_in_one_line_and_exits_2() {
    for arguments in [&[][..], &["--unlock-all"][..]] {
        let output = twice(arguments);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "twice {arguments:?}: {stderr}");
        assert_eq!(stderr.trim_end().lines().count(), 1, "one line, not:\n{stderr}");
        assert!(
            stderr.starts_with("error: no display") && stderr.contains("xvfb-run"),
            "twice {arguments:?}: {stderr}"
        );
        assert!(!stderr.contains("panicked"), "{stderr}");
    }
}

/// `--at` past the end used to show the end and say nothing; now it names the run's last phase.
#[test]
fn at_past_the_runs_end_is_refused_with_the_phase_it_ends_at() {
    let tape = some_campaign_tape();
    let tape = tape.to_str().expect("utf-8 path");
    let output = twice(&["--tape", tape, "--at", "9999"]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    let end: u32 = stderr
        .split("ends at phase ")
        .nth(1)
        .and_then(|rest| rest.split(';').next())
        .and_then(|number| number.parse().ok())
        .unwrap_or_else(|| panic!("the phase it ends at: {stderr}"));
    assert!(
        stderr.contains("--at 9999") && stderr.contains(&format!("from 0 to {end}")),
        "{stderr}"
    );
    // The last phase itself is taken (the run then waits for a display, which is absent here).
    let output = twice(&["--tape", tape, "--at", &end.to_string()]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.starts_with("error: no display"), "--at {end}: {stderr}");
    let level = levels_folder().join("01-naive-retry.level.ron");
    assert_refused(
        &["--level", level.to_str().expect("utf-8 path"), "--at", "9999"],
        &["--at 9999", "with no moves, ends at phase"],
    );
}

/// A level where a tape goes (and the reverse) says which file it is, not a parser's complaint.
#[test]
fn a_level_given_as_a_tape_says_it_is_a_level_file_and_the_reverse() {
    let tape = some_campaign_tape();
    let level = levels_folder().join("01-naive-retry.level.ron");
    assert_refused(
        &["--tape", level.to_str().expect("utf-8 path")],
        &["--tape", "this is a level file"],
    );
    assert_refused(
        &["--level", tape.to_str().expect("utf-8 path")],
        &["--level", "this is a tape"],
    );
}

/// A replay link that does not read, or names a level the campaign has not got, is refused
/// before a window opens, naming the part that is wrong.
#[test]
fn a_bad_replay_link_is_refused_naming_what_is_wrong() {
    let levels = levels_folder().to_str().expect("utf-8 path").to_owned();
    assert_refused(
        &["--levels", &levels, "--replay-url", "https://example.org/"],
        &["--replay-url", "not a replay link"],
    );
    assert_refused(
        &[
            "--levels",
            &levels,
            "--replay-url",
            "http://127.0.0.1:7880/#replay=1.01-naive-retry.x.-.W10",
        ],
        &["--replay-url", "seed `x`"],
    );
    assert_refused(
        &["--levels", &levels, "--replay-url", "#replay=1.01-naive-retry.1.-.W1"],
        &["--replay-url", "moves"],
    );
    assert_refused(
        &["--levels", &levels, "--replay-url", "replay=1.no-such-level.1.-.W10"],
        &[
            "--replay-url",
            "`no-such-level` is not a level of the campaign",
            "--levels",
        ],
    );
    assert_refused(
        &[
            "--levels",
            &levels,
            "--replay-url",
            "replay=1.01-naive-retry.1.-.W10",
            "--at",
            "3",
        ],
        &["--at", "--replay-url"],
    );
    // A good link gets past every check (and then wants a display, absent here).
    let output = twice(&[
        "--levels",
        &levels,
        "--replay-url",
        "http://127.0.0.1:7880/#replay=1.naive-retry.1.-.W10",
    ]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.starts_with("error: no display"), "{stderr}");
}
