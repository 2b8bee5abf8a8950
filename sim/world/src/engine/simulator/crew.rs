//! The player's moves: fault cards (aimed at a message on the wire now, or — in a version 1
//! tape — armed for the next matching one) and operator decisions, each one a [`Play`] a tape
//! records.

use std::collections::{BTreeMap, VecDeque};

use serde::Serialize;

use super::clock::Event;
use super::network::Direction;
use super::timeline::Actor;
use super::{PlayError, Simulation, WORKERS_MAX};
use crate::ledger::SettleError;
use crate::level::{CardKind, Play, TimedAction, WireRule};
use crate::runtime::ids::RunId;
use crate::runtime::key::IdempotencyKey;
use crate::runtime::operator::{self, CompensateRequest, HeldLedger, OperatorError, ResolveRequest};
use crate::runtime::rules::Status;
use crate::runtime::tool::{READ_ATTEMPTS_MAX, SideEffect};
use crate::runtime::worker::Phase;

/// Which message a wire card hit: the move (its index in [`Simulation::played`]) and the
/// message, with the phase it was put on the wire in. A version 1 tape becomes a version 2
/// one by playing each wire card just after its message left ([`crate::upgrade`]).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct WireHit {
    pub played: usize,
    pub message: u32,
    pub key: String,
    pub sent_at_phase: u32,
}

