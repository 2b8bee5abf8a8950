//! What a call costs on this machine, printed under the table beside figures 1 and 5: the CPU
//! a cycle takes (this process's threads, from the same rounds as the figure), the WAL frames a
//! commit writes (a short probe on files of its own), and the bounds those put on the aims.
//!
//! The aims are ratios to one durable commit. Where an fsync costs milliseconds a call's CPU
//! hides behind it; where it costs tens of microseconds (this VM's disk when quiet) the CPU is
//! the cost, and the table alone would not say why an aim is out of reach. So each figure's
//! bound is computed from what was measured in the same run:
//!
//! - figure 1: a cycle makes two commits, each waiting for the disk about as long as a raw
//!   commit waits (its time by the clock less its CPU), plus its own CPU, so its ratio is at
//!   most `raw wall / (2 × raw wait + cycle CPU)` (and the note says how long a cycle did wait
//!   off the CPU: its commits write more pages than a raw one, and may wait longer);
//! - figure 5: the runs' threads need their CPU per call whatever the batching, and the machine
//!   has `cores` cores, so the calls per second are at most `cores / CPU per call`, which as a
//!   multiple of the single commit rate is the most figure 5 can show here.

use std::path::Path;

use serde::Serialize;

use super::group_commit::{GroupFigure, full_call};
use super::report::LedgerFigure;
use super::side_by_side::{Contender, Measured, RawInserts};
use super::{BenchError, ratio};
use twice_world::ledger::Ledger;

/// Calls the WAL probe makes before measuring (the first commits also write the schema's pages).
const PROBE_WARM_UP_CALLS: u64 = 5;
/// Calls the WAL probe measures: 60 commits, about 500 frames, well under the 1,000 frames at
/// which SQLite checkpoints the WAL by itself (a checkpoint would restart the WAL and hide frames).
const PROBE_CALLS: u64 = 30;
/// A WAL file's header, before its first frame.
const WAL_HEADER_BYTES: u64 = 32;
/// Each WAL frame's header, before its page.
const WAL_FRAME_HEADER_BYTES: u64 = 24;

/// WAL frames (each one page) a commit writes, measured on files of the probe's own.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct WalFrames {
    /// The ledger file's page size in bytes.
    pub page_size: u64,
    /// Per ledger commit (a cycle's two commits, averaged).
    pub ledger_per_commit: f64,
    /// Per raw single-row INSERT + commit.
    pub raw_per_commit: f64,
}

/// Frames in the WAL of the database at `path` so far, and its page size.
fn frames_in_wal(path: &Path) -> Result<(u64, u64), BenchError> {
    let sqlite = |error: rusqlite::Error| BenchError::Sqlite {
        path: path.to_path_buf(),
        context: "reading the page size",
        source: error,
    };
    let connection = rusqlite::Connection::open(path).map_err(sqlite)?;
    let page_size: u64 = connection
        .query_row("PRAGMA page_size", [], |row| row.get(0))
        .map_err(sqlite)?;
    let mut wal = path.as_os_str().to_owned();
    wal.push("-wal");
    let bytes = std::fs::metadata(&wal)
        .map_err(|error| BenchError::Io(format!("{}: {error}", Path::new(&wal).display())))?
        .len();
    Ok((
        bytes.saturating_sub(WAL_HEADER_BYTES) / (page_size + WAL_FRAME_HEADER_BYTES),
        page_size,
    ))
}

/// Measures [`WalFrames`] in `folder` (new files `wal-ledger.sqlite`, `wal-raw.sqlite`): the WAL
/// file only grows until a checkpoint, so its growth over a few commits is their frames.
pub fn measure_wal_frames(folder: &Path) -> Result<WalFrames, BenchError> {
    let ledger_path = folder.join("wal-ledger.sqlite");
    let mut ledger = Ledger::open(&ledger_path)?;
    for item in 0..PROBE_WARM_UP_CALLS {
        full_call(&mut ledger, item, "probe")?;
    }
    let (before, page_size) = frames_in_wal(&ledger_path)?;
    for item in PROBE_WARM_UP_CALLS..PROBE_WARM_UP_CALLS + PROBE_CALLS {
        full_call(&mut ledger, item, "probe")?;
    }
    let (after, _) = frames_in_wal(&ledger_path)?;
    let raw_path = folder.join("wal-raw.sqlite");
    let mut raw = RawInserts::open(&raw_path)?;
    raw.run(0, PROBE_WARM_UP_CALLS)?;
    let (raw_before, _) = frames_in_wal(&raw_path)?;
    raw.run(PROBE_WARM_UP_CALLS, 2 * PROBE_CALLS)?;
    let (raw_after, _) = frames_in_wal(&raw_path)?;
    Ok(WalFrames {
        page_size,
        ledger_per_commit: (after - before) as f64 / (2 * PROBE_CALLS) as f64,
        raw_per_commit: (raw_after - raw_before) as f64 / (2 * PROBE_CALLS) as f64,
    })
}

