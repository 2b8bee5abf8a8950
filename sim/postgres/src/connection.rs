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
//! not the fsync were most of a ledger cycle (issue 25: eleven for a call, one for a raw commit).
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
    /// the same order. The server runs each whatever the one before it did; inside a
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

/// Polls every future, first to last, until all are done: each is first polled before any is
/// awaited, so each hands its request to the connection before the connection writes, and
/// they leave in one write, in order.
struct JoinInOrder<'a, T> {
    futures: Vec<Option<Pin<Box<dyn Future<Output = T> + 'a>>>>,
    answers: Vec<Option<T>>,
}

impl<'a, T> JoinInOrder<'a, T> {
    fn new(futures: Vec<Pin<Box<dyn Future<Output = T> + 'a>>>) -> Self {
        let answers = futures.iter().map(|_| None).collect();
        JoinInOrder {
            futures: futures.into_iter().map(Some).collect(),
            answers,
        }
    }
}

impl<T: Unpin> Future for JoinInOrder<'_, T> {
    type Output = Vec<T>;

    fn poll(self: Pin<&mut Self>, context: &mut Context<'_>) -> Poll<Vec<T>> {
        // Every field is `Unpin` (the futures are boxed).
        let this = self.get_mut();
        for (slot, answer) in this.futures.iter_mut().zip(this.answers.iter_mut()) {
            if let Some(future) = slot
                && let Poll::Ready(value) = future.as_mut().poll(context)
            {
                *answer = Some(value);
                *slot = None;
            }
        }
        if this.futures.iter().any(Option::is_some) {
            return Poll::Pending;
        }
        Poll::Ready(
            this.answers
                .iter_mut()
                .map(|answer| answer.take().expect("every future answered"))
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
