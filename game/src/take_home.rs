//! "Take it home" in the window: the run the player just played, as the cargo project
//! `twice-sim export` writes (`twice_world::take_home`), saved into a new folder under the
//! data folder, `take-home/<level>-<n>/` — never over an earlier one. The debrief asks
//! for it to be prepared when it opens (so its button can say, before any click, whether the
//! run can be exported and why not) and saved when the button is pressed; this module does
//! both and keeps what came of them for the debrief to show.

use std::path::PathBuf;

use bevy::prelude::*;
use twice_world::export::{self, RuntimeDependency};
use twice_world::take_home::{self, Project};

use crate::paths::GamePaths;
use crate::session::{Session, SessionSet};

pub(super) fn plugin(app: &mut App) {
    app.add_message::<TakeHomeIntent>();
    app.init_resource::<TakeHome>();
    app.add_systems(Update, apply_intents.after(SessionSet::Conclude));
}

/// What the debrief asks of the take-home.
#[derive(Message, Clone, Copy, Debug, PartialEq, Eq)]
pub enum TakeHomeIntent {
    /// Work out the project of the session's run as it is now (the debrief opened).
    Prepare,
    /// Write the prepared project into a new folder.
    Save,
}

/// The project of the session's run, and where the last one was saved.
#[derive(Debug, Default, Resource)]
pub struct TakeHome {
    /// The session's generation the project was worked out for: a change to the run since
    /// (an operator over HTTP) makes it stale.
    pub prepared_for: Option<u64>,
    /// The project, or why the run cannot be exported (the export's own sentence).
    pub project: Option<Result<Project, String>>,
    /// What came of the last save: where and what to run, or why it failed.
    pub saved: Option<Result<Saved, String>>,
    /// Projects saved since the game started.
    saves: u64,
}

/// A project written to disk.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Saved {
    pub folder: PathBuf,
    /// `cd FOLDER && cargo run`: what the player runs, copied to the clipboard.
    pub command: String,
    /// Counts saves, so the debrief copies each new command once.
    pub serial: u64,
}

impl TakeHome {
    /// The project, when it was prepared for the run as it is now.
    pub fn ready_for(&self, generation: u64) -> Option<&Result<Project, String>> {
        self.project.as_ref().filter(|_| self.prepared_for == Some(generation))
    }
}

/// Where projects are saved: `<data>/take-home/`.
pub fn take_home_folder(paths: &GamePaths) -> PathBuf {
    paths.data.join("take-home")
}

fn apply_intents(
    mut intents: MessageReader<TakeHomeIntent>,
    session: Option<Res<Session>>,
    paths: Res<GamePaths>,
    mut take_home: ResMut<TakeHome>,
) {
    // A level opened since: what was prepared and saved was another session's run (whose
    // generations counted from 0 too).
    if session.as_ref().is_some_and(|session| session.is_added()) {
        take_home.prepared_for = None;
        take_home.project = None;
        take_home.saved = None;
    }
    for intent in intents.read() {
        let Some(session) = session.as_deref() else {
            take_home.saved = Some(Err("No level is open: there is no run to take home.".to_owned()));
            continue;
        };
        match intent {
            TakeHomeIntent::Prepare => prepare(&mut take_home, session),
            TakeHomeIntent::Save => {
                if take_home.prepared_for != Some(session.generation()) {
                    prepare(&mut take_home, session);
                }
                let saved = match &take_home.project {
                    Some(Ok(project)) => save(project, &paths, take_home.saves + 1),
                    Some(Err(why)) => Err(format!("This run cannot be exported: {why}")),
                    None => Err("There is no run to take home yet.".to_owned()),
                };
                if saved.is_ok() {
                    take_home.saves += 1;
                }
                take_home.saved = Some(saved);
            }
        }
    }
}

/// The project of the run as it is now; a new run forgets the last save's line.
fn prepare(take_home: &mut TakeHome, session: &Session) {
    let generation = session.generation();
    if take_home.prepared_for != Some(generation) {
        take_home.saved = None;
    }
    take_home.prepared_for = Some(generation);
    if !session.is_concluded() {
        take_home.project = Some(Err(
            "the level is not over yet: the exported program plays a run to its end".to_owned(),
        ));
        return;
    }
    // The repository's runtime when this game was built from a checkout that is still there.
    let runtime = RuntimeDependency::here();
    take_home.project = Some(take_home::project(session, &runtime).map_err(|error| error.why()));
}

fn save(project: &Project, paths: &GamePaths, serial: u64) -> Result<Saved, String> {
    let folder = export::write_new_folder(&take_home_folder(paths), &project.stem, &project.files)
        .map_err(|error| format!("The project was not saved: {error}"))?;
    Ok(Saved {
        command: take_home::run_command(&folder),
        folder,
        serial,
    })
}
