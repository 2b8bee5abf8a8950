//! Scratch ledger files: every simulation the game builds writes a fresh SQLite file the
//! player can open with `sqlite3` while playing. A file is deleted when its simulation is.

use std::path::{Path, PathBuf};

use bevy::prelude::*;

use crate::paths::GamePaths;

/// The most stale scratch files one start-up clears (a limit on everything).
pub const STALE_FILES_MAX: usize = 10_000;
const PREFIX: &str = "ledger-";

pub(super) fn plugin(app: &mut App) {
    app.add_systems(PreStartup, prepare_scratch_folder);
}

fn prepare_scratch_folder(mut commands: Commands, paths: Res<GamePaths>) {
    let folder = paths.ledgers_folder();
    let problem = std::fs::create_dir_all(&folder)
        .err()
        .map(|error| format!("cannot create {}: {error}", folder.display()));
    if problem.is_none() {
        remove_stale_files(&folder);
    }
    commands.insert_resource(ScratchLedgers {
        folder,
        next_number: 1,
        problem,
    });
}

/// Hands out new ledger file paths.
#[derive(Debug, Resource)]
pub struct ScratchLedgers {
    pub folder: PathBuf,
    next_number: u64,
    /// Why files cannot be made (the game then falls back to in-memory ledgers and says so).
    pub problem: Option<String>,
}

impl ScratchLedgers {
    pub fn new(folder: PathBuf) -> ScratchLedgers {
        ScratchLedgers {
            folder,
            next_number: 1,
            problem: None,
        }
    }

    /// A path no simulation has used: `ledger-<pid>-<n>-<level>.sqlite`.
    pub fn next_file(&mut self, level_id: &str) -> Option<ScratchFile> {
        if self.problem.is_some() {
            return None;
        }
        loop {
            let name = format!("{PREFIX}{}-{}-{level_id}.sqlite", std::process::id(), self.next_number);
            self.next_number += 1;
            let path = self.folder.join(name);
            if !path.exists() {
                return Some(ScratchFile { path });
            }
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

/// Deletes scratch files left by game processes that are no longer running (a crash, a kill).
fn remove_stale_files(folder: &Path) {
    let Ok(entries) = std::fs::read_dir(folder) else {
        return;
    };
    for entry in entries.flatten().take(STALE_FILES_MAX) {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(rest) = name.strip_prefix(PREFIX) else {
            continue;
        };
        let Some(pid) = rest.split('-').next().and_then(|pid| pid.parse::<u32>().ok()) else {
            continue;
        };
        if pid != std::process::id() && !process_is_running(pid, &entry.path()) {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

/// On Linux, whether the process exists; elsewhere, files younger than a day are kept.
fn process_is_running(pid: u32, file: &Path) -> bool {
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

    #[test]
    fn scratch_files_are_fresh_and_cleaned_up() {
        let folder = tempfile::tempdir().expect("temp dir");
        let mut scratch = ScratchLedgers::new(folder.path().to_path_buf());
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
    }

    #[test]
    fn files_of_dead_processes_are_removed_at_start() {
        let folder = tempfile::tempdir().expect("temp dir");
        // PID 0 is never a user process.
        let stale = folder.path().join("ledger-0-1-level.sqlite");
        let ours = folder
            .path()
            .join(format!("ledger-{}-1-level.sqlite", std::process::id()));
        let other = folder.path().join("notes.txt");
        for path in [&stale, &ours, &other] {
            std::fs::write(path, "x").expect("write");
        }
        remove_stale_files(folder.path());
        if Path::new("/proc").is_dir() {
            assert!(!stale.exists());
        }
        assert!(ours.exists() && other.exists());
    }
}
