//! The operator HTTP API over real HTTP on loopback: the whole flow (list, resolve,
//! compensate, a paused run resumed), every error answer, tenant isolation, and a race
//! of sixteen operators on one key.

mod common;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use common::BillingServer;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use reqwest::{Client, Method, StatusCode};
use serde_json::{Value, json};
use twice_sim::api::{self, ApiState, Compensator, Effect, LookupError, Operators, UndoError};
use twice_sim::billing::Answer;
use twice_sim::checker::Outcome;
use twice_sim::drill::billing_target::BillingCompensator;
use twice_sim::ledger::{ExecutionRecord, Ledger, Recorded, ReserveRequest};
use twice_sim::level;
use twice_sim::runtime::key::IdempotencyKey;
use twice_sim::runtime::rules::{Outcome as AttemptOutcome, Status};
use twice_sim::runtime::run::{RunState, Settled, Told};
use twice_sim::runtime::tool::SideEffect;
use twice_sim::simulator::{Simulation, SimulationBuilder};

const ADA: &str = "ada-token-0123456789abcdef";
const GRACE: &str = "grace-token-0123456789abcdef";
const MALLORY: &str = "mallory-token-0123456789abcdef";

fn tokens_file(directory: &Path) -> PathBuf {
    let path = directory.join("tokens.ron");
    let text = format!(
        "// Operators of the test server.\n(\n    operators: [\n\
         (id: \"ada\", token_sha256: \"{}\", tenants: [\"default\", \"acme\"]),\n\
         (id: \"grace\", token_sha256: \"{}\", tenants: [\"default\"]),\n\
         (id: \"mallory\", token_sha256: \"{}\", tenants: [\"globex\"]),\n    ],\n)\n",
        api::hash_token(ADA),
        api::hash_token(GRACE),
        api::hash_token(MALLORY)
    );
    std::fs::write(&path, text).unwrap();
    path
}

/// Records every compensation it is asked for, so "exactly once" can be counted.
#[derive(Default)]
struct RecordingCompensator {
    calls: Mutex<Vec<String>>,
    fail: std::sync::atomic::AtomicBool,
}

impl RecordingCompensator {
    fn failing() -> RecordingCompensator {
        RecordingCompensator {
            fail: std::sync::atomic::AtomicBool::new(true),
            ..RecordingCompensator::default()
        }
    }

    fn calls(&self) -> Vec<String> {
        self.calls.lock().unwrap().clone()
    }

    fn set_failing(&self, fail: bool) {
        self.fail.store(fail, Ordering::SeqCst);
    }
}

impl Compensator for RecordingCompensator {
    fn has_compensation(&self, tool: &str) -> bool {
        tool == "issue_credit"
    }

    fn find_effect(&self, record: &ExecutionRecord) -> Result<Effect, LookupError> {
        Ok(Effect::Found {
            reference: format!("credit-of-{}", record.key),
            detail: format!("the credit of {}", record.key),
        })
    }

    fn compensate(&self, record: &ExecutionRecord, reference: &str) -> Result<String, UndoError> {
        assert_eq!(
            reference,
            format!("credit-of-{}", record.key),
            "the reference found is the one undone"
        );
        self.calls.lock().unwrap().push(record.key.to_string());
        if self.fail.load(Ordering::SeqCst) {
            Err(UndoError::Unknown("billing answered 503".into()))
        } else {
            Ok(format!("voided the credit of {}", record.key))
        }
    }
}

struct Server {
    base: String,
    client: Client,
}

async fn start(state: ApiState) -> Server {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address: SocketAddr = listener.local_addr().unwrap();
    tokio::spawn(api::serve(listener, state));
    Server {
        base: format!("http://{address}"),
        client: Client::new(),
    }
}

impl Server {
    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    async fn call(&self, method: Method, path: &str, token: Option<&str>, body: Option<Value>) -> (StatusCode, Value) {
        let mut request = self.client.request(method, self.url(path));
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        if let Some(body) = body {
            request = request.json(&body);
        }
        let response = request.send().await.unwrap();
        let status = response.status();
        let text = response.text().await.unwrap();
        let value = serde_json::from_str(&text).unwrap_or_else(|_| panic!("not JSON ({status}): {text}"));
        (status, value)
    }

    async fn get(&self, path: &str, token: &str) -> (StatusCode, Value) {
        self.call(Method::GET, path, Some(token), None).await
    }

    async fn post(&self, path: &str, token: &str, body: Value) -> (StatusCode, Value) {
        self.call(Method::POST, path, Some(token), Some(body)).await
    }
}

fn key(text: &str) -> IdempotencyKey {
    IdempotencyKey::parse(text).unwrap()
}

/// Reserves a call the way a worker does, leaving it `started` at `now_ms`.
fn reserve(ledger: &mut Ledger, tenant: &str, run: &str, call: &str, tool: &str, now_ms: u64) -> IdempotencyKey {
    let key = IdempotencyKey::per_call(run, call).unwrap();
    let arguments = json!({"account": "acct_ada", "amount_cents": 2500, "memo": format!("{run} {call}")}).to_string();
    let request =
        ReserveRequest::new(&key, run, call, tool, SideEffect::External, &arguments, "w1").with_tenant(tenant);
    ledger.reserve(&request, now_ms).unwrap();
    key
}

/// A ledger file with calls of three tenants, and a server on it.
struct Fixture {
    _directory: tempfile::TempDir,
    ledger: Ledger,
    compensator: Arc<RecordingCompensator>,
    server: Server,
}

async fn fixture_with(compensator: Option<RecordingCompensator>) -> Fixture {
    let directory = tempfile::tempdir().unwrap();
    let path = directory.path().join("ledger.sqlite");
    let mut ledger = Ledger::open(&path).unwrap();
    reserve(&mut ledger, "default", "r1", "c1", "issue_credit", 100);
    reserve(&mut ledger, "globex", "g1", "c1", "issue_credit", 50);
    reserve(&mut ledger, "default", "r2", "c1", "lookup_account", 120);
    let operators = Operators::load(&tokens_file(directory.path())).unwrap();
    let compensator = Arc::new(compensator.unwrap_or_default());
    let state = ApiState::open(&path, operators)
        .unwrap()
        .with_clock(Arc::new(|| 10_000_u64))
        .with_compensator(Arc::clone(&compensator) as Arc<dyn Compensator>);
    Fixture {
        _directory: directory,
        ledger,
        compensator,
        server: start(state).await,
    }
}

async fn fixture() -> Fixture {
    fixture_with(None).await
}

fn events(detail: &Value) -> Vec<String> {
    detail["history"]
        .as_array()
        .unwrap()
        .iter()
        .map(|entry| entry["event"].as_str().unwrap().to_owned())
        .collect()
}

// ----- the whole flow with a real paused run -----

fn levels() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../levels")
}

/// The campaign's tape of the ledger level with a mid-call crash, found by name whatever
/// the level's number in the campaign.
fn ledger_holds_mid_call_tape() -> PathBuf {
    std::fs::read_dir(levels())
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .find(|path| path.to_string_lossy().ends_with("-ledger-holds.mid-call.tape.ron"))
        .expect("levels/ has the ledger-holds level's mid-call tape")
}

/// The ledger level with the mid-call crash: the replay finds `started` and the run
/// pauses, parked on r1:c1, with its checkpoint saying `awaiting_reconciliation`.
fn paused_simulation(ledger_path: &Path) -> Simulation {
    let tape = level::load_tape(&ledger_holds_mid_call_tape()).unwrap();
    let mut simulation = SimulationBuilder::new(tape.level.level.clone(), tape.tape.seed)
        .actions(tape.tape.actions.clone())
        .ledger_file(ledger_path)
        .build()
        .unwrap();
    simulation
        .run_until(|simulation| simulation.timeline().last().is_some_and(|entry| entry.kind == "park"))
        .unwrap();
    assert!(!simulation.is_over(), "the level waits for the operator");
    let checkpoint = simulation
        .checkpoints()
        .unwrap()
        .into_iter()
        .find(|c| c.run_id == "r1")
        .unwrap();
    assert_eq!(checkpoint.status, "awaiting_reconciliation");
    simulation
}

fn run_state(simulation: &Simulation) -> (String, RunState) {
    let checkpoint = simulation
        .checkpoints()
        .unwrap()
        .into_iter()
        .find(|c| c.run_id == "r1")
        .unwrap();
    (
        checkpoint.status.clone(),
        RunState::from_json(&checkpoint.state).unwrap(),
    )
}

