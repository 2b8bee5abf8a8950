//! Limits on connections, enforced before a request reaches the HTTP layer: how many may be
//! open at once, how many from one address, how long a client may take to send a request's
//! headers, and how long a connection may make no progress.
//!
//! Why here and not in hyper: axum gives hyper no timer, so hyper's header timeout never
//! fires, and hyper answers a request it cannot parse (a URI over 64 KiB, over 100 headers, a
//! malformed request line) itself, with an empty body. So every connection is accepted by a
//! task of ours, which reads the request's head under a deadline that no trickle of bytes
//! extends, checks it the way hyper would (well inside hyper's own limits, so hyper never has
//! to refuse anything), and answers every refusal with the API's JSON error. Only a head that
//! passed is handed to axum, together with whatever bytes came after it.
//!
//! Each connection carries one request (every answer says `Connection: close`): a second
//! request on a kept-alive connection would reach hyper without these checks. Opening a
//! loopback connection costs a fraction of a millisecond, nothing next to an operator's
//! decision.

use std::collections::BTreeMap;
use std::future::Future;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::http::{HeaderName, Method, StatusCode, Uri};
use axum::response::IntoResponse;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Semaphore, mpsc};
use tokio::task::JoinHandle;
use tokio::time::{Instant, Sleep};

use crate::api::ApiError;
use crate::api::{BODY_BYTES_MAX, HEAD_BYTES_MAX, HEADERS_MAX, URI_BYTES_MAX};

/// How many refused connections may be in the middle of being told so at once. Beyond it a
/// refused connection is closed without an answer, so a flood of connections cannot make the
/// server hold a task and a socket for each.
const REFUSALS_IN_FLIGHT_MAX: usize = 64;
/// How long a refusal waits for its answer to be taken and for the client to stop sending.
/// Closing a socket with unread bytes resets the connection, which can destroy the answer
/// before the client reads it.
const REFUSAL_LINGER_MS: u64 = 1_000;
/// The most bytes read and thrown away while a refusal lingers.
const REFUSAL_DRAIN_BYTES_MAX: usize = 64 * 1024;
/// Connections whose head passed, waiting for axum to take them.
const ADMITTED_QUEUE: usize = 16;
/// How much is read from a socket at once while reading a head.
const READ_CHUNK_BYTES: usize = 4 * 1024;

/// The limits one server applies to its connections.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ConnectionLimits {
    /// The most connections open at once; the next is answered 503 and closed.
    pub open_max: usize,
    /// The most connections open at once from one IP address; the next is answered 503.
    pub per_peer_max: usize,
    /// The time from accepting a connection to having its request's whole head; then 408.
    pub header_read_timeout: Duration,
    /// How long a connection may make no progress (no byte in, none of the answer taken).
    pub idle_timeout: Duration,
}

/// Open connections, in total and per address.
#[derive(Debug, Default)]
struct OpenCounts {
    total: usize,
    per_peer: BTreeMap<IpAddr, usize>,
}

/// One open connection's place in [`OpenCounts`]; given back when dropped.
#[derive(Debug)]
struct Slot {
    counts: Arc<Mutex<OpenCounts>>,
    peer: IpAddr,
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut counts = self.counts.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        counts.total = counts.total.saturating_sub(1);
        if let Some(open) = counts.per_peer.get_mut(&self.peer) {
            *open -= 1;
            if *open == 0 {
                counts.per_peer.remove(&self.peer);
            }
        }
    }
}

