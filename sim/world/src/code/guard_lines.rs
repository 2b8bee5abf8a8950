//! Each guard's lines in the loop, in one place: the line it adds when it is on and the naive
//! line it replaces when it is off, the slot they fill, which guards they need, and whether a
//! level gives the guard anything to do. The program ([`super::program`]), the debrief's fix
//! and the export read them from here; nothing else writes a guard's code.
//!
//! A guard "needs" another when the runtime ignores it while the other is off (the atomic
//! reservation without a ledger reserves nothing): its lines go with the other's switch.

use super::{Context, Piece, Slot};
use crate::level::{CardKind, Level};
use crate::runtime::guards::{Guard, NaiveRefusal};
use crate::runtime::tool::ToolDeclaration;
use crate::runtime::worker::Phase;

/// One guard's code.
#[derive(Clone, Copy, Debug)]
pub struct GuardCode {
    pub guard: Guard,
    /// The guards this one means something only with: while one of them is off, this guard's
    /// lines are not shown (on or off), as the runtime does not look at it.
    pub needs: &'static [Guard],
    /// The level gives the guard something to do: a tool or card it acts on, or the level
    /// switches it off or teaches it. Read from the level alone, never from the guards in
    /// force, so switching guards in the sandbox never makes another guard's lines come or go.
    pub shown: fn(&Level) -> bool,
    /// Its lines: its own when on (`true`), the naive ones it replaces when off.
    pub lines: fn(&Context<'_>, bool) -> Vec<Piece>,
}

/// Every guard's code, in teaching order.
pub const GUARD_CODE: [GuardCode; 16] = [
    GuardCode {
        guard: Guard::WriteRetryRule,
        needs: &[],
        shown: always,
        lines: write_retry_rule,
    },
    GuardCode {
        guard: Guard::ToolContract,
        needs: &[],
        shown: always,
        lines: tool_contract,
    },
    GuardCode {
        guard: Guard::PauseOnIndeterminate,
        needs: &[],
        shown: always,
        lines: pause_on_indeterminate,
    },
    GuardCode {
        guard: Guard::AmbiguityPolicy,
        needs: &[],
        // The check can refuse only a tool that reaches out with no reconcile hook: shown where
        // the level has one, lets the player declare one, or teaches or switches the check.
        shown: |level| {
            any_tool(level, |tool| tool.side_effect.reaches_out() && !tool.reconcile)
                || !level.declarable_tools.is_empty()
                || taught_or_off(level, Guard::AmbiguityPolicy)
        },
        lines: ambiguity_policy,
    },
    GuardCode {
        guard: Guard::Ledger,
        needs: &[],
        shown: always,
        lines: ledger,
    },
    GuardCode {
        guard: Guard::AtomicReservation,
        needs: &[Guard::Ledger],
        shown: always,
        lines: atomic_reservation,
    },
    GuardCode {
        guard: Guard::KeyDownstream,
        needs: &[],
        shown: always,
        lines: key_downstream,
    },
    GuardCode {
        guard: Guard::CheckpointVersion,
        needs: &[],
        shown: always,
        lines: checkpoint_version,
    },
    GuardCode {
        guard: Guard::ReconcileHook,
        needs: &[Guard::Ledger],
        shown: |level| any_tool(level, |tool| tool.reconcile) || taught_or_off(level, Guard::ReconcileHook),
        lines: reconcile_hook,
    },
    GuardCode {
        guard: Guard::KeyPerCall,
        needs: &[],
        shown: always,
        lines: key_per_call,
    },
    GuardCode {
        guard: Guard::NoLeaseExpiry,
        needs: &[Guard::Ledger],
        // A lease matters only where a second worker can meet a `started` call: a twin, or the
        // fresh worker that recovers a crashed one.
        shown: |level| {
            deals(level, CardKind::DuplicateWorker)
                || deals(level, CardKind::CrashWorker)
                || taught_or_off(level, Guard::NoLeaseExpiry)
        },
        lines: no_lease_expiry,
    },
    GuardCode {
        guard: Guard::NoReflexCompensation,
        needs: &[],
        shown: |level| any_tool(level, |tool| tool.compensation) || taught_or_off(level, Guard::NoReflexCompensation),
        lines: no_reflex_compensation,
    },
    GuardCode {
        guard: Guard::RefusalIsFailed,
        needs: &[],
        shown: |level| deals(level, CardKind::ToolFailsBeforeSending) || taught_or_off(level, Guard::RefusalIsFailed),
        lines: refusal_is_failed,
    },
    GuardCode {
        guard: Guard::KeyRetention,
        // The runtime weighs a resend's key age only for a key it passes on.
        needs: &[Guard::KeyDownstream],
        shown: |level| {
            any_tool(level, |tool| tool.key_retention_ms.is_some()) || taught_or_off(level, Guard::KeyRetention)
        },
        lines: key_retention,
    },
    GuardCode {
        guard: Guard::LookupSettle,
        // Weighed only on what the hook found.
        needs: &[Guard::Ledger, Guard::ReconcileHook],
        shown: |level| {
            any_tool(level, |tool| tool.lookup_settle_ms.is_some()) || taught_or_off(level, Guard::LookupSettle)
        },
        lines: lookup_settle,
    },
    GuardCode {
        guard: Guard::DeadLetter,
        needs: &[],
        shown: |level| level.world.recovery_attempts_max.is_some() || taught_or_off(level, Guard::DeadLetter),
        lines: dead_letter,
    },
];

/// `guard`'s code.
pub fn guard_code(guard: Guard) -> &'static GuardCode {
    GUARD_CODE
        .iter()
        .find(|code| code.guard == guard)
        .expect("every guard has its code (a test holds it)")
}

