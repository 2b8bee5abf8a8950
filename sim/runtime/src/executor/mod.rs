//! The executor: carries out every ledger command of the worker machine — load, reserve,
//! the send fence, record, log, reconcile receipts, reflex compensation, save, read — once,
//! for every driver.
//!
//! The machine ([`crate::worker::Worker`]) decides; the executor does what it decided to the
//! ledger and says what it did ([`Report`]); the driver does the rest ([`Drive`]): the model,
//! the network, time, the process. A simulation and a worker process are two
//! drivers of the same machine and the same executor, so a rule fixed here is fixed for both.
//!
//! The send fence lives here: the last step before a request leaves is a compare-and-set on
//! the record still being this worker's `started` call ([`crate::ledger::Ledger::begin_attempt`]).
//! If an operator settled the call meanwhile, or another worker took it over, nothing is sent
//! and the machine follows the record. For a driver that sends right after reserving
//! ([`SendTiming::RightAfterReserving`], the worker process), the fence of attempt 1 is
//! folded into the reservation's own transaction instead (decision table 5,
//! [`crate::rules::fence_place`]): one commit fewer, nothing in between.
//!
//! ```
//! use twice_runtime::executor::{Executor, Next};
//! use twice_runtime::ledger::Ledger;
//! use twice_runtime::worker::{Input, Worker, WorkerSetup};
//!
//! # fn main() -> Result<(), twice_runtime::Error> {
//! let ledger = Ledger::open_memory_store();
//! let setup = WorkerSetup::new("worker-1", "run-1", Vec::new());
//! let mut executor = Executor::new(ledger.connect_again()?, &setup);
//! let mut worker = Worker::new(setup)?;
//! // The machine's first command is to load the run's checkpoint: the executor's to do.
//! let command = worker.handle(0, Input::Start)?.expect("a first command");
//! let step = executor.perform(command, 0)?;
//! let Next::Feed(loaded) = step.next else { panic!("the ledger answers the load") };
//! assert!(matches!(loaded, Input::CheckpointLoaded { .. }));
//! // Fed back, the machine asks the model next: a driver's part.
//! let command = worker.handle(1, loaded)?.expect("a next command");
//! assert!(matches!(executor.perform(command, 1)?.next, Next::Drive(_)));
//! # Ok(())
//! # }
//! ```

use std::collections::BTreeMap;

use crate::guards::Guard;
use crate::ids::{RunId, Tenant, WorkerId};
use crate::key::IdempotencyKey;
use crate::ledger::{
    AttemptStart, CheckpointSave, Contradiction, ContradictionSource, HistoryEvent, LateAnswer, Ledger, LedgerError,
    Recorded, Reservation, ReserveRequest, RunEvent, SettleError, Settlement,
};
use crate::operator;
use crate::rules::{FencePlace, Outcome, SendTiming, Status, fence_place};
use crate::run::{RunState, ToolCall};
use crate::worker::{Command, Input, Reconciled, RecordNote, Words, WorkerSetup};

mod report;
mod runs;
mod step;

pub use report::Report;
pub use step::{Drive, Next, Step};

/// Who writes: the worker (the records' owner, the history's actor), its run and tenant.
#[derive(Debug)]
struct Identity {
    worker_id: WorkerId,
    run_id: RunId,
    tenant: Tenant,
    /// Workers whose processes ended, which this one replaces ([`WorkerSetup::replacing`]).
    replaces: Vec<crate::WorkerId>,
}

impl Identity {
    /// A reservation of `call` under `key` by this worker.
    fn request<'a>(
        &'a self,
        key: &'a IdempotencyKey,
        call: &'a ToolCall,
        arguments: &'a str,
        side_effect: crate::tool::SideEffect,
        lease_ms: Option<u64>,
        checkpoint_version: Option<u32>,
    ) -> ReserveRequest<'a> {
        ReserveRequest {
            key,
            tenant: &self.tenant,
            run_id: &self.run_id,
            tool_call_id: &call.id,
            tool: &call.tool,
            side_effect,
            arguments,
            owner: &self.worker_id,
            lease_ms,
            checkpoint_version,
            replaces: &self.replaces,
        }
    }
}

