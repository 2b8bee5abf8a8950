//! What operators do: resolve an unknown call, or ask for its compensation.
//!
//! One implementation, used by every operator console
//! and the HTTP API. Every decision is compare-and-set on the ledger status, needs a reason and
//! an operator id, and is appended to the record's history.
//!
//! A compensation asks the tool's world before it changes anything, and never holds the
//! ledger while it asks: it reads the record, looks the effect up by the call's key (a read
//! that may run any number of times), claims the record `compensating` (compare-and-set: of two
//! requests one claims), undoes that one effect by its reference, and records the outcome —
//! each ledger step a short transaction of its own ([`LedgerAccess`]), so a slow world never
//! holds a connection. An undo that fails leaves the record `compensating`, visible, and a
//! later request finishes it: the world's undo by reference is idempotent.

use crate::key::IdempotencyKey;
use crate::ledger::{ExecutionRecord, HistoryEvent, Ledger, LedgerError, SettleError, Settlement};
use crate::rules::Status;
use crate::worker::{OperatorNote, Reconciled, Words};
mod error;
mod reason;
mod runs;
mod target;

pub use error::OperatorError;
pub use reason::{REASON_CHARS_MAX, ReasonError, check_reason};
pub use runs::{DeadLetteredRun, ResumeRequest, dead_lettered_runs, resume};
pub use target::{CompensationTarget, Effect, LookupError, UndoError};

/// An operator's resolve.
///
/// ```
/// use twice_runtime::Status;
/// use twice_runtime::operator::ResolveRequest;
/// let mut request = ResolveRequest::new(Status::Failed, "no credit in the provider's dashboard", "op-ana");
/// request.expected_status = Some(Status::Indeterminate);
/// assert!(!request.acknowledge_in_flight, "a `started` call is refused unless asked");
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ResolveRequest {
    /// What the operator found: `completed` or `failed`.
    pub status: Status,
    /// Why, in words: it goes into the record's history.
    pub reason: String,
    /// Who decided: the history names them.
    pub operator: String,
    /// Compare-and-set: the status the operator saw; `None`: any unknown status.
    pub expected_status: Option<Status>,
    /// The result to record for a `completed` call (a receipt the operator found).
    pub result: Option<String>,
    /// The operator knows the call is `started` — a worker holds it, and its request may still
    /// be on its way to the other system, where no lookup sees it yet — and settles it
    /// anyway (its worker is known dead, say). Without it, resolving a `started` call is
    /// refused ([`OperatorError::InFlight`]): its own outcome could arrive and contradict
    /// the decision.
    pub acknowledge_in_flight: bool,
}

impl ResolveRequest {
    /// `operator` resolves a call as `status` (`completed` or `failed`) because of `reason`:
    /// any unknown status but `started`, no result.
    pub fn new(status: Status, reason: impl Into<String>, operator: impl Into<String>) -> ResolveRequest {
        ResolveRequest {
            status,
            reason: reason.into(),
            operator: operator.into(),
            expected_status: None,
            result: None,
            acknowledge_in_flight: false,
        }
    }

    /// The same request, compare-and-set on the status the operator saw.
    #[must_use]
    pub fn with_expected_status(mut self, status: Status) -> ResolveRequest {
        self.expected_status = Some(status);
        self
    }

    /// The same request recording `result` (a receipt the operator found) for a `completed` call.
    #[must_use]
    pub fn with_result(mut self, result: impl Into<String>) -> ResolveRequest {
        self.result = Some(result.into());
        self
    }

    /// The same request recording a tool's typed output (a receipt the operator found) for a
    /// `completed` call, written as the tool's own result is written
    /// ([`crate::toolbox::Tool::Output`] as JSON), so the model hears the same shape whoever
    /// settled the call.
    ///
    /// ```
    /// use twice_runtime::Status;
    /// use twice_runtime::operator::ResolveRequest;
    /// #[derive(serde::Serialize)]
    /// struct Sent { message_id: String }
    /// let request = ResolveRequest::new(Status::Completed, "the provider's log shows it", "op-ana")
    ///     .with_typed_result(&Sent { message_id: "msg-1".into() })?;
    /// assert_eq!(request.result.as_deref(), Some(r#"{"message_id":"msg-1"}"#));
    /// # Ok::<(), serde_json::Error>(())
    /// ```
    ///
    /// # Errors
    ///
    /// serde's error when `output` cannot be written as JSON (a map whose keys are not
    /// strings, a failing `Serialize`): nothing is recorded from a result that cannot be read.
    pub fn with_typed_result(self, output: &impl serde::Serialize) -> Result<ResolveRequest, serde_json::Error> {
        let result = serde_json::to_string(output)?;
        Ok(self.with_result(result))
    }

