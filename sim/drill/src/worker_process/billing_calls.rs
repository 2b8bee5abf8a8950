//! The worker's tools: its HTTP calls to `twice-sim billing` (the start-up probe, a credit, a
//! lookup, a void), as the async driver's [`AsyncTools`].

use super::{PROBE_TIMEOUT_MS, WorkerConfig};
use crate::billing_server::{CreditBody, IDEMPOTENCY_KEY_HEADER, Lookup, SENT_AT_HEADER};
use crate::billing_store::VoidRequest;
use crate::script;
use reqwest::{StatusCode, Url};
use std::time::Duration;
use twice_world::billing::Answer;
use twice_world::billing_tools::CreditArguments;
use twice_world::runtime::driver::AsyncTools;
use twice_world::runtime::execution::{Attempt, Found, LookUp, Sending};
use twice_world::runtime::guards::Guard;
use twice_world::runtime::key::IdempotencyKey;
use twice_world::runtime::run::ToolCall;

/// Why a call to billing brought no answer the driver can use: each names billing's address or
/// the key, and keeps reqwest's error when there is one.
#[derive(Debug, thiserror::Error)]
pub enum BillingCallError {
    #[error("billing at {billing} answered GET /v1/stats with {status}: is it a twice-sim billing server?")]
    NotBilling { billing: Url, status: StatusCode },
    #[error("billing at {billing} cannot be reached: {source}")]
    Unreachable {
        billing: Url,
        #[source]
        source: reqwest::Error,
    },
    #[error("billing did not answer the lookup of {key}: {source}")]
    LookupUnanswered {
        key: IdempotencyKey,
        #[source]
        source: reqwest::Error,
    },
    #[error("billing answered the lookup of {key} with {status}")]
    LookupRefused { key: IdempotencyKey, status: StatusCode },
    #[error("billing's answer to the lookup of {key} does not parse: {source}")]
    LookupUnreadable {
        key: IdempotencyKey,
        #[source]
        source: reqwest::Error,
    },
    /// Nothing under the key yet, but a request with it may still pay: the hook cannot tell.
    #[error(
        "billing holds nothing under {key} yet, but is still applying {} with it",
        twice_world::runtime::worker::counted(u64::from(*in_flight), "request", "requests")
    )]
    StillApplying { key: IdempotencyKey, in_flight: u32 },
    /// The void was not sent, or its answer did not arrive.
    #[error(transparent)]
    Void(#[from] reqwest::Error),
    #[error("billing answered {status}: {answer}")]
    VoidUnreadable {
        status: StatusCode,
        /// At most 200 characters of it.
        answer: String,
    },
}

/// The drill's tools on the async driver: `issue_credit` as a real HTTP request to
/// `twice-sim billing`, its reconcile hook as billing's lookup by key, and a naive runtime's
/// reflex compensation as billing's void.
#[derive(Debug)]
pub struct BillingTools {
    client: reqwest::Client,
    billing: Url,
    /// How long one request waits for billing's answer.
    timeout: Duration,
    /// Whether sends carry the ledger's send time (only with the ledger on: a naive runtime
    /// keeps no record to stamp).
    stamps_sends: bool,
    run: String,
}

impl BillingTools {
    pub(super) fn new(config: &WorkerConfig) -> Result<BillingTools, reqwest::Error> {
        let client = reqwest::Client::builder()
            // Loopback only: an HTTP_PROXY in the environment must not reroute billing calls.
            .no_proxy()
            .connect_timeout(config.timeout)
            .build()?;
        Ok(BillingTools {
            client,
            billing: config.billing.clone(),
            timeout: config.timeout,
            stamps_sends: config.guards.is_on(Guard::Ledger),
            run: config.run_id.to_string(),
        })
    }

