//! What the synchronous-driver tests share: the refund model `execution::drive_run` drives,
//! and its tool's declaration.
//! `sim/tests/provider_guards.rs` includes this file too (by path), so the model is written once.

use twice_runtime::execution::{Agent, AgentError};
use twice_runtime::run::{Arguments, Decision, RunState, Told, ToolCall};
use twice_runtime::tool::{SideEffect, ToolDeclaration};

/// The refund's tool: `issue_credit`, external, keyed, looked up by its reconcile hook, with
/// the provider's key retention and lookup settle time as given.
pub fn credit_tool(retention_ms: Option<u64>, settle_ms: Option<u64>) -> ToolDeclaration {
    let mut tool = ToolDeclaration::new("issue_credit", SideEffect::External).with_reconcile();
    tool.key_retention_ms = retention_ms;
    tool.lookup_settle_ms = settle_ms;
    tool
}

/// One refund of $25.00 to acct_ada. Told the call did not happen, the model calls again (a
/// new call, a new key), up to `calls_max` calls; told a result or a compensation, it is done.
pub struct RefundModel {
    /// The calls it makes for the refund at the most.
    pub calls_max: u32,
}

impl Agent for RefundModel {
    fn decide(&mut self, state: &RunState) -> Result<(Decision, RunState), AgentError> {
        let mut next = state.clone();
        match &state.last_told {
            Some(Told::Result { .. } | Told::Compensated) => return Ok((Decision::Done, next)),
            Some(_) if state.calls_for_item >= self.calls_max => return Ok((Decision::Done, next)),
            _ => {}
        }
        let call = ToolCall {
            id: format!("c{}", next.next_call_number),
            tool: "issue_credit".into(),
            item: next.item,
            arguments: Arguments::new(serde_json::json!({"account": "acct_ada", "amount_cents": 2500})),
        };
        next.next_call_number += 1;
        next.calls_for_item += 1;
        next.last_told = None;
        Ok((Decision::Call(call), next))
    }
}
