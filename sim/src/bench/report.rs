//! What `twice-sim bench` measured, and the table it prints: one row per figure, what was
//! measured against what, the ratio with its spread over the rounds, the aim, and how busy
//! the machine was meanwhile.

use std::path::PathBuf;

use serde::Serialize;

use super::contention::ContentionFigure;
use super::group_commit::GroupFigure;
use super::machine::OtherWork;
use super::side_by_side::Measured;
use super::{BenchPlan, CPU_SECONDS_MIN, ratio};
use twice_world::ledger::LedgerStore;

/// How a ratio moved over the rounds it was measured in.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Spread {
    pub rounds: usize,
    pub min: f64,
    pub median: f64,
    pub max: f64,
}

impl Spread {
    /// The spread of `values` (one per round); `None` for none.
    pub fn of(values: &[f64]) -> Option<Spread> {
        let mut sorted: Vec<f64> = values.iter().copied().filter(|value| value.is_finite()).collect();
        sorted.sort_by(f64::total_cmp);
        let (&min, &max) = (sorted.first()?, sorted.last()?);
        let middle = sorted.len() / 2;
        let median = if sorted.len().is_multiple_of(2) {
            (sorted[middle - 1] + sorted[middle]) / 2.0
        } else {
            sorted[middle]
        };
        Some(Spread {
            rounds: sorted.len(),
            min,
            median,
            max,
        })
    }

    /// The ratio of two contenders' rates, round by round.
    pub(super) fn of_ratios(numerators: &[f64], denominators: &[f64]) -> Option<Spread> {
        let ratios: Vec<f64> = numerators
            .iter()
            .zip(denominators)
            .map(|(numerator, denominator)| ratio(*numerator, *denominator))
            .collect();
        Spread::of(&ratios)
    }

    /// `0.48 / 0.50 / 0.51 (10 rounds)`, with `x` after each value when `times` is set.
    fn describe(&self, times: bool) -> String {
        let unit = if times { "x" } else { "" };
        format!(
            "{:.2}{unit} / {:.2}{unit} / {:.2}{unit} ({})",
            self.min,
            self.median,
            self.max,
            twice_world::text::counted(self.rounds as u64, "round", "rounds")
        )
    }
}

/// Figure 1.
#[derive(Clone, Debug, Serialize)]
pub struct LedgerFigure {
    pub ours: Measured,
    pub raw: Measured,
    /// Ledger cycles per second ÷ raw inserts per second.
    pub ratio: f64,
    /// The same ratio in each round.
    pub ratio_spread: Option<Spread>,
    pub aim: f64,
    /// Other work on the machine while figures 1 and 2 were measured (they take turns).
    pub other_work: Option<OtherWork>,
}

/// Figure 2.
#[derive(Clone, Debug, Serialize)]
pub struct PeerFigure {
    /// The peer's name and version, or why it was not measured.
    pub peer: String,
    pub measured: Option<Measured>,
    /// Our cycles per second ÷ the peer's: above 1, ours is faster.
    pub ratio: Option<f64>,
    /// The same ratio in each round.
    pub ratio_spread: Option<Spread>,
    /// What the ratio aims for.
    pub aim: f64,
}

/// Figure 3, on one ledger store.
#[derive(Clone, Debug, Serialize)]
pub struct SimulatorFigure {
    /// Where the scenarios' ledgers lived.
    pub store: LedgerStore,
    pub level: String,
    pub tapes: Vec<PathBuf>,
    pub scenarios: u64,
    /// By the clock.
    pub seconds: f64,
    /// On the CPU (this thread's run time), when the system tells it.
    pub cpu_seconds: Option<f64>,
    /// Scenarios per second by the clock.
    pub per_second: f64,
    /// Scenarios per second of CPU time: what one core does when it is not shared. `None`
    /// without CPU time, or with less than [`CPU_SECONDS_MIN`] of it (too short to time).
    pub per_cpu_second: Option<f64>,
    pub aim_per_second: f64,
    /// Scenarios per CPU second (or per second by the clock, without that) ÷ the aim.
    pub ratio: f64,
    /// The same ratio in each round, timed as `ratio` is; `None` when a round was too short to
    /// time on the CPU while the whole was not.
    pub ratio_spread: Option<Spread>,
    pub other_work: Option<OtherWork>,
}

/// Figure 4: one process count against one process.
#[derive(Clone, Debug, Serialize)]
pub struct ContentionRow {
    #[serde(flatten)]
    pub figure: ContentionFigure,
    /// Reservations per second ÷ those of one process alone.
    pub ratio: f64,
}

