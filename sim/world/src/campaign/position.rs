//! A level's place in the campaign as players see it and the presenter says it: `1.3`, the
//! chapter and the level's place among that chapter's levels in level-select order. Level
//! files keep their numbers (`21-reads-retried`: tapes, tests and docs name them), which jump
//! (chapter 1 is files 01, 02, 21, 20, 22); a player is shown this instead, in both editions.

use std::fmt;

use serde::Serialize;

use super::level_select_key;
use crate::level::Level;

/// Where a level sits in the campaign: chapter 1's third level is `1.3`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct Position {
    pub chapter: u32,
    /// 1 for the chapter's first level in level-select order.
    pub place: u32,
}

impl fmt::Display for Position {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(formatter, "{}.{}", self.chapter, self.place)
    }
}

/// `level`'s position among `levels` (the campaign's, in any order; `level` among them or
/// not): its chapter, and one more than the levels of that chapter that come before it in
/// level-select order. Regression levels are tests, not levels to play: never counted.
pub fn position<'a>(levels: impl IntoIterator<Item = &'a Level>, level: &Level) -> Position {
    let key = level_select_key(level);
    let before = levels
        .into_iter()
        .filter(|other| !other.regression && other.chapter == level.chapter && level_select_key(other) < key)
        .count();
    Position {
        chapter: level.chapter,
        place: u32::try_from(before).unwrap_or(u32::MAX - 1) + 1,
    }
}
