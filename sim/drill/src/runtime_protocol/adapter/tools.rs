//! The billing tools as Twice's runtime calls them through the protocol's wire: a credit, a
//! balance read, the reconcile hook's lookup, a naive runtime's reflex void. What an answer
//! means is the seed's: an answer is an answer; a 401 is a refusal before anything was sent
//! (nothing can have happened); a connection that closes with no answer, or an answer that
//! cannot be read, is a timeout — the request may have landed.

use reqwest::{StatusCode, Url};

use crate::billing_server::{CreditBody, IDEMPOTENCY_KEY_HEADER, Lookup};
use crate::billing_store::VoidRequest;
use twice_world::billing::Answer;
use twice_world::billing_tools::{CreditArguments, Operation};
use twice_world::runtime::ids::RunId;
use twice_world::runtime::key::IdempotencyKey;
use twice_world::runtime::run::ToolCall;
use twice_world::runtime::worker::Input;

/// Billing as this process's hello gave it.
#[derive(Debug)]
pub(super) struct Billing {
    base: String,
    client: reqwest::Client,
    /// The tools that read balances (every other tool credits).
    reads: Vec<String>,
}

impl Billing {
    pub(super) fn new(base: &str, http_timeout_ms: u64) -> Result<Billing, String> {
        Url::parse(base).map_err(|error| format!("Twice's hello: billing `{base}`: {error}"))?;
        let client = reqwest::Client::builder()
            .no_proxy()
            .timeout(std::time::Duration::from_millis(http_timeout_ms))
            .build()
            .map_err(|error| format!("cannot build the HTTP client: {error}"))?;
        Ok(Billing {
            base: base.trim_end_matches('/').to_owned(),
            client,
            reads: Vec::new(),
        })
    }

    /// Which of `tools` read a balance.
    pub(super) fn with_tools(mut self, tools: &[twice_world::runtime::tool::ToolDeclaration]) -> Billing {
        self.reads = tools
            .iter()
            .filter(|tool| Operation::LookupBalance.is_of(tool))
            .map(|tool| tool.name.to_string())
            .collect();
        self
    }

    /// One attempt of `call`.
    pub(super) async fn send(
        &self,
        run: &RunId,
        key: &IdempotencyKey,
        downstream_key: Option<&IdempotencyKey>,
        call: &ToolCall,
        attempt: u32,
    ) -> Input {
        let timed_out = || Input::TimedOut {
            key: key.clone(),
            attempt,
        };
        let Ok(arguments) = CreditArguments::from_arguments(&call.arguments) else {
            return Input::NotAttempted {
                reason: format!("the arguments of {} are not a billing tool's", call.id),
            };
        };
        let reads = self.reads.iter().any(|tool| tool.as_str() == call.tool.as_str());
        let request = if reads {
            self.client.get(format!("{}/v1/accounts", self.base))
        } else {
            let body = CreditBody {
                account: arguments.account.clone(),
                amount_cents: arguments.amount_cents,
                memo: arguments.memo.clone(),
                intent: format!("{run}/{}", call.item),
            };
            let mut request = self.client.post(format!("{}/v1/credits", self.base)).json(&body);
            if let Some(key) = downstream_key {
                request = request.header(IDEMPOTENCY_KEY_HEADER, key.as_str());
            }
            request
        };
        let Ok(response) = request.send().await else {
            return timed_out();
        };
        let status = response.status();
        let Ok(bytes) = response.bytes().await else {
            return timed_out();
        };
        if status == StatusCode::UNAUTHORIZED {
            return Input::NotAttempted {
                reason: String::from_utf8_lossy(&bytes).into_owned(),
            };
        }
        let answer = if reads {
            balance_of(&bytes, &arguments.account)
        } else {
            serde_json::from_slice::<Answer>(&bytes).ok()
        };
        match answer {
            Some(answer) if !status.is_server_error() => Input::Response {
                key: key.clone(),
                attempt,
                answer: answer.to_tool_answer(),
            },
            _ => timed_out(),
        }
    }

    /// The reconcile hook's read: the receipt and the credit found under `key`, or nothing.
    /// As the simulator's hook reads billing: a billing that keeps no keys holds nothing to find.
    pub(super) async fn look_up(&self, key: &IdempotencyKey) -> Option<(String, String)> {
        let response = self
            .client
            .get(format!("{}/v1/credits", self.base))
            .query(&[("idempotency_key", key.as_str())])
            .send()
            .await
            .ok()?;
        let lookup: Lookup = response.json().await.ok()?;
        let entry = lookup.credit?;
        let receipt = Answer::Applied {
            credit_id: entry.id.clone(),
            balance_cents: lookup.balance_cents.unwrap_or(0),
        }
        .receipt();
        Some((receipt, format!("credit {}", entry.id)))
    }

    /// A naive runtime's reflex compensation: void by key, whatever billing holds. What billing
    /// answered, in words.
    pub(super) async fn void_by_key(&self, run: &RunId, key: &IdempotencyKey, call: &ToolCall) -> String {
        let Ok(arguments) = CreditArguments::from_arguments(&call.arguments) else {
            return "no void sent: the call's arguments are not a credit's".to_owned();
        };
        let request = VoidRequest {
            idempotency_key: key.to_string(),
            account: arguments.account,
            amount_cents: arguments.amount_cents,
            intent: format!("{run}/{}", call.item),
        };
        match self
            .client
            .post(format!("{}/v1/credits/void", self.base))
            .json(&request)
            .send()
            .await
        {
            Ok(response) => match response.json::<Answer>().await {
                Ok(answer) => format!("billing posts {}", answer.receipt()),
                Err(error) => format!("billing's answer to the void could not be read: {error}"),
            },
            Err(error) => format!("billing's answer to the void did not arrive: {error}"),
        }
    }
}

/// The balance of `account` in billing's list of accounts.
fn balance_of(bytes: &[u8], account: &str) -> Option<Answer> {
    let listed: serde_json::Value = serde_json::from_slice(bytes).ok()?;
    let balance_cents = listed["accounts"]
        .as_array()?
        .iter()
        .find(|entry| entry["id"] == account)?["balance_cents"]
        .as_i64()?;
    Some(Answer::Balance { balance_cents })
}
