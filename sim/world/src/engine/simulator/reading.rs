//! Reading a simulation's state: what the game draws, the checker judges and the debrief tells.

use super::crew::WireHit;
use super::network::Message;
use super::timeline::{RuleFiring, TimelineEntry};
use super::workers::{FailedRun, WorkerView};
use super::{FIRST_NODE, Phase, SECOND_NODE, Simulation};
use crate::billing::Billing;
use crate::cards::{Aims, Armed, CardKind, WireRule};
use crate::checker;
use crate::checker::Verdict;
use crate::ledger::{Checkpoint, ExecutionRecord, HistoryEntry, Ledger, LedgerError, RunHistoryEntry};
use crate::level::{Level, TimedAction};
use crate::runtime::guards::{Guard, Guards};
use crate::runtime::worker::{GuardNote, WorkerState};
use serde::Serialize;
use std::collections::BTreeMap;

impl Simulation {
    /// The level as it is now: a tool the player declared is as they declared it.
    pub fn level(&self) -> &Level {
        &self.level
    }
    /// The level as it was before any move: the same level, seed and moves from here give this
    /// run again.
    pub fn authored_level(&self) -> Level {
        let mut level = self.level.clone();
        if let Some(tools) = &self.authored_tools {
            level.tools.clone_from(tools);
        }
        level
    }

    pub fn seed(&self) -> u64 {
        self.seed
    }
    pub fn guards(&self) -> Guards {
        self.guards
    }
    pub fn now_ms(&self) -> u64 {
        self.clock.now_ms
    }
    /// Phases run so far.
    pub fn phase(&self) -> u32 {
        self.clock.phase
    }
    /// Nothing is left to happen, or the phase limit is reached. A move from the player
    /// (an operator's decision, a new worker) can wake a quiet level.
    pub fn is_over(&self) -> bool {
        self.ended
    }
    /// The phase limit is reached: no more moves.
    pub fn is_out_of_phases(&self) -> bool {
        self.clock.phase >= self.level.max_phases
    }

    /// The cards in hand that could still change a quiet level: an operator's resolve while a
    /// call is unknown, a compensation while a call with a compensation may have taken effect
    /// (each card says, [`CardKind::matters_when_quiet`]). A run parked for an operator is not
    /// the end of a level that gives the player operator moves: the level ends when nothing the
    /// player can still do changes anything.
    pub fn moves_that_still_matter(&self) -> Result<Vec<CardKind>, LedgerError> {
        if self.is_out_of_phases() {
            return Ok(Vec::new());
        }
        let mut cards = Vec::new();
        for (card, left) in &self.crew.hand {
            if *left > 0 && card.matters_when_quiet(self)? {
                cards.push(*card);
            }
        }
        Ok(cards)
    }

    /// The phase Penny's first call began in, once one has: from then on no tool can be declared.
    pub fn first_call_phase(&self) -> Option<u32> {
        self.first_call.as_ref().map(|first| first.phase)
    }

