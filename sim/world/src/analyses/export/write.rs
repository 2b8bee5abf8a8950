//! Writing an exported project to disk, all or nothing: the files go into a hidden folder
//! beside the destination that is renamed into place once every file is written, so a failed
//! export leaves nothing a developer could mistake for a project.

use std::path::{Path, PathBuf};

use super::Files;

/// How many numbered folders [`write_new_folder`] tries before it gives up.
pub const NUMBERED_FOLDERS_MAX: u32 = 10_000;

/// Why a project was not written. Nothing of it is left behind either way.
#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    /// The destination holds something: an export never overwrites.
    #[error("{}: the folder exists and is not empty; nothing was written", .out.display())]
    NotEmpty { out: PathBuf },
    /// Every numbered folder up to [`NUMBERED_FOLDERS_MAX`] exists.
    #[error("{}: {NUMBERED_FOLDERS_MAX} folders named {stem}-N exist already; nothing was written", .root.display())]
    NoFreeFolder { root: PathBuf, stem: String },
    /// The file system refused.
    #[error("{}: {source}; nothing was written", .out.display())]
    Io { out: PathBuf, source: std::io::Error },
}

/// Writes `files` under `out`, which must not exist or be an empty folder.
///
/// # Errors
///
/// [`WriteError::NotEmpty`] when `out` holds anything, [`WriteError::Io`] when a file or the
/// rename fails; either way nothing is left of the project.
pub fn write_project(out: &Path, files: &Files) -> Result<(), WriteError> {
    if out.exists() {
        let empty = std::fs::read_dir(out).is_ok_and(|mut entries| entries.next().is_none());
        if !empty {
            return Err(WriteError::NotEmpty { out: out.to_path_buf() });
        }
    }
    let name = out
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_default();
    let partial = out.with_file_name(format!(".{name}.partial-{}", std::process::id()));
    let written = write_all(&partial, files).and_then(|()| {
        if out.exists() {
            // Empty (checked above): renaming onto it would fail on some systems.
            std::fs::remove_dir(out)?;
        }
        std::fs::rename(&partial, out)
    });
    written.map_err(|source| {
        let _ = std::fs::remove_dir_all(&partial);
        WriteError::Io {
            out: out.to_path_buf(),
            source,
        }
    })
}

/// Writes `files` into a new folder `root/stem-N`, N the first number from 1 whose folder does
/// not exist yet, and returns it. The folder is claimed by creating it (an atomic step), so two
/// exports at once never share one and nothing already there is overwritten.
///
/// # Errors
///
/// [`WriteError`] when `root` cannot be created, no number is free, or a file fails.
pub fn write_new_folder(root: &Path, stem: &str, files: &Files) -> Result<PathBuf, WriteError> {
    std::fs::create_dir_all(root).map_err(|source| WriteError::Io {
        out: root.to_path_buf(),
        source,
    })?;
    for number in 1..=NUMBERED_FOLDERS_MAX {
        let out = root.join(format!("{stem}-{number}"));
        match std::fs::create_dir(&out) {
            Ok(()) => {
                return match write_project(&out, files) {
                    Ok(()) => Ok(out),
                    Err(error) => {
                        // The claimed folder is still empty when the write failed.
                        let _ = std::fs::remove_dir(&out);
                        Err(error)
                    }
                };
            }
            Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(source) => return Err(WriteError::Io { out, source }),
        }
    }
    Err(WriteError::NoFreeFolder {
        root: root.to_path_buf(),
        stem: stem.to_owned(),
    })
}

fn write_all(folder: &Path, files: &Files) -> std::io::Result<()> {
    for (path, text) in files {
        let path = folder.join(path);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::write(path, text)?;
    }
    Ok(())
}
