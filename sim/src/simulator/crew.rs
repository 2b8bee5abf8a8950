//! The player's moves: fault cards (armed for the next matching moment, or aimed at a
//! message on the wire now) and operator decisions, each one a [`Play`] a tape records.

use std::collections::{BTreeMap, VecDeque};

use serde::Serialize;

use super::clock::Event;
use super::network::Direction;
use super::timeline::Actor;
use super::{PlayError, Simulation, WORKERS_MAX};
use crate::level::{CardKind, Play, TimedAction};
use crate::runtime::key::IdempotencyKey;
use crate::runtime::operator::{self, CompensateRequest, HeldLedger, ResolveRequest};

/// Cards armed for the next matching moment.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Armed {
    pub lose_request: u32,
    pub lose_response: u32,
    pub slow_response: u32,
    pub call_again: BTreeMap<String, bool>,
    pub not_attempted: BTreeMap<String, u32>,
}

/// The crew's hand, what it armed, the moves still to come (a tape) and those made.
#[derive(Debug)]
pub(super) struct Crew {
    pub(super) hand: BTreeMap<CardKind, u32>,
    pub(super) armed: Armed,
    pub(super) pending: VecDeque<TimedAction>,
    pub(super) played: Vec<TimedAction>,
}

impl Crew {
    /// Uses an armed "tool fails before sending" for `run`, if there is one.
    pub(super) fn take_not_attempted(&mut self, run: &str) -> bool {
        let Some(count) = self.armed.not_attempted.get_mut(run) else {
            return false;
        };
        *count -= 1;
        if *count == 0 {
            self.armed.not_attempted.remove(run);
        }
        true
    }
}

impl Simulation {
    pub(super) fn apply_due_actions(&mut self) {
        while self
            .crew
            .pending
            .front()
            .is_some_and(|action| action.at_phase <= self.clock.phase)
        {
            let action = self.crew.pending.pop_front().expect("checked");
            self.apply_action(action);
        }
    }

    pub(super) fn apply_action(&mut self, action: TimedAction) {
        if let Err(error) = self.play(action.play.clone()) {
            self.log(
                Actor::Crew,
                "fizzled",
                action.play.run().map(str::to_owned),
                None,
                format!("{}: {error}", action.play.card().name()),
            );
        }
    }

