//! Playing on freely, once a runtime left the expected run's path (or went on after it ended):
//! one thing at a time, the oldest first — a request on the wire reaches billing, an answer
//! its worker, a lost one's attempt times out, the process that reached its step first goes
//! ahead, a parked process that something could have settled is woken, a crashed run is
//! recovered — until nothing is left to do, or [`super::FREE_ACTIONS_MAX`] things were done.
//! The level's clock moves by the simulator's costs. The moves of the tape still to come are
//! not played: they were aimed at moments of the expected run.

use super::{Conductor, FREE_ACTIONS_MAX, Held, State};

/// The level's clock advances by roughly what the simulator charges (milliseconds).
const MODEL_MS: u64 = 30;
const STEP_MS: u64 = 2;

impl Conductor<'_> {
    pub(super) async fn play_freely(&mut self) {
        let mut done = 0;
        loop {
            self.settle().await;
            if self.broken.is_some() {
                return;
            }
            if done >= FREE_ACTIONS_MAX {
                self.note(format!(
                    "-- stopped after {FREE_ACTIONS_MAX} steps played freely: the runtime was still going"
                ));
                self.free_limit_reached = true;
                return;
            }
            if !self.free_action().await {
                return;
            }
            done += 1;
        }
    }

    fn oldest(&self, held: impl Fn(&Held) -> bool) -> Option<u64> {
        self.exchanges
            .iter()
            .find(|(_, exchange)| exchange.attempt.is_some() && held(&exchange.held))
            .map(|(id, _)| *id)
    }

    /// Does the next thing; false when nothing is left.
    async fn free_action(&mut self) -> bool {
        let latency = u64::from(self.level.world.latency_ms);
        if let Some(exchange) = self.oldest(|held| *held == Held::Request) {
            self.now_ms += latency;
            self.forward(exchange);
            return true;
        }
        if let Some(exchange) = self.oldest(|held| matches!(held, Held::Answer { .. })) {
            self.now_ms += latency;
            self.give_answer(exchange);
            return true;
        }
        if let Some(exchange) = self.oldest(|held| matches!(held, Held::LostRequest | Held::LostAnswer)) {
            self.now_ms += u64::from(self.level.world.timeout_ms);
            self.time_out(exchange);
            return true;
        }
        let first = self
            .procs
            .iter()
            .filter(|(_, proc)| matches!(proc.state, State::AtMark(_) | State::AtModel(_)))
            .min_by_key(|(_, proc)| proc.gate_order)
            .map(|(worker, proc)| (*worker, proc.state.clone(), proc.spawn.run.clone()));
        if let Some((worker, state, run)) = first {
            match state {
                State::AtModel(transcript) => {
                    self.now_ms += MODEL_MS;
                    match self.model.decide(&run, &transcript, None) {
                        Ok((decision, _, _)) => self.decide(worker, decision).await,
                        Err(unknown) => {
                            self.break_run(Some(worker), format!("w{worker} asked the model, but {unknown}"))
                        }
                    }
                }
                _ => {
                    self.now_ms += STEP_MS;
                    self.go(worker).await;
                }
            }
            return true;
        }
        let changes = self.changes;
        if let Some(worker) = self
            .procs
            .iter()
            .find(|(_, proc)| proc.state == State::Parked && proc.parked_at < changes)
            .map(|(worker, _)| *worker)
        {
            self.now_ms += STEP_MS;
            self.wake(worker).await;
            return true;
        }
        self.recover_a_crashed_run().await
    }

    /// A run whose last process was killed, with no other process on it, is picked up by a
    /// fresh one (as the level's supervisor does), if the level restarts crashed runs.
    async fn recover_a_crashed_run(&mut self) -> bool {
        let Some(after_ms) = self.level.world.restart_after_crash_ms else {
            return false;
        };
        let mut last_of_run: std::collections::BTreeMap<(String, u32), (u32, bool)> = std::collections::BTreeMap::new();
        for (worker, proc) in &self.procs {
            let key = (proc.spawn.run.clone(), proc.spawn.node);
            let killed = matches!(proc.state, State::Gone { killed: true });
            let gone = matches!(proc.state, State::Gone { .. });
            let entry = last_of_run.entry(key).or_insert((*worker, killed));
            if !gone {
                *entry = (u32::MAX, false);
            } else if entry.0 != u32::MAX && *worker > entry.0 {
                *entry = (*worker, killed);
            }
        }
        let Some(((run, node), _)) = last_of_run
            .into_iter()
            .find(|(_, (worker, killed))| *worker != u32::MAX && *killed)
        else {
            return false;
        };
        let worker = self.procs.keys().max().copied().unwrap_or(0) + 1;
        if worker > twice_world::simulator::WORKERS_MAX {
            return false;
        }
        self.now_ms += u64::from(after_ms);
        let spawn = super::super::expected::Spawn {
            worker,
            run,
            node,
            recovering: true,
        };
        self.start_process(&spawn).await;
        true
    }
}