fn always(_: &Level) -> bool {
    true
}

fn any_tool(level: &Level, declares: impl Fn(&ToolDeclaration) -> bool) -> bool {
    level.tools.iter().any(declares)
}

fn deals(level: &Level, card: CardKind) -> bool {
    level
        .cards
        .iter()
        .any(|allowance| allowance.card == card && allowance.count > 0)
}

/// The level switches the guard off, or its lesson is about it.
fn taught_or_off(level: &Level, guard: Guard) -> bool {
    !level.guards.is_on(guard) || level.lesson.guards.contains(&guard)
}

fn write_retry_rule(context: &Context<'_>, on: bool) -> Vec<Piece> {
    let declared = context.declares_attempts();
    let attempts = match (on, declared) {
        (true, false) => "1 if tool.writes else 3",
        (true, true) => "tool.attempts or (1 if tool.writes else 3)",
        (false, false) => "3",
        (false, true) => "tool.attempts or 3",
    };
    let note = if on {
        "a write gets one attempt; its timeout is unknown"
    } else {
        "every timeout is retried, a write's too"
    };
    vec![Piece::new(Slot::Attempts, 3, format!("for attempt in range({attempts}):"), &[]).note(note)]
}

fn tool_contract(_: &Context<'_>, on: bool) -> Vec<Piece> {
    vec![if on {
        Piece::new(Slot::Contract, 1, "assert_tool_contract(tools)", &[])
            .note("a write with retries or without its key never starts")
    } else {
        Piece::new(Slot::Contract, 1, "", &[]).note("every tool runs as declared, retries and all")
    }]
}

fn ambiguity_policy(_: &Context<'_>, on: bool) -> Vec<Piece> {
    vec![if on {
        Piece::new(Slot::Policy, 1, "assert_ambiguity_policy(tools, tool_policy)", &[])
            .note("a tool that reaches out with no reconcile hook and no pause never starts")
    } else {
        Piece::new(Slot::Policy, 1, "", &[]).note("a tool with no way to settle an unknown answer starts anyway")
    }]
}

