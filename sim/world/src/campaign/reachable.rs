//! Whether a level's goal about an email, an owner change or a delete can be reached at all:
//! some run must make such a call (the checker judges only what the script means).

use std::collections::BTreeSet;

use crate::billing_tools::Operation;
use crate::level::Level;
use crate::outcome::Outcome;

/// A goal about an email, an owner change or a delete needs a run that makes one.
pub(super) fn effect_goal_problem(level: &Level) -> Option<String> {
    let needs = match level.goal {
        Outcome::EmailedTwice => Operation::SendEmail,
        Outcome::ChangeUndone => Operation::ChangeOwner,
        Outcome::ActedAgain => Operation::DeleteRecord,
        _ => return None,
    };
    let tools: BTreeSet<&str> = level
        .tools
        .iter()
        .filter(|tool| needs.is_of(tool))
        .map(|tool| tool.name.as_str())
        .collect();
    let makes = level
        .runs
        .iter()
        .flat_map(|run| run.calls.iter())
        .any(|call| tools.contains(call.tool.as_str()));
    (!makes).then(|| format!("the goal is {}, but no run calls a `{}` tool", level.goal, needs.name()))
}
