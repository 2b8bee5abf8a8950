//! Intents: everything the player can do to a level, as messages. The UI (mouse or
//! keyboard) and the headless tests send the same intents; this is the one place
//! they are carried out, and moves reach the simulator only through `Simulation::play`.

use std::path::{Path, PathBuf};

use bevy::prelude::*;
use twice_world::code::Aimed;
use twice_world::level::{self, Play, Tape};
use twice_world::play_session::{PlaySession, SessionError};
use twice_world::runtime::guards::Guards;

use super::errors::{OpenError, TapeError};
use super::jobs::{Goal, Job};
use super::news::{Leaving, SessionNews};
use super::scratch::{ScratchFile, ScratchLedgers};
use super::{Mode, Recipe, SPEEDS, Session, SessionSet, TapeSource};
use crate::campaign::Campaign;
use crate::panels::Panels;
use crate::paths::relative_path;
use crate::progress::Progress;

pub(super) fn plugin(app: &mut App) {
    app.init_resource::<OpenProblem>();
    app.init_resource::<NextBriefing>();
    app.add_systems(Update, apply_intents.in_set(SessionSet::Intents));
}

/// A player's intent.
#[derive(Message, Clone, Debug, PartialEq)]
pub enum Intent {
    /// Open a level file; with `at_phase`, run that many phases first (off the main thread).
    OpenLevel {
        path: PathBuf,
        mode: Mode,
        guards: Option<Guards>,
        seed: u64,
        at_phase: Option<u32>,
    },
    /// Open a tape in the replay viewer.
    OpenTape {
        path: PathBuf,
        at_phase: Option<u32>,
    },
    /// Play a card or an operator move.
    Play(Play),
    /// Kill worker `w<worker>` when it reaches line `line` of the code (an index into the
    /// program's lines): the crash card, aimed at a line. The same line again takes it back.
    AimCrash {
        worker: u32,
        line: usize,
    },
    /// Run one phase of one actor.
    Step,
    SetRunning(bool),
    ToggleRunning,
    /// Up or down the speed list.
    ChangeSpeed(i32),
    /// Go back to the state after `phase` phases (re-simulated from the seed and the moves before it).
    Rewind {
        phase: u32,
    },
    Restart,
    RunToEnd,
    SaveTape {
        path: PathBuf,
    },
    Debrief,
    /// Open the next tier of the level's hints (a nudge, the idea, the move); recorded in progress.
    OpenHint,
    /// Back to the level screen from the debrief.
    Resume,
    /// The debrief's Next: close this level and show the next open level's briefing on the
    /// level select (never straight into play).
    NextBriefing,
    /// Skip the guided first moves (they are not shown again).
    SkipGuide,
    /// Close the level: back where it was opened from, or on to the campaign's ending.
    Leave(Leaving),
}

/// Why the last attempt to open a level or tape failed (shown by the screen that asked).
#[derive(Debug, Default, Resource)]
pub struct OpenProblem(pub Option<String>);

/// The level whose briefing the level select opens on (set by the debrief's Next; taken
/// when the level select opens).
#[derive(Debug, Default, Resource)]
pub struct NextBriefing {
    /// The level the level select opens on.
    pub index: Option<usize>,
    /// It is the next level to play (the debrief's Next), not yet finished: "Next up" is
    /// said over it. Leaving a defence opens on the level defended, which is no such thing.
    pub next_up: bool,
    /// The chapter of the level just played, when that level finished it: said too.
    pub chapter_done: Option<u32>,
}