/// Takes a slot for a connection from `peer`, or says which limit is full.
fn admit(counts: &Arc<Mutex<OpenCounts>>, peer: IpAddr, limits: &ConnectionLimits) -> Result<Slot, ApiError> {
    let mut open = counts.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    if open.total >= limits.open_max {
        return Err(ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "too_many_connections",
            format!(
                "the server has {} connections open, the most it takes; try again shortly",
                limits.open_max
            ),
        ));
    }
    let from_peer = open.per_peer.entry(peer).or_insert(0);
    if *from_peer >= limits.per_peer_max {
        return Err(ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "too_many_connections",
            format!(
                "your address has {} connections open, the most one address may have; \
                 close one and try again",
                limits.per_peer_max
            ),
        ));
    }
    *from_peer += 1;
    open.total += 1;
    Ok(Slot {
        counts: Arc::clone(counts),
        peer,
    })
}

/// The listener axum serves: connections whose request head has arrived and passed.
pub(crate) struct GuardedListener {
    admitted: mpsc::Receiver<(GuardedStream, SocketAddr)>,
    local_address: Result<SocketAddr, io::ErrorKind>,
    acceptor: JoinHandle<()>,
}

impl GuardedListener {
    /// Starts accepting on `inner`. Must be called inside a tokio runtime.
    pub(crate) fn start(inner: TcpListener, limits: ConnectionLimits) -> GuardedListener {
        let local_address = inner.local_addr().map_err(|error| error.kind());
        let (sender, admitted) = mpsc::channel(ADMITTED_QUEUE);
        let acceptor = tokio::spawn(accept_forever(inner, limits, sender));
        GuardedListener {
            admitted,
            local_address,
            acceptor,
        }
    }
}

impl Drop for GuardedListener {
    /// Stops accepting: the server is shutting down (connections already admitted finish).
    fn drop(&mut self) {
        self.acceptor.abort();
    }
}

impl axum::serve::Listener for GuardedListener {
    type Io = GuardedStream;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (GuardedStream, SocketAddr) {
        match self.admitted.recv().await {
            Some(admitted) => admitted,
            // The acceptor only ends when this listener is dropped; if it died some other way
            // (a panic), there is nothing more to serve.
            None => std::future::pending().await,
        }
    }

    fn local_addr(&self) -> io::Result<SocketAddr> {
        self.local_address.map_err(io::Error::from)
    }
}

async fn accept_forever(
    mut inner: TcpListener,
    limits: ConnectionLimits,
    admitted: mpsc::Sender<(GuardedStream, SocketAddr)>,
) {
    let counts = Arc::new(Mutex::new(OpenCounts::default()));
    let refusals = Arc::new(Semaphore::new(REFUSALS_IN_FLIGHT_MAX));
    loop {
        // axum's accept retries by itself on errors such as too many open files.
        let (stream, address) = axum::serve::Listener::accept(&mut inner).await;
        if admitted.is_closed() {
            return;
        }
        match admit(&counts, address.ip().to_canonical(), &limits) {
            Ok(slot) => {
                tokio::spawn(read_head_then_admit(stream, address, slot, limits, admitted.clone()));
            }
            Err(refusal) => {
                if let Ok(permit) = Arc::clone(&refusals).try_acquire_owned() {
                    tokio::spawn(async move {
                        let mut stream = stream;
                        // An HTTP client takes an answer only after it has sent its request.
                        let brief = ConnectionLimits {
                            header_read_timeout: Duration::from_millis(REFUSAL_LINGER_MS),
                            ..limits
                        };
                        if !matches!(read_head(&mut stream, &brief).await, Err(HeadError::Closed)) {
                            answer_and_close(stream, refusal).await;
                        }
                        drop(permit);
                    });
                }
            }
        }
    }
}

async fn read_head_then_admit(
    mut stream: TcpStream,
    address: SocketAddr,
    slot: Slot,
    limits: ConnectionLimits,
    admitted: mpsc::Sender<(GuardedStream, SocketAddr)>,
) {
    match read_head(&mut stream, &limits).await {
        Ok(read) => {
            let guarded = GuardedStream {
                already_read: read,
                already_read_position: 0,
                stream,
                idle: Box::pin(tokio::time::sleep(limits.idle_timeout)),
                idle_timeout: limits.idle_timeout,
                _slot: slot,
            };
            // Fails only when the server is shutting down: the connection is then dropped.
            let _ = admitted.send((guarded, address)).await;
        }
        Err(HeadError::Closed) => {}
        Err(HeadError::Refused(refusal)) => {
            answer_and_close(stream, *refusal).await;
            drop(slot);
        }
    }
}

