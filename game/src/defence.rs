//! Defender mode: an unbeatable level played from the other side. The player starts with
//! every guard off, switches on as few as they can (at most the level's budget) and asks the
//! game to check them: `twice_world::defend::check`, the same check `twice-sim defend` runs —
//! Penny left alone, every shipped heist tape of this chapter and the ones before it whose
//! moves are legal here, then the explorer's search. The check runs on its own thread (it is
//! bounded by [`twice_world::defend::DEFENCE_SCHEDULES`] and takes about a second), so the
//! window keeps drawing and the player can cancel. A defence that holds is recorded in
//! progress and finishes the level.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use bevy::prelude::*;
use twice_world::defend::{self, DefenceReport, DefendError};
use twice_world::level::{self, LoadedLevel};
use twice_world::runtime::guards::Guard;
use twice_world::simulator::Simulation;

use crate::campaign::Campaign;
use crate::progress::Progress;
use crate::session::Session;

pub(super) fn plugin(app: &mut App) {
    app.add_message::<DefenceIntent>();
    app.add_message::<DefenceOpened>();
    // Poll before taking intents: a check asked for in this frame is looked at from the next
    // frame on, so the frame that asks for it always shows it running (a check fast enough to
    // end within the frame was taken before anything drew it, and tests asking for it raced).
    app.add_systems(Update, (poll_check, apply_intents).chain());
}

/// A level is being defended (the defence exists from the next frame): the screens answer it
/// by showing the defender's screen; leaving that screen closes the defence ([`close`]).
#[derive(Message, Clone, Copy, Debug, PartialEq, Eq)]
pub struct DefenceOpened;

/// The key that switches `guard` in defender mode and the sandbox: its own, from its place in
/// the guards' registry (`twice_world::guards`), so every guard has one.
pub fn guard_key(guard: Guard) -> &'static str {
    twice_world::guards::defender_key(guard)
}

/// The guard a key switches, if any.
pub fn guard_for_key(key: &str) -> Option<Guard> {
    twice_world::guards::guard_for_key(key).filter(|guard| Guard::ALL.contains(guard))
}

/// What the player does in defender mode (the screen's buttons and keys, and headless tests).
#[derive(Message, Clone, Debug, PartialEq, Eq)]
pub enum DefenceIntent {
    /// Defend this campaign level (an unbeatable one); closes any open level.
    Open { index: usize },
    /// Switch a guard on or off (on only within the budget).
    Toggle(Guard),
    /// Check the guards that are on now.
    Check,
    /// Stop a check in flight.
    Cancel,
    /// Open the last check's counter-example as a run (its timeline), or close it (O).
    ToggleCounterExample,
}

/// The counter-example's run, simulated again from its tape (`CounterExample::simulation`) to
/// show its timeline: the schedule that beat the defence, move by move.
#[derive(Debug)]
pub struct CounterRun {
    /// Where it came from and what it did: "the explorer's schedule 17: paid twice".
    pub title: String,
    /// `Simulation` is `Send` but not `Sync`; the lock makes it part of a resource. (How its
    /// timeline is drawn, the drawing's cache included, is the defend screen's business.)
    pub simulation: Mutex<Simulation>,
}

/// The level being defended and the player's guards.
#[derive(Debug, Resource)]
pub struct Defence {
    /// Index into [`Campaign::levels`].
    pub index: usize,
    pub level: LoadedLevel,
    /// The guards switched on, in teaching order.
    pub on: BTreeSet<Guard>,
    pub check: Option<DefenceCheck>,
    /// The last check's answer (or why it could not run).
    pub result: Option<Result<Checked, DefenceError>>,
    /// A line for the player (a refused toggle, a cancelled check).
    pub notice: Option<String>,
    /// The last check's counter-example, opened as a run.
    pub counter_run: Option<CounterRun>,
}

impl Defence {
    /// The most guards the player may switch on.
    pub fn budget(&self) -> u32 {
        self.level
            .level
            .defender
            .as_ref()
            .map_or(Guard::ALL.len() as u32, |defender| defender.budget)
    }

    /// The smallest defence known (stored in the level, checked by the campaign's tests).
    pub fn minimum(&self) -> &[Guard] {
        self.level
            .level
            .defender
            .as_ref()
            .map_or(&[][..], |defender| defender.minimum.as_slice())
    }

    pub fn is_checking(&self) -> bool {
        self.check.is_some()
    }

