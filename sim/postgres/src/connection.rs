//! One PostgreSQL connection, on a thread of its own, its statements sent together where they
//! need no answer in between.
//!
//! The client is `tokio-postgres` on a current-thread tokio runtime the thread owns: tokio
//! refuses to start a runtime inside another one's context, and the drill's supervisor and a
//! `twice-sim worker` run the ledger's synchronous calls inline on a tokio thread. So every
//! connection lives on a plain thread that owns its runtime and client, and each piece of work
//! is handed to it as a job and waited for. Callers stay synchronous whatever runtime they are
//! on; the hop costs microseconds against a round trip to the server.
//!
//! Why the asynchronous client under a synchronous store: it pipelines. Statements whose
//! futures are polled together are written to the socket together and answered in order, so
//! a transaction's writes and its `COMMIT` (or a read and the `BEGIN` before it) cost one round
//! trip, not one each ([`Session::pipeline`]). On a server a round trip away, round trips and
//! not the fsync were most of a ledger cycle (eleven for a call, one for a raw commit, when measured).
//!
//! Dropping a [`Connection`] ends its thread, which closes the connection: the server rolls
//! back whatever transaction was open, as it does when a process is SIGKILLed.

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::task::{Context, Poll};
use std::thread::JoinHandle;

use postgres::types::ToSql;
use postgres::{Error, NoTls, Row, Statement};
use tokio_postgres::ToStatement;

/// Round trips to a server by every connection of this process: what the benchmark divides
/// by its cycles, and what `tests/round_trips.rs` bounds.
static ROUND_TRIPS: AtomicU64 = AtomicU64::new(0);

/// Round trips made so far by every PostgreSQL connection of this process (a statement, or a
/// pipeline of them, is one).
pub fn round_trips() -> u64 {
    ROUND_TRIPS.load(Ordering::Relaxed)
}

/// One statement's answer, on its way.
type Answer<'a> = Pin<Box<dyn Future<Output = Result<Vec<Row>, Error>> + 'a>>;

/// A statement's parameter, owned: a queued statement outlives the call that queued it.
pub(crate) type Parameter = Box<dyn ToSql + Sync + Send>;

/// A statement queued to be sent with the next one that needs an answer.
pub(crate) struct Queued {
    pub(crate) sql: &'static str,
    pub(crate) parameters: Vec<Parameter>,
}

impl Queued {
    /// A statement without parameters (`BEGIN`, `COMMIT`, a savepoint).
    pub(crate) fn frame(sql: &'static str) -> Queued {
        Queued {
            sql,
            parameters: Vec::new(),
        }
    }
}

/// The synchronous face of the asynchronous client: each call one round trip.
pub(crate) struct Client {
    runtime: tokio::runtime::Runtime,
    inner: tokio_postgres::Client,
}

impl Client {
    fn wait<T>(&self, work: impl Future<Output = T>) -> T {
        ROUND_TRIPS.fetch_add(1, Ordering::Relaxed);
        self.runtime.block_on(work)
    }

    pub(crate) fn execute<T: ?Sized + ToStatement>(
        &mut self,
        query: &T,
        parameters: &[&(dyn ToSql + Sync)],
    ) -> Result<u64, Error> {
        self.wait(self.inner.execute(query, parameters))
    }

    pub(crate) fn query<T: ?Sized + ToStatement>(
        &mut self,
        query: &T,
        parameters: &[&(dyn ToSql + Sync)],
    ) -> Result<Vec<Row>, Error> {
        self.wait(self.inner.query(query, parameters))
    }

    pub(crate) fn query_one<T: ?Sized + ToStatement>(
        &mut self,
        query: &T,
        parameters: &[&(dyn ToSql + Sync)],
    ) -> Result<Row, Error> {
        self.wait(self.inner.query_one(query, parameters))
    }

    pub(crate) fn query_opt<T: ?Sized + ToStatement>(
        &mut self,
        query: &T,
        parameters: &[&(dyn ToSql + Sync)],
    ) -> Result<Option<Row>, Error> {
        self.wait(self.inner.query_opt(query, parameters))
    }

    /// Statements in the simple protocol, several in one text (no parameters).
    pub(crate) fn batch_execute(&mut self, sql: &str) -> Result<(), Error> {
        self.wait(self.inner.batch_execute(sql))
    }

    fn prepare(&mut self, sql: &str) -> Result<Statement, Error> {
        self.wait(self.inner.prepare(sql))
    }
}

/// What a connection's thread holds: the client and the statements it prepared, each
/// prepared once per connection (parsing them every time was a measurable part of a cycle).
pub(crate) struct Session {
    client: Client,
    statements: BTreeMap<&'static str, Statement>,
}