    /// Plays a card (or an operator move) now; it takes effect before the next phase.
    /// A refused move changes nothing and uses no card.
    pub fn play(&mut self, play: Play) -> Result<(), PlayError> {
        if self.clock.phase >= self.level.max_phases {
            return Err(PlayError::LevelOver);
        }
        let card = play.card();
        match self.crew.hand.get(&card) {
            None => return Err(PlayError::NotInHand(card.name())),
            Some(0) => return Err(PlayError::NoneLeft(card.name())),
            Some(_) => {}
        }
        let (actor, text) = match &play {
            Play::LoseRequest => (Actor::Crew, self.lose(Direction::Request)),
            Play::LoseResponse => (Actor::Crew, self.lose(Direction::Response)),
            Play::SlowResponse => (Actor::Crew, self.slow_response()),
            Play::CrashWorker { worker } => {
                let target = match worker {
                    Some(number) => {
                        if !self.workers.slots.get(number).is_some_and(|slot| slot.alive) {
                            return Err(PlayError::NoSuchWorker(*number));
                        }
                        *number
                    }
                    None => {
                        *self
                            .workers
                            .slots
                            .iter()
                            .find(|(_, slot)| slot.alive)
                            .ok_or(PlayError::NoWorkerAlive)?
                            .0
                    }
                };
                self.crash(target);
                (
                    Actor::Crew,
                    format!("w{target} is killed (SIGKILL): its connection drops, its open transaction rolls back"),
                )
            }
            Play::DuplicateWorker { run } => {
                self.check_run(run)?;
                if self.workers.next_worker > WORKERS_MAX {
                    return Err(PlayError::TooManyWorkers);
                }
                self.spawn_worker(run, "is started as a duplicate");
                (Actor::Crew, format!("a second worker is started on {run}"))
            }
            Play::ModelCallsAgain { run, reword } => {
                self.check_run(run)?;
                self.crew.armed.call_again.insert(run.clone(), *reword);
                (
                    Actor::Crew,
                    format!(
                        "Penny will call the tool again on {run}{}",
                        if *reword { ", reworded" } else { "" }
                    ),
                )
            }
            Play::ToolFailsBeforeSending { run } => {
                self.check_run(run)?;
                *self.crew.armed.not_attempted.entry(run.clone()).or_default() += 1;
                (
                    Actor::Crew,
                    format!("the next tool call on {run} will refuse before sending"),
                )
            }
            Play::OperatorResolve {
                key,
                status,
                reason,
                operator,
                expected_status,
            } => {
                let key = IdempotencyKey::parse(key).map_err(|_| PlayError::BadKey(key.clone()))?;
                let request = ResolveRequest {
                    status: *status,
                    reason: reason.clone(),
                    operator: operator.clone(),
                    expected_status: *expected_status,
                    result: None,
                };
                let record = operator::resolve(&mut self.observer, &key, &request, self.clock.now_ms)?;
                self.wake_parked(&key, None);
                (
                    Actor::Operator(operator.clone()),
                    format!("resolves {key} as {} — \"{reason}\"", record.status),
                )
            }
            Play::OperatorCompensate { key, reason, operator } => {
                let key = IdempotencyKey::parse(key).map_err(|_| PlayError::BadKey(key.clone()))?;
                let request = CompensateRequest {
                    key: &key,
                    reason,
                    operator,
                };
                // The one compensation: look the credit up by the call's key, void it by its
                // id, once — as the HTTP API does against a billing server.
                let (ledger, mut target, now_ms) = self.compensation_parts();
                let record = operator::compensate(&mut HeldLedger { ledger, now_ms }, &mut target, &request)?;
                self.wake_parked(&key, None);
                (
                    Actor::Operator(operator.clone()),
                    format!("compensates {key} ({}) — \"{reason}\"", record.status),
                )
            }
        };
        // A quiet level wakes up: an operator's decision or a new worker brings new phases.
        self.ended = false;
        *self.crew.hand.get_mut(&card).expect("checked in hand") -= 1;
        self.crew.played.push(TimedAction {
            at_phase: self.clock.phase,
            play: play.clone(),
        });
        let run = play.run().map(str::to_owned);
        self.log(actor, card.name(), run, None, text);
        Ok(())
    }

    /// Loses the message in flight in `direction`, or arms the card for the next one.
    fn lose(&mut self, direction: Direction) -> String {
        match self.in_flight(direction) {
            Some(id) => {
                let message = self.messages.get_mut(&id).expect("in flight");
                message.lost = true;
                match direction {
                    Direction::Request => format!("the request for {} will be lost on the wire", message.key),
                    Direction::Response => format!("the response for {} will be lost", message.key),
                }
            }
            None => match direction {
                Direction::Request => {
                    self.crew.armed.lose_request += 1;
                    "the next request will be lost".to_owned()
                }
                Direction::Response => {
                    self.crew.armed.lose_response += 1;
                    "the next response will be lost after billing applies it".to_owned()
                }
            },
        }
    }

    /// Slows the response in flight past the timeout, or arms the card for the next one.
    fn slow_response(&mut self) -> String {
        let now = self.clock.now_ms;
        match self.in_flight(Direction::Response) {
            Some(id) => {
                let message = self.messages.get(&id).expect("in flight").clone();
                let arrives = (message.sent_at_ms + u64::from(self.level.world.slow_response_ms)).max(now);
                self.clock.unschedule(message.slot);
                let slot = self.clock.schedule(arrives, Event::Deliver { message: id });
                let message = self.messages.get_mut(&id).expect("in flight");
                message.slot = slot;
                message.arrives_at_ms = arrives;
                message.slowed = true;
                format!("the response for {} is slowed past the timeout", message.key)
            }
            None => {
                self.crew.armed.slow_response += 1;
                "the next response will arrive after the timeout".to_owned()
            }
        }
    }

    fn check_run(&self, run: &str) -> Result<(), PlayError> {
        if !self.level.runs.iter().any(|script| script.id == run) {
            return Err(PlayError::NoSuchRun(run.to_owned()));
        }
        Ok(())
    }
}
