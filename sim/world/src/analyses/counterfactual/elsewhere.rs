//! The same run under a whole other set of guards: what another runtime, one that implements
//! those guards and no others, must do with the same level, seed and moves. The runtime
//! protocol asks it of every tape it plays against a runtime that brings its own (the runtime
//! says which guards it implements; the money the simulator gives for the tape's moves with
//! those guards is what that runtime must give).

use super::{Alternative, CounterfactualError, Flip, SameRun, anchor, calls_by_key};
use crate::runtime::guards::{Guard, Guards};
use crate::simulator::Simulation;

/// What [`SameRun`] needs of a finished run: its level as authored, seed, guards, moves and
/// the calls its ledgers hold (to spell a key in a move as the other run spells it).
pub(super) fn same_run<'a>(
    simulation: &'a Simulation,
    level: &'a crate::level::Level,
) -> Result<SameRun<'a>, CounterfactualError> {
    let ledger_error = |error| CounterfactualError::Ledger(Box::new(error));
    let mut records = simulation.ledger_records().map_err(ledger_error)?;
    if let Some(second) = simulation.second_node_ledger() {
        records.extend(second.all_records().map_err(ledger_error)?);
    }
    Ok(SameRun {
        level,
        seed: simulation.seed(),
        guards: simulation.guards(),
        moves: simulation.played(),
        wire_rule: simulation.wire_rule(),
        calls: calls_by_key(&records),
        anchors: Vec::<anchor::Anchor>::new(),
        refused_decisions: 0,
    })
}

/// The finished run `simulation` made again with `guards` (every guard as given, whatever the
/// run had): each move played where it meets what it hit in this run, keys spelled as that
/// run spells them. The answer cannot say when a move never meets its moment there.
pub fn under_guards(simulation: &Simulation, guards: Guards) -> Result<Alternative, CounterfactualError> {
    let level = simulation.authored_level();
    let mut same = same_run(simulation, &level)?;
    let (again, anchors, refused) = same.simulate(&[])?;
    let flips: Vec<Flip> = Guard::EVERY
        .into_iter()
        .filter(|guard| guards.is_on(*guard) != same.guards.is_on(*guard))
        .map(|guard| Flip {
            guard,
            on: guards.is_on(guard),
        })
        .collect();
    if flips.is_empty() && guards.naive_refusal() == same.guards.naive_refusal() {
        return Ok(again);
    }
    same.anchors = anchors;
    same.refused_decisions = refused;
    // A switch that is not a guard (which naive runtime records a refusal how) rides along.
    same.guards = same.guards.with_naive_refusal(guards.naive_refusal());
    let mut alternative = same.run_with(&flips)?;
    alternative.guards = alternative.guards.with_naive_refusal(guards.naive_refusal());
    debug_assert_eq!(
        alternative.guards, guards,
        "the other run has exactly the guards asked for"
    );
    Ok(alternative)
}