    /// Asks billing whether it is there (`GET /v1/stats`), as `serve` checks its target at
    /// start: a worker pointed at nothing says so at once instead of failing every call.
    pub async fn probe(&self) -> Result<(), BillingCallError> {
        let url = self.endpoint("/v1/stats");
        // Its own, longer limit: the attempt timeout is tuned for a credit on a busy billing,
        // and a worker must not refuse to start because one answer came slowly.
        let timeout = Duration::from_millis(PROBE_TIMEOUT_MS).max(self.timeout);
        match self.client.get(url).timeout(timeout).send().await {
            Ok(response) if response.status().is_success() => Ok(()),
            Ok(response) => Err(BillingCallError::NotBilling {
                billing: self.billing.clone(),
                status: response.status(),
            }),
            Err(source) => Err(BillingCallError::Unreachable {
                billing: self.billing.clone(),
                source,
            }),
        }
    }

    fn endpoint(&self, path: &str) -> Url {
        let mut url = self.billing.clone();
        url.set_path(path);
        url.set_query(None);
        url
    }

    /// One attempt of `issue_credit`. Nothing sent (billing unreachable) is a refusal before
    /// sending; a timeout, a broken connection or an answer billing could not give is an
    /// unknown — the request may have landed.
    async fn send_credit(&self, sending: &Sending<'_>) -> Attempt {
        let call = sending.call;
        let arguments = CreditArguments::of_call(call);
        let body = CreditBody {
            account: arguments.account,
            amount_cents: arguments.amount_cents,
            memo: arguments.memo,
            intent: script::intent(&self.run, call.item),
        };
        let mut request = self
            .client
            .post(self.endpoint("/v1/credits"))
            .timeout(self.timeout)
            .json(&body);
        if let Some(key) = sending.downstream_key {
            request = request.header(IDEMPOTENCY_KEY_HEADER, key.as_str());
        }
        // With a ledger, the send is stamped with the ledger's record of its attempt (not the
        // clock now: this process may have been paused since): billing refuses it if it
        // arrives later than its window after that (a paused process, a host cut off), so a
        // lookup past the window and the settle time that finds nothing proves the call did
        // not take effect.
        if self.stamps_sends {
            request = request.header(SENT_AT_HEADER, sending.recorded_at_ms.to_string());
        }
        let response = match request.send().await {
            Ok(response) => response,
            // Failing to connect means nothing left: the tool refused before sending.
            Err(error) if error.is_connect() => {
                return Attempt::NotSent {
                    reason: format!("billing could not be reached: {error}"),
                };
            }
            Err(_) => return Attempt::TimedOut,
        };
        let server_error = response.status().is_server_error();
        match response.bytes().await {
            Ok(bytes) if !server_error => match serde_json::from_slice::<Answer>(&bytes) {
                Ok(answer) => Attempt::Answered(answer.to_tool_answer()),
                Err(_) => Attempt::TimedOut,
            },
            _ => Attempt::TimedOut,
        }
    }

    /// The reconcile hook's read: looks the key up in billing. `Ok(Some)`: the receipt to
    /// record and the credit, in words; `Ok(None)`: billing answered that it holds nothing under
    /// the key and is applying no request with it (404). `Err`: billing could not be asked, did
    /// not answer, or is still applying a request with the key — that proves nothing,
    /// and must not be taken for "nothing there" (with a settle time declared, it would settle
    /// the call `failed`).
    async fn look_up_credit(&self, key: &IdempotencyKey) -> Result<Option<(String, String)>, BillingCallError> {
        let mut url = self.endpoint("/v1/credits");
        url.query_pairs_mut().append_pair("idempotency_key", key.as_str());
        let response = self
            .client
            .get(url)
            .timeout(self.timeout)
            .send()
            .await
            .map_err(|source| BillingCallError::LookupUnanswered {
                key: key.clone(),
                source,
            })?;
        let status = response.status();
        if status != StatusCode::NOT_FOUND && !status.is_success() {
            return Err(BillingCallError::LookupRefused {
                key: key.clone(),
                status,
            });
        }
        let lookup = response
            .json::<Lookup>()
            .await
            .map_err(|source| BillingCallError::LookupUnreadable {
                key: key.clone(),
                source,
            })?;
        hook_answer(key, lookup)
    }

