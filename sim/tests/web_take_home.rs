//! The browser's "Take it home", over real HTTP against the real `twice-sim web`: the debrief
//! offers the participant's run as one archive named after the level, holding the cargo project
//! `twice-sim export` writes with the level and the run's tape beside it (the tape replays to the
//! verdict the page showed); a level whose runs cannot be exported says why in the export's
//! words; a bad level, no level open, another level open, a run not over — each a clear 4xx.

use std::io::Read as _;
use std::path::PathBuf;

use reqwest::header::{CONTENT_DISPOSITION, CONTENT_TYPE, COOKIE, SET_COOKIE};
use reqwest::{Client, StatusCode};
use serde_json::{Value, json};
use twice_world::export;
use twice_world::expressible::Reason;

#[path = "common/web_server.rs"]
mod web_server;
use web_server::{WebServer, first_target};

struct Browser {
    client: Client,
    base: String,
    cookie: String,
}

impl Browser {
    async fn join(base: &str, name: &str) -> Browser {
        let client = Client::new();
        let response = client
            .post(format!("{base}/api/join"))
            .json(&json!({ "name": name }))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), StatusCode::OK);
        let cookie = response.headers()[SET_COOKIE].to_str().unwrap();
        Browser {
            client,
            base: base.to_owned(),
            cookie: cookie.split(';').next().unwrap().to_owned(),
        }
    }

    async fn ok(&self, path: &str, body: Value) -> Value {
        let response = self
            .client
            .post(format!("{}{path}", self.base))
            .header(COOKIE, &self.cookie)
            .json(&body)
            .send()
            .await
            .unwrap();
        let status = response.status();
        let answer: Value = response.json().await.unwrap();
        assert_eq!(status, StatusCode::OK, "{path}: {answer}");
        answer
    }

    async fn take_home(&self, query: &str) -> reqwest::Response {
        self.client
            .get(format!("{}/api/game/take-home{query}", self.base))
            .header(COOKIE, &self.cookie)
            .send()
            .await
            .unwrap()
    }

    /// An error answer: its status, code, and a phrase its message holds.
    async fn refused(&self, query: &str, status: StatusCode, code: &str, says: &str) {
        let response = self.take_home(query).await;
        assert_eq!(response.status(), status, "{query}");
        let answer: Value = response.json().await.unwrap();
        assert_eq!(answer["code"], code, "{query}: {answer}");
        let error = answer["error"].as_str().unwrap();
        assert!(error.contains(says), "{query}: the error says {says:?}: {error}");
    }
}

