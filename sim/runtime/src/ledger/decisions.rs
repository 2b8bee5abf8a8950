//! The pure decisions behind the ledger's operations (`operations.rs`): each takes what its
//! transaction read and answers what to write, over the runtime's decision tables. No store,
//! no clock: everything arrives as an argument, so the tests hold them row by row.

use std::borrow::Cow;

use super::operations::{HistoryLine, RecordWrite};
use super::{
    AttemptStart, Contradiction, ContradictionSource, ExecutionRecord, HistoryEvent, Recorded, Reservation,
    ReserveRequest, SaveOutcome, SettleError, Settlement,
};
use crate::key::IdempotencyKey;
use crate::rules::{Outcome, ReservationAction, Status, reservation_action};

/// What a reservation decides, and the row and history line it writes (if it writes).
/// Pure: everything it needs was read by the caller.
pub(super) fn decide_reservation<'a>(
    request: &ReserveRequest<'a>,
    existing: Option<ExecutionRecord>,
    found_version: Option<u32>,
    now_ms: u64,
) -> (Reservation, Option<(RecordWrite, HistoryLine<'a>)>) {
    // Fencing (guard `checkpoint_version`): someone saved since this worker loaded.
    if let (Some(expected), Some(found)) = (request.checkpoint_version, found_version)
        && expected != found
    {
        return (Reservation::Fenced { expected, found }, None);
    }
    if let Some(existing) = &existing
        && (existing.arguments != request.arguments || existing.tool != *request.tool)
    {
        return (
            Reservation::ArgumentsMismatch {
                existing: existing.clone(),
            },
            None,
        );
    }
    let lease_expired = match (&existing, request.lease_ms) {
        (Some(record), Some(_)) => record.lease_expires_at_ms.is_some_and(|expires| now_ms >= expires),
        _ => false,
    };
    let previous_status = existing.as_ref().map(|record| record.status);
    let action = reservation_action(previous_status, request.side_effect, lease_expired);
    let lease_expires_at_ms = request.lease_ms.map(|lease| now_ms.saturating_add(lease));
    let started = |event: HistoryEvent, detail: Option<&'a str>| HistoryLine {
        from_status: previous_status,
        to_status: Some(Status::Started),
        detail: detail.map(Cow::Borrowed),
        ..HistoryLine::note(request.key, now_ms, request.owner, event)
    };
    let (record, previous_owner, write) = match (action, existing) {
        (ReservationAction::RunNew, existing) => {
            assert!(
                existing.is_none(),
                "the decision table runs new only what does not exist"
            );
            let record = new_started_record(request, 0, now_ms, lease_expires_at_ms);
            (
                record,
                None,
                Some((RecordWrite::Insert, started(HistoryEvent::Reserved, None))),
            )
        }
        (ReservationAction::RunAgain | ReservationAction::TakeOverExpiredLease, Some(existing)) => {
            let line = if action == ReservationAction::TakeOverExpiredLease {
                started(
                    HistoryEvent::LeaseTakenOver,
                    Some("the lease ran out; a naive runtime runs the call again"),
                )
            } else {
                started(HistoryEvent::ReservedAgain, None)
            };
            let previous_owner = existing.owner.clone();
            let record = ExecutionRecord {
                status: Status::Started,
                result: None,
                owner: request.owner.into(),
                updated_at_ms: written_at_ms(&existing, now_ms),
                lease_expires_at_ms,
                ..existing
            };
            (record, Some(previous_owner), Some((RecordWrite::Update, line)))
        }
        (ReservationAction::Unknown, Some(existing)) if orphaned(request, &existing) => {
            let previous_owner = existing.owner.clone();
            let (record, line) = recovered_unknown(request, existing, now_ms);
            (record, Some(previous_owner), Some((RecordWrite::Update, line)))
        }
        (
            ReservationAction::ReturnRecorded | ReservationAction::ReturnCompensated | ReservationAction::Unknown,
            Some(existing),
        ) => {
            let previous_owner = existing.owner.clone();
            (existing, Some(previous_owner), None)
        }
        (action, None) => unreachable!("the decision table answers {action:?} only on what exists"),
    };
    (
        Reservation::Decided {
            action,
            record,
            previous_owner,
            previous_status,
        },
        write,
    )
}