#[derive(Clone, Debug, Serialize)]
pub struct ContentionReport {
    pub alone: ContentionFigure,
    pub contended: Vec<ContentionRow>,
    /// Other work on the machine during every contention run (each count is run once).
    pub other_work: Option<OtherWork>,
}

/// Figure 1 on PostgreSQL (`--ledger postgres://…`): its cycles against its own single
/// commits, in the same rounds as the SQLite file's.
#[derive(Clone, Debug, Serialize)]
pub struct PostgresCycles {
    /// The server, its password hidden.
    pub server: String,
    /// Reserve+fence + complete cycles, measured in the same rounds as the SQLite file's.
    pub cycles: Measured,
    /// Single-row INSERT + commit on the same server, in the same rounds.
    pub raw: Measured,
    /// PostgreSQL's cycles per second ÷ its single commits per second (0.5 is the ceiling).
    pub ratio_to_raw: f64,
    /// PostgreSQL's cycles per second ÷ the SQLite file ledger's.
    pub ratio_to_sqlite: f64,
    /// `ratio_to_raw`, round by round.
    pub ratio_spread: Option<Spread>,
}

/// Figure 4 on PostgreSQL (`--ledger postgres://…`).
#[derive(Clone, Debug, Serialize)]
pub struct PostgresContention {
    /// One process alone on the PostgreSQL ledger.
    pub alone: ContentionFigure,
    /// [`super::POSTGRES_CONTENTION_PROCESSES`] processes on it.
    pub contended: ContentionRow,
    /// The hosts they were spread over (0: this machine, as they are).
    pub hosts: u32,
    /// Why there were no hosts, when there were none.
    pub hosts_note: Option<String>,
    /// Other work on the machine during the PostgreSQL contention runs.
    pub other_work: Option<OtherWork>,
}

/// Everything `twice-sim bench` measured; a figure not asked for (`--figures`) is `None`.
#[derive(Clone, Debug, Serialize)]
pub struct BenchReport {
    pub plan: BenchPlan,
    pub cores: usize,
    pub folder: PathBuf,
    pub ledger: Option<LedgerFigure>,
    pub peer: Option<PeerFigure>,
    /// Figure 1 on PostgreSQL, with `--ledger postgres://…`.
    pub postgres_cycles: Option<PostgresCycles>,
    /// Figure 5 on the SQLite file, and on PostgreSQL with `--ledger postgres://…`.
    pub group: Option<GroupFigure>,
    pub postgres_group: Option<GroupFigure>,
    /// Figure 5 on PostgreSQL without our group: a connection per run, the server's own group commit.
    pub postgres_connections: Option<GroupFigure>,
    /// WAL frames a commit writes (measured with figure 1).
    pub wal_frames: Option<super::cost::WalFrames>,
    /// Figure 3 on the memory store (the explorer's): the one measured against the aim.
    pub simulator: Option<SimulatorFigure>,
    /// Figure 3 on SQLite (replays' and the game's), the same tapes in the same run.
    pub simulator_sqlite: Option<SimulatorFigure>,
    pub contention: Option<ContentionReport>,
    /// Figure 4 on PostgreSQL, with `--ledger postgres://…`.
    pub postgres_contention: Option<PostgresContention>,
    /// Keys reserved to run by more than one process (or with more than one row), in all
    /// contention runs. Must be zero.
    pub duplicates: u64,
    /// Keys no process was told to run, in all contention runs. Must be zero.
    pub unreserved: u64,
    /// Other work on the machine during the whole run.
    pub other_work: Option<OtherWork>,
}

/// Columns of the table.
const COLUMNS: usize = 7;
/// One line of the table.
type Row = [String; COLUMNS];

/// How busy the machine was while a figure was measured.
fn machine(other_work: Option<OtherWork>) -> String {
    other_work.map_or_else(|| "too short to tell".to_owned(), |other| other.describe())
}

/// A ratio's spread over its rounds, or `-` without rounds.
fn spread(spread: Option<Spread>, times: bool) -> String {
    spread.map_or_else(|| "-".to_owned(), |spread| spread.describe(times))
}

/// `met` or `BELOW`, as a ratio meets its aim or not.
fn verdict(met: bool) -> &'static str {
    if met { "met" } else { "BELOW" }
}

