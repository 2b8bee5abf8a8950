//! Tests of the decision tables in `rules.rs`, kept in a file of their own so the tables
//! read in one place.

use super::*;
use ReservationAction as Action;

const WRITES: [SideEffect; 3] = [SideEffect::Write, SideEffect::External, SideEffect::Destructive];

#[test]
fn reserve_with_no_record_runs() {
    for side_effect in WRITES {
        assert_eq!(reservation_action(None, side_effect, false), Action::RunNew);
    }
}

#[test]
fn reserve_completed_returns_recorded_result_without_calling() {
    for side_effect in WRITES {
        assert_eq!(
            reservation_action(Some(Status::Completed), side_effect, false),
            Action::ReturnRecorded
        );
    }
}

#[test]
fn reserve_failed_may_run_again() {
    for side_effect in WRITES {
        assert_eq!(
            reservation_action(Some(Status::Failed), side_effect, false),
            Action::RunAgain
        );
    }
}

#[test]
fn reserve_started_or_indeterminate_does_not_run() {
    for side_effect in WRITES {
        assert_eq!(
            reservation_action(Some(Status::Started), side_effect, false),
            Action::Unknown
        );
        assert_eq!(
            reservation_action(Some(Status::Indeterminate), side_effect, false),
            Action::Unknown
        );
        // Even a lease that ran out does not matter to an indeterminate record.
        assert_eq!(
            reservation_action(Some(Status::Indeterminate), side_effect, true),
            Action::Unknown
        );
    }
}

#[test]
fn naive_lease_reclaims_started_writes() {
    assert_eq!(
        reservation_action(Some(Status::Started), SideEffect::External, true),
        Action::TakeOverExpiredLease
    );
}

#[test]
fn reads_may_always_run_again() {
    for status in [Status::Started, Status::Indeterminate, Status::Failed] {
        assert_eq!(
            reservation_action(Some(status), SideEffect::Read, false),
            Action::RunAgain
        );
    }
}

#[test]
fn reads_retry_timeouts_with_growing_backoff() {
    assert_eq!(
        outcome_action(SideEffect::Read, AttemptEnd::TimedOut, 1, 3),
        OutcomeAction::Retry { backoff_ms: 50 }
    );
    assert_eq!(
        outcome_action(SideEffect::Read, AttemptEnd::TimedOut, 2, 3),
        OutcomeAction::Retry { backoff_ms: 100 }
    );
    assert_eq!(
        outcome_action(SideEffect::Read, AttemptEnd::TimedOut, 3, 3),
        OutcomeAction::Record(Outcome::Failed)
    );
}

#[test]
fn write_timeout_after_the_request_left_is_indeterminate() {
    for side_effect in WRITES {
        assert_eq!(
            outcome_action(side_effect, AttemptEnd::TimedOut, 1, 1),
            OutcomeAction::Record(Outcome::Indeterminate)
        );
    }
}

#[test]
fn naive_write_retries_then_calls_it_failed() {
    assert!(matches!(
        outcome_action(SideEffect::External, AttemptEnd::TimedOut, 1, 3),
        OutcomeAction::Retry { .. }
    ));
    assert_eq!(
        outcome_action(SideEffect::External, AttemptEnd::TimedOut, 3, 3),
        OutcomeAction::Record(Outcome::Failed)
    );
}

#[test]
fn not_attempted_is_failed_not_indeterminate() {
    for side_effect in WRITES {
        assert_eq!(
            outcome_action(side_effect, AttemptEnd::NotAttempted, 1, 1),
            OutcomeAction::Record(Outcome::Failed)
        );
    }
}

#[test]
fn unknown_asks_the_hook_first_then_pauses_or_fails() {
    assert_eq!(unknown_action(true, false, false), UnknownAction::AskReconcileHook);
    assert_eq!(unknown_action(true, true, true), UnknownAction::Pause);
    assert_eq!(unknown_action(false, false, false), UnknownAction::TellModelFailed);
}

#[test]
fn a_failed_run_is_undone_only_by_a_naive_runtime() {
    assert_eq!(failed_run_undo(0, true), None);
    assert_eq!(failed_run_undo(0, false), None);
    assert_eq!(
        failed_run_undo(2, true),
        Some(FailedRunAction::CompensateWhatTookEffect)
    );
    assert_eq!(failed_run_undo(1, false), Some(FailedRunAction::LeaveToOperator));
}

#[test]
fn a_workflow_retries_a_failed_run_as_a_fresh_run_until_its_retries_run_out() {
    assert_eq!(
        workflow_action(RecoveryPolicy::Retry, 0, 2),
        FailedRunAction::StartFreshRun { retry: 1 }
    );
    assert_eq!(
        workflow_action(RecoveryPolicy::Retry, 1, 2),
        FailedRunAction::StartFreshRun { retry: 2 }
    );
    assert_eq!(
        workflow_action(RecoveryPolicy::Retry, 2, 2),
        FailedRunAction::StayFailed
    );
    assert_eq!(workflow_action(RecoveryPolicy::Fail, 0, 2), FailedRunAction::StayFailed);
}

#[test]
fn the_fence_is_folded_only_where_nothing_comes_between() {
    assert_eq!(fence_place(true, SendTiming::Separate), FencePlace::BeforeTheSend);
    assert_eq!(
        fence_place(true, SendTiming::RightAfterReserving),
        FencePlace::InTheReservation
    );
    for timing in [SendTiming::Separate, SendTiming::RightAfterReserving] {
        assert_eq!(fence_place(false, timing), FencePlace::Unfenced);
    }
    assert_eq!(SendTiming::default(), SendTiming::Separate);
}

