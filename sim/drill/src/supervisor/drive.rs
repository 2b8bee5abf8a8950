//! Driving the runs: the event loop, each process's markers and end, each run's standing.

use std::io::IsTerminal;
use std::process::ExitStatus;
use std::time::{Duration, Instant};

use twice_world::runtime::key::IdempotencyKey;
use twice_world::runtime::run::{RunState, RunStatus};

use crate::marker::{EndKind, Marker};
use crate::{EXIT_BAD_INPUT, stop_signal};

use super::config::DrillError;
use super::processes::{clip, killed_by_sigkill};
use super::{
    Event, KillPlan, PROGRESS_EVERY_MS, ProcessKind, RunPhase, STDERR_LINES_KEPT, SWEEP_EVERY_MS, Supervisor,
    WORKER_ERRORS_SHOWN_MAX,
};

impl Supervisor {
    pub(super) fn on_line(&mut self, process: u32, line: &str) -> Result<(), DrillError> {
        let Some(marker) = Marker::parse(line) else {
            return Ok(());
        };
        let Some(slot) = self.processes.get_mut(&process) else {
            return Ok(());
        };
        match &marker {
            Marker::Guard { guard, .. } => {
                *self.counters.guards_held.entry(guard.clone()).or_default() += 1;
                return Ok(());
            }
            Marker::End { kind, .. } => {
                slot.end = Some(*kind);
                slot.last = Some(marker);
                return Ok(());
            }
            Marker::Phase { .. } | Marker::Answer { .. } => {}
        }
        slot.markers += 1;
        let is_send = matches!(&marker, Marker::Phase { name, .. } if name == "send");
        slot.last = Some(marker);
        let due = match slot.plan {
            Some(KillPlan::AtSend { after_ms, .. }) if is_send => Some(after_ms),
            Some(KillPlan::AtSend { fallback, .. }) if slot.markers >= fallback => Some(0),
            Some(KillPlan::AtMarker { nth, after_ms }) if slot.markers == nth => Some(after_ms),
            _ => None,
        };
        let (run, kind, markers) = (slot.run, slot.kind, slot.markers);
        if let Some(after_ms) = due {
            slot.plan = None;
            self.schedule_kill(process, after_ms);
        }
        if is_send && kind == ProcessKind::Primary {
            self.sends_seen += 1;
            self.plan_faults_at_send(process);
        }
        let duplicate_due =
            self.config.duplicates && kind == ProcessKind::Primary && self.runs[run].duplicate_at == Some(markers);
        if duplicate_due {
            self.runs[run].duplicate_at = None;
            self.start_worker(run, ProcessKind::Duplicate)?;
        }
        Ok(())
    }

    pub(super) fn on_exit(&mut self, process: u32, status: Option<ExitStatus>) -> Result<(), DrillError> {
        let Some(slot) = self.processes.remove(&process) else {
            return Ok(());
        };
        let run = slot.run;
        self.runs[run].live.remove(&process);
        self.runs[run].ended.push(process);
        let killed = slot.kill_requested && status.as_ref().is_some_and(killed_by_sigkill);
        if killed {
            self.counters.kills += 1;
            let run_slot = &mut self.runs[run];
            run_slot.kills_assigned = run_slot.kills_assigned.saturating_sub(1);
            run_slot.kills_taken += 1;
            let moment = slot.last.as_ref().map_or_else(|| "starting".to_owned(), Marker::moment);
            *self.counters.kills_by_phase.entry(moment).or_default() += 1;
            if slot.last.as_ref().is_some_and(Marker::in_tool_call) {
                self.counters.kills_during_tool_call += 1;
            }
        } else {
            if slot.kill_requested {
                self.counters.kills_missed += 1;
            }
            let succeeded = status.as_ref().is_some_and(ExitStatus::success);
            match (succeeded, slot.end) {
                (true, Some(EndKind::StoodDown)) => self.counters.stood_down += 1,
                (true, Some(_)) => {}
                // Cut off or paused, then out on its own: it stopped, as a killed process
                // does, and its run is recovered the same way.
                _ if slot.faulted => self.counters.stopped_after_fault += 1,
                _ => {
                    let code = status.as_ref().and_then(ExitStatus::code);
                    let stderr: Vec<String> = slot.stderr.iter().cloned().collect();
                    let sample = format!(
                        "w{process} on {} ended with {}: {}",
                        self.runs[run].id,
                        status.map_or_else(|| "an unknown status".to_owned(), |status| status.to_string()),
                        if stderr.is_empty() {
                            "(nothing on stderr)".to_owned()
                        } else {
                            stderr.join(" / ")
                        }
                    );
                    if code == Some(i32::from(EXIT_BAD_INPUT)) {
                        return Err(DrillError::WorkerRefused(sample));
                    }
                    self.counters.worker_errors += 1;
                    if self.counters.worker_error_samples.len() < WORKER_ERRORS_SHOWN_MAX {
                        self.counters.worker_error_samples.push(sample);
                    }
                }
            }
        }
        if self.runs[run].live.is_empty() {
            self.settle_run(run)?;
        }
        Ok(())
    }

