//! The runtime's `http_tool` example, whole: its tool calls the drill's billing server over
//! HTTP with the `Idempotency-Key` header, its worker is SIGKILLed while the request is on the
//! wire, another worker recovers the run through the reconcile hook, and a resend with the
//! same key is answered as a repeat — billing pays once. It lives here because the story
//! needs the `twice-sim` binary (billing), which only this package's tests are given.

use std::path::Path;
use std::process::Command;

#[path = "../runtime/examples/http_tool.rs"]
#[allow(dead_code)]
mod http_tool;

/// This test binary again, as the story's worker process (see [`http_tool_worker_child`]).
const WORKER_TEST: &str = "http_tool_worker_child";

/// The worker process: runs worker `w1` when the story started this binary as one, and
/// nothing otherwise.
#[test]
fn http_tool_worker_child() {
    if let Some(ending) = http_tool::worker_from_environment() {
        println!("w1 ended: {ending:?}");
    }
}

#[test]
fn a_worker_killed_mid_request_is_recovered_and_billing_pays_once() {
    let folder = tempfile::tempdir().expect("a temporary folder");
    let mut worker = Command::new(std::env::current_exe().expect("this test binary"));
    worker.args(["--exact", WORKER_TEST, "--nocapture", "--test-threads=1"]);
    let story = http_tool::story(Path::new(env!("CARGO_BIN_EXE_twice-sim")), folder.path(), worker)
        .unwrap_or_else(|error| panic!("{error}"));
    http_tool::check(&story).unwrap_or_else(|error| panic!("{error}"));
}
