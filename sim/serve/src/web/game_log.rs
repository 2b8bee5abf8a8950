//! What a participant did to their open level, kept so the room file can rebuild it exactly.
//!
//! A simulation is deterministic: the level, the seed, the guards and the requests made on
//! it in order give the same state every time. So the room file keeps that, not the
//! simulation: each acknowledged request appends one [`GameOp`], and a restarted server
//! replays the log through the same [`Game`] methods the requests called. Replaying the
//! requests (not only the moves) keeps even the timeline's "quiet" lines where they were.
//!
//! A rewind or a restart throws the requests before it away: the level after a rewind
//! depends only on the moves played before that phase, so the log restarts from those moves
//! ([`GameLog::base`]) and the rewind. The log is bounded: a request that changed nothing
//! is not kept, every kept request moves the level on by at least a phase or plays a card,
//! and a level runs at most [`super::LEVEL_PHASES_MAX`] phases.

use serde::{Deserialize, Serialize};
use twice_world::level::{Play, TimedAction};
use twice_world::runtime::guards::Guards;

use super::game::{Conclusion, Game, GameError, STEPS_PER_REQUEST_MAX};
use super::levels::Catalogue;

/// The most requests a log keeps: a level's phase limit, its hand and some slack. A log
/// that would grow past it answers an error rather than grow without bound.
pub const GAME_OPS_MAX: usize = 2 * super::LEVEL_PHASES_MAX as usize;

/// One acknowledged request on the open level.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum GameOp {
    Step {
        phases: u32,
    },
    Run,
    Play {
        play: Play,
    },
    /// A crash aimed at a line of the code (not a move until the worker gets there, but the
    /// steps after it play it, so a rebuilt level must aim it too).
    Aim {
        worker: u32,
        line: usize,
    },
}

/// A participant's open level: how it was opened and every request since.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GameLog {
    /// The level's file stem (`01-naive-retry`): found again in the catalogue by name.
    pub stem: String,
    pub seed: u64,
    /// Chosen guards (a sandbox); `None`: the level's own (the campaign).
    pub guards: Option<Guards>,
    /// After a rewind: the moves played before it (replayed as the requests that played
    /// them), then the rewind to this phase.
    pub base: Option<Rewound>,
    pub ops: Vec<GameOp>,
}

/// The state a rewind left: the moves before `phase`, re-simulated to `phase`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Rewound {
    pub moves: Vec<TimedAction>,
    pub phase: u32,
}

/// Why a log could not be replayed.
#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    #[error("level `{0}` is not in this room's levels any more")]
    NoSuchLevel(String),
    #[error("the move at phase {at_phase} could not be reached (the level stopped at phase {stopped})")]
    Unreachable { at_phase: u32, stopped: u32 },
    #[error(transparent)]
    Game(#[from] GameError),
}

impl GameLog {
    pub fn new(stem: &str, seed: u64, guards: Option<Guards>) -> GameLog {
        GameLog {
            stem: stem.to_owned(),
            seed,
            guards,
            base: None,
            ops: Vec::new(),
        }
    }

    /// The log after `op` ran on `game`: kept only if it changed something (so stepping
    /// a quiet level a thousand times does not grow the log).
    pub fn after(&self, op: GameOp, changed: bool) -> Result<GameLog, GameOp> {
        let mut next = self.clone();
        if changed {
            if next.ops.len() >= GAME_OPS_MAX {
                return Err(op);
            }
            next.ops.push(op);
        }
        Ok(next)
    }

    /// The log after a rewind of `game` (already rewound) to `phase`.
    pub fn rewound(&self, game: &Game, phase: u32) -> GameLog {
        GameLog {
            base: Some(Rewound {
                moves: game.simulation().played().to_vec(),
                phase,
            }),
            ops: Vec::new(),
            ..self.clone()
        }
    }

    /// The log after a restart: the level as opened.
    pub fn restarted(&self) -> GameLog {
        GameLog::new(&self.stem, self.seed, self.guards)
    }

    /// Rebuilds the level this log describes, request by request. Conclusions reached on
    /// the way are not returned: progress counted them when the requests were first made.
    pub fn replay(&self, catalogue: &Catalogue) -> Result<Game, ReplayError> {
        let (index, entry) = catalogue
            .find(&self.stem)
            .ok_or_else(|| ReplayError::NoSuchLevel(self.stem.clone()))?;
        let mut game = Game::open(
            index,
            &entry.level,
            &entry.file_name,
            &entry.stem,
            self.seed,
            self.guards,
        )?;
        if let Some(base) = &self.base {
            for action in &base.moves {
                step_to(&mut game, action.at_phase)?;
                game.play(action.play.clone())?;
            }
            step_to(&mut game, base.phase)?;
            game.rewind(base.phase)?;
        }
        for op in &self.ops {
            apply(&mut game, op)?;
        }
        Ok(game)
    }
}

/// Runs `op` on `game`, as the request did.
pub fn apply(game: &mut Game, op: &GameOp) -> Result<Option<Conclusion>, GameError> {
    match op {
        GameOp::Step { phases } => game.step(*phases),
        GameOp::Run => game.run_to_end(),
        GameOp::Play { play } => game.play(play.clone()),
        GameOp::Aim { worker, line } => game.aim_crash(*worker, *line),
    }
}

/// Steps `game` until it has run `phase` phases.
fn step_to(game: &mut Game, phase: u32) -> Result<(), ReplayError> {
    while game.simulation().phase() < phase {
        let before = game.simulation().phase();
        game.step((phase - before).min(STEPS_PER_REQUEST_MAX))?;
        if game.simulation().phase() == before {
            return Err(ReplayError::Unreachable {
                at_phase: phase,
                stopped: before,
            });
        }
    }
    Ok(())
}

/// What a participant's level looks like from outside, to tell whether a request changed it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fingerprint {
    phase: u32,
    moves: usize,
    over: bool,
    timeline: usize,
    /// The crashes aimed at lines: aiming one changes what later steps do.
    aims: Vec<(u32, usize)>,
}

impl Fingerprint {
    pub fn of(game: &Game) -> Fingerprint {
        let simulation = game.simulation();
        Fingerprint {
            phase: simulation.phase(),
            moves: simulation.played().len(),
            over: simulation.is_over(),
            timeline: simulation.timeline().len(),
            aims: game
                .crash_aims()
                .aims()
                .iter()
                .map(|aim| (aim.worker, aim.line))
                .collect(),
        }
    }
}
