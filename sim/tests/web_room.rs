//! The durable room, with the real `twice-sim web` process: thirty scripted participants
//! play, the server is SIGKILLed while their requests are in flight, and after a restart
//! (with another `--sessions-max`) every acknowledged move, every won level and its tape,
//! the scoreboard and the presenter's URL are back. Also: a name taken back with its code
//! on a new browser, a replay link opening the same run to the same verdict, the room's
//! path opening levels whatever the lock chain, and a room file that is not one.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use reqwest::header::{AUTHORIZATION, COOKIE, SET_COOKIE};
use reqwest::{Client, StatusCode};
use serde_json::{Value, json};
use twice_world::campaign::Campaign;
use twice_world::level::TimedAction;

#[path = "common/web_server.rs"]
mod web_server;
use web_server::{WebServer, levels_folder};

#[derive(Clone)]
struct Browser {
    client: Client,
    base: String,
    cookie: Option<String>,
}

impl Browser {
    fn new(base: &str) -> Browser {
        Browser {
            client: Client::builder().timeout(Duration::from_secs(30)).build().unwrap(),
            base: base.to_owned(),
            cookie: None,
        }
    }

    async fn send(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<Value>,
    ) -> Result<(StatusCode, Value), String> {
        let mut request = self.client.request(method, format!("{}{path}", self.base));
        if let Some(cookie) = &self.cookie {
            request = request.header(COOKIE, cookie);
        }
        if let Some(body) = body {
            request = request.json(&body);
        }
        let response = request.send().await.map_err(|error| error.to_string())?;
        let status = response.status();
        let text = response.text().await.map_err(|error| error.to_string())?;
        Ok((status, serde_json::from_str(&text).map_err(|_| text)?))
    }

    async fn get(&self, path: &str) -> (StatusCode, Value) {
        self.send(reqwest::Method::GET, path, None).await.unwrap()
    }

    async fn post(&self, path: &str, body: Value) -> (StatusCode, Value) {
        self.send(reqwest::Method::POST, path, Some(body)).await.unwrap()
    }

    async fn join(&mut self, name: &str, code: Option<&str>) -> (StatusCode, Value) {
        let mut body = json!({ "name": name });
        if let Some(code) = code {
            body["code"] = json!(code);
        }
        let response = self
            .client
            .post(format!("{}/api/join", self.base))
            .json(&body)
            .send()
            .await
            .unwrap();
        let status = response.status();
        if let Some(cookie) = response.headers().get(SET_COOKIE) {
            self.cookie = Some(cookie.to_str().unwrap().split(';').next().unwrap().to_owned());
        }
        (status, response.json().await.unwrap())
    }
}

fn winning_level(level_stem: &str) -> twice_world::level::Level {
    let campaign = Campaign::load(&levels_folder()).expect("the campaign loads");
    campaign
        .levels
        .into_iter()
        .find(|loaded| {
            loaded
                .path
                .file_name()
                .unwrap()
                .to_str()
                .unwrap()
                .starts_with(level_stem)
        })
        .expect("the level")
        .level
}

/// The moves of a shipped tape that wins `level` with its own guards.
fn winning_moves(level_stem: &str) -> Vec<TimedAction> {
    let campaign = Campaign::load(&levels_folder()).expect("the campaign loads");
    let level = campaign
        .levels
        .iter()
        .find(|loaded| {
            loaded
                .path
                .file_name()
                .unwrap()
                .to_str()
                .unwrap()
                .starts_with(level_stem)
        })
        .expect("the level");
    campaign
        .tapes
        .iter()
        .filter(|loaded| loaded.level.path == level.path && loaded.tape.guards.is_none())
        .filter(|loaded| loaded.tape.expect.verdict == level.level.goal)
        .min_by_key(|loaded| loaded.tape.actions.len())
        .expect("a winning tape")
        .tape
        .actions
        .clone()
}

/// What one participant was told last, request by request.
#[derive(Clone, Debug, Default)]
struct Acknowledged {
    /// The last level screen answered, by level stem.
    game: Option<Value>,
    /// Levels the server answered as finished.
    won: Vec<String>,
    /// A request was sent and not answered when the server died.
    in_flight: bool,
}

