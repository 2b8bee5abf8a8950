//! The worker on the runtime's async driver ([`twice_world::runtime::driver::drive`]): the
//! scripted model as its [`AsyncAgent`], billing as its tools, and an [`Observer`] that prints
//! the drill's markers — each phase before it runs (where a SIGKILL lands), the guards that
//! held, each attempt's end — and stops a run whose billing cannot be reached.

use super::billing_calls::BillingTools;
use super::{
    Driver, LOOK_AGAIN_AFTER_POLLS, LOOK_AGAIN_AFTER_POLLS_MAX, UNREACHABLE_IN_A_ROW_MAX, WorkerConfig, WorkerEnd,
    WorkerError, emit,
};
use crate::marker::{EndKind, Marker};
use crate::script;
use std::time::Duration;
use twice_world::ledger::Ledger;
use twice_world::model;
use twice_world::model::{ModelPolicy, Nudge, RunScript};
use twice_world::runtime::ToolAnswer;
use twice_world::runtime::driver::{AsyncAgent, DriveOptions, Observer, ParkPolicy, drive};
use twice_world::runtime::execution::{AgentError, Attempt, Ending, SystemClock};
use twice_world::runtime::executor::Executor;
use twice_world::runtime::key::IdempotencyKey;
use twice_world::runtime::rules::SendTiming;
use twice_world::runtime::run::{Decision, RunState};
use twice_world::runtime::worker::{Command, GuardNote, Phase, Worker, WorkerSetup};

/// The drill's model: the run's script, decided by the world's model policy, after a delay a
/// real model call would take (a kill may land in it).
#[derive(Debug)]
pub(super) struct ScriptedModel {
    script: RunScript,
    policy: ModelPolicy,
    delay: Duration,
}

impl AsyncAgent for ScriptedModel {
    async fn decide(&mut self, state: &RunState) -> Result<(Decision, RunState), AgentError> {
        if !self.delay.is_zero() {
            tokio::time::sleep(self.delay).await;
        }
        let (decision, next, _) = model::decide(&self.script, &self.policy, state, Nudge::default())?;
        Ok((decision, next))
    }
}

/// What the drill hears of the run: markers on standard output, the phases in order, and
/// whether billing is reachable.
#[derive(Debug, Default)]
pub(super) struct Marks {
    /// The phases run, in order (for the test that holds this driver and the simulator to
    /// the same machine).
    pub(super) phases: Vec<Phase>,
    /// Attempts in a row that could not reach billing at all (connection refused).
    unreachable_in_a_row: u32,
    /// Whether any attempt of this process reached billing.
    reached_billing: bool,
    /// Billing's address, for the words of a stop.
    billing: String,
}

impl Observer for Marks {
    fn before(&mut self, command: &Command) {
        let phase = command.phase();
        self.phases.push(phase);
        emit(&Marker::Phase {
            name: phase.name().to_owned(),
            key: command.key().map(ToString::to_string),
        });
    }

    fn held(&mut self, notes: Vec<GuardNote>) {
        for note in notes {
            emit(&Marker::Guard {
                guard: note.guard.name().to_owned(),
                key: note.key,
            });
        }
    }

    fn attempted(&mut self, key: &IdempotencyKey, _attempt: u32, ended: &Attempt) {
        let kind = match ended {
            Attempt::Answered(ToolAnswer::Applied { .. }) => "applied",
            Attempt::Answered(ToolAnswer::Repeat { .. }) => "repeat",
            Attempt::Answered(ToolAnswer::Rejected { .. }) => "rejected",
            Attempt::NotSent { .. } => "not_attempted",
            Attempt::TimedOut | Attempt::Unknown { .. } => "timed_out",
        };
        if matches!(ended, Attempt::NotSent { .. }) {
            self.unreachable_in_a_row += 1;
        } else {
            self.reached_billing = true;
            self.unreachable_in_a_row = 0;
        }
        emit(&Marker::Answer {
            key: key.to_string(),
            kind: kind.to_owned(),
        });
    }

