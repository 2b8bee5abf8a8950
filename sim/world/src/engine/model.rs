//! Penny's model: a scripted policy the level configures. Which tools she calls, with
//! what arguments, and what she does when told a call failed.

use serde::{Deserialize, Serialize};

use crate::billing_tools::CreditArguments;
use crate::runtime::batch::Batch;
use crate::runtime::ids::{RunId, Tenant, ToolName};
use crate::runtime::run::{Decision, RunState, Told, ToolCall};

/// What the model does when told a call failed (or did not take effect).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OnFailed {
    /// Moves on to the next item: the customer may go unpaid.
    #[default]
    GiveUp,
    /// Calls the tool again: a new tool call, so a new key. To the model, that's diligence.
    CallAgain,
    /// Gives up on the run: the run ends failed instead of moving on (and its workflow node
    /// may start it again as a fresh run).
    FailRun,
}

/// What the model does when told its call was compensated (an operator undid it).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OnCompensated {
    /// As [`OnFailed`] says: nothing of the call stands, like a failure.
    #[default]
    AsFailed,
    /// Takes the undo as an operator's decision that the effect should not stand: moves on
    /// to the next item without making the call again (the customer may go unpaid).
    Accept,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelPolicy {
    #[serde(default)]
    pub on_failed: OnFailed,
    /// What "compensated" makes the model do; by default what `on_failed` says.
    #[serde(default, skip_serializing_if = "is_as_failed")]
    pub on_compensated: OnCompensated,
    /// The most calls the model makes for one item (a limit on everything).
    #[serde(default = "default_max_calls")]
    pub max_calls_per_item: u32,
    /// A repeated call words its memo differently.
    #[serde(default)]
    pub reword_on_repeat: bool,
    /// Asked again for the same step after a recovery, the model words its memo differently.
    #[serde(default)]
    pub reword_on_replay: bool,
}

fn is_as_failed(on_compensated: &OnCompensated) -> bool {
    *on_compensated == OnCompensated::AsFailed
}

fn default_max_calls() -> u32 {
    3
}

impl Default for ModelPolicy {
    fn default() -> Self {
        ModelPolicy {
            on_failed: OnFailed::GiveUp,
            on_compensated: OnCompensated::AsFailed,
            max_calls_per_item: 3,
            reword_on_repeat: false,
            reword_on_replay: false,
        }
    }
}

/// One thing the model means to do.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptCall {
    pub tool: ToolName,
    pub account: String,
    /// The credit's amount; 0 (left out) for anything but a credit.
    #[serde(default)]
    pub amount_cents: u32,
    /// The credit's memo, the email's subject, or why a record is changed or deleted.
    pub memo: String,
    /// The account's new owner (a `change_owner` call only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<String>,
    /// Other wordings of the memo, used when the model rewords.
    #[serde(default)]
    pub rewordings: Vec<String>,
}

impl ScriptCall {
    fn wording(&self, index: u32) -> String {
        match index {
            0 => self.memo.clone(),
            _ if self.rewordings.is_empty() => format!("{} (again)", self.memo),
            index => self.rewordings[(index as usize - 1) % self.rewordings.len()].clone(),
        }
    }
}

/// One run of the agent: Penny's task for one customer.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunScript {
    pub id: RunId,
    #[serde(default = "default_tenant")]
    pub tenant: Tenant,
    pub calls: Vec<ScriptCall>,
    /// Penny makes every call of the run in one turn (a provider's parallel tool calls): one
    /// batch, all requests out at once, each call its own key. Told the batch's outcomes, she
    /// is done (or, `on_failed: fail_run`, fails the run if any came to nothing).
    #[serde(default, skip_serializing_if = "is_false")]
    pub parallel: bool,
}

impl RunScript {
    /// Why the run cannot make its calls in one turn, if it is `parallel`: more calls than a
    /// batch holds, or a model that calls again on failure (which call of the batch to repeat
    /// would be a guess).
    pub fn parallel_problem(&self, policy: &ModelPolicy) -> Option<String> {
        use crate::runtime::batch::BATCH_CALLS_MAX;
        if !self.parallel {
            return None;
        }
        if self.calls.len() > BATCH_CALLS_MAX {
            return Some(format!(
                "parallel: one turn makes at most {BATCH_CALLS_MAX} calls, and the run has {}",
                self.calls.len()
            ));
        }
        (policy.on_failed == OnFailed::CallAgain).then(|| {
            "parallel: a run whose calls are made in one turn cannot have a model that calls again on \
             failure (model.on_failed: call_again)"
                .to_owned()
        })
    }
}

