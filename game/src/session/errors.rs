//! Why a level did not open, a tape was not saved or a re-simulation did not finish: each
//! names the file or the step at fault and keeps the error underneath it.

use std::path::PathBuf;

use twice_world::campaign::TAPE_SUFFIX;
use twice_world::error::InputError;
use twice_world::ledger::LedgerError;
use twice_world::play_session::SessionError;
use twice_world::simulator::SimError;

/// Why a level or a tape did not open (the level select and the replay viewer show it).
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    /// The level file does not load.
    #[error("Cannot open {}: {source}", path.display())]
    Level {
        path: PathBuf,
        #[source]
        source: InputError,
    },
    /// The tape file (or the level it names) does not load.
    #[error("Cannot open the tape: {0}")]
    Tape(#[source] InputError),
    /// The level loads, but its simulation cannot start (its scratch ledger, say). The session's
    /// error is boxed: it is large, and every opening returns this type.
    #[error("Cannot open {}: {source}", path.display())]
    Session {
        path: PathBuf,
        #[source]
        source: Box<SessionError>,
    },
    /// The tape loads, but its simulation cannot start.
    #[error("Cannot open the tape: {0}")]
    TapeSession(#[source] Box<SessionError>),
    /// An intent that names no level or tape (a bug in the caller).
    #[error("{intent} opens no level")]
    NotAnOpening { intent: String },
}

/// Why a tape cannot be saved where the player asked, before any work starts.
#[derive(Debug, thiserror::Error)]
pub enum TapeError {
    #[error("A tape's file name ends in {TAPE_SUFFIX} (so `twice-sim replay` finds it): {}", path.display())]
    FileName { path: PathBuf },
    #[error("{} already exists; choose another name", path.display())]
    Exists { path: PathBuf },
    #[error("cannot create {}: {source}", folder.display())]
    Folder {
        folder: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// Why a re-simulation (a rewind, a run to the end, a tape being saved) did not finish.
#[derive(Debug, thiserror::Error)]
pub enum JobError {
    #[error("cannot start a thread to re-simulate: {0}")]
    Thread(#[source] std::io::Error),
    #[error("the re-simulation thread panicked")]
    Panicked,
    #[error("the job was cancelled")]
    Cancelled,
    /// Building or running the simulation again failed.
    #[error(transparent)]
    Simulation(#[from] SimError),
    /// The re-simulated run could not be judged.
    #[error(transparent)]
    Ledger(#[from] LedgerError),
    /// The tape's folder or file.
    #[error(transparent)]
    Tape(#[from] TapeError),
    #[error("cannot write {}: {source}", path.display())]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("the saved tape does not load back: {0}")]
    LoadBack(#[source] InputError),
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    #[test]
    fn each_error_names_the_file_or_step_at_fault() {
        let path = Path::new("levels/missing.level.ron");
        let input = twice_world::level::load_level(path).expect_err("no such file");
        let shown = input.to_string();
        let opened = OpenError::Level {
            path: path.to_path_buf(),
            source: input,
        };
        assert_eq!(
            opened.to_string(),
            format!("Cannot open levels/missing.level.ron: {shown}")
        );
        assert!(std::error::Error::source(&opened).is_some(), "the load error is kept");

        let named = TapeError::FileName {
            path: PathBuf::from("mine.ron"),
        };
        assert_eq!(
            named.to_string(),
            "A tape's file name ends in .tape.ron (so `twice-sim replay` finds it): mine.ron"
        );
        let exists = TapeError::Exists {
            path: PathBuf::from("a.tape.ron"),
        };
        assert_eq!(exists.to_string(), "a.tape.ron already exists; choose another name");

        let written = JobError::Write {
            path: PathBuf::from("out/a.tape.ron"),
            source: std::io::Error::from(std::io::ErrorKind::PermissionDenied),
        };
        assert!(
            written.to_string().starts_with("cannot write out/a.tape.ron: "),
            "{written}"
        );
        assert!(std::error::Error::source(&written).is_some(), "the I/O error is kept");
    }
}
