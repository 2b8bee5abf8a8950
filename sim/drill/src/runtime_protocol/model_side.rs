//! Twice plays the model: each `model` request is answered from the level's script and model
//! policy, exactly as the simulator's model answers its workers, with the run's state read from
//! the transcript the runtime sends (what the model was told about each call, as the runtime
//! keeps it in its checkpoint). A recovered run that lost what it was told therefore hears the
//! same call again, under the same id — the replay the ledger exists to catch.

use std::collections::BTreeMap;

use super::messages::{CallGiven, Decision, ToldEntry};
use twice_world::checker::{RunNodes, node_of};
use twice_world::level::Level;
use twice_world::model::{self, Nudge};
use twice_world::runtime::run::{Decision as ModelDecision, RunState, ToolCall};

/// The model's memory of what it asked for, across every process of a tape.
#[derive(Debug)]
pub struct ModelSide {
    level: Level,
    nodes: RunNodes,
    /// (run, call id) → the call the model made under that id (the last one, if asked again).
    issued: BTreeMap<(String, String), ToolCall>,
    /// (run, the id the next call would take) → how often the model was asked for it.
    asks: BTreeMap<(String, String), u32>,
    /// Run → the script item (step) its last decision was about.
    last_item: BTreeMap<String, u32>,
}

/// Why a `model` request cannot be answered: the transcript names a call the model never made.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("its transcript tells the model about `{call}`, a call the model never made on {run}")]
pub struct UnknownCall {
    pub run: String,
    pub call: String,
}

impl ModelSide {
    pub fn new(level: Level, nodes: RunNodes) -> ModelSide {
        ModelSide {
            level,
            nodes,
            issued: BTreeMap::new(),
            asks: BTreeMap::new(),
            last_item: BTreeMap::new(),
        }
    }

    /// The runs a workflow started again, and the level's run (its node) each carries out.
    pub fn set_nodes(&mut self, nodes: RunNodes) {
        self.nodes = nodes;
    }

    /// The level's run (workflow node) that `run` carries out.
    pub fn node_of<'b>(&'b self, run: &'b str) -> &'b str {
        node_of(&self.nodes, run)
    }

    /// The run's state as the model knows it from `transcript`.
    fn state_of(&self, run: &str, transcript: &[ToldEntry]) -> Result<RunState, UnknownCall> {
        let mut state = RunState::default();
        for entry in transcript {
            let call = self
                .issued
                .get(&(run.to_owned(), entry.call.clone()))
                .ok_or_else(|| UnknownCall {
                    run: run.to_owned(),
                    call: entry.call.clone(),
                })?;
            if call.item == state.item && state.calls_for_item > 0 {
                state.calls_for_item = state.calls_for_item.saturating_add(1);
            } else {
                state.item = call.item;
                state.calls_for_item = 1;
            }
            let number = call
                .id
                .strip_prefix('c')
                .and_then(|digits| digits.parse::<u32>().ok())
                .unwrap_or(0);
            state.next_call_number = state.next_call_number.max(number.saturating_add(1));
            state.tell(call, entry.told());
        }
        Ok(state)
    }

    /// The model's decision for `run` told `transcript`, with a "call again" card armed
    /// (`Some(reword)`) or not. Returns the decision and whether the card was used.
    pub fn decide(
        &mut self,
        run: &str,
        transcript: &[ToldEntry],
        call_again: Option<bool>,
    ) -> Result<(Decision, Option<ToolCall>, bool), UnknownCall> {
        let state = self.state_of(run, transcript)?;
        let node = node_of(&self.nodes, run).to_owned();
        let Some(script) = self.level.runs.iter().find(|script| script.id == node.as_str()) else {
            return Ok((
                Decision::FailRun {
                    reason: format!("the level has no run {node}"),
                },
                None,
                false,
            ));
        };
        let ask = (run.to_owned(), format!("c{}", state.next_call_number));
        let nudge = Nudge {
            replays: self.asks.get(&ask).copied().unwrap_or(0),
            call_again,
        };
        let decided = match model::decide(script, &self.level.model, &state, nudge) {
            Ok((decision, after, used)) => {
                self.last_item.insert(run.to_owned(), after.item);
                (decision, used)
            }
            Err(error) => {
                return Ok((
                    Decision::FailRun {
                        reason: error.to_string(),
                    },
                    None,
                    false,
                ));
            }
        };
        Ok(match decided {
            (ModelDecision::Call(call), used) => {
                *self.asks.entry(ask).or_default() += 1;
                self.issued.insert((run.to_owned(), call.id.clone()), call.clone());
                (
                    Decision::Call {
                        call: CallGiven::of(run, &call),
                    },
                    Some(call),
                    used,
                )
            }
            (ModelDecision::Done, used) => (Decision::Done, None, used),
            (ModelDecision::FailRun { reason }, used) => (Decision::FailRun { reason }, None, used),
            // A parallel run is not expressible (`expressible::Reason::ParallelCalls`): protocol
            // 1's decision carries one call, so a batch is refused as a failed run, never cut.
            (ModelDecision::Calls(_), used) => (
                Decision::FailRun {
                    reason: "the level's run makes several calls in one turn, which protocol 1 cannot carry".into(),
                },
                None,
                used,
            ),
        })
    }

    /// The script item (step) `run`'s last decision was about: where a run that failed stopped.
    pub fn last_item(&self, run: &str) -> u32 {
        self.last_item.get(run).copied().unwrap_or(0)
    }

    /// The item (script step) of a call the model made on `run`.
    pub fn item_of(&self, run: &str, call: &str) -> Option<u32> {
        self.issued
            .get(&(run.to_owned(), call.to_owned()))
            .map(|call| call.item)
    }
}
