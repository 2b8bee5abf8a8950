//! The game without a window: `MinimalPlugins`, the screens' state machine and the session.
//! Moves go in as the same `Intent` messages the UI sends, and the verdicts must match the
//! campaign's tapes.

use std::path::PathBuf;
use std::time::{Duration, Instant};
use twice_world::cards::{CrashWorker, LoseRequest, LoseResponse, OperatorResolve, SlowResponse};

use bevy::prelude::*;
use twice::progress::Progress;
use twice::screens::Screen;
use twice::session::{Intent, Leaving, Mode, Session};
use twice_world::checker::Outcome;
use twice_world::ledger::Ledger;
use twice_world::level::{self, LoadedTape, Play};

#[path = "headless/numbers.rs"]
mod numbers;
mod support;
#[path = "headless/take_home.rs"]
mod take_home;
#[path = "headless/window.rs"]
mod window;
use support::{game, game_with, levels_folder};

/// The campaign's tape whose file name ends with `suffix` (levels are renumbered as the campaign grows).
fn tape(suffix: &str) -> LoadedTape {
    let tapes = level::files_below(&levels_folder(), suffix).expect("the levels folder");
    let path = tapes
        .into_iter()
        .find(|path| path.to_string_lossy().ends_with(suffix))
        .unwrap_or_else(|| panic!("no tape *{suffix} in {}", levels_folder().display()));
    level::load_tape(&path).expect("the tape loads")
}

fn send(app: &mut App, intent: Intent) {
    app.world_mut().write_message(intent);
    app.update();
}

fn session(app: &App) -> &Session {
    app.world().get_resource::<Session>().expect("a level is open")
}

fn screen(app: &App) -> Screen {
    *app.world().resource::<State<Screen>>().get()
}

/// Updates until `done`, giving background jobs time to finish.
fn update_until(app: &mut App, what: &str, mut done: impl FnMut(&App) -> bool) {
    let started = Instant::now();
    while !done(app) {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "timed out waiting for {what}"
        );
        std::thread::sleep(Duration::from_millis(2));
        app.update();
    }
}

fn phase(app: &App) -> u32 {
    session(app).simulation().phase()
}

/// Opens the tape's level as the player would, plays its cards at its phases one step at a
/// time, and runs it to its conclusion.
fn play_like_a_player(app: &mut App, loaded: &LoadedTape) {
    play_moves_then_run(app, loaded);
    update_until(app, "the end of the level", |app| session(app).conclusion.is_some());
}

/// Opens the tape's level as the player would, plays its cards at its phases one step at a
/// time, and runs on until nothing is left to happen (the level may still wait for a move).
fn play_moves_then_run(app: &mut App, loaded: &LoadedTape) {
    let mode = if loaded.tape.guards.is_some() {
        Mode::Sandbox
    } else {
        Mode::Campaign
    };
    send(
        app,
        Intent::OpenLevel {
            path: loaded.level.path.clone(),
            mode,
            guards: loaded.tape.guards,
            seed: loaded.tape.seed,
            at_phase: None,
        },
    );
    app.update();
    assert_eq!(screen(app), Screen::Level);
    assert_eq!(phase(app), 0);
    for action in &loaded.tape.actions {
        while phase(app) < action.at_phase && !session(app).is_over() {
            send(app, Intent::Step);
        }
        assert_eq!(phase(app), action.at_phase, "reached the tape's phase");
        send(app, Intent::Play(action.play.clone()));
        let played = session(app).simulation().played().to_vec();
        assert_eq!(
            played.last().map(|played| &played.play),
            Some(&action.play),
            "{:?}",
            session(app).notice
        );
    }
    send(app, Intent::RunToEnd);
    update_until(app, "the level to go quiet", |app| {
        !session(app).is_busy() && session(app).is_over()
    });
}

fn assert_verdict_matches(app: &App, loaded: &LoadedTape) {
    let conclusion = session(app).conclusion.clone().expect("concluded");
    let verdict = conclusion.verdict.expect("the checker judged");
    assert_eq!(verdict.outcome, loaded.tape.expect.verdict, "{}", verdict.summary);
    assert_eq!(verdict.stopped_by, loaded.tape.expect.stopped_by, "{}", verdict.summary);
}

#[test]
fn crash_replay_pays_twice_when_the_crash_card_is_played_like_the_tape() {
    let data = tempfile::tempdir().expect("temp dir");
    let loaded = tape("crash-replay.win.tape.ron");
    let mut app = game(data.path());
    play_like_a_player(&mut app, &loaded);
    assert_verdict_matches(&app, &loaded);
    assert_eq!(loaded.tape.expect.verdict, Outcome::PaidTwice);
    // The heist worked, so the campaign counts the level as finished, on disk too.
    let id = &loaded.level.level.id;
    assert!(app.world().resource::<Progress>().is_finished(id));
    assert!(Progress::load(&data.path().join("progress.ron")).is_finished(id));
    send(&mut app, Intent::Debrief);
    app.update();
    assert_eq!(screen(&app), Screen::Debrief);
}

#[test]
fn the_ledger_holds_when_the_worker_dies_mid_call() {
    let data = tempfile::tempdir().expect("temp dir");
    let loaded = tape("ledger-holds.mid-call.tape.ron");
    let mut app = game(data.path());
    play_like_a_player(&mut app, &loaded);
    assert_verdict_matches(&app, &loaded);
    assert_eq!(loaded.tape.expect.verdict, Outcome::PaidOnce);
    // The ledger panel's rows are the SQLite file's rows: another connection sees the same.
    let session = session(&app);
    let path = session.ledger_path().expect("a ledger file").to_path_buf();
    let other = Ledger::open(&path).expect("the file opens");
    let from_file = other.all_records().expect("rows");
    assert!(!from_file.is_empty());
    assert_eq!(from_file.len(), session.ledger().rows().len());
    for record in &from_file {
        assert_eq!(session.ledger().row(record.key.as_str()), Some(record));
    }
    assert_eq!(
        session.ledger().unknown().count(),
        from_file.iter().filter(|record| record.status.is_unknown()).count(),
        "the operator's queue lists every unknown call"
    );
}

#[test]
fn rewinding_re_simulates_the_same_history_into_a_new_ledger_file() {
    let data = tempfile::tempdir().expect("temp dir");
    let loaded = tape("crash-replay.win.tape.ron");
    let mut app = game(data.path());
    send(
        &mut app,
        Intent::OpenLevel {
            path: loaded.level.path.clone(),
            mode: Mode::Campaign,
            guards: None,
            seed: 1,
            at_phase: None,
        },
    );
    app.update();
    for _ in 0..3 {
        send(&mut app, Intent::Step);
    }
    send(
        &mut app,
        Intent::Play(Play::CrashWorker(CrashWorker {
            worker: Some(1),
            in_phase: None,
        })),
    );
    for _ in 0..5 {
        send(&mut app, Intent::Step);
    }
    let timeline = session(&app).simulation().timeline().to_vec();
    let first_file = session(&app).ledger_path().expect("file").to_path_buf();
    assert!(first_file.exists());

    // Back to phase 6: the crash at phase 3 is kept, the history is the same prefix.
    send(&mut app, Intent::Rewind { phase: 6 });
    update_until(&mut app, "the rewind", |app| !session(app).is_busy());
    assert_eq!(phase(&app), 6);
    let again = session(&app).simulation().timeline().to_vec();
    assert!(
        !again.is_empty() && timeline.starts_with(&again),
        "the same history, cut at phase 6"
    );
    let second_file = session(&app).ledger_path().expect("file").to_path_buf();
    assert_ne!(first_file, second_file, "a new ledger file each time");
    assert!(!first_file.exists(), "the old scratch file is deleted");

    // Back to phase 2: the crash (played at phase 3) is undone and its card returns to the hand.
    send(&mut app, Intent::Rewind { phase: 2 });
    update_until(&mut app, "the rewind", |app| !session(app).is_busy());
    assert_eq!(phase(&app), 2);
    assert!(session(&app).simulation().played().is_empty());
    let hand = session(&app).simulation().hand().clone();
    assert_eq!(
        hand.values().sum::<u32>(),
        loaded.level.level.cards.iter().map(|card| card.count).sum::<u32>()
    );

    // A rewind to the future is refused and changes nothing.
    send(&mut app, Intent::Rewind { phase: 50 });
    assert_eq!(phase(&app), 2);
    assert!(session(&app).notice.as_ref().is_some_and(|notice| notice.problem));

    // Leaving the level deletes its scratch ledger.
    let file = session(&app).ledger_path().expect("file").to_path_buf();
    send(&mut app, Intent::Leave(Leaving::Back));
    app.update();
    assert!(app.world().get_resource::<Session>().is_none());
    assert!(!file.exists());
    assert_eq!(screen(&app), Screen::LevelSelect);
}

