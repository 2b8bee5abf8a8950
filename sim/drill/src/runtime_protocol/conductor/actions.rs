//! The conductor's moves on the real world: a line to a process, a go-ahead, the model's
//! decision, a wake-up, a SIGKILL; a request forwarded, an answer returned, a connection
//! closed with no answer.

use std::time::Instant;

use super::super::messages::{self, Decision, ToRuntime};
use super::super::process::Signal;
use super::super::proxy::Command;
use super::{Attempt, Conductor, Held, State};
use twice_world::runtime::worker::Phase;

/// What billing's front door answers a request whose token expired: refused before anything
/// happened, so nothing can have been paid (the tool-fails-before-sending card).
pub const TOKEN_EXPIRED: &str =
    r#"{"error":"token expired: the request was refused before billing did anything with it"}"#;

impl Conductor<'_> {
    /// Writes one line to a process; a process that no longer reads breaks the run (unless it
    /// is gone already).
    pub(super) async fn send(&mut self, worker: u32, message: &ToRuntime) {
        let line = messages::line_of(message);
        self.note(format!("w{worker} ← {}", line.trim_end()));
        let Some(proc) = self.procs.get_mut(&worker) else {
            return;
        };
        if matches!(proc.state, State::Gone { .. }) {
            return;
        }
        if let Err(error) = proc.process.write(&line).await
            && !matches!(proc.state, State::Gone { .. })
        {
            self.break_run(
                Some(worker),
                format!("w{worker} stopped reading its standard input: {error}"),
            );
        }
    }

    fn set_moving(&mut self, worker: u32) {
        if let Some(proc) = self.procs.get_mut(&worker) {
            proc.state = State::Moving;
            proc.since = Instant::now();
        }
    }

    /// Lets a process at a mark go. Returns the phase it was at.
    pub(super) async fn go(&mut self, worker: u32) -> Option<Phase> {
        let proc = self.procs.get_mut(&worker)?;
        let State::AtMark(mark) = proc.state.clone() else {
            return None;
        };
        let phase = mark.phase.parse::<Phase>().ok()?;
        match phase {
            Phase::Send => {
                let call = mark.call.clone().unwrap_or_default();
                let count = proc.attempts.entry(call.clone()).or_default();
                *count += 1;
                proc.announced = Some(Attempt {
                    call,
                    key: mark.key.clone(),
                    number: mark.attempt.unwrap_or(*count),
                });
            }
            Phase::Exit => proc.exit_status.clone_from(&mark.status),
            Phase::WaitForAPerson => proc.exit_status = Some("waits_for_person".into()),
            Phase::StandDown => proc.exit_status = Some("stood_down".into()),
            Phase::RecordOutcome => {
                if let (Some(call), Some(status)) = (&mark.call, &mark.status) {
                    self.recorded
                        .insert((proc.spawn.run.clone(), call.clone()), status.clone());
                }
                self.changes += 1;
            }
            _ => {}
        }
        let now_ms = self.now_ms;
        self.send(worker, &ToRuntime::Go { now_ms }).await;
        match phase {
            Phase::Park => {
                let changes = self.changes;
                if let Some(proc) = self.procs.get_mut(&worker) {
                    proc.state = State::Parked;
                    proc.parked_at = changes;
                }
            }
            _ => self.set_moving(worker),
        }
        Some(phase)
    }

    /// Answers a process waiting for the model.
    pub(super) async fn decide(&mut self, worker: u32, decision: Decision) {
        let now_ms = self.now_ms;
        self.send(worker, &ToRuntime::Decision { now_ms, decision }).await;
        self.set_moving(worker);
    }

    /// Wakes a parked process.
    pub(super) async fn wake(&mut self, worker: u32) {
        if self.procs.get(&worker).is_some_and(|proc| proc.state == State::Parked) {
            let now_ms = self.now_ms;
            self.send(worker, &ToRuntime::Wake { now_ms }).await;
            self.set_moving(worker);
        }
    }

    /// SIGKILLs a process (a crash): its connection drops, whatever it had open rolls back.
    pub(super) fn kill(&mut self, worker: u32) {
        if let Some(proc) = self.procs.get_mut(&worker)
            && !matches!(proc.state, State::Gone { .. })
        {
            proc.process.signal(Signal::Kill);
            proc.state = State::Gone { killed: true };
            proc.announced = None;
            self.changes += 1;
            self.note(format!("w{worker} killed (SIGKILL)"));
        }
    }

    /// The held exchange of `worker` for `call` in `held` (the oldest).
    pub(super) fn exchange_of(&self, worker: u32, call: &str, held: impl Fn(&Held) -> bool) -> Option<u64> {
        self.exchanges
            .iter()
            .find(|(_, exchange)| {
                exchange.worker == worker
                    && exchange.attempt.as_ref().is_some_and(|attempt| attempt.call == call)
                    && held(&exchange.held)
            })
            .map(|(id, _)| *id)
    }

    /// Forwards a held request to billing at the level's time.
    pub(super) fn forward(&mut self, exchange: u64) {
        let now_ms = self.now_ms;
        let call_key = self.exchanges.get(&exchange).and_then(|held| {
            let attempt = held.attempt.as_ref()?;
            let run = self.procs.get(&held.worker)?.spawn.run.clone();
            Some(attempt.key.clone().unwrap_or_else(|| format!("{run}:{}", attempt.call)))
        });
        if let Some(held) = self.exchanges.get_mut(&exchange) {
            let _ = held.commands.send(Command::Forward { now_ms, call_key });
            held.held = Held::Forwarding;
        }
    }

    /// Loses a held request: billing never sees it.
    pub(super) fn lose_request(&mut self, exchange: u64) {
        if let Some(held) = self.exchanges.get_mut(&exchange) {
            held.held = Held::LostRequest;
            let worker = held.worker;
            self.note(format!(
                "w{worker}'s request is lost on the wire: billing never sees it"
            ));
        }
    }

    /// Loses a held answer: its worker never hears it.
    pub(super) fn lose_answer(&mut self, exchange: u64) {
        if let Some(held) = self.exchanges.get_mut(&exchange) {
            held.held = Held::LostAnswer;
            let worker = held.worker;
            self.note(format!("billing's answer to w{worker} is lost on the wire"));
        }
    }

    /// Returns billing's held answer to its worker.
    pub(super) fn give_answer(&mut self, exchange: u64) {
        let Some(held) = self.exchanges.get_mut(&exchange) else {
            return;
        };
        let _ = held.commands.send(Command::Return);
        held.held = Held::Done;
        let worker = held.worker;
        if self
            .procs
            .get(&worker)
            .is_some_and(|proc| proc.state == State::Waiting { exchange })
        {
            self.set_moving(worker);
        }
    }

    /// Answers a held request at once, without billing.
    pub(super) fn answer_now(&mut self, exchange: u64, status: u16, body: &str) {
        let Some(held) = self.exchanges.get_mut(&exchange) else {
            return;
        };
        let _ = held.commands.send(Command::Answer {
            status,
            body: body.to_owned(),
        });
        held.held = Held::Done;
        let worker = held.worker;
        self.note(format!("w{worker} ⇠ {status} {body}"));
        if self
            .procs
            .get(&worker)
            .is_some_and(|proc| proc.state == State::Waiting { exchange })
        {
            self.set_moving(worker);
        }
    }

    /// Closes an exchange's connection with no answer: its attempt timed out.
    pub(super) fn time_out(&mut self, exchange: u64) {
        let Some(held) = self.exchanges.get_mut(&exchange) else {
            return;
        };
        let _ = held.commands.send(Command::Close);
        held.held = Held::Done;
        let worker = held.worker;
        self.note(format!(
            "w{worker}'s attempt times out: its connection closes with no answer"
        ));
        if self
            .procs
            .get(&worker)
            .is_some_and(|proc| proc.state == State::Waiting { exchange })
        {
            self.set_moving(worker);
        }
    }

    /// The exchange `worker` waits on, if it waits on one.
    pub(super) fn waiting_on(&self, worker: u32) -> Option<u64> {
        match self.procs.get(&worker)?.state {
            State::Waiting { exchange } => Some(exchange),
            _ => None,
        }
    }
}
