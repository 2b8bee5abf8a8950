//! A participant of the room: their name, their progress by level, and the level they have
//! open (rebuilt from its log when it is not in memory).

use std::collections::BTreeMap;

use super::error::WebError;
use super::game::{Conclusion, Game, Mode};
use super::game_log::GameLog;
use super::levels::Catalogue;
use twice_world::checker::Outcome;

/// A participant's best finish of a level: fewest cards, then fewest phases.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Win {
    pub cards: u32,
    pub phases: u32,
    pub outcome: Outcome,
}

impl Win {
    fn rank(&self) -> (u32, u32) {
        (self.cards, self.phases)
    }
}

/// What a participant did with one level (campaign plays only).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LevelProgress {
    pub finished: bool,
    pub best: Option<Win>,
    /// Plays judged (each time the level went quiet).
    pub plays: u32,
    pub last_outcome: Outcome,
    /// Tries that did not finish it: heists that failed, defences that fell (a play of a level
    /// that cannot be beaten, which holds as it should, is none).
    pub losses: u32,
}

/// A participant: their name, their progress by level id, and the level they have open.
#[derive(Debug)]
pub struct Participant {
    /// Their row in the room file.
    pub id: i64,
    pub name: String,
    /// What takes their name back on another browser; shown only on their own screen.
    pub claim_code: String,
    /// One entry per level id of the catalogue at most.
    pub progress: BTreeMap<String, LevelProgress>,
    /// The open level, rebuilt from [`Participant::log`] when first needed after a restart
    /// or a quiet spell.
    pub game: Option<Game>,
    /// The open level's requests, as the room file holds them.
    pub log: Option<GameLog>,
    /// The prediction waiting for the open level's run to end, the last score, the tally.
    pub prediction: super::prediction::PredictionState,
    /// When they joined or last finished a level for the first time (Unix ms): how long they
    /// have gone without progress, for the presenter. `None`: not known (a room kept before).
    pub progress_at_ms: Option<u64>,
}

/// What counting a finished play changed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Counted {
    pub progress: LevelProgress,
    /// The play is the level's best win so far: its tape is the one kept.
    pub new_best: bool,
    /// The play finished the level for the first time: progress.
    pub first_finish: bool,
}

impl Participant {
    pub fn is_finished(&self, level_id: &str) -> bool {
        self.progress.get(level_id).is_some_and(|progress| progress.finished)
    }

    /// Counts a play that ended; a sandbox play (chosen guards) counts for nothing.
    pub fn record(&mut self, level_id: &str, mode: Mode, conclusion: &Conclusion) -> Option<Counted> {
        if mode != Mode::Campaign {
            return None;
        }
        let entry = self.progress.entry(level_id.to_owned()).or_insert(LevelProgress {
            finished: false,
            best: None,
            plays: 0,
            last_outcome: conclusion.verdict.outcome,
            losses: 0,
        });
        entry.plays = entry.plays.saturating_add(1);
        entry.last_outcome = conclusion.verdict.outcome;
        if conclusion.debrief.standing == twice_world::debrief::Standing::HeistFailed {
            entry.losses = entry.losses.saturating_add(1);
        }
        let first_finish = conclusion.finished && !entry.finished;
        let mut new_best = false;
        if conclusion.finished {
            entry.finished = true;
            let win = Win {
                cards: conclusion.cards,
                phases: conclusion.phases,
                outcome: conclusion.verdict.outcome,
            };
            if entry.best.is_none_or(|best| win.rank() < best.rank()) {
                entry.best = Some(win);
                new_best = true;
            }
        }
        Some(Counted {
            progress: *entry,
            new_best,
            first_finish,
        })
    }

    /// The open level, rebuilt from its log if it is not in memory.
    pub fn game_mut(&mut self, catalogue: &Catalogue) -> Result<&mut Game, WebError> {
        if self.game.is_none() {
            let log = self.log.as_ref().ok_or_else(no_level_open)?;
            match log.replay(catalogue) {
                Ok(game) => self.game = Some(game),
                Err(error) => {
                    return Err(WebError::logged(
                        &format!(
                            "{}'s open level could not be rebuilt ({}): open it again",
                            self.name, log.stem
                        ),
                        error,
                    ));
                }
            }
        }
        self.game.as_mut().ok_or_else(no_level_open)
    }

    /// The open level's stem, whether or not it is in memory now.
    pub fn open_level(&self) -> Option<&str> {
        self.log.as_ref().map(|log| log.stem.as_str())
    }
}

pub fn no_level_open() -> WebError {
    WebError::not_found("no_level_open", "no level is open in this session: open one first")
}
