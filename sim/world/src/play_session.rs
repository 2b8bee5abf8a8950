//! One play session, for the game and the browser alike: how a level was opened ([`Mode`]),
//! what rebuilds it from scratch ([`Recipe`]), rewinding and restarting by re-simulating from
//! the seed and the moves, the judgement when the level goes quiet ([`Conclusion`]) and the
//! tape of what was played.
//!
//! Every move goes through `Simulation::play`, the one path the game, the browser and tapes
//! take; a rewind builds the simulation again from the seed and the moves played before that
//! phase, so what either front end shows is always what a replay of its tape would show.
//!
//! [`PlaySession`] holds all of it, and both front ends are made of it: the browser's game
//! runs it in place, its ledger in memory; the game's session wraps it with what only a window
//! needs (a ledger file the operator API reads, speed, notices) and rebuilds long rewinds on a
//! thread of its own from the same [`Recipe`], swapping the result in with
//! [`PlaySession::replace`].

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::checker::Verdict;
use crate::code::{AimError, AimReport, Aimed, CrashAims};
use crate::debrief::{self, Debrief};
use crate::ledger::{HistoryEvent, LedgerError};
use crate::level::{CardKind, Expectation, LoadedLevel, Play, TAPE_VERSION, Tape, TimedAction};
use crate::runtime::guards::Guards;
use crate::simulation_lock::{SimulationGuard, SimulationLock};
use crate::simulator::{PlayError, SimError, Simulation, SimulationBuilder};

/// How the level was opened.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// A campaign level: its guards, its cards; progress counts.
    Campaign,
    /// Any level, guards as the player set them; no progress.
    Sandbox,
    /// A tape plays its own moves; the player watches, steps and rewinds.
    Replay,
}

impl Mode {
    pub fn name(self) -> &'static str {
        match self {
            Mode::Campaign => "campaign",
            Mode::Sandbox => "sandbox",
            Mode::Replay => "replay",
        }
    }
}

/// A tape being replayed, and the file it came from.
#[derive(Clone, Debug)]
pub struct TapeSource {
    pub path: PathBuf,
    pub tape: Tape,
}

/// Everything needed to build the simulation again from scratch (rewind, restart, a tape).
#[derive(Clone, Debug)]
pub struct Recipe {
    pub level: LoadedLevel,
    pub seed: u64,
    /// Guards overriding the level's (sandbox, or a tape recorded in the sandbox).
    pub guards: Option<Guards>,
    /// In a replay: the tape whose moves are played.
    pub tape: Option<TapeSource>,
}

impl Recipe {
    pub fn guards_in_force(&self) -> Guards {
        self.guards.unwrap_or(self.level.level.guards)
    }

    /// Builds the simulation at phase 0 with these moves, its ledger in `ledger` (memory if none).
    pub fn build(&self, actions: Vec<TimedAction>, ledger: Option<&Path>) -> Result<Simulation, SimError> {
        let mut builder = SimulationBuilder::new(self.level.level.clone(), self.seed).actions(actions);
        if let Some(source) = &self.tape {
            // A tape's moves replay by the rule of the format it was recorded in.
            builder = builder.wire_rule(source.tape.wire_rule());
        }
        if let Some(guards) = self.guards {
            builder = builder.guards(guards);
        }
        if let Some(path) = ledger {
            builder = builder.ledger_file(path);
        }
        builder.build()
    }

    /// The moves that rebuild the state just before phase `phase`: a tape's own moves (all of
    /// them: later ones wait their turn), or the moves `played` before it.
    pub fn actions_before(&self, played: &[TimedAction], phase: u32) -> Vec<TimedAction> {
        match &self.tape {
            Some(source) => source.tape.actions.clone(),
            None => played
                .iter()
                .filter(|action| action.at_phase < phase)
                .cloned()
                .collect(),
        }
    }

    /// Every move so far, as a tape records it.
    pub fn all_actions(&self, played: &[TimedAction]) -> Vec<TimedAction> {
        match &self.tape {
            Some(source) => source.tape.actions.clone(),
            None => played.to_vec(),
        }
    }