/// `812 µs (CPU 95 µs)`: an item by the clock and on the CPU.
fn per_item(measured: &Measured) -> String {
    let wall = ratio(measured.seconds * 1e6, measured.items as f64);
    match measured.cpu_micros_per_item() {
        Some(cpu) => format!("{wall:.0} µs (CPU {cpu:.0} µs)"),
        None => format!("{wall:.0} µs (CPU unknown)"),
    }
}

/// Figure 1's cost and ceiling on this machine, in words.
pub fn ledger_note(figure: &LedgerFigure, frames: Option<&WalFrames>) -> String {
    let mut note = format!(
        "figure 1, the cost: a cycle {}, a raw commit {}",
        per_item(&figure.ours),
        per_item(&figure.raw)
    );
    if let Some(frames) = frames {
        note.push_str(&format!(
            "; WAL frames per commit ({} B pages): ledger {:.1}, raw {:.1}",
            frames.page_size, frames.ledger_per_commit, frames.raw_per_commit
        ));
    }
    if let (Some(cycle_cpu), Some(raw_cpu)) = (figure.ours.cpu_seconds, figure.raw.cpu_seconds) {
        let cycle_cpu = ratio(cycle_cpu, figure.ours.items as f64);
        let raw_wall = ratio(figure.raw.seconds, figure.raw.items as f64);
        let raw_wait = (raw_wall - ratio(raw_cpu, figure.raw.items as f64)).max(0.0);
        let ceiling = ratio(raw_wall, 2.0 * raw_wait + cycle_cpu);
        note.push_str(&format!(
            "; at this CPU a cycle's ratio is at most {ceiling:.2} here (two commits' waits, {:.0} µs each, plus \
             its CPU)",
            raw_wait * 1e6
        ));
        // The ceiling takes each of a cycle's commits to wait as long as a raw one; a commit
        // that writes more pages waits longer, and this says by how much it did.
        let cycle_wait = (ratio(figure.ours.seconds, figure.ours.items as f64) - cycle_cpu).max(0.0);
        note.push_str(&format!(
            "; measured, a cycle waited {:.0} µs off the CPU",
            cycle_wait * 1e6
        ));
        if raw_wait > 0.0 {
            note.push_str(&format!(
                ", {:.1}x two raw commits' waits",
                cycle_wait / (2.0 * raw_wait)
            ));
        }
    }
    note
}

/// The most figure 5 can show on `cores` cores at the CPU its runs took per call, as a
/// multiple of the single commit rate; `None` without the CPU.
pub fn group_bound(figure: &GroupFigure, cores: usize) -> Option<f64> {
    let cpu_per_call = figure.grouped.cpu_micros_per_item()? / 1e6;
    Some(ratio(ratio(cores as f64, cpu_per_call), figure.raw.per_second))
}

/// Figure 5's cost and bound on this machine, in words. `in_process`: the store does all its
/// work in this process (SQLite); PostgreSQL's server does much of it in processes of its own,
/// whose CPU is not counted, so no bound is claimed from the client's.
pub fn group_note(figure: &GroupFigure, cores: usize, label: &str, in_process: bool) -> String {
    if !in_process {
        return match figure.grouped.cpu_micros_per_item() {
            Some(cpu) => format!(
                "figure 5, {label}: the runs' threads took {cpu:.0} µs of CPU per call in this process (the \
                 server's backends, other processes, not counted; a raw commit {})",
                per_item(&figure.raw)
            ),
            None => format!("figure 5, {label}: the CPU per call is unknown here"),
        };
    }
    match (figure.grouped.cpu_micros_per_item(), group_bound(figure, cores)) {
        (Some(cpu), Some(bound)) => format!(
            "figure 5, {label}: the runs' threads took {cpu:.0} µs of CPU per call (a raw commit {}); {cores} cores \
             at that CPU make at most {} calls/s, {bound:.1}x the single commit rate: the most this build can \
             show on this machine{}",
            per_item(&figure.raw),
            super::report::grouped(ratio(cores as f64 * 1e6, cpu)),
            if bound < figure.aim {
                format!(", below the aim of {:.0}x whatever the batching", figure.aim)
            } else {
                String::new()
            }
        ),
        _ => format!("figure 5, {label}: the CPU per call is unknown here (no /proc/thread-self/schedstat)"),
    }
}
