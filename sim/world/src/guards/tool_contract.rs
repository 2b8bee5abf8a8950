//! Guard `tool_contract`: the seed's `assert_tool_contract` before a run starts. A run whose
//! tool writes, sends or deletes and is declared with more than one attempt, or takes no
//! idempotency key, is refused before anything is sent. That is all it checks: a tool with no
//! way to settle an unknown outcome is the ambiguity policy's to refuse (`ambiguity_policy.rs`).

use super::code::{Context, Piece, Slot};
use super::hand::any_hand;
use super::{DecisionRow, GuardCode, GuardSpec, Origin, Row, RowId, Rule, always, any_tool};
use crate::level::Level;
use crate::runtime::guards::Guard;

pub(super) const SPEC: GuardSpec = GuardSpec {
    guard: Guard::ToolContract,
    words: "the tool contract check",
    promise: "the tool contract check: a run whose write is declared with retries or no key never starts",
    without: "tools started as declared, retries and all",
    rule: Rule {
        quote: &[
            "The runtime's test helper assert_tool_contract fails any tool that writes, sends or deletes and is allowed more than one attempt or has no idempotency key, so the rule is checked in CI, not just documented.",
        ],
        origin: Origin::Seed,
    },
    decision_rows: &[DecisionRow {
        table: "Start",
        function: "tool::assert_tool_contract",
        row: "a tool that changes something, allowed more than one attempt or taking no key, refuses the run before it starts",
    }],
    rulebook_rows: &[
        Row::with(
            Guard::ToolContract,
            RowId::ContractRefused,
            "a tool that changes something is declared with retries, or takes no key",
            "refuse the run before it starts: nothing is sent, it waits for a person",
        ),
        Row::without(
            Guard::ToolContract,
            RowId::ContractIgnored,
            "a write is declared with retries",
            "start anyway: the runtime obeys the declaration and retries the write",
        ),
    ],
    defender_key: "2",
    code: GuardCode {
        needs: &[],
        shown: always,
        lines,
    },
    mentions: &["tool contract", "contract"],
    tested_by: any_hand,
    matters_in,
};

/// The check can refuse only a tool that fails it, as declared or as the player may declare it.
fn matters_in(level: &Level) -> bool {
    any_tool(level, |tool| tool.check_contract().is_err())
}

/// Its lines in the runtime's loop: its own when on, the naive ones it replaces when off.
fn lines(_: &Context<'_>, on: bool) -> Vec<Piece> {
    vec![if on {
        Piece::new(Slot::Contract, 1, "assert_tool_contract(tools)", &[])
            .note("a write with retries or without its key never starts")
    } else {
        Piece::new(Slot::Contract, 1, "", &[]).note("every tool runs as declared, retries and all")
    }]
}
