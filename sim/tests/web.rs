//! The browser edition over real HTTP on loopback: a level played to its verdict and its
//! downloaded tape replayed to the same one, rewinds, the room's limits (sessions, idle
//! expiry), names instead of paths, JSON errors for every bad request, the presenter's
//! secret, and a room race of many participants at once with exactly one winner.

use std::net::SocketAddr;
use std::time::Duration;

use reqwest::header::{CONTENT_DISPOSITION, CONTENT_TYPE, COOKIE, SET_COOKIE};
use reqwest::{Client, StatusCode};
use serde_json::{Value, json};
use twice_sim::web::{self, Catalogue, WebConfig, WebState};

#[path = "common/web_server.rs"]
mod web_server;
use web_server::{first_target, levels_folder};

/// A room served on a free loopback port until the test ends.
struct Room {
    base: String,
    secret: String,
    state: WebState,
    _stop: tokio::sync::oneshot::Sender<()>,
}

async fn room_with(configure: impl FnOnce(&mut WebConfig)) -> Room {
    let catalogue = Catalogue::load(&levels_folder()).expect("the campaign loads");
    let mut config = WebConfig::new().expect("a presenter secret");
    configure(&mut config);
    let state = WebState::new(catalogue, &config);
    let address: SocketAddr = "127.0.0.1:0".parse().unwrap();
    let listener = web::bind(address, false).await.expect("a free port");
    let address = listener.local_addr().unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(web::serve_until(listener, state.clone(), async {
        let _ = stopped.await;
    }));
    Room {
        base: format!("http://{address}"),
        secret: config.presenter_secret,
        state,
        _stop: stop,
    }
}

async fn room() -> Room {
    room_with(|_| {}).await
}

/// One browser: its own cookie, as a browser context has.
#[derive(Clone)]
struct Browser {
    client: Client,
    base: String,
    cookie: Option<String>,
}

impl Browser {
    fn new(room: &Room) -> Browser {
        Browser {
            client: Client::new(),
            base: room.base.clone(),
            cookie: None,
        }
    }

    fn request(&self, method: reqwest::Method, path: &str) -> reqwest::RequestBuilder {
        let request = self.client.request(method, format!("{}{path}", self.base));
        match &self.cookie {
            Some(cookie) => request.header(COOKIE, cookie),
            None => request,
        }
    }

    async fn answer(request: reqwest::RequestBuilder) -> (StatusCode, Value) {
        let response = request.send().await.expect("the room answers");
        let status = response.status();
        let text = response.text().await.unwrap();
        let body = serde_json::from_str(&text).unwrap_or_else(|_| panic!("not JSON ({status}): {text}"));
        (status, body)
    }

    async fn get(&self, path: &str) -> (StatusCode, Value) {
        Self::answer(self.request(reqwest::Method::GET, path)).await
    }

    async fn post(&self, path: &str, body: Value) -> (StatusCode, Value) {
        Self::answer(self.request(reqwest::Method::POST, path).json(&body)).await
    }

    async fn join(&mut self, name: &str) -> (StatusCode, Value) {
        let response = self
            .request(reqwest::Method::POST, "/api/join")
            .json(&json!({ "name": name }))
            .send()
            .await
            .unwrap();
        let status = response.status();
        if let Some(cookie) = response.headers().get(SET_COOKIE) {
            let cookie = cookie.to_str().unwrap();
            assert!(
                cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict"),
                "{cookie}"
            );
            // A browser restarted mid-workshop keeps its participant: the cookie outlives it.
            assert!(cookie.contains("Max-Age=604800"), "{cookie}");
            self.cookie = Some(cookie.split(';').next().unwrap().to_owned());
        }
        (status, response.json().await.unwrap())
    }

    /// Joins and opens a level; answers the level screen.
    async fn joined_on(room: &Room, name: &str, level: &str) -> (Browser, Value) {
        let mut browser = Browser::new(room);
        let (status, _) = browser.join(name).await;
        assert_eq!(status, StatusCode::OK);
        let (status, game) = browser.post("/api/game", json!({ "level": level })).await;
        assert_eq!(status, StatusCode::OK, "{game}");
        (browser, game)
    }
}

