//! Who is in the room: one session per browser, named by a random id in a cookie.
//!
//! The room is bounded on every side: at most `sessions_max` sessions (the next
//! participant hears 503 `room_full`), one level open per session (a simulation bounded by
//! its `max_phases`), progress bounded by the number of levels, a name of at most
//! [`NAME_CHARS_MAX`] characters, and a session idle for `idle_timeout` ends — checked on
//! every request and by a periodic sweep — so a room that emptied does not keep memory.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use axum::http::StatusCode;

use super::error::WebError;
use super::game::{Conclusion, Game, Mode};
use twice_world::checker::Outcome;

/// The cookie that carries the session id.
pub const COOKIE_NAME: &str = "twice_session";
/// Random bytes in a session id (128 bits: not guessable, not enumerable).
pub const SESSION_ID_BYTES: usize = 16;
/// The longest display name.
pub const NAME_CHARS_MAX: usize = 32;

/// A session's id: random, shown only as hex in the cookie.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct SessionId([u8; SESSION_ID_BYTES]);

impl std::fmt::Debug for SessionId {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // An id is a credential: logs show that there is one, not what it is.
        formatter.write_str("SessionId(…)")
    }
}

impl SessionId {
    fn generate() -> Result<SessionId, WebError> {
        let mut bytes = [0_u8; SESSION_ID_BYTES];
        getrandom::fill(&mut bytes).map_err(|error| WebError::logged("no random bytes for a session id", error))?;
        Ok(SessionId(bytes))
    }

    pub fn to_hex(self) -> String {
        self.0.iter().map(|byte| format!("{byte:02x}")).collect()
    }

    /// Exactly [`SESSION_ID_BYTES`] bytes as lowercase hex, or nothing.
    pub fn parse(text: &str) -> Option<SessionId> {
        if text.len() != SESSION_ID_BYTES * 2 || !text.bytes().all(|byte| matches!(byte, b'0'..=b'9' | b'a'..=b'f')) {
            return None;
        }
        let mut bytes = [0_u8; SESSION_ID_BYTES];
        for (index, byte) in bytes.iter_mut().enumerate() {
            *byte = u8::from_str_radix(&text[index * 2..index * 2 + 2], 16).ok()?;
        }
        Some(SessionId(bytes))
    }

    /// The session id in a `Cookie` header's value (`a=1; twice_session=…; b=2`), if any.
    pub fn from_cookie_header(header: &str) -> Option<SessionId> {
        header
            .split(';')
            .filter_map(|pair| pair.trim().split_once('='))
            .find(|(name, _)| *name == COOKIE_NAME)
            .and_then(|(_, value)| SessionId::parse(value.trim()))
    }
}

/// A participant's display name: trimmed, 1 to [`NAME_CHARS_MAX`] letters, digits, spaces
/// and `-_.'`. It is their operator id in the room's race, and the presenter shows it.
pub fn check_name(name: &str) -> Result<String, WebError> {
    let name = name.trim();
    let chars = name.chars().count();
    if chars == 0 {
        return Err(WebError::invalid(
            "name: choose a name the room will see (1 to 32 characters)",
        ));
    }
    if chars > NAME_CHARS_MAX {
        return Err(WebError::invalid(format!(
            "name: {chars} characters, more than the {NAME_CHARS_MAX} allowed"
        )));
    }
    if let Some(bad) = name
        .chars()
        .find(|character| !(character.is_alphanumeric() || matches!(character, ' ' | '-' | '_' | '.' | '\'')))
    {
        return Err(WebError::invalid(format!(
            "name: letters, digits, spaces and - _ . ' only; not {bad:?}"
        )));
    }
    Ok(name.split_whitespace().collect::<Vec<_>>().join(" "))
}

/// A participant's best finish of a level: fewest cards, then fewest phases.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Win {
    pub cards: u32,
    pub phases: u32,
    pub outcome: Outcome,
}

impl Win {
    fn rank(&self) -> (u32, u32) {
        (self.cards, self.phases)
    }
}

/// What a participant did with one level (campaign plays only).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LevelProgress {
    pub finished: bool,
    pub best: Option<Win>,
    /// Plays judged (each time the level went quiet).
    pub plays: u32,
    pub last_outcome: Outcome,
}

/// A participant: their name, their progress by level id, and the level they have open.
#[derive(Debug)]
pub struct Participant {
    pub name: String,
    /// One entry per level id of the catalogue at most.
    pub progress: BTreeMap<String, LevelProgress>,
    pub game: Option<Game>,
}

impl Participant {
    pub fn is_finished(&self, level_id: &str) -> bool {
        self.progress.get(level_id).is_some_and(|progress| progress.finished)
    }

