//! Figure 4 with criterion's statistics: 1, 2, 4 and 8 `twice-sim bench-worker` processes
//! reserving the same keys on one ledger file. Each sample is a whole contended run on a
//! new file; a duplicate reservation fails the benchmark.

use std::path::Path;
use std::time::Duration;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use twice_sim::bench::contention::{self, Placement};
use twice_sim::ledger_target::LedgerTarget;

/// Keys each process reserves in one sample.
const KEYS: u32 = 100;

fn contended(criterion: &mut Criterion) {
    let executable = Path::new(env!("CARGO_BIN_EXE_twice-sim"));
    let folder = tempfile::Builder::new()
        .prefix("twice-bench-")
        .tempdir()
        .expect("a temporary folder");
    let mut group = criterion.benchmark_group("contention");
    group.sample_size(10).measurement_time(Duration::from_secs(10));
    let mut file = 0_u32;
    for processes in [1_u32, 2, 4, 8] {
        group.throughput(Throughput::Elements(u64::from(processes * KEYS)));
        group.bench_with_input(
            BenchmarkId::new("reservations", processes),
            &processes,
            |bencher, &processes| {
                bencher.iter_custom(|iterations| {
                    let mut spent = Duration::ZERO;
                    for _ in 0..iterations {
                        file += 1;
                        let ledger = LedgerTarget::File(folder.path().join(format!("contention-{file}.sqlite")));
                        let figure = contention::measure(executable, &ledger, processes, KEYS, Placement::Here)
                            .expect("contention runs");
                        assert_eq!(
                            figure.duplicates, 0,
                            "duplicate reservations with {processes} processes"
                        );
                        assert_eq!(figure.unreserved, 0, "lost reservations with {processes} processes");
                        spent += Duration::from_secs_f64(figure.seconds);
                    }
                    spent
                })
            },
        );
    }
    group.finish();
}

criterion_group!(benches, contended);
criterion_main!(benches);
