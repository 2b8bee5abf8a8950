//! What a level declares about searches, held to what the searches find (`twice-sim check`):
//! a defender's `minimum` (which its `budget` must fit, checked at load) holds, and loses with
//! any one of its guards left out; a beatable level's `par` is not beaten by an explorer's find
//! with fewer cards (unless that find is another level's own move, which the campaign teaches
//! there instead).

use std::sync::atomic::AtomicBool;

use super::{DefendError, Search, check, heists};
use crate::campaign::{Campaign, WIN_TAPE_SUFFIX};
use crate::error::InputError;
use crate::explore::{Explorer, Found};
use crate::level::{CardKind, LoadedLevel, TimedAction};
use crate::runtime::guards::Guard;

/// Every problem with what `loaded` declares (its defender's minimum and budget, its par),
/// found by the defender's check and the explorer with `search`'s bounds. A search is bounded:
/// no problem found means none within `search.schedules` schedules per goal.
pub fn declared_problems(
    campaign: &Campaign,
    loaded: &LoadedLevel,
    search: Search,
    cancel: &AtomicBool,
) -> Result<Vec<InputError>, DefendError> {
    let mut problems = Vec::new();
    if let Some(defender) = &loaded.level.defender {
        let at = |field: &str, message: String| InputError::at(&loaded.path, &loaded.text, field, 0, message);
        let minimum = &defender.minimum;
        // A minimum over the budget is refused when the level loads; here the minimum is held
        // to the search: it holds, so a defence within the budget exists.
        let known = heists(campaign, &loaded.level);
        let report = check(loaded, &known, minimum, search, cancel)?;
        if !report.stops_every_heist() {
            let through = report.counter_example.map_or_else(
                || "a heist gets through".to_owned(),
                |counter| format!("{} gets through ({})", counter.source_words(), counter.outcome),
            );
            problems.push(at(
                "minimum:",
                format!("the minimum [{}] does not hold: {through}", names(minimum)),
            ));
        } else {
            for left_out in minimum {
                let fewer: Vec<Guard> = minimum.iter().copied().filter(|guard| guard != left_out).collect();
                let smaller = check(loaded, &known, &fewer, search, cancel)?;
                if smaller.stops_every_heist() {
                    problems.push(at(
                        "minimum:",
                        format!(
                            "the minimum [{}] is not the smallest: without {} it holds too",
                            names(minimum),
                            left_out.name()
                        ),
                    ));
                    break;
                }
            }
        }
    }
    if let Some(par) = loaded.level.par.filter(|_| !loaded.level.unbeatable) {
        let outcome = Explorer::new(loaded.level.clone(), loaded.level.guards, search.seed)
            .schedules(search.schedules)
            .jobs(search.jobs)
            .run(&|_| {}, cancel)
            .map_err(|error| DefendError::Explore(Box::new(error)))?;
        if let Some(found) = outcome.found
            && (found.actions.len() as u32) < par.cards
            && !is_another_levels_move(campaign, &loaded.level.id, &found.actions)
        {
            problems.push(InputError::at(
                &loaded.path,
                &loaded.text,
                "par:",
                0,
                par_beaten(par.cards, &found),
            ));
        }
    }
    Ok(problems)
}

/// The kinds of card a move plays, sorted: what "the same move" means across levels.
fn move_of(actions: &[TimedAction]) -> Vec<CardKind> {
    let mut cards: Vec<CardKind> = actions.iter().map(|action| action.play.card()).collect();
    cards.sort();
    cards
}

/// Whether `actions` play the cards of another level's win tape: a win below par by another
/// level's lesson does not make par wrong (the par is the best win on this level's own path).
fn is_another_levels_move(campaign: &Campaign, id: &str, actions: &[TimedAction]) -> bool {
    let played = move_of(actions);
    campaign.tapes.iter().any(|tape| {
        tape.level.level.id != id
            && tape.tape.guards.is_none()
            && tape
                .path
                .file_name()
                .is_some_and(|name| name.to_string_lossy().ends_with(WIN_TAPE_SUFFIX))
            && move_of(&tape.tape.actions) == played
    })
}

fn par_beaten(par_cards: u32, found: &Found) -> String {
    let cards: Vec<&str> = found.actions.iter().map(|action| action.play.card().name()).collect();
    format!(
        "par says {} cards, and the explorer wins with {} ({}; its schedule {}, `twice-sim explore` writes it as a \
         tape): par must be the best win",
        par_cards,
        found.actions.len(),
        cards.join(", "),
        found.schedule_index
    )
}

fn names(guards: &[Guard]) -> String {
    guards.iter().map(|guard| guard.name()).collect::<Vec<_>>().join(", ")
}
