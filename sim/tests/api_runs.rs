//! The operator API's run endpoints (issue 23 item 5): `GET /v1/runs?status=dead_lettered`
//! lists the caller's tenants' dead-lettered runs, `POST /v1/runs/{run_id}/resume` resumes one,
//! reason required, compare-and-set on its checkpoint version, appended to the run's history.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;

use reqwest::{Client, StatusCode};
use serde_json::{Value, json};
use twice_sim::api::{self, ApiState, Operators};
use twice_sim::ledger::{Ledger, RunEvent};
use twice_sim::runtime::run::{RunState, RunStatus};

const GRACE: &str = "grace-token-0123456789abcdef";
const MALLORY: &str = "mallory-token-0123456789abcdef";

fn tokens_file(directory: &Path) -> std::path::PathBuf {
    let path = directory.join("tokens.ron");
    let text = format!(
        "(\n    operators: [\n\
         (id: \"grace\", token_sha256: \"{}\", tenants: [\"default\"]),\n\
         (id: \"mallory\", token_sha256: \"{}\", tenants: [\"globex\"]),\n    ],\n)\n",
        api::hash_token(GRACE),
        api::hash_token(MALLORY)
    );
    std::fs::write(&path, text).unwrap();
    path
}

/// Saves `run` as a worker dead-lettering it would.
fn dead_letter(ledger: &mut Ledger, run: &str, tenant: &str) {
    let state = RunState {
        status: RunStatus::DeadLettered {
            reason: "2 recoveries started from checkpoint v1 and none got past it (the limit is 2)".into(),
            previous: Box::new(RunStatus::Running),
            tenant: tenant.into(),
        },
        ..RunState::default()
    };
    ledger
        .save_checkpoint(run, state.status.name(), &state.to_json(), "w3", None, 100)
        .unwrap();
}

async fn call(client: &Client, url: String, token: &str, body: Option<Value>) -> (StatusCode, Value) {
    let request = match body {
        Some(body) => client.post(url).json(&body),
        None => client.get(url),
    };
    let response = request.bearer_auth(token).send().await.unwrap();
    let status = response.status();
    let text = response.text().await.unwrap();
    (
        status,
        serde_json::from_str(&text).unwrap_or_else(|_| panic!("{status}: {text}")),
    )
}

#[tokio::test]
async fn dead_lettered_runs_are_listed_per_tenant_and_resumed_once_with_a_reason() {
    let directory = tempfile::tempdir().unwrap();
    let path = directory.path().join("ledger.sqlite");
    let mut ledger = Ledger::open(&path).unwrap();
    dead_letter(&mut ledger, "r1", "default");
    dead_letter(&mut ledger, "g1", "globex");
    let state = RunState::default();
    ledger
        .save_checkpoint("r2", state.status.name(), &state.to_json(), "w1", None, 100)
        .unwrap();
    let operators = Operators::load(&tokens_file(directory.path())).unwrap();
    let api_state = ApiState::open(&path, operators)
        .unwrap()
        .with_clock(Arc::new(|| 10_000_u64));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address: SocketAddr = listener.local_addr().unwrap();
    tokio::spawn(api::serve(listener, api_state));
    let client = Client::new();
    let url = |path: &str| format!("http://{address}{path}");

    let (status, listed) = call(&client, url("/v1/runs?status=dead_lettered"), GRACE, None).await;
    assert_eq!(status, StatusCode::OK, "{listed}");
    let items = listed["items"].as_array().unwrap();
    assert_eq!(items.len(), 1, "only grace's tenant: {listed}");
    assert_eq!(items[0]["run_id"], "r1");
    assert_eq!(items[0]["resumes_as"], "running");
    assert!(items[0]["reason"].as_str().unwrap().contains("2 recoveries"));
    let version = items[0]["version"].as_u64().unwrap();
    let (_, theirs) = call(&client, url("/v1/runs?status=dead_lettered"), MALLORY, None).await;
    assert_eq!(theirs["items"][0]["run_id"], "g1");
    let (status, refused) = call(&client, url("/v1/runs"), GRACE, None).await;
    assert_eq!(
        (status, refused["code"].as_str()),
        (StatusCode::UNPROCESSABLE_ENTITY, Some("invalid_value"))
    );

    let resume = |reason: &str, expected_version: u64| json!({"reason": reason, "expected_version": expected_version});
    let (status, blank) = call(&client, url("/v1/runs/r1/resume"), GRACE, Some(resume(" ", version))).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{blank}");
    let (status, hidden) = call(
        &client,
        url("/v1/runs/r1/resume"),
        MALLORY,
        Some(resume("mine", version)),
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND, "another tenant's run: {hidden}");
    let (status, stale) = call(
        &client,
        url("/v1/runs/r1/resume"),
        GRACE,
        Some(resume("fixed", version + 1)),
    )
    .await;
    assert_eq!(
        (status, stale["code"].as_str()),
        (StatusCode::CONFLICT, Some("conflict")),
        "{stale}"
    );
    let (status, resumed) = call(
        &client,
        url("/v1/runs/r1/resume"),
        GRACE,
        Some(resume("fixed the model", version)),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{resumed}");
    assert_eq!(resumed["status"], "running");
    assert_eq!(resumed["version"].as_u64(), Some(version + 1));
    let (status, again) = call(
        &client,
        url("/v1/runs/r1/resume"),
        GRACE,
        Some(resume("again", version)),
    )
    .await;
    assert_eq!(status, StatusCode::CONFLICT, "resumed once: {again}");
    let (status, running) = call(
        &client,
        url("/v1/runs/r2/resume"),
        GRACE,
        Some(json!({"reason": "why not"})),
    )
    .await;
    assert_eq!(status, StatusCode::CONFLICT, "not dead-lettered: {running}");

    let history = ledger.run_history(Some("r1")).unwrap();
    let line = history
        .iter()
        .find(|entry| entry.event == RunEvent::Resumed)
        .expect("in the run's history");
    assert_eq!(line.actor, "grace");
    assert!(
        line.detail
            .as_deref()
            .is_some_and(|detail| detail.contains("fixed the model"))
    );
    let (_, after) = call(&client, url("/v1/runs?status=dead_lettered"), GRACE, None).await;
    assert_eq!(after["items"].as_array().map(Vec::len), Some(0));
}
