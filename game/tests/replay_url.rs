//! A replay link from the browser's debrief opens the same run to the same verdict in the
//! browser (`POST /api/replay` on a friend's session) and in the game (`twice --replay-url`,
//! here without a window: `MinimalPlugins` and the same message the command line sends).
//! The browser room runs in this process; the runs are the campaign's own tapes, played
//! move by move over HTTP as a participant would.
#![cfg(feature = "operator-api")]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use bevy::prelude::*;
use serde_json::{Value, json};
use twice::replay_url::{OpenReplayLink, ReplayLinkRun};
use twice::session::{Mode, OpenProblem, Session};
use twice_world::level::{self, LoadedTape, TimedAction};
use twice_world::replay_link::ReplayLink;

mod support;
use support::{game, levels_folder};

/// The browser room, in this process (a room in memory).
fn room(runtime: &tokio::runtime::Runtime) -> SocketAddr {
    use twice_serve::web::{self, Catalogue, WebConfig, WebState};
    runtime.block_on(async {
        let catalogue = Catalogue::load(&levels_folder()).expect("the campaign loads");
        let mut config = WebConfig::new().expect("a presenter secret");
        config.unlock_all = true;
        let state = WebState::open(catalogue, &mut config).expect("the room opens");
        let listener = web::bind("127.0.0.1:0".parse().unwrap(), false).await.unwrap();
        let address = listener.local_addr().unwrap();
        tokio::spawn(web::serve_until(listener, state, std::future::pending::<()>()));
        address
    })
}

/// One browser: a cookie and plain HTTP/1.1 requests (one connection each).
struct Browser {
    address: SocketAddr,
    cookie: Option<String>,
}

impl Browser {
    fn join(address: SocketAddr, name: &str) -> Browser {
        let mut browser = Browser { address, cookie: None };
        let (status, head, body) = browser.send("/api/join", &json!({ "name": name }));
        assert_eq!(status, 200, "{body}");
        let cookie = head
            .lines()
            .find_map(|line| {
                let (name, value) = line.split_once(':')?;
                name.eq_ignore_ascii_case("set-cookie").then(|| value.trim().to_owned())
            })
            .expect("the join sets a cookie");
        browser.cookie = Some(cookie.split(';').next().unwrap().to_owned());
        browser
    }

    fn send(&self, path: &str, body: &Value) -> (u16, String, Value) {
        let body = body.to_string();
        let cookie = self
            .cookie
            .as_ref()
            .map_or_else(String::new, |cookie| format!("Cookie: {cookie}\r\n"));
        let mut stream = TcpStream::connect(self.address).expect("connect to the room");
        stream.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
        write!(
            stream,
            "POST {path} HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n{cookie}Connection: close\r\n\r\n{body}",
            self.address,
            body.len()
        )
        .unwrap();
        let mut answer = String::new();
        stream.read_to_string(&mut answer).expect("the room answers");
        let (head, body) = answer.split_once("\r\n\r\n").expect("a head and a body");
        let status = head
            .split(' ')
            .nth(1)
            .and_then(|code| code.parse().ok())
            .expect("a status");
        let body = serde_json::from_str(body).unwrap_or_else(|_| panic!("{path}: not JSON: {body}"));
        (status, head.to_owned(), body)
    }

    fn post(&self, path: &str, body: Value) -> Value {
        let (status, _, answer) = self.send(path, &body);
        assert_eq!(status, 200, "{path} {body}: {answer}");
        answer
    }