fn pause_on_indeterminate(_: &Context<'_>, on: bool) -> Vec<Piece> {
    if !on {
        return vec![
            Piece::new(Slot::TellUnknown, 3, "state.tell(FAILED)", &[])
                .note("the model hears \"failed\" while the answer is unknown"),
        ];
    }
    vec![
        Piece::new(Slot::TellUnknown, 3, "state.awaiting = key", &[])
            .note("the run pauses; the model is told nothing yet"),
        Piece::new(Slot::Park, 2, "while state.awaiting:", &[]),
        Piece::new(Slot::Park, 3, "pause_until_settled(key)", &[Phase::Park, Phase::Parked])
            .note("until a person or the hook settles it"),
        Piece::new(Slot::Park, 3, "record = ledger.read(key)", &[Phase::ReadRecord]).note("how it was settled"),
    ]
}

fn ledger(_: &Context<'_>, on: bool) -> Vec<Piece> {
    if on {
        vec![
            Piece::new(Slot::Late, 4, "sent.on_late(ledger.log_late)", &[Phase::LogLateOutcome])
                .note("a late answer is logged, never recorded"),
            Piece::new(
                Slot::Record,
                3,
                "record = ledger.record(key, answer or INDETERMINATE)",
                &[Phase::RecordOutcome],
            )
            .note("the outcome is written down under the key"),
        ]
    } else {
        vec![
            Piece::new(Slot::Reserve, 2, "record = NEW", &[])
                .note("nothing is reserved, so a replay runs the call again"),
            Piece::new(Slot::Record, 3, "record = answer or INDETERMINATE", &[]).note("nothing is written down"),
        ]
    }
}

fn atomic_reservation(_: &Context<'_>, on: bool) -> Vec<Piece> {
    if on {
        vec![
            Piece::new(
                Slot::Reserve,
                2,
                "record = ledger.reserve(key, call)",
                &[Phase::Reserve],
            )
            .note("one transaction, so exactly one worker gets the call"),
        ]
    } else {
        vec![
            Piece::new(Slot::Reserve, 2, "record = ledger.get(key)", &[Phase::CheckLedger]).note("check first…"),
            Piece::new(
                Slot::Reserve,
                2,
                "if record.may_run: ledger.insert(key, STARTED)",
                &[Phase::InsertStarted],
            )
            .note("…then insert, and a twin slips in between"),
        ]
    }
}

fn key_downstream(_: &Context<'_>, on: bool) -> Vec<Piece> {
    vec![if on {
        Piece::new(
            Slot::Send,
            4,
            "sent = tool.send(call, idempotency_key=key)",
            &[Phase::Send],
        )
        .note("the key travels with the request")
    } else {
        Piece::new(Slot::Send, 4, "sent = tool.send(call)", &[Phase::Send])
            .note("the key stays here, so billing cannot spot a repeat")
    }]
}

fn checkpoint_version(_: &Context<'_>, on: bool) -> Vec<Piece> {
    if on {
        vec![
            Piece::new(
                Slot::Save,
                2,
                "version = ledger.save_checkpoint(state, expected=version)",
                &[Phase::SaveCheckpoint],
            )
            .note("compare-and-set on the version loaded"),
            Piece::new(Slot::Save, 2, "if version.stale: return", &[Phase::StandDown])
                .note("a newer save exists, so this worker stands down"),
        ]
    } else {
        vec![
            Piece::new(Slot::Save, 2, "ledger.save_checkpoint(state)", &[Phase::SaveCheckpoint])
                .note("no version check, so a stale worker writes over a newer save"),
        ]
    }
}

fn reconcile_hook(_: &Context<'_>, on: bool) -> Vec<Piece> {
    if on {
        vec![
            Piece::new(Slot::Hook, 2, "if record.unknown and tool.reconcile:", &[])
                .note("look the call up in billing by its key"),
            Piece::new(Slot::Hook, 3, "record = tool.reconcile(key)", &[Phase::Reconcile]),
        ]
    } else {
        vec![Piece::new(Slot::Hook, 2, "", &[]).note("nobody looks an unknown call up")]
    }
}

