//! A tool that calls a real HTTP API with the `Idempotency-Key` header: a refund through the
//! drill's billing server (`twice-sim billing`), whose worker is killed while its request is
//! on the wire and whose run another worker recovers.
//!
//! 1. Billing starts on a free port, each credit taking up to [`BILLING_LATENCY_MS`].
//! 2. Worker `w1` runs in a process of its own (this program again, [`WORKER_VARIABLE`] set):
//!    it reserves the call in a SQLite ledger file, passes the send fence and POSTs the credit
//!    with the call's key in the `Idempotency-Key` header.
//! 3. As soon as billing has the request, `w1` is killed (SIGKILL): the ledger says `started`,
//!    attempt 1 sent, no answer. Billing applies the credit anyway.
//! 4. Worker `w2` recovers the run from the same ledger. A `started` call that changes
//!    something is an unknown: it is not sent again. Its reconcile hook looks the credit up by
//!    key (`GET /v1/credits?idempotency_key=…`), finds it, and the ledger records `completed`.
//! 5. A naive retry — the same request again, with the same key — is answered `repeat` by
//!    billing, which honours keys: still one credit. The header is what makes a resend safe;
//!    the ledger is what keeps the runtime from needing one.
//!
//! The HTTP client is a few lines over `std::net::TcpStream` (HTTP/1.1, `Connection: close`):
//! the runtime has no async runtime and no HTTP stack, and an agent brings its own.
//!
//! Run it: `cargo build -p twice-sim && cargo run -p twice-runtime --example http_tool --
//! target/debug/twice-sim` (the argument is the `twice-sim` binary; default
//! `target/debug/twice-sim`). `cargo test -p twice-sim --test http_tool` runs the whole story;
//! `cargo test -p twice-runtime --example http_tool` checks the client against a fake server.

// This program is the driver, not the runtime: it owns the clock and the waiting the runtime's
// clippy.toml keeps out of the runtime itself.
#![allow(clippy::disallowed_methods)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use twice_runtime::ToolAnswer;
use twice_runtime::execution::{
    Agent, AgentError, Attempt, Clock, Ending, Exit, Found, LookUp, Run, Sending, ToolExecution, next_call,
};
use twice_runtime::executor::Executor;
use twice_runtime::key::IdempotencyKey;
use twice_runtime::ledger::{ExecutionRecord, Ledger, LedgerError};
use twice_runtime::rules::Status;
use twice_runtime::run::{Arguments, Decision, RunState, RunStatus, ToolCall, UnparsableState};
use twice_runtime::tool::{SideEffect, ToolDeclaration};
use twice_runtime::worker::{Worker, WorkerSetup};

/// Set (to the ledger file) in the worker process this program starts.
pub const WORKER_VARIABLE: &str = "TWICE_HTTP_TOOL_WORKER";
/// Where that worker finds billing.
pub const BILLING_VARIABLE: &str = "TWICE_HTTP_TOOL_BILLING";
/// Billing takes up to this long per credit (drawn from its seed): long enough for the kill to
/// land while the request is on the wire.
pub const BILLING_LATENCY_MS: u32 = 3_000;
/// Billing's latency seed: its first draw is long (the test checks the kill came first).
pub const BILLING_SEED: u64 = 7;
/// How long an answer may take before the tool calls it a timeout (it may have landed).
pub const ANSWER_TIMEOUT_MS: u64 = 10_000;
/// How long the demonstration waits for something it expects (billing to start, a request to
/// arrive) before it gives up and says which.
pub const WAIT_MS_MAX: u64 = 30_000;
const RUN_ID: &str = "refund-1042";

// ----- a blocking HTTP/1.1 client, enough for a JSON API -----

/// An HTTP answer: its status code and body.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HttpAnswer {
    /// The status code (`201`, `404`, …).
    pub status: u16,
    /// The body, as text.
    pub body: String,
}