fn is_false(value: &bool) -> bool {
    !*value
}

pub fn default_tenant() -> Tenant {
    "default".into()
}

/// How the model is nudged for this decision.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Nudge {
    /// How many times the model was asked for this same step before (a replay).
    pub replays: u32,
    /// A "model calls again" card is armed: `Some(reword)`.
    pub call_again: Option<bool>,
}

/// Why the model cannot decide from a run's state: a counter of it is at its limit (a
/// checkpoint written by something else, or a run far past any real one). The run waits for
/// a person rather than wrap a counter into a key it already used.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("the run's {counter} is {value}, the most it may be")]
pub struct ModelError {
    pub counter: &'static str,
    pub value: u32,
}

/// The model's decision and the run state it leaves; `true` when the card was used.
pub fn decide(
    script: &RunScript,
    policy: &ModelPolicy,
    state: &RunState,
    nudge: Nudge,
) -> Result<(Decision, RunState, bool), ModelError> {
    if script.parallel {
        return decide_batch(script, policy, state, nudge);
    }
    let at_limit = |counter: &'static str, value: u32| ModelError { counter, value };
    let mut next = state.clone();
    let mut used_card = false;
    // A model that accepts a compensation hears it as a decision, not as nothing done.
    let accepted_undo =
        policy.on_compensated == OnCompensated::Accept && next.last_told.as_ref().is_some_and(Told::compensated);
    let repeat = match &next.last_told {
        None => false,
        Some(_) if accepted_undo => false,
        // The card makes a model that heard its call came to nothing try again, whatever its
        // policy. A model told the call worked has no reason to, and the card does not force it.
        Some(told) if nudge.call_again.is_some() && told.nothing_stands() => {
            used_card = true;
            true
        }
        Some(told) => {
            told.nothing_stands()
                && policy.on_failed == OnFailed::CallAgain
                && next.calls_for_item < policy.max_calls_per_item
        }
    };
    if let Some(told) = next
        .last_told
        .as_ref()
        .filter(|told| !repeat && !accepted_undo && told.nothing_stands())
        && policy.on_failed == OnFailed::FailRun
    {
        // The state is the one the model was given: the run fails at this item.
        let reason = format!(
            "Penny gave up on step {}: told \"{}\"",
            next.item + 1,
            crate::text::told_words(told)
        );
        return Ok((Decision::FailRun { reason }, next, used_card));
    }
    if next.last_told.is_some() && !repeat {
        next.item = next.item.checked_add(1).ok_or(at_limit("item", next.item))?;
        next.calls_for_item = 0;
        next.last_told = None;
    }
    let Some(script_call) = script.calls.get(next.item as usize) else {
        return Ok((Decision::Done, next, used_card));
    };
    let mut wording = 0;
    if repeat && (policy.reword_on_repeat || nudge.call_again == Some(true)) {
        wording += next.calls_for_item;
    }
    if policy.reword_on_replay {
        wording += nudge.replays;
    }
    let next_call_number = next
        .next_call_number
        .checked_add(1)
        .ok_or(at_limit("next tool call number", next.next_call_number))?;
    let calls_for_item = next
        .calls_for_item
        .checked_add(1)
        .ok_or(at_limit("calls for the item", next.calls_for_item))?;
    let call = script_call.call(next.next_call_number, next.item, wording);
    next.next_call_number = next_call_number;
    next.calls_for_item = calls_for_item;
    Ok((Decision::Call(call), next, used_card))
}

impl ScriptCall {
    /// The tool call `c<number>` for script item `item`, its memo in wording `wording`.
    fn call(&self, number: u32, item: u32, wording: u32) -> ToolCall {
        ToolCall {
            id: format!("c{number}"),
            tool: self.tool.clone(),
            item,
            arguments: CreditArguments {
                account: self.account.clone(),
                amount_cents: self.amount_cents,
                memo: self.wording(wording),
                owner: self.owner.clone(),
            }
            .to_arguments(),
        }
    }
}