    /// The last report, if it checked exactly the guards that are on now.
    pub fn current_report(&self) -> Option<&DefenceReport> {
        match &self.result {
            Some(Ok(checked)) if checked.report.on.iter().copied().eq(self.on.iter().copied()) => Some(&checked.report),
            _ => None,
        }
    }
}

/// Why a check gave no answer.
#[derive(Debug, thiserror::Error)]
pub enum DefenceError {
    #[error("cannot start a thread for the check: {0}")]
    Thread(#[source] std::io::Error),
    #[error("the defence check panicked")]
    Panicked,
    #[error("the check was cancelled")]
    Cancelled,
    /// The check itself failed (a heist tape that cannot be simulated or judged, say).
    #[error(transparent)]
    Check(#[from] DefendError),
}

/// A finished check.
#[derive(Clone, Debug)]
pub struct Checked {
    pub report: DefenceReport,
    /// Tape files that did not load (not counted as heists; shown).
    pub skipped_tapes: Vec<String>,
    pub took: Duration,
}

/// A check in flight, on its own thread.
#[derive(Debug)]
pub struct DefenceCheck {
    pub on: Vec<Guard>,
    pub started: Instant,
    cancelled: Arc<AtomicBool>,
    handle: Option<JoinHandle<Result<Checked, DefenceError>>>,
}

impl DefenceCheck {
    fn start(level: LoadedLevel, tapes: Vec<PathBuf>, on: Vec<Guard>) -> Result<DefenceCheck, DefenceError> {
        let cancelled = Arc::new(AtomicBool::new(false));
        let flag = cancelled.clone();
        let guards = on.clone();
        let handle = std::thread::Builder::new()
            .name("twice-defend".into())
            .spawn(move || run_check(&level, &tapes, &guards, &flag))
            .map_err(DefenceError::Thread)?;
        Ok(DefenceCheck {
            on,
            started: Instant::now(),
            cancelled,
            handle: Some(handle),
        })
    }

    fn is_finished(&self) -> bool {
        self.handle.as_ref().is_none_or(JoinHandle::is_finished)
    }

    fn take_result(&mut self) -> Result<Checked, DefenceError> {
        match self.handle.take() {
            Some(handle) => handle.join().unwrap_or(Err(DefenceError::Panicked)),
            None => Err(DefenceError::Cancelled),
        }
    }
}

impl Drop for DefenceCheck {
    fn drop(&mut self) {
        // A dropped check (cancelled, or the screen left) stops at the explorer's next schedule.
        self.cancelled.store(true, Ordering::Relaxed);
    }
}

/// The check itself: the campaign's tapes read now (so a tape saved a minute ago counts),
/// the heists among them that fit this level, then `defend::check`.
fn run_check(
    level: &LoadedLevel,
    tapes: &[PathBuf],
    on: &[Guard],
    cancelled: &AtomicBool,
) -> Result<Checked, DefenceError> {
    let started = Instant::now();
    let mut loaded = Vec::with_capacity(tapes.len());
    let mut skipped_tapes = Vec::new();
    for path in tapes {
        if cancelled.load(Ordering::Relaxed) {
            return Err(DefenceError::Cancelled);
        }
        match level::load_tape(path) {
            Ok(tape) => loaded.push(tape),
            Err(error) => skipped_tapes.push(error.to_string()),
        }
    }
    let campaign = twice_world::campaign::Campaign {
        levels: Vec::new(),
        tapes: loaded,
    };
    let heists = defend::heists(&campaign, &level.level);
    let report = defend::check(level, &heists, on, defend::Search::default(), cancelled)?;
    if cancelled.load(Ordering::Relaxed) {
        return Err(DefenceError::Cancelled);
    }
    Ok(Checked {
        report,
        skipped_tapes,
        took: started.elapsed(),
    })
}

pub(crate) fn apply_intents(
    mut commands: Commands,
    mut intents: MessageReader<DefenceIntent>,
    defence: Option<ResMut<Defence>>,
    campaign: Res<Campaign>,
    progress: Res<Progress>,
    mut opened: MessageWriter<DefenceOpened>,
) {
    let mut defence = defence;
    for intent in intents.read() {
        match intent {
            DefenceIntent::Open { index } => {
                let Some(loaded) = campaign.levels.get(*index) else {
                    warn!("defender mode: no level {index} in the campaign");
                    continue;
                };
                if !loaded.level.unbeatable || loaded.level.defender.is_none() {
                    warn!("defender mode: `{}` is not an unbeatable level", loaded.level.id);
                    continue;
                }
                if !campaign.is_unlocked(*index, &progress) {
                    warn!("defender mode: `{}` is locked", loaded.level.id);
                    continue;
                }
                // Dropping a level's session cancels its job and deletes its scratch ledger.
                commands.remove_resource::<Session>();
                commands.insert_resource(Defence {
                    index: *index,
                    level: loaded.clone(),
                    on: BTreeSet::new(),
                    check: None,
                    result: None,
                    notice: None,
                    counter_run: None,
                });
                opened.write(DefenceOpened);
                // The defence exists from the next frame; later intents wait for it.
                return;
            }
            other => {
                let Some(defence) = defence.as_deref_mut() else {
                    warn!("{other:?} needs a level being defended; none is");
                    continue;
                };
                apply(other, defence, &campaign);
            }
        }
    }
}

fn apply(intent: &DefenceIntent, defence: &mut Defence, campaign: &Campaign) {
    match intent {
        DefenceIntent::Open { .. } => {}
        DefenceIntent::Toggle(guard) => {
            // Another set of guards: the counter-example beat the old one.
            defence.counter_run = None;
            if defence.on.remove(guard) {
                defence.notice = None;
            } else if defence.on.len() >= defence.budget() as usize {
                defence.notice = Some(format!(
                    "The budget is {} guards: switch one off before {} goes on.",
                    defence.budget(),
                    twice_world::guards::words(*guard)
                ));
            } else {
                defence.on.insert(*guard);
                defence.notice = None;
            }
        }
        DefenceIntent::Check => {
            if defence.is_checking() {
                defence.notice = Some("A check is running: wait for it, or cancel it.".into());
                return;
            }
            let on: Vec<Guard> = defence.on.iter().copied().collect();
            match DefenceCheck::start(defence.level.clone(), campaign.tapes.clone(), on) {
                Ok(check) => {
                    defence.check = Some(check);
                    defence.notice = None;
                }
                Err(error) => defence.result = Some(Err(error)),
            }
        }
        DefenceIntent::Cancel => {
            if defence.check.take().is_some() {
                defence.notice = Some("Check cancelled.".into());
            }
        }
        DefenceIntent::ToggleCounterExample => toggle_counter_run(defence),
    }
}

/// Opens the current report's counter-example as a run (or closes the one open).
fn toggle_counter_run(defence: &mut Defence) {
    if defence.counter_run.take().is_some() {
        return;
    }
    let Some(counter) = defence
        .current_report()
        .and_then(|report| report.counter_example.as_ref())
    else {
        defence.notice = Some("No counter-example to open: check the guards, and one that falls shows it.".into());
        return;
    };
    match counter.simulation(&defence.level.level) {
        Ok(simulation) => {
            defence.counter_run = Some(CounterRun {
                title: format!(
                    "{}: {} in {} phases",
                    counter.source_words(),
                    counter.outcome,
                    simulation.phase()
                ),
                simulation: Mutex::new(simulation),
            });
            defence.notice = None;
        }
        Err(error) => defence.notice = Some(format!("The counter-example could not be simulated again: {error}")),
    }
}

/// Takes a finished check's answer; a defence that holds is recorded in progress.
fn poll_check(defence: Option<ResMut<Defence>>, mut progress: ResMut<Progress>) {
    let Some(mut defence) = defence else {
        return;
    };
    let Some(check) = defence.check.as_mut() else {
        return;
    };
    if !check.is_finished() {
        return;
    }
    let result = check.take_result();
    defence.check = None;
    defence.counter_run = None;
    if let Ok(checked) = &result
        && checked.report.holds()
    {
        let id = defence.level.level.id.clone();
        progress.record_defended(&id, &checked.report.on);
    }
    defence.result = Some(result);
}

/// Drops the defence (and any check in flight with it).
pub(crate) fn close(mut commands: Commands) {
    commands.remove_resource::<Defence>();
}

#[cfg(test)]
mod key_tests {
    use super::*;

    #[test]
    fn every_guard_has_a_key_egui_knows_and_no_two_share_one() {
        let mut seen = Vec::new();
        for guard in Guard::ALL {
            let key = guard_key(guard);
            assert!(
                bevy_egui::egui::Key::from_name(key).is_some(),
                "{guard}'s key {key:?} is no key egui knows"
            );
            assert!(!seen.contains(&key), "{key:?} switches two guards");
            seen.push(key);
            assert_eq!(guard_for_key(key), Some(guard));
        }
    }
}