#[allow(clippy::too_many_arguments)]
fn apply_intents(
    mut intents: MessageReader<Intent>,
    mut commands: Commands,
    mut session: Option<ResMut<Session>>,
    mut news: MessageWriter<SessionNews>,
    mut scratch: ResMut<ScratchLedgers>,
    mut open_problem: ResMut<OpenProblem>,
    campaign: Res<Campaign>,
    mut progress: ResMut<Progress>,
    mut next_briefing: ResMut<NextBriefing>,
) {
    for intent in intents.read() {
        match intent {
            Intent::OpenLevel { .. } | Intent::OpenTape { .. } => {
                let opened = open_for(intent, &mut scratch, &campaign, &mut progress);
                match opened {
                    Ok(opened) => {
                        open_problem.0 = None;
                        commands.insert_resource(opened);
                        news.write(SessionNews::Opened);
                        // The new session exists from the next frame; later intents wait for it.
                        return;
                    }
                    Err(problem) => {
                        let problem = problem.to_string();
                        if let Some(session) = session.as_deref_mut() {
                            session.warn(problem.clone());
                        }
                        open_problem.0 = Some(problem);
                    }
                }
            }
            Intent::Leave(leaving) => {
                let Some(mode) = session.as_deref().map(|session| session.mode) else {
                    warn!("leaving needs an open level; none is open");
                    continue;
                };
                // Dropping the session cancels its job and deletes its scratch ledger.
                commands.remove_resource::<Session>();
                news.write(SessionNews::Closed {
                    mode,
                    leaving: *leaving,
                });
                return;
            }
            Intent::NextBriefing => {
                let played = session
                    .as_deref()
                    .filter(|session| session.mode == Mode::Campaign)
                    .and_then(|session| session.campaign_index);
                let next = played.and_then(|index| campaign.next_up_after(index, &progress));
                match (next, session.as_deref_mut()) {
                    (Some(index), _) => {
                        *next_briefing = NextBriefing {
                            index: Some(index),
                            next_up: true,
                            chapter_done: played.and_then(|played| campaign.chapter_done(played, &progress)),
                        };
                        // Dropping the session cancels its job and deletes its scratch ledger.
                        commands.remove_resource::<Session>();
                        news.write(SessionNews::ClosedForTheNextBriefing);
                        return;
                    }
                    (None, Some(session)) => session.warn("No level is left to play: every open level is finished."),
                    (None, None) => warn!("the next level's briefing needs an open campaign level; none is open"),
                }
            }
            Intent::OpenHint => match session.as_deref_mut() {
                Some(session) => {
                    let level = &session.recipe.level.level;
                    let tiers = u32::try_from(level.hints.tiers().len()).unwrap_or(u32::MAX);
                    if tiers == 0 {
                        session.warn("This level has no hints.");
                    } else {
                        let id = level.id.clone();
                        let before = progress.hints_opened(&id);
                        let opened = progress.open_hint(&id, tiers);
                        if opened == before {
                            session.tell("Every hint of this level is open.");
                        } else {
                            session.tell(format!("Hint {opened} of {tiers} open."));
                        }
                    }
                }
                None => warn!("a hint needs an open level; none is open"),
            },
            other => match session.as_deref_mut() {
                Some(session) => apply_to_session(other, session, &mut scratch, &mut news),
                None => warn!("intent {other:?} needs an open level; none is open"),
            },
        }
    }
}

/// Opens what an `OpenLevel` or `OpenTape` intent names; the error is the problem as the
/// player reads it.
fn open_for(
    intent: &Intent,
    scratch: &mut ScratchLedgers,
    campaign: &Campaign,
    progress: &mut Progress,
) -> Result<Session, OpenError> {
    match intent {
        Intent::OpenLevel {
            path,
            mode,
            guards,
            seed,
            at_phase,
        } => {
            let loaded = level::load_level(path).map_err(|source| OpenError::Level {
                path: path.clone(),
                source,
            })?;
            let recipe = Recipe {
                level: loaded,
                seed: *seed,
                guards: *guards,
                tape: None,
            };
            open(recipe, *mode, *at_phase, scratch, campaign, progress).map_err(|source| OpenError::Session {
                path: path.clone(),
                source: Box::new(source),
            })
        }
        Intent::OpenTape { path, at_phase } => {
            let loaded = level::load_tape(path).map_err(OpenError::Tape)?;
            let recipe = Recipe {
                level: loaded.level,
                seed: loaded.tape.seed,
                guards: loaded.tape.guards,
                tape: Some(TapeSource {
                    path: loaded.path,
                    tape: loaded.tape,
                }),
            };
            open(recipe, Mode::Replay, *at_phase, scratch, campaign, progress)
                .map_err(|source| OpenError::TapeSession(Box::new(source)))
        }
        other => Err(OpenError::NotAnOpening {
            intent: format!("{other:?}"),
        }),
    }
}

