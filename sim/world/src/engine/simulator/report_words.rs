//! The executor's reports in the player's words. The runtime says what it did, typed
//! ([`Report`]); the English the timeline shows is made here, at the application's edge.

use crate::ledger::{ExecutionRecord, Recorded, Reservation, SaveOutcome};
use crate::runtime::executor::Report;
use crate::runtime::key::IdempotencyKey;
use crate::runtime::progress::InProgress;
use crate::runtime::rules::Status;
use crate::runtime::run::RunState;
use crate::runtime::worker::Reconciled;

/// The executor's step in the player's words, as the timeline shows it. `run` names the run
/// the report is about, so a checkpoint names its step as every screen does ("r1/2").
pub fn report_words(run: &str, report: &Report) -> String {
    match report {
        Report::Loaded {
            version,
            state,
            failed_recoveries,
        } => loaded_words(run, *version, state.as_ref(), *failed_recoveries),
        Report::Unreadable { version, detail } => format!("checkpoint v{version} cannot be read: {detail}"),
        Report::Reserved { key, reservation, .. } => reservation_words(key, reservation),
        Report::Checked {
            key,
            record: Some(record),
        } => {
            format!("checks {key}: the ledger holds {}", record.status)
        }
        Report::Checked { key, record: None } => {
            format!("checks {key}: no record (not yet reserved — the insert comes next)")
        }
        Report::AttemptBegun {
            key,
            attempt,
            fenced: true,
        } => {
            format!("{key} is still its own `started` call: attempt {attempt} may leave")
        }
        Report::AttemptBegun {
            key,
            attempt,
            fenced: false,
        } => {
            format!("counts attempt {attempt} of {key} (no compare-and-set before sending)")
        }
        Report::SendRefused { key, record, .. } => send_refused_words(key, record.as_ref()),
        Report::Recorded {
            key,
            recorded: Recorded::Recorded(record),
            ..
        } => format!("records {key} as {}", record.status),
        Report::Recorded {
            key,
            status,
            recorded: Recorded::LateOutcomeIgnored(record),
        } => format!(
            "records {key} as {status}: too late, it is already {} ({}) — logged and ignored",
            record.status, record.owner
        ),
        Report::LateLogged { key, attempt } => {
            format!("late answer to attempt {attempt} of {key} logged under {key} and ignored")
        }
        Report::Reconciled { key, finding: None, .. } => {
            format!("the reconcile hook finds nothing under {key}: unknown")
        }
        Report::Reconciled {
            key,
            finding: Some(finding),
            outcome,
        } => match outcome {
            Reconciled::AlreadySettled(record) => format!(
                "the reconcile hook finds {finding} for {key}, but it is already settled {}",
                record.status
            ),
            Reconciled::Unknown => format!("the reconcile hook cannot tell about {key} ({finding}): still unknown"),
            _ => format!("the reconcile hook finds {finding} for {key}"),
        },
        Report::SettledNotFound {
            key,
            reason,
            outcome: Reconciled::SettledFailed(_),
        } => format!("settles {key} failed: {reason}"),
        Report::SettledNotFound { key, outcome, .. } => match outcome {
            Reconciled::AlreadySettled(record) => {
                format!("does not settle {key}: it is already settled {}", record.status)
            }
            _ => format!("does not settle {key}: it has no unknown record to settle"),
        },
        Report::ReflexCompensated { key, detail, .. } => format!("compensates {key} by reflex: {detail}"),
        Report::Saved {
            status,
            item,
            outcome: SaveOutcome::Saved { version },
        } => format!(
            "saves checkpoint v{version} ({status}, {})",
            at_step(run, status, *item)
        ),
        Report::Saved {
            outcome: SaveOutcome::Stale { expected, found },
            ..
        } => format!("save refused: loaded v{expected}, the ledger has v{found}"),
        Report::Saved {
            outcome: SaveOutcome::TakenOver { key, status, owner },
            ..
        } => format!("save refused: it tells the model {key} failed, but {owner} ran it again ({status})"),
        Report::Saved {
            outcome: SaveOutcome::Abandoned { key, status },
            ..
        } => format!("does not end the run: {key} is still {status} and nothing will make it again"),
        Report::RecordRead {
            key,
            record: Some(record),
        } => format!("reads {key}: {}", record.status),
        Report::RecordRead { key, record: None } => format!("reads {key}: no record"),
        Report::WaitsForPerson { reason } => format!("stops driving the run: {}", crate::text::wait_words(reason)),
    }
}

/// A checkpoint loaded (or none found), and whether this start is a recovery after failed ones.
fn loaded_words(run: &str, version: u32, state: Option<&RunState>, failed_recoveries: Option<u32>) -> String {
    match state {
        Some(state) => format!(
            "loads checkpoint v{version}: {}, {}{}",
            at_step(run, state.status.name(), state.item),
            state.status.name(),
            match failed_recoveries {
                Some(0) => " (a recovery)".to_owned(),
                Some(failed) => format!(" (a recovery; {failed} before it started here and got no further)"),
                None => String::new(),
            }
        ),
        None => format!(
            "no checkpoint: the run starts from the beginning{}",
            match failed_recoveries {
                Some(0) => " again (a recovery: it started before and saved none)".to_owned(),
                Some(failed) => format!(
                    " again (a recovery; {} before it also started with no checkpoint and saved none)",
                    crate::text::counted(u64::from(failed), "recovery", "recoveries")
                ),
                None => String::new(),
            }
        ),
    }
}

/// A reservation's outcome: the call in progress elsewhere, the ledger's decision, or why
/// it was refused.
fn reservation_words(key: &IdempotencyKey, reservation: &Reservation) -> String {
    let held = |status: Option<Status>| status.map_or_else(|| "no record".to_owned(), |status| format!("`{status}`"));
    match reservation {
        _ if let Some(busy) = InProgress::of_reservation(reservation) => {
            format!("reserves {key}: {busy} — the tool is not called")
        }
        Reservation::Decided {
            action,
            previous_status,
            ..
        } => format!(
            "reserves {key}: the ledger held {} → {}",
            held(*previous_status),
            action.describe()
        ),
        Reservation::ArgumentsMismatch { existing } => format!(
            "reserves {key}: refused, the key belongs to other arguments {}",
            existing.arguments
        ),
        Reservation::Fenced { expected, found } => {
            format!("reserves {key}: refused, the run's checkpoint is v{found}, not the v{expected} it loaded")
        }
    }
}

/// Why the send fence let nothing leave: the record another worker owns, or a record that
/// is no longer this call's `started` one.
fn send_refused_words(key: &IdempotencyKey, record: Option<&ExecutionRecord>) -> String {
    match record {
        Some(record) if record.status == Status::Started => format!(
            "does not send {key}: {} owns its `started` record now — nothing leaves",
            record.owner
        ),
        Some(record) => format!(
            "does not send {key}: its record is `{}` now — nothing leaves, the record is followed",
            record.status
        ),
        None => format!("does not send {key}: it has no record"),
    }
}

/// Where a checkpoint leaves its run, named as Penny's panel and the debrief name steps: "at
/// r1/2" (the step the model works on next), or "after its last step" once the run completed —
/// a completed run's index is one past its script, a step no screen could show.
fn at_step(run: &str, status: &str, item: u32) -> String {
    if status == crate::runtime::run::RunStatus::Completed.name() {
        "after its last step".to_owned()
    } else {
        format!("at {}", crate::text::step_name(run, item))
    }
}