/// Figure 5's row: calls per second of the grouped runs against single commits.
fn group_row(figure: &GroupFigure) -> Row {
    let per_batch = figure
        .writes_per_batch()
        .map_or_else(String::new, |writes| format!(", {writes:.1} writes/fsync"));
    [
        format!("5 {}", figure.grouped.name),
        format!("{} calls/s{per_batch}", grouped(figure.grouped.per_second)),
        format!("{} {}/s", figure.raw.name, grouped(figure.raw.per_second)),
        format!("{:.1}x", figure.ratio),
        spread(figure.ratio_spread, true),
        format!("≥ {:.0}x: {}", figure.aim, verdict(figure.ratio >= figure.aim)),
        machine(figure.other_work),
    ]
}

/// `1234567.8` → `1,234,568`.
pub fn grouped(value: f64) -> String {
    let digits = format!("{:.0}", value.max(0.0));
    let mut out = String::new();
    for (index, digit) in digits.chars().enumerate() {
        if index > 0 && (digits.len() - index) % 3 == 0 {
            out.push(',');
        }
        out.push(digit);
    }
    out
}

/// The report as a table, one row per figure: what was measured, against what, the ratio with
/// its spread over the rounds, the aim, and how busy the machine was meanwhile.
pub fn table(report: &BenchReport) -> String {
    // What a cell has no room for, said once under the table.
    let mut notes: Vec<String> = Vec::new();
    let mut rows: Vec<Row> = vec![[
        "figure".into(),
        "measured".into(),
        "against".into(),
        "ratio".into(),
        "per round: min / median / max".into(),
        "aim".into(),
        "machine meanwhile".into(),
    ]];
    if let Some(ledger) = &report.ledger {
        rows.extend(ledger_rows(ledger, report.postgres_cycles.as_ref()));
    }
    if let (Some(ledger), Some(peer)) = (&report.ledger, &report.peer) {
        rows.push(peer_row(ledger, peer, &mut notes));
    }
    rows.extend(
        (report.group.iter())
            .chain(report.postgres_group.as_ref())
            .chain(report.postgres_connections.as_ref())
            .map(group_row),
    );
    for simulator in report.simulator_sqlite.iter().chain(report.simulator.as_ref()) {
        rows.push(simulator_row(simulator, &mut notes));
    }
    if let Some(contention) = &report.contention {
        rows.extend(contention_rows(contention));
    }
    if let Some(postgres) = &report.postgres_contention {
        rows.push(postgres_contention_row(postgres));
    }
    if let Some(ledger) = &report.ledger {
        notes.push(super::cost::ledger_note(ledger, report.wal_frames.as_ref()));
    }
    for (group, label, in_process) in [
        (&report.group, "SQLite", true),
        (&report.postgres_group, "PostgreSQL, our group", false),
        (&report.postgres_connections, "PostgreSQL, a connection each", false),
    ] {
        notes.extend(
            group
                .iter()
                .map(|group| super::cost::group_note(group, report.cores, label, in_process)),
        );
    }
    let skipped: Vec<&str> = [
        (report.ledger.is_none(), "1 and 2"),
        (report.simulator.is_none(), "3"),
        (report.contention.is_none(), "4"),
        (report.group.is_none(), "5"),
    ]
    .into_iter()
    .filter_map(|(skipped, figures)| skipped.then_some(figures))
    .collect();
    if !skipped.is_empty() {
        notes.push(format!("not measured in this run (--figures): {}", skipped.join(", ")));
    }
    let mut out = format!(
        "twice-sim bench ({}; {} cores; files in {})\n",
        if report.plan.quick {
            "quick: indicative only"
        } else {
            "full"
        },
        report.cores,
        report.folder.display()
    );
    out.push_str(&format!(
        "{} cycles in {}; {} scenarios; {} keys per contention run\n\n",
        report.plan.cycles,
        twice_world::text::counted(report.plan.rounds, "round", "rounds"),
        report.plan.scenarios,
        report.plan.keys
    ));
    out.push_str(&aligned(&rows));
    out.push_str(&format!(
        "\nduplicate reservations: {}; lost reservations: {}\n",
        report.duplicates, report.unreserved
    ));
    if let Some(server) = &report.plan.postgres {
        out.push_str(&format!("PostgreSQL: {}", server.redacted()));
        if let Some(note) = report
            .postgres_contention
            .as_ref()
            .and_then(|postgres| postgres.hosts_note.as_ref())
        {
            out.push_str(&format!("; contention {note}"));
        }
        out.push('\n');
    }
    for note in &notes {
        out.push_str(note);
        out.push('\n');
    }
    out.push_str(&machine_note(report));
    out
}