/// Whether `existing` is a `started` call nobody is left to send or hear: its owner is the
/// reserving worker itself (the same worker id restarted: one live process per id) or a worker
/// it replaces, whose process is known to have ended ([`ReserveRequest::replaces`]). Any other
/// owner may be alive with its request on the way, and its own outcome must still land.
fn orphaned(request: &ReserveRequest<'_>, existing: &ExecutionRecord) -> bool {
    existing.status == Status::Started
        && (existing.owner == request.owner || request.replaces.contains(&existing.owner))
}

/// The seed: "a restarted worker that finds a started record with no outcome treats it as
/// indeterminate". Written in the reservation's transaction, so it is compare-and-set on the
/// record as read (still `started`, still that owner's) and on the run's checkpoint version the
/// recovering worker loaded. The owner and the attempts stay: they say whose request may have
/// left. Pure.
fn recovered_unknown<'a>(
    request: &ReserveRequest<'a>,
    existing: ExecutionRecord,
    now_ms: u64,
) -> (ExecutionRecord, HistoryLine<'a>) {
    let sent = crate::worker::counted(u64::from(existing.attempts), "attempt", "attempts");
    let whose = if existing.owner == request.owner {
        format!("worker {} restarted", request.owner)
    } else {
        format!(
            "worker {} replaces {}, whose process ended,",
            request.owner, existing.owner
        )
    };
    let detail = format!(
        "{whose} and found the call `started` with no outcome ({sent} noted): nobody is left to send it or hear its \
         answer, so whether it took effect is unknown"
    );
    let line = HistoryLine {
        from_status: Some(Status::Started),
        to_status: Some(Status::Indeterminate),
        detail: Some(Cow::Owned(detail)),
        ..HistoryLine::note(request.key, now_ms, request.owner, HistoryEvent::RecoveredUnknown)
    };
    let record = ExecutionRecord {
        status: Status::Indeterminate,
        updated_at_ms: written_at_ms(&existing, now_ms),
        lease_expires_at_ms: None,
        ..existing
    };
    (record, line)
}

/// The naive upsert's row and history line over whatever was there. Pure.
pub(super) fn decide_unchecked_insert<'a>(
    request: &ReserveRequest<'a>,
    previous: Option<&ExecutionRecord>,
    now_ms: u64,
) -> (ExecutionRecord, HistoryLine<'a>) {
    let previous_status = previous.map(|record| record.status);
    // Overwriting a `started` row is the race this path allows: two workers both run.
    let detail = match previous_status {
        Some(Status::Started) => "check-then-insert overwrote another worker's reservation",
        Some(_) => "check-then-insert over an earlier record",
        None => "check-then-insert",
    };
    let record = new_started_record(
        request,
        previous.map_or(0, |record| record.attempts),
        now_ms,
        request.lease_ms.map(|lease| now_ms.saturating_add(lease)),
    );
    let line = HistoryLine {
        from_status: previous_status,
        to_status: Some(Status::Started),
        detail: Some(Cow::Borrowed(detail)),
        ..HistoryLine::note(request.key, now_ms, request.owner, HistoryEvent::Reserved)
    };
    (record, line)
}