    /// The same request settling a `started` call on purpose: the operator knows its request
    /// may still be in flight (see [`ResolveRequest::acknowledge_in_flight`]).
    #[must_use]
    pub fn acknowledging_in_flight(mut self) -> ResolveRequest {
        self.acknowledge_in_flight = true;
        self
    }
}

/// An operator's request to undo a call's effect ([`CompensateRequest::new`]).
#[derive(Clone, Copy, Debug)]
#[non_exhaustive]
pub struct CompensateRequest<'a> {
    /// The call to undo.
    pub key: &'a IdempotencyKey,
    /// Why, in words: it goes into the record's history.
    pub reason: &'a str,
    /// Who asked: the history names them.
    pub operator: &'a str,
}

impl<'a> CompensateRequest<'a> {
    /// `operator` asks to undo call `key` because of `reason`.
    #[must_use]
    pub fn new(key: &'a IdempotencyKey, reason: &'a str, operator: &'a str) -> CompensateRequest<'a> {
        CompensateRequest { key, reason, operator }
    }
}

/// The ledger, one short use at a time: a connection is taken for one step and given back
/// before the next, so nothing holds it while the tool's world is asked. `Ledger` itself (a single
/// process's connection) is one; an HTTP API's pool of connections is another.
pub trait LedgerAccess {
    /// Runs `step` on the ledger; `Err` when the ledger cannot be reached.
    ///
    /// # Errors
    ///
    /// [`LedgerError`] when the ledger cannot be reached (no connection free, the file gone).
    fn with_ledger<T>(&mut self, step: impl FnOnce(&mut Ledger) -> T) -> Result<T, LedgerError>;
    /// What time it is now, in milliseconds, for the step about to be written.
    fn now_ms(&mut self) -> u64;
}

/// A ledger the caller holds, with the time it gives.
#[derive(Debug)]
pub struct HeldLedger<'a> {
    /// The ledger.
    pub ledger: &'a mut Ledger,
    /// The time every step is written at, in milliseconds on the clock the ledger's records use.
    pub now_ms: u64,
}

impl LedgerAccess for HeldLedger<'_> {
    fn with_ledger<T>(&mut self, step: impl FnOnce(&mut Ledger) -> T) -> Result<T, LedgerError> {
        Ok(step(self.ledger))
    }

    fn now_ms(&mut self) -> u64 {
        self.now_ms
    }
}

fn check_who_and_why(reason: &str, operator: &str) -> Result<(), OperatorError> {
    check_reason(reason)?;
    if operator.trim().is_empty() {
        return Err(OperatorError::MissingOperator);
    }
    Ok(())
}

/// Records what the operator found: compare-and-set, appended to the history.
///
/// # Errors
///
/// Nothing is recorded when the reason or the operator is missing or unreadable, the status
/// is not `completed` or `failed`, the call is `started` and the request does not acknowledge
/// it may be in flight ([`OperatorError::InFlight`]), or the ledger refuses (no such call, a
/// stale compare-and-set, a call settled already) or fails.
pub fn resolve(
    ledger: &mut Ledger,
    key: &IdempotencyKey,
    request: &ResolveRequest,
    now_ms: u64,
) -> Result<ExecutionRecord, OperatorError> {
    let _entered = tracing::info_span!(
        "twice_runtime::resolve",
        %key,
        operator = %request.operator,
        status = request.status.name(),
    )
    .entered();
    check_who_and_why(&request.reason, &request.operator)?;
    if !matches!(request.status, Status::Completed | Status::Failed) {
        return Err(OperatorError::BadStatus(request.status));
    }
    let settlement = Settlement {
        to: request.status,
        expected: request.expected_status,
        expected_attempts: None,
        actor: &request.operator,
        event: HistoryEvent::Resolved,
        reason: Some(&request.reason),
        result: request.result.as_deref(),
        detail: None,
        settles_started: request.acknowledge_in_flight,
    };
    ledger.settle(key, &settlement, now_ms).map_err(|error| match error {
        SettleError::InFlight { current, .. } => OperatorError::InFlight {
            key: key.clone(),
            parked_by: parked_since(ledger, &current),
            owner: current.owner.clone(),
            attempts: current.attempts,
            since_ms: current.updated_at_ms,
        },
        error => error.into(),
    })
}

