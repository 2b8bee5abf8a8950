//! "Take it home": the run played in a session becomes the project `twice-sim export` writes,
//! with the level and the run's tape beside it; a run the export refuses says why in its words.

use std::path::{Path, PathBuf};

use twice_world::export::{self, RuntimeDependency};
use twice_world::level::LoadedTape;
use twice_world::play_session::{Mode, PlaySession, Recipe};
use twice_world::take_home::{self, TakeHomeError};

fn tape(name: &str) -> LoadedTape {
    let levels = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../levels");
    twice_world::level::load_tape(&levels.join(name)).unwrap_or_else(|error| panic!("{error}"))
}

/// The tape's level opened in the campaign, its moves played at their phases by hand, run to
/// its end: a player's run of the tape.
fn played(loaded: &LoadedTape) -> PlaySession {
    let recipe = Recipe {
        level: loaded.level.clone(),
        seed: loaded.tape.seed,
        guards: loaded.tape.guards,
        tape: None,
    };
    let mut session = PlaySession::open(Mode::Campaign, recipe, None).expect("opens");
    for action in &loaded.tape.actions {
        while session.simulation().phase() < action.at_phase && !session.simulation().is_over() {
            session.step(1).expect("steps");
        }
        session.play(action.play.clone()).expect("played");
    }
    session.run_to_end().expect("runs");
    session
}

fn file<'a>(project: &'a take_home::Project, path: &str) -> &'a str {
    project
        .files
        .iter()
        .find(|(name, _)| name == Path::new(path))
        .map(|(_, text)| text.as_str())
        .unwrap_or_else(|| {
            panic!(
                "no {path} among {:?}",
                project.files.iter().map(|(name, _)| name).collect::<Vec<_>>()
            )
        })
}

#[test]
fn the_run_played_is_the_project_of_its_tape_with_the_level_and_the_tape_beside_it() {
    for name in ["01-naive-retry.win.tape.ron", "01-naive-retry.lost-request.tape.ron"] {
        let shipped = tape(name);
        let session = played(&shipped);
        let runtime = RuntimeDependency::Path(PathBuf::from("/the/runtime"));
        let project = take_home::project(&session, &runtime).expect("exports");
        assert_eq!(project.stem, "01-naive-retry");
        // The same program `twice-sim export --tape` writes for the shipped tape: the player's
        // run is that tape's run, so its schedule (who moves when, what is lost) is the same.
        let exported = export::export(&shipped, &runtime).expect("the shipped tape exports");
        for path in ["src/schedule.rs", "src/level.rs", "src/play.rs"] {
            let from_cli = exported
                .iter()
                .find(|(file, _)| file == Path::new(path))
                .map(|(_, text)| text.as_str())
                .expect("exported");
            assert_eq!(file(&project, path), from_cli, "{name}: {path}");
        }
        let cargo = file(&project, "Cargo.toml");
        assert!(cargo.contains(r#"twice-runtime = { path = "/the/runtime""#), "{cargo}");
        assert!(file(&project, "src/main.rs").contains("01-naive-retry.played.tape.ron"));
        assert_eq!(file(&project, "01-naive-retry.level.ron"), shipped.level.text);

        // Written into a new numbered folder each time, never over the last; the tape there
        // replays (its level beside it) to the verdict the session reached.
        let home = tempfile::tempdir().expect("a temporary folder");
        let first = export::write_new_folder(home.path(), &project.stem, &project.files).expect("written");
        let second = export::write_new_folder(home.path(), &project.stem, &project.files).expect("written");
        assert_eq!(first, home.path().join("01-naive-retry-1"));
        assert_eq!(second, home.path().join("01-naive-retry-2"));
        let written = twice_world::level::load_tape(&first.join("01-naive-retry.played.tape.ron"))
            .unwrap_or_else(|error| panic!("{error}"));
        let replayed = twice_world::replay::replay_tape(&written).expect("replays");
        assert!(replayed.as_expected, "{name}: {:?}", replayed.differences);
        let session_verdict = session.simulation().verdict().expect("judged");
        assert_eq!(replayed.verdict.outcome, session_verdict.outcome, "{name}");
        assert_eq!(
            take_home::run_command(&first),
            format!("cd {} && cargo run", first.display())
        );
    }
}

#[test]
fn a_run_the_export_refuses_says_why_in_the_exports_words() {
    // 35 has a scripted operator: no run of it exports.
    let session = played(&tape("35-first-decision.win.tape.ron"));
    let error = take_home::project(&session, &RuntimeDependency::Version).expect_err("refused");
    let TakeHomeError::Export(export::ExportError::NotExpressible { reason, .. }) = &error else {
        panic!("refused for another reason: {error}");
    };
    assert_eq!(error.why(), export::why_not_words(reason));
    assert!(error.why().contains("scripted operator"), "{}", error.why());
}

#[test]
fn a_folder_with_a_space_is_quoted_in_the_command() {
    assert_eq!(
        take_home::run_command(Path::new("/home/ada/my data/01-naive-retry-1")),
        "cd '/home/ada/my data/01-naive-retry-1' && cargo run"
    );
}

#[test]
fn a_project_by_version_names_the_library_by_version() {
    let session = played(&tape("01-naive-retry.win.tape.ron"));
    let project = take_home::project(&session, &RuntimeDependency::Version).expect("exports");
    let cargo = file(&project, "Cargo.toml");
    assert!(
        cargo.contains(&format!(
            r#"twice-runtime = {{ version = "{}""#,
            export::RUNTIME_VERSION
        )),
        "{cargo}"
    );
    assert!(cargo.contains("PATH/TO/twice/sim/runtime"), "{cargo}");
}

#[test]
fn a_level_kept_without_its_text_takes_the_file_it_is_given() {
    // The browser's catalogue keeps levels parsed, without their files' text.
    let shipped = tape("05-crash-replay.win.tape.ron");
    let mut without_text = shipped.clone();
    without_text.level.text = String::new();
    let session = played(&without_text);
    assert_eq!(take_home::why_not(&session, session.simulation().played()), None);
    let error = take_home::project(&session, &RuntimeDependency::Version).expect_err("no level file");
    assert!(error.why().contains("is not at hand"), "{}", error.why());
    let project =
        take_home::project_with_level(&session, &shipped.level.text, &RuntimeDependency::Version).expect("exports");
    let home = tempfile::tempdir().expect("a temporary folder");
    let folder = export::write_new_folder(home.path(), &project.stem, &project.files).expect("written");
    let written = twice_world::level::load_tape(&folder.join(take_home::tape_file_name(&project.stem)))
        .unwrap_or_else(|error| panic!("{error}"));
    let replayed = twice_world::replay::replay_tape(&written).expect("replays");
    assert!(replayed.as_expected, "{:?}", replayed.differences);
    assert_eq!(replayed.verdict.outcome, shipped.tape.expect.verdict);
}

#[test]
fn why_not_without_replaying_is_the_exports_reason() {
    let session = played(&tape("35-first-decision.win.tape.ron"));
    assert_eq!(
        take_home::why_not(&session, session.simulation().played()),
        Some(export::why_not_words(
            &twice_world::expressible::Reason::ScriptedOperator
        ))
    );
}
