//! Guard `ambiguity_policy`: before a run starts, an external or destructive tool must say how
//! an unknown outcome gets settled — a reconcile hook that looks the call up, or a runtime that
//! pauses on an unknown call. A policy beyond the seed: the seed's own default ("an unknown call
//! is handled like any failed call") passes `assert_tool_contract`, and a model told "failed"
//! may make the call again under a new key.

use super::code::{Context, Piece, Slot, taught_or_off};
use super::hand::any_hand;
use super::{DecisionRow, GuardCode, GuardSpec, Origin, Row, RowId, Rule, any_tool};
use crate::level::Level;
use crate::runtime::guards::Guard;

pub(super) const SPEC: GuardSpec = GuardSpec {
    guard: Guard::AmbiguityPolicy,
    words: "the ambiguity policy check",
    promise: "the ambiguity policy check: a run whose money-moving tool has neither a reconcile hook nor the pause never starts",
    without: "a tool that reaches out started with no way to settle an unknown answer",
    rule: Rule {
        quote: &[
            "A tool that reaches outside the runtime (external or destructive) declares how an unknown outcome is settled before its run starts: a reconcile hook that looks the call up, or on_indeterminate: pause. A tool with neither is refused, because its lost answer would reach the model as \"failed\", and a model told \"failed\" may call again under a new key.",
        ],
        origin: Origin::Beyond {
            source: "a policy beyond the seed, whose default handles an unknown call like any failed call: agent runtimes such as zeph-durable refuse to register a money-moving tool that declares no ambiguity policy",
        },
    },
    decision_rows: &[DecisionRow {
        table: "Start",
        function: "tool::assert_ambiguity_policy",
        row: "an external or destructive tool with no reconcile hook, in a runtime that does not pause on an unknown call, refuses the run before it starts",
    }],
    rulebook_rows: &[
        Row::with(
            Guard::AmbiguityPolicy,
            RowId::AmbiguityRefused,
            "a tool that reaches out has no reconcile hook, and the run does not pause on an unknown call",
            "refuse the run before it starts: nothing is sent, it waits for a person",
        ),
        Row::without(
            Guard::AmbiguityPolicy,
            RowId::AmbiguityIgnored,
            "a tool that reaches out has no reconcile hook, and the run does not pause on an unknown call",
            "start anyway: a lost answer will reach the model as \"failed\"",
        ),
    ],
    defender_key: ";",
    code: GuardCode {
        needs: &[],
        // The check can refuse only a tool that reaches out with no reconcile hook: shown where
        // the level has one, lets the player declare one, or teaches or switches the check.
        shown: |level| {
            any_tool(level, |tool| tool.side_effect.reaches_out() && !tool.reconcile)
                || !level.declarable_tools.is_empty()
                || taught_or_off(level, Guard::AmbiguityPolicy)
        },
        lines,
    },
    mentions: &["ambiguity policy"],
    tested_by: any_hand,
    matters_in,
};

/// The check can refuse only a tool that reaches out with no reconcile hook, as declared or as
/// the player may declare it; the pause being on or off is the run's, so it is not weighed here.
fn matters_in(level: &Level) -> bool {
    any_tool(level, |tool| tool.side_effect.reaches_out() && !tool.reconcile)
}

/// Its lines in the runtime's loop: its own when on, the naive ones it replaces when off.
fn lines(_: &Context<'_>, on: bool) -> Vec<Piece> {
    vec![if on {
        Piece::new(Slot::Policy, 1, "assert_ambiguity_policy(tools, tool_policy)", &[])
            .note("a tool that reaches out with no reconcile hook and no pause never starts")
    } else {
        Piece::new(Slot::Policy, 1, "", &[]).note("a tool with no way to settle an unknown answer starts anyway")
    }]
}
