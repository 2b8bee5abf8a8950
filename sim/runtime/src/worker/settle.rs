//! What the model is told: settled truth, the unknown path (table 3), a failed run (table 4), the save.

use super::*;

/// What the machine does once the checkpoint is saved.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum AfterSave {
    AskModel,
    Park,
    /// Read the record of the call a paused run waits on next (a batch's).
    ReadPending,
    Exit,
}

/// A naive runtime undoing a failed run (guard `no_reflex_compensation` off): the calls
/// that took effect and have a compensation, compensated one at a time, then the run is
/// saved failed.
#[derive(Clone, Debug)]
pub(super) struct RunUndo {
    pub(super) reason: String,
    pub(super) left: Vec<(IdempotencyKey, ToolCall)>,
}

impl Worker {
    /// The settled truth of a record, or the unknown path if it is still unknown. An
    /// operator's `decision` behind a settlement is told with it: who decided, and why.
    pub(super) fn truth_or_unknown(
        &mut self,
        record: Option<ExecutionRecord>,
        decision: Option<OperatorDecision>,
    ) -> Option<Command> {
        let told = |settled: Settled, plain: Told| match decision {
            Some(OperatorDecision { operator, reason, .. }) => Told::SettledByOperator {
                settled,
                operator,
                reason,
            },
            None => plain,
        };
        match record.map(|record| (record.status, record.result)) {
            Some((Status::Completed, result)) => self.tell(Told::Result {
                result: result.unwrap_or_default(),
            }),
            Some((Status::Failed, _)) => {
                self.relied_failure = Some(self.context().key.clone());
                self.tell(told(Settled::DidNotTakeEffect, Told::DidNotTakeEffect))
            }
            Some((Status::Compensating | Status::Compensated, _)) => {
                self.tell(told(Settled::Compensated, Told::Compensated))
            }
            Some((Status::Started | Status::Indeterminate, _)) | None => self.unknown(),
        }
    }

    /// Table 3: the call's outcome is unknown.
    pub(super) fn unknown(&mut self) -> Option<Command> {
        let context = self.context();
        // A naive runtime undoes what it cannot account for, by reflex, even on recovery.
        if context.recovered
            && context.tool.compensation
            && !context.compensated
            && let Some(compensate) = self.reflex_compensation(true)
        {
            return Some(compensate);
        }
        let context = self.context();
        let hook_available = self.guard(Guard::ReconcileHook) && self.guard(Guard::Ledger) && context.tool.reconcile;
        let (hook_already_asked, pause) = (context.hook_asked, self.guard(Guard::PauseOnIndeterminate));
        let action = unknown_action(hook_available, hook_already_asked, pause);
        self.fired.push(Fired::Unknown {
            hook_available,
            hook_already_asked,
            pause,
            action,
        });
        match action {
            UnknownAction::AskReconcileHook => {
                let context = self.context_mut();
                context.hook_asked = true;
                let (key, call) = (context.key.clone(), context.call.clone());
                self.state = WorkerState::Reconciling;
                Some(Command::Reconcile { key, call })
            }
            UnknownAction::Pause => {
                if let Some(set_aside) = self.pause_in_batch() {
                    return set_aside;
                }
                let context = self.context();
                let (key, call) = (context.key.clone(), context.call.clone());
                let already_waiting = self.run.status == RunStatus::AwaitingReconciliation { key: key.to_string() }
                    && self.run.pending.as_ref() == Some(&call);
                if already_waiting {
                    // Looked again and still unknown: the saved checkpoint already says so.
                    self.state = WorkerState::Parked;
                    return Some(Command::Park { key });
                }
                self.note(Guard::PauseOnIndeterminate, Held::Paused);
                self.run.status = RunStatus::AwaitingReconciliation { key: key.to_string() };
                self.run.pending = Some(call);
                self.save(AfterSave::Park)
            }
            UnknownAction::TellModelFailed => {
                self.tell_failed((self.setup.words.told_failed)(ToldFailed::UnknownReported))
            }
        }
    }

    /// A call that may have taken effect is unknown or failed: a naive runtime (guard
    /// `no_reflex_compensation` off) undoes it by reflex, and this is that command; the
    /// runtime does not, and notes it (`recovered`: a recovered run met the call unknown).
    /// Either way it is decided once per call.
    pub(super) fn reflex_compensation(&mut self, recovered: bool) -> Option<Command> {
        let context = self.context_mut();
        context.compensated = true;
        if self.guard(Guard::NoReflexCompensation) {
            self.note(Guard::NoReflexCompensation, Held::NotCompensated { recovered });
            return None;
        }
        let context = self.context();
        let (key, call) = (context.key.clone(), context.call.clone());
        self.state = WorkerState::Recording;
        Some(Command::Compensate { key, call })
    }

    pub(super) fn tell_failed(&mut self, reason: String) -> Option<Command> {
        let context = self.context();
        if context.may_have_left
            && context.tool.compensation
            && !context.compensated
            && let Some(compensate) = self.reflex_compensation(false)
        {
            return Some(compensate);
        }
        self.tell(Told::Failed { reason })
    }

    pub(super) fn tell(&mut self, told: Told) -> Option<Command> {
        let context = self.call.take().expect("a call to tell about");
        self.run.tell(&context.call, told);
        self.told_next()
    }

    /// Tells the model about a call refused under an id the transcript already holds (a
    /// reused call id): the model hears it (`last_told`), while the transcript keeps one entry
    /// per id — the call that id was — and the refusal is in the run's history.
    pub(super) fn tell_refused(&mut self, told: Told) -> Option<Command> {
        self.call = None;
        self.run.last_told = Some(told);
        self.told_next()
    }

