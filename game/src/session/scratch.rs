//! Scratch ledger files: every simulation the game builds writes a fresh SQLite file the
//! player can open with `sqlite3` while playing. A file is deleted when its simulation is.
//!
//! A game killed (SIGKILL, a crash, a closed terminal) deletes nothing, so each game keeps its
//! files in a folder of its own, `ledgers/session-<pid>-<start ns>/`, and holds an exclusive
//! lock on the folder's `owner.lock` for as long as it runs. The operating system lets go of
//! the lock when the process ends, however it ends. At start, a game removes every session
//! folder whose lock it can take: nobody is using those. A process id used again (a container
//! restarted, a game started with the id the killed one had) cannot keep a dead game's files,
//! as it could when files were matched to processes by id.

use std::fs::{File, TryLockError};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bevy::prelude::*;

use crate::paths::GamePaths;

/// The most entries of the ledgers folder one start-up looks at (a limit on everything).
pub const STALE_ENTRIES_MAX: usize = 10_000;
/// A folder being set up that is older than this was left by a game killed while starting.
const STARTING_AGE_MAX: Duration = Duration::from_secs(60);
/// A running game's folder (named once its lock is held).
const SESSION_PREFIX: &str = "session-";
/// A folder a game is setting up: its lock is taken before it gets its session name, so no
/// other game can see a session folder whose lock is not yet held.
const STARTING_PREFIX: &str = ".starting-";
/// The file in a session folder whose lock says the game is running.
const OWNER_LOCK: &str = "owner.lock";
/// Scratch files of game versions that kept them all in one folder, named by process id.
const LEGACY_PREFIX: &str = "ledger-";

pub(super) fn plugin(app: &mut App) {
    app.add_systems(PreStartup, prepare_scratch_folder);
}

fn prepare_scratch_folder(mut commands: Commands, paths: Res<GamePaths>) {
    commands.insert_resource(ScratchLedgers::open(&paths.ledgers_folder()));
}

/// Hands out new ledger file paths, in this game's own session folder.
#[derive(Debug, Resource)]
pub struct ScratchLedgers {
    /// This game's session folder.
    pub folder: PathBuf,
    next_number: u64,
    /// Why files cannot be made (the game then falls back to in-memory ledgers and says so).
    pub problem: Option<String>,
    /// Locked for as long as this game runs; `None` when the folder could not be made.
    owner: Option<File>,
}

impl ScratchLedgers {
    /// Removes what killed games left in `ledgers_folder`, then makes this game's session folder
    /// there and locks it. A failure is kept in `problem`: the game then plays on in-memory ledgers.
    pub fn open(ledgers_folder: &Path) -> ScratchLedgers {
        let made = std::fs::create_dir_all(ledgers_folder).and_then(|()| {
            remove_abandoned(ledgers_folder);
            start_session(ledgers_folder)
        });
        match made {
            Ok((folder, owner)) => ScratchLedgers {
                folder,
                next_number: 1,
                problem: None,
                owner: Some(owner),
            },
            Err(error) => ScratchLedgers {
                folder: ledgers_folder.to_path_buf(),
                next_number: 1,
                problem: Some(format!(
                    "cannot make a scratch ledger folder in {}: {error}",
                    ledgers_folder.display()
                )),
                owner: None,
            },
        }
    }

    /// A path no simulation has used: `ledger-<n>-<level>.sqlite` in this game's folder.
    pub fn next_file(&mut self, level_id: &str) -> Option<ScratchFile> {
        if self.problem.is_some() {
            return None;
        }
        loop {
            let name = format!("ledger-{}-{level_id}.sqlite", self.next_number);
            self.next_number += 1;
            let path = self.folder.join(name);
            if !path.exists() {
                return Some(ScratchFile { path });
            }
        }
    }
}

impl Drop for ScratchLedgers {
    /// A game that ends normally takes its folder with it (a killed one leaves it to the next start).
    fn drop(&mut self) {
        if self.owner.is_some() {
            // Already gone, or a file still open elsewhere: the next start tries again.
            let _ = std::fs::remove_dir_all(&self.folder);
        }
    }
}

/// A scratch ledger file, deleted (with its WAL and shared-memory files) when dropped.
/// Keep it after the simulation that writes it, so the connections close first.
#[derive(Debug)]
pub struct ScratchFile {
    path: PathBuf,
}

