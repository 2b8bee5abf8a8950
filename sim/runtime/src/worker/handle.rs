//! The machine's entry point: one input in, the next command out; starting, loading and deciding.

use super::*;

impl Worker {
    /// Feeds one input; returns the next phase, if the worker has one to run now (`None`: it
    /// waits on as it was, a stale timer say).
    ///
    /// # Errors
    ///
    /// [`InputError`] when the input is not one the machine waits for: the worker is done,
    /// the input answers another command than the last one, or it is about another call than
    /// the one in progress. The machine is left as it was, and nothing was decided.
    pub fn handle(&mut self, now_ms: u64, input: Input) -> Result<Option<Command>, InputError> {
        self.check_input(&input)?;
        self.batch_clock(now_ms);
        if self.held_for_later(&input) {
            return Ok(None);
        }
        let command = self.dispatch(now_ms, input);
        if let Some(command) = &command {
            self.awaiting_after(command);
        }
        Ok(command)
    }

    /// The machine's decision on an input [`Worker::check_input`] accepted.
    pub(super) fn dispatch(&mut self, now_ms: u64, input: Input) -> Option<Command> {
        match input {
            Input::Start => {
                self.state = WorkerState::Booting;
                if let Some(refusal) = self.contract_refusal() {
                    return refusal;
                }
                Some(Command::LoadCheckpoint)
            }
            Input::CheckpointLoaded {
                version,
                state,
                failed_recoveries,
            } => {
                self.loaded_version = version;
                self.loaded_at_ms = now_ms;
                self.run = state.unwrap_or_default();
                self.on_loaded(failed_recoveries)
            }
            Input::CheckpointUnreadable { version, detail } => {
                self.loaded_version = version;
                self.wait_for_person(WaitReason::CheckpointUnreadable {
                    run_id: self.setup.run_id.clone(),
                    version,
                    detail,
                })
            }
            Input::StateUnusable { detail } => self.wait_for_person(WaitReason::StateUnusable {
                run_id: self.setup.run_id.clone(),
                detail,
            }),
            Input::ModelDecided { decision, state } => {
                self.decisions = self.decisions.saturating_add(1);
                if self.decisions > self.setup.decisions_max {
                    // Not taken: the run stays as last saved, for a person to look at.
                    return self.wait_for_person(WaitReason::DecisionLimit {
                        run_id: self.setup.run_id.clone(),
                        decisions: self.setup.decisions_max,
                    });
                }
                self.run = state;
                self.on_decided(now_ms, decision)
            }
            Input::Reserved(Reservation::ArgumentsMismatch { existing }) => self.arguments_mismatch(now_ms, existing),
            Input::Reserved(Reservation::Decided { action, record, .. }) => {
                self.on_reservation(now_ms, action, Some(record))
            }
            Input::Reserved(Reservation::Fenced { expected, found })
            | Input::Inserted(Reservation::Fenced { expected, found }) => self.fenced(expected, found),
            Input::Checked(existing) => self.checked(now_ms, existing),
            Input::Inserted(Reservation::ArgumentsMismatch { existing }) => self.arguments_mismatch(now_ms, existing),
            Input::Inserted(Reservation::Decided { record, .. }) => {
                self.context_mut().reserved_at_ms = Some(record.created_at_ms);
                self.invoke(now_ms, 1)
            }
            Input::AttemptRefused { record, decision } => self.attempt_refused(record, decision),
            Input::NotAttempted { reason } => {
                self.context_mut().awaiting_attempt = None;
                if !self.guard(Guard::RefusalIsFailed) {
                    if self.setup.guards.naive_refusal == NaiveRefusal::Indeterminate {
                        // A naive runtime that treats every exception like a timeout: it does
                        // not know nothing left, so a write is recorded unknown and waits.
                        return self.refusal_taken_for_timeout();
                    }
                    // A naive runtime that swallows the tool's exception: the call returned,
                    // so it is recorded a success, and nobody will ever run it again.
                    let swallowed = serde_json::json!({ "swallowed_refusal": reason }).to_string();
                    return self.record(Outcome::Completed, Some(swallowed));
                }
                let context = self.context();
                let (side_effect, attempt, attempts_allowed) =
                    (context.tool.side_effect, context.attempt, context.attempts_allowed);
                if side_effect.changes_something() {
                    self.note(Guard::RefusalIsFailed, Held::RefusalRecordedFailed);
                }
                match self.outcome(side_effect, AttemptEnd::NotAttempted, attempt, attempts_allowed) {
                    OutcomeAction::Record(outcome) => {
                        let result = self.record_words(&RecordNote::NotAttempted { reason });
                        self.record(outcome, Some(result))
                    }
                    OutcomeAction::Retry { .. } => unreachable!("table 2 never retries a refusal"),
                }
            }
            Input::Sent { key, attempt } => self.sent(&key, attempt),
            Input::Response { key, attempt, answer } => self.response(key, attempt, answer),
            Input::TimedOut { key, attempt } => self.timed_out(key, attempt, None),
            Input::Unknown { key, attempt, reason } => self.timed_out(key, attempt, Some(reason)),
            Input::BackoffElapsed if self.context().looking_again => self.look_again(),
            Input::BackoffElapsed => {
                let next = self.context().attempt + 1;
                self.invoke(now_ms, next)
            }
            Input::Recorded(Recorded::Recorded(record)) => self.after_record(record.status, record.result),
            Input::Recorded(Recorded::LateOutcomeIgnored(current)) => self.truth_or_unknown(Some(current), None),
            Input::Reconciled(reconciled) => self.on_reconciled(now_ms, reconciled),
            Input::Compensated if self.undoing.is_some() => self.undo_next(),
            Input::Compensated if self.context().recovered => self.tell(Told::Compensated),
            Input::Compensated => self.tell(Told::Failed {
                reason: (self.setup.words.told_failed)(ToldFailed::UnknownCompensated),
            }),
            Input::Saved(outcome) => self.saved(outcome),
            Input::RecordRead { record, decision } => self.truth_or_unknown(record, decision),
            Input::Woken => {
                self.state = WorkerState::Reconciling;
                Some(Command::ReadRecord {
                    key: self.context().key.clone(),
                })
            }
            Input::LookAgain => {
                // What the hook could not find before may be there now.
                self.context_mut().hook_asked = false;
                self.state = WorkerState::Reconciling;
                Some(Command::ReadRecord {
                    key: self.context().key.clone(),
                })
            }
        }
    }

