//! Predict, then watch, in the browser (issue 21 item 5): over real HTTP against the real
//! `twice-sim web` with a room file, a participant predicts the verdict and the deciding guard
//! before the run plays out; the debrief's score is exactly what `twice_world::prediction::score`
//! gives against this run's counterfactual (the run rebuilt here from its downloaded tape); the
//! tally is kept in the room file through a SIGKILL and a restart, and so is a prediction still
//! waiting for its run's end. Bad predictions get their own error codes.

use std::path::Path;

use reqwest::header::{COOKIE, SET_COOKIE};
use reqwest::{Client, StatusCode};
use serde_json::{Value, json};
use twice_world::prediction::{self, Expected, Pick, Prediction};
use twice_world::runtime::guards::Guard;
use twice_world::simulator::SimulationBuilder;

#[path = "common/web_server.rs"]
mod web_server;
use web_server::{WebServer, first_target, levels_folder};

struct Browser {
    client: Client,
    base: String,
    cookie: Option<String>,
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
            cookie: Some(cookie.split(';').next().unwrap().to_owned()),
        }
    }

    async fn send(&self, request: reqwest::RequestBuilder) -> (StatusCode, Value) {
        let response = request
            .header(COOKIE, self.cookie.clone().unwrap())
            .send()
            .await
            .expect("the room answers");
        let status = response.status();
        let text = response.text().await.unwrap();
        (status, serde_json::from_str(&text).unwrap_or(Value::String(text)))
    }

    async fn get(&self, path: &str) -> (StatusCode, Value) {
        self.send(self.client.get(format!("{}{path}", self.base))).await
    }

    async fn post(&self, path: &str, body: Value) -> (StatusCode, Value) {
        self.send(self.client.post(format!("{}{path}", self.base)).json(&body))
            .await
    }

    async fn ok(&self, path: &str, body: Value) -> Value {
        let (status, answer) = self.post(path, body).await;
        assert_eq!(status, StatusCode::OK, "{path}: {answer}");
        answer
    }

    async fn tape(&self) -> String {
        let response = self
            .client
            .get(format!("{}/api/game/tape", self.base))
            .header(COOKIE, self.cookie.clone().unwrap())
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), StatusCode::OK);
        response.text().await.unwrap()
    }
}

fn assert_error(answer: &(StatusCode, Value), status: StatusCode, code: &str, says: &str) {
    assert_eq!(answer.0, status, "{}", answer.1);
    assert_eq!(answer.1["code"], code, "{}", answer.1);
    let error = answer.1["error"].as_str().unwrap();
    assert!(error.contains(says), "the error says {says:?}: {error}");
}

