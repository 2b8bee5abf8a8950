//! The simulator's part of each worker phase: the machine fed, its command carried out (the
//! ledger's by the runtime's executor, the model, the wire and time by the simulator), reported.

use super::clock::Event;
use super::network::Outgoing;
use super::timeline::Actor;
use super::{SimError, Simulation};
use crate::billing_tools::{CreditArguments, Operation};
use crate::cards::{Fired, Trigger};
use crate::model::{self, Nudge};
use crate::runtime::executor::{Drive, Executor, Next, Report};
use crate::runtime::run::{Decision, RunState};
use crate::runtime::worker::{Command, Input, Phase};
use std::fmt::Write as _;

/// The most phase names kept per worker (a level's phase limit bounds them anyway).
const PHASES_KEPT_MAX: usize = 100_000;

/// How long each kind of phase takes, in virtual milliseconds.
fn phase_cost_ms(command: &Command) -> u64 {
    match command {
        Command::AskModel { .. } => 30,
        Command::Reconcile { .. } | Command::Compensate { .. } => 10,
        Command::Invoke { .. }
        | Command::Park { .. }
        | Command::StandDown { .. }
        | Command::WaitForPerson { .. }
        | Command::Exit => 1,
        Command::Backoff { .. } | Command::WaitToLookAgain { .. } | Command::LogLateOutcome { .. } => 1,
        Command::LoadCheckpoint
        | Command::Reserve { .. }
        | Command::CheckLedger { .. }
        | Command::InsertStarted { .. }
        | Command::RecordOutcome { .. }
        | Command::SaveCheckpoint { .. }
        | Command::SettleNotFound { .. }
        | Command::ReadRecord { .. } => 2,
    }
}

impl Simulation {
    /// Feeds the machine one input and schedules the phase it asks for.
    pub(super) fn feed(&mut self, worker: u32, input: Input) {
        let now = self.clock.now_ms;
        let slot = self.workers.slots.get_mut(&worker).expect("feeding a known worker");
        if !slot.alive || slot.machine.is_done() {
            // Between deciding to exit (or stand down) and doing it, a worker hears nothing.
            return;
        }
        let next = match slot.machine.handle(now, input) {
            Ok(next) => next,
            Err(error) => {
                // The simulator fed its own machine out of order: a bug of the driver, shown
                // on the timeline rather than hidden; the machine is as it was.
                let run = slot.machine.run_id().to_string();
                self.log(Actor::Supervisor, "refused", Some(run), None, error.to_string());
                return;
            }
        };
        let notes = slot.machine.take_notes();
        let fired = slot.machine.take_fired();
        let key = slot.machine.current_call().map(|(_, key, _)| key.to_string());
        let run = slot.machine.run_id().to_owned();
        if let Some(key) = &key
            && self.first_call.is_none()
        {
            self.first_call = Some(super::FirstCall {
                worker,
                key: key.clone(),
                phase: self.clock.phase,
            });
        }
        for note in notes {
            if let crate::runtime::worker::Held::ContractRefused { tool, .. } = &note.held {
                self.timeline.rules.push(super::RuleFiring {
                    phase: self.clock.phase,
                    worker,
                    key: None,
                    row: super::RuleRow::ContractRefused {
                        tool: tool.clone(),
                        guard: note.guard,
                    },
                });
            }
            self.log_guard(worker, &run, note);
        }
        for decided in fired {
            self.timeline.rules.push(super::RuleFiring {
                phase: self.clock.phase,
                worker,
                key: key.clone(),
                row: super::RuleRow::Decided(decided),
            });
        }
        if let Some(command) = next {
            let slot = self.workers.slots.get_mut(&worker).expect("known worker");
            slot.phase = command.phase();
            if slot.phases.len() < PHASES_KEPT_MAX {
                slot.phases.push(command.phase());
            }
            let delay = phase_cost_ms(&command);
            self.clock.schedule(
                now + delay,
                Event::Worker {
                    worker,
                    command: Box::new(command),
                },
            );
        }
    }

