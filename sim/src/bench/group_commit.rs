//! Figure 5: many concurrent runs in one process on one ledger with group commit, against
//! raw single-row INSERT-and-commit, side by side in rotating rounds ([`super::side_by_side`]).
//!
//! Each of [`RUNS`] threads is one run with its own ledger handle joined to the process's
//! commit group ([`Ledger::open_grouped`]); every item is one full call: the reservation with
//! attempt 1's send fence folded in, then the outcome — two durable writes, each answered only
//! once its batch is committed (so a tool could act on it). The ratio counts calls against
//! single commits: a call is two writes, so the ratio is half the writes-per-fsync gain.

use std::path::Path;

use serde::Serialize;

use super::BenchError;
use super::machine::thread_cpu_seconds;
use super::side_by_side::{ARGUMENTS, Contender, RESULT};
use twice_world::ledger::{GroupSettings, GroupStats, Ledger, Recorded, Reservation, ReserveRequest};
use twice_world::runtime::key::IdempotencyKey;
use twice_world::runtime::rules::{Outcome, ReservationAction, Status};
use twice_world::runtime::tool::SideEffect;

/// Concurrent runs in the process.
pub const RUNS: usize = 64;
/// What the figure aims for: 64 runs' calls per second ÷ single commits per second.
pub const GROUP_RATIO_AIM: f64 = 10.0;

/// One full call on `ledger` with key number `item`: the folded reservation (attempt 1
/// fenced in it), then the completed outcome. Errors name the key.
pub fn full_call(ledger: &mut Ledger, item: u64, owner: &str) -> Result<(), BenchError> {
    let key = IdempotencyKey::per_call("bench", &format!("g{item}"))
        .map_err(|detail| BenchError::Unexpected(format!("g{item}: {detail}")))?;
    let request = ReserveRequest::new(
        &key,
        "bench",
        "c",
        "issue_credit",
        SideEffect::External,
        ARGUMENTS,
        owner,
    )
    .with_tenant("bench");
    let folded = ledger.reserve_and_begin(&request, 1, item)?;
    match (&folded.reservation, folded.attempt_begun) {
        (
            Reservation::Decided {
                action: ReservationAction::RunNew,
                ..
            },
            Some(1),
        ) => {}
        other => {
            return Err(BenchError::Unexpected(format!(
                "{key}: a new key was not reserved with attempt 1 fenced: {other:?}"
            )));
        }
    }
    match ledger.record_outcome(&key, Outcome::Completed, Some(RESULT), owner, 1, item)? {
        Recorded::Recorded(record) if record.status == Status::Completed => Ok(()),
        other => Err(BenchError::Unexpected(format!(
            "{key}: the outcome was not recorded: {other:?}"
        ))),
    }
}

/// [`RUNS`] runs of one process on one commit group.
#[derive(Debug)]
pub struct GroupedRuns {
    handles: Vec<Ledger>,
    name: String,
    /// CPU seconds the runs' threads spent since [`Contender::other_threads_cpu_seconds`] last
    /// took them (`None` once a thread could not tell).
    threads_cpu_seconds: Option<f64>,
}

impl GroupedRuns {
    /// A new SQLite file ledger with a commit group, and a handle per run.
    pub fn open(path: &Path, runs: usize) -> Result<GroupedRuns, BenchError> {
        let ledger = Ledger::open_grouped(path, GroupSettings::default())?;
        GroupedRuns::on(ledger, runs, format!("{runs} runs, one process, group commit"))
    }

    /// The runs on a grouped ledger opened elsewhere (the PostgreSQL store).
    pub fn on(ledger: Ledger, runs: usize, name: String) -> Result<GroupedRuns, BenchError> {
        let handles = (0..runs.max(1))
            .map(|_| ledger.connect_again())
            .collect::<Result<Vec<_>, _>>()?;
        Ok(GroupedRuns {
            handles,
            name,
            threads_cpu_seconds: Some(0.0),
        })
    }

    /// What the group has committed so far.
    pub fn stats(&self) -> Option<GroupStats> {
        self.handles.first().and_then(Ledger::group_stats)
    }
}

impl Contender for GroupedRuns {
    fn name(&self) -> String {
        self.name.clone()
    }