fn key_per_call(_: &Context<'_>, on: bool) -> Vec<Piece> {
    vec![if on {
        Piece::new(Slot::Key, 2, "key = f\"{run_id}:{call.id}\"", &[]).note("one key per call, whatever its arguments")
    } else {
        Piece::new(Slot::Key, 2, "key = hash(call.tool, call.arguments)", &[])
            .note("equal calls share a key; a reworded replay gets a new one")
    }]
}

fn no_lease_expiry(context: &Context<'_>, on: bool) -> Vec<Piece> {
    vec![if on {
        Piece::new(Slot::Lease, 2, "", &[]).note("a started call is never taken over, however long it runs")
    } else {
        let lease_ms = context.level.world.lease_ms;
        Piece::new(Slot::Lease, 2, "", &[]).note(format!(
            "a started call older than its {lease_ms} ms lease is taken over and sent again"
        ))
    }]
}

fn no_reflex_compensation(_: &Context<'_>, on: bool) -> Vec<Piece> {
    vec![if on {
        Piece::new(Slot::Compensate, 2, "", &[]).note("never undone by reflex; an operator decides")
    } else {
        Piece::new(
            Slot::Compensate,
            2,
            "if not record.completed: tool.compensate(call)",
            &[Phase::Compensate],
        )
        .note("undone by reflex, whatever billing holds")
    }]
}

fn refusal_is_failed(context: &Context<'_>, on: bool) -> Vec<Piece> {
    let (answer, note) = match (on, context.guards.naive_refusal()) {
        (true, _) => ("FAILED", "nothing left, so failed, and it may run again"),
        (false, NaiveRefusal::Completed) => ("COMPLETED", "the refusal is swallowed and recorded a success"),
        (false, NaiveRefusal::Indeterminate) => {
            ("TIMEOUT", "taken for a timeout, so it waits on a call that never left")
        }
    };
    vec![
        Piece::new(
            Slot::Refusal,
            4,
            format!("if sent.not_attempted: answer = {answer}"),
            &[],
        )
        .note(note),
    ]
}

fn key_retention(_: &Context<'_>, on: bool) -> Vec<Piece> {
    vec![if on {
        Piece::new(
            Slot::Retention,
            4,
            "if attempt and key_age(key) >= tool.key_retention: break",
            &[],
        )
        .note("never resend a key billing has forgotten")
    } else {
        Piece::new(Slot::Retention, 4, "", &[]).note("a key billing has forgotten is resent, and paid again")
    }]
}

fn lookup_settle(_: &Context<'_>, on: bool) -> Vec<Piece> {
    if on {
        vec![
            Piece::new(
                Slot::Settle,
                3,
                "if record.not_found and too_soon(key): look_again_later()",
                &[Phase::WaitToLookAgain],
            )
            .note("nothing yet proves nothing"),
            Piece::new(
                Slot::Settle,
                3,
                "elif record.not_found: ledger.settle(key, FAILED)",
                &[Phase::SettleNotFound],
            )
            .note("still nothing past billing's settle time"),
        ]
    } else {
        vec![
            Piece::new(
                Slot::Settle,
                3,
                "if record.not_found: ledger.settle(key, FAILED)",
                &[Phase::SettleNotFound],
            )
            .note("nothing found at once is taken as proof"),
        ]
    }
}

fn dead_letter(context: &Context<'_>, on: bool) -> Vec<Piece> {
    if !on {
        return vec![
            Piece::new(Slot::DeadLetter, 1, "", &[]).note("a recovery that keeps crashing is retried forever"),
        ];
    }
    let limit = context
        .level
        .world
        .recovery_attempts_max
        .map_or_else(|| "recovery_attempts_max".to_owned(), |limit| limit.to_string());
    vec![
        Piece::new(
            Slot::DeadLetter,
            1,
            format!("if state.failed_recoveries >= {limit}: state.dead_letter()"),
            &[],
        )
        .note("a run that keeps crashing waits for a person"),
    ]
}