/// Builds the session for a recipe, at phase 0 (or a job takes it to `at_phase`).
fn open(
    recipe: Recipe,
    mode: Mode,
    at_phase: Option<u32>,
    scratch: &mut ScratchLedgers,
    campaign: &Campaign,
    progress: &mut Progress,
) -> Result<Session, SessionError> {
    let ledger_file = scratch.next_file(&recipe.level.level.id);
    let play = PlaySession::open(mode, recipe.clone(), ledger_file.as_ref().map(ScratchFile::path))?;
    let campaign_index = campaign.find_path(&recipe.level.path);
    let mut session = Session::new(play, campaign_index, ledger_file);
    session.position = campaign_index.map(|index| campaign.position(index));
    // The campaign shows its panels chapter by chapter; the sandbox, the replay viewer and
    // `--unlock-all` show them all. A panel's first appearance is noted once.
    if mode == Mode::Campaign && !campaign.unlock_all {
        let mut panels = Panels::for_level(&recipe.level.level);
        let new = progress.note_panels_seen(panels.shown().iter().map(|panel| panel.id()));
        panels.new = panels
            .shown()
            .iter()
            .copied()
            .filter(|panel| new.iter().any(|id| id == panel.id()))
            .collect();
        session.panels = panels;
    }
    if let Some(problem) = &scratch.problem {
        session.warn(format!("The ledger runs in memory: {problem}"));
    }
    if let Some(phase) = at_phase.filter(|phase| *phase > 0) {
        let actions = session.actions_before(0);
        session.job = Some(Job::show(
            recipe,
            actions,
            Goal::Phase(phase),
            scratch.next_file(&session.recipe.level.level.id),
        ));
    }
    Ok(session)
}

fn apply_to_session(
    intent: &Intent,
    session: &mut Session,
    scratch: &mut ScratchLedgers,
    news: &mut MessageWriter<SessionNews>,
) {
    // Moves wait for nothing, but they must not race a re-simulation that will replace the state.
    let needs_quiet = matches!(
        intent,
        Intent::Play(_)
            | Intent::AimCrash { .. }
            | Intent::Step
            | Intent::Rewind { .. }
            | Intent::Restart
            | Intent::RunToEnd
            | Intent::SaveTape { .. }
    );
    if needs_quiet && let Some(job) = &session.job {
        let busy = job.describe();
        session.warn(format!("One moment: {busy}"));
        return;
    }
    match intent {
        Intent::Play(play) => {
            if session.mode == Mode::Replay {
                session.warn("This is a tape replay: its moves are fixed. Open the level to play your own.");
                return;
            }
            let card = play.card().title();
            match session.play(play.clone()) {
                Ok(()) => match session.lost_race(play) {
                    // A compare-and-set lost: the move is made, and the ledger refused it.
                    Some(conflict) => session.warn(format!("{card}: {conflict}")),
                    None => session.tell(format!("Played: {card}")),
                },
                Err(error) => session.warn(format!("{card}: {error}")),
            }
        }
        Intent::AimCrash { worker, line } => aim_crash(session, *worker, *line),
        Intent::Step => {
            session.running = false;
            if session.is_over() {
                session.warn(over_words(session));
                return;
            }
            if let Err(error) = session.step() {
                session.warn(format!("The simulation stopped: {error}"));
            }
        }
        Intent::SetRunning(running) => set_running(session, *running),
        Intent::ToggleRunning => {
            let running = !session.running;
            set_running(session, running);
        }
        Intent::ChangeSpeed(change) => {
            let last = SPEEDS.len() as i64 - 1;
            session.speed = (session.speed as i64 + i64::from(*change)).clamp(0, last) as usize;
            let speed = session.phases_per_second();
            session.tell(format!("Speed: {speed} phases per second"));
        }
        Intent::Rewind { phase } => rewind(session, scratch, *phase),
        Intent::Restart => restart(session, scratch),
        Intent::RunToEnd => run_to_end(session, scratch),
        Intent::SaveTape { path } => match tape_for(session, path) {
            Ok(tape) => session.job = Some(Job::save_tape(session.recipe.clone(), tape, path.clone())),
            Err(error) => session.warn(error.to_string()),
        },
        Intent::Debrief => {
            if session.is_concluded() {
                session.running = false;
                news.write(SessionNews::DebriefAsked);
            } else if session.is_over() {
                session.warn(over_words(session));
            } else {
                session.warn("The level is not over yet: play on, or run it to the end (E).");
            }
        }
        Intent::Resume => {
            news.write(SessionNews::Resumed);
        }
        // Carried out above, or by the guide (`crate::guide`).
        Intent::OpenLevel { .. }
        | Intent::OpenTape { .. }
        | Intent::Leave(_)
        | Intent::OpenHint
        | Intent::NextBriefing
        | Intent::SkipGuide => {}
    }
}