/// The score `twice_world::prediction::score` gives `prediction` on the run a downloaded tape
/// holds: the level, seed and moves simulated again here, the debrief made from them.
fn engine_score(tape_text: &str, prediction: Prediction) -> Value {
    let tape = twice_world::level::parse_tape(Path::new("downloaded.tape.ron"), tape_text)
        .expect("the downloaded tape parses");
    let loaded = twice_world::level::load_level(&levels_folder().join(&tape.level)).expect("its level loads");
    let mut simulation = SimulationBuilder::new(loaded.level.clone(), tape.seed)
        .guards(tape.guards.unwrap_or(loaded.level.guards))
        .actions(tape.actions.clone())
        .wire_rule(tape.wire_rule())
        .build()
        .unwrap();
    simulation.run().unwrap();
    let verdict = simulation.verdict().unwrap();
    let debrief = twice_world::debrief::of(&simulation, &verdict);
    serde_json::to_value(prediction::score(prediction, &debrief)).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prediction_is_scored_against_the_runs_counterfactual_and_the_tally_survives_a_restart() {
    let folder = tempfile::tempdir().unwrap();
    let room = folder.path().join("room.sqlite");
    let mut server = WebServer::start(&room, &[]);
    let ada = Browser::join(&server.base, "Ada").await;
    let game = ada.ok("/api/game", json!({ "level": "01-naive-retry" })).await;
    assert_eq!(game["prediction"]["open"], true, "{}", game["prediction"]);
    assert_eq!(game["prediction"]["tally"]["predictions"], 0);
    // The guard half offers what can decide in 01, in words: the write retry rule, off here,
    // decides its heist; "no guard" closes the list; no snake_case, and not every guard.
    let choices = game["prediction"]["choices"].as_array().expect("the choices");
    let words: Vec<&str> = choices.iter().map(|choice| choice["words"].as_str().unwrap()).collect();
    assert!(choices.len() <= 6, "{words:?}");
    assert!(words.iter().all(|words| !words.contains('_')), "{words:?}");
    assert_eq!(
        (&choices[0]["value"], &choices[0]["words"], &choices[0]["on"]),
        (
            &json!("write_retry_rule"),
            &json!("the write retry rule"),
            &json!(false)
        ),
        "{words:?}"
    );
    assert_eq!(choices.last().unwrap()["value"], prediction::NO_GUARD);

    // Bad predictions, each with its own code, and nothing is kept.
    let answer = ada
        .post(
            "/api/game/predict",
            json!({ "verdict": "heist_works", "guard": "moat" }),
        )
        .await;
    assert_error(
        &answer,
        StatusCode::UNPROCESSABLE_ENTITY,
        "unknown_guard",
        "no guard `moat`",
    );
    assert!(
        answer.1["error"].as_str().unwrap().contains("write_retry_rule"),
        "it lists the guards"
    );
    let answer = ada.post("/api/game/predict", json!({ "verdict": "maybe" })).await;
    assert_error(
        &answer,
        StatusCode::UNPROCESSABLE_ENTITY,
        "invalid_value",
        "heist_works",
    );
    let answer = ada
        .post("/api/game/predict", json!({ "verdict": "heist_works", "when": 3 }))
        .await;
    assert_eq!(answer.1["code"], "invalid_body", "{}", answer.1);

    // Predict at phase 0: the heist works, and the write retry rule (off in 01) decides it.
    let guessed = Prediction::new(Expected::HeistWorks, Some(Pick::Guard(Guard::WriteRetryRule)));
    let game = ada
        .ok(
            "/api/game/predict",
            json!({ "verdict": "heist_works", "guard": "write_retry_rule" }),
        )
        .await;
    let made = &game["prediction"]["made"];
    assert_eq!(made["at_phase"], 0, "{made}");
    assert_eq!(made["guard"], "write_retry_rule");
    assert_eq!(game["prediction"]["open"], false);
    let answer = ada.post("/api/game/predict", json!({ "verdict": "heist_fails" })).await;
    assert_error(&answer, StatusCode::CONFLICT, "already_predicted", "one per run");

    // The heist: lose billing's answer to the refund at phase 12, then run to the end.
    ada.ok("/api/game/step", json!({ "phases": 12 })).await;
    let game = ada.get("/api/game").await.1;
    let play = first_target(&game, "LoseResponse");
    ada.ok("/api/game/play", json!({ "play": play })).await;
    let game = ada.ok("/api/game/run", json!(null)).await;
    assert!(game["end"].is_object(), "the run ended: {}", game["over"]);
    let score = &game["prediction"]["score"];
    assert_eq!(
        score["score"],
        engine_score(&ada.tape().await, guessed),
        "the score is the engine's on this run"
    );
    assert_eq!(score["score"]["verdict_right"], true, "01's heist works: {score}");
    let decided: Vec<&str> = game["end"]["decided"]["lines"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|line| line["part"] == "decided_the_heist" || line["part"] == "decided_together")
        .flat_map(|line| line["guards"].as_array().unwrap())
        .map(|guard| guard.as_str().unwrap())
        .collect();
    let guard_right = decided.contains(&"write_retry_rule");
    assert_eq!(
        score["score"]["guard"]["kind"] == "right",
        guard_right,
        "right exactly when the counterfactual says so ({decided:?}): {score}"
    );
    assert_eq!(score["points"], 1 + u32::from(guard_right));
    let tally =
        json!({ "predictions": 1, "verdicts_right": 1, "guards_named": 1, "guards_right": u32::from(guard_right) });
    assert_eq!(game["prediction"]["tally"], tally);
    let answer = ada.post("/api/game/predict", json!({ "verdict": "heist_fails" })).await;
    assert_error(&answer, StatusCode::CONFLICT, "run_ended", "restart or rewind");

    // SIGKILL and a restart: the tally and this run's score are back.
    server.kill();
    let mut server = WebServer::start(&room, &[]);
    let ada = Browser {
        base: server.base.clone(),
        ..ada
    };
    let game = ada.get("/api/game").await.1;
    assert_eq!(game["prediction"]["tally"], tally, "{}", game["prediction"]);
    assert_eq!(game["prediction"]["score"], *score);

    // A restart of the level is another run: its score goes, the tally stays; a prediction
    // made and waiting survives another SIGKILL, and is scored when that run ends.
    let game = ada.ok("/api/game/restart", json!(null)).await;
    assert!(game["prediction"]["score"].is_null(), "{}", game["prediction"]);
    assert_eq!(game["prediction"]["open"], true);
    ada.ok("/api/game/step", json!({ "phases": 3 })).await;
    let game = ada.ok("/api/game/predict", json!({ "verdict": "heist_works" })).await;
    assert_eq!(game["prediction"]["made"]["at_phase"], 3);
    server.kill();
    let mut server = WebServer::start(&room, &[]);
    let ada = Browser {
        base: server.base.clone(),
        ..ada
    };
    let game = ada.get("/api/game").await.1;
    assert_eq!(game["prediction"]["made"]["at_phase"], 3, "{}", game["prediction"]);
    let game = ada.ok("/api/game/run", json!(null)).await;
    let unguessed = Prediction::new(Expected::HeistWorks, None);
    let score = &game["prediction"]["score"]["score"];
    assert_eq!(*score, engine_score(&ada.tape().await, unguessed));
    assert_eq!(
        score["verdict_right"], false,
        "left alone, 01's heist does not work: {score}"
    );
    assert_eq!(score["guard"]["kind"], "not_named");
    let tally =
        json!({ "predictions": 2, "verdicts_right": 1, "guards_named": 1, "guards_right": u32::from(guard_right) });
    assert_eq!(game["prediction"]["tally"], tally);

    // A sandbox play (chosen guards) is scored, and the tally does not count it.
    ada.ok("/api/game", json!({ "level": "01-naive-retry", "guards": "all" }))
        .await;
    let game = ada.ok("/api/game/predict", json!({ "verdict": "heist_fails" })).await;
    assert_eq!(game["prediction"]["counted"], false);
    let game = ada.ok("/api/game/run", json!(null)).await;
    assert_eq!(
        game["prediction"]["score"]["score"]["verdict_right"], true,
        "{}",
        game["prediction"]
    );
    assert_eq!(game["prediction"]["tally"], tally);
    // Another level opened: nothing made or scored carries over.
    let game = ada.ok("/api/game", json!({ "level": "01-naive-retry" })).await;
    assert!(game["prediction"]["score"].is_null() && game["prediction"]["made"].is_null());
    server.kill();
}