/// Why a head was not admitted.
enum HeadError {
    /// The client went away before sending a whole head: nobody to answer.
    Closed,
    /// Answered with this error.
    Refused(Box<ApiError>),
}

impl From<ApiError> for HeadError {
    fn from(error: ApiError) -> HeadError {
        HeadError::Refused(Box::new(error))
    }
}

/// Reads until the request's head is complete and checks it. Returns every byte read (the
/// head and whatever of the body came with it) for hyper to read again.
async fn read_head(stream: &mut TcpStream, limits: &ConnectionLimits) -> Result<Vec<u8>, HeadError> {
    let deadline = Instant::now() + limits.header_read_timeout;
    let mut read = Vec::with_capacity(READ_CHUNK_BYTES);
    let mut chunk = [0_u8; READ_CHUNK_BYTES];
    loop {
        let idle_deadline = Instant::now() + limits.idle_timeout;
        let count = match tokio::time::timeout_at(deadline.min(idle_deadline), stream.read(&mut chunk)).await {
            Ok(Ok(0) | Err(_)) => return Err(HeadError::Closed),
            Ok(Ok(count)) => count,
            Err(_) => {
                let (waited_ms, what) = if deadline <= idle_deadline {
                    (
                        limits.header_read_timeout.as_millis(),
                        "the request's headers did not all arrive",
                    )
                } else {
                    (limits.idle_timeout.as_millis(), "no byte of the request arrived")
                };
                return Err(ApiError::new(
                    StatusCode::REQUEST_TIMEOUT,
                    "request_timeout",
                    format!("{what} within {waited_ms} ms; send the whole request at once"),
                )
                .into());
            }
        };
        // Only the new bytes (and the three before them) can complete the head's end.
        let search_from = read.len().saturating_sub(3);
        read.extend_from_slice(&chunk[..count]);
        let tail = &read[search_from..];
        let complete = tail.windows(4).any(|window| window == b"\r\n\r\n") || tail.windows(2).any(|w| w == b"\n\n");
        // A head preceded by empty lines may look complete before its request line arrived.
        if complete && check_head(&read)? == Head::Complete {
            return Ok(read);
        }
        if read.len() > HEAD_BYTES_MAX {
            return Err(too_large_head(&read).into());
        }
    }
}

/// A head over [`HEAD_BYTES_MAX`]: 414 while its request line has not even ended, 431 otherwise.
fn too_large_head(read: &[u8]) -> ApiError {
    if read.contains(&b'\n') {
        ApiError::new(
            StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
            "headers_too_large",
            format!("the request's head is over {HEAD_BYTES_MAX} bytes"),
        )
    } else {
        uri_too_long()
    }
}

fn uri_too_long() -> ApiError {
    ApiError::new(
        StatusCode::URI_TOO_LONG,
        "uri_too_long",
        format!("the request's URI is over {URI_BYTES_MAX} bytes"),
    )
}

fn malformed(detail: impl std::fmt::Display) -> ApiError {
    ApiError::new(
        StatusCode::BAD_REQUEST,
        "malformed_request",
        format!("not an HTTP/1.1 request: {detail}"),
    )
}

/// Whether the bytes read hold a whole head.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Head {
    Complete,
    Partial,
}