    /// Counts a play that ended; a sandbox play (chosen guards) counts for nothing.
    pub fn record(&mut self, level_id: &str, mode: Mode, conclusion: &Conclusion) {
        if mode != Mode::Campaign {
            return;
        }
        let entry = self.progress.entry(level_id.to_owned()).or_insert(LevelProgress {
            finished: false,
            best: None,
            plays: 0,
            last_outcome: conclusion.verdict.outcome,
        });
        entry.plays = entry.plays.saturating_add(1);
        entry.last_outcome = conclusion.verdict.outcome;
        if conclusion.finished {
            entry.finished = true;
            let win = Win {
                cards: conclusion.cards,
                phases: conclusion.phases,
                outcome: conclusion.verdict.outcome,
            };
            if entry.best.is_none_or(|best| win.rank() < best.rank()) {
                entry.best = Some(win);
            }
        }
    }
}

/// One session of the room.
#[derive(Debug)]
pub struct Session {
    /// The name as chosen at join (it does not change), so listings need no lock on the game.
    pub name: String,
    last_seen: Mutex<Instant>,
    participant: Mutex<Participant>,
}

impl Session {
    /// The participant, locked. Only blocking work (a simulation, its SQLite ledger) takes
    /// this lock, on a blocking thread.
    pub fn participant(&self) -> MutexGuard<'_, Participant> {
        // A panic while a participant was locked leaves a whole struct; go on with it.
        self.participant.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn idle_for(&self, now: Instant) -> Duration {
        now.saturating_duration_since(*self.last_seen.lock().unwrap_or_else(PoisonError::into_inner))
    }

    fn touch(&self, now: Instant) {
        *self.last_seen.lock().unwrap_or_else(PoisonError::into_inner) = now;
    }
}

/// Every session of the room.
#[derive(Debug)]
pub struct Sessions {
    sessions: Mutex<BTreeMap<SessionId, Arc<Session>>>,
    max: usize,
    idle_timeout: Duration,
}

impl Sessions {
    pub fn new(max: usize, idle_timeout: Duration) -> Sessions {
        Sessions {
            sessions: Mutex::new(BTreeMap::new()),
            max,
            idle_timeout,
        }
    }

    fn map(&self) -> MutexGuard<'_, BTreeMap<SessionId, Arc<Session>>> {
        self.sessions.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub fn len(&self) -> usize {
        self.map().len()
    }

    pub fn max(&self) -> usize {
        self.max
    }

    pub fn idle_timeout(&self) -> Duration {
        self.idle_timeout
    }

    /// A new session for `name` (checked with [`check_name`]). `replacing`: the session
    /// this browser had, which ends (so rejoining under a new name frees its slot).
    pub fn join(&self, name: &str, replacing: Option<SessionId>) -> Result<(SessionId, Arc<Session>), WebError> {
        let name = check_name(name)?;
        let id = SessionId::generate()?;
        let now = Instant::now();
        // Dropped after the map's lock is let go: ending a session closes SQLite connections.
        let mut ended = Vec::new();
        let session = {
            let mut map = self.map();
            if let Some(old) = replacing.and_then(|old| map.remove(&old)) {
                ended.push(old);
            }
            let expired: Vec<SessionId> = map
                .iter()
                .filter(|(_, session)| session.idle_for(now) >= self.idle_timeout)
                .map(|(id, _)| *id)
                .collect();
            ended.extend(expired.iter().filter_map(|id| map.remove(id)));
            if map
                .values()
                .any(|session| session.name.to_lowercase() == name.to_lowercase())
            {
                return Err(WebError::conflict(
                    "name_taken",
                    format!("someone in the room is already called {name}: choose another name"),
                ));
            }
            if map.len() >= self.max {
                return Err(WebError::new(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "room_full",
                    format!(
                        "the room is full: {} sessions, the most this server takes (--sessions-max). \
                         Try again when someone leaves, or ask the presenter",
                        self.max
                    ),
                ));
            }
            let session = Arc::new(Session {
                name: name.clone(),
                last_seen: Mutex::new(now),
                participant: Mutex::new(Participant {
                    name,
                    progress: BTreeMap::new(),
                    game: None,
                }),
            });
            map.insert(id, Arc::clone(&session));
            session
        };
        drop(ended);
        Ok((id, session))
    }