    /// Plays `moves` on `level` as the browser's buttons do, to the end; the debrief's link.
    fn play_to_link(&self, level: &str, seed: u64, guards: Option<&str>, moves: &[TimedAction]) -> (Value, String) {
        let mut game = match guards {
            None => self.post("/api/game", json!({ "level": level, "seed": seed })),
            Some(guards) => self.post("/api/game", json!({ "level": level, "guards": guards, "seed": seed })),
        };
        // Opening the level already open carries on where it is (the level list's Play never
        // throws a run away); each tape starts from phase 0.
        if game["phase"].as_u64() != Some(0) {
            game = self.post("/api/game/restart", Value::Null);
        }
        for action in moves {
            while game["phase"].as_u64().unwrap() < u64::from(action.at_phase) {
                let phases = u64::from(action.at_phase) - game["phase"].as_u64().unwrap();
                game = self.post("/api/game/step", json!({ "phases": phases.min(100) }));
            }
            game = self.post(
                "/api/game/play",
                json!({ "play": serde_json::to_value(&action.play).unwrap() }),
            );
        }
        let ended = self.post("/api/game/run", Value::Null);
        let link = ended["replay_link"]
            .as_str()
            .expect("a quiet level offers its link")
            .to_owned();
        (ended, link)
    }
}

