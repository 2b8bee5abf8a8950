//! The faults: kills planned from the seed and handed on, partitions and pauses at sends.

use std::collections::VecDeque;
use std::time::Duration;

use rand::Rng;
use rand_chacha::ChaCha8Rng;
use twice_world::runtime::run::RunState;

use crate::script;

use super::config::{DrillConfig, DrillError};
use super::{
    Control, Event, FAULT_MS_MIN, KILL_AFTER_MARKER_MS_MAX, KillPlan, MARKERS_AT_LEAST, MARKERS_PER_CALL_USUALLY,
    PlannedFault, ProcessKind, RunPhase, Supervisor,
};

impl Supervisor {
    /// How many markers a fresh process on `run` usually prints: it depends on how many
    /// calls the run still owes, which its checkpoint says.
    pub(super) fn markers_usual(&self, run: usize) -> Result<u32, DrillError> {
        let calls = script::script_for(&self.runs[run].id).calls.len() as u32;
        let done = self
            .observer
            .load_checkpoint(&self.runs[run].id)?
            .and_then(|checkpoint| RunState::from_json(&checkpoint.state).ok())
            .map_or(0, |state| state.item + u32::from(state.last_told.is_some()));
        let owed = calls.saturating_sub(done);
        Ok(MARKERS_AT_LEAST + MARKERS_PER_CALL_USUALLY * owed)
    }

    /// A plan for a process on `run`. Kills at a marker pick from every marker the process
    /// usually prints; one that ends sooner leaves the kill to the run's next process (or,
    /// when the run is done, to another run).
    pub(super) fn plan_kill(&mut self, run: usize, markers_usual: u32) -> KillPlan {
        let latency_ms = u64::from(self.config.latency_ms);
        let last_taker = self.pending.is_empty()
            && self
                .runs
                .iter()
                .enumerate()
                .all(|(index, other)| index == run || other.phase != RunPhase::Active);
        if last_taker {
            // No other run could take this kill if it missed: kill at once at a marker
            // that still has a phase after it, so it cannot miss.
            return KillPlan::AtMarker {
                nth: self.rng.random_range(1..MARKERS_AT_LEAST),
                after_ms: 0,
            };
        }
        if self.rng.random_bool(0.5) {
            KillPlan::AtSend {
                after_ms: self.rng.random_range(0..=latency_ms),
                fallback: markers_usual,
            }
        } else {
            KillPlan::AtMarker {
                nth: self.rng.random_range(1..=markers_usual),
                after_ms: self.rng.random_range(0..=KILL_AFTER_MARKER_MS_MAX),
            }
        }
    }

    pub(super) fn schedule_kill(&self, process: u32, after_ms: u64) {
        let events = self.sender.clone();
        tokio::spawn(async move {
            if after_ms > 0 {
                tokio::time::sleep(Duration::from_millis(after_ms)).await;
            }
            let _ = events.send(Event::KillDue { process });
        });
    }

    pub(super) fn on_kill_due(&mut self, process: u32) {
        if let Some(slot) = self.processes.get_mut(&process)
            && !slot.kill_requested
        {
            slot.kill_requested = true;
            let _ = slot.control.send(Control::Kill);
        }
    }

    pub(super) fn schedule(&self, after_ms: u64, event: Event) {
        let events = self.sender.clone();
        tokio::spawn(async move {
            if after_ms > 0 {
                tokio::time::sleep(Duration::from_millis(after_ms)).await;
            }
            let _ = events.send(event);
        });
    }

    /// A driving process is sending: partitions and pauses planned for this send fire a
    /// seeded moment later (the request or its answer on the wire). One host is cut at a time.
    pub(super) fn plan_faults_at_send(&mut self, process: u32) {
        let host = self.processes.get(&process).and_then(|slot| slot.host);
        if self.cut_host.is_none()
            && let Some(host) = host
            && self
                .partitions_planned
                .front()
                .is_some_and(|fault| fault.at_send <= self.sends_seen)
            && let Some(fault) = self.partitions_planned.pop_front()
        {
            // Claimed now, so no new worker goes there and no other partition starts.
            self.cut_host = Some(host);
            self.schedule(
                fault.after_ms,
                Event::CutDue {
                    process,
                    lasts_ms: fault.lasts_ms,
                },
            );
        }
        if self
            .pauses_planned
            .front()
            .is_some_and(|fault| fault.at_send <= self.sends_seen)
            && let Some(fault) = self.pauses_planned.pop_front()
        {
            self.schedule(
                fault.after_ms,
                Event::PauseDue {
                    process,
                    lasts_ms: fault.lasts_ms,
                },
            );
        }
    }