/// The rows, each column as wide as its widest cell.
fn aligned(rows: &[Row]) -> String {
    let widths: Vec<usize> = (0..COLUMNS)
        .map(|column| rows.iter().map(|row| row[column].chars().count()).max().unwrap_or(0))
        .collect();
    let mut out = String::new();
    for row in rows {
        let cells: Vec<String> = row
            .iter()
            .zip(&widths)
            .map(|(cell, width)| format!("{cell}{}", " ".repeat(width - cell.chars().count())))
            .collect();
        out.push_str(cells.join("  ").trim_end());
        out.push('\n');
    }
    out
}

/// Figure 1 on the SQLite file, and on PostgreSQL beside it.
fn ledger_rows(ledger: &LedgerFigure, postgres: Option<&PostgresCycles>) -> Vec<Row> {
    let mut rows = vec![[
        "1 ledger: reserve+fence + complete".into(),
        format!("{} cycles/s", grouped(ledger.ours.per_second)),
        format!("{} {}/s", ledger.raw.name, grouped(ledger.raw.per_second)),
        format!("{:.2}", ledger.ratio),
        spread(ledger.ratio_spread, false),
        format!(
            "≥ {:.2} (ceiling 0.50): {}",
            ledger.aim,
            verdict(ledger.ratio >= ledger.aim)
        ),
        machine(ledger.other_work),
    ]];
    if let Some(postgres) = postgres {
        rows.push([
            "1 ledger on PostgreSQL: reserve+fence + complete".into(),
            format!(
                "{} cycles/s ({:.2}x the SQLite file's)",
                grouped(postgres.cycles.per_second),
                postgres.ratio_to_sqlite
            ),
            format!("{} {}/s", postgres.raw.name, grouped(postgres.raw.per_second)),
            format!("{:.2}", postgres.ratio_to_raw),
            spread(postgres.ratio_spread, false),
            format!(
                "≥ {:.2} (ceiling 0.50): {}",
                ledger.aim,
                verdict(postgres.ratio_to_raw >= ledger.aim)
            ),
            machine(ledger.other_work),
        ]);
    }
    rows
}

/// Figure 2 beside figure 1, or why it was not measured (in `notes`).
fn peer_row(ledger: &LedgerFigure, peer: &PeerFigure, notes: &mut Vec<String>) -> Row {
    match (&peer.measured, peer.ratio) {
        (Some(measured), Some(ratio)) => [
            format!("2 peer: {}", peer.peer),
            format!("{} cycles/s", grouped(measured.per_second)),
            format!("twice ledger {} cycles/s", grouped(ledger.ours.per_second)),
            format!("{ratio:.2}x"),
            spread(peer.ratio_spread, true),
            format!("twice ≥ {:.0}x the peer: {}", peer.aim, verdict(ratio >= peer.aim)),
            machine(ledger.other_work),
        ],
        _ => {
            notes.push(format!("figure 2: {}", peer.peer));
            [
                "2 peer".into(),
                "not measured (below)".into(),
                "-".into(),
                "-".into(),
                "-".into(),
                "-".into(),
                "-".into(),
            ]
        }
    }
}

/// Figure 3 on one store; what its timing could not do goes to `notes`.
fn simulator_row(simulator: &SimulatorFigure, notes: &mut Vec<String>) -> Row {
    let measured = match (simulator.per_cpu_second, simulator.cpu_seconds) {
        (Some(per_cpu_second), _) => format!(
            "{} scenarios/CPU-s ({}/s by the clock)",
            grouped(per_cpu_second),
            grouped(simulator.per_second)
        ),
        (None, Some(cpu_seconds)) => {
            notes.push(format!(
                "figure 3, {} store: {:.0} ms on the CPU is too short to time there (under {:.0} ms: the \
                 scheduler counts in ticks), so it is measured by the clock; give more --scenarios",
                simulator.store,
                cpu_seconds * 1000.0,
                CPU_SECONDS_MIN * 1000.0
            ));
            format!(
                "{} scenarios/s by the clock (CPU: too short)",
                grouped(simulator.per_second)
            )
        }
        (None, None) => format!("{} scenarios/s by the clock", grouped(simulator.per_second)),
    };
    if simulator.per_cpu_second.is_some() && simulator.ratio_spread.is_none() {
        notes.push(format!(
            "figure 3, {} store: the whole is timed on the CPU but its rounds are too short to be, one by \
             one (under {:.0} ms each), so it has no spread; give more --scenarios",
            simulator.store,
            CPU_SECONDS_MIN * 1000.0
        ));
    }
    [
        format!(
            "3 simulator: {} scenarios, 1 thread, {} store",
            simulator.level, simulator.store
        ),
        measured,
        format!("aim {}/s", grouped(simulator.aim_per_second)),
        format!("{:.2}", simulator.ratio),
        spread(simulator.ratio_spread, false),
        format!("≥ 1.00: {}", verdict(simulator.ratio >= 1.0)),
        machine(simulator.other_work),
    ]
}

