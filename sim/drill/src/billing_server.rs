//! `twice-sim billing`: the billing world as a real HTTP server over its own SQLite file.
//!
//! Endpoints (JSON):
//!
//! - `POST /v1/credits` with an optional `Idempotency-Key` header and a body
//!   `{account, amount_cents, memo, intent}`: 201 and `{"applied": …}` when a credit lands;
//!   200 and `{"repeat": …}` when billing honours keys and has seen this one (the first
//!   credit's id, nothing paid); 409 for the same key with another body; 422 for any other
//!   refusal. The answer body is always [`twice_world::billing::Answer`].
//! - `GET /v1/credits?idempotency_key=K`: the reconcile hook's lookup. 200 with the credit
//!   stored under `K` (as its key, or in its metadata), 404 when there is none; 422 when
//!   billing ignores keys, because then it cannot tell (a 404 would claim it knows). Under
//!   billing's terms (`--key-retention-ms`, `--lookup-settle-ms`) a credit whose key it forgot,
//!   or that landed less than the settle time ago, is not found; `&by_hand=true` reads the
//!   entries themselves, as a person checking billing by hand (the drill's operator) does.
//! - `POST /v1/credits/void` with `{idempotency_key, account, amount_cents, intent}`: the
//!   compensation as a naive runtime sends it. Like many real billing APIs it posts the
//!   reversal even when no credit is found, which is why the runtime never compensates by
//!   itself.
//! - `POST /v1/credits/{credit_id}/void`: voids one credit found first (the operator API's
//!   compensation). 201 with the reversal; 200 and `{"repeat": …}` naming the existing
//!   reversal when the credit was already voided (nothing moves); 404 for an unknown id.
//! - `GET /v1/accounts`, `GET /v1/stats` (requests still being applied, entries so far).
//! - Emails, owner changes and deletes (`POST /v1/emails`, `PUT /v1/accounts/{id}/owner`,
//!   `DELETE /v1/records/{id}`), their lookup by key and the records: `records.rs`.
//!
//! A credit request stamped `Twice-Sent-At-Ms` is refused once it arrives past billing's send
//! window (`send_window.rs` says why: it is what lets "nothing under the key" prove anything).
//!
//! Each credit or void takes a seeded random time, split between the way in and the way
//! out. The way in and the write run in a task of their own, so a request billing received
//! is applied even when the worker that sent it is killed while waiting; the answer then
//! goes nowhere — exactly the response that outlives a worker.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, Query, State};
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};
use serde_json::json;

mod clock;
mod command;
mod in_process;
mod records;
mod send_window;

pub use clock::{CALL_KEY_HEADER, Clock, NOW_HEADER};
pub use command::billing_command;
pub use in_process::InProcessBilling;
pub use records::{DeleteBody, Effect, EffectLookup, EmailBody, OWNER_CHARS_MAX, OwnerBody, RecordsView};
pub use send_window::{REQUEST_WINDOW_BEYOND_LATENCY_MS, REQUEST_WINDOW_MS_MAX, SENT_AT_HEADER, request_window};
use send_window::{sent_at, too_late};

use super::billing_store::{BillingStore, Operation, StoreError, VoidByIdRequest, VoidRequest};
use super::now_ms;
use twice_world::billing::{Answer, Billing, CreditRequest, EntryKind, KeyHandling};
use twice_world::runtime::key::IdempotencyKey;

