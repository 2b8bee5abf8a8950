//! The drill's child processes: starting workers and billing, watching them, signalling them,
//! reaping them.

use std::collections::VecDeque;
use std::path::Path;
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::Child;
use tokio::sync::mpsc;

use super::config::{DrillConfig, DrillError};
use super::{
    BILLING_DRAIN_MS, BILLING_START_MS, BillingProcess, Control, Event, PROCESSES_PER_RUN_SLACK, ProcessKind,
    ProcessSlot, REAP_MS, RunPhase, STDERR_LINE_CHARS_MAX, Supervisor,
};
use twice_world::billing::Terms;

pub(super) fn clip(text: &str) -> String {
    let mut clipped: String = text.chars().take(STDERR_LINE_CHARS_MAX).collect();
    if clipped.len() < text.len() {
        clipped.push('…');
    }
    clipped
}

#[cfg(unix)]
pub(super) fn killed_by_sigkill(status: &ExitStatus) -> bool {
    use std::os::unix::process::ExitStatusExt;
    status.signal() == Some(9)
}

#[cfg(not(unix))]
pub(super) fn killed_by_sigkill(status: &ExitStatus) -> bool {
    !status.success() && status.code().is_none()
}

/// A command for a child of the drill: its own process group, a pipe on every stream,
/// killed if its handle is dropped.
pub(super) fn child_command(exe: &Path) -> tokio::process::Command {
    child_settings(tokio::process::Command::new(exe))
}

/// A child's settings (see [`child_command`]), also for a command that runs on a worker host
/// (`ip netns exec`, which becomes the worker itself, so signals reach the worker).
pub(super) fn child_settings(mut command: tokio::process::Command) -> tokio::process::Command {
    command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    #[cfg(unix)]
    command.process_group(0);
    command
}

/// Sends SIGSTOP or SIGCONT to a process the drill started, by its id.
pub(super) fn signal(pid: u32, control: Control) {
    let signal = match control {
        Control::Pause => nix::sys::signal::Signal::SIGSTOP,
        Control::Wake => nix::sys::signal::Signal::SIGCONT,
        Control::Kill => nix::sys::signal::Signal::SIGKILL,
    };
    if let Ok(pid) = i32::try_from(pid) {
        let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), signal);
    }
}

/// Watches one worker: forwards its lines, kills, pauses and wakes it when asked, reports
/// its end. Signals go through the child's handle, which knows its id only while the process
/// has not been reaped, so a signal never reaches another process that took the number.
/// Its standard input stays open until it is gone.
pub(super) async fn watch(
    process: u32,
    mut child: Child,
    events: mpsc::UnboundedSender<Event>,
    mut control: mpsc::UnboundedReceiver<Control>,
) {
    let stdin = child.stdin.take();
    let stdout = child.stdout.take();
    let stderr = child.stderr.take();
    let line_events = events.clone();
    let stdout_reader = tokio::spawn(async move {
        if let Some(stdout) = stdout {
            let mut lines = BufReader::new(stdout).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                let _ = line_events.send(Event::Line { process, line });
            }
        }
    });
    let error_events = events.clone();
    let stderr_reader = tokio::spawn(async move {
        if let Some(stderr) = stderr {
            let mut lines = BufReader::new(stderr).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                let _ = error_events.send(Event::Stderr { process, line });
            }
        }
    });
    let status = loop {
        tokio::select! {
            status = child.wait() => break status,
            command = control.recv() => match command {
                Some(Control::Kill) => {
                    let _ = child.start_kill();
                    break child.wait().await;
                }
                Some(command) => {
                    if let Some(pid) = child.id() {
                        signal(pid, command);
                    }
                }
                // The drill let go of the process: it runs to its end.
                None => break child.wait().await,
            }
        }
    };
    // Every line the process wrote is forwarded before its end is reported.
    let _ = stdout_reader.await;
    let _ = stderr_reader.await;
    drop(stdin);
    let _ = events.send(Event::Exited {
        process,
        status: status.ok(),
    });
}

impl Supervisor {
    pub(super) fn worker_args(&self, run: &str, process: u32) -> Vec<String> {
        let mut args = vec![
            "worker".into(),
            "--ledger".into(),
            self.worker_ledger.argument.clone(),
            "--billing".into(),
            self.worker_billing.clone(),
            "--run".into(),
            run.to_owned(),
            "--guards".into(),
            self.config.guards_text.clone(),
            "--worker-id".into(),
            format!("w{process}"),
            "--timeout-ms".into(),
            self.config.timeout_ms.to_string(),
            "--model-delay-ms".into(),
            self.config.model_delay_ms.to_string(),
            "--exit-when-parked".into(),
            "--stop-on-stdin-close".into(),
        ];
        args.extend(terms_args(self.config.declared_terms()));
        if let Some(limit) = self.config.recovery_attempts_max {
            args.extend(["--recovery-attempts-max".to_owned(), limit.to_string()]);
        }
        if !self.config.hook {
            args.push("--no-hook".into());
        }
        if self.config.replacing
            && let Some(slot) = self.runs.iter().find(|slot| slot.id == run)
        {
            // Reaped: none of them will send or hear anything more. A request one of them sent
            // may still reach billing; the operator waits out billing's send window for that.
            for ended in &slot.ended {
                args.extend(["--replaces".to_owned(), format!("w{ended}")]);
            }
        }
        args
    }

