//! The model's side. In your agent this is the LLM; here it answers what the level's script
//! made Penny answer at each question (the schedule carries the decisions), so the run takes
//! the same path every time. What it leaves in the run's state is what the library expects a
//! model to leave: the counters moved on, the call numbered from the run's own counter.

use twice_runtime::run::{Arguments, Decision, RunState, ToolCall};

/// The model's policy, as the level gives it.
#[derive(Clone, Copy, Debug)]
pub struct Policy {
    /// Told its call came to nothing, the model fails the run (rather than stop or retry).
    pub gives_up_on_failure: bool,
    /// Told its call was undone, the model takes it as done and goes on.
    pub accepts_compensation: bool,
}

/// A decision of the script, as the schedule writes it.
#[derive(Clone, Copy, Debug)]
pub enum Says {
    /// Call `tool` with these arguments (JSON) as call `id`, for step `item` of the run.
    Call {
        id: &'static str,
        tool: &'static str,
        item: u32,
        arguments: &'static str,
    },
    /// No more calls: the run is done, or (a model told its call came to nothing, whose policy
    /// is to give up) it fails.
    NoCall,
}

/// The decision and the state it leaves, from the state the runtime hands the model.
pub fn decide(says: Says, state: &RunState, policy: Policy) -> Result<(Decision, RunState), String> {
    let mut next = state.clone();
    let move_on = |next: &mut RunState| {
        next.item = next.item.saturating_add(1);
        next.calls_for_item = 0;
        next.last_told = None;
    };
    match says {
        Says::Call {
            id,
            tool,
            item,
            arguments,
        } => {
            // The same step again (a retry the model chose) keeps the item; anything else is
            // the next step.
            if next.last_told.is_some() && item != next.item {
                move_on(&mut next);
            }
            let arguments: serde_json::Value =
                serde_json::from_str(arguments).map_err(|error| format!("the arguments of {id}: {error}"))?;
            next.next_call_number = next.next_call_number.saturating_add(1);
            next.calls_for_item = next.calls_for_item.saturating_add(1);
            let call = ToolCall {
                id: id.to_owned(),
                tool: tool.into(),
                item,
                arguments: Arguments::new(arguments),
            };
            Ok((Decision::Call(call), next))
        }
        Says::NoCall => match &next.last_told {
            Some(told)
                if policy.gives_up_on_failure
                    && told.nothing_stands()
                    && !(policy.accepts_compensation && told.compensated()) =>
            {
                let reason = format!("Penny gave up on step {}", next.item + 1);
                Ok((Decision::FailRun { reason }, next))
            }
            _ => {
                if next.last_told.is_some() {
                    move_on(&mut next);
                }
                Ok((Decision::Done, next))
            }
        },
    }
}
