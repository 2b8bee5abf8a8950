//! What a guard did, in the words the timeline, the debrief and the checker show: the runtime
//! hands over the facts ([`GuardNote`], [`Held`]) and makes no sentence of them.

use twice_runtime::ids::WorkerId;
use twice_runtime::rules::Status;
use twice_runtime::worker::{GuardNote, Held};

use super::duration_words;

/// What the guard of `note` did, in a player's words (statuses quoted in backticks, as the
/// runtime's other messages; [`super::plain`] takes them off for the screen).
pub fn note_words(note: &GuardNote) -> String {
    let (worker, run) = (&note.worker_id, &note.run_id);
    // Every hold about a call is noted with the call's key; the ones that are not say so.
    let key = note.key.as_deref().unwrap_or("the call");
    match &note.held {
        Held::ContractRefused { violation, .. } => format!(
            "{} failed: {violation}. Run {run} was refused before it started; nothing was sent",
            super::start_check(violation).0
        ),
        Held::ReturnedRecordedResult => format!(
            "the ledger held `completed` for key {key}; the recorded result was returned and the tool was not called"
        ),
        Held::ReplayNotRun {
            status,
            other_run: None,
        } => {
            format!("the ledger held `{status}` for key {key}; the tool was not called under it again")
        }
        Held::ReplayNotRun {
            status,
            other_run: Some(other),
        } => format!("the ledger held `{status}` for key {key}, a call of run {other}; this call was not made"),
        Held::ArgumentsRefused { recorded_arguments } => format!(
            "key {key} already belongs to a call with other arguments ({recorded_arguments}); the new wording was not \
             run, nor served the other call's result"
        ),
        Held::RewordedReplayRecognised => {
            format!("the replay reworded its arguments but kept its key {key}, so the ledger recognised it")
        }
        Held::SendRefused { status, owner } => format!(
            "{worker} did not send {key}: {}. The last step before a request leaves is a compare-and-set on the \
             record, so nothing left",
            send_refused_why(*status, owner.as_ref())
        ),
        Held::RacingReservationLost { winner } => format!(
            "{winner} reserved {key} while {worker} drove the same run; one transaction let only one of them call the tool"
        ),
        Held::LeaseNotReclaimed {
            started_for_ms,
            lease_ms,
        } => format!(
            "{key} has been `started` for {started_for_ms} ms, past a {lease_ms} ms lease; it was not reclaimed"
        ),
        Held::FirstAnswerRepeated { first } => {
            format!("billing recognised key {key} and answered with the first credit {first}; nothing was paid twice")
        }
        Held::WriteNotRetried => {
            format!("the write {key} timed out after its request left: recorded indeterminate, not retried")
        }
        Held::RefusalRecordedFailed => {
            format!("the tool refused {key} before sending: recorded failed, not a success")
        }
        Held::Paused => {
            format!("run {run} paused awaiting reconciliation of {key}; the model was not told \"failed\"")
        }
        Held::Reconciled => {
            format!("the reconcile hook found {key} in billing; the run carried on with the real result")
        }
        Held::NotCompensated { recovered: true } => {
            format!("the recovered run met {key} unknown; the runtime did not compensate it by itself")
        }
        Held::NotCompensated { recovered: false } => {
            format!("{key} failed or is unknown; the runtime did not compensate it by itself")
        }
        Held::FailedRunNotUndone { keys } => format!(
            "run {run} failed, and {} took effect before it; the runtime did not compensate by itself: a failure \
             later in the run does not make an earlier effect wrong, and an operator decides",
            keys.join(", ")
        ),
        Held::StoodDownBeforeSending { expected, found } => format!(
            "worker {worker} loaded run {run} at version {expected}, but the ledger has {found}: its reservation was \
             refused and it stood down before sending"
        ),
        Held::StaleSave { expected, found } => format!(
            "worker {worker}'s save of run {run} was stale (it loaded version {expected}, the ledger has {found}); it \
             stood down"
        ),
        Held::FailureTakenOver { key, owner, status } => format!(
            "worker {worker}'s save of run {run} relied on {key} having failed, but {owner} ran it again (now \
             {status}); it stood down before its model could act on the failure"
        ),
        Held::ExpiredKeyNotResent {
            key_age_ms,
            key_retention_ms,
        } => format!(
            "{key} was reserved {} ago and its provider keeps keys for {}: a resend would be a new request to it, \
             paid again if the first landed. It was not sent; the call is unknown",
            duration_words(*key_age_ms),
            duration_words(*key_retention_ms)
        ),
        Held::LookupExpired {
            key_age_ms,
            key_retention_ms,
        } => format!(
            "the hook found nothing under {key}, but the key was reserved {} ago and its provider keeps keys for {}: \
             expired, not absent — whatever happened cannot be found by key. It stays unknown",
            duration_words(*key_age_ms),
            duration_words(*key_retention_ms)
        ),
        Held::NotFoundTooSoon {
            since_last_send_ms,
            lookup_settle_ms,
            look_again_in_ms,
        } => format!(
            "the hook found nothing under {key} {} after the ledger last wrote it, but its provider's lookups may lag \
             {}: not proof. It looks again in {}",
            duration_words(*since_last_send_ms),
            duration_words(*lookup_settle_ms),
            duration_words(*look_again_in_ms)
        ),
        Held::DeadLettered { reason, .. } => format!(
            "run {run} was not recovered again: {reason}. It stopped as dead_lettered and resumes only when an \
             operator asks"
        ),
    }
}

/// Why the send fence refused, as the record it found says.
fn send_refused_why(status: Option<Status>, owner: Option<&WorkerId>) -> String {
    match (status, owner) {
        (Some(Status::Started), Some(owner)) => format!("{owner} owns its `started` record now"),
        (Some(status), _) => format!("its record is `{status}` now"),
        (None, _) => "it has no record".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use twice_runtime::guards::Guard;

    fn note(key: Option<&str>, held: Held) -> GuardNote {
        GuardNote {
            guard: Guard::CheckpointVersion,
            worker_id: "w2".into(),
            run_id: "r1".into(),
            key: key.map(str::to_owned),
            held,
        }
    }

    #[test]
    fn a_guard_note_is_worded_from_its_facts() {
        let stale = note(None, Held::StaleSave { expected: 3, found: 4 });
        assert_eq!(
            note_words(&stale),
            "worker w2's save of run r1 was stale (it loaded version 3, the ledger has 4); it stood down"
        );
        let too_soon = note(
            Some("r1:c1"),
            Held::NotFoundTooSoon {
                since_last_send_ms: 2_000,
                lookup_settle_ms: 120_000,
                look_again_in_ms: 118_000,
            },
        );
        assert_eq!(
            note_words(&too_soon),
            "the hook found nothing under r1:c1 2 s after the ledger last wrote it, but its provider's lookups may lag \
             2 min: not proof. It looks again in 118 s"
        );
        let refused = note(
            Some("r1:c1"),
            Held::SendRefused {
                status: Some(Status::Started),
                owner: Some("w3".into()),
            },
        );
        assert!(note_words(&refused).starts_with("w2 did not send r1:c1: w3 owns its `started` record now."));
    }
}