/// Cards armed for the next matching moment (version 1 tapes only).
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
    /// For each kind of armed wire card, the moves (indices into `played`) waiting, oldest first.
    pub(super) armed_moves: BTreeMap<CardKind, VecDeque<usize>>,
    pub(super) pending: VecDeque<TimedAction>,
    pub(super) played: Vec<TimedAction>,
    pub(super) wire_hits: Vec<WireHit>,
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

    /// An armed card of this kind met its message: note which move it was.
    pub(super) fn armed_card_met(&mut self, card: CardKind, message: u32, key: &str, sent_at_phase: u32) {
        if let Some(played) = self.armed_moves.get_mut(&card).and_then(VecDeque::pop_front) {
            self.wire_hits.push(WireHit {
                played,
                message,
                key: key.to_owned(),
                sent_at_phase,
            });
        }
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
        if let Play::DeclareTool { tool, attempts, .. } = &play {
            // Said before the hand is looked at: which tool, and why it cannot be declared here.
            self.check_declaration(tool, *attempts)?;
        }
        match self.crew.hand.get(&card) {
            None => return Err(PlayError::NotInHand(card.name())),
            Some(0) => return Err(PlayError::NoneLeft(card.name())),
            Some(_) => {}
        }
        // The move as made: a tape saved from it names the message it hit, the worker it killed
        // and the phase that worker was about to run, whatever the move left to be chosen.
        let mut made = play.clone();
        let mut redeploy = false;
        let (actor, text) = match &play {
            Play::LoseRequest { key } => (Actor::Crew, self.lose(Direction::Request, key.as_deref())?),
            Play::LoseResponse { key } => (Actor::Crew, self.lose(Direction::Response, key.as_deref())?),
            Play::SlowResponse { key } => (Actor::Crew, self.slow_response(key.as_deref())?),
            Play::CrashWorker { worker, in_phase } => {
                let (target, about_to) = self.crash_by_move(*worker, *in_phase)?;
                let text = format!(
                    "w{target} is killed (SIGKILL), {}: its connection drops, its open transaction rolls back",
                    super::workers::moment(about_to)
                );
                made = Play::CrashWorker {
                    worker: Some(target),
                    in_phase: Some(about_to),
                };
                (Actor::Crew, text)
            }
            Play::DuplicateWorker { run } => {
                self.check_run(run)?;
                if self.workers.next_worker > WORKERS_MAX {
                    return Err(PlayError::TooManyWorkers);
                }
                let node = if self.level.world.second_node {
                    super::SECOND_NODE
                } else {
                    super::FIRST_NODE
                };
                self.spawn_worker(run, "is started as a duplicate", node);
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
            } => self.operator_resolves(key, *status, reason, operator, *expected_status)?,
            Play::OperatorCompensate { key, reason, operator } => self.operator_compensates(key, reason, operator)?,
            Play::DeclareTool {
                tool,
                side_effect,
                attempts,
                takes_key,
            } => {
                redeploy = true;
                (
                    Actor::Crew,
                    self.declare_tool(tool, *side_effect, *attempts, *takes_key),
                )
            }
        };
        // A quiet level wakes up: an operator's decision or a new worker brings new phases.
        self.ended = false;
        *self.crew.hand.get_mut(&card).expect("checked in hand") -= 1;
        if let Some(hit) = self
            .crew
            .wire_hits
            .last()
            .filter(|hit| hit.played == self.crew.played.len())
        {
            let key = Some(hit.key.clone());
            made = match made {
                Play::LoseRequest { .. } => Play::LoseRequest { key },
                Play::LoseResponse { .. } => Play::LoseResponse { key },
                Play::SlowResponse { .. } => Play::SlowResponse { key },
                other => other,
            };
        }
        self.crew.played.push(TimedAction {
            at_phase: self.clock.phase,
            play: made,
        });
        let run = play.run().map(str::to_owned);
        self.log(actor, card.name(), run, None, text);
        if redeploy {
            self.redeploy();
        }
        Ok(())
    }

    /// A crash by the player's move: the worker named (alive), or the first alive; refused if
    /// it is not about to run `in_phase`. Returns the worker and the phase it was about to run.
    fn crash_by_move(&mut self, worker: Option<u32>, in_phase: Option<Phase>) -> Result<(u32, Phase), PlayError> {
        let target = match worker {
            Some(number) => {
                if !self.workers.slots.get(&number).is_some_and(|slot| slot.alive) {
                    return Err(PlayError::NoSuchWorker(number));
                }
                number
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
        let about_to = self.workers.slots[&target].phase;
        if let Some(wanted) = in_phase
            && wanted != about_to
        {
            return Err(PlayError::NotInPhase {
                worker: target,
                wanted,
                about_to,
            });
        }
        self.crash(target);
        Ok((target, about_to))
    }

    /// The player, as operator, resolves a call. A lost compare-and-set is a move made (it is
    /// the race the level teaches), said as the 409 it is.
    fn operator_resolves(
        &mut self,
        key: &str,
        status: Status,
        reason: &str,
        operator: &str,
        expected_status: Option<Status>,
    ) -> Result<(Actor, String), PlayError> {
        let key = IdempotencyKey::parse(key).map_err(|_| PlayError::BadKey(key.to_owned()))?;
        self.check_the_queue(&key, expected_status)?;
        let mut request = ResolveRequest::new(status, reason, operator);
        request.expected_status = expected_status;
        // The player plays the operator's card on purpose, whatever the call's status: the
        // levels teach what an operator's decision on a call still in flight leads to.
        request.acknowledge_in_flight = true;
        match operator::resolve(&mut self.observer, &key, &request, self.clock.now_ms) {
            Ok(record) => {
                self.wake_parked(super::FIRST_NODE, &key, None);
                Ok((
                    Actor::Operator(operator.to_owned()),
                    format!("resolves {key} as {} — \"{reason}\"", record.status),
                ))
            }
            // Compare-and-set lost: the operator acted on what they were shown, and the
            // ledger refused it. The move is made (it is the race the level teaches);
            // nothing in the ledger changes.
            Err(OperatorError::Settle(SettleError::Stale { expected, current, .. })) => {
                let winner = self.last_decider(&key).unwrap_or_else(|| "someone".to_owned());
                Ok((
                    Actor::Operator(operator.to_owned()),
                    format!(
                        "409 conflict: {operator} expected {key} to be {expected}, but {winner} settled it {} first; {operator}'s {status} was refused",
                        current.status
                    ),
                ))
            }
            Err(error) => Err(error.into()),
        }
    }

    /// The player, as operator, asks for a call's compensation.
    ///
    /// Racing an honest operator, the console holds their queue: the undo is asked on the
    /// call as listed (`indeterminate`); once someone settled it, the request is a 409 and
    /// nothing is undone. A request the runtime refuses after looking in billing (nothing
    /// there and its request may be on its way, or the ledger and billing disagree, or
    /// billing cannot tell) is a move made too, said as the refusal it is: nothing moved.
    fn operator_compensates(&mut self, key: &str, reason: &str, operator: &str) -> Result<(Actor, String), PlayError> {
        let key = IdempotencyKey::parse(key).map_err(|_| PlayError::BadKey(key.to_owned()))?;
        let actor = Actor::Operator(operator.to_owned());
        if self.level.honest_operator.is_some() {
            self.check_the_queue(&key, Some(Status::Indeterminate))?;
            let current = self
                .observer
                .record(&key)
                .map_err(OperatorError::from)?
                .map(|record| record.status)
                .ok_or_else(|| OperatorError::Settle(SettleError::NotFound(key.clone())))?;
            if current != Status::Indeterminate {
                let winner = self.last_decider(&key).unwrap_or_else(|| "someone".to_owned());
                return Ok((
                    actor,
                    format!(
                        "409 conflict: {operator} asked to undo {key} as listed, indeterminate, but {winner} settled it {current} first; nothing was undone"
                    ),
                ));
            }
        }
        let request = CompensateRequest {
            key: &key,
            reason,
            operator,
        };
        // The one compensation: look the credit up by the call's key, void it by its
        // id, once — as the HTTP API does against a billing server.
        let (ledger, mut target, now_ms) = self.compensation_parts();
        match operator::compensate(
            &mut HeldLedger { ledger, now_ms },
            &mut target,
            &request,
            &crate::text::WORDS,
        ) {
            Ok(record) => {
                self.wake_parked(super::FIRST_NODE, &key, None);
                Ok((actor, format!("compensates {key} ({}) — \"{reason}\"", record.status)))
            }
            Err(
                error @ (OperatorError::MayBeOnItsWay { .. }
                | OperatorError::EffectMissing { .. }
                | OperatorError::Lookup(..)),
            ) => Ok((
                actor,
                format!(
                    "{COMPENSATION_REFUSED} {key}: refused, nothing undone; the runtime looked in billing first: {}",
                    super::world::refusal_words(&key, &error)
                ),
            )),
            Err(error) => Err(error.into()),
        }
    }

    /// The player, as developer, declares `tool` (checked: the level declares it); says what
    /// the contract check makes of the declaration. Penny is deployed again by the caller.
    fn declare_tool(&mut self, tool: &str, side_effect: SideEffect, attempts: u32, takes_key: bool) -> String {
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
        let summary = declared.summary();
        let verdict = match declared.check_contract() {
            Ok(()) => "it passes the tool contract check".to_owned(),
            Err(violation) => format!("it fails the tool contract check: {violation}"),
        };
        format!("{tool} is declared {summary}; {verdict}. Penny is deployed again with it")
    }

    /// Why `tool` cannot be declared now with `attempts` attempts, if it cannot.
    fn check_declaration(&self, tool: &str, attempts: u32) -> Result<(), PlayError> {
        if !self.level.tools.iter().any(|declared| declared.name == tool) {
            return Err(PlayError::NoSuchTool {
                tool: tool.to_owned(),
                known: self
                    .level
                    .tools
                    .iter()
                    .map(|declared| declared.name.clone())
                    .collect::<Vec<_>>()
                    .join(", "),
            });
        }
        if !self.level.declarable_tools.iter().any(|name| name == tool) {
            return Err(PlayError::NotDeclarable {
                tool: tool.to_owned(),
                declarable: if self.level.declarable_tools.is_empty() {
                    "none".to_owned()
                } else {
                    self.level.declarable_tools.join(", ")
                },
            });
        }
        if !(1..=READ_ATTEMPTS_MAX).contains(&attempts) {
            return Err(PlayError::AttemptsOutOfRange(attempts));
        }
        if let Some(first) = &self.first_call {
            return Err(PlayError::TooLateToDeclare {
                tool: tool.to_owned(),
                worker: first.worker,
                key: first.key.clone(),
                phase: first.phase,
            });
        }
        Ok(())
    }

    /// Whether a tool may still be declared: `Err` says why not (Penny has made her first call).
    pub fn declaring_is_open(&self) -> Result<(), PlayError> {
        match &self.first_call {
            None => Ok(()),
            Some(first) => Err(PlayError::TooLateToDeclare {
                tool: "a tool".to_owned(),
                worker: first.worker,
                key: first.key.clone(),
                phase: first.phase,
            }),
        }
    }

    /// A new declaration is a new deployment: every worker stops and every run starts again
    /// under it, so each one meets the contract check (when it is on) before it starts. Nothing
    /// is lost: no call has been made yet ([`Self::check_declaration`]), so no worker holds a
    /// reservation, a request or a checkpoint of one.
    fn redeploy(&mut self) {
        assert!(
            self.first_call.is_none(),
            "a tool is declared before Penny's first call"
        );
        let alive: Vec<(u32, String)> = self
            .workers
            .slots
            .iter()
            .filter(|(_, slot)| slot.alive)
            .map(|(number, slot)| (*number, slot.machine.run_id().to_string()))
            .collect();
        for (worker, run) in alive {
            self.retire(worker);
            self.log(
                Actor::Supervisor,
                "redeploy",
                Some(run),
                None,
                format!("w{worker} stops: Penny is deployed again with the new declaration"),
            );
        }
        let runs: Vec<RunId> = self.level.runs.iter().map(|run| run.id.clone()).collect();
        for run in runs {
            self.spawn_worker(&run, "starts the run under the new declaration", super::FIRST_NODE);
        }
    }

    /// Loses the message on the wire in `direction` (the one carrying `key`, or the oldest); in
    /// a version 1 tape with none on the wire, arms the card for the next one.
    fn lose(&mut self, direction: Direction, key: Option<&str>) -> Result<String, PlayError> {
        let card = match direction {
            Direction::Request => CardKind::LoseRequest,
            Direction::Response => CardKind::LoseResponse,
        };
        match self.wire_target(direction, key, false) {
            Some(id) => {
                self.note_direct_hit(id);
                let message = self.messages.get_mut(&id).expect("on the wire");
                message.lost = true;
                Ok(match direction {
                    Direction::Request => format!("the request for {} will be lost on the wire", message.key),
                    Direction::Response => format!("the response for {} will be lost", message.key),
                })
            }
            None if self.wire_rule == WireRule::OnTheWireNow => Err(nothing_on_the_wire(card, key)),
            None => {
                self.arm(card);
                Ok(match direction {
                    Direction::Request => {
                        self.crew.armed.lose_request += 1;
                        "the next request will be lost".to_owned()
                    }
                    Direction::Response => {
                        self.crew.armed.lose_response += 1;
                        "the next response will be lost after billing applies it".to_owned()
                    }
                })
            }
        }
    }

    /// Slows the response on the wire past the timeout; in a version 1 tape with none on the
    /// wire, arms the card for the next one.
    fn slow_response(&mut self, key: Option<&str>) -> Result<String, PlayError> {
        let now = self.clock.now_ms;
        match self.wire_target(Direction::Response, key, true) {
            Some(id) => {
                self.note_direct_hit(id);
                let message = self.messages.get(&id).expect("on the wire").clone();
                let arrives = (message.sent_at_ms + u64::from(self.level.world.slow_response_ms)).max(now);
                self.clock.unschedule(message.slot);
                let slot = self.clock.schedule(arrives, Event::Deliver { message: id });
                let message = self.messages.get_mut(&id).expect("on the wire");
                message.slot = slot;
                message.arrives_at_ms = arrives;
                message.slowed = true;
                Ok(format!("the response for {} is slowed past the timeout", message.key))
            }
            None if self.wire_rule == WireRule::OnTheWireNow => Err(nothing_on_the_wire(CardKind::SlowResponse, key)),
            None => {
                self.arm(CardKind::SlowResponse);
                self.crew.armed.slow_response += 1;
                Ok("the next response will arrive after the timeout".to_owned())
            }
        }
    }

    /// The message a wire card would hit now: on the wire in `direction`, not lost (nor, for a
    /// slow card, slowed already), carrying `key` if one is named; the oldest first.
    pub(super) fn wire_target(&self, direction: Direction, key: Option<&str>, for_slowing: bool) -> Option<u32> {
        self.messages
            .values()
            .filter(|message| message.direction == direction && !message.lost && !(for_slowing && message.slowed))
            .find(|message| key.is_none_or(|key| message.key == key))
            .map(|message| message.id)
    }

    /// The move being played now hit message `id` on the wire.
    fn note_direct_hit(&mut self, id: u32) {
        let message = &self.messages[&id];
        self.crew.wire_hits.push(WireHit {
            played: self.crew.played.len(),
            message: id,
            key: message.key.clone(),
            sent_at_phase: message.sent_at_phase,
        });
    }

    /// The move being played now waits, armed, for the next message (version 1).
    fn arm(&mut self, card: CardKind) {
        let played = self.crew.played.len();
        self.crew.armed_moves.entry(card).or_default().push_back(played);
    }

    /// Who made the last decision on `key`, from its history.
    pub(super) fn last_decider(&self, key: &IdempotencyKey) -> Option<String> {
        let history = self.observer.history(key).ok()?;
        history
            .into_iter()
            .rev()
            .find(|entry| entry.to_status.is_some_and(|status| status.is_settled()))
            .map(|entry| entry.actor)
    }

    fn check_run(&self, run: &str) -> Result<(), PlayError> {
        if !self.level.runs.iter().any(|script| script.id == run) {
            return Err(PlayError::NoSuchRun(run.to_owned()));
        }
        Ok(())
    }
}

/// How the timeline begins a compensation the runtime refused after looking in billing.
pub const COMPENSATION_REFUSED: &str = "asks to undo";

fn nothing_on_the_wire(card: CardKind, key: Option<&str>) -> PlayError {
    PlayError::NothingOnTheWire {
        card: card.title(),
        what: match (card, key) {
            (CardKind::LoseRequest, Some(key)) => format!("no request for {key} is on the wire"),
            (CardKind::LoseRequest, None) => "no request is on the wire".to_owned(),
            (CardKind::SlowResponse, Some(key)) => format!("no response for {key} is on the wire to slow"),
            (CardKind::SlowResponse, None) => "no response is on the wire to slow".to_owned(),
            (_, Some(key)) => format!("no response for {key} is on the wire"),
            (_, None) => "no response is on the wire".to_owned(),
        },
    }
}
