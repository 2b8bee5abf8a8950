//! The table the cards are played on: the few things a move may do to the world — a message
//! on the wire hit, lost, delayed or held at billing; a worker killed, stopped or started; something armed for a moment
//! still to come; a call settled or undone by an operator; a tool declared again. Each card's
//! module (`crate::cards`) says which of these it does, and when; these say how, so a card
//! never reaches into the simulator's own state. (Stopping a worker is `pause.rs`'s
//! `Simulation::pause`: what waits for a stopped worker is the event loop's.)

use super::clock::Event;
use super::crew::WireHit;
use super::network::Direction;
use super::{FIRST_NODE, PlayError, Simulation, WORKERS_MAX};
use crate::cards::Play;
use crate::ledger::ExecutionRecord;
use crate::runtime::key::IdempotencyKey;
use crate::runtime::operator::{self, CompensateRequest, HeldLedger, OperatorError, ResolveRequest};
use crate::runtime::tool::{SideEffect, ToolDeclaration};
use crate::runtime::worker::Phase;

impl Simulation {
    // ----- the wire -----

    /// The message a wire card would hit now: on the wire in `direction`, not lost (nor, with
    /// `unslowed`, slowed already), carrying `key` if one is named; the oldest first.
    pub(crate) fn wire_target(&self, direction: Direction, key: Option<&str>, unslowed: bool) -> Option<u32> {
        self.messages
            .values()
            .filter(|message| {
                message.direction == direction && !message.lost && !(unslowed && message.slowed_or_delayed())
            })
            .find(|message| key.is_none_or(|key| message.key == key))
            .map(|message| message.id)
    }

    /// The move being played now hits message `id` on the wire: noted (which move hit which
    /// message), and its key answered.
    pub(crate) fn hit_message(&mut self, id: u32) -> String {
        let message = &self.messages[&id];
        let key = message.key.clone();
        self.crew.wire_hits.push(WireHit {
            played: self.crew.played.len(),
            message: id,
            key: key.clone(),
            sent_at_phase: message.sent_at_phase,
        });
        key
    }

    /// Message `id` will be lost on the wire. Answers its key.
    pub(crate) fn lose_message(&mut self, id: u32) -> String {
        let message = self.messages.get_mut(&id).expect("on the wire");
        message.lost = true;
        message.key.clone()
    }

    /// Message `id` (an answer) arrives after the worker's timeout: `slow_response_ms` after it
    /// was sent, or now if that is past. Answers its key.
    pub(crate) fn slow_message(&mut self, id: u32) -> String {
        let now = self.clock.now_ms;
        let message = &self.messages[&id];
        let arrives = (message.sent_at_ms + u64::from(self.level.world.slow_response_ms)).max(now);
        self.delay_message(id, arrives);
        let message = self.messages.get_mut(&id).expect("on the wire");
        message.slowed = true;
        message.key.clone()
    }

    /// Request `id` will be held by billing `delay_ms` after it arrives before billing applies
    /// it. Answers its key.
    pub(crate) fn delay_apply(&mut self, id: u32, delay_ms: u32) -> String {
        let message = self.messages.get_mut(&id).expect("on the wire");
        assert!(
            message.direction == Direction::Request,
            "billing holds requests, not answers"
        );
        message.apply_delay_ms = Some(delay_ms);
        message.key.clone()
    }

    /// Message `id` arrives at `arrives_ms` instead of when it was due.
    pub(crate) fn delay_message(&mut self, id: u32, arrives_ms: u64) {
        let slot = self.messages[&id].slot;
        self.clock.unschedule(slot);
        let slot = self.clock.schedule(arrives_ms, Event::Deliver { message: id });
        let message = self.messages.get_mut(&id).expect("on the wire");
        message.slot = slot;
        message.arrives_at_ms = arrives_ms;
    }

    // ----- moments still to come -----

    /// The move being played now waits, armed, for its moment (its card's `fires_at`).
    pub(crate) fn arm(&mut self, play: Play) {
        let played = self.crew.played.len();
        self.crew.armed.arm(play, played);
    }

    // ----- workers -----

    /// The phase worker `w<number>` is about to run, if it is alive.
    pub(crate) fn alive_worker_phase(&self, number: u32) -> Option<Phase> {
        self.workers
            .slots
            .get(&number)
            .filter(|slot| slot.alive)
            .map(|slot| slot.phase)
    }

