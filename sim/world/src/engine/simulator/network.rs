//! The network between workers and billing: requests and responses in flight, each arriving
//! after a latency drawn from the seed, lost or slowed when the crew played a card on it.

use serde::{Deserialize, Serialize};

use super::Simulation;
use super::clock::{Event, Slot};
use super::timeline::Actor;
use crate::billing::Answer;
use crate::cards::{Fired, Trigger};
use crate::runtime::guards::Guard;
use crate::runtime::key::IdempotencyKey;
use crate::runtime::run::ToolCall;
use crate::runtime::worker::Input;

/// A message on the wire.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Message {
    pub id: u32,
    pub direction: Direction,
    pub worker: u32,
    pub run: String,
    pub attempt: u32,
    /// The key the runtime knows the call by.
    pub key: String,
    /// The key that travels with the request (none if the guard is off or the tool takes none).
    pub downstream_key: Option<String>,
    pub call: ToolCall,
    pub answer: Option<Answer>,
    pub sent_at_ms: u64,
    /// The phase that put it on the wire: a wire card can hit it from the next phase on.
    pub sent_at_phase: u32,
    pub arrives_at_ms: u64,
    pub lost: bool,
    pub slowed: bool,
    /// The request this message is (its own id) or answers: one send's identity, which its
    /// timer and its answer share, whatever key and attempt number later sends repeat.
    #[serde(default)]
    pub request: u32,
    /// A request billing will hold this long after it arrives before applying it
    /// (`DelayApply`); its answer leaves once it is applied.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub apply_delay_ms: Option<u32>,
    #[serde(skip)]
    pub(super) slot: Slot,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    Request,
    Response,
}

/// The longest billing may hold a request before applying it, in ms of simulated time: ten
/// minutes, longer than any level's timeout, settle time or recovery wait; a tape asking for
/// more is refused when it loads.
pub const APPLY_DELAY_MS_MAX: u32 = 600_000;

impl Message {
    /// Already slowed (an answer) or held at billing (a request): a card that slows or delays
    /// a message aims only at one not yet touched.
    pub fn slowed_or_delayed(&self) -> bool {
        self.slowed || self.apply_delay_ms.is_some()
    }
}

/// A request a worker sends now.
pub(super) struct Outgoing {
    pub worker: u32,
    pub run: String,
    pub key: IdempotencyKey,
    pub downstream_key: Option<IdempotencyKey>,
    pub call: ToolCall,
    pub attempt: u32,
}

impl Simulation {
    fn latency(&mut self) -> u64 {
        use rand::Rng;
        let jitter = self.level.world.jitter_ms;
        let extra = if jitter == 0 {
            0
        } else {
            self.rng.random_range(0..=jitter)
        };
        u64::from(self.level.world.latency_ms + extra)
    }

    fn next_message_id(&mut self) -> u32 {
        let id = self.next_message;
        self.next_message += 1;
        id
    }

    /// Puts a request on the wire and starts its timer.
    pub(super) fn send_request(&mut self, outgoing: Outgoing) {
        let now = self.clock.now_ms;
        let mut latency = self.latency();
        let id = self.next_message_id();
        let (lost, slowed) = self.armed_fate(Trigger::RequestLeaves, id, outgoing.key.as_str());
        if slowed {
            latency = u64::from(self.level.world.slow_response_ms);
        }
        let slot = self.clock.schedule(now + latency, Event::Deliver { message: id });
        let Outgoing {
            worker,
            run,
            key,
            downstream_key,
            call,
            attempt,
        } = outgoing;
        let carried = match &downstream_key {
            Some(key) => format!("Idempotency-Key {key}"),
            None => "no idempotency key".into(),
        };
        let text = format!("sends {} attempt {attempt} with {carried}", call.tool);
        self.messages.insert(
            id,
            Message {
                id,
                direction: Direction::Request,
                worker,
                run: run.clone(),
                attempt,
                key: key.to_string(),
                downstream_key: downstream_key.as_ref().map(ToString::to_string),
                call,
                answer: None,
                sent_at_ms: now,
                sent_at_phase: self.clock.phase,
                arrives_at_ms: now + latency,
                lost,
                slowed,
                request: id,
                apply_delay_ms: None,
                slot,
            },
        );
        if let Some(slot) = self.workers.slots.get_mut(&worker) {
            if slot.machine.runs_batch() {
                slot.batch_sends.push(id);
            } else {
                slot.awaiting_send = Some(id);
                slot.batch_sends.clear();
            }
        }
        self.clock.schedule(
            now + u64::from(self.level.world.timeout_ms),
            Event::Timeout {
                worker,
                key: key.to_string(),
                attempt,
                send: id,
            },
        );
        self.log(Actor::Worker(worker), "send", Some(run), Some(key.to_string()), text);
    }

    /// Puts billing's answer to `request` on the wire back to its worker.
    pub(super) fn respond(&mut self, request: Message, answer: Answer) {
        let now = self.clock.now_ms;
        let mut delay = self.latency();
        let id = self.next_message_id();
        let phase = self.clock.phase;
        let (lost, slowed) = self.armed_fate(Trigger::AnswerLeaves, id, &request.key);
        if slowed {
            delay = u64::from(self.level.world.slow_response_ms);
        }
        let slot = self.clock.schedule(now + delay, Event::Deliver { message: id });
        self.messages.insert(
            id,
            Message {
                id,
                direction: Direction::Response,
                answer: Some(answer),
                sent_at_ms: now,
                sent_at_phase: phase,
                arrives_at_ms: now + delay,
                lost,
                slowed,
                apply_delay_ms: None,
                slot,
                ..request
            },
        );
    }