    /// The host for a new worker: the next in turn that is not cut off (nor `avoid`, the
    /// host of the worker a twin takes over from). `None` without hosts.
    pub(super) fn pick_host(&mut self, avoid: Option<u32>) -> Option<u32> {
        let count = self.hosts.as_ref()?.count();
        let open: Vec<u32> = (1..=count).filter(|host| Some(*host) != self.cut_host).collect();
        let preferred: Vec<u32> = open.iter().copied().filter(|host| Some(*host) != avoid).collect();
        let choices = if preferred.is_empty() { open } else { preferred };
        let host = *choices.get(self.next_host as usize % choices.len().max(1))?;
        self.next_host = self.next_host.wrapping_add(1);
        Some(host)
    }

    pub(super) fn start_worker(&mut self, run: usize, kind: ProcessKind) -> Result<(), DrillError> {
        self.start_worker_avoiding(run, kind, None)
    }

    pub(super) fn start_worker_avoiding(
        &mut self,
        run: usize,
        kind: ProcessKind,
        avoid: Option<u32>,
    ) -> Result<(), DrillError> {
        let process = self.next_process;
        self.next_process += 1;
        let run_id = self.runs[run].id.clone();
        let host = self.pick_host(avoid);
        let mut command = match (&self.hosts, host) {
            (Some(hosts), Some(host)) => child_settings(hosts.command_on(host, &self.exe).into()),
            _ => child_command(&self.exe),
        };
        command.args(self.worker_args(&run_id, process));
        if let Some(password) = &self.worker_ledger.password {
            command.env(twice_ledger_postgres::PASSWORD_VARIABLE, password);
        }
        let child = command
            .spawn()
            .map_err(|error| DrillError::Setup(format!("cannot start a worker ({}): {error}", self.exe.display())))?;
        let (control, control_receiver) = mpsc::unbounded_channel();
        tokio::spawn(watch(process, child, self.sender.clone(), control_receiver));
        // A twin drives its run as a primary does (its predecessor is cut off or paused), so
        // it takes the run's kills too; otherwise a run finished by a twin would carry them off.
        let drives = kind != ProcessKind::Duplicate;
        if drives && self.kills_spare > 0 {
            self.kills_spare -= 1;
            self.runs[run].kills_assigned += 1;
        }
        let plan = if drives && self.runs[run].kills_assigned > 0 {
            let markers_usual = self.markers_usual(run)?;
            Some(self.plan_kill(run, markers_usual))
        } else {
            None
        };
        self.processes.insert(
            process,
            ProcessSlot {
                run,
                kind,
                control,
                kill_requested: false,
                host,
                faulted: false,
                paused: false,
                plan,
                markers: 0,
                last: None,
                end: None,
                stderr: VecDeque::new(),
            },
        );
        let slot = &mut self.runs[run];
        slot.live.insert(process);
        slot.processes += 1;
        slot.phase = RunPhase::Active;
        self.counters.processes_started += 1;
        match kind {
            ProcessKind::Duplicate => self.counters.duplicates_started += 1,
            ProcessKind::Twin => self.counters.twins_started += 1,
            ProcessKind::Primary => {}
        }
        if slot.processes > slot.kills_taken + PROCESSES_PER_RUN_SLACK {
            let errors = self.counters.worker_error_samples.join(" | ");
            return Err(DrillError::RunStuck {
                run: run_id,
                processes: slot.processes,
                errors: if errors.is_empty() { "none".into() } else { errors },
            });
        }
        Ok(())
    }

    pub(super) fn fill(&mut self) -> Result<(), DrillError> {
        while self.runs.iter().filter(|run| run.phase == RunPhase::Active).count() < self.config.parallel as usize {
            let Some(run) = self.pending.pop_front() else {
                break;
            };
            self.start_worker(run, ProcessKind::Primary)?;
        }
        Ok(())
    }

