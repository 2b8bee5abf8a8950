//! Guard `checkpoint_version`: a worker saves its run's checkpoint only over the version it
//! loaded, so of two workers on one run the stale one stands down. Without it the last writer
//! wins, and a worker that missed the other's calls makes them again.

use super::{Code, DecisionRow, GuardSpec, Origin, Rule, always};
use crate::runtime::guards::Guard;

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
    code: Code {
        on: &["ledger.save_checkpoint(run, state, expected_version=loaded_version)"],
        off: &["ledger.save_checkpoint(run, state)  # the last writer wins"],
    },
    mentions: &["checkpoint version"],
    tested_by: |hand| hand.processes || hand.operators,
    matters_in: always,
};
