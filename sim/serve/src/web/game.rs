//! One participant's level: the play session ([`twice_world::play_session`], the one the game
//! uses too) and where the level sits in the room's catalogue.
//!
//! The browser holds no state of its own: every move is a [`Play`] carried out by
//! `Simulation::play`, the one path the game and tapes take. A rewind builds the
//! simulation again from the seed and the moves played before that phase (as the game
//! does), so what the browser shows is always what a replay of its tape would show.

use std::path::PathBuf;

use twice_world::code::CrashAims;
use twice_world::level::{Level, LoadedLevel, Play, Tape};
use twice_world::play_session::{PlaySession, Recipe};
use twice_world::runtime::guards::Guards;
use twice_world::simulation_lock::SimulationGuard;

pub use twice_world::play_session::{Conclusion, Mode, SessionError as GameError};

/// The most phases one step request may run (a run to the end runs the level's `max_phases`).
pub const STEPS_PER_REQUEST_MAX: u32 = 100;

/// A level being played.
#[derive(Debug)]
pub struct Game {
    /// Index in the room's catalogue.
    pub level_index: usize,
    pub file_name: String,
    pub stem: String,
    pub seed: u64,
    pub mode: Mode,
    session: PlaySession,
}

impl Game {
    /// Opens `level` at phase 0. `guards`: the defences chosen in a sandbox; `None` plays
    /// the level's own.
    pub fn open(
        level_index: usize,
        level: &Level,
        file_name: &str,
        stem: &str,
        seed: u64,
        guards: Option<Guards>,
    ) -> Result<Game, GameError> {
        let mode = if guards.is_some() {
            Mode::Sandbox
        } else {
            Mode::Campaign
        };
        let recipe = Recipe {
            // The room's catalogue keeps levels parsed; the session reads only the level and
            // the file name a tape names.
            level: LoadedLevel {
                path: PathBuf::from(file_name),
                text: String::new(),
                level: level.clone(),
            },
            seed,
            guards,
            tape: None,
        };
        Ok(Game {
            level_index,
            file_name: file_name.to_owned(),
            stem: stem.to_owned(),
            seed,
            mode,
            session: PlaySession::open(mode, recipe, None)?,
        })
    }

    pub fn simulation(&self) -> SimulationGuard<'_> {
        self.session.simulation()
    }

    pub fn level(&self) -> &Level {
        &self.session.recipe.level.level
    }

    /// Runs up to `phases` phases (at most [`STEPS_PER_REQUEST_MAX`]). Each mutator returns
    /// the level's conclusion when this change ended it, so progress counts every end once.
    pub fn step(&mut self, phases: u32) -> Result<Option<Conclusion>, GameError> {
        self.session.step(phases.min(STEPS_PER_REQUEST_MAX))
    }

    /// Runs until the level is quiet or out of phases.
    pub fn run_to_end(&mut self) -> Result<Option<Conclusion>, GameError> {
        self.session.run_to_end()
    }

    /// A move, through `Simulation::play`. A refused move changes nothing.
    pub fn play(&mut self, play: Play) -> Result<Option<Conclusion>, GameError> {
        self.session.play(play)
    }

    /// Aims a crash of `w<worker>` at `line` of the code: played now if the worker is there,
    /// else when a step brings it there. The same line again takes the aim back.
    pub fn aim_crash(&mut self, worker: u32, line: usize) -> Result<Option<Conclusion>, GameError> {
        self.session.aim_crash(worker, line).map(|(_, concluded)| concluded)
    }

    /// The crashes aimed at lines, waiting for their workers.
    pub fn crash_aims(&self) -> &CrashAims {
        self.session.crash_aims()
    }

    /// Back to the state after `phase` phases, re-simulated from the seed and the moves.
    pub fn rewind(&mut self, phase: u32) -> Result<Option<Conclusion>, GameError> {
        self.session.rewind(phase)
    }

    /// Phase 0 again, with no moves.
    pub fn restart(&mut self) -> Result<Option<Conclusion>, GameError> {
        self.session.restart(None)
    }

    /// The judgement of the level while it is quiet.
    pub fn conclusion(&self) -> Option<&Conclusion> {
        self.session.conclusion()
    }

    /// Every move so far, as a tape of this level: the moves re-simulated to the end (as
    /// `twice-sim replay` will) give the verdict it expects. The tape names the level by its
    /// file name, so it replays when saved beside the level.
    pub fn tape(&self, title: String) -> Result<Tape, GameError> {
        self.session.tape(self.file_name.clone(), title)
    }

    /// The run as a take-home project (`twice_world::take_home`): `level_text` is the level's
    /// file, which the room keeps apart from the parsed level this game was opened with.
    ///
    /// # Errors
    ///
    /// Why the run cannot be exported or replayed.
    pub fn take_home(
        &self,
        level_text: &str,
        runtime: &twice_world::export::RuntimeDependency,
    ) -> Result<twice_world::take_home::Project, twice_world::take_home::TakeHomeError> {
        twice_world::take_home::project_with_level(&self.session, level_text, runtime)
    }

    /// Why the run cannot be taken home, if its level and the moves `played` (its
    /// simulation's, held by the caller) already say (no replay).
    pub fn take_home_why_not(&self, played: &[twice_world::level::TimedAction]) -> Option<String> {
        twice_world::take_home::why_not(&self.session, played)
    }
}