    /// The run's last process is gone: finished, waiting, or to be recovered.
    pub(super) fn settle_run(&mut self, run: usize) -> Result<(), DrillError> {
        let phase = self.standing(run)?;
        match phase {
            RunPhase::Finished | RunPhase::Waiting { .. } => {
                self.runs[run].phase = phase;
                self.hand_on_kills(run);
            }
            _ => self.start_worker(run, ProcessKind::Primary)?,
        }
        Ok(())
    }

    pub(super) fn standing(&self, run: usize) -> Result<RunPhase, DrillError> {
        let Some(checkpoint) = self.observer.load_checkpoint(&self.runs[run].id)? else {
            return Ok(RunPhase::Active);
        };
        let Ok(state) = RunState::from_json(&checkpoint.state) else {
            // A recovering worker starts such a run over; the checker reports it if it stays.
            return Ok(RunPhase::Active);
        };
        Ok(match state.status {
            status if status.is_terminal() => RunPhase::Finished,
            RunStatus::AwaitingReconciliation { key } => {
                let unknown = IdempotencyKey::parse(&key)
                    .ok()
                    .map(|parsed| self.observer.record(&parsed))
                    .transpose()?
                    .flatten()
                    .is_none_or(|record| record.status.is_unknown());
                if unknown {
                    RunPhase::Waiting {
                        key,
                        since: Instant::now(),
                        examined: false,
                    }
                } else {
                    RunPhase::Active
                }
            }
            _ => RunPhase::Active,
        })
    }

    /// Every run has finished or waits with nothing left to try.
    pub(super) fn is_over(&self) -> bool {
        self.processes.is_empty()
            && self.pending.is_empty()
            && self
                .runs
                .iter()
                .all(|run| matches!(run.phase, RunPhase::Finished | RunPhase::Waiting { examined: true, .. }))
    }

    pub(super) fn active_runs(&self) -> usize {
        self.runs.iter().filter(|run| run.phase == RunPhase::Active).count()
    }

    pub(super) fn progress(&self, started: Instant) {
        let finished = self.runs.iter().filter(|run| run.phase == RunPhase::Finished).count();
        eprint!(
            "\r  {:>5.1} s  runs {finished}/{} finished  kills {}/{}  processes {}   ",
            started.elapsed().as_secs_f64(),
            self.runs.len(),
            self.counters.kills,
            self.config.kills,
            self.counters.processes_started
        );
    }

    /// Drives every run to its end (or honest wait).
    pub(super) async fn drive(&mut self, started: Instant) -> Result<(), DrillError> {
        let interrupted = stop_signal();
        tokio::pin!(interrupted);
        let deadline = tokio::time::sleep(self.config.deadline);
        tokio::pin!(deadline);
        let show_progress = std::io::stderr().is_terminal();
        let mut progress = tokio::time::interval(Duration::from_millis(PROGRESS_EVERY_MS));
        let mut sweep = tokio::time::interval(Duration::from_millis(SWEEP_EVERY_MS));
        sweep.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            self.fill()?;
            if self.is_over() {
                break;
            }
            tokio::select! {
                event = self.receiver.recv() => {
                    // The supervisor holds a sender itself, so the channel never closes.
                    let Some(event) = event else { break };
                    match event {
                        Event::Line { process, line } => self.on_line(process, &line)?,
                        Event::Stderr { process, line } => {
                            if let Some(slot) = self.processes.get_mut(&process) {
                                if slot.stderr.len() == STDERR_LINES_KEPT {
                                    slot.stderr.pop_front();
                                }
                                slot.stderr.push_back(clip(&line));
                            }
                        }
                        Event::KillDue { process } => self.on_kill_due(process),
                        Event::CutDue { process, lasts_ms } => self.on_cut_due(process, lasts_ms)?,
                        Event::HealDue { host } => self.on_heal_due(host)?,
                        Event::PauseDue { process, lasts_ms } => self.on_pause_due(process, lasts_ms)?,
                        Event::WakeDue { process } => self.on_wake_due(process),
                        Event::Exited { process, status } => self.on_exit(process, status)?,
                    }
                }
                () = &mut interrupted => return Err(DrillError::Interrupted),
                () = &mut deadline => {
                    return Err(DrillError::Deadline {
                        seconds: self.config.deadline.as_secs(),
                        active: self.active_runs() + self.pending.len(),
                    });
                }
                status = self.billing.child.wait() => {
                    let status = status.map_or_else(|error| error.to_string(), |status| status.to_string());
                    return Err(DrillError::BillingGone(format!("billing exited ({status})")));
                }
                _ = progress.tick(), if show_progress => self.progress(started),
                _ = sweep.tick() => self.sweep().await?,
            }
        }
        if show_progress {
            self.progress(started);
            eprintln!();
        }
        Ok(())
    }
}