    /// Over, and nothing the player still holds could change it: time for the verdict.
    pub fn is_concluded(&self) -> Result<bool, LedgerError> {
        Ok(self.is_over() && self.moves_that_still_matter()?.is_empty())
    }
    pub fn billing(&self) -> &Billing {
        &self.world.billing
    }
    pub fn timeline(&self) -> &[TimelineEntry] {
        &self.timeline.entries
    }
    pub fn guard_notes(&self) -> &[GuardNote] {
        &self.timeline.notes
    }
    /// The rows of the runtime's decision tables that fired, oldest first.
    pub fn rules_fired(&self) -> &[RuleFiring] {
        &self.timeline.rules
    }
    pub fn armed(&self) -> &Armed {
        &self.crew.armed
    }
    /// How this simulation's wire cards find their message.
    pub fn wire_rule(&self) -> WireRule {
        self.wire_rule
    }
    /// Which message each wire card hit, in the order they hit.
    pub fn wire_hits(&self) -> &[WireHit] {
        &self.crew.wire_hits
    }
    /// The messages a wire card of this kind could hit now, oldest first: on the wire in its
    /// direction, not lost (and, to be slowed, not slowed already). None for another card.
    pub fn wire_targets(&self, card: CardKind) -> Vec<&Message> {
        let Aims::Message { direction, unslowed } = card.aims() else {
            return Vec::new();
        };
        self.messages
            .values()
            .filter(|message| message.direction == direction && !message.lost && !(unslowed && message.slowed))
            .collect()
    }
    /// Cards left in hand.
    pub fn hand(&self) -> &BTreeMap<CardKind, u32> {
        &self.crew.hand
    }
    /// The moves played so far, as a tape stores them.
    pub fn played(&self) -> &[TimedAction] {
        &self.crew.played
    }
    /// Messages on the wire now.
    pub fn messages(&self) -> impl Iterator<Item = &Message> {
        self.messages.values()
    }
    /// Each credit billing applied → the request that made it.
    pub fn effects(&self) -> &BTreeMap<String, checker::CreditOrigin> {
        &self.world.effects
    }
    pub fn ledger(&self) -> &Ledger {
        &self.observer
    }
    /// Every run started, by id → the workflow node it belongs to (the level's run it carries
    /// out, and which retry of it it is).
    pub fn nodes(&self) -> &checker::RunNodes {
        &self.nodes
    }
    /// The level's run (workflow node) that `run` carries out: itself, or the run a workflow
    /// retry started it for.
    pub fn node_of<'a>(&'a self, run: &'a str) -> &'a str {
        checker::node_of(&self.nodes, run)
    }
    /// The runs that failed and what followed each, oldest first.
    pub fn failed_runs(&self) -> &[FailedRun] {
        &self.failed_runs
    }
    /// The second node's ledger, in a level that has one: its twin's records and checkpoints.
    pub fn second_node_ledger(&self) -> Option<&Ledger> {
        self.second_node.as_ref()
    }
    /// The ledger of a node: the first node's, or the second's in a level that has one.
    pub(super) fn node_ledger(&self, node: u32) -> &Ledger {
        match node {
            SECOND_NODE => self
                .second_node
                .as_ref()
                .expect("a worker on the second node has its ledger"),
            _ => &self.observer,
        }
    }
    pub(super) fn node_ledger_mut(&mut self, node: u32) -> &mut Ledger {
        match node {
            SECOND_NODE => self
                .second_node
                .as_mut()
                .expect("a worker on the second node has its ledger"),
            _ => &mut self.observer,
        }
    }
    pub fn ledger_records(&self) -> Result<Vec<ExecutionRecord>, LedgerError> {
        self.observer.all_records()
    }
    /// Every node's ledger records, each with its node ([`FIRST_NODE`], then [`SECOND_NODE`]
    /// in a level that has one): a key's record may live in either, or in both.
    pub fn ledger_records_every_node(&self) -> Result<Vec<(u32, ExecutionRecord)>, LedgerError> {
        let mut records: Vec<(u32, ExecutionRecord)> = self
            .observer
            .all_records()?
            .into_iter()
            .map(|record| (FIRST_NODE, record))
            .collect();
        if let Some(second) = &self.second_node {
            records.extend(second.all_records()?.into_iter().map(|record| (SECOND_NODE, record)));
        }
        Ok(records)
    }
    pub fn ledger_history(&self) -> Result<Vec<HistoryEntry>, LedgerError> {
        self.observer.all_history()
    }
    pub fn run_history(&self) -> Result<Vec<RunHistoryEntry>, LedgerError> {
        self.observer.run_history(None)
    }
    pub fn checkpoints(&self) -> Result<Vec<Checkpoint>, LedgerError> {
        self.observer.checkpoints()
    }
    pub fn workers(&self) -> Vec<WorkerView> {
        self.workers
            .slots
            .iter()
            .map(|(number, slot)| {
                let call = slot.machine.current_call();
                WorkerView {
                    number: *number,
                    id: slot.machine.id().to_owned(),
                    run: slot.machine.run_id().to_owned(),
                    state: slot.machine.state(),
                    alive: slot.alive,
                    crashed: slot.crashed,
                    phase: slot.phase,
                    call: call.map(|(call, _, _)| call.clone()),
                    key: call.map(|(_, key, _)| key.to_string()),
                    attempt: call.map_or(0, |(_, _, attempt)| attempt),
                    loaded_version: slot.machine.loaded_version(),
                    run_state: slot.machine.run_state().clone(),
                    node: slot.node,
                    paused_until_ms: slot.paused.as_ref().map(|paused| paused.until_ms),
                }
            })
            .collect()
    }

    /// Whether the unknown call `record` truly waits for a person: its run is paused on it
    /// (`awaiting_reconciliation`) or stopped until someone looks. A call a live worker still
    /// drives by itself (in backoff before a retry, asking its hook, on the wire) does not,
    /// and neither does one no worker holds: nothing is waiting on its answer.
    pub fn waits_for_a_person(&self, record: &ExecutionRecord) -> bool {
        self.workers.slots.values().any(|slot| {
            let machine = &slot.machine;
            match machine.state() {
                WorkerState::Parked => machine.waiting_on() == Some(&record.key),
                WorkerState::WaitingForPerson => machine.run_id() == &record.run_id,
                _ => false,
            }
        })
    }