    /// One phase of one worker: the executor's part, then the simulator's.
    pub(super) fn run_command(&mut self, worker: u32, command: Command) -> Result<(), SimError> {
        if self.dies_in_recovery(worker, command.phase()) {
            return Ok(());
        }
        let run = self.run_of(worker);
        let phase = command.phase_name();
        let key = command.key().map(ToString::to_string);
        if let Command::Reserve { key, call, .. } | Command::InsertStarted { key, call, .. } = &command {
            self.note_call(key, &run, call);
        }
        // Without a ledger nothing is reserved: the send is where the key first meets its step
        // (the debrief draws the keys of each credit). Checked first so a retry allocates nothing.
        if let Command::Invoke { key, call, .. } = &command
            && !self
                .call_items
                .get(key.as_str())
                .is_some_and(|items| items.iter().any(|(noted, item)| *noted == run && *item == call.item))
        {
            self.note_call(key, &run, call);
        }
        let now = self.clock.now_ms;
        let executor = self
            .workers
            .slots
            .get_mut(&worker)
            .and_then(|slot| slot.executor.as_deref_mut())
            .expect("a live worker has its connection");
        let step = executor.perform(command, now)?;
        if let Some(report) = &step.report {
            self.report(worker, &run, phase, key, report);
        }
        match step.next {
            Next::Feed(input) => self.feed(worker, input),
            Next::Drive(drive) => self.drive(worker, &run, drive)?,
            Next::Nothing => {}
        }
        Ok(())
    }

    /// What the executor did, on the timeline; whoever waits on a record it settled is woken.
    pub(super) fn report(&mut self, worker: u32, run: &str, phase: &str, key: Option<String>, report: &Report) {
        if let Report::Reserved {
            reservation:
                crate::ledger::Reservation::Decided {
                    action,
                    previous_status,
                    ..
                },
            ..
        } = report
        {
            let side_effect = self.workers.slots[&worker]
                .machine
                .current_call()
                .and_then(|(call, _, _)| self.level.tools.iter().find(|tool| tool.name == call.tool))
                .map_or(crate::runtime::tool::SideEffect::External, |tool| tool.side_effect);
            self.timeline.rules.push(super::RuleFiring {
                phase: self.clock.phase,
                worker,
                key: key.clone(),
                row: super::RuleRow::Reservation {
                    existing: *previous_status,
                    side_effect,
                    action: *action,
                },
            });
        }
        if matches!(report, Report::AttemptBegun { .. }) {
            // The send itself is the line the player reads.
            return;
        }
        let kind = match report {
            Report::LateLogged { .. } => "late outcome",
            Report::SendRefused { .. } => "send refused",
            _ => phase,
        };
        self.log(
            Actor::Worker(worker),
            kind,
            Some(run.to_owned()),
            key,
            super::report_words(run, report),
        );
        if let Some(settled) = report.settled() {
            let settled = settled.clone();
            let node = self.workers.slots[&worker].node;
            self.wake_parked(node, &settled, Some(worker));
        }
    }

