//! The operator API's compensation target: the drill's billing server (`twice-sim billing`),
//! over HTTP.
//!
//! A compensation here is "void the credit this call made". It is done in two steps, so
//! that it never takes money that was not paid and never takes it twice:
//!
//! 1. Look the credit up by the call's idempotency key (`GET /v1/credits?idempotency_key=K`,
//!    the reconcile hook's read). Billing that ignores keys cannot answer, and nothing is
//!    done; billing that holds no credit under the key tells the operator API the call did
//!    not take effect.
//! 2. Void that one credit by its id (`POST /v1/credits/{credit_id}/void`). Billing answers
//!    a second void of the same credit with the first reversal and moves nothing.
//!
//! Every request has a timeout ([`BILLING_TIMEOUT_MS`]) and a limit on the answer it reads.
//!
//! The tools are declared, as a worker declares them ([`crate::script::tools_with_terms`]):
//! only a tool declared with a compensation is compensated, and billing's "nothing under the
//! key" is weighed by the tool's declared terms before it settles anything — a key older than
//! billing keeps keys is "expired, not absent", and a credit younger than billing's lookup lag
//! is "not yet" (the reconcile hook's reading, decision table 6).

use std::future::Future;
use std::time::Duration;

use reqwest::{StatusCode, Url};

use crate::billing_server::{Lookup, Stats};
use twice_serve::api::{Compensator, Effect, LookupError, UndoError};
use twice_world::billing::Answer;
use twice_world::ledger::ExecutionRecord;
use twice_world::runtime::tool::ToolDeclaration;

/// How long one request to billing may take, connecting included.
pub const BILLING_TIMEOUT_MS: u64 = 5_000;
/// The most bytes of billing's answer that are read; billing's answers are far smaller.
pub const ANSWER_BYTES_MAX: usize = 64 * 1024;
/// The most characters of billing's answer quoted in an error message.
const QUOTED_CHARS_MAX: usize = 300;

/// Why a billing target cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum BillingTargetError {
    #[error("`{url}` is not a URL: {detail}")]
    BadUrl { url: String, detail: String },
    #[error("cannot build the HTTP client: {0}")]
    Client(String),
    /// Billing did not answer as it should; the detail names its address.
    #[error("{0}")]
    Unavailable(String),
    /// A tool's declared terms cannot be meant (a key kept for no time, …).
    #[error("the tools' declared terms: {0}")]
    Terms(String),
}

/// Why one request to billing brought no answer to read; each names billing's address and the
/// request, and keeps the error underneath.
#[derive(Debug, thiserror::Error)]
enum RequestError {
    #[error("billing at {url} did not answer {what} within {timeout_ms} ms")]
    Timeout {
        url: String,
        what: String,
        timeout_ms: u128,
        #[source]
        source: reqwest::Error,
    },
    #[error("billing at {url} cannot be reached ({what}): {}", causes(source))]
    Unreachable {
        url: String,
        what: String,
        #[source]
        source: reqwest::Error,
    },
    #[error("billing at {url} failed to answer {what}: {}", causes(source))]
    Failed {
        url: String,
        what: String,
        #[source]
        source: reqwest::Error,
    },
    #[error("billing's answer to {what} is longer than {ANSWER_BYTES_MAX} bytes; it is not billing's")]
    TooLong { what: String },
    #[error("cannot start a runtime for the billing request: {0}")]
    Runtime(#[source] std::io::Error),
    #[error("the billing request failed inside the server")]
    Panicked,
}

/// Compensates the calls of the declared tools that have a compensation (the drill's
/// `issue_credit`) by voiding their credit in a `twice-sim billing` server.
#[derive(Clone, Debug)]
pub struct BillingCompensator {
    base: Url,
    client: reqwest::Client,
    timeout: Duration,
    /// The tools as the workers declare them, billing's terms included.
    tools: Vec<ToolDeclaration>,
}

impl BillingCompensator {
    /// Checks `url` (`http://HOST:PORT`, as `twice-sim billing` prints it) without
    /// contacting it, for calls of `tools` (declared as the workers declare them: give the
    /// same terms). Requests time out after [`BILLING_TIMEOUT_MS`].
    pub fn new(url: &str, tools: Vec<ToolDeclaration>) -> Result<BillingCompensator, BillingTargetError> {
        BillingCompensator::with_timeout(url, tools, Duration::from_millis(BILLING_TIMEOUT_MS))
    }