/// The send fence's decision: the attempt may begin only on `owner`'s own `started` record.
/// Pure.
pub(super) fn decide_attempt<'a>(
    current: ExecutionRecord,
    key: &'a IdempotencyKey,
    attempt: u32,
    owner: &'a str,
    now_ms: u64,
) -> (AttemptStart, HistoryLine<'a>) {
    if current.status == Status::Started && current.owner == owner {
        let line = HistoryLine {
            detail: Some(Cow::Owned(format!("attempt {attempt}"))),
            ..HistoryLine::note(key, now_ms, owner, HistoryEvent::Attempt)
        };
        let counted = ExecutionRecord {
            attempts: attempt,
            updated_at_ms: written_at_ms(&current, now_ms),
            ..current
        };
        return (AttemptStart::Begun(counted), line);
    }
    let why = if current.status == Status::Started {
        format!("{} owns the `started` record now", current.owner)
    } else {
        format!("the record is `{}`", current.status)
    };
    let line = HistoryLine {
        from_status: Some(current.status),
        detail: Some(Cow::Owned(format!("attempt {attempt} of {owner} was not sent: {why}"))),
        ..HistoryLine::note(key, now_ms, owner, HistoryEvent::SendRefused)
    };
    (AttemptStart::Refused(Some(current)), line)
}

/// An attempt's own outcome: recorded over the worker's own `started` record at that
/// attempt, or logged and ignored when the record is not that any more. An `indeterminate`
/// outcome has no result: `result` is why it is unknown, written in the history line only (a
/// result would be served to the model once an operator settled the call without one). Pure.
pub(super) fn decide_outcome<'a>(
    current: ExecutionRecord,
    key: &'a IdempotencyKey,
    outcome: Outcome,
    result: Option<&'a str>,
    actor: &'a str,
    attempt: u32,
    now_ms: u64,
) -> (Recorded, HistoryLine<'a>) {
    let status = outcome.status();
    let its_own = current.status == Status::Started && current.owner == actor && current.attempts == attempt;
    if its_own {
        let line = HistoryLine {
            from_status: Some(Status::Started),
            to_status: Some(status),
            detail: result.map(Cow::Borrowed),
            ..HistoryLine::note(key, now_ms, actor, HistoryEvent::outcome(outcome))
        };
        let after = ExecutionRecord {
            status,
            result: result.filter(|_| outcome != Outcome::Indeterminate).map(str::to_owned),
            updated_at_ms: written_at_ms(&current, now_ms),
            lease_expires_at_ms: None,
            ..current
        };
        return (Recorded::Recorded(after), line);
    }
    // A settled call told otherwise is a contradiction, written as one (the decision stands).
    if let Some(contradiction) = Contradiction::of(
        &current,
        outcome,
        ContradictionSource::LateAnswer { attempt },
        result.unwrap_or(""),
    ) {
        let line = HistoryLine {
            from_status: Some(current.status),
            detail: Some(Cow::Owned(contradiction.describe())),
            ..HistoryLine::note(key, now_ms, actor, HistoryEvent::Contradicted)
        };
        return (Recorded::LateOutcomeIgnored(current), line);
    }
    let why = if current.status != Status::Started {
        format!("the record is already {}", current.status)
    } else if current.owner != actor {
        format!("{} owns the record now", current.owner)
    } else {
        format!("the record is at attempt {}", current.attempts)
    };
    let line = HistoryLine {
        from_status: Some(current.status),
        detail: Some(Cow::Owned(format!(
            "late outcome {status} of attempt {attempt} ignored; {why}"
        ))),
        ..HistoryLine::note(key, now_ms, actor, HistoryEvent::LateOutcomeIgnored)
    };
    (Recorded::LateOutcomeIgnored(current), line)
}