    /// The simulator's part of a command: the model, the wire, the world, time, the process.
    pub(super) fn drive(&mut self, worker: u32, run: &str, drive: Drive) -> Result<(), SimError> {
        let now = self.clock.now_ms;
        let actor = Actor::Worker(worker);
        let some_run = Some(run.to_owned());
        match drive {
            Drive::AskModel { state } => self.ask_model(worker, run, state),
            Drive::Send {
                key,
                downstream_key,
                call,
                attempt,
                // The world's wire delivers a request at the next phase or loses it, and one on
                // the wire counts as in flight to billing's lookups: no request arrives after a
                // lookup said "nothing", so the world's billing needs no send window.
                recorded_at_ms: _,
            } => {
                self.send(worker, run, key, downstream_key, call, attempt);
            }
            Drive::Backoff { after_ms, next_attempt } => {
                self.clock.schedule(now + after_ms, Event::Backoff { worker });
                self.log(
                    actor,
                    "backoff",
                    some_run,
                    None,
                    format!("waits {after_ms} ms before attempt {next_attempt}"),
                );
            }
            Drive::WaitToLookAgain { key, after_ms } => {
                // The same timer as a backoff: the machine asks for the lookup again when it fires.
                self.clock.schedule(now + after_ms, Event::Backoff { worker });
                self.log(
                    actor,
                    "wait to look again",
                    some_run,
                    Some(key.to_string()),
                    format!("waits {after_ms} ms before looking {key} up again"),
                );
            }
            Drive::LookUp { key, .. } => {
                let found = self.reconcile_lookup(&key);
                let executor = self.executor(worker);
                let step =
                    executor.reconciled(key.clone(), found.as_ref().map(|(r, f)| (r.as_str(), f.as_str())), now)?;
                self.finish_driven(worker, run, "reconcile", Some(key.to_string()), step);
            }
            Drive::Undo { key, call } => {
                let words = self.reflex_void(run, &key, &call);
                let step = self.executor(worker).undone(key.clone(), &words, now)?;
                self.finish_driven(worker, run, "compensate", Some(key.to_string()), step);
            }
            Drive::Park { key } => {
                self.workers.parked.entry(key.to_string()).or_default().insert(worker);
                if let Some(slot) = self.workers.slots.get_mut(&worker) {
                    slot.phase = Phase::Parked;
                }
                self.log(
                    actor,
                    "park",
                    some_run,
                    Some(key.to_string()),
                    format!("run paused: awaiting reconciliation of {key}"),
                );
                self.honest_operator_queues(&key)?;
                // Settled between the decision to pause and now: wake at once.
                let node = self.workers.slots[&worker].node;
                if self
                    .node_ledger(node)
                    .record(&key)?
                    .is_some_and(|record| record.status.is_settled())
                {
                    self.wake_parked(node, &key, None);
                }
            }
            Drive::StandDown { note } => {
                self.retire(worker);
                self.log(actor, "stand down", some_run, None, crate::text::note_words(&note));
            }
            Drive::WaitForPerson { reason } => {
                self.retire(worker);
                self.log(
                    actor,
                    "wait for a person",
                    some_run,
                    None,
                    crate::text::wait_words(&reason),
                );
            }
            Drive::Exit => {
                self.retire(worker);
                self.log(actor, "exit", some_run, None, "exits".into());
                self.after_exit(worker, run);
            }
        }
        Ok(())
    }

    /// A send the fence let through: the tool refuses before anything leaves (a refusal armed
    /// for the run's node), or the request goes on the wire; a batch's worker then goes on
    /// with its next call while the answer travels.
    fn send(
        &mut self,
        worker: u32,
        run: &str,
        key: crate::runtime::key::IdempotencyKey,
        downstream_key: Option<crate::runtime::key::IdempotencyKey>,
        call: crate::runtime::run::ToolCall,
        attempt: u32,
    ) {
        if self.refuses_before_sending(run) {
            let text = format!("{}: {} (token expired)", call.tool, super::REFUSED_BEFORE_SENDING);
            self.log(
                Actor::Worker(worker),
                "send",
                Some(run.to_owned()),
                Some(key.to_string()),
                text,
            );
            self.feed(
                worker,
                Input::NotAttempted {
                    reason: "the account's token expired".into(),
                },
            );
        } else {
            // Sent: until its answer (or its timeout) comes, the worker waits.
            if let Some(slot) = self.workers.slots.get_mut(&worker) {
                slot.phase = Phase::WaitForAnswer;
            }
            let batch = self
                .workers
                .slots
                .get(&worker)
                .is_some_and(|slot| slot.machine.runs_batch());
            self.send_request(Outgoing {
                worker,
                run: run.to_owned(),
                key: key.clone(),
                downstream_key,
                call,
                attempt,
            });
            if batch {
                // A batch's request is out: the worker goes on with the batch's next
                // call while this one's answer travels.
                self.feed(worker, Input::Sent { key, attempt });
            }
        }
    }

    /// A refusal armed for `run`'s node (the level's run it carries out) fires as its worker
    /// is about to send: the tool refuses before anything leaves.
    fn refuses_before_sending(&mut self, run: &str) -> bool {
        if self.crew.armed.is_empty() {
            return false;
        }
        let node = self.node_of(run).to_owned();
        self.crew
            .armed
            .fire(&Trigger::Sending { node: &node })
            .iter()
            .any(|(_, fired, _)| *fired == Fired::RefuseBeforeSending)
    }

