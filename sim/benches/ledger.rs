//! Figures 1 and 2 with criterion's statistics: one reserve + complete cycle on a file
//! ledger, one raw single-row INSERT-and-commit on the same SQLite settings, and the same
//! cycle through the `agent-effects` peer (behind the `peer-benchmark` feature: the product never links it).
//! `twice-sim bench` prints the ratios; this gives each one's distribution.

use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use twice_sim::bench::side_by_side::{ARGUMENTS, Contender, LedgerCycles, RESULT, RawInserts};

// The peer's driver is shared with `twice-sim bench --features peer-benchmark`, word for word.
#[allow(dead_code)]
#[path = "../src/bench/peer.rs"]
mod peer;

/// Runs `iterations` items of a contender, each with a new key, and times them.
fn timed(next: &mut u64, iterations: u64, mut run: impl FnMut(u64, u64)) -> Duration {
    let started = Instant::now();
    run(*next, iterations);
    *next += iterations;
    started.elapsed()
}

fn cycles(criterion: &mut Criterion) {
    let folder = tempfile::Builder::new()
        .prefix("twice-bench-")
        .tempdir()
        .expect("a temporary folder");
    let mut raw = RawInserts::open(&folder.path().join("raw.sqlite")).expect("raw file opens");
    let mut ours = LedgerCycles::open(&folder.path().join("ledger.sqlite")).expect("ledger opens");
    let mut theirs = peer::PeerCycles::open(&folder.path().join("peer.sqlite")).expect("peer store opens");

    let mut group = criterion.benchmark_group("ledger_cycle");
    // Every item is one or more fsyncs: fewer, longer samples keep the run to a minute.
    group.sample_size(20).measurement_time(Duration::from_secs(8));
    group.throughput(Throughput::Elements(1));
    let mut next = 0;
    group.bench_function("raw_insert_commit", |bencher| {
        bencher.iter_custom(|iterations| {
            timed(&mut next, iterations, |first, count| {
                raw.run(first, count).expect("raw inserts");
            })
        })
    });
    let mut next = 0;
    group.bench_function("twice_reserve_complete", |bencher| {
        bencher.iter_custom(|iterations| {
            timed(&mut next, iterations, |first, count| {
                ours.run(first, count).expect("ledger cycles");
            })
        })
    });
    let mut next = 0;
    group.bench_function("agent_effects_cycle", |bencher| {
        bencher.iter_custom(|iterations| {
            timed(&mut next, iterations, |first, count| {
                theirs.run(first, count, ARGUMENTS, RESULT).expect("peer cycles");
            })
        })
    });
    group.finish();
}

criterion_group!(benches, cycles);
criterion_main!(benches);
