//! Figures 1 and 2: reserve + complete cycles on a file ledger, side by side with raw
//! single-row INSERT-and-commit on the same SQLite settings (and, when built with the
//! `peer-benchmark` feature, with the same cycle through the `agent-effects` crate).
//!
//! These machines are noisy, so the contenders take turns: the work is cut into rounds,
//! each round runs one batch of every contender, and the order rotates from round to
//! round. A slow spell then lands on all of them alike, and the ratios hold even when the
//! absolute figures wander.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rusqlite::Connection;

use super::BenchError;
use super::machine::thread_cpu_seconds;
use twice_world::ledger::{self, FileSettingsError, Ledger};

/// Something measured in batches: `run(first, count)` performs items `first..first + count`.
pub trait Contender {
    /// Its name in the report.
    fn name(&self) -> String;
    /// Performs `count` items starting at item number `first` (item numbers never repeat
    /// within a measurement, so every item is a new key).
    fn run(&mut self, first: u64, count: u64) -> Result<(), BenchError>;
    /// CPU seconds its work took on threads other than the caller's since it was last asked
    /// (the grouped runs' threads): 0 for a contender that works on the caller's thread alone.
    /// Not counted anywhere: other processes (a PostgreSQL server's backends).
    fn other_threads_cpu_seconds(&mut self) -> f64 {
        0.0
    }
}

/// How one contender did.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Measured {
    pub name: String,
    pub items: u64,
    pub seconds: f64,
    pub per_second: f64,
    /// Items per second in each round, in round order: how much the rate moved while the
    /// contenders took turns (a ratio's spread is read from these).
    pub round_rates: Vec<f64>,
    /// CPU seconds this process's threads spent on its items (the caller's thread, and its own
    /// threads if it has any), where the system tells: with the seconds by the clock, how much
    /// of an item is work rather than waiting (for an fsync, a server, a core).
    pub cpu_seconds: Option<f64>,
}

impl Measured {
    /// CPU microseconds per item, where known.
    pub fn cpu_micros_per_item(&self) -> Option<f64> {
        self.cpu_seconds
            .filter(|_| self.items > 0)
            .map(|seconds| seconds * 1e6 / self.items as f64)
    }
}

/// Runs `items` items of every contender, in `rounds` rounds with the order rotating.
pub fn measure(contenders: &mut [&mut dyn Contender], items: u64, rounds: u64) -> Result<Vec<Measured>, BenchError> {
    let rounds = rounds.clamp(1, items.max(1));
    let mut spent = vec![Duration::ZERO; contenders.len()];
    let mut round_rates = vec![Vec::with_capacity(rounds as usize); contenders.len()];
    let mut cpu = vec![Some(0.0); contenders.len()];
    let mut done = 0_u64;
    for round in 0..rounds {
        // The last round takes what division left over.
        let count = if round + 1 == rounds {
            items - done
        } else {
            items / rounds
        };
        for turn in 0..contenders.len() {
            let index = (turn + round as usize) % contenders.len();
            let cpu_before = thread_cpu_seconds();
            let started = Instant::now();
            contenders[index].run(done, count)?;
            let elapsed = started.elapsed();
            let own = cpu_before
                .zip(thread_cpu_seconds())
                .map(|(before, after)| after - before);
            let others = contenders[index].other_threads_cpu_seconds();
            // A NaN from a contender's threads: one of them could not tell, so the whole is unknown.
            cpu[index] = cpu[index]
                .zip(own)
                .map(|(total, own)| total + own + others)
                .filter(|total| total.is_finite());
            spent[index] += elapsed;
            round_rates[index].push(rate(count, elapsed.as_secs_f64()));
        }
        done += count;
    }
    Ok(contenders
        .iter()
        .zip(spent)
        .zip(round_rates)
        .zip(cpu)
        .map(|(((contender, spent), round_rates), cpu_seconds)| {
            let seconds = spent.as_secs_f64();
            Measured {
                name: contender.name(),
                items,
                seconds,
                per_second: rate(items, seconds),
                round_rates,
                cpu_seconds,
            }
        })
        .collect())
}

/// Items per second; 0 for no time at all (nothing measurable).
fn rate(items: u64, seconds: f64) -> f64 {
    if seconds > 0.0 { items as f64 / seconds } else { 0.0 }
}

/// The arguments every benchmark call carries: canonical JSON, as the runtime stores them.
pub const ARGUMENTS: &str = r#"{"account":"acct_ada","amount_cents":2500,"memo":"Late delivery credit"}"#;
/// The result every benchmark call records.
pub const RESULT: &str = r#"{"credit_id":"cr_1","status":"applied"}"#;