/// Checks a head as hyper will parse it, so that hyper never has to refuse it itself.
fn check_head(head: &[u8]) -> Result<Head, ApiError> {
    let mut headers = [httparse::EMPTY_HEADER; HEADERS_MAX];
    let mut request = httparse::Request::new(&mut headers);
    let head_bytes = match request.parse(head) {
        Ok(httparse::Status::Complete(head_bytes)) => head_bytes,
        Ok(httparse::Status::Partial) => return Ok(Head::Partial),
        Err(httparse::Error::TooManyHeaders) => {
            return Err(ApiError::new(
                StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
                "headers_too_large",
                format!("more than {HEADERS_MAX} headers"),
            ));
        }
        Err(error) => return Err(malformed(error)),
    };
    let path = request.path.unwrap_or_default();
    if path.len() > URI_BYTES_MAX {
        return Err(uri_too_long());
    }
    // The last read may have brought the end of a head already over the limit.
    if head_bytes > HEAD_BYTES_MAX {
        return Err(too_large_head(head));
    }
    Method::from_bytes(request.method.unwrap_or_default().as_bytes()).map_err(malformed)?;
    Uri::try_from(path).map_err(|error| malformed(format!("URI: {error}")))?;
    let is_http_11 = request.version == Some(1);
    // As hyper reads them: the last Transfer-Encoding decides, and a Content-Length after one
    // is ignored.
    let mut transfer_encoding_chunked = None;
    let mut content_length = None;
    for header in request.headers.iter() {
        let name = HeaderName::from_bytes(header.name.as_bytes()).map_err(malformed)?;
        if name == axum::http::header::TRANSFER_ENCODING {
            if !is_http_11 {
                return Err(malformed("HTTP/1.0 has no Transfer-Encoding"));
            }
            let last = std::str::from_utf8(header.value)
                .ok()
                .and_then(|value| value.rsplit(',').next())
                .map(str::trim);
            transfer_encoding_chunked = Some(last.is_some_and(|last| last.eq_ignore_ascii_case("chunked")));
        } else if name == axum::http::header::CONTENT_LENGTH && transfer_encoding_chunked.is_none() {
            let length = digits(header.value).ok_or_else(|| malformed("Content-Length is not a number of bytes"))?;
            if content_length.is_some_and(|earlier| earlier != length) {
                return Err(malformed("two different Content-Length headers"));
            }
            content_length = Some(length);
        }
    }
    if transfer_encoding_chunked == Some(false) {
        return Err(malformed("a request's Transfer-Encoding must end with chunked"));
    }
    if content_length.is_some_and(|length| length > BODY_BYTES_MAX as u64) {
        return Err(ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "payload_too_large",
            format!("the body is larger than the {BODY_BYTES_MAX} bytes allowed"),
        ));
    }
    Ok(Head::Complete)
}

/// A Content-Length value: ASCII digits only (no sign, no spaces), as hyper reads it.
fn digits(value: &[u8]) -> Option<u64> {
    if value.is_empty() || !value.iter().all(u8::is_ascii_digit) {
        return None;
    }
    value.iter().try_fold(0_u64, |total, digit| {
        total.checked_mul(10)?.checked_add(u64::from(digit - b'0'))
    })
}

/// `error` as the API answers it (the same JSON body and headers), written as HTTP/1.1.
async fn http1_answer(error: ApiError) -> Vec<u8> {
    let (parts, body) = error.into_response().into_parts();
    let body = axum::body::to_bytes(body, BODY_BYTES_MAX).await.unwrap_or_default();
    let mut answer = format!(
        "HTTP/1.1 {} {}\r\n",
        parts.status.as_u16(),
        parts.status.canonical_reason().unwrap_or("")
    )
    .into_bytes();
    for (name, value) in &parts.headers {
        answer.extend_from_slice(name.as_str().as_bytes());
        answer.extend_from_slice(b": ");
        answer.extend_from_slice(value.as_bytes());
        answer.extend_from_slice(b"\r\n");
    }
    answer.extend_from_slice(format!("content-length: {}\r\nconnection: close\r\n\r\n", body.len()).as_bytes());
    answer.extend_from_slice(&body);
    answer
}

