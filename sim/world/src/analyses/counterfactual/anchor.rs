//! Moves anchored to what they hit, not to the phase number they were played at.
//!
//! Switching a guard changes how many phases a run takes to get anywhere: with the ledger off
//! there is no reservation to write, so the worker reaches "save checkpoint" phases earlier. A
//! move replayed at its phase number then meets another moment — a crash aimed at "save
//! checkpoint" finds the worker elsewhere and fizzles — and that other run cannot say what the
//! guard did. So each move is anchored to its target as this run saw it when the move was
//! played: the messages on the wire under its key (a wire card), the worker and the phase it
//! was about to run (a crash), every worker's place (a move that acts on whatever the moment
//! is), or, for a move that names nothing the run shows (a declaration), the phase number
//! itself. The other run plays the move when it meets that target for the same n-th time
//! (counted from the previous move, as in this run); a target it never meets is a move that
//! fizzles, and that run still cannot say.

use crate::cards::{Aim, Play, WireRule};
use crate::level::TimedAction;
use crate::simulator::{Direction, Phase, SimError, Simulation};

/// What a move hits, as the run shows it just before the move.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Target {
    /// The messages on the wire a wire card's key names: (worker, run, attempt) of each.
    Wire(Vec<(u32, String, u32)>),
    /// The worker a crash names: its run, whether it lives, the phase it is about to run and
    /// the script item it is on (`None`: no such worker).
    Worker(Option<(String, bool, Phase, Option<u32>)>),
    /// Every worker's place: a move that acts on whatever the moment is.
    Moment(super::Moment),
    /// Nothing the run shows: the phase number.
    Phase(u32),
}

/// Where a move is played: at the `nth` look (from 1), counted from the previous move, at
/// which the run shows `target`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Anchor {
    pub target: Target,
    pub nth: u32,
}

/// What `play` would hit in `simulation` now.
pub(super) fn target_of(simulation: &Simulation, play: &Play) -> Target {
    let wire = |direction: Direction, key: &str, for_slowing: bool| {
        Target::Wire(
            simulation
                .messages()
                .filter(|message| message.direction == direction && message.key == key)
                .filter(|message| !(message.lost || (for_slowing && message.slowed)))
                .map(|message| (message.worker, message.run.clone(), message.attempt))
                .collect(),
        )
    };
    // Version 1 tapes arm a wire card for the next message: it hits nothing on the wire now.
    let on_the_wire = simulation.wire_rule() == WireRule::OnTheWireNow;
    match play.aim() {
        Aim::Message {
            direction,
            key: Some(key),
            unslowed,
        } if on_the_wire => wire(direction, key, unslowed),
        Aim::Worker {
            number: Some(number),
            in_phase: Some(_),
        } => Target::Worker(
            simulation
                .workers()
                .into_iter()
                .find(|worker| worker.number == number)
                .map(|worker| {
                    (
                        worker.run.into_string(),
                        worker.alive,
                        worker.phase,
                        worker.call.map(|call| call.item),
                    )
                }),
        ),
        _ if play.aims_at_the_moment() => Target::Moment(super::moment_of(simulation)),
        _ => Target::Phase(simulation.phase()),
    }
}

/// Steps until `done` says so (looked at before each phase); false when the level went quiet
/// first.
fn step_until(simulation: &mut Simulation, mut done: impl FnMut(&Simulation) -> bool) -> Result<bool, SimError> {
    loop {
        if done(simulation) {
            return Ok(true);
        }
        if !simulation.step()? {
            return Ok(false);
        }
    }
}

/// Plays this run's `moves` at their phases, noting each one's anchor; answers the anchors and
/// what the timeline said of any move that did not play.
pub(super) fn record(
    simulation: &mut Simulation,
    moves: &[TimedAction],
) -> Result<(Vec<Anchor>, Vec<String>), SimError> {
    let mut anchors = Vec::with_capacity(moves.len());
    let mut fizzled = Vec::new();
    for action in moves {
        let mut seen = Vec::new();
        let reached = step_until(simulation, |simulation| {
            seen.push(target_of(simulation, &action.play));
            simulation.phase() >= action.at_phase
        })?;
        if !reached {
            // Quiet before its phase: a tape's move is played then (time jumps to it).
            seen.push(target_of(simulation, &action.play));
        }
        let target = seen.last().cloned().expect("the run was looked at");
        let nth = u32::try_from(seen.iter().filter(|looked| **looked == target).count()).unwrap_or(u32::MAX);
        anchors.push(Anchor { target, nth });
        if let Err(error) = simulation.play(action.play.clone()) {
            fizzled.push(format!("{}: {error}", action.play.title()));
        }
    }
    simulation.run()?;
    Ok((anchors, fizzled))
}

/// Plays `moves` in another run, each when that run meets its anchor; answers what kept a move
/// from playing (nothing when every move played). Stops at the first move that cannot: the
/// ones after it would not be the same moves.
pub(super) fn follow(
    simulation: &mut Simulation,
    moves: &[TimedAction],
    anchors: &[Anchor],
) -> Result<Vec<String>, SimError> {
    assert_eq!(moves.len(), anchors.len(), "one anchor per move");
    for (action, anchor) in moves.iter().zip(anchors) {
        let mut count = 0;
        let mut meets = |simulation: &Simulation| {
            if target_of(simulation, &action.play) == anchor.target {
                count += 1;
            }
            count == anchor.nth
        };
        let met = step_until(simulation, &mut meets)? || meets(simulation);
        if !met {
            simulation.run()?;
            return Ok(vec![format!(
                "{} (phase {} in this run) never meets what it hit in this run: {}",
                action.play.card().title(),
                action.at_phase,
                describe(&anchor.target)
            )]);
        }
        if let Err(error) = simulation.play(action.play.clone()) {
            simulation.run()?;
            return Ok(vec![format!("{}: {error}", action.play.title())]);
        }
    }
    simulation.run()?;
    Ok(Vec::new())
}

fn describe(target: &Target) -> String {
    match target {
        Target::Wire(messages) => format!(
            "{} on the wire under its key",
            crate::text::counted(messages.len() as u64, "message", "messages")
        ),
        Target::Worker(Some((run, _, phase, _))) => format!("its worker on {run} about to {phase}"),
        Target::Worker(None) => "its worker".into(),
        Target::Moment(_) => "the workers where they were".into(),
        Target::Phase(phase) => format!("phase {phase}"),
    }
}

#[cfg(test)]
mod tests {
    use super::{Target, describe};

    #[test]
    fn the_messages_a_wire_card_hit_are_counted_in_words() {
        let message = |worker| (worker, "r1".to_owned(), 1);
        assert_eq!(
            describe(&Target::Wire(vec![message(1)])),
            "1 message on the wire under its key"
        );
        assert_eq!(
            describe(&Target::Wire(vec![message(1), message(2)])),
            "2 messages on the wire under its key"
        );
    }
}
