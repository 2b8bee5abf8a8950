//! The level being played: the simulation, its scratch ledger, how fast it runs, and
//! what the player was told. The session changes only through [`Intent`]s.

use std::ops::Deref;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};
use twice_world::cards::OperatorResolve;

use bevy::prelude::*;
use twice_world::checker::Verdict;
use twice_world::code::{AimReport, Aimed};
use twice_world::debrief::Debrief;
use twice_world::ledger::{ExecutionRecord, LedgerError};
use twice_world::level::{Expectation, Play};
use twice_world::play_session::{PlaySession, SessionError};
use twice_world::runtime::operator::{Effect, LookupError};
use twice_world::simulator::{SimError, Simulation};

mod errors;
mod intent;
pub mod jobs;
pub mod ledger_view;
mod news;
pub mod scratch;

pub use errors::{JobError, OpenError, TapeError};
pub use intent::{Intent, NextBriefing, OpenProblem};
use jobs::Job;
use ledger_view::LedgerView;
pub use news::{Leaving, SessionNews};
use scratch::ScratchFile;
/// How the level was opened and what rebuilds it: the play session the browser uses too.
pub use twice_world::play_session::{Mode, Recipe, TapeSource};

use crate::panels::Panels;
use crate::progress::Progress;

/// Phases per second at each speed setting.
pub const SPEEDS: [f32; 8] = [0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0];
pub const DEFAULT_SPEED: usize = 2;
/// Autoplay never spends more than this on stepping in one frame: the window stays responsive.
pub const STEP_BUDGET: Duration = Duration::from_millis(3);

/// The order the session's systems run in, each frame.
#[derive(SystemSet, Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SessionSet {
    Intents,
    Jobs,
    Advance,
    Conclude,
}

pub(super) fn plugin(app: &mut App) {
    app.add_message::<Intent>();
    app.add_message::<SessionNews>();
    app.configure_sets(
        Update,
        (
            SessionSet::Intents,
            SessionSet::Jobs,
            SessionSet::Advance,
            SessionSet::Conclude,
        )
            .chain(),
    );
    app.add_plugins((intent::plugin, jobs::plugin, scratch::plugin));
    app.add_systems(
        Update,
        (
            advance.in_set(SessionSet::Advance),
            conclude.in_set(SessionSet::Conclude),
        )
            .run_if(resource_exists::<Session>),
    );
}

/// A line for the player: what happened to their last move.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Notice {
    pub text: String,
    pub problem: bool,
}

/// The end of a level as the game's screens read it: the play session's judgement, or why it
/// could not be judged.
#[derive(Clone, Debug)]
pub struct Conclusion {
    pub verdict: Result<Verdict, Arc<LedgerError>>,
    /// What the player reads: a win's story, or a loss's diagnosis (never the win's story).
    pub debrief: Option<Debrief>,
    /// For a replayed tape: did the verdict match what the tape expects?
    pub as_expected: Option<bool>,
    /// The progress file now counts this level as finished.
    pub finished: bool,
}

/// The level being played: the play session the browser uses too ([`PlaySession`], its mode
/// and recipe read through this session), and what only the window needs around it.
#[derive(Debug, Resource)]
pub struct Session {
    /// Declared before `ledger_file` so its connections close before the file is deleted.
    play: PlaySession,
    /// Index of the level in the campaign, when it is part of it.
    pub campaign_index: Option<usize>,
    ledger_file: Option<ScratchFile>,
    ledger: LedgerView,
    generation: u64,
    pub running: bool,
    pub speed: usize,
    step_credit: f32,
    pub notice: Option<Notice>,
    pub job: Option<Job>,
    /// The play session's judgement as the screens show it, once progress has counted it.
    pub conclusion: Option<Conclusion>,
    /// A rewind the player was warned about (it would undo decisions made over HTTP): asking
    /// for the same phase again confirms it.
    pub rewind_asked: Option<u32>,
    /// The panels this level shows (they arrive chapter by chapter in the campaign).
    pub panels: Panels,
    /// Its place in the campaign as players see it (`1.3`), when it is part of it.
    pub position: Option<twice_world::campaign::Position>,
}

/// `session.mode`, `session.recipe`, `session.is_concluded()`: the play session's.
impl Deref for Session {
    type Target = PlaySession;

    fn deref(&self) -> &PlaySession {
        &self.play
    }
}

