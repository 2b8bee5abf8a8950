//! Par that rewards the lesson: a level's par is reached on the path its hints teach.

use std::path::Path;

use crate::error::InputError;
use crate::level::{LoadedLevel, LoadedTape};

/// The suffix of the tape that plays a level's own heist, the path its hints teach.
pub const WIN_TAPE_SUFFIX: &str = ".win.tape.ron";

/// A level's par must be reachable on its own path: its win tape (the heist its hints teach,
/// played with the level's guards) plays exactly the par's cards. A par of fewer cards is
/// reached only by some other move — another level's lesson (resolving a call still in
/// flight, say, in a level about settling a lost answer) — and would score the hinted path
/// below the best stars.
pub fn check_win_tape_par(loaded: &LoadedTape) -> Result<(), InputError> {
    let is_win_tape = loaded
        .path
        .file_name()
        .is_some_and(|name| name.to_string_lossy().ends_with(WIN_TAPE_SUFFIX));
    let Some(par) = loaded.level.level.par else {
        return Ok(());
    };
    let cards = loaded.tape.actions.len();
    if !is_win_tape || loaded.tape.guards.is_some() || cards == par.cards as usize {
        return Ok(());
    }
    let played: Vec<&str> = loaded
        .tape
        .actions
        .iter()
        .map(|action| action.play.card().name())
        .collect();
    Err(InputError::at(
        &loaded.path,
        &loaded.text,
        "actions",
        0,
        format!(
            "this win tape plays {} ({}) but level `{}`'s par says {}: a par the level's own \
             path cannot reach is reached only by another move (another level's lesson); \
             set par to this tape's cards and phases",
            crate::text::counted(cards as u64, "card", "cards"),
            played.join(", "),
            loaded.level.level.id,
            par.cards
        ),
    ))
}

/// A beatable level that ships tapes ships its win tape among them (`<level>.win.tape.ron`,
/// played with the level's guards): without it nothing shows that par is reached on the
/// level's own path, and a par reached only by another level's move would pass unseen.
pub fn check_win_tapes_shipped(levels: &[LoadedLevel], tapes: &[LoadedTape]) -> Vec<InputError> {
    let same_file = |one: &Path, other: &Path| match (one.canonicalize(), other.canonicalize()) {
        (Ok(one), Ok(other)) => one == other,
        _ => one == other,
    };
    let is_win_tape = |tape: &LoadedTape| {
        tape.tape.guards.is_none()
            && tape
                .path
                .file_name()
                .is_some_and(|name| name.to_string_lossy().ends_with(WIN_TAPE_SUFFIX))
    };
    let mut problems = Vec::new();
    for level in levels
        .iter()
        .filter(|loaded| loaded.level.par.is_some() && !loaded.level.regression)
    {
        let own: Vec<&LoadedTape> = tapes
            .iter()
            .filter(|tape| same_file(&tape.level.path, &level.path))
            .collect();
        if !own.is_empty() && !own.iter().any(|tape| is_win_tape(tape)) {
            problems.push(InputError::at(
                &level.path,
                &level.text,
                "par",
                0,
                format!(
                    "level `{}` ships {} but no win tape ({WIN_TAPE_SUFFIX} with the level's own guards): \
                     its par must be reached on its own path, and only a win tape shows that",
                    level.level.id,
                    crate::text::counted(own.len() as u64, "tape", "tapes")
                ),
            ));
        }
    }
    problems
}
