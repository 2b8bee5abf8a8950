//! The executor's run-level steps: loading a checkpoint (and counting a recovery against a
//! declared limit, table 8), saving one (a dead-lettered run's reason into its history),
//! settling a call a lookup proved absent (table 6), and reading the call a paused run waits on.

use super::*;
use crate::ids::Tenant;
use crate::ledger::{Recorded, RunHistoryEntry, SaveOutcome};
use crate::run::RunStatus;
use crate::worker::DEFAULT_TENANT;

/// What a counted recovery writes into the run's history: the checkpoint it started from
/// (version 0: none, the run never saved one). Recoveries that started from the checkpoint a
/// worker loads now made no progress past it.
pub fn recovery_mark(version: u32) -> String {
    if version == 0 {
        "started with no checkpoint (the run saved none)".to_owned()
    } else {
        format!("started from checkpoint v{version}")
    }
}

/// The recoveries in `history` (one run's, oldest first) that started from checkpoint
/// `version` since an operator last resumed the run: recoveries that failed, when a new one
/// starts from that same checkpoint.
pub fn failed_recoveries(history: &[RunHistoryEntry], version: u32) -> u32 {
    let since_resume = history
        .iter()
        .rposition(|entry| entry.event == RunEvent::Resumed)
        .map_or(0, |resumed| resumed + 1);
    let mark = recovery_mark(version);
    let failed = history[since_resume..]
        .iter()
        .filter(|entry| entry.event == RunEvent::RecoveryStarted && entry.detail.as_deref() == Some(mark.as_str()))
        .count();
    u32::try_from(failed).unwrap_or(u32::MAX)
}

impl Executor {
    /// Loads the run's checkpoint. A checkpoint this build cannot read is not a fresh start:
    /// it is reported, and the machine makes the run wait for a person. With a declared
    /// recovery limit, loading a run that was interrupted (neither over nor dead-lettered) is a
    /// recovery: it is written into the run's history, and the machine is told how many before
    /// it started from the same checkpoint and got no further.
    pub(super) fn load(&mut self, now_ms: u64) -> Result<Step, LedgerError> {
        let Some(checkpoint) = self.ledger.load_checkpoint(&self.identity.run_id)? else {
            let failed_recoveries = match self.recovery_attempts_max {
                Some(_) => self.count_start_without_checkpoint(now_ms)?,
                None => None,
            };
            return Ok(Step::feed(
                Input::CheckpointLoaded {
                    version: 0,
                    state: None,
                    failed_recoveries,
                },
                Report::Loaded {
                    version: 0,
                    state: None,
                    failed_recoveries,
                },
            ));
        };
        let version = checkpoint.version;
        let state = match RunState::from_json(&checkpoint.state) {
            Ok(state) => state,
            Err(error) => {
                let detail = error.to_string();
                return Ok(Step::feed(
                    Input::CheckpointUnreadable {
                        version,
                        detail: detail.clone(),
                    },
                    Report::Unreadable { version, detail },
                ));
            }
        };
        self.check_tenant(state.tenant.as_ref())?;
        let interrupted = !state.status.is_terminal() && !state.status.is_dead_lettered();
        let failed_recoveries = match self.recovery_attempts_max {
            Some(_) if interrupted => Some(self.count_recovery(version, now_ms)?),
            _ => None,
        };
        Ok(Step::feed(
            Input::CheckpointLoaded {
                version,
                state: Some(state.clone()),
                failed_recoveries,
            },
            Report::Loaded {
                version,
                state: Some(state),
                failed_recoveries,
            },
        ))
    }

    /// A load that finds no checkpoint, with a recovery limit declared. The run's first start
    /// is written as `started` and is no recovery (`None`). A start after one is a recovery of
    /// a run that crashed before its first checkpoint: counted like any other (table 8), with
    /// the recoveries before it that also started with no checkpoint, all of them failed
    /// since none saved one.
    fn count_start_without_checkpoint(&mut self, now_ms: u64) -> Result<Option<u32>, LedgerError> {
        let history = self.ledger.run_history(Some(&self.identity.run_id))?;
        if !history.iter().any(|entry| entry.event == RunEvent::Started) {
            self.ledger.append_run_event(
                &self.identity.run_id,
                &self.identity.worker_id,
                RunEvent::Started,
                "no checkpoint: the run starts from the beginning",
                now_ms,
            )?;
            return Ok(None);
        }
        self.count_recovery(0, now_ms).map(Some)
    }

    /// Counts the recoveries from checkpoint `version` that failed, then writes this one.
    fn count_recovery(&mut self, version: u32, now_ms: u64) -> Result<u32, LedgerError> {
        let history = self.ledger.run_history(Some(&self.identity.run_id))?;
        let failed = failed_recoveries(&history, version);
        self.ledger.append_run_event(
            &self.identity.run_id,
            &self.identity.worker_id,
            RunEvent::RecoveryStarted,
            &recovery_mark(version),
            now_ms,
        )?;
        Ok(failed)
    }