/// One worker's ledger connection and the identity it writes under.
#[derive(Debug)]
pub struct Executor {
    ledger: Ledger,
    identity: Identity,
    /// Guard `ledger`: a naive runtime without a ledger records nothing about its calls.
    ledger_on: bool,
    /// Compare-and-set before every send. A runtime with a ledger and atomic reservations
    /// fences its sends; the naive check-then-insert runtime (guard `atomic_reservation`
    /// off) has no compare-and-set anywhere, so it does not.
    fence_sends: bool,
    /// Whether the driver sends right after reserving: where attempt 1's fence is made.
    send_timing: SendTiming,
    /// The call whose attempt passed the fence inside its reservation, with that attempt and
    /// when the reservation recorded it: the machine's next command sends it. Good for that
    /// next command only.
    folded: Option<(IdempotencyKey, u32, u64)>,
    /// When the ledger recorded each call's latest attempt this executor sent: a reconcile
    /// hook is told it ([`Drive::LookUp`]'s `recorded_at_ms`).
    sent_at_ms: BTreeMap<IdempotencyKey, u64>,
    /// The run's declared recovery limit: with one, every recovery is counted in the run's
    /// history (table 8).
    recovery_attempts_max: Option<u32>,
    /// The application's words (the setup's): the run's and the calls' histories keep them
    /// for an operator, and the sans-IO core makes no sentences of its own.
    words: Words,
}

/// The attempt a reservation that runs the tool sends first.
const FIRST_ATTEMPT: u32 = 1;

impl Executor {
    /// An executor for the worker `setup` describes, on its own ledger connection, writing
    /// the setup's words into the ledger's histories.
    pub fn new(ledger: Ledger, setup: &WorkerSetup) -> Executor {
        let guards = setup.guards;
        Executor {
            ledger,
            identity: Identity {
                worker_id: setup.worker_id.clone(),
                run_id: setup.run_id.clone(),
                tenant: setup.tenant.clone(),
                replaces: setup.replaces.clone(),
            },
            ledger_on: guards.is_on(Guard::Ledger),
            fence_sends: guards.is_on(Guard::Ledger) && guards.is_on(Guard::AtomicReservation),
            send_timing: SendTiming::Separate,
            folded: None,
            sent_at_ms: BTreeMap::new(),
            recovery_attempts_max: setup.recovery_attempts_max,
            words: setup.words,
        }
    }

    /// Declares how the driver sends: [`SendTiming::RightAfterReserving`] folds attempt 1's
    /// send fence into the reservation (the worker process); the default, separate, keeps
    /// them two transactions (a simulation, where a fault may land between them).
    pub fn with_send_timing(mut self, send_timing: SendTiming) -> Executor {
        self.send_timing = send_timing;
        self
    }

    simulation_api! {
        /// Sends without the fence, as the runtime did before it had one. It exists for the one
        /// test that shows what the fence prevents (the explorer finds the double payment without
        /// it); nothing outside a test can switch it.
        pub fn without_send_fence_for_tests(mut self) -> Executor {
            self.fence_sends = false;
            self
        }
    }

    /// The ledger connection it writes through.
    pub fn ledger(&self) -> &Ledger {
        &self.ledger
    }

    /// The ledger connection, to change (an operator acting through the same connection).
    pub fn ledger_mut(&mut self) -> &mut Ledger {
        &mut self.ledger
    }

    /// The worker whose commands it carries out.
    pub fn worker_id(&self) -> &str {
        &self.identity.worker_id
    }

