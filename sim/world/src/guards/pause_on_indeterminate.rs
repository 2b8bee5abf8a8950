//! Guard `pause_on_indeterminate`: `on_indeterminate: pause`. A run whose call is unknown
//! waits for someone to settle it; without it the model is told "failed", and a model told
//! "failed" may make the call again, under a new key no ledger recognises.

use super::code::{Context, Piece, Slot};
use super::{DecisionRow, GuardCode, GuardSpec, Origin, Row, RowId, Rule, always};
use crate::runtime::guards::Guard;
use crate::runtime::worker::Phase;

pub(super) const SPEC: GuardSpec = GuardSpec {
    guard: Guard::PauseOnIndeterminate,
    words: "the pause on unknown calls",
    promise: "a run whose call is unknown waits for someone to settle it, and the model is not told \"failed\" meanwhile",
    without: "an unknown call reported to the model as failed",
    rule: Rule {
        quote: &[
            "With tool_policy.on_indeterminate: pause, a run whose call is unknown pauses in awaiting_reconciliation instead of failing, and settling the call resumes it.",
            "on_indeterminate: pause exists for this reason: the model doesn't hear \"failed\" while the honest answer is \"unknown\".",
        ],
        origin: Origin::Seed,
    },
    decision_rows: &[DecisionRow {
        table: "Table 3 — unknown",
        function: "rules::unknown_action",
        row: "a call still unknown after the hook pauses the run instead of telling the model it failed",
    }],
    rulebook_rows: &[Row::with(
        Guard::PauseOnIndeterminate,
        RowId::Pause,
        "pause on unknown calls",
        "the run waits for an operator",
    )],
    defender_key: "3",
    code: GuardCode {
        needs: &[],
        shown: always,
        lines,
    },
    mentions: &["pause on unknown", "pause"],
    tested_by: |hand| hand.unknowns || hand.operators,
    matters_in: always,
};

/// Its lines in the runtime's loop: its own when on, the naive ones it replaces when off.
fn lines(_: &Context<'_>, on: bool) -> Vec<Piece> {
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
