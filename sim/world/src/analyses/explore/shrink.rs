//! The shrinker: a find made smaller and earlier, one re-simulated step at a time.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use super::schedule::ScheduleSpace;
use super::{ExploreError, Explorer, Found, PROGRESS_INTERVAL, Progress, SHRINK_ROUNDS_MAX, Stage};
use crate::checker::Verdict;
use crate::level::{Play, TimedAction};

/// The length of a card that lasts — a pause (`PauseWorker`) or a held apply (`DelayApply`) —
/// for the shrinker to shorten; `None` for a card that does not last.
fn lasting_ms(play: &mut Play) -> Option<&mut u32> {
    match play {
        Play::PauseWorker(pause) => Some(&mut pause.ms),
        Play::DelayApply(delay) => Some(&mut delay.ms),
        _ => None,
    }
}

impl Explorer {
    /// Delta-debugging style: drop each action that is not needed, then move each remaining
    /// action as early as it can go (never before the one ahead of it, so the tape stays in
    /// phase order), then shorten each pause or held apply by bisection (a length kept only if
    /// the goal is still reached), and repeat until a round changes nothing. Every step is re-simulated and
    /// kept only if the goal is still reached, so the result is never longer or later.
    pub(super) fn shrink(
        &self,
        space: &ScheduleSpace,
        index: u64,
        progress: &dyn Fn(Progress),
        cancel: &AtomicBool,
        started: Instant,
    ) -> Result<Found, ExploreError> {
        let (simulation_seed, dealt) = space.deal(index)?;
        let mut simulations = 0_u64;
        let mut last_report = super::driver_clock();
        let mut try_actions = |actions: &[TimedAction]| -> Result<Option<Verdict>, ExploreError> {
            if cancel.load(Ordering::Relaxed) {
                return Ok(None);
            }
            simulations += 1;
            if last_report.elapsed() >= PROGRESS_INTERVAL {
                last_report = super::driver_clock();
                progress(Progress {
                    stage: Stage::Shrinking,
                    schedules_done: simulations,
                    schedules_total: self.schedules,
                    lowest_find: Some(index),
                    elapsed: started.elapsed(),
                });
            }
            let verdict = space.simulate(index, simulation_seed, actions.to_vec())?;
            Ok(verdict.goal_reached.then_some(verdict))
        };
        // Simulated again even after a cancel, so a find always comes with its verdict: the
        // search saw this schedule reach the goal, and the same inputs must again.
        let first = space.simulate(index, simulation_seed, dealt.clone())?;
        if !first.goal_reached {
            return Err(ExploreError::NotReproducible { index });
        }
        let mut verdict = first;
        let mut actions = dealt.clone();
        for _ in 0..SHRINK_ROUNDS_MAX {
            let mut changed = false;
            let mut position = 0;
            while position < actions.len() {
                let mut without = actions.clone();
                without.remove(position);
                match try_actions(&without)? {
                    Some(shorter) => {
                        actions = without;
                        verdict = shorter;
                        changed = true;
                    }
                    None => position += 1,
                }
            }
            for position in 0..actions.len() {
                let earliest = if position == 0 {
                    0
                } else {
                    actions[position - 1].at_phase
                };
                for phase in earliest..actions[position].at_phase {
                    let mut earlier = actions.clone();
                    earlier[position].at_phase = phase;
                    if let Some(sooner) = try_actions(&earlier)? {
                        actions = earlier;
                        verdict = sooner;
                        changed = true;
                        break;
                    }
                }
            }
            for position in 0..actions.len() {
                let Some(dealt_ms) = lasting_ms(&mut actions[position].play).map(|ms| *ms) else {
                    continue;
                };
                // Bisect between a length known not to reach the goal (0: none) and one known
                // to: each length tried is kept only if the goal is still reached.
                let (mut too_short, mut enough) = (0, dealt_ms);
                while enough - too_short > 1 {
                    let middle = too_short + (enough - too_short) / 2;
                    let mut shorter = actions.clone();
                    *lasting_ms(&mut shorter[position].play).expect("the same card") = middle;
                    match try_actions(&shorter)? {
                        Some(still) => {
                            actions = shorter;
                            verdict = still;
                            enough = middle;
                            changed = true;
                        }
                        None => too_short = middle,
                    }
                }
            }
            if !changed || cancel.load(Ordering::Relaxed) {
                break;
            }
        }
        Ok(Found {
            schedule_index: index,
            simulation_seed,
            dealt,
            actions,
            verdict,
            tape_guards: (self.guards != self.level.guards).then_some(self.guards),
            shrink_simulations: simulations,
            shrink_cancelled: cancel.load(Ordering::Relaxed),
        })
    }
}
