//! The space schedules are dealt from, and the dealing: schedule `i` is a pure function of the
//! explorer's seed and `i`.

use std::collections::BTreeSet;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::{ExploreError, PHASE_SLACK};
use crate::cards::{CardKind, DealSpace, Play};
use crate::checker::Verdict;
use crate::ledger::LedgerStore;
use crate::level::{Level, TimedAction};
use crate::runtime::guards::Guards;
use crate::simulator::{Simulation, SimulationBuilder, WORKERS_MAX};

/// Everything a schedule can be dealt from: the hand, the runs, the keys an operator can
/// name, the workers a crash can target, and the phases worth playing at.
#[derive(Debug)]
pub(super) struct ScheduleSpace {
    level: Level,
    guards: Guards,
    seed: u64,
    store: LedgerStore,
    /// One entry per card in hand (a card held twice appears twice).
    deck: Vec<CardKind>,
    runs: Vec<String>,
    keys: Vec<String>,
    /// Worker numbers a crash may name: every worker the level could start with this hand.
    workers_max: u32,
    /// Cards are played before phases `0..=phase_horizon`.
    pub(super) phase_horizon: u32,
    /// A declaration is dealt before phases `0..=declaring_until`: the phase Penny's first call
    /// began in the quiet run (after it, every declaration is refused).
    declaring_until: u32,
    send_fence: bool,
}

/// A dealt move; an operator's names its key only when it is played (`pick` chooses among
/// the keys that exist then).
#[derive(Clone, Debug)]
struct DealtAction {
    at_phase: u32,
    play: Play,
    key_pick: Option<u64>,
}

impl ScheduleSpace {
    pub(super) fn new(
        level: &Level,
        guards: Guards,
        seed: u64,
        store: LedgerStore,
    ) -> Result<ScheduleSpace, ExploreError> {
        let mut deck = Vec::new();
        for allowance in &level.cards {
            deck.extend(std::iter::repeat_n(allowance.card, allowance.count as usize));
        }
        let count_of = |card: CardKind| {
            level
                .cards
                .iter()
                .find(|allowance| allowance.card == card)
                .map_or(0, |allowance| allowance.count)
        };
        let runs: Vec<String> = level.runs.iter().map(|run| run.id.to_string()).collect();
        // Every crash can bring a restart, every duplicate a twin, and every failed run a
        // fresh one while its workflow node has retries left.
        let retries = if level.workflow.retries() {
            level.workflow.retries_max
        } else {
            0
        };
        // Every card that may bring a worker (a crash its recovery, a duplicate its twin).
        let brought: u32 = CardKind::ALL
            .iter()
            .filter(|card| card.may_start_a_worker())
            .map(|card| count_of(*card))
            .sum();
        let workers_max = (runs.len() as u32 * (1 + retries) + brought).min(WORKERS_MAX);
        let mut space = ScheduleSpace {
            level: level.clone(),
            guards,
            seed,
            store,
            deck,
            runs,
            keys: Vec::new(),
            workers_max,
            phase_horizon: 0,
            declaring_until: 0,
            send_fence: true,
        };
        // A quiet run (no cards) shows how long the level lasts and which keys it makes
        // (hashed keys, when keys per call are off).
        // Schedule 0's simulation seed; not `deal(0)`, which needs the keys found here.
        let quiet_seed = space.stream(0).random();
        let mut simulation = SimulationBuilder::new(space.level.clone(), quiet_seed)
            .guards(guards)
            .ledger_store(store)
            .build()
            .map_err(|source| ExploreError::Simulation {
                index: 0,
                simulation_seed: quiet_seed,
                source,
            })?;
        let phases = simulation.run().map_err(|source| ExploreError::Simulation {
            index: 0,
            simulation_seed: quiet_seed,
            source,
        })?;
        let records = simulation.ledger_records().map_err(|source| ExploreError::Verdict {
            index: 0,
            simulation_seed: quiet_seed,
            source,
        })?;
        let mut keys: BTreeSet<String> = records.into_iter().map(|record| record.key.to_string()).collect();
        // The per-call keys of every call, and of a repeat or two (a model that calls again).
        // A workflow's fresh runs make their own keys: an operator may name those too.
        for run in &level.runs {
            let fresh_runs = (1..=retries).map(|retry| crate::runtime::workflow::retry_run_id(&run.id, retry));
            for run_id in std::iter::once(run.id.clone()).chain(fresh_runs) {
                for call_number in 1..=run.calls.len() + 2 {
                    keys.insert(format!("{run_id}:c{call_number}"));
                }
            }
        }
        space.keys = keys.into_iter().collect();
        // Faults lengthen a level (timeouts, restarts, twins), so cards are dealt over twice
        // the quiet run and a little after.
        space.phase_horizon = phases
            .saturating_mul(2)
            .saturating_add(PHASE_SLACK)
            .min(level.max_phases);
        space.declaring_until = simulation.first_call_phase().unwrap_or(space.phase_horizon);
        Ok(space)
    }

