//! A runtime's process: started by `sh -c` with the command the user gave, in a process group
//! of its own (so SIGKILL and SIGSTOP reach whatever the shell started), its standard input
//! written a line at a time, its standard output read a line at a time (at most
//! [`LINE_BYTES_MAX`] bytes each), the end of its standard error kept for reports.

use std::collections::VecDeque;
use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::process::{Child, ChildStdin};
use tokio::sync::mpsc;

use super::messages::LINE_BYTES_MAX;

/// How much of a process's standard error a report keeps, in bytes (its end).
pub const STDERR_TAIL_BYTES: usize = 2_000;

/// What a process did, as the conductor hears it.
#[derive(Debug)]
pub enum ProcessEvent {
    /// A line on its standard output (without the line break); `Err`: a line that is too long
    /// or not UTF-8, quoted as far as it can be.
    Line { worker: u32, line: Result<String, String> },
    /// Its standard output closed and it ended: how (`None`: it could not be waited for).
    Ended { worker: u32, status: Option<ExitStatus> },
}

/// A signal the conductor sends a process's group.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Signal {
    /// SIGKILL: a crash.
    Kill,
    /// SIGSTOP: a pause.
    Stop,
    /// SIGCONT: the pause is over.
    Continue,
}

/// A running runtime process.
#[derive(Debug)]
pub struct RuntimeProcess {
    worker: u32,
    pid: Option<u32>,
    stdin: Option<ChildStdin>,
    stderr_tail: Arc<Mutex<VecDeque<u8>>>,
    signals: mpsc::UnboundedSender<Signal>,
}

impl RuntimeProcess {
    /// Starts `command` for worker `worker`; its lines and its end go to `events`.
    pub fn start(
        command: &str,
        worker: u32,
        events: mpsc::UnboundedSender<ProcessEvent>,
    ) -> std::io::Result<RuntimeProcess> {
        let mut shell = tokio::process::Command::new("sh");
        shell
            .arg("-c")
            .arg(command)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .process_group(0);
        let mut child = shell.spawn()?;
        let pid = child.id();
        let stdin = child.stdin.take();
        let stderr_tail = Arc::new(Mutex::new(VecDeque::with_capacity(STDERR_TAIL_BYTES)));
        let (signals, received) = mpsc::unbounded_channel();
        tokio::spawn(watch(worker, child, events, received, Arc::clone(&stderr_tail)));
        Ok(RuntimeProcess {
            worker,
            pid,
            stdin,
            stderr_tail,
            signals,
        })
    }

    pub fn worker(&self) -> u32 {
        self.worker
    }

    pub fn pid(&self) -> Option<u32> {
        self.pid
    }

    /// Writes one line (it ends with a line break). `Err`: the process no longer reads.
    pub async fn write(&mut self, line: &str) -> std::io::Result<()> {
        let stdin = self
            .stdin
            .as_mut()
            .ok_or_else(|| std::io::Error::new(std::io::ErrorKind::BrokenPipe, "standard input is closed"))?;
        stdin.write_all(line.as_bytes()).await?;
        stdin.flush().await
    }

    /// Sends a signal to its process group (after it ended: nothing).
    pub fn signal(&self, signal: Signal) {
        let _ = self.signals.send(signal);
    }

    /// The end of what it wrote on standard error, as text.
    pub fn stderr_tail(&self) -> String {
        let tail = self
            .stderr_tail
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let bytes: Vec<u8> = tail.iter().copied().collect();
        String::from_utf8_lossy(&bytes).trim().to_owned()
    }
}

/// Splits what `stdout` gives into lines for `events`; a line over the limit ends the reading
/// (with an error line), as does the end of the stream.
async fn read_lines(
    worker: u32,
    mut stdout: tokio::process::ChildStdout,
    events: &mpsc::UnboundedSender<ProcessEvent>,
) {
    let mut pending: Vec<u8> = Vec::new();
    let mut buffer = [0_u8; 8192];
    loop {
        let read = match stdout.read(&mut buffer).await {
            Ok(0) | Err(_) => break,
            Ok(read) => read,
        };
        pending.extend_from_slice(&buffer[..read]);
        while let Some(end) = pending.iter().position(|byte| *byte == b'\n') {
            let line: Vec<u8> = pending.drain(..=end).collect();
            let line = String::from_utf8(line[..line.len() - 1].to_vec())
                .map(|text| text.trim_end_matches('\r').to_owned())
                .map_err(|error| {
                    format!(
                        "a line that is not UTF-8: {}",
                        super::messages::quote(&String::from_utf8_lossy(error.as_bytes()))
                    )
                });
            let _ = events.send(ProcessEvent::Line { worker, line });
        }
        if pending.len() > LINE_BYTES_MAX {
            let _ = events.send(ProcessEvent::Line {
                worker,
                line: Err(format!(
                    "a line longer than {LINE_BYTES_MAX} bytes, which begins {}",
                    super::messages::quote(&String::from_utf8_lossy(&pending))
                )),
            });
            return;
        }
    }
    if !pending.is_empty() {
        // The last line had no line break: it still counts as what the process said.
        let _ = events.send(ProcessEvent::Line {
            worker,
            line: String::from_utf8(pending).map_err(|error| {
                format!(
                    "a line that is not UTF-8: {}",
                    super::messages::quote(&String::from_utf8_lossy(error.as_bytes()))
                )
            }),
        });
    }
}

async fn watch(
    worker: u32,
    mut child: Child,
    events: mpsc::UnboundedSender<ProcessEvent>,
    mut signals: mpsc::UnboundedReceiver<Signal>,
    stderr_tail: Arc<Mutex<VecDeque<u8>>>,
) {
    let stdout = child.stdout.take();
    let stderr = child.stderr.take();
    let line_events = events.clone();
    let reader = tokio::spawn(async move {
        if let Some(stdout) = stdout {
            read_lines(worker, stdout, &line_events).await;
        }
    });
    tokio::spawn(async move {
        let Some(mut stderr) = stderr else { return };
        let mut buffer = [0_u8; 4096];
        while let Ok(read) = stderr.read(&mut buffer).await {
            if read == 0 {
                break;
            }
            let mut tail = stderr_tail.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            tail.extend(&buffer[..read]);
            while tail.len() > STDERR_TAIL_BYTES {
                tail.pop_front();
            }
        }
    });
    let group = child.id().and_then(|pid| i32::try_from(pid).ok());
    let status = loop {
        tokio::select! {
            status = child.wait() => break status.ok(),
            signal = signals.recv() => match (signal, group) {
                (Some(signal), Some(group)) => send(group, signal),
                (Some(_), None) => {}
                // The conductor let go of the process: it must not outlive the tape.
                (None, _) => {
                    if let Some(group) = group {
                        send(group, Signal::Kill);
                    }
                    break child.wait().await.ok();
                }
            }
        }
    };
    // Whatever the group left behind (a child the shell started) goes with it.
    if let Some(group) = group {
        send(group, Signal::Kill);
    }
    let _ = reader.await;
    let _ = events.send(ProcessEvent::Ended { worker, status });
}

/// Signals process group `group` (the child is its leader, so the id is the group's).
fn send(group: i32, signal: Signal) {
    use nix::sys::signal::Signal as Nix;
    let signal = match signal {
        Signal::Kill => Nix::SIGKILL,
        Signal::Stop => Nix::SIGSTOP,
        Signal::Continue => Nix::SIGCONT,
    };
    let _ = nix::sys::signal::killpg(nix::unistd::Pid::from_raw(group), signal);
}