/// How a request went wrong.
#[derive(Debug, thiserror::Error)]
pub enum HttpError {
    /// Nothing was sent: the server could not be reached.
    #[error("nothing was sent: {0}")]
    NotSent(#[source] std::io::Error),
    /// The request left; no (whole) answer came: it may have taken effect.
    #[error("no answer: {0}")]
    NoAnswer(#[source] AnswerError),
}

/// Why no whole answer came back.
#[derive(Debug, thiserror::Error)]
pub enum AnswerError {
    #[error(transparent)]
    Io(#[from] std::io::Error),
    #[error("the answer ended inside its headers")]
    CutInHeaders,
    #[error("no status line in `{0}`")]
    NoStatus(String),
    #[error("a chunked answer (this client reads Content-Length answers only)")]
    Chunked,
    #[error("the answer ended after {received} of {length} bytes")]
    CutInBody { received: usize, length: usize },
}

/// `method path` to `address` with a JSON body and extra headers; one connection per request.
pub fn http(
    address: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: Option<&str>,
) -> Result<HttpAnswer, HttpError> {
    let mut stream =
        TcpStream::connect_timeout(&address, Duration::from_millis(ANSWER_TIMEOUT_MS)).map_err(HttpError::NotSent)?;
    let no_answer = |error: std::io::Error| HttpError::NoAnswer(AnswerError::Io(error));
    stream
        .set_read_timeout(Some(Duration::from_millis(ANSWER_TIMEOUT_MS)))
        .map_err(no_answer)?;
    let body = body.unwrap_or("");
    let mut request = format!(
        "{method} {path} HTTP/1.1\r\nHost: {address}\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str("\r\n");
    request.push_str(body);
    stream.write_all(request.as_bytes()).map_err(no_answer)?;
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).map_err(no_answer)?;
    parse_answer(&answer).map_err(HttpError::NoAnswer)
}

/// An HTTP/1.1 answer read to its end (`Connection: close`): status line, headers, body.
fn parse_answer(raw: &[u8]) -> Result<HttpAnswer, AnswerError> {
    let text = String::from_utf8_lossy(raw);
    let (head, body) = text.split_once("\r\n\r\n").ok_or(AnswerError::CutInHeaders)?;
    let status = head
        .lines()
        .next()
        .and_then(|line| line.split_whitespace().nth(1))
        .and_then(|code| code.parse().ok())
        .ok_or_else(|| AnswerError::NoStatus(head.lines().next().unwrap_or("").to_owned()))?;
    let header = |name: &str| {
        head.lines().skip(1).find_map(|line| {
            let (key, value) = line.split_once(':')?;
            key.trim().eq_ignore_ascii_case(name).then(|| value.trim().to_owned())
        })
    };
    if header("transfer-encoding").is_some_and(|encoding| encoding.eq_ignore_ascii_case("chunked")) {
        return Err(AnswerError::Chunked);
    }
    if let Some(length) = header("content-length").and_then(|length| length.parse::<usize>().ok())
        && body.len() < length
    {
        return Err(AnswerError::CutInBody {
            received: body.len(),
            length,
        });
    }
    Ok(HttpAnswer {
        status,
        body: body.to_owned(),
    })
}

// ----- the tool: a credit through billing's HTTP API -----

/// The one tool: a refund credit, external, passing the key, with a reconcile hook.
pub fn tools() -> Vec<ToolDeclaration> {
    // The provider keeps keys for good, and its look-ups see a credit at once: no terms.
    vec![ToolDeclaration::new("issue_credit", SideEffect::External).with_reconcile()]
}

/// The tool's execution over HTTP: a POST with the key in the `Idempotency-Key` header, and
/// a look-up by key for the reconcile hook.
#[derive(Debug)]
pub struct BillingApi {
    /// Where billing listens.
    pub address: SocketAddr,
}

impl ToolExecution for BillingApi {
    fn send(&mut self, sending: &Sending<'_>) -> Attempt {
        let arguments = sending.call.arguments.value();
        let body = serde_json::json!({
            "account": arguments["account"],
            "amount_cents": arguments["amount_cents"],
            "memo": arguments["memo"],
            "intent": format!("{RUN_ID}/{}", sending.call.item),
        })
        .to_string();
        let key = sending.downstream_key.map(IdempotencyKey::as_str);
        let mut headers: Vec<(&str, &str)> = key.iter().map(|key| ("Idempotency-Key", *key)).collect();
        // Billing refuses a request that arrives too long after this stamp (its send window),
        // so a lookup that finds nothing once the window has passed proves nothing will land.
        let sent_at = sending.recorded_at_ms.to_string();
        headers.push(("Twice-Sent-At-Ms", &sent_at));
        match http(self.address, "POST", "/v1/credits", &headers, Some(&body)) {
            Err(HttpError::NotSent(error)) => Attempt::NotSent {
                reason: format!("billing at {} cannot be reached: {error}", self.address),
            },
            Err(HttpError::NoAnswer(_)) => Attempt::TimedOut,
            Ok(answer) => Attempt::Answered(tool_answer(&answer)),
        }
    }

    fn look_up(&mut self, key: &IdempotencyKey, _call: &ToolCall) -> LookUp {
        let path = format!("/v1/credits?idempotency_key={}", key.as_str());
        // Not asked, no sense made, or "nothing" while a request with the key is being applied.
        let cannot_tell = |reason: String| LookUp::CannotTell { reason };
        let answer = match http(self.address, "GET", &path, &[], None) {
            Ok(answer) => answer,
            Err(error) => return cannot_tell(format!("billing did not answer the lookup of {key}: {error}")),
        };
        let lookup: serde_json::Value = serde_json::from_str(&answer.body).unwrap_or_default();
        match (answer.status, lookup.get("credit").filter(|credit| !credit.is_null())) {
            (200, Some(credit)) => LookUp::Found(Found {
                receipt: credit.to_string(),
                finding: format!("billing holds credit {} under key {key}", credit["id"]),
            }),
            (404, None) if lookup["in_flight"] == 0 => LookUp::Absent,
            (status, _) => cannot_tell(format!(
                "billing answered the lookup of {key} with {status}: {}",
                answer.body
            )),
        }
    }
}

/// Billing's answer to a credit as the runtime hears it: applied, a repeat of a key it has
/// seen, or refused.
fn tool_answer(answer: &HttpAnswer) -> ToolAnswer {
    let receipt = answer.body.clone();
    let parsed: serde_json::Value = serde_json::from_str(&answer.body).unwrap_or_default();
    match (answer.status, parsed.get("repeat")) {
        (201, _) => ToolAnswer::Applied { receipt },
        (200, Some(repeat)) => ToolAnswer::Repeat {
            first: repeat["credit_id"].as_str().unwrap_or_default().to_owned(),
            receipt,
        },
        (status, _) => ToolAnswer::Rejected {
            reason: format!("billing answered {status}"),
            receipt,
        },
    }
}

/// The "model": one refund, then done.
#[derive(Debug)]
struct Refund;

impl Agent for Refund {
    fn decide(&mut self, state: &RunState) -> Result<(Decision, RunState), AgentError> {
        let next = twice_runtime::execution::moved_on(state).ok_or("the item counter is at its limit")?;
        if next.item > 0 {
            return Ok((Decision::Done, next));
        }
        let arguments = serde_json::json!({"account": "acct_ada", "amount_cents": 2500, "memo": "refund order 1042"});
        next_call(state, "issue_credit", Arguments::new(arguments)).ok_or_else(|| "a counter is at its limit".into())
    }
}

/// The wall clock: a real agent's time.
#[derive(Debug)]
struct WallClock;

impl Clock for WallClock {
    fn now_ms(&mut self) -> u64 {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |elapsed| u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX))
    }
    fn wait_ms(&mut self, duration_ms: u64) {
        std::thread::sleep(Duration::from_millis(duration_ms));
    }
}

/// Runs worker `worker_id` on the ledger file at `ledger` against billing at `address`.
pub fn run_worker(ledger: &Path, address: SocketAddr, worker_id: &str) -> Ending {
    let setup = WorkerSetup::new(worker_id, RUN_ID, tools());
    let ledger = Ledger::open(ledger).expect("the ledger file opens");
    let mut executor = Executor::new(ledger, &setup);
    let mut worker = Worker::new(setup).expect("the setup names a worker, a run and its tools once each");
    Run::new(&mut worker, &mut executor)
        .clock(WallClock)
        .drive(&mut Refund, &mut BillingApi { address })
        .expect("the ledger answers")
}

// ----- the story: kill the worker mid-request, recover, resend -----

/// What the story came to.
#[derive(Debug)]
pub struct Story {
    /// The call's record right after `w1` was killed.
    pub after_kill: ExecutionRecord,
    /// How the recovering worker ended, and the run's status after it.
    pub recovered: Ending,
    /// The run's status after the recovery.
    pub run_status: RunStatus,
    /// The call's record after the recovery.
    pub after_recovery: ExecutionRecord,
    /// Billing's answer to the same request sent again with the same key.
    pub resent: HttpAnswer,
    /// Credits billing holds under the call's key at the end.
    pub credits_under_key: u64,
}

/// Why the story could not be told: the step that failed, with the error underneath it.
#[derive(Debug, thiserror::Error)]
pub enum StoryError {
    #[error("{}: billing does not start: {source}", twice_sim.display())]
    BillingStart {
        twice_sim: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("billing has no output to read its address from")]
    BillingOutput,
    #[error("reading billing's first line: {0}")]
    BillingFirstLine(#[source] std::io::Error),
    #[error("billing's first line names no address: `{0}`")]
    BillingAddress(String),
    #[error("{request}: {source}")]
    Http {
        request: String,
        #[source]
        source: HttpError,
    },
    #[error("GET {path}: {source}: {body}")]
    NotJson {
        path: String,
        #[source]
        source: serde_json::Error,
        body: String,
    },
    #[error("waited {WAIT_MS_MAX} ms for {0}")]
    Waited(&'static str),
    #[error(transparent)]
    Ledger(#[from] LedgerError),
    #[error("worker w1 does not start: {0}")]
    WorkerStart(#[source] std::io::Error),
    #[error("killing w1: {0}")]
    Kill(#[source] std::io::Error),
    #[error("waiting for w1: {0}")]
    Wait(#[source] std::io::Error),
    #[error("no checkpoint after the recovery")]
    NoCheckpoint,
    #[error("the run's checkpoint: {0}")]
    Checkpoint(#[from] UnparsableState),
    #[error("expected one call in the ledger, found {0}")]
    NotOneCall(String),
}

/// How the story differed from what the module says, with the story as it went.
#[derive(Debug, thiserror::Error)]
#[error("{what}: {story}")]
pub struct Mismatch {
    pub what: &'static str,
    /// The story, pretty-printed.
    pub story: String,
}

/// Billing, started from the `twice-sim` binary; stopped when this drops.
struct Billing {
    child: Child,
    /// Held open: billing stops when it closes.
    stdin: Option<ChildStdin>,
    address: SocketAddr,
}

impl Billing {
    fn start(twice_sim: &Path, folder: &Path) -> Result<Billing, StoryError> {
        let mut child = Command::new(twice_sim)
            .args(["billing", "--addr", "127.0.0.1:0", "--stop-on-stdin-close"])
            .arg("--db")
            .arg(folder.join("billing.sqlite"))
            .args(["--latency-ms", &BILLING_LATENCY_MS.to_string()])
            .args(["--seed", &BILLING_SEED.to_string()])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .map_err(|source| StoryError::BillingStart {
                twice_sim: twice_sim.to_path_buf(),
                source,
            })?;
        let stdin = child.stdin.take();
        let mut first_line = String::new();
        let stdout = child.stdout.take().ok_or(StoryError::BillingOutput)?;
        BufReader::new(stdout)
            .read_line(&mut first_line)
            .map_err(StoryError::BillingFirstLine)?;
        let address = first_line
            .strip_prefix("listening http://")
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|address| address.parse().ok())
            .ok_or_else(|| StoryError::BillingAddress(first_line.trim().to_owned()))?;
        Ok(Billing { child, stdin, address })
    }

    /// `GET path` as JSON.
    fn get(&self, path: &str) -> Result<serde_json::Value, StoryError> {
        let answer = http(self.address, "GET", path, &[], None).map_err(|source| StoryError::Http {
            request: format!("GET {path}"),
            source,
        })?;
        serde_json::from_str(&answer.body).map_err(|source| StoryError::NotJson {
            path: path.to_owned(),
            source,
            body: answer.body,
        })
    }
}

impl Drop for Billing {
    fn drop(&mut self) {
        // Closing its standard input stops billing gracefully; kill it if that did not.
        drop(self.stdin.take());
        let deadline = Instant::now() + Duration::from_millis(WAIT_MS_MAX);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Polls `done` every few milliseconds until it answers `Some`, for at most [`WAIT_MS_MAX`].
fn wait_for<T>(what: &'static str, mut done: impl FnMut() -> Result<Option<T>, StoryError>) -> Result<T, StoryError> {
    let deadline = Instant::now() + Duration::from_millis(WAIT_MS_MAX);
    loop {
        if let Some(value) = done()? {
            return Ok(value);
        }
        if Instant::now() > deadline {
            return Err(StoryError::Waited(what));
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// The story, in `folder`: billing from `twice_sim`, worker `w1` started by `worker` (a
/// command that runs [`run_worker`] for `w1` with [`WORKER_VARIABLE`] and
/// [`BILLING_VARIABLE`] set), killed, and recovered here.
pub fn story(twice_sim: &Path, folder: &Path, worker: Command) -> Result<Story, StoryError> {
    let billing = Billing::start(twice_sim, folder)?;
    let ledger_path = folder.join("ledger.sqlite");
    // The ledger exists before the worker starts, so it can be watched from here.
    let ledger = Ledger::open(&ledger_path)?;
    let mut worker = worker;
    let mut w1 = worker
        .env(WORKER_VARIABLE, &ledger_path)
        .env(BILLING_VARIABLE, billing.address.to_string())
        .spawn()
        .map_err(StoryError::WorkerStart)?;
    // Killed as soon as billing has the request (received, not yet answered).
    wait_for("billing to receive w1's credit", || {
        let stats = billing.get("/v1/stats")?;
        Ok((stats["in_flight"].as_u64() > Some(0) || stats["entries"].as_u64() > Some(0)).then_some(()))
    })?;
    w1.kill().map_err(StoryError::Kill)?;
    w1.wait().map_err(StoryError::Wait)?;
    let after_kill = only_record(&ledger)?;
    let key = after_kill.key.clone();
    // Billing applies what it received, whoever is left to hear the answer.
    wait_for("billing to apply the credit", || {
        let lookup = billing.get(&format!("/v1/credits?idempotency_key={}", key.as_str()))?;
        Ok((lookup["in_flight"].as_u64() == Some(0)).then_some(()))
    })?;
    let recovered = run_worker(&ledger_path, billing.address, "w2");
    let after_recovery = only_record(&ledger)?;
    let checkpoint = ledger.load_checkpoint(RUN_ID)?.ok_or(StoryError::NoCheckpoint)?;
    let run_status = RunState::from_json(&checkpoint.state)?.status;
    // What a naive retry would do: the same request, the same key.
    let body = r#"{"account":"acct_ada","amount_cents":2500,"memo":"refund order 1042","intent":"refund-1042/0"}"#;
    let resent = http(
        billing.address,
        "POST",
        "/v1/credits",
        &[("Idempotency-Key", key.as_str())],
        Some(body),
    )
    .map_err(|source| StoryError::Http {
        request: "the resend".to_owned(),
        source,
    })?;
    let lookup = billing.get(&format!("/v1/credits?idempotency_key={}", key.as_str()))?;
    Ok(Story {
        after_kill,
        recovered,
        run_status,
        after_recovery,
        resent,
        credits_under_key: lookup["credits_under_key"].as_u64().unwrap_or(0),
    })
}

/// The one call's record in `ledger`.
fn only_record(ledger: &Ledger) -> Result<ExecutionRecord, StoryError> {
    let records = ledger.all_records()?;
    match <[ExecutionRecord; 1]>::try_from(records) {
        Ok([record]) => Ok(record),
        Err(records) => Err(StoryError::NotOneCall(format!("{records:?}"))),
    }
}

/// Whether `story` went as the module says: killed mid-request, recovered by the hook, the
/// resend answered as a repeat, one credit. `Err` says what differed.
pub fn check(story: &Story) -> Result<(), Mismatch> {
    let fail = |what: &'static str| {
        Err(Mismatch {
            what,
            story: format!("{story:#?}"),
        })
    };
    if story.after_kill.status != Status::Started || story.after_kill.attempts != 1 {
        return fail("w1 was not killed between its send and its answer");
    }
    if story.after_recovery.status != Status::Completed || story.after_recovery.attempts != 1 {
        return fail("the recovery did not complete the call from the hook, without sending it again");
    }
    if story.run_status != RunStatus::Completed || story.recovered != Ending::Exited(Exit::Completed) {
        return fail("the recovered run did not complete");
    }
    if story.resent.status != 200 || !story.resent.body.contains("repeat") {
        return fail("billing did not answer the resend with the same key as a repeat");
    }
    if story.credits_under_key != 1 {
        return fail("billing does not hold exactly one credit under the key");
    }
    Ok(())
}

/// The worker process's part, when this program was started as one.
pub fn worker_from_environment() -> Option<Ending> {
    let ledger = PathBuf::from(std::env::var_os(WORKER_VARIABLE)?);
    let address = std::env::var(BILLING_VARIABLE).ok()?.parse().ok()?;
    Some(run_worker(&ledger, address, "w1"))
}

fn main() {
    if let Some(ending) = worker_from_environment() {
        println!("w1 ended: {ending:?}");
        return;
    }
    let twice_sim = std::env::args_os()
        .nth(1)
        .map_or_else(|| PathBuf::from("target/debug/twice-sim"), PathBuf::from);
    let folder = std::env::temp_dir().join(format!("twice-http-tool-{}", std::process::id()));
    std::fs::create_dir_all(&folder).expect("a temporary folder");
    let worker = Command::new(std::env::current_exe().expect("this program's path"));
    let outcome = story(&twice_sim, &folder, worker);
    std::fs::remove_dir_all(&folder).expect("the temporary folder is removed");
    let story = outcome.unwrap_or_else(|error| panic!("{error}"));
    println!("{story:#?}");
    match check(&story) {
        Ok(()) => println!("killed mid-request, recovered by the hook, the resend a repeat: one credit"),
        Err(error) => panic!("{error}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    /// A server that reads one request, hands it over, and answers `answer`.
    fn fake_server(answer: String) -> (SocketAddr, std::thread::JoinHandle<String>) {
        let listener = TcpListener::bind("127.0.0.1:0").expect("a free port");
        let address = listener.local_addr().expect("its address");
        let server = std::thread::spawn(move || {
            let (mut stream, _) = listener.accept().expect("a connection");
            let mut request = Vec::new();
            let mut buffer = [0_u8; 4096];
            // Headers, then as many body bytes as Content-Length says.
            loop {
                let read = stream.read(&mut buffer).expect("the request");
                request.extend_from_slice(&buffer[..read]);
                let text = String::from_utf8_lossy(&request).into_owned();
                if let Some((head, body)) = text.split_once("\r\n\r\n") {
                    let length = head
                        .lines()
                        .find_map(|line| line.strip_prefix("Content-Length: "))
                        .and_then(|length| length.parse::<usize>().ok())
                        .unwrap_or(0);
                    if body.len() >= length || read == 0 {
                        stream.write_all(answer.as_bytes()).expect("the answer");
                        return text;
                    }
                }
            }
        });
        (address, server)
    }

    #[test]
    fn a_credit_carries_its_key_in_the_idempotency_key_header() {
        let body = r#"{"applied":{"credit_id":"cr_1","balance_cents":2500}}"#;
        let (address, server) = fake_server(format!(
            "HTTP/1.1 201 Created\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        ));
        let key = IdempotencyKey::per_call(RUN_ID, "c1").unwrap();
        let call = ToolCall {
            id: "c1".into(),
            tool: "issue_credit".into(),
            item: 0,
            arguments: Arguments::new(serde_json::json!({"account": "ada", "amount_cents": 2500, "memo": "m"})),
        };
        let sending = Sending {
            key: &key,
            downstream_key: Some(&key),
            call: &call,
            attempt: 1,
            recorded_at_ms: 1_765_000_000_000,
        };
        let attempt = BillingApi { address }.send(&sending);
        let request = server.join().expect("the server thread");
        assert!(request.starts_with("POST /v1/credits HTTP/1.1\r\n"), "{request}");
        assert!(
            request.contains(&format!("\r\nIdempotency-Key: {}\r\n", key.as_str()))
                && request.contains("\r\nTwice-Sent-At-Ms: 1765000000000\r\n"),
            "{request}"
        );
        assert!(
            request.contains(r#""intent":"refund-1042/0""#) && request.contains(r#""account":"ada""#),
            "{request}"
        );
        assert!(
            matches!(attempt, Attempt::Answered(ToolAnswer::Applied { .. })),
            "{attempt:?}"
        );
    }

    #[test]
    fn an_answer_cut_short_is_no_answer_and_nothing_reachable_is_not_sent() {
        let cut = parse_answer(b"HTTP/1.1 201 Created\r\nContent-Length: 10\r\n\r\n{}").expect_err("cut");
        assert!(
            matches!(
                cut,
                AnswerError::CutInBody {
                    received: 2,
                    length: 10
                }
            ),
            "{cut}"
        );
        assert_eq!(cut.to_string(), "the answer ended after 2 of 10 bytes");
        let cut = parse_answer(b"HTTP/1.1 201 Cre").expect_err("cut in its headers");
        assert!(matches!(cut, AnswerError::CutInHeaders), "{cut}");
        assert_eq!(
            parse_answer(b"HTTP/1.1 404 Not Found\r\ncontent-length: 2\r\n\r\n{}").expect("whole"),
            HttpAnswer {
                status: 404,
                body: "{}".into()
            }
        );
        // A port nobody listens on: nothing was sent, so the call may be tried again.
        let closed = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap();
        assert!(matches!(
            http(closed, "GET", "/", &[], None),
            Err(HttpError::NotSent(_))
        ));
    }

    #[test]
    fn a_repeat_and_a_refusal_are_heard_as_such() {
        let repeat = HttpAnswer {
            status: 200,
            body: r#"{"repeat":{"credit_id":"cr_1","balance_cents":2500}}"#.into(),
        };
        assert!(matches!(tool_answer(&repeat), ToolAnswer::Repeat { first, .. } if first == "cr_1"));
        let refused = HttpAnswer {
            status: 409,
            body: r#"{"rejected":{"reason":"other body"}}"#.into(),
        };
        assert!(matches!(tool_answer(&refused), ToolAnswer::Rejected { .. }));
    }
}
