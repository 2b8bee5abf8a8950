//! The debrief's "Take it home": the run the player just played saved as a cargo project
//! against twice-runtime in a new folder under the data folder, never over an earlier one; a
//! run the export refuses says why, in the export's words, and writes nothing.

use std::path::Path;

use bevy::prelude::*;
use twice::screens::Screen;
use twice::session::Intent;
use twice::take_home::{TakeHome, TakeHomeIntent, take_home_folder};
use twice_world::export::{self, RuntimeDependency};
use twice_world::expressible::Reason;

use super::{play_like_a_player, screen, send, tape};
use crate::support::game;

fn take_home(app: &App) -> &TakeHome {
    app.world().resource::<TakeHome>()
}

fn read(folder: &Path, file: &str) -> String {
    std::fs::read_to_string(folder.join(file)).unwrap_or_else(|error| panic!("{}/{file}: {error}", folder.display()))
}

/// The tape played by hand to its debrief, and the debrief's take-home prepared (as the
/// debrief does when it opens).
fn at_the_debrief(app: &mut App, suffix: &str) -> twice_world::level::LoadedTape {
    let loaded = tape(suffix);
    play_like_a_player(app, &loaded);
    send(app, Intent::Debrief);
    app.update();
    assert_eq!(screen(app), Screen::Debrief);
    app.world_mut().write_message(TakeHomeIntent::Prepare);
    app.update();
    loaded
}

#[test]
fn take_it_home_writes_this_runs_project_into_a_new_folder_each_time() {
    let data = tempfile::tempdir().expect("temp dir");
    let mut app = game(data.path());
    let loaded = at_the_debrief(&mut app, "01-naive-retry.lost-request.tape.ron");
    let prepared = take_home(&app).project.clone().expect("prepared");
    prepared.unwrap_or_else(|why| panic!("01 cannot be taken home: {why}"));

    app.world_mut().write_message(TakeHomeIntent::Save);
    app.update();
    let saved = take_home(&app)
        .saved
        .clone()
        .expect("saved")
        .unwrap_or_else(|problem| panic!("{problem}"));
    let paths = app.world().resource::<twice::paths::GamePaths>();
    let root = take_home_folder(paths);
    assert_eq!(saved.folder, root.join("01-naive-retry-1"));
    assert_eq!(saved.command, format!("cd {} && cargo run", saved.folder.display()));

    // A cargo project against the runtime (by path: this game was built from the repository),
    // whose schedule is this run's: the same as `twice-sim export --tape` of the tape played.
    let cargo = read(&saved.folder, "Cargo.toml");
    assert!(cargo.contains("twice-runtime = { path = "), "{cargo}");
    let expected = export::export(&loaded, &RuntimeDependency::here()).expect("the tape exports");
    let schedule = expected
        .iter()
        .find(|(path, _)| path == Path::new("src/schedule.rs"))
        .map(|(_, text)| text.clone())
        .expect("a schedule");
    assert_eq!(read(&saved.folder, "src/schedule.rs"), schedule);
    // The run's tape beside it replays to the verdict the player saw.
    let written = twice_world::level::load_tape(&saved.folder.join("01-naive-retry.played.tape.ron"))
        .unwrap_or_else(|error| panic!("{error}"));
    let replayed = twice_world::replay::replay_tape(&written).expect("replays");
    assert_eq!(replayed.verdict.outcome, loaded.tape.expect.verdict);

    // Again: a second folder, the first left as it was.
    app.world_mut().write_message(TakeHomeIntent::Save);
    app.update();
    let again = take_home(&app)
        .saved
        .clone()
        .expect("saved")
        .unwrap_or_else(|problem| panic!("{problem}"));
    assert_eq!(again.folder, root.join("01-naive-retry-2"));
    assert!(again.serial > saved.serial, "each save is copied once");
    assert_eq!(read(&saved.folder, "src/schedule.rs"), schedule);
}

#[test]
fn a_run_that_cannot_be_exported_says_why_and_writes_nothing() {
    let data = tempfile::tempdir().expect("temp dir");
    let mut app = game(data.path());
    // 35 has a scripted operator: the exported program has none.
    at_the_debrief(&mut app, "35-first-decision.win.tape.ron");
    let why = take_home(&app)
        .project
        .clone()
        .expect("prepared")
        .expect_err("35 cannot be exported");
    assert_eq!(why, export::why_not_words(&Reason::ScriptedOperator));

    app.world_mut().write_message(TakeHomeIntent::Save);
    app.update();
    let problem = take_home(&app).saved.clone().expect("answered").expect_err("not saved");
    assert_eq!(problem, format!("This run cannot be exported: {why}"));
    let paths = app.world().resource::<twice::paths::GamePaths>();
    assert!(!take_home_folder(paths).exists(), "nothing was written");
}