/// A settlement's compare-and-set, and the record after it. Pure.
///
/// The moves: from an unknown status to a decision (`completed`, `failed`, or `compensating`
/// when an operator undoes a call whose effect was found; `compensated` only by a naive
/// runtime's reflex); `completed` → `compensating` (an undo claimed); `compensating` →
/// `compensated` (the undo confirmed). A decision is never overwritten otherwise.
pub(super) fn decide_settlement(
    current: ExecutionRecord,
    key: &IdempotencyKey,
    settlement: &Settlement<'_>,
    now_ms: u64,
) -> Result<ExecutionRecord, SettleError> {
    match settlement.expected {
        Some(expected) if expected != current.status => {
            return Err(SettleError::Stale {
                key: key.clone(),
                expected,
                current: Box::new(current),
            });
        }
        // A naive runtime's reflex undoes a failed run's completed calls too (table 4).
        None if current.status == Status::Completed && settlement.event == HistoryEvent::ReflexCompensation => {}
        None if !current.status.is_unknown() => {
            return Err(SettleError::AlreadySettled {
                key: key.clone(),
                current: Box::new(current),
            });
        }
        _ => {}
    }
    let allowed = match (current.status, settlement.to) {
        // From unknown to any decision; straight to `compensated` only by a naive runtime's
        // reflex (an operator's undo goes through `compensating`).
        (from, to) if from.is_unknown() => {
            to.is_settled() && (to != Status::Compensated || settlement.event == HistoryEvent::ReflexCompensation)
        }
        (Status::Completed, Status::Compensating) | (Status::Compensating, Status::Compensated) => true,
        (Status::Completed, Status::Compensated) => settlement.event == HistoryEvent::ReflexCompensation,
        _ => false,
    };
    if !allowed && current.status.is_unknown() {
        return Err(SettleError::NotADecision { to: settlement.to });
    }
    if allowed && current.status == Status::Started && !settlement.settles_started {
        return Err(SettleError::InFlight {
            key: key.clone(),
            current: Box::new(current),
        });
    }
    if !allowed {
        return Err(SettleError::AlreadySettled {
            key: key.clone(),
            current: Box::new(current),
        });
    }
    if let Some(expected_attempts) = settlement.expected_attempts
        && expected_attempts != current.attempts
    {
        return Err(SettleError::AttemptNoted {
            key: key.clone(),
            current: Box::new(current),
        });
    }
    let updated_at_ms = written_at_ms(&current, now_ms);
    let result = match settlement.result {
        Some(result) => Some(result.to_owned()),
        None => current.result,
    };
    Ok(ExecutionRecord {
        status: settlement.to,
        result,
        updated_at_ms,
        lease_expires_at_ms: None,
        ..current
    })
}

/// A checkpoint save's compare-and-sets: on the version, and on a call still being `failed`.
/// `None` when the version cannot grow any more. Pure.
pub(super) fn decide_checkpoint_save(
    expected_version: Option<u32>,
    found: u32,
    still_failed: Option<ExecutionRecord>,
) -> Option<SaveOutcome> {
    if let Some(expected) = expected_version
        && expected != found
    {
        return Some(SaveOutcome::Stale { expected, found });
    }
    if let Some(record) = still_failed
        && record.status != Status::Failed
    {
        return Some(SaveOutcome::TakenOver {
            key: record.key.as_str().to_owned(),
            status: record.status,
            owner: record.owner,
        });
    }
    found.checked_add(1).map(|version| SaveOutcome::Saved { version })
}

/// When a write over `current` says it was made: the writer's clock, but never before the
/// record's last write. Writers on different hosts read different clocks, and "long enough
/// since the ledger last wrote the call" decides when an unknown call may be settled `failed`
/// (decision table 6's settle time, an operator's wait for the provider's send window): a
/// record whose last write moved back in time would look older than it is, and be settled
/// while a request under it may still arrive. Pure.
pub(super) fn written_at_ms(current: &ExecutionRecord, now_ms: u64) -> u64 {
    now_ms.max(current.updated_at_ms)
}

