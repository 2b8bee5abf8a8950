//! Virtual time: the clock, the phase count and the queue of what happens next, in time
//! order and, at one time, in the order it was scheduled (a sequence number breaks ties, so
//! the order never depends on anything but the simulation's own history).

use std::collections::BTreeMap;

use crate::runtime::worker::Command;

/// What the queue holds.
#[derive(Clone, Debug)]
pub(super) enum Event {
    /// A worker's next phase.
    Worker {
        worker: u32,
        command: Box<Command>,
    },
    /// A message arrives.
    Deliver {
        message: u32,
    },
    /// An attempt's timer. It belongs to the request `send` put on the wire, not to the key
    /// and attempt number: with hashed keys a later, identical call repeats both, and an earlier
    /// call's timer must not time it out.
    Timeout {
        worker: u32,
        key: String,
        attempt: u32,
        send: u32,
    },
    Backoff {
        worker: u32,
    },
    /// A fresh worker recovers a run after a crash, on the node the crashed worker ran on.
    Restart {
        run: String,
        node: u32,
    },
    /// A parked worker is told its call was settled.
    Wake {
        worker: u32,
    },
    /// A parked worker looks at its call again: something that could settle it changed.
    LookAgain {
        worker: u32,
    },
    /// The level's honest operator checks a queued call in billing and decides it.
    HonestCheck {
        key: String,
    },
    /// The level's auditor checks billing against the ledger.
    Audit,
    /// A stopped worker's pause ends (`PauseWorker`).
    Resume {
        worker: u32,
    },
    /// Billing applies a request it received earlier and held (`DelayApply`).
    Apply {
        message: u32,
    },
    /// Someone outside the agent changes an account's owner: the world's `index`th scripted change.
    OwnerChange {
        index: usize,
    },
}

/// A slot in the queue: (time, sequence).
pub(super) type Slot = (u64, u64);

#[derive(Debug, Default)]
pub(super) struct Clock {
    pub(super) now_ms: u64,
    /// Phases run so far.
    pub(super) phase: u32,
    next_sequence: u64,
    queue: BTreeMap<Slot, Event>,
}

impl Clock {
    pub(super) fn schedule(&mut self, at_ms: u64, event: Event) -> Slot {
        let slot = (at_ms, self.next_sequence);
        self.next_sequence += 1;
        self.queue.insert(slot, event);
        slot
    }

    pub(super) fn unschedule(&mut self, slot: Slot) -> Option<Event> {
        self.queue.remove(&slot)
    }

    /// When the next recovery after a crash is due, if one is.
    pub(super) fn next_restart_ms(&self) -> Option<u64> {
        self.queue
            .iter()
            .find(|(_, event)| matches!(event, Event::Restart { .. }))
            .map(|((at_ms, _), _)| *at_ms)
    }

    pub(super) fn is_idle(&self) -> bool {
        self.queue.is_empty()
    }

    /// The next event, taken off the queue. The clock moves only when the event runs
    /// ([`Clock::advance_to`]): a stale event (a dead worker's phase) takes no time.
    pub(super) fn pop(&mut self) -> Option<(Slot, Event)> {
        self.queue.pop_first()
    }

    pub(super) fn advance_to(&mut self, at_ms: u64) {
        assert!(at_ms >= self.now_ms, "time never runs backwards");
        self.now_ms = at_ms;
    }
}