/// Figure 1, ours: `Ledger::reserve_and_begin` (the reservation and attempt 1's send fence,
/// folded: decision table 5) then `Ledger::record_outcome(completed)`, the two commits the
/// worker process makes around every side effect.
#[derive(Debug)]
pub struct LedgerCycles {
    ledger: Ledger,
    name: &'static str,
}

impl LedgerCycles {
    pub fn open(path: &Path) -> Result<LedgerCycles, BenchError> {
        Ok(LedgerCycles::on(
            Ledger::open(path)?,
            "twice ledger: reserve+fence + complete",
        ))
    }

    /// The same cycles on a ledger opened elsewhere (the PostgreSQL store).
    pub fn on(ledger: Ledger, name: &'static str) -> LedgerCycles {
        LedgerCycles { ledger, name }
    }
}

impl Contender for LedgerCycles {
    fn name(&self) -> String {
        self.name.into()
    }

    /// One full call per item: the reservation with attempt 1's send fence folded in (one
    /// commit), then the outcome (one commit) — what the worker process does for every call.
    fn run(&mut self, first: u64, count: u64) -> Result<(), BenchError> {
        for item in first..first + count {
            super::group_commit::full_call(&mut self.ledger, item, "bench")?;
        }
        Ok(())
    }
}

/// Figure 1, the ceiling: one single-row INSERT per commit on a file opened with the
/// ledger's own settings ([`ledger::apply_file_settings`]).
#[derive(Debug)]
pub struct RawInserts {
    connection: Connection,
    path: PathBuf,
}

impl RawInserts {
    pub fn open(path: &Path) -> Result<RawInserts, BenchError> {
        let sqlite = |error: rusqlite::Error, context: &'static str| BenchError::Sqlite {
            path: path.to_path_buf(),
            context,
            source: error,
        };
        let connection = Connection::open(path).map_err(|error| sqlite(error, "opening"))?;
        ledger::apply_file_settings(&connection, sqlite).map_err(|error| match error {
            FileSettingsError::NotWal { mode } => BenchError::Unexpected(format!(
                "{}: journal mode is {mode}, WAL could not be set",
                path.display()
            )),
            FileSettingsError::Ledger(error) => error,
        })?;
        connection
            .execute_batch(
                "CREATE TABLE IF NOT EXISTS raw_inserts (
                     key   TEXT PRIMARY KEY,
                     value TEXT NOT NULL
                 )",
            )
            .map_err(|error| sqlite(error, "creating the table"))?;
        Ok(RawInserts {
            connection,
            path: path.to_path_buf(),
        })
    }
}

impl Contender for RawInserts {
    fn name(&self) -> String {
        "SQLite INSERT+commit".into()
    }

    fn run(&mut self, first: u64, count: u64) -> Result<(), BenchError> {
        let mut statement = self
            .connection
            .prepare_cached("INSERT INTO raw_inserts (key, value) VALUES (?1, ?2)")
            .map_err(|error| BenchError::Sqlite {
                path: self.path.clone(),
                context: "preparing the insert",
                source: error,
            })?;
        for item in first..first + count {
            // Autocommit: every statement is its own transaction, committed (and synced) alone.
            statement
                .execute(rusqlite::params![format!("bench:c{item}"), ARGUMENTS])
                .map_err(|error| BenchError::Sqlite {
                    path: self.path.clone(),
                    context: "inserting",
                    source: error,
                })?;
        }
        Ok(())
    }
}

/// Figures 1 and 5 on PostgreSQL, the ceiling: one single-row INSERT per durable commit on the
/// same server, through the same client path as the ledger ([`twice_ledger_postgres::RawCommits`]).
#[derive(Debug)]
pub struct PostgresRawInserts {
    commits: twice_ledger_postgres::RawCommits,
}

impl PostgresRawInserts {
    pub fn open(url: &twice_ledger_postgres::PostgresUrl) -> Result<PostgresRawInserts, BenchError> {
        Ok(PostgresRawInserts {
            commits: twice_ledger_postgres::RawCommits::open(url).map_err(BenchError::LedgerRefused)?,
        })
    }
}

impl Contender for PostgresRawInserts {
    fn name(&self) -> String {
        "PostgreSQL INSERT+commit".into()
    }

    fn run(&mut self, first: u64, count: u64) -> Result<(), BenchError> {
        for item in first..first + count {
            self.commits.insert(&format!("bench:c{item}"), ARGUMENTS)?;
        }
        Ok(())
    }
}