    /// The naive runtime of [`NaiveRefusal::Indeterminate`] (guard `refusal_is_failed` off):
    /// the refusal is handled as if the request may have left. A read is tried again under its
    /// rule; a write is recorded `indeterminate`, and the run waits on a call that never left.
    /// No guard is noted: none held, the request never left.
    fn refusal_taken_for_timeout(&mut self) -> Option<Command> {
        let context = self.context();
        let (side_effect, attempt, attempts_allowed) =
            (context.tool.side_effect, context.attempt, context.attempts_allowed);
        match self.outcome(side_effect, AttemptEnd::TimedOut, attempt, attempts_allowed) {
            OutcomeAction::Retry { backoff_ms } => Some(Command::Backoff {
                after_ms: backoff_ms,
                next_attempt: attempt + 1,
            }),
            OutcomeAction::Record(outcome) => self.record(outcome, None),
        }
    }

    /// Guards `tool_contract` and `ambiguity_policy`: every tool is put to the start checks
    /// that are on before the run starts — the contract check (a write gets one attempt
    /// and the key), then the ambiguity policy (a tool that reaches out has a reconcile hook, or
    /// the run pauses on an unknown call) — and a run whose tool fails one is not started: it
    /// waits for a person to declare the tool honestly. Nothing has been loaded, asked or sent.
    pub(super) fn contract_refusal(&mut self) -> Option<Option<Command>> {
        let (guard, tool, violation) = self.setup.contract_problem()?;
        self.note(
            guard,
            Held::ContractRefused {
                tool,
                violation: violation.clone(),
            },
        );
        Some(self.wait_for_person(WaitReason::ContractRefused {
            run_id: self.setup.run_id.clone(),
            violation,
        }))
    }

    /// The checkpoint version a reservation is fenced on (guard `checkpoint_version`).
    pub(super) fn fence(&self) -> Option<u32> {
        self.guard(Guard::CheckpointVersion).then_some(self.loaded_version)
    }

    /// Someone saved the run's checkpoint since this worker loaded it: it stands down
    /// before it sends anything.
    pub(super) fn fenced(&mut self, expected: u32, found: u32) -> Option<Command> {
        self.stand_down(Held::StoodDownBeforeSending { expected, found })
    }

    /// The checkpoint version held (`held` says how): another worker drives the run now.
    pub(super) fn stand_down(&mut self, held: Held) -> Option<Command> {
        let note = GuardNote {
            guard: Guard::CheckpointVersion,
            worker_id: self.setup.worker_id.clone(),
            run_id: self.setup.run_id.clone(),
            key: self.call.as_ref().map(|context| context.key.to_string()),
            held,
        };
        self.note(note.guard, note.held.clone());
        self.state = WorkerState::StoodDown;
        Some(Command::StandDown { note })
    }