    /// Schedule `index`'s own random stream under the explorer's seed.
    fn stream(&self, index: u64) -> ChaCha8Rng {
        let mut rng = ChaCha8Rng::seed_from_u64(self.seed);
        rng.set_stream(index);
        rng
    }

    pub(super) fn with_send_fence(mut self, send_fence: bool) -> ScheduleSpace {
        self.send_fence = send_fence;
        self
    }

    fn builder(&self, simulation_seed: u64, actions: Vec<TimedAction>) -> SimulationBuilder {
        let builder = SimulationBuilder::new(self.level.clone(), simulation_seed)
            .guards(self.guards)
            .ledger_store(self.store)
            .actions(actions);
        if self.send_fence {
            builder
        } else {
            builder.without_send_fence_for_tests()
        }
    }

    /// Schedule `index`: its simulation seed and its actions, in phase order. An operator's
    /// move names a key that exists when it is played — found by simulating the schedule up
    /// to that phase — so a decision can land on any call at any moment, the window between a
    /// reservation and its send included.
    pub(super) fn deal(&self, index: u64) -> Result<(u64, Vec<TimedAction>), ExploreError> {
        let mut rng = self.stream(index);
        let simulation_seed = rng.random();
        if self.deck.is_empty() {
            return Ok((simulation_seed, Vec::new()));
        }
        // A random number of cards from the hand, each at most as often as the hand holds it:
        // a partial Fisher–Yates shuffle of the deck.
        let count = rng.random_range(1..=self.deck.len());
        let mut deck = self.deck.clone();
        for position in 0..count {
            let pick = rng.random_range(position..deck.len());
            deck.swap(position, pick);
        }
        let mut dealt: Vec<DealtAction> = deck[..count]
            .iter()
            .map(|card| {
                let until = if card.dealt_before_first_call() {
                    self.declaring_until
                } else {
                    self.phase_horizon
                };
                let at_phase = rng.random_range(0..=until);
                let space = DealSpace {
                    level: &self.level,
                    runs: &self.runs,
                    workers_max: self.workers_max,
                };
                let (play, key_pick) = card.deal(&space, &mut rng);
                DealtAction {
                    at_phase,
                    play,
                    key_pick,
                }
            })
            .collect();
        // Stable: cards dealt for one phase keep their dealt order.
        dealt.sort_by_key(|action| action.at_phase);
        let mut actions: Vec<TimedAction> = Vec::with_capacity(dealt.len());
        for action in dealt {
            let play = match action.key_pick {
                None => action.play,
                Some(pick) => {
                    let key = self.key_at(index, simulation_seed, &actions, action.at_phase, pick)?;
                    action.play.with_key(&key)
                }
            };
            actions.push(TimedAction {
                at_phase: action.at_phase,
                play,
                fizzles: false,
            });
        }
        Ok((simulation_seed, actions))
    }

    /// The key an operator's move at `at_phase` names: one of the ledger's records then (the
    /// moves before it played), chosen by `pick`; the level's likely keys when there is none.
    fn key_at(
        &self,
        index: u64,
        simulation_seed: u64,
        before: &[TimedAction],
        at_phase: u32,
        pick: u64,
    ) -> Result<String, ExploreError> {
        let simulation_error = |source| ExploreError::Simulation {
            index,
            simulation_seed,
            source,
        };
        let mut simulation = self
            .builder(simulation_seed, before.to_vec())
            .build()
            .map_err(simulation_error)?;
        simulation
            .run_until(|simulation| simulation.phase() >= at_phase)
            .map_err(simulation_error)?;
        let records = simulation.ledger_records().map_err(|source| ExploreError::Verdict {
            index,
            simulation_seed,
            source,
        })?;
        let mut keys: Vec<String> = records.into_iter().map(|record| record.key.to_string()).collect();
        if keys.is_empty() {
            keys.clone_from(&self.keys);
        }
        keys.sort();
        let position = usize::try_from(pick % keys.len() as u64).expect("a position within the keys");
        Ok(keys[position].clone())
    }