/// The worker that saved `record`'s run paused on an unknown call after `record` was last
/// written, if another than its owner did: the run was recovered while the owner held the
/// call. Only for the words of a refusal, so a ledger that cannot be read says nothing.
fn parked_since(ledger: &Ledger, record: &ExecutionRecord) -> Option<crate::ids::WorkerId> {
    let checkpoint = ledger.load_checkpoint(&record.run_id).ok()??;
    let parked = checkpoint.status == "awaiting_reconciliation";
    (parked && checkpoint.saved_by != record.owner && checkpoint.updated_at_ms >= record.updated_at_ms)
        .then_some(checkpoint.saved_by)
}

/// Whether a compensation may be asked for at all, without changing anything: a reason and an
/// operator, a record under the key, a tool with a compensation, and a status that may have
/// taken effect and is not compensated yet (`compensating` may be asked again: it finishes an
/// undo that failed). Returns the record as it stands.
///
/// # Errors
///
/// [`OperatorError`]: the call is not found, belongs to another tenant, is not in a status that may
/// be compensated, or its tool has no compensation; or the ledger failed.
pub fn check_compensable(
    ledger: &Ledger,
    request: &CompensateRequest<'_>,
    has_compensation: impl FnOnce(&str) -> bool,
) -> Result<ExecutionRecord, OperatorError> {
    check_who_and_why(request.reason, request.operator)?;
    let key = request.key;
    let current = ledger.record(key)?.ok_or_else(|| SettleError::NotFound(key.clone()))?;
    if !has_compensation(&current.tool) {
        return Err(OperatorError::NoCompensation(current.tool.into_string()));
    }
    match current.status {
        Status::Compensated => Err(OperatorError::AlreadyCompensated(key.clone())),
        Status::Failed => Err(OperatorError::NothingToCompensate {
            key: key.clone(),
            status: current.status,
        }),
        Status::Completed | Status::Started | Status::Indeterminate | Status::Compensating => Ok(current),
    }
}

/// Undoes a call's effect once, on an operator's decision — the one implementation for every
/// console (see the module's documentation for the steps).
///
/// When the world holds no effect under the key and is applying none, nothing is undone
/// (voiding a credit that was never issued takes the customer's money) and the call is
/// settled `failed` — but only when the record proves that nothing can still arrive: a
/// `started` call whose request never passed the send fence (no attempt noted). Otherwise
/// "absent" is not proof, and the request is refused ([`OperatorError::MayBeOnItsWay`]).
///
/// `words` word what the history keeps beside the operator's reason ([`OperatorNote`]).
///
/// # Errors
///
/// [`OperatorError`]: refused as [`check_compensable`] refuses, the effect cannot be found or
/// undone in the tool's world, another operator settled the call first (compare-and-set), or the
/// ledger failed.
pub fn compensate(
    access: &mut impl LedgerAccess,
    target: &mut impl CompensationTarget,
    request: &CompensateRequest<'_>,
    words: &Words,
) -> Result<ExecutionRecord, OperatorError> {
    let key = request.key;
    let _entered = tracing::info_span!("twice_runtime::compensate", %key, operator = %request.operator).entered();
    let seen =
        access.with_ledger(|ledger| check_compensable(ledger, request, |tool| target.has_compensation(tool)))??;
    // Read-only, before anything is claimed: what is not there is not undone, and what
    // cannot be looked up is not guessed at.
    let effect = target
        .find_effect(&seen)
        .map_err(|error| OperatorError::Lookup(error, Box::new(seen.clone())))?;
    match effect {
        Effect::Absent { detail: finding } => settle_nothing_to_compensate(access, request, &seen, finding, words),
        Effect::Found {
            reference,
            detail: found,
        } => {
            let claimed = if seen.status == Status::Compensating {
                seen
            } else {
                claim(access, request, &seen, &found)?
            };
            match target.undo(&claimed, &reference) {
                Ok(done) => {
                    let detail = (words.operator)(&OperatorNote::Undone {
                        found: found.clone(),
                        done,
                    });
                    let now_ms = access.now_ms();
                    let settlement = Settlement {
                        to: Status::Compensated,
                        expected: Some(Status::Compensating),
                        expected_attempts: None,
                        actor: request.operator,
                        event: HistoryEvent::CompensationApplied,
                        reason: Some(request.reason),
                        result: None,
                        detail: Some(&detail),
                        settles_started: true,
                    };
                    access
                        .with_ledger(|ledger| ledger.settle(key, &settlement, now_ms))?
                        .map_err(|error| already_compensated(key, error))
                }
                Err(detail) => {
                    let now_ms = access.now_ms();
                    let words = detail.to_string();
                    access.with_ledger(|ledger| {
                        ledger.note(key, request.operator, HistoryEvent::CompensationFailed, &words, now_ms)
                    })??;
                    Err(OperatorError::CompensationFailed {
                        key: key.clone(),
                        detail,
                    })
                }
            }
        }
    }
}

