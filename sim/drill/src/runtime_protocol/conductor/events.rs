//! What the processes and the wire say, taken in: lines read and checked against where each
//! process is, requests and answers held, ends of processes noted; and the wait until nothing
//! moves (every process waits at a step, on the wire, parked or gone), bounded by the limits.

use std::time::{Duration, Instant};

use super::super::messages::{self, FromRuntime, RuntimeHello};
use super::super::process::ProcessEvent;
use super::super::proxy::{Command, WireEvent};
use super::{Attempt, Conductor, Exchange, Held, State};
use twice_world::billing::Answer;
use twice_world::runtime::guards::{Guard, Guards};
use twice_world::runtime::worker::Phase;

/// How often the conductor looks again for what arrived while everything stood still.
const DRAIN_ROUNDS: u32 = 3;

impl Conductor<'_> {
    /// Whether anything is moving: a process let go and not yet at its next step, or a request
    /// on its way through billing.
    fn in_motion(&self) -> bool {
        self.procs
            .values()
            .any(|proc| matches!(proc.state, State::Starting | State::Moving))
            || self
                .exchanges
                .values()
                .any(|exchange| exchange.held == Held::Forwarding)
    }

    /// Waits until nothing moves, taking in what arrives. Past a limit, or on anything a
    /// runtime says out of place, the run is broken.
    pub(super) async fn settle(&mut self) {
        self.wait_until_still().await;
        // Nothing moves now; what a process already said while it should wait is out of place,
        // and is taken in before anything is let go.
        for _ in 0..DRAIN_ROUNDS {
            let mut took = false;
            while let Ok(event) = self.processes.try_recv() {
                self.on_process(event).await;
                took = true;
            }
            while let Ok(event) = self.wire.try_recv() {
                self.on_wire(event);
                took = true;
            }
            if took {
                self.wait_until_still().await;
            }
            tokio::task::yield_now().await;
            if !took {
                break;
            }
        }
    }

    async fn wait_until_still(&mut self) {
        while self.broken.is_none() && self.in_motion() {
            let tape_left = Duration::from_millis(self.limits.tape_ms).saturating_sub(self.started.elapsed());
            if tape_left.is_zero() {
                self.break_run(
                    None,
                    format!("the tape took more than {} ms in all", self.limits.tape_ms),
                );
                return;
            }
            let oldest = self
                .procs
                .values()
                .filter(|proc| matches!(proc.state, State::Starting | State::Moving))
                .map(|proc| proc.since)
                .min()
                .unwrap_or_else(Instant::now);
            let step_left = Duration::from_millis(self.limits.step_ms).saturating_sub(oldest.elapsed());
            let wait = step_left.min(tape_left).max(Duration::from_millis(1));
            tokio::select! {
                event = self.processes.recv() => match event {
                    Some(event) => self.on_process(event).await,
                    None => self.break_run(None, "the processes' channel closed".into()),
                },
                event = self.wire.recv() => match event {
                    Some(event) => self.on_wire(event),
                    None => self.break_run(None, "the wire's channel closed".into()),
                },
                () = tokio::time::sleep(wait) => self.check_hangs(),
            }
        }
    }

    /// A process that took longer than the step limit to reach its next step hangs.
    fn check_hangs(&mut self) {
        let limit = Duration::from_millis(self.limits.step_ms);
        let hung = self
            .procs
            .iter()
            .find(|(_, proc)| matches!(proc.state, State::Starting | State::Moving) && proc.since.elapsed() >= limit)
            .map(|(worker, proc)| (*worker, proc.state.clone(), proc.last_gate.clone()));
        if let Some((worker, state, last)) = hung {
            let waiting_for = if state == State::Starting {
                "its `hello`".to_owned()
            } else {
                format!("its next step after {last}")
            };
            self.break_run(
                Some(worker),
                format!(
                    "w{worker} hangs: nothing came for {} ms while Twice waited for {waiting_for}",
                    self.limits.step_ms
                ),
            );
        }
    }

    async fn on_process(&mut self, event: ProcessEvent) {
        match event {
            ProcessEvent::Line { worker, line } => {
                let line = match line {
                    Ok(line) => line,
                    Err(problem) => {
                        self.break_run(Some(worker), format!("w{worker} sent {problem}"));
                        return;
                    }
                };
                if line.trim().is_empty() {
                    return;
                }
                self.note(format!("w{worker} → {line}"));
                match messages::parse_line(&line) {
                    Ok(message) => self.on_message(worker, message, &line),
                    Err(problem) => self.break_run(Some(worker), format!("w{worker} sent {problem}")),
                }
            }
            ProcessEvent::Ended { worker, status } => self.on_end(worker, status),
        }
    }

    fn on_end(&mut self, worker: u32, status: Option<std::process::ExitStatus>) {
        let Some(proc) = self.procs.get_mut(&worker) else {
            return;
        };
        let how = match status {
            Some(status) if status.success() => "exited".to_owned(),
            Some(status) => match status.code() {
                Some(code) => format!("exited with code {code}"),
                None => "was ended by a signal".to_owned(),
            },
            None => "ended".to_owned(),
        };
        let state = std::mem::replace(&mut proc.state, State::Gone { killed: false });
        let clean = status.is_some_and(|status| status.success());
        self.note(format!("w{worker} {how}"));
        match state {
            State::Gone { killed } => {
                if let Some(proc) = self.procs.get_mut(&worker) {
                    proc.state = State::Gone { killed };
                }
            }
            State::Moving if clean => {}
            State::Starting => self.break_run(Some(worker), format!("w{worker} {how} before it answered `hello`")),
            State::Moving => self.break_run(Some(worker), format!("w{worker} {how}")),
            waiting => self.break_run(
                Some(worker),
                format!("w{worker} {how} while it waited for Twice ({})", describe(&waiting)),
            ),
        }
    }

    fn on_message(&mut self, worker: u32, message: FromRuntime, line: &str) {
        let Some(proc) = self.procs.get(&worker) else { return };
        let state = proc.state.clone();
        let out_of_place = |state: &State| {
            format!(
                "w{worker} sent {} while it {}: a runtime waits for Twice's answer before it says anything more",
                messages::quote(line),
                describe(state)
            )
        };
        match (state, message) {
            (State::Starting, FromRuntime::Hello(hello)) => self.on_hello(worker, hello),
            (State::Starting, _) => self.break_run(
                Some(worker),
                format!("w{worker} sent {} before its `hello`", messages::quote(line)),
            ),
            (State::Moving, FromRuntime::Hello(_)) => {
                self.break_run(
                    Some(worker),
                    format!("w{worker} said `hello` twice: {}", messages::quote(line)),
                );
            }
            (State::Moving, FromRuntime::Mark(mark)) => self.on_mark(worker, mark, line),
            (State::Moving, FromRuntime::Model { transcript }) => {
                self.arrive(worker, State::AtModel(transcript), "its question to the model".into());
            }
            (State::Gone { .. }, _) => {}
            (state, _) => self.break_run(Some(worker), out_of_place(&state)),
        }
    }

    fn on_hello(&mut self, worker: u32, hello: RuntimeHello) {
        if hello.protocol != messages::PROTOCOL_VERSION {
            self.break_run(
                Some(worker),
                format!(
                    "w{worker} speaks protocol {}; this Twice speaks {}",
                    hello.protocol,
                    messages::PROTOCOL_VERSION
                ),
            );
            return;
        }
        let mut guards = Guards::all_off();
        for name in &hello.guards {
            match Guard::from_name(name) {
                Some(guard) => guards.set(guard, true),
                None => {
                    let known: Vec<&str> = Guard::EVERY.into_iter().map(Guard::name).collect();
                    self.break_run(
                        Some(worker),
                        format!(
                            "w{worker} claims a guard `{name}` there is none of (known: {})",
                            known.join(", ")
                        ),
                    );
                    return;
                }
            }
        }
        let mut marks = vec![Phase::Send];
        for name in &hello.marks {
            match name.parse::<Phase>() {
                Ok(phase) if messages::markable(phase) => marks.push(phase),
                _ => {
                    self.break_run(
                        Some(worker),
                        format!("w{worker} says it marks `{name}`, which is not a step a runtime marks"),
                    );
                    return;
                }
            }
        }
        match &self.claimed {
            None => self.claimed = Some((guards, hello)),
            Some((first, _)) if *first != guards => {
                let names = super::guard_names(guards).join(", ");
                let first = super::guard_names(*first).join(", ");
                self.break_run(
                    Some(worker),
                    format!("w{worker} claims guards [{names}], another process of the same runtime [{first}]"),
                );
                return;
            }
            Some(_) => {}
        }
        if let Some(proc) = self.procs.get_mut(&worker) {
            proc.marks = marks;
            proc.state = State::Moving;
            proc.since = Instant::now();
            proc.last_gate = "hello".into();
        }
    }

    fn on_mark(&mut self, worker: u32, mark: messages::Mark, line: &str) {
        let declared = self
            .procs
            .get(&worker)
            .map(|proc| proc.marks.clone())
            .unwrap_or_default();
        let phase = match mark.phase.parse::<Phase>() {
            Ok(phase) if declared.contains(&phase) => phase,
            _ => {
                self.break_run(
                    Some(worker),
                    format!(
                        "w{worker} marked `{}`, which its hello did not say it marks: {}",
                        mark.phase,
                        messages::quote(line)
                    ),
                );
                return;
            }
        };
        if phase == Phase::Send && mark.call.is_none() {
            self.break_run(
                Some(worker),
                format!(
                    "w{worker} marked `send` without the call it sends: {}",
                    messages::quote(line)
                ),
            );
            return;
        }
        let label = format!(
            "`{}`{}",
            mark.phase,
            mark.call.as_deref().map(|call| format!(" {call}")).unwrap_or_default()
        );
        self.arrive(worker, State::AtMark(mark), label);
    }

    /// A process reached a step and waits there.
    fn arrive(&mut self, worker: u32, state: State, label: String) {
        self.next_gate += 1;
        let order = self.next_gate;
        if let Some(proc) = self.procs.get_mut(&worker) {
            proc.state = state;
            proc.gate_order = order;
            proc.last_gate = label;
        }
    }

    fn on_wire(&mut self, event: WireEvent) {
        match event {
            WireEvent::Arrived {
                exchange,
                worker,
                request,
                commands,
            } => self.on_request(exchange, worker, request, commands),
            WireEvent::Answered { exchange, status, body } => self.on_answer(exchange, status, body),
            WireEvent::Refused { detail, .. } => {
                self.note(format!("wire refused a request: {detail}"));
            }
        }
    }

    fn on_request(
        &mut self,
        exchange: u64,
        worker: u32,
        request: super::super::proxy::HttpRequest,
        commands: tokio::sync::mpsc::UnboundedSender<Command>,
    ) {
        self.note(format!("w{worker} ⇢ billing {}", request.line()));
        let Some(proc) = self.procs.get_mut(&worker) else {
            let _ = commands.send(Command::Answer {
                status: 404,
                body: format!(r#"{{"error":"no process w{worker} in this tape"}}"#),
            });
            return;
        };
        let announced = if proc.state == State::Moving {
            proc.announced.take()
        } else {
            None
        };
        let (attempt, held, refuse) = match announced {
            Some(attempt) => {
                proc.state = State::Waiting { exchange };
                (Some(attempt), Held::Request, std::mem::take(&mut proc.refuse_next))
            }
            None => {
                // Not an attempt a `send` announced: a lookup, a void, or a runtime that sends
                // without marking. It goes straight through; an unannounced credit is reported.
                if request.is_credit() {
                    self.unannounced
                        .push(format!("w{worker} sent {} without marking `send`", request.line()));
                }
                let _ = commands.send(Command::Forward {
                    now_ms: self.now_ms,
                    call_key: None,
                });
                (None, Held::Forwarding, false)
            }
        };
        self.exchanges.insert(
            exchange,
            Exchange {
                worker,
                request,
                commands,
                attempt,
                held,
            },
        );
        if refuse {
            self.answer_now(exchange, 401, super::TOKEN_EXPIRED);
        }
    }

    fn on_answer(&mut self, exchange: u64, status: u16, body: Vec<u8>) {
        self.note(format!(
            "billing ⇠ {status} {}",
            String::from_utf8_lossy(&body).chars().take(160).collect::<String>()
        ));
        let Some(held) = self.exchanges.get_mut(&exchange) else {
            return;
        };
        let worker = held.worker;
        if let Ok(Answer::Applied { credit_id, .. }) = serde_json::from_slice::<Answer>(&body)
            && held.request.is_credit()
        {
            let run = self
                .procs
                .get(&worker)
                .map(|proc| proc.spawn.run.clone())
                .unwrap_or_default();
            let call = held.attempt.as_ref().map_or_else(
                || "a request no `send` announced".to_owned(),
                |attempt: &Attempt| attempt.call.clone(),
            );
            self.effects.insert(credit_id, (run, call));
            self.changes += 1;
        }
        let Some(held) = self.exchanges.get_mut(&exchange) else {
            return;
        };
        if held.attempt.is_some() {
            held.held = Held::Answer { status, body };
        } else {
            let _ = held.commands.send(Command::Return);
            held.held = Held::Done;
        }
    }
}

/// Where a process waits, in words.
pub(super) fn describe(state: &State) -> String {
    match state {
        State::Starting => "had not answered `hello` yet".into(),
        State::Moving => "was on its way to its next step".into(),
        State::AtMark(mark) => format!(
            "waited for `go` at `{}`{}",
            mark.phase,
            mark.call.as_deref().map(|call| format!(" {call}")).unwrap_or_default()
        ),
        State::AtModel(_) => "waited for the model's decision".into(),
        State::Waiting { .. } => "waited for billing's answer".into(),
        State::Parked => "was parked, waiting for `wake`".into(),
        State::Gone { killed: true } => "was killed".into(),
        State::Gone { killed: false } => "had exited".into(),
    }
}