/// The longest a credit may be made to take.
pub const LATENCY_MS_MAX: u32 = 10_000;
/// The most bytes a request body may have.
pub const BODY_BYTES_MAX: usize = 16 * 1024;
/// Limits on the text fields of a request.
pub const ACCOUNT_CHARS_MAX: usize = 100;
pub const MEMO_CHARS_MAX: usize = 500;
pub const INTENT_CHARS_MAX: usize = 200;
/// How long billing waits, when asked to stop, for requests it received to be applied.
const DRAIN_GRACE_MS: u64 = 5_000;
/// Worker threads: requests are short and SQLite writes run on tokio's blocking threads.
const SERVER_THREADS: usize = 2;
/// The header a worker passes its key in (matched without regard to case).
pub const IDEMPOTENCY_KEY_HEADER: &str = "idempotency-key";
#[derive(Debug, clap::Args)]
pub struct BillingArgs {
    /// The billing database (SQLite). Created if missing; an existing one is replayed entry by entry.
    #[arg(long)]
    pub db: PathBuf,
    /// The address to listen on. Port 0 picks a free port; the first line printed names it.
    #[arg(long, default_value = "127.0.0.1:0")]
    pub addr: SocketAddr,
    /// What billing does with an Idempotency-Key: honour, metadata-only or ignore.
    #[arg(long, default_value = "honour")]
    pub keys: String,
    /// Each credit or void takes up to this long (drawn from the seed), split between the
    /// request's way in and the response's way out.
    #[arg(long, default_value_t = 0)]
    pub latency_ms: u32,
    /// The seed of the latency draws.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Allow listening on an address other machines can reach (the default refuses).
    #[arg(long)]
    pub allow_non_loopback: bool,
    /// Stop (gracefully) when standard input closes: the drill holds it, so billing never outlives the drill.
    #[arg(long)]
    pub stop_on_stdin_close: bool,
    /// Billing forgets an idempotency key this long after the credit it made: a resend past it
    /// is paid again, and a lookup by the key finds nothing. Default: keys are kept for ever.
    #[arg(long)]
    pub key_retention_ms: Option<u64>,
    /// A credit shows to lookups by key only this long after it landed (an eventually
    /// consistent read). Default: at once.
    #[arg(long)]
    pub lookup_settle_ms: Option<u64>,
    /// A credit request stamped with `Twice-Sent-At-Ms` is applied only up to this long after
    /// its stamp, and refused (nothing paid) when it arrives later. Default: `--latency-ms`
    /// plus 500 ms.
    #[arg(long)]
    pub request_window_ms: Option<u32>,
}

/// A credit request's body. The key travels in the header, as with real payment APIs.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CreditBody {
    pub account: String,
    pub amount_cents: u32,
    pub memo: String,
    /// The intent the agent meant (`<run_id>/<item>`): recorded in metadata so effects are
    /// counted per intent. Billing's rules never look at it.
    pub intent: String,
}

/// What `GET /v1/credits` answers.
pub use twice_world::billing::Lookup;

/// What `GET /v1/stats` answers.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stats {
    #[serde(with = "twice_world::billing::key_handling::by_name")]
    pub key_handling: KeyHandling,
    /// Requests received and not yet applied (or refused).
    pub in_flight: u64,
    pub entries: usize,
    pub credits: usize,
    pub reversals: usize,
}

#[derive(Debug)]
struct World {
    billing: Billing,
    store: BillingStore,
}

#[derive(Debug)]
struct Shared {
    world: Mutex<World>,
    rng: Mutex<ChaCha8Rng>,
    latency_ms: u32,
    /// `--request-window-ms`.
    request_window_ms: u64,
    /// Where it reads the time.
    clock: Clock,
    in_flight: AtomicU64,
    /// The keys of the credits in `in_flight`, with how many requests carry each.
    in_flight_keys: Mutex<std::collections::BTreeMap<String, u32>>,
}

impl Shared {
    /// (way in, way out) for one request.
    fn draw_latency(&self) -> (u64, u64) {
        if self.latency_ms == 0 {
            return (0, 0);
        }
        let mut rng = self.rng.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let total = rng.random_range(0..=self.latency_ms);
        let way_in = rng.random_range(0..=total);
        (u64::from(way_in), u64::from(total - way_in))
    }

    fn keys_in_flight(&self) -> std::sync::MutexGuard<'_, std::collections::BTreeMap<String, u32>> {
        self.in_flight_keys
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// A lookup's key, checked (400 when it is not one), and the requests under it that billing
    /// received and has not applied yet: "nothing yet" is not "nothing".
    fn in_flight_under(&self, key: &str) -> Result<u32, Box<Response>> {
        if let Err(detail) = IdempotencyKey::parse(key) {
            return Err(Box::new(error(StatusCode::BAD_REQUEST, detail.to_string())));
        }
        Ok(self.keys_in_flight().get(key).copied().unwrap_or(0))
    }

