//! Building a simulation: a level, an explicit seed, and optionally a ledger, guard overrides
//! and the player's moves.

use super::clock::Clock;
use super::crew::Crew;
use super::timeline::Timeline;
use super::workers::Workers;
use super::world::World;
use super::{FIRST_NODE, SimError, Simulation};
use crate::billing::Billing;
use crate::cards::Armed;
use crate::checker;
use crate::ledger::{Ledger, LedgerStore};
use crate::level::{Level, TimedAction, WireRule};
use crate::runtime::guards::Guards;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

/// Builds a simulation: a level, an explicit seed, and optionally a ledger file,
/// guard overrides and the player's moves.
#[derive(Clone, Debug)]
pub struct SimulationBuilder {
    level: Level,
    seed: u64,
    guards: Option<Guards>,
    ledger_file: Option<PathBuf>,
    ledger_store: LedgerStore,
    actions: Vec<TimedAction>,
    wire_rule: WireRule,
    send_fence: bool,
}

impl SimulationBuilder {
    pub fn new(level: Level, seed: u64) -> SimulationBuilder {
        SimulationBuilder {
            level,
            seed,
            guards: None,
            ledger_file: None,
            ledger_store: LedgerStore::Sqlite,
            actions: Vec::new(),
            wire_rule: WireRule::OnTheWireNow,
            send_fence: true,
        }
    }

    /// How wire cards find their message: a version 1 tape's moves replay by its own rule.
    pub fn wire_rule(mut self, rule: WireRule) -> Self {
        self.wire_rule = rule;
        self
    }

    /// Overrides the level's guards (the sandbox, the vault tests).
    pub fn guards(mut self, guards: Guards) -> Self {
        self.guards = Some(guards);
        self
    }

    /// Writes the ledger to this (new) SQLite file instead of memory.
    pub fn ledger_file(mut self, path: impl Into<PathBuf>) -> Self {
        self.ledger_file = Some(path.into());
        self
    }

    /// Which store holds an in-memory ledger: SQLite (the default, what the game and replays
    /// use) or the memory store, which gives the same answers without SQLite, for bulk runs
    /// (the explorer, the benchmark). A ledger file is always SQLite, whatever this says.
    pub fn ledger_store(mut self, store: LedgerStore) -> Self {
        self.ledger_store = store;
        self
    }

    /// The player's moves, applied before the phases they name.
    pub fn actions(mut self, actions: Vec<TimedAction>) -> Self {
        self.actions = actions;
        self
    }

    /// Workers send without the send fence, as the runtime did before it had one. Only for
    /// the test that shows what the fence prevents; no level, tape or command can ask for it.
    #[doc(hidden)]
    pub fn without_send_fence_for_tests(mut self) -> Self {
        self.send_fence = false;
        self
    }

    pub fn build(self) -> Result<Simulation, SimError> {
        let observer = match &self.ledger_file {
            Some(path) if path.exists() => return Err(SimError::LedgerExists(path.clone())),
            Some(path) => Ledger::open(path)?,
            None => Ledger::open_in(self.ledger_store)?,
        };
        let store = self.ledger_store;
        self.build_with(observer, store)
    }

    /// Builds the simulation on a ledger opened elsewhere (the PostgreSQL store, which this
    /// crate's built-in stores do not cover): its workers connect to it with
    /// [`Ledger::connect_again`]. It must be empty, as a new file or memory ledger is; the
    /// builder's file and store settings are not used.
    pub fn build_on(self, ledger: Ledger) -> Result<Simulation, SimError> {
        if !ledger.all_records()?.is_empty() || !ledger.checkpoints()?.is_empty() {
            return Err(SimError::LedgerNotEmpty(ledger.location()));
        }
        let store = self.ledger_store;
        self.build_with(ledger, store)
    }

    /// `second_node_store`: where a second node's ledger lives, if the level has one (never in
    /// a file: it is another machine's).
    fn build_with(self, observer: Ledger, second_node_store: LedgerStore) -> Result<Simulation, SimError> {
        let guards = self.guards.unwrap_or(self.level.guards);
        let hand = self
            .level
            .cards
            .iter()
            .map(|allowance| (allowance.card, allowance.count))
            .collect();
        let billing = Billing::new(self.level.world.billing_keys, &self.level.world.accounts)
            .with_terms(self.level.world.billing_terms());
        let second_node = if self.level.world.second_node {
            Some(Ledger::open_in(second_node_store)?)
        } else {
            None
        };
        let mut simulation = Simulation {
            rng: ChaCha8Rng::seed_from_u64(self.seed),
            seed: self.seed,
            guards,
            send_fence: self.send_fence,
            wire_rule: self.wire_rule,
            clock: Clock::default(),
            workers: Workers::new(),
            messages: BTreeMap::new(),
            received: BTreeMap::new(),
            next_message: 1,
            world: World::new(billing),
            crew: Crew {
                hand,
                armed: Armed::default(),
                pending: self.actions.into_iter().collect(),
                played: Vec::new(),
                wire_hits: Vec::new(),
                next_action: 0,
                misplays: Vec::new(),
            },
            timeline: Timeline::default(),
            observer,
            second_node,
            call_items: BTreeMap::new(),
            nodes: BTreeMap::new(),
            failed_runs: Vec::new(),
            first_call: None,
            honest_queue: BTreeSet::new(),
            audit: None,
            authored_tools: None,
            last_step: None,
            ended: false,
            level: self.level,
        };
        let runs: Vec<String> = simulation.level.runs.iter().map(|run| run.id.to_string()).collect();
        for run in &runs {
            simulation.nodes.insert(
                run.clone(),
                checker::RunNode {
                    node: run.clone(),
                    retry: 0,
                },
            );
        }
        for run in runs {
            simulation.spawn_worker(&run, "starts the run", FIRST_NODE);
        }
        simulation.schedule_audit();
        simulation.schedule_owner_changes();
        Ok(simulation)
    }
}
