//! One call: the reservation's answer, the send, the answer or the timeout, the record.

use super::*;

impl Worker {
    /// The naive reservation's read came back: the decision table on what it saw.
    pub(super) fn checked(&mut self, now_ms: u64, existing: Option<ExecutionRecord>) -> Option<Command> {
        let side_effect = self.context().tool.side_effect;
        if let Some(record) = &existing
            && record.arguments != self.context().call.arguments.canonical()
        {
            return self.arguments_mismatch(now_ms, record.clone());
        }
        let lease_expired = !self.guard(Guard::NoLeaseExpiry)
            && existing
                .as_ref()
                .is_some_and(|record| record.lease_expires_at_ms.is_some_and(|expires| now_ms >= expires));
        let action = reservation_action(
            existing.as_ref().map(|record| record.status),
            side_effect,
            lease_expired,
        );
        match action {
            ReservationAction::RunNew | ReservationAction::RunAgain | ReservationAction::TakeOverExpiredLease => {
                let context = self.context();
                Some(Command::InsertStarted {
                    key: context.key.clone(),
                    call: context.call.clone(),
                    side_effect,
                    lease_ms: self.lease(),
                    checkpoint_version: self.fence(),
                })
            }
            _ => self.on_reservation(now_ms, action, existing),
        }
    }

    /// The key already belongs to a call with other arguments: a replay that reworded its
    /// arguments (the model is asked again after a recovery) kept its key. The ledger's record
    /// is that call: it is never served to the new wording as if it were its result, and it is
    /// never left unattended. An unknown record goes down the unknown path (hook, pause) under
    /// its own arguments; a settled one is the call's truth; only a `failed` one ends the run,
    /// since nothing of it stands and its key cannot carry the new wording.
    ///
    /// A call whose id this run was already told about is no replay: the model (or its
    /// provider) reused a call id for another call. It is refused — not run, and not served the
    /// earlier call's result as if it were its own — and the model hears so.
    pub(super) fn arguments_mismatch(&mut self, now_ms: u64, existing: ExecutionRecord) -> Option<Command> {
        let key = self.context().key.clone();
        self.note(
            Guard::Ledger,
            Held::ArgumentsRefused {
                recorded_arguments: existing.arguments.clone(),
            },
        );
        let call_id = &self.context().call.id;
        let answered_before = self.run.transcript.iter().any(|(told, _)| told == call_id);
        if answered_before && existing.run_id == self.setup.run_id {
            let reason = (self.setup.words.told_failed)(ToldFailed::CallIdReused);
            return self.tell_refused(Told::Failed { reason });
        }
        if self.guard(Guard::KeyPerCall) && existing.run_id == self.setup.run_id {
            self.note(Guard::KeyPerCall, Held::RewordedReplayRecognised);
        }
        match existing.status {
            Status::Failed => self.fail_run((self.setup.words.fail)(&FailReason::KeyTakenByFailedCall { key })),
            Status::Started | Status::Indeterminate => {
                // Attend the recorded call: its own arguments, recovered like any unknown call.
                if let Ok(arguments) = serde_json::from_str(&existing.arguments) {
                    self.context_mut().call.arguments = arguments;
                }
                self.on_reservation(now_ms, ReservationAction::Unknown, Some(existing))
            }
            Status::Completed => self.on_reservation(now_ms, ReservationAction::ReturnRecorded, Some(existing)),
            Status::Compensating | Status::Compensated => {
                self.on_reservation(now_ms, ReservationAction::ReturnCompensated, Some(existing))
            }
        }
    }