    /// The live session `id` names (and it counts as seen now); an idle one ends here.
    pub fn find(&self, id: SessionId) -> Result<Arc<Session>, WebError> {
        let now = Instant::now();
        let mut map = self.map();
        let Some(session) = map.get(&id).cloned() else {
            return Err(no_session());
        };
        if session.idle_for(now) >= self.idle_timeout {
            let ended = map.remove(&id);
            drop(map);
            drop(ended);
            return Err(WebError::new(
                StatusCode::UNAUTHORIZED,
                "session_expired",
                format!(
                    "your session ended after {} minute(s) without a move: join again",
                    self.idle_timeout.as_secs().div_ceil(60)
                ),
            ));
        }
        session.touch(now);
        Ok(session)
    }

    /// Ends a session (the browser left).
    pub fn leave(&self, id: SessionId) -> bool {
        let ended = self.map().remove(&id);
        ended.is_some()
    }

    /// Ends every session idle for the timeout; returns how many.
    pub fn sweep(&self) -> usize {
        let now = Instant::now();
        let ended: Vec<Arc<Session>> = {
            let mut map = self.map();
            let expired: Vec<SessionId> = map
                .iter()
                .filter(|(_, session)| session.idle_for(now) >= self.idle_timeout)
                .map(|(id, _)| *id)
                .collect();
            expired.iter().filter_map(|id| map.remove(id)).collect()
        };
        ended.len()
    }

    /// Every session, by name, for the presenter.
    pub fn all(&self) -> Vec<Arc<Session>> {
        let mut sessions: Vec<Arc<Session>> = self.map().values().cloned().collect();
        sessions.sort_by_key(|session| session.name.to_lowercase());
        sessions
    }

    /// How long each session has been idle, for the presenter.
    pub fn idle_seconds(&self, session: &Session) -> u64 {
        session.idle_for(Instant::now()).as_secs()
    }
}

pub fn no_session() -> WebError {
    WebError::new(
        StatusCode::UNAUTHORIZED,
        "no_session",
        "you have not joined the room (or your session ended, or the server restarted): join with a name",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn session_ids_round_trip_and_nothing_else_parses() {
        let id = SessionId::generate().unwrap();
        assert_eq!(SessionId::parse(&id.to_hex()), Some(id));
        let cookie = format!("theme=dark; {COOKIE_NAME}={}; other=1", id.to_hex());
        assert_eq!(SessionId::from_cookie_header(&cookie), Some(id));
        for text in [
            "",
            "00",
            &"0".repeat(31),
            &"g".repeat(32),
            &"A".repeat(32),
            &"0".repeat(34),
        ] {
            assert_eq!(SessionId::parse(text), None, "{text}");
        }
        assert_eq!(SessionId::from_cookie_header("other=1"), None);
        assert_eq!(format!("{id:?}"), "SessionId(…)");
    }

    #[test]
    fn names_are_trimmed_bounded_and_plain() {
        assert_eq!(check_name("  Ada   Lovelace ").unwrap(), "Ada Lovelace");
        assert_eq!(check_name("O'Brien-2.x_y").unwrap(), "O'Brien-2.x_y");
        assert_eq!(check_name("Zoë").unwrap(), "Zoë");
        for bad in ["", "   ", "<script>", "a/b", "tab\there", &"x".repeat(33)] {
            let error = check_name(bad).unwrap_err();
            assert_eq!(error.code, "invalid_value", "{bad}");
        }
    }

    #[test]
    fn the_room_is_bounded_and_names_are_unique() {
        let sessions = Sessions::new(2, Duration::from_secs(60));
        let (ada, _) = sessions.join("Ada", None).unwrap();
        assert_eq!(sessions.join("ada", None).unwrap_err().code, "name_taken");
        sessions.join("Grace", None).unwrap();
        let full = sessions.join("Linus", None).unwrap_err();
        assert_eq!((full.status, full.code), (StatusCode::SERVICE_UNAVAILABLE, "room_full"));
        // Rejoining replaces the browser's old session: its slot and its name are free again.
        let (again, _) = sessions.join("Ada", Some(ada)).unwrap();
        assert_eq!(sessions.len(), 2);
        assert_eq!(sessions.find(ada).unwrap_err().code, "no_session");
        assert!(sessions.find(again).is_ok());
    }

    #[test]
    fn idle_sessions_end_on_access_and_on_sweep() {
        let sessions = Sessions::new(4, Duration::from_millis(30));
        let (first, _) = sessions.join("Ada", None).unwrap();
        let (second, _) = sessions.join("Grace", None).unwrap();
        std::thread::sleep(Duration::from_millis(60));
        assert_eq!(sessions.find(first).unwrap_err().code, "session_expired");
        assert_eq!(sessions.sweep(), 1);
        assert_eq!(sessions.len(), 0);
        assert_eq!(sessions.find(second).unwrap_err().code, "no_session");
    }
}
