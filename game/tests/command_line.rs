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