impl Session {
    /// Wraps `play`, whose ledger is written to `ledger_file` (memory if none).
    pub fn new(play: PlaySession, campaign_index: Option<usize>, ledger_file: Option<ScratchFile>) -> Session {
        let ledger = LedgerView::read(play.simulation().ledger());
        Session {
            play,
            campaign_index,
            ledger_file,
            ledger,
            generation: 0,
            running: false,
            speed: DEFAULT_SPEED,
            step_credit: 0.0,
            notice: None,
            job: None,
            conclusion: None,
            rewind_asked: None,
            panels: Panels::all(),
            position: None,
        }
    }

    /// The simulation, to read and draw.
    /// The level's title as its header says it: numbered by campaign position (`1.3 · …`)
    /// when it has one, by chapter otherwise (a sandbox or a replayed tape).
    pub fn numbered_title(&self) -> String {
        let level = &self.recipe.level.level;
        match self.position {
            Some(position) => format!("{position} · {}", level.title),
            None => format!("Ch. {} · {}", level.chapter, level.title),
        }
    }

    pub fn simulation(&self) -> twice_world::simulation_lock::SimulationGuard<'_> {
        self.play.simulation()
    }

    pub fn ledger(&self) -> &LedgerView {
        &self.ledger
    }

    /// The ledger file the simulation writes, if it has one (else it runs in memory).
    pub fn ledger_path(&self) -> Option<&Path> {
        self.ledger_file.as_ref().map(ScratchFile::path)
    }

    /// Counts every change to the simulation, so views know when to read again.
    pub fn generation(&self) -> u64 {
        self.generation
    }

    pub fn phases_per_second(&self) -> f32 {
        SPEEDS[self.speed.min(SPEEDS.len() - 1)]
    }

    pub fn is_over(&self) -> bool {
        self.simulation().is_over()
    }

    pub fn is_busy(&self) -> bool {
        self.job.is_some()
    }

    pub fn tell(&mut self, text: impl Into<String>) {
        self.notice = Some(Notice {
            text: text.into(),
            problem: false,
        });
    }

    pub fn warn(&mut self, text: impl Into<String>) {
        self.notice = Some(Notice {
            text: text.into(),
            problem: true,
        });
    }

    /// One phase of one actor. Returns false when the level is over.
    pub fn step(&mut self) -> Result<bool, SessionError> {
        let before = self.simulation().phase();
        let result = self.play.step(1);
        self.changed();
        self.tell_aims();
        result?;
        Ok(self.simulation().phase() > before)
    }

    /// Aims a crash of `w<worker>` at `line` of the code (see [`PlaySession::aim_crash`]).
    pub fn aim_crash(&mut self, worker: u32, line: usize) -> Result<Aimed, SessionError> {
        let (aimed, _) = self.play.aim_crash(worker, line)?;
        self.changed();
        Ok(aimed)
    }

    /// Says what became of the crashes aimed at lines in the phase that just ran.
    fn tell_aims(&mut self) {
        for report in self.play.take_aim_reports() {
            match report {
                AimReport::Crashed { worker, line, phase } => self.tell(format!(
                    "Played: Crash a worker — w{worker} reached line {} and is killed, about to {phase}",
                    line + 1
                )),
                AimReport::Dropped { why, .. } => self.warn(format!("The aimed crash is dropped: {why}")),
            }
        }
    }

    /// A player's move, through the one path every move takes: `Simulation::play`.
    pub fn play(&mut self, play: Play) -> Result<(), SessionError> {
        self.play.play(play)?;
        self.changed();
        Ok(())
    }

    /// When `play` was an operator's decision that lost its compare-and-set: the 409 as the
    /// timeline records it (the move is made; the ledger refused it).
    pub fn lost_race(&self, play: &Play) -> Option<String> {
        let Play::OperatorResolve(OperatorResolve { operator, .. }) = play else {
            return None;
        };
        let simulation = self.simulation();
        let actor = twice_world::simulator::Actor::Operator(operator.clone());
        simulation
            .timeline()
            .iter()
            .rev()
            .find(|entry| entry.actor == actor)
            .filter(|entry| entry.text.starts_with("409"))
            .map(|entry| entry.text.clone())
    }

    /// After every change: views read again, and a level a move woke is no longer concluded.
    fn changed(&mut self) {
        self.generation += 1;
        self.ledger.refresh(self.play.simulation().ledger());
        if self.play.judgement().is_none() {
            self.conclusion = None;
        }
    }

    /// Decisions made on this simulation's ledger from outside it (an operator over the HTTP
    /// API), counted from the ledger's history: a re-simulation from the seed and the moves
    /// (a rewind, a restart) would not repeat them.
    pub fn outside_decisions(&self) -> Result<u32, LedgerError> {
        self.play.outside_decisions()
    }

    /// Takes in calls settled outside the simulation (an operator over the HTTP API): reads
    /// the ledger again and wakes runs parked on them. Returns the workers woken; a level
    /// that was over goes on, so its verdict is judged again when it ends.
    pub fn notice_outside_settlements(&mut self) -> Result<usize, SimError> {
        let (woken, _) = self.play.change_from_outside(Simulation::notice_settlements);
        let woken = woken?;
        if woken > 0 {
            self.conclusion = None;
        }
        self.changed();
        Ok(woken)
    }

    /// What the level's billing holds for `record`: an operator over the HTTP API asks this
    /// before compensating the call.
    pub fn look_up_effect(&mut self, record: &ExecutionRecord) -> Result<Effect, LookupError> {
        // A lookup asks billing and changes nothing the verdict reads.
        self.play
            .change_from_outside(|simulation| simulation.look_up_effect(record))
            .0
    }

    /// Voids credit `credit_id` for an operator over the HTTP API who claimed `record`'s call
    /// for compensation. Like their resolves, it is not a move; the verdict is judged again.
    pub fn undo_for_outside_operator(
        &mut self,
        record: &ExecutionRecord,
        credit_id: &str,
    ) -> Result<String, twice_world::runtime::operator::UndoError> {
        let (result, _) = self
            .play
            .change_from_outside(|simulation| simulation.undo_for_outside_operator(record, credit_id));
        self.conclusion = None;
        self.changed();
        result
    }

    /// Reads the ledger again now (after rows were written from outside, as the benchmark does).
    pub fn reread_ledger(&mut self) {
        self.changed();
    }

    /// Swaps in a simulation built elsewhere (a rewind); the old one and its file go.
    pub fn replace(&mut self, simulation: Simulation, ledger_file: Option<ScratchFile>, ledger: LedgerView) {
        self.play.replace(simulation);
        self.ledger_file = ledger_file;
        self.ledger = ledger;
        self.generation += 1;
        self.conclusion = None;
        self.step_credit = 0.0;
        self.rewind_asked = None;
    }

    /// What a tape of this session expects, once `verdict` is known.
    pub fn expectation(verdict: &Verdict) -> Expectation {
        Expectation::of(verdict)
    }
}