    /// What the cards armed for `trigger` do to message `id` as it leaves (version 1 tapes'
    /// wire cards): whether it will be lost, and whether it arrives after the timeout. Each
    /// armed move that fires is noted as the move that hit it.
    fn armed_fate(&mut self, trigger: Trigger<'_>, id: u32, key: &str) -> (bool, bool) {
        let (mut lost, mut slowed) = (false, false);
        if self.crew.armed.is_empty() {
            return (lost, slowed);
        }
        let phase = self.clock.phase;
        for (_, fired, played) in self.crew.armed.fire(&trigger) {
            match fired {
                Fired::Lose => lost = true,
                Fired::Slow => slowed = true,
                Fired::RefuseBeforeSending | Fired::CallAgain { .. } => {
                    unreachable!("a message leaving is met only by wire cards")
                }
            }
            self.crew.armed_card_met(played, id, key, phase);
        }
        (lost, slowed)
    }

    /// Billing receives `request` and holds it `delay_ms` before applying it: it is off the
    /// wire (no lookup counts it in flight) and not in billing's books yet.
    fn receive_and_hold(&mut self, request: Message, delay_ms: u32) {
        let apply_at_ms = self.clock.now_ms + u64::from(delay_ms);
        let (run, key) = (Some(request.run.clone()), Some(request.key.clone()));
        let text = format!(
            "billing receives the request for {} and holds it: it applies it in {delay_ms} ms, at {apply_at_ms} ms; \
             until then its books show nothing of it",
            request.key
        );
        self.clock.schedule(apply_at_ms, Event::Apply { message: request.id });
        self.received.insert(request.id, request);
        self.log(Actor::Billing, "request held", run, key, text);
    }

    /// Billing applies a request it held; its answer leaves now.
    pub(super) fn apply_held(&mut self, id: u32) {
        let request = self.received.remove(&id).expect("a held request is applied once");
        self.billing_applies(request);
    }

    /// A message arrives: a request at billing, a response at its worker.
    pub(super) fn deliver(&mut self, id: u32) -> Result<(), super::SimError> {
        let message = self.messages.remove(&id).expect("a scheduled message exists");
        let (run, key) = (Some(message.run.clone()), Some(message.key.clone()));
        match message.direction {
            Direction::Request if message.lost => {
                let text = format!("the request for {} was lost; billing never saw it", message.key);
                self.log(Actor::Network, "request lost", run, key, text);
            }
            Direction::Request => match message.apply_delay_ms {
                Some(delay_ms) => self.receive_and_hold(message, delay_ms),
                None => self.billing_applies(message),
            },
            Direction::Response if message.lost => {
                let text = format!("the response for {} was lost after billing applied it", message.key);
                self.log(Actor::Network, "response lost", run, key, text);
            }
            Direction::Response => {
                let answer = message.answer.clone().expect("responses carry answers");
                let receiver = self.workers.slots.get(&message.worker);
                let listening = receiver.is_some_and(|slot| slot.alive && !slot.machine.is_done());
                let crashed = receiver.is_none_or(|slot| slot.crashed);
                let message_key = IdempotencyKey::parse(&message.key).expect("message keys are keys");
                // An answer to an earlier send that shares the current one's key and attempt
                // (hashed keys, identical calls) is not the answer the worker waits for: fed
                // to it, it would settle the wrong call.
                let mistaken = listening
                    && self.awaiting(message.worker, &message.key, message.attempt)
                    && !self.awaits_send(message.worker, message.request);
                if listening && !mistaken {
                    let late = !self.awaiting(message.worker, &message.key, message.attempt);
                    let text = format!(
                        "w{} receives {}{}",
                        message.worker,
                        answer.receipt(),
                        if late { " — after its timeout" } else { "" }
                    );
                    self.log(Actor::Network, "response travels", run, key, text);
                    self.send_ended(message.worker, message.request);
                    self.feed(
                        message.worker,
                        Input::Response {
                            key: message_key,
                            attempt: message.attempt,
                            answer: answer.to_tool_answer(),
                        },
                    );
                } else if crashed {
                    let text = format!("the response for {} arrives; w{} is gone", message.key, message.worker);
                    self.log(Actor::Network, "response travels", run, key, text);
                } else {
                    // The worker finished with this run (or with the call this answers, when a
                    // later call repeats its key and attempt), but its process still listens:
                    // the runtime logs the late answer under its own key and ignores it.
                    if self.guards.is_on(Guard::Ledger) {
                        let detail = format!(
                            "attempt {} answered after the run moved on: {}",
                            message.attempt,
                            answer.receipt()
                        );
                        let actor = format!("w{}", message.worker);
                        let node = self.workers.slots[&message.worker].node;
                        let now_ms = self.clock.now_ms;
                        let says = if answer.to_tool_answer().is_rejection() {
                            crate::runtime::rules::Outcome::Failed
                        } else {
                            crate::runtime::rules::Outcome::Completed
                        };
                        let late = crate::ledger::LateAnswer {
                            attempt: message.attempt,
                            says,
                            detail: &detail,
                        };
                        self.node_ledger_mut(node)
                            .log_late_outcome(&message_key, &actor, &late, now_ms)?;
                    }
                    let text = format!("late answer for {} logged and ignored", message.key);
                    self.log(Actor::Network, "late outcome", run, key, text);
                }
            }
        }
        Ok(())
    }
}

/// Requests carrying `key` downstream that are on their way and will reach billing.
pub(super) fn requests_on_the_way(messages: &std::collections::BTreeMap<u32, Message>, key: &str) -> u32 {
    let count = messages
        .values()
        .filter(|message| {
            message.direction == Direction::Request && !message.lost && message.downstream_key.as_deref() == Some(key)
        })
        .count();
    u32::try_from(count).unwrap_or(u32::MAX)
}