    /// As [`BillingCompensator::new`], with another timeout per request (at least 1 ms).
    pub fn with_timeout(
        url: &str,
        tools: Vec<ToolDeclaration>,
        timeout: Duration,
    ) -> Result<BillingCompensator, BillingTargetError> {
        let bad = |detail: &str| BillingTargetError::BadUrl {
            url: url.chars().take(QUOTED_CHARS_MAX).collect(),
            detail: detail.to_owned(),
        };
        let base = Url::parse(url.trim()).map_err(|error| bad(&error.to_string()))?;
        if base.scheme() != "http" {
            return Err(bad("give an http:// URL (billing speaks plain HTTP, for loopback)"));
        }
        if base.host_str().is_none() {
            return Err(bad("it names no host"));
        }
        if !matches!(base.path(), "" | "/") || base.query().is_some() || base.fragment().is_some() {
            return Err(bad(
                "give only the scheme, host and port, like http://127.0.0.1:7879; the API adds the paths",
            ));
        }
        if !base.username().is_empty() || base.password().is_some() {
            return Err(bad("billing takes no credentials; leave them out of the URL"));
        }
        let timeout = timeout.max(Duration::from_millis(1));
        let client = reqwest::Client::builder()
            // Billing is named explicitly; an HTTP_PROXY in the environment must not reroute it.
            .no_proxy()
            .connect_timeout(timeout)
            .timeout(timeout)
            // Each call runs on a runtime of its own (see `on_own_runtime`): a pooled
            // connection would outlive the runtime that drives it.
            .pool_max_idle_per_host(0)
            .build()
            .map_err(|error| BillingTargetError::Client(error.to_string()))?;
        if let Some(problem) = tools.iter().find_map(ToolDeclaration::terms_problem) {
            return Err(BillingTargetError::Terms(problem));
        }
        Ok(BillingCompensator {
            base,
            client,
            timeout,
            tools,
        })
    }

    /// The tools declared, as given.
    pub fn tools(&self) -> &[ToolDeclaration] {
        &self.tools
    }

    /// The billing server's address, as given.
    pub fn url(&self) -> &str {
        self.base.as_str().trim_end_matches('/')
    }

    fn endpoint(&self, path: &str) -> Url {
        let mut url = self.base.clone();
        url.set_path(path);
        url
    }

    fn timeout_ms(&self) -> u128 {
        self.timeout.as_millis()
    }

    /// Asks billing for its statistics, to learn that it answers and how it treats keys.
    /// Blocking; call it before serving or from a blocking thread.
    pub fn probe(&self) -> Result<Stats, BillingTargetError> {
        let unavailable = BillingTargetError::Unavailable;
        let answer = on_own_runtime(self.get_text(self.endpoint("/v1/stats")))
            .and_then(|answer| answer)
            .map_err(|error| unavailable(error.to_string()))?;
        let (status, text) = answer;
        if status != StatusCode::OK {
            return Err(unavailable(format!(
                "billing at {} answered GET /v1/stats with {status}: {}",
                self.url(),
                quote(&text)
            )));
        }
        serde_json::from_str::<Stats>(&text).map_err(|error| {
            unavailable(format!(
                "{} did not answer GET /v1/stats as twice-sim billing does ({error}): {}",
                self.url(),
                quote(&text)
            ))
        })
    }

    /// One request: its status and at most [`ANSWER_BYTES_MAX`] bytes of its answer.
    async fn send(&self, request: reqwest::RequestBuilder, what: &str) -> Result<(StatusCode, String), RequestError> {
        let mut response = request.send().await.map_err(|error| self.failure(what, error))?;
        let status = response.status();
        let mut body = Vec::new();
        while let Some(chunk) = response.chunk().await.map_err(|error| self.failure(what, error))? {
            if body.len() + chunk.len() > ANSWER_BYTES_MAX {
                return Err(RequestError::TooLong { what: what.to_owned() });
            }
            body.extend_from_slice(&chunk);
        }
        Ok((status, String::from_utf8_lossy(&body).into_owned()))
    }

    async fn get_text(&self, url: Url) -> Result<(StatusCode, String), RequestError> {
        let what = format!("GET {}", url.path());
        self.send(self.client.get(url), &what).await
    }