/// Opens `link` as `twice --replay-url` does and waits for the run's end (or its refusal).
fn open_in_game(app: &mut App, link: &str) {
    let link = ReplayLink::parse(link).expect("the game reads the browser's link");
    app.world_mut().write_message(OpenReplayLink(link));
    let started = Instant::now();
    loop {
        app.update();
        let world = app.world();
        let done = world.get_resource::<ReplayLinkRun>().is_some_and(|run| run.done);
        let concluded = world
            .get_resource::<Session>()
            .is_some_and(|session| !session.is_busy() && session.conclusion.is_some());
        if done && (concluded || world.resource::<OpenProblem>().0.is_some()) {
            return;
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "the link's run did not end: {:?}; phase {:?}, over {:?}, busy {:?}, concluded {:?}, notice {:?}",
            world.get_resource::<ReplayLinkRun>(),
            world
                .get_resource::<Session>()
                .map(|session| session.simulation().phase()),
            world.get_resource::<Session>().map(Session::is_over),
            world.get_resource::<Session>().map(Session::is_busy),
            world.get_resource::<Session>().map(|session| session.is_concluded()),
            world.get_resource::<Session>().map(|session| session.notice.clone()),
        );
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// The game's verdict in the browser's words: outcome, guards that held, summary, phase.
fn game_verdict(app: &App) -> Value {
    let session = app.world().resource::<Session>();
    assert_eq!(
        session.mode,
        Mode::Sandbox,
        "someone else's run counts for nothing here"
    );
    let verdict = session
        .conclusion
        .as_ref()
        .expect("concluded")
        .verdict
        .as_ref()
        .expect("a verdict");
    let stopped_by: Vec<&str> = verdict.stopped_by.iter().map(|guard| guard.name()).collect();
    json!({
        "outcome_name": verdict.outcome.name(),
        "stopped_by": stopped_by,
        "summary": verdict.summary,
        "phase": session.simulation().phase(),
        "moves": session.simulation().played().len(),
    })
}

fn browser_verdict(view: &Value) -> Value {
    let verdict = &view["end"]["verdict"];
    let stopped_by: Vec<&str> = verdict["stopped_by"]
        .as_array()
        .expect("stopped_by")
        .iter()
        .map(|stop| stop["guard"].as_str().unwrap())
        .collect();
    json!({
        "outcome_name": verdict["outcome_name"],
        "stopped_by": stopped_by,
        "summary": verdict["summary"],
        "phase": view["phase"],
        "moves": view["played"].as_array().expect("played").len(),
    })
}

fn stem(tape: &LoadedTape) -> String {
    let name = tape.level.path.file_name().unwrap().to_str().unwrap();
    name.strip_suffix(twice_world::campaign::LEVEL_SUFFIX)
        .unwrap()
        .to_owned()
}

#[test]
fn a_link_from_the_browsers_debrief_gives_the_same_verdict_in_the_browser_and_in_the_game() {
    let runtime = tokio::runtime::Runtime::new().expect("a runtime");
    let address = room(&runtime);
    let winner = Browser::join(address, "Ada");
    let friend = Browser::join(address, "Grace");
    let tapes = level::files_below(&levels_folder(), twice_world::campaign::TAPE_SUFFIX).expect("the campaign");
    let tapes: Vec<LoadedTape> = tapes
        .iter()
        .map(|path| level::load_tape(path).expect("a campaign tape loads"))
        .collect();
    // A campaign win, a campaign loss and a sandbox tape with its own guards, where there are.
    let mut chosen: Vec<&LoadedTape> = Vec::new();
    let win = tapes.iter().find(|tape| {
        tape.tape.guards.is_none() && tape.tape.expect.verdict == tape.level.level.goal && !tape.tape.actions.is_empty()
    });
    let loss = tapes.iter().find(|tape| {
        tape.tape.guards.is_none() && tape.tape.expect.verdict != tape.level.level.goal && !tape.tape.actions.is_empty()
    });
    let guarded = tapes.iter().find(|tape| tape.tape.guards.is_some());
    chosen.extend(win.into_iter().chain(loss).chain(guarded));
    assert!(chosen.len() >= 2, "the campaign has a winning and a losing tape");
    let data = tempfile::tempdir().expect("temp dir");
    let mut app = game(data.path());
    let mut outcomes = std::collections::BTreeSet::new();
    for tape in chosen {
        let stem = stem(tape);
        let guards = tape.tape.guards.map(|_| {
            ReplayLink {
                level: stem.clone(),
                seed: 1,
                guards: tape.tape.guards,
                moves: Vec::new(),
            }
            .to_fragment()
            .split('.')
            .nth(3)
            .unwrap()
            .to_owned()
        });
        let (ended, link) = winner.play_to_link(&stem, tape.tape.seed, guards.as_deref(), &tape.tape.actions);
        let url = format!("http://elsewhere:7880/#{link}");
        let replayed = friend.post("/api/replay", json!({ "link": url }));
        assert_eq!(
            browser_verdict(&replayed),
            browser_verdict(&ended),
            "{stem}: the friend's browser"
        );
        open_in_game(&mut app, &url);
        assert_eq!(
            app.world().resource::<OpenProblem>().0,
            None,
            "{stem}: the game opened the link"
        );
        assert_eq!(
            game_verdict(&app),
            browser_verdict(&replayed),
            "{stem}: the game and the browser"
        );
        assert_eq!(
            game_verdict(&app)["outcome_name"],
            tape.tape.expect.verdict.name(),
            "{stem}: the tape's own verdict"
        );
        outcomes.insert(tape.tape.expect.verdict.name());
        // Opening someone else's run finishes nothing here.
        let progress = app.world().resource::<twice::progress::Progress>();
        assert!(
            !progress.is_finished(&tape.level.level.id),
            "{stem}: a shared run is not the player's win"
        );
    }
    assert!(outcomes.len() >= 2, "a win and a loss were compared: {outcomes:?}");
}

#[test]
fn a_link_whose_move_comes_after_the_level_went_quiet_is_refused_in_both_with_the_move_named() {
    let runtime = tokio::runtime::Runtime::new().expect("a runtime");
    let address = room(&runtime);
    let friend = Browser::join(address, "Grace");
    let tape = level::files_below(&levels_folder(), twice_world::campaign::TAPE_SUFFIX)
        .expect("the campaign")
        .iter()
        .map(|path| level::load_tape(path).expect("a tape loads"))
        .find(|tape| tape.tape.guards.is_none() && !tape.tape.actions.is_empty())
        .expect("a tape with moves");
    let mut late = tape.tape.actions[..1].to_vec();
    late[0].at_phase = tape.level.level.max_phases + 1_000;
    let link = ReplayLink {
        level: stem(&tape),
        seed: tape.tape.seed,
        guards: None,
        moves: late,
    }
    .to_fragment();
    let (status, _, body) = friend.send("/api/replay", &json!({ "link": link }));
    assert_eq!(status, 422, "{body}");
    assert!(body["error"].as_str().unwrap().contains("went quiet"), "{body}");
    let data = tempfile::tempdir().expect("temp dir");
    let mut app = game(data.path());
    open_in_game(&mut app, &link);
    let problem = app.world().resource::<OpenProblem>().0.clone().expect("refused");
    assert!(
        problem.contains("went quiet") && problem.contains(&format!("phase {}", tape.level.level.max_phases + 1_000)),
        "{problem}"
    );
}