    /// The tape of the moves `played` in `mode`, naming its level as `level` (a path the tape
    /// is loaded from). Its `expect` is the level's goal until [`Recipe::judge_tape`] plays it.
    pub fn tape(&self, mode: Mode, played: &[TimedAction], level: String, title: String) -> Tape {
        let guards = match mode {
            Mode::Sandbox => Some(self.guards_in_force()),
            Mode::Campaign | Mode::Replay => self.guards,
        };
        // A replayed tape's own moves keep the rule they were recorded under; moves made here
        // are written as made (the message hit, the worker killed and its moment).
        let version = match (&self.tape, mode) {
            (Some(source), Mode::Replay) => source.tape.version,
            _ => TAPE_VERSION,
        };
        Tape {
            version,
            level,
            seed: self.seed,
            title,
            guards,
            actions: self.all_actions(played),
            expect: Expectation {
                verdict: self.level.level.goal,
                stopped_by: Vec::new(),
                paid_cents: Default::default(),
                keys: Default::default(),
                violations: Vec::new(),
            },
        }
    }

    /// Plays `tape`'s moves to the end in memory (as `twice-sim replay` will) and writes the
    /// verdict it reached into its `expect`.
    pub fn judge_tape(&self, tape: &mut Tape) -> Result<Verdict, SessionError> {
        let mut replay = self.build(tape.actions.clone(), None)?;
        replay.run()?;
        let verdict = replay.verdict()?;
        tape.expect = Expectation::of(&verdict);
        Ok(verdict)
    }
}

/// The end of a play, judged once each time the level goes quiet.
#[derive(Clone, Debug)]
pub struct Conclusion {
    pub verdict: Verdict,
    /// What the player reads: a win's story, or a loss's diagnosis from the run.
    pub debrief: Debrief,
    /// The goal was reached (a level left alone is never finished; a level that cannot be
    /// beaten is finished by its defence, not by a play). Progress counts it only in the
    /// campaign.
    pub finished: bool,
    /// For a replayed tape: did the verdict match what the tape expects?
    pub as_expected: Option<bool>,
    pub cards: u32,
    pub phases: u32,
}

/// The cards that could still change a quiet level: empty while it runs, and in a replay,
/// whose moves are the tape's. A run parked for an operator waits while the player holds an
/// operator card that can settle it.
pub fn moves_that_still_matter(simulation: &Simulation, mode: Mode) -> Result<Vec<CardKind>, LedgerError> {
    if !simulation.is_over() || mode == Mode::Replay {
        return Ok(Vec::new());
    }
    simulation.moves_that_still_matter()
}

/// Quiet, and no card the player holds could change it: time for the verdict.
pub fn is_concluded(simulation: &Simulation, mode: Mode) -> bool {
    simulation.is_over() && moves_that_still_matter(simulation, mode).is_ok_and(|moves| moves.is_empty())
}

/// Judges the level as it stands: the checker's verdict, the debrief drawn from this run and,
/// for a replayed tape, whether it matched.
pub fn conclude(recipe: &Recipe, simulation: &Simulation) -> Result<Conclusion, LedgerError> {
    let verdict = simulation.verdict()?;
    let debrief = debrief::of(simulation, &verdict);
    let as_expected = match recipe.tape.as_ref() {
        Some(source) => Some(crate::replay::run_as_expected(
            &source.tape.expect,
            simulation,
            &verdict,
        )?),
        None => None,
    };
    Ok(Conclusion {
        finished: debrief.standing.finishes_level(),
        debrief,
        as_expected,
        cards: u32::try_from(simulation.played().len()).unwrap_or(u32::MAX),
        phases: simulation.phase(),
        verdict,
    })
}

