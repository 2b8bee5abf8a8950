//! What happened to the session, as messages. The session never names a screen: it says what
//! it did (a level opened, the debrief was asked for, the level closed), and whoever answers
//! it decides what that means for them — the screens move on it (they own their
//! transitions, as bevy_new_2d's do), the guide follows it.

use bevy::prelude::*;

use super::Mode;

/// Where the player goes when a level closes: back where it was opened from, or on to the
/// campaign's ending once its last level is done.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Leaving {
    /// Back where the level came from: the level select, the sandbox or the tapes.
    Back,
    /// The campaign is done: on to what the player learned.
    ToTheEnding,
}

/// Something the session did that others answer.
#[derive(Message, Clone, Copy, Debug, PartialEq, Eq)]
pub enum SessionNews {
    /// A level or a tape is open (the session exists from the next frame).
    Opened,
    /// The level is concluded and the player asked for its debrief.
    DebriefAsked,
    /// The player went back from the debrief to the run.
    Resumed,
    /// The level was closed (its session dropped), opened in `mode`, the player `leaving`.
    Closed { mode: Mode, leaving: Leaving },
    /// The level was closed for the next level's briefing (the debrief's Next).
    ClosedForTheNextBriefing,
}
