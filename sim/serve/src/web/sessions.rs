//! Who is in the room: one participant per name, each browser named by a random id in a
//! cookie, everything kept in the room file ([`RoomFile`]) so a restart loses no one.
//!
//! The room is bounded on every side: at most `sessions_max` participants hold a place at
//! once (the next hears 503 `room_full`), one level open per participant (a simulation
//! bounded by its `max_phases`), progress bounded by the number of levels, a name of at
//! most 32 characters, at most [`PARTICIPANTS_MAX`] participants in a room
//! file. A participant idle for `idle_timeout` gives up their place and their level's
//! memory — checked on every join and by a periodic sweep — and takes both back with their
//! next request; the room file keeps them meanwhile. A participant on a new browser takes
//! their name back with the code their old screen showed.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use axum::http::StatusCode;
use subtle::ConstantTimeEq;

use super::error::WebError;
use super::room_file::{RoomFile, RoomFileError};

pub use super::identity::{COOKIE_NAME, SessionId, check_name};
/// What a participant did: kept in its own file, named here too as it always was.
pub use super::participant::{LevelProgress, Participant, Win, no_level_open};

/// One participant of the room, with or without a browser now.
#[derive(Debug)]
pub struct Session {
    /// The name as chosen at join (it does not change), so listings need no lock on the game.
    pub name: String,
    /// Their row in the room file.
    pub participant_id: i64,
    /// What takes their name back on another browser (it does not change).
    claim_code: String,
    last_seen: Mutex<Instant>,
    /// Holding one of the room's `sessions_max` places: false once idle for the timeout
    /// (their level leaves memory; their next request brings it back) or after they left.
    live: AtomicBool,
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

    fn is_live(&self) -> bool {
        self.live.load(Ordering::SeqCst)
    }

    /// The presenter's stage: not a participant of the room (no place in the overview or on
    /// the scoreboard, every level open).
    pub fn is_stage(&self) -> bool {
        self.name == STAGE_NAME
    }
}

/// The name of the participant the presenter's stage plays as. Its parentheses are not
/// allowed in a participant's name ([`check_name`]), so nobody can join as the stage.
pub const STAGE_NAME: &str = "the stage (presenter)";

/// Where a participant is, for the presenter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Place {
    /// Holding one of the room's places: a browser asked for something recently.
    Here,
    /// Their browser still names them, but they gave their place up (quiet for the idle
    /// timeout, or the server restarted): their next request takes one again.
    Away,
    /// They left the room (or took their name to another browser that left): only their code
    /// brings them back.
    Left,
}

impl Place {
    pub fn name(self) -> &'static str {
        match self {
            Place::Here => "here",
            Place::Away => "away",
            Place::Left => "left",
        }
    }
}

/// Everyone the room knows, and which browser (by a hash of its session id) is whose.
#[derive(Debug, Default)]
struct People {
    everyone: Vec<Arc<Session>>,
    by_session: BTreeMap<String, Arc<Session>>,
}

impl People {
    fn live(&self) -> usize {
        self.everyone.iter().filter(|session| session.is_live()).count()
    }

    fn named(&self, name: &str) -> Option<Arc<Session>> {
        let folded = name.to_lowercase();
        self.everyone
            .iter()
            .find(|session| session.name.to_lowercase() == folded)
            .cloned()
    }

    /// The browser that held `session` holds it no more.
    fn detach(&mut self, session: &Arc<Session>) {
        self.by_session.retain(|_, held| !Arc::ptr_eq(held, session));
        session.live.store(false, Ordering::SeqCst);
    }
}

/// Wrong codes a name takes before it refuses codes for [`CLAIM_LOCKOUT_MS`].
pub const CLAIM_TRIES_MAX: u32 = 5;
/// How long a name refuses codes after [`CLAIM_TRIES_MAX`] wrong ones.
pub const CLAIM_LOCKOUT_MS: u64 = 60_000;
/// The most participants a room file keeps (people who left included): ten full rooms.
pub const PARTICIPANTS_MAX: usize = 10 * super::SESSIONS_DEFAULT;

/// Every participant of the room, kept in the room file.
#[derive(Debug)]
pub struct Sessions {
    people: Mutex<People>,
    store: RoomFile,
    /// Wrong codes by folded name: how many, and when the last was.
    claim_failures: Mutex<BTreeMap<String, (u32, Instant)>>,
    max: usize,
    idle_timeout: Duration,
}

fn stored(error: RoomFileError) -> WebError {
    WebError::logged("the room file could not be written", error)
}