    /// Items `first..first + count`, dealt out to the runs round-robin, all at once.
    fn run(&mut self, first: u64, count: u64) -> Result<(), BenchError> {
        let runs = self.handles.len() as u64;
        let threads_cpu_seconds = std::thread::scope(|scope| {
            let threads: Vec<_> = self
                .handles
                .iter_mut()
                .enumerate()
                .map(|(run, ledger)| {
                    scope.spawn(move || {
                        let cpu_before = thread_cpu_seconds();
                        let owner = format!("run{run}");
                        let mut item = first + run as u64;
                        while item < first + count {
                            full_call(ledger, item, &owner)?;
                            item += runs;
                        }
                        Ok::<_, BenchError>(
                            cpu_before
                                .zip(thread_cpu_seconds())
                                .map(|(before, after)| after - before),
                        )
                    })
                })
                .collect();
            threads.into_iter().try_fold(Some(0.0), |total: Option<f64>, thread| {
                let spent = thread
                    .join()
                    .map_err(|_| BenchError::Unexpected("a run's thread panicked".into()))??;
                Ok::<_, BenchError>(total.zip(spent).map(|(total, spent)| total + spent))
            })
        })?;
        self.threads_cpu_seconds = self
            .threads_cpu_seconds
            .zip(threads_cpu_seconds)
            .map(|(total, spent)| total + spent);
        Ok(())
    }

    fn other_threads_cpu_seconds(&mut self) -> f64 {
        // Taken once: a run that could not tell leaves `None`, and the figure then has no CPU.
        self.threads_cpu_seconds.replace(0.0).unwrap_or(f64::NAN)
    }
}

/// Figure 5 on one store.
#[derive(Clone, Debug, Serialize)]
pub struct GroupFigure {
    pub grouped: super::side_by_side::Measured,
    /// The single-commit rate it is measured against (same rounds).
    pub raw: super::side_by_side::Measured,
    pub runs: usize,
    /// Calls per second of all runs ÷ single commits per second.
    pub ratio: f64,
    pub ratio_spread: Option<super::Spread>,
    pub aim: f64,
    /// Batches committed and writes in them (writes ÷ batches: writes per fsync).
    pub stats: Option<GroupStats>,
    pub other_work: Option<super::machine::OtherWork>,
}

impl GroupFigure {
    /// Writes per committed batch, on average.
    pub fn writes_per_batch(&self) -> Option<f64> {
        self.stats
            .filter(|stats| stats.batches > 0)
            .map(|stats| stats.members as f64 / stats.batches as f64)
    }
}

/// Measures `grouped` against `raw` in `rounds` rounds of `items` calls (and inserts) each.
pub fn measure(
    raw: &mut dyn Contender,
    grouped: &mut GroupedRuns,
    items: u64,
    rounds: u64,
) -> Result<GroupFigure, BenchError> {
    let mut figures = measure_all(raw, &mut [grouped], items, rounds)?;
    Ok(figures.remove(0))
}

/// Each of `runs` against `raw`, all in the same rotating rounds.
fn measure_all(
    raw: &mut dyn Contender,
    runs: &mut [&mut GroupedRuns],
    items: u64,
    rounds: u64,
) -> Result<Vec<GroupFigure>, BenchError> {
    let started = super::machine::CpuCounters::now();
    let mut contenders: Vec<&mut dyn Contender> = vec![raw];
    contenders.extend(runs.iter_mut().map(|runs| &mut **runs as &mut dyn Contender));
    let mut measured = super::side_by_side::measure(&mut contenders, items, rounds)?.into_iter();
    let raw = measured.next().expect("raw inserts were measured");
    let other_work = super::machine::OtherWork::between(started, super::machine::CpuCounters::now());
    Ok(runs
        .iter()
        .zip(measured)
        .map(|(runs, grouped)| GroupFigure {
            ratio: super::ratio(grouped.per_second, raw.per_second),
            ratio_spread: super::Spread::of_ratios(&grouped.round_rates, &raw.round_rates),
            grouped,
            raw: raw.clone(),
            runs: runs.handles.len(),
            aim: GROUP_RATIO_AIM,
            stats: runs.stats(),
            other_work,
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grouped_runs_make_every_call_durable_and_share_batches() {
        let folder = tempfile::tempdir().unwrap();
        let path = folder.path().join("grouped.sqlite");
        let mut runs = GroupedRuns::open(&path, 8).unwrap();
        runs.run(0, 200).unwrap();
        runs.run(200, 3).unwrap();
        let stats = runs.stats().unwrap();
        assert_eq!(stats.members, 2 * 203, "{stats:?}");
        let records = Ledger::open(&path).unwrap().all_records().unwrap();
        assert_eq!(records.len(), 203);
        assert!(
            records
                .iter()
                .all(|record| record.status == Status::Completed && record.attempts == 1)
        );
    }
}
