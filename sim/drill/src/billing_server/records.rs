//! Billing's other operations, over the world's records — the rest of the seed's side-effect
//! table. Each handler only reads the request: what it does with the `Idempotency-Key` (honours
//! it, stores it in metadata, ignores it, by `--keys`) is [`Billing`]'s
//! `send_email`/`change_owner`/`delete_record`, the same rule the simulator plays, applied and
//! stored through the same path as a credit ([`applied_later`]).
//!
//! - `POST /v1/emails` `{account, subject, intent}`: 201 `{"emailed": …}`; 200 `{"repeat": …}`
//!   for a key billing honours and has seen (no second email); 404 for an unknown account.
//! - `PUT /v1/accounts/{account}/owner` `{owner, intent, reason?}`: 200 `{"owner_set": {owner,
//!   previous}}` — a write replaces whatever is there, so a retry that lands after someone
//!   else's change undoes it (a lost update); 200 `{"repeat": …}` for an honoured key.
//! - `DELETE /v1/records/{account}` `{intent, reason?}`: 200 `{"deleted": …}`; a second delete
//!   finds nothing and answers 404 `{"rejected": {"reason": "not found: …"}}` unless the key is
//!   honoured (then 200 `{"repeat": …}`).
//! - `GET /v1/effects?idempotency_key=K`: the reconcile hook's lookup of an email, owner change
//!   or deletion made under `K` (200, or 404 with `effect: null`), with the requests carrying
//!   `K` still being applied (`in_flight`); 422 when billing ignores keys. The world keeps record
//!   keys for ever: no retention or settle time applies to them (only to credits).
//! - `GET /v1/records`: the outbox, the owners' history, the deletions and each account's owner.
//!
//! A scripted owner change by someone outside the agent is `PUT …/owner` without a key, with
//! its own intent (the drill's operator names itself there).

use std::collections::BTreeMap;
use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};

use super::{
    ACCOUNT_CHARS_MAX, INTENT_CHARS_MAX, MEMO_CHARS_MAX, Shared, applied_later, check_text, error, idempotency_key,
    refusal,
};
use crate::billing_store::Operation;
use twice_world::billing::{Billing, Deletion, Email, KeyHandling, OwnerChange, RecordRequest};

/// The most characters of an owner's name.
pub const OWNER_CHARS_MAX: usize = 100;

/// `POST /v1/emails`'s body.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EmailBody {
    pub account: String,
    pub subject: String,
    /// The intent the agent meant (`<run_id>/<item>`): emails are counted per intent.
    pub intent: String,
}

/// `PUT /v1/accounts/{account}/owner`'s body.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OwnerBody {
    pub owner: String,
    pub intent: String,
    /// Why, in words (optional).
    #[serde(default)]
    pub reason: String,
}

/// `DELETE /v1/records/{account}`'s body.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DeleteBody {
    pub intent: String,
    /// Why, in words (optional).
    #[serde(default)]
    pub reason: String,
}

/// One effect on the records, as a lookup by key finds it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Effect {
    Email(Email),
    OwnerChange(OwnerChange),
    Deletion(Deletion),
}

/// What `GET /v1/effects` answers.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct EffectLookup {
    /// The effect made under the key, if any.
    pub effect: Option<Effect>,
    /// Requests with the key received and not yet applied: "nothing yet" is not "nothing".
    pub in_flight: u32,
}

/// What `GET /v1/records` answers.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecordsView {
    pub outbox: Vec<Email>,
    pub owner_changes: Vec<OwnerChange>,
    pub deletions: Vec<Deletion>,
    /// Each account's owner now.
    pub owners: BTreeMap<String, String>,
}

/// The effect `billing` made under `key`: where it honours keys, the key it stored; where it
/// keeps them in metadata only, an email's metadata (owner changes and deletes keep none).
fn effect_under(billing: &Billing, key: &str) -> Option<Effect> {
    let records = &billing.records;
    let email = records.outbox.iter().find(|email| {
        email.idempotency_key.as_deref() == Some(key)
            || email.metadata.get("idempotency_key").map(String::as_str) == Some(key)
    });
    if let Some(email) = email {
        return Some(Effect::Email(email.clone()));
    }
    if let Some(change) = records
        .owner_changes
        .iter()
        .find(|change| change.idempotency_key.as_deref() == Some(key))
    {
        return Some(Effect::OwnerChange(change.clone()));
    }
    records
        .deletions
        .iter()
        .find(|deletion| deletion.deleted && deletion.idempotency_key.as_deref() == Some(key))
        .map(|deletion| Effect::Deletion(deletion.clone()))
}

/// Reads a body of type `T`, naming the fields it expects when it is not one.
fn body_of<T: serde::de::DeserializeOwned>(body: &Bytes, what: &str) -> Result<T, Box<Response>> {
    serde_json::from_slice(body).map_err(|parse_error| {
        Box::new(refusal(
            StatusCode::BAD_REQUEST,
            format!("the body is not {what}: {parse_error}"),
        ))
    })
}