/// A parallel run (`parallel: true`): its first decision is one batch of every script call,
/// numbered from the run's counter (a recovered run asked again makes the same ids); its state
/// then stands on the last item, so once told the model is past every item and done. A
/// repeat is never made: which call came to nothing would be a guess, and a repeat of one
/// call is not what a parallel run scripts (the level refuses `on_failed: call_again` with it).
fn decide_batch(
    script: &RunScript,
    policy: &ModelPolicy,
    state: &RunState,
    nudge: Nudge,
) -> Result<(Decision, RunState, bool), ModelError> {
    let mut next = state.clone();
    if next.last_told.is_some() {
        let count = script.calls.len();
        let came_to_nothing = next
            .transcript
            .iter()
            .rev()
            .take(count)
            .find(|(_, told)| told.nothing_stands());
        if let Some((call, told)) = came_to_nothing
            && policy.on_failed == OnFailed::FailRun
        {
            let reason = format!(
                "Penny gave up on the run: told of {call} \"{}\"",
                crate::text::told_words(told)
            );
            return Ok((Decision::FailRun { reason }, next, false));
        }
        next.item = u32::try_from(count).unwrap_or(u32::MAX);
        next.calls_for_item = 0;
        next.last_told = None;
        return Ok((Decision::Done, next, false));
    }
    let wording = if policy.reword_on_replay { nudge.replays } else { 0 };
    let mut calls = Vec::with_capacity(script.calls.len());
    for (item, script_call) in script.calls.iter().enumerate() {
        let item = u32::try_from(item).unwrap_or(u32::MAX);
        calls.push(script_call.call(next.next_call_number, item, wording));
        next.next_call_number = next.next_call_number.checked_add(1).ok_or(ModelError {
            counter: "next tool call number",
            value: next.next_call_number,
        })?;
    }
    next.item = u32::try_from(script.calls.len().saturating_sub(1)).unwrap_or(u32::MAX);
    next.calls_for_item = 1;
    // The level holds a parallel run to the batch limit and the ids are numbered apart, so
    // the batch is always well formed; were it not, the run waits for a person.
    let batch = Batch::new(calls).map_err(|_| ModelError {
        counter: "calls in one turn",
        value: u32::try_from(script.calls.len()).unwrap_or(u32::MAX),
    })?;
    Ok((Decision::Calls(batch), next, false))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::run::Told;

    fn script() -> RunScript {
        RunScript {
            id: "r1".into(),
            tenant: default_tenant(),
            calls: vec![ScriptCall {
                tool: "issue_credit".into(),
                account: "acct_ada".into(),
                amount_cents: 2500,
                memo: "Refund order 1001".into(),
                owner: None,
                rewordings: vec!["Refund for order #1001".into()],
            }],
            parallel: false,
        }
    }

    fn call_of(decision: &Decision) -> &ToolCall {
        match decision {
            Decision::Call(call) => call,
            other => panic!("expected a call, not {other:?}"),
        }
    }

    #[test]
    fn replaying_from_the_same_checkpoint_makes_the_same_call_id() {
        let state = RunState::default();
        let (first, _, _) = decide(&script(), &ModelPolicy::default(), &state, Nudge::default()).unwrap();
        let (again, _, _) = decide(
            &script(),
            &ModelPolicy::default(),
            &state,
            Nudge {
                replays: 1,
                call_again: None,
            },
        )
        .unwrap();
        assert_eq!(first, again);
        assert_eq!(call_of(&first).id, "c1");
    }

    #[test]
    fn told_failed_the_model_calls_again_with_a_new_id_when_its_policy_says_so() {
        let policy = ModelPolicy {
            on_failed: OnFailed::CallAgain,
            reword_on_repeat: true,
            ..ModelPolicy::default()
        };
        let (decision, mut state, _) = decide(&script(), &policy, &RunState::default(), Nudge::default()).unwrap();
        let call = call_of(&decision).clone();
        state.tell(
            &call,
            Told::Failed {
                reason: "timeout".into(),
            },
        );
        let (again, _, _) = decide(&script(), &policy, &state, Nudge::default()).unwrap();
        let again = call_of(&again);
        assert_eq!(again.id, "c2");
        assert_eq!(CreditArguments::of_call(again).memo, "Refund for order #1001");
    }

    #[test]
    fn told_failed_a_giving_up_model_moves_on() {
        let (decision, mut state, _) = decide(
            &script(),
            &ModelPolicy::default(),
            &RunState::default(),
            Nudge::default(),
        )
        .unwrap();
        state.tell(
            call_of(&decision),
            Told::Failed {
                reason: "timeout".into(),
            },
        );
        let (next, _, _) = decide(&script(), &ModelPolicy::default(), &state, Nudge::default()).unwrap();
        assert_eq!(next, Decision::Done);
    }

    #[test]
    fn the_card_makes_a_model_that_gave_up_call_again_but_never_a_satisfied_one() {
        let card = Nudge {
            replays: 0,
            call_again: Some(false),
        };
        let (decision, mut state, _) = decide(
            &script(),
            &ModelPolicy::default(),
            &RunState::default(),
            Nudge::default(),
        )
        .unwrap();
        let first = call_of(&decision).clone();
        let mut satisfied = state.clone();
        state.tell(
            &first,
            Told::Failed {
                reason: "timeout".into(),
            },
        );
        let (again, _, used) = decide(&script(), &ModelPolicy::default(), &state, card).unwrap();
        assert!(used);
        assert_eq!(call_of(&again).id, "c2");
        assert_eq!(CreditArguments::of_call(call_of(&again)).memo, "Refund order 1001");
        satisfied.tell(&first, Told::Result { result: "ok".into() });
        let (done, _, used) = decide(&script(), &ModelPolicy::default(), &satisfied, card).unwrap();
        assert_eq!((done, used), (Decision::Done, false));
    }

    #[test]
    fn told_failed_a_model_that_fails_runs_gives_up_on_the_run_at_that_item() {
        let policy = ModelPolicy {
            on_failed: OnFailed::FailRun,
            ..ModelPolicy::default()
        };
        let (decision, mut state, _) = decide(&script(), &policy, &RunState::default(), Nudge::default()).unwrap();
        let call = call_of(&decision).clone();
        let mut succeeded = state.clone();
        state.tell(
            &call,
            Told::Failed {
                reason: "not attempted".into(),
            },
        );
        let (gave_up, after, _) = decide(&script(), &policy, &state, Nudge::default()).unwrap();
        assert!(
            matches!(&gave_up, Decision::FailRun { reason } if reason.contains("step 1")),
            "{gave_up:?}"
        );
        assert_eq!(after.item, 0, "the run fails at the item it was on");
        // The card still makes her call again, whatever her policy.
        let card = Nudge {
            replays: 0,
            call_again: Some(false),
        };
        let (again, _, used) = decide(&script(), &policy, &state, card).unwrap();
        assert!(used && matches!(again, Decision::Call(_)));
        // A call that took effect never fails the run.
        succeeded.tell(&call, Told::Result { result: "ok".into() });
        let (done, _, _) = decide(&script(), &policy, &succeeded, Nudge::default()).unwrap();
        assert_eq!(done, Decision::Done);
    }

    #[test]
    fn told_compensated_a_model_that_accepts_moves_on_and_one_that_does_not_calls_again() {
        let accepts = ModelPolicy {
            on_failed: OnFailed::CallAgain,
            on_compensated: OnCompensated::Accept,
            ..ModelPolicy::default()
        };
        let (decision, mut state, _) = decide(&script(), &accepts, &RunState::default(), Nudge::default()).unwrap();
        let call = call_of(&decision).clone();
        let mut failed = state.clone();
        state.tell(&call, Told::Compensated);
        let (next, _, _) = decide(&script(), &accepts, &state, Nudge::default()).unwrap();
        assert_eq!(next, Decision::Done, "an undo accepted is a decision: no second call");
        // Told failed, the same model still calls again: only the undo is accepted.
        failed.tell(
            &call,
            Told::Failed {
                reason: "timeout".into(),
            },
        );
        let (again, _, _) = decide(&script(), &accepts, &failed, Nudge::default()).unwrap();
        assert_eq!(call_of(&again).id, "c2");
        // By default "compensated" is heard as nothing done, and the call is made again.
        let as_failed = ModelPolicy {
            on_compensated: OnCompensated::AsFailed,
            ..accepts
        };
        let (again, _, _) = decide(&script(), &as_failed, &state, Nudge::default()).unwrap();
        assert_eq!(call_of(&again).id, "c2");
    }

    #[test]
    fn calls_per_item_are_limited() {
        let policy = ModelPolicy {
            on_failed: OnFailed::CallAgain,
            max_calls_per_item: 2,
            ..ModelPolicy::default()
        };
        let mut state = RunState::default();
        let mut calls = 0;
        loop {
            let (decision, next, _) = decide(&script(), &policy, &state, Nudge::default()).unwrap();
            state = next;
            match decision {
                Decision::Call(call) => {
                    calls += 1;
                    state.tell(&call, Told::Failed { reason: "no".into() });
                }
                Decision::Done => break,
                Decision::FailRun { reason } => panic!("a giving-up model does not fail runs: {reason}"),
                Decision::Calls(batch) => panic!("a run not parallel makes no batch: {batch:?}"),
            }
        }
        assert_eq!(calls, 2);
    }

    #[test]
    fn a_counter_at_its_limit_is_an_error_not_a_wrapped_call_id() {
        let state = RunState {
            next_call_number: u32::MAX,
            ..RunState::default()
        };
        let error = decide(&script(), &ModelPolicy::default(), &state, Nudge::default()).unwrap_err();
        assert_eq!(error.counter, "next tool call number");
        assert!(error.to_string().contains("4294967295"), "{error}");
    }
}