    async fn post_void(&self, request: &VoidRequest) -> Result<Answer, BillingCallError> {
        let response = self
            .client
            .post(self.endpoint("/v1/credits/void"))
            .timeout(self.timeout)
            .json(request)
            .send()
            .await?;
        let status = response.status();
        let bytes = response.bytes().await?;
        serde_json::from_slice::<Answer>(&bytes).map_err(|_| BillingCallError::VoidUnreadable {
            status,
            answer: String::from_utf8_lossy(&bytes).chars().take(200).collect(),
        })
    }
}

impl AsyncTools for BillingTools {
    async fn send(&self, sending: &Sending<'_>) -> Attempt {
        self.send_credit(sending).await
    }

    async fn look_up(&self, looking: &Sending<'_>) -> LookUp {
        match self.look_up_credit(looking.key).await {
            Ok(Some((receipt, finding))) => LookUp::Found(Found { receipt, finding }),
            Ok(None) => LookUp::Absent,
            // Billing could not be asked: the hook cannot tell, which is not "nothing there".
            Err(reason) => LookUp::CannotTell {
                reason: reason.to_string(),
            },
        }
    }

    /// Only a naive runtime gets here (guard `no_reflex_compensation` off), and it fires the
    /// void and moves on whatever billing answers: what billing did is in billing's own
    /// entries, which the drill counts.
    async fn undo(&self, key: &IdempotencyKey, call: &ToolCall) -> String {
        let arguments = CreditArguments::of_call(call);
        let request = VoidRequest {
            idempotency_key: key.to_string(),
            account: arguments.account,
            amount_cents: arguments.amount_cents,
            intent: script::intent(&self.run, call.item),
        };
        match self.post_void(&request).await {
            Ok(answer) => format!("billing answered {}", answer.receipt()),
            Err(detail) => {
                eprintln!(
                    "warning: run {}: the reflex compensation of {key} got no answer: {detail}",
                    self.run
                );
                format!("billing's answer did not arrive: {detail}")
            }
        }
    }
}

/// What the reconcile hook makes of billing's lookup of `key` (a 200 or a 404). Nothing under
/// the key while billing is still applying a request with it is not "nothing there": that
/// request may still pay, so the hook cannot tell.
fn hook_answer(key: &IdempotencyKey, lookup: Lookup) -> Result<Option<(String, String)>, BillingCallError> {
    let Lookup {
        credit,
        balance_cents,
        in_flight,
        ..
    } = lookup;
    let Some(entry) = credit else {
        if in_flight > 0 {
            return Err(BillingCallError::StillApplying {
                key: key.clone(),
                in_flight,
            });
        }
        return Ok(None);
    };
    let receipt = Answer::Applied {
        credit_id: entry.id.clone(),
        balance_cents: balance_cents.unwrap_or(0),
    }
    .receipt();
    Ok(Some((receipt, format!("credit {}", entry.id))))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lookup(in_flight: u32) -> Lookup {
        Lookup {
            credit: None,
            balance_cents: None,
            credits_under_key: 0,
            in_flight,
        }
    }

    #[test]
    fn nothing_found_while_billing_still_applies_the_key_is_cannot_tell_not_absent() {
        let key = IdempotencyKey::per_call("r1", "c1").expect("a key");
        let error = hook_answer(&key, lookup(1)).expect_err("cannot tell");
        assert!(
            matches!(&error, BillingCallError::StillApplying { key: said, in_flight: 1 } if *said == key),
            "{error}"
        );
        assert_eq!(
            error.to_string(),
            "billing holds nothing under r1:c1 yet, but is still applying 1 request with it"
        );
        assert_eq!(
            hook_answer(&key, lookup(0)).expect("an answer"),
            None,
            "nothing there, and nothing on its way"
        );
    }
}