    fn failure(&self, what: &str, source: reqwest::Error) -> RequestError {
        let (url, what) = (self.url().to_owned(), what.to_owned());
        if source.is_timeout() {
            RequestError::Timeout {
                url,
                what,
                timeout_ms: self.timeout_ms(),
                source,
            }
        } else if source.is_connect() {
            RequestError::Unreachable { url, what, source }
        } else {
            RequestError::Failed { url, what, source }
        }
    }

    fn look_up(&self, record: &ExecutionRecord) -> Result<Effect, LookupError> {
        let key = record.key.as_str();
        let mut url = self.endpoint("/v1/credits");
        url.query_pairs_mut().append_pair("idempotency_key", key);
        let (status, text) = on_own_runtime(self.get_text(url))
            .and_then(|answer| answer)
            .map_err(|error| LookupError::Unavailable(error.to_string()))?;
        if status == StatusCode::UNPROCESSABLE_ENTITY {
            let said = serde_json::from_str::<serde_json::Value>(&text)
                .ok()
                .and_then(|value| value["error"].as_str().map(str::to_owned))
                .unwrap_or_else(|| quote(&text));
            return Err(LookupError::CannotLookUp(format!(
                "billing at {} cannot look credits up by key ({said}), so nobody can tell whether {key} paid \
                 anything or which credit to void. Nothing was voided and nothing recorded: check billing by \
                 hand and resolve the call instead",
                self.url()
            )));
        }
        if status != StatusCode::OK && status != StatusCode::NOT_FOUND {
            return Err(LookupError::Unavailable(format!(
                "billing at {} answered the lookup of {key} with {status}: {}",
                self.url(),
                quote(&text)
            )));
        }
        let lookup: Lookup = serde_json::from_str(&text).map_err(|error| {
            LookupError::Unavailable(format!(
                "billing at {} answered the lookup of {key} with {status} but not a lookup ({error}): {}",
                self.url(),
                quote(&text)
            ))
        })?;
        let tool = self.tools.iter().find(|declared| declared.name == record.tool);
        lookup.effect_as_declared(record, &format!("billing at {}", self.url()), tool, crate::now_ms())
    }

    fn void(&self, credit_id: &str) -> Result<String, UndoError> {
        let mut url = self.endpoint("/v1/credits");
        url.path_segments_mut()
            .map_err(|()| UndoError::NotAsked(format!("billing's URL {} cannot take a path", self.url())))?
            .push(credit_id)
            .push("void");
        let what = format!("POST {}", url.path());
        let unknown = |detail: String| {
            UndoError::Unknown(format!(
                "{detail}. Billing may or may not have voided {credit_id}; voiding by id is idempotent, so \
                 `curl -X POST {}/v1/credits/{credit_id}/void` by hand is safe",
                self.url()
            ))
        };
        let (status, text) = on_own_runtime(self.send(self.client.post(url), &what))
            .and_then(|answer| answer)
            .map_err(|error| unknown(error.to_string()))?;
        let answer = serde_json::from_str::<Answer>(&text).ok();
        match (status, answer) {
            (StatusCode::CREATED, Some(answer @ Answer::Applied { .. }))
            | (StatusCode::OK, Some(answer @ Answer::Repeat { .. })) => answer.void_outcome(credit_id),
            (StatusCode::NOT_FOUND, _) => Err(UndoError::Refused(format!(
                "billing no longer knows credit {credit_id}; nothing was voided"
            ))),
            (status, _) if status.is_server_error() => Err(unknown(format!(
                "billing answered the void of {credit_id} with {status}: {}",
                quote(&text)
            ))),
            (status, _) => Err(UndoError::Refused(format!(
                "billing refused the void of {credit_id} with {status}: {}",
                quote(&text)
            ))),
        }
    }
}

impl Compensator for BillingCompensator {
    fn has_compensation(&self, tool: &str) -> bool {
        self.tools
            .iter()
            .any(|declared| declared.name == tool && declared.compensation)
    }

    fn find_effect(&self, record: &ExecutionRecord) -> Result<Effect, LookupError> {
        self.look_up(record)
    }

