//! Guard `checkpoint_version`: a worker saves its run's checkpoint only over the version it
//! loaded, so of two workers on one run the stale one stands down. Without it the last writer
//! wins, and a worker that missed the other's calls makes them again.

use super::code::{Context, Piece, Slot};
use super::{DecisionRow, GuardCode, GuardSpec, Origin, Rule, always};
use crate::runtime::guards::Guard;
use crate::runtime::worker::Phase;

pub(super) const SPEC: GuardSpec = GuardSpec {
    guard: Guard::CheckpointVersion,
    words: "the checkpoint version",
    promise: "a stale checkpoint save fails and its worker stands down",
    without: "checkpoint saves that never check the version",
    rule: Rule {
        quote: &["A version check on the run's checkpoint makes the other one stand down at its next save."],
        origin: Origin::Seed,
    },
    decision_rows: &[DecisionRow {
        table: "Table 1 — reservation",
        function: "ledger::decide_reservation",
        row: "a reservation fenced on the loaded checkpoint version is refused when someone saved since, before anything is sent",
    }],
    rulebook_rows: &[],
    defender_key: "7",
    code: GuardCode {
        needs: &[],
        shown: always,
        lines,
    },
    mentions: &["checkpoint version"],
    tested_by: |hand| hand.processes || hand.operators,
    matters_in: always,
};

/// Its lines in the runtime's loop: its own when on, the naive ones it replaces when off.
fn lines(_: &Context<'_>, on: bool) -> Vec<Piece> {
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