/// A crash aimed at a line: played now if the worker is there, else when it gets there.
fn aim_crash(session: &mut Session, worker: u32, line: usize) {
    let number = line + 1;
    match session.aim_crash(worker, line) {
        Ok(Aimed::PlayedNow { phase }) => session.tell(format!(
            "Played: Crash a worker — w{worker} is killed at line {number}, about to {phase}"
        )),
        Ok(Aimed::Armed) => session.tell(format!(
            "Aimed: w{worker} will be killed when it reaches line {number} (the card is played then)"
        )),
        Ok(Aimed::TakenBack) => session.tell(format!("Taken back: w{worker} is no longer aimed at line {number}")),
        Err(error) => session.warn(format!("Crash a worker: {error}")),
    }
}

/// Back to the state after `phase` phases: re-simulated on a thread from the moves before it.
fn rewind(session: &mut Session, scratch: &mut ScratchLedgers, phase: u32) {
    let current = session.simulation().phase();
    if phase > current {
        session.warn(format!(
            "Phase {phase} has not happened yet (now: {current}); step or play on."
        ));
        return;
    }
    session.running = false;
    // A decision made over HTTP is not a move: a re-simulation cannot repeat it. Say so
    // on screen and ask first; the same rewind asked again goes ahead.
    if session.rewind_asked != Some(phase) {
        let warning = match session.outside_decisions() {
            Ok(0) => None,
            Ok(decisions) => Some(rewind_warning(decisions, phase)),
            Err(error) => Some(format!(
                "Cannot tell whether rewinding undoes decisions made over the HTTP API ({error}). Rewind to \
                 phase {phase} again to go ahead."
            )),
        };
        if let Some(warning) = warning {
            session.rewind_asked = Some(phase);
            session.warn(warning);
            return;
        }
    }
    session.rewind_asked = None;
    let actions = session.actions_before(phase);
    let file = scratch.next_file(&session.recipe.level.level.id);
    session.job = Some(Job::show(session.recipe.clone(), actions, Goal::Phase(phase), file));
}

/// Phase 0 again, with a fresh ledger file.
fn restart(session: &mut Session, scratch: &mut ScratchLedgers) {
    session.running = false;
    let actions = session.actions_before(0);
    let file = scratch.next_file(&session.recipe.level.level.id);
    match session.recipe.build(actions, file.as_ref().map(ScratchFile::path)) {
        Ok(simulation) => {
            let ledger = super::ledger_view::LedgerView::read(simulation.ledger());
            session.replace(simulation, file, ledger);
            session.tell("Restarted from phase 0 with a fresh ledger file.");
        }
        Err(error) => session.warn(format!("Cannot restart: {error}")),
    }
}

