//! A worker stopped as SIGSTOP stops a process: for a while it runs nothing. Whatever the queue
//! holds for it — its next phase, its timers, an answer addressed to it, a wake — waits until
//! it resumes, and then runs in the order it came due; everything else goes on, so the
//! ledger's clock runs and a lease it holds can run out while it still has a request in
//! flight (a second worker may then take its call).

use super::clock::Event;
use super::network::Direction;
use super::timeline::Actor;
use super::{PlayError, Simulation};

/// The longest a worker may be stopped, in ms of simulated time: ten minutes, longer than any
/// level's timeout, lease or recovery wait, so every story a pause tells fits; a tape asking for
/// more is refused when it loads.
pub const PAUSE_MS_MAX: u32 = 600_000;

/// A worker's pause: when it ends, and what waited for it meanwhile (in words).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Paused {
    pub(super) until_ms: u64,
    pub(super) stopped_for_ms: u32,
    pub(super) held: Vec<String>,
}

impl Simulation {
    /// Stops worker `w<number>` (alive, not stopped already) for `ms` of simulated time.
    /// Answers when it resumes.
    pub(crate) fn pause(&mut self, number: u32, ms: u32) -> Result<u64, PlayError> {
        assert!(ms > 0 && ms <= PAUSE_MS_MAX, "a pause is checked when its move is read");
        if self.alive_worker_phase(number).is_none() {
            return Err(PlayError::NoSuchWorker(number));
        }
        if let Some(until_ms) = self.paused_until(number) {
            return Err(PlayError::AlreadyPaused {
                worker: number,
                until_ms,
            });
        }
        let until_ms = self.clock.now_ms + u64::from(ms);
        let slot = self.workers.slots.get_mut(&number).expect("checked alive");
        slot.paused = Some(Box::new(Paused {
            until_ms,
            stopped_for_ms: ms,
            held: Vec::new(),
        }));
        self.workers.paused += 1;
        // Scheduled now, so it runs before anything held for the worker at the same time.
        self.clock.schedule(until_ms, Event::Resume { worker: number });
        Ok(until_ms)
    }

    /// When worker `w<number>` resumes, if it is stopped now.
    pub fn paused_until(&self, number: u32) -> Option<u64> {
        self.workers
            .slots
            .get(&number)
            .and_then(|slot| slot.paused.as_ref())
            .map(|paused| paused.until_ms)
    }

    /// The worker `event` is for, when that worker is stopped: the event waits for it. Asked of
    /// every event only while some worker is stopped (the hot path pays one comparison).
    pub(super) fn held_for(&self, event: &Event) -> Option<u32> {
        let worker = match event {
            Event::Worker { worker, .. }
            | Event::Timeout { worker, .. }
            | Event::Backoff { worker }
            | Event::Wake { worker }
            | Event::LookAgain { worker } => *worker,
            // A request already left its worker; only an answer waits for it.
            Event::Deliver { message } => match self.messages.get(message) {
                Some(message) if message.direction == Direction::Response => message.worker,
                _ => return None,
            },
            Event::Resume { .. }
            | Event::Apply { .. }
            | Event::Restart { .. }
            | Event::HonestCheck { .. }
            | Event::Audit
            // Someone outside the agent acts on the world's own clock, not a worker's.
            | Event::OwnerChange { .. } => return None,
        };
        self.workers
            .slots
            .get(&worker)
            .is_some_and(|slot| slot.paused.is_some())
            .then_some(worker)
    }

    /// `event` waits until `worker` resumes: it is put back in the queue at that moment, after
    /// the resume (scheduled when the pause began) and in the order it came due.
    pub(super) fn hold(&mut self, worker: u32, event: Event) {
        let what = self.held_words(&event);
        let paused = self
            .workers
            .slots
            .get_mut(&worker)
            .and_then(|slot| slot.paused.as_mut());
        let paused = paused.expect("only a stopped worker's events are held");
        let until_ms = paused.until_ms;
        if let Some(what) = what
            && !paused.held.contains(&what)
        {
            paused.held.push(what);
        }
        self.clock.schedule(until_ms, event);
    }

    /// What a held event is, in a player's words (`None`: the worker's own next phase).
    fn held_words(&self, event: &Event) -> Option<String> {
        match event {
            Event::Deliver { message } => self
                .messages
                .get(message)
                .map(|message| format!("the answer for {}", message.key)),
            Event::Timeout { attempt, key, .. } => Some(format!("attempt {attempt}'s timer for {key}")),
            Event::Backoff { .. } => Some("its backoff timer".to_owned()),
            Event::Wake { .. } | Event::LookAgain { .. } => Some("news of the call it waits on".to_owned()),
            _ => None,
        }
    }

    /// The pause of `w<number>` is over: it runs again, and what waited for it runs now.
    pub(super) fn resume(&mut self, worker: u32) {
        let Some(paused) = self.workers.slots.get_mut(&worker).and_then(|slot| slot.paused.take()) else {
            return;
        };
        self.workers.paused -= 1;
        let run = self.run_of(worker);
        let waited = if paused.held.is_empty() {
            String::new()
        } else {
            format!(
                "; what waited for it comes due now: {}",
                crate::text::and_list(&paused.held)
            )
        };
        self.log(
            Actor::Worker(worker),
            "resume",
            Some(run),
            None,
            format!(
                "w{worker} resumes (SIGCONT) after {} ms stopped{waited}",
                paused.stopped_for_ms
            ),
        );
    }

    /// A stopped worker that dies is no longer stopped (SIGKILL ends a stopped process too).
    pub(super) fn forget_pause(&mut self, worker: u32) {
        if let Some(slot) = self.workers.slots.get_mut(&worker)
            && slot.paused.take().is_some()
        {
            self.workers.paused -= 1;
        }
    }
}