impl Session {
    /// The prepared statement for `sql`, prepared on first use.
    pub(crate) fn statement(&mut self, sql: &'static str) -> Result<Statement, Error> {
        if let Some(statement) = self.statements.get(sql) {
            return Ok(statement.clone());
        }
        let statement = self.client.prepare(sql)?;
        self.statements.insert(sql, statement.clone());
        Ok(statement)
    }

    pub(crate) fn client(&mut self) -> &mut Client {
        &mut self.client
    }

    /// Runs `queued` in order, sent together: one round trip (after preparing, once per
    /// connection, any statement not prepared yet). Every statement's answer comes back in
    /// the same order (up to a statement the client refused to send: see [`JoinInOrder`]). The server runs each whatever the one before it did; inside a
    /// transaction a failed statement aborts it, and every later one fails too ("current
    /// transaction is aborted") — except `COMMIT`, which then rolls back and answers success.
    /// So a caller reads the answers in order and stops at the first error: a `COMMIT` counts
    /// only when everything before it succeeded.
    pub(crate) fn pipeline(&mut self, queued: &[Queued]) -> Result<Vec<Result<Vec<Row>, Error>>, Error> {
        let statements = queued
            .iter()
            .map(|statement| self.statement(statement.sql))
            .collect::<Result<Vec<_>, _>>()?;
        let client = &self.client.inner;
        let futures: Vec<Answer<'_>> = statements
            .iter()
            .zip(queued)
            .map(|(statement, queued)| {
                let parameters: Vec<&(dyn ToSql + Sync)> = queued
                    .parameters
                    .iter()
                    .map(|parameter| &**parameter as &(dyn ToSql + Sync))
                    .collect();
                Box::pin(async move { client.query(statement, &parameters).await }) as Answer<'_>
            })
            .collect();
        Ok(self.client.wait(JoinInOrder::new(futures)))
    }
}

/// A statement's answer on its way, as [`JoinInOrder`] holds it.
type Pending<'a, R, E> = Pin<Box<dyn Future<Output = Result<R, E>> + 'a>>;

/// Polls every future, first to last, until all are done: each is first polled before any is
/// awaited, so each hands its request to the connection before the connection writes, and
/// they leave in one write, in order.
///
/// A statement the client refuses before sending it (a parameter it cannot encode) fails on
/// its first poll; no statement after it is started then, so a `COMMIT` behind it never
/// leaves: the server would otherwise commit the transaction without the refused write. The
/// answers stop at that failure.
struct JoinInOrder<'a, R, E> {
    futures: Vec<Option<Pending<'a, R, E>>>,
    answers: Vec<Option<Result<R, E>>>,
    /// How many futures have been polled at least once (sent, or refused by the client).
    started: usize,
    /// A future failed on its first poll: none after it is started.
    refused: bool,
}

impl<'a, R, E> JoinInOrder<'a, R, E> {
    fn new(futures: Vec<Pending<'a, R, E>>) -> Self {
        let answers = futures.iter().map(|_| None).collect();
        JoinInOrder {
            futures: futures.into_iter().map(Some).collect(),
            answers,
            started: 0,
            refused: false,
        }
    }
}

impl<R: Unpin, E: Unpin> Future for JoinInOrder<'_, R, E> {
    type Output = Vec<Result<R, E>>;

    fn poll(self: Pin<&mut Self>, context: &mut Context<'_>) -> Poll<Vec<Result<R, E>>> {
        // Every field is `Unpin` (the futures are boxed).
        let this = self.get_mut();
        for index in 0..this.futures.len() {
            let first_poll = index >= this.started;
            if first_poll && this.refused {
                break;
            }
            this.started = this.started.max(index + 1);
            if let Some(future) = &mut this.futures[index]
                && let Poll::Ready(value) = future.as_mut().poll(context)
            {
                if first_poll && value.is_err() {
                    this.refused = true;
                }
                this.answers[index] = Some(value);
                this.futures[index] = None;
            }
        }
        if this.futures[..this.started].iter().any(Option::is_some) {
            return Poll::Pending;
        }
        let answered = this.started;
        Poll::Ready(
            this.answers[..answered]
                .iter_mut()
                .map(|answer| answer.take().expect("every started future answered"))
                .collect(),
        )
    }
}

type Job = Box<dyn FnOnce(&mut Session) + Send>;

/// The connection's thread ended (it panicked) or could not be started.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ConnectionError {
    #[error("{0}")]
    Connect(#[from] Error),
    #[error("cannot start the connection's thread: {0}")]
    Thread(std::io::Error),
    #[error("cannot start the connection's runtime: {0}")]
    Runtime(std::io::Error),
    #[error("the connection's thread ended; the connection is closed")]
    Gone,
}

/// A connection on its own thread (see the module's documentation).
pub(crate) struct Connection {
    jobs: Option<mpsc::Sender<Job>>,
    thread: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("Connection")
            .field("open", &self.jobs.is_some())
            .finish()
    }
}