/// The archive's files, by path, with their text.
fn unpack(bytes: &[u8]) -> Vec<(String, String)> {
    let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(bytes));
    let mut files = Vec::new();
    for entry in archive.entries().expect("a tar archive") {
        let mut entry = entry.expect("an entry");
        let path = entry.path().expect("a path").display().to_string();
        let mut text = String::new();
        entry.read_to_string(&mut text).expect("text");
        files.push((path, text));
    }
    files
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_debrief_downloads_the_runs_project_and_says_why_when_it_cannot() {
    let folder = tempfile::tempdir().unwrap();
    let server = WebServer::start(&folder.path().join("room.sqlite"), &["--unlock-all"]);
    let ada = Browser::join(&server.base, "Ada").await;

    // No run yet, a level not in the room, no level named: each says what is wrong.
    ada.refused(
        "?level=01-naive-retry",
        StatusCode::NOT_FOUND,
        "no_level_open",
        "no level is open",
    )
    .await;
    ada.refused("?level=99-nope", StatusCode::NOT_FOUND, "unknown_level", "99-nope")
        .await;
    ada.refused("", StatusCode::UNPROCESSABLE_ENTITY, "invalid_value", "level")
        .await;

    ada.ok("/api/game", json!({ "level": "01-naive-retry" })).await;
    ada.refused(
        "?level=01-naive-retry",
        StatusCode::CONFLICT,
        "not_over",
        "not over yet",
    )
    .await;
    // One phase at a time until an answer is on the wire for the lose-response card.
    let mut game = ada.ok("/api/game/step", json!({ "phases": 1 })).await;
    while first_target(&game, "LoseResponse").is_null() {
        assert!(game["phase"].as_u64() < Some(60), "no answer on the wire: {game}");
        game = ada.ok("/api/game/step", json!({ "phases": 1 })).await;
    }
    let game = ada
        .ok("/api/game/play", json!({ "play": first_target(&game, "LoseResponse") }))
        .await;
    assert_eq!(game["played"].as_array().map(Vec::len), Some(1), "{game}");
    let game = ada.ok("/api/game/run", json!({})).await;
    let offered = &game["end"]["take_home"];
    assert_eq!(offered["href"], "/api/game/take-home?level=01-naive-retry", "{offered}");
    assert_eq!(offered["file"], "01-naive-retry.tar.gz");
    assert_eq!(offered["why_not"], Value::Null);
    ada.refused(
        "?level=02-one-attempt",
        StatusCode::CONFLICT,
        "other_level",
        "02-one-attempt",
    )
    .await;

    let response = ada.take_home("?level=01-naive-retry").await;
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(response.headers()[CONTENT_TYPE], "application/gzip");
    assert_eq!(
        response.headers()[CONTENT_DISPOSITION],
        "attachment; filename=\"01-naive-retry.tar.gz\""
    );
    let files = unpack(&response.bytes().await.unwrap());
    let names: Vec<&str> = files.iter().map(|(name, _)| name.as_str()).collect();
    for expected in [
        "01-naive-retry/Cargo.toml",
        "01-naive-retry/src/main.rs",
        "01-naive-retry/src/schedule.rs",
        "01-naive-retry/01-naive-retry.level.ron",
        "01-naive-retry/01-naive-retry.played.tape.ron",
    ] {
        assert!(names.contains(&expected), "{expected} in {names:?}");
    }
    let text = |name: &str| {
        files
            .iter()
            .find(|(file, _)| file == name)
            .map(|(_, text)| text.clone())
            .unwrap()
    };
    assert!(text("01-naive-retry/Cargo.toml").contains("twice-runtime = {"));
    // Unpacked, the run's tape replays beside its level to the verdict the page showed.
    let unpacked = tempfile::tempdir().unwrap();
    for (name, body) in &files {
        let path = unpacked.path().join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, body).unwrap();
    }
    let tape_path: PathBuf = unpacked.path().join("01-naive-retry/01-naive-retry.played.tape.ron");
    let tape = twice_world::level::load_tape(&tape_path).unwrap_or_else(|error| panic!("{error}"));
    let replayed = twice_world::replay::replay_tape(&tape).expect("replays");
    assert!(replayed.as_expected, "{:?}", replayed.differences);
    assert_eq!(replayed.verdict.outcome.name(), game["end"]["verdict"]["outcome_name"]);
    // The program is the one `twice-sim export --tape` writes for that tape.
    let exported = export::export(&tape, &export::RuntimeDependency::here()).expect("exports");
    let schedule = exported
        .iter()
        .find(|(path, _)| path.as_os_str() == "src/schedule.rs")
        .map(|(_, text)| text.clone())
        .unwrap();
    assert_eq!(text("01-naive-retry/src/schedule.rs"), schedule);

    // 35 has a scripted operator: no run of it exports, and the page is told why.
    ada.ok("/api/game", json!({ "level": "35-first-decision" })).await;
    let game = ada.ok("/api/game/run", json!({})).await;
    let offered = &game["end"]["take_home"];
    let why = export::why_not_words(&Reason::ScriptedOperator);
    assert_eq!(offered["why_not"], why.as_str(), "{offered}");
    assert_eq!(offered["href"], Value::Null);
    ada.refused(
        "?level=35-first-decision",
        StatusCode::UNPROCESSABLE_ENTITY,
        "not_exportable",
        &why,
    )
    .await;
}