/// Whether a history line records an operator's decision: a resolve, a compensation's claim, or
/// a compensation that found nothing and settled the call `failed`. (A compensation finished
/// again after a failed undo is the same decision: its claim was counted.)
pub fn is_decision(event: &HistoryEvent) -> bool {
    matches!(
        event,
        HistoryEvent::Resolved | HistoryEvent::CompensationClaimed | HistoryEvent::NothingToCompensate
    )
}

/// How many decisions on the first node's ledger (the one the operator API serves) were made
/// from outside the simulation, by an operator over the HTTP API: the decision lines in its
/// history whose operator is none of the simulation's own (the level's scripted operators, or a
/// name the player's operator moves used). They are not moves, so a re-simulation from the
/// seed and the moves cannot repeat them. Counted from the ledger, each decision once however
/// the simulation came to notice it (a poll, or an idle step of its own). An outside operator
/// who shares a name with one of the simulation's is counted as the simulation's.
pub fn outside_decisions(simulation: &Simulation) -> Result<u32, LedgerError> {
    let mut own: BTreeSet<&str> = BTreeSet::new();
    if let Some(honest) = &simulation.level().honest_operator {
        own.insert(&honest.name);
    }
    if let Some(auditor) = &simulation.level().auditor {
        own.insert(&auditor.name);
    }
    for action in simulation.played() {
        if let Some(operator) = action.play.operator() {
            own.insert(operator);
        }
    }
    let outside = simulation
        .ledger()
        .all_history()?
        .iter()
        .filter(|entry| is_decision(&entry.event) && !own.contains(entry.actor.as_str()))
        .count();
    Ok(u32::try_from(outside).unwrap_or(u32::MAX))
}