/// The common part of the three requests: the clock, the key, the account's and intent's
/// checks; then the operation is applied as a credit is.
async fn apply_record(
    shared: Arc<Shared>,
    headers: &HeaderMap,
    request: RecordRequest,
    operation: fn(RecordRequest) -> Operation,
) -> Response {
    let given_now_ms = match shared.clock.given(headers) {
        Ok(given) => given,
        Err(refused) => return *refused,
    };
    let key = match idempotency_key(headers) {
        Ok(key) => key,
        Err(refused) => return *refused,
    };
    let checked = check_text("account", &request.account, ACCOUNT_CHARS_MAX)
        .and_then(|()| check_text("intent", &request.intent, INTENT_CHARS_MAX));
    if let Err(detail) = checked {
        return refusal(StatusCode::UNPROCESSABLE_ENTITY, detail.to_string());
    }
    if request.memo.chars().count() > MEMO_CHARS_MAX {
        return refusal(
            StatusCode::UNPROCESSABLE_ENTITY,
            format!("the subject or reason must have at most {MEMO_CHARS_MAX} characters"),
        );
    }
    let request = RecordRequest {
        // A standalone service knows no runtime: the key it was sent is all it can tell calls
        // apart by. Behind the runtime protocol's proxy, the wire names the call.
        call_key: shared
            .clock
            .call_key(headers)
            .or_else(|| key.clone())
            .unwrap_or_default(),
        idempotency_key: key,
        ..request
    };
    applied_later(shared, operation(request), None, given_now_ms).await
}

pub(super) async fn post_email(State(shared): State<Arc<Shared>>, headers: HeaderMap, body: Bytes) -> Response {
    let body: EmailBody = match body_of(&body, "an email ({account, subject, intent})") {
        Ok(body) => body,
        Err(refused) => return *refused,
    };
    if let Err(detail) = check_text("subject", &body.subject, MEMO_CHARS_MAX) {
        return refusal(StatusCode::UNPROCESSABLE_ENTITY, detail.to_string());
    }
    let request = RecordRequest {
        account: body.account,
        memo: body.subject,
        owner: None,
        idempotency_key: None,
        intent: body.intent,
        call_key: String::new(),
    };
    apply_record(shared, &headers, request, Operation::Email).await
}

pub(super) async fn put_owner(
    State(shared): State<Arc<Shared>>,
    headers: HeaderMap,
    Path(account): Path<String>,
    body: Bytes,
) -> Response {
    let body: OwnerBody = match body_of(&body, "an owner change ({owner, intent, reason?})") {
        Ok(body) => body,
        Err(refused) => return *refused,
    };
    if let Err(detail) = check_text("owner", &body.owner, OWNER_CHARS_MAX) {
        return refusal(StatusCode::UNPROCESSABLE_ENTITY, detail.to_string());
    }
    let request = RecordRequest {
        account,
        memo: body.reason,
        owner: Some(body.owner),
        idempotency_key: None,
        intent: body.intent,
        call_key: String::new(),
    };
    apply_record(shared, &headers, request, Operation::OwnerChange).await
}

pub(super) async fn delete_record(
    State(shared): State<Arc<Shared>>,
    headers: HeaderMap,
    Path(account): Path<String>,
    body: Bytes,
) -> Response {
    let body: DeleteBody = match body_of(&body, "a delete ({intent, reason?})") {
        Ok(body) => body,
        Err(refused) => return *refused,
    };
    let request = RecordRequest {
        account,
        memo: body.reason,
        owner: None,
        idempotency_key: None,
        intent: body.intent,
        call_key: String::new(),
    };
    apply_record(shared, &headers, request, Operation::Delete).await
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct EffectQuery {
    idempotency_key: String,
}

pub(super) async fn get_effect(
    State(shared): State<Arc<Shared>>,
    query: Result<Query<EffectQuery>, axum::extract::rejection::QueryRejection>,
) -> Response {
    let Ok(Query(query)) = query else {
        return error(StatusCode::BAD_REQUEST, "give the key to look up as ?idempotency_key=K");
    };
    let in_flight = match shared.in_flight_under(&query.idempotency_key) {
        Ok(in_flight) => in_flight,
        Err(refused) => return *refused,
    };
    let world = shared.world();
    if world.billing.key_handling == KeyHandling::Ignore {
        return error(
            StatusCode::UNPROCESSABLE_ENTITY,
            "billing ignores idempotency keys (--keys ignore): it stores none, so it cannot look an effect up by one",
        );
    }
    let lookup = EffectLookup {
        effect: effect_under(&world.billing, &query.idempotency_key),
        in_flight,
    };
    let status = if lookup.effect.is_some() {
        StatusCode::OK
    } else {
        StatusCode::NOT_FOUND
    };
    (status, axum::Json(lookup)).into_response()
}

pub(super) async fn get_records(State(shared): State<Arc<Shared>>) -> Response {
    let world = shared.world();
    let records = &world.billing.records;
    axum::Json(RecordsView {
        outbox: records.outbox.clone(),
        owner_changes: records.owner_changes.clone(),
        deletions: records.deletions.clone(),
        owners: world
            .billing
            .accounts
            .iter()
            .map(|(id, account)| (id.clone(), account.owner.clone()))
            .collect(),
    })
    .into_response()
}
