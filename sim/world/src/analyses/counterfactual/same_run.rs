//! This run made again: the same level, seed and moves, with some guards switched, each move
//! played where it met what it hit in this run and any key respelled for the other run.

use std::collections::BTreeMap;

use super::{Alternative, Answer, CounterfactualError, Flip, RunResult, anchor};
use crate::ledger::{ExecutionRecord, LedgerStore};
use crate::level::{Level, Play, TimedAction, WireRule};
use crate::runtime::guards::{Guard, Guards};
use crate::runtime::ids::{RunId, ToolName};
use crate::runtime::key::{IdempotencyKey, KeyScheme};
use crate::simulator::{Simulation, SimulationBuilder};

/// A call as the ledger knows it: enough to spell its key either way.
#[derive(Clone, Debug)]
pub(super) struct CallIdentity {
    run_id: RunId,
    tool_call_id: String,
    tool: ToolName,
    arguments: String,
}

pub(super) fn calls_by_key(records: &[ExecutionRecord]) -> BTreeMap<String, CallIdentity> {
    records
        .iter()
        .map(|record| {
            (
                record.key.to_string(),
                CallIdentity {
                    run_id: record.run_id.clone(),
                    tool_call_id: record.tool_call_id.clone(),
                    tool: record.tool.clone(),
                    arguments: record.arguments.clone(),
                },
            )
        })
        .collect()
}

/// Everything needed to make this run again.
pub(super) struct SameRun<'a> {
    pub(super) level: &'a Level,
    pub(super) seed: u64,
    pub(super) guards: Guards,
    pub(super) moves: &'a [TimedAction],
    pub(super) wire_rule: WireRule,
    pub(super) calls: BTreeMap<String, CallIdentity>,
    /// What each move hit in this run made again (filled by the first run): where the other
    /// runs play it.
    pub(super) anchors: Vec<anchor::Anchor>,
    /// The operators' decisions this run had refused (409s), made again.
    pub(super) refused_decisions: usize,
}

/// The operators' decisions the ledger refused (a compare-and-set lost), on the timeline.
fn refused_decisions(simulation: &Simulation) -> usize {
    simulation
        .timeline()
        .iter()
        .filter(|entry| matches!(entry.actor, crate::simulator::Actor::Operator(_)) && entry.text.starts_with("409"))
        .count()
}

impl SameRun<'_> {
    /// This run again with `flips` applied to its guards: it can say only if every move met
    /// what it hit in this run and played there, and the operators' decisions were refused as
    /// often as in this run.
    pub(super) fn run_with(&self, flips: &[Flip]) -> Result<Alternative, CounterfactualError> {
        let (mut alternative, _, refused) = self.simulate(flips)?;
        let mut reasons = Vec::new();
        if refused != self.refused_decisions {
            reasons.push("an operator's decision is refused in one run and not in the other".to_owned());
        }
        if !reasons.is_empty() && alternative.result().is_some() {
            alternative.answer = Answer::CannotSay { fizzled: reasons };
        }
        Ok(alternative)
    }

    /// Simulates this run with `flips`: what it came to, and how many operators' decisions were
    /// refused. With no flips, the moves are played at their phases and their anchors noted
    /// (also answered); with flips, each is played where it meets its anchor.
    pub(super) fn simulate(
        &self,
        flips: &[Flip],
    ) -> Result<(Alternative, Vec<anchor::Anchor>, usize), CounterfactualError> {
        let mut guards = self.guards;
        for flip in flips {
            guards.set(flip.guard, flip.on);
        }
        let moves: Vec<TimedAction> = self
            .moves
            .iter()
            .map(|action| TimedAction {
                at_phase: action.at_phase,
                play: self.with_keys_for(&action.play, guards),
                fizzles: false,
            })
            .collect();
        let named = guards_named(guards);
        let simulation_error = |source| CounterfactualError::Simulation {
            guards: named.clone(),
            source: Box::new(source),
        };
        let mut simulation = SimulationBuilder::new(self.level.clone(), self.seed)
            .guards(guards)
            .wire_rule(self.wire_rule)
            .ledger_store(LedgerStore::Memory)
            .build()
            .map_err(simulation_error)?;
        let (anchors, fizzled) = if flips.is_empty() {
            anchor::record(&mut simulation, &moves).map_err(simulation_error)?
        } else {
            let fizzled = anchor::follow(&mut simulation, &moves, &self.anchors).map_err(simulation_error)?;
            (self.anchors.clone(), fizzled)
        };
        let answer = if !fizzled.is_empty() || simulation.played().len() < moves.len() {
            Answer::CannotSay { fizzled }
        } else {
            let verdict = simulation.verdict().map_err(|source| CounterfactualError::Verdict {
                guards: named.clone(),
                source: Box::new(source),
            })?;
            Answer::Ran(RunResult::of(&verdict, simulation.phase()))
        };
        let refused = refused_decisions(&simulation);
        Ok((
            Alternative {
                flipped: flips.to_vec(),
                guards,
                // As played: at the phases where each met its anchor in that run.
                moves: simulation.played().to_vec(),
                answer,
            },
            anchors,
            refused,
        ))
    }

    /// A move with any key it names spelled as a run with `guards` spells it.
    fn with_keys_for(&self, play: &Play, guards: Guards) -> Play {
        let respell = |key: &str| -> String {
            let scheme = if guards.is_on(Guard::KeyPerCall) {
                KeyScheme::PerCall
            } else {
                KeyScheme::ArgumentsHash
            };
            self.calls
                .get(key)
                .and_then(|call| {
                    IdempotencyKey::make(scheme, &call.run_id, &call.tool_call_id, &call.tool, &call.arguments).ok()
                })
                .map_or_else(|| key.to_owned(), |key| key.to_string())
        };
        match play.key() {
            Some(key) => play.with_key(&respell(key)),
            None => play.clone(),
        }
    }
}

/// "guards off: [ledger, key_downstream]" for error messages.
fn guards_named(guards: Guards) -> String {
    let off: Vec<&str> = guards.off().iter().map(|guard| guard.name()).collect();
    format!("guards off: [{}]", off.join(", "))
}