/// Answers `error` on a connection that never reached axum, then closes it gently: the
/// client's unread bytes are drained for a moment, so the close does not reset the
/// connection before the client has read the answer.
async fn answer_and_close(mut stream: TcpStream, error: ApiError) {
    let answer = http1_answer(error).await;
    let linger = Duration::from_millis(REFUSAL_LINGER_MS);
    let _ = tokio::time::timeout(linger, async {
        stream.write_all(&answer).await?;
        stream.shutdown().await?;
        let mut drained = 0;
        let mut chunk = [0_u8; READ_CHUNK_BYTES];
        while drained < REFUSAL_DRAIN_BYTES_MAX {
            match stream.read(&mut chunk).await? {
                0 => break,
                count => drained += count,
            }
        }
        io::Result::Ok(())
    })
    .await;
}

/// An admitted connection: the bytes already read come first, then the socket. It gives back
/// its slot when dropped and fails once the peer has made no progress — sent nothing and taken
/// none of our answer — for the idle timeout (hyper then closes it).
pub(crate) struct GuardedStream {
    already_read: Vec<u8>,
    already_read_position: usize,
    stream: TcpStream,
    idle: Pin<Box<Sleep>>,
    idle_timeout: Duration,
    _slot: Slot,
}

impl GuardedStream {
    /// Passes a ready result through (restarting the idle clock); turns a wait that has
    /// lasted the whole idle timeout into an error.
    fn watch<T>(&mut self, context: &mut Context<'_>, polled: Poll<io::Result<T>>) -> Poll<io::Result<T>> {
        match polled {
            Poll::Ready(result) => {
                let deadline = Instant::now() + self.idle_timeout;
                self.idle.as_mut().reset(deadline);
                Poll::Ready(result)
            }
            Poll::Pending => match self.idle.as_mut().poll(context) {
                Poll::Ready(()) => Poll::Ready(Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    "the client made no progress for too long",
                ))),
                Poll::Pending => Poll::Pending,
            },
        }
    }
}

impl AsyncRead for GuardedStream {
    fn poll_read(
        mut self: Pin<&mut Self>,
        context: &mut Context<'_>,
        buffer: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = &mut *self;
        let unread = &this.already_read[this.already_read_position..];
        if !unread.is_empty() {
            let count = unread.len().min(buffer.remaining());
            buffer.put_slice(&unread[..count]);
            this.already_read_position += count;
            if this.already_read_position == this.already_read.len() {
                this.already_read = Vec::new();
                this.already_read_position = 0;
            }
            return Poll::Ready(Ok(()));
        }
        let polled = Pin::new(&mut this.stream).poll_read(context, buffer);
        this.watch(context, polled)
    }
}

impl AsyncWrite for GuardedStream {
    fn poll_write(mut self: Pin<&mut Self>, context: &mut Context<'_>, bytes: &[u8]) -> Poll<io::Result<usize>> {
        let this = &mut *self;
        let polled = Pin::new(&mut this.stream).poll_write(context, bytes);
        this.watch(context, polled)
    }