async fn acknowledged_step(
    browser: &Browser,
    path: &str,
    body: Value,
    seen: &mut Acknowledged,
    count: &AtomicUsize,
) -> Option<Value> {
    seen.in_flight = true;
    let (status, game) = browser.send(reqwest::Method::POST, path, Some(body)).await.ok()?;
    seen.in_flight = false;
    assert_eq!(status, StatusCode::OK, "{path}: {game}");
    if game["end"]["finished"] == true && game["end"]["counted"] == true {
        let stem = game["level"]["stem"].as_str().unwrap().to_owned();
        if !seen.won.contains(&stem) {
            seen.won.push(stem);
        }
    }
    seen.game = Some(game.clone());
    count.fetch_add(1, Ordering::SeqCst);
    Some(game)
}

/// One participant's script: win 01 move by move, then open 02 and step through it.
async fn script(browser: Browser, moves: Vec<TimedAction>, count: Arc<AtomicUsize>) -> Acknowledged {
    let mut seen = Acknowledged::default();
    let Some(mut game) = acknowledged_step(
        &browser,
        "/api/game",
        json!({ "level": "01-naive-retry" }),
        &mut seen,
        &count,
    )
    .await
    else {
        return seen;
    };
    for action in &moves {
        while game["phase"].as_u64().unwrap() < u64::from(action.at_phase) {
            let phases = (u64::from(action.at_phase) - game["phase"].as_u64().unwrap()).min(3);
            let Some(next) = acknowledged_step(
                &browser,
                "/api/game/step",
                json!({ "phases": phases }),
                &mut seen,
                &count,
            )
            .await
            else {
                return seen;
            };
            game = next;
        }
        let play = json!({ "play": serde_json::to_value(&action.play).unwrap() });
        let Some(next) = acknowledged_step(&browser, "/api/game/play", play, &mut seen, &count).await else {
            return seen;
        };
        game = next;
    }
    if acknowledged_step(&browser, "/api/game/run", Value::Null, &mut seen, &count)
        .await
        .is_none()
    {
        return seen;
    }
    if acknowledged_step(
        &browser,
        "/api/game",
        json!({ "level": "02-one-attempt" }),
        &mut seen,
        &count,
    )
    .await
    .is_none()
    {
        return seen;
    }
    for _ in 0..40 {
        if acknowledged_step(&browser, "/api/game/step", json!({ "phases": 1 }), &mut seen, &count)
            .await
            .is_none()
        {
            return seen;
        }
    }
    seen
}

