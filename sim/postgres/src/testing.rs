//! PostgreSQL for tests: where the server is, and a fresh database per test, dropped after.
//!
//! Tests find the server through [`URL_VARIABLE`]. Without it they say, on the terminal
//! (past the test harness's capture), that they were skipped and how to run them, and pass —
//! unless [`REQUIRE_VARIABLE`] is `1` or `CI` is set, where a missing server is a failure:
//! CI never skips them. `.ci/postgres` starts a server and sets both.

use std::io::Write;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::connection::Connection;
use crate::url::PostgresUrl;

/// Where the tests' server is: `postgres://USER@HOST:PORT/DATABASE` (the database is only
/// used to create and drop each test's own).
pub const URL_VARIABLE: &str = "TWICE_POSTGRES_URL";
/// `1`: the PostgreSQL tests must run; a missing [`URL_VARIABLE`] fails them.
pub const REQUIRE_VARIABLE: &str = "TWICE_REQUIRE_POSTGRES";
/// The longest database name PostgreSQL keeps whole.
const DATABASE_CHARS_MAX: usize = 63;

static DATABASES: AtomicU64 = AtomicU64::new(0);

/// Whether a missing server fails the tests (CI, or asked for).
pub fn required() -> bool {
    let set = |name: &str| {
        std::env::var(name)
            .ok()
            .is_some_and(|value| !value.is_empty() && value != "0" && value != "false")
    };
    set(REQUIRE_VARIABLE) || set("CI")
}

/// The server the tests use, or `None` (and a line on the terminal) when none is given and
/// none is required. Panics — failing the test — when one is required and missing, or the
/// variable holds no valid URL.
pub fn server(test: &str) -> Option<PostgresUrl> {
    match std::env::var(URL_VARIABLE) {
        Ok(text) if !text.trim().is_empty() => match PostgresUrl::parse(&text) {
            Ok(url) => Some(url),
            Err(error) => panic!("{URL_VARIABLE}: {error}"),
        },
        _ if required() => panic!(
            "{test}: {URL_VARIABLE} is not set, and the PostgreSQL tests must run here ({REQUIRE_VARIABLE}=1 or CI is set). \
             Start a server (.ci/postgres does) and set {URL_VARIABLE}=postgres://USER@HOST:PORT/DATABASE"
        ),
        _ => {
            // Straight to the terminal: the harness captures `eprintln!` of passing tests.
            let _ = writeln!(
                std::io::stderr().lock(),
                "skipped {test}: set {URL_VARIABLE}=postgres://USER@HOST:PORT/DATABASE (see the book's \
                 \"PostgreSQL\", docs/src/operators/postgres.md) to run the PostgreSQL tests"
            );
            None
        }
    }
}

/// A database of its own for one test, created on the server and dropped (with every
/// connection to it) when this is dropped.
pub struct TestDatabase {
    admin: Connection,
    name: String,
    url: PostgresUrl,
    schemas: AtomicU64,
}

impl std::fmt::Debug for TestDatabase {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.debug_struct("TestDatabase").field("url", &self.url).finish()
    }
}

impl TestDatabase {
    /// A new database for `test`, or `None` when the PostgreSQL tests are skipped (see [`server`]).
    pub fn create(test: &str) -> Option<TestDatabase> {
        let server = server(test)?;
        let label: String = test
            .chars()
            .map(|character| {
                if character.is_ascii_alphanumeric() {
                    character.to_ascii_lowercase()
                } else {
                    '_'
                }
            })
            .collect();
        let mut name = format!(
            "twice_test_{}_{}_{label}",
            std::process::id(),
            DATABASES.fetch_add(1, Ordering::Relaxed)
        );
        name.truncate(DATABASE_CHARS_MAX);
        let mut config = tokio_postgres::Config::new();
        config
            .host(server.host())
            .port(server.port())
            .user(server.user())
            .dbname(server.database())
            .application_name("twice-tests")
            .ssl_mode(postgres::config::SslMode::Disable);
        if let Some(password) = server.password() {
            config.password(password);
        }
        let admin = Connection::open(config).unwrap_or_else(|error| panic!("{test}: cannot reach {server}: {error}"));
        // The name is built from a plain label and numbers only.
        let create = format!("CREATE DATABASE \"{name}\"");
        admin
            .run(move |session| session.client().batch_execute(&create))
            .unwrap_or_else(|error| panic!("{test}: {error}"))
            .unwrap_or_else(|error| panic!("{test}: cannot create a database on {server}: {error}"));
        Some(TestDatabase {
            admin,
            url: server.with_database(&name),
            name,
            schemas: AtomicU64::new(0),
        })
    }

    /// The test database's URL (its ledger in schema `public`).
    pub fn url(&self) -> &PostgresUrl {
        &self.url
    }

    /// The URL of a new, empty schema in the test database: a fresh ledger each time.
    pub fn fresh_schema(&self) -> PostgresUrl {
        let schema = format!("ledger_{}", self.schemas.fetch_add(1, Ordering::Relaxed));
        self.url
            .with_schema(&schema)
            .expect("`ledger_<n>` is a plain schema name")
    }
}

impl Drop for TestDatabase {
    fn drop(&mut self) {
        let drop = format!("DROP DATABASE IF EXISTS \"{}\" WITH (FORCE)", self.name);
        let _ = self.admin.run(move |session| session.client().batch_execute(&drop));
    }
}
