//! An agent's next step: a call (or a turn's calls) numbered from the run's own counters, so a
//! replay of the same decisions makes the same ids and keys.

use crate::batch::{BATCH_CALLS_MAX, Batch, BatchError};
use crate::ids::ToolName;
use crate::run::{Arguments, Decision, RunState, ToolCall};

/// The next call for an agent: the state moved on to the next item if the last call was
/// answered, a call numbered from the run's counter (so a replay makes the same id), and the
/// state with its counters counted. `None` when a counter is at its limit.
///
/// ```
/// use twice_runtime::execution::next_call;
/// use twice_runtime::run::{Arguments, Decision, RunState};
/// let state = RunState::default();
/// let (decision, next) = next_call(&state, "send_email", Arguments::new(serde_json::json!({"to": "ada"}))).unwrap();
/// let Decision::Call(call) = decision else { unreachable!() };
/// assert_eq!((call.id.as_str(), call.item, next.next_call_number), ("c1", 0, 2));
/// ```
pub fn next_call(state: &RunState, tool: &str, arguments: Arguments) -> Option<(Decision, RunState)> {
    let mut next = moved_on(state)?;
    let call = ToolCall {
        id: format!("c{}", next.next_call_number),
        tool: ToolName::from(tool),
        item: next.item,
        arguments,
    };
    next.next_call_number = next.next_call_number.checked_add(1)?;
    next.calls_for_item = next.calls_for_item.checked_add(1)?;
    Some((Decision::Call(call), next))
}

/// Several calls for an agent to make concurrently (a provider's parallel tool calls), as
/// [`next_call`] makes one: the state moved on to the next item if the last call was
/// answered, the calls numbered from the run's counter in the order given (so a replay makes
/// the same ids), all for the same item.
///
/// ```
/// use twice_runtime::execution::next_calls;
/// use twice_runtime::run::{Arguments, Decision, RunState};
/// let credit = || Arguments::new(serde_json::json!({"cents": 2500}));
/// let (decision, next) = next_calls(&RunState::default(), &[("issue_credit", credit()), ("issue_credit", credit())]).unwrap();
/// let Decision::Calls(batch) = decision else { unreachable!() };
/// let ids: Vec<&str> = batch.calls().iter().map(|call| call.id.as_str()).collect();
/// assert_eq!((ids, next.next_call_number), (vec!["c1", "c2"], 3));
/// ```
///
/// # Errors
///
/// [`BatchError`]: no call, more than [`crate::batch::BATCH_CALLS_MAX`], or a counter at its
/// limit.
pub fn next_calls(state: &RunState, calls: &[(&str, Arguments)]) -> Result<(Decision, RunState), BatchError> {
    let mut next = moved_on(state).ok_or(BatchError::CounterAtLimit)?;
    let mut made = Vec::with_capacity(calls.len().min(BATCH_CALLS_MAX));
    for (tool, arguments) in calls.iter().take(BATCH_CALLS_MAX + 1) {
        made.push(ToolCall {
            id: format!("c{}", next.next_call_number),
            tool: ToolName::from(*tool),
            item: next.item,
            arguments: arguments.clone(),
        });
        next.next_call_number = next.next_call_number.checked_add(1).ok_or(BatchError::CounterAtLimit)?;
        next.calls_for_item = next.calls_for_item.checked_add(1).ok_or(BatchError::CounterAtLimit)?;
    }
    if calls.len() > BATCH_CALLS_MAX {
        return Err(BatchError::TooMany {
            calls: calls.len(),
            max: BATCH_CALLS_MAX,
        });
    }
    Ok((Decision::Calls(Batch::new(made)?), next))
}

/// The state with the current item finished if the model was told about it: the item an
/// agent works on next. `None` when the item counter is at its limit.
pub fn moved_on(state: &RunState) -> Option<RunState> {
    let mut next = state.clone();
    if next.last_told.is_some() {
        next.item = next.item.checked_add(1)?;
        next.calls_for_item = 0;
        next.last_told = None;
    }
    Some(next)
}