/// Claims `seen` as `compensating`, compare-and-set from the status it was seen with.
fn claim(
    access: &mut impl LedgerAccess,
    request: &CompensateRequest<'_>,
    seen: &ExecutionRecord,
    found: &str,
) -> Result<ExecutionRecord, OperatorError> {
    let now_ms = access.now_ms();
    let settlement = Settlement {
        to: Status::Compensating,
        expected: Some(seen.status),
        expected_attempts: None,
        actor: request.operator,
        event: HistoryEvent::CompensationClaimed,
        reason: Some(request.reason),
        result: None,
        detail: Some(found),
        settles_started: true,
    };
    access
        .with_ledger(|ledger| ledger.settle(request.key, &settlement, now_ms))?
        .map_err(|error| already_compensated(request.key, error))
}

/// A compare-and-set lost to another compensation reads as that compensation's state.
fn already_compensated(key: &IdempotencyKey, error: SettleError) -> OperatorError {
    match error {
        SettleError::Stale { current, .. } | SettleError::AlreadySettled { current, .. }
            if current.status == Status::Compensated =>
        {
            OperatorError::AlreadyCompensated(key.clone())
        }
        SettleError::Stale { current, .. } | SettleError::AlreadySettled { current, .. }
            if current.status == Status::Compensating =>
        {
            OperatorError::CompensationUnderWay { key: key.clone() }
        }
        error => error.into(),
    }
}

/// The world holds no effect: settle the call `failed` if the record proves nothing can still
/// arrive, refuse otherwise (see [`compensate`]).
fn settle_nothing_to_compensate(
    access: &mut impl LedgerAccess,
    request: &CompensateRequest<'_>,
    seen: &ExecutionRecord,
    finding: String,
    words: &Words,
) -> Result<ExecutionRecord, OperatorError> {
    let key = request.key;
    match seen.status {
        Status::Completed | Status::Compensating => {
            return Err(OperatorError::EffectMissing {
                key: key.clone(),
                status: seen.status,
                finding,
            });
        }
        Status::Compensated => return Err(OperatorError::AlreadyCompensated(key.clone())),
        Status::Failed => {
            return Err(OperatorError::NothingToCompensate {
                key: key.clone(),
                status: seen.status,
            });
        }
        Status::Started | Status::Indeterminate if seen.attempts > 0 => {
            return Err(OperatorError::MayBeOnItsWay {
                key: key.clone(),
                attempts: seen.attempts,
                finding,
            });
        }
        Status::Started | Status::Indeterminate => {}
    }
    let now_ms = access.now_ms();
    let detail = (words.operator)(&OperatorNote::NothingToUndo {
        finding: finding.clone(),
    });
    let settlement = Settlement {
        to: Status::Failed,
        expected: Some(seen.status),
        // The send fence writes the attempt in the same row: settled first, the worker's
        // fence refuses its send; fenced first, this compare-and-set fails.
        expected_attempts: Some(0),
        actor: request.operator,
        event: HistoryEvent::NothingToCompensate,
        reason: Some(request.reason),
        result: None,
        detail: Some(&detail),
        settles_started: true,
    };
    access
        .with_ledger(|ledger| ledger.settle(key, &settlement, now_ms))?
        .map_err(|error| match error {
            SettleError::AttemptNoted { current, .. } => OperatorError::MayBeOnItsWay {
                key: key.clone(),
                attempts: current.attempts,
                finding: finding.clone(),
            },
            error => already_compensated(key, error),
        })
}

/// Records what a reconcile hook found in the other system: `completed` with its receipt,
/// compare-and-set from whatever unknown status the call has, `reason` (the application's
/// words) in its history. One implementation for every driver (the simulator and real worker
/// processes). A call someone settled first keeps their decision, which the worker then hears.
///
/// # Errors
///
/// [`LedgerError`] when the store fails: another connection holds it past the wait
/// ([`LedgerError::Locked`]), a row this build cannot read ([`LedgerError::BadRow`]), or the
/// store's own failure ([`LedgerError::Failed`], [`LedgerError::Store`]). Nothing of the operation
/// was written.
pub fn record_reconciled(
    ledger: &mut Ledger,
    key: &IdempotencyKey,
    receipt: &str,
    reason: &str,
    now_ms: u64,
) -> Result<Reconciled, LedgerError> {
    let settlement = Settlement {
        to: Status::Completed,
        expected: None,
        expected_attempts: None,
        actor: "reconcile-hook",
        event: HistoryEvent::Reconciled,
        reason: Some(reason),
        result: Some(receipt),
        detail: None,
        settles_started: true,
    };
    Ok(match ledger.settle(key, &settlement, now_ms) {
        Ok(_) => Reconciled::Completed {
            result: receipt.to_owned(),
        },
        Err(SettleError::AlreadySettled { current, .. } | SettleError::Stale { current, .. }) => {
            Reconciled::AlreadySettled(current)
        }
        Err(
            SettleError::NotFound(_)
            | SettleError::NotADecision { .. }
            | SettleError::AttemptNoted { .. }
            | SettleError::InFlight { .. },
        ) => Reconciled::Unknown,
        Err(SettleError::Ledger(error)) => return Err(error),
    })
}