/// The game's way of sharing its clock: the server stamps decisions with the simulation's time.
fn shared_clock() -> (Arc<AtomicU64>, Arc<dyn api::Clock>) {
    let now = Arc::new(AtomicU64::new(0));
    let reader = Arc::clone(&now);
    (now, Arc::new(move || reader.load(Ordering::SeqCst)))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_operators_resolve_resumes_the_paused_run_with_the_truth() {
    let directory = tempfile::tempdir().unwrap();
    let ledger_path = directory.path().join("ledger.sqlite");
    let mut simulation = paused_simulation(&ledger_path);
    let (now, clock) = shared_clock();
    now.store(simulation.now_ms(), Ordering::SeqCst);
    let operators = Operators::load(&tokens_file(directory.path())).unwrap();
    let server = start(ApiState::open(&ledger_path, operators).unwrap().with_clock(clock)).await;

    // The operator sees the unknown call.
    let (status, page) = server.get("/v1/tool-executions?status=started", ADA).await;
    assert_eq!(status, StatusCode::OK, "{page}");
    let items = page["items"].as_array().unwrap();
    assert_eq!(items.len(), 1, "{page}");
    assert_eq!(items[0]["key"], "r1:c1");
    assert_eq!(items[0]["status"], "started");
    assert_eq!(items[0]["arguments"]["amount_cents"], 2500);
    assert_eq!(page["next_cursor"], Value::Null);

    // They look in billing, find the credit, and resolve with its receipt.
    let credit = simulation.billing().entries[0].clone();
    let receipt: Value = serde_json::from_str(
        &Answer::Applied {
            credit_id: credit.id.clone(),
            balance_cents: 2500,
        }
        .receipt(),
    )
    .unwrap();
    let (status, detail) = server
        .post(
            "/v1/tool-executions/r1:c1/resolve",
            ADA,
            json!({"status": "completed", "reason": format!("found {} in billing", credit.id),
                   "expected_status": "started", "result": receipt, "acknowledge_in_flight": true}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{detail}");
    assert_eq!(detail["record"]["status"], "completed");
    assert_eq!(detail["record"]["result"], receipt);
    let resolved = detail["history"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(resolved["event"], "resolved");
    assert_eq!(resolved["actor"], "ada", "the operator id comes from the token");
    assert_eq!(resolved["from_status"], "started");
    assert_eq!(resolved["to_status"], "completed");
    assert_eq!(resolved["at_ms"], simulation.now_ms(), "stamped with the game's clock");

    // The paused run notices, resumes, and the model is told the real result.
    assert_eq!(simulation.notice_settlements().unwrap(), 1);
    simulation.run().unwrap();
    let (checkpoint_status, state) = run_state(&simulation);
    assert_eq!(checkpoint_status, "completed");
    let receipt_text = receipt.to_string();
    assert!(
        state.transcript.iter().any(|(call, told)| call == "c1"
            && *told
                == Told::Result {
                    result: receipt_text.clone()
                }),
        "the model was told the receipt: {:?}",
        state.transcript
    );
    assert_eq!(simulation.billing().entries.len(), 1, "nothing was paid again");
    assert_eq!(simulation.verdict().unwrap().outcome, Outcome::PaidOnce);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compensation_runs_once_and_resumes_the_paused_run() {
    let directory = tempfile::tempdir().unwrap();
    let ledger_path = directory.path().join("ledger.sqlite");
    let mut simulation = paused_simulation(&ledger_path);
    let (now, clock) = shared_clock();
    now.store(simulation.now_ms(), Ordering::SeqCst);
    let operators = Operators::load(&tokens_file(directory.path())).unwrap();
    let compensator = Arc::new(RecordingCompensator::default());
    let state = ApiState::open(&ledger_path, operators)
        .unwrap()
        .with_clock(clock)
        .with_compensator(Arc::clone(&compensator) as Arc<dyn Compensator>);
    let server = start(state).await;

    let (status, detail) = server
        .post(
            "/v1/tool-executions/r1:c1/compensate",
            GRACE,
            json!({"reason": "refund landed twice on another channel; void this one"}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{detail}");
    assert_eq!(detail["record"]["status"], "compensated");
    let history = events(&detail);
    assert_eq!(
        &history[history.len() - 2..],
        ["compensation_claimed", "compensation_applied"]
    );
    assert_eq!(compensator.calls(), ["r1:c1"]);

    let (status, body) = server
        .post("/v1/tool-executions/r1:c1/compensate", ADA, json!({"reason": "again"}))
        .await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert_eq!(body["code"], "conflict");
    assert_eq!(body["current"]["status"], "compensated");
    assert_eq!(
        compensator.calls(),
        ["r1:c1"],
        "a second request does not compensate again"
    );

    assert_eq!(simulation.notice_settlements().unwrap(), 1);
    simulation.run().unwrap();
    let (_, state) = run_state(&simulation);
    assert!(
        state.transcript.iter().any(|(call, told)| call == "c1"
            && *told
                == Told::SettledByOperator {
                    settled: Settled::Compensated,
                    operator: "grace".into(),
                    reason: "refund landed twice on another channel; void this one".into(),
                }),
        "the model was told its call was compensated, by whom and why: {:?}",
        state.transcript
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resolving_a_started_call_is_refused_unless_the_operator_says_it_may_be_in_flight() {
    let fixture = fixture().await;
    // r1:c1 is `started`: its worker holds it, and its request may be on its way.
    let (status, body) = fixture
        .server
        .post(
            "/v1/tool-executions/r1:c1/resolve",
            ADA,
            json!({"status": "failed", "reason": "billing has no such credit"}),
        )
        .await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert_eq!(body["code"], "call_in_flight");
    assert_eq!(body["current"]["status"], "started");
    let message = body["error"].as_str().unwrap();
    assert!(
        message.contains("r1:c1 is started") && message.contains("on its way"),
        "{message}"
    );
    assert_eq!(
        fixture.ledger.record(&key("r1:c1")).unwrap().unwrap().status,
        Status::Started
    );
    let (status, detail) = fixture
        .server
        .post(
            "/v1/tool-executions/r1:c1/resolve",
            ADA,
            json!({"status": "failed", "reason": "w1 is gone and billing has no such credit", "acknowledge_in_flight": true}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{detail}");
    assert_eq!(detail["record"]["status"], "failed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_late_outcome_that_contradicts_a_decision_is_logged_as_a_contradiction_and_listed() {
    let mut fixture = fixture().await;
    let (status, detail) = fixture
        .server
        .post(
            "/v1/tool-executions/r1:c1/resolve",
            ADA,
            json!({"status": "failed", "reason": "billing has no such credit", "acknowledge_in_flight": true}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{detail}");
    let (status, page) = fixture.server.get("/v1/contradictions", ADA).await;
    assert_eq!(status, StatusCode::OK, "{page}");
    assert_eq!(page["items"], json!([]), "nothing contradicted yet");
    // The tool's own answer arrives afterwards: the operator's decision stands.
    let late = fixture
        .ledger
        .record_outcome(
            &key("r1:c1"),
            AttemptOutcome::Completed,
            Some("{\"credit_id\":\"cr_9\"}"),
            "w1",
            0,
            20_000,
        )
        .unwrap();
    assert!(matches!(late, Recorded::LateOutcomeIgnored(_)), "{late:?}");
    let (status, detail) = fixture.server.get("/v1/tool-executions/r1:c1", ADA).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(detail["record"]["status"], "failed");
    assert_eq!(detail["record"]["result"], Value::Null);
    let last = detail["history"].as_array().unwrap().last().unwrap();
    assert_eq!(last["event"], "contradicted");
    assert_eq!(last["actor"], "w1");
    let said = last["detail"].as_str().unwrap();
    assert!(
        said.contains("settled failed, but attempt 0's answer says completed"),
        "{last}"
    );
    assert_eq!(events(&detail), ["reserved", "resolved", "contradicted"]);
    // The operator API lists it, to the call's tenant only.
    let (status, page) = fixture.server.get("/v1/contradictions", ADA).await;
    assert_eq!(status, StatusCode::OK, "{page}");
    let items = page["items"].as_array().unwrap();
    assert_eq!(items.len(), 1, "{page}");
    assert_eq!(items[0]["key"], "r1:c1");
    assert_eq!(items[0]["event"], "contradicted");
    assert_eq!(items[0]["from_status"], "failed");
    let (status, page) = fixture.server.get("/v1/contradictions", MALLORY).await;
    assert_eq!(status, StatusCode::OK, "{page}");
    assert_eq!(page["items"], json!([]), "another tenant sees none of it");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn listing_shows_the_callers_tenants_longest_waiting_first_in_pages() {
    let mut fixture = fixture().await;
    // Ada acts for default and acme; globex's calls must never show.
    let mut expected = vec![(100, "r1:c1".to_owned()), (120, "r2:c1".to_owned())];
    for number in 0..9_u64 {
        let (tenant, run) = if number % 3 == 0 {
            ("acme", "a")
        } else {
            ("default", "d")
        };
        // Equal times on purpose: the key breaks ties, and pages must not split them wrongly.
        let at_ms = 200 + (number / 2) * 10;
        let key = reserve(
            &mut fixture.ledger,
            tenant,
            &format!("{run}{number}"),
            "c1",
            "issue_credit",
            at_ms,
        );
        expected.push((at_ms, key.to_string()));
        reserve(
            &mut fixture.ledger,
            "globex",
            &format!("gx{number}"),
            "c1",
            "issue_credit",
            at_ms,
        );
    }
    expected.sort();
    let expected: Vec<String> = expected.into_iter().map(|(_, key)| key).collect();

    let mut seen = Vec::new();
    let mut cursor: Option<String> = None;
    let mut pages = 0;
    loop {
        let path = match &cursor {
            Some(cursor) => format!("/v1/tool-executions?limit=4&cursor={cursor}"),
            None => "/v1/tool-executions?limit=4".to_owned(),
        };
        let (status, page) = fixture.server.get(&path, ADA).await;
        assert_eq!(status, StatusCode::OK, "{page}");
        let items = page["items"].as_array().unwrap();
        assert!(items.len() <= 4);
        for item in items {
            assert_ne!(item["tenant"], "globex", "{item}");
            seen.push(item["key"].as_str().unwrap().to_owned());
        }
        pages += 1;
        match page["next_cursor"].as_str() {
            Some(next) => cursor = Some(next.to_owned()),
            None => break,
        }
        assert!(pages < 10, "pagination must end");
    }
    assert_eq!(seen, expected, "every record once, longest-waiting first");
    assert_eq!(pages, 3);

    // Mallory (globex only) sees globex's and nothing else.
    let (_, page) = fixture.server.get("/v1/tool-executions?limit=200", MALLORY).await;
    let tenants: Vec<&str> = page["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|item| item["tenant"].as_str().unwrap())
        .collect();
    assert_eq!(tenants.len(), 10);
    assert!(tenants.iter().all(|tenant| *tenant == "globex"));

    // The status filter.
    let (status, _) = fixture
        .server
        .post(
            "/v1/tool-executions/r2:c1/resolve",
            GRACE,
            json!({"status": "failed", "reason": "never sent", "acknowledge_in_flight": true}),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    let (_, page) = fixture.server.get("/v1/tool-executions?status=failed", ADA).await;
    let keys: Vec<&str> = page["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|item| item["key"].as_str().unwrap())
        .collect();
    assert_eq!(keys, ["r2:c1"]);
    let (_, page) = fixture
        .server
        .get("/v1/tool-executions?status=started&limit=200", ADA)
        .await;
    assert_eq!(page["items"].as_array().unwrap().len(), expected.len() - 1);

    // `unknown`: started and indeterminate together, still longest-waiting first.
    fixture
        .ledger
        .record_outcome(&key("d1:c1"), AttemptOutcome::Indeterminate, None, "w1", 0, 300)
        .unwrap();
    let (status, page) = fixture
        .server
        .get("/v1/tool-executions?status=unknown&limit=200", ADA)
        .await;
    assert_eq!(status, StatusCode::OK, "{page}");
    let listed: Vec<(u64, String, String)> = page["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|item| {
            (
                item["updated_at_ms"].as_u64().unwrap(),
                item["key"].as_str().unwrap().to_owned(),
                item["status"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        listed.len(),
        expected.len() - 1,
        "every call but the failed one: {listed:?}"
    );
    assert!(listed.is_sorted(), "{listed:?}");
    assert_eq!(
        listed.last().map(|(_, key, status)| (key.as_str(), status.as_str())),
        Some(("d1:c1", "indeterminate"))
    );
    let (_, page) = fixture
        .server
        .get("/v1/tool-executions?status=indeterminate", ADA)
        .await;
    assert_eq!(page["items"].as_array().unwrap().len(), 1);
}

// ----- the race -----

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn of_sixteen_concurrent_resolves_exactly_one_wins() {
    let fixture = fixture().await;
    let server = Arc::new(fixture.server);
    let barrier = Arc::new(tokio::sync::Barrier::new(16));
    let mut tasks = Vec::new();
    for number in 0..16 {
        let server = Arc::clone(&server);
        let barrier = Arc::clone(&barrier);
        tasks.push(tokio::spawn(async move {
            let (token, status) = if number % 2 == 0 { (ADA, "completed") } else { (GRACE, "failed") };
            barrier.wait().await;
            let (code, body) = server
                .post(
                    "/v1/tool-executions/r1:c1/resolve",
                    token,
                    json!({"status": status, "reason": format!("operator {number} decided"), "expected_status": "started", "acknowledge_in_flight": true}),
                )
                .await;
            (number, code, body)
        }));
    }
    let mut winners = Vec::new();
    let mut losers = Vec::new();
    for task in tasks {
        let (number, code, body) = task.await.unwrap();
        match code {
            StatusCode::OK => winners.push((number, body)),
            StatusCode::CONFLICT => losers.push(body),
            other => panic!("operator {number} got {other}: {body}"),
        }
    }
    assert_eq!(winners.len(), 1, "exactly one operator wins");
    assert_eq!(losers.len(), 15);
    let (winner, detail) = &winners[0];
    let decided = detail["record"]["status"].clone();
    assert_eq!(decided, if winner % 2 == 0 { "completed" } else { "failed" });
    for loser in &losers {
        assert_eq!(loser["code"], "conflict");
        assert_eq!(
            loser["current"]["status"], decided,
            "the loser sees what the winner decided"
        );
        assert_eq!(loser["current"]["key"], "r1:c1");
    }
    let history = fixture.ledger.history(&key("r1:c1")).unwrap();
    assert_eq!(
        history.iter().filter(|entry| entry.event.name() == "resolved").count(),
        1
    );
}

// ----- compensation refusals -----

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compensate_refuses_what_cannot_or_must_not_be_compensated() {
    let fixture = fixture().await;
    // A tool without compensation: refused before anything is claimed.
    let (status, body) = fixture
        .server
        .post(
            "/v1/tool-executions/r2:c1/compensate",
            ADA,
            json!({"reason": "undo the lookup"}),
        )
        .await;
    assert_eq!(
        (status, body["code"].as_str()),
        (StatusCode::UNPROCESSABLE_ENTITY, Some("no_compensation")),
        "{body}"
    );
    assert_eq!(
        fixture.ledger.record(&key("r2:c1")).unwrap().unwrap().status,
        Status::Started
    );
    // A call resolved as failed did not take effect: nothing to undo.
    fixture
        .server
        .post(
            "/v1/tool-executions/r1:c1/resolve",
            ADA,
            json!({"status": "failed", "reason": "not in billing", "acknowledge_in_flight": true}),
        )
        .await;
    let (status, body) = fixture
        .server
        .post(
            "/v1/tool-executions/r1:c1/compensate",
            ADA,
            json!({"reason": "just in case"}),
        )
        .await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert_eq!(body["current"]["status"], "failed");
    assert!(fixture.compensator.calls().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_compensation_stays_compensating_visible_and_a_retry_finishes_it() {
    let fixture = fixture_with(Some(RecordingCompensator::failing())).await;
    let (status, body) = fixture
        .server
        .post(
            "/v1/tool-executions/r1:c1/compensate",
            ADA,
            json!({"reason": "void it"}),
        )
        .await;
    assert_eq!(status, StatusCode::BAD_GATEWAY, "{body}");
    assert_eq!(body["code"], "compensation_failed");
    assert!(
        body["error"].as_str().unwrap().contains("billing answered 503"),
        "{body}"
    );
    assert_eq!(
        body["current"]["status"], "compensating",
        "claimed, not done: it does not read as compensated"
    );
    // Nothing retries by itself; the record is listed by its own status.
    let (status, page) = fixture.server.get("/v1/tool-executions?status=compensating", ADA).await;
    assert_eq!(status, StatusCode::OK, "{page}");
    let listed: Vec<&str> = page["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|item| item["key"].as_str().unwrap())
        .collect();
    assert_eq!(listed, ["r1:c1"]);
    assert_eq!(fixture.compensator.calls(), ["r1:c1"]);
    let (_, detail) = fixture.server.get("/v1/tool-executions/r1:c1", ADA).await;
    assert_eq!(
        events(&detail),
        ["reserved", "compensation_claimed", "compensation_failed"]
    );
    // The documented retry: ask again. The undo by reference is idempotent in the world, so a
    // retry never undoes twice; this time it works, and the record says so.
    fixture.compensator.set_failing(false);
    let (status, detail) = fixture
        .server
        .post(
            "/v1/tool-executions/r1:c1/compensate",
            ADA,
            json!({"reason": "billing is back; finish the void"}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{detail}");
    assert_eq!(detail["record"]["status"], "compensated");
    assert_eq!(fixture.compensator.calls(), ["r1:c1", "r1:c1"]);
    assert_eq!(
        events(&detail),
        [
            "reserved",
            "compensation_claimed",
            "compensation_failed",
            "compensation_applied"
        ]
    );
    let (status, _) = fixture
        .server
        .post("/v1/tool-executions/r1:c1/compensate", ADA, json!({"reason": "again"}))
        .await;
    assert_eq!(status, StatusCode::CONFLICT, "a finished compensation is not run again");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compensate_without_a_target_says_so() {
    let directory = tempfile::tempdir().unwrap();
    let path = directory.path().join("ledger.sqlite");
    let mut ledger = Ledger::open(&path).unwrap();
    reserve(&mut ledger, "default", "r1", "c1", "issue_credit", 100);
    let operators = Operators::load(&tokens_file(directory.path())).unwrap();
    let server = start(ApiState::open(&path, operators).unwrap()).await;
    let (status, body) = server
        .post(
            "/v1/tool-executions/r1:c1/compensate",
            ADA,
            json!({"reason": "void it"}),
        )
        .await;
    assert_eq!(status, StatusCode::NOT_IMPLEMENTED, "{body}");
    assert_eq!(body["code"], "no_compensation_target");
    assert!(
        body["error"]
            .as_str()
            .unwrap()
            .contains("no compensation target configured")
    );
    assert_eq!(ledger.record(&key("r1:c1")).unwrap().unwrap().status, Status::Started);
}

// ----- every error answer -----

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn authentication_is_required_and_checked() {
    let fixture = fixture().await;
    let server = &fixture.server;
    let cases: Vec<(&str, Option<String>)> = vec![
        ("no header", None),
        ("wrong token", Some("Bearer ada-token-0123456789abcdeX".into())),
        (
            "the hash instead of the token",
            Some(format!("Bearer {}", api::hash_token(ADA))),
        ),
        ("another scheme", Some("Basic YWRhOmFkYQ==".into())),
        ("no token", Some("Bearer".into())),
        ("a huge token", Some(format!("Bearer {}", "x".repeat(4_000)))),
    ];
    for (what, header) in cases {
        for (method, path) in [
            (Method::GET, "/v1/tool-executions"),
            (Method::GET, "/v1/tool-executions/r1:c1"),
            (Method::POST, "/v1/tool-executions/r1:c1/resolve"),
            (Method::POST, "/v1/tool-executions/r1:c1/compensate"),
        ] {
            let mut request = server.client.request(method.clone(), server.url(path));
            if let Some(header) = &header {
                request = request.header("authorization", header);
            }
            let response = request
                .json(&json!({"reason": "x", "status": "failed"}))
                .send()
                .await
                .unwrap();
            assert_eq!(response.status(), StatusCode::UNAUTHORIZED, "{what}: {method} {path}");
            assert!(response.headers().get("www-authenticate").is_some(), "{what}");
            let body: Value = response.json().await.unwrap();
            assert_eq!(body["code"], "unauthorized", "{what}: {body}");
        }
    }
    // Nothing was decided by any of them.
    assert_eq!(fixture.ledger.history(&key("r1:c1")).unwrap().len(), 1);
    // The scheme is case-insensitive, as HTTP says.
    let response = server
        .client
        .get(server.url("/v1/tool-executions"))
        .header("authorization", format!("bearer {ADA}"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_tenants_record_is_answered_exactly_like_a_missing_one() {
    let fixture = fixture().await;
    let server = &fixture.server;
    // g1:c1 exists (tenant globex); g9:c9 does not. Ada may not see globex.
    for (method, suffix, body) in [
        (Method::GET, "", None),
        (
            Method::POST,
            "/resolve",
            Some(json!({"status": "failed", "reason": "mine now"})),
        ),
        (Method::POST, "/compensate", Some(json!({"reason": "mine now"}))),
    ] {
        let (status_existing, existing) = server
            .call(
                method.clone(),
                &format!("/v1/tool-executions/g1:c1{suffix}"),
                Some(ADA),
                body.clone(),
            )
            .await;
        let (status_missing, missing) = server
            .call(
                method.clone(),
                &format!("/v1/tool-executions/g9:c9{suffix}"),
                Some(ADA),
                body.clone(),
            )
            .await;
        assert_eq!(status_existing, StatusCode::NOT_FOUND, "{method} {suffix}: {existing}");
        assert_eq!(status_missing, StatusCode::NOT_FOUND);
        assert_eq!(
            existing["error"].as_str().unwrap().replace("g1:c1", "KEY"),
            missing["error"].as_str().unwrap().replace("g9:c9", "KEY"),
            "the answers differ only by the key asked for"
        );
        assert_eq!(existing.as_object().unwrap().len(), missing.as_object().unwrap().len());
    }
    let globex = fixture.ledger.record(&key("g1:c1")).unwrap().unwrap();
    assert_eq!(globex.status, Status::Started, "untouched");
    assert!(fixture.compensator.calls().is_empty());
    // Its own operator sees it.
    let (status, _) = server.get("/v1/tool-executions/g1:c1", MALLORY).await;
    assert_eq!(status, StatusCode::OK);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_requests_get_clear_json_errors_and_change_nothing() {
    let fixture = fixture().await;
    let server = &fixture.server;
    let resolve = "/v1/tool-executions/r1:c1/resolve";
    let json_cases: Vec<(&str, Value, StatusCode, &str, &str)> = vec![
        (
            "empty reason",
            json!({"status": "failed", "reason": ""}),
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_value",
            "reason",
        ),
        (
            "blank reason",
            json!({"status": "failed", "reason": "  \n\t"}),
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_value",
            "reason",
        ),
        (
            "long reason",
            json!({"status": "failed", "reason": "x".repeat(2_001)}),
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_value",
            "2001 characters",
        ),
        (
            "no reason",
            json!({"status": "failed"}),
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_body",
            "missing field `reason`",
        ),
        (
            "no status",
            json!({"reason": "x"}),
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_body",
            "missing field `status`",
        ),
        (
            "started is no decision",
            json!({"status": "started", "reason": "x"}),
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_value",
            "completed or failed",
        ),
        (
            "compensated via resolve",
            json!({"status": "compensated", "reason": "x"}),
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_value",
            "completed or failed",
        ),
        (
            "unknown status",
            json!({"status": "done", "reason": "x"}),
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_value",
            "`done` is not a status",
        ),
        (
            "bad expected",
            json!({"status": "failed", "reason": "x", "expected_status": "pending"}),
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_value",
            "expected_status",
        ),
        (
            "result on failed",
            json!({"status": "failed", "reason": "x", "result": {"a": 1}}),
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_value",
            "result",
        ),
        (
            "huge result",
            json!({"status": "completed", "reason": "x", "result": "y".repeat(20_000)}),
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_value",
            "result",
        ),
        (
            "unknown field",
            json!({"status": "failed", "reason": "x", "operator": "root"}),
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_body",
            "unknown field `operator`",
        ),
        (
            "wrong type",
            json!({"status": 1, "reason": "x"}),
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_body",
            "invalid type",
        ),
        (
            "not an object",
            json!(["failed"]),
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_body",
            "body",
        ),
    ];
    for (what, body, status, code, mentions) in json_cases {
        let (got, answer) = server.post(resolve, ADA, body).await;
        assert_eq!((got, answer["code"].as_str()), (status, Some(code)), "{what}: {answer}");
        assert!(answer["error"].as_str().unwrap().contains(mentions), "{what}: {answer}");
    }
    // Unknown fields on compensate too, and its reason is checked like resolve's.
    let (got, answer) = server
        .post(
            "/v1/tool-executions/r1:c1/compensate",
            ADA,
            json!({"reason": "x", "force": true}),
        )
        .await;
    assert_eq!(
        (got, answer["code"].as_str()),
        (StatusCode::UNPROCESSABLE_ENTITY, Some("invalid_body"))
    );
    let (got, _) = server
        .post("/v1/tool-executions/r1:c1/compensate", ADA, json!({"reason": " "}))
        .await;
    assert_eq!(got, StatusCode::UNPROCESSABLE_ENTITY);

    // Bodies that are not JSON, too large, or of another type.
    let raw_cases: Vec<(&str, &str, Vec<u8>, StatusCode, &str)> = vec![
        (
            "malformed",
            "application/json",
            b"{\"status\": \"failed\",".to_vec(),
            StatusCode::BAD_REQUEST,
            "malformed_json",
        ),
        (
            "trailing",
            "application/json",
            b"{\"status\":\"failed\",\"reason\":\"x\"} {}".to_vec(),
            StatusCode::BAD_REQUEST,
            "malformed_json",
        ),
        (
            "empty",
            "application/json",
            Vec::new(),
            StatusCode::BAD_REQUEST,
            "malformed_json",
        ),
        (
            "not utf-8",
            "application/json",
            vec![0xff, 0xfe, 0x00],
            StatusCode::BAD_REQUEST,
            "malformed_json",
        ),
        (
            "form",
            "application/x-www-form-urlencoded",
            b"status=failed".to_vec(),
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "unsupported_media_type",
        ),
        (
            "no type",
            "",
            b"{}".to_vec(),
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "unsupported_media_type",
        ),
        (
            "too large",
            "application/json",
            format!("{{\"status\":\"failed\",\"reason\":\"{}\"}}", "x".repeat(70_000)).into_bytes(),
            StatusCode::PAYLOAD_TOO_LARGE,
            "payload_too_large",
        ),
    ];
    for (what, content_type, bytes, status, code) in raw_cases {
        let mut request = server.client.post(server.url(resolve)).bearer_auth(ADA).body(bytes);
        // An empty content type stands for none sent.
        if !content_type.is_empty() {
            request = request.header("content-type", content_type);
        }
        let response = request.send().await.unwrap();
        assert_eq!(response.status(), status, "{what}");
        let answer: Value = response.json().await.unwrap();
        assert_eq!(answer["code"], code, "{what}: {answer}");
    }
    // JSON with a charset parameter is still JSON.
    let response = server
        .client
        .post(server.url("/v1/tool-executions/r9:c9/resolve"))
        .bearer_auth(ADA)
        .header("content-type", "application/json; charset=utf-8")
        .body(r#"{"status":"failed","reason":"x"}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::NOT_FOUND, "unknown keys are 404");

    // Query strings.
    for (query, mentions) in [
        ("status=pending", "`pending` is not a status"),
        ("status=pending", "unknown: started and indeterminate"),
        ("limit=0", "limit"),
        ("limit=201", "limit"),
        ("limit=ten", "limit"),
        ("limit=-1", "limit"),
        ("cursor=abc", "cursor"),
        ("cursor=c1zz", "cursor"),
        ("order=desc", "unknown field `order`"),
        ("status=started&status=failed", "duplicate field"),
    ] {
        let (status, answer) = server.get(&format!("/v1/tool-executions?{query}"), ADA).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{query}: {answer}");
        assert!(
            answer["error"].as_str().unwrap().contains(mentions),
            "{query}: {answer}"
        );
    }

    // Keys, routes and methods.
    let (status, answer) = server.get("/v1/tool-executions/r1%20c1", ADA).await;
    assert_eq!(
        (status, answer["code"].as_str()),
        (StatusCode::UNPROCESSABLE_ENTITY, Some("invalid_value")),
        "{answer}"
    );
    let (status, answer) = server
        .get(&format!("/v1/tool-executions/{}", "k".repeat(201)), ADA)
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{answer}");
    let (status, answer) = server.get("/v1/tool-executions/%FF%FE", ADA).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{answer}");
    let (status, answer) = server.get("/v1/tool-executions/nope:c1", ADA).await;
    assert_eq!(
        (status, answer["code"].as_str()),
        (StatusCode::NOT_FOUND, Some("not_found"))
    );
    let (status, answer) = server.get("/v1/ledger", ADA).await;
    assert_eq!(
        (status, answer["code"].as_str()),
        (StatusCode::NOT_FOUND, Some("no_such_route"))
    );
    let (status, answer) = server
        .call(Method::DELETE, "/v1/tool-executions/r1:c1", Some(ADA), None)
        .await;
    assert_eq!(
        (status, answer["code"].as_str()),
        (StatusCode::METHOD_NOT_ALLOWED, Some("method_not_allowed"))
    );
    let (status, _) = server
        .call(Method::GET, "/v1/tool-executions/r1:c1/resolve", Some(ADA), None)
        .await;
    assert_eq!(status, StatusCode::METHOD_NOT_ALLOWED);

    // A stale compare-and-set: 409 with the record as it stands.
    let (status, answer) = server
        .post(
            resolve,
            ADA,
            json!({"status": "failed", "reason": "x", "expected_status": "indeterminate"}),
        )
        .await;
    assert_eq!(status, StatusCode::CONFLICT, "{answer}");
    assert_eq!(answer["current"]["status"], "started");
    assert!(
        answer["error"].as_str().unwrap().contains("someone decided first"),
        "{answer}"
    );

    // After all that, r1:c1 is exactly as it was.
    assert_eq!(fixture.ledger.history(&key("r1:c1")).unwrap().len(), 1);
    assert_eq!(
        fixture.ledger.record(&key("r1:c1")).unwrap().unwrap().status,
        Status::Started
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_settled_decision_is_never_overwritten() {
    let fixture = fixture().await;
    let resolve = "/v1/tool-executions/r1:c1/resolve";
    let (status, _) = fixture
        .server
        .post(
            resolve,
            ADA,
            json!({"status": "completed", "reason": "found it", "result": "cr_0001", "acknowledge_in_flight": true}),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    let (_, detail) = fixture.server.get("/v1/tool-executions/r1:c1", ADA).await;
    assert_eq!(
        detail["record"]["result"], "cr_0001",
        "the result comes back as it was sent"
    );
    for body in [
        json!({"status": "failed", "reason": "changed my mind"}),
        json!({"status": "failed", "reason": "changed my mind", "expected_status": "completed"}),
        json!({"status": "completed", "reason": "again", "expected_status": "started"}),
    ] {
        let (status, answer) = fixture.server.post(resolve, GRACE, body.clone()).await;
        assert_eq!(status, StatusCode::CONFLICT, "{body}: {answer}");
        assert_eq!(answer["current"]["status"], "completed");
        assert_eq!(answer["current"]["result"], "cr_0001");
    }
}

// ----- no input makes it fall over -----

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn random_requests_never_get_a_500() {
    let fixture = fixture().await;
    let server = &fixture.server;
    let mut random = ChaCha8Rng::seed_from_u64(6);
    let paths = [
        "/v1/tool-executions",
        "/v1/tool-executions/r1:c1",
        "/v1/tool-executions/r1:c1/resolve",
        "/v1/tool-executions/r1:c1/compensate",
        "/v1/tool-executions/g1:c1/resolve",
        "/v1/tool-executions/%00/resolve",
        "/v1/tool-executions/a%2Fb",
        "/v1/tool-executions/%E2%9C%93:c1",
        "/v1//resolve",
        "/",
    ];
    let queries = [
        "",
        "?limit=1",
        "?cursor=c1",
        "?status=",
        "?limit=99999999999999999999",
        "?%ZZ=1",
        "?status=failed&limit=3",
    ];
    let fragments = [
        "{",
        "}",
        "[",
        "]",
        "\"status\"",
        "\"reason\"",
        "\"result\"",
        "\"expected_status\"",
        ":",
        ",",
        "\"failed\"",
        "\"completed\"",
        "null",
        "1e999",
        "-0",
        "\"\\u0000\"",
        "\"\\ud800\"",
        "true",
        "{\"a\":",
        "\"x\"",
    ];
    let methods = [Method::GET, Method::POST, Method::PUT, Method::PATCH, Method::DELETE];
    for _ in 0..300 {
        let path = format!(
            "{}{}",
            paths[random.random_range(0..paths.len())],
            queries[random.random_range(0..queries.len())]
        );
        let method = methods[random.random_range(0..methods.len())].clone();
        let body: Vec<u8> = if random.random_bool(0.3) {
            (0..random.random_range(0..64)).map(|_| random.random()).collect()
        } else {
            (0..random.random_range(0..24))
                .map(|_| fragments[random.random_range(0..fragments.len())])
                .collect::<String>()
                .into_bytes()
        };
        let token = [ADA, MALLORY, "nobody-0123456789abcdef"][random.random_range(0..3)];
        let response = server
            .client
            .request(method.clone(), server.url(&path))
            .bearer_auth(token)
            .header("content-type", "application/json")
            .body(body.clone())
            .send()
            .await
            .unwrap();
        let status = response.status();
        let text = response.text().await.unwrap();
        assert!(
            status.is_success() || status.is_client_error() || status == StatusCode::NOT_IMPLEMENTED,
            "{method} {path} {:?} → {status}: {text}",
            String::from_utf8_lossy(&body)
        );
        let answer: Value = serde_json::from_str(&text).unwrap_or_else(|_| panic!("not JSON: {text}"));
        if !status.is_success() {
            assert!(answer["error"].is_string() && answer["code"].is_string(), "{answer}");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_stalls_is_cut_off_and_others_are_served() {
    use std::io::{Read, Write};
    let directory = tempfile::tempdir().unwrap();
    let path = directory.path().join("ledger.sqlite");
    let mut ledger = Ledger::open(&path).unwrap();
    reserve(&mut ledger, "default", "r1", "c1", "issue_credit", 100);
    let operators = Operators::load(&tokens_file(directory.path())).unwrap();
    let idle = std::time::Duration::from_millis(300);
    let server = start(ApiState::open(&path, operators).unwrap().with_idle_timeout(idle)).await;
    let address = server.base.trim_start_matches("http://").to_owned();
    // Half a request, then silence: the server hangs up once the idle timeout has passed.
    let stalled = tokio::task::spawn_blocking(move || {
        let mut stream = std::net::TcpStream::connect(&address).unwrap();
        stream
            .set_read_timeout(Some(std::time::Duration::from_secs(10)))
            .unwrap();
        stream
            .write_all(b"POST /v1/tool-executions/r1:c1/resolve HTTP/1.1\r\nHost: x\r\nContent-Length: 40\r\n")
            .unwrap();
        let started = std::time::Instant::now();
        let mut answer = String::new();
        let read = stream.read_to_string(&mut answer);
        (started.elapsed(), read.map(|_| answer).map_err(|error| error.kind()))
    });
    // Meanwhile a well-behaved client is served.
    let (status, _) = server.get("/v1/tool-executions/r1:c1", ADA).await;
    assert_eq!(status, StatusCode::OK);
    let (waited, read) = stalled.await.unwrap();
    let answer = read.unwrap_or_else(|kind| panic!("the server answers before closing, not {kind:?}"));
    assert!(answer.starts_with("HTTP/1.1 408 "), "{answer}");
    assert!(answer.contains(r#""code":"request_timeout""#), "{answer}");
    assert!(
        waited >= idle - std::time::Duration::from_millis(50),
        "not before the timeout: {waited:?}"
    );
    assert!(waited < std::time::Duration::from_secs(5), "soon after it: {waited:?}");
    assert_eq!(
        ledger.history(&key("r1:c1")).unwrap().len(),
        1,
        "half a request decides nothing"
    );
}

// ----- the command line -----

fn binary() -> std::process::Command {
    std::process::Command::new(common::BIN)
}

/// Kills the server process when the test ends, however it ends.
struct Child(std::process::Child);

impl Drop for Child {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts `twice-sim serve` on a free port over `ledger` (with `extra` flags) and reads
/// the line it prints when it listens.
async fn serve_process(ledger: &Path, tokens: &Path, extra: &[&str]) -> (Child, String) {
    use std::io::BufRead;
    let mut child = Child(
        binary()
            .args(["serve", "--addr", "127.0.0.1:0", "--ledger"])
            .arg(ledger)
            .arg("--tokens")
            .arg(tokens)
            .args(extra)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let stdout = child.0.stdout.take().unwrap();
    let line = tokio::task::spawn_blocking(move || {
        let mut line = String::new();
        std::io::BufReader::new(stdout).read_line(&mut line).unwrap();
        line
    })
    .await
    .unwrap();
    (child, line)
}

/// A client of the server whose listening line is `line`.
fn server_from(line: &str) -> Server {
    let base = line
        .split_whitespace()
        .find(|word| word.starts_with("http://"))
        .unwrap_or_else(|| panic!("no address in: {line}"))
        .trim_end_matches("/v1/tool-executions")
        .to_owned();
    Server {
        base,
        client: Client::new(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn twice_sim_serve_answers_over_http() {
    let directory = tempfile::tempdir().unwrap();
    let ledger_path = directory.path().join("ledger.sqlite");
    let mut ledger = Ledger::open(&ledger_path).unwrap();
    reserve(&mut ledger, "default", "r1", "c1", "issue_credit", 100);
    let (child, line) = serve_process(&ledger_path, &tokens_file(directory.path()), &[]).await;
    assert!(line.contains("no compensation target configured"), "{line}");
    let server = server_from(&line);
    let (status, page) = server.get("/v1/tool-executions", ADA).await;
    assert_eq!(status, StatusCode::OK, "{page}");
    assert_eq!(page["items"][0]["key"], "r1:c1");
    let (status, body) = server
        .post(
            "/v1/tool-executions/r1:c1/compensate",
            ADA,
            json!({"reason": "void it"}),
        )
        .await;
    assert_eq!(status, StatusCode::NOT_IMPLEMENTED, "{body}");
    let (status, body) = server
        .post(
            "/v1/tool-executions/r1:c1/resolve",
            ADA,
            json!({"status": "failed", "reason": "not in billing", "acknowledge_in_flight": true}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(ledger.record(&key("r1:c1")).unwrap().unwrap().status, Status::Failed);
    drop(child);
}

#[test]
fn twice_sim_serve_refuses_bad_setups_with_exit_code_2() {
    let directory = tempfile::tempdir().unwrap();
    let ledger_path = directory.path().join("ledger.sqlite");
    Ledger::open(&ledger_path).unwrap();
    let tokens = tokens_file(directory.path());
    let broken_tokens = directory.path().join("broken.ron");
    std::fs::write(
        &broken_tokens,
        "(\n    operators: [\n        (id: \"ada\", token_sha256: \"abc\", tenants: [\"default\"]),\n    ],\n)\n",
    )
    .unwrap();
    let not_a_ledger = directory.path().join("notes.txt");
    std::fs::write(&not_a_ledger, "these are notes, not a ledger\n".repeat(200)).unwrap();
    let run = |ledger: &Path, tokens: &Path, extra: &[&str]| {
        let output = binary()
            .arg("serve")
            .arg("--ledger")
            .arg(ledger)
            .arg("--tokens")
            .arg(tokens)
            .args(extra)
            .output()
            .unwrap();
        (
            output.status.code(),
            String::from_utf8_lossy(&output.stderr).into_owned(),
        )
    };
    let (code, stderr) = run(&ledger_path, &tokens, &["--addr", "0.0.0.0:0"]);
    assert_eq!(code, Some(2));
    assert!(
        stderr.contains("not a loopback address") && stderr.contains("--allow-non-loopback"),
        "{stderr}"
    );
    let (code, stderr) = run(
        &directory.path().join("missing.sqlite"),
        &tokens,
        &["--addr", "127.0.0.1:0"],
    );
    assert_eq!(code, Some(2));
    assert!(stderr.contains("does not exist"), "{stderr}");
    assert!(
        !directory.path().join("missing.sqlite").exists(),
        "a missing ledger is not created"
    );
    let (code, stderr) = run(&not_a_ledger, &tokens, &["--addr", "127.0.0.1:0"]);
    assert_eq!(code, Some(2));
    assert!(stderr.contains("not a"), "{stderr}");
    let (code, stderr) = run(&ledger_path, &broken_tokens, &["--addr", "127.0.0.1:0"]);
    assert_eq!(code, Some(2));
    assert!(
        stderr.contains("broken.ron:3:") && stderr.contains("64 hexadecimal digits"),
        "{stderr}"
    );
    let (code, stderr) = run(&ledger_path, &tokens, &["--addr", "localhost"]);
    assert_eq!(code, Some(2));
    assert!(stderr.contains("--addr"), "{stderr}");
    let (code, stderr) = run(
        &ledger_path,
        &tokens,
        &["--addr", "127.0.0.1:0", "--billing-url", "https://127.0.0.1:7879"],
    );
    assert_eq!(code, Some(2));
    assert!(
        stderr.contains("--billing-url") && stderr.contains("http://"),
        "{stderr}"
    );
    // Port 1 on loopback: nothing listens there.
    let (code, stderr) = run(
        &ledger_path,
        &tokens,
        &["--addr", "127.0.0.1:0", "--billing-url", "http://127.0.0.1:1"],
    );
    assert_eq!(code, Some(2));
    assert!(
        stderr.contains("--billing-url")
            && stderr.contains("http://127.0.0.1:1 cannot be reached")
            && stderr.contains("twice-sim billing"),
        "{stderr}"
    );
}

#[test]
fn twice_sim_hash_token_hashes_standard_input_and_makes_tokens() {
    use std::io::Write;
    let hash_of = |input: &str| {
        let mut child = binary()
            .arg("hash-token")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        child.stdin.take().unwrap().write_all(input.as_bytes()).unwrap();
        let output = child.wait_with_output().unwrap();
        (
            output.status.code(),
            String::from_utf8_lossy(&output.stdout).trim().to_owned(),
            String::from_utf8_lossy(&output.stderr).into_owned(),
        )
    };
    let (code, stdout, _) = hash_of(&format!("{ADA}\n"));
    assert_eq!((code, stdout), (Some(0), api::hash_token(ADA)));
    let (code, _, stderr) = hash_of("short\n");
    assert_eq!(code, Some(2));
    assert!(stderr.contains("16 to 512 characters"), "{stderr}");

    let output = binary().args(["hash-token", "--generate"]).output().unwrap();
    assert_eq!(output.status.code(), Some(0));
    let text = String::from_utf8_lossy(&output.stdout);
    let field = |name: &str| {
        text.lines()
            .find_map(|line| line.strip_prefix(name))
            .map(|rest| rest.trim().to_owned())
            .unwrap_or_else(|| panic!("no {name} in {text}"))
    };
    let token = field("token:");
    assert_eq!(field("token_sha256:"), api::hash_token(&token));
}

// ----- compensation over the billing server (`twice-sim serve --billing-url`) -----

fn billing_client() -> Client {
    Client::builder().no_proxy().build().unwrap()
}

/// Pays a credit in billing under `key`, as a worker's request that landed would have.
async fn pay(billing: &BillingServer, key: &str, arguments: &Value) -> Value {
    let response = billing_client()
        .post(format!("{}/v1/credits", billing.url))
        .header("Idempotency-Key", key)
        .json(&json!({
            "account": arguments["account"], "amount_cents": arguments["amount_cents"],
            "memo": arguments["memo"], "intent": "r1/0"
        }))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::CREATED);
    response.json().await.unwrap()
}

async fn billing_get(billing: &BillingServer, path: &str) -> Value {
    billing_client()
        .get(format!("{}{path}", billing.url))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

/// (credits, reversals) billing holds.
async fn billing_entries(billing: &BillingServer) -> (u64, u64) {
    let stats = billing_get(billing, "/v1/stats").await;
    (stats["credits"].as_u64().unwrap(), stats["reversals"].as_u64().unwrap())
}

fn billing_target(billing: &BillingServer) -> Arc<dyn Compensator> {
    Arc::new(BillingCompensator::new(&billing.url, twice_sim::drill::script::tools()).unwrap())
}

/// The paused ledger level on a file, and an API server over it that voids credits in a
/// real billing process.
struct PausedOverBilling {
    _directory: tempfile::TempDir,
    simulation: Simulation,
    billing: BillingServer,
    server: Server,
}

async fn paused_over_billing(keys: &str) -> PausedOverBilling {
    let directory = tempfile::tempdir().unwrap();
    let ledger_path = directory.path().join("ledger.sqlite");
    let simulation = paused_simulation(&ledger_path);
    let billing = BillingServer::start(&directory.path().join("billing.sqlite"), keys);
    let (now, clock) = shared_clock();
    now.store(simulation.now_ms(), Ordering::SeqCst);
    let operators = Operators::load(&tokens_file(directory.path())).unwrap();
    let state = ApiState::open(&ledger_path, operators)
        .unwrap()
        .with_clock(clock)
        .with_compensator(billing_target(&billing));
    PausedOverBilling {
        _directory: directory,
        simulation,
        billing,
        server: start(state).await,
    }
}

fn told_for_c1(simulation: &Simulation) -> Vec<Told> {
    let (_, state) = run_state(simulation);
    state
        .transcript
        .into_iter()
        .filter(|(call, _)| call == "c1")
        .map(|(_, told)| told)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_billing_compensation_voids_the_credit_once_and_resumes_the_paused_run() {
    let mut paused = paused_over_billing("honour").await;
    let (_, before) = paused.server.get("/v1/tool-executions/r1:c1", ADA).await;
    assert_eq!(before["record"]["status"], "started");
    // The worker's request landed before it crashed: billing holds the credit under the key.
    let paid = pay(&paused.billing, "r1:c1", &before["record"]["arguments"]).await;
    let credit_id = paid["applied"]["credit_id"].as_str().unwrap().to_owned();

    let (status, detail) = paused
        .server
        .post(
            "/v1/tool-executions/r1:c1/compensate",
            GRACE,
            json!({"reason": "the customer cancelled the order; void the refund"}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{detail}");
    assert_eq!(detail["record"]["status"], "compensated");
    let history = detail["history"].as_array().unwrap();
    let [claimed, applied] = &history[history.len() - 2..] else {
        panic!("{detail}")
    };
    assert_eq!(
        (&claimed["event"], &claimed["actor"]),
        (&json!("compensation_claimed"), &json!("grace"))
    );
    assert_eq!(claimed["from_status"], "started");
    assert_eq!(applied["event"], "compensation_applied");
    let applied_detail = applied["detail"].as_str().unwrap();
    assert!(
        applied_detail.contains(&format!("billing holds credit {credit_id}"))
            && applied_detail.contains(&format!("voided credit {credit_id} with reversal rv_0002")),
        "{applied_detail}"
    );
    assert_eq!(billing_entries(&paused.billing).await, (1, 1));
    let accounts = billing_get(&paused.billing, "/v1/accounts").await;
    let ada = accounts["accounts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|account| account["id"] == "acct_ada")
        .unwrap()
        .clone();
    assert_eq!(ada["balance_cents"], 0, "paid and voided: {ada}");

    // A second request does not void again.
    let (status, body) = paused
        .server
        .post("/v1/tool-executions/r1:c1/compensate", ADA, json!({"reason": "again"}))
        .await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert_eq!(body["current"]["status"], "compensated");
    assert_eq!(billing_entries(&paused.billing).await, (1, 1));
    // Nor does a void of the same credit sent by hand: billing's void by id is idempotent.
    let again = billing_client()
        .post(format!("{}/v1/credits/{credit_id}/void", paused.billing.url))
        .send()
        .await
        .unwrap();
    assert_eq!(again.status(), StatusCode::OK);
    let again: Value = again.json().await.unwrap();
    assert_eq!(again["repeat"]["credit_id"], "rv_0002", "{again}");
    assert_eq!(billing_entries(&paused.billing).await, (1, 1));

    // The paused run resumes, and the model hears the truth.
    assert_eq!(paused.simulation.notice_settlements().unwrap(), 1);
    paused.simulation.run().unwrap();
    assert!(
        told_for_c1(&paused.simulation).contains(&Told::SettledByOperator {
            settled: Settled::Compensated,
            operator: "grace".into(),
            reason: "the customer cancelled the order; void the refund".into(),
        }),
        "{:?}",
        told_for_c1(&paused.simulation)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_billing_absent_is_no_proof_for_a_call_whose_request_passed_the_fence() {
    let mut paused = paused_over_billing("honour").await;
    let (_, before) = paused.server.get("/v1/tool-executions/r1:c1", ADA).await;
    assert_eq!(
        before["record"]["attempts"], 1,
        "the crashed worker's request passed the fence"
    );
    let (status, body) = paused
        .server
        .post(
            "/v1/tool-executions/r1:c1/compensate",
            ADA,
            json!({"reason": "void the refund if it went out"}),
        )
        .await;
    // Billing holds no credit yet, but the request may still be on its way: "absent" proves
    // nothing, so nothing is settled (settling `failed` would let a new call pay twice).
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert_eq!(body["code"], "attempt_noted");
    assert!(
        body["error"].as_str().unwrap().contains("may still be on its way"),
        "{body}"
    );
    assert!(
        body["error"].as_str().unwrap().contains("r1:c1 has 1 attempt noted,"),
        "the attempt is counted in words: {body}"
    );
    assert_eq!(body["current"]["status"], "started");
    // The 409 names the call in progress: whose `started` record it is, since when.
    assert_eq!(body["in_progress"]["owner"], body["current"]["owner"], "{body}");
    assert_eq!(body["in_progress"]["attempts"], 1, "{body}");
    assert!(
        body["in_progress"]["message"]
            .as_str()
            .unwrap()
            .contains("is in progress, owned by"),
        "{body}"
    );
    let (_, detail) = paused.server.get("/v1/tool-executions/r1:c1", ADA).await;
    assert_eq!(events(&detail), events(&before), "nothing recorded");
    assert_eq!(billing_entries(&paused.billing).await, (0, 0), "nothing voided");

    // A person who checked decides instead; the paused run resumes with that truth.
    let (status, detail) = paused
        .server
        .post(
            "/v1/tool-executions/r1:c1/resolve",
            ADA,
            json!({"status": "failed", "reason": "billing's log shows the request never arrived", "expected_status": "started", "acknowledge_in_flight": true}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{detail}");
    assert_eq!(paused.simulation.notice_settlements().unwrap(), 1);
    paused.simulation.run().unwrap();
    assert_eq!(
        told_for_c1(&paused.simulation).first(),
        Some(&Told::SettledByOperator {
            settled: Settled::DidNotTakeEffect,
            operator: "ada".into(),
            reason: "billing's log shows the request never arrived".into(),
        }),
        "{:?}",
        told_for_c1(&paused.simulation)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_billing_a_call_never_sent_is_settled_failed_and_nothing_is_voided() {
    let directory = tempfile::tempdir().unwrap();
    let path = directory.path().join("ledger.sqlite");
    let mut ledger = Ledger::open(&path).unwrap();
    // Reserved, and its worker stalled before the send fence: no attempt noted.
    reserve(&mut ledger, "default", "r1", "c1", "issue_credit", 100);
    let billing = BillingServer::start(&directory.path().join("billing.sqlite"), "honour");
    let operators = Operators::load(&tokens_file(directory.path())).unwrap();
    let state = ApiState::open(&path, operators)
        .unwrap()
        .with_clock(Arc::new(|| 10_000_u64))
        .with_compensator(billing_target(&billing));
    let server = start(state).await;
    let (status, detail) = server
        .post(
            "/v1/tool-executions/r1:c1/compensate",
            ADA,
            json!({"reason": "void the refund if it went out"}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{detail}");
    assert_eq!(
        detail["record"]["status"], "failed",
        "no credit and no attempt: the call did not take effect, and that is what is recorded"
    );
    let settled = detail["history"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(settled["event"], "nothing_to_compensate");
    assert_eq!(
        (&settled["from_status"], &settled["to_status"]),
        (&json!("started"), &json!("failed"))
    );
    assert_eq!(settled["reason"], "void the refund if it went out");
    assert!(
        settled["detail"]
            .as_str()
            .unwrap()
            .contains("holds no credit under r1:c1 and is applying no request with it"),
        "{settled}"
    );
    assert_eq!(
        billing_entries(&billing).await,
        (0, 0),
        "no reversal of a credit never issued"
    );
    // The worker that stalled wakes and tries to send: the fence refuses, nothing leaves.
    let refused = ledger.begin_attempt(&key("r1:c1"), 1, "w1", 11_000).unwrap();
    assert!(
        matches!(refused, twice_sim::ledger::AttemptStart::Refused(Some(ref record)) if record.status == Status::Failed),
        "{refused:?}"
    );
    let (status, body) = server
        .post("/v1/tool-executions/r1:c1/compensate", ADA, json!({"reason": "again"}))
        .await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert_eq!(body["current"]["status"], "failed");
    assert_eq!(billing_entries(&billing).await, (0, 0));
}

/// A ledger file holding one `started` credit call, r1:c1, and an API server over it.
struct StartedCall {
    _directory: tempfile::TempDir,
    ledger: Ledger,
    server: Arc<Server>,
}

async fn started_call(target: Arc<dyn Compensator>) -> StartedCall {
    let directory = tempfile::tempdir().unwrap();
    let path = directory.path().join("ledger.sqlite");
    let mut ledger = Ledger::open(&path).unwrap();
    reserve(&mut ledger, "default", "r1", "c1", "issue_credit", 100);
    let operators = Operators::load(&tokens_file(directory.path())).unwrap();
    let state = ApiState::open(&path, operators)
        .unwrap()
        .with_clock(Arc::new(|| 10_000_u64))
        .with_compensator(target);
    StartedCall {
        _directory: directory,
        ledger,
        server: Arc::new(start(state).await),
    }
}

const R1_C1_ARGUMENTS: fn() -> Value = || json!({"account": "acct_ada", "amount_cents": 2500, "memo": "r1 c1"});

impl StartedCall {
    /// Asks for the compensation; checks the refusal changed nothing in the ledger.
    async fn refused(&self, expected: StatusCode, code: &str) -> String {
        let (status, body) = self
            .server
            .post(
                "/v1/tool-executions/r1:c1/compensate",
                ADA,
                json!({"reason": "void it"}),
            )
            .await;
        assert_eq!((status, body["code"].as_str()), (expected, Some(code)), "{body}");
        assert_eq!(body["current"]["status"], "started", "{body}");
        let record = self.ledger.record(&key("r1:c1")).unwrap().unwrap();
        assert_eq!(record.status, Status::Started);
        let history: Vec<String> = self
            .ledger
            .history(&key("r1:c1"))
            .unwrap()
            .into_iter()
            .map(|entry| entry.event.name().to_owned())
            .collect();
        assert_eq!(history, ["reserved"], "nothing is recorded");
        body["error"].as_str().unwrap().to_owned()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_billing_that_ignores_keys_compensation_is_refused_and_nothing_is_recorded() {
    let directory = tempfile::tempdir().unwrap();
    let billing = BillingServer::start(&directory.path().join("billing.sqlite"), "ignore");
    // The credit landed, but billing kept no key: nobody can find it by key.
    pay(&billing, "r1:c1", &R1_C1_ARGUMENTS()).await;
    let call = started_call(billing_target(&billing)).await;
    let error = call.refused(StatusCode::CONFLICT, "cannot_look_up").await;
    assert!(
        error.contains("cannot look credits up by key") && error.contains("resolve the call instead"),
        "{error}"
    );
    assert_eq!(billing_entries(&billing).await, (1, 0), "nothing voided");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_billing_several_credits_or_an_unlike_one_under_the_key_are_left_to_a_person() {
    let directory = tempfile::tempdir().unwrap();
    // Billing that keeps keys only in metadata pays a repeat again.
    let metadata = BillingServer::start(&directory.path().join("metadata.sqlite"), "metadata-only");
    pay(&metadata, "r1:c1", &R1_C1_ARGUMENTS()).await;
    pay(&metadata, "r1:c1", &R1_C1_ARGUMENTS()).await;
    let call = started_call(billing_target(&metadata)).await;
    let error = call.refused(StatusCode::CONFLICT, "effect_ambiguous").await;
    assert!(error.contains("holds 2 credits under r1:c1"), "{error}");
    assert_eq!(billing_entries(&metadata).await, (2, 0));

    let honour = BillingServer::start(&directory.path().join("honour.sqlite"), "honour");
    pay(
        &honour,
        "r1:c1",
        &json!({"account": "acct_grace", "amount_cents": 9900, "memo": "another refund"}),
    )
    .await;
    let call = started_call(billing_target(&honour)).await;
    let error = call.refused(StatusCode::CONFLICT, "effect_ambiguous").await;
    assert!(
        error.contains("9900 cents to acct_grace") && error.contains("2500 cents to acct_ada"),
        "{error}"
    );
    assert_eq!(billing_entries(&honour).await, (1, 0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_billing_a_completed_call_billing_never_paid_is_left_as_it_is() {
    let directory = tempfile::tempdir().unwrap();
    let billing = BillingServer::start(&directory.path().join("billing.sqlite"), "honour");
    let call = started_call(billing_target(&billing)).await;
    let (status, body) = call
        .server
        .post(
            "/v1/tool-executions/r1:c1/resolve",
            ADA,
            json!({"status": "completed", "reason": "I think it went out", "result": {"applied": {"credit_id": "cr_0042"}}, "acknowledge_in_flight": true}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (status, body) = call
        .server
        .post(
            "/v1/tool-executions/r1:c1/compensate",
            ADA,
            json!({"reason": "void it"}),
        )
        .await;
    assert_eq!(
        (status, body["code"].as_str()),
        (StatusCode::CONFLICT, Some("effect_missing")),
        "{body}"
    );
    let error = body["error"].as_str().unwrap();
    assert!(
        error.contains("completed in the ledger") && error.contains("holds no credit under r1:c1"),
        "{error}"
    );
    assert_eq!(
        body["current"]["status"], "completed",
        "a settled decision is never overwritten"
    );
    let history: Vec<String> = call
        .ledger
        .history(&key("r1:c1"))
        .unwrap()
        .into_iter()
        .map(|entry| entry.event.name().to_owned())
        .collect();
    assert_eq!(history, ["reserved", "resolved"], "nothing recorded");
    assert_eq!(billing_entries(&billing).await, (0, 0), "nothing voided");
}

/// A seed whose first billing request waits at least `way_in_ms` on its way in, under
/// `--latency-ms latency_ms`: billing draws the total, then the way in, from ChaCha8.
fn seed_with_slow_way_in(latency_ms: u32, way_in_ms: u32) -> u64 {
    (1..1_000)
        .find(|seed| {
            let mut random = ChaCha8Rng::seed_from_u64(*seed);
            let total = random.random_range(0..=latency_ms);
            random.random_range(0..=total) >= way_in_ms
        })
        .expect("some seed draws a slow way in")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_billing_a_credit_still_on_its_way_in_is_waited_for_not_guessed_at() {
    let directory = tempfile::tempdir().unwrap();
    let seed = seed_with_slow_way_in(3_000, 1_500).to_string();
    let billing = BillingServer::start_with(
        &directory.path().join("billing.sqlite"),
        "honour",
        &["--latency-ms", "3000", "--seed", &seed],
    );
    let call = started_call(billing_target(&billing)).await;
    // The worker's request has reached billing, which has not applied it yet.
    let url = billing.url.clone();
    let landing = tokio::spawn(async move {
        billing_client()
            .post(format!("{url}/v1/credits"))
            .header("Idempotency-Key", "r1:c1")
            .json(&json!({"account": "acct_ada", "amount_cents": 2500, "memo": "r1 c1", "intent": "r1/0"}))
            .send()
            .await
            .unwrap()
            .status()
    });
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(2);
    while billing_get(&billing, "/v1/stats").await["in_flight"] != 1 {
        assert!(std::time::Instant::now() < deadline, "billing received the credit");
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    let error = call.refused(StatusCode::CONFLICT, "effect_in_flight").await;
    assert!(error.contains("still applying 1 request with that key"), "{error}");
    assert_eq!(billing_entries(&billing).await, (0, 0));

    // Once it landed, the same request voids it.
    assert_eq!(landing.await.unwrap(), StatusCode::CREATED);
    let (status, detail) = call
        .server
        .post(
            "/v1/tool-executions/r1:c1/compensate",
            ADA,
            json!({"reason": "void it"}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{detail}");
    assert_eq!(detail["record"]["status"], "compensated");
    assert_eq!(billing_entries(&billing).await, (1, 1));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_billing_that_is_down_or_silent_compensation_answers_502_and_changes_nothing() {
    let directory = tempfile::tempdir().unwrap();
    let mut billing = BillingServer::start(&directory.path().join("billing.sqlite"), "honour");
    let target = billing_target(&billing);
    let url = billing.url.clone();
    billing.stop();
    let call = started_call(target).await;
    let error = call.refused(StatusCode::BAD_GATEWAY, "target_unavailable").await;
    assert!(
        error.contains(&format!("billing at {url} cannot be reached")) && error.contains("nothing recorded"),
        "{error}"
    );

    // A billing that takes the connection and never answers: the request times out.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let silent_url = format!("http://{}", silent.local_addr().unwrap());
    let target = BillingCompensator::with_timeout(
        &silent_url,
        twice_sim::drill::script::tools(),
        std::time::Duration::from_millis(300),
    )
    .unwrap();
    let call = started_call(Arc::new(target)).await;
    let started = std::time::Instant::now();
    let error = call.refused(StatusCode::BAD_GATEWAY, "target_unavailable").await;
    assert!(
        error.contains("did not answer") && error.contains("within 300 ms"),
        "{error}"
    );
    assert!(
        started.elapsed() < std::time::Duration::from_secs(5),
        "bounded by the timeout"
    );
    drop(silent);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_billing_of_eight_concurrent_compensations_exactly_one_voids() {
    let directory = tempfile::tempdir().unwrap();
    let billing = BillingServer::start(&directory.path().join("billing.sqlite"), "honour");
    pay(&billing, "r1:c1", &R1_C1_ARGUMENTS()).await;
    let call = started_call(billing_target(&billing)).await;
    let requests: Vec<_> = (0..8)
        .map(|attempt| {
            let server = Arc::clone(&call.server);
            tokio::spawn(async move {
                server
                    .post(
                        "/v1/tool-executions/r1:c1/compensate",
                        if attempt % 2 == 0 { ADA } else { GRACE },
                        json!({"reason": format!("void it ({attempt})")}),
                    )
                    .await
                    .0
            })
        })
        .collect();
    let mut statuses = Vec::new();
    for request in requests {
        statuses.push(request.await.unwrap());
    }
    let won = statuses.iter().filter(|status| **status == StatusCode::OK).count();
    let lost = statuses
        .iter()
        .filter(|status| **status == StatusCode::CONFLICT)
        .count();
    assert_eq!((won, lost), (1, 7), "{statuses:?}");
    assert_eq!(billing_entries(&billing).await, (1, 1), "voided once");
    assert_eq!(
        call.ledger.record(&key("r1:c1")).unwrap().unwrap().status,
        Status::Compensated
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn twice_sim_serve_with_a_billing_url_voids_credits_there() {
    let directory = tempfile::tempdir().unwrap();
    let billing = BillingServer::start(&directory.path().join("billing.sqlite"), "honour");
    pay(&billing, "r1:c1", &R1_C1_ARGUMENTS()).await;
    let ledger_path = directory.path().join("ledger.sqlite");
    let mut ledger = Ledger::open(&ledger_path).unwrap();
    reserve(&mut ledger, "default", "r1", "c1", "issue_credit", 100);
    let tokens = tokens_file(directory.path());
    let (child, line) = serve_process(&ledger_path, &tokens, &["--billing-url", &billing.url]).await;
    assert!(
        line.contains(&format!("compensate: voids credits in billing at {}", billing.url)),
        "{line}"
    );
    let (status, detail) = server_from(&line)
        .post(
            "/v1/tool-executions/r1:c1/compensate",
            ADA,
            json!({"reason": "void it"}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{detail}");
    assert_eq!(detail["record"]["status"], "compensated");
    assert_eq!(billing_entries(&billing).await, (1, 1));
    drop(child);

    // Billing that ignores keys: the server starts, and says compensations will be refused.
    let ignoring = BillingServer::start(&directory.path().join("ignore.sqlite"), "ignore");
    let (child, line) = serve_process(&ledger_path, &tokens, &["--billing-url", &ignoring.url]).await;
    assert!(
        line.contains("ignores idempotency keys") && line.contains("will be refused"),
        "{line}"
    );
    drop(child);
}

/// A `completed` call of `issue_credit` in a new ledger file, reserved at `reserved_at_ms`
/// and completed now (the wall clock, as `twice-sim serve` and the workers stamp it).
fn completed_credit_call(ledger_path: &Path, reserved_at_ms: u64) -> Ledger {
    let mut ledger = Ledger::open(ledger_path).unwrap();
    reserve(&mut ledger, "default", "r1", "c1", "issue_credit", reserved_at_ms);
    let recorded = ledger
        .record_outcome(
            &key("r1:c1"),
            AttemptOutcome::Completed,
            Some(r#"{"applied":{"credit_id":"cr_0001","balance_cents":2500}}"#),
            "w1",
            0,
            twice_sim::drill::now_ms(),
        )
        .unwrap();
    assert!(matches!(recorded, Recorded::Recorded(_)), "{recorded:?}");
    ledger
}

/// `twice-sim serve --billing-url` declares `issue_credit` as the workers do, billing's
/// terms included (`--lookup-settle-ms`, `--key-retention-ms`): billing's "nothing under
/// the key" is weighed by them, so a credit its lookups do not show yet is "not yet" and a
/// forgotten key is "expired, not absent" — never "billing holds no credit", which is what
/// the undeclared compensator said of both.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn twice_sim_serve_with_a_billing_url_weighs_billing_s_terms_as_the_tools_declare_them() {
    let directory = tempfile::tempdir().unwrap();
    let tokens = tokens_file(directory.path());
    let compensate = |line: String| async move {
        server_from(&line)
            .post(
                "/v1/tool-executions/r1:c1/compensate",
                ADA,
                json!({"reason": "void it"}),
            )
            .await
    };

    // Lookups lag ten minutes: the credit that just landed does not show yet.
    let lagging = BillingServer::start_with(
        &directory.path().join("lagging.sqlite"),
        "honour",
        &["--lookup-settle-ms", "600000"],
    );
    pay(&lagging, "r1:c1", &R1_C1_ARGUMENTS()).await;
    let ledger_path = directory.path().join("lagging-ledger.sqlite");
    let ledger = completed_credit_call(&ledger_path, twice_sim::drill::now_ms());
    let (child, line) = serve_process(
        &ledger_path,
        &tokens,
        &["--billing-url", &lagging.url, "--lookup-settle-ms", "600000"],
    )
    .await;
    assert!(
        line.contains("issue_credit declares keys kept for ever, lookups lag up to 10 min"),
        "the start line says what is declared: {line}"
    );
    let (status, body) = compensate(line).await;
    assert_eq!(
        (status, body["code"].as_str()),
        (StatusCode::CONFLICT, Some("effect_in_flight")),
        "{body}"
    );
    let error = body["error"].as_str().unwrap();
    assert!(
        error.contains("may lag 10 min") && error.contains("ask again in") && !error.contains("holds no credit"),
        "{error}"
    );
    assert_eq!(body["current"]["status"], "completed", "{body}");
    assert_eq!(ledger.record(&key("r1:c1")).unwrap().unwrap().status, Status::Completed);
    assert_eq!(billing_entries(&lagging).await, (1, 0), "nothing voided");
    drop(child);

    // Billing keeps keys one second: a minute after the call's reservation it has forgotten it.
    let forgetting = BillingServer::start_with(
        &directory.path().join("forgetting.sqlite"),
        "honour",
        &["--key-retention-ms", "1000"],
    );
    pay(&forgetting, "r1:c1", &R1_C1_ARGUMENTS()).await;
    tokio::time::sleep(std::time::Duration::from_millis(1_200)).await;
    let ledger_path = directory.path().join("forgetting-ledger.sqlite");
    let ledger = completed_credit_call(&ledger_path, twice_sim::drill::now_ms() - 60_000);
    let (child, line) = serve_process(
        &ledger_path,
        &tokens,
        &["--billing-url", &forgetting.url, "--key-retention-ms", "1000"],
    )
    .await;
    let (status, body) = compensate(line).await;
    assert_eq!(
        (status, body["code"].as_str()),
        (StatusCode::CONFLICT, Some("cannot_look_up")),
        "{body}"
    );
    let error = body["error"].as_str().unwrap();
    assert!(
        error.contains("expired, not absent") && error.contains("billing keeps keys for 1 s"),
        "{error}"
    );
    assert_eq!(ledger.record(&key("r1:c1")).unwrap().unwrap().status, Status::Completed);
    assert_eq!(billing_entries(&forgetting).await, (1, 0), "nothing voided");
    drop(child);

    // Terms no billing could keep are refused at start, naming the flags.
    let output = binary()
        .args(["serve", "--addr", "127.0.0.1:0", "--ledger"])
        .arg(&ledger_path)
        .arg("--tokens")
        .arg(&tokens)
        .args(["--billing-url", &forgetting.url, "--key-retention-ms", "0"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("--key-retention-ms") && stderr.contains("key_retention_ms: 0"),
        "{stderr}"
    );
}

// ----- the ledger file under the server -----

/// Moves a ledger file with its write-ahead log and shared-memory index, as `mv ledger.sqlite*`
/// does: a file moved without its log would leave the log for whatever file takes its place.
fn move_ledger(from: &Path, to: &Path) {
    for suffix in ["", "-wal", "-shm"] {
        let source = PathBuf::from(format!("{}{suffix}", from.display()));
        if source.exists() {
            std::fs::rename(&source, format!("{}{suffix}", to.display())).unwrap();
        }
    }
}

/// A compensation target that, while the compensate request holds its ledger connection,
/// moves the served file away and puts another ledger at its path (as `mv` and a restore
/// from backup would), then finds the credit there.
struct SwapsTheFile {
    path: PathBuf,
    moved_to: PathBuf,
    compensated: Mutex<Vec<String>>,
}

impl Compensator for SwapsTheFile {
    fn has_compensation(&self, tool: &str) -> bool {
        tool == "issue_credit"
    }

    fn find_effect(&self, record: &ExecutionRecord) -> Result<Effect, LookupError> {
        move_ledger(&self.path, &self.moved_to);
        let mut impostor = Ledger::open(&self.path).unwrap();
        reserve(&mut impostor, "default", "r1", "c1", "issue_credit", 100);
        Ok(Effect::Found {
            reference: format!("credit-of-{}", record.key),
            detail: "found".into(),
        })
    }

    fn compensate(&self, record: &ExecutionRecord, _reference: &str) -> Result<String, UndoError> {
        self.compensated.lock().unwrap().push(record.key.to_string());
        Ok("voided".into())
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ledger_file_deleted_or_replaced_under_the_server_answers_503_and_nothing_is_created_or_written() {
    let directory = tempfile::tempdir().unwrap();
    let path = directory.path().join("ledger.sqlite");
    let moved = directory.path().join("ledger.moved.sqlite");
    let mut ledger = Ledger::open(&path).unwrap();
    reserve(&mut ledger, "default", "r1", "c1", "issue_credit", 100);
    drop(ledger);
    let operators = Operators::load(&tokens_file(directory.path())).unwrap();
    let server = start(ApiState::open(&path, operators).unwrap()).await;
    let resolve = "/v1/tool-executions/r1:c1/resolve";
    let (status, _) = server.get("/v1/tool-executions/r1:c1", ADA).await;
    assert_eq!(status, StatusCode::OK);

    // Moved away: every request is refused, and no file appears at the path.
    move_ledger(&path, &moved);
    let requests = [
        (Method::GET, "/v1/tool-executions", None),
        (Method::GET, "/v1/tool-executions/r1:c1", None),
        (
            Method::POST,
            resolve,
            Some(json!({"status": "failed", "reason": "not in billing"})),
        ),
    ];
    for (method, request_path, body) in requests.clone() {
        let (status, answer) = server.call(method, request_path, Some(ADA), body).await;
        assert_eq!(
            (status, answer["code"].as_str()),
            (StatusCode::SERVICE_UNAVAILABLE, Some("ledger_gone")),
            "{request_path}: {answer}"
        );
    }
    assert!(!path.exists(), "the server never creates its ledger");

    // Another ledger at the path (a copy, a new file): refused too, and left untouched.
    let mut impostor = Ledger::open(&path).unwrap();
    reserve(&mut impostor, "default", "r1", "c1", "issue_credit", 100);
    for (method, request_path, body) in requests {
        let (status, answer) = server.call(method, request_path, Some(ADA), body).await;
        assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{request_path}: {answer}");
        assert_eq!(answer["code"], "ledger_gone");
    }
    assert_eq!(impostor.history(&key("r1:c1")).unwrap().len(), 1);
    drop(impostor);

    // The original back at its path: served again, and nothing was written meanwhile.
    move_ledger(&moved, &path);
    let (status, detail) = server.get("/v1/tool-executions/r1:c1", ADA).await;
    assert_eq!(status, StatusCode::OK, "{detail}");
    assert_eq!(events(&detail), ["reserved"]);
    let (status, detail) = server
        .post(
            resolve,
            ADA,
            json!({"status": "failed", "reason": "not in billing", "acknowledge_in_flight": true}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{detail}");
    assert_eq!(
        Ledger::open(&path)
            .unwrap()
            .record(&key("r1:c1"))
            .unwrap()
            .unwrap()
            .status,
        Status::Failed
    );

    // Deleted for good: refused, and still nothing is created.
    std::fs::remove_file(&path).unwrap();
    let (status, answer) = server.get("/v1/tool-executions", ADA).await;
    assert_eq!(
        (status, answer["code"].as_str()),
        (StatusCode::SERVICE_UNAVAILABLE, Some("ledger_gone"))
    );
    assert!(!path.exists(), "the server never creates its ledger");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_decision_is_not_written_into_a_ledger_file_replaced_while_it_is_made() {
    let directory = tempfile::tempdir().unwrap();
    let path = directory.path().join("ledger.sqlite");
    let moved = directory.path().join("ledger.moved.sqlite");
    let mut ledger = Ledger::open(&path).unwrap();
    reserve(&mut ledger, "default", "r1", "c1", "issue_credit", 100);
    drop(ledger);
    let operators = Operators::load(&tokens_file(directory.path())).unwrap();
    let target = Arc::new(SwapsTheFile {
        path: path.clone(),
        moved_to: moved.clone(),
        compensated: Mutex::new(Vec::new()),
    });
    let state = ApiState::open(&path, operators)
        .unwrap()
        .with_compensator(Arc::clone(&target) as Arc<dyn Compensator>);
    let server = start(state).await;
    let (status, answer) = server
        .post(
            "/v1/tool-executions/r1:c1/compensate",
            ADA,
            json!({"reason": "void it"}),
        )
        .await;
    assert_eq!(
        (status, answer["code"].as_str()),
        (StatusCode::SERVICE_UNAVAILABLE, Some("ledger_gone")),
        "{answer}"
    );
    assert!(target.compensated.lock().unwrap().is_empty(), "nothing was undone");
    for file in [&path, &moved] {
        let ledger = Ledger::open(file).unwrap();
        assert_eq!(
            ledger.record(&key("r1:c1")).unwrap().unwrap().status,
            Status::Started,
            "{}",
            file.display()
        );
        assert_eq!(ledger.history(&key("r1:c1")).unwrap().len(), 1, "{}", file.display());
    }
}

// ----- what a reason, a cursor and a result may hold -----

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reasons_that_would_not_print_as_text_are_refused() {
    let fixture = fixture().await;
    let server = &fixture.server;
    for (reason, mentions) in [
        ("\u{200B}", "invisible"),
        ("\u{FEFF} \u{2060}", "invisible"),
        ("\u{1B}[2J\u{1B}[Hall good", "U+001B"),
        ("cr_0001 found\rall good   ", "U+000D"),
        ("cr_0001\0", "U+0000"),
        ("paid \u{202E}1000rc", "bidirectional"),
    ] {
        for (path, body) in [
            (
                "/v1/tool-executions/r1:c1/resolve",
                json!({"status": "failed", "reason": reason}),
            ),
            ("/v1/tool-executions/r1:c1/compensate", json!({"reason": reason})),
        ] {
            let (status, answer) = server.post(path, ADA, body).await;
            assert_eq!(
                (status, answer["code"].as_str()),
                (StatusCode::UNPROCESSABLE_ENTITY, Some("invalid_value")),
                "{reason:?} on {path}: {answer}"
            );
            let message = answer["error"].as_str().unwrap();
            assert!(
                message.starts_with("reason: ") && message.contains(mentions),
                "{reason:?}: {message}"
            );
        }
    }
    assert_eq!(fixture.ledger.history(&key("r1:c1")).unwrap().len(), 1);
    assert!(fixture.compensator.calls().is_empty());
    // Tabs and line feeds lay a reason out; they are allowed.
    let (status, detail) = server
        .post(
            "/v1/tool-executions/r1:c1/resolve",
            ADA,
            json!({"status": "failed", "reason": "not in billing:\n\tasked Ada, nothing", "acknowledge_in_flight": true}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{detail}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forged_cursor_past_the_ledgers_times_is_refused_not_wrapped() {
    let fixture = fixture().await;
    let hex = |plain: &str| {
        format!(
            "c1{}",
            plain.bytes().map(|byte| format!("{byte:02x}")).collect::<String>()
        )
    };
    for milliseconds in [u64::MAX, i64::MAX as u64 + 1] {
        let cursor = hex(&format!("{milliseconds}:r1:c1"));
        let (status, answer) = fixture
            .server
            .get(&format!("/v1/tool-executions?cursor={cursor}"), ADA)
            .await;
        assert_eq!(
            (status, answer["code"].as_str()),
            (StatusCode::UNPROCESSABLE_ENTITY, Some("invalid_value")),
            "{milliseconds}: {answer}"
        );
    }
    // The largest time the ledger holds is a cursor like any other: nothing comes after it.
    let cursor = hex(&format!("{}:r1:c1", i64::MAX));
    let (status, page) = fixture
        .server
        .get(&format!("/v1/tool-executions?cursor={cursor}"), ADA)
        .await;
    assert_eq!(status, StatusCode::OK, "{page}");
    assert_eq!(page["items"], json!([]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_result_is_stored_and_shown_back_digit_for_digit() {
    let fixture = fixture().await;
    let server = &fixture.server;
    let result = r#"{"credit_id":"cr_0001","amount":123456789012345678901234567890,"rate":0.10000000000000000555,"tiny":1e-400}"#;
    let body = r#"{"status": "completed", "reason": "found it", "result": { "credit_id" : "cr_0001", "amount": 123456789012345678901234567890, "rate": 0.10000000000000000555, "tiny": 1e-400 }, "acknowledge_in_flight": true}"#;
    let response = server
        .client
        .post(server.url("/v1/tool-executions/r1:c1/resolve"))
        .bearer_auth(ADA)
        .header("content-type", "application/json")
        .body(body)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let answer = response.text().await.unwrap();
    assert!(answer.contains(&format!(r#""result":{result}"#)), "{answer}");
    let stored = fixture.ledger.record(&key("r1:c1")).unwrap().unwrap();
    assert_eq!(
        stored.result.as_deref(),
        Some(result),
        "stored as sent, less the spaces"
    );
    let shown = server
        .client
        .get(server.url("/v1/tool-executions/r1:c1"))
        .bearer_auth(ADA)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(shown.contains(&format!(r#""result":{result}"#)), "{shown}");
    let listed = server
        .client
        .get(server.url("/v1/tool-executions?status=completed"))
        .bearer_auth(ADA)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(listed.contains(&format!(r#""result":{result}"#)), "{listed}");
}

// ----- hostile clients: connections, trickles and heads hyper would refuse -----

/// A server on a ledger with one call, `r1:c1`, with these limits.
async fn server_with(configure: impl FnOnce(ApiState) -> ApiState) -> (tempfile::TempDir, Server, String) {
    let directory = tempfile::tempdir().unwrap();
    let path = directory.path().join("ledger.sqlite");
    let mut ledger = Ledger::open(&path).unwrap();
    reserve(&mut ledger, "default", "r1", "c1", "issue_credit", 100);
    let operators = Operators::load(&tokens_file(directory.path())).unwrap();
    let server = start(configure(ApiState::open(&path, operators).unwrap())).await;
    let address = server.base.trim_start_matches("http://").to_owned();
    (directory, server, address)
}

/// A connection to `address` from the loopback address `from` (127.0.0.0/8 is all loopback).
async fn connect_from(from: &str, address: &str) -> tokio::net::TcpStream {
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.bind(format!("{from}:0").parse().unwrap()).unwrap();
    socket.connect(address.parse().unwrap()).await.unwrap()
}

/// Everything the server sends until it closes (or `wait` passes), as text.
async fn answer_of(stream: &mut tokio::net::TcpStream, wait: std::time::Duration) -> Option<String> {
    use tokio::io::AsyncReadExt;
    let mut answer = Vec::new();
    match tokio::time::timeout(wait, stream.read_to_end(&mut answer)).await {
        Ok(_) => Some(String::from_utf8_lossy(&answer).into_owned()),
        Err(_) => None,
    }
}

/// The status and JSON body of an HTTP/1.1 answer, checking that the body is the API's error.
fn json_error_of(answer: &str) -> (u16, Value) {
    let (head, body) = answer
        .split_once("\r\n\r\n")
        .unwrap_or_else(|| panic!("no head: {answer:?}"));
    let status: u16 = head[9..12].parse().unwrap();
    assert!(
        head.to_ascii_lowercase().contains("content-type: application/json"),
        "{answer}"
    );
    assert!(head.to_ascii_lowercase().contains("connection: close"), "{answer}");
    let body: Value = serde_json::from_str(body).unwrap_or_else(|_| panic!("not JSON: {answer:?}"));
    assert!(body["error"].is_string() && body["code"].is_string(), "{body}");
    (status, body)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_trickle_of_bytes_does_not_keep_a_connection_past_the_header_deadline() {
    let header_read_timeout = std::time::Duration::from_millis(400);
    let (_directory, server, address) = server_with(|state| state.with_header_read_timeout(header_read_timeout)).await;
    let mut stream = connect_from("127.0.0.1", &address).await;
    let (mut reader, mut writer) = stream.split();
    let started = std::time::Instant::now();
    // One byte every 50 ms: far inside the idle timeout, so only the header deadline ends it.
    let trickle = async {
        use tokio::io::AsyncWriteExt;
        for byte in b"GET /v1/tool-executions HTTP/1.1\r\nX-Padding: "
            .iter()
            .chain(std::iter::repeat(&b'a'))
        {
            if writer.write_all(&[*byte]).await.is_err() {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
    };
    let answer = async {
        use tokio::io::AsyncReadExt;
        let mut answer = Vec::new();
        let _ = reader.read_to_end(&mut answer).await;
        String::from_utf8_lossy(&answer).into_owned()
    };
    let answer = tokio::select! {
        answer = answer => answer,
        () = trickle => String::new(),
        () = tokio::time::sleep(std::time::Duration::from_secs(5)) => panic!("still open after 5 s"),
    };
    let waited = started.elapsed();
    let (status, body) = json_error_of(&answer);
    assert_eq!(
        (status, body["code"].as_str()),
        (408, Some("request_timeout")),
        "{body}"
    );
    assert!(
        waited >= header_read_timeout - std::time::Duration::from_millis(50),
        "{waited:?}"
    );
    assert!(waited < std::time::Duration::from_secs(2), "{waited:?}");
    // Meanwhile and afterwards, others are served.
    let (status, _) = server.get("/v1/tool-executions/r1:c1", ADA).await;
    assert_eq!(status, StatusCode::OK);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_connections_from_one_address_do_not_lock_out_other_clients() {
    let header_read_timeout = std::time::Duration::from_secs(4);
    let (_directory, server, address) = server_with(|state| state.with_header_read_timeout(header_read_timeout)).await;
    // More idle connections than the server takes in all, all from 127.0.0.2.
    let mut idle = Vec::new();
    for _ in 0..api::OPEN_CONNECTIONS_MAX + 44 {
        idle.push(connect_from("127.0.0.2", &address).await);
    }
    // An operator elsewhere is served at once, not after the idle ones time out.
    let (status, detail) = tokio::time::timeout(
        std::time::Duration::from_secs(3),
        server.get("/v1/tool-executions/r1:c1", ADA),
    )
    .await
    .expect("served while idle connections are open");
    assert_eq!(status, StatusCode::OK, "{detail}");
    // Beyond the first PEER_CONNECTIONS_MAX, 127.0.0.2's connections are refused and closed
    // within a second: with a JSON 503 while the server has room to say so (it waits a moment
    // for a request first, as HTTP clients take no answer before they asked), closed without a
    // word beyond that. The ones it kept stay open until the header deadline.
    let mut waiting = tokio::task::JoinSet::new();
    for mut stream in idle {
        waiting.spawn(async move { answer_of(&mut stream, std::time::Duration::from_millis(2_500)).await });
    }
    let mut open = 0;
    let mut told = 0;
    for answer in waiting.join_all().await {
        match answer {
            None => open += 1,
            Some(answer) if answer.is_empty() => {}
            Some(answer) => {
                let (status, body) = json_error_of(&answer);
                assert_eq!(
                    (status, body["code"].as_str()),
                    (503, Some("too_many_connections")),
                    "{body}"
                );
                assert!(body["error"].as_str().unwrap().contains("your address"), "{body}");
                told += 1;
            }
        }
    }
    assert_eq!(open, api::PEER_CONNECTIONS_MAX, "the idle ones the server kept");
    assert!(told > 0, "refusals are answered");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_server_answers_503_at_once_rather_than_leaving_clients_waiting() {
    let (_directory, server, address) = server_with(|state| state).await;
    let mut idle = Vec::new();
    // From many addresses, each within its own limit, until the server is full.
    'fill: for peer in 2.. {
        for _ in 0..api::PEER_CONNECTIONS_MAX {
            idle.push(connect_from(&format!("127.0.1.{peer}"), &address).await);
            if idle.len() == api::OPEN_CONNECTIONS_MAX {
                break 'fill;
            }
        }
    }
    // Let the server count them before the next arrives.
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    let (status, body) = tokio::time::timeout(
        std::time::Duration::from_secs(3),
        server.get("/v1/tool-executions/r1:c1", ADA),
    )
    .await
    .expect("an answer, not a wait");
    assert_eq!(
        (status, body["code"].as_str()),
        (StatusCode::SERVICE_UNAVAILABLE, Some("too_many_connections")),
        "{body}"
    );
    // One closes; the next operator is served.
    drop(idle.pop());
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    let (status, _) = server.get("/v1/tool-executions/r1:c1", ADA).await;
    assert_eq!(status, StatusCode::OK);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn heads_hyper_would_refuse_get_json_errors_too() {
    let (_directory, _server, address) = server_with(|state| {
        state
            .with_header_read_timeout(std::time::Duration::from_millis(300))
            .with_idle_timeout(std::time::Duration::from_millis(300))
    })
    .await;
    let exchange = |request: Vec<u8>| {
        let address = address.clone();
        async move {
            use tokio::io::AsyncWriteExt;
            let mut stream = connect_from("127.0.0.1", &address).await;
            // The server may answer and close before it has read everything.
            let _ = stream.write_all(&request).await;
            answer_of(&mut stream, std::time::Duration::from_secs(5))
                .await
                .expect("closed within 5 s")
        }
    };
    let bearer = format!("Authorization: Bearer {ADA}\r\n");
    let cases: Vec<(String, Vec<u8>, u16, &str)> = vec![
        (
            "URI over 64 KiB".into(),
            format!("GET /v1/tool-executions?status={} HTTP/1.1\r\n\r\n", "a".repeat(70_000)).into_bytes(),
            414,
            "uri_too_long",
        ),
        (
            "URI over 8 KiB".into(),
            format!(
                "GET /v1/tool-executions/{} HTTP/1.1\r\n{bearer}\r\n",
                "k".repeat(10_000)
            )
            .into_bytes(),
            414,
            "uri_too_long",
        ),
        (
            "200 headers".into(),
            format!(
                "GET /v1/tool-executions HTTP/1.1\r\n{}\r\n",
                (0..200).map(|number| format!("X-{number}: y\r\n")).collect::<String>()
            )
            .into_bytes(),
            431,
            "headers_too_large",
        ),
        (
            "a 20 KB header".into(),
            format!(
                "GET /v1/tool-executions HTTP/1.1\r\nX-Big: {}\r\n\r\n",
                "b".repeat(20_000)
            )
            .into_bytes(),
            431,
            "headers_too_large",
        ),
        ("garbage".into(), b"GARBAGE\r\n\r\n".to_vec(), 400, "malformed_request"),
        (
            "HTTP/2 preface".into(),
            b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".to_vec(),
            400,
            "malformed_request",
        ),
        (
            "a length that is no number".into(),
            format!("POST /v1/tool-executions/r1:c1/resolve HTTP/1.1\r\n{bearer}Content-Length: 1e3\r\n\r\n")
                .into_bytes(),
            400,
            "malformed_request",
        ),
        (
            "a length no u64 holds".into(),
            b"POST /v1/tool-executions/r1:c1/resolve HTTP/1.1\r\nContent-Length: 99999999999999999999999\r\n\r\n"
                .to_vec(),
            400,
            "malformed_request",
        ),
        (
            "a length over the body limit".into(),
            b"POST /v1/tool-executions/r1:c1/resolve HTTP/1.1\r\nContent-Length: 18446744073709551615\r\n\r\n".to_vec(),
            413,
            "payload_too_large",
        ),
        (
            "half a head".into(),
            b"GET /v1/tool-executions HTTP/1.1\r\nHost: x\r\n".to_vec(),
            408,
            "request_timeout",
        ),
        (
            "a method the endpoint does not take".into(),
            format!("DELETE /v1/tool-executions/r1:c1 HTTP/1.1\r\n{bearer}\r\n").into_bytes(),
            405,
            "method_not_allowed",
        ),
        (
            "a method that is no method".into(),
            format!("FOO /v1/tool-executions HTTP/1.1\r\n{bearer}\r\n").into_bytes(),
            405,
            "method_not_allowed",
        ),
    ];
    for (what, request, status, code) in cases {
        let answer = exchange(request).await;
        let (got, body) = json_error_of(&answer);
        assert_eq!((got, body["code"].as_str()), (status, Some(code)), "{what}: {body}");
    }

    // Heads mangled at random: whatever the server answers is the API's JSON.
    let valid = format!(
        "POST /v1/tool-executions/r9:c9/resolve?x=1 HTTP/1.1\r\nHost: x\r\n{bearer}Content-Type: application/json\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n{{}}"
    )
    .into_bytes();
    let mut random = ChaCha8Rng::seed_from_u64(13);
    let alphabet = b"\r\n :/?%\x00\x7f\xffaZ0-,\t\"";
    let mut answered = 0;
    for _ in 0..120 {
        let mut request = valid.clone();
        for _ in 0..random.random_range(1..4) {
            let at = random.random_range(0..request.len());
            match random.random_range(0..3) {
                0 => request.insert(at, alphabet[random.random_range(0..alphabet.len())]),
                1 => {
                    request.remove(at);
                }
                _ => request[at] = alphabet[random.random_range(0..alphabet.len())],
            }
        }
        let answer = exchange(request.clone()).await;
        if answer.is_empty() {
            continue;
        }
        let (status, body) = json_error_of(&answer);
        assert!(status >= 400, "{}: {body}", String::from_utf8_lossy(&request));
        answered += 1;
    }
    assert!(answered >= 100, "{answered} of 120 mangled heads answered");
}

/// A compensation target that holds every lookup until the test opens its gate: billing hung.
#[derive(Default)]
struct HungBilling {
    open: Mutex<bool>,
    changed: std::sync::Condvar,
    waiting: std::sync::atomic::AtomicUsize,
}

impl HungBilling {
    fn release(&self) {
        *self.open.lock().unwrap() = true;
        self.changed.notify_all();
    }
}

impl Compensator for HungBilling {
    fn has_compensation(&self, tool: &str) -> bool {
        tool == "issue_credit"
    }

    fn find_effect(&self, record: &ExecutionRecord) -> Result<Effect, LookupError> {
        self.waiting.fetch_add(1, Ordering::SeqCst);
        let mut open = self.open.lock().unwrap();
        while !*open {
            open = self.changed.wait(open).unwrap();
        }
        Ok(Effect::Found {
            reference: format!("credit-of-{}", record.key),
            detail: format!("the credit of {}", record.key),
        })
    }

    fn compensate(&self, _: &ExecutionRecord, reference: &str) -> Result<String, UndoError> {
        Ok(format!("voided {reference}"))
    }
}

/// Issue 13, item 2: a compensation used to hold one of the ledger connections while it
/// waited on billing, so sixteen slow compensations blocked unrelated reads and resolves —
/// resolve being the fallback when billing is down. No connection is held across a call to
/// billing now: with sixteen compensations stuck on a hung billing, reads and resolves are
/// answered at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hung_billing_holds_its_compensations_never_the_ledger() {
    const STUCK: usize = 16;
    let directory = tempfile::tempdir().unwrap();
    let path = directory.path().join("ledger.sqlite");
    let mut ledger = Ledger::open(&path).unwrap();
    for run in 1..=STUCK + 1 {
        reserve(&mut ledger, "default", &format!("r{run}"), "c1", "issue_credit", 100);
    }
    let billing = Arc::new(HungBilling::default());
    let operators = Operators::load(&tokens_file(directory.path())).unwrap();
    let state = ApiState::open(&path, operators)
        .unwrap()
        .with_clock(Arc::new(|| 10_000_u64))
        .with_compensator(Arc::clone(&billing) as Arc<dyn Compensator>);
    let server = Arc::new(start(state).await);
    let compensations: Vec<_> = (1..=STUCK)
        .map(|run| {
            let server = Arc::clone(&server);
            tokio::spawn(async move {
                server
                    .post(
                        &format!("/v1/tool-executions/r{run}:c1/compensate"),
                        ADA,
                        json!({"reason": "the order was cancelled"}),
                    )
                    .await
            })
        })
        .collect();
    // Bounded: had compensations held connections, only as many as the pool has would get
    // this far, and the reads below would be what fails.
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(5);
    while billing.waiting.load(Ordering::SeqCst) < STUCK && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    assert_eq!(
        billing.waiting.load(Ordering::SeqCst),
        STUCK,
        "every compensation reached billing"
    );
    // Every compensation waits on billing now. The ledger is free for everyone else.
    let answer_within = std::time::Duration::from_secs(5);
    let (status, page) = tokio::time::timeout(answer_within, server.get("/v1/tool-executions?limit=200", ADA))
        .await
        .expect("a read is answered while billing hangs");
    assert_eq!(status, StatusCode::OK, "{page}");
    let last = format!("/v1/tool-executions/r{}:c1/resolve", STUCK + 1);
    let (status, detail) = tokio::time::timeout(
        answer_within,
        server.post(
            &last,
            ADA,
            json!({"status": "failed", "reason": "billing's log shows it never arrived", "expected_status": "started",
                   "acknowledge_in_flight": true}),
        ),
    )
    .await
    .expect("a resolve is answered while billing hangs");
    // Released before any assertion: a failed assertion must not leave the compensations
    // waiting on billing forever (the test would hang instead of failing).
    billing.release();
    assert_eq!(status, StatusCode::OK, "{detail}");
    for compensation in compensations {
        let (status, detail) = compensation.await.unwrap();
        assert_eq!(status, StatusCode::OK, "{detail}");
        assert_eq!(detail["record"]["status"], "compensated");
    }
}