    fn world(&self) -> std::sync::MutexGuard<'_, World> {
        // A panic while holding the lock cannot leave billing half-changed: `apply` rebuilds
        // it from the file when a write fails, and Billing's own steps do not panic.
        self.world.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Applies one request. `Ok((answer, the status a refusal is answered with))`.
    /// `sent_at_ms`: the request's stamp, checked against the send window under the same
    /// lock as the write, so a lookup after the window sees every request it let through.
    /// `given_now_ms`: the time the request gives, on a clock that reads it there.
    fn apply(
        &self,
        operation: &Operation,
        sent_at_ms: Option<u64>,
        given_now_ms: Option<u64>,
    ) -> Result<(Answer, StatusCode), StoreError> {
        let mut world = self.world();
        let World { billing, store } = &mut *world;
        let now = given_now_ms.unwrap_or_else(now_ms);
        if let (Operation::Credit(request), Some(sent_at_ms)) = (operation, sent_at_ms)
            && let Some(reason) = too_late(billing, request, sent_at_ms, self.request_window_ms, now)
        {
            return Ok((Answer::Rejected { reason }, StatusCode::UNPROCESSABLE_ENTITY));
        }
        let answer = store.apply(billing, operation, now)?;
        let refusal_status = match operation {
            Operation::Credit(request)
                if billing.key_handling == KeyHandling::Honour
                    && request
                        .idempotency_key
                        .as_deref()
                        .is_some_and(|key| billing.find_credit(key).is_some()) =>
            {
                StatusCode::CONFLICT
            }
            Operation::VoidById(request) if !billing.entries.iter().any(|entry| entry.id == request.credit_id) => {
                StatusCode::NOT_FOUND
            }
            // An unknown account, or a record already gone: there is nothing at that address.
            Operation::Email(request) | Operation::OwnerChange(request) | Operation::Delete(request)
                if !billing.accounts.contains_key(&request.account)
                    || matches!(operation, Operation::Delete(_)) && billing.records.is_deleted(&request.account) =>
            {
                StatusCode::NOT_FOUND
            }
            Operation::OwnerChangedBy(change) if !billing.accounts.contains_key(&change.account) => {
                StatusCode::NOT_FOUND
            }
            Operation::Credit(_)
            | Operation::Void(_)
            | Operation::VoidById(_)
            | Operation::Email(_)
            | Operation::OwnerChange(_)
            | Operation::Delete(_)
            | Operation::OwnerChangedBy(_) => StatusCode::UNPROCESSABLE_ENTITY,
        };
        Ok((answer, refusal_status))
    }
}

fn error(status: StatusCode, message: impl Into<String>) -> Response {
    (status, axum::Json(json!({ "error": message.into() }))).into_response()
}

fn refusal(status: StatusCode, reason: impl Into<String>) -> Response {
    (status, axum::Json(Answer::Rejected { reason: reason.into() })).into_response()
}

/// A request's field billing refuses.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
enum BadField {
    /// A text field empty or too long.
    #[error("`{field}` must have 1 to {chars_max} characters")]
    Length { field: &'static str, chars_max: usize },
    /// The idempotency key is not a key.
    #[error("{0}")]
    Key(#[from] twice_world::runtime::key::KeyError),
    /// A credit id billing never makes.
    #[error(
        "`{}` is not a credit id (1 to {} letters, digits or `_`, like cr_0001)",
        .0.chars().take(CREDIT_ID_CHARS_MAX + 8).collect::<String>(),
        CREDIT_ID_CHARS_MAX
    )]
    CreditId(String),
}

fn check_text(field: &'static str, text: &str, chars_max: usize) -> Result<(), BadField> {
    if text.trim().is_empty() || text.chars().count() > chars_max {
        return Err(BadField::Length { field, chars_max });
    }
    Ok(())
}

/// The request's `Idempotency-Key`, checked (a 400 names what is wrong with it).
fn idempotency_key(headers: &HeaderMap) -> Result<Option<String>, Box<Response>> {
    let Some(value) = headers.get(IDEMPOTENCY_KEY_HEADER) else {
        return Ok(None);
    };
    value
        .to_str()
        .map_err(|error| error.to_string())
        .and_then(|text| IdempotencyKey::parse(text).map_err(|error| error.to_string()))
        .map(|key| Some(key.as_str().to_owned()))
        .map_err(|detail| Box::new(refusal(StatusCode::BAD_REQUEST, format!("Idempotency-Key: {detail}"))))
}