    /// A call is told: the batch goes on, a paused run's next call is read, or the run is
    /// saved and the model asked.
    fn told_next(&mut self) -> Option<Command> {
        if self.batch.is_some() {
            return self.batch_next();
        }
        if let Some(next) = self.next_pending() {
            return next;
        }
        self.run.status = RunStatus::Running;
        self.run.pending = None;
        self.save(AfterSave::AskModel)
    }

    /// The run fails. Table 4: whatever of it took effect is compensated by reflex (a naive
    /// runtime) or left standing for an operator (the runtime cannot tell whether a failure
    /// later in the run makes an earlier effect wrong); then the run is saved failed.
    pub(super) fn fail_run(&mut self, reason: String) -> Option<Command> {
        self.call = None;
        // Calls of a batch still out stay as their records say (started: unknown), for an
        // operator, as a single call's does.
        self.batch = None;
        self.run.pending = None;
        self.run.pending_calls.clear();
        let took_effect = self.compensable_effects();
        let count = u32::try_from(took_effect.len()).unwrap_or(u32::MAX);
        let reflex = !self.guard(Guard::NoReflexCompensation);
        let action = failed_run_undo(count, reflex);
        if let Some(action) = action {
            self.fired.push(Fired::FailedRunUndo {
                took_effect: count,
                reflex,
                action,
            });
        }
        match action {
            Some(FailedRunAction::CompensateWhatTookEffect) => {
                self.undoing = Some(RunUndo {
                    reason,
                    left: took_effect,
                });
                self.undo_next()
            }
            Some(FailedRunAction::LeaveToOperator) => {
                let keys: Vec<String> = took_effect.iter().map(|(key, _)| key.to_string()).collect();
                assert!(!keys.is_empty(), "only a run with effects leaves them to an operator");
                self.note_on(
                    Guard::NoReflexCompensation,
                    keys.first().cloned(),
                    Held::FailedRunNotUndone { keys },
                );
                self.finish_failed(reason)
            }
            Some(FailedRunAction::StartFreshRun { .. } | FailedRunAction::StayFailed) | None => {
                self.finish_failed(reason)
            }
        }
    }

    /// The calls of this run that took effect and have a compensation, with their keys, oldest first.
    pub(super) fn compensable_effects(&self) -> Vec<(IdempotencyKey, ToolCall)> {
        let scheme = self.key_scheme();
        self.run
            .took_effect
            .iter()
            .filter(|call| {
                self.setup
                    .tools
                    .iter()
                    .any(|tool| tool.name == call.tool && tool.compensation)
            })
            .filter_map(|call| {
                IdempotencyKey::make(
                    scheme,
                    &self.setup.run_id,
                    &call.id,
                    &call.tool,
                    &call.arguments.canonical(),
                )
                .ok()
                .map(|key| (key, call.clone()))
            })
            .collect()
    }

    /// The next reflex compensation of a failed run, or, all done, the failed run's save.
    pub(super) fn undo_next(&mut self) -> Option<Command> {
        let undo = self.undoing.as_mut().expect("a failed run is being undone");
        if undo.left.is_empty() {
            let reason = self.undoing.take().expect("checked").reason;
            return self.finish_failed(reason);
        }
        let (key, call) = undo.left.remove(0);
        self.undone_on_failure.push(key.clone());
        self.state = WorkerState::Recording;
        Some(Command::Compensate { key, call })
    }

    pub(super) fn finish_failed(&mut self, reason: String) -> Option<Command> {
        self.exit = Some(Exit::Failed { reason: reason.clone() });
        self.run.status = RunStatus::Failed { reason };
        self.save(AfterSave::Exit)
    }

    pub(super) fn save(&mut self, after: AfterSave) -> Option<Command> {
        self.after_save = after;
        self.state = WorkerState::Saving;
        let expected_version = self.guard(Guard::CheckpointVersion).then_some(self.loaded_version);
        let still_failed = self
            .relied_failure
            .take()
            .filter(|_| self.guard(Guard::CheckpointVersion));
        Some(Command::SaveCheckpoint {
            state: self.run.clone(),
            expected_version,
            still_failed,
        })
    }

    pub(super) fn saved(&mut self, outcome: SaveOutcome) -> Option<Command> {
        match outcome {
            SaveOutcome::Saved { version } => {
                self.loaded_version = version;
                match self.after_save {
                    AfterSave::AskModel => {
                        self.state = WorkerState::Deciding;
                        Some(Command::AskModel {
                            state: self.run.clone(),
                        })
                    }
                    AfterSave::ReadPending => {
                        self.state = WorkerState::Reconciling;
                        Some(Command::ReadRecord {
                            key: self.context().key.clone(),
                        })
                    }
                    AfterSave::Park => {
                        self.state = WorkerState::Parked;
                        Some(Command::Park {
                            key: self.context().key.clone(),
                        })
                    }
                    AfterSave::Exit => {
                        self.state = WorkerState::Exited;
                        Some(Command::Exit)
                    }
                }
            }
            SaveOutcome::TakenOver { key, status, owner } => {
                self.stand_down(Held::FailureTakenOver { key, owner, status })
            }
            SaveOutcome::Stale { expected, found } => self.stand_down(Held::StaleSave { expected, found }),
            // The run would end with a call that may have been sent left unknown: not saved
            // (the checkpoint stays where it was), and a person settles the call; the next
            // worker then finds it settled and the run ends as the model decided.
            SaveOutcome::Abandoned { key, status } => self.wait_for_person(WaitReason::AbandonedCall {
                run_id: self.setup.run_id.clone(),
                key,
                status,
            }),
        }
    }
}