impl ScratchFile {
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for ScratchFile {
    fn drop(&mut self) {
        for suffix in ["", "-wal", "-shm", "-journal"] {
            let mut name = self.path.clone().into_os_string();
            name.push(suffix);
            // Already gone is fine: the point is that nothing is left behind.
            let _ = std::fs::remove_file(PathBuf::from(name));
        }
    }
}

/// Makes `session-<pid>-<start ns>` in `ledgers_folder`, its lock held before it gets that name.
fn start_session(ledgers_folder: &Path) -> std::io::Result<(PathBuf, File)> {
    let started_ns = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_nanos());
    let unique = format!("{}-{started_ns}", std::process::id());
    let starting = ledgers_folder.join(format!("{STARTING_PREFIX}{unique}"));
    std::fs::create_dir(&starting)?;
    let owner = File::create(starting.join(OWNER_LOCK))?;
    owner.try_lock().map_err(|error| match error {
        TryLockError::Error(error) => error,
        TryLockError::WouldBlock => std::io::Error::other("a new folder's lock is held by another process"),
    })?;
    let folder = ledgers_folder.join(format!("{SESSION_PREFIX}{unique}"));
    std::fs::rename(&starting, &folder)?;
    Ok((folder, owner))
}

/// Deletes what games no longer running left in `ledgers_folder`: session folders whose lock
/// is free, folders left half set up, and files of earlier versions. Best effort: what cannot
/// be removed now is tried again at the next start.
fn remove_abandoned(ledgers_folder: &Path) {
    let Ok(entries) = std::fs::read_dir(ledgers_folder) else {
        return;
    };
    for entry in entries.flatten().take(STALE_ENTRIES_MAX) {
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with(SESSION_PREFIX) {
            if session_is_abandoned(&path) {
                let _ = std::fs::remove_dir_all(&path);
            }
        } else if name.starts_with(STARTING_PREFIX) {
            let age = entry
                .metadata()
                .and_then(|metadata| metadata.modified())
                .ok()
                .and_then(|modified| modified.elapsed().ok());
            if age.is_some_and(|age| age > STARTING_AGE_MAX) {
                let _ = std::fs::remove_dir_all(&path);
            }
        } else if let Some(rest) = name.strip_prefix(LEGACY_PREFIX) {
            let pid = rest.split('-').next().and_then(|pid| pid.parse::<u32>().ok());
            // This game writes no such file, so one named with its own id is a dead game's too.
            if pid.is_some_and(|pid| pid == std::process::id() || !legacy_process_is_running(pid, &path)) {
                let _ = std::fs::remove_file(&path);
            }
        }
    }
}

/// Whether nobody holds the session folder's lock (a folder without one was never a session's).
fn session_is_abandoned(folder: &Path) -> bool {
    let Ok(owner) = File::open(folder.join(OWNER_LOCK)) else {
        return true;
    };
    match owner.try_lock() {
        // Taken, so its game is gone. No game takes up an existing session folder again, so
        // letting go of the lock before the folder is removed lets nobody in.
        Ok(()) => true,
        Err(TryLockError::WouldBlock) => false,
        // A file system without locks: keep the folder rather than risk a running game's files.
        Err(TryLockError::Error(_)) => false,
    }
}

