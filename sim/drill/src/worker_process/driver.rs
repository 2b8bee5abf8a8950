//! The driver's loop: each command the machine gives carried out, phase by phase, and the
//! wait of a parked run.

use super::{
    Driver, LOOK_AGAIN_AFTER_POLLS, LOOK_AGAIN_AFTER_POLLS_MAX, Step, UNREACHABLE_IN_A_ROW_MAX, WorkerConfig,
    WorkerEnd, WorkerError, emit,
};
use crate::billing_store::VoidRequest;
use crate::marker::{EndKind, Marker};
use crate::{now_ms, script};
use std::time::Duration;
use twice_world::billing_tools::CreditArguments;
use twice_world::ledger::Ledger;
use twice_world::model;
use twice_world::model::Nudge;
use twice_world::runtime::ToolAnswer;
use twice_world::runtime::executor::{Drive, Executor, Next, Step as ExecutorStep};
use twice_world::runtime::key::IdempotencyKey;
use twice_world::runtime::rules::SendTiming;
use twice_world::runtime::worker::{Command, Input, Phase, Worker, WorkerSetup};

impl Driver {
    pub fn new(config: WorkerConfig, ledger: Ledger) -> Result<Driver, WorkerError> {
        let client = reqwest::Client::builder()
            // Loopback only: an HTTP_PROXY in the environment must not reroute billing calls.
            .no_proxy()
            .connect_timeout(config.timeout)
            .build()
            .map_err(WorkerError::Client)?;
        let mut setup = WorkerSetup::new(config.worker_id.clone(), config.run_id.clone(), config.tools.clone())
            .with_tenant(script::TENANT)
            .with_guards(config.guards)
            .with_lease_ms(config.lease_ms)
            .with_words(twice_world::text::WORDS);
        setup.recovery_attempts_max = config.recovery_attempts_max;
        Ok(Driver {
            script: script::script_for(&config.run_id),
            policy: script::model_policy(),
            // This driver sends as soon as a reservation says the tool runs: attempt 1's send
            // fence rides in the reservation's transaction (decision table 5).
            executor: Executor::new(ledger, &setup).with_send_timing(SendTiming::RightAfterReserving),
            machine: Worker::new(setup)?,
            config,
            client,
            unreachable_in_a_row: 0,
            reached_billing: false,
            phases: Vec::new(),
        })
    }

    /// The phases this process ran, in order.
    pub fn phases(&self) -> &[Phase] {
        &self.phases
    }

    /// The ledger connection (for tests that read what the run wrote).
    pub fn ledger(&self) -> &Ledger {
        self.executor.ledger()
    }

    /// Feeds one input to the machine and reports the guards that held.
    pub(super) fn feed(&mut self, input: Input) -> Result<Option<Command>, WorkerError> {
        let next = self.machine.handle(now_ms(), input)?;
        for note in self.machine.take_notes() {
            emit(&Marker::Guard {
                guard: note.guard.name().to_owned(),
                key: note.key,
            });
        }
        Ok(next)
    }

    /// Drives the run until the worker exits, stands down, waits for a person, gives up on an
    /// unreachable billing, or (with `exit_when_parked`) parks.
    pub async fn drive(&mut self) -> Result<WorkerEnd, WorkerError> {
        let mut next = self.feed(Input::Start)?;
        let mut last_phase = Phase::Start;
        loop {
            let Some(command) = next else {
                return Err(WorkerError::Stalled { phase: last_phase });
            };
            last_phase = command.phase();
            self.phases.push(last_phase);
            emit(&Marker::Phase {
                name: last_phase.name().to_owned(),
                key: command.key().map(ToString::to_string),
            });
            match self.perform(command).await? {
                Step::Feed(input) => next = self.feed(*input)?,
                Step::Wait => return Err(WorkerError::Stalled { phase: last_phase }),
                Step::End(end) => {
                    let (kind, detail) = match &end {
                        WorkerEnd::Exited => (EndKind::Exited, self.machine.run_state().status.name().to_owned()),
                        WorkerEnd::StoodDown(reason) => (EndKind::StoodDown, reason.clone()),
                        WorkerEnd::Parked(key) => (EndKind::Parked, format!("awaiting {key}")),
                        WorkerEnd::WaitsForPerson(reason) => (EndKind::WaitsForPerson, reason.clone()),
                        WorkerEnd::ToolUnreachable(reason) => (EndKind::ToolUnreachable, reason.clone()),
                    };
                    emit(&Marker::End { kind, detail });
                    return Ok(end);
                }
            }
        }
    }

    /// Carries out one command: the executor does its ledger part; this driver does the
    /// model, the HTTP call, the waiting and the process's end.
    pub(super) async fn perform(&mut self, command: Command) -> Result<Step, WorkerError> {
        let step = self.executor.perform(command, now_ms())?;
        self.next_of(step).await
    }