    /// Carries out `command`: its ledger part here, the rest handed to the driver.
    ///
    /// # Errors
    ///
    /// [`LedgerError`] when the ledger fails: nothing of this step was decided, and a worker
    /// started again recovers the run from the ledger.
    /// [`LedgerError::RunOfAnotherTenant`] when the run's checkpoint or a key's record is
    /// another tenant's: nothing was loaded or reserved (run ids are unique across tenants).
    pub fn perform(&mut self, command: Command, now_ms: u64) -> Result<Step, LedgerError> {
        // One span per step (reserve, send, outcome, reconcile, pause, …): an application's
        // subscriber sees each with its worker and key; without one, the fields are never made.
        let span = tracing::info_span!(
            "twice_runtime::step",
            phase = command.phase().name(),
            worker = %self.identity.worker_id,
            key = tracing::field::Empty,
        );
        if let Some(key) = command.key() {
            span.record("key", tracing::field::display(key));
        }
        let _entered = span.entered();
        // A fence folded into the last reservation counts for the command right after it only.
        let folded = self.folded.take();
        match command {
            Command::LoadCheckpoint => self.load(now_ms),
            Command::AskModel { state } => Ok(Step::drive(Drive::AskModel { state })),
            Command::Reserve { .. } | Command::InsertStarted { .. } => self.reserve(command, now_ms),
            Command::CheckLedger { key } => {
                let record = self.ledger.check(&key)?;
                Ok(Step::feed(
                    Input::Checked(record.clone()),
                    Report::Checked { key, record },
                ))
            }
            Command::Invoke {
                key,
                downstream_key,
                call,
                attempt,
            } => {
                let step = self.invoke(key, downstream_key, call, attempt, folded, now_ms)?;
                if let Next::Drive(Drive::Send {
                    key, recorded_at_ms, ..
                }) = &step.next
                {
                    self.sent_at_ms.insert(key.clone(), *recorded_at_ms);
                }
                Ok(step)
            }
            Command::Backoff { after_ms, next_attempt } => Ok(Step::drive(Drive::Backoff { after_ms, next_attempt })),
            Command::WaitToLookAgain { key, after_ms } => Ok(Step::drive(Drive::WaitToLookAgain { key, after_ms })),
            Command::SettleNotFound { key, reason } => self.settle_not_found(key, &reason, now_ms),
            Command::RecordOutcome {
                key,
                outcome,
                result,
                attempt,
            } => self.record_outcome(key, outcome, result, attempt, now_ms),
            Command::LogLateOutcome {
                key,
                attempt,
                says,
                detail,
            } => self.log_late_outcome(key, attempt, says, &detail, now_ms),
            Command::Reconcile { key, call } => {
                let recorded_at_ms = self.sent_at_ms(&key);
                Ok(Step::drive(Drive::LookUp {
                    key,
                    call,
                    recorded_at_ms,
                }))
            }
            Command::Compensate { key, call } => Ok(Step::drive(Drive::Undo { key, call })),
            Command::SaveCheckpoint {
                state,
                expected_version,
                still_failed,
            } => self.save(&state, expected_version, still_failed.as_ref(), now_ms),
            Command::ReadRecord { key } => self.read_record(key),
            Command::Park { key } => Ok(Step::drive(Drive::Park { key })),
            Command::StandDown { note } => Ok(Step::drive(Drive::StandDown { note })),
            Command::WaitForPerson { reason } => {
                self.ledger.append_run_event(
                    &self.identity.run_id,
                    &self.identity.worker_id,
                    RunEvent::WaitsForPerson,
                    &(self.words.wait)(&reason),
                    now_ms,
                )?;
                Ok(Step {
                    next: Next::Drive(Drive::WaitForPerson { reason: reason.clone() }),
                    report: Some(Report::WaitsForPerson { reason }),
                    contradiction: None,
                })
            }
            Command::Exit => Ok(Step::drive(Drive::Exit)),
        }
    }

    /// An attempt's outcome, recorded; one that contradicts how its call was settled meanwhile
    /// comes back with the step.
    fn record_outcome(
        &mut self,
        key: IdempotencyKey,
        outcome: Outcome,
        result: Option<String>,
        attempt: u32,
        now_ms: u64,
    ) -> Result<Step, LedgerError> {
        let recorded = self.ledger.record_outcome(
            &key,
            outcome,
            result.as_deref(),
            &self.identity.worker_id,
            attempt,
            now_ms,
        )?;
        let contradiction = match &recorded {
            Recorded::LateOutcomeIgnored(current) => Contradiction::of(
                current,
                outcome,
                ContradictionSource::LateAnswer { attempt },
                result.as_deref().unwrap_or(""),
            ),
            Recorded::Recorded(_) => None,
        };
        let step = Step::feed(
            self.as_settled_by_operator(Input::Recorded(recorded.clone()))?,
            Report::Recorded {
                key,
                status: outcome.status(),
                recorded,
            },
        );
        Ok(Step { contradiction, ..step })
    }

    /// A late answer, logged under its key (a contradiction if it contradicts the settlement).
    fn log_late_outcome(
        &mut self,
        key: IdempotencyKey,
        attempt: u32,
        says: Outcome,
        detail: &str,
        now_ms: u64,
    ) -> Result<Step, LedgerError> {
        let late = LateAnswer { attempt, says, detail };
        let contradiction = self
            .ledger
            .log_late_outcome(&key, &self.identity.worker_id, &late, now_ms)?;
        Ok(Step {
            next: Next::Nothing,
            report: Some(Report::LateLogged { key, attempt }),
            contradiction,
        })
    }