#[test]
fn a_saved_tape_replays_to_the_verdict_it_expects() {
    let data = tempfile::tempdir().expect("temp dir");
    let loaded = tape("crash-replay.win.tape.ron");
    let mut app = game(data.path());
    play_like_a_player(&mut app, &loaded);
    let saved = data.path().join("tapes/mine.tape.ron");
    send(&mut app, Intent::SaveTape { path: saved.clone() });
    update_until(&mut app, "the save", |app| !session(app).is_busy());
    let reloaded = level::load_tape(&saved).expect("the saved tape loads");
    assert_eq!(reloaded.tape.actions, loaded.tape.actions);
    assert_eq!(reloaded.tape.expect, loaded.tape.expect);
    assert_eq!(reloaded.level.level.id, loaded.level.level.id);
    // A name that `twice-sim replay` would not find is refused.
    send(
        &mut app,
        Intent::SaveTape {
            path: data.path().join("mine.ron"),
        },
    );
    assert!(
        session(&app)
            .notice
            .as_ref()
            .is_some_and(|notice| notice.problem && notice.text.contains(".tape.ron"))
    );

    // The replay viewer opens it and reaches the same verdict on its own.
    send(
        &mut app,
        Intent::OpenTape {
            path: saved,
            at_phase: None,
        },
    );
    app.update();
    assert_eq!(session(&app).mode, Mode::Replay);
    send(&mut app, Intent::Play(Play::LoseRequest(LoseRequest { key: None })));
    assert!(
        session(&app).simulation().played().is_empty(),
        "a replay takes no new moves"
    );
    send(&mut app, Intent::RunToEnd);
    update_until(&mut app, "the replay's end", |app| session(app).conclusion.is_some());
    assert_eq!(
        session(&app)
            .conclusion
            .as_ref()
            .and_then(|conclusion| conclusion.as_expected),
        Some(true)
    );
}

#[test]
fn bad_files_are_reported_not_fatal() {
    let data = tempfile::tempdir().expect("temp dir");
    let mut app = game(data.path());
    let broken = data.path().join("broken.tape.ron");
    std::fs::write(
        &broken,
        "(level: \"nowhere.level.ron\", seed: 1, expect: (verdict: paid_once))",
    )
    .expect("write");
    send(
        &mut app,
        Intent::OpenTape {
            path: broken,
            at_phase: None,
        },
    );
    app.update();
    let problem = app
        .world()
        .resource::<twice::session::OpenProblem>()
        .0
        .clone()
        .expect("reported");
    assert!(problem.contains("nowhere.level.ron"), "{problem}");
    assert!(app.world().get_resource::<Session>().is_none());
    assert_eq!(screen(&app), Screen::Title);
}

