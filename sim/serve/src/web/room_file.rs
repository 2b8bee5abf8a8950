//! The room file: everything a room must not lose, in one SQLite file (`--room`).
//!
//! A workshop lasts an hour and the server may not: a restart to change `--sessions-max`,
//! a crash, a laptop lid. So the room keeps its participants (name, the short code that
//! takes the name back on a new browser, a hash of their cookie), their progress, the tape
//! of each level's best win, the log of each open level ([`GameLog`]), the presenter's
//! secret and the room's settings here. Every acknowledged request wrote its change in one
//! transaction first: WAL with `synchronous = FULL`, as the ledger, so an answer the
//! browser saw survives SIGKILL and power loss.
//!
//! The file is opened the way the ledger is: identified before anything is changed (a file
//! that is not a room is left byte for byte as it was), a schema version checked, a corrupt
//! or locked file refused with an error naming it. One server owns a room at a time: the
//! connection takes SQLite's exclusive lock, so a second `twice-sim web` on the same file
//! is told the room is in use.

use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard, PoisonError};

use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};
use twice_world::checker::Outcome;
use twice_world::sqlite_file::{self, DurabilityError, Failure};

use super::game_log::GameLog;
use super::prediction::PredictionState;
use super::sessions::{LevelProgress, Win};

/// The schema this code writes and reads; any other is refused, not migrated blindly.
/// Version 2 added `predictions` ([`MIGRATION_1_TO_2`]); version 3 counts each level's
/// losses and when each participant last finished a level for the first time, for the
/// presenter's "who needs help" ([`MIGRATION_2_TO_3`]). Older rooms are migrated step by step.
pub const ROOM_SCHEMA_VERSION: u32 = 3;
/// The tables a room file has, by name (sorted): how a room file is told from other files.
const ROOM_TABLES: [&str; 6] = [
    "games",
    "participants",
    "predictions",
    "progress",
    "room_settings",
    "won_tapes",
];
/// The tables of a version 1 room (before predictions were kept).
const ROOM_TABLES_1: [&str; 5] = ["games", "participants", "progress", "room_settings", "won_tapes"];

/// Why the room file could not be used. Every message names the file.
#[derive(Debug, thiserror::Error)]
pub enum RoomFileError {
    #[error("{path}: not a Twice room file ({detail}); pass another --room file, or a new path")]
    NotARoom { path: String, detail: String },
    #[error("{path}: the room file is corrupt ({detail}); it was left untouched: start with a new --room file")]
    Corrupt { path: String, detail: String },
    #[error(
        "{path}: the room file is in use (locked by another process, most likely another \
         `twice-sim web` on the same --room file); stop that one or pass another --room file"
    )]
    Locked { path: String },
    #[error("{path}: room file schema version {found}, but this build reads version {ROOM_SCHEMA_VERSION}")]
    SchemaVersion { path: String, found: String },
    #[error("{path}: cannot open the room file: {detail}")]
    Open { path: String, detail: String },
    #[error("{path}: {context}: {source}")]
    Sqlite {
        path: String,
        context: &'static str,
        #[source]
        source: rusqlite::Error,
    },
    #[error("{path}: participant {name}: {detail}")]
    BadRow { path: String, name: String, detail: String },
}

/// A participant as the room file keeps them.
#[derive(Clone, Debug)]
pub struct StoredParticipant {
    pub id: i64,
    /// SHA-256 of their session id, hex; `None` after they left (only their code brings them back).
    pub session_sha256: Option<String>,
    pub name: String,
    pub claim_code: String,
    pub progress: Vec<(String, LevelProgress)>,
    pub game: Option<GameLog>,
    pub prediction: PredictionState,
    /// When they joined or last finished a level for the first time (Unix ms); `None` in a
    /// room kept before this was.
    pub progress_at_ms: Option<u64>,
}

/// What one acknowledged request changed, written in one transaction.
#[derive(Debug, Default)]
pub struct Change<'a> {
    /// The open level's log: `Some(None)` closes it.
    pub game: Option<Option<&'a GameLog>>,
    pub progress: Option<(&'a str, &'a LevelProgress)>,
    /// A new best win's tape (RON), by level id.
    pub won_tape: Option<(&'a str, &'a str)>,
    /// The participant's predictions, when a request changed them.
    pub prediction: Option<&'a PredictionState>,
    /// They finished a level for the first time, at this moment (Unix ms).
    pub progress_at_ms: Option<u64>,
}

