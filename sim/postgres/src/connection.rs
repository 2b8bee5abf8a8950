//! One PostgreSQL connection, on a thread of its own.
//!
//! The synchronous client (`postgres`) drives an async client on a small tokio runtime of its
//! own, and tokio refuses to start a runtime inside another one's context: called from a
//! task of the drill's supervisor or a `twice-sim worker` (both run the ledger's synchronous
//! calls inline on a tokio thread), it would panic. So every connection lives on a plain
//! thread that owns the client, and each statement is handed to it as a job and waited
//! for. Callers stay synchronous whatever runtime they are on; the hop costs microseconds
//! against a round trip to the server.
//!
//! Dropping a [`Connection`] ends its thread, which closes the connection: the server rolls
//! back whatever transaction was open, as it does when a process is SIGKILLed.

use std::collections::BTreeMap;
use std::sync::mpsc;
use std::thread::JoinHandle;

use postgres::{Client, NoTls, Statement};

/// What a connection's thread holds: the client and the statements it prepared, each
/// prepared once per connection (parsing them every time was a measurable part of a cycle).
pub(crate) struct Session {
    client: Client,
    statements: BTreeMap<&'static str, Statement>,
}

impl Session {
    /// The prepared statement for `sql`, prepared on first use.
    pub(crate) fn statement(&mut self, sql: &'static str) -> Result<Statement, postgres::Error> {
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
}

type Job = Box<dyn FnOnce(&mut Session) + Send>;

/// The connection's thread ended (it panicked) or could not be started.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ConnectionError {
    #[error("{0}")]
    Connect(#[from] postgres::Error),
    #[error("cannot start the connection's thread: {0}")]
    Thread(std::io::Error),
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

impl Connection {
    /// Connects on a new thread and waits until the server has accepted the connection.
    pub(crate) fn open(config: postgres::Config) -> Result<Connection, ConnectionError> {
        let (ready_sender, ready) = mpsc::sync_channel::<Result<(), postgres::Error>>(1);
        let (jobs, incoming) = mpsc::channel::<Job>();
        let thread = std::thread::Builder::new()
            .name("twice-postgres".into())
            .spawn(move || {
                let client = match config.connect(NoTls) {
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
                // Until the `Connection` is dropped: then the client is dropped here, on
                // the thread whose runtime it belongs to.
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
            Ok(Err(error)) => Err(ConnectionError::Connect(error)),
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
