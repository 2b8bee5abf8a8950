//! How busy the machine was with work other than the benchmark's, while a figure was measured.
//!
//! A ratio measured side by side survives a slow spell better than an absolute figure, but not
//! every spell: on a loaded machine the peer ratio once read 0.85×, on an idle one 6.2–6.6×.
//! So the report says, for each figure, how much of the machine's CPU time went to other
//! processes meanwhile (the machine's busy time from `/proc/stat`, less this process's and its
//! reaped children's from `/proc/self/stat`), and calls the machine busy above
//! [`BUSY_SHARE`]. Both files count in the same clock ticks, so no tick rate is assumed.
//! Elsewhere than Linux nothing is known and nothing is claimed.

use serde::Serialize;

/// Other work above this share of all cores' time makes a figure "measured on a busy machine".
pub const BUSY_SHARE: f64 = 0.25;
/// The fewest clock ticks (all cores together) a window must span for a share to mean anything:
/// the counters move in ticks of 10 ms per core, so a shorter window reads 0% or 100% by chance.
/// 100 ticks are half a second on 2 cores.
pub const WINDOW_TICKS_MIN: u64 = 100;

/// CPU time counters at one moment, in clock ticks.
#[derive(Clone, Copy, Debug)]
pub struct CpuCounters {
    /// All cores: time spent on anything but idling (steal included: a hypervisor's other guests).
    machine_busy_ticks: u64,
    /// All cores: every tick, busy or idle.
    machine_total_ticks: u64,
    /// This process and its children that have been waited for.
    own_ticks: u64,
    /// The one-minute load average (`/proc/loadavg`): how many tasks wanted a core.
    load_average: Option<f64>,
}

impl CpuCounters {
    /// The counters now, or `None` where the system does not publish them.
    pub fn now() -> Option<CpuCounters> {
        let stat = std::fs::read_to_string("/proc/stat").ok()?;
        let own = std::fs::read_to_string("/proc/self/stat").ok()?;
        let load = std::fs::read_to_string("/proc/loadavg").ok();
        parse(&stat, &own).map(|counters| CpuCounters {
            load_average: load.as_deref().and_then(parse_load_average),
            ..counters
        })
    }
}

/// The first field of `/proc/loadavg`: the load average over the last minute.
fn parse_load_average(loadavg: &str) -> Option<f64> {
    loadavg.split_whitespace().next()?.parse().ok()
}

/// This thread's time on a CPU, from `/proc/thread-self/schedstat` (nanoseconds, first field),
/// where the system publishes it.
pub fn thread_cpu_seconds() -> Option<f64> {
    let text = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    let nanoseconds: u64 = text.split_whitespace().next()?.parse().ok()?;
    Some(nanoseconds as f64 / 1e9)
}

/// What other work took while a figure was measured.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct OtherWork {
    /// Other processes' CPU time ÷ all cores' time, 0 to 1.
    pub share_of_machine: f64,
    /// `share_of_machine` above [`BUSY_SHARE`].
    pub busy: bool,
    /// The one-minute load average when the figure began and when it ended (this process's
    /// own threads count in it too), where the system publishes it.
    pub load_before: Option<f64>,
    pub load_after: Option<f64>,
}

impl OtherWork {
    /// What other work took between `before` and `after`; `None` when either is unknown or the
    /// window is shorter than [`WINDOW_TICKS_MIN`].
    pub fn between(before: Option<CpuCounters>, after: Option<CpuCounters>) -> Option<OtherWork> {
        let (before, after) = (before?, after?);
        let total = after.machine_total_ticks.checked_sub(before.machine_total_ticks)?;
        if total < WINDOW_TICKS_MIN {
            return None;
        }
        let busy = after.machine_busy_ticks.saturating_sub(before.machine_busy_ticks);
        let own = after.own_ticks.saturating_sub(before.own_ticks);
        let share_of_machine = (busy.saturating_sub(own) as f64 / total as f64).clamp(0.0, 1.0);
        Some(OtherWork {
            share_of_machine,
            busy: share_of_machine > BUSY_SHARE,
            load_before: before.load_average,
            load_after: after.load_average,
        })
    }

    /// `BUSY: others took 63% of the cores, load 3.10→3.42` or `quiet: others took 2% of the
    /// cores` (the load only where it is known).
    pub fn describe(&self) -> String {
        let load = match (self.load_before, self.load_after) {
            (Some(before), Some(after)) => format!(", load {before:.2}→{after:.2}"),
            _ => String::new(),
        };
        format!(
            "{}: others took {:.0}% of the cores{load}",
            if self.busy { "BUSY" } else { "quiet" },
            self.share_of_machine * 100.0
        )
    }
}