    pub(super) fn executor(&mut self, worker: u32) -> &mut Executor {
        self.workers
            .slots
            .get_mut(&worker)
            .and_then(|slot| slot.executor.as_deref_mut())
            .expect("a live worker has its connection")
    }

    /// A driven step's ledger part came back from the executor: log it and feed on.
    pub(super) fn finish_driven(
        &mut self,
        worker: u32,
        run: &str,
        phase: &str,
        key: Option<String>,
        step: crate::runtime::executor::Step,
    ) {
        if let Some(report) = &step.report {
            self.report(worker, run, phase, key, report);
        }
        if let Next::Feed(input) = step.next {
            self.feed(worker, input);
        }
    }

    pub(super) fn ask_model(&mut self, worker: u32, run: &str, state: RunState) {
        let ask = (run.to_owned(), format!("c{}", state.next_call_number));
        let replays = *self.workers.model_asks.get(&ask).unwrap_or(&0);
        // A whisper armed for this run's node (the level's run it carries out).
        let whisper = if self.crew.armed.is_empty() {
            None
        } else {
            let node = self.node_of(run).to_owned();
            self.crew
                .armed
                .due(&Trigger::ModelAsked { node: &node })
                .into_iter()
                .find_map(|(index, _, fired)| match fired {
                    Fired::CallAgain { reword } => Some((index, reword)),
                    _ => None,
                })
        };
        let nudge = Nudge {
            replays,
            call_again: whisper.map(|(_, reword)| reword),
        };
        // The script is read where it lies (not cloned per ask: a run's script holds every
        // call's arguments, and the model is asked at every step of every scenario).
        let decided = {
            let script = self.script_of(run).expect("runs come from the level");
            model::decide(script, &self.level.model, &state, nudge)
        };
        let (decision, next, used_card) = match decided {
            Ok(decided) => decided,
            Err(error) => {
                self.log(
                    Actor::Model,
                    "model decides",
                    Some(run.to_owned()),
                    None,
                    format!("cannot decide: {error}"),
                );
                self.feed(
                    worker,
                    Input::StateUnusable {
                        detail: error.to_string(),
                    },
                );
                return;
            }
        };
        if used_card && let Some((index, _)) = whisper {
            self.crew.armed.take(&[index]);
        }
        let text = match &decision {
            Decision::Call(call) => {
                *self.workers.model_asks.entry(ask).or_default() += 1;
                format!(
                    "Penny calls {}{}",
                    self.call_words(call),
                    if used_card { " — called again" } else { "" }
                )
            }
            Decision::Calls(batch) => {
                *self.workers.model_asks.entry(ask).or_default() += 1;
                let calls: Vec<String> = batch.calls().iter().map(|call| self.call_words(call)).collect();
                format!(
                    "Penny calls {} in one turn (parallel tool calls): the worker sends each as soon as it is \
                     reserved, without waiting for the answer before",
                    calls.join(" and ")
                )
            }
            Decision::Done => "Penny is done with this run".into(),
            Decision::FailRun { reason } => format!("the run fails: {reason}"),
        };
        self.log(Actor::Model, "model decides", Some(run.to_owned()), None, text);
        self.feed(worker, Input::ModelDecided { decision, state: next });
    }

    /// A call as the timeline words it: `issue_credit(acct_ada, $25.00, "memo") as c1`.
    fn call_words(&self, call: &crate::runtime::run::ToolCall) -> String {
        // Only a credit moves money: no other call shows an amount.
        let credits = self
            .level
            .tools
            .iter()
            .any(|tool| tool.name == call.tool && Operation::Credit.is_of(tool));
        let arguments = CreditArguments::of_call(call);
        // Written into one string: the model's every decision is worded, in every scenario.
        let mut words = format!("{}({}, ", call.tool, arguments.account);
        if credits {
            let _ = write!(words, "{}, ", super::dollars(i64::from(arguments.amount_cents)));
        }
        if let Some(owner) = &arguments.owner {
            let _ = write!(words, "owner {owner}, ");
        }
        let _ = write!(words, "\"{}\") as {}", arguments.memo, call.id);
        words
    }
}