    fn compensate(&self, _record: &ExecutionRecord, reference: &str) -> Result<String, UndoError> {
        self.void(reference)
    }
}

/// The error and every error under it ("connection refused" is at the bottom of reqwest's).
fn causes(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

/// At most [`QUOTED_CHARS_MAX`] characters of an answer, on one line.
fn quote(text: &str) -> String {
    let line: String = text
        .chars()
        .map(|character| if character.is_control() { ' ' } else { character })
        .take(QUOTED_CHARS_MAX)
        .collect();
    if text.chars().count() > QUOTED_CHARS_MAX {
        format!("{line}…")
    } else {
        line
    }
}

/// Runs `work` to its end on a small runtime of its own, on a thread of its own. The
/// compensator's calls are blocking (the trait's contract) and may come from a thread of
/// any runtime, or of none; a runtime of their own works from all of them.
fn on_own_runtime<T: Send>(work: impl Future<Output = T> + Send) -> Result<T, RequestError> {
    std::thread::scope(|scope| {
        scope
            .spawn(|| {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .map_err(RequestError::Runtime)?;
                Ok(runtime.block_on(work))
            })
            .join()
            .unwrap_or(Err(RequestError::Panicked))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_plain_http_base_url_is_taken() {
        for good in ["http://127.0.0.1:7879", "http://127.0.0.1:7879/", "http://localhost:1"] {
            let target =
                BillingCompensator::new(good, crate::script::tools()).unwrap_or_else(|error| panic!("{good}: {error}"));
            assert!(target.url().starts_with("http://"), "{}", target.url());
            assert!(!target.url().ends_with('/'), "{}", target.url());
        }
        for (bad, says) in [
            ("127.0.0.1:7879", "not a URL"),
            ("https://127.0.0.1:7879", "http://"),
            ("http://127.0.0.1:7879/billing", "only the scheme, host and port"),
            ("http://127.0.0.1:7879/?x=1", "only the scheme, host and port"),
            ("http://user:secret@127.0.0.1:7879", "no credentials"),
            ("", "not a URL"),
        ] {
            let error = BillingCompensator::new(bad, crate::script::tools())
                .unwrap_err()
                .to_string();
            assert!(error.contains(says), "{bad}: {error}");
        }
    }

    #[test]
    fn only_a_tool_declared_with_a_compensation_has_one() {
        let target = BillingCompensator::new("http://127.0.0.1:1", crate::script::tools()).unwrap();
        assert!(target.has_compensation("issue_credit"));
        assert!(!target.has_compensation("lookup_account"));
        let mut without = crate::script::tools();
        without[0].compensation = false;
        let target = BillingCompensator::new("http://127.0.0.1:1", without).unwrap();
        assert!(
            !target.has_compensation("issue_credit"),
            "declared without a compensation, the credit is not compensated"
        );
        let target = BillingCompensator::new("http://127.0.0.1:1", Vec::new()).unwrap();
        assert!(!target.has_compensation("issue_credit"), "an undeclared tool has none");
    }

    #[test]
    fn terms_that_cannot_be_meant_are_refused() {
        let error = BillingCompensator::new("http://127.0.0.1:1", crate::script::tools_with_terms(Some(0), None))
            .unwrap_err()
            .to_string();
        assert!(error.contains("retention") && error.contains('0'), "{error}");
    }

    #[test]
    fn a_billing_nobody_listens_on_is_reported_unavailable_naming_the_address() {
        // Port 1 on loopback: nothing listens there, so the connection is refused at once.
        let target =
            BillingCompensator::with_timeout("http://127.0.0.1:1", crate::script::tools(), Duration::from_millis(500))
                .unwrap();
        let error = target.probe().unwrap_err().to_string();
        assert!(error.contains("http://127.0.0.1:1"), "{error}");
        assert!(error.contains("cannot be reached"), "{error}");
        let typed = on_own_runtime(target.get_text(target.endpoint("/v1/stats")))
            .and_then(|answer| answer)
            .unwrap_err();
        assert!(
            matches!(&typed, RequestError::Unreachable { url, what, .. } if url == "http://127.0.0.1:1" && what == "GET /v1/stats"),
            "{typed}"
        );
        assert!(std::error::Error::source(&typed).is_some(), "reqwest's error is kept");
    }

    #[test]
    fn quotes_are_short_and_on_one_line() {
        assert_eq!(quote("a\nb"), "a b");
        let long = "x".repeat(QUOTED_CHARS_MAX + 10);
        assert_eq!(quote(&long).chars().count(), QUOTED_CHARS_MAX + 1);
    }
}