/// The warning before a rewind would undo `decisions` made over the HTTP API, counted in words.
fn rewind_warning(decisions: u32, phase: u32) -> String {
    let (undone, they, moves, them) = if decisions == 1 {
        ("1 decision".to_owned(), "it is", "your move", "it")
    } else {
        (format!("{decisions} decisions"), "they are", "your moves", "them")
    };
    format!(
        "Rewinding undoes {undone} made over the HTTP API: {they} not {moves}, so a re-simulation cannot \
         repeat {them}. Rewind to phase {phase} again to go ahead."
    )
}

/// Runs the level to its end: re-simulated on a thread, or in place after an operator's HTTP
/// decision (which a re-simulation could not repeat).
fn run_to_end(session: &mut Session, scratch: &mut ScratchLedgers) {
    if session.is_over() {
        return;
    }
    session.running = false;
    // Unreadable counts as made: running on in place loses nothing either way. A crash aimed
    // at a line is not a move yet: a re-simulation from the moves would not know it either.
    if !matches!(session.outside_decisions(), Ok(0)) || !session.crash_aims().is_empty() {
        // An operator's HTTP decision is not a move a re-simulation could repeat:
        // this simulation runs on in place (a level has at most `max_phases`).
        for _ in 0..=session.recipe.level.level.max_phases {
            match session.step() {
                Ok(true) => {}
                Ok(false) => break,
                Err(error) => {
                    session.warn(format!("Cannot run on: {error}"));
                    break;
                }
            }
        }
        return;
    }
    let actions = session.all_actions();
    let file = scratch.next_file(&session.recipe.level.level.id);
    session.job = Some(Job::show(session.recipe.clone(), actions, Goal::End, file));
}

/// What a quiet level says when asked to go on: over, or waiting for the player's operator move.
fn over_words(session: &Session) -> String {
    let waiting = session.moves_that_still_matter().unwrap_or_default();
    if waiting.is_empty() {
        "The level is over: open the debrief (Enter), rewind, or restart.".into()
    } else {
        let cards: Vec<&str> = waiting.iter().map(|card| card.title()).collect();
        format!(
            "Penny waits for an operator: you still hold {} and it can change this. Select the call in the operator console.",
            cards.join(" and ")
        )
    }
}

fn set_running(session: &mut Session, running: bool) {
    if running && session.is_over() {
        session.warn(over_words(session));
        return;
    }
    session.running = running;
}

/// The tape of this session, to be saved at `path` (its `expect` is filled in by the job).
fn tape_for(session: &Session, path: &Path) -> Result<Tape, TapeError> {
    let name = path
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_default();
    if !name.ends_with(twice_world::campaign::TAPE_SUFFIX) || name.len() <= twice_world::campaign::TAPE_SUFFIX.len() {
        return Err(TapeError::FileName {
            path: path.to_path_buf(),
        });
    }
    if path.exists() {
        return Err(TapeError::Exists {
            path: path.to_path_buf(),
        });
    }
    let folder = path
        .parent()
        .filter(|folder| !folder.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    // The tape names its level relative to its own folder, so the folder must exist to be measured from.
    std::fs::create_dir_all(folder).map_err(|source| TapeError::Folder {
        folder: folder.to_path_buf(),
        source,
    })?;
    let level = &session.recipe.level;
    Ok(session.recipe.tape(
        session.mode,
        session.simulation().played(),
        relative_path(folder, &level.path).display().to_string(),
        format!("{} — played in the {}", level.level.title, session.mode.name()),
    ))
}

#[cfg(test)]
mod tests {
    use super::rewind_warning;

    #[test]
    fn the_rewind_warning_counts_the_decisions_in_words() {
        assert_eq!(
            rewind_warning(1, 7),
            "Rewinding undoes 1 decision made over the HTTP API: it is not your move, so a re-simulation \
             cannot repeat it. Rewind to phase 7 again to go ahead."
        );
        assert_eq!(
            rewind_warning(3, 2),
            "Rewinding undoes 3 decisions made over the HTTP API: they are not your moves, so a \
             re-simulation cannot repeat them. Rewind to phase 2 again to go ahead."
        );
    }
}
