//! The code panel as a player uses it, without a window: the game runs headless, and its code
//! view is drawn into an egui context of its own that is fed a real pointer click on a line.
//! The click aims a crash there; the session plays it when the worker gets there, as the move
//! a tape records.

use bevy::prelude::*;
use bevy_egui::egui;
use twice::screens::Screen;
use twice::screens::level::{LevelUi, code};
use twice::session::{Intent, Mode, Session};
use twice_world::checker::Outcome;
use twice_world::level::Play;
use twice_world::runtime::worker::Phase;

mod support;
use support::{game, levels_folder};

/// The most frames a click takes to land (press, release, and the frames egui lays out first).
const FRAMES_MAX: usize = 8;

fn session(app: &App) -> &Session {
    app.world().get_resource::<Session>().expect("a level is open")
}

/// One frame of the code view with `events` as this frame's input; the intents it sent.
fn frame(context: &egui::Context, app: &App, level_ui: &mut LevelUi, events: Vec<egui::Event>) -> Vec<Intent> {
    let mut intents = Vec::new();
    let input = egui::RawInput {
        screen_rect: Some(egui::Rect::from_min_size(egui::Pos2::ZERO, egui::vec2(1280.0, 720.0))),
        events,
        ..egui::RawInput::default()
    };
    let session = session(app);
    let output = context.run_ui(input, |ui| {
        let simulation = session.simulation();
        code::draw(ui, session, &simulation, level_ui, 680.0, &mut intents);
    });
    // Nothing is painted: the frame's new textures (the font atlas) are let go on purpose.
    output.drop_without_applying_deltas();
    intents
}

/// Clicks line `index` of the code view: finds its row where the last frame drew it, moves
/// the pointer there, presses and releases. Returns the intents the click sent.
fn click_line(context: &egui::Context, app: &App, level_ui: &mut LevelUi, index: usize) -> Vec<Intent> {
    let mut intents = frame(context, app, level_ui, Vec::new());
    let row = context
        .read_response(code::line_id(index))
        .unwrap_or_else(|| panic!("line {} is drawn", index + 1));
    let at = row.rect.center();
    let pointer = |pressed| egui::Event::PointerButton {
        pos: at,
        button: egui::PointerButton::Primary,
        pressed,
        modifiers: egui::Modifiers::NONE,
    };
    for events in [
        vec![egui::Event::PointerMoved(at)],
        vec![pointer(true)],
        vec![pointer(false)],
    ]
    .into_iter()
    .chain(std::iter::repeat_with(Vec::new))
    .take(FRAMES_MAX)
    {
        intents.extend(frame(context, app, level_ui, events));
    }
    intents
}

#[test]
fn clicking_a_line_aims_a_crash_that_lands_there_and_the_tape_records_it() {
    let data = tempfile::tempdir().expect("temp dir");
    let mut app = game(data.path());
    app.world_mut().write_message(Intent::OpenLevel {
        path: levels_folder().join("05-crash-replay.level.ron"),
        mode: Mode::Campaign,
        guards: None,
        seed: 1,
        at_phase: None,
    });
    app.update();
    app.update();
    assert_eq!(*app.world().resource::<State<Screen>>().get(), Screen::Level);
    let program = twice_world::code::program_of(&session(&app).simulation());
    let save = program
        .line_of(Phase::SaveCheckpoint)
        .expect("the loop saves a checkpoint");

    let context = egui::Context::default();
    let mut level_ui = LevelUi {
        code: true,
        ..LevelUi::default()
    };
    let intents = click_line(&context, &app, &mut level_ui, save);
    assert_eq!(
        intents,
        [Intent::AimCrash { worker: 1, line: save }],
        "one worker: the click on the save line aims w1 there"
    );
    for intent in intents {
        app.world_mut().write_message(intent);
    }
    app.update();
    assert_eq!(session(&app).crash_aims().aims().len(), 1, "{:?}", session(&app).notice);
    // The view shows the aim on its line (a glyph and the worker's name, not a colour alone).
    assert!(
        session(&app).crash_aims().lines_in(&program).contains(&(1, save)),
        "the aim is on line {}",
        save + 1
    );
    // Step until it lands: the crash is played as the worker is about to save.
    while session(&app).simulation().played().is_empty() && !session(&app).is_over() {
        app.world_mut().write_message(Intent::Step);
        app.update();
    }
    let played = session(&app).simulation().played().to_vec();
    assert_eq!(
        played.first().map(|action| &action.play),
        Some(&Play::CrashWorker {
            worker: Some(1),
            in_phase: Some(Phase::SaveCheckpoint)
        }),
        "{played:?}"
    );
    let notice = session(&app).notice.clone().expect("the crash is told");
    assert!(notice.text.contains("reached line"), "{}", notice.text);
    // The tape the player saves records it as the move it is, and replays to the heist.
    let tape = session(&app).recipe.tape(
        Mode::Campaign,
        &played,
        "05-crash-replay.level.ron".into(),
        "aimed at the save".into(),
    );
    let mut judged = tape.clone();
    let verdict = session(&app).recipe.judge_tape(&mut judged).expect("the tape replays");
    assert_eq!(verdict.outcome, Outcome::PaidTwice);
    assert_eq!(judged.actions, played);
}
