//! Whether a level's goal can be reached at all: the check that rules a goal out only when
//! nothing could disturb Penny, and says why in terms computed from the level.

use std::collections::BTreeMap;

use crate::checker::Outcome;
use crate::level::{CardKind, Level};
use crate::runtime::guards::Guard;

/// Cards that can make one intended credit land twice (each card says why it can or cannot,
/// [`crate::cards::Card::CAN_PAY_TWICE`]).
pub fn can_pay_twice(card: CardKind) -> bool {
    card.can_pay_twice()
}

/// Why the level's goal can never be reached, or `None` if something in it could reach it.
///
/// The heuristic only rules a goal out when nothing could disturb Penny at all: every
/// credit is then sent once and answered in time, so it lands exactly once — unless keys
/// hashed from arguments merge two identical credits. It never rules out `paid_once`.
pub fn unreachable_goal(level: &Level) -> Option<String> {
    // Each credit with where it sits: its run and its place in the run's script (from 1).
    let credits: Vec<_> = level
        .credit_calls()
        .map(|(run, index, call)| (run.id.as_str(), index + 1, call))
        .collect();
    if level.goal.is_once() {
        return None;
    }
    let money_goal = matches!(level.goal, Outcome::PaidTwice | Outcome::NotPaidButOwed);
    if money_goal && credits.is_empty() {
        return Some("no run issues a credit, and the goal is about money".into());
    }
    if let Some(problem) = super::reachable::effect_goal_problem(level) {
        return Some(problem);
    }
    let world = &level.world;
    let worst_round_trip_ms = 2 * (u64::from(world.latency_ms) + u64::from(world.jitter_ms));
    if worst_round_trip_ms >= u64::from(world.timeout_ms) {
        // An answer can miss its timeout with no card played: anything may follow.
        return None;
    }
    let hand: Vec<CardKind> = level.cards.iter().map(|allowance| allowance.card).collect();
    match level.goal {
        Outcome::PaidOnce | Outcome::DoneOnce => None,
        Outcome::PaidTwice | Outcome::EmailedTwice | Outcome::ChangeUndone | Outcome::ActedAgain => {
            if hand.iter().any(|card| can_pay_twice(*card)) {
                return None;
            }
            Some(format!(
                "no card in hand ({}) can leave a sent request unanswered, replay a call, start a second worker, \
                 make the model call again or let an operator settle a call, and every answer arrives within the \
                 {} ms timeout",
                hand_names(&hand),
                world.timeout_ms
            ))
        }
        Outcome::NotPaidButOwed | Outcome::NotDone | Outcome::UnknownFlagged => {
            if !hand.is_empty() {
                return None;
            }
            let identical = identical_credits(&credits);
            let hashed = !level.guards.is_on(Guard::KeyPerCall);
            if level.goal == Outcome::NotPaidButOwed && hashed && identical.is_some() {
                return None;
            }
            // What is said of identical credits is computed from the level: there are none, or
            // there are and keys made per call keep them apart.
            let merging = match (level.goal, identical) {
                (Outcome::NotPaidButOwed, None) => {
                    ", and no two credits are identical calls a hashed key could merge".to_owned()
                }
                (Outcome::NotPaidButOwed, Some((first, second))) => format!(
                    ", and though {first} and {second} are identical credits, keys are made per call (key_per_call is on), \
                     so no hashed key merges them"
                ),
                _ => String::new(),
            };
            Some(format!(
                "the level gives no cards, every answer arrives within the {} ms timeout{merging}",
                world.timeout_ms,
            ))
        }
    }
}

/// The first two credits that are the same call (tool, account, amount, memo), named as
/// "run r1's call 2", if any two are.
fn identical_credits(credits: &[(&str, usize, &crate::model::ScriptCall)]) -> Option<(String, String)> {
    let mut seen = BTreeMap::new();
    for (run, place, call) in credits {
        let same_call = (&call.tool, &call.account, call.amount_cents, &call.memo);
        if let Some((first_run, first_place)) = seen.insert(same_call, (run, *place)) {
            return Some((
                format!("run {first_run}'s call {first_place}"),
                format!("run {run}'s call {place}"),
            ));
        }
    }
    None
}

fn hand_names(hand: &[CardKind]) -> String {
    if hand.is_empty() {
        "no cards".into()
    } else {
        hand.iter().map(|card| card.name()).collect::<Vec<_>>().join(", ")
    }
}