/// Why a change to the session was refused or failed.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    #[error("the move was refused: {0}")]
    Refused(#[from] PlayError),
    #[error("phase {phase} has not happened yet (now: {now}); step or play on")]
    RewindAhead { phase: u32, now: u32 },
    #[error("the simulation failed: {0}")]
    Simulation(#[from] SimError),
    #[error("the ledger could not be read: {0}")]
    Ledger(#[from] LedgerError),
    #[error("a replay plays a tape and only a replay does: opened in the {} with{} a tape", mode.name(), if *has_tape { "" } else { "out" })]
    TapeAndMode { mode: Mode, has_tape: bool },
    #[error("this is a tape replay: its moves are fixed; open the level to aim a crash")]
    ReplayAims,
    #[error("the crash cannot be aimed there: {0}")]
    Aim(#[from] AimError),
}

/// A level being played: how it was opened, its simulation and, while it is quiet, its
/// judgement.
///
/// The simulation sits behind a lock only so a session can be shared read-only between
/// threads (the game's systems); `Simulation` is `Send` but not `Sync` (SQLite connections).
/// Every change goes through `&mut self`, so the lock is never contended.
#[derive(Debug)]
pub struct PlaySession {
    /// How the level was opened: fixed for the session's life.
    pub mode: Mode,
    /// What rebuilds the simulation from scratch: fixed for the session's life.
    pub recipe: Recipe,
    simulation: SimulationLock,
    /// The judgement of the level while it is quiet; `Err` when it could not be judged (the
    /// next change judges it again). Shared, so a front end can keep the error it shows.
    judgement: Option<Result<Conclusion, Arc<LedgerError>>>,
    /// Crashes aimed at lines of the program, fired as the workers reach them.
    aims: CrashAims,
    /// What became of aims since a front end last asked.
    aim_reports: Vec<AimReport>,
}

impl PlaySession {
    /// Opens the recipe's level at phase 0 (a replay with its tape's moves waiting their
    /// turn), its ledger in `ledger` (memory if none).
    pub fn open(mode: Mode, recipe: Recipe, ledger: Option<&Path>) -> Result<PlaySession, SessionError> {
        if (mode == Mode::Replay) != recipe.tape.is_some() {
            return Err(SessionError::TapeAndMode {
                mode,
                has_tape: recipe.tape.is_some(),
            });
        }
        let simulation = recipe.build(recipe.actions_before(&[], 0), ledger)?;
        let mut session = PlaySession {
            mode,
            recipe,
            simulation: SimulationLock::new(simulation),
            judgement: None,
            aims: CrashAims::default(),
            aim_reports: Vec::new(),
        };
        session.changed();
        Ok(session)
    }

    /// The simulation, to read and draw. Held until the guard drops; asked for again on the
    /// same thread meanwhile, it panics (see [`crate::simulation_lock`]): a helper takes the
    /// `&Simulation` its caller holds.
    pub fn simulation(&self) -> SimulationGuard<'_> {
        self.simulation.lock()
    }

    fn simulation_mut(&mut self) -> &mut Simulation {
        self.simulation.get_mut()
    }

    /// The judgement of the level while it is quiet.
    pub fn conclusion(&self) -> Option<&Conclusion> {
        self.judgement.as_ref().and_then(|judged| judged.as_ref().ok())
    }

    /// The judgement of the level while it is quiet, or why it could not be judged.
    pub fn judgement(&self) -> Option<Result<&Conclusion, &Arc<LedgerError>>> {
        self.judgement.as_ref().map(Result::as_ref)
    }

    /// Quiet, and no card the player holds could change it: time for the verdict.
    pub fn is_concluded(&self) -> bool {
        is_concluded(&self.simulation(), self.mode)
    }

    /// The decisions made on the served ledger from outside the simulation (see
    /// [`outside_decisions`]): what a rewind or a restart would undo.
    pub fn outside_decisions(&self) -> Result<u32, LedgerError> {
        outside_decisions(&self.simulation())
    }

    /// The cards that could still change a quiet level (none while it runs, or in a replay).
    pub fn moves_that_still_matter(&self) -> Result<Vec<CardKind>, LedgerError> {
        moves_that_still_matter(&self.simulation(), self.mode)
    }

    /// Runs up to `phases` phases. Each change returns the level's conclusion when this change
    /// ended it, so a front end counts every end once.
    pub fn step(&mut self, phases: u32) -> Result<Option<Conclusion>, SessionError> {
        let mut ran = 0;
        let stepped = loop {
            if ran == phases {
                break Ok(());
            }
            match self.step_once() {
                Ok(true) => ran += 1,
                Ok(false) => break Ok(()),
                Err(error) => break Err(error),
            }
        };
        // The phases that ran are judged even when a later one failed.
        let concluded = self.changed();
        stepped?;
        Ok(concluded)
    }

    /// One phase, then the crashes aimed at the lines the workers reached. Returns false when
    /// the level is quiet.
    fn step_once(&mut self) -> Result<bool, SimError> {
        let simulation = self.simulation.get_mut();
        let ran = simulation.step()?;
        let reports = self.aims.fire(simulation);
        self.aim_reports.extend(reports);
        Ok(ran)
    }

    /// Runs until the level is quiet or out of phases (phase by phase while a crash is aimed).
    pub fn run_to_end(&mut self) -> Result<Option<Conclusion>, SessionError> {
        let ran = if self.aims.is_empty() {
            self.simulation_mut().run().map(drop)
        } else {
            loop {
                match self.step_once() {
                    Ok(true) => {}
                    Ok(false) => break Ok(()),
                    Err(error) => break Err(error),
                }
            }
        };
        let concluded = self.changed();
        ran?;
        Ok(concluded)
    }

    /// Aims a crash of `w<worker>` at `line` of the program ([`crate::code`]): played now if
    /// the worker is at that line, else when it gets there, as the ordinary `CrashWorker` move.
    /// The same line again takes the aim back.
    pub fn aim_crash(&mut self, worker: u32, line: usize) -> Result<(Aimed, Option<Conclusion>), SessionError> {
        if self.mode == Mode::Replay {
            return Err(SessionError::ReplayAims);
        }
        let aimed = self.aims.aim(self.simulation.get_mut(), worker, line)?;
        Ok((aimed, self.changed()))
    }

    /// The crashes aimed at lines, waiting for their workers.
    pub fn crash_aims(&self) -> &CrashAims {
        &self.aims
    }

    /// What became of aims since this was last asked: crashes that landed, aims dropped.
    pub fn take_aim_reports(&mut self) -> Vec<AimReport> {
        std::mem::take(&mut self.aim_reports)
    }

    /// A move, through `Simulation::play`. A refused move changes nothing.
    pub fn play(&mut self, play: Play) -> Result<Option<Conclusion>, SessionError> {
        self.simulation_mut().play(play)?;
        Ok(self.changed())
    }

    /// The simulation after `phase` phases, built again from the seed and the moves played
    /// before it, its ledger in `ledger` (memory if none). The session is not changed: swap
    /// the result in with [`PlaySession::replace`].
    pub fn rewound(&self, phase: u32, ledger: Option<&Path>) -> Result<Simulation, SessionError> {
        let now = self.simulation().phase();
        if phase > now {
            return Err(SessionError::RewindAhead { phase, now });
        }
        let moves = self.recipe.actions_before(self.simulation().played(), phase);
        let mut simulation = self.recipe.build(moves, ledger)?;
        simulation.run_until(|simulation| simulation.phase() >= phase)?;
        Ok(simulation)
    }

    /// Back to the state after `phase` phases, re-simulated into a fresh in-memory ledger.
    pub fn rewind(&mut self, phase: u32) -> Result<Option<Conclusion>, SessionError> {
        let simulation = self.rewound(phase, None)?;
        Ok(self.replace(simulation))
    }

    /// Phase 0 again, with no moves of the player's (a replay keeps its tape's), its ledger
    /// in `ledger` (memory if none).
    pub fn restart(&mut self, ledger: Option<&Path>) -> Result<Option<Conclusion>, SessionError> {
        let simulation = self.recipe.build(self.recipe.actions_before(&[], 0), ledger)?;
        Ok(self.replace(simulation))
    }

    /// Swaps in a simulation of this recipe built elsewhere (a rewind re-simulated on another
    /// thread); the judgement starts over.
    /// Aims at lines are forgotten: the moments they waited for belong to the run replaced.
    pub fn replace(&mut self, simulation: Simulation) -> Option<Conclusion> {
        *self.simulation_mut() = simulation;
        self.aims.clear();
        self.judgement = None;
        self.changed()
    }

    /// A change to the simulation that is not a move (an operator over the HTTP API settled a
    /// call on the ledger file): made by `change`, then judged afresh, as a quiet level's
    /// verdict can change without it waking.
    pub fn change_from_outside<R>(&mut self, change: impl FnOnce(&mut Simulation) -> R) -> (R, Option<Conclusion>) {
        let result = change(self.simulation_mut());
        self.judgement = None;
        (result, self.changed())
    }

    /// The moves that rebuild the state just before phase `phase`.
    pub fn actions_before(&self, phase: u32) -> Vec<TimedAction> {
        self.recipe.actions_before(self.simulation().played(), phase)
    }

    /// Every move so far, as a tape records it.
    pub fn all_actions(&self) -> Vec<TimedAction> {
        self.recipe.all_actions(self.simulation().played())
    }

    /// Every move so far as a tape naming its level `level`, its `expect` the verdict the moves
    /// reach when re-simulated to the end.
    pub fn tape(&self, level: String, title: String) -> Result<Tape, SessionError> {
        let mut tape = self.recipe.tape(self.mode, self.simulation().played(), level, title);
        self.recipe.judge_tape(&mut tape)?;
        Ok(tape)
    }

    /// Judges the level when it has just gone quiet (returning the new conclusion); forgets
    /// the judgement when a move wakes it again.
    fn changed(&mut self) -> Option<Conclusion> {
        if !self.is_concluded() {
            self.judgement = None;
            return None;
        }
        if matches!(self.judgement, Some(Ok(_))) {
            return None;
        }
        let judged = conclude(&self.recipe, &self.simulation()).map_err(Arc::new);
        let concluded = judged.as_ref().ok().cloned();
        self.judgement = Some(judged);
        concluded
    }
}
