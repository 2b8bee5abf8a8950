//! Figure 5 with criterion's statistics: a full call (the folded reservation, then the
//! outcome) by one run alone on a file ledger, and by each of 64 concurrent runs of one
//! process on a commit group, per call; beside one raw single-row INSERT-and-commit on the same
//! SQLite settings. `twice-sim bench` prints the ratio; this gives each one's distribution.

use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use twice_sim::bench::group_commit::{GroupedRuns, RUNS};
use twice_sim::bench::side_by_side::{Contender, LedgerCycles, RawInserts};

/// Runs `iterations` items of a contender, each with a new key, and times them.
fn timed(next: &mut u64, iterations: u64, contender: &mut dyn Contender) -> Duration {
    let started = Instant::now();
    contender.run(*next, iterations).expect("the contender runs");
    *next += iterations;
    started.elapsed()
}

fn group_commit(criterion: &mut Criterion) {
    let folder = tempfile::Builder::new()
        .prefix("twice-bench-")
        .tempdir()
        .expect("a temporary folder");
    let mut raw = RawInserts::open(&folder.path().join("raw.sqlite")).expect("raw file opens");
    let mut alone = LedgerCycles::open(&folder.path().join("ledger.sqlite")).expect("ledger opens");
    let mut grouped = GroupedRuns::open(&folder.path().join("grouped.sqlite"), RUNS).expect("grouped ledger opens");

    let mut group = criterion.benchmark_group("group_commit");
    // Every item is one or more fsyncs: fewer, longer samples keep the run to a minute.
    group.sample_size(20).measurement_time(Duration::from_secs(8));
    group.throughput(Throughput::Elements(1));
    let contenders: [(&str, &mut dyn Contender); 3] = [
        ("raw_insert_commit", &mut raw),
        ("one_run_full_call", &mut alone),
        ("64_runs_full_call", &mut grouped),
    ];
    for (name, contender) in contenders {
        let mut next = 0;
        group.bench_function(name, |bencher| {
            bencher.iter_custom(|iterations| timed(&mut next, iterations, contender))
        });
    }
    group.finish();
}

criterion_group!(benches, group_commit);
criterion_main!(benches);