const PARTICIPANTS: usize = 30;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_sigkilled_room_comes_back_with_every_acknowledged_move_win_and_score() {
    let folder = tempfile::tempdir().unwrap();
    let room = folder.path().join("room.sqlite");
    let mut server = WebServer::start(&room, &[]);
    let moves = winning_moves("01-naive-retry");
    let mut browsers = Vec::new();
    for index in 0..PARTICIPANTS {
        let mut browser = Browser::new(&server.base);
        let (status, me) = browser.join(&format!("Player {index}"), None).await;
        assert_eq!(status, StatusCode::OK, "{me}");
        browsers.push(browser);
    }
    let count = Arc::new(AtomicUsize::new(0));
    let scripts: Vec<_> = browsers
        .iter()
        .map(|browser| tokio::spawn(script(browser.clone(), moves.clone(), Arc::clone(&count))))
        .collect();
    // Killed mid-session: most have won 01 and are stepping through 02, requests in flight.
    let per_participant = 2 * moves.len() + 12;
    while count.load(Ordering::SeqCst) < PARTICIPANTS * per_participant {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    server.kill();
    let old_secret = server.secret.clone();
    let mut seen = Vec::new();
    for script in scripts {
        seen.push(script.await.unwrap());
    }
    let wins: usize = seen.iter().map(|seen| seen.won.len()).sum();
    assert!(
        wins > 0,
        "no participant had won before the kill: the test checks nothing"
    );
    assert!(seen.iter().any(|seen| seen.in_flight), "the kill came between requests");

    // A restart with another --sessions-max: the room is the same room.
    let server = WebServer::start(&room, &["--sessions-max", "40"]);
    assert!(
        server
            .printed
            .iter()
            .any(|line| line.contains(&format!("{PARTICIPANTS} participants kept"))),
        "{:?}",
        server.printed
    );
    assert_eq!(server.secret, old_secret, "the presenter's URL is the same");
    let mut scoreboard_wins = BTreeMap::new();
    for (index, (browser, seen)) in browsers.iter_mut().zip(&seen).enumerate() {
        browser.base = server.base.clone();
        let (status, me) = browser.get("/api/me").await;
        assert_eq!(status, StatusCode::OK, "Player {index}: {me}");
        assert_eq!(me["name"], format!("Player {index}"));
        let (_, levels) = browser.get("/api/levels").await;
        for stem in &seen.won {
            let level = levels
                .as_array()
                .unwrap()
                .iter()
                .find(|level| level["stem"] == stem.as_str())
                .unwrap();
            assert_eq!(level["state"]["word"], "finished", "Player {index}: {level}");
            assert!(level["best"].is_object(), "Player {index}: {level}");
            *scoreboard_wins.entry(stem.clone()).or_insert(0) += 1;
        }
        let Some(acked) = &seen.game else { continue };
        let (status, game) = browser.get("/api/game").await;
        assert_eq!(status, StatusCode::OK, "Player {index}: {game}");
        let unanswered_open = seen.in_flight && game["level"]["stem"] != acked["level"]["stem"];
        if unanswered_open {
            // The level opened by the unanswered request: nothing acknowledged was lost.
            assert_eq!(game["phase"], 0, "Player {index}");
            continue;
        }
        assert_eq!(game["level"]["stem"], acked["level"]["stem"], "Player {index}");
        if seen.in_flight {
            // The request in flight may have been kept before the kill: never less than acked.
            assert!(game["phase"].as_u64() >= acked["phase"].as_u64(), "Player {index}");
            let played = game["played"].as_array().unwrap();
            let acked_played = acked["played"].as_array().unwrap();
            assert_eq!(&played[..acked_played.len()], &acked_played[..], "Player {index}");
        } else {
            for field in ["phase", "played", "timeline", "ledger", "billing", "hand", "end"] {
                assert_eq!(game[field], acked[field], "Player {index}: {field}");
            }
        }
    }
    // The presenter's old URL still opens the room, with everyone's wins on the scoreboard.
    let (status, view) = {
        let response = Client::new()
            .get(format!("{}/api/presenter/room", server.base))
            .header(AUTHORIZATION, format!("Bearer {old_secret}"))
            .send()
            .await
            .unwrap();
        (response.status(), response.json::<Value>().await.unwrap())
    };
    assert_eq!(status, StatusCode::OK, "{view}");
    for (stem, wins) in &scoreboard_wins {
        let board = view["scoreboard"]
            .as_array()
            .unwrap()
            .iter()
            .find(|board| board["level"] == stem.as_str())
            .unwrap_or_else(|| panic!("no board for {stem}: {view}"));
        assert_eq!(board["scores"].as_array().unwrap().len(), *wins, "{board}");
    }
    server.stop();
    // Every won level's tape is in the room file, and replays to a win.
    let connection = rusqlite::Connection::open(&room).unwrap();
    let tapes: Vec<String> = connection
        .prepare("SELECT tape FROM won_tapes")
        .unwrap()
        .query_map([], |row| row.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(tapes.len(), wins);
    let level = winning_level("01-naive-retry");
    for text in &tapes {
        let tape = twice_world::level::parse_tape(Path::new("won.tape.ron"), text).unwrap();
        let mut replay = twice_world::simulator::SimulationBuilder::new(level.clone(), tape.seed)
            .actions(tape.actions.clone())
            .build()
            .unwrap();
        replay.run().unwrap();
        assert_eq!(
            replay.verdict().unwrap().outcome,
            level.goal,
            "the won tape replays to a win"
        );
    }
}

/// A room served in this process, in memory unless `configure` names a room file.
async fn room_in_process(configure: impl FnOnce(&mut twice_sim::web::WebConfig)) -> (String, twice_sim::web::WebState) {
    use twice_sim::web::{self, Catalogue, WebConfig, WebState};
    let catalogue = Catalogue::load(&levels_folder()).expect("the campaign loads");
    let mut config = WebConfig::new().expect("a presenter secret");
    configure(&mut config);
    let state = WebState::open(catalogue, &mut config).expect("the room opens");
    let listener = web::bind("127.0.0.1:0".parse().unwrap(), false).await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(web::serve_until(listener, state.clone(), std::future::pending::<()>()));
    (format!("http://{address}"), state)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_name_comes_back_on_a_new_browser_with_the_code_its_screen_showed() {
    let (base, _state) = room_in_process(|_| {}).await;
    let mut old = Browser::new(&base);
    let (_, me) = old.join("Ada", None).await;
    let code = me["code"].as_str().unwrap().to_owned();
    assert_eq!(code.len(), 6, "{me}");
    old.post("/api/game", json!({ "level": "01-naive-retry" })).await;
    let (_, left_at) = old.post("/api/game/step", json!({ "phases": 5 })).await;

    let mut new = Browser::new(&base);
    let (status, body) = new.join("ada", None).await;
    assert_eq!(
        (status, body["code"].as_str()),
        (StatusCode::CONFLICT, Some("name_taken")),
        "{body}"
    );
    assert!(
        body["error"].as_str().unwrap().contains("code"),
        "the refusal says how: {body}"
    );
    let (status, body) = new.join("ada", Some("ZZZZZZ")).await;
    assert_eq!(
        (status, body["code"].as_str()),
        (StatusCode::FORBIDDEN, Some("wrong_code")),
        "{body}"
    );
    let (status, me) = new.join("ada", Some(&code.to_lowercase())).await;
    assert_eq!(status, StatusCode::OK, "{me}");
    assert_eq!(
        (me["name"].as_str(), me["game"].as_str()),
        (Some("Ada"), Some("01-naive-retry"))
    );
    let (_, game) = new.get("/api/game").await;
    assert_eq!(game["phase"], left_at["phase"]);
    assert_eq!(game["timeline"], left_at["timeline"]);
    // The old browser's cookie names nobody now.
    let (status, body) = old.get("/api/me").await;
    assert_eq!(
        (status, body["code"].as_str()),
        (StatusCode::UNAUTHORIZED, Some("no_session"))
    );
}

/// Steps the open level to each move's phase and plays it, as a player would: the last answer.
async fn play_moves(browser: &Browser, mut game: Value, moves: &[TimedAction]) -> Value {
    for action in moves {
        while game["phase"].as_u64().unwrap() < u64::from(action.at_phase) {
            let phases = u64::from(action.at_phase) - game["phase"].as_u64().unwrap();
            game = browser
                .post("/api/game/step", json!({ "phases": phases.min(100) }))
                .await
                .1;
        }
        let (status, played) = browser
            .post(
                "/api/game/play",
                json!({ "play": serde_json::to_value(&action.play).unwrap() }),
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{played}");
        game = played;
    }
    game
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replay_link_from_the_debrief_opens_the_same_run_to_the_same_verdict_elsewhere() {
    let (base, _state) = room_in_process(|_| {}).await;
    let mut winner = Browser::new(&base);
    winner.join("Ada", None).await;
    let (_, game) = winner.post("/api/game", json!({ "level": "01-naive-retry" })).await;
    assert!(game["replay_link"].is_null(), "no link before the level is quiet");
    play_moves(&winner, game, &winning_moves("01-naive-retry")).await;
    let (_, won) = winner.post("/api/game/run", Value::Null).await;
    assert_eq!(won["end"]["finished"], true, "{}", won["end"]);
    let link = won["replay_link"]
        .as_str()
        .expect("a quiet level offers its link")
        .to_owned();
    // The same text the game reads.
    let parsed = twice_world::replay_link::ReplayLink::parse(&link).unwrap();
    assert_eq!(parsed.level, "01-naive-retry");

    let mut friend = Browser::new(&base);
    friend.join("Grace", None).await;
    let (status, replayed) = friend
        .post(
            "/api/replay",
            json!({ "link": format!("http://elsewhere:7880/#{link}") }),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{replayed}");
    for field in ["phase", "played", "timeline", "billing", "ledger"] {
        assert_eq!(replayed[field], won[field], "{field}");
    }
    assert_eq!(replayed["end"]["verdict"], won["end"]["verdict"]);
    assert_eq!(replayed["mode"], "sandbox");
    assert_eq!(
        replayed["end"]["counted"], false,
        "someone else's run is not the friend's win"
    );
    let (_, levels) = friend.get("/api/levels").await;
    let first = levels
        .as_array()
        .unwrap()
        .iter()
        .find(|level| level["stem"] == "01-naive-retry")
        .unwrap();
    assert_eq!(first["state"]["word"], "open", "{first}");

    let cut = &link[..link.len() - 4];
    let (status, body) = friend.post("/api/replay", json!({ "link": cut })).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    assert!(body["error"].as_str().unwrap().contains("moves"), "{body}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_rooms_path_opens_its_levels_whatever_the_lock_chain() {
    let (base, _state) = room_in_process(|config| config.path = Some(vec!["01".into(), "03,09".into()])).await;
    let mut browser = Browser::new(&base);
    let (_, me) = browser.join("Ada", None).await;
    assert_eq!(
        me["path"],
        json!(["01-naive-retry", "03-model-calls-again", "09-settle-it-yourself"])
    );
    let (_, levels) = browser.get("/api/levels").await;
    let state_of = |stem: &str| {
        let level = levels
            .as_array()
            .unwrap()
            .iter()
            .find(|level| level["stem"] == stem)
            .unwrap();
        (
            level["playable"].as_bool().unwrap(),
            level["on_path"].as_bool().unwrap(),
        )
    };
    assert_eq!(state_of("03-model-calls-again"), (true, true));
    assert_eq!(state_of("09-settle-it-yourself"), (true, true));
    assert_eq!(
        state_of("04-pause"),
        (false, false),
        "a level off the path keeps its lock"
    );
    let (status, game) = browser
        .post("/api/game", json!({ "level": "09-settle-it-yourself" }))
        .await;
    assert_eq!(status, StatusCode::OK, "{game}");
    assert_eq!(game["mode"], "campaign", "a level on the path counts for progress");
    let (status, body) = browser.post("/api/game", json!({ "level": "04-pause" })).await;
    assert_eq!(
        (status, body["code"].as_str()),
        (StatusCode::FORBIDDEN, Some("locked")),
        "{body}"
    );

    // A path naming no level is refused at start, naming the bad entry.
    let catalogue = twice_sim::web::Catalogue::load(&levels_folder()).unwrap();
    let mut config = twice_sim::web::WebConfig::new().unwrap();
    config.path = Some(vec!["01".into(), "99".into()]);
    let error = twice_sim::web::WebState::open(catalogue, &mut config)
        .unwrap_err()
        .to_string();
    assert!(error.contains("`99`") && error.contains("--path"), "{error}");
}

#[test]
fn the_command_refuses_a_room_file_that_is_not_one_and_names_it() {
    let folder = tempfile::tempdir().unwrap();
    let notes = folder.path().join("notes.sqlite");
    std::fs::write(
        &notes,
        "these are notes, not a database of any kind, long enough for a header",
    )
    .unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_twice-sim"))
        .args(["web", "--addr", "127.0.0.1:0", "--levels"])
        .arg(levels_folder())
        .arg("--room")
        .arg(&notes)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("notes.sqlite") && stderr.contains("not a Twice room file"),
        "{stderr}"
    );
    assert_eq!(
        std::fs::read_to_string(&notes).unwrap(),
        "these are notes, not a database of any kind, long enough for a header"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_defence_in_the_browser_is_judged_by_the_explorer_and_a_holding_one_finishes_the_level() {
    let (base, _state) = room_in_process(|config| config.unlock_all = true).await;
    let mut browser = Browser::new(&base);
    browser.join("Ada", None).await;
    let (_, game) = browser.post("/api/game", json!({ "level": "02-one-attempt" })).await;
    assert_eq!(game["level"]["defender"]["budget"], 2, "{}", game["level"]);
    // Spending the whole hand is no choice that can fail: it finishes nothing, and the
    // debrief says how the level is finished.
    let whole_hand = twice_world::level::load_tape(&levels_folder().join("02-one-attempt.whole-hand.tape.ron"))
        .expect("the whole-hand tape loads");
    play_moves(&browser, game, &whole_hand.tape.actions).await;
    let (_, spent) = browser.post("/api/game/run", Value::Null).await;
    assert_eq!(
        spent["end"]["debrief"]["standing"], "held_against_the_whole_hand",
        "{}",
        spent["end"]
    );
    assert_eq!(spent["end"]["finished"], false, "{}", spent["end"]);
    assert!(
        spent["end"]["debrief"]["diagnosis"]
            .as_array()
            .unwrap()
            .iter()
            .any(|sentence| sentence.as_str().unwrap().contains("defend it with at most 2 guards")),
        "{}",
        spent["end"]
    );
    let (status, falls) = browser
        .post("/api/defend", json!({ "level": "02-one-attempt", "guards": [] }))
        .await;
    assert_eq!(status, StatusCode::OK, "{falls}");
    assert_eq!(
        (falls["holds"].as_bool(), falls["counted"].as_bool()),
        (Some(false), Some(false)),
        "{falls}"
    );
    let a_heist_got_through = falls["heists"]
        .as_array()
        .unwrap()
        .iter()
        .any(|heist| heist["stopped"] == false);
    assert!(
        a_heist_got_through || falls["counter_example"].is_array(),
        "a falling defence shows what got through: {falls}"
    );
    let (_, levels) = browser.get("/api/levels").await;
    let level = levels
        .as_array()
        .unwrap()
        .iter()
        .find(|level| level["stem"] == "02-one-attempt")
        .unwrap();
    assert_ne!(
        level["state"]["word"], "finished",
        "a defence that falls finishes nothing"
    );
    let (status, holds) = browser
        .post(
            "/api/defend",
            json!({ "level": "02-one-attempt", "guards": ["write_retry_rule"] }),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{holds}");
    assert_eq!(holds["holds"], true, "{holds}");
    assert_eq!(holds["minimal"], true, "{holds}");
    assert!(
        holds["searched"].as_u64().unwrap() > 0,
        "the explorer searched: {holds}"
    );
    assert!(holds["counter_example"].is_null(), "{holds}");
    assert_eq!(holds["counted"], true);
    // Only heists that fire here are listed (each held now); the others are said once.
    let listed = holds["heists"].as_array().unwrap().len();
    let falls_listed = falls["heists"].as_array().unwrap().len();
    assert_eq!(listed, falls_listed, "the same heists fire whatever the guards");
    assert!(
        holds["left_out"]
            .as_str()
            .is_some_and(|said| said.starts_with("Not listed: ") && said.contains("hit nothing")),
        "02 knows heists that fizzle in it: {holds}"
    );
    let (_, levels) = browser.get("/api/levels").await;
    let level = levels
        .as_array()
        .unwrap()
        .iter()
        .find(|level| level["stem"] == "02-one-attempt")
        .unwrap();
    assert_eq!(
        level["state"]["word"], "finished",
        "a holding defence finishes the level: {level}"
    );
    let (status, body) = browser
        .post("/api/defend", json!({ "level": "01-naive-retry", "guards": [] }))
        .await;
    assert_eq!(
        (status, body["code"].as_str()),
        (StatusCode::UNPROCESSABLE_ENTITY, Some("invalid_value")),
        "{body}"
    );
    let (status, body) = browser
        .post("/api/defend", json!({ "level": "02-one-attempt", "guards": ["moat"] }))
        .await;
    assert!(
        status == StatusCode::UNPROCESSABLE_ENTITY && body["error"].as_str().unwrap().contains("moat"),
        "{body}"
    );
}

/// The presenter's race is part of the room: SIGKILLed after a winner and two 409s, the
/// restarted room shows the same race (number, winner, every try, the money after it),
/// answers a late resolve with the same 409 naming the winner, and numbers the next race on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_race_comes_back_after_sigkill_with_its_winner_and_its_409s() {
    let folder = tempfile::tempdir().unwrap();
    let room = folder.path().join("room.sqlite");
    let mut server = WebServer::start(&room, &[]);
    let presenter = |server: &WebServer, method: reqwest::Method, path: &str, body: Option<Value>| {
        let mut request = Client::new()
            .request(method, format!("{}{path}", server.base))
            .header(AUTHORIZATION, format!("Bearer {}", server.secret));
        if let Some(body) = body {
            request = request.json(&body);
        }
        async move {
            let response = request.send().await.unwrap();
            (response.status(), response.json::<Value>().await.unwrap())
        }
    };
    let (status, race) = presenter(
        &server,
        reqwest::Method::POST,
        "/api/presenter/race",
        Some(json!({ "tape": "04-pause.lost-answer" })),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{race}");
    let number = race["number"].clone();
    let mut browsers = Vec::new();
    for name in ["Ada", "Grace", "Linus", "Barbara"] {
        let mut browser = Browser::new(&server.base);
        assert_eq!(browser.join(name, None).await.0, StatusCode::OK);
        browsers.push(browser);
    }
    let resolve = |status: &str, reason: &str| json!({ "race": number, "status": status, "reason": reason });
    let (status, won) = browsers[0]
        .post("/api/race/resolve", resolve("completed", "billing shows the credit"))
        .await;
    assert_eq!(status, StatusCode::OK, "{won}");
    for (browser, word) in browsers[1..3].iter().zip(["failed", "completed"]) {
        let (status, lost) = browser.post("/api/race/resolve", resolve(word, "me too")).await;
        assert_eq!(status, StatusCode::CONFLICT, "{lost}");
    }
    let (_, before) = presenter(&server, reqwest::Method::GET, "/api/presenter/room", None).await;
    assert_eq!(before["race"]["tries_total"], 3, "{}", before["race"]);
    assert_eq!(before["race"]["winner"]["operator"], "Ada");

    // Each race's ledger folder sits beside the room file; the killed server's is swept when
    // the room opens again, and only the race built again is there.
    let races_folder = folder.path().join("room.sqlite.races");
    let race_folders = || std::fs::read_dir(&races_folder).unwrap().count();
    assert_eq!(race_folders(), 1);
    server.kill();
    assert_eq!(race_folders(), 1, "a SIGKILL leaves the race's folder");
    let server = WebServer::start(&room, &[]);
    assert_eq!(race_folders(), 1, "the old folder swept, the race's new one made");
    for browser in &mut browsers {
        browser.base = server.base.clone();
    }
    let (status, after) = presenter(&server, reqwest::Method::GET, "/api/presenter/room", None).await;
    assert_eq!(status, StatusCode::OK, "{after}");
    // The race as it was; its version counts changes for waiting pages, and starts anew.
    let unversioned = |mut race: Value| {
        race.as_object_mut().unwrap().remove("version");
        race
    };
    assert_eq!(
        unversioned(after["race"].clone()),
        unversioned(before["race"].clone()),
        "the presenter's race is the race it was"
    );
    let (_, seen) = browsers[3].get("/api/race").await;
    assert_eq!(seen["number"], number);
    assert_eq!(seen["winner"]["operator"], "Ada", "{seen}");
    assert_eq!(seen["status_now"], won["status_now"], "{seen}");
    // A late resolve hears the same 409, naming the same winner.
    let (status, late) = browsers[3].post("/api/race/resolve", resolve("failed", "late")).await;
    assert_eq!(status, StatusCode::CONFLICT, "{late}");
    assert_eq!(late["winner"]["operator"], "Ada", "{late}");
    let (_, counted) = presenter(&server, reqwest::Method::GET, "/api/presenter/room", None).await;
    assert_eq!(counted["race"]["tries_total"], 4, "the late try is counted too");
    // The next race takes the next number; closing is kept as well.
    let (_, next) = presenter(
        &server,
        reqwest::Method::POST,
        "/api/presenter/race",
        Some(json!({ "tape": "04-pause.lost-answer" })),
    )
    .await;
    assert_eq!(next["number"], number.as_u64().unwrap() + 1, "{next}");
    assert_eq!(race_folders(), 1, "the replaced race's folder goes with it");
    let (status, _) = presenter(&server, reqwest::Method::DELETE, "/api/presenter/race", None).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(race_folders(), 0, "a closed race leaves no folder");
    server.stop();
    let server = WebServer::start(&room, &[]);
    let (_, closed) = presenter(&server, reqwest::Method::GET, "/api/presenter/room", None).await;
    assert_eq!(closed["race"]["open"], false, "{}", closed["race"]);
    server.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_defender_names_no_heist_of_a_level_the_participant_has_not_won() {
    let (base, _state) = room_in_process(|config| config.unlock_all = true).await;
    let campaign = Campaign::load(&levels_folder()).expect("the campaign loads");
    let level_of_title = |title: &str| -> Vec<String> {
        campaign
            .tapes
            .iter()
            .filter(|tape| tape.tape.title == title)
            .map(|tape| tape.level.level.id.clone())
            .collect()
    };
    // A newcomer with every level open but none won defends each level that is defended:
    // another level's heist is named only by where it comes from; the defended level's own
    // heists (its threat) keep their titles.
    let mut newcomer = Browser::new(&base);
    newcomer.join("Bo", None).await;
    let mut hidden = 0;
    for level in campaign.levels.iter().filter(|loaded| loaded.level.defender.is_some()) {
        let id = &level.level.id;
        let stem = level
            .path
            .file_name()
            .unwrap()
            .to_string_lossy()
            .replace(".level.ron", "");
        let (status, view) = newcomer
            .post("/api/defend", json!({ "level": stem, "guards": [] }))
            .await;
        assert_eq!(status, StatusCode::OK, "{stem}: {view}");
        for heist in view["heists"].as_array().expect("heists") {
            let title = heist["title"].as_str().expect("a title");
            if title == twice_serve::web::HEIST_NOT_WON {
                hidden += 1;
                continue;
            }
            let from = level_of_title(title);
            assert!(
                from.is_empty() || from.contains(id),
                "{stem}: `{title}` (a tape of {from:?}) is shown to someone who has won none of them"
            );
        }
    }
    assert!(hidden > 0, "some defended level knows heists of other levels");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_guard_row_is_not_drawn_as_holding_once_the_run_pays_a_customer_twice() {
    let (base, _state) = room_in_process(|config| config.unlock_all = true).await;
    let mut browser = Browser::new(&base);
    browser.join("Ada", None).await;
    // 03's win: guards act on the way (the timeline writes "guard held" rows as they do), and
    // the run ends paying Ada twice.
    let (_, game) = browser
        .post("/api/game", json!({ "level": "03-model-calls-again" }))
        .await;
    let win = twice_world::level::load_tape(&levels_folder().join("03-model-calls-again.win.tape.ron"))
        .expect("the win tape loads");
    play_moves(&browser, game, &win.tape.actions).await;
    let guard_rows = |view: &Value| -> Vec<Value> {
        view["timeline"]["rows"]
            .as_array()
            .expect("rows")
            .iter()
            .filter(|row| !row["guard"].is_null())
            .cloned()
            .collect()
    };
    let (_, ended) = browser.post("/api/game/run", Value::Null).await;
    assert_eq!(
        ended["end"]["verdict"]["outcome_name"], "paid_twice",
        "{}",
        ended["end"]["verdict"]
    );
    let rows = guard_rows(&ended);
    assert!(!rows.is_empty(), "the run has guard rows: {}", ended["timeline"]);
    for row in &rows {
        assert_eq!(row["guard_holding"], false, "{row}");
        assert_eq!(row["kind"], "guard noted", "{row}");
        assert!(
            row["guard_words"]
                .as_str()
                .is_some_and(|words| words.contains("pays a customer twice")),
            "{row}"
        );
    }
}
