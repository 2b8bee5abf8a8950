//! The operator API's listing at growing sizes: one page (50 records) of a tenant's unknown
//! calls after a cursor, read through `Ledger::records` as the API reads it, on ledger files
//! of 2,000, 20,000 and 100,000 records. Every filter combination reads an index (see the
//! test `every_listing_reads_an_index_never_scans_or_sorts_the_table`), so the p99 of a page
//! must not grow with the table; this prints the figures.
//!
//! `cargo bench -p twice-sim --bench listing`

use std::time::Instant;

use rusqlite::{Connection, params};
use twice_sim::ledger::{Ledger, RecordFilter};
use twice_sim::runtime::rules::Status;

const SIZES: [u32; 3] = [2_000, 20_000, 100_000];
const PAGES: usize = 2_000;
const PAGE_LIMIT: u32 = 50;
const TENANTS: [&str; 4] = ["acme", "globex", "initech", "default"];
const STATUSES: [&str; 4] = ["started", "indeterminate", "completed", "failed"];

/// A ledger file holding `count` records spread over tenants, statuses and times, written in
/// one transaction straight into its table (the ledger's own API would fsync each one).
fn ledger_of(folder: &std::path::Path, count: u32) -> Ledger {
    let path = folder.join(format!("listing-{count}.sqlite"));
    drop(Ledger::open(&path).expect("a new ledger"));
    let mut raw = Connection::open(&path).expect("the file opens");
    let transaction = raw.transaction().unwrap();
    {
        let mut insert = transaction
            .prepare(
                "INSERT INTO tool_executions (idempotency_key, tenant, run_id, tool_call_id, tool, side_effect, arguments,
                     status, attempts, result, owner, created_at_ms, updated_at_ms, lease_expires_at_ms)
                 VALUES (?1, ?2, ?3, 'c1', 'issue_credit', 'external', '{}', ?4, 1, NULL, 'w1', ?5, ?5, NULL)",
            )
            .unwrap();
        for index in 0..count {
            let run = format!("run-{index:06}");
            insert
                .execute(params![
                    format!("{run}:c1"),
                    TENANTS[index as usize % TENANTS.len()],
                    run,
                    STATUSES[(index as usize / 7) % STATUSES.len()],
                    1_700_000_000_000_i64 + i64::from(index) * 13 % 1_000_003,
                ])
                .unwrap();
        }
    }
    transaction.commit().unwrap();
    Ledger::open(&path).expect("the filled ledger opens")
}

fn percentile(sorted: &[f64], fraction: f64) -> f64 {
    let index = ((sorted.len() as f64 - 1.0) * fraction).round() as usize;
    sorted[index]
}

fn main() {
    let folder = tempfile::tempdir().expect("a temporary folder");
    println!(
        "records  pages  p50 µs  p99 µs  max µs   (a full page of {PAGE_LIMIT} of a tenant's started calls after a cursor)"
    );
    let mut p99s = Vec::new();
    for count in SIZES {
        let ledger = ledger_of(folder.path(), count);
        // Cursors taken from the rows themselves, each leaving a full page after it, so every
        // size reads the same 50 rows a page and only the table around them grows.
        let all = ledger
            .records(
                RecordFilter::default()
                    .with_tenant("acme")
                    .with_status(Status::Started)
                    .with_limit(twice_sim::ledger::LIST_LIMIT_MAX),
            )
            .expect("the first rows");
        let cursors: Vec<(u64, String)> = all
            .iter()
            .take(all.len().saturating_sub(PAGE_LIMIT as usize))
            .map(|record| (record.updated_at_ms, record.key.to_string()))
            .collect();
        assert!(
            !cursors.is_empty(),
            "{count} records leave a full page after some cursor"
        );
        let mut times = Vec::with_capacity(PAGES);
        // The first pass reads the file's pages into the caches, as a server that has been
        // answering does; the second is measured.
        for pass in 0..2 {
            times.clear();
            for page in 0..PAGES {
                let (after_ms, after_key) = &cursors[(page * 7_919) % cursors.len()];
                let started = Instant::now();
                let records = ledger
                    .records(
                        RecordFilter::default()
                            .with_tenant("acme")
                            .with_status(Status::Started)
                            .with_after((*after_ms, after_key.as_str()))
                            .with_limit(PAGE_LIMIT),
                    )
                    .expect("a page");
                assert_eq!(records.len(), PAGE_LIMIT as usize);
                times.push(started.elapsed().as_secs_f64() * 1e6);
                std::hint::black_box((records, pass));
            }
        }
        times.sort_by(f64::total_cmp);
        let (p50, p99, max) = (
            percentile(&times, 0.5),
            percentile(&times, 0.99),
            times[times.len() - 1],
        );
        println!("{count:>7}  {PAGES:>5}  {p50:>6.0}  {p99:>6.0}  {max:>6.0}");
        p99s.push(p99);
    }
    println!(
        "p99 at {} records / p99 at {} records: {:.2} (1.00 = no growth with the table)",
        SIZES[2],
        SIZES[0],
        p99s[2] / p99s[0]
    );
}