    /// The oldest worker alive, if any is.
    pub(crate) fn oldest_worker_alive(&self) -> Option<u32> {
        self.workers
            .slots
            .iter()
            .find(|(_, slot)| slot.alive)
            .map(|(number, _)| *number)
    }

    /// Kills worker `w<number>` (alive) as SIGKILL does: its connection drops, its open
    /// transaction rolls back, and its supervisor recovers the run after a while.
    pub(crate) fn kill(&mut self, number: u32) {
        assert!(
            self.alive_worker_phase(number).is_some(),
            "only a live worker is killed"
        );
        self.crash(number);
    }

    /// When the next recovery after a crash starts, if one is coming.
    pub fn next_recovery_ms(&self) -> Option<u64> {
        self.clock.next_restart_ms()
    }

    /// Another worker may still be started (at most [`WORKERS_MAX`] in a simulation).
    pub fn can_start_a_worker(&self) -> bool {
        self.workers.next_worker <= WORKERS_MAX
    }

    /// Starts a worker on `run` on `node` (the timeline says it `why`).
    pub(crate) fn start_worker(&mut self, run: &str, why: &str, node: u32) {
        self.spawn_worker(run, why, node);
    }

    // ----- operators -----

    /// The player, as an operator, resolves `key` (the runtime's compare-and-set); workers
    /// parked on it wake.
    pub(crate) fn resolve_by_operator(
        &mut self,
        key: &IdempotencyKey,
        request: &ResolveRequest,
    ) -> Result<ExecutionRecord, OperatorError> {
        let record = operator::resolve(&mut self.observer, key, request, self.clock.now_ms)?;
        self.wake_parked(FIRST_NODE, key, None);
        Ok(record)
    }

    /// The player, as an operator, asks for `key`'s compensation: the runtime looks the credit
    /// up by the call's key and voids it by its id, once — as the HTTP API does against a
    /// billing server. Workers parked on it wake.
    pub(crate) fn compensate_by_operator(
        &mut self,
        key: &IdempotencyKey,
        reason: &str,
        operator_id: &str,
    ) -> Result<ExecutionRecord, OperatorError> {
        let request = CompensateRequest::new(key, reason, operator_id);
        let (ledger, mut target, now_ms) = self.compensation_parts();
        let record = operator::compensate(
            &mut HeldLedger { ledger, now_ms },
            &mut target,
            &request,
            &crate::text::WORDS,
        )?;
        self.wake_parked(FIRST_NODE, key, None);
        Ok(record)
    }

    /// Who made the last decision on `key`, from its history.
    pub(crate) fn last_decider(&self, key: &IdempotencyKey) -> Option<String> {
        let history = self.observer.history(key).ok()?;
        history
            .into_iter()
            .rev()
            .find(|entry| entry.to_status.is_some_and(|status| status.is_settled()))
            .map(|entry| entry.actor)
    }

    // ----- declarations -----

    /// Whether `tool` may still be declared: refused once Penny has made her first call.
    pub(crate) fn declaring_is_open_for(&self, tool: &str) -> Result<(), PlayError> {
        match &self.first_call {
            None => Ok(()),
            Some(first) => Err(PlayError::TooLateToDeclare {
                tool: tool.to_owned(),
                worker: first.worker,
                key: first.key.clone(),
                phase: first.phase,
            }),
        }
    }

    /// Whether a tool may still be declared: `Err` says why not (Penny has made her first call).
    pub fn declaring_is_open(&self) -> Result<(), PlayError> {
        self.declaring_is_open_for("a tool")
    }

    /// Declares `tool` (one of the level's) anew; the level's tools as authored are kept, so
    /// the same run can be simulated again from the start. Penny is not deployed again here.
    pub(crate) fn redeclare(
        &mut self,
        tool: &str,
        side_effect: SideEffect,
        attempts: u32,
        takes_key: bool,
    ) -> &ToolDeclaration {
        if self.authored_tools.is_none() {
            self.authored_tools = Some(self.level.tools.clone());
        }
        let declared = self
            .level
            .tools
            .iter_mut()
            .find(|declared| declared.name == tool)
            .expect("checked: the level declares it");
        *declared = declared.declared_as(side_effect, attempts, takes_key);
        declared
    }
}
