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
//!
//! Reading and checking a request's head is in `head.rs`; here, the limits on connections and
//! the stream handed to axum.

mod head;

use std::collections::BTreeMap;
use std::future::Future;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::http::StatusCode;
use axum::response::IntoResponse;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Semaphore, mpsc};
use tokio::task::JoinHandle;
use tokio::time::{Instant, Sleep};

use crate::api::ApiError;
use crate::api::BODY_BYTES_MAX;
use head::{HeadError, read_head};

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
