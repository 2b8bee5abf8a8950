//! The room's operator race: one paused call on one shared ledger file, open to the whole
//! room; exactly one resolve wins.
//!
//! The presenter opens a race from a tape that leaves a run parked on an unknown call
//! (`04-pause.lost-answer`: the answer was lost after billing applied the credit). The
//! race's simulation writes a real SQLite ledger file in a temporary folder. Every
//! participant's resolve takes its own connection to that file (the operator API's pool)
//! and goes through `runtime::operator::resolve` — compare-and-set on the status the room
//! was shown, a reason required, the participant's name as the operator id. Nothing in
//! Rust serializes the resolves: SQLite's `BEGIN IMMEDIATE` and the compare-and-set make
//! one winner, as with thirty operators on the operator API. The rest hear 409 and who won,
//! read from the record's history. The winner's decision then wakes the parked run, and
//! the room sees what it did to the money.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use super::error::WebError;
use super::levels::Catalogue;
use super::views::{self, DecisionView};
use crate::api::pool::LedgerPool;
use twice_world::checker::Verdict;
use twice_world::ledger::{ExecutionRecord, SettleError};
use twice_world::runtime::key::IdempotencyKey;
use twice_world::runtime::operator::{self, OperatorError, ResolveRequest};
use twice_world::runtime::rules::Status;
use twice_world::simulator::{Simulation, SimulationBuilder};

/// The most tries a race remembers by name (the count goes on beyond).
pub const RACE_TRIES_KEPT_MAX: usize = 256;
/// The race ledger's file name, in the race's own temporary folder.
const LEDGER_FILE_NAME: &str = "room-ledger.sqlite";

/// One participant's resolve.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Try {
    pub name: String,
    pub status: Status,
    pub won: bool,
}

/// What has happened in a race so far.
#[derive(Debug, Default)]
pub struct RaceState {
    pub winner: Option<DecisionView>,
    /// The first [`RACE_TRIES_KEPT_MAX`] tries, in the order they were answered.
    pub tries: Vec<Try>,
    pub tries_total: u32,
    /// The verdict once the winner's decision woke the run and it ran to its end.
    pub after: Option<Verdict>,
}

/// The ledger file and its connections. The pool is declared first so its connections
/// close before the folder is removed.
struct RaceLedger {
    pool: Arc<LedgerPool>,
    _folder: tempfile::TempDir,
}

/// One race.
pub struct Race {
    pub number: u32,
    /// Index in the catalogue's tapes.
    pub tape: usize,
    pub key: IdempotencyKey,
    /// The status the room was shown: every resolve is compare-and-set on it.
    pub opened_status: Status,
    /// The simulation's clock when the race opened: decisions land on its timeline.
    pub decided_at_ms: u64,
    /// Declared before the ledger: its connections close before the file goes.
    simulation: Mutex<Simulation>,
    state: Mutex<RaceState>,
    ledger: Arc<RaceLedger>,
}

impl std::fmt::Debug for Race {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("Race")
            .field("number", &self.number)
            .field("key", &self.key)
            .finish_non_exhaustive()
    }
}

/// How one resolve went.
#[derive(Debug)]
pub enum Resolved {
    Won(DecisionView),
    /// Someone decided first: their decision, as the record's history tells it.
    Lost {
        winner: Option<DecisionView>,
        current: Box<ExecutionRecord>,
    },
}

impl Race {
    pub fn simulation(&self) -> MutexGuard<'_, Simulation> {
        self.simulation.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub fn state(&self) -> MutexGuard<'_, RaceState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// One participant's resolve, on a connection of its own.
    pub async fn resolve(
        self: &Arc<Self>,
        operator_name: String,
        status: Status,
        reason: String,
    ) -> Result<Resolved, WebError> {
        let request = ResolveRequest {
            status,
            reason,
            operator: operator_name.clone(),
            expected_status: Some(self.opened_status),
            result: None,
        };
        let key = self.key.clone();
        let now_ms = self.decided_at_ms;
        let resolved = self
            .ledger
            .pool
            .run(move |ledger| match operator::resolve(ledger, &key, &request, now_ms) {
                Ok(_) => {
                    let history = ledger.history(&key)?;
                    Ok(Ok(views::decision_of(&history)))
                }
                Err(OperatorError::Settle(
                    SettleError::Stale { current, .. } | SettleError::AlreadySettled { current, .. },
                )) => {
                    let history = ledger.history(&key)?;
                    Ok(Err((views::decision_of(&history), current)))
                }
                Err(error) => Err(crate::api::ApiError::invalid(error.to_string())),
            })
            .await
            .map_err(WebError::from)?;
        let mut state = self.state();
        state.tries_total = state.tries_total.saturating_add(1);
        let won = resolved.is_ok();
        if state.tries.len() < RACE_TRIES_KEPT_MAX {
            state.tries.push(Try {
                name: operator_name,
                status,
                won,
            });
        }
        match resolved {
            Ok(Some(decision)) => {
                state.winner = Some(decision.clone());
                Ok(Resolved::Won(decision))
            }
            Ok(None) => Err(WebError::internal(
                "the resolve was recorded but its history holds no decision",
            )),
            Err((winner, current)) => Ok(Resolved::Lost { winner, current }),
        }
    }

