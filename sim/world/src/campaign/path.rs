//! The campaign as a path a newcomer walks: the first hour's pacing, what a level may say
//! about its own defence, and which tapes a player may open.
//!
//! The first hour (chapters 1 to [`FIRST_HOUR_CHAPTERS`]) is where a newcomer decides whether
//! the game is worth another hour. Played in order, each level asks for something new: no
//! two defend-only levels in a row, and no level won by the same move as the level won before
//! it ([`first_hour_repeats`]). An unbeatable level is finished by a defence, so nothing the
//! player reads before defending — the debrief, the lesson's story, the hints — may name the
//! guards to switch on ([`defence_handed_over`]). And a level's solution tapes open only once
//! the level is won, or in the sandbox ([`tape_opens`]): the replay viewer is one click from
//! the title.

use std::path::{Path, PathBuf};

use crate::error::InputError;
use crate::level::{CardKind, Level, LoadedTape};
use crate::runtime::guards::Guard;

/// The chapters of the first hour.
pub const FIRST_HOUR_CHAPTERS: u32 = 3;

/// The cards a move plays, by kind, in order of kind: what "the same move" means across levels.
pub fn move_of(tape: &LoadedTape) -> Vec<CardKind> {
    let mut cards: Vec<CardKind> = tape.tape.actions.iter().map(|action| action.play.card()).collect();
    cards.sort();
    cards
}

/// Whether this tape is a level's own win: its `.win.tape.ron`, played with the level's guards.
pub fn is_own_win(tape: &LoadedTape) -> bool {
    tape.tape.guards.is_none()
        && tape
            .path
            .file_name()
            .is_some_and(|name| name.to_string_lossy().ends_with(super::WIN_TAPE_SUFFIX))
}

/// Where the first hour's pacing breaks, in play order (`levels` in level-select order): two
/// defend-only levels in a row, or a beatable level won by the same cards as the beatable level
/// before it (defend-only levels between them notwithstanding). The first level after the first
/// hour is held to the second rule too: the path does not end on a repeat. Each problem names
/// both levels.
pub fn first_hour_repeats(levels: &[&Level], tapes: &[LoadedTape]) -> Vec<String> {
    let mut problems = Vec::new();
    let in_first_hour: Vec<&Level> = levels
        .iter()
        .copied()
        .filter(|level| level.chapter <= FIRST_HOUR_CHAPTERS)
        .collect();
    for pair in in_first_hour.windows(2) {
        if pair[0].unbeatable && pair[1].unbeatable {
            problems.push(format!(
                "`{}` and `{}` are defend-only levels one after the other in the first hour: put a level to win between them",
                pair[0].id, pair[1].id
            ));
        }
    }
    let first_after = levels.iter().copied().find(|level| level.chapter > FIRST_HOUR_CHAPTERS);
    let mut previous: Option<(&Level, Vec<CardKind>)> = None;
    for level in in_first_hour.into_iter().chain(first_after) {
        if level.unbeatable {
            continue;
        }
        let Some(win) = tapes
            .iter()
            .find(|tape| tape.level.level.id == level.id && is_own_win(tape))
        else {
            problems.push(format!("`{}` ships no win tape to tell its move by", level.id));
            continue;
        };
        let cards = move_of(win);
        if let Some((before, before_cards)) = &previous
            && *before_cards == cards
        {
            let names: Vec<&str> = cards.iter().map(|card| card.name()).collect();
            problems.push(format!(
                "`{}` is won by the same move as `{}` just before it ({}): give it a new move",
                level.id,
                before.id,
                names.join(" + ")
            ));
        }
        previous = Some((level, cards));
    }
    problems
}

/// Words that name `guard` in a sentence a player reads: its words in full and the shortest
/// name players use for it, from its place in the guards' registry.
fn mentions(guard: Guard) -> &'static [&'static str] {
    crate::guards::spec(guard).mentions
}

/// The field and sentence where a defended level hands over its defence before the player
/// defends: a sentence of its debrief, its lesson's story or its hints that speaks of
/// defending and names a guard ("Defending, the write retry rule alone holds."). A sentence
/// about defending that names no guard ("your defence finishes the level") is an instruction,
/// not the answer.
pub fn defence_handed_over(level: &Level) -> Option<(&'static str, String)> {
    level.defender.as_ref()?;
    let mut texts = vec![
        ("debrief", level.debrief.as_str()),
        ("text", level.lesson.text.as_str()),
        ("nudge", level.hints.nudge.as_str()),
        ("idea", level.hints.idea.as_str()),
    ];
    if let Some(the_move) = &level.hints.the_move {
        texts.push(("move", the_move.as_str()));
    }
    for (field, text) in texts {
        for sentence in text.split_inclusive(['.', '!', '?']) {
            let lower = sentence.to_lowercase();
            if !lower.contains("defend") && !lower.contains("defence") {
                continue;
            }
            let names_a_guard = Guard::ALL
                .into_iter()
                .any(|guard| lower.contains(guard.name()) || mentions(guard).iter().any(|words| lower.contains(words)));
            if names_a_guard {
                return Some((field, sentence.trim().to_owned()));
            }
        }
    }
    None
}

/// Whether a tape may be opened: always in the sandbox (`sandbox`: every level open, as with
/// `--unlock-all`), a tape of no campaign level (`level_id` `None`: a player's own file) always,
/// and a tape of a campaign level only once that level is won (`finished`), so the replay
/// viewer does not hand over a level's solution before the player has found it.
pub fn tape_opens(level_id: Option<&str>, finished: impl Fn(&str) -> bool, sandbox: bool) -> bool {
    sandbox || level_id.is_none_or(finished)
}

/// Why a tape does not open yet, in the player's words.
pub fn tape_locked_words(level: &Level) -> String {
    format!(
        "opens once you have won \"{}\": a level's tapes show its solution",
        level.title
    )
}

/// The level file a tape names, beside the tape (read from the tape alone: the level is not
/// loaded). A campaign screen matches it against its levels to lock the tape.
pub fn tape_level_file(tape: &Path) -> Result<PathBuf, InputError> {
    let text = std::fs::read_to_string(tape)
        .map_err(|error| InputError::new(tape, None, format!("cannot read the tape: {error}")))?;
    let parsed = crate::level::parse_tape(tape, &text)?;
    Ok(tape.parent().unwrap_or(Path::new(".")).join(parsed.level))
}