impl Sessions {
    /// The room as its file holds it: everyone starts without a browser, and takes their
    /// place again with their next request.
    pub fn load(store: RoomFile, max: usize, idle_timeout: Duration) -> Result<Sessions, RoomFileError> {
        let now = Instant::now();
        let mut people = People::default();
        for participant in store.participants()? {
            let session = Arc::new(Session {
                name: participant.name.clone(),
                participant_id: participant.id,
                claim_code: participant.claim_code.clone(),
                last_seen: Mutex::new(now),
                live: AtomicBool::new(false),
                participant: Mutex::new(Participant {
                    id: participant.id,
                    name: participant.name,
                    claim_code: participant.claim_code,
                    progress: participant.progress.into_iter().collect(),
                    game: None,
                    log: participant.game,
                    prediction: participant.prediction,
                    progress_at_ms: participant.progress_at_ms,
                }),
            });
            if let Some(hash) = participant.session_sha256 {
                people.by_session.insert(hash, Arc::clone(&session));
            }
            people.everyone.push(session);
        }
        Ok(Sessions {
            people: Mutex::new(people),
            store,
            claim_failures: Mutex::new(BTreeMap::new()),
            max,
            idle_timeout,
        })
    }

    fn people(&self) -> MutexGuard<'_, People> {
        self.people.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub fn store(&self) -> &RoomFile {
        &self.store
    }

    /// Participants holding a place now.
    pub fn len(&self) -> usize {
        self.people().live()
    }

    pub fn max(&self) -> usize {
        self.max
    }

    pub fn idle_timeout(&self) -> Duration {
        self.idle_timeout
    }