#[cfg(feature = "operator-api")]
/// One HTTP/1.1 exchange over a plain socket: the test needs no HTTP client crate.
fn http(address: std::net::SocketAddr, method: &str, path: &str, token: &str, body: Option<&str>) -> (u16, String) {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(address).expect("the operator API accepts");
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .expect("a timeout");
    let body = body.unwrap_or("");
    write!(
        stream,
        "{method} {path} HTTP/1.1\r\nHost: {address}\r\nAuthorization: Bearer {token}\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .expect("the request is sent");
    let mut answer = String::new();
    stream.read_to_string(&mut answer).expect("an answer");
    let status = answer
        .split_whitespace()
        .nth(1)
        .and_then(|code| code.parse().ok())
        .unwrap_or_else(|| panic!("not HTTP: {answer}"));
    let body = answer.split_once("\r\n\r\n").map_or("", |(_, body)| body).to_owned();
    (status, body)
}

#[cfg(feature = "operator-api")]
/// Starts the game's operator API on a free loopback port; returns where, and the token.
fn start_operator_api(app: &mut App) -> (std::net::SocketAddr, String) {
    let operator_api =
        twice::operator_api::OperatorApi::start("127.0.0.1:0".parse().unwrap(), false, None).expect("the API starts");
    let address = operator_api.address();
    let token = operator_api.generated_token().expect("a token was made").to_owned();
    app.insert_resource(operator_api);
    (address, token)
}

#[cfg(feature = "operator-api")]
/// Level 18's slow-and-honest tape played with its operator move left out, the operator API
/// started: the slowed answer leaves r1:c1 unknown and r1 paused, and billing (which honours
/// keys) holds the credit, for an operator over HTTP to settle or undo.
fn late_answer_left_to_http(data: &std::path::Path) -> (App, std::net::SocketAddr, String) {
    let mut loaded = tape("18-late-answer.slow-and-honest.tape.ron");
    loaded
        .tape
        .actions
        .retain(|action| !matches!(action.play, Play::OperatorResolve(OperatorResolve { .. })));
    let mut app = game(data);
    let (address, token) = start_operator_api(&mut app);
    play_moves_then_run(&mut app, &loaded);
    app.update();
    (app, address, token)
}

#[cfg(feature = "operator-api")]
#[test]
fn without_a_level_the_operator_api_checks_the_token_then_answers_503_no_level_open() {
    let data = tempfile::tempdir().expect("temp dir");
    let mut app = game(data.path());
    let (address, token) = start_operator_api(&mut app);
    app.update();
    let (status, body) = http(address, "GET", "/v1/tool-executions", "not-the-token", None);
    assert_eq!(status, 401, "{body}");
    assert!(body.contains(r#""code":"unauthorized""#), "{body}");
    let (status, body) = http(address, "GET", "/v1/tool-executions", &token, None);
    assert_eq!(status, 503, "{body}");
    assert!(body.contains(r#""code":"no_level_open""#), "{body}");
    // Opening a level serves its ledger, and leaving it goes back to the 503.
    let loaded = tape("naive-retry.win.tape.ron");
    send(
        &mut app,
        Intent::OpenLevel {
            path: loaded.level.path.clone(),
            mode: Mode::Campaign,
            guards: None,
            seed: 1,
            at_phase: None,
        },
    );
    update_until(&mut app, "the level's ledger to be served", |app| {
        app.world()
            .resource::<twice::operator_api::OperatorApi>()
            .serving()
            .is_some()
    });
    let (status, body) = http(address, "GET", "/v1/tool-executions", &token, None);
    assert_eq!(status, 200, "{body}");
    send(&mut app, Intent::Leave(Leaving::Back));
    update_until(&mut app, "the ledger to be let go", |app| {
        app.world()
            .resource::<twice::operator_api::OperatorApi>()
            .serving()
            .is_none()
    });
    let (status, body) = http(address, "GET", "/v1/tool-executions", &token, None);
    assert_eq!(status, 503, "{body}");
}

/// A quiet level wakes on a decision made over HTTP; runs it to its end and returns the verdict.
#[cfg(feature = "operator-api")]
fn wake_and_run_to_the_end(app: &mut App) -> twice_world::checker::Verdict {
    update_until(app, "the decision made over HTTP to be noticed", |app| {
        !session(app).is_over()
    });
    send(app, Intent::RunToEnd);
    update_until(app, "the end of the level", |app| session(app).conclusion.is_some());
    session(app)
        .conclusion
        .clone()
        .expect("concluded")
        .verdict
        .expect("judged")
}

#[cfg(feature = "operator-api")]
#[test]
fn an_operator_over_http_settles_the_games_unknown_call_and_the_run_goes_on() {
    use twice::operator_api::OperatorApi;
    let data = tempfile::tempdir().expect("temp dir");
    let loaded = tape("04-pause.lost-answer.tape.ron");
    let mut app = game(data.path());
    let (address, token) = start_operator_api(&mut app);
    app.update();

    // No level open: a clear 503, not a hang.
    let (status, body) = http(address, "GET", "/v1/tool-executions", &token, None);
    assert_eq!(status, 503, "{body}");
    assert!(body.contains("no level is open"), "{body}");

    // The lost answer leaves the call indeterminate and the run paused.
    play_like_a_player(&mut app, &loaded);
    let ledger_path = session(&app).ledger_path().expect("a ledger file").to_path_buf();
    app.update();
    assert_eq!(
        app.world().resource::<OperatorApi>().serving(),
        Some(ledger_path.as_path())
    );
    let (status, body) = http(address, "GET", "/v1/tool-executions?status=indeterminate", &token, None);
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("r1:c1"), "{body}");
    let (status, body) = http(address, "GET", "/v1/tool-executions", "not-the-token", None);
    assert_eq!(status, 401, "{body}");

    // The operator finds the credit in billing and says so; the parked run wakes and finishes.
    let (status, body) = http(
        address,
        "POST",
        "/v1/tool-executions/r1:c1/resolve",
        &token,
        Some(
            r#"{"status":"completed","reason":"billing shows cr_0001","expected_status":"indeterminate","result":{"credit_id":"cr_0001"}}"#,
        ),
    );
    assert_eq!(status, 200, "{body}");
    assert!(
        body.contains("workshop"),
        "the operator id comes from the token: {body}"
    );
    let verdict = wake_and_run_to_the_end(&mut app);
    assert_eq!(verdict.outcome, Outcome::PaidOnce, "{}", verdict.summary);
    let record = session(&app).ledger().row("r1:c1").expect("the row").clone();
    assert_eq!(record.status.name(), "completed");

    // This level's tool has no compensation: refused before billing is asked.
    let (status, body) = http(
        address,
        "POST",
        "/v1/tool-executions/r1:c1/compensate",
        &token,
        Some(r#"{"reason":"take it back"}"#),
    );
    assert_eq!(status, 422, "{body}");

    // A second operator acting on the old state loses: compare-and-set.
    let (status, body) = http(
        address,
        "POST",
        "/v1/tool-executions/r1:c1/resolve",
        &token,
        Some(r#"{"status":"failed","reason":"late","expected_status":"indeterminate"}"#),
    );
    assert_eq!(status, 409, "{body}");

    // Rewinding would drop the decision made over HTTP (it is not a move): the game says so
    // on screen and asks first; the same rewind again goes ahead.
    let before = phase(&app);
    send(&mut app, Intent::Rewind { phase: 2 });
    let notice = session(&app).notice.clone().expect("warned");
    assert!(notice.problem && notice.text.contains("HTTP API"), "{}", notice.text);
    assert_eq!(phase(&app), before, "nothing was rewound yet");
    assert!(!session(&app).is_busy());
    send(&mut app, Intent::Rewind { phase: 2 });
    update_until(&mut app, "the rewind", |app| !session(app).is_busy() && phase(app) == 2);
    assert_eq!(session(&app).outside_decisions().expect("the ledger reads"), 0);
}

#[cfg(feature = "operator-api")]
/// An HTTP exchange the game must take part in (a compensation asks the level's billing,
/// which the frame loop answers): the request runs on a thread while the app updates.
fn http_while_updating(
    app: &mut App,
    address: std::net::SocketAddr,
    path: &str,
    token: &str,
    body: &str,
) -> (u16, String) {
    let request = (path.to_owned(), token.to_owned(), body.to_owned());
    let exchange = std::thread::spawn(move || {
        let (path, token, body) = request;
        http(address, "POST", &path, &token, Some(&body))
    });
    let started = Instant::now();
    while !exchange.is_finished() {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "timed out waiting for {path}"
        );
        std::thread::sleep(Duration::from_millis(2));
        app.update();
    }
    exchange.join().expect("the request thread")
}

#[cfg(feature = "operator-api")]
#[test]
fn an_operator_over_http_compensates_in_the_games_billing_once() {
    let data = tempfile::tempdir().expect("temp dir");
    let (mut app, address, token) = late_answer_left_to_http(data.path());
    assert_eq!(
        session(&app).ledger().row("r1:c1").expect("the row").status.name(),
        "indeterminate"
    );
    // The player still holds the operator card that could settle it: the level waits.
    assert!(session(&app).conclusion.is_none());
    let call = session(&app).recipe.level.level.runs[0].calls[0].clone();
    let account = call.account;
    let paid = session(&app)
        .simulation()
        .billing()
        .balance(&account)
        .expect("the account");
    assert!(
        session(&app).simulation().billing().find_credit("r1:c1").is_some(),
        "billing paid the slowed credit"
    );
    let voided = Some(paid - i64::from(call.amount_cents));

    let compensate = "/v1/tool-executions/r1:c1/compensate";
    let (status, body) = http_while_updating(
        &mut app,
        address,
        compensate,
        &token,
        r#"{"reason":"the customer cancelled the order"}"#,
    );
    assert_eq!(status, 200, "{body}");
    assert!(body.contains(r#""status":"compensated""#), "{body}");
    assert!(body.contains("billing voided credit cr_0001"), "{body}");
    assert!(
        body.contains("workshop"),
        "the operator id comes from the token: {body}"
    );
    assert_eq!(
        session(&app).simulation().billing().balance(&account),
        voided,
        "the credit is voided in the level's billing"
    );

    // The paused run wakes and hears the truth; the level ends again and is judged again.
    let verdict = wake_and_run_to_the_end(&mut app);
    assert!(verdict.violations.is_empty(), "{:?}", verdict.violations);

    // Asked twice, done once: a second compensation is refused and billing moves nothing.
    // (The woken run went on as its model decides after hearing its credit was taken back.)
    let balance_before = session(&app).simulation().billing().balance(&account);
    let (status, body) = http_while_updating(&mut app, address, compensate, &token, r#"{"reason":"to be sure"}"#);
    assert_eq!(status, 409, "{body}");
    assert!(body.contains("already compensated"), "{body}");
    assert_eq!(session(&app).simulation().billing().balance(&account), balance_before);
    let reversals = session(&app)
        .simulation()
        .billing()
        .entries
        .iter()
        .filter(|entry| entry.reverses.is_some())
        .count();
    assert_eq!(reversals, 1);
}

/// Decisions made over HTTP are counted from the ledger's history, once each, however the
/// game came to notice them: a compensation that also wakes the paused run is one decision
/// (counted per poll that woke workers, it was two), and a second compensation makes two. The
/// rewind warning says so.
#[cfg(feature = "operator-api")]
#[test]
fn decisions_made_over_http_are_counted_once_each_from_the_ledger() {
    let data = tempfile::tempdir().expect("temp dir");
    let (mut app, address, token) = late_answer_left_to_http(data.path());
    let decisions = |app: &App| session(app).outside_decisions().expect("the ledger reads");
    assert_eq!(decisions(&app), 0, "no decision made over HTTP yet");

    // The first: the paused call compensated. The run wakes, hears it, and asks again.
    let (status, body) = http_while_updating(
        &mut app,
        address,
        "/v1/tool-executions/r1:c1/compensate",
        &token,
        r#"{"reason":"the customer cancelled the order"}"#,
    );
    assert_eq!(status, 200, "{body}");
    wake_and_run_to_the_end(&mut app);
    assert_eq!(decisions(&app), 1, "one compensation, one decision");

    // The second: the refund Penny issued again, compensated too.
    let again = session(&app)
        .ledger()
        .rows()
        .iter()
        .find(|row| row.key.as_str() != "r1:c1" && row.tool.as_str() == "issue_credit")
        .map(|row| row.key.to_string())
        .expect("Penny issued the refund again after hearing it was taken back");
    let (status, body) = http_while_updating(
        &mut app,
        address,
        &format!("/v1/tool-executions/{again}/compensate"),
        &token,
        r#"{"reason":"the order was cancelled for good"}"#,
    );
    assert_eq!(status, 200, "{body}");
    for _ in 0..3 {
        app.update();
    }
    assert_eq!(decisions(&app), 2, "two compensations, two decisions");

    send(&mut app, Intent::Rewind { phase: 2 });
    let notice = session(&app).notice.clone().expect("warned");
    assert!(
        notice.problem
            && notice
                .text
                .starts_with("Rewinding undoes 2 decisions made over the HTTP API"),
        "{}",
        notice.text
    );
}

#[test]
fn the_explorer_finds_the_first_levels_heist_and_opens_it_as_a_tape() {
    use twice::explorer::{ExplorerIntent, ExplorerRun};
    let data = tempfile::tempdir().expect("temp dir");
    let mut app = game(data.path());
    let level = level::load_level(&levels_folder().join("01-naive-retry.level.ron")).expect("level 1 loads");
    let guards = level.level.guards;
    app.world_mut().write_message(ExplorerIntent::Start {
        level: Box::new(level),
        guards,
        seed: 7,
    });
    app.update();
    assert!(app.world().resource::<ExplorerRun>().is_running());
    update_until(&mut app, "the explorer", |app| {
        !app.world().resource::<ExplorerRun>().is_running()
    });
    let report = app.world().resource::<ExplorerRun>().last.clone().expect("a report");
    assert!(
        !report.problem && report.text.starts_with("Found a heist"),
        "{}",
        report.text
    );
    // The find was written as a tape and opened in the replay viewer, where it pays twice.
    update_until(&mut app, "the tape to open", |app| {
        screen(app) == Screen::Level
            && app
                .world()
                .get_resource::<Session>()
                .is_some_and(|session| !session.is_busy())
    });
    assert_eq!(screen(&app), Screen::Level);
    assert_eq!(session(&app).mode, Mode::Replay);
    let source = session(&app).recipe.tape.clone().expect("a tape is playing");
    assert!(
        source.path.starts_with(data.path().join("tapes")),
        "{}",
        source.path.display()
    );
    assert_eq!(source.tape.expect.verdict, Outcome::PaidTwice);
    let reloaded = level::load_tape(&source.path).expect("the written tape loads like any other");
    assert_eq!(reloaded.tape.actions, source.tape.actions);
    send(&mut app, Intent::RunToEnd);
    update_until(&mut app, "the end of the level", |app| {
        session(app).conclusion.is_some()
    });
    assert_verdict_matches(&app, &reloaded);
}

/// Opens a level of the campaign by its file name, at phase 0.
fn open_campaign_level(app: &mut App, file: &str) {
    send(
        app,
        Intent::OpenLevel {
            path: levels_folder().join(file),
            mode: Mode::Campaign,
            guards: None,
            seed: 1,
            at_phase: None,
        },
    );
    app.update();
    assert_eq!(screen(app), Screen::Level);
}

/// The level screen's inputs as its system hands them over, read from `app`'s resources: one
/// place, so a new input is added here and not in every test that draws the level.
fn level_inputs(app: &App) -> twice::screens::level::LevelInputs<'_> {
    let world = app.world();
    twice::screens::level::LevelInputs {
        session: world.resource::<Session>(),
        paths: world.resource::<twice::paths::GamePaths>(),
        progress: world.resource::<Progress>(),
        campaign: world.resource::<twice::campaign::Campaign>(),
        guide: world.resource::<twice::guide::Guide>(),
        prediction: world.resource::<twice::progress::prediction::Prediction>(),
        #[cfg(feature = "operator-api")]
        operator_api: None,
    }
}

fn step_to(app: &mut App, target: u32) {
    while phase(app) < target && !session(app).is_over() {
        send(app, Intent::Step);
    }
    assert_eq!(phase(app), target);
}

fn debrief_of(app: &App) -> twice_world::debrief::Debrief {
    session(app)
        .conclusion
        .clone()
        .expect("concluded")
        .debrief
        .expect("a debrief")
}

#[test]
fn a_loss_debrief_diagnoses_the_run_and_never_tells_the_win_story() {
    let data = tempfile::tempdir().expect("temp dir");
    let loaded = tape("01-naive-retry.lost-request.tape.ron");
    let mut app = game(data.path());
    play_like_a_player(&mut app, &loaded);
    assert_verdict_matches(&app, &loaded);
    let told = debrief_of(&app);
    assert_eq!(told.standing, twice_world::debrief::Standing::HeistFailed);
    assert!(told.story.is_empty(), "a loss shows no story: {}", told.story);
    assert!(!told.diagnosis.is_empty(), "a loss says what happened to the money");
    let lesson = &loaded.level.level.lesson.text;
    assert!(
        told.diagnosis
            .iter()
            .all(|sentence| !sentence.contains(lesson.as_str())),
        "{:?}",
        told.diagnosis
    );
    assert!(told.headline.starts_with("The heist failed"), "{}", told.headline);
    assert!(told.par.is_none(), "par is shown after a win");
    let conclusion = session(&app).conclusion.clone().expect("concluded");
    assert!(!conclusion.finished);
    assert!(!app.world().resource::<Progress>().is_finished(&loaded.level.level.id));
}

#[test]
fn a_win_is_measured_against_par_and_kept_as_the_best() {
    let data = tempfile::tempdir().expect("temp dir");
    let loaded = tape("01-naive-retry.win.tape.ron");
    let mut app = game(data.path());
    play_like_a_player(&mut app, &loaded);
    assert_verdict_matches(&app, &loaded);
    let told = debrief_of(&app);
    assert_eq!(told.standing, twice_world::debrief::Standing::HeistWorked);
    assert_eq!(told.story, twice_world::debrief::plain(&loaded.level.level.lesson.text));
    let par = told.par.expect("a win in a level with a par is measured against it");
    let level_par = loaded.level.level.par.expect("level 01 has a par");
    assert_eq!((par.par_cards, par.par_phases), (level_par.cards, level_par.phases));
    assert_eq!(par.cards as usize, loaded.tape.actions.len());
    let id = &loaded.level.level.id;
    let best = Progress::load(&data.path().join("progress.ron"))
        .file
        .best
        .get(id)
        .copied();
    assert_eq!(
        best.map(|best| (best.cards, best.phases)),
        Some((par.cards, par.phases)),
        "the best win is saved"
    );
}

#[test]
fn no_level_is_finished_without_a_move() {
    let data = tempfile::tempdir().expect("temp dir");
    let mut app = game(data.path());
    for file in ["01-naive-retry.level.ron", "02-one-attempt.level.ron"] {
        open_campaign_level(&mut app, file);
        send(&mut app, Intent::RunToEnd);
        update_until(&mut app, "the end of the level", |app| {
            session(app).conclusion.is_some()
        });
        let conclusion = session(&app).conclusion.clone().expect("concluded");
        assert!(!conclusion.finished, "{file} left alone is not finished");
        let id = session(&app).recipe.level.level.id.clone();
        assert!(!app.world().resource::<Progress>().is_finished(&id), "{file}");
    }
    // Spending the whole hand of an unbeatable level is no choice that can fail: the runtime
    // held, the debrief says to defend it, and the level stays unfinished (its defence
    // finishes it: `defender_mode_checks_the_players_guards_and_records_a_defence_that_holds`).
    let loaded = tape("02-one-attempt.whole-hand.tape.ron");
    play_like_a_player(&mut app, &loaded);
    let told = debrief_of(&app);
    assert_eq!(told.standing, twice_world::debrief::Standing::HeldAgainstTheWholeHand);
    assert!(
        told.diagnosis.iter().any(|sentence| sentence.contains("defend it")),
        "{:?}",
        told.diagnosis
    );
    assert!(!session(&app).conclusion.clone().expect("concluded").finished);
    assert!(!app.world().resource::<Progress>().is_finished(&loaded.level.level.id));
}

#[test]
fn a_level_does_not_end_while_an_operator_move_can_still_change_it() {
    let data = tempfile::tempdir().expect("temp dir");
    let mut app = game(data.path());
    open_campaign_level(&mut app, "09-settle-it-yourself.level.ron");
    step_to(&mut app, 5);
    send(
        &mut app,
        Intent::Play(Play::LoseResponse(LoseResponse {
            key: Some("r1:c1".into()),
        })),
    );
    assert_eq!(
        session(&app).simulation().played().len(),
        1,
        "{:?}",
        session(&app).notice
    );
    send(&mut app, Intent::RunToEnd);
    update_until(&mut app, "the run to park", |app| {
        !session(app).is_busy() && session(app).is_over()
    });
    for _ in 0..5 {
        app.update();
    }
    assert!(
        session(&app).conclusion.is_none(),
        "the run is parked for an operator and the player holds one: not over"
    );
    assert!(!session(&app).is_concluded());
    send(&mut app, Intent::Debrief);
    assert_eq!(
        screen(&app),
        Screen::Level,
        "no debrief while the console can still act"
    );
    let notice = session(&app).notice.clone().expect("told why");
    assert!(notice.text.contains("operator"), "{}", notice.text);
    send(
        &mut app,
        Intent::Play(Play::OperatorResolve(OperatorResolve {
            key: "r1:c1".into(),
            status: twice_world::runtime::rules::Status::Failed,
            reason: "billing shows nothing".into(),
            operator: "op-crew".into(),
            expected_status: Some(twice_world::runtime::rules::Status::Indeterminate),
        })),
    );
    assert_eq!(
        session(&app).simulation().played().len(),
        2,
        "{:?}",
        session(&app).notice
    );
    send(&mut app, Intent::RunToEnd);
    update_until(&mut app, "the end of the level", |app| {
        session(app).conclusion.is_some()
    });
    let verdict = session(&app)
        .conclusion
        .clone()
        .expect("concluded")
        .verdict
        .expect("judged");
    assert_eq!(verdict.outcome, Outcome::PaidTwice, "{}", verdict.summary);
    assert!(session(&app).conclusion.clone().expect("concluded").finished);
}

#[test]
fn two_operators_race_in_the_console_and_the_loser_sees_the_409() {
    use twice_world::runtime::rules::Status;
    let data = tempfile::tempdir().expect("temp dir");
    let mut app = game(data.path());
    open_campaign_level(&mut app, "17-two-operators.level.ron");
    step_to(&mut app, 5);
    send(
        &mut app,
        Intent::Play(Play::SlowResponse(SlowResponse {
            key: Some("r1:c1".into()),
        })),
    );
    step_to(&mut app, 9);
    let decide = |status: Status, operator: &str| {
        Intent::Play(Play::OperatorResolve(OperatorResolve {
            key: "r1:c1".into(),
            status,
            reason: "both saw it unknown".into(),
            operator: operator.into(),
            expected_status: Some(Status::Indeterminate),
        }))
    };
    send(&mut app, decide(Status::Failed, "op-crew"));
    let first = session(&app).notice.clone().expect("told");
    assert!(!first.problem, "{}", first.text);
    send(&mut app, decide(Status::Completed, "op-other"));
    let second = session(&app).notice.clone().expect("told");
    assert!(second.problem, "{}", second.text);
    assert!(second.text.contains("409"), "{}", second.text);
    assert!(
        second.text.contains("op-crew settled it failed first"),
        "{}",
        second.text
    );
    assert_eq!(session(&app).simulation().played().len(), 3, "the lost race is a move");
    assert_eq!(
        session(&app).ledger().row("r1:c1").expect("the row").status,
        Status::Failed,
        "the winner's decision stands"
    );
}

#[test]
fn hints_open_one_tier_at_a_time_and_are_recorded_in_progress() {
    let data = tempfile::tempdir().expect("temp dir");
    let mut app = game(data.path());
    open_campaign_level(&mut app, "01-naive-retry.level.ron");
    let id = session(&app).recipe.level.level.id.clone();
    let tiers = session(&app).recipe.level.level.hints.tiers().len() as u32;
    assert_eq!(tiers, 3, "a nudge, the idea, the move");
    for opened in 1..=tiers {
        send(&mut app, Intent::OpenHint);
        assert_eq!(app.world().resource::<Progress>().hints_opened(&id), opened);
    }
    send(&mut app, Intent::OpenHint);
    assert_eq!(app.world().resource::<Progress>().hints_opened(&id), tiers);
    assert_eq!(
        Progress::load(&data.path().join("progress.ron")).hints_opened(&id),
        tiers,
        "kept on disk"
    );
}

/// `--unlock-all` and `--chapter N`: every level open without touching progress, the
/// chapter's first level found, and the presenter notes beside the levels loaded for it.
#[test]
fn the_presenter_opens_every_level_jumps_to_a_chapter_and_has_its_notes() {
    let data = tempfile::tempdir().expect("a data folder");
    let closed = game(data.path());
    let campaign = closed.world().resource::<twice::campaign::Campaign>();
    let progress = closed.world().resource::<Progress>();
    let locked = (0..campaign.levels.len())
        .filter(|index| !campaign.is_unlocked(*index, progress))
        .count();
    assert!(locked > 0, "a fresh campaign has locked levels");

    let app = game_with(data.path(), |app| {
        app.insert_resource(twice::presenter::Presenter {
            on: true,
            unlock_all: true,
            chapter: Some(4),
        });
    });
    let campaign = app.world().resource::<twice::campaign::Campaign>();
    let progress = app.world().resource::<Progress>();
    assert!((0..campaign.levels.len()).all(|index| campaign.is_unlocked(index, progress)));
    assert!(
        (0..campaign.levels.len()).all(|index| !progress.is_finished(&campaign.levels[index].level.id)),
        "unlocking is not finishing"
    );
    let first = campaign.first_of_chapter(4).expect("chapter 4 has levels");
    assert_eq!(campaign.levels[first].level.chapter, 4);
    assert!(
        (0..first).all(|index| campaign.levels[index].level.chapter != 4),
        "the chapter's first level"
    );
    let notes = campaign
        .notes
        .chapter(4)
        .expect("levels/presenter-notes.ron has chapter 4");
    assert!(!notes.say.trim().is_empty());
    assert!(campaign.problems.is_empty(), "{:?}", campaign.problems);
    assert_eq!(
        twice::presenter::Presenter {
            on: true,
            ..Default::default()
        }
        .zoom(),
        twice::presenter::PRESENTER_ZOOM
    );
    const { assert!(twice::presenter::PRESENTER_ZOOM >= 1.75) };
}

/// The index of a campaign level by its id.
fn campaign_index(app: &App, id: &str) -> usize {
    app.world()
        .resource::<twice::campaign::Campaign>()
        .find(id)
        .unwrap_or_else(|| panic!("no level `{id}` in the campaign"))
}

#[test]
fn the_debriefs_next_goes_through_the_next_levels_briefing_not_into_play() {
    use twice::session::NextBriefing;
    let data = tempfile::tempdir().expect("temp dir");
    let loaded = tape("01-naive-retry.win.tape.ron");
    let mut app = game(data.path());
    play_like_a_player(&mut app, &loaded);
    assert!(session(&app).conclusion.clone().expect("concluded").finished);
    send(&mut app, Intent::Debrief);
    app.update();
    assert_eq!(screen(&app), Screen::Debrief);
    let expected = {
        let campaign = app.world().resource::<twice::campaign::Campaign>();
        let progress = app.world().resource::<Progress>();
        let index = session(&app).campaign_index.expect("a campaign level");
        campaign.next_up_after(index, progress).expect("a next level is open")
    };
    send(&mut app, Intent::NextBriefing);
    app.update();
    assert_eq!(
        screen(&app),
        Screen::LevelSelect,
        "the briefing first, on the level select"
    );
    assert!(
        app.world().get_resource::<Session>().is_none(),
        "no level is being played"
    );
    let asked = app.world().resource::<NextBriefing>();
    assert_eq!((asked.index, asked.next_up), (Some(expected), true));
    let campaign = app.world().resource::<twice::campaign::Campaign>();
    assert_eq!(campaign.levels[expected].level.id, "one-attempt");
}

#[test]
fn panels_arrive_chapter_by_chapter_and_each_is_noted_new_once() {
    use twice::panels::Panel;
    let data = tempfile::tempdir().expect("temp dir");
    let mut app = game(data.path());
    let level_of_chapter = |app: &App, chapter: u32| {
        let campaign = app.world().resource::<twice::campaign::Campaign>();
        let index = campaign
            .first_of_chapter(chapter)
            .unwrap_or_else(|| panic!("chapter {chapter} has levels"));
        campaign.levels[index].path.clone()
    };
    let open = |app: &mut App, path: PathBuf, mode: Mode| {
        send(
            app,
            Intent::OpenLevel {
                path,
                mode,
                guards: None,
                seed: 1,
                at_phase: None,
            },
        );
        app.update();
        assert_eq!(screen(app), Screen::Level);
    };

    // Level 01: Penny, the wire, billing, cards, controls, timeline — no ledger, no console.
    open_campaign_level(&mut app, "01-naive-retry.level.ron");
    let panels = session(&app).panels.clone();
    for panel in Panel::ALL {
        assert!(!panels.shows(panel), "level 01 shows {panel:?}");
    }
    assert!(panels.new.is_empty());

    // Chapter 3: the ledger and its checkpoints (and the rulebook, from chapter 2), noted new.
    let path = level_of_chapter(&app, 3);
    open(&mut app, path, Mode::Campaign);
    let panels = session(&app).panels.clone();
    assert!(panels.shows(Panel::Ledger) && panels.shows(Panel::Checkpoints) && panels.shows(Panel::Rulebook));
    assert!(!panels.shows(Panel::Console), "the console arrives in chapter 4");
    assert_eq!(panels.new, [Panel::Rulebook, Panel::Ledger, Panel::Checkpoints]);

    // Chapter 4: the ledger and the console; only the console is new now.
    let path = level_of_chapter(&app, 4);
    open(&mut app, path, Mode::Campaign);
    let panels = session(&app).panels.clone();
    assert!(panels.shows(Panel::Ledger) && panels.shows(Panel::Console));
    assert_eq!(panels.new, [Panel::Console]);
    let seen = Progress::load(&data.path().join("progress.ron")).file.panels_seen;
    assert_eq!(seen.len(), Panel::ALL.len(), "kept on disk: {seen:?}");

    // Once noted, never again.
    let path = level_of_chapter(&app, 4);
    open(&mut app, path, Mode::Campaign);
    assert!(session(&app).panels.new.is_empty());

    // The sandbox and --unlock-all show everything, even in level 01.
    open(
        &mut app,
        levels_folder().join("01-naive-retry.level.ron"),
        Mode::Sandbox,
    );
    assert!(Panel::ALL.into_iter().all(|panel| session(&app).panels.shows(panel)));
    app.world_mut().resource_mut::<twice::campaign::Campaign>().unlock_all = true;
    open_campaign_level(&mut app, "01-naive-retry.level.ron");
    assert!(Panel::ALL.into_iter().all(|panel| session(&app).panels.shows(panel)));
}

fn guide_step(app: &App) -> Option<twice::guide::GuideStep> {
    app.world().resource::<twice::guide::Guide>().step()
}

#[test]
fn the_guided_first_level_follows_the_players_moves_and_is_not_shown_again() {
    use twice::guide::GuideStep;
    let data = tempfile::tempdir().expect("temp dir");
    let mut app = game(data.path());
    open_campaign_level(&mut app, "01-naive-retry.level.ron");
    app.update();
    assert_eq!(guide_step(&app), Some(GuideStep::Step));
    // Nothing the player did not do moves the guide on.
    for _ in 0..3 {
        app.update();
    }
    assert_eq!(guide_step(&app), Some(GuideStep::Step));

    send(&mut app, Intent::Step);
    assert_eq!(guide_step(&app), Some(GuideStep::WatchTheRequest));
    let mut steps = 0;
    while guide_step(&app) == Some(GuideStep::WatchTheRequest) {
        assert!(steps < 20, "the request never left");
        send(&mut app, Intent::Step);
        steps += 1;
    }
    assert_eq!(guide_step(&app), Some(GuideStep::PlayACard));
    assert!(
        session(&app)
            .simulation()
            .messages()
            .any(|message| message.direction == twice_world::simulator::Direction::Request),
        "the step ends when the request is on the wire"
    );
    // Stepping on without a card keeps the player on this step.
    step_to(&mut app, 5);
    assert_eq!(guide_step(&app), Some(GuideStep::PlayACard));
    send(
        &mut app,
        Intent::Play(Play::LoseResponse(LoseResponse {
            key: Some("r1:c1".into()),
        })),
    );
    assert_eq!(guide_step(&app), Some(GuideStep::ReadTheVerdict));
    send(&mut app, Intent::RunToEnd);
    update_until(&mut app, "the end of the level", |app| {
        session(app).conclusion.is_some()
    });
    assert_eq!(guide_step(&app), Some(GuideStep::ReadTheVerdict));
    send(&mut app, Intent::Debrief);
    app.update();
    assert_eq!(screen(&app), Screen::Debrief);
    assert_eq!(guide_step(&app), None, "the guide is done");
    assert!(app.world().resource::<Progress>().is_guide_done("naive-retry"));
    assert!(Progress::load(&data.path().join("progress.ron")).is_guide_done("naive-retry"));

    // Not shown again.
    open_campaign_level(&mut app, "01-naive-retry.level.ron");
    app.update();
    assert_eq!(guide_step(&app), None);

    // Skipped on a fresh start: done too, and only level 01 is guided.
    let fresh = tempfile::tempdir().expect("temp dir");
    let mut app = game(fresh.path());
    open_campaign_level(&mut app, "02-one-attempt.level.ron");
    app.update();
    assert_eq!(guide_step(&app), None, "only the first level is guided");
    open_campaign_level(&mut app, "01-naive-retry.level.ron");
    app.update();
    assert_eq!(guide_step(&app), Some(GuideStep::Step));
    send(&mut app, Intent::SkipGuide);
    assert_eq!(guide_step(&app), None);
    assert!(app.world().resource::<Progress>().is_guide_done("naive-retry"));
}

fn defence(app: &App) -> &twice::defence::Defence {
    app.world()
        .get_resource::<twice::defence::Defence>()
        .expect("a level is being defended")
}

fn check_defence(app: &mut App) -> twice_world::defend::DefenceReport {
    use twice::defence::DefenceIntent;
    app.world_mut().write_message(DefenceIntent::Check);
    app.update();
    // The check runs off the frame: the update that asked for it returned before it was done.
    assert!(defence(app).is_checking(), "{:?}", defence(app).notice);
    update_until(app, "the defence check", |app| !defence(app).is_checking());
    match &defence(app).result {
        Some(Ok(checked)) => checked.report.clone(),
        other => panic!("the check did not finish: {other:?}"),
    }
}

#[test]
fn defender_mode_checks_the_players_guards_and_records_a_defence_that_holds() {
    use twice::defence::DefenceIntent;
    use twice_world::runtime::guards::Guard;
    let data = tempfile::tempdir().expect("temp dir");
    let mut app = game(data.path());
    let index = campaign_index(&app, "one-attempt");
    // Level 02 opens once level 01 is finished.
    app.world_mut()
        .resource_mut::<Progress>()
        .record("naive-retry", Outcome::PaidTwice, true);
    app.world_mut().write_message(DefenceIntent::Open { index });
    app.update();
    app.update();
    assert_eq!(screen(&app), Screen::Defend);
    assert!(defence(&app).on.is_empty(), "every guard starts off");
    let budget = defence(&app).budget();
    let minimum = defence(&app).minimum().to_vec();
    assert_eq!(budget, 2);

    // No guards: a heist gets through (a known one, or one the explorer finds), and nothing
    // is recorded.
    let report = check_defence(&mut app);
    assert!(!report.holds());
    assert!(report.heists.len() > 1, "Penny alone and the known heists");
    let known_got_through = report.heists.iter().any(|heist| !heist.stopped);
    match &report.search {
        None => assert!(
            known_got_through,
            "the search is skipped only when a known heist got through"
        ),
        Some(search) => assert!(!known_got_through && search.found.is_some(), "{search:?}"),
    }
    assert!(app.world().resource::<Progress>().defended("one-attempt").is_none());

    // The budget holds: a third guard is refused.
    for guard in [Guard::Ledger, Guard::KeyPerCall, Guard::AtomicReservation] {
        app.world_mut().write_message(DefenceIntent::Toggle(guard));
        app.update();
    }
    assert_eq!(defence(&app).on.len(), budget as usize);
    assert!(!defence(&app).on.contains(&Guard::AtomicReservation));
    let notice = defence(&app).notice.clone().expect("told why");
    assert!(notice.contains("budget"), "{notice}");
    assert!(
        defence(&app).current_report().is_none(),
        "the guards changed since the check"
    );

    // A check can be cancelled; it leaves the last answer alone.
    app.world_mut().write_message(DefenceIntent::Check);
    app.update();
    app.world_mut().write_message(DefenceIntent::Cancel);
    app.update();
    assert!(!defence(&app).is_checking());

    // The minimum the level states: it holds, against the heists and the explorer's search.
    for guard in [Guard::Ledger, Guard::KeyPerCall] {
        app.world_mut().write_message(DefenceIntent::Toggle(guard));
        app.update();
    }
    for guard in &minimum {
        app.world_mut().write_message(DefenceIntent::Toggle(*guard));
        app.update();
    }
    let report = check_defence(&mut app);
    assert!(report.holds(), "{report:?}");
    assert_eq!(report.on, minimum);
    let search = report.search.clone().expect("the explorer searched");
    assert!(search.found.is_none() && search.schedules > 0);
    assert_eq!(defence(&app).current_report(), Some(&report));
    assert_eq!(
        app.world().resource::<Progress>().defended("one-attempt"),
        Some(&minimum[..])
    );
    let saved = Progress::load(&data.path().join("progress.ron"));
    assert_eq!(saved.defended("one-attempt"), Some(&minimum[..]));
    assert!(
        saved.is_finished("one-attempt"),
        "a defence that holds finishes the level"
    );

    // Leaving drops the defence.
    app.world_mut()
        .resource_mut::<NextState<Screen>>()
        .set(Screen::LevelSelect);
    app.update();
    assert!(app.world().get_resource::<twice::defence::Defence>().is_none());
}

#[test]
fn the_campaign_loads_its_glossary_beside_the_levels() {
    let data = tempfile::tempdir().expect("temp dir");
    let app = game(data.path());
    let campaign = app.world().resource::<twice::campaign::Campaign>();
    assert!(campaign.problems.is_empty(), "{:?}", campaign.problems);
    for word in ["phase", "started", "indeterminate", "unknown"] {
        assert!(campaign.glossary.find(word).is_some(), "{word}");
    }
    // The first level's briefing links the glossary's words.
    let briefing = &campaign.levels[0].level.briefing_more;
    assert!(!campaign.glossary.mentions(briefing).is_empty(), "{briefing}");
}

/// Defends the level `id` (every level open) with `guards`, switched on by their keys.
fn defend_with_keys(
    app: &mut App,
    id: &str,
    guards: &[twice_world::runtime::guards::Guard],
) -> twice_world::defend::DefenceReport {
    use twice::defence::{self, DefenceIntent};
    app.world_mut().resource_mut::<twice::campaign::Campaign>().unlock_all = true;
    let index = campaign_index(app, id);
    app.world_mut().write_message(DefenceIntent::Open { index });
    app.update();
    app.update();
    assert_eq!(screen(app), Screen::Defend);
    for guard in guards {
        // The way the screen does it: the key's guard, from the same table.
        let key = defence::guard_key(*guard);
        let toggled = defence::guard_for_key(key).unwrap_or_else(|| panic!("no guard on key {key}"));
        app.world_mut().write_message(DefenceIntent::Toggle(toggled));
        app.update();
    }
    assert_eq!(defence(app).on.iter().copied().collect::<Vec<_>>(), {
        let mut sorted = guards.to_vec();
        sorted.sort();
        sorted
    });
    check_defence(app)
}

#[test]
fn defender_mode_has_a_key_for_every_guard_so_06_and_19_can_be_defended() {
    use twice::defence;
    use twice_world::runtime::guards::Guard;
    let keys: std::collections::BTreeSet<&str> = Guard::ALL.into_iter().map(defence::guard_key).collect();
    assert_eq!(keys.len(), Guard::ALL.len(), "one key per guard: {keys:?}");
    for guard in Guard::ALL {
        assert_eq!(defence::guard_for_key(defence::guard_key(guard)), Some(guard));
    }
    let data = tempfile::tempdir().expect("temp dir");
    let mut app = game(data.path());
    for id in ["ledger-holds", "vault"] {
        let minimum = {
            let campaign = app.world().resource::<twice::campaign::Campaign>();
            let index = campaign.find(id).expect("in the campaign");
            campaign.levels[index].level.defender.clone().expect("defended").minimum
        };
        assert!(
            minimum.contains(&Guard::NoReflexCompensation),
            "{id}'s minimum needs the eleventh guard: {minimum:?}"
        );
        let report = defend_with_keys(&mut app, id, &minimum);
        assert!(report.holds(), "{id}: {report:?}");
        assert_eq!(
            app.world().resource::<Progress>().defended(id),
            Some(
                &{
                    let mut sorted = minimum.clone();
                    sorted.sort();
                    sorted
                }[..]
            )
        );
        // Without the eleventh guard the same defence falls: the key matters.
        app.world_mut()
            .write_message(twice::defence::DefenceIntent::Toggle(Guard::NoReflexCompensation));
        app.update();
        let report = check_defence(&mut app);
        assert!(!report.holds(), "{id} held without no_reflex_compensation: {report:?}");
        app.world_mut()
            .resource_mut::<NextState<Screen>>()
            .set(Screen::LevelSelect);
        app.update();
    }
}

#[test]
fn after_the_last_level_the_ending_sums_up_the_guards_in_the_order_met_with_stars_and_predictions() {
    use twice::campaign::Campaign;
    use twice::campaign::summary::{self, AfterLevel, CampaignSummary};
    use twice_world::runtime::guards::Guard;
    let data = tempfile::tempdir().expect("temp dir");
    let mut app = game(data.path());
    let (ids, last_path) = {
        let campaign = app.world().resource::<Campaign>();
        let ids: Vec<String> = campaign.levels.iter().map(|loaded| loaded.level.id.clone()).collect();
        (ids, campaign.levels.last().expect("levels").path.clone())
    };
    let last = ids.len() - 1;
    // Every level but the last finished; the first at par (two stars), the third over par.
    {
        let mut progress = app.world_mut().resource_mut::<Progress>();
        for id in &ids[..last] {
            progress.record(id, Outcome::PaidTwice, true);
        }
        progress.record_best("naive-retry", 1, 31);
        progress.record_best("model-calls-again", 3, 19);
        progress.record_defended("vault", &[Guard::Ledger]);
        progress.record_prediction(twice::progress::PredictionRecord {
            level: "crash-replay".into(),
            verdict: twice_world::prediction::Expected::HeistWorks,
            verdict_right: true,
            named: Some(Guard::Ledger),
            named_right: true,
            named_no_guard: false,
        });
    }
    let summary_now =
        |app: &App| CampaignSummary::of(app.world().resource::<Campaign>(), app.world().resource::<Progress>());
    let before = summary_now(&app);
    assert!(!before.complete, "the last level is not finished yet");
    assert_eq!(before.unfinished, vec![last]);
    assert_eq!(before.stars.earned, 2, "two stars for 01 at par, none for 03 over par");
    assert!(before.stars.possible >= 2 * 17, "{:?}", before.stars);
    // The guards in the order met: each once, every guard, in campaign order.
    let met: Vec<usize> = before.guards.iter().map(|learned| learned.met_in).collect();
    assert!(met.windows(2).all(|pair| pair[0] <= pair[1]), "{met:?}");
    assert_eq!(before.guards.len(), Guard::ALL.len());
    assert_eq!(before.guards[0].guard, Guard::WriteRetryRule);
    assert_eq!(ids[before.guards[0].met_in], "naive-retry");
    assert_eq!(before.finale_defence.as_deref(), Some(&[Guard::Ledger][..]));
    // The prediction that named the ledger counts for the ledger, and in the tally.
    let ledger = before
        .guards
        .iter()
        .find(|learned| learned.guard == Guard::Ledger)
        .expect("met");
    assert_eq!((ledger.predicted, ledger.predicted_right), (1, 1));
    assert_eq!(
        (before.predictions.predictions, before.predictions.guards_right),
        (1, 1)
    );
    {
        let campaign = app.world().resource::<Campaign>();
        let progress = app.world().resource::<Progress>();
        // Played again, 01's Next is the one level not won yet, not 02 (won already).
        assert_eq!(
            summary::after_level(campaign, progress, 0),
            AfterLevel::NextBriefing(last)
        );
    }

    // The last level, played to its finish: the debrief's Next is the ending.
    let tapes = level::files_below(&levels_folder(), ".tape.ron").expect("tapes");
    let stem = last_path
        .file_name()
        .expect("a file")
        .to_string_lossy()
        .replace(".level.ron", "");
    let finishing = tapes
        .iter()
        .filter(|path| {
            path.file_name()
                .is_some_and(|name| name.to_string_lossy().starts_with(&stem))
        })
        .map(|path| level::load_tape(path).expect("loads"))
        .find(|loaded| {
            let name = loaded.path.to_string_lossy();
            loaded.tape.guards.is_none() && name.contains(".win.")
        })
        .expect("a tape that finishes the last level");
    play_like_a_player(&mut app, &finishing);
    assert!(
        session(&app).conclusion.clone().expect("concluded").finished,
        "{:?}",
        finishing.path
    );
    {
        let campaign = app.world().resource::<Campaign>();
        let progress = app.world().resource::<Progress>();
        assert_eq!(summary::after_level(campaign, progress, last), AfterLevel::Ending);
    }
    let after = summary_now(&app);
    assert!(after.complete && after.unfinished.is_empty());
    send(&mut app, Intent::Debrief);
    app.update();
    send(&mut app, Intent::Leave(Leaving::ToTheEnding));
    app.update();
    assert_eq!(screen(&app), Screen::Ending);
    assert!(app.world().get_resource::<Session>().is_none(), "the level is closed");
}

/// Plays the tape's moves again in the open session from a restart, then runs to the end.
fn replay_moves(app: &mut App, loaded: &LoadedTape) {
    send(app, Intent::Restart);
    for action in &loaded.tape.actions {
        while phase(app) < action.at_phase && !session(app).is_over() {
            send(app, Intent::Step);
        }
        send(app, Intent::Play(action.play.clone()));
    }
    send(app, Intent::RunToEnd);
    update_until(app, "the end of the level", |app| session(app).conclusion.is_some());
    app.update();
}

#[test]
fn a_prediction_made_before_the_run_is_scored_against_the_counterfactual_and_kept() {
    use twice::progress::prediction::{Prediction, PredictionIntent};
    use twice_world::prediction::{Expected, GuardScore, Pick};
    let data = tempfile::tempdir().expect("temp dir");
    // Slowing the answer alone loses: the write retry rule decides it.
    let loaded = tape("03-model-calls-again.slow-alone.tape.ron");
    let mut app = game(data.path());
    // A first run, unpredicted, says which guards decide these moves.
    play_like_a_player(&mut app, &loaded);
    let told = debrief_of(&app);
    let deciding = told.deciding_guards();
    assert!(!deciding.is_empty(), "{:?}", told.decided_by);
    assert!(
        app.world().resource::<Prediction>().scored.is_none(),
        "nothing was predicted"
    );
    // Too late: the run has played out.
    app.world_mut().write_message(PredictionIntent::Make {
        verdict: Expected::HeistFails,
        pick: None,
    });
    app.update();
    assert!(app.world().resource::<Prediction>().made.is_none());
    assert!(app.world().resource::<Prediction>().notice.is_some());

    // Predicted right: the heist fails, decided by the guard the counterfactual names.
    send(&mut app, Intent::Restart);
    app.world_mut().write_message(PredictionIntent::Make {
        verdict: Expected::HeistFails,
        pick: Some(Pick::Guard(deciding[0])),
    });
    app.update();
    assert!(app.world().resource::<Prediction>().made.is_some());
    replay_moves(&mut app, &loaded);
    let scored = app
        .world()
        .resource::<Prediction>()
        .scored
        .clone()
        .expect("scored at the end");
    assert!(scored.verdict_right);
    assert_eq!(scored.guard, GuardScore::Right);
    assert_eq!(scored.points(), 2);

    // Predicted wrong: the heist works, decided by a guard that was not needed.
    let not_needed = *told.not_needed.first().expect("a guard on that changed nothing");
    send(&mut app, Intent::Restart);
    app.world_mut().write_message(PredictionIntent::Make {
        verdict: Expected::HeistWorks,
        pick: Some(Pick::Guard(not_needed)),
    });
    app.update();
    replay_moves(&mut app, &loaded);
    let scored = app.world().resource::<Prediction>().scored.clone().expect("scored");
    assert!(!scored.verdict_right);
    assert!(matches!(scored.guard, GuardScore::Wrong { .. }), "{:?}", scored.guard);

    // Progress keeps both, on disk: the tally and the records per guard.
    let saved = Progress::load(&data.path().join("progress.ron"));
    assert_eq!(saved.predictions().len(), 2);
    let tally = saved.prediction_tally();
    assert_eq!(
        (
            tally.predictions,
            tally.verdicts_right,
            tally.guards_named,
            tally.guards_right
        ),
        (2, 1, 2, 1)
    );
    assert_eq!(saved.predictions()[0].named_guard(), Some((deciding[0], true)));
}

#[test]
fn the_debrief_names_what_decided_and_the_other_outcome_builds_again_with_the_other_verdict() {
    use twice_world::debrief::Tone;
    let data = tempfile::tempdir().expect("temp dir");
    let mut app = game(data.path());
    for (file, tone) in [
        ("03-model-calls-again.slow-alone.tape.ron", Tone::Loss),
        ("03-model-calls-again.win.tape.ron", Tone::Win),
    ] {
        let loaded = tape(file);
        play_like_a_player(&mut app, &loaded);
        let told = debrief_of(&app);
        assert_eq!(told.tone, tone, "{file}: {}", told.headline);
        let this_run = session(&app)
            .conclusion
            .clone()
            .expect("concluded")
            .verdict
            .expect("judged");
        // Every other outcome the debrief offers is a run that can be built again (what the
        // debrief's O opens) and ends the other way.
        let counterfactual = told.counterfactual.as_ref().expect("the run was simulated again");
        assert!(!told.what_if.is_empty(), "{file}: {:?}", told.decided_by);
        for what_if in &told.what_if {
            let level = session(&app).simulation().authored_level();
            let other = counterfactual
                .simulation_of(&level, what_if.alternative)
                .expect("in the counterfactual")
                .expect("builds");
            let verdict = other.verdict().expect("judged");
            assert_ne!(
                verdict.goal_reached, this_run.goal_reached,
                "{file}: {}",
                what_if.sentence
            );
        }
        // The rule line is the deciding guard's when a guard decided.
        if let twice_world::debrief::RuleSource::Guard { guard } = told.rule_from {
            assert!(told.deciding_guards().contains(&guard), "{file}");
        }
    }
}

#[test]
fn the_defender_screen_tells_no_fire_from_held_and_opens_the_counter_example_as_a_run() {
    use twice::defence::DefenceIntent;
    use twice_world::defend::HeistStanding;
    use twice_world::runtime::guards::Guard;
    let data = tempfile::tempdir().expect("temp dir");
    let mut app = game(data.path());

    // 02 with no guard falls, and the screen's counter-example is the report's.
    let report = defend_with_keys(&mut app, "one-attempt", &[]);
    assert!(!report.holds());
    let counter = report
        .counter_example
        .clone()
        .expect("a defence that falls carries what beat it");
    assert!(defence(&app).counter_run.is_none(), "closed until asked for");
    // O (the screen sends this intent) opens its run: the same moves, the same outcome.
    app.world_mut().write_message(DefenceIntent::ToggleCounterExample);
    app.update();
    {
        let run = defence(&app)
            .counter_run
            .as_ref()
            .unwrap_or_else(|| panic!("the counter-example opens: {:?}", defence(&app).notice));
        let simulation = run.simulation.lock().expect("not poisoned");
        assert_eq!(simulation.verdict().expect("a verdict").outcome, counter.outcome);
        // The same moves at the same phases (as made: a card names the message it hit).
        let moves = |actions: &[twice_world::level::TimedAction]| -> Vec<(u32, &'static str)> {
            actions
                .iter()
                .map(|action| (action.at_phase, action.play.card().name()))
                .collect()
        };
        assert_eq!(moves(simulation.played()), moves(&counter.tape.actions));
        assert!(simulation.timeline().len() > 1, "a timeline to show");
        assert!(run.title.contains(&counter.source_words()), "{}", run.title);
    }
    // O again closes it; so does a guard switched (the counter-example beat the old guards).
    app.world_mut().write_message(DefenceIntent::ToggleCounterExample);
    app.update();
    assert!(defence(&app).counter_run.is_none());
    app.world_mut().write_message(DefenceIntent::ToggleCounterExample);
    app.update();
    assert!(defence(&app).counter_run.is_some());
    app.world_mut().write_message(DefenceIntent::Toggle(Guard::Ledger));
    app.update();
    assert!(defence(&app).counter_run.is_none());
    // With no current report there is nothing to open, and the player is told so.
    app.world_mut().write_message(DefenceIntent::ToggleCounterExample);
    app.update();
    assert!(defence(&app).counter_run.is_none());
    assert!(
        defence(&app)
            .notice
            .as_deref()
            .is_some_and(|notice| notice.contains("check"))
    );
    app.world_mut()
        .resource_mut::<NextState<Screen>>()
        .set(Screen::LevelSelect);
    app.update();

    // A known heist that does not fire with every guard off is "no fire", never "held" (with
    // the levels' own minimum defences some of the known tapes' cards fizzle).
    let mut no_fire = 0;
    for id in ["one-attempt", "ledger-holds", "vault"] {
        let minimum = {
            let campaign = app.world().resource::<twice::campaign::Campaign>();
            let index = campaign.find(id).expect("in the campaign");
            campaign.levels[index].level.defender.clone().expect("defended").minimum
        };
        let report = defend_with_keys(&mut app, id, &minimum);
        for heist in &report.heists {
            let standing = heist.standing();
            assert_eq!(
                standing == HeistStanding::Held,
                heist.fires && heist.stopped,
                "{heist:?}"
            );
            assert_eq!(
                standing == HeistStanding::NoFire,
                !heist.fires && heist.stopped,
                "{heist:?}"
            );
            assert_eq!(standing == HeistStanding::GotIn, !heist.stopped, "{heist:?}");
            no_fire += usize::from(standing == HeistStanding::NoFire);
        }
        app.world_mut()
            .resource_mut::<NextState<Screen>>()
            .set(Screen::LevelSelect);
        app.update();
    }
    assert!(no_fire > 0, "some known heist does not fire in these levels");
}