/// Connects on a runtime of the calling thread's own, the connection's task spawned on it
/// (it runs whenever the thread waits for an answer).
fn connect(config: &tokio_postgres::Config) -> Result<Client, ConnectionError> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(ConnectionError::Runtime)?;
    let (inner, connection) = runtime.block_on(config.connect(NoTls))?;
    // A connection that ends (the server went away) fails every later statement with the
    // client's own "connection closed": nothing to report here.
    runtime.spawn(async move {
        let _ = connection.await;
    });
    Ok(Client { runtime, inner })
}

impl Connection {
    /// Connects on a new thread and waits until the server has accepted the connection.
    pub(crate) fn open(config: tokio_postgres::Config) -> Result<Connection, ConnectionError> {
        let (ready_sender, ready) = mpsc::sync_channel::<Result<(), ConnectionError>>(1);
        let (jobs, incoming) = mpsc::channel::<Job>();
        let thread = std::thread::Builder::new()
            .name("twice-postgres".into())
            .spawn(move || {
                let client = match connect(&config) {
                    Ok(client) => client,
                    Err(error) => {
                        let _ = ready_sender.send(Err(error));
                        return;
                    }
                };
                let _ = ready_sender.send(Ok(()));
                let mut session = Session {
                    client,
                    statements: BTreeMap::new(),
                };
                // Until the `Connection` is dropped: then the client and its runtime are
                // dropped here, on the thread they belong to.
                while let Ok(job) = incoming.recv() {
                    job(&mut session);
                }
            })
            .map_err(ConnectionError::Thread)?;
        let connection = Connection {
            jobs: Some(jobs),
            thread: Some(thread),
        };
        match ready.recv() {
            Ok(Ok(())) => Ok(connection),
            Ok(Err(error)) => Err(error),
            Err(_) => Err(ConnectionError::Gone),
        }
    }

    /// Runs `work` on the connection's thread and waits for its answer.
    pub(crate) fn run<T: Send + 'static>(
        &self,
        work: impl FnOnce(&mut Session) -> T + Send + 'static,
    ) -> Result<T, ConnectionError> {
        let (answer_sender, answer) = mpsc::sync_channel(1);
        let jobs = self.jobs.as_ref().ok_or(ConnectionError::Gone)?;
        jobs.send(Box::new(move |session: &mut Session| {
            let _ = answer_sender.send(work(session));
        }))
        .map_err(|_| ConnectionError::Gone)?;
        answer.recv().map_err(|_| ConnectionError::Gone)
    }
}

impl Drop for Connection {
    fn drop(&mut self) {
        // Closing the channel ends the thread's loop; waiting for it means the connection is
        // closed when this returns (a test that drops its database next needs that).
        drop(self.jobs.take());
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    type Boxed = Pin<Box<dyn Future<Output = Result<u32, &'static str>>>>;

    fn poll_once(join: &mut JoinInOrder<'static, u32, &'static str>) -> Poll<Vec<Result<u32, &'static str>>> {
        let mut context = Context::from_waker(std::task::Waker::noop());
        Pin::new(join).poll(&mut context)
    }

    /// An answer that takes one more poll, as a server's does (its request left first).
    struct FromTheServer(Option<Result<u32, &'static str>>, bool);

    impl Future for FromTheServer {
        type Output = Result<u32, &'static str>;

        fn poll(mut self: Pin<&mut Self>, _context: &mut Context<'_>) -> Poll<Self::Output> {
            if !self.1 {
                self.1 = true;
                return Poll::Pending;
            }
            Poll::Ready(self.0.take().expect("polled after answering"))
        }
    }

    #[test]
    fn every_statement_sent_answers_in_order_a_server_error_included() {
        let futures: Vec<Boxed> = vec![
            Box::pin(FromTheServer(Some(Ok(1)), false)),
            Box::pin(FromTheServer(Some(Err("server refused")), false)),
            Box::pin(FromTheServer(Some(Ok(3)), false)),
        ];
        let mut join = JoinInOrder::new(futures);
        assert!(poll_once(&mut join).is_pending(), "the server has not answered yet");
        let Poll::Ready(answers) = poll_once(&mut join) else {
            panic!("every answer came");
        };
        assert_eq!(answers, vec![Ok(1), Err("server refused"), Ok(3)]);
    }

    #[test]
    fn nothing_after_a_statement_refused_before_sending_is_started() {
        let futures: Vec<Boxed> = vec![
            Box::pin(async { Ok(1) }),
            Box::pin(async { Err("cannot encode") }),
            Box::pin(async { panic!("the COMMIT behind a refused write was started") }),
        ];
        let Poll::Ready(answers) = poll_once(&mut JoinInOrder::new(futures)) else {
            panic!("ready futures answer at once");
        };
        assert_eq!(answers, vec![Ok(1), Err("cannot encode")]);
    }
}