/// Autoplay: steps at the chosen speed, within a time budget per frame.
fn advance(time: Res<Time>, mut session: ResMut<Session>) {
    if !session.running || session.is_busy() {
        return;
    }
    if session.is_over() {
        session.running = false;
        return;
    }
    let speed = session.phases_per_second();
    // A long frame does not bank more than a quarter second of steps.
    session.step_credit = (session.step_credit + time.delta_secs() * speed).min(1.0 + speed / 4.0);
    let started = Instant::now();
    while session.step_credit >= 1.0 && started.elapsed() < STEP_BUDGET {
        session.step_credit -= 1.0;
        match session.step() {
            Ok(true) => {}
            Ok(false) => {
                session.running = false;
                break;
            }
            Err(error) => {
                session.running = false;
                session.warn(format!("the simulation stopped: {error}"));
                break;
            }
        }
    }
}

/// When the level ends: the verdict, the tape's expectation, and the player's progress.
fn conclude(mut session: ResMut<Session>, mut progress: ResMut<Progress>) {
    if session.conclusion.is_some() || session.is_busy() {
        return;
    }
    let Some(judged) = session.judgement().map(|judged| judged.cloned().map_err(Arc::clone)) else {
        return;
    };
    session.running = false;
    // Progress counts a finished level only in the campaign.
    let mut finished = false;
    if let (Ok(judged), Mode::Campaign) = (&judged, session.mode) {
        // A win only: never a level left alone (every level needs at least one move), and an
        // unbeatable level is finished by its defence (`defence.rs`), not by spending the hand.
        finished = judged.finished;
        let id = session.recipe.level.level.id.clone();
        progress.record(&id, judged.verdict.outcome, finished);
        if let Some(par) = judged.debrief.par.filter(|_| finished) {
            progress.record_best(&id, par.cards, par.phases);
        }
    }
    let as_expected = judged.as_ref().ok().and_then(|judged| judged.as_expected);
    let (verdict, debrief) = match judged {
        Ok(judged) => (Ok(judged.verdict), Some(judged.debrief)),
        Err(error) => (Err(error), None),
    };
    session.conclusion = Some(Conclusion {
        verdict,
        debrief,
        as_expected,
        finished,
    });
}