fn assert_error(status: StatusCode, body: &Value, expected_status: StatusCode, code: &str) {
    assert_eq!(status, expected_status, "{body}");
    assert_eq!(body["code"], code, "{body}");
    assert!(
        body["error"].as_str().is_some_and(|error| !error.is_empty()),
        "an error says what went wrong: {body}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_level_played_over_http_reaches_its_verdict_and_its_tape_replays_to_the_same() {
    let room = room().await;
    let (browser, game) = Browser::joined_on(&room, "Ada", "01-naive-retry").await;
    assert_eq!((game["phase"].as_u64(), game["over"].as_bool()), (Some(0), Some(false)));
    assert_eq!(game["mode"], "campaign");
    // A wire card acts on a message on the wire: before any answer travels, it offers nothing.
    assert!(
        game["hand"]
            .as_array()
            .unwrap()
            .iter()
            .any(|card| card["card"] == "LoseResponse" && card["targets"].as_array().unwrap().is_empty())
    );
    // After a balance lookup, billing has applied the credit by phase 12, and its answer is on the wire.
    let (status, game) = browser.post("/api/game/step", json!({ "phases": 12 })).await;
    assert_eq!((status, game["phase"].as_u64()), (StatusCode::OK, Some(12)));
    let (status, game) = browser
        .post("/api/game/play", json!({ "play": first_target(&game, "LoseResponse") }))
        .await;
    assert_eq!(status, StatusCode::OK, "{game}");
    assert_eq!(game["played"][0]["play"]["LoseResponse"]["key"], "r1:c2");
    let (status, game) = browser.post("/api/game/run", json!({})).await;
    assert_eq!(status, StatusCode::OK, "{game}");
    assert_eq!(game["over"], true);
    let verdict = &game["end"]["verdict"];
    assert_eq!(verdict["outcome_name"], "paid_twice", "{verdict}");
    assert_eq!(verdict["goal_reached"], true);
    assert_eq!(game["end"]["finished"], true);
    assert_eq!(game["end"]["next"], "02-one-attempt");
    // Billing paid Ada twice, and the ledger's rows are the real ledger's.
    assert_eq!(game["billing"]["accounts"][0]["balance_cents"], 5000);
    assert!(!game["timeline"]["rows"].as_array().unwrap().is_empty());

    let response = browser
        .request(reqwest::Method::GET, "/api/game/tape")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let disposition = response.headers()[CONTENT_DISPOSITION].to_str().unwrap().to_owned();
    assert_eq!(disposition, "attachment; filename=\"01-naive-retry.web-ada.tape.ron\"");
    let tape_text = response.text().await.unwrap();

    // Saved beside a copy of the level, it replays to the verdict the browser showed.
    let folder = tempfile::tempdir().unwrap();
    std::fs::copy(
        levels_folder().join("01-naive-retry.level.ron"),
        folder.path().join("01-naive-retry.level.ron"),
    )
    .unwrap();
    let tape_path = folder.path().join("01-naive-retry.web-ada.tape.ron");
    std::fs::write(&tape_path, &tape_text).unwrap();
    let loaded = twice_sim::level::load_tape(&tape_path).expect("the tape loads");
    assert_eq!(loaded.tape.level, "01-naive-retry.level.ron");
    let replayed = twice_sim::replay::replay_tape(&loaded).expect("the tape replays");
    assert!(replayed.as_expected, "{tape_text}");
    assert_eq!(replayed.verdict.outcome.name(), verdict["outcome_name"]);
    let stopped_by: Vec<&str> = replayed.verdict.stopped_by.iter().map(|guard| guard.name()).collect();
    let shown: Vec<&str> = verdict["stopped_by"]
        .as_array()
        .unwrap()
        .iter()
        .map(|stop| stop["guard"].as_str().unwrap())
        .collect();
    assert_eq!(stopped_by, shown);
    // And the command line says the same.
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_twice-sim"))
        .arg("replay")
        .arg(folder.path())
        .output()
        .unwrap();
    let printed = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{printed}");
    assert!(printed.contains("1 tape: 1 as expected"), "{printed}");

    // Finishing level 1 opened level 2.
    let (_, levels) = browser.get("/api/levels").await;
    assert_eq!(levels[0]["state"]["word"], "finished");
    assert_eq!(levels[0]["best"]["cards"], 1);
    assert_eq!(levels[1]["playable"], true);
    assert_eq!(levels[2]["state"]["word"], "locked");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rewind_rebuilds_the_level_from_the_seed_and_the_moves_before_it() {
    let room = room().await;
    let (browser, _) = Browser::joined_on(&room, "Grace", "01-naive-retry").await;
    let (_, game) = browser.post("/api/game/step", json!({ "phases": 5 })).await;
    let (_, game_after_move) = browser
        .post("/api/game/play", json!({ "play": first_target(&game, "LoseResponse") }))
        .await;
    assert_eq!(game_after_move["played"][0]["at_phase"], 5);
    let (_, ahead) = browser.post("/api/game/step", json!({ "phases": 7 })).await;
    assert_eq!(ahead["phase"], 12);
    let timeline_at_12 = ahead["timeline"]["rows"].clone();

    // Back to phase 8: the move made before phase 5 is kept, and stepping on reaches the
    // same state as before the rewind.
    let (status, rewound) = browser.post("/api/game/rewind", json!({ "phase": 8 })).await;
    assert_eq!(status, StatusCode::OK, "{rewound}");
    assert_eq!(rewound["phase"], 8);
    assert_eq!(rewound["played"].as_array().unwrap().len(), 1);
    let (_, again) = browser.post("/api/game/step", json!({ "phases": 4 })).await;
    assert_eq!(again["timeline"]["rows"], timeline_at_12);

    // Back to before the move: it is gone, and the card is in the hand again.
    let (_, before) = browser.post("/api/game/rewind", json!({ "phase": 4 })).await;
    assert!(before["played"].as_array().unwrap().is_empty());
    let lose_response = before["hand"]
        .as_array()
        .unwrap()
        .iter()
        .find(|card| card["card"] == "LoseResponse")
        .unwrap()
        .clone();
    assert_eq!(lose_response["left"], 1);

    let (status, body) = browser.post("/api/game/rewind", json!({ "phase": 99 })).await;
    assert_error(status, &body, StatusCode::UNPROCESSABLE_ENTITY, "invalid_value");
    let (status, restarted) = browser.post("/api/game/restart", json!({})).await;
    assert_eq!((status, restarted["phase"].as_u64()), (StatusCode::OK, Some(0)));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_room_refuses_the_next_participant_with_a_clear_503() {
    let room = room_with(|config| config.sessions_max = 3).await;
    let mut browsers = Vec::new();
    for name in ["Ada", "Grace", "Linus"] {
        let mut browser = Browser::new(&room);
        assert_eq!(browser.join(name).await.0, StatusCode::OK);
        browsers.push(browser);
    }
    let mut late = Browser::new(&room);
    let (status, body) = late.join("Barbara").await;
    assert_error(status, &body, StatusCode::SERVICE_UNAVAILABLE, "room_full");
    assert!(body["error"].as_str().unwrap().contains("3 sessions"), "{body}");
    // A name already in the room is refused, whatever its case.
    let (status, body) = Browser::new(&room).join("ada").await;
    assert!(
        status == StatusCode::CONFLICT || status == StatusCode::SERVICE_UNAVAILABLE,
        "{body}"
    );

    // Leaving frees the slot.
    let leaving = browsers.pop().unwrap();
    let response = leaving
        .request(reqwest::Method::POST, "/api/leave")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::NO_CONTENT);
    assert_eq!(late.join("Barbara").await.0, StatusCode::OK);
    let (status, body) = leaving.get("/api/me").await;
    assert_error(status, &body, StatusCode::UNAUTHORIZED, "no_session");
    assert_eq!(room.state.session_count(), 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_quiet_participant_gives_up_their_place_and_takes_it_back_where_they_were() {
    let room = room_with(|config| {
        config.sessions_max = 2;
        config.idle_timeout = Duration::from_millis(1_000);
    })
    .await;
    let (ada, _) = Browser::joined_on(&room, "Ada", "01-naive-retry").await;
    let (grace, _) = Browser::joined_on(&room, "Grace", "01-naive-retry").await;
    let (status, stepped) = ada.post("/api/game/step", json!({ "phases": 3 })).await;
    assert_eq!(status, StatusCode::OK, "{stepped}");
    // A request keeps a participant's place: two waits of half the timeout, a request between.
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(ada.get("/api/me").await.0, StatusCode::OK);
    tokio::time::sleep(Duration::from_millis(600)).await;
    // Grace went quiet: the sweep takes her place and her level's memory.
    assert_eq!(room.state.sweep(), 1);
    assert_eq!(room.state.session_count(), 1);
    let mut linus = Browser::new(&room);
    assert_eq!(linus.join("Linus").await.0, StatusCode::OK);
    // With the room full again, Grace is told so, and keeps her participant for later.
    let (status, body) = grace.get("/api/game").await;
    assert_error(status, &body, StatusCode::SERVICE_UNAVAILABLE, "room_full");
    tokio::time::sleep(Duration::from_millis(1_100)).await;
    // Ada went quiet too; Grace takes the freed place and finds her level as she left it.
    let (status, game) = grace.get("/api/game").await;
    assert_eq!(status, StatusCode::OK, "{game}");
    assert_eq!(game["level"]["stem"], "01-naive-retry");
    // And Ada's level is rebuilt from its log, at the phase she left it.
    room.state.sweep();
    let (status, game) = ada.get("/api/game").await;
    assert_eq!(status, StatusCode::OK, "{game}");
    assert_eq!(game["phase"], stepped["phase"]);
    assert_eq!(game["timeline"], stepped["timeline"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clients_name_levels_and_assets_and_never_paths() {
    let room = room().await;
    let mut browser = Browser::new(&room);
    browser.join("Ada").await;
    for level in [
        "../levels/01-naive-retry.level.ron",
        "levels/01-naive-retry.level.ron",
        "01-naive-retry.level.ron",
        "/etc/passwd",
        "",
    ] {
        let (status, body) = browser.post("/api/game", json!({ "level": level })).await;
        assert_error(status, &body, StatusCode::NOT_FOUND, "unknown_level");
    }
    // By id or by file stem, the same level.
    for level in ["naive-retry", "01-naive-retry"] {
        let (status, game) = browser.post("/api/game", json!({ "level": level })).await;
        assert_eq!(
            (status, game["level"]["stem"].as_str()),
            (StatusCode::OK, Some("01-naive-retry"))
        );
    }
    for path in [
        "/assets/../Cargo.toml",
        "/assets/..%2F..%2FCargo.toml",
        "/assets/%2e%2e%2fsrc%2flib.rs",
        "/assets/app.js.map",
        "/levels/01-naive-retry.level.ron",
    ] {
        let (status, body) = browser.get(path).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{path}: {body}");
    }
    let (status, body) = browser
        .post(
            "/api/game",
            json!({ "level": "01-naive-retry", "guards": "ledger,/etc/passwd" }),
        )
        .await;
    assert_error(status, &body, StatusCode::UNPROCESSABLE_ENTITY, "invalid_value");
    // The pages themselves are served from the binary.
    for (path, kind) in [
        ("/", "text/html"),
        ("/presenter", "text/html"),
        ("/assets/app.js", "text/javascript"),
        ("/assets/app.css", "text/css"),
    ] {
        let response = browser.request(reqwest::Method::GET, path).send().await.unwrap();
        assert_eq!(response.status(), StatusCode::OK, "{path}");
        assert!(
            response.headers()[CONTENT_TYPE].to_str().unwrap().starts_with(kind),
            "{path}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_bad_request_gets_a_json_error_naming_the_problem() {
    let room = room().await;
    let stranger = Browser::new(&room);
    let (status, body) = stranger.get("/api/game").await;
    assert_error(status, &body, StatusCode::UNAUTHORIZED, "no_session");
    let forged = Browser {
        cookie: Some(format!("twice_session={}", "0".repeat(32))),
        ..stranger.clone()
    };
    let (status, body) = forged.get("/api/me").await;
    assert_error(status, &body, StatusCode::UNAUTHORIZED, "no_session");

    let mut browser = Browser::new(&room);
    let (status, body) = browser.join("  ").await;
    assert_error(status, &body, StatusCode::UNPROCESSABLE_ENTITY, "invalid_value");
    let (status, body) = browser.join("<img src=x>").await;
    assert_error(status, &body, StatusCode::UNPROCESSABLE_ENTITY, "invalid_value");
    browser.join("Ada").await;
    let (status, body) = browser.post("/api/game/step", json!({ "phases": 1 })).await;
    assert_error(status, &body, StatusCode::NOT_FOUND, "no_level_open");
    let (status, body) = browser.post("/api/game", json!({ "level": "02-one-attempt" })).await;
    assert_error(status, &body, StatusCode::FORBIDDEN, "locked");
    assert!(body["error"].as_str().unwrap().contains("The Second Knock"), "{body}");

    let (_, game) = browser.post("/api/game", json!({ "level": "01-naive-retry" })).await;
    assert_eq!(game["phase"], 0);
    let cases = [
        (
            json!({ "phases": 0 }),
            "/api/game/step",
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_value",
        ),
        (
            json!({ "phases": 1000 }),
            "/api/game/step",
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_value",
        ),
        (
            json!({ "phases": 1, "fast": true }),
            "/api/game/step",
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_body",
        ),
        (
            json!({ "play": "Teleport" }),
            "/api/game/play",
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_body",
        ),
        (
            json!({ "play": { "CrashWorker": { "worker": 1 } } }),
            "/api/game/play",
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_move",
        ),
        (
            json!({ "play": { "OperatorResolve": { "key": "r1:c1", "status": "failed", "reason": " " } } }),
            "/api/game/play",
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_value",
        ),
    ];
    for (body, path, expected_status, code) in cases {
        let (status, answer) = browser.post(path, body.clone()).await;
        assert_error(status, &answer, expected_status, code);
    }
    // A card spent is refused the second time, and nothing changes. The request is on the
    // wire from phase 4.
    let (_, game) = browser.post("/api/game/step", json!({ "phases": 4 })).await;
    assert_eq!(game["phase"], 4);
    let play = json!({ "play": { "LoseRequest": {} } });
    assert_eq!(browser.post("/api/game/play", play.clone()).await.0, StatusCode::OK);
    let (status, body) = browser.post("/api/game/play", play).await;
    assert_error(status, &body, StatusCode::CONFLICT, "move_refused");

    let raw = |content_type: &'static str, text: &'static str| {
        browser
            .request(reqwest::Method::POST, "/api/game/step")
            .header(CONTENT_TYPE, content_type)
            .body(text)
    };
    let (status, body) = Browser::answer(raw("application/json", "{\"phases\": ")).await;
    assert_error(status, &body, StatusCode::BAD_REQUEST, "malformed_json");
    let (status, body) = Browser::answer(raw("text/plain", "{\"phases\": 1}")).await;
    assert_error(
        status,
        &body,
        StatusCode::UNSUPPORTED_MEDIA_TYPE,
        "unsupported_media_type",
    );
    let huge = browser
        .request(reqwest::Method::POST, "/api/game/step")
        .header(CONTENT_TYPE, "application/json")
        .body(format!("{{\"phases\": 1, \"pad\": \"{}\"}}", "x".repeat(70_000)));
    let (status, body) = Browser::answer(huge).await;
    assert_error(status, &body, StatusCode::PAYLOAD_TOO_LARGE, "payload_too_large");
    let (status, body) = browser.get("/api/nothing-here").await;
    assert_error(status, &body, StatusCode::NOT_FOUND, "no_such_route");
    let (status, body) = Browser::answer(browser.request(reqwest::Method::DELETE, "/api/game")).await;
    assert_error(status, &body, StatusCode::METHOD_NOT_ALLOWED, "method_not_allowed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chosen_guards_open_any_level_as_a_sandbox_and_the_presenter_can_unlock_all() {
    let room = room().await;
    let mut browser = Browser::new(&room);
    browser.join("Ada").await;
    // Packet Attack's URL: any level, chosen defences — a sandbox that counts for nothing.
    let (status, game) = browser
        .post(
            "/api/game",
            json!({ "level": "07-look-it-up", "guards": "ledger,key_per_call", "seed": 3 }),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{game}");
    assert_eq!(
        (game["mode"].as_str(), game["seed"].as_u64()),
        (Some("sandbox"), Some(3))
    );
    let on: Vec<&str> = game["guards"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|guard| guard["on"] == true)
        .map(|guard| guard["name"].as_str().unwrap())
        .collect();
    assert_eq!(on, ["ledger", "key_per_call"]);
    let (_, game) = browser.post("/api/game/run", json!({})).await;
    assert_eq!(game["end"]["counted"], false);
    let tape = browser
        .request(reqwest::Method::GET, "/api/game/tape")
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(tape.contains("guards: Some(") || tape.contains("guards: ("), "{tape}");

    let presenter = Client::new();
    let unlock = presenter
        .post(format!("{}/api/presenter/unlock", room.base))
        .bearer_auth(&room.secret)
        .json(&json!({ "all": true }))
        .send()
        .await
        .unwrap();
    assert_eq!(unlock.status(), StatusCode::OK);
    let (status, game) = browser.post("/api/game", json!({ "level": "19-vault" })).await;
    assert_eq!((status, game["mode"].as_str()), (StatusCode::OK, Some("campaign")));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_presenters_endpoints_answer_only_to_the_secret() {
    let room = room().await;
    let mut participant = Browser::new(&room);
    participant.join("Mallory").await;
    let client = Client::new();
    let url = format!("{}/api/presenter/room", room.base);
    for request in [
        client.get(&url),
        client.get(&url).bearer_auth("not-the-secret"),
        client.get(&url).header(COOKIE, participant.cookie.clone().unwrap()),
        client
            .get(&url)
            .header("Authorization", format!("Basic {}", room.secret)),
    ] {
        let (status, body) = Browser::answer(request).await;
        assert_error(status, &body, StatusCode::UNAUTHORIZED, "not_presenter");
    }
    let (status, body) = participant
        .post("/api/presenter/race", json!({ "tape": "04-pause.lost-answer" }))
        .await;
    assert_error(status, &body, StatusCode::UNAUTHORIZED, "not_presenter");
    let (status, room_view) = Browser::answer(client.get(&url).bearer_auth(&room.secret)).await;
    assert_eq!(status, StatusCode::OK, "{room_view}");
    assert_eq!(room_view["people"][0]["name"], "Mallory");
    assert!(
        room_view["race_candidates"].as_array().unwrap().iter().any(
            |candidate| candidate["tape"] == "04-pause.lost-answer"
                // Its level as the pages and the workshop plan name it.
                && candidate["level_number"] == "2.2"
                && candidate["level_title"] == "Awaiting Reconciliation"
        ),
        "{}",
        room_view["race_candidates"]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_participants_resolve_the_race_at_once_and_exactly_one_wins() {
    const PARTICIPANTS: usize = 24;
    let room = room().await;
    let presenter = Client::new();
    let (status, race) = Browser::answer(
        presenter
            .post(format!("{}/api/presenter/race", room.base))
            .bearer_auth(&room.secret)
            .json(&json!({ "tape": "04-pause.lost-answer" })),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{race}");
    assert_eq!(race["key"]["key"], "r1:c1");
    assert_eq!(race["opened_status"]["word"], "indeterminate");
    let number = race["number"].clone();
    // Billing holds the credit the lost answer was about: the truth is `completed`.
    assert_eq!(race["billing"].as_array().unwrap().len(), 1, "{race}");

    let mut browsers = Vec::new();
    for index in 0..PARTICIPANTS {
        let mut browser = Browser::new(&room);
        assert_eq!(browser.join(&format!("op {index}")).await.0, StatusCode::OK);
        let (_, seen) = browser.get("/api/race").await;
        assert_eq!(seen["open"], true);
        browsers.push(browser);
    }
    let start = std::sync::Arc::new(tokio::sync::Barrier::new(PARTICIPANTS));
    let mut tries = Vec::new();
    for (index, browser) in browsers.into_iter().enumerate() {
        let start = std::sync::Arc::clone(&start);
        let number = number.clone();
        tries.push(tokio::spawn(async move {
            let status = if index % 2 == 0 { "completed" } else { "failed" };
            let body = json!({ "race": number, "status": status, "reason": format!("op {index} looked at billing") });
            start.wait().await;
            let (code, answer) = browser.post("/api/race/resolve", body).await;
            (format!("op {index}"), code, answer)
        }));
    }
    let mut winners = Vec::new();
    let mut losers = Vec::new();
    for attempt in tries {
        let (name, status, answer) = attempt.await.unwrap();
        match status {
            StatusCode::OK => winners.push((name, answer)),
            StatusCode::CONFLICT => losers.push((name, answer)),
            other => panic!("{name}: {other} {answer}"),
        }
    }
    assert_eq!(winners.len(), 1, "exactly one resolve wins: {winners:?}");
    let (winner, won) = &winners[0];
    assert_eq!(&won["winner"]["operator"], winner);
    assert_eq!(losers.len(), PARTICIPANTS - 1);
    for (name, answer) in &losers {
        assert_eq!(answer["code"], "conflict", "{name}: {answer}");
        assert_eq!(
            &answer["winner"]["operator"], winner,
            "{name} is told who won: {answer}"
        );
        assert!(answer["error"].as_str().unwrap().contains(winner.as_str()), "{answer}");
    }
    let (_, room_view) = Browser::answer(
        presenter
            .get(format!("{}/api/presenter/room", room.base))
            .bearer_auth(&room.secret),
    )
    .await;
    let race = &room_view["race"];
    assert_eq!(&race["winner"]["operator"], winner);
    assert_eq!(race["tries_total"], PARTICIPANTS);
    let won_count = race["tries"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|attempt| attempt["won"] == true)
        .count();
    assert_eq!(won_count, 1);
    // The winning decision woke Penny's run: a `failed` makes her pay again, `completed` does not.
    let expected = if won["winner"]["status"]["word"] == "failed" {
        "paid twice"
    } else {
        "paid exactly once"
    };
    assert_eq!(race["after"]["outcome"]["word"], expected, "{race}");
    assert_eq!(race["status_now"]["word"], won["winner"]["status"]["word"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_scoreboard_lists_each_finished_level_by_cards_then_phases() {
    let room = room().await;
    for name in ["Grace", "Ada"] {
        let (browser, _) = Browser::joined_on(&room, name, "01-naive-retry").await;
        let (_, game) = browser.post("/api/game/step", json!({ "phases": 12 })).await;
        browser
            .post("/api/game/play", json!({ "play": first_target(&game, "LoseResponse") }))
            .await;
        let (_, game) = browser.post("/api/game/run", json!({})).await;
        assert_eq!(game["end"]["finished"], true);
    }
    let (_, room_view) = Browser::answer(
        Client::new()
            .get(format!("{}/api/presenter/room", room.base))
            .bearer_auth(&room.secret),
    )
    .await;
    let board = &room_view["scoreboard"][0];
    assert_eq!(board["level"], "01-naive-retry");
    assert_eq!(
        (board["par"]["cards"].as_u64(), board["par"]["phases"].as_u64()),
        (Some(1), Some(31)),
        "{board}"
    );
    let names: Vec<&str> = board["scores"]
        .as_array()
        .unwrap()
        .iter()
        .map(|score| score["name"].as_str().unwrap())
        .collect();
    // Same cards and phases: by name.
    assert_eq!(names, ["Ada", "Grace"]);
    assert_eq!(board["scores"][0]["cards"], 1);
    let ada = &room_view["people"][0];
    assert_eq!(
        (ada["name"].as_str(), ada["wins"][0]["level"].as_str()),
        (Some("Ada"), Some("01-naive-retry"))
    );
}

#[test]
fn the_command_refuses_a_lan_address_without_the_flag_and_a_folder_without_levels() {
    let run = |arguments: &[&str]| {
        let output = std::process::Command::new(env!("CARGO_BIN_EXE_twice-sim"))
            .arg("web")
            .args(arguments)
            .output()
            .unwrap();
        (
            output.status.code(),
            String::from_utf8_lossy(&output.stderr).into_owned(),
        )
    };
    let levels = levels_folder();
    let levels = levels.to_str().unwrap();
    let (code, stderr) = run(&["--addr", "0.0.0.0:0", "--levels", levels]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("--allow-non-loopback"), "{stderr}");
    let empty = tempfile::tempdir().unwrap();
    let (code, stderr) = run(&["--addr", "127.0.0.1:0", "--levels", empty.path().to_str().unwrap()]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("no .level.ron or .tape.ron files"), "{stderr}");
    let (code, stderr) = run(&["--sessions-max", "0", "--levels", levels]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("--sessions-max"), "{stderr}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_loss_in_the_browser_is_diagnosed_and_a_level_left_alone_is_not_finished() {
    let room = room().await;
    let (browser, _) = Browser::joined_on(&room, "Ada", "01-naive-retry").await;
    // Penny left alone: the level goes quiet, and nothing was played, so nothing is finished.
    let (status, game) = browser.post("/api/game/run", json!({})).await;
    assert_eq!(status, StatusCode::OK, "{game}");
    let end = &game["end"];
    assert_eq!(end["finished"], false, "{end}");
    assert_eq!(end["debrief"]["standing"], "heist_failed", "{end}");
    assert_eq!(end["debrief"]["story"], "", "a loss never shows the win's story: {end}");
    let diagnosis = end["debrief"]["diagnosis"].as_array().expect("a diagnosis");
    assert!(
        diagnosis
            .iter()
            .any(|sentence| sentence.as_str().is_some_and(|text| text.contains("no card"))),
        "{end}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_parked_for_the_players_operator_move_is_not_the_end_in_the_browser() {
    let room = room_with(|config| config.unlock_all = true).await;
    let (browser, _) = Browser::joined_on(&room, "Ada", "09-settle-it-yourself").await;
    let (_, game) = browser.post("/api/game/step", json!({ "phases": 5 })).await;
    let (status, game) = browser
        .post("/api/game/play", json!({ "play": first_target(&game, "LoseResponse") }))
        .await;
    assert_eq!(status, StatusCode::OK, "{game}");
    let (status, game) = browser.post("/api/game/run", json!({})).await;
    assert_eq!(status, StatusCode::OK, "{game}");
    assert_eq!(game["over"], true, "the run is parked: nothing is scheduled");
    assert!(
        game["end"].is_null(),
        "the player's operator card can still settle it: {}",
        game["end"]
    );
    let (status, game) = browser
        .post(
            "/api/game/play",
            json!({ "play": { "OperatorResolve": {
                "key": "r1:c1", "status": "failed", "reason": "billing shows nothing",
                "operator": "op-crew", "expected_status": "indeterminate"
            } } }),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{game}");
    let (status, game) = browser.post("/api/game/run", json!({})).await;
    assert_eq!(status, StatusCode::OK, "{game}");
    assert_eq!(game["end"]["verdict"]["outcome_name"], "paid_twice", "{}", game["end"]);
    assert_eq!(game["end"]["finished"], true);
    assert!(!game["end"]["debrief"]["story"].as_str().unwrap_or_default().is_empty());
    assert!(
        game["end"]["debrief"]["par"].is_object(),
        "a win is measured against par"
    );
    // The debrief view shows what decided the run, from the counterfactual: played this way
    // (the decision made while the run was parked), no guard alone turns the verdict, and the
    // operator's decision is named; the rule line is the one for it, not the level's.
    let decided = &game["end"]["decided"];
    let deciding_lines = decided["lines"]
        .as_array()
        .expect("the guards' lines")
        .iter()
        .filter(|line| line["part"] == "decided_the_heist" || line["part"] == "decided_together")
        .count();
    assert_eq!(deciding_lines, 0, "{decided}");
    assert_eq!(
        decided["otherwise"], "no guard stood in your way; op-crew's decision did it: r1:c1 settled failed",
        "{decided}"
    );
    assert_eq!(decided["rule"], game["end"]["debrief"]["rule"], "{decided}");
    assert_eq!(
        decided["rule"].as_str(),
        Some(twice_sim::rulebook::OPERATOR_RULE),
        "{decided}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_declared_in_the_browser_is_played_judged_and_refused_once_penny_has_called() {
    let room = room_with(|config| config.unlock_all = true).await;
    let (browser, game) = Browser::joined_on(&room, "Grace", "22-fine-print").await;
    let declaration = &game["declaration"];
    assert_eq!(declaration["check_on"], false, "{declaration}");
    assert_eq!(declaration["closed"], Value::Null);
    assert_eq!(declaration["tools"][0]["tool"], "issue_credit");
    assert_eq!(declaration["tools"][0]["passes"], true);
    assert_eq!(declaration["tools"][0]["drafts"].as_array().unwrap().len(), 24);
    assert!(
        game["hand"]
            .as_array()
            .unwrap()
            .iter()
            .any(|card| card["card"] == "DeclareTool" && card["declaration"] == true)
    );
    // A tool the level does not have is refused by name, and changes nothing.
    let (status, body) = browser
        .post(
            "/api/game/play",
            json!({ "play": { "DeclareTool": { "tool": "refund_all", "side_effect": "read", "attempts": 3, "takes_key": true } } }),
        )
        .await;
    assert_error(status, &body, StatusCode::UNPROCESSABLE_ENTITY, "invalid_move");
    assert!(body["error"].as_str().unwrap().contains("refund_all"), "{body}");

    let declare = json!({ "play": { "DeclareTool": { "tool": "issue_credit", "side_effect": "external", "attempts": 3, "takes_key": true } } });
    let (status, game) = browser.post("/api/game/play", declare.clone()).await;
    assert_eq!(status, StatusCode::OK, "{game}");
    assert_eq!(game["played"][0]["play"]["DeclareTool"]["attempts"], 3);
    assert_eq!(game["declaration"]["tools"][0]["passes"], false);
    assert!(
        game["declaration"]["tools"][0]["violation"]
            .as_str()
            .unwrap()
            .contains("3 attempts")
    );
    // Step until billing's answer is on the wire, then lose it: the retry pays again.
    let mut game = game;
    for _ in 0..40 {
        let offers_a_target = game["hand"]
            .as_array()
            .unwrap()
            .iter()
            .any(|card| card["card"] == "LoseResponse" && !card["targets"].as_array().unwrap().is_empty());
        if offers_a_target {
            break;
        }
        game = browser.post("/api/game/step", json!({ "phases": 1 })).await.1;
    }
    assert!(
        game["declaration"]["closed"]
            .as_str()
            .is_some_and(|why| why.contains("too late"))
    );
    let (status, game) = browser
        .post("/api/game/play", json!({ "play": first_target(&game, "LoseResponse") }))
        .await;
    assert_eq!(status, StatusCode::OK, "{game}");
    // Penny has called: a second declaration is refused with the reason.
    let (status, body) = browser.post("/api/game/play", declare).await;
    assert_error(status, &body, StatusCode::CONFLICT, "move_refused");
    let (status, game) = browser.post("/api/game/run", json!({})).await;
    assert_eq!(status, StatusCode::OK, "{game}");
    let verdict = &game["end"]["verdict"];
    assert_eq!(verdict["outcome_name"], "paid_twice", "{verdict}");
    assert_eq!(verdict["goal_reached"], true);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_run_and_the_fresh_run_its_workflow_started_are_shown_with_what_followed() {
    let room = room_with(|config| config.unlock_all = true).await;
    let (browser, _) = Browser::joined_on(&room, "Ada", "24-workflow-retry").await;
    // Billing has applied the refund by phase 5, and its answer is on the wire.
    let (_, game) = browser.post("/api/game/step", json!({ "phases": 5 })).await;
    let (status, _) = browser
        .post("/api/game/play", json!({ "play": first_target(&game, "LoseResponse") }))
        .await;
    assert_eq!(status, StatusCode::OK);
    let (status, game) = browser.post("/api/game/run", json!({})).await;
    assert_eq!(status, StatusCode::OK, "{game}");
    let runs = game["penny"]["runs"].as_array().expect("runs");
    let ids: Vec<&str> = runs.iter().map(|run| run["id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["r1", "r1.retry1"], "{runs:?}");
    assert!(
        runs[0]["failed"]
            .as_str()
            .is_some_and(|reason| reason.contains("gave up")),
        "{runs:?}"
    );
    assert_eq!(runs[0]["retried_as"], "r1.retry1");
    assert!(runs[1]["failed"].is_null());
    assert!(
        game["timeline"]["rows"]
            .as_array()
            .unwrap()
            .iter()
            .any(|row| row.to_string().contains("workflow retry")),
        "the retry is on the timeline"
    );
    assert_eq!(game["end"]["verdict"]["outcome_name"], "paid_twice");
}