/// The room file, one connection, used by one thread at a time.
#[derive(Debug)]
pub struct RoomFile {
    path: String,
    connection: Mutex<Connection>,
}

impl RoomFile {
    /// Opens (or creates) the room file at `path`.
    pub fn open(path: &Path) -> Result<RoomFile, RoomFileError> {
        let shown = path.display().to_string();
        let connection = sqlite_file::open(path, true).map_err(|error| RoomFileError::Open {
            path: shown.clone(),
            detail: error.to_string(),
        })?;
        let room = RoomFile {
            path: shown,
            connection: Mutex::new(connection),
        };
        room.prepare(true)?;
        Ok(room)
    }

    /// Where the races' ledger folders go: `<room file>.races` beside it (`None` for a room
    /// in memory).
    pub fn races_folder(&self) -> Option<PathBuf> {
        (self.path != ":memory:").then(|| PathBuf::from(format!("{}.races", self.path)))
    }

    /// A room kept in memory only (tests, and a room run with `--room :memory:`).
    pub fn memory() -> Result<RoomFile, RoomFileError> {
        let connection = Connection::open_in_memory().map_err(|error| RoomFileError::Open {
            path: ":memory:".into(),
            detail: error.to_string(),
        })?;
        let room = RoomFile {
            path: ":memory:".into(),
            connection: Mutex::new(connection),
        };
        room.prepare(false)?;
        Ok(room)
    }

    pub fn path(&self) -> &str {
        &self.path
    }

