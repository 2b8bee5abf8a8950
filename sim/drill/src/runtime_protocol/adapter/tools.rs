//! The billing tools as Twice's runtime calls them through the protocol's wire: a credit, a
//! balance read, an email, an owner change, a delete, the reconcile hook's lookup, a naive
//! runtime's reflex void. What an answer
//! means is the seed's: an answer is an answer; a 401 is a refusal before anything was sent
//! (nothing can have happened); a connection that closes with no answer, or an answer that
//! cannot be read, is a timeout — the request may have landed.

use reqwest::{StatusCode, Url};

use crate::billing_server::{CreditBody, DeleteBody, EmailBody, IDEMPOTENCY_KEY_HEADER, Lookup, OwnerBody};
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
    /// Each tool's operation (a tool that names none credits).
    operations: Vec<(String, Operation)>,
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
            operations: Vec::new(),
        })
    }

    /// What each of `tools` does in billing's world.
    pub(super) fn with_tools(mut self, tools: &[twice_world::runtime::tool::ToolDeclaration]) -> Billing {
        self.operations = tools
            .iter()
            .map(|tool| (tool.name.to_string(), Operation::of(tool).unwrap_or(Operation::Credit)))
            .collect();
        self
    }

    /// `base/segment/…`, each segment percent-encoded (an account id is the level's text).
    fn url_of(&self, segments: &[&str]) -> String {
        let Ok(mut url) = Url::parse(&self.base) else {
            return self.base.clone();
        };
        if let Ok(mut path) = url.path_segments_mut() {
            path.pop_if_empty().extend(segments);
        }
        url.to_string()
    }

    fn operation_of(&self, call: &ToolCall) -> Operation {
        self.operations
            .iter()
            .find(|(tool, _)| tool.as_str() == call.tool.as_str())
            .map_or(Operation::Credit, |(_, operation)| *operation)
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
        let operation = self.operation_of(call);
        let intent = format!("{run}/{}", call.item);
        let account = &arguments.account;
        let request = match operation {
            Operation::LookupBalance => self.client.get(format!("{}/v1/accounts", self.base)),
            Operation::Credit => self.client.post(format!("{}/v1/credits", self.base)).json(&CreditBody {
                account: account.clone(),
                amount_cents: arguments.amount_cents,
                memo: arguments.memo.clone(),
                intent,
            }),
            Operation::SendEmail => self.client.post(format!("{}/v1/emails", self.base)).json(&EmailBody {
                account: account.clone(),
                subject: arguments.memo.clone(),
                intent,
            }),
            Operation::ChangeOwner => self
                .client
                .put(self.url_of(&["v1", "accounts", account, "owner"]))
                .json(&OwnerBody {
                    owner: arguments.owner.clone().unwrap_or_default(),
                    intent,
                    reason: arguments.memo.clone(),
                }),
            Operation::DeleteRecord => self
                .client
                .delete(self.url_of(&["v1", "records", account]))
                .json(&DeleteBody {
                    intent,
                    reason: arguments.memo.clone(),
                }),
        };
        let request = match downstream_key {
            Some(key) if operation != Operation::LookupBalance => request.header(IDEMPOTENCY_KEY_HEADER, key.as_str()),
            _ => request,
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
        let answer = if operation == Operation::LookupBalance {
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
