//! What the browser edition's tests share: the real `twice-sim web` process with a room file,
#![allow(dead_code)] // Each test binary uses part of it.
//! the levels it serves, and the move a card offers first.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};

use serde_json::Value;

/// The campaign's levels, as the tests serve them.
pub fn levels_folder() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../levels")
}

/// `twice-sim web` on a free port with a room file, its URLs read from what it prints.
/// Killed when dropped.
pub struct WebServer {
    child: Child,
    /// `http://127.0.0.1:PORT`, no slash at the end.
    pub base: String,
    /// The presenter's secret, from the presenter's URL.
    pub secret: String,
    /// The lines it printed up to the presenter's URL.
    pub printed: Vec<String>,
}

impl WebServer {
    /// Starts `twice-sim web --room ROOM` with `arguments` more, and reads what it prints up to
    /// the presenter's URL; the rest of its output is drained, so a full pipe never blocks it.
    pub fn start(room: &Path, arguments: &[&str]) -> WebServer {
        let mut quiet = vec!["--quiet"];
        quiet.extend_from_slice(arguments);
        WebServer::spawn(room, &quiet, Stdio::inherit())
    }

    /// As [`WebServer::start`], with its log (stderr) gathered line by line into the list.
    pub fn start_logged(room: &Path, arguments: &[&str]) -> (WebServer, Arc<Mutex<Vec<String>>>) {
        let mut server = WebServer::spawn(room, arguments, Stdio::piped());
        let log = Arc::new(Mutex::new(Vec::new()));
        let lines = BufReader::new(server.child.stderr.take().unwrap()).lines();
        let kept = Arc::clone(&log);
        std::thread::spawn(move || {
            for line in lines.map_while(Result::ok) {
                kept.lock().unwrap().push(line);
            }
        });
        (server, log)
    }

    fn spawn(room: &Path, arguments: &[&str], stderr: Stdio) -> WebServer {
        let mut child = Command::new(env!("CARGO_BIN_EXE_twice-sim"))
            .arg("web")
            .args(["--addr", "127.0.0.1:0", "--levels"])
            .arg(levels_folder())
            .arg("--room")
            .arg(room)
            .args(arguments)
            .stdout(Stdio::piped())
            .stderr(stderr)
            .spawn()
            .expect("twice-sim starts");
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let mut printed = Vec::new();
        let presenter = loop {
            let line = lines
                .next()
                .unwrap_or_else(|| panic!("twice-sim web stopped before printing its URLs: {printed:?}"))
                .unwrap();
            printed.push(line.clone());
            if let Some(url) = line.strip_prefix("presenter:") {
                break url.trim().to_owned();
            }
        };
        std::thread::spawn(move || for _ in lines {});
        let (base, secret) = presenter.split_once("/presenter#secret=").expect("a presenter URL");
        WebServer {
            child,
            base: base.to_owned(),
            secret: secret.to_owned(),
            printed,
        }
    }

    /// SIGKILL: nothing is flushed on the way out; what was acknowledged must be on disk.
    pub fn kill(&mut self) {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
    }

    /// Stops it as Ctrl-C would, so the room file can be read, and checks it exited cleanly.
    pub fn stop(mut self) {
        let pid = self.child.id().to_string();
        Command::new("kill").args(["-TERM", &pid]).status().unwrap();
        let status = self.child.wait().unwrap();
        assert!(status.success(), "{status}");
    }
}

impl Drop for WebServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The move a card offers first in a game's view, as the page would send it back.
pub fn first_target(game: &Value, card: &str) -> Value {
    game["hand"]
        .as_array()
        .unwrap()
        .iter()
        .find(|candidate| candidate["card"] == card)
        .unwrap_or_else(|| panic!("no {card} in the hand: {}", game["hand"]))["targets"][0]["play"]
        .clone()
}
