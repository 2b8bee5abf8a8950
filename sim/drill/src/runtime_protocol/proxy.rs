//! The wire between a runtime's processes and billing: an HTTP/1.1 proxy that holds every
//! request it receives until the conductor says what becomes of it, as the simulator's wire
//! holds a message until it arrives. Forwarded, it reaches billing stamped with the level's
//! time; billing's answer is held again until the conductor lets it go back. Or the request is
//! lost (never forwarded), or its answer is (forwarded, then never returned), or the tool's
//! token is refused before anything happens (401): an attempt that gets no answer ends when
//! the conductor closes its connection, at the level's timeout.
//!
//! Each process gets its own address, `http://127.0.0.1:PORT/w<n>`, so the proxy knows which
//! worker sent what. One request per connection (`Connection: close`), with a
//! `Content-Length` body: what an HTTP client sends by default.

use std::net::SocketAddr;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;

use crate::billing_server::{CALL_KEY_HEADER, NOW_HEADER};

/// The most bytes of a request's head (request line and headers).
pub const HEAD_BYTES_MAX: usize = 16 * 1024;
/// The most bytes of a request's body.
pub const BODY_BYTES_MAX: usize = 64 * 1024;
/// How long the proxy waits for a client to finish sending its request, in milliseconds.
pub const REQUEST_READ_MS: u64 = 10_000;
/// How long a forwarded request may take billing, in milliseconds (billing runs in this
/// process with no latency of its own: only a wedged billing takes this long).
pub const BILLING_ANSWER_MS: u64 = 10_000;

/// A request as a process sent it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HttpRequest {
    pub method: String,
    /// The path and query billing sees (without the `/w<n>` the process was given).
    pub target: String,
    /// The headers, names in lower case.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl HttpRequest {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(header, _)| header == name)
            .map(|(_, value)| value.as_str())
    }

    /// A credit: what pays a customer (a void, a read or a lookup is not).
    pub fn is_credit(&self) -> bool {
        self.method == "POST" && self.target.split('?').next() == Some("/v1/credits")
    }

    /// `POST /v1/credits`, for reports.
    pub fn line(&self) -> String {
        format!("{} {}", self.method, self.target)
    }
}

/// What the conductor hears from the wire.
#[derive(Debug)]
pub enum WireEvent {
    /// A request arrived from worker `worker` and is held; the conductor answers on `commands`.
    Arrived {
        exchange: u64,
        worker: u32,
        request: HttpRequest,
        commands: mpsc::UnboundedSender<Command>,
    },
    /// Billing answered a forwarded request; the answer is held.
    Answered { exchange: u64, status: u16, body: Vec<u8> },
    /// A request the proxy could not read or route: answered with an error at once.
    Refused { worker: Option<u32>, detail: String },
}

/// What becomes of a held request or answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Command {
    /// Forward the request to billing at the level's time `now_ms`; `call_key` names the call
    /// an announced attempt belongs to (the wire's knowledge, for billing's records of deletes).
    Forward { now_ms: u64, call_key: Option<String> },
    /// Return billing's answer (after `Forward`).
    Return,
    /// Answer with this instead, without forwarding.
    Answer { status: u16, body: String },
    /// Close the connection with no answer.
    Close,
}

/// The proxy, listening.
#[derive(Debug)]
pub struct Proxy {
    address: SocketAddr,
    accepting: tokio::task::JoinHandle<()>,
}

impl Proxy {
    /// Listens on a free loopback port; requests go to `billing`, events to `events`.
    pub async fn start(billing: SocketAddr, events: mpsc::UnboundedSender<WireEvent>) -> std::io::Result<Proxy> {
        let listener = TcpListener::bind(("127.0.0.1", 0)).await?;
        let address = listener.local_addr()?;
        let client = reqwest::Client::builder()
            .no_proxy()
            .timeout(std::time::Duration::from_millis(BILLING_ANSWER_MS))
            .build()
            .map_err(std::io::Error::other)?;
        let accepting = tokio::spawn(async move {
            let mut next_exchange: u64 = 1;
            while let Ok((stream, _)) = listener.accept().await {
                let exchange = next_exchange;
                next_exchange += 1;
                tokio::spawn(serve(exchange, stream, billing, client.clone(), events.clone()));
            }
        });
        Ok(Proxy { address, accepting })
    }