    pub(super) fn on_reservation(
        &mut self,
        now_ms: u64,
        action: ReservationAction,
        record: Option<ExecutionRecord>,
    ) -> Option<Command> {
        match action {
            ReservationAction::RunNew | ReservationAction::RunAgain | ReservationAction::TakeOverExpiredLease => {
                if let Some(record) = &record {
                    let taken_over = action == ReservationAction::TakeOverExpiredLease;
                    let context = self.context_mut();
                    context.reserved_at_ms = Some(record.created_at_ms);
                    if taken_over && record.attempts > 0 {
                        // The owner whose lease ran out may have sent it: a send now is a resend.
                        context.earlier_unknown = true;
                        context.attempt = record.attempts;
                    }
                }
                self.invoke(now_ms, 1)
            }
            ReservationAction::ReturnRecorded => {
                self.note(Guard::Ledger, Held::ReturnedRecordedResult);
                self.tell(Told::Result {
                    result: record.and_then(|record| record.result).unwrap_or_default(),
                })
            }
            ReservationAction::ReturnCompensated => self.tell(Told::Compensated),
            ReservationAction::Unknown => {
                self.context_mut().recovered = true;
                let Some(record) = record else {
                    return self.unknown();
                };
                let other_run = (record.run_id != self.setup.run_id).then(|| record.run_id.clone());
                self.note(
                    Guard::Ledger,
                    Held::ReplayNotRun {
                        status: record.status,
                        other_run,
                    },
                );
                if record.owner != self.setup.worker_id
                    && record.run_id == self.setup.run_id
                    && record.created_at_ms >= self.loaded_at_ms
                    && self.guard(Guard::AtomicReservation)
                {
                    self.note(
                        Guard::AtomicReservation,
                        Held::RacingReservationLost {
                            winner: record.owner.clone(),
                        },
                    );
                }
                let started_for_ms = now_ms.saturating_sub(record.updated_at_ms);
                if let Some(lease_ms) = self.setup.lease_ms
                    && record.status == Status::Started
                    && started_for_ms >= lease_ms
                {
                    self.note(
                        Guard::NoLeaseExpiry,
                        Held::LeaseNotReclaimed {
                            started_for_ms,
                            lease_ms,
                        },
                    );
                }
                self.unknown()
            }
        }
    }

    pub(super) fn invoke(&mut self, now_ms: u64, attempt: u32) -> Option<Command> {
        let downstream = self.guard(Guard::KeyDownstream) && self.context().tool.takes_key;
        if downstream && let Some(refused) = self.resend_refusal(now_ms) {
            return refused;
        }
        let context = self.context_mut();
        context.reserved_at_ms.get_or_insert(now_ms);
        context.attempt = attempt;
        context.awaiting_attempt = Some(attempt);
        self.state = WorkerState::Calling;
        let context = self.context();
        Some(Command::Invoke {
            key: context.key.clone(),
            downstream_key: downstream.then(|| context.key.clone()),
            call: context.call.clone(),
            attempt,
        })
    }

    /// The send fence refused: nothing was sent. The worker follows the record: a settled
    /// call is the truth; a call another worker now owns (or an unknown one) is unknown to it.
    pub(super) fn attempt_refused(
        &mut self,
        record: Option<ExecutionRecord>,
        decision: Option<OperatorDecision>,
    ) -> Option<Command> {
        let context = self.context_mut();
        context.awaiting_attempt = None;
        let key = context.key.clone();
        let (status, owner) = (
            record.as_ref().map(|record| record.status),
            record.as_ref().map(|record| record.owner.clone()),
        );
        self.note(Guard::Ledger, Held::SendRefused { status, owner });
        match record {
            Some(record) if record.status.is_settled() => self.truth_or_unknown(Some(record), decision),
            Some(_) => {
                self.context_mut().recovered = true;
                self.unknown()
            }
            None => self.fail_run((self.setup.words.fail)(&FailReason::NoRecordToSendUnder { key })),
        }
    }