    /// A reservation: atomic, or the naive check-then-insert's second half (a reservation
    /// too, without the atomicity); with attempt 1's send fence folded in where table 5 says.
    fn reserve(&mut self, command: Command, now_ms: u64) -> Result<Step, LedgerError> {
        let atomic = !matches!(command, Command::InsertStarted { .. });
        let (Command::Reserve {
            key,
            call,
            side_effect,
            lease_ms,
            checkpoint_version,
        }
        | Command::InsertStarted {
            key,
            call,
            side_effect,
            lease_ms,
            checkpoint_version,
        }) = command
        else {
            unreachable!("only a reservation is reserved");
        };
        let arguments = call.arguments.canonical();
        let request = self
            .identity
            .request(&key, &call, &arguments, side_effect, lease_ms, checkpoint_version);
        let fold = fence_place(self.fence_sends, self.send_timing) == FencePlace::InTheReservation;
        let (reservation, input): (Reservation, fn(Reservation) -> Input) = if atomic && fold {
            let answer = self.ledger.reserve_and_begin(&request, FIRST_ATTEMPT, now_ms)?;
            self.folded = answer.attempt_begun.map(|attempt| (key.clone(), attempt, now_ms));
            (answer.reservation, Input::Reserved)
        } else if atomic {
            (self.ledger.reserve(&request, now_ms)?, Input::Reserved)
        } else {
            (self.ledger.insert_started_unchecked(&request, now_ms)?, Input::Inserted)
        };
        Ok(Step::feed(
            input(reservation.clone()),
            Report::Reserved {
                key,
                reservation,
                atomic,
            },
        ))
    }

    /// The send fence, then the send is the driver's.
    fn invoke(
        &mut self,
        key: IdempotencyKey,
        downstream_key: Option<IdempotencyKey>,
        call: ToolCall,
        attempt: u32,
        folded: Option<(IdempotencyKey, u32, u64)>,
        now_ms: u64,
    ) -> Result<Step, LedgerError> {
        let send = |report: Option<Report>, key: IdempotencyKey, recorded_at_ms: u64| Step {
            next: Next::Drive(Drive::Send {
                key,
                downstream_key,
                call,
                attempt,
                recorded_at_ms,
            }),
            report,
            contradiction: None,
        };
        if !self.ledger_on {
            return Ok(send(None, key, now_ms));
        }
        if let Some((folded_key, folded_attempt, recorded_at_ms)) = folded
            && folded_key == key
            && folded_attempt == attempt
        {
            // The fence passed inside the reservation's transaction, just before this.
            let report = Report::AttemptBegun {
                key: key.clone(),
                attempt,
                fenced: true,
            };
            return Ok(send(Some(report), key, recorded_at_ms));
        }
        if !self.fence_sends {
            self.ledger
                .note_attempt(&key, attempt, &self.identity.worker_id, now_ms)?;
            let report = Report::AttemptBegun {
                key: key.clone(),
                attempt,
                fenced: false,
            };
            return Ok(send(Some(report), key, now_ms));
        }
        match self
            .ledger
            .begin_attempt(&key, attempt, &self.identity.worker_id, now_ms)?
        {
            AttemptStart::Begun(_) => {
                let report = Report::AttemptBegun {
                    key: key.clone(),
                    attempt,
                    fenced: true,
                };
                Ok(send(Some(report), key, now_ms))
            }
            AttemptStart::Refused(record) => Ok(Step::feed(
                Input::AttemptRefused {
                    decision: self.ledger.operator_decision(record.as_ref())?,
                    record: record.clone(),
                },
                Report::SendRefused { key, attempt, record },
            )),
        }
    }

    /// When the ledger recorded the latest attempt of `key`: this executor's own send, or —
    /// for a call another process sent (a recovered run) — the call's last `attempt` history
    /// line. 0 when no attempt was recorded (no ledger, or the ledger cannot be read now: the
    /// hook is told less, and nothing is decided on it).
    fn sent_at_ms(&self, key: &IdempotencyKey) -> u64 {
        if let Some(at_ms) = self.sent_at_ms.get(key) {
            return *at_ms;
        }
        if !self.ledger_on {
            return 0;
        }
        let history = self.ledger.history(key).unwrap_or_default();
        history
            .iter()
            .rev()
            .find(|entry| entry.event == HistoryEvent::Attempt)
            .map_or(0, |entry| entry.at_ms)
    }

