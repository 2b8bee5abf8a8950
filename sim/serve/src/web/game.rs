//! One participant's level: the recipe it was built from (level, seed, guards) and the
//! simulation it is in now.
//!
//! The browser holds no state of its own: every move is a [`Play`] carried out by
//! `Simulation::play`, the one path the game and tapes take. A rewind builds the
//! simulation again from the seed and the moves played before that phase (as the game
//! does), so what the browser shows is always what a replay of its tape would show.

use twice_world::checker::Verdict;
use twice_world::level::{Expectation, Level, Play, Tape, TimedAction};
use twice_world::runtime::guards::Guards;
use twice_world::simulator::{PlayError, SimError, Simulation, SimulationBuilder};

/// The most phases one step request may run (a run to the end runs the level's `max_phases`).
pub const STEPS_PER_REQUEST_MAX: u32 = 100;

/// Why a request to the level was refused or failed.
#[derive(Debug, thiserror::Error)]
pub enum GameError {
    #[error("the move was refused: {0}")]
    Refused(#[from] PlayError),
    #[error("phase {phase} has not happened yet (now: {now}); step or play on")]
    RewindAhead { phase: u32, now: u32 },
    #[error("the simulation failed: {0}")]
    Simulation(#[from] SimError),
    #[error("the ledger could not be read: {0}")]
    Ledger(#[from] twice_world::ledger::LedgerError),
}

/// How the level was opened: with its own guards (the campaign: progress counts) or with
/// guards the participant chose (a sandbox, as Packet Attack's URL parameters: no progress).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    Campaign,
    Sandbox,
}

impl Mode {
    pub fn name(self) -> &'static str {
        match self {
            Mode::Campaign => "campaign",
            Mode::Sandbox => "sandbox",
        }
    }
}

/// The end of a play: judged once each time the level goes quiet.
#[derive(Clone, Debug)]
pub struct Conclusion {
    pub verdict: Verdict,
    /// The goal was reached, or the level cannot be beaten and was played to its end.
    pub finished: bool,
    /// What the player reads: a win's story, or a loss's diagnosis from the run.
    pub debrief: twice_world::debrief::Debrief,
    pub cards: u32,
    pub phases: u32,
}

/// A level being played.
#[derive(Debug)]
pub struct Game {
    /// Index in the room's catalogue.
    pub level_index: usize,
    level: Level,
    pub file_name: String,
    pub stem: String,
    pub seed: u64,
    pub mode: Mode,
    guards: Guards,
    simulation: Simulation,
    conclusion: Option<Conclusion>,
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
        let guards = guards.unwrap_or(level.guards);
        let simulation = build(level, seed, guards, Vec::new())?;
        Ok(Game {
            level_index,
            level: level.clone(),
            file_name: file_name.to_owned(),
            stem: stem.to_owned(),
            seed,
            mode,
            guards,
            simulation,
            conclusion: None,
        })
    }

    pub fn simulation(&self) -> &Simulation {
        &self.simulation
    }

    pub fn level(&self) -> &Level {
        &self.level
    }

    /// Runs up to `phases` phases (at most [`STEPS_PER_REQUEST_MAX`]). Each mutator returns
    /// the level's conclusion when this change ended it, so progress counts every end once.
    pub fn step(&mut self, phases: u32) -> Result<Option<Conclusion>, GameError> {
        let mut ran = 0;
        while ran < phases.min(STEPS_PER_REQUEST_MAX) && self.simulation.step()? {
            ran += 1;
        }
        Ok(self.changed())
    }

    /// Runs until the level is quiet or out of phases.
    pub fn run_to_end(&mut self) -> Result<Option<Conclusion>, GameError> {
        self.simulation.run()?;
        Ok(self.changed())
    }

    /// A move, through `Simulation::play`. A refused move changes nothing.
    pub fn play(&mut self, play: Play) -> Result<Option<Conclusion>, GameError> {
        self.simulation.play(play)?;
        Ok(self.changed())
    }

    /// Back to the state after `phase` phases: built again from the seed and the moves
    /// played before it, into a fresh in-memory ledger.
    pub fn rewind(&mut self, phase: u32) -> Result<Option<Conclusion>, GameError> {
        let now = self.simulation.phase();
        if phase > now {
            return Err(GameError::RewindAhead { phase, now });
        }
        let moves: Vec<TimedAction> = self
            .simulation
            .played()
            .iter()
            .filter(|action| action.at_phase < phase)
            .cloned()
            .collect();
        let mut simulation = build(&self.level, self.seed, self.guards, moves)?;
        simulation.run_until(|simulation| simulation.phase() >= phase)?;
        self.simulation = simulation;
        self.conclusion = None;
        Ok(self.changed())
    }

    /// Phase 0 again, with no moves.
    pub fn restart(&mut self) -> Result<Option<Conclusion>, GameError> {
        self.simulation = build(&self.level, self.seed, self.guards, Vec::new())?;
        self.conclusion = None;
        Ok(self.changed())
    }

    /// The judgement of the level while it is quiet.
    pub fn conclusion(&self) -> Option<&Conclusion> {
        self.conclusion.as_ref()
    }

    /// Judges the level when it has just gone quiet (returning the new conclusion); forgets
    /// the judgement when a move wakes it again.
    fn changed(&mut self) -> Option<Conclusion> {
        // Quiet, and no card the player holds could change it: a run parked for an operator
        // waits while the player holds an operator card that can settle it.
        let concluded = self.simulation.is_over()
            && self
                .simulation
                .moves_that_still_matter()
                .is_ok_and(|moves| moves.is_empty());
        if !concluded {
            self.conclusion = None;
            return None;
        }
        if self.conclusion.is_some() {
            return None;
        }
        let verdict = match self.simulation.verdict() {
            Ok(verdict) => verdict,
            Err(error) => {
                eprintln!("web: the verdict could not be judged: {error}");
                return None;
            }
        };
        let debrief = twice_world::debrief::of(&self.simulation, &verdict);
        let conclusion = Conclusion {
            // A win, or an unbeatable level that held against the whole hand: a level left
            // alone is never finished.
            finished: debrief.standing.finishes_level(),
            debrief,
            cards: u32::try_from(self.simulation.played().len()).unwrap_or(u32::MAX),
            phases: self.simulation.phase(),
            verdict,
        };
        self.conclusion = Some(conclusion.clone());
        Some(conclusion)
    }

    /// Every move so far, as a tape of this level: the moves re-simulated to the end (as
    /// `twice-sim replay` will) give the verdict it expects. `level` is the level's file
    /// name, so the tape replays when saved beside the level.
    pub fn tape(&self, title: String) -> Result<Tape, GameError> {
        let actions = self.simulation.played().to_vec();
        let mut replay = build(&self.level, self.seed, self.guards, actions.clone())?;
        replay.run()?;
        let verdict = replay.verdict()?;
        Ok(Tape {
            version: twice_world::level::TAPE_VERSION,
            level: self.file_name.clone(),
            seed: self.seed,
            title,
            guards: match self.mode {
                Mode::Sandbox => Some(self.guards),
                Mode::Campaign => None,
            },
            actions,
            expect: Expectation::of(&verdict),
        })
    }
}

fn build(level: &Level, seed: u64, guards: Guards, moves: Vec<TimedAction>) -> Result<Simulation, SimError> {
    SimulationBuilder::new(level.clone(), seed)
        .guards(guards)
        .actions(moves)
        .build()
}
