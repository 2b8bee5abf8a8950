//! What the tests that start real `twice-sim` processes share.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};

/// The `twice-sim` binary this test run built.
pub const BIN: &str = env!("CARGO_BIN_EXE_twice-sim");

/// A `twice-sim billing` process on a free port; killed when dropped.
pub struct BillingServer {
    child: Child,
    pub url: String,
}

impl BillingServer {
    /// Starts billing over `database` with key handling `keys`, and reads the address it
    /// prints on its first line.
    pub fn start(database: &Path, keys: &str) -> BillingServer {
        BillingServer::start_with(database, keys, &[])
    }

    /// As [`BillingServer::start`], with more flags (`--latency-ms`, `--seed`).
    pub fn start_with(database: &Path, keys: &str, extra: &[&str]) -> BillingServer {
        let mut child = Command::new(BIN)
            .args(["billing", "--keys", keys, "--db"])
            .arg(database)
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("billing starts");
        let mut first = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut first)
            .expect("billing prints its address");
        let url = first
            .strip_prefix("listening ")
            .and_then(|rest| rest.split_whitespace().next())
            .unwrap_or_else(|| panic!("the first line names the address: {first}"))
            .to_owned();
        BillingServer { child, url }
    }

    /// Kills the process and waits for it: billing is down from here on.
    pub fn stop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for BillingServer {
    fn drop(&mut self) {
        self.stop();
    }
}
