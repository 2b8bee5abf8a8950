//! What operators do with whole runs: list the dead-lettered ones, and resume one.
//!
//! A run whose recoveries kept failing stops as `dead_lettered` (decision table 8); no worker
//! drives it until an operator resumes it. A resume is compare-and-set on the run's checkpoint
//! (the version the operator saw, or the one read now), needs a reason and an operator id, and
//! is appended to the run's history, which also starts the count of failed recoveries afresh.

use super::{OperatorError, check_who_and_why};
use crate::ids::{RunId, Tenant, WorkerId};
use crate::ledger::{Ledger, LedgerError, RunEvent, SaveOutcome};
use crate::run::{RunState, RunStatus};
use crate::worker::{OperatorNote, Words};

/// A run stopped as `dead_lettered`, as the operator API lists it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeadLetteredRun {
    /// The run.
    pub run_id: RunId,
    /// The tenant whose run it is (`None`: its checkpoint cannot be read).
    pub tenant: Option<Tenant>,
    /// The checkpoint's version: what a resume compares and sets on.
    pub version: u32,
    /// Why it was dead-lettered.
    pub reason: String,
    /// The status it goes back to when resumed.
    pub resumes_as: String,
    /// When it was dead-lettered (the checkpoint's last save), in ms.
    pub since_ms: u64,
    /// The worker that dead-lettered it.
    pub saved_by: WorkerId,
}

/// Every dead-lettered run, longest waiting first (then by run id). `words` word a listed
/// checkpoint whose state says another status ([`OperatorNote::StateSays`]).
///
/// # Errors
///
/// [`LedgerError`] when the ledger cannot be read; a checkpoint whose state does not parse is left
/// out, not an error.
pub fn dead_lettered_runs(ledger: &Ledger, words: &Words) -> Result<Vec<DeadLetteredRun>, LedgerError> {
    let mut runs: Vec<DeadLetteredRun> = ledger
        .checkpoints()?
        .into_iter()
        .filter(|checkpoint| checkpoint.status == "dead_lettered")
        .map(|checkpoint| {
            // A checkpoint this build cannot read is still listed: a person looks either way.
            let (reason, resumes_as, tenant) = match RunState::from_json(&checkpoint.state).map(|state| state.status) {
                Ok(RunStatus::DeadLettered {
                    reason,
                    previous,
                    tenant,
                }) => (reason, previous.name().to_owned(), Some(tenant)),
                Ok(status) => (
                    (words.operator)(&OperatorNote::StateSays { status: status.name() }),
                    status.name().to_owned(),
                    None,
                ),
                Err(error) => (error.to_string(), "unknown".to_owned(), None),
            };
            DeadLetteredRun {
                run_id: checkpoint.run_id,
                tenant,
                version: checkpoint.version,
                reason,
                resumes_as,
                since_ms: checkpoint.updated_at_ms,
                saved_by: checkpoint.saved_by,
            }
        })
        .collect();
    runs.sort_by(|left, right| (left.since_ms, &left.run_id).cmp(&(right.since_ms, &right.run_id)));
    Ok(runs)
}

/// An operator's resume of a dead-lettered run ([`ResumeRequest::new`]).
#[derive(Clone, Copy, Debug)]
#[non_exhaustive]
pub struct ResumeRequest<'a> {
    /// The run to resume.
    pub run_id: &'a str,
    /// Why, in words: it goes into the run's history.
    pub reason: &'a str,
    /// Who resumes it: the history names them.
    pub operator: &'a str,
    /// Compare-and-set: the checkpoint version the operator saw; `None`: the one read now.
    pub expected_version: Option<u32>,
}

impl<'a> ResumeRequest<'a> {
    /// `operator` resumes run `run_id` because of `reason`, from the checkpoint read now.
    #[must_use]
    pub fn new(run_id: &'a str, reason: &'a str, operator: &'a str) -> ResumeRequest<'a> {
        ResumeRequest {
            run_id,
            reason,
            operator,
            expected_version: None,
        }
    }

    /// The same request, compare-and-set on the checkpoint version the operator saw.
    #[must_use]
    pub fn with_expected_version(mut self, version: u32) -> ResumeRequest<'a> {
        self.expected_version = Some(version);
        self
    }
}

/// Resumes a dead-lettered run: its checkpoint goes back to the status it stopped in (saved
/// compare-and-set on the version), and the operator's reason is appended to its history. The
/// next worker to load it recovers it, with its failed recoveries counted afresh. Returns the
/// checkpoint's new version. `words` word the run history's line ([`OperatorNote::Resumed`]).
///
/// # Errors
///
/// [`OperatorError`]: the run is not found, belongs to another tenant, is not dead-lettered,
/// another operator resumed it first (compare-and-set), the reason is refused, or the ledger
/// failed.
pub fn resume(
    ledger: &mut Ledger,
    request: &ResumeRequest<'_>,
    now_ms: u64,
    words: &Words,
) -> Result<u32, OperatorError> {
    check_who_and_why(request.reason, request.operator)?;
    let run_id = request.run_id;
    let checkpoint = ledger
        .load_checkpoint(run_id)?
        .ok_or_else(|| OperatorError::NoSuchRun(run_id.to_owned()))?;
    if let Some(expected) = request.expected_version
        && expected != checkpoint.version
    {
        return Err(OperatorError::RunChanged {
            run_id: run_id.to_owned(),
            expected,
            found: checkpoint.version,
        });
    }
    let mut state = RunState::from_json(&checkpoint.state).map_err(|error| OperatorError::UnreadableRun {
        run_id: run_id.to_owned(),
        detail: error.to_string(),
    })?;
    let RunStatus::DeadLettered { previous, .. } = state.status else {
        return Err(OperatorError::NotDeadLettered {
            run_id: run_id.to_owned(),
            status: state.status.name().to_owned(),
        });
    };
    state.status = *previous;
    let saved = ledger.save_checkpoint(
        run_id,
        state.status.name(),
        &state.to_json(),
        request.operator,
        Some(checkpoint.version),
        now_ms,
    )?;
    let version = match saved {
        SaveOutcome::Saved { version } => version,
        SaveOutcome::Stale { expected, found } => {
            return Err(OperatorError::RunChanged {
                run_id: run_id.to_owned(),
                expected,
                found,
            });
        }
        // A resume's save relies on no failed call, and only an executor answers `Abandoned`.
        SaveOutcome::TakenOver { .. } | SaveOutcome::Abandoned { .. } => {
            unreachable!("the ledger's save of a resume is saved or stale")
        }
    };
    ledger.append_run_event(
        run_id,
        request.operator,
        RunEvent::Resumed,
        &(words.operator)(&OperatorNote::Resumed {
            status: state.status.name(),
            reason: request.reason.to_owned(),
        }),
        now_ms,
    )?;
    Ok(version)
}
