//! Limits on connections: how many may be open at once, and how long one may sit
//! without sending a byte. The HTTP layer alone has neither (hyper's header timeout
//! needs a timer axum does not give it), so a client trickling a request one byte a
//! minute, or a thousand idle clients, could otherwise hold the server.

use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::time::{Instant, Sleep};

/// A TCP listener that accepts at most `open_max` connections at once (the next waits
/// until one closes) and closes a connection idle for `idle_timeout`.
pub(crate) struct GuardedListener {
    inner: TcpListener,
    open: Arc<Semaphore>,
    idle_timeout: Duration,
}

impl GuardedListener {
    pub(crate) fn new(inner: TcpListener, open_max: usize, idle_timeout: Duration) -> GuardedListener {
        GuardedListener {
            inner,
            open: Arc::new(Semaphore::new(open_max)),
            idle_timeout,
        }
    }
}

impl axum::serve::Listener for GuardedListener {
    type Io = GuardedStream;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (GuardedStream, SocketAddr) {
        // The semaphore is never closed, so acquiring only ever waits.
        let permit = Arc::clone(&self.open)
            .acquire_owned()
            .await
            .expect("the connection semaphore is never closed");
        let (stream, address) = axum::serve::Listener::accept(&mut self.inner).await;
        let stream = GuardedStream {
            stream,
            idle: Box::pin(tokio::time::sleep(self.idle_timeout)),
            idle_timeout: self.idle_timeout,
            _permit: permit,
        };
        (stream, address)
    }

    fn local_addr(&self) -> io::Result<SocketAddr> {
        self.inner.local_addr()
    }
}

/// A connection that gives back its slot when dropped and fails once the peer has made
/// no progress — sent nothing and taken none of our answer — for the idle timeout
/// (hyper then closes it).
pub(crate) struct GuardedStream {
    stream: TcpStream,
    idle: Pin<Box<Sleep>>,
    idle_timeout: Duration,
    _permit: OwnedSemaphorePermit,
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
