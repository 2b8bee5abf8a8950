//! What the declared limits decide: the provider's key retention (table 7, and table 6's
//! "expired"), its lookup settle time (table 6) and the run's recovery limit (table 8).
//!
//! The machine reads no clock: every age here is `now_ms` (given with the input) minus a time
//! the ledger recorded, so a driver whose clock jumps (a simulated run paused for hours) is
//! judged as a real one that waited.

use super::*;
use crate::rules::{
    AbsentAction, AbsentFacts, RecoveryAction, ResendAction, absent_action, recovery_action, resend_action,
};

impl Worker {
    /// Table 7, before a send: a key whose earlier attempt may have landed is resent only
    /// while its provider keeps it. `Some`: the send is refused (the call is recorded
    /// `indeterminate` and goes down table 3); `None`: send.
    pub(super) fn resend_refusal(&mut self, now_ms: u64) -> Option<Option<Command>> {
        let context = self.context();
        if !context.earlier_unknown || !context.tool.side_effect.changes_something() {
            return None;
        }
        let retention = context.tool.key_retention_ms?;
        let key_age_ms = now_ms.saturating_sub(context.reserved_at_ms.unwrap_or(now_ms));
        let action = resend_action(Some(retention), key_age_ms, true, self.guard(Guard::KeyRetention));
        if action == ResendAction::Send {
            // A resend that leaves is table 2's retry row, already noted.
            return None;
        }
        self.fired.push(Fired::Resend {
            key_retention_ms: Some(retention),
            key_age_ms,
            action,
        });
        self.note(
            Guard::KeyRetention,
            Held::ExpiredKeyNotResent {
                key_age_ms,
                key_retention_ms: retention,
            },
        );
        let context = self.context_mut();
        context.awaiting_attempt = None;
        context.may_have_left = true;
        Some(self.record(Outcome::Indeterminate, None))
    }

    /// What the reconcile hook's answer leads to.
    pub(super) fn on_reconciled(&mut self, now_ms: u64, reconciled: Reconciled) -> Option<Command> {
        match reconciled {
            Reconciled::Completed { result } => {
                self.note(Guard::ReconcileHook, Held::Reconciled);
                self.tell(Told::Result { result })
            }
            Reconciled::Unknown => self.unknown(),
            Reconciled::AlreadySettled(record) | Reconciled::SettledFailed(record) => {
                self.truth_or_unknown(Some(*record), None)
            }
            Reconciled::NotFound { record, asked_at_ms } => {
                self.not_found(asked_at_ms.min(now_ms), record.map(|record| *record))
            }
        }
    }

    /// Table 6: the hook found nothing under the key.
    fn not_found(&mut self, now_ms: u64, record: Option<ExecutionRecord>) -> Option<Command> {
        let tool = &self.context().tool;
        let (lookup_settle_ms, key_retention_ms) = (tool.lookup_settle_ms, tool.key_retention_ms);
        if lookup_settle_ms.is_none() && key_retention_ms.is_none() {
            // Nothing declared: a lookup never proves absence, as before these terms existed.
            return self.unknown();
        }
        let record = match record {
            Some(record) if record.status.is_unknown() => record,
            settled_or_none => return self.truth_or_unknown(settled_or_none, None),
        };
        let facts = AbsentFacts {
            lookup_settle_ms,
            key_retention_ms,
            since_reserved_ms: now_ms.saturating_sub(record.created_at_ms),
            since_last_send_ms: now_ms.saturating_sub(record.updated_at_ms),
            retention_guard: self.guard(Guard::KeyRetention),
            settle_guard: self.guard(Guard::LookupSettle),
        };
        let action = absent_action(facts);
        self.fired.push(Fired::Absent { facts, action });
        let key = self.context().key.clone();
        match action {
            AbsentAction::StillUnknown => self.unknown(),
            AbsentAction::Expired => {
                let retention = key_retention_ms.expect("only a declared retention expires");
                self.note(
                    Guard::KeyRetention,
                    Held::LookupExpired {
                        key_age_ms: facts.since_reserved_ms,
                        key_retention_ms: retention,
                    },
                );
                self.unknown()
            }
            AbsentAction::AskAgain { after_ms } => {
                let settle = lookup_settle_ms.expect("only a declared settle time asks again");
                self.note(
                    Guard::LookupSettle,
                    Held::NotFoundTooSoon {
                        since_last_send_ms: facts.since_last_send_ms,
                        lookup_settle_ms: settle,
                        look_again_in_ms: after_ms,
                    },
                );
                self.context_mut().looking_again = true;
                self.state = WorkerState::Reconciling;
                Some(Command::WaitToLookAgain { key, after_ms })
            }
            AbsentAction::SettleFailed => {
                let since_last_send_ms = facts.since_last_send_ms;
                let reason = self.record_words(&match lookup_settle_ms {
                    Some(settle) if since_last_send_ms >= settle => RecordNote::NothingFoundPastSettle {
                        key: key.clone(),
                        since_last_send_ms,
                        lookup_settle_ms: settle,
                    },
                    _ => RecordNote::NothingFoundTakenAsProof {
                        key: key.clone(),
                        since_last_send_ms,
                    },
                });
                self.state = WorkerState::Reconciling;
                Some(Command::SettleNotFound { key, reason })
            }
        }
    }

    /// The wait before looking again has passed: ask the hook again.
    pub(super) fn look_again(&mut self) -> Option<Command> {
        let context = self.context_mut();
        context.looking_again = false;
        let (key, call) = (context.key.clone(), context.call.clone());
        self.state = WorkerState::Reconciling;
        Some(Command::Reconcile { key, call })
    }

    /// Table 8, when a recovery is counted: `Some` when the run is dead-lettered instead of
    /// recovered (its checkpoint saved `dead_lettered`, then the worker exits).
    pub(super) fn recovery_check(&mut self, failed_recoveries: u32) -> Option<Option<Command>> {
        let limit = self.setup.recovery_attempts_max;
        let action = recovery_action(failed_recoveries, limit, self.guard(Guard::DeadLetter));
        self.fired.push(Fired::Recovery {
            failed_before: failed_recoveries,
            limit,
            action,
        });
        if action == RecoveryAction::Recover {
            return None;
        }
        let limit = limit.expect("only a declared limit dead-letters");
        let reason = (self.setup.words.dead_letter)(&DeadLetterReason {
            failed_recoveries,
            limit,
            checkpoint_version: self.loaded_version,
        });
        self.note(
            Guard::DeadLetter,
            Held::DeadLettered {
                failed_recoveries,
                reason: reason.clone(),
            },
        );
        self.exit = Some(Exit::DeadLettered { reason: reason.clone() });
        let previous = std::mem::replace(&mut self.run.status, RunStatus::Running);
        self.run.status = RunStatus::DeadLettered {
            reason,
            previous: Box::new(previous),
            tenant: self.setup.tenant.clone(),
        };
        Some(self.save(AfterSave::Exit))
    }
}
