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

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use super::error::WebError;
use super::levels::Catalogue;
use super::room_file::{RoomFile, RoomFileError};
use super::views::{self, DecisionView};
use crate::api::pool::LedgerPool;
use serde::{Deserialize, Serialize};
use twice_world::checker::Verdict;
use twice_world::debrief::Debrief;
use twice_world::ledger::{ExecutionRecord, Ledger, LedgerError, SettleError};
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
    /// The verdict once the winner's decision woke the run and it ran to its end, and the
    /// world's debrief of that run (what happened to the money, and why).
    pub after: Option<(Verdict, Debrief)>,
    /// The winning resolve as it was asked (kept, so a restarted room decides it again).
    winning_request: Option<KeptResolve>,
}

/// The ledger file and its connections. The pool is declared first so its connections
/// close before the folder is removed.
struct RaceLedger {
    pool: Arc<LedgerPool>,
    path: PathBuf,
    _folder: tempfile::TempDir,
}

/// One race.
pub struct Race {
    pub number: u32,
    /// Index in the catalogue's tapes.
    pub tape: usize,
    /// That tape's stem (how the room file names it).
    pub tape_stem: String,
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
        let mut request = ResolveRequest::new(status, reason.clone(), operator_name.clone());
        request.expected_status = Some(self.opened_status);
        // The room's race is on the status the room was shown, started or not: everyone in it
        // sees the call and decides on purpose.
        request.acknowledge_in_flight = true;
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
        if won {
            state.winning_request = Some(KeptResolve {
                operator: operator_name.clone(),
                status: status.name().to_owned(),
                reason,
            });
        }
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

    /// After the winning decision: the parked run wakes, hears it, and runs to its end; the
    /// world's debrief says what the decision did to the money.
    pub fn run_on(&self) -> Result<(), WebError> {
        let after = {
            let mut simulation = self.simulation();
            simulation
                .notice_settlements()
                .and_then(|_| simulation.run())
                .map_err(|error| WebError::logged("the race's run could not go on", error))?;
            let verdict = simulation
                .verdict()
                .map_err(|error| WebError::logged("the race's verdict could not be judged", error))?;
            let debrief = twice_world::debrief::of(&simulation, &verdict);
            (verdict, debrief)
        };
        self.state().after = Some(after);
        Ok(())
    }
}

/// How many times the room's race has changed (opened, tried, decided, closed): a page that
/// saw version `n` waits for the next ([`RaceRoom::changed_since`]) instead of polling.
#[derive(Debug)]
struct RaceVersion(tokio::sync::watch::Sender<u64>);

impl Default for RaceVersion {
    /// Counted from the wall clock's milliseconds: a restarted server's versions never repeat
    /// one a page saw before the restart, so no page waits on a version that means another race.
    fn default() -> RaceVersion {
        RaceVersion(tokio::sync::watch::Sender::new(super::now_unix_ms()))
    }
}

/// The room's race, if one is open.
#[derive(Debug, Default)]
pub struct RaceRoom {
    current: Mutex<Option<Arc<Race>>>,
    version: RaceVersion,
    opened: AtomicU32,
    /// Held while the race is read and written to the room file, so writes land in the
    /// order the race changed (each holds everything before it).
    keeping: Mutex<()>,
    /// Where each race's ledger folder goes: beside the room file, so a killed server's
    /// race is swept when the room opens again (`None`: a room in memory; the system's
    /// temporary folder, removed when the race is dropped).
    folder: Option<PathBuf>,
}

