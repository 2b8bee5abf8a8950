//! What the browser's level screen and level list say, decided by the server from twice-world's
//! rules: level 01 shows what chapter 1 teaches (no ledger, no console; the guards that matter,
//! in the player's words), panels arrive chapter by chapter as in the window, a level finished by
//! defending says so, the list numbers its levels, credits count from one, opening the open
//! level carries on, and the room's race reaches a waiting page at once, takes no resolve once
//! decided (nor from the presenter's stage), and tells what the decision did in the world's words.

use std::time::{Duration, Instant};

use reqwest::StatusCode;
use serde_json::{Value, json};

#[path = "common/web_server.rs"]
mod web_server;
use web_server::first_target;
#[path = "common/web_client.rs"]
mod web_client;
use web_client::{Participant, Presenter, room_with};

fn words(list: &Value) -> Vec<String> {
    list.as_array()
        .unwrap()
        .iter()
        .map(|guard| guard["words"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn level_01_shows_what_chapter_1_teaches_in_the_players_words() {
    let room = room_with(|_| {}).await;
    let ada = Participant::joined(&room.base, "Ada").await;
    let game = ada.ok("/api/game", json!({ "level": "01-naive-retry" })).await;
    // Chapter 1: Penny, the wire, billing, the hand and the timeline; the ledger, its
    // checkpoints, the rulebook and the operator console come later.
    assert_eq!(
        game["panels"],
        json!({ "rulebook": false, "ledger": false, "checkpoints": false, "console": false, "arriving": [] })
    );
    // The four guards switched off here, in words; the others on, counted (every guard the
    // registry holds but those four).
    let off = words(&game["guards_listed"]["off"]);
    assert_eq!(
        off,
        [
            "the write retry rule",
            "the pause on unknown calls",
            "passing the key",
            "the reconcile hook"
        ],
        "{}",
        game["guards_listed"]
    );
    assert!(game["guards_listed"]["lesson_on"].as_array().unwrap().is_empty());
    assert_eq!(
        game["guards_listed"]["others_on"].as_array().unwrap().len(),
        twice_sim::runtime::guards::Guard::EVERY.len() - off.len()
    );
    for guard in game["guards_listed"]["others_on"].as_array().unwrap() {
        assert!(!guard["words"].as_str().unwrap().contains('_'), "{guard}");
    }
    assert_eq!(game["level"]["number"], "1.1");
    assert_eq!(game["level"]["goal_words"]["finish"], "heist");
    assert_eq!(game["level"]["goal_words"]["short"], "make Penny pay twice");

    // The win: each credit in words, counted from one as Penny's panel counts.
    let game = ada.ok("/api/game/step", json!({ "phases": 12 })).await;
    let game = ada
        .ok("/api/game/play", json!({ "play": first_target(&game, "LoseResponse") }))
        .await;
    assert_eq!(game["penny"]["runs"][0]["items"], 3);
    let game = ada.ok("/api/game/run", Value::Null).await;
    let credit = &game["end"]["verdict"]["credits"][0];
    assert_eq!(credit["owner"], "Ada", "{credit}");
    assert_eq!(credit["label"], "Refund for order #1001 — r1/2", "{credit}");
    // The timeline names steps as the credits do: a checkpoint is "at r1/1", never "item 0"
    // or "item 1" (a second way to count the same step).
    let timeline = game["timeline"].to_string();
    assert!(
        timeline.contains("saves checkpoint v1 (running, at r1/1)"),
        "{timeline}"
    );
    assert!(!timeline.contains("item "), "{timeline}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn panels_arrive_chapter_by_chapter_and_the_sandbox_shows_them_all() {
    let room = room_with(|config| config.unlock_all = true).await;
    let ada = Participant::joined(&room.base, "Ada").await;
    // Chapter 3: the ledger and its checkpoints arrive (the rulebook came in chapter 2).
    let game = ada.ok("/api/game", json!({ "level": "05-crash-replay" })).await;
    let panels = &game["panels"];
    assert_eq!(
        (
            &panels["rulebook"],
            &panels["ledger"],
            &panels["checkpoints"],
            &panels["console"]
        ),
        (&json!(true), &json!(true), &json!(true), &json!(false)),
        "{panels}"
    );
    let arriving: Vec<&str> = panels["arriving"]
        .as_array()
        .unwrap()
        .iter()
        .map(|panel| panel["id"].as_str().unwrap())
        .collect();
    assert_eq!(arriving, ["ledger", "checkpoints"], "{panels}");
    // Met once, a panel is not introduced again: 05 played to its end, 06 (chapter 3 too) does not.
    ada.ok("/api/game/run", Value::Null).await;
    let game = ada.ok("/api/game", json!({ "level": "06-ledger-holds" })).await;
    assert_eq!(game["panels"]["ledger"], true);
    assert_eq!(game["panels"]["arriving"], json!([]), "{}", game["panels"]);
    // A level that deals operator cards shows the console.
    let game = ada.ok("/api/game", json!({ "level": "09-settle-it-yourself" })).await;
    assert_eq!(game["panels"]["console"], true, "{}", game["panels"]);
    // The sandbox shows everything, even in level 01, and introduces nothing.
    let game = ada
        .ok("/api/game", json!({ "level": "01-naive-retry", "guards": "none" }))
        .await;
    assert_eq!(
        game["panels"],
        json!({ "rulebook": true, "ledger": true, "checkpoints": true, "console": true, "arriving": [] })
    );
    assert_eq!(
        game["guards_listed"]["off"].as_array().unwrap().len(),
        twice_sim::runtime::guards::Guard::EVERY.len()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_level_finished_by_defending_says_so_and_the_list_numbers_its_levels() {
    let room = room_with(|_| {}).await;
    let ada = Participant::joined(&room.base, "Ada").await;
    let (status, levels) = ada.get("/api/levels").await;
    assert_eq!(status, StatusCode::OK);
    // Numbered by campaign position, as both editions number them (chapter 1's files are
    // 01, 02, 21, 20, 22: numbers that jump).
    let mut place = (0, 0);
    for level in levels.as_array().unwrap() {
        let stem = level["stem"].as_str().unwrap();
        let chapter = level["chapter"].as_u64().unwrap();
        place = if chapter == place.0 {
            (chapter, place.1 + 1)
        } else {
            (chapter, 1)
        };
        assert_eq!(level["number"], format!("{}.{}", place.0, place.1), "{stem}");
        assert!(level["guards_listed"]["off"].is_array(), "{stem}");
    }
    let second = levels
        .as_array()
        .unwrap()
        .iter()
        .find(|level| level["stem"] == "02-one-attempt")
        .unwrap();
    let goal = &second["goal_words"];
    assert_eq!(goal["finish"], "defence", "{goal}");
    let short = goal["short"].as_str().unwrap();
    assert!(
        short.starts_with("defend it with at most") && !short.contains("paid twice"),
        "{short}"
    );
    // 02's lesson guard is on there: named, not hidden among the rest.
    assert_eq!(words(&second["guards_listed"]["lesson_on"]), ["the write retry rule"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn opening_the_open_level_again_carries_on_where_it_was() {
    let room = room_with(|_| {}).await;
    let ada = Participant::joined(&room.base, "Ada").await;
    ada.ok("/api/game", json!({ "level": "01-naive-retry" })).await;
    let game = ada.ok("/api/game/step", json!({ "phases": 10 })).await;
    assert_eq!(game["phase"], 10);
    let (_, levels) = ada.get("/api/levels").await;
    let open: Vec<&Value> = levels
        .as_array()
        .unwrap()
        .iter()
        .filter(|level| !level["open_now"].is_null())
        .collect();
    assert_eq!(open.len(), 1, "{levels}");
    assert_eq!(open[0]["stem"], "01-naive-retry");
    assert_eq!(open[0]["open_now"], json!({ "mode": "campaign", "phase": 10 }));
    let (_, me) = ada.get("/api/me").await;
    assert_eq!(
        (&me["game"], &me["game_number"]),
        (&json!("01-naive-retry"), &json!("1.1")),
        "{me}"
    );

    // Play on the level already open: the same run, at phase 10, not phase 0.
    let game = ada.ok("/api/game", json!({ "level": "01-naive-retry" })).await;
    assert_eq!(game["phase"], 10, "the open level carries on");
    let game = ada.ok("/api/game", json!({ "level": "naive-retry", "seed": 1 })).await;
    assert_eq!(game["phase"], 10, "named by its id, with its seed: the same level");
    // Another seed, or chosen guards, is another run: it opens at phase 0.
    let game = ada
        .ok("/api/game", json!({ "level": "01-naive-retry", "guards": "all" }))
        .await;
    assert_eq!(
        (game["phase"].as_u64(), game["mode"].as_str()),
        (Some(0), Some("sandbox"))
    );
    let game = ada.ok("/api/game", json!({ "level": "01-naive-retry" })).await;
    assert_eq!(
        (game["phase"].as_u64(), game["mode"].as_str()),
        (Some(0), Some("campaign"))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_race_reaches_a_waiting_page_at_once_and_a_decided_race_takes_no_more() {
    let room = room_with(|_| {}).await;
    let presenter = Presenter::of(&room);
    let ada = Participant::joined(&room.base, "Ada").await;
    let grace = Participant::joined(&room.base, "Grace").await;
    let (status, first) = presenter
        .post("/api/presenter/race", json!({ "tape": "04-pause.lost-answer" }))
        .await;
    assert_eq!(status, StatusCode::OK, "{first}");
    let (_, race) = ada.get("/api/race").await;
    assert_eq!(
        (race["number"].as_u64(), race["can_resolve"].as_bool()),
        (Some(1), Some(true))
    );
    let seen = race["version"].as_u64().unwrap();

    // A page waiting on race 1 hears of race 2 as it opens, not at its next poll.
    let waiting = {
        let ada = ada.clone();
        tokio::spawn(async move {
            let answer = ada.get(&format!("/api/race?seen={seen}")).await;
            (Instant::now(), answer)
        })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!waiting.is_finished(), "an unchanged race is not answered at once");
    let opened = Instant::now();
    presenter
        .post("/api/presenter/race", json!({ "tape": "04-pause.lost-answer" }))
        .await;
    let (answered, (status, race)) = waiting.await.unwrap();
    assert_eq!((status, race["number"].as_u64()), (StatusCode::OK, Some(2)), "{race}");
    let waited = answered.saturating_duration_since(opened);
    assert!(
        waited < Duration::from_secs(1),
        "race 2 reached the page after {waited:?}"
    );
    let (status, bad) = ada.get("/api/race?seen=x").await;
    assert_eq!(
        (status, bad["code"].as_str()),
        (StatusCode::UNPROCESSABLE_ENTITY, Some("invalid_value"))
    );

    // Race 1's buttons are gone; a click on them anyway is told the race changed.
    let resolve =
        |number: u64, status: &str| json!({ "race": number, "status": status, "reason": "billing shows cr_0001" });
    let (status, body) = ada.post("/api/race/resolve", resolve(1, "completed")).await;
    assert_eq!(
        (status, body["code"].as_str()),
        (StatusCode::CONFLICT, Some("race_changed"))
    );

    // Grace decides `failed` although billing holds the credit: Ada is paid twice.
    let (status, decided) = grace.post("/api/race/resolve", resolve(2, "failed")).await;
    assert_eq!(status, StatusCode::OK, "{decided}");
    let (_, race) = ada.get("/api/race").await;
    assert_eq!(
        race["can_resolve"], false,
        "a decided race takes no more resolves: {race}"
    );
    let after = &race["after"];
    assert_eq!(after["outcome"]["word"], "paid twice", "{after}");
    assert!(!after["diagnosis"].as_array().unwrap().is_empty(), "{after}");
    // The world's debrief, never the checker's raw lines: no guard "held" where Ada was paid twice.
    let told = after.to_string();
    assert!(!told.contains("held") && !told.contains("paid_twice —"), "{after}");
    assert!(after.get("summary").is_none(), "{after}");
    assert_eq!(after["credits"][0]["label"], "Refund for order #1001 — r1/1");
    let (status, body) = ada.post("/api/race/resolve", resolve(2, "completed")).await;
    assert_eq!(
        (status, body["winner"]["operator"].as_str()),
        (StatusCode::CONFLICT, Some("Grace"))
    );

    // The presenter's stage shows the race to the room and takes no part in it.
    presenter
        .post("/api/presenter/race", json!({ "tape": "04-pause.lost-answer" }))
        .await;
    let (cookie, me) = presenter.post_for_cookie("/api/presenter/stage").await;
    assert_eq!(me["stage"], true, "{me}");
    let stage = Participant::with_cookie(&room.base, cookie);
    let (_, race) = stage.get("/api/race").await;
    assert_eq!(
        (race["number"].as_u64(), race["can_resolve"].as_bool()),
        (Some(3), Some(false))
    );
    let (status, body) = stage.post("/api/race/resolve", resolve(3, "completed")).await;
    assert_eq!(
        (status, body["code"].as_str()),
        (StatusCode::CONFLICT, Some("move_refused"))
    );
    // Every level is open on the stage; the stage is nobody in the room.
    let game = stage.ok("/api/game", json!({ "level": "19-vault" })).await;
    assert_eq!(game["mode"], "campaign");
    let overview = presenter.get("/api/presenter/room").await;
    assert_eq!(
        overview["kept"], 2,
        "Ada and Grace, not the stage: {}",
        overview["people"]
    );

    // `completed` leaves Ada paid once; nothing in it speaks to a player about their hand.
    let (status, _) = ada.post("/api/race/resolve", resolve(3, "completed")).await;
    assert_eq!(status, StatusCode::OK);
    let (_, race) = grace.get("/api/race").await;
    let after = &race["after"];
    assert_eq!(after["outcome"]["word"], "paid exactly once", "{after}");
    let told = after["diagnosis"].to_string();
    assert!(
        !told.contains("unplayed") && !told.contains("defend it"),
        "no advice to a player: {after}"
    );
}