    pub(super) fn wait_for_person(&mut self, reason: WaitReason) -> Option<Command> {
        self.state = WorkerState::WaitingForPerson;
        Some(Command::WaitForPerson { reason })
    }

    pub(super) fn lease(&self) -> Option<u64> {
        self.setup.lease_ms.filter(|_| !self.guard(Guard::NoLeaseExpiry))
    }

    pub(super) fn on_loaded(&mut self, failed_recoveries: Option<u32>) -> Option<Command> {
        if let Some(failed) = failed_recoveries
            && !self.run.status.is_terminal()
            && let Some(dead_lettered) = self.recovery_check(failed)
        {
            return dead_lettered;
        }
        match self.run.status.clone() {
            status if status.is_terminal() => {
                self.exit = Some(Exit::AlreadyOver(status));
                self.state = WorkerState::Exited;
                Some(Command::Exit)
            }
            RunStatus::DeadLettered { reason, .. } => self.wait_for_person(WaitReason::DeadLettered {
                run_id: self.setup.run_id.clone(),
                reason,
            }),
            RunStatus::AwaitingReconciliation { key } => {
                let Some(call) = self.run.pending.clone() else {
                    return self.wait_for_person(WaitReason::NoPendingCall { awaited: key });
                };
                if let Err(refused) = self.begin_call(call) {
                    return self.wait_for_person(WaitReason::PendingCallRefused(refused));
                }
                if self.context().key.as_str() != key {
                    return self.wait_for_person(WaitReason::KeyMismatch {
                        awaited: key,
                        found: self.context().key.clone(),
                    });
                }
                self.state = WorkerState::Reconciling;
                Some(Command::ReadRecord {
                    key: self.context().key.clone(),
                })
            }
            _ => {
                self.state = WorkerState::Deciding;
                Some(Command::AskModel {
                    state: self.run.clone(),
                })
            }
        }
    }

    pub(super) fn begin_call(&mut self, call: ToolCall) -> Result<(), CallRefused> {
        let Some(tool) = self.setup.tools.iter().find(|tool| tool.name == call.tool).cloned() else {
            return Err(CallRefused::UnknownTool(call.tool));
        };
        let scheme = self.key_scheme();
        let key = IdempotencyKey::make(
            scheme,
            &self.setup.run_id,
            &call.id,
            &call.tool,
            &call.arguments.canonical(),
        )
        .map_err(CallRefused::BadKey)?;
        let attempts_allowed = tool.attempts_allowed(self.guard(Guard::WriteRetryRule));
        self.call = Some(CallContext {
            call,
            key,
            tool,
            attempt: 0,
            attempts_allowed,
            awaiting_attempt: None,
            hook_asked: false,
            may_have_left: false,
            recovered: false,
            compensated: false,
            reserved_at_ms: None,
            earlier_unknown: false,
            looking_again: false,
        });
        Ok(())
    }

    pub(super) fn on_decided(&mut self, now_ms: u64, decision: Decision) -> Option<Command> {
        match decision {
            Decision::Done => {
                self.run.status = RunStatus::Completed;
                self.exit = Some(Exit::Completed);
                self.save(AfterSave::Exit)
            }
            Decision::FailRun { reason } => self.fail_run(reason),
            Decision::Calls(batch) if batch.len() > 1 => self.begin_batch(now_ms, batch.into_calls()),
            Decision::Calls(batch) => {
                let call = batch.into_calls().into_iter().next().expect("a batch holds a call");
                self.begin_one(now_ms, call)
            }
            Decision::Call(call) => self.begin_one(now_ms, call),
        }
    }

    /// The model's call (or a batch's next): reserved, or sent straight away without a ledger.
    pub(super) fn begin_one(&mut self, now_ms: u64, call: ToolCall) -> Option<Command> {
        if let Err(refused) = self.begin_call(call) {
            return match refused {
                CallRefused::UnknownTool(tool) => {
                    self.fail_run((self.setup.words.fail)(&FailReason::UnknownTool { tool }))
                }
                CallRefused::BadKey(_) => self.wait_for_person(WaitReason::ModelCallRefused(refused)),
            };
        }
        if !self.guard(Guard::Ledger) {
            return self.invoke(now_ms, 1);
        }
        self.state = WorkerState::Reserving;
        let context = self.context();
        let (key, call, side_effect) = (context.key.clone(), context.call.clone(), context.tool.side_effect);
        if self.guard(Guard::AtomicReservation) {
            Some(Command::Reserve {
                key,
                call,
                side_effect,
                lease_ms: self.lease(),
                checkpoint_version: self.fence(),
            })
        } else {
            Some(Command::CheckLedger { key })
        }
    }
}