    fn room_full(&self) -> WebError {
        WebError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "room_full",
            format!(
                "the room is full: {} sessions, the most this server takes (--sessions-max). \
                 Try again when someone leaves, or ask the presenter",
                self.max
            ),
        )
    }

    /// A session for `name` (checked with [`check_name`]): a new participant, or, with the
    /// code their screen showed, a participant taking their name back on this browser.
    /// `replacing`: the session this browser had, which ends (its slot is free again).
    pub fn join(
        &self,
        name: &str,
        code: Option<&str>,
        replacing: Option<SessionId>,
    ) -> Result<(SessionId, Arc<Session>), WebError> {
        let name = check_name(name)?;
        let id = SessionId::generate()?;
        let hash = id.sha256();
        let now = Instant::now();
        let mut people = self.people();
        let mut owned = None;
        if let Some(old) = replacing.and_then(|old| people.by_session.get(&old.sha256()).cloned()) {
            if old.name.to_lowercase() == name.to_lowercase() {
                // The browser's own name again: its cookie shows it is theirs.
                owned = Some(old);
            } else {
                people.detach(&old);
                self.store.set_session(old.participant_id, None).map_err(stored)?;
            }
        }
        self.sweep_locked(&mut people, now);
        if let Some(existing) = people.named(&name) {
            let Some(code) = code.filter(|_| owned.is_none()) else {
                if owned.is_some() {
                    let joined = self.attach(&mut people, &existing, id, hash, now)?;
                    tracing::info!("{name} joined again from the same browser");
                    return Ok(joined);
                }
                return Err(WebError::conflict(
                    "name_taken",
                    format!(
                        "someone in the room is already called {name}. If that is you on another \
                         browser, type the code shown under your name on your old screen; if not, \
                         choose another name"
                    ),
                ));
            };
            if let Err(error) = self.check_code(&existing, code, now) {
                tracing::info!("{name}: a wrong code was typed to take the name back ({})", error.code);
                return Err(error);
            }
            let joined = self.attach(&mut people, &existing, id, hash, now)?;
            tracing::info!("{name} took their name back with their code, on another browser");
            return Ok(joined);
        }
        if people.live() >= self.max {
            return Err(self.room_full());
        }
        if people.everyone.len() >= PARTICIPANTS_MAX {
            return Err(WebError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "room_full",
                format!(
                    "this room file has held {PARTICIPANTS_MAX} participants, the most it keeps: \
                     ask the presenter to start a new room (--room)"
                ),
            ));
        }
        let session = self.add(&hash, &name, now, Some(super::now_unix_ms()))?;
        people.everyone.push(Arc::clone(&session));
        people.by_session.insert(hash, Arc::clone(&session));
        tracing::info!(
            "{} joined the room ({} of {} places taken)",
            session.name,
            people.live(),
            self.max
        );
        Ok((id, session))
    }

    /// A new participant in the room file, holding a place from `now`; `progress_at_ms`: when
    /// they count as having last made progress (they joined; `None` for the stage).
    fn add(&self, hash: &str, name: &str, now: Instant, progress_at_ms: Option<u64>) -> Result<Arc<Session>, WebError> {
        let claim_code = generate_claim_code()?;
        let participant_id = self
            .store
            .add_participant(
                hash,
                name,
                &claim_code,
                progress_at_ms.unwrap_or_else(super::now_unix_ms),
            )
            .map_err(stored)?;
        Ok(Arc::new(Session {
            name: name.to_owned(),
            participant_id,
            claim_code: claim_code.clone(),
            last_seen: Mutex::new(now),
            live: AtomicBool::new(true),
            participant: Mutex::new(Participant {
                id: participant_id,
                name: name.to_owned(),
                claim_code,
                progress: BTreeMap::new(),
                game: None,
                log: None,
                prediction: super::prediction::PredictionState::default(),
                progress_at_ms,
            }),
        }))
    }

    /// `session` is browser `id`'s now (any other browser of theirs loses it).
    fn attach(
        &self,
        people: &mut People,
        session: &Arc<Session>,
        id: SessionId,
        hash: String,
        now: Instant,
    ) -> Result<(SessionId, Arc<Session>), WebError> {
        if !session.is_live() && people.live() >= self.max {
            return Err(self.room_full());
        }
        self.store
            .set_session(session.participant_id, Some(&hash))
            .map_err(stored)?;
        people.detach(session);
        session.live.store(true, Ordering::SeqCst);
        session.touch(now);
        people.by_session.insert(hash, Arc::clone(session));
        Ok((id, Arc::clone(session)))
    }

    fn check_code(&self, session: &Session, code: &str, now: Instant) -> Result<(), WebError> {
        let folded = session.name.to_lowercase();
        let mut failures = self.claim_failures.lock().unwrap_or_else(PoisonError::into_inner);
        let lockout = Duration::from_millis(CLAIM_LOCKOUT_MS);
        if let Some((count, last)) = failures.get(&folded)
            && *count >= CLAIM_TRIES_MAX
            && now.saturating_duration_since(*last) < lockout
        {
            return Err(WebError::new(
                StatusCode::TOO_MANY_REQUESTS,
                "too_many_tries",
                format!(
                    "{CLAIM_TRIES_MAX} wrong codes for {}: wait a minute, then type the code your old screen shows",
                    session.name
                ),
            ));
        }
        let expected = &session.claim_code;
        let given = code.trim().to_uppercase();
        if bool::from(given.as_bytes().ct_eq(expected.as_bytes())) {
            failures.remove(&folded);
            return Ok(());
        }
        let entry = failures.entry(folded).or_insert((0, now));
        if now.saturating_duration_since(entry.1) >= lockout {
            entry.0 = 0;
        }
        *entry = (entry.0 + 1, now);
        Err(WebError::new(
            StatusCode::FORBIDDEN,
            "wrong_code",
            format!(
                "that is not {}'s code: it is the {CLAIM_CODE_CHARS} letters and digits shown under the name on the old screen",
                session.name
            ),
        ))
    }

    /// The participant whose browser `id` is; one without a place (back after a quiet
    /// spell or a restart) takes one again if the room has room.
    pub fn find(&self, id: SessionId) -> Result<Arc<Session>, WebError> {
        let now = Instant::now();
        let mut people = self.people();
        let session = people.by_session.get(&id.sha256()).cloned().ok_or_else(no_session)?;
        if !session.is_live() {
            self.sweep_locked(&mut people, now);
            if people.live() >= self.max {
                return Err(self.room_full());
            }
            session.live.store(true, Ordering::SeqCst);
        }
        session.touch(now);
        Ok(session)
    }

    /// The browser left: its cookie no longer names anyone (their name and progress stay;
    /// their code takes them back).
    pub fn leave(&self, id: SessionId) -> Result<bool, WebError> {
        let mut people = self.people();
        let Some(session) = people.by_session.get(&id.sha256()).cloned() else {
            return Ok(false);
        };
        people.detach(&session);
        drop(people);
        self.store.set_session(session.participant_id, None).map_err(stored)?;
        session.participant().game = None;
        Ok(true)
    }

    fn sweep_locked(&self, people: &mut People, now: Instant) -> Vec<Arc<Session>> {
        let quiet: Vec<Arc<Session>> = people
            .everyone
            .iter()
            .filter(|session| session.is_live() && session.idle_for(now) >= self.idle_timeout)
            .cloned()
            .collect();
        for session in &quiet {
            session.live.store(false, Ordering::SeqCst);
        }
        quiet
    }

    /// Gives up the places of participants idle for the timeout, and their levels' memory
    /// (the room file keeps both); returns how many.
    pub fn sweep(&self) -> usize {
        let (quiet, placeless) = {
            let mut people = self.people();
            let quiet = self.sweep_locked(&mut people, Instant::now());
            let placeless: Vec<Arc<Session>> = people
                .everyone
                .iter()
                .filter(|session| !session.is_live())
                .cloned()
                .collect();
            (quiet, placeless)
        };
        for session in &placeless {
            // Ending a simulation closes its SQLite connections: done outside the room's
            // lock, and never waiting for a request that holds the participant.
            if let Ok(mut participant) = session.participant.try_lock() {
                participant.game = None;
            }
        }
        quiet.len()
    }

    /// Everyone the room keeps, by name, with where they are — kept participants show at
    /// once after a restart, before their browsers ask for anything. The stage is no one.
    pub fn everyone(&self) -> Vec<(Arc<Session>, Place)> {
        let people = self.people();
        let mut everyone: Vec<(Arc<Session>, Place)> = people
            .everyone
            .iter()
            .filter(|session| !session.is_stage())
            .map(|session| {
                let place = if session.is_live() {
                    Place::Here
                } else if people.by_session.values().any(|held| Arc::ptr_eq(held, session)) {
                    Place::Away
                } else {
                    Place::Left
                };
                (Arc::clone(session), place)
            })
            .collect();
        drop(people);
        everyone.sort_by_key(|(session, _)| session.name.to_lowercase());
        everyone
    }

    /// How many participants the room keeps (the stage is none).
    pub fn kept_count(&self) -> usize {
        self.people()
            .everyone
            .iter()
            .filter(|session| !session.is_stage())
            .count()
    }

    /// The presenter's stage, for browser `replacing` (whose own session, if any, ends): the
    /// stage's participant, made the first time. It takes a place like anyone else.
    pub fn stage(&self, replacing: Option<SessionId>) -> Result<(SessionId, Arc<Session>), WebError> {
        let id = SessionId::generate()?;
        let hash = id.sha256();
        let now = Instant::now();
        let mut people = self.people();
        if let Some(old) = replacing.and_then(|old| people.by_session.get(&old.sha256()).cloned())
            && !old.is_stage()
        {
            people.detach(&old);
            self.store.set_session(old.participant_id, None).map_err(stored)?;
        }
        if let Some(existing) = people.everyone.iter().find(|session| session.is_stage()).cloned() {
            return self.attach(&mut people, &existing, id, hash, now);
        }
        let session = self.add(&hash, STAGE_NAME, now, None)?;
        people.everyone.push(Arc::clone(&session));
        people.by_session.insert(hash, Arc::clone(&session));
        Ok((id, session))
    }

    /// How long each session has been idle, for the presenter.
    pub fn idle_seconds(&self, session: &Session) -> u64 {
        session.idle_for(Instant::now()).as_secs()
    }
}

