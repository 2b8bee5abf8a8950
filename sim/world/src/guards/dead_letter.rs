//! Guard `dead_letter`: a run whose recovery failed its declared number of times stops as
//! `dead_lettered` and resumes only when an operator asks. A policy beyond the seed: recovering
//! a crash loop for ever repeats whatever the crash repeats.

use super::code::{Context, Piece, Slot, taught_or_off};
use super::hand::any_hand;
use super::{DecisionRow, GuardCode, GuardSpec, Origin, Row, RowId, Rule};
use crate::level::Level;
use crate::runtime::guards::Guard;

pub(super) const SPEC: GuardSpec = GuardSpec {
    guard: Guard::DeadLetter,
    words: "the dead letter",
    promise: "a run whose recovery keeps failing stops, and waits for an operator to resume it",
    without: "recovery retried for ever",
    rule: Rule {
        quote: &[
            "A run whose recovery has failed as many times as the runtime allows stops as dead_lettered, and is driven again only when an operator resumes it: recovering it for ever repeats whatever its crash repeats.",
        ],
        origin: Origin::Beyond {
            source: "a policy beyond the seed (which says only that a run is recovered from its last checkpoint): message queues dead-letter a message that keeps failing in the same way",
        },
    },
    decision_rows: &[DecisionRow {
        table: "Table 8 — recovery",
        function: "rules::recovery_action",
        row: "a recovery after as many failed recoveries as declared dead-letters the run",
    }],
    rulebook_rows: &[
        Row::with(
            Guard::DeadLetter,
            RowId::DeadLettered,
            "a recovery, after as many failed recoveries as declared",
            "stop the run as dead_lettered: it resumes only when an operator asks (table 8)",
        ),
        Row::without(
            Guard::DeadLetter,
            RowId::RecoveredForEver,
            "a recovery, after as many failed recoveries as declared",
            "recover again: a naive runtime retries recovery forever",
        ),
    ],
    defender_key: "\\",
    code: GuardCode {
        needs: &[],
        shown: |level| level.world.recovery_attempts_max.is_some() || taught_or_off(level, Guard::DeadLetter),
        lines,
    },
    mentions: &["dead letter"],
    tested_by: any_hand,
    matters_in,
};

/// It counts against a declared limit only: with none, it is the same on or off.
fn matters_in(level: &Level) -> bool {
    level.world.recovery_attempts_max.is_some()
}

/// Its lines in the runtime's loop: its own when on, the naive ones it replaces when off.
fn lines(context: &Context<'_>, on: bool) -> Vec<Piece> {
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
