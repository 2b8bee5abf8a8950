//! Figure 3 with criterion's statistics: one vault scenario (build, run to quiet, verdict),
//! the level's tapes in turn, on one thread, on each ledger store.

use std::path::Path;
use std::time::Duration;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use twice_sim::bench::scenarios::{Scenarios, VAULT_LEVEL_FILE};
use twice_sim::ledger::LedgerStore;

fn vault(criterion: &mut Criterion) {
    let level = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../levels")
        .join(VAULT_LEVEL_FILE);
    let scenarios = Scenarios::load(&level).expect("the vault level and its tapes load");
    let mut group = criterion.benchmark_group("simulator");
    group.throughput(Throughput::Elements(1));
    for store in [LedgerStore::Sqlite, LedgerStore::Memory] {
        group.bench_function(format!("vault_scenario_{store}"), |bencher| {
            bencher.iter_custom(|iterations| {
                let spent = scenarios
                    .play_timed(iterations, store)
                    .expect("every tape gives its expected verdict");
                Duration::from_secs_f64(spent.wall_seconds)
            })
        });
    }
    group.finish();
}

criterion_group!(benches, vault);
criterion_main!(benches);
