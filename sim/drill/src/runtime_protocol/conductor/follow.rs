//! Following the expected run: its steps played on the real processes in its order — a
//! worker's step a go-ahead (or the model's decision) to the process at that step, a message's
//! arrival a request forwarded (or lost) or an answer returned (or lost), a timer a connection
//! closed with no answer, a crash a SIGKILL, a new worker a new process. The first step the
//! runtime does not meet as the expected run did ends the following: where and how is said,
//! and the rest is played freely.

use super::super::expected::{Decided, ExpectedRun, TraceStep, Traced};
use super::{Conductor, Held, State};
use twice_world::runtime::worker::Phase;

impl Conductor<'_> {
    /// Plays `expected` on the runtime, then whatever the runtime still does, until nothing
    /// moves; then ends every process still there.
    pub async fn play(&mut self, expected: &ExpectedRun) {
        self.model.set_nodes(expected.nodes.clone());
        for spawn in &expected.initial {
            if !self.procs.contains_key(&spawn.worker) {
                self.start_process(spawn).await;
            }
        }
        self.settle().await;
        for (index, step) in expected.steps.iter().enumerate() {
            if self.broken.is_some() {
                return;
            }
            if self.diverged.is_some() {
                self.note_unplayed(expected, index);
                break;
            }
            self.now_ms = step.now_ms;
            self.mirror(step).await;
            self.settle().await;
        }
        if self.broken.is_some() {
            return;
        }
        if self.diverged.is_none() && expected.out_of_phases {
            // The level's phase limit cut the expected run here: so it cuts the runtime's.
            self.note(format!(
                "-- the level's phase limit ({}) ends the run here",
                self.level.max_phases
            ));
            return;
        }
        if self.diverged.is_none()
            && let Some((worker, state)) = self
                .procs
                .iter()
                .find(|(_, proc)| matches!(proc.state, State::AtMark(_) | State::AtModel(_) | State::Waiting { .. }))
                .map(|(worker, proc)| (*worker, super::events::describe(&proc.state)))
        {
            self.diverged = Some(format!(
                "after the expected run's last step (the level went quiet), w{worker} {state}"
            ));
        }
        self.play_freely().await;
    }

    fn diverge(&mut self, step: &TraceStep, why: String) {
        if self.diverged.is_none() {
            self.note(format!("-- leaves the expected run at phase {}: {why}", step.phase));
            self.diverged = Some(format!("at phase {}: {why}", step.phase));
        }
    }

    fn note_unplayed(&mut self, expected: &ExpectedRun, from: usize) {
        for step in &expected.steps[from..] {
            for index in &step.moves {
                if let Some(action) = expected.moves.get(*index) {
                    self.unplayed.push(format!(
                        "{} (phase {} of the expected run)",
                        super::super::describe_play(&action.play),
                        step.phase
                    ));
                }
            }
        }
    }

    /// What real worker `worker` is doing, in words.
    fn doing(&self, worker: u32) -> String {
        self.procs.get(&worker).map_or_else(
            || "was never started".to_owned(),
            |proc| super::events::describe(&proc.state),
        )
    }

    async fn mirror(&mut self, step: &TraceStep) {
        for worker in &step.died {
            self.kill(*worker);
        }
        for spawn in &step.spawned {
            self.start_process(spawn).await;
        }
        if !step.spawned.is_empty() {
            self.settle().await;
        }
        let Some(event) = &step.event else { return };
        match event {
            Traced::Worker {
                worker,
                phase,
                call,
                refused_send,
                decided,
                call_again,
            } => {
                if step.died.contains(worker) {
                    // The level's crash loop killed it as it was about to run the step.
                    return;
                }
                if *phase == Phase::ModelDecides {
                    self.mirror_model(step, *worker, decided.as_ref(), *call_again).await;
                } else {
                    self.mirror_mark(step, *worker, *phase, call.as_deref(), *refused_send)
                        .await;
                }
            }
            Traced::Request { worker, call, lost, .. } => {
                match self.exchange_of(*worker, call, |held| *held == Held::Request) {
                    Some(exchange) if *lost => self.lose_request(exchange),
                    Some(exchange) => self.forward(exchange),
                    None => {
                        let doing = self.doing(*worker);
                        self.diverge(
                        step,
                        format!(
                            "the expected run's request for {call} from w{worker} reaches billing here; your w{worker} sent none ({doing})"
                        ),
                    );
                    }
                }
            }
            Traced::Response {
                worker,
                call,
                lost,
                slowed,
                ..
            } => match self.exchange_of(*worker, call, |held| matches!(held, Held::Answer { .. })) {
                Some(exchange) if *lost => self.lose_answer(exchange),
                Some(exchange) => self.give_answer(exchange),
                // A slowed answer arrives after its timeout closed the connection: nobody hears it.
                None if *slowed => {}
                None => {
                    let doing = self.doing(*worker);
                    self.diverge(
                        step,
                        format!(
                            "the expected run's answer for {call} reaches w{worker} here; your w{worker} has none on the wire ({doing})"
                        ),
                    );
                }
            },
            Traced::Timeout { worker, .. } => {
                if let Some(exchange) = self.waiting_on(*worker) {
                    self.time_out(exchange);
                }
            }
            Traced::Wake { worker } => self.wake(*worker).await,
            Traced::OwnerChange { index } => self.someone_changes_owner(step, *index),
            Traced::Other(_) => {}
        }
    }

    /// The level's scripted owner change lands at billing, at the step the expected run had it.
    fn someone_changes_owner(&mut self, step: &TraceStep, index: usize) {
        let Some(change) = self.level.world.owner_changes.get(index) else {
            return;
        };
        let applied = match &self.billing {
            Some(billing) => billing.owner_changed_by(change, self.now_ms),
            None => Err("the tape's billing is not running".to_owned()),
        };
        match applied {
            Ok(answer) => {
                self.note(format!(
                    "{} sets {}'s owner: {}",
                    change.by,
                    change.account,
                    answer.receipt()
                ));
                self.changes += 1;
            }
            Err(what) => self.diverge(step, what),
        }
    }

    async fn mirror_model(
        &mut self,
        step: &TraceStep,
        worker: u32,
        decided: Option<&Decided>,
        call_again: Option<bool>,
    ) {
        let Some(proc) = self.procs.get(&worker) else { return };
        let State::AtModel(transcript) = proc.state.clone() else {
            let doing = self.doing(worker);
            self.diverge(
                step,
                format!("the expected run's w{worker} asks the model here; your w{worker} {doing}"),
            );
            return;
        };
        let run = proc.spawn.run.clone();
        match self.model.decide(&run, &transcript, call_again) {
            Ok((decision, call, _)) => {
                let same = match (decided, &call) {
                    (Some(Decided::Call(expected)), Some(made)) => {
                        expected.id == made.id && expected.arguments == made.arguments
                    }
                    (Some(Decided::NoCall), None) | (None, _) => true,
                    _ => false,
                };
                if !same {
                    let expected_words = match decided {
                        Some(Decided::Call(expected)) => {
                            format!("calls {} ({})", expected.id, expected.arguments.canonical())
                        }
                        _ => "makes no call".to_owned(),
                    };
                    let made_words = match &call {
                        Some(made) => format!("calls {} ({})", made.id, made.arguments.canonical()),
                        None => "makes no call".to_owned(),
                    };
                    self.diverge(
                        step,
                        format!(
                            "on {run} the expected run's model {expected_words}; told what your w{worker} told it, it {made_words}"
                        ),
                    );
                }
                self.decide(worker, decision).await;
            }
            Err(unknown) => self.break_run(Some(worker), format!("w{worker} asked the model, but {unknown}")),
        }
    }

    async fn mirror_mark(
        &mut self,
        step: &TraceStep,
        worker: u32,
        phase: Phase,
        call: Option<&str>,
        refused_send: bool,
    ) {
        let Some(proc) = self.procs.get_mut(&worker) else {
            return;
        };
        if !proc.marks.contains(&phase) {
            // A step this runtime does not mark: it took it within its last one.
            return;
        }
        let at = match &proc.state {
            State::AtMark(mark) => Some(mark.clone()),
            _ => None,
        };
        match at {
            Some(mark) if mark.phase == phase.name() && (call.is_none() || mark.call.as_deref() == call) => {
                if refused_send {
                    proc.refuse_next = true;
                }
                self.go(worker).await;
            }
            _ => {
                let doing = self.doing(worker);
                let what = match call {
                    Some(call) => format!("`{phase}` {call}"),
                    None => format!("`{phase}`"),
                };
                self.diverge(
                    step,
                    format!("the expected run's w{worker} runs {what} here; your w{worker} {doing}"),
                );
            }
        }
    }
}