/// Runs `operation` after its way in, in a task of its own, then waits the way out.
/// `sent_at_ms`: a credit's stamp (the send window); `given_now_ms`: the time the request
/// gives, on a clock that reads it there.
async fn applied_later(
    shared: Arc<Shared>,
    operation: Operation,
    sent_at_ms: Option<u64>,
    given_now_ms: Option<u64>,
) -> Response {
    let (way_in_ms, way_out_ms) = shared.draw_latency();
    let key = operation.idempotency_key().map(str::to_owned);
    shared.in_flight.fetch_add(1, Ordering::SeqCst);
    if let Some(key) = &key {
        *shared.keys_in_flight().entry(key.clone()).or_default() += 1;
    }
    let task_shared = Arc::clone(&shared);
    // Spawned: if the client hangs up (its worker was killed), this handler is dropped, but
    // a request billing received is still applied, as a real billing system would.
    let task = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(way_in_ms)).await;
        let apply_shared = Arc::clone(&task_shared);
        let result =
            tokio::task::spawn_blocking(move || apply_shared.apply(&operation, sent_at_ms, given_now_ms)).await;
        if let Some(key) = key {
            let mut keys = task_shared.keys_in_flight();
            if let Some(count) = keys.get_mut(&key) {
                *count -= 1;
                if *count == 0 {
                    keys.remove(&key);
                }
            }
        }
        task_shared.in_flight.fetch_sub(1, Ordering::SeqCst);
        result
    });
    let result = task.await;
    tokio::time::sleep(Duration::from_millis(way_out_ms)).await;
    match result {
        Ok(Ok(Ok((answer, refusal_status)))) => {
            let status = match &answer {
                Answer::Applied { .. } | Answer::Emailed { .. } => StatusCode::CREATED,
                Answer::Repeat { .. } | Answer::Balance { .. } | Answer::OwnerSet { .. } | Answer::Deleted { .. } => {
                    StatusCode::OK
                }
                Answer::Rejected { .. } => refusal_status,
            };
            (status, axum::Json(answer)).into_response()
        }
        Ok(Ok(Err(store_error))) => error(
            StatusCode::SERVICE_UNAVAILABLE,
            format!("billing could not record the entry, so it was not applied: {store_error}"),
        ),
        Ok(Err(join_error)) | Err(join_error) => error(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("billing failed while applying the request: {join_error}"),
        ),
    }
}

async fn post_credit(State(shared): State<Arc<Shared>>, headers: HeaderMap, body: Bytes) -> Response {
    let given_now_ms = match shared.clock.given(&headers) {
        Ok(given) => given,
        Err(refused) => return *refused,
    };
    let key = match idempotency_key(&headers) {
        Ok(key) => key,
        Err(refused) => return *refused,
    };
    let arrived_at_ms = given_now_ms.unwrap_or_else(now_ms);
    let sent_at_ms = match headers.get(SENT_AT_HEADER).map(|value| sent_at(value, arrived_at_ms)) {
        None => None,
        Some(Ok(stamp)) => Some(stamp),
        Some(Err(detail)) => return refusal(StatusCode::BAD_REQUEST, format!("Twice-Sent-At-Ms: {detail}")),
    };
    let body: CreditBody = match serde_json::from_slice(&body) {
        Ok(body) => body,
        Err(parse_error) => {
            return refusal(
                StatusCode::BAD_REQUEST,
                format!("the body is not a credit request ({{account, amount_cents, memo, intent}}): {parse_error}"),
            );
        }
    };
    let checked = check_text("account", &body.account, ACCOUNT_CHARS_MAX)
        .and_then(|()| check_text("memo", &body.memo, MEMO_CHARS_MAX))
        .and_then(|()| check_text("intent", &body.intent, INTENT_CHARS_MAX));
    if let Err(detail) = checked {
        return refusal(StatusCode::UNPROCESSABLE_ENTITY, detail.to_string());
    }
    let request = CreditRequest {
        account: body.account,
        amount_cents: body.amount_cents,
        memo: body.memo,
        idempotency_key: key,
        intent: body.intent,
    };
    applied_later(shared, Operation::Credit(request), sent_at_ms, given_now_ms).await
}

async fn post_void(State(shared): State<Arc<Shared>>, headers: HeaderMap, body: Bytes) -> Response {
    let given_now_ms = match shared.clock.given(&headers) {
        Ok(given) => given,
        Err(refused) => return *refused,
    };
    let request: VoidRequest = match serde_json::from_slice(&body) {
        Ok(request) => request,
        Err(parse_error) => {
            return refusal(
                StatusCode::BAD_REQUEST,
                format!(
                    "the body is not a void request ({{idempotency_key, account, amount_cents, intent}}): {parse_error}"
                ),
            );
        }
    };
    let checked = IdempotencyKey::parse(&request.idempotency_key)
        .map(|_| ())
        .map_err(BadField::Key)
        .and_then(|()| check_text("account", &request.account, ACCOUNT_CHARS_MAX))
        .and_then(|()| check_text("intent", &request.intent, INTENT_CHARS_MAX));
    if let Err(detail) = checked {
        return refusal(StatusCode::UNPROCESSABLE_ENTITY, detail.to_string());
    }
    applied_later(shared, Operation::Void(request), None, given_now_ms).await
}

/// The most characters of a credit id in a path (billing makes ids like `cr_0001`).
pub const CREDIT_ID_CHARS_MAX: usize = 32;