/// Figure 4's verdict on one run: no key reserved twice, none lost.
fn counted(figure: &ContentionFigure) -> String {
    format!(
        "{} duplicates, {} lost: {}",
        figure.duplicates,
        figure.unreserved,
        if figure.duplicates == 0 && figure.unreserved == 0 {
            "ok"
        } else {
            "FAILED"
        }
    )
}

/// Figure 4: each process count on the SQLite file.
fn contention_rows(contention: &ContentionReport) -> Vec<Row> {
    let alone = &contention.alone;
    contention
        .contended
        .iter()
        .map(|row| {
            let figure = &row.figure;
            [
                format!("4 contention: {} processes", figure.processes),
                format!("{} reservations/s", grouped(figure.reservations_per_second)),
                format!("1 process {}/s", grouped(alone.reservations_per_second)),
                format!("{:.2}", row.ratio),
                "- (one run each)".into(),
                counted(figure),
                machine(contention.other_work),
            ]
        })
        .collect()
}

/// Figure 4 on PostgreSQL.
fn postgres_contention_row(postgres: &PostgresContention) -> Row {
    let figure = &postgres.contended.figure;
    [
        format!(
            "4 contention on PostgreSQL: {} processes{}",
            figure.processes,
            if postgres.hosts > 0 {
                format!(" on {} hosts", postgres.hosts)
            } else {
                " on this machine".into()
            }
        ),
        format!("{} reservations/s", grouped(figure.reservations_per_second)),
        format!("1 process {}/s", grouped(postgres.alone.reservations_per_second)),
        format!("{:.2}", postgres.contended.ratio),
        "- (one run each)".into(),
        counted(figure),
        machine(postgres.other_work),
    ]
}

/// What the reader should make of the figures, given how busy the machine was.
fn machine_note(report: &BenchReport) -> String {
    let figures_on_a_busy_machine = [
        report.ledger.as_ref().and_then(|figure| figure.other_work),
        report.group.as_ref().and_then(|figure| figure.other_work),
        report.postgres_group.as_ref().and_then(|figure| figure.other_work),
        report
            .postgres_connections
            .as_ref()
            .and_then(|figure| figure.other_work),
        report.simulator_sqlite.as_ref().and_then(|figure| figure.other_work),
        report.simulator.as_ref().and_then(|figure| figure.other_work),
        report.contention.as_ref().and_then(|figure| figure.other_work),
        report.postgres_contention.as_ref().and_then(|figure| figure.other_work),
    ]
    .iter()
    .flatten()
    .filter(|other| other.busy)
    .count() as u64;
    let advice = "these figures are noise as much as result: run again on a quiet machine, and trust a ratio \
                  only where its rounds agree";
    let busy_figures = twice_world::text::counted(figures_on_a_busy_machine, "figure", "figures");
    match report.other_work {
        None => {
            "the machine: how busy it was is unknown (no /proc here, or too short a run); read the spreads\n".to_owned()
        }
        Some(other) if other.busy => format!(
            "the machine was BUSY: other work took {:.0}% of the {} cores over the run; {advice}\n",
            other.share_of_machine * 100.0,
            report.cores,
        ),
        Some(other) if figures_on_a_busy_machine > 0 => format!(
            "the machine was busy during {busy_figures} (marked BUSY; {:.0}% of the {} cores over the whole run): \
             {advice}\n",
            other.share_of_machine * 100.0,
            report.cores,
        ),
        Some(other) => format!(
            "the machine was quiet: other work took {:.0}% of the {} cores over the run\n",
            other.share_of_machine * 100.0,
            report.cores
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_spread_is_the_least_the_middle_and_the_most_of_its_rounds() {
        let spread = Spread::of(&[6.6, 0.85, 6.2]).expect("three rounds");
        assert_eq!(
            (spread.rounds, spread.min, spread.median, spread.max),
            (3, 0.85, 6.2, 6.6)
        );
        assert_eq!(spread.describe(true), "0.85x / 6.20x / 6.60x (3 rounds)");
        let even = Spread::of(&[4.0, 1.0, 2.0, 3.0]).expect("four rounds");
        assert_eq!(even.median, 2.5);
        assert_eq!(Spread::of(&[]), None);
        let one = Spread::of_ratios(&[10.0], &[4.0]).expect("one round");
        assert_eq!(one.describe(false), "2.50 / 2.50 / 2.50 (1 round)");
    }
}
