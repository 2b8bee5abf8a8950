//! Where the game finds its campaign and keeps the player's files.

use std::path::{Path, PathBuf};

use bevy::prelude::*;

use crate::options::{Options, StartError};

/// Folders the game reads from and writes to.
#[derive(Clone, Debug, Resource)]
pub struct GamePaths {
    /// The campaign: `*.level.ron` and `*.tape.ron`.
    pub levels: PathBuf,
    /// The user's data folder for Twice: progress, saved tapes, scratch ledgers.
    pub data: PathBuf,
}

impl GamePaths {
    /// Picks the folders from the command line, the environment and the usual places,
    /// and creates the data folder.
    pub fn resolve(options: &Options) -> Result<GamePaths, StartError> {
        let levels = match &options.levels {
            Some(folder) if folder.is_dir() => folder.clone(),
            Some(folder) => {
                return Err(StartError::flag(
                    "levels",
                    format!("--levels {}: no such folder", folder.display()),
                ));
            }
            None => find_levels_folder(),
        };
        let data = match &options.data_dir {
            Some(folder) => folder.clone(),
            // The benchmark writes 10,000 rows with synchronous=FULL: on a RAM disk that takes
            // a second instead of waiting for 20,000 fsyncs, and it leaves the player's data alone.
            // One folder for every benchmark (not one per process), so each start removes the
            // scratch ledgers an earlier, killed benchmark left in memory.
            None if options.bench_frames.is_some() => {
                let ram = Path::new("/dev/shm");
                let base = if ram.is_dir() {
                    ram.to_path_buf()
                } else {
                    std::env::temp_dir()
                };
                base.join("twice-bench")
            }
            None => default_data_folder(),
        };
        std::fs::create_dir_all(&data).map_err(|error| StartError::Folder {
            detail: format!("cannot create the data folder {}: {error}", data.display()),
            path: data.clone(),
        })?;
        Ok(GamePaths { levels, data })
    }

    pub fn progress_file(&self) -> PathBuf {
        self.data.join("progress.ron")
    }

    pub fn tapes_folder(&self) -> PathBuf {
        self.data.join("tapes")
    }

    pub fn ledgers_folder(&self) -> PathBuf {
        self.data.join("ledgers")
    }
}

/// `levels/` in the working folder, beside the executable (or a few folders up, as in a
/// cargo target folder), or in the source tree this game was built from.
pub fn find_levels_folder() -> PathBuf {
    let mut candidates = Vec::new();
    if let Ok(here) = std::env::current_dir() {
        candidates.push(here.join("levels"));
    }
    if let Ok(executable) = std::env::current_exe() {
        candidates.extend(
            executable
                .ancestors()
                .skip(1)
                .take(5)
                .map(|folder| folder.join("levels")),
        );
    }
    candidates.push(Path::new(env!("CARGO_MANIFEST_DIR")).join("../levels"));
    candidates
        .iter()
        .find(|folder| holds_a_level(folder))
        .cloned()
        .unwrap_or_else(|| PathBuf::from("levels"))
}

/// A folder named `levels` is the campaign only if it holds a level: a cargo target folder
/// a few folders up may be called `levels` too (a worktree's target folder named after it).
fn holds_a_level(folder: &Path) -> bool {
    std::fs::read_dir(folder).is_ok_and(|entries| {
        entries.flatten().any(|entry| {
            entry
                .file_name()
                .to_str()
                .is_some_and(|name| name.ends_with(twice_world::campaign::LEVEL_SUFFIX))
        })
    })
}

/// `$XDG_DATA_HOME/twice`, else `~/.local/share/twice`, else a folder in the temp folder.
pub fn default_data_folder() -> PathBuf {
    let non_empty = |name: &str| {
        std::env::var_os(name)
            .filter(|value| !value.is_empty())
            .map(PathBuf::from)
    };
    if let Some(data_home) = non_empty("XDG_DATA_HOME") {
        return data_home.join("twice");
    }
    if let Some(home) = non_empty("HOME") {
        return home.join(".local/share/twice");
    }
    std::env::temp_dir().join("twice")
}

/// `to` written relative to the folder `from` (a tape names its level this way).
/// Falls back to `to` itself when the two share no root.
pub fn relative_path(from: &Path, to: &Path) -> PathBuf {
    let absolute = |path: &Path| {
        path.canonicalize().unwrap_or_else(|_| {
            std::env::current_dir()
                .map(|here| here.join(path))
                .unwrap_or_else(|_| path.to_path_buf())
        })
    };
    let (from, to) = (absolute(from), absolute(to));
    pathdiff::diff_paths(&to, &from).unwrap_or(to)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_paths_climb_out_of_the_tape_folder() {
        let root = tempfile::tempdir().expect("temp dir");
        let levels = root.path().join("levels");
        let tapes = root.path().join("data/tapes");
        std::fs::create_dir_all(&levels).expect("levels");
        std::fs::create_dir_all(&tapes).expect("tapes");
        let level = levels.join("01.level.ron");
        std::fs::write(&level, "()").expect("level");
        assert_eq!(
            relative_path(&tapes, &level),
            PathBuf::from("../../levels/01.level.ron")
        );
        assert_eq!(relative_path(&levels, &level), PathBuf::from("01.level.ron"));
    }
}