    /// The address a worker's process is given: `http://127.0.0.1:PORT/w<n>`.
    pub fn url_for(&self, worker: u32) -> String {
        format!("http://{}/w{worker}", self.address)
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.accepting.abort();
    }
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        201 => "Created",
        400 => "Bad Request",
        401 => "Unauthorized",
        404 => "Not Found",
        409 => "Conflict",
        411 => "Length Required",
        413 => "Payload Too Large",
        422 => "Unprocessable Entity",
        502 => "Bad Gateway",
        _ => "Status",
    }
}

async fn write_answer(stream: &mut TcpStream, status: u16, body: &[u8]) {
    let head = format!(
        "HTTP/1.1 {status} {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        reason(status),
        body.len()
    );
    // A client that went away (its process was killed) cannot be answered: nothing to do.
    let _ = stream.write_all(head.as_bytes()).await;
    let _ = stream.write_all(body).await;
    let _ = stream.flush().await;
    let _ = stream.shutdown().await;
}

fn error_body(detail: &str) -> Vec<u8> {
    serde_json::json!({ "error": detail }).to_string().into_bytes()
}

/// One connection: read the request, hand it to the conductor, do as told.
async fn serve(
    exchange: u64,
    mut stream: TcpStream,
    billing: SocketAddr,
    client: reqwest::Client,
    events: mpsc::UnboundedSender<WireEvent>,
) {
    let read = tokio::time::timeout(
        std::time::Duration::from_millis(REQUEST_READ_MS),
        read_request(&mut stream),
    )
    .await
    .unwrap_or_else(|_| Err((400, "the request did not arrive whole in time".to_owned())));
    let (worker, request) = match read {
        Ok(read) => read,
        Err((status, detail)) => {
            let _ = events.send(WireEvent::Refused {
                worker: None,
                detail: detail.clone(),
            });
            write_answer(&mut stream, status, &error_body(&detail)).await;
            return;
        }
    };
    let (commands, mut received) = mpsc::unbounded_channel();
    if events
        .send(WireEvent::Arrived {
            exchange,
            worker,
            request: request.clone(),
            commands,
        })
        .is_err()
    {
        return;
    }
    let mut answer: Option<(u16, Vec<u8>)> = None;
    while let Some(command) = received.recv().await {
        match command {
            Command::Forward { now_ms, call_key } => {
                let (status, body) = forward(&client, billing, &request, now_ms, call_key.as_deref()).await;
                answer = Some((status, body.clone()));
                if events.send(WireEvent::Answered { exchange, status, body }).is_err() {
                    return;
                }
            }
            Command::Return => {
                if let Some((status, body)) = answer.take() {
                    write_answer(&mut stream, status, &body).await;
                }
                return;
            }
            Command::Answer { status, body } => {
                write_answer(&mut stream, status, body.as_bytes()).await;
                return;
            }
            Command::Close => {
                let _ = stream.shutdown().await;
                return;
            }
        }
    }
}

/// Sends `request` on to billing at the level's time; billing's status and body.
async fn forward(
    client: &reqwest::Client,
    billing: SocketAddr,
    request: &HttpRequest,
    now_ms: u64,
    call_key: Option<&str>,
) -> (u16, Vec<u8>) {
    let method = reqwest::Method::from_bytes(request.method.as_bytes()).unwrap_or(reqwest::Method::GET);
    let mut outgoing = client
        .request(method, format!("http://{billing}{}", request.target))
        .header(NOW_HEADER, now_ms.to_string())
        .body(request.body.clone());
    if let Some(call_key) = call_key {
        outgoing = outgoing.header(CALL_KEY_HEADER, call_key);
    }
    // Only what billing reads: the key, and what the body is. Any time a client claims, or a
    // send-time stamp (the level's wire needs no send window), stays behind.
    for (name, value) in &request.headers {
        if matches!(name.as_str(), "idempotency-key" | "content-type" | "accept") {
            outgoing = outgoing.header(name.as_str(), value.as_str());
        }
    }
    match outgoing.send().await {
        Ok(response) => {
            let status = response.status().as_u16();
            let body = response.bytes().await.map(|bytes| bytes.to_vec()).unwrap_or_default();
            (status, body)
        }
        Err(error) => (502, error_body(&format!("billing did not answer: {error}"))),
    }
}