    pub(super) fn response(&mut self, key: IdempotencyKey, attempt: u32, answer: ToolAnswer) -> Option<Command> {
        let Some(context) = self
            .call
            .as_mut()
            .filter(|context| context.key == key && context.awaiting_attempt == Some(attempt))
        else {
            return self.late(key, attempt, &answer);
        };
        context.awaiting_attempt = None;
        context.may_have_left = true;
        let end = if answer.is_rejection() {
            AttemptEnd::Rejected
        } else {
            AttemptEnd::Succeeded
        };
        if let ToolAnswer::Repeat { first, .. } = &answer {
            self.note(Guard::KeyDownstream, Held::FirstAnswerRepeated { first: first.clone() });
        }
        let context = self.context();
        let (side_effect, attempt, attempts_allowed) =
            (context.tool.side_effect, context.attempt, context.attempts_allowed);
        match self.outcome(side_effect, end, attempt, attempts_allowed) {
            OutcomeAction::Record(outcome) => self.record(outcome, Some(answer.receipt().to_owned())),
            OutcomeAction::Retry { .. } => unreachable!("table 2 never retries an answer"),
        }
    }

    /// A timeout, or an end the tool calls unknown (`reason`: its words, written into the
    /// call's history when the call is recorded `indeterminate`).
    pub(super) fn timed_out(&mut self, key: IdempotencyKey, attempt: u32, reason: Option<String>) -> Option<Command> {
        // A timer of an earlier call (or attempt) that was answered in time is stale.
        let context = self
            .call
            .as_mut()
            .filter(|context| context.key == key && context.awaiting_attempt == Some(attempt))?;
        context.awaiting_attempt = None;
        context.may_have_left = true;
        let (side_effect, attempts_allowed) = (context.tool.side_effect, context.attempts_allowed);
        match self.outcome(side_effect, AttemptEnd::TimedOut, attempt, attempts_allowed) {
            OutcomeAction::Retry { backoff_ms } => {
                self.context_mut().earlier_unknown = true;
                Some(Command::Backoff {
                    after_ms: backoff_ms,
                    next_attempt: attempt + 1,
                })
            }
            OutcomeAction::Record(Outcome::Indeterminate) => {
                // One attempt comes from the write retry rule, or from a declaration that asked
                // for one (then the rule may be off, and it is the declaration that held).
                if self.guard(Guard::WriteRetryRule) {
                    self.note(Guard::WriteRetryRule, Held::WriteNotRetried);
                }
                self.record(Outcome::Indeterminate, reason)
            }
            OutcomeAction::Record(outcome) => {
                let result = self.record_words(&RecordNote::TimedOut { attempts: attempt });
                self.record(outcome, Some(result))
            }
        }
    }

    /// An answer nobody waits for (its attempt timed out, or the worker moved on): logged
    /// under its own key, whatever the worker is doing now, and ignored.
    pub(super) fn late(&mut self, key: IdempotencyKey, attempt: u32, answer: &ToolAnswer) -> Option<Command> {
        if !self.guard(Guard::Ledger) {
            return None;
        }
        let says = if answer.is_rejection() {
            Outcome::Failed
        } else {
            Outcome::Completed
        };
        Some(Command::LogLateOutcome {
            key,
            attempt,
            says,
            detail: self.record_words(&RecordNote::AnsweredLate {
                attempt,
                receipt: answer.receipt().to_owned(),
            }),
        })
    }

    pub(super) fn record(&mut self, outcome: Outcome, result: Option<String>) -> Option<Command> {
        if !self.guard(Guard::Ledger) {
            return self.after_record(outcome.status(), result);
        }
        self.state = WorkerState::Recording;
        let context = self.context();
        Some(Command::RecordOutcome {
            key: context.key.clone(),
            outcome,
            result,
            attempt: context.attempt,
        })
    }

    pub(super) fn after_record(&mut self, status: Status, result: Option<String>) -> Option<Command> {
        match status {
            Status::Completed => self.tell(Told::Result {
                result: result.unwrap_or_default(),
            }),
            Status::Failed => {
                if self.guard(Guard::Ledger) {
                    self.relied_failure = Some(self.context().key.clone());
                }
                let reason =
                    result.unwrap_or_else(|| (self.setup.words.told_failed)(ToldFailed::RecordedWithoutResult));
                self.tell_failed(reason)
            }
            Status::Indeterminate | Status::Started => self.unknown(),
            Status::Compensating | Status::Compensated => self.tell(Told::Compensated),
        }
    }
}