/// For an earlier version's file: on Linux, whether a process with that id exists; elsewhere,
/// files younger than a day are kept.
fn legacy_process_is_running(pid: u32, file: &Path) -> bool {
    let proc_folder = Path::new("/proc");
    if proc_folder.is_dir() {
        return proc_folder.join(pid.to_string()).exists();
    }
    const DAY_SECONDS: u64 = 24 * 60 * 60;
    std::fs::metadata(file)
        .and_then(|metadata| metadata.modified())
        .ok()
        .and_then(|modified| modified.elapsed().ok())
        .is_none_or(|age| age.as_secs() < DAY_SECONDS)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Set (to a ledgers folder) when this test binary runs as the game that gets killed.
    const KILLED_GAME_FOLDER: &str = "TWICE_TEST_KILLED_GAME_LEDGERS";

    fn sessions_in(folder: &Path) -> Vec<PathBuf> {
        let mut sessions: Vec<PathBuf> = std::fs::read_dir(folder)
            .expect("the ledgers folder")
            .flatten()
            .map(|entry| entry.path())
            .filter(|path| {
                path.file_name()
                    .is_some_and(|name| name.to_string_lossy().starts_with(SESSION_PREFIX))
            })
            .collect();
        sessions.sort();
        sessions
    }

    #[test]
    fn scratch_files_are_fresh_and_cleaned_up() {
        let folder = tempfile::tempdir().expect("temp dir");
        let mut scratch = ScratchLedgers::open(folder.path());
        assert_eq!(scratch.problem, None);
        let first = scratch.next_file("naive-retry").expect("a file");
        let second = scratch.next_file("naive-retry").expect("a file");
        assert_ne!(first.path(), second.path());
        std::fs::write(first.path(), "x").expect("write");
        let mut wal = first.path().as_os_str().to_owned();
        wal.push("-wal");
        std::fs::write(&wal, "x").expect("write");
        let path = first.path().to_path_buf();
        drop(first);
        assert!(!path.exists());
        assert!(!PathBuf::from(wal).exists());
        // A game that ends normally leaves no folder either.
        let session = scratch.folder.clone();
        assert!(session.starts_with(folder.path()) && session.is_dir());
        drop(scratch);
        assert!(!session.exists());
    }

    /// Not a test on its own: the game that [`a_killed_games_files_are_removed_at_the_next_start`]
    /// starts in a child process and kills.
    #[test]
    #[ignore = "run by a_killed_games_files_are_removed_at_the_next_start, in a process of its own"]
    fn game_that_gets_killed() {
        // Run on its own (`--include-ignored`), it has no folder to play in and nothing to do.
        let Some(folder) = std::env::var_os(KILLED_GAME_FOLDER) else {
            return;
        };
        let mut scratch = ScratchLedgers::open(Path::new(&folder));
        assert_eq!(scratch.problem, None);
        let file = scratch.next_file("naive-retry").expect("a file");
        std::fs::write(file.path(), "a ledger").expect("write");
        // As SIGKILL would: no destructor runs, no file is deleted; the kernel drops the lock.
        std::process::abort();
    }

    #[test]
    fn a_killed_games_files_are_removed_at_the_next_start() {
        let folder = tempfile::tempdir().expect("temp dir");
        let killed = std::process::Command::new(std::env::current_exe().expect("this test binary"))
            .args(["--ignored", "--exact", "session::scratch::tests::game_that_gets_killed"])
            .env(KILLED_GAME_FOLDER, folder.path())
            .output()
            .expect("run the game that gets killed");
        assert!(!killed.status.success(), "it was killed: {killed:?}");
        let left = sessions_in(folder.path());
        assert_eq!(left.len(), 1, "the killed game left its folder: {killed:?}");
        assert!(left[0].join("ledger-1-naive-retry.sqlite").is_file());
        let next = ScratchLedgers::open(folder.path());
        assert_eq!(
            sessions_in(folder.path()),
            vec![next.folder.clone()],
            "only the new game's folder"
        );
    }

    #[test]
    fn a_running_games_files_are_kept() {
        let folder = tempfile::tempdir().expect("temp dir");
        let mut running = ScratchLedgers::open(folder.path());
        let file = running.next_file("naive-retry").expect("a file");
        std::fs::write(file.path(), "a ledger").expect("write");
        // Its id is this process's too: only the lock tells the two games apart.
        let second = ScratchLedgers::open(folder.path());
        assert_ne!(second.folder, running.folder);
        assert!(file.path().is_file(), "the running game's ledger is left alone");
        assert_eq!(sessions_in(folder.path()).len(), 2);
    }

    #[test]
    fn what_earlier_versions_and_half_started_games_left_is_removed() {
        let folder = tempfile::tempdir().expect("temp dir");
        // PID 0 is never a user process; this process's own id cannot have written the
        // old-style file either (the old rule kept such files forever).
        let dead = folder.path().join("ledger-0-1-level.sqlite");
        let own_id = folder
            .path()
            .join(format!("ledger-{}-1-level.sqlite-wal", std::process::id()));
        let other = folder.path().join("notes.txt");
        for path in [&dead, &own_id, &other] {
            std::fs::write(path, "x").expect("write");
        }
        let old_start = folder.path().join(format!("{STARTING_PREFIX}1-1"));
        let young_start = folder.path().join(format!("{STARTING_PREFIX}2-2"));
        for path in [&old_start, &young_start] {
            std::fs::create_dir(path).expect("a starting folder");
        }
        let long_ago = SystemTime::now() - 2 * STARTING_AGE_MAX;
        File::open(&old_start)
            .and_then(|handle| handle.set_modified(long_ago))
            .expect("age the folder");
        let scratch = ScratchLedgers::open(folder.path());
        assert_eq!(scratch.problem, None);
        if Path::new("/proc").is_dir() {
            assert!(!dead.exists());
        }
        assert!(!own_id.exists() && !old_start.exists());
        assert!(other.exists() && young_start.exists());
    }

    #[test]
    fn a_folder_that_cannot_be_made_is_a_problem_not_a_panic() {
        let folder = tempfile::tempdir().expect("temp dir");
        let file = folder.path().join("a-file");
        std::fs::write(&file, "x").expect("write");
        let mut scratch = ScratchLedgers::open(&file.join("ledgers"));
        let problem = scratch.problem.clone().expect("a problem");
        assert!(problem.contains("a-file"), "{problem}");
        assert!(scratch.next_file("naive-retry").is_none());
        drop(scratch);
        assert!(file.is_file(), "nothing removed");
    }
}