    /// Whether the schedule reaches the level's goal: [`ScheduleSpace::simulate`]'s
    /// `goal_reached`, without the verdict's promises and words (the search asks only this of
    /// every schedule; a find is simulated again for its verdict).
    pub(super) fn reaches_goal(
        &self,
        index: u64,
        simulation_seed: u64,
        actions: Vec<TimedAction>,
    ) -> Result<bool, ExploreError> {
        let simulation = self.run(index, simulation_seed, actions)?;
        simulation.goal_reached().map_err(|source| ExploreError::Verdict {
            index,
            simulation_seed,
            source,
        })
    }

    pub(super) fn simulate(
        &self,
        index: u64,
        simulation_seed: u64,
        actions: Vec<TimedAction>,
    ) -> Result<Verdict, ExploreError> {
        let simulation = self.run(index, simulation_seed, actions)?;
        simulation.verdict().map_err(|source| ExploreError::Verdict {
            index,
            simulation_seed,
            source,
        })
    }

    /// The schedule simulated until the level is quiet.
    fn run(&self, index: u64, simulation_seed: u64, actions: Vec<TimedAction>) -> Result<Simulation, ExploreError> {
        let simulation_error = |source| ExploreError::Simulation {
            index,
            simulation_seed,
            source,
        };
        let mut simulation = self
            .builder(simulation_seed, actions)
            .build()
            .map_err(simulation_error)?;
        simulation.run().map_err(simulation_error)?;
        Ok(simulation)
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::checker;
    use crate::level::{self, Expectation, Tape};

    fn vault() -> Level {
        level::load_level(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../../levels/19-vault.level.ron"))
            .expect("the vault loads")
            .level
    }

    #[test]
    fn dealt_schedules_are_legal_tapes_and_depend_only_on_seed_and_index() {
        let vault = vault();
        let space = ScheduleSpace::new(&vault, Guards::all_on(), 5, LedgerStore::Memory).expect("a schedule space");
        assert!(space.phase_horizon > 0 && space.phase_horizon <= vault.max_phases);
        assert_eq!(space.deck.len(), 8, "the vault's hand holds eight cards");
        let mut lengths = BTreeSet::new();
        for index in 0..500 {
            let (simulation_seed, actions) = space.deal(index).expect("a schedule is dealt");
            assert_eq!(
                (simulation_seed, actions.clone()),
                space.deal(index).expect("dealt again")
            );
            lengths.insert(actions.len());
            let tape = Tape {
                version: crate::level::TAPE_VERSION,
                level: "19-vault.level.ron".into(),
                seed: simulation_seed,
                title: String::new(),
                guards: None,
                actions,
                expect: Expectation {
                    verdict: checker::Outcome::PaidOnce,
                    stopped_by: Vec::new(),
                    paid_cents: Default::default(),
                    keys: Default::default(),
                    violations: Vec::new(),
                },
            };
            let text = level::tape_to_ron(&tape);
            if let Err(error) = level::validate_tape(Path::new("dealt.tape.ron"), &text, &tape, &vault) {
                panic!("schedule {index} is not a legal tape: {error}\n{text}");
            }
        }
        assert_eq!(
            lengths,
            (1..=8).collect(),
            "schedules use from one card to the whole hand"
        );
        let other = ScheduleSpace::new(&vault, Guards::all_on(), 6, LedgerStore::Memory).expect("a schedule space");
        assert_ne!(
            space.deal(0).expect("dealt"),
            other.deal(0).expect("dealt"),
            "another seed deals another schedule"
        );
    }

    #[test]
    fn operator_cards_name_the_keys_the_level_makes() {
        let mut level = vault();
        level.cards = vec![crate::level::CardAllowance {
            card: CardKind::OperatorResolve,
            count: 1,
        }];
        let space = ScheduleSpace::new(&level, Guards::all_on(), 1, LedgerStore::Memory).expect("a schedule space");
        for key in ["r1:c1", "r2:c1", "r1:c3"] {
            assert!(
                space.keys.iter().any(|known| known == key),
                "{key} missing from {:?}",
                space.keys
            );
        }
        let hashed = ScheduleSpace::new(
            &level,
            Guards::all_on().with(crate::runtime::guards::Guard::KeyPerCall, false),
            1,
            LedgerStore::Memory,
        )
        .expect("a schedule space");
        assert!(
            hashed.keys.iter().any(|key| key.starts_with("h:")),
            "hashed keys come from the quiet run: {:?}",
            hashed.keys
        );
    }
}