impl RaceRoom {
    pub fn current(&self) -> Option<Arc<Race>> {
        self.current.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// The race's version now: every change makes it larger.
    pub fn version(&self) -> u64 {
        *self.version.0.borrow()
    }

    /// Something changed (a race opened, a try, a decision, a close): pages waiting hear it.
    pub fn changed(&self) {
        self.version.0.send_modify(|version| *version += 1);
    }

    /// Waits until the version is no longer `seen`, for at most `wait`; answers the version.
    pub async fn changed_since(&self, seen: u64, wait: std::time::Duration) -> u64 {
        let mut receiver = self.version.0.subscribe();
        if *receiver.borrow_and_update() == seen {
            // A timeout is the answer too: the page asks again.
            let _ = tokio::time::timeout(wait, receiver.changed()).await;
        }
        self.version()
    }

    /// Opens a race from the tape the presenter named (by stem), replacing any open race.
    pub fn open(&self, catalogue: &Catalogue, tape_stem: &str) -> Result<Arc<Race>, WebError> {
        let number = self.opened.fetch_add(1, Ordering::Relaxed) + 1;
        let race = Arc::new(build_race(catalogue, tape_stem, number, self.folder.as_deref())?);
        let previous = self
            .current
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .replace(Arc::clone(&race));
        // The old race (its simulation, its file) goes here, outside the lock.
        drop(previous);
        tracing::info!(
            "race #{number} opened to the room: settle {} from {}",
            race.key,
            race.tape_stem
        );
        self.changed();
        Ok(race)
    }

    /// Closes the race; returns whether one was open.
    pub fn close(&self) -> bool {
        let previous = self.current.lock().unwrap_or_else(PoisonError::into_inner).take();
        if let Some(race) = &previous {
            tracing::info!("race #{} closed", race.number);
            self.changed();
        }
        previous.is_some()
    }

    /// The races as the room file keeps them.
    fn kept(&self) -> KeptRaces {
        let current = self.current().map(|race| {
            let state = race.state();
            KeptRace {
                number: race.number,
                tape: race.tape_stem.clone(),
                tries: state
                    .tries
                    .iter()
                    .map(|tried| KeptTry {
                        name: tried.name.clone(),
                        status: tried.status.name().to_owned(),
                        won: tried.won,
                    })
                    .collect(),
                tries_total: state.tries_total,
                winner: state.winning_request.clone(),
            }
        });
        KeptRaces {
            opened: self.opened.load(Ordering::Relaxed),
            current,
        }
    }

    /// Writes the race as it stands to the room file, before the request that changed it is
    /// answered: who won and every try (the 409s) survive a restart like the rest of the room.
    pub fn keep(&self, room: &RoomFile) -> Result<(), WebError> {
        let _keeping = self.keeping.lock().unwrap_or_else(PoisonError::into_inner);
        let text =
            serde_json::to_string(&self.kept()).map_err(|error| WebError::logged("cannot write the race", error))?;
        room.set_setting(SETTING_RACE, &text)
            .map_err(|error| WebError::logged("the room file could not be written", error))
    }

    /// The races the room file kept: the open one built again from its tape, its tries as
    /// they were, and its winner's resolve decided again on the new ledger (the same request
    /// at the same simulated moment: the same history, the same run after it).
    pub fn restore(catalogue: &Catalogue, room: &RoomFile) -> Result<RaceRoom, RestoreError> {
        let races = RaceRoom {
            folder: room.races_folder(),
            ..RaceRoom::default()
        };
        if let Some(folder) = &races.folder {
            // The room file is this server's alone (it is locked), so whatever race folders
            // are here were left by a server that was killed: its races are built again below.
            sweep(folder).map_err(|error| RestoreError::Folder {
                path: folder.display().to_string(),
                error,
            })?;
        }
        let Some(text) = room.setting(SETTING_RACE)? else {
            return Ok(races);
        };
        let kept: KeptRaces = serde_json::from_str(&text).map_err(|error| RestoreError::Unreadable {
            room: room.path().to_owned(),
            error,
        })?;
        races.opened.store(kept.opened, Ordering::Relaxed);
        let Some(kept) = kept.current else {
            return Ok(races);
        };
        let race = build_race(catalogue, &kept.tape, kept.number, races.folder.as_deref()).map_err(|error| {
            RestoreError::Tape {
                room: room.path().to_owned(),
                tape: kept.tape.clone(),
                message: error.message,
            }
        })?;
        let status_of = |name: &str| {
            Status::parse(name).ok_or_else(|| RestoreError::Status {
                room: room.path().to_owned(),
                name: name.to_owned(),
            })
        };
        {
            let mut state = race.state();
            for tried in &kept.tries {
                state.tries.push(Try {
                    name: tried.name.clone(),
                    status: status_of(&tried.status)?,
                    won: tried.won,
                });
            }
            state.tries_total = kept.tries_total;
        }
        if let Some(winner) = kept.winner {
            let mut request = ResolveRequest::new(
                status_of(&winner.status)?,
                winner.reason.clone(),
                winner.operator.clone(),
            );
            request.expected_status = Some(race.opened_status);
            request.acknowledge_in_flight = true;
            let mut ledger = Ledger::open_existing(&race.ledger.path)?;
            operator::resolve(&mut ledger, &race.key, &request, race.decided_at_ms).map_err(|error| {
                RestoreError::Resolve {
                    room: room.path().to_owned(),
                    error: Box::new(error),
                }
            })?;
            let history = ledger.history(&race.key)?;
            drop(ledger);
            {
                let mut state = race.state();
                state.winner = views::decision_of(&history);
                state.winning_request = Some(winner);
            }
            race.run_on().map_err(|error| RestoreError::RunOn(error.message))?;
        }
        *races.current.lock().unwrap_or_else(PoisonError::into_inner) = Some(Arc::new(race));
        Ok(races)
    }
}

/// Why the race a room file kept cannot be opened again.
#[derive(Debug, thiserror::Error)]
pub enum RestoreError {
    /// The room file's setting cannot be read.
    #[error(transparent)]
    RoomFile(#[from] RoomFileError),
    /// The folder for the races' ledgers beside the room file cannot be swept or made.
    #[error("{path}: the races' folder cannot be made ready: {error}")]
    Folder {
        /// The folder.
        path: String,
        /// Why.
        error: std::io::Error,
    },
    /// The kept race is not the JSON this build writes.
    #[error("{room}: the kept race does not read: {error}")]
    Unreadable {
        /// The room file.
        room: String,
        /// Why.
        error: serde_json::Error,
    },
    /// The kept race's tape is not a race of this campaign.
    #[error("{room}: the kept race on `{tape}`: {message}")]
    Tape {
        /// The room file.
        room: String,
        /// The tape's stem.
        tape: String,
        /// Why.
        message: String,
    },
    /// A try's or the winner's status is not one this build knows.
    #[error("{room}: the kept race: no status `{name}`")]
    Status {
        /// The room file.
        room: String,
        /// The status as kept.
        name: String,
    },
    /// The race's ledger cannot be opened or read.
    #[error(transparent)]
    Ledger(#[from] LedgerError),
    /// The winner's decision is refused on the new ledger.
    #[error("{room}: the kept race's winner cannot decide again: {error}")]
    Resolve {
        /// The room file.
        room: String,
        /// Why (boxed: an operator's error is large, and this one is rare).
        error: Box<OperatorError>,
    },
    /// The race cannot run on after the winner's decision.
    #[error("{0}")]
    RunOn(String),
}

/// Where the room file keeps the race (a room setting: the file's tables stay as they were).
const SETTING_RACE: &str = "race";

/// The races as the room file keeps them (JSON).
#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct KeptRaces {
    /// Races opened so far: a new one takes the next number.
    opened: u32,
    current: Option<KeptRace>,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct KeptRace {
    number: u32,
    /// The tape's stem.
    tape: String,
    tries: Vec<KeptTry>,
    tries_total: u32,
    winner: Option<KeptResolve>,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct KeptTry {
    name: String,
    status: String,
    won: bool,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct KeptResolve {
    operator: String,
    status: String,
    reason: String,
}

/// A race on `tape_stem`'s parked call, numbered `number`: the tape played on a new ledger
/// file in a folder of its own.
/// Empties `folder` of the race folders a killed server left (and makes it if missing).
fn sweep(folder: &Path) -> std::io::Result<()> {
    match std::fs::remove_dir_all(folder) {
        Ok(()) => {}
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
        Err(error) => return Err(error),
    }
    std::fs::create_dir_all(folder)
}

fn build_race(catalogue: &Catalogue, tape_stem: &str, number: u32, folder: Option<&Path>) -> Result<Race, WebError> {
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
    let mut folder_builder = tempfile::Builder::new();
    folder_builder.prefix("twice-room-race-");
    let folder = match folder {
        Some(folder) => folder_builder.tempdir_in(folder),
        None => folder_builder.tempdir(),
    }
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
    Ok(Race {
        number,
        tape: candidate.tape,
        tape_stem: catalogue.tapes()[candidate.tape].stem.clone(),
        key: candidate.key.clone(),
        opened_status: record.status,
        decided_at_ms: simulation.now_ms(),
        simulation: Mutex::new(simulation),
        state: Mutex::new(RaceState::default()),
        ledger: Arc::new(RaceLedger {
            pool: Arc::new(pool),
            path,
            _folder: folder,
        }),
    })
}