/// Characters in a claim code.
pub const CLAIM_CODE_CHARS: usize = 6;
/// What a claim code is made of: no 0/O, 1/I/L to misread off a screen.
const CLAIM_CODE_ALPHABET: &[u8; 31] = b"ABCDEFGHJKMNPQRSTUVWXYZ23456789";

fn generate_claim_code() -> Result<String, WebError> {
    let mut bytes = [0_u8; CLAIM_CODE_CHARS];
    getrandom::fill(&mut bytes).map_err(|error| WebError::logged("no random bytes for a claim code", error))?;
    // 248 = 8 × 31: bytes past it would favour some letters; those few are drawn again.
    let mut code = String::with_capacity(CLAIM_CODE_CHARS);
    for byte in bytes {
        let mut byte = byte;
        while byte >= 248 {
            let mut again = [0_u8; 1];
            getrandom::fill(&mut again).map_err(|error| WebError::logged("no random bytes for a claim code", error))?;
            byte = again[0];
        }
        code.push(CLAIM_CODE_ALPHABET[usize::from(byte) % CLAIM_CODE_ALPHABET.len()] as char);
    }
    Ok(code)
}

pub fn no_session() -> WebError {
    WebError::new(
        StatusCode::UNAUTHORIZED,
        "no_session",
        "you have not joined the room (or your session ended, or the server restarted): join with a name",
    )
}

#[cfg(test)]
#[path = "sessions_tests.rs"]
mod tests;