    /// The reconcile hook's answer: `found` is the receipt to record and what was found, in
    /// words; `None` when the tool's world holds nothing under the key. `now_ms`: for a
    /// finding, when it is recorded; for nothing found, when the lookup was *asked* — table 6
    /// weighs "nothing there" as of then (a clock read after the answer would let a request
    /// applied while the lookup was on its way count as proven absent).
    ///
    /// # Errors
    ///
    /// [`LedgerError`] when the ledger fails: nothing of this step was decided, and a worker
    /// started again recovers the run from the ledger.
    pub fn reconciled(
        &mut self,
        key: IdempotencyKey,
        found: Option<(&str, &str)>,
        now_ms: u64,
    ) -> Result<Step, LedgerError> {
        let _entered = tracing::info_span!("twice_runtime::reconciled", %key, found = found.is_some()).entered();
        let Some((receipt, finding)) = found else {
            // Nothing there: what that proves is the machine's to weigh (table 6), by the
            // record's times.
            let record = self.ledger.record(&key)?.map(Box::new);
            let outcome = Reconciled::NotFound {
                record,
                asked_at_ms: now_ms,
            };
            return Ok(Step::feed(
                Input::Reconciled(outcome.clone()),
                Report::Reconciled {
                    key,
                    finding: None,
                    outcome,
                },
            ));
        };
        let reason = (self.words.record)(&RecordNote::FoundByKey);
        let outcome = operator::record_reconciled(&mut self.ledger, &key, receipt, &reason, now_ms)?;
        // The effect is there, but someone settled the call as not having taken it: loud.
        let contradiction = match &outcome {
            Reconciled::AlreadySettled(current) => {
                Contradiction::of(current, Outcome::Completed, ContradictionSource::Lookup, finding)
            }
            _ => None,
        };
        if let Some(contradiction) = &contradiction {
            self.ledger.note(
                &key,
                "reconcile-hook",
                HistoryEvent::Contradicted,
                &contradiction.describe(),
                now_ms,
            )?;
        }
        let step = Step::feed(
            self.as_settled_by_operator(Input::Reconciled(outcome.clone()))?,
            Report::Reconciled {
                key,
                finding: Some(finding.to_owned()),
                outcome,
            },
        );
        Ok(Step { contradiction, ..step })
    }

    /// The reconcile hook could not ask (`reason` says why): it cannot tell. The ledger is not
    /// touched and nothing is weighed as proof; the machine treats the call as still unknown
    /// (decision table 3: pause, or wait for a person).
    pub fn cannot_tell(&mut self, key: IdempotencyKey, reason: &str) -> Step {
        let outcome = Reconciled::Unknown;
        Step::feed(
            Input::Reconciled(outcome.clone()),
            Report::Reconciled {
                key,
                finding: Some(reason.to_owned()),
                outcome,
            },
        )
    }

    /// A naive runtime's reflex compensation went out (`detail` says what the world
    /// answered): the record moves to `compensated` if it was unknown (or completed); a
    /// settled one keeps its status and the compensation is noted.
    ///
    /// # Errors
    ///
    /// [`LedgerError`] when the ledger fails: nothing of this step was decided, and a worker
    /// started again recovers the run from the ledger.
    pub fn undone(&mut self, key: IdempotencyKey, detail: &str, now_ms: u64) -> Result<Step, LedgerError> {
        let mut settled = false;
        if self.ledger_on {
            let reason = (self.words.record)(&RecordNote::ReflexCompensation);
            let settlement = Settlement {
                to: Status::Compensated,
                expected: None,
                expected_attempts: None,
                actor: &self.identity.worker_id,
                event: HistoryEvent::ReflexCompensation,
                reason: Some(&reason),
                result: None,
                detail: Some(detail),
                settles_started: true,
            };
            match self.ledger.settle(&key, &settlement, now_ms) {
                Ok(_) => settled = true,
                Err(SettleError::Ledger(error)) => return Err(error),
                // Already settled (a refusal): the reversal still went out; note it.
                Err(_) => self.ledger.note(
                    &key,
                    &self.identity.worker_id,
                    HistoryEvent::ReflexCompensation,
                    detail,
                    now_ms,
                )?,
            }
        }
        Ok(Step::feed(
            Input::Compensated,
            Report::ReflexCompensated {
                key,
                settled,
                detail: detail.to_owned(),
            },
        ))
    }
}