    /// The phases worker `w<number>` was given, in order.
    pub fn worker_phases(&self, number: u32) -> Option<&[Phase]> {
        self.workers.slots.get(&number).map(|slot| slot.phases.as_slice())
    }

    /// Whether the history so far reaches the level's goal: [`Simulation::verdict`]'s
    /// `goal_reached`, without copying the ledger's history or checking every promise (the
    /// explorer asks it of every schedule it deals; `tests/debrief_decided.rs` holds it equal to the
    /// verdict's on every tape and sweep move).
    pub fn goal_reached(&self) -> Result<bool, LedgerError> {
        // `checker::money` reads none of the history, notes or compensations.
        self.checked(false, |input| checker::money(input).goal_reached)
    }

    /// The checker's verdict on the history so far.
    pub fn verdict(&self) -> Result<Verdict, LedgerError> {
        self.checked(true, checker::judge)
    }

    /// `check` of what the checker reads, every node's ledger included; with `history` false,
    /// no ledger history, notes or compensations (left empty: reading the history is the
    /// dearest part, and the goal does not need it).
    fn checked<T>(&self, history: bool, check: impl FnOnce(&checker::CheckInput<'_>) -> T) -> Result<T, LedgerError> {
        let mut records = self.observer.all_records()?;
        let first_history = if history {
            self.observer.all_history()?
        } else {
            Vec::new()
        };
        let mut checkpoints = self.observer.checkpoints()?;
        let mut run_history = self.observer.run_history(None)?;
        // A second node's ledger is judged beside the first: its records and checkpoints are
        // the twin's promises, and its history is read apart (a decision is only ever
        // overwritten within one ledger).
        let mut second_node_history = Vec::new();
        if let Some(second) = &self.second_node {
            records.extend(second.all_records()?);
            checkpoints.extend(second.checkpoints()?);
            run_history.extend(second.run_history(None)?);
            if history {
                second_node_history = second.all_history()?;
            }
        }
        Ok(check(&checker::CheckInput {
            level: &self.level,
            guards: self.guards,
            billing: &self.world.billing,
            effects: &self.world.effects,
            records: &records,
            history: &first_history,
            second_node_history: &second_node_history,
            checkpoints: &checkpoints,
            run_history: &run_history,
            notes: if history { &self.timeline.notes } else { &[] },
            call_items: &self.call_items,
            compensations: if history { &self.world.compensations } else { &[] },
            nodes: &self.nodes,
        }))
    }

    /// Everything that happened, as canonical JSON: equal inputs give equal bytes.
    pub fn history_text(&self) -> Result<String, LedgerError> {
        #[derive(Serialize)]
        struct History<'a> {
            timeline: &'a [TimelineEntry],
            records: Vec<ExecutionRecord>,
            history: Vec<HistoryEntry>,
            run_history: Vec<RunHistoryEntry>,
            checkpoints: Vec<Checkpoint>,
            billing: &'a Billing,
            notes: Vec<NoteText<'a>>,
            #[serde(skip_serializing_if = "Option::is_none")]
            second_node: Option<NodeHistory>,
        }
        /// A guard note as people read it: the runtime's typed note, worded here.
        #[derive(Serialize)]
        struct NoteText<'a> {
            guard: Guard,
            key: Option<&'a str>,
            detail: String,
        }
        #[derive(Serialize)]
        struct NodeHistory {
            records: Vec<ExecutionRecord>,
            history: Vec<HistoryEntry>,
            run_history: Vec<RunHistoryEntry>,
            checkpoints: Vec<Checkpoint>,
        }
        let second_node = match &self.second_node {
            Some(second) => Some(NodeHistory {
                records: second.all_records()?,
                history: second.all_history()?,
                run_history: second.run_history(None)?,
                checkpoints: second.checkpoints()?,
            }),
            None => None,
        };
        let history = History {
            timeline: &self.timeline.entries,
            records: self.observer.all_records()?,
            history: self.observer.all_history()?,
            run_history: self.observer.run_history(None)?,
            checkpoints: self.observer.checkpoints()?,
            billing: &self.world.billing,
            notes: self
                .timeline
                .notes
                .iter()
                .map(|note| NoteText {
                    guard: note.guard,
                    key: note.key.as_deref(),
                    detail: crate::text::note_words(note),
                })
                .collect(),
            second_node,
        };
        Ok(serde_json::to_string_pretty(&history).expect("history serializes"))
    }
}
