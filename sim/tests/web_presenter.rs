//! The presenter's page runs a workshop: the room at a glance for sixty people (one row per
//! level, who needs help by the presenter's thresholds), everyone the room file keeps visible
//! at once after a restart, the join page's address and QR code, the workshop plan with a clock
//! and the chapter notes, and the server's log — one line per join, leave, race and error, and
//! none with `--quiet`.

use std::time::Duration;

use reqwest::StatusCode;
use reqwest::header::{CONTENT_TYPE, HOST};
use serde_json::{Value, json};

#[path = "common/web_server.rs"]
mod web_server;
use web_server::{WebServer, first_target, levels_folder};
#[path = "common/web_client.rs"]
mod web_client;
use web_client::{Participant, Presenter, room_with};

/// Plays level 01 to its end with no card: the heist fails (a loss), then starts it again.
async fn lose_01(participant: &Participant) {
    let game = participant.ok("/api/game/run", Value::Null).await;
    assert_eq!(game["end"]["finished"], false, "{}", game["end"]);
    participant.ok("/api/game/restart", Value::Null).await;
}

/// Wins level 01 with its one move (lose billing's answer once it travels).
async fn win_01(participant: &Participant) {
    let game = participant.ok("/api/game/step", json!({ "phases": 12 })).await;
    participant
        .ok("/api/game/play", json!({ "play": first_target(&game, "LoseResponse") }))
        .await;
    let game = participant.ok("/api/game/run", Value::Null).await;
    assert_eq!(game["end"]["finished"], true, "{}", game["end"]);
}

fn row<'a>(overview: &'a Value, stem: &str) -> &'a Value {
    overview["levels"]
        .as_array()
        .unwrap()
        .iter()
        .find(|row| row["stem"] == stem)
        .unwrap_or_else(|| panic!("no row for {stem}: {}", overview["levels"]))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sixty_people_are_one_row_per_level_and_a_list_of_who_needs_help() {
    const PEOPLE: usize = 60;
    let room = room_with(|config| config.path = Some(vec!["01".into(), "03".into()])).await;
    let presenter = Presenter::of(&room);
    let mut people = Vec::new();
    for index in 0..PEOPLE {
        let participant = Participant::joined(&room.base, &format!("Player {index:02}")).await;
        participant.ok("/api/game", json!({ "level": "01-naive-retry" })).await;
        people.push(participant);
    }
    // Ten win 01; five lose it four times; the rest play on.
    let mut tasks = Vec::new();
    for (index, participant) in people.iter().enumerate() {
        let participant = participant.clone();
        tasks.push(tokio::spawn(async move {
            if index < 10 {
                win_01(&participant).await;
            } else if index < 15 {
                for _ in 0..4 {
                    lose_01(&participant).await;
                }
            } else if index < 20 {
                lose_01(&participant).await;
            }
        }));
    }
    for task in tasks {
        task.await.unwrap();
    }
    let overview = presenter
        .get("/api/presenter/room?losses_over=3&quiet_minutes=240")
        .await;
    assert_eq!(
        (overview["kept"].as_u64(), overview["here"].as_u64()),
        (Some(60), Some(60))
    );
    assert_eq!(overview["people"].as_array().unwrap().len(), PEOPLE);
    // One row per level anyone is on or the path opens: 01 and 03, not a row per person.
    let stems: Vec<&str> = overview["levels"]
        .as_array()
        .unwrap()
        .iter()
        .map(|row| row["stem"].as_str().unwrap())
        .collect();
    assert_eq!(stems, ["01-naive-retry", "03-model-calls-again"]);
    let first = row(&overview, "01-naive-retry");
    assert_eq!(
        (
            &first["number"],
            &first["on_it"],
            &first["finished"],
            &first["lost_over"],
            &first["stuck"]
        ),
        (&json!("1.1"), &json!(60), &json!(10), &json!(5), &json!(0)),
        "{first}"
    );
    assert_eq!(row(&overview, "03-model-calls-again")["on_it"], 0);
    let help = overview["help"].as_array().unwrap();
    assert_eq!(help.len(), 5, "the five who lost four times: {help:?}");
    for person in help {
        assert_eq!(person["losses_here"], 4, "{person}");
        assert_eq!(
            person["help"],
            json!(["lost 1.1 The Second Knock 4 times and has not finished it"]),
            "{person}"
        );
    }
    assert_eq!(overview["scoreboard"][0]["scores"].as_array().unwrap().len(), 10);

    // With no minutes to spare, everyone here has made no progress "for 0 minutes".
    let overview = presenter.get("/api/presenter/room?losses_over=3&quiet_minutes=0").await;
    assert_eq!(row(&overview, "01-naive-retry")["stuck"], 60);
    assert_eq!(overview["help"].as_array().unwrap().len(), PEOPLE);
    let (status, body) = presenter_get(&room, "/api/presenter/room?quiet_minutes=9999").await;
    assert_eq!(
        (status, body["code"].as_str()),
        (StatusCode::UNPROCESSABLE_ENTITY, Some("invalid_value"))
    );
}