    /// Cuts the host of `process` off the network (it was claimed when the cut was planned),
    /// and starts a twin of its run on another host.
    pub(super) fn on_cut_due(&mut self, process: u32, lasts_ms: u64) -> Result<(), DrillError> {
        let (Some(hosts), Some(host)) = (&self.hosts, self.cut_host) else {
            return Ok(());
        };
        hosts.cut(host)?;
        self.counters.partitions += 1;
        for slot in self.processes.values_mut().filter(|slot| slot.host == Some(host)) {
            slot.faulted = true;
        }
        self.schedule(lasts_ms, Event::HealDue { host });
        // The process that saw the send may be gone by now (killed, or its run finished); the
        // cut still strands whoever else drives a run on that host, so their run gets the twin.
        let stranded = self
            .processes
            .get(&process)
            .filter(|slot| !slot.kill_requested && slot.end.is_none())
            .or_else(|| {
                self.processes.values().find(|slot| {
                    slot.host == Some(host)
                        && !slot.kill_requested
                        && slot.end.is_none()
                        && slot.kind != ProcessKind::Duplicate
                })
            })
            .map(|slot| slot.run);
        if let Some(run) = stranded {
            self.start_worker_avoiding(run, ProcessKind::Twin, Some(host))?;
        }
        Ok(())
    }

    pub(super) fn on_heal_due(&mut self, host: u32) -> Result<(), DrillError> {
        if let Some(hosts) = &self.hosts {
            hosts.heal(host)?;
        }
        if self.cut_host == Some(host) {
            self.cut_host = None;
        }
        Ok(())
    }

    /// Pauses `process` (SIGSTOP) and starts a twin of its run, on another host if there
    /// are hosts. A process that is gone (or dying) leaves the pause to the next send.
    pub(super) fn on_pause_due(&mut self, process: u32, lasts_ms: u64) -> Result<(), DrillError> {
        let Some(slot) = self
            .processes
            .get_mut(&process)
            .filter(|slot| !slot.kill_requested && !slot.paused)
        else {
            self.pauses_planned.push_front(PlannedFault {
                at_send: self.sends_seen + 1,
                after_ms: 0,
                lasts_ms,
            });
            return Ok(());
        };
        let _ = slot.control.send(Control::Pause);
        slot.paused = true;
        slot.faulted = true;
        let (run, host) = (slot.run, slot.host);
        self.counters.pauses += 1;
        self.schedule(lasts_ms, Event::WakeDue { process });
        self.start_worker_avoiding(run, ProcessKind::Twin, host)
    }

    pub(super) fn on_wake_due(&mut self, process: u32) {
        if let Some(slot) = self.processes.get_mut(&process)
            && slot.paused
        {
            let _ = slot.control.send(Control::Wake);
            slot.paused = false;
        }
    }

    /// Kills a finished run did not take go to a run still to come, or one still driven.
    /// Kills nobody can take now wait in `kills_spare` for the next process the drill starts.
    pub(super) fn hand_on_kills(&mut self, run: usize) {
        let left = std::mem::take(&mut self.runs[run].kills_assigned);
        for _ in 0..left {
            let takers: Vec<usize> = if self.pending.is_empty() {
                (0..self.runs.len())
                    .filter(|index| {
                        matches!(
                            self.runs[*index].phase,
                            RunPhase::Active | RunPhase::Waiting { examined: false, .. }
                        )
                    })
                    .collect()
            } else {
                self.pending.iter().copied().collect()
            };
            if takers.is_empty() {
                self.kills_spare += 1;
                continue;
            }
            let taker = takers[self.rng.random_range(0..takers.len())];
            self.runs[taker].kills_assigned += 1;
            // A process already driving the taker dies at its next marker: its own plan may
            // aim past its end, and the drill is near its end when kills are handed on.
            let live = &self.runs[taker].live;
            if let Some(slot) = self
                .processes
                .iter_mut()
                .filter(|(process, _)| live.contains(process))
                .map(|(_, slot)| slot)
                .find(|slot| slot.kind != ProcessKind::Duplicate && !slot.kill_requested && !slot.paused)
            {
                slot.plan = Some(KillPlan::AtMarker {
                    nth: slot.markers + 1,
                    after_ms: 0,
                });
            }
        }
    }
}

/// `count` faults at seeded sends (all within the first `runs` sends, which every drill
/// reaches), each a seeded moment after its send and lasting a seeded time up to `longest_ms`.
pub(super) fn plan_faults(
    rng: &mut ChaCha8Rng,
    config: &DrillConfig,
    count: u32,
    longest_ms: u32,
) -> VecDeque<PlannedFault> {
    let mut faults: Vec<PlannedFault> = (0..count)
        .map(|_| PlannedFault {
            at_send: rng.random_range(1..=config.runs.max(1)),
            after_ms: rng.random_range(0..=u64::from(config.latency_ms)),
            lasts_ms: rng.random_range(u64::from(FAULT_MS_MIN)..=u64::from(longest_ms.max(FAULT_MS_MIN))),
        })
        .collect();
    faults.sort_by_key(|fault| fault.at_send);
    faults.into()
}