    /// Nothing is reserved between calls: a run stopped here is left exactly as its
    /// checkpoint says, for a worker that can reach billing (a model that hears "failed" calls
    /// again, so without this stop an unreachable billing makes a run call and fail until its
    /// model gives up).
    fn stop_before_deciding(&mut self) -> Option<String> {
        (self.unreachable_in_a_row >= UNREACHABLE_IN_A_ROW_MAX).then(|| {
            format!(
                "billing at {} could not be reached for {} calls in a row; stopped before calling again",
                self.billing, self.unreachable_in_a_row
            )
        })
    }
}

impl Driver {
    pub fn new(config: WorkerConfig, ledger: Ledger) -> Result<Driver, WorkerError> {
        let tools = BillingTools::new(&config).map_err(WorkerError::Client)?;
        let mut setup = WorkerSetup::new(config.worker_id.clone(), config.run_id.clone(), config.tools.clone())
            .with_tenant(script::TENANT)
            .with_guards(config.guards)
            .with_lease_ms(config.lease_ms)
            .with_words(twice_world::text::WORDS);
        setup.recovery_attempts_max = config.recovery_attempts_max;
        for replaced in &config.replaces {
            setup = setup.replacing(replaced.clone());
        }
        let mut park = ParkPolicy::waiting();
        park.poll = config.park_poll;
        park.look_again_after_polls = LOOK_AGAIN_AFTER_POLLS;
        park.look_again_after_polls_max = LOOK_AGAIN_AFTER_POLLS_MAX;
        park.leave = config.exit_when_parked;
        let mut options = DriveOptions::default();
        options.park = park;
        Ok(Driver {
            agent: ScriptedModel {
                script: script::script_for(&config.run_id),
                policy: script::model_policy(),
                delay: config.model_delay,
            },
            marks: Marks {
                billing: config.billing.to_string(),
                ..Marks::default()
            },
            // This driver sends as soon as a reservation says the tool runs: attempt 1's send
            // fence rides in the reservation's transaction (decision table 5).
            executor: Executor::new(ledger, &setup).with_send_timing(SendTiming::RightAfterReserving),
            machine: Worker::new(setup)?,
            options,
            tools,
            config,
        })
    }

    /// The phases this process ran, in order.
    pub fn phases(&self) -> &[Phase] {
        &self.marks.phases
    }

    /// The ledger connection (for tests that read what the run wrote).
    pub fn ledger(&self) -> &Ledger {
        self.executor.ledger()
    }

    /// Asks billing whether it is there before the run starts.
    pub async fn probe_billing(&self) -> Result<(), super::BillingCallError> {
        self.tools.probe().await
    }

    /// Drives the run until the worker exits, stands down, waits for a person, gives up on an
    /// unreachable billing, or (with `exit_when_parked`) parks.
    pub async fn drive(&mut self) -> Result<WorkerEnd, WorkerError> {
        let ending = drive(
            &mut self.machine,
            &mut self.executor,
            &mut self.agent,
            &self.tools,
            &mut self.marks,
            &mut SystemClock,
            &self.options,
        )
        .await?;
        let end = match ending {
            Ending::Exited(_) if !self.marks.reached_billing && self.marks.unreachable_in_a_row > 0 => {
                WorkerEnd::ToolUnreachable(format!(
                    "billing at {} was never reached; the run ended without a single call arriving",
                    self.config.billing
                ))
            }
            Ending::Exited(_) => WorkerEnd::Exited,
            Ending::StoodDown(note) => WorkerEnd::StoodDown(twice_world::text::note_words(&note)),
            Ending::WaitsForPerson(reason) => WorkerEnd::WaitsForPerson(twice_world::text::wait_words(&reason)),
            Ending::Parked(key) => WorkerEnd::Parked(key.to_string()),
            Ending::Stopped { reason } => WorkerEnd::ToolUnreachable(reason),
        };
        let (kind, detail) = match &end {
            WorkerEnd::Exited => (EndKind::Exited, self.machine.run_state().status.name().to_owned()),
            WorkerEnd::StoodDown(reason) => (EndKind::StoodDown, reason.clone()),
            WorkerEnd::Parked(key) => (EndKind::Parked, format!("awaiting {key}")),
            WorkerEnd::WaitsForPerson(reason) => (EndKind::WaitsForPerson, reason.clone()),
            WorkerEnd::ToolUnreachable(reason) => (EndKind::ToolUnreachable, reason.clone()),
        };
        emit(&Marker::End { kind, detail });
        Ok(end)
    }
}