    pub(super) async fn next_of(&mut self, step: ExecutorStep) -> Result<Step, WorkerError> {
        let drive = match step.next {
            Next::Feed(input) => return Ok(Step::Feed(Box::new(input))),
            Next::Nothing => return Ok(Step::Wait),
            Next::Drive(drive) => drive,
        };
        let run = self.config.run_id.clone();
        let input = match drive {
            Drive::AskModel { state } => {
                if self.unreachable_in_a_row >= UNREACHABLE_IN_A_ROW_MAX {
                    // Nothing is reserved between calls: the run is left exactly as its
                    // checkpoint says, for a worker that can reach billing.
                    return Ok(Step::End(WorkerEnd::ToolUnreachable(format!(
                        "billing at {} could not be reached for {} calls in a row; stopped before calling again",
                        self.config.billing, self.unreachable_in_a_row
                    ))));
                }
                if !self.config.model_delay.is_zero() {
                    tokio::time::sleep(self.config.model_delay).await;
                }
                match model::decide(&self.script, &self.policy, &state, Nudge::default()) {
                    Ok((decision, next, _)) => Input::ModelDecided { decision, state: next },
                    Err(error) => Input::StateUnusable {
                        detail: error.to_string(),
                    },
                }
            }
            Drive::Send {
                key,
                downstream_key,
                call,
                attempt,
                recorded_at_ms,
            } => {
                let input = self
                    .send_credit(&run, &key, downstream_key.as_ref(), &call, attempt, recorded_at_ms)
                    .await;
                let kind = match &input {
                    Input::Response { answer, .. } => match answer {
                        ToolAnswer::Applied { .. } => "applied",
                        ToolAnswer::Repeat { .. } => "repeat",
                        ToolAnswer::Rejected { .. } => "rejected",
                    },
                    Input::NotAttempted { .. } => "not_attempted",
                    _ => "timed_out",
                };
                emit(&Marker::Answer {
                    key: key.to_string(),
                    kind: kind.to_owned(),
                });
                input
            }
            Drive::Backoff { after_ms, .. } | Drive::WaitToLookAgain { after_ms, .. } => {
                tokio::time::sleep(Duration::from_millis(after_ms)).await;
                Input::BackoffElapsed
            }
            Drive::LookUp { key, .. } => {
                // Read before asking: "nothing there" is weighed as of when billing was asked.
                let asked_at_ms = now_ms();
                let found = match self.look_up(&key).await {
                    Ok(found) => found,
                    // Billing could not be asked: the hook cannot tell, which is not "nothing
                    // there". The ledger is not touched; the machine goes down table 3.
                    Err(reason) => {
                        let cannot_tell = self.executor.cannot_tell(key, &reason.to_string());
                        return Box::pin(self.next_of(cannot_tell)).await;
                    }
                };
                let now = if found.is_some() { now_ms() } else { asked_at_ms };
                let step = self.executor.reconciled(
                    key,
                    found
                        .as_ref()
                        .map(|(receipt, finding)| (receipt.as_str(), finding.as_str())),
                    now,
                )?;
                return Box::pin(self.next_of(step)).await;
            }
            Drive::Undo { key, call } => {
                let arguments = CreditArguments::of_call(&call);
                let request = VoidRequest {
                    idempotency_key: key.to_string(),
                    account: arguments.account,
                    amount_cents: arguments.amount_cents,
                    intent: script::intent(&run, call.item),
                };
                // Only a naive runtime gets here (guard `no_reflex_compensation` off), and it
                // fires the void and moves on whatever billing answers: what billing did is in
                // billing's own entries, which the drill counts.
                let detail = match self.post_void(&request).await {
                    Ok(answer) => format!("billing answered {}", answer.receipt()),
                    Err(detail) => {
                        eprintln!("warning: run {run}: the reflex compensation of {key} got no answer: {detail}");
                        format!("billing's answer did not arrive: {detail}")
                    }
                };
                let step = self.executor.undone(key, &detail, now_ms())?;
                return Box::pin(self.next_of(step)).await;
            }
            Drive::Park { key } => return self.park(&key).await,
            Drive::StandDown { note } => {
                return Ok(Step::End(WorkerEnd::StoodDown(twice_world::text::note_words(&note))));
            }
            Drive::WaitForPerson { reason } => {
                return Ok(Step::End(WorkerEnd::WaitsForPerson(twice_world::text::wait_words(
                    &reason,
                ))));
            }
            Drive::Exit => {
                if !self.reached_billing && self.unreachable_in_a_row > 0 {
                    return Ok(Step::End(WorkerEnd::ToolUnreachable(format!(
                        "billing at {} was never reached; the run ended without a single call arriving",
                        self.config.billing
                    ))));
                }
                return Ok(Step::End(WorkerEnd::Exited));
            }
        };
        Ok(Step::Feed(Box::new(input)))
    }

    /// `on_indeterminate: pause`: waits until the call is settled in the ledger (by an
    /// operator, a reconcile hook in another process, or the call's own late outcome), and
    /// every so often looks again (asks the hook anew): a twin that asked too early, while
    /// the call's own worker was still alive, must not wait forever once that worker is gone.
    pub(super) async fn park(&mut self, key: &IdempotencyKey) -> Result<Step, WorkerError> {
        let mut polls: u32 = 0;
        let mut look_again_after: u32 = LOOK_AGAIN_AFTER_POLLS;
        loop {
            if self
                .executor
                .ledger()
                .record(key)?
                .is_some_and(|record| record.status.is_settled())
            {
                return Ok(Step::Feed(Box::new(Input::Woken)));
            }
            if self.config.exit_when_parked {
                return Ok(Step::End(WorkerEnd::Parked(key.to_string())));
            }
            if polls >= look_again_after {
                return Ok(Step::Feed(Box::new(Input::LookAgain)));
            }
            tokio::time::sleep(self.config.park_poll).await;
            polls += 1;
            // Looked at again later each time, up to a bound: a call nobody can settle costs
            // the hook a lookup now and then, not one per poll.
            if polls == look_again_after {
                look_again_after = look_again_after.saturating_mul(2).min(LOOK_AGAIN_AFTER_POLLS_MAX);
            }
        }
    }
}