    /// Kills every worker still alive and waits until each is reaped.
    pub(super) async fn reap_workers(&mut self) {
        for slot in self.processes.values_mut() {
            if !slot.kill_requested {
                slot.kill_requested = true;
                let _ = slot.control.send(Control::Kill);
            }
        }
        let deadline = tokio::time::Instant::now() + Duration::from_millis(REAP_MS);
        while !self.processes.is_empty() {
            match tokio::time::timeout_at(deadline, self.receiver.recv()).await {
                Ok(Some(Event::Exited { process, .. })) => {
                    self.processes.remove(&process);
                }
                Ok(Some(_)) => {}
                Ok(None) | Err(_) => break,
            }
        }
    }

    /// Stops billing: closes its standard input (it stops gracefully, applying what it
    /// received), and kills it if it has not exited in time.
    pub(super) async fn stop_billing(&mut self) -> Result<(), BillingStopError> {
        drop(self.billing.stdin.take());
        let grace = Duration::from_millis(u64::from(self.config.latency_ms) + BILLING_DRAIN_MS);
        match tokio::time::timeout(grace, self.billing.child.wait()).await {
            Ok(Ok(status)) if status.success() => Ok(()),
            Ok(Ok(status)) => Err(BillingStopError::Exited(status)),
            Ok(Err(error)) => Err(BillingStopError::Wait(error)),
            Err(_) => {
                let _ = self.billing.child.start_kill();
                let _ = self.billing.child.wait().await;
                Err(BillingStopError::Killed {
                    grace_ms: grace.as_millis(),
                })
            }
        }
    }
}

/// Why billing did not stop cleanly at the end of a drill.
#[derive(Debug, thiserror::Error)]
pub enum BillingStopError {
    #[error("billing exited with {0}")]
    Exited(std::process::ExitStatus),
    #[error("billing could not be waited for: {0}")]
    Wait(#[source] std::io::Error),
    #[error("billing did not stop within {grace_ms} ms and was killed")]
    Killed { grace_ms: u128 },
}

/// Starts `twice-sim billing` on a free loopback port and reads its address.
pub(super) async fn start_billing(
    exe: &Path,
    database: &Path,
    config: &DrillConfig,
) -> Result<BillingProcess, DrillError> {
    let mut command = child_command(exe);
    command.args([
        "billing".to_owned(),
        "--db".to_owned(),
        database.display().to_string(),
        "--addr".to_owned(),
        "127.0.0.1:0".to_owned(),
        "--keys".to_owned(),
        config.key_handling.name().to_owned(),
        "--latency-ms".to_owned(),
        config.latency_ms.to_string(),
        "--seed".to_owned(),
        config.seed.to_string(),
        "--stop-on-stdin-close".to_owned(),
    ]);
    command.args(terms_args(config.terms));
    command.args(["--request-window-ms".to_owned(), config.request_window_ms.to_string()]);
    let mut child = command
        .spawn()
        .map_err(|error| DrillError::Setup(format!("cannot start billing ({}): {error}", exe.display())))?;
    let stdin = child.stdin.take();
    let stdout = child.stdout.take().expect("stdout is piped");
    let stderr = child.stderr.take().expect("stderr is piped");
    let mut lines = BufReader::new(stdout).lines();
    let first = tokio::time::timeout(Duration::from_millis(BILLING_START_MS), lines.next_line()).await;
    let url = match first {
        Ok(Ok(Some(line))) => line
            .strip_prefix("listening ")
            .and_then(|rest| rest.split_whitespace().next())
            .map(str::to_owned),
        _ => None,
    };
    let Some(url) = url else {
        let _ = child.start_kill();
        let mut errors = String::new();
        let mut error_lines = BufReader::new(stderr).lines();
        while let Ok(Ok(Some(line))) = tokio::time::timeout(Duration::from_secs(1), error_lines.next_line()).await {
            errors.push_str(&line);
            errors.push(' ');
        }
        let _ = child.wait().await;
        return Err(DrillError::Setup(format!(
            "billing did not start: {}",
            if errors.is_empty() {
                "it printed no address"
            } else {
                errors.trim()
            }
        )));
    };
    // Keep billing's pipes drained so it never blocks writing to them.
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    tokio::spawn(async move {
        let mut lines = BufReader::new(stderr).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            eprintln!("billing: {line}");
        }
    });
    Ok(BillingProcess { child, stdin, url })
}

/// Terms as flags: billing's own, or as every worker's tool declares them.
fn terms_args(terms: Terms) -> Vec<String> {
    let mut args = Vec::new();
    if let Some(retention) = terms.key_retention_ms {
        args.extend(["--key-retention-ms".to_owned(), retention.to_string()]);
    }
    if let Some(settle) = terms.lookup_settle_ms {
        args.extend(["--lookup-settle-ms".to_owned(), settle.to_string()]);
    }
    args
}