/// Checks a credit id from a path: 1 to [`CREDIT_ID_CHARS_MAX`] letters, digits or `_`.
fn check_credit_id(credit_id: &str) -> Result<(), BadField> {
    if credit_id.is_empty()
        || credit_id.chars().count() > CREDIT_ID_CHARS_MAX
        || !credit_id
            .chars()
            .all(|character| character.is_ascii_alphanumeric() || character == '_')
    {
        return Err(BadField::CreditId(credit_id.to_owned()));
    }
    Ok(())
}

async fn post_void_by_id(
    State(shared): State<Arc<Shared>>,
    headers: HeaderMap,
    axum::extract::Path(credit_id): axum::extract::Path<String>,
) -> Response {
    let given_now_ms = match shared.clock.given(&headers) {
        Ok(given) => given,
        Err(refused) => return *refused,
    };
    if let Err(detail) = check_credit_id(&credit_id) {
        return refusal(StatusCode::BAD_REQUEST, detail.to_string());
    }
    applied_later(
        shared,
        Operation::VoidById(VoidByIdRequest { credit_id }),
        None,
        given_now_ms,
    )
    .await
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct LookupQuery {
    idempotency_key: String,
    /// Read the entries themselves, whatever billing's terms would show (a person checking).
    #[serde(default)]
    by_hand: bool,
}

async fn get_credit(
    State(shared): State<Arc<Shared>>,
    headers: HeaderMap,
    query: Result<Query<LookupQuery>, axum::extract::rejection::QueryRejection>,
) -> Response {
    let given_now_ms = match shared.clock.given(&headers) {
        Ok(given) => given,
        Err(refused) => return *refused,
    };
    let Ok(Query(query)) = query else {
        return error(StatusCode::BAD_REQUEST, "give the key to look up as ?idempotency_key=K");
    };
    let in_flight = match shared.in_flight_under(&query.idempotency_key) {
        Ok(in_flight) => in_flight,
        Err(refused) => return *refused,
    };
    let world = shared.world();
    let lookup = if query.by_hand {
        world.billing.look_up(&query.idempotency_key, in_flight)
    } else {
        world
            .billing
            .look_up_now(&query.idempotency_key, in_flight, given_now_ms.unwrap_or_else(now_ms))
    };
    let Some(lookup) = lookup else {
        return error(
            StatusCode::UNPROCESSABLE_ENTITY,
            "billing ignores idempotency keys (--keys ignore): it stores none, so it cannot look a credit up by one",
        );
    };
    let status = if lookup.credit.is_some() {
        StatusCode::OK
    } else {
        StatusCode::NOT_FOUND
    };
    (status, axum::Json(lookup)).into_response()
}

async fn get_accounts(State(shared): State<Arc<Shared>>) -> Response {
    let world = shared.world();
    let accounts: Vec<&twice_world::billing::Account> = world.billing.accounts.values().collect();
    axum::Json(json!({ "accounts": accounts })).into_response()
}

fn stats(shared: &Shared) -> Stats {
    let world = shared.world();
    let credits = world
        .billing
        .entries
        .iter()
        .filter(|entry| entry.kind == EntryKind::Credit)
        .count();
    Stats {
        key_handling: world.billing.key_handling,
        in_flight: shared.in_flight.load(Ordering::SeqCst),
        entries: world.billing.entries.len(),
        credits,
        reversals: world.billing.entries.len() - credits,
    }
}

async fn get_stats(State(shared): State<Arc<Shared>>) -> Response {
    axum::Json(stats(&shared)).into_response()
}

async fn not_found(method: Method, uri: Uri) -> Response {
    error(StatusCode::NOT_FOUND, format!("no such endpoint: {method} {uri}"))
}

fn router(shared: Arc<Shared>) -> Router {
    Router::new()
        .route("/v1/credits", post(post_credit).get(get_credit))
        .route("/v1/credits/void", post(post_void))
        .route("/v1/credits/{credit_id}/void", post(post_void_by_id))
        .route("/v1/accounts", get(get_accounts))
        .route("/v1/emails", post(records::post_email))
        .route("/v1/accounts/{account}/owner", axum::routing::put(records::put_owner))
        .route("/v1/records/{account}", axum::routing::delete(records::delete_record))
        .route("/v1/records", get(records::get_records))
        .route("/v1/effects", get(records::get_effect))
        .route("/v1/stats", get(get_stats))
        .fallback(not_found)
        .layer(DefaultBodyLimit::max(BODY_BYTES_MAX))
        .with_state(shared)
}