    /// A run about to end (completed or failed) whose next call id already has an unknown
    /// record: a worker reserved it after the last checkpoint and crashed, and the model asked
    /// again from that checkpoint decided otherwise, so nothing would ever meet that key
    /// again. Calls are numbered from the checkpoint's counter ([`crate::execution::next_call`]),
    /// so the call left behind is the one the counter names next. One read by key, only when
    /// the run ends.
    fn abandoned_call(&self, state: &RunState) -> Result<Option<SaveOutcome>, LedgerError> {
        if !self.ledger_on || !state.status.is_terminal() {
            return Ok(None);
        }
        let Ok(key) = IdempotencyKey::per_call(&self.identity.run_id, &format!("c{}", state.next_call_number)) else {
            return Ok(None);
        };
        Ok(self
            .ledger
            .record(&key)?
            .filter(|record| record.run_id == self.identity.run_id && record.status.is_unknown())
            .map(|record| SaveOutcome::Abandoned {
                key,
                status: record.status,
            }))
    }

    /// The tenant a checkpoint names: none for the default tenant.
    fn saved_tenant(&self) -> Option<&Tenant> {
        (self.identity.tenant != DEFAULT_TENANT).then_some(&self.identity.tenant)
    }

    /// Refuses a loaded run another tenant owns (`owner`: the tenant its checkpoint names,
    /// `None` for the default tenant): loading it would hand this worker that run's state and
    /// keys.
    fn check_tenant(&self, owner: Option<&Tenant>) -> Result<(), LedgerError> {
        let owner = owner.map_or(DEFAULT_TENANT, Tenant::as_str);
        if owner == self.identity.tenant.as_str() {
            return Ok(());
        }
        Err(LedgerError::RunOfAnotherTenant {
            location: self.ledger.location(),
            run_id: self.identity.run_id.to_string(),
            owner: owner.to_owned(),
            asked: self.identity.tenant.to_string(),
        })
    }

    /// Saves the run's checkpoint, fenced as the machine asked. A run saved `dead_lettered`
    /// also gets its reason in its own history (the checkpoint keeps it too, so a crash between
    /// the two loses no reason).
    pub(super) fn save(
        &mut self,
        state: &RunState,
        expected_version: Option<u32>,
        still_failed: Option<&IdempotencyKey>,
        now_ms: u64,
    ) -> Result<Step, LedgerError> {
        if let Some(abandoned) = self.abandoned_call(state)? {
            return Ok(Step::feed(
                Input::Saved(abandoned.clone()),
                Report::Saved {
                    status: state.status.name(),
                    item: state.item,
                    outcome: abandoned,
                },
            ));
        }
        // The tenant goes into the checkpoint (so another tenant's worker is refused the run);
        // the default tenant's state is saved as it is, byte for byte as before tenants were.
        let text = match self.saved_tenant() {
            Some(tenant) if state.tenant.as_ref() != Some(tenant) => RunState {
                tenant: Some(tenant.clone()),
                ..state.clone()
            }
            .to_json(),
            _ => state.to_json(),
        };
        let save = CheckpointSave {
            run_id: &self.identity.run_id,
            status: state.status.name(),
            state: &text,
            saved_by: &self.identity.worker_id,
            expected_version,
            still_failed,
        };
        let outcome = self.ledger.save_checkpoint_fenced(&save, now_ms)?;
        if let (RunStatus::DeadLettered { reason, .. }, SaveOutcome::Saved { .. }) = (&state.status, &outcome) {
            self.ledger.append_run_event(
                &self.identity.run_id,
                &self.identity.worker_id,
                RunEvent::DeadLettered,
                reason,
                now_ms,
            )?;
        }
        Ok(Step::feed(
            Input::Saved(outcome.clone()),
            Report::Saved {
                status: state.status.name(),
                item: state.item,
                outcome,
            },
        ))
    }

    /// Reads the call a paused run waits on, with the operator's decision behind its status if
    /// an operator settled it: the model hears who decided and why with the settlement.
    pub(super) fn read_record(&self, key: IdempotencyKey) -> Result<Step, LedgerError> {
        let record = self.ledger.record(&key)?;
        let decision = self.ledger.operator_decision(record.as_ref())?;
        Ok(Step::feed(
            Input::RecordRead {
                record: record.clone(),
                decision,
            },
            Report::RecordRead { key, record },
        ))
    }

    /// An attempt's answer or a hook's finding that came after an operator settled the call
    /// (the late answer is ignored, the find does not overwrite the decision): fed as the
    /// call's record read with that operator's decision, so the model hears who decided and
    /// why. Any other input, and one whose call no operator settled, is fed as it is.
    pub(super) fn as_settled_by_operator(&self, input: Input) -> Result<Input, LedgerError> {
        let current = match &input {
            Input::Recorded(Recorded::LateOutcomeIgnored(current)) => current,
            Input::Reconciled(Reconciled::AlreadySettled(current)) => &**current,
            _ => return Ok(input),
        };
        Ok(match self.ledger.operator_decision(Some(current))? {
            Some(decision) => Input::RecordRead {
                record: Some(current.clone()),
                decision: Some(decision),
            },
            None => input,
        })
    }

    /// Table 6's "settle failed": a lookup past the tool's settle time found nothing. The call
    /// is settled `failed` by the reconcile hook, compare-and-set from whatever unknown status it
    /// has; a call someone settled first keeps their decision, which the machine then hears.
    pub(super) fn settle_not_found(
        &mut self,
        key: IdempotencyKey,
        reason: &str,
        now_ms: u64,
    ) -> Result<Step, LedgerError> {
        let outcome = operator::record_not_found(&mut self.ledger, &key, reason, now_ms)?;
        Ok(Step::feed(
            Input::Reconciled(outcome.clone()),
            Report::SettledNotFound {
                key,
                reason: reason.to_owned(),
                outcome,
            },
        ))
    }
}