async fn presenter_get(room: &web_client::Room, path: &str) -> (StatusCode, Value) {
    let response = reqwest::Client::new()
        .get(format!("{}{path}", room.base))
        .bearer_auth(&room.secret)
        .send()
        .await
        .unwrap();
    (response.status(), response.json().await.unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_a_restart_everyone_the_room_file_keeps_is_in_the_overview_at_once() {
    let folder = tempfile::tempdir().unwrap();
    let room = folder.path().join("room.sqlite");
    let mut server = WebServer::start(&room, &[]);
    let mut people = Vec::new();
    for name in ["Ada", "Grace", "Linus", "Hedy", "Barbara", "Joan", "Radia"] {
        people.push(Participant::joined(&server.base, name).await);
    }
    people[0].ok("/api/game", json!({ "level": "01-naive-retry" })).await;
    for leaver in &people[5..] {
        let (status, _) = leaver.post("/api/leave", Value::Null).await;
        assert_eq!(status, StatusCode::NO_CONTENT);
    }
    server.kill();
    let server = WebServer::start(&room, &[]);
    let overview = Presenter::at(&server.base, &server.secret)
        .get("/api/presenter/room")
        .await;
    assert_eq!(
        (overview["kept"].as_u64(), overview["here"].as_u64()),
        (Some(7), Some(0)),
        "{}",
        overview["people"]
    );
    let places: Vec<(String, String)> = overview["people"]
        .as_array()
        .unwrap()
        .iter()
        .map(|person| {
            (
                person["name"].as_str().unwrap().to_owned(),
                person["place"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    for (name, place) in &places {
        let expected = if ["Joan", "Radia"].contains(&name.as_str()) {
            "left"
        } else {
            "away"
        };
        assert_eq!(place, expected, "{name}: {places:?}");
    }
    let ada = overview["people"]
        .as_array()
        .unwrap()
        .iter()
        .find(|person| person["name"] == "Ada")
        .unwrap();
    assert_eq!(
        ada["stem"], "01-naive-retry",
        "Ada's open level is known before she asks: {ada}"
    );
    // Her next request takes her place again.
    let (status, _) = people[0].moved_to(&server.base).get("/api/me").await;
    assert_eq!(status, StatusCode::OK);
    let overview = Presenter::at(&server.base, &server.secret)
        .get("/api/presenter/room")
        .await;
    assert_eq!(overview["here"], 1);
    server.stop();
}

/// The join page's card, asked as a browser at `host` would (its own address when `None`).
async fn join_card(base: &str, host: Option<&str>) -> Value {
    let mut request = reqwest::Client::new().get(format!("{base}/api/join-card"));
    if let Some(host) = host {
        request = request.header(HOST, host);
    }
    let response = request.send().await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    response.json().await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_join_page_shows_the_rooms_address_and_draws_its_qr_code() {
    let room = room_with(|_| {}).await;
    let client = reqwest::Client::new();
    let page = client.get(format!("{}/join", room.base)).send().await.unwrap();
    assert_eq!(page.status(), StatusCode::OK);
    assert!(page.text().await.unwrap().contains("/join.svg"));
    // Opened at a loopback address, the page says no phone can use it, and how to fix it.
    let card = join_card(&room.base, None).await;
    assert_eq!(card["url"], format!("{}/", room.base));
    assert_eq!(card["loopback"], true);
    assert!(card["advice"].as_str().unwrap().contains("--join-url"), "{card}");
    // Opened at the machine's address on the room's network, that is the address.
    let card = join_card(&room.base, Some("192.168.1.20:7880")).await;
    assert_eq!(
        (card["url"].as_str(), card["loopback"].as_bool()),
        (Some("http://192.168.1.20:7880/"), Some(false))
    );
    assert!(card["advice"].is_null());
    let qr = client.get(format!("{}/join.svg", room.base)).send().await.unwrap();
    assert_eq!(qr.headers()[CONTENT_TYPE], "image/svg+xml");
    let svg = qr.text().await.unwrap();
    assert!(
        svg.starts_with("<?xml") && svg.contains("<svg") && svg.contains("<path"),
        "{svg}"
    );

    // --join-url wins over the address the page was opened at.
    let room = room_with(|config| config.join_url = Some("http://10.0.0.5:7880/".into())).await;
    let card = join_card(&room.base, None).await;
    assert_eq!(
        (card["url"].as_str(), card["loopback"].as_bool()),
        (Some("http://10.0.0.5:7880/"), Some(false))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_plan_and_the_notes_come_from_workshop_md_and_the_campaign_with_a_clock() {
    let room = room_with(|_| {}).await;
    let presenter = Presenter::of(&room);
    let plan = presenter.get("/api/presenter/plan").await;
    let workshop = std::fs::read_to_string(levels_folder().join("../docs/src/workshop/plan.md")).unwrap();
    let expected = twice_world::workshop_plan::parse(&workshop).unwrap();
    let rows = plan["rows"].as_array().unwrap();
    assert_eq!(rows.len(), expected.rows.len());
    for (row, expected) in rows.iter().zip(&expected.rows) {
        assert_eq!(
            (row["from_minute"].as_u64(), row["to_minute"].as_u64()),
            (
                Some(u64::from(expected.from_minute)),
                Some(u64::from(expected.to_minute))
            )
        );
        assert_eq!(row["title"], expected.title.as_str());
        // The book's plan names levels as the pages do: by their place in the campaign.
        for planned in row["planned"].as_array().unwrap() {
            assert_eq!(planned["position"], planned["number"], "{row}");
        }
    }
    assert!(
        rows.iter().any(|row| row["planned"][0]["number"] == "2.1"),
        "the plan names 2.1: {rows:?}"
    );
    assert_eq!(plan["minutes"], expected.minutes());
    let notes = twice_world::presenter_notes::load(
        &levels_folder(),
        &twice_world::campaign::Campaign::load(&levels_folder())
            .unwrap()
            .levels
            .iter()
            .map(|loaded| &loaded.level)
            .collect::<Vec<_>>(),
    )
    .unwrap()
    .unwrap();
    assert_eq!(plan["notes"].as_array().unwrap().len(), notes.chapters.len());
    assert_eq!(plan["notes"][0]["say"], notes.chapters[0].say.as_str());
    assert_eq!(plan["clock"]["running"], false);

    // The clock started at minute 10 is in the row that holds minute 10, and its chapter.
    let (status, plan) = presenter.post("/api/presenter/clock", json!({ "minute": 10 })).await;
    assert_eq!(status, StatusCode::OK, "{plan}");
    let clock = &plan["clock"];
    assert_eq!(clock["running"], true);
    assert!((600..610).contains(&clock["elapsed_s"].as_u64().unwrap()), "{clock}");
    let row = expected.row_at(600).unwrap();
    assert_eq!(clock["row"], row);
    let chapter = expected.rows[..=row].iter().rev().find_map(|row| row.chapter);
    assert_eq!(clock["chapter"].as_u64(), chapter.map(u64::from));
    // It is kept: asked again, it still runs; stopped, it stops.
    assert_eq!(presenter.get("/api/presenter/plan").await["clock"]["running"], true);
    let (_, plan) = presenter.post("/api/presenter/clock", json!({ "minute": null })).await;
    assert_eq!(plan["clock"]["running"], false);
    let (status, body) = presenter
        .post("/api/presenter/clock", json!({ "minute": 100_000 }))
        .await;
    assert_eq!(
        (status, body["code"].as_str()),
        (StatusCode::UNPROCESSABLE_ENTITY, Some("invalid_value"))
    );

    // A plan file of the presenter's own, and one that is not a plan.
    let folder = tempfile::tempdir().unwrap();
    let own = folder.path().join("plan.md");
    std::fs::write(&own, "| minute | what happens | the room does |\n|---|---|---|\n| 0–20 | **01 The Second Knock** (chapter 1) | plays |\n").unwrap();
    let room = room_with(|config| config.plan_file = Some(own.clone())).await;
    let plan = Presenter::of(&room).get("/api/presenter/plan").await;
    assert_eq!(
        (
            plan["minutes"].as_u64(),
            plan["rows"][0]["planned"][0]["title"].as_str(),
            plan["rows"][0]["planned"][0]["position"].as_str()
        ),
        (Some(20), Some("The Second Knock"), Some("1.1")),
        "a plan of one's own may still name a level by its file's number"
    );
    let broken = folder.path().join("broken.md");
    std::fs::write(&broken, "no table here").unwrap();
    let mut config = twice_sim::web::WebConfig::new().unwrap();
    config.plan_file = Some(broken);
    let catalogue = twice_sim::web::Catalogue::load(&levels_folder()).unwrap();
    let error = twice_sim::web::WebState::open(catalogue, &mut config)
        .unwrap_err()
        .to_string();
    assert!(error.contains("broken.md") && error.contains("minute"), "{error}");
}

/// Waits until the log holds a line with every one of `needles` (the server writes as it goes).
async fn logged(log: &std::sync::Mutex<Vec<String>>, needles: &[&str]) -> String {
    for _ in 0..100 {
        if let Some(line) = log
            .lock()
            .unwrap()
            .iter()
            .find(|line| needles.iter().all(|needle| line.contains(needle)))
        {
            return line.clone();
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("no log line with {needles:?}: {:?}", log.lock().unwrap());
}

/// One join, one refused join (the room is full), a race opened and won, and a leave.
async fn a_short_session(server: &WebServer) {
    let ada = Participant::joined(&server.base, "Ada").await;
    let mut grace = Participant::new(&server.base);
    let (status, _) = grace.join("Grace", None).await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
    let presenter = Presenter::at(&server.base, &server.secret);
    presenter
        .post("/api/presenter/race", json!({ "tape": "04-pause.lost-answer" }))
        .await;
    let (status, _) = ada
        .post(
            "/api/race/resolve",
            json!({ "race": 1, "status": "completed", "reason": "billing shows cr_0001" }),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    let (status, _) = ada.post("/api/leave", Value::Null).await;
    assert_eq!(status, StatusCode::NO_CONTENT);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_server_logs_a_line_per_join_leave_race_and_error_and_quiet_silences_it() {
    let folder = tempfile::tempdir().unwrap();
    let (server, log) = WebServer::start_logged(&folder.path().join("room.sqlite"), &["--sessions-max", "1"]);
    a_short_session(&server).await;
    logged(&log, &["INFO", "Ada joined the room (1 of 1 places taken)"]).await;
    logged(&log, &["WARN", "503", "room_full"]).await;
    logged(&log, &["race #1 opened", "r1:c1", "04-pause.lost-answer"]).await;
    logged(&log, &["race #1: Ada won: completed", "billing shows cr_0001"]).await;
    logged(&log, &["Ada left the room"]).await;
    server.stop();

    let (server, log) =
        WebServer::start_logged(&folder.path().join("quiet.sqlite"), &["--sessions-max", "1", "--quiet"]);
    a_short_session(&server).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    server.stop();
    assert!(log.lock().unwrap().is_empty(), "--quiet: {:?}", log.lock().unwrap());
}