/// Reads one request: its worker (from the `/w<n>` its path begins with) and the request.
async fn read_request(stream: &mut TcpStream) -> Result<(u32, HttpRequest), (u16, String)> {
    let mut bytes = Vec::new();
    let mut buffer = [0_u8; 4096];
    let head_end = loop {
        if let Some(end) = bytes.windows(4).position(|window| window == b"\r\n\r\n") {
            break end;
        }
        if bytes.len() > HEAD_BYTES_MAX {
            return Err((413, format!("a request head over {HEAD_BYTES_MAX} bytes")));
        }
        let read = stream
            .read(&mut buffer)
            .await
            .map_err(|error| (400, format!("the request could not be read: {error}")))?;
        if read == 0 {
            return Err((
                400,
                "the connection closed before a whole request head arrived".to_owned(),
            ));
        }
        bytes.extend_from_slice(&buffer[..read]);
    };
    let head = String::from_utf8_lossy(&bytes[..head_end]).into_owned();
    let mut lines = head.split("\r\n");
    let request_line = lines.next().unwrap_or_default();
    let mut parts = request_line.split(' ');
    let (Some(method), Some(target), Some(version)) = (parts.next(), parts.next(), parts.next()) else {
        return Err((
            400,
            format!("not an HTTP request line: {}", super::messages::quote(request_line)),
        ));
    };
    if !version.starts_with("HTTP/1.") {
        return Err((400, format!("{version}: this wire speaks HTTP/1.1")));
    }
    let mut headers = Vec::new();
    for line in lines {
        if let Some((name, value)) = line.split_once(':') {
            headers.push((name.trim().to_ascii_lowercase(), value.trim().to_owned()));
        }
    }
    if headers
        .iter()
        .any(|(name, value)| name == "transfer-encoding" && !value.eq_ignore_ascii_case("identity"))
    {
        return Err((411, "send the body with a Content-Length, not chunked".to_owned()));
    }
    let length: usize = headers
        .iter()
        .find(|(name, _)| name == "content-length")
        .map(|(_, value)| value.parse::<usize>())
        .transpose()
        .map_err(|_| (400, "a Content-Length that is not a number".to_owned()))?
        .unwrap_or(0);
    if length > BODY_BYTES_MAX {
        return Err((413, format!("a body of {length} bytes, more than {BODY_BYTES_MAX}")));
    }
    let mut body: Vec<u8> = bytes[head_end + 4..].to_vec();
    while body.len() < length {
        let read = stream
            .read(&mut buffer)
            .await
            .map_err(|error| (400, format!("the body could not be read: {error}")))?;
        if read == 0 {
            return Err((400, "the connection closed before the whole body arrived".to_owned()));
        }
        body.extend_from_slice(&buffer[..read]);
    }
    body.truncate(length);
    let (worker, target) = route(target)?;
    Ok((
        worker,
        HttpRequest {
            method: method.to_owned(),
            target,
            headers,
            body,
        },
    ))
}

/// `/w3/v1/credits?x=1` → (3, `/v1/credits?x=1`).
fn route(target: &str) -> Result<(u32, String), (u16, String)> {
    let not_routed = || {
        (
            404,
            format!(
                "{}: a process's billing address is the one its hello gave (`…/w<n>`), with the endpoint's path after it",
                super::messages::quote(target)
            ),
        )
    };
    let rest = target.strip_prefix("/w").ok_or_else(not_routed)?;
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    let worker = digits.parse::<u32>().map_err(|_| not_routed())?;
    let path = &rest[digits.len()..];
    if !(path.starts_with('/') || path.starts_with('?')) {
        return Err(not_routed());
    }
    Ok((worker, path.to_owned()))
}

#[cfg(test)]
mod tests {
    use super::route;

    #[test]
    fn a_request_s_worker_is_read_from_its_path() {
        assert_eq!(route("/w3/v1/credits"), Ok((3, "/v1/credits".to_owned())));
        assert_eq!(
            route("/w12/v1/credits?idempotency_key=r1:c1"),
            Ok((12, "/v1/credits?idempotency_key=r1:c1".to_owned()))
        );
        for bad in ["/v1/credits", "/w/v1", "/wx/v1", "/w3v1", "/"] {
            let (status, detail) = route(bad).expect_err(bad);
            assert_eq!(status, 404);
            assert!(detail.contains("/w<n>"), "{detail}");
        }
    }
}