    fn connection(&self) -> MutexGuard<'_, Connection> {
        self.connection.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn sqlite(&self, context: &'static str) -> impl FnOnce(rusqlite::Error) -> RoomFileError + '_ {
        move |source| match sqlite_file::failure_of(&source) {
            Failure::NotADatabase => RoomFileError::NotARoom {
                path: self.path.clone(),
                detail: source.to_string(),
            },
            Failure::Corrupt => RoomFileError::Corrupt {
                path: self.path.clone(),
                detail: source.to_string(),
            },
            Failure::Locked => RoomFileError::Locked {
                path: self.path.clone(),
            },
            Failure::Other => RoomFileError::Sqlite {
                path: self.path.clone(),
                context,
                source,
            },
        }
    }

    /// Identifies the file, takes the exclusive lock, makes it durable and gives a new file
    /// its schema.
    fn prepare(&self, on_disk: bool) -> Result<(), RoomFileError> {
        let connection = self.connection();
        sqlite_file::wait_when_busy(&connection).map_err(self.sqlite("setting the busy timeout"))?;
        // Reading the table names changes nothing: a file that is not a room stays as it was.
        let tables = sqlite_file::table_names(&connection).map_err(self.sqlite("reading the tables"))?;
        let is_new = tables.is_empty();
        if !is_new && tables != ROOM_TABLES && tables != ROOM_TABLES_1 {
            return Err(RoomFileError::NotARoom {
                path: self.path.clone(),
                detail: format!("its tables are {}", tables.join(", ")),
            });
        }
        if on_disk {
            // One server per room: the lock is taken at the first write and kept.
            connection
                .execute_batch("PRAGMA locking_mode = EXCLUSIVE;")
                .map_err(self.sqlite("taking the room's lock"))?;
            sqlite_file::make_durable(&connection).map_err(|error| match error {
                DurabilityError::Sqlite { context, error } => self.sqlite(context)(error),
                DurabilityError::NotWal { mode } => RoomFileError::Open {
                    path: self.path.clone(),
                    detail: DurabilityError::not_wal_detail(&mode),
                },
            })?;
        }
        let transaction = connection
            .unchecked_transaction()
            .map_err(self.sqlite("starting the schema"))?;
        if is_new {
            transaction
                .execute_batch(SCHEMA)
                .map_err(self.sqlite("creating the schema"))?;
            transaction
                .execute(
                    "INSERT INTO room_settings (key, value) VALUES ('schema_version', ?1)",
                    [ROOM_SCHEMA_VERSION.to_string()],
                )
                .map_err(self.sqlite("writing the schema version"))?;
        } else {
            let found: Option<String> = transaction
                .query_row(
                    "SELECT value FROM room_settings WHERE key = 'schema_version'",
                    [],
                    |row| row.get(0),
                )
                .optional()
                .map_err(self.sqlite("reading the schema version"))?;
            let readable: &[&str] = if tables == ROOM_TABLES_1 { &["1"] } else { &["2", "3"] };
            let Some(version) = found.as_deref().filter(|found| readable.contains(found)) else {
                return Err(RoomFileError::SchemaVersion {
                    path: self.path.clone(),
                    found: found.unwrap_or_else(|| "none".into()),
                });
            };
            if version == "1" {
                transaction
                    .execute_batch(MIGRATION_1_TO_2)
                    .map_err(self.sqlite("adding the predictions table (version 1 to 2)"))?;
            }
            if version != "3" {
                transaction
                    .execute_batch(MIGRATION_2_TO_3)
                    .map_err(self.sqlite("adding losses and progress times (version 2 to 3)"))?;
            }
        }
        transaction.commit().map_err(self.sqlite("committing the schema"))
    }

    /// A room setting (`presenter_secret`, `unlock_all`, `path`, `race`), if set.
    pub fn setting(&self, key: &str) -> Result<Option<String>, RoomFileError> {
        self.connection()
            .query_row("SELECT value FROM room_settings WHERE key = ?1", [key], |row| {
                row.get(0)
            })
            .optional()
            .map_err(self.sqlite("reading a setting"))
    }

    pub fn set_setting(&self, key: &str, value: &str) -> Result<(), RoomFileError> {
        self.connection()
            .execute(
                "INSERT INTO room_settings (key, value) VALUES (?1, ?2) \
                 ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                [key, value],
            )
            .map(drop)
            .map_err(self.sqlite("writing a setting"))
    }

    /// A new participant, joining at `joined_at_ms` (Unix ms); answers their id.
    pub fn add_participant(
        &self,
        session_sha256: &str,
        name: &str,
        claim_code: &str,
        joined_at_ms: u64,
    ) -> Result<i64, RoomFileError> {
        let connection = self.connection();
        connection
            .execute(
                "INSERT INTO participants (session_sha256, name, name_folded, claim_code, progress_at_ms) \
                 VALUES (?1, ?2, ?3, ?4, ?5)",
                params![
                    session_sha256,
                    name,
                    name.to_lowercase(),
                    claim_code,
                    i64::try_from(joined_at_ms).unwrap_or(i64::MAX)
                ],
            )
            .map_err(self.sqlite("adding a participant"))?;
        Ok(connection.last_insert_rowid())
    }

    /// Which session (by its id's hash) is this participant's now; `None`: none (they left).
    pub fn set_session(&self, participant: i64, session_sha256: Option<&str>) -> Result<(), RoomFileError> {
        self.connection()
            .execute(
                "UPDATE participants SET session_sha256 = ?2 WHERE id = ?1",
                params![participant, session_sha256],
            )
            .map(drop)
            .map_err(self.sqlite("moving a participant to a new session"))
    }

    /// Writes what one request changed, in one transaction: on disk before it is answered.
    pub fn save(&self, participant: i64, change: &Change<'_>) -> Result<(), RoomFileError> {
        let mut connection = self.connection();
        let transaction = connection
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(self.sqlite("starting a save"))?;
        if let Some(game) = change.game {
            match game {
                Some(log) => {
                    let text = serde_json::to_string(log).expect("a game log serializes");
                    transaction
                        .execute(
                            "INSERT INTO games (participant, log) VALUES (?1, ?2) \
                             ON CONFLICT (participant) DO UPDATE SET log = excluded.log",
                            params![participant, text],
                        )
                        .map_err(self.sqlite("saving the open level"))?;
                }
                None => {
                    transaction
                        .execute("DELETE FROM games WHERE participant = ?1", [participant])
                        .map_err(self.sqlite("closing the open level"))?;
                }
            }
        }
        if let Some((level, progress)) = change.progress {
            let best = progress.best;
            transaction
                .execute(
                    "INSERT INTO progress (participant, level, finished, plays, last_outcome, \
                         best_cards, best_phases, best_outcome, losses) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9) \
                     ON CONFLICT (participant, level) DO UPDATE SET finished = excluded.finished, \
                         plays = excluded.plays, last_outcome = excluded.last_outcome, \
                         best_cards = excluded.best_cards, best_phases = excluded.best_phases, \
                         best_outcome = excluded.best_outcome, losses = excluded.losses",
                    params![
                        participant,
                        level,
                        progress.finished,
                        progress.plays,
                        progress.last_outcome.name(),
                        best.map(|win| win.cards),
                        best.map(|win| win.phases),
                        best.map(|win| win.outcome.name()),
                        progress.losses,
                    ],
                )
                .map_err(self.sqlite("saving progress"))?;
        }
        if let Some(at_ms) = change.progress_at_ms {
            transaction
                .execute(
                    "UPDATE participants SET progress_at_ms = ?2 WHERE id = ?1",
                    params![participant, i64::try_from(at_ms).unwrap_or(i64::MAX)],
                )
                .map_err(self.sqlite("saving when progress was made"))?;
        }
        if let Some(prediction) = change.prediction {
            let text = serde_json::to_string(prediction).expect("predictions serialize");
            transaction
                .execute(
                    "INSERT INTO predictions (participant, state) VALUES (?1, ?2) \
                     ON CONFLICT (participant) DO UPDATE SET state = excluded.state",
                    params![participant, text],
                )
                .map_err(self.sqlite("saving predictions"))?;
        }
        if let Some((level, tape)) = change.won_tape {
            transaction
                .execute(
                    "INSERT INTO won_tapes (participant, level, tape) VALUES (?1, ?2, ?3) \
                     ON CONFLICT (participant, level) DO UPDATE SET tape = excluded.tape",
                    params![participant, level, tape],
                )
                .map_err(self.sqlite("saving a won tape"))?;
        }
        transaction.commit().map_err(self.sqlite("committing a save"))
    }

    /// The tape of a participant's best win of a level, if any.
    pub fn won_tape(&self, participant: i64, level: &str) -> Result<Option<String>, RoomFileError> {
        self.connection()
            .query_row(
                "SELECT tape FROM won_tapes WHERE participant = ?1 AND level = ?2",
                params![participant, level],
                |row| row.get(0),
            )
            .optional()
            .map_err(self.sqlite("reading a won tape"))
    }

    /// Each participant's progress by level, from the progress table.
    fn read_progress(
        &self,
        connection: &Connection,
        participants: &mut [StoredParticipant],
    ) -> Result<(), RoomFileError> {
        let mut statement = connection
            .prepare(
                "SELECT participant, level, finished, plays, last_outcome, best_cards, best_phases, best_outcome, \
                 losses FROM progress ORDER BY participant, level",
            )
            .map_err(self.sqlite("reading progress"))?;
        type ProgressRow = (
            i64,
            String,
            bool,
            u32,
            String,
            Option<u32>,
            Option<u32>,
            Option<String>,
            u32,
        );
        let rows: Vec<ProgressRow> = statement
            .query_map([], |row| {
                Ok((
                    row.get(0)?,
                    row.get(1)?,
                    row.get(2)?,
                    row.get(3)?,
                    row.get(4)?,
                    row.get(5)?,
                    row.get(6)?,
                    row.get(7)?,
                    row.get(8)?,
                ))
            })
            .and_then(Iterator::collect)
            .map_err(self.sqlite("reading progress"))?;
        for (id, level, finished, plays, last, cards, phases, outcome, losses) in rows {
            let Some(index) = index_of(participants, id) else {
                continue;
            };
            let bad = |detail: String| RoomFileError::BadRow {
                path: self.path.clone(),
                name: participants[index].name.clone(),
                detail,
            };
            let outcome_of = |text: &str| {
                Outcome::parse(text).ok_or_else(|| bad(format!("level {level}: `{text}` is not an outcome")))
            };
            let best = match (cards, phases, outcome) {
                (Some(cards), Some(phases), Some(outcome)) => Some(Win {
                    cards,
                    phases,
                    outcome: outcome_of(&outcome)?,
                }),
                _ => None,
            };
            let progress = LevelProgress {
                finished,
                best,
                plays,
                last_outcome: outcome_of(&last)?,
                losses,
            };
            participants[index].progress.push((level, progress));
        }
        Ok(())
    }

    /// Every participant with their progress and open level, oldest first.
    pub fn participants(&self) -> Result<Vec<StoredParticipant>, RoomFileError> {
        let connection = self.connection();
        let mut statement = connection
            .prepare("SELECT id, session_sha256, name, claim_code, progress_at_ms FROM participants ORDER BY id")
            .map_err(self.sqlite("reading participants"))?;
        let mut participants: Vec<StoredParticipant> = statement
            .query_map([], |row| {
                Ok(StoredParticipant {
                    id: row.get(0)?,
                    session_sha256: row.get(1)?,
                    name: row.get(2)?,
                    claim_code: row.get(3)?,
                    progress: Vec::new(),
                    game: None,
                    prediction: PredictionState::default(),
                    progress_at_ms: row.get::<_, Option<i64>>(4)?.and_then(|at| u64::try_from(at).ok()),
                })
            })
            .and_then(Iterator::collect)
            .map_err(self.sqlite("reading participants"))?;
        self.read_progress(&connection, &mut participants)?;
        let mut statement = connection
            .prepare("SELECT participant, log FROM games")
            .map_err(self.sqlite("reading open levels"))?;
        let rows: Vec<(i64, String)> = statement
            .query_map([], |row| Ok((row.get(0)?, row.get(1)?)))
            .and_then(Iterator::collect)
            .map_err(self.sqlite("reading open levels"))?;
        for (id, text) in rows {
            let Some(index) = index_of(&participants, id) else {
                continue;
            };
            let log = serde_json::from_str(&text).map_err(|error| RoomFileError::BadRow {
                path: self.path.clone(),
                name: participants[index].name.clone(),
                detail: format!("the open level's log does not read: {error}"),
            })?;
            participants[index].game = Some(log);
        }
        let mut statement = connection
            .prepare("SELECT participant, state FROM predictions")
            .map_err(self.sqlite("reading predictions"))?;
        let rows: Vec<(i64, String)> = statement
            .query_map([], |row| Ok((row.get(0)?, row.get(1)?)))
            .and_then(Iterator::collect)
            .map_err(self.sqlite("reading predictions"))?;
        for (id, text) in rows {
            let Some(index) = index_of(&participants, id) else {
                continue;
            };
            participants[index].prediction = serde_json::from_str(&text).map_err(|error| RoomFileError::BadRow {
                path: self.path.clone(),
                name: participants[index].name.clone(),
                detail: format!("the predictions do not read: {error}"),
            })?;
        }
        Ok(participants)
    }
}

/// Where the participant with row `id` is in `participants`.
fn index_of(participants: &[StoredParticipant], id: i64) -> Option<usize> {
    participants.iter().position(|stored| stored.id == id)
}

/// The room's tables. Names are unique whatever their case (`name_folded`).
const SCHEMA: &str = "
CREATE TABLE room_settings (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE participants (
    id INTEGER PRIMARY KEY,
    session_sha256 TEXT UNIQUE,
    name TEXT NOT NULL,
    name_folded TEXT NOT NULL UNIQUE,
    claim_code TEXT NOT NULL,
    progress_at_ms INTEGER
);
CREATE TABLE progress (
    participant INTEGER NOT NULL REFERENCES participants (id),
    level TEXT NOT NULL,
    finished INTEGER NOT NULL,
    plays INTEGER NOT NULL,
    last_outcome TEXT NOT NULL,
    best_cards INTEGER,
    best_phases INTEGER,
    best_outcome TEXT,
    losses INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (participant, level)
);
CREATE TABLE games (participant INTEGER PRIMARY KEY REFERENCES participants (id), log TEXT NOT NULL);
CREATE TABLE predictions (participant INTEGER PRIMARY KEY REFERENCES participants (id), state TEXT NOT NULL);
CREATE TABLE won_tapes (
    participant INTEGER NOT NULL REFERENCES participants (id),
    level TEXT NOT NULL,
    tape TEXT NOT NULL,
    PRIMARY KEY (participant, level)
);
";

/// What a version 1 room gains: the participants' predictions (JSON of [`PredictionState`]).
const MIGRATION_1_TO_2: &str = "
CREATE TABLE predictions (participant INTEGER PRIMARY KEY REFERENCES participants (id), state TEXT NOT NULL);
UPDATE room_settings SET value = '2' WHERE key = 'schema_version';
";

/// What a version 2 room gains: each level's losses (none counted before), and when each
/// participant last made progress (unknown before: the presenter counts from the restart).
const MIGRATION_2_TO_3: &str = "
ALTER TABLE progress ADD COLUMN losses INTEGER NOT NULL DEFAULT 0;
ALTER TABLE participants ADD COLUMN progress_at_ms INTEGER;
UPDATE room_settings SET value = '3' WHERE key = 'schema_version';
";

/// Where a room file goes unless `--room` says: beside the levels, so a workshop's folder
/// holds its room (`levels/../twice-room.sqlite`).
pub fn default_room_path(levels: &Path) -> PathBuf {
    let folder = levels.canonicalize().unwrap_or_else(|_| levels.to_path_buf());
    folder.parent().map_or_else(
        || PathBuf::from(DEFAULT_ROOM_FILE),
        |parent| parent.join(DEFAULT_ROOM_FILE),
    )
}

/// The room file's name when `--room` is not given.
pub const DEFAULT_ROOM_FILE: &str = "twice-room.sqlite";

#[cfg(test)]
#[path = "room_file_tests.rs"]
mod tests;