/// Records that a lookup past the tool's declared settle time found nothing (table 6): the
/// call is settled `failed` by the reconcile hook, compare-and-set from whatever unknown status
/// it has, `reason` in its history. A call someone settled first keeps their decision, which
/// the worker then hears.
///
/// # Errors
///
/// [`LedgerError`] when the store fails: another connection holds it past the wait
/// ([`LedgerError::Locked`]), a row this build cannot read ([`LedgerError::BadRow`]), or the
/// store's own failure ([`LedgerError::Failed`], [`LedgerError::Store`]). Nothing of the operation
/// was written.
pub fn record_not_found(
    ledger: &mut Ledger,
    key: &IdempotencyKey,
    reason: &str,
    now_ms: u64,
) -> Result<Reconciled, LedgerError> {
    let settlement = Settlement {
        to: Status::Failed,
        expected: None,
        expected_attempts: None,
        actor: "reconcile-hook",
        event: HistoryEvent::Reconciled,
        reason: Some(reason),
        result: None,
        detail: None,
        settles_started: true,
    };
    Ok(match ledger.settle(key, &settlement, now_ms) {
        Ok(record) => Reconciled::SettledFailed(Box::new(record)),
        Err(SettleError::AlreadySettled { current, .. } | SettleError::Stale { current, .. }) => {
            Reconciled::AlreadySettled(current)
        }
        Err(
            SettleError::NotFound(_)
            | SettleError::NotADecision { .. }
            | SettleError::AttemptNoted { .. }
            | SettleError::InFlight { .. },
        ) => Reconciled::Unknown,
        Err(SettleError::Ledger(error)) => return Err(error),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_operator_move_applies_the_reason_rule() {
        let mut ledger = Ledger::open_memory_store();
        let key = IdempotencyKey::per_call("r1", "c1").unwrap();
        let request = ResolveRequest::new(Status::Failed, "\u{1B}]0;owned\u{7}", "ada");
        assert!(matches!(
            resolve(&mut ledger, &key, &request, 1),
            Err(OperatorError::Reason(ReasonError::ControlCharacter { position: 1, .. }))
        ));
        let compensation = |reason| CompensateRequest {
            key: &key,
            reason,
            operator: "ada",
        };
        assert!(matches!(
            check_compensable(&ledger, &compensation("\u{200B}"), |_| true),
            Err(OperatorError::Reason(ReasonError::Invisible))
        ));
        struct Untouchable;
        impl CompensationTarget for Untouchable {
            fn has_compensation(&self, _: &str) -> bool {
                true
            }
            fn find_effect(&mut self, _: &ExecutionRecord) -> Result<Effect, LookupError> {
                unreachable!("a refused reason asks the world nothing")
            }
            fn undo(&mut self, _: &ExecutionRecord, _: &str) -> Result<String, UndoError> {
                unreachable!("a refused reason undoes nothing")
            }
        }
        assert!(matches!(
            compensate(
                &mut HeldLedger {
                    ledger: &mut ledger,
                    now_ms: 1
                },
                &mut Untouchable,
                &compensation("ok\r"),
                &Words::FACTS
            ),
            Err(OperatorError::Reason(ReasonError::ControlCharacter { .. }))
        ));
    }

    #[test]
    fn a_request_that_may_be_on_its_way_counts_its_attempts_in_words() {
        let key = IdempotencyKey::per_call("r1", "c1").unwrap();
        let refusal = |attempts| {
            OperatorError::MayBeOnItsWay {
                key: key.clone(),
                attempts,
                finding: "no credit found".into(),
            }
            .to_string()
        };
        assert!(
            refusal(1).starts_with("no credit found; but r1:c1 has 1 attempt noted, so"),
            "{}",
            refusal(1)
        );
        assert!(
            refusal(2).starts_with("no credit found; but r1:c1 has 2 attempts noted, so"),
            "{}",
            refusal(2)
        );
    }
}
