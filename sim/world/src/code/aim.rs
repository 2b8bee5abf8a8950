//! A crash aimed at a line of the program: "kill w1 when it reaches this line". Held here, not
//! in the simulation: it is not a move yet. When the worker is about to run a phase of that
//! line, the crash is played as the ordinary move a tape records, `CrashWorker { worker,
//! in_phase }`, at that phase, so a tape of the run replays it without knowing it was aimed.
//! The play session holds the aims and fires them after every phase it runs.

use serde::Serialize;

use super::{Program, program_of};
use crate::level::{CardKind, Play};
use crate::runtime::worker::Phase;
use crate::simulator::{PlayError, Simulation};

/// One crash waiting for its worker to reach a line.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct CrashAim {
    pub worker: u32,
    /// The line (an index into the program's lines), and its code.
    pub line: usize,
    pub code: String,
    /// The phases of that line: the crash lands before the first of them the worker runs.
    pub phases: Vec<Phase>,
}

/// What aiming did.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Aimed {
    /// The worker is at that line now: the crash was played at once.
    PlayedNow { phase: Phase },
    /// The crash waits for the worker to reach the line.
    Armed,
    /// The same line was aimed at again: the aim is taken back.
    TakenBack,
}

/// What became of an aim after a phase ran.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum AimReport {
    /// The worker reached the line and was killed there.
    Crashed { worker: u32, line: usize, phase: Phase },
    /// The aim can no longer land: the worker ended first, or the move was refused.
    Dropped { worker: u32, line: usize, why: String },
}

/// Why a crash cannot be aimed there.
#[derive(Debug, thiserror::Error)]
pub enum AimError {
    #[error("no Crash a worker card left to aim")]
    NoCrashCard,
    #[error("every Crash a worker card left is already aimed; take an aim back first")]
    EveryCardAimed,
    #[error("no worker w{0} is running")]
    NoSuchWorker(u32),
    #[error("the program has no line {line} (it has {lines})", line = .0 + 1, lines = .1)]
    NoSuchLine(usize, usize),
    #[error("line {} runs no phase a worker could be killed before", .0 + 1)]
    LineRunsNoPhase(usize),
    #[error(transparent)]
    Refused(#[from] PlayError),
}

/// The crashes aimed at lines, at most one per worker.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CrashAims {
    aims: Vec<CrashAim>,
}

impl CrashAims {
    pub fn aims(&self) -> &[CrashAim] {
        &self.aims
    }

    pub fn is_empty(&self) -> bool {
        self.aims.is_empty()
    }

    /// The aim on worker `w<worker>`, if any.
    pub fn of(&self, worker: u32) -> Option<&CrashAim> {
        self.aims.iter().find(|aim| aim.worker == worker)
    }

    /// Forgets every aim (the run was rewound or restarted: the moments they waited for are gone).
    pub fn clear(&mut self) {
        self.aims.clear();
    }

    /// Aims a crash of `w<worker>` at `line` of the simulation's program: played now if the
    /// worker is about to run that line, else held until it is. Aiming at the line already
    /// aimed at takes the aim back; another line replaces it.
    pub fn aim(&mut self, simulation: &mut Simulation, worker: u32, line: usize) -> Result<Aimed, AimError> {
        if self.of(worker).is_some_and(|aim| aim.line == line) {
            self.aims.retain(|aim| aim.worker != worker);
            return Ok(Aimed::TakenBack);
        }
        let program = program_of(simulation);
        let code_line = program
            .lines
            .get(line)
            .ok_or(AimError::NoSuchLine(line, program.lines.len()))?;
        if code_line.phases.is_empty() {
            return Err(AimError::LineRunsNoPhase(line));
        }
        let view = simulation
            .workers()
            .into_iter()
            .find(|view| view.number == worker && view.alive)
            .ok_or(AimError::NoSuchWorker(worker))?;
        let cards = simulation.hand().get(&CardKind::CrashWorker).copied().unwrap_or(0);
        if cards == 0 {
            return Err(AimError::NoCrashCard);
        }
        let others = self.aims.iter().filter(|aim| aim.worker != worker).count();
        if u32::try_from(others).unwrap_or(u32::MAX) >= cards {
            return Err(AimError::EveryCardAimed);
        }
        if code_line.runs(view.phase) {
            crash(simulation, worker, view.phase)?;
            self.aims.retain(|aim| aim.worker != worker);
            return Ok(Aimed::PlayedNow { phase: view.phase });
        }
        self.aims.retain(|aim| aim.worker != worker);
        self.aims.push(CrashAim {
            worker,
            line,
            code: code_line.code.clone(),
            phases: code_line.phases.clone(),
        });
        Ok(Aimed::Armed)
    }

    /// After a phase ran: plays each aim whose worker is now at its line; drops those whose
    /// worker ended (or crashed) first.
    pub fn fire(&mut self, simulation: &mut Simulation) -> Vec<AimReport> {
        if self.aims.is_empty() {
            return Vec::new();
        }
        let workers = simulation.workers();
        let mut reports = Vec::new();
        let mut kept = Vec::new();
        for aim in std::mem::take(&mut self.aims) {
            let Some(view) = workers.iter().find(|view| view.number == aim.worker && view.alive) else {
                reports.push(AimReport::Dropped {
                    worker: aim.worker,
                    line: aim.line,
                    why: format!("w{} stopped before it reached line {}", aim.worker, aim.line + 1),
                });
                continue;
            };
            if !aim.phases.contains(&view.phase) {
                kept.push(aim);
                continue;
            }
            match crash(simulation, aim.worker, view.phase) {
                Ok(()) => reports.push(AimReport::Crashed {
                    worker: aim.worker,
                    line: aim.line,
                    phase: view.phase,
                }),
                Err(error) => reports.push(AimReport::Dropped {
                    worker: aim.worker,
                    line: aim.line,
                    why: error.to_string(),
                }),
            }
        }
        self.aims = kept;
        reports
    }

    /// The aims as lines of `program` (the program may have changed since: a declared tool).
    pub fn lines_in(&self, program: &Program) -> Vec<(u32, usize)> {
        self.aims
            .iter()
            .filter(|aim| program.lines.get(aim.line).is_some_and(|line| line.code == aim.code))
            .map(|aim| (aim.worker, aim.line))
            .collect()
    }
}

/// The crash as a tape records it: this worker, about to run this phase.
fn crash(simulation: &mut Simulation, worker: u32, phase: Phase) -> Result<(), PlayError> {
    simulation.play(Play::CrashWorker {
        worker: Some(worker),
        in_phase: Some(phase),
    })
}