/// Reads the machine's counters from `/proc/stat`'s `cpu` line and this process's from
/// `/proc/self/stat` (utime, stime, cutime, cstime: fields 14 to 17).
fn parse(stat: &str, own: &str) -> Option<CpuCounters> {
    let cpu_line = stat.lines().find(|line| line.starts_with("cpu "))?;
    let ticks: Vec<u64> = cpu_line
        .split_whitespace()
        .skip(1)
        .map(|field| field.parse().ok())
        .collect::<Option<_>>()?;
    // user nice system idle iowait irq softirq steal [guest guest_nice: already in user and nice]
    let field = |index: usize| ticks.get(index).copied().unwrap_or(0);
    let idle = field(3) + field(4);
    let busy = field(0) + field(1) + field(2) + field(5) + field(6) + field(7);
    // The command name (field 2) is in parentheses and may hold spaces: count from after it.
    let after_name = own.rsplit_once(')')?.1;
    let own_fields: Vec<&str> = after_name.split_whitespace().collect();
    // After the name come field 3 (state) onwards, so field n is at index n - 3.
    let own_ticks = (14..=17)
        .map(|field| own_fields.get(field - 3)?.parse::<u64>().ok())
        .sum::<Option<u64>>()?;
    Some(CpuCounters {
        machine_busy_ticks: busy,
        machine_total_ticks: busy + idle,
        own_ticks,
        load_average: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const OWN: &str = "4242 (twice-sim bench) R 1 4242 4242 0 -1 4194304 100 0 0 0 30 10 5 5 20 0 8 0 1 2 3";

    fn counters(stat_cpu: &str, own: &str) -> CpuCounters {
        parse(&format!("{stat_cpu}\ncpu0 1 2 3 4\nintr 5\n"), own).expect("parses")
    }

    #[test]
    fn other_work_is_the_machines_busy_time_less_our_own() {
        let before = counters("cpu  100 0 50 800 50 0 0 0 0 0", OWN);
        // 410 ticks pass on the machine, 310 of them busy; this process took 50 of those
        // (utime, stime, cutime, cstime from 30 10 5 5 to 60 20 10 10).
        let after_own = OWN.replace(" 30 10 5 5 ", " 60 20 10 10 ");
        let after = counters("cpu  310 0 150 870 80 0 0 0 0 0", &after_own);
        let other = OtherWork::between(Some(before), Some(after)).expect("known");
        assert!(
            (other.share_of_machine - (310.0 - 50.0) / 410.0).abs() < 1e-9,
            "{other:?}"
        );
        assert!(other.busy);
        assert_eq!(other.describe(), "BUSY: others took 63% of the cores");
        let loaded = |counters: CpuCounters, load: f64| CpuCounters {
            load_average: Some(load),
            ..counters
        };
        let with_load = OtherWork::between(Some(loaded(before, 3.1)), Some(loaded(after, 3.42))).expect("known");
        assert_eq!(
            with_load.describe(),
            "BUSY: others took 63% of the cores, load 3.10→3.42"
        );
        assert_eq!(parse_load_average("2.57 1.49 0.63 6/126 17044\n"), Some(2.57));
        assert_eq!(parse_load_average(""), None);
        let quiet = counters("cpu  315 0 150 1260 80 0 0 0 0 0", &after_own);
        let other = OtherWork::between(Some(after), Some(quiet)).expect("known");
        assert!(!other.busy && other.share_of_machine < 0.02, "{other:?}");
    }

    #[test]
    fn nothing_is_claimed_without_counters_or_time() {
        let counters_at_start = counters("cpu  1 0 1 1 0 0 0 0 0 0", OWN);
        assert_eq!(OtherWork::between(None, Some(counters_at_start)), None);
        assert_eq!(
            OtherWork::between(Some(counters_at_start), Some(counters_at_start)),
            None
        );
        // 99 ticks: too short a window to tell 0% from 100%.
        let soon = counters("cpu  100 0 1 1 0 0 0 0 0 0", OWN);
        assert_eq!(OtherWork::between(Some(counters_at_start), Some(soon)), None);
        assert!(parse("intr 5\n", OWN).is_none());
        assert!(parse("cpu  1 2 3 4\n", "4242 (no fields)").is_none());
    }

    #[test]
    fn this_machines_counters_read_where_linux_publishes_them() {
        if std::path::Path::new("/proc/stat").exists() {
            assert!(CpuCounters::now().is_some());
        }
    }
}
