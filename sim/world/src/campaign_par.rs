//! Par that rewards the lesson: a level's par is reached on the path its hints teach.

use crate::error::InputError;
use crate::level::LoadedTape;

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
            "this win tape plays {cards} card(s) ({}) but level `{}`'s par says {}: a par the level's own \
             path cannot reach is reached only by another move (another level's lesson); \
             set par to this tape's cards and phases",
            played.join(", "),
            loaded.level.level.id,
            par.cards
        ),
    ))
}
