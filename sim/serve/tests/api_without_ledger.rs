//! The API with no ledger behind it (the game's server before a level is open), over real
//! HTTP: the token is checked before the server says anything about its state, and every
//! answer is one the spec documents, with a `code`.

use std::sync::Arc;

use reqwest::{Client, Method, StatusCode};
use serde_json::Value;
use twice_serve::api::{self, ERROR_ANSWERS, TokenCheck};

const TOKEN: &str = "workshop-token-0123456789abcdef";

async fn start() -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let accepts: TokenCheck = Arc::new(|token: &str| token == TOKEN);
    tokio::spawn(api::serve_without_ledger_until(
        listener,
        accepts,
        std::future::pending(),
    ));
    format!("http://{address}")
}

async fn call(base: &str, method: Method, path: &str, authorization: Option<&str>) -> (StatusCode, Value) {
    let mut request = Client::new().request(method, format!("{base}{path}"));
    if let Some(authorization) = authorization {
        request = request.header("authorization", authorization);
    }
    let response = request.send().await.unwrap();
    let status = response.status();
    let close = response.headers().get("connection").cloned();
    assert_eq!(
        close.as_ref().and_then(|value| value.to_str().ok()),
        Some("close"),
        "one request per connection"
    );
    let body: Value = response.json().await.unwrap();
    let code = body["code"].as_str().unwrap_or_else(|| panic!("no code: {body}"));
    assert!(
        ERROR_ANSWERS
            .iter()
            .any(|answer| answer.status == status.as_u16() && answer.code == code),
        "{status} {code} is not a documented answer"
    );
    (status, body)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_ledger_the_token_is_checked_first_then_503_no_level_open() {
    let base = start().await;
    let bearer = format!("Bearer {TOKEN}");
    for (method, path) in [
        (Method::GET, "/v1/tool-executions"),
        (Method::GET, "/v1/tool-executions/r1:c1"),
        (Method::POST, "/v1/tool-executions/r1:c1/resolve"),
        (Method::POST, "/v1/tool-executions/r1:c1/compensate"),
    ] {
        for refused in [None, Some("Bearer not-the-token"), Some("Basic d29ya3Nob3A6eA==")] {
            let (status, body) = call(&base, method.clone(), path, refused).await;
            assert_eq!(
                status,
                StatusCode::UNAUTHORIZED,
                "{method} {path} with {refused:?}: {body}"
            );
            assert_eq!(body["code"], "unauthorized");
        }
        let (status, body) = call(&base, method.clone(), path, Some(&bearer)).await;
        assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{method} {path}: {body}");
        assert_eq!(body["code"], "no_level_open");
        assert_eq!(body["error"], api::NO_LEVEL_OPEN_MESSAGE);
    }
    // Routing is answered as by the real API, before the token.
    let (status, body) = call(&base, Method::GET, "/v2/anything", None).await;
    assert_eq!(
        (status, body["code"].as_str()),
        (StatusCode::NOT_FOUND, Some("no_such_route"))
    );
    let (status, body) = call(&base, Method::DELETE, "/v1/tool-executions", None).await;
    assert_eq!(
        (status, body["code"].as_str()),
        (StatusCode::METHOD_NOT_ALLOWED, Some("method_not_allowed"))
    );
}