#[test]
fn only_the_actions_that_write_started_run_the_tool() {
    for action in [Action::RunNew, Action::RunAgain, Action::TakeOverExpiredLease] {
        assert!(action.runs(), "{action:?}");
    }
    for action in [Action::ReturnRecorded, Action::ReturnCompensated, Action::Unknown] {
        assert!(!action.runs(), "{action:?}");
    }
}

fn absent(since_reserved_ms: u64, since_last_send_ms: u64) -> AbsentFacts {
    AbsentFacts {
        lookup_settle_ms: Some(2_000),
        key_retention_ms: Some(86_400_000),
        since_reserved_ms,
        since_last_send_ms,
        retention_guard: true,
        settle_guard: true,
    }
}

#[test]
fn nothing_found_is_proof_only_past_the_settle_time_and_within_the_retention() {
    assert_eq!(
        absent_action(absent(500, 500)),
        AbsentAction::AskAgain { after_ms: 1_500 }
    );
    assert_eq!(absent_action(absent(5_000, 2_000)), AbsentAction::SettleFailed);
    assert_eq!(absent_action(absent(86_400_000, 2_000)), AbsentAction::Expired);
    // Naive: nothing at the first look is proof; past the retention it reads as absent.
    let naive = AbsentFacts {
        settle_guard: false,
        retention_guard: false,
        ..absent(500, 500)
    };
    assert_eq!(absent_action(naive), AbsentAction::SettleFailed);
    let naive_expired = AbsentFacts {
        retention_guard: false,
        ..absent(90_000_000, 90_000_000)
    };
    assert_eq!(absent_action(naive_expired), AbsentAction::SettleFailed);
    // No settle time declared: nothing found proves nothing, guards or not (as before).
    let undeclared = AbsentFacts {
        lookup_settle_ms: None,
        key_retention_ms: None,
        settle_guard: false,
        retention_guard: false,
        ..absent(500, 500)
    };
    assert_eq!(absent_action(undeclared), AbsentAction::StillUnknown);
}

#[test]
fn an_expired_key_is_not_resent_when_its_earlier_attempt_may_have_landed() {
    assert_eq!(
        resend_action(Some(1_000), 1_000, true, true),
        ResendAction::RefuseExpiredKey
    );
    assert_eq!(resend_action(Some(1_000), 999, true, true), ResendAction::Send);
    assert_eq!(
        resend_action(Some(1_000), 5_000, false, true),
        ResendAction::Send,
        "nothing may have landed"
    );
    assert_eq!(
        resend_action(Some(1_000), 5_000, true, false),
        ResendAction::Send,
        "naive"
    );
    assert_eq!(resend_action(None, u64::MAX, true, true), ResendAction::Send);
}

#[test]
fn a_run_whose_recoveries_keep_failing_is_dead_lettered_only_with_a_declared_limit() {
    assert_eq!(recovery_action(2, Some(3), true), RecoveryAction::Recover);
    assert_eq!(recovery_action(3, Some(3), true), RecoveryAction::DeadLetter);
    assert_eq!(
        recovery_action(300, Some(3), false),
        RecoveryAction::Recover,
        "naive: forever"
    );
    assert_eq!(recovery_action(300, None, true), RecoveryAction::Recover);
}

#[test]
fn settled_and_unknown_split_every_status() {
    for status in Status::ALL {
        assert_ne!(status.is_unknown(), status.is_settled());
        assert_eq!(Status::parse(status.name()), Some(status));
    }
}

#[test]
fn every_table_answers_inputs_a_declaration_would_refuse_without_panicking() {
    // A recovery limit of 0 dead-letters at once.
    assert_eq!(recovery_action(0, Some(0), true), RecoveryAction::DeadLetter);
    // A run numbered past its node's retries stays failed; a limit past the most is held to it.
    assert_eq!(
        workflow_action(RecoveryPolicy::Retry, 3, 2),
        FailedRunAction::StayFailed
    );
    assert_eq!(
        workflow_action(RecoveryPolicy::Retry, 0, 1_000),
        FailedRunAction::StartFreshRun { retry: 1 }
    );
    assert_eq!(
        workflow_action(RecoveryPolicy::Retry, crate::workflow::RETRIES_MAX, u32::MAX),
        FailedRunAction::StayFailed
    );
    // A retention not longer than the settle time: the rows still answer.
    let action = absent_action(AbsentFacts {
        key_retention_ms: Some(2_000),
        ..absent(5_000, 2_000)
    });
    assert_eq!(action, AbsentAction::Expired);
    assert_eq!(
        absent_action(AbsentFacts {
            key_retention_ms: Some(0),
            lookup_settle_ms: Some(0),
            ..absent(5_000, 2_000)
        }),
        AbsentAction::Expired
    );
    assert_eq!(resend_action(Some(0), 0, true, true), ResendAction::RefuseExpiredKey);
    // More attempts than any tool gets, an attempt counted 0 or past its last: no panic, no overflow.
    assert_eq!(
        outcome_action(SideEffect::Read, AttemptEnd::TimedOut, 1, 4),
        OutcomeAction::Retry { backoff_ms: 50 }
    );
    assert_eq!(
        outcome_action(SideEffect::Read, AttemptEnd::TimedOut, 0, 3),
        OutcomeAction::Retry { backoff_ms: 50 }
    );
    assert_eq!(
        outcome_action(SideEffect::Read, AttemptEnd::TimedOut, 70, u32::MAX),
        OutcomeAction::Retry { backoff_ms: u64::MAX }
    );
    assert_eq!(
        outcome_action(SideEffect::External, AttemptEnd::TimedOut, 9, 0),
        OutcomeAction::Record(Outcome::Indeterminate)
    );
}