    fn poll_flush(mut self: Pin<&mut Self>, context: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = &mut *self;
        let polled = Pin::new(&mut this.stream).poll_flush(context);
        this.watch(context, polled)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, context: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_shutdown(context)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        context: &mut Context<'_>,
        buffers: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = &mut *self;
        let polled = Pin::new(&mut this.stream).poll_write_vectored(context, buffers);
        this.watch(context, polled)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The status and code a head is refused with, if it is.
    type Refusal = Option<(StatusCode, &'static str)>;

    fn refusal(head: &[u8]) -> Refusal {
        match check_head(head) {
            Ok(verdict) => {
                assert_eq!(verdict, Head::Complete, "{}", String::from_utf8_lossy(head));
                None
            }
            Err(error) => Some((error.status, error.code)),
        }
    }

    #[test]
    fn empty_lines_before_a_request_line_wait_for_it() {
        assert_eq!(check_head(b"\r\n\r\n").unwrap(), Head::Partial);
        assert_eq!(check_head(b"\r\n\r\nGET / HTTP/1.1\r\n\r\n").unwrap(), Head::Complete);
    }

    #[test]
    fn heads_hyper_would_refuse_are_refused_first() {
        let long_uri = format!("GET /{} HTTP/1.1\r\n\r\n", "a".repeat(URI_BYTES_MAX));
        let big_header = format!("GET / HTTP/1.1\r\nX: {}\r\n\r\n", "b".repeat(HEAD_BYTES_MAX));
        let many = format!(
            "GET / HTTP/1.1\r\n{}\r\n",
            (0..=HEADERS_MAX)
                .map(|number| format!("X-{number}: y\r\n"))
                .collect::<String>()
        );
        let cases: Vec<(&[u8], Refusal)> = vec![
            (b"GET /v1/tool-executions HTTP/1.1\r\nHost: x\r\n\r\n", None),
            (b"GET / HTTP/1.0\n\n", None),
            (
                b"POST / HTTP/1.1\r\nContent-Length: 10\r\nContent-Length: 10\r\n\r\n",
                None,
            ),
            (
                b"POST / HTTP/1.1\r\nTransfer-Encoding: gzip, chunked\r\nContent-Length: x\r\n\r\n",
                None,
            ),
            (long_uri.as_bytes(), Some((StatusCode::URI_TOO_LONG, "uri_too_long"))),
            (
                big_header.as_bytes(),
                Some((StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE, "headers_too_large")),
            ),
            (
                many.as_bytes(),
                Some((StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE, "headers_too_large")),
            ),
            (b"GARBAGE\r\n\r\n", Some((StatusCode::BAD_REQUEST, "malformed_request"))),
            (
                b"GET / HTTP/2.0\r\n\r\n",
                Some((StatusCode::BAD_REQUEST, "malformed_request")),
            ),
            (
                b"GET /a b HTTP/1.1\r\n\r\n",
                Some((StatusCode::BAD_REQUEST, "malformed_request")),
            ),
            (
                b"POST / HTTP/1.1\r\nContent-Length: -1\r\n\r\n",
                Some((StatusCode::BAD_REQUEST, "malformed_request")),
            ),
            (
                b"POST / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
                Some((StatusCode::BAD_REQUEST, "malformed_request")),
            ),
            (
                b"POST / HTTP/1.1\r\nContent-Length: 99999999999999999999999\r\n\r\n",
                Some((StatusCode::BAD_REQUEST, "malformed_request")),
            ),
            (
                b"POST / HTTP/1.1\r\nContent-Length: 1000000\r\n\r\n",
                Some((StatusCode::PAYLOAD_TOO_LARGE, "payload_too_large")),
            ),
            (
                b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked, gzip\r\n\r\n",
                Some((StatusCode::BAD_REQUEST, "malformed_request")),
            ),
            (
                b"POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n",
                Some((StatusCode::BAD_REQUEST, "malformed_request")),
            ),
        ];
        for (head, expected) in cases {
            assert_eq!(refusal(head), expected, "{}", String::from_utf8_lossy(head));
        }
    }

    #[test]
    fn an_overlong_head_is_414_until_its_request_line_ends_and_431_after() {
        assert_eq!(too_large_head(b"GET /aaaa").status, StatusCode::URI_TOO_LONG);
        assert_eq!(
            too_large_head(b"GET / HTTP/1.1\r\nX: aaaa").status,
            StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE
        );
    }

    #[test]
    fn content_lengths_are_plain_digits() {
        assert_eq!(digits(b"0"), Some(0));
        assert_eq!(digits(b"65536"), Some(65_536));
        for bad in [&b""[..], b"+1", b" 1", b"1 ", b"0x10", b"18446744073709551616"] {
            assert_eq!(digits(bad), None, "{}", String::from_utf8_lossy(bad));
        }
    }
}