/// The `started` record a reservation writes for `request`, created now.
fn new_started_record(
    request: &ReserveRequest<'_>,
    attempts: u32,
    now_ms: u64,
    lease_expires_at_ms: Option<u64>,
) -> ExecutionRecord {
    ExecutionRecord {
        key: request.key.clone(),
        tenant: request.tenant.into(),
        run_id: request.run_id.into(),
        tool_call_id: request.tool_call_id.to_owned(),
        tool: request.tool.into(),
        side_effect: request.side_effect,
        arguments: request.arguments.to_owned(),
        status: Status::Started,
        attempts,
        result: None,
        owner: request.owner.into(),
        created_at_ms: now_ms,
        updated_at_ms: now_ms,
        lease_expires_at_ms,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tool::SideEffect;

    fn record(status: Status, owner: &str, attempts: u32) -> ExecutionRecord {
        ExecutionRecord {
            key: IdempotencyKey::parse("r1:c1").unwrap(),
            tenant: "default".into(),
            run_id: "r1".into(),
            tool_call_id: "c1".into(),
            tool: "issue_credit".into(),
            side_effect: SideEffect::External,
            arguments: "{}".into(),
            status,
            attempts,
            result: None,
            owner: owner.into(),
            created_at_ms: 1,
            updated_at_ms: 1,
            lease_expires_at_ms: None,
        }
    }

    /// An operator's resolve of a call from `expected` to `to`.
    fn resolved(to: Status, expected: Status) -> Settlement<'static> {
        Settlement {
            to,
            expected: Some(expected),
            expected_attempts: None,
            actor: "op",
            event: HistoryEvent::Resolved,
            reason: Some("why"),
            result: None,
            detail: None,
            settles_started: true,
        }
    }

    #[test]
    fn the_send_fence_begins_only_on_the_owners_started_record() {
        let key = IdempotencyKey::parse("r1:c1").unwrap();
        let (begun, line) = decide_attempt(record(Status::Started, "w1", 0), &key, 1, "w1", 5);
        assert!(matches!(begun, AttemptStart::Begun(ref counted) if counted.attempts == 1));
        assert_eq!(line.event, HistoryEvent::Attempt);
        for (status, owner) in [
            (Status::Failed, "w1"),
            (Status::Completed, "w1"),
            (Status::Indeterminate, "w1"),
            (Status::Started, "w2"),
        ] {
            let (refused, line) = decide_attempt(record(status, owner, 0), &key, 1, "w1", 5);
            assert!(matches!(refused, AttemptStart::Refused(Some(_))), "{status} {owner}");
            assert_eq!(line.event, HistoryEvent::SendRefused);
        }
    }

    #[test]
    fn an_outcome_is_recorded_only_by_its_owner_at_its_attempt() {
        let key = IdempotencyKey::parse("r1:c1").unwrap();
        let own = decide_outcome(
            record(Status::Started, "w1", 2),
            &key,
            Outcome::Completed,
            None,
            "w1",
            2,
            9,
        );
        assert!(matches!(own.0, Recorded::Recorded(_)));
        // Another's call, a later attempt, a settled call that agrees: ignored; a settled call
        // that the outcome contradicts: ignored too, but written as a contradiction.
        for (current, actor, attempt, outcome, event) in [
            (
                record(Status::Started, "w2", 2),
                "w1",
                2,
                Outcome::Completed,
                HistoryEvent::LateOutcomeIgnored,
            ),
            (
                record(Status::Started, "w1", 3),
                "w1",
                2,
                Outcome::Completed,
                HistoryEvent::LateOutcomeIgnored,
            ),
            (
                record(Status::Failed, "w1", 2),
                "w1",
                2,
                Outcome::Failed,
                HistoryEvent::LateOutcomeIgnored,
            ),
            (
                record(Status::Completed, "op", 2),
                "w1",
                2,
                Outcome::Indeterminate,
                HistoryEvent::LateOutcomeIgnored,
            ),
            (
                record(Status::Failed, "op", 2),
                "w1",
                2,
                Outcome::Completed,
                HistoryEvent::Contradicted,
            ),
            (
                record(Status::Completed, "op", 2),
                "w1",
                2,
                Outcome::Failed,
                HistoryEvent::Contradicted,
            ),
        ] {
            let (recorded, line) = decide_outcome(current, &key, outcome, None, actor, attempt, 9);
            assert!(matches!(recorded, Recorded::LateOutcomeIgnored(_)));
            assert_eq!(line.event, event, "{outcome}");
        }
    }

    #[test]
    fn settling_failed_with_no_attempt_expected_is_refused_once_an_attempt_was_noted() {
        let key = IdempotencyKey::parse("r1:c1").unwrap();
        let settlement = Settlement {
            to: Status::Failed,
            expected: Some(Status::Started),
            expected_attempts: Some(0),
            actor: "op",
            event: HistoryEvent::NothingToCompensate,
            reason: Some("nothing in billing"),
            result: None,
            detail: None,
            settles_started: true,
        };
        assert!(decide_settlement(record(Status::Started, "w1", 0), &key, &settlement, 3).is_ok());
        assert!(matches!(
            decide_settlement(record(Status::Started, "w1", 1), &key, &settlement, 3),
            Err(SettleError::AttemptNoted { .. })
        ));
        // The refusal counts the attempts in words.
        for (attempts, words) in [(1, "r1:c1 has 1 attempt noted:"), (2, "r1:c1 has 2 attempts noted:")] {
            let refused = decide_settlement(record(Status::Started, "w1", attempts), &key, &settlement, 3)
                .expect_err("an attempt was noted");
            assert!(refused.to_string().starts_with(words), "{refused}");
        }
    }

    #[test]
    fn compensation_moves_through_compensating_and_nothing_else_leaves_a_decision() {
        let key = IdempotencyKey::parse("r1:c1").unwrap();
        let allowed = [
            (Status::Completed, Status::Compensating),
            (Status::Compensating, Status::Compensated),
            (Status::Started, Status::Compensating),
            (Status::Indeterminate, Status::Failed),
        ];
        for from in Status::ALL {
            for target in Status::ALL.into_iter().filter(|status| status.is_settled()) {
                let outcome = decide_settlement(record(from, "w1", 1), &key, &resolved(target, from), 3);
                let expected = allowed.contains(&(from, target))
                    || (from.is_unknown()
                        && matches!(target, Status::Completed | Status::Failed | Status::Compensating));
                assert_eq!(outcome.is_ok(), expected, "{from} → {target}");
            }
        }
    }

    #[test]
    fn a_write_read_on_a_clock_behind_the_records_last_write_does_not_move_it_back() {
        let key = IdempotencyKey::parse("r1:c1").unwrap();
        let written_at_20 = |status, attempts| ExecutionRecord {
            updated_at_ms: 20,
            ..record(status, "w1", attempts)
        };
        // The attempt, the outcome and a settlement, the writer's clock at 7 (behind) and at 30 (ahead).
        for (now_ms, expected) in [(7, 20), (30, 30)] {
            let (begun, _) = decide_attempt(written_at_20(Status::Started, 0), &key, 1, "w1", now_ms);
            let AttemptStart::Begun(counted) = begun else {
                panic!("begun")
            };
            assert_eq!(counted.updated_at_ms, expected, "attempt at {now_ms}");
            let (recorded, _) = decide_outcome(
                written_at_20(Status::Started, 1),
                &key,
                Outcome::Completed,
                None,
                "w1",
                1,
                now_ms,
            );
            let Recorded::Recorded(after) = recorded else {
                panic!("recorded")
            };
            assert_eq!(after.updated_at_ms, expected, "outcome at {now_ms}");
            let settlement = resolved(Status::Failed, Status::Indeterminate);
            let settled = decide_settlement(written_at_20(Status::Indeterminate, 1), &key, &settlement, now_ms)
                .expect("an unknown call may be settled failed");
            assert_eq!(settled.updated_at_ms, expected, "settlement at {now_ms}");
            // The record keeps when it was created whatever the clock says now.
            assert_eq!(settled.created_at_ms, 1);
        }
    }

    #[test]
    fn a_checkpoint_version_at_its_limit_is_not_saved_again() {
        assert_eq!(decide_checkpoint_save(Some(u32::MAX), u32::MAX, None), None);
        assert_eq!(
            decide_checkpoint_save(Some(4), 4, None),
            Some(SaveOutcome::Saved { version: 5 })
        );
    }
}