    /// After the winning decision: the parked run wakes, hears it, and runs to its end.
    pub fn run_on(&self) -> Result<(), WebError> {
        let verdict = {
            let mut simulation = self.simulation();
            simulation
                .notice_settlements()
                .and_then(|_| simulation.run())
                .map_err(|error| WebError::logged("the race's run could not go on", error))?;
            simulation
                .verdict()
                .map_err(|error| WebError::logged("the race's verdict could not be judged", error))?
        };
        self.state().after = Some(verdict);
        Ok(())
    }
}

/// The room's race, if one is open.
#[derive(Debug, Default)]
pub struct RaceRoom {
    current: Mutex<Option<Arc<Race>>>,
    opened: AtomicU32,
}

impl RaceRoom {
    pub fn current(&self) -> Option<Arc<Race>> {
        self.current.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// Opens a race from the tape the presenter named (by stem), replacing any open race.
    pub fn open(&self, catalogue: &Catalogue, tape_stem: &str) -> Result<Arc<Race>, WebError> {
        let (candidate, tape) = catalogue.race_candidate(tape_stem).ok_or_else(|| {
            let known: Vec<&str> = catalogue
                .race_candidates()
                .iter()
                .map(|candidate| catalogue.tapes()[candidate.tape].stem.as_str())
                .collect();
            WebError::not_found(
                "unknown_race",
                format!(
                    "no tape `{}` that leaves a run parked on an unknown call; these do: {}",
                    views::shorten(tape_stem),
                    known.join(", ")
                ),
            )
        })?;
        let level = &catalogue.levels()[tape.level].level;
        let folder = tempfile::Builder::new()
            .prefix("twice-room-race-")
            .tempdir()
            .map_err(|error| WebError::logged("cannot make the race's folder", error))?;
        let path = folder.path().join(LEDGER_FILE_NAME);
        let mut builder = SimulationBuilder::new(level.clone(), tape.tape.seed)
            .actions(tape.tape.actions.clone())
            .ledger_file(&path);
        if let Some(guards) = tape.tape.guards {
            builder = builder.guards(guards);
        }
        let mut simulation = builder
            .build()
            .map_err(|error| WebError::logged("cannot build the race's simulation", error))?;
        simulation
            .run()
            .map_err(|error| WebError::logged("cannot run the race's simulation", error))?;
        let record = simulation
            .ledger()
            .record(&candidate.key)
            .map_err(|error| WebError::logged("cannot read the race's ledger", error))?
            .filter(|record| record.status.is_unknown())
            .ok_or_else(|| WebError::internal(format!("{} is not unknown after the tape", candidate.key)))?;
        let pool = LedgerPool::open(&path).map_err(|error| WebError::logged("cannot open the race's ledger", error))?;
        let race = Arc::new(Race {
            number: self.opened.fetch_add(1, Ordering::Relaxed) + 1,
            tape: candidate.tape,
            key: candidate.key.clone(),
            opened_status: record.status,
            decided_at_ms: simulation.now_ms(),
            simulation: Mutex::new(simulation),
            state: Mutex::new(RaceState::default()),
            ledger: Arc::new(RaceLedger {
                pool: Arc::new(pool),
                _folder: folder,
            }),
        });
        let previous = self
            .current
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .replace(Arc::clone(&race));
        // The old race (its simulation, its file) goes here, outside the lock.
        drop(previous);
        Ok(race)
    }

    /// Closes the race; returns whether one was open.
    pub fn close(&self) -> bool {
        let previous = self.current.lock().unwrap_or_else(PoisonError::into_inner).take();
        previous.is_some()
    }
}
