//! The window as a player sees it, without a window: the level screen and the level select
//! drawn by their own code into an egui context at 1280×720 (and at the projector's zoom),
//! read back as text with where it landed ([`twice::ui::probe`]).

use bevy::prelude::*;
use bevy_egui::egui;
use twice::campaign::Campaign;
use twice::paths::GamePaths;
use twice::presenter::PRESENTER_ZOOM;
use twice::progress::Progress;
use twice::progress::prediction::Prediction;
use twice::screens::Screen;
use twice::screens::level::timeline::TimelineCache;
use twice::screens::level::{LevelAsks, LevelUi};
use twice::screens::level_select::{self, LevelSelectState};
use twice::session::{Intent, Leaving, Session};
use twice::ui::probe::{self, Drawn, PROBE_FRAMES};

use super::{
    level_inputs, open_campaign_level, phase, play_moves_then_run, screen, send, session, step_to, tape, update_until,
};
use crate::support::game;

/// The window the issue was seen in.
const WINDOW: (f32, f32) = (1280.0, 720.0);

/// The level screen as the game draws it into `context`, [`PROBE_FRAMES`] frames with
/// `events` in the first: the last frame's text, and everything asked for in any frame.
fn level_frames(
    app: &App,
    context: &egui::Context,
    level_ui: &mut LevelUi,
    cache: &mut TimelineCache,
    events: Vec<egui::Event>,
) -> (Vec<Drawn>, LevelAsks) {
    let inputs = level_inputs(app);
    let mut asks = LevelAsks::default();
    let drawn = probe::frames(context, WINDOW, PROBE_FRAMES, events, |context| {
        let frame = twice::screens::level::frame(context, level_ui, cache, &inputs);
        asks.intents.extend(frame.intents);
        asks.predictions.extend(frame.predictions);
    });
    (drawn, asks)
}

fn level_ui() -> LevelUi {
    LevelUi {
        side_panels: true,
        ..LevelUi::default()
    }
}

/// A timeline row's phase and time cell ("  12  152ms"): one a row.
fn is_phase_cell(text: &Drawn) -> bool {
    let mut parts = text.text.split_whitespace();
    matches!(
        (parts.next(), parts.next(), parts.next()),
        (Some(phase), Some(time), None) if phase.parse::<u32>().is_ok() && time.ends_with("ms")
    )
}

/// The timeline's rows on screen: each paints its phase and time ("  12  152ms").
fn timeline_rows(drawn: &[Drawn], screen: egui::Rect) -> Vec<&Drawn> {
    drawn
        .iter()
        .filter(|text| is_phase_cell(text))
        .filter(|text| text.fully_visible(screen))
        .collect()
}

/// The timeline's rows drawn only in part (their top under the lanes' header).
fn half_rows(drawn: &[Drawn], screen: egui::Rect) -> Vec<&Drawn> {
    drawn
        .iter()
        .filter(|text| is_phase_cell(text) && cut_by_its_panel(text, screen))
        .collect()
}

#[test]
fn esc_in_a_level_pauses_and_keeps_the_run_until_the_player_chooses_to_leave() {
    let data = tempfile::tempdir().expect("temp dir");
    let mut app = game(data.path());
    open_campaign_level(&mut app, "01-naive-retry.level.ron");
    step_to(&mut app, 9);
    let (mut level_ui, mut cache) = (level_ui(), TimelineCache::default());
    let context = probe::context(1.0);
    let (drawn, asks) = level_frames(&app, &context, &mut level_ui, &mut cache, probe::key(egui::Key::Escape));
    assert!(
        !asks.intents.iter().any(|intent| matches!(intent, Intent::Leave(_))),
        "Esc left the level at once: {:?}",
        asks.intents
    );
    assert!(level_ui.pause_menu.is_some(), "Esc opens the pause menu");
    assert!(
        drawn.iter().any(|text| text.text.contains("Paused at phase 9")),
        "the menu says where the run waits"
    );
    for intent in asks.intents {
        send(&mut app, intent);
    }
    assert_eq!((screen(&app), phase(&app)), (Screen::Level, 9), "the run is kept");
    // Esc again resumes: still the same run.
    let (_, asks) = level_frames(&app, &context, &mut level_ui, &mut cache, probe::key(egui::Key::Escape));
    assert!(
        level_ui.pause_menu.is_none() && asks.intents.is_empty(),
        "{:?}",
        asks.intents
    );
    send(&mut app, Intent::Step);
    assert_eq!(phase(&app), 10);
    // Leaving is a choice in the menu: Esc, then Enter.
    let (_, asks) = level_frames(&app, &context, &mut level_ui, &mut cache, probe::key(egui::Key::Escape));
    assert!(asks.intents.is_empty(), "{:?}", asks.intents);
    let (_, asks) = level_frames(&app, &context, &mut level_ui, &mut cache, probe::key(egui::Key::Enter));
    assert_eq!(asks.intents, [Intent::Leave(Leaving::Back)]);
    for intent in asks.intents {
        send(&mut app, intent);
    }
    app.update();
    assert_eq!(screen(&app), Screen::LevelSelect);
}

#[test]
fn a_level_just_opened_has_no_run_to_lose_and_esc_leaves_it() {
    let data = tempfile::tempdir().expect("temp dir");
    let mut app = game(data.path());
    open_campaign_level(&mut app, "01-naive-retry.level.ron");
    let (mut level_ui, mut cache) = (level_ui(), TimelineCache::default());
    let context = probe::context(1.0);
    let (_, asks) = level_frames(&app, &context, &mut level_ui, &mut cache, probe::key(egui::Key::Escape));
    assert_eq!(asks.intents, [Intent::Leave(Leaving::Back)]);
    assert!(level_ui.pause_menu.is_none());
}

#[test]
fn at_1280x720_the_timeline_shows_many_rows_and_none_is_cut_beside_the_ledger() {
    let data = tempfile::tempdir().expect("temp dir");
    let mut app = game(data.path());
    // Chapter 3: the ledger panel is on screen, a crash adds the supervisor's lane.
    play_moves_then_run(&mut app, &tape("30-recorded-answer.win.tape.ron"));
    let entries = session(&app).simulation().timeline().len();
    assert!(entries > 20, "{entries} timeline entries");
    assert!(session(&app).panels.shows(twice::panels::Panel::Ledger));
    let screen = probe::screen(WINDOW.0, WINDOW.1, 1.0);
    let (mut level_ui, mut cache) = (level_ui(), TimelineCache::default());
    let context = probe::context(1.0);
    let (drawn, _) = level_frames(&app, &context, &mut level_ui, &mut cache, Vec::new());
    let rows = timeline_rows(&drawn, screen);
    assert!(rows.len() >= 11, "{} timeline rows on screen", rows.len());
    // Each row's text, beside its phase cell, is whole.
    let top = rows.iter().map(|row| row.rect.top()).fold(f32::INFINITY, f32::min) - 2.0;
    let cut: Vec<&str> = drawn
        .iter()
        .filter(|text| text.elided && text.rect.top() >= top && text.text.contains(" · "))
        .map(|text| text.text.as_str())
        .collect();
    assert!(cut.is_empty(), "timeline rows cut with …: {cut:#?}");
    // The ledger is still on screen, whole: its header and its rows' keys.
    for key in ["r1:c1", "r1:c2"] {
        assert!(
            drawn
                .iter()
                .any(|text| text.text.contains(key) && text.fully_visible(screen)),
            "{key} in the ledger"
        );
    }
}

/// Rows a room can follow a run by: the move, what it hit, and what came of it.
const PROJECTOR_TIMELINE_ROWS_MIN: usize = 4;

#[test]
fn at_the_projectors_zoom_the_timeline_keeps_its_rows_whole() {
    let data = tempfile::tempdir().expect("temp dir");
    let mut app = game(data.path());
    play_moves_then_run(&mut app, &tape("30-recorded-answer.win.tape.ron"));
    let screen = probe::screen(WINDOW.0, WINDOW.1, PRESENTER_ZOOM);
    // Presenter mode: the side panels come on demand.
    let mut level_ui = LevelUi::default();
    let context = probe::context(PRESENTER_ZOOM);
    let (drawn, _) = level_frames(&app, &context, &mut level_ui, &mut TimelineCache::default(), Vec::new());
    let rows = timeline_rows(&drawn, screen);
    assert!(rows.len() >= 2, "{} timeline rows at the projector", rows.len());
    // The newest row is among them: the timeline follows the run.
    let last = session(&app).simulation().timeline().last().expect("a row").phase;
    assert!(
        rows.iter().any(|row| row.text.trim().starts_with(&format!("{last} "))),
        "phase {last}'s row is on screen"
    );
}

#[test]
fn at_the_projectors_zoom_with_the_notes_open_the_timeline_keeps_enough_rows_to_follow() {
    let data = tempfile::tempdir().expect("temp dir");
    let mut app = game(data.path());
    play_moves_then_run(&mut app, &tape("30-recorded-answer.win.tape.ron"));
    let screen = probe::screen(WINDOW.0, WINDOW.1, PRESENTER_ZOOM);
    // Presenter mode as it opens a level: the chapter's notes open, the side panels on demand.
    let mut level_ui = LevelUi {
        notes: true,
        ..LevelUi::default()
    };
    let context = probe::context(PRESENTER_ZOOM);
    let (drawn, _) = level_frames(&app, &context, &mut level_ui, &mut TimelineCache::default(), Vec::new());
    assert!(
        drawn
            .iter()
            .any(|text| text.text.contains("Notes · chapter") && text.fully_visible(screen)),
        "the notes are open"
    );
    let rows = timeline_rows(&drawn, screen);
    assert!(
        rows.len() >= PROJECTOR_TIMELINE_ROWS_MIN,
        "{} timeline rows at the projector with the notes open",
        rows.len()
    );
}

#[test]
fn the_level_timeline_never_shows_half_a_row_at_its_top_at_1280x720_or_the_projectors_zoom() {
    let mut probes = 0;
    for name in [
        "03-model-calls-again.win.tape.ron",
        "05-crash-replay.win.tape.ron",
        "30-recorded-answer.win.tape.ron",
    ] {
        let data = tempfile::tempdir().expect("temp dir");
        let mut app = game(data.path());
        play_moves_then_run(&mut app, &tape(name));
        // As a player and as a presenter (side panels on demand, the notes open or not).
        for (zoom, notes, side_panels) in [
            (1.0, false, true),
            (PRESENTER_ZOOM, false, false),
            (PRESENTER_ZOOM, true, false),
        ] {
            let screen = probe::screen(WINDOW.0, WINDOW.1, zoom);
            let mut level_ui = LevelUi {
                notes,
                side_panels,
                ..LevelUi::default()
            };
            let context = probe::context(zoom);
            let (drawn, _) = level_frames(&app, &context, &mut level_ui, &mut TimelineCache::default(), Vec::new());
            let rows = timeline_rows(&drawn, screen);
            assert!(!rows.is_empty(), "{name} at zoom {zoom}: no whole row");
            let half = half_rows(&drawn, screen);
            assert!(
                half.is_empty(),
                "{name} at zoom {zoom} (notes {notes}): rows drawn in part: {half:#?}"
            );
            probes += 1;
        }
    }
    assert_eq!(probes, 9);
}

/// The debrief's timeline as the projector shows it: its own panel, about 340 points wide.
#[test]
fn a_narrow_timeline_names_every_lane_whole() {
    let data = tempfile::tempdir().expect("temp dir");
    let mut app = game(data.path());
    // A crash: the supervisor's lane too, seven lanes in all.
    play_moves_then_run(&mut app, &tape("05-crash-replay.win.tape.ron"));
    let simulation = session(&app).simulation();
    let mut cache = TimelineCache::default();
    cache.update(&simulation);
    let context = probe::context(PRESENTER_ZOOM);
    let drawn = probe::frames(&context, WINDOW, PROBE_FRAMES, Vec::new(), |context| {
        // The debrief beside its verdict column: half of the projector's 731 points.
        egui::CentralPanel::default().show(&mut twice::ui::root_ui(context, "narrow"), |ui| {
            let height = ui.available_height();
            ui.allocate_ui(egui::vec2(346.0, height), |ui| {
                twice::screens::level::timeline::draw(
                    ui,
                    simulation.timeline(),
                    &cache,
                    false,
                    twice::screens::level::timeline::RowText::Wrap,
                    "narrow",
                );
            });
        });
    });
    let lanes: Vec<String> = ["crew", "super", "w1", "w2", "model", "net", "billing", "sim"]
        .into_iter()
        .filter(|lane| {
            simulation
                .timeline()
                .iter()
                .any(|entry| twice::screens::level::timeline::lane_name(&entry.actor) == *lane)
        })
        .map(String::from)
        .collect();
    assert!(lanes.len() >= 6, "{lanes:?}");
    for lane in &lanes {
        let label = drawn.iter().find(|text| text.text == *lane);
        assert!(
            label.is_some_and(|label| !label.elided),
            "lane {lane} is not named whole: {:?}",
            drawn
                .iter()
                .filter(|text| text.text.ends_with('…'))
                .map(|text| &text.text)
                .collect::<Vec<_>>()
        );
    }
}

#[test]
fn running_to_the_end_says_so_and_only_a_rewind_says_it_played_again() {
    let data = tempfile::tempdir().expect("temp dir");
    let mut app = game(data.path());
    open_campaign_level(&mut app, "01-naive-retry.level.ron");
    step_to(&mut app, 3);
    send(&mut app, Intent::RunToEnd);
    update_until(&mut app, "the run to the end", |app| session(app).is_over());
    let end = phase(&app);
    let told = session(&app)
        .notice
        .as_ref()
        .map(|notice| notice.text.clone())
        .unwrap_or_default();
    assert!(
        told.starts_with(&format!("Ran to the end: quiet at phase {end}")) && !told.contains("before it"),
        "after E: {told}"
    );
    send(&mut app, Intent::Rewind { phase: 5 });
    update_until(&mut app, "the rewind", |app| phase(app) == 5);
    let told = session(&app)
        .notice
        .as_ref()
        .map(|notice| notice.text.clone())
        .unwrap_or_default();
    assert!(told.starts_with("At phase 5: played again"), "after a rewind: {told}");
}

#[test]
fn at_1280x720_a_stopped_worker_is_on_the_stage_stopped_until_it_runs_again() {
    let data = tempfile::tempdir().expect("temp dir");
    let mut app = game(data.path());
    // w1 stopped with its credit in flight, then a duplicate w2: the stage has one row.
    let loaded = tape("paused-worker-lease.reproduced.tape.ron");
    send(
        &mut app,
        Intent::OpenLevel {
            path: loaded.level.path.clone(),
            mode: twice::session::Mode::Sandbox,
            guards: loaded.tape.guards,
            seed: loaded.tape.seed,
            at_phase: None,
        },
    );
    app.update();
    for action in &loaded.tape.actions {
        step_to(&mut app, action.at_phase);
        send(&mut app, Intent::Play(action.play.clone()));
    }
    step_to(&mut app, 7);
    let until = session(&app).simulation().workers()[0]
        .stopped_words()
        .expect("w1 is stopped at phase 7");
    let screen = probe::screen(WINDOW.0, WINDOW.1, 1.0);
    let context = probe::context(1.0);
    let (drawn, _) = level_frames(
        &app,
        &context,
        &mut level_ui(),
        &mut TimelineCache::default(),
        Vec::new(),
    );
    assert!(
        drawn
            .iter()
            .any(|text| text.text.contains(&until) && text.fully_visible(screen)),
        "the stage draws w1 {until}: {:?}",
        drawn
            .iter()
            .filter(|text| text.text.contains("w1") || text.text.contains("not shown"))
            .map(|text| &text.text)
            .collect::<Vec<_>>()
    );
}

#[test]
fn hashed_keys_do_not_run_into_the_ledgers_other_columns() {
    let data = tempfile::tempdir().expect("temp dir");
    let mut app = game(data.path());
    play_moves_then_run(&mut app, &tape("13-hashed-keys.win.tape.ron"));
    let screen = probe::screen(WINDOW.0, WINDOW.1, 1.0);
    let (mut level_ui, mut cache) = (level_ui(), TimelineCache::default());
    let context = probe::context(1.0);
    let (drawn, _) = level_frames(&app, &context, &mut level_ui, &mut cache, Vec::new());
    // The ledger's rows: a tool cell and, on the same line, the key cell ("● h:…").
    let tools: Vec<&Drawn> = drawn
        .iter()
        .filter(|text| matches!(text.text.as_str(), "issue_credit" | "lookup_balance"))
        .filter(|text| text.fully_visible(screen))
        .collect();
    assert!(tools.len() >= 3, "the ledger shows its rows' tools: {}", tools.len());
    let mut keys = 0;
    for tool in &tools {
        let same_line = |text: &&Drawn| (text.rect.center().y - tool.rect.center().y).abs() < 2.0;
        let key = drawn
            .iter()
            .filter(same_line)
            .find(|text| text.text.split_whitespace().any(|word| word.starts_with("h:")))
            .unwrap_or_else(|| panic!("no key beside {:?}", tool.text));
        keys += 1;
        // The row's cells, left to right from the key: none runs into the next.
        let mut cells: Vec<&Drawn> = drawn
            .iter()
            .filter(same_line)
            .filter(|text| text.rect.left() >= key.rect.left() && text.clip.contains_rect(text.rect))
            .collect();
        cells.sort_by(|one, other| one.rect.left().total_cmp(&other.rect.left()));
        for pair in cells.windows(2) {
            assert!(
                pair[0].rect.right() <= pair[1].rect.left(),
                "{:?} (to {}) runs into {:?} (from {})",
                pair[0].text,
                pair[0].rect.right(),
                pair[1].text,
                pair[1].rect.left()
            );
        }
        assert!(cells.len() >= 5, "a row's five cells: {cells:?}");
    }
    assert!(keys >= 3);
}

#[test]
fn a_rewind_says_where_the_run_is_without_the_ledger_files_path() {
    let data = tempfile::tempdir().expect("temp dir");
    let mut app = game(data.path());
    open_campaign_level(&mut app, "06-ledger-holds.level.ron");
    step_to(&mut app, 8);
    send(&mut app, Intent::Rewind { phase: 3 });
    update_until(&mut app, "the rewind", |app| !session(app).is_busy() && phase(app) == 3);
    let notice = session(&app).notice.clone().expect("the rewind says what it did").text;
    let path = session(&app)
        .ledger_path()
        .expect("a ledger file")
        .display()
        .to_string();
    assert!(
        !notice.contains(&path),
        "the status repeats the ledger file's path: {notice}"
    );
    assert!(notice.contains("phase 3"), "{notice}");
}

#[test]
fn the_level_selects_play_and_defend_buttons_stay_on_screen_with_more_open() {
    let data = tempfile::tempdir().expect("temp dir");
    let mut app = game(data.path());
    let index = {
        let campaign = app.world().resource::<Campaign>();
        // The longest briefing of a defended level: its "more" open pushes the most.
        (0..campaign.levels.len())
            .filter(|index| campaign.levels[*index].level.defender.is_some())
            .max_by_key(|index| {
                let level = &campaign.levels[*index].level;
                level.briefing.len() + level.briefing_more.len()
            })
            .expect("a defended level")
    };
    for zoom in [1.0, PRESENTER_ZOOM] {
        let screen = probe::screen(WINDOW.0, WINDOW.1, zoom);
        let mut state = LevelSelectState::new(index, true);
        let world = app.world_mut();
        let mut campaign = world.remove_resource::<Campaign>().expect("the campaign");
        // Open, as a player who got this far sees it.
        campaign.unlock_all = true;
        let context = probe::context(zoom);
        let drawn = {
            let mut progress = world.resource_mut::<Progress>();
            probe::frames(&context, WINDOW, PROBE_FRAMES, Vec::new(), |context| {
                level_select::frame(context, &mut state, &campaign, &mut progress);
            })
        };
        app.world_mut().insert_resource(campaign);
        assert!(
            drawn
                .iter()
                .any(|text| text.text == app.world().resource::<Campaign>().levels[index].level.briefing_more),
            "zoom {zoom}: \"more\" is open"
        );
        for button in ["▶  Play this level", "🛡  Defend it"] {
            let shown = drawn.iter().find(|text| text.text.contains(button));
            assert!(
                shown.is_some_and(|text| text.fully_visible(screen)),
                "zoom {zoom}: {button:?} is cut off: {shown:?} among {:?}",
                drawn.iter().map(|text| &text.text).collect::<Vec<_>>()
            );
        }
    }
}

#[test]
fn the_defenders_known_heists_are_the_ones_that_fire_named_by_title_and_the_rest_said_once() {
    use twice::defence::{Defence, DefenceIntent};
    use twice_world::defend::HeistStanding;
    let data = tempfile::tempdir().expect("temp dir");
    let mut app = game(data.path());
    // 06, the ledger holds: the heists of chapters 1 to 3 are known there, many of them
    // fizzle in its world (no lookup, no declaration, one credit).
    let index = super::campaign_index(&app, "ledger-holds");
    app.world_mut().resource_mut::<Campaign>().unlock_all = true;
    app.world_mut().write_message(DefenceIntent::Open { index });
    app.update();
    app.update();
    let report = super::check_defence(&mut app);
    let fizzled = report
        .heists
        .iter()
        .filter(|heist| heist.standing() == HeistStanding::NoFire)
        .count();
    assert!(fizzled >= 3, "{fizzled} known heists fizzle in 06");
    let firing = report.heists.len() - fizzled;
    let screen = probe::screen(WINDOW.0, WINDOW.1, 1.0);
    let context = probe::context(1.0);
    let world = app.world();
    let (defence, campaign, progress) = (
        world.resource::<Defence>(),
        world.resource::<Campaign>(),
        world.resource::<Progress>(),
    );
    let drawn = probe::frames(&context, WINDOW, PROBE_FRAMES, Vec::new(), |context| {
        twice::screens::defend::frame(context, defence, (campaign, progress), &mut Default::default());
    });
    let texts: Vec<&str> = drawn.iter().map(|text| text.text.as_str()).collect();
    assert!(
        !texts.iter().any(|text| text.contains(".tape.ron")),
        "file names: {texts:#?}"
    );
    assert!(
        !texts.iter().any(|text| text.contains("no fire")),
        "a wall of no-fire lines: {texts:#?}"
    );
    // One line per heist that fires, and one sentence for all the others, saying why.
    let lines = texts
        .iter()
        .filter(|text| ["✔ held", "✖ got in"].contains(text))
        .count();
    assert_eq!(lines, firing, "{texts:#?}");
    let said = texts
        .iter()
        .filter(|text| text.starts_with("Not listed: ") && text.contains("hit nothing"))
        .count();
    assert_eq!(said, 1, "{texts:#?}");
    assert!(drawn.iter().any(
        |text| text.text.starts_with(&format!("Not listed: {fizzled} known heists")) && text.fully_visible(screen)
    ));
}

#[test]
fn the_replay_viewer_opens_a_levels_tapes_only_once_it_is_won() {
    use twice::screens::replay::{self, ReplayState};
    use twice::session::OpenProblem;
    let data = tempfile::tempdir().expect("temp dir");
    let mut app = game(data.path());
    // One context throughout, as one window: the tape field keeps the keyboard between frames.
    let context = probe::context(1.0);
    let view = |app: &App, state: &mut ReplayState, events: Vec<egui::Event>| {
        let world = app.world();
        let mut asks = replay::ReplayAsks::default();
        let drawn = probe::frames(&context, WINDOW, PROBE_FRAMES, events, |context| {
            let frame = replay::frame(
                context,
                state,
                world.resource::<Campaign>(),
                world.resource::<Progress>(),
                world.resource::<GamePaths>(),
                world.resource::<OpenProblem>(),
            );
            asks.open = asks.open.take().or(frame.open);
            asks.refused = asks.refused.take().or(frame.refused);
        });
        (drawn, asks)
    };
    let mut state = ReplayState::new(app.world().resource::<GamePaths>());
    let (drawn, _) = view(&app, &mut state, Vec::new());
    let tapes: Vec<&str> = drawn
        .iter()
        .map(|text| text.text.as_str())
        .filter(|text| text.ends_with(".tape.ron") && !text.contains('/'))
        .collect();
    assert!(tapes.is_empty(), "a fresh profile sees no solution: {tapes:?}");
    assert!(drawn.iter().any(|text| text.text.contains("stay shut")));
    // Typing a locked tape's path is refused, with the level to win named.
    let win = super::levels_folder().join("01-naive-retry.win.tape.ron");
    state.set_path(&win.display().to_string());
    view(&app, &mut state, Vec::new());
    let (_, asks) = view(&app, &mut state, probe::key(egui::Key::Enter));
    assert!(asks.open.is_none());
    let refused = asks.refused.expect("refused");
    assert!(refused.contains("The Second Knock"), "{refused}");
    // Won: level 01's tapes are listed and open; level 02's still are not.
    app.world_mut()
        .resource_mut::<Progress>()
        .record("naive-retry", twice_world::checker::Outcome::PaidTwice, true);
    let (drawn, _) = view(&app, &mut state, Vec::new());
    let tapes: Vec<&str> = drawn
        .iter()
        .map(|text| text.text.as_str())
        .filter(|text| text.ends_with(".tape.ron") && !text.contains('/'))
        .collect();
    assert!(tapes.contains(&"01-naive-retry.win.tape.ron"), "{tapes:?}");
    assert!(tapes.iter().all(|tape| tape.starts_with("01-")), "{tapes:?}");
    state.set_path(&win.display().to_string());
    view(&app, &mut state, Vec::new());
    let (_, asks) = view(&app, &mut state, probe::key(egui::Key::Enter));
    assert_eq!(asks.open.as_deref(), Some(win.as_path()));
    // Every level open (presenter mode, --unlock-all): every tape opens.
    app.world_mut().resource_mut::<Campaign>().unlock_all = true;
    let (drawn, _) = view(&app, &mut state, Vec::new());
    assert!(
        drawn
            .iter()
            .any(|text| text.text == "02-one-attempt.whole-hand.tape.ron")
    );
}

/// The window's quiet console counts only calls whose run waits for a person: 07's slowed
/// answer leaves r1:c2 unknown, but Penny was told "failed" and went on, so nothing waits on it.
/// And the task list names steps from one and draws a balance lookup as a lookup, never
/// "$0.00 to Ada".
#[test]
fn the_quiet_console_counts_only_waiting_calls_and_the_task_list_draws_steps_as_played() {
    let data = tempfile::tempdir().expect("temp dir");
    let mut app = game(data.path());
    play_moves_then_run(&mut app, &tape("07-look-it-up.win.tape.ron"));
    let (mut level_ui, mut cache) = (level_ui(), TimelineCache::default());
    let context = probe::context(1.0);
    let (drawn, _) = level_frames(&app, &context, &mut level_ui, &mut cache, Vec::new());
    let texts: Vec<&str> = drawn.iter().map(|text| text.text.as_str()).collect();
    let console = texts
        .iter()
        .find(|text| text.starts_with("No operator moves in this level"))
        .unwrap_or_else(|| panic!("no quiet console: {texts:#?}"));
    assert_eq!(
        *console, "No operator moves in this level · 1 unknown call, none waiting for a person",
        "r1:c2 is unknown, but no run is paused on it"
    );
    let task: Vec<&str> = texts.iter().copied().filter(|text| text.starts_with("r1/")).collect();
    assert_eq!(
        task,
        [
            "r1/1 · lookup_balance: look up Ada's balance (no money moves)",
            "r1/2 · issue_credit: $25.00 to Ada",
            "r1/3 · lookup_balance: look up Ada's balance (no money moves)",
        ],
        "{texts:#?}"
    );
}

/// Steps until `done` holds of the open level's simulation (one phase at a time, as a player).
fn step_until(app: &mut App, what: &str, done: impl Fn(&twice_world::simulator::Simulation) -> bool) {
    for _ in 0..400 {
        if done(&session(app).simulation()) {
            return;
        }
        assert!(!session(app).is_over(), "the level ended before {what}");
        send(app, Intent::Step);
    }
    panic!("never {what}");
}

#[test]
fn a_crash_with_one_worker_plays_at_once_and_a_step_never_drops_a_card_waiting_for_its_target() {
    use twice_world::level::{CardKind, Play};
    let data = tempfile::tempdir().expect("temp dir");
    let mut app = game(data.path());
    // 11: Duplicate a worker (key 1), Crash a worker (key 2).
    open_campaign_level(&mut app, "11-one-stands-down.level.ron");
    let alive = |simulation: &twice_world::simulator::Simulation| {
        simulation.workers().iter().filter(|worker| worker.alive).count()
    };
    step_until(&mut app, "w1 is alive", |simulation| alive(simulation) == 1);
    let (mut level_ui, mut cache) = (level_ui(), TimelineCache::default());
    let context = probe::context(1.0);
    let (_, asks) = level_frames(&app, &context, &mut level_ui, &mut cache, probe::key(egui::Key::Num2));
    assert!(level_ui.chooser.is_none(), "a list of one target opened");
    assert!(
        matches!(asks.intents.as_slice(), [Intent::Play(Play::CrashWorker(_))]),
        "one worker alive: the crash is played at once: {:?}",
        asks.intents
    );

    // Two workers alive: the crash asks which, and a step waits for the answer.
    let mut app = game(data.path());
    open_campaign_level(&mut app, "11-one-stands-down.level.ron");
    step_until(&mut app, "w1 is alive", |simulation| alive(simulation) == 1);
    let duplicate = twice_world::hand::plays_at_once(CardKind::DuplicateWorker, &session(&app).simulation())
        .expect("one run to duplicate");
    send(&mut app, Intent::Play(duplicate));
    step_until(&mut app, "two workers are alive to crash", |simulation| {
        twice_world::hand::targets(CardKind::CrashWorker, simulation).len() == 2
    });
    let before = phase(&app);
    level_ui = self::level_ui();
    cache = TimelineCache::default();
    let (_, asks) = level_frames(&app, &context, &mut level_ui, &mut cache, probe::key(egui::Key::Num2));
    assert!(asks.intents.is_empty(), "{:?}", asks.intents);
    assert!(level_ui.chooser.is_some(), "two targets: the chooser opens");
    for key in [egui::Key::Period, egui::Key::ArrowRight, egui::Key::Space, egui::Key::E] {
        let (drawn, asks) = level_frames(&app, &context, &mut level_ui, &mut cache, probe::key(key));
        assert!(
            !asks
                .intents
                .iter()
                .any(|intent| matches!(intent, Intent::Step | Intent::ToggleRunning | Intent::RunToEnd)),
            "{key:?} moved time past the card waiting for its target: {:?}",
            asks.intents
        );
        assert!(
            level_ui.chooser.is_some(),
            "{key:?} dropped the card waiting for its target"
        );
        assert!(
            drawn.iter().any(|text| text
                .text
                .starts_with("Crash a worker is not played yet: pick its target")),
            "{key:?}: nothing says why the step waits"
        );
    }
    assert_eq!(phase(&app), before);
    // Picking a target plays it; the step then goes.
    let (_, asks) = level_frames(&app, &context, &mut level_ui, &mut cache, probe::key(egui::Key::Num1));
    assert!(
        matches!(asks.intents.as_slice(), [Intent::Play(Play::CrashWorker(_))]),
        "{:?}",
        asks.intents
    );
    assert!(level_ui.chooser.is_none());
}

/// Drawn, but not all of it: part of the text is outside what its panel shows.
fn cut_by_its_panel(text: &Drawn, screen: egui::Rect) -> bool {
    text.clip.intersect(screen).intersects(text.rect) && !text.fully_visible(screen)
}

#[test]
fn in_chapter_one_at_1280x720_the_task_and_the_hands_words_are_whole_on_screen() {
    let screen = probe::screen(WINDOW.0, WINDOW.1, 1.0);
    let context = probe::context(1.0);
    let mut probes = 0;
    for level in [
        "01-naive-retry.level.ron",
        "02-one-attempt.level.ron",
        "03-model-calls-again.level.ron",
        "04-pause.level.ron",
        "05-crash-replay.level.ron",
        "06-ledger-holds.level.ron",
        "07-look-it-up.level.ron",
    ] {
        let data = tempfile::tempdir().expect("temp dir");
        let mut app = game(data.path());
        open_campaign_level(&mut app, level);
        let (mut level_ui, mut cache) = (level_ui(), TimelineCache::default());
        // Every third phase of the first thirty: the cards' reasons change as messages travel.
        while phase(&app) <= 30 && !session(&app).is_over() {
            let (drawn, _) = level_frames(&app, &context, &mut level_ui, &mut cache, Vec::new());
            probes += 1;
            let at = phase(&app);
            let task: Vec<&Drawn> = drawn
                .iter()
                .filter(|text| text.text.starts_with("r1/") && text.text.contains(" · "))
                .collect();
            assert!(!task.is_empty(), "{level} at phase {at}: no task drawn");
            for line in task {
                assert!(
                    line.fully_visible(screen),
                    "{level} at phase {at}: task line cut: {line:?}"
                );
            }
            let hand = drawn
                .iter()
                .find(|text| text.text == "Your hand")
                .unwrap_or_else(|| panic!("{level} at phase {at}: no hand"));
            let right = drawn
                .iter()
                .find(|text| text.text.starts_with("Ledger"))
                .map_or(screen.right(), |ledger| ledger.rect.left());
            let timeline = drawn
                .iter()
                .find(|text| text.text.ends_with("what happened"))
                .map_or(screen.bottom(), |heading| heading.rect.top());
            let cut: Vec<&str> = drawn
                .iter()
                .filter(|text| {
                    text.rect.top() >= hand.rect.top()
                        && text.rect.top() < timeline
                        && text.rect.left() >= hand.rect.left() - 2.0
                        && text.rect.right() <= right
                })
                .filter(|text| cut_by_its_panel(text, screen))
                .map(|text| text.text.as_str())
                .collect();
            assert!(
                cut.is_empty(),
                "{level} at phase {at}: the hand's words cut by its panel: {cut:#?}"
            );
            // Whole on screen, not only uncut: the stage, then the timeline, give the hand the
            // lines a card's reason needs ("…" and the rest on hover hid the words that say
            // when the card can be played).
            let elided: Vec<&str> = drawn
                .iter()
                .filter(|text| {
                    text.elided
                        && text.rect.top() >= hand.rect.top()
                        && text.rect.top() < timeline
                        && text.rect.left() >= hand.rect.left() - 2.0
                        && text.rect.right() <= right
                })
                .map(|text| text.text.as_str())
                .collect();
            assert!(
                elided.is_empty(),
                "{level} at phase {at}: the hand's words end in …: {elided:#?} (gives {} hand {})",
                level_ui.timeline_gives,
                level_ui.hand_height
            );
            for _ in 0..3 {
                send(&mut app, Intent::Step);
            }
        }
    }
    // 02 and 04 go quiet by phase 12 when nothing is played: fewer screens there.
    assert!(probes > 30, "{probes} screens looked at");
}

/// Every line drawn in part on `screen`: cut by the edge of its panel or scroll view.
fn half_lines(drawn: &[Drawn], screen: egui::Rect) -> Vec<(String, egui::Rect)> {
    drawn
        .iter()
        .flat_map(|text| {
            text.half_lines(screen)
                .into_iter()
                .map(|line| (text.text.clone(), line))
        })
        .collect()
}

/// Lines of `drawn` hidden under the foot of their scroll view: there was more to scroll to.
fn scrolls(drawn: &[Drawn], screen: egui::Rect) -> bool {
    drawn.iter().any(|text| {
        let seen = text.clip.intersect(screen);
        text.lines.iter().any(|line| line.top() >= seen.bottom() - 0.5)
    })
}

/// The level select as the game draws it for `state`, at `zoom`.
fn level_select_frames(app: &mut App, state: &mut LevelSelectState, zoom: f32) -> Vec<Drawn> {
    let world = app.world_mut();
    let campaign = world.remove_resource::<Campaign>().expect("the campaign");
    let context = probe::context(zoom);
    let drawn = {
        let mut progress = world.resource_mut::<Progress>();
        probe::frames(&context, WINDOW, PROBE_FRAMES, Vec::new(), |context| {
            level_select::frame(context, state, &campaign, &mut progress);
        })
    };
    app.world_mut().insert_resource(campaign);
    drawn
}

#[test]
fn the_level_selects_briefing_ends_on_a_whole_line_at_1280x720_and_the_projectors_zoom() {
    let data = tempfile::tempdir().expect("temp dir");
    let mut app = game(data.path());
    app.world_mut().resource_mut::<Campaign>().unlock_all = true;
    let levels = app.world().resource::<Campaign>().levels.len();
    let mut scrolled = 0;
    for zoom in [1.0, PRESENTER_ZOOM] {
        let screen = probe::screen(WINDOW.0, WINDOW.1, zoom);
        for index in 0..levels {
            // Next up: its "more" open, the longest the briefing gets.
            let mut state = LevelSelectState::new(index, true);
            let drawn = level_select_frames(&mut app, &mut state, zoom);
            // The detail panel: the right-hand side (the level list scrolls to its selection).
            let detail: Vec<Drawn> = drawn
                .into_iter()
                .filter(|text| text.clip.left() > screen.width() / 3.0)
                .collect();
            scrolled += usize::from(scrolls(&detail, screen));
            let half = half_lines(&detail, screen);
            assert!(
                half.is_empty(),
                "level {} at zoom {zoom}: half lines {half:#?}",
                index + 1
            );
        }
    }
    // Enough briefings are longer than their panel for the foot to matter.
    assert!(scrolled >= 5, "{scrolled} briefings scroll");
}

/// The debrief as the game draws it, at `zoom`.
fn debrief_frames(app: &App, zoom: f32) -> Vec<Drawn> {
    use twice::screens::debrief::{self, DebriefInputs, OtherRun};
    let world = app.world();
    let inputs = DebriefInputs {
        session: world.resource::<Session>(),
        campaign: world.resource::<Campaign>(),
        progress: world.resource::<Progress>(),
        prediction: world.resource::<Prediction>(),
        take_home: world.resource::<twice::take_home::TakeHome>(),
    };
    let (mut cache, mut other, mut copied) = (TimelineCache::default(), OtherRun::default(), 0);
    let context = probe::context(zoom);
    probe::frames(&context, WINDOW, PROBE_FRAMES, Vec::new(), |context| {
        debrief::frame(context, (&mut cache, &mut other), &inputs, &mut copied);
    })
}

/// Plays `tape` to its end and opens its debrief.
fn debrief_of(tape_name: &str) -> (tempfile::TempDir, App) {
    let data = tempfile::tempdir().expect("temp dir");
    let mut app = game(data.path());
    play_moves_then_run(&mut app, &tape(tape_name));
    update_until(&mut app, "the conclusion", |app| session(app).conclusion.is_some());
    send(&mut app, Intent::Debrief);
    app.update();
    assert_eq!(screen(&app), Screen::Debrief);
    (data, app)
}

#[test]
fn the_debriefs_title_numbers_the_level_as_its_header_does() {
    let (_data, app) = debrief_of("03-model-calls-again.win.tape.ron");
    let title = session(&app).numbered_title();
    assert!(title.starts_with("2.1 · "), "03 is the campaign's 2.1: {title}");
    let drawn = debrief_frames(&app, 1.0);
    let expected = format!("Debrief · {title}");
    assert!(
        drawn.iter().any(|text| text.text == expected),
        "{expected:?} not drawn: {:#?}",
        drawn.iter().map(|text| &text.text).take(12).collect::<Vec<_>>()
    );
}

/// The last line of the debrief's code panel (the other run's fix, as an excerpt).
fn last_code_line(app: &App) -> Option<String> {
    use twice_world::code::Excerpt;
    let told = session(app).conclusion.clone()?.debrief?;
    let simulation = session(app).simulation();
    let fix = twice_world::code::fix(simulation.level(), simulation.guards(), &told.fix_guards(None));
    match fix.excerpt(1).last()? {
        Excerpt::Line(diff) => Some(diff.line.shown()),
        Excerpt::Gap { lines } => Some(format!(
            "… {lines} unchanged line{}",
            if *lines == 1 { "" } else { "s" }
        )),
    }
}

#[test]
fn the_debriefs_code_and_verdict_end_on_whole_lines_at_1280x720_and_the_projectors_zoom() {
    let mut code_scrolled = 0;
    for name in [
        "01-naive-retry.win.tape.ron",
        "03-model-calls-again.win.tape.ron",
        "04-pause.whole-hand.tape.ron",
        "05-crash-replay.win.tape.ron",
        "09-settle-it-yourself.win.tape.ron",
        "13-hashed-keys.win.tape.ron",
    ] {
        let (_data, app) = debrief_of(name);
        for zoom in [1.0, PRESENTER_ZOOM] {
            let screen = probe::screen(WINDOW.0, WINDOW.1, zoom);
            let drawn = debrief_frames(&app, zoom);
            // The code panel's last line, hidden below its foot: there was more to scroll to.
            if let Some(last) = last_code_line(&app)
                && !drawn.iter().any(|text| text.text == last && text.fully_visible(screen))
            {
                code_scrolled += 1;
            }
            let half = half_lines(&drawn, screen);
            assert!(half.is_empty(), "{name} at zoom {zoom}: half lines {half:#?}");
        }
    }
    assert!(code_scrolled >= 2, "{code_scrolled} code panels scroll");
}

#[test]
fn at_the_projectors_zoom_what_decided_and_every_see_it_are_on_screen_without_scrolling() {
    for name in [
        "04-pause.whole-hand.tape.ron",
        "04-pause.lost-answer.tape.ron",
        "04-pause.slow-and-whisper.tape.ron",
        "05-crash-replay.win.tape.ron",
        "03-model-calls-again.slow-alone.tape.ron",
    ] {
        let (_data, app) = debrief_of(name);
        let told = session(&app)
            .conclusion
            .clone()
            .and_then(|conclusion| conclusion.debrief)
            .expect("a debrief");
        let screen = probe::screen(WINDOW.0, WINDOW.1, PRESENTER_ZOOM);
        let drawn = debrief_frames(&app, PRESENTER_ZOOM);
        let decided = drawn.iter().find(|text| text.text == "What decided this run");
        assert!(
            decided.is_some_and(|text| text.fully_visible(screen)),
            "{name}: what decided is not on screen: {decided:?}"
        );
        let see_it: Vec<&Drawn> = drawn.iter().filter(|text| text.text == "See it").collect();
        assert_eq!(
            see_it.len(),
            told.what_if.len(),
            "{name}: one See it per other run, in view: {:#?}",
            drawn
                .iter()
                .filter(|text| text.rect.right() < screen.center().x)
                .map(|text| (&text.text, text.rect.top(), text.rect.bottom()))
                .collect::<Vec<_>>()
        );
        for button in see_it {
            assert!(
                button.fully_visible(screen),
                "{name}: a See it below the fold at {:?} (screen {screen:?})",
                button.rect
            );
        }
    }
}

/// The level select the game opens after the debrief's Next (its state as spawned, from
/// what the Next asked for), drawn at 1280×720.
fn opened_level_select(app: &mut App) -> (usize, Vec<Drawn>) {
    use twice::session::NextBriefing;
    app.update();
    assert_eq!(screen(app), Screen::LevelSelect);
    let asked = std::mem::take(&mut *app.world_mut().resource_mut::<NextBriefing>());
    let world = app.world();
    let mut state = LevelSelectState::opened(
        world.resource::<Campaign>(),
        world.resource::<Progress>(),
        world.resource::<twice::presenter::Presenter>(),
        &asked,
    );
    let drawn = level_select_frames(app, &mut state, 1.0);
    (state.selected(), drawn)
}

#[test]
fn next_up_is_the_first_level_not_yet_won_and_says_when_a_chapter_is_done() {
    let data = tempfile::tempdir().expect("temp dir");
    let mut app = game(data.path());
    let ids: Vec<(String, u32, String)> = app
        .world()
        .resource::<Campaign>()
        .levels
        .iter()
        .map(|loaded| {
            (
                loaded.level.id.clone(),
                loaded.level.chapter,
                loaded.level.title.clone(),
            )
        })
        .collect();
    // 02 and 03 won already; 01 played (again) and won.
    {
        let mut progress = app.world_mut().resource_mut::<Progress>();
        for (id, _, _) in &ids[1..3] {
            progress.record(id, twice_world::checker::Outcome::PaidTwice, true);
        }
    }
    play_moves_then_run(&mut app, &tape("01-naive-retry.win.tape.ron"));
    send(&mut app, Intent::Debrief);
    send(&mut app, Intent::NextBriefing);
    let (selected, drawn) = opened_level_select(&mut app);
    assert_eq!(ids[selected].0, ids[3].0, "Next after 01 is 04, the first not won");
    let screen = probe::screen(WINDOW.0, WINDOW.1, 1.0);
    let banner = drawn.iter().find(|text| text.text.starts_with("▶ Next up"));
    assert!(banner.is_some_and(|text| text.fully_visible(screen)), "{banner:?}");
    assert!(
        drawn
            .iter()
            .any(|text| text.text == ids[3].2 && text.fully_visible(screen))
    );
    assert!(!drawn.iter().any(|text| text.text.contains("Chapter 1 done")));

    // Every other level of chapter 1 won: 01's Next is chapter 2's first, and says chapter 1 is done.
    let data = tempfile::tempdir().expect("temp dir");
    let mut app = game(data.path());
    {
        let mut progress = app.world_mut().resource_mut::<Progress>();
        for (id, _, _) in ids.iter().skip(1).filter(|(_, chapter, _)| *chapter == 1) {
            progress.record(id, twice_world::checker::Outcome::PaidTwice, true);
        }
    }
    play_moves_then_run(&mut app, &tape("01-naive-retry.win.tape.ron"));
    send(&mut app, Intent::Debrief);
    let debrief = debrief_frames(&app, 1.0);
    assert!(
        debrief.iter().any(|text| text.text.contains("Chapter 1 done")),
        "the debrief says chapter 1 is done"
    );
    send(&mut app, Intent::NextBriefing);
    let (selected, drawn) = opened_level_select(&mut app);
    let first_of_two = ids
        .iter()
        .position(|(_, chapter, _)| *chapter == 2)
        .expect("a chapter 2");
    assert_eq!(selected, first_of_two);
    for said in ["✔ Chapter 1 done", "▶ Next up: read the briefing, then play"] {
        assert!(
            drawn.iter().any(|text| text.text == said && text.fully_visible(screen)),
            "{said:?} not said"
        );
    }

    // A level already won is never "next up", however the level select was opened on it.
    let mut state = LevelSelectState::new(1, true);
    let drawn = level_select_frames(&mut app, &mut state, 1.0);
    assert!(
        !drawn.iter().any(|text| text.text.contains("Next up")),
        "Next up over 02, won already"
    );
}

#[test]
fn the_keys_overlay_is_laid_out_in_the_first_frame_it_is_shown() {
    use twice::screens::level::shortcuts;
    let keys = shortcuts();
    let data = tempfile::tempdir().expect("temp dir");
    let mut app = game(data.path());
    open_campaign_level(&mut app, "03-model-calls-again.level.ron");
    for zoom in [1.0, PRESENTER_ZOOM] {
        let (mut level_ui, mut cache) = (level_ui(), TimelineCache::default());
        let context = probe::context(zoom);
        // The level as it has been on screen a while; then ? opens the overlay.
        level_frames(&app, &context, &mut level_ui, &mut cache, Vec::new());
        level_ui.help = true;
        let inputs = level_inputs(&app);
        let shown = probe::shown_frames(&context, WINDOW, 8, |context| {
            twice::screens::level::frame(context, &mut level_ui, &mut cache, &inputs);
        });
        // Each key's words where the overlay puts them once it has settled.
        let place = |drawn: &[Drawn], words: &str| {
            drawn
                .iter()
                .find(|text| text.text == words)
                .map(|text| (text.rect.min, text.lines.len()))
        };
        let settled = shown.last().expect("frames");
        // No key's words run into the next key's.
        let mut words: Vec<&Drawn> = settled
            .iter()
            .filter(|text| keys.iter().any(|(_, what)| text.text == *what))
            .collect();
        words.sort_by(|one, other| {
            (one.rect.left(), one.rect.top())
                .partial_cmp(&(other.rect.left(), other.rect.top()))
                .expect("numbers")
        });
        for pair in words.windows(2) {
            assert!(
                (pair[0].rect.left() - pair[1].rect.left()).abs() > 1.0
                    || pair[0].rect.bottom() <= pair[1].rect.top() + 0.5,
                "zoom {zoom}: {:?} runs into {:?}",
                pair[0].text,
                pair[1].text
            );
        }
        for (frame, drawn) in shown.iter().enumerate() {
            for (_, words) in keys.iter().copied() {
                let now = place(drawn, words);
                let then = place(settled, words);
                assert!(then.is_some(), "zoom {zoom}: {words:?} is not in the settled overlay");
                let moved = match (now, then) {
                    (Some((now, now_lines)), Some((then, then_lines))) => {
                        now.distance(then) > 0.5 || now_lines != then_lines
                    }
                    _ => false,
                };
                assert!(
                    !moved,
                    "zoom {zoom}, frame {frame}: {words:?} drawn at {now:?}, settled at {then:?}"
                );
            }
        }
    }
}

#[test]
fn a_debrief_first_drawn_short_grows_with_its_window_and_keeps_the_long_columns_order() {
    use twice::screens::debrief::{self, DebriefInputs, OtherRun};
    let (_data, app) = debrief_of("03-model-calls-again.win.tape.ron");
    let world = app.world();
    let inputs = DebriefInputs {
        session: world.resource::<Session>(),
        campaign: world.resource::<Campaign>(),
        progress: world.resource::<Progress>(),
        prediction: world.resource::<Prediction>(),
        take_home: world.resource::<twice::take_home::TakeHome>(),
    };
    let (mut cache, mut other, mut copied) = (TimelineCache::default(), OtherRun::default(), 0);
    let context = probe::context(1.0);
    // The window's first frames are short (a window still opening), then 1280×720.
    for size in [(1280.0, 400.0), WINDOW] {
        probe::frames(&context, size, PROBE_FRAMES, Vec::new(), |context| {
            debrief::frame(context, (&mut cache, &mut other), &inputs, &mut copied);
        });
    }
    let drawn = probe::frames(&context, WINDOW, PROBE_FRAMES, Vec::new(), |context| {
        debrief::frame(context, (&mut cache, &mut other), &inputs, &mut copied);
    });
    let top = |words: &str| {
        drawn
            .iter()
            .find(|text| text.text.starts_with(words))
            .map(|text| text.rect.top())
            .unwrap_or_else(|| panic!("{words:?} not drawn"))
    };
    // The tall column's order: the money's story, then what decided, then every credit.
    assert!(top("The heist worked") < top("What decided this run"));
    assert!(top("What decided this run") < top("Every credit Penny meant to issue"));
    let screen = probe::screen(WINDOW.0, WINDOW.1, 1.0);
    assert!(half_lines(&drawn, screen).is_empty());
}

/// The keys overlay as it settles, once `?` opened it over level 03 at `zoom`.
fn keys_overlay(app: &App, zoom: f32) -> Vec<Drawn> {
    let (mut level_ui, mut cache) = (level_ui(), TimelineCache::default());
    let context = probe::context(zoom);
    level_frames(app, &context, &mut level_ui, &mut cache, Vec::new());
    level_ui.help = true;
    let inputs = level_inputs(app);
    let mut shown = probe::shown_frames(&context, WINDOW, 8, |context| {
        twice::screens::level::frame(context, &mut level_ui, &mut cache, &inputs);
    });
    shown.pop().expect("frames")
}

#[test]
fn the_keys_overlay_ends_on_a_whole_row_at_1280x720_and_the_projectors_zoom() {
    use twice::screens::level::shortcuts;
    let keys = shortcuts();
    let data = tempfile::tempdir().expect("temp dir");
    let mut app = game(data.path());
    open_campaign_level(&mut app, "03-model-calls-again.level.ron");
    let mut scrolled = 0;
    for zoom in [1.0, PRESENTER_ZOOM] {
        let screen = probe::screen(WINDOW.0, WINDOW.1, zoom);
        let drawn = keys_overlay(&app, zoom);
        // The overlay's rows: each key's words (and the statuses' line under them).
        let rows: Vec<Drawn> = drawn
            .into_iter()
            .filter(|text| {
                keys.iter().any(|(_, what)| text.text == *what) || text.text.starts_with("Statuses read by glyph")
            })
            .collect();
        let shown = rows.iter().filter(|text| text.fully_visible(screen)).count();
        assert!(shown >= 3, "zoom {zoom}: {shown} key rows on screen");
        if shown < keys.len() + 1 {
            scrolled += 1;
        }
        let half = half_lines(&rows, screen);
        assert!(half.is_empty(), "zoom {zoom}: half rows {half:#?}");
    }
    // At the projector the keys are more than the screen holds: the view's foot matters.
    assert!(scrolled >= 1, "the overlay never scrolls");
}

/// The level select once its list has scrolled to the selection (an animated scroll: some
/// frames), at `zoom`.
fn level_select_settled(app: &mut App, state: &mut LevelSelectState, zoom: f32) -> Vec<Drawn> {
    let world = app.world_mut();
    let campaign = world.remove_resource::<Campaign>().expect("the campaign");
    let context = probe::context(zoom);
    let drawn = {
        let mut progress = world.resource_mut::<Progress>();
        // As the window shows it (a pass egui discards drawn again), from a new context: its
        // first frame is another size than the screen's, as a window's first frame at the
        // projector is drawn before the zoom applies.
        probe::shown_frames(&context, WINDOW, SETTLE_FRAMES, |context| {
            level_select::frame(context, state, &campaign, &mut progress);
        })
        .pop()
        .expect("frames")
    };
    app.world_mut().insert_resource(campaign);
    drawn
}

/// Frames enough for an animated scroll (a third of a second at most) to come to rest.
const SETTLE_FRAMES: usize = 40;

#[test]
fn the_level_selects_list_ends_on_a_whole_line_at_1280x720_and_the_projectors_zoom() {
    let data = tempfile::tempdir().expect("temp dir");
    let mut app = game(data.path());
    app.world_mut().resource_mut::<Campaign>().unlock_all = true;
    let titles: Vec<String> = app
        .world()
        .resource::<Campaign>()
        .levels
        .iter()
        .map(|loaded| loaded.level.title.clone())
        .collect();
    let levels = titles.len();
    let mut scrolled = 0;
    for zoom in [1.0, PRESENTER_ZOOM] {
        let screen = probe::screen(WINDOW.0, WINDOW.1, zoom);
        // Selected first, in the middle and last: the list scrolled to its top, to the
        // selection and to its end.
        for index in [0, levels / 2, levels - 1] {
            let mut state = LevelSelectState::new(index, false);
            let drawn = level_select_settled(&mut app, &mut state, zoom);
            // The list: the left-hand side, under the top bar.
            let list: Vec<Drawn> = drawn
                .into_iter()
                .filter(|text| text.clip.left() < screen.width() / 3.0 && text.clip.top() > 40.0)
                .collect();
            // Some levels' titles under the foot: the list scrolls.
            scrolled += usize::from(titles.iter().any(|title| {
                !list
                    .iter()
                    .any(|text| text.text == *title && text.fully_visible(screen))
            }));
            let half = half_lines(&list, screen);
            assert!(
                half.is_empty(),
                "level {} at zoom {zoom}: half lines {half:#?}",
                index + 1
            );
            // Scrolled to the selection: its title whole in view.
            assert!(
                list.iter()
                    .any(|text| text.text == titles[index] && text.fully_visible(screen)),
                "level {} at zoom {zoom}: its title is not in view",
                index + 1
            );
        }
    }
    assert!(scrolled >= 4, "{scrolled} lists scroll");
}

#[test]
fn the_level_screens_code_ends_on_a_whole_line_at_1280x720_and_the_projectors_zoom() {
    let data = tempfile::tempdir().expect("temp dir");
    let mut app = game(data.path());
    open_campaign_level(&mut app, "05-crash-replay.level.ron");
    let mut scrolled = 0;
    // At the start, and later with the cursor down the loop (the view follows it).
    for target in [0, 8] {
        step_to(&mut app, target);
        let view = twice_world::code::view(&session(&app).simulation());
        let code: Vec<String> = view
            .program
            .lines
            .iter()
            .map(|line| line.shown())
            .chain(view.tools.iter().map(|line| line.text.clone()))
            .collect();
        for zoom in [1.0, PRESENTER_ZOOM] {
            let screen = probe::screen(WINDOW.0, WINDOW.1, zoom);
            // As the level opens: at the projector the presenter's notes beside it, no side
            // columns (with them too, P, the code has no room left for a line at all).
            let projector = zoom > 1.0;
            let mut level_ui = LevelUi {
                code: true,
                side_panels: !projector,
                notes: projector,
                ..LevelUi::default()
            };
            let mut cache = TimelineCache::default();
            let context = probe::context(zoom);
            let inputs = level_inputs(&app);
            let drawn = probe::frames(&context, WINDOW, SETTLE_FRAMES, Vec::new(), |context| {
                twice::screens::level::frame(context, &mut level_ui, &mut cache, &inputs);
            });
            let lines: Vec<Drawn> = drawn.into_iter().filter(|text| code.contains(&text.text)).collect();
            assert!(
                lines.len() >= 3,
                "phase {target} at zoom {zoom}: {} code lines",
                lines.len()
            );
            let seen = lines.iter().filter(|text| text.fully_visible(screen)).count();
            if seen < code.len() {
                scrolled += 1;
            }
            let half = half_lines(&lines, screen);
            assert!(half.is_empty(), "phase {target} at zoom {zoom}: half lines {half:#?}");
        }
    }
    assert!(scrolled >= 2, "{scrolled} code views scroll");
}

#[test]
fn the_level_select_and_the_ending_say_the_campaign_in_the_same_line() {
    let data = tempfile::tempdir().expect("temp dir");
    let mut app = game(data.path());
    let ids: Vec<String> = app
        .world()
        .resource::<Campaign>()
        .levels
        .iter()
        .map(|loaded| loaded.level.id.clone())
        .collect();
    {
        let mut progress = app.world_mut().resource_mut::<Progress>();
        for id in &ids[..3] {
            progress.record(id, twice_world::checker::Outcome::PaidTwice, true);
        }
        progress.record_best("naive-retry", 1, 31);
    }
    let is_summary = |text: &&Drawn| text.text.contains('★') && text.text.ends_with("defended");
    let mut state = LevelSelectState::new(0, false);
    let select = level_select_frames(&mut app, &mut state, 1.0);
    let ending = {
        let world = app.world();
        probe::frames(&probe::context(1.0), WINDOW, PROBE_FRAMES, Vec::new(), |context| {
            twice::screens::ending::frame(context, world.resource::<Campaign>(), world.resource::<Progress>());
        })
    };
    let said: Vec<&str> = [&select, &ending]
        .iter()
        .map(|drawn| {
            drawn
                .iter()
                .find(is_summary)
                .map(|text| text.text.as_str())
                .expect("the campaign's line")
        })
        .collect();
    assert_eq!(said[0], said[1], "the level select and the ending say it two ways");
    let expected = format!("3 of {} finished · ★ 2 of ", ids.len());
    assert!(said[0].starts_with(&expected), "{:?} is not {expected:?}…", said[0]);
}

#[test]
fn the_endings_columns_end_on_whole_lines_at_1280x720_and_the_projectors_zoom() {
    let data = tempfile::tempdir().expect("temp dir");
    let mut app = game(data.path());
    // The campaign completed as well as it can be (every win at par, every defence at its
    // minimum): the ending as that player sees it, with its longest line ("★ 62 of 62").
    {
        let levels: Vec<twice_world::level::Level> = app
            .world()
            .resource::<Campaign>()
            .levels
            .iter()
            .map(|loaded| loaded.level.clone())
            .collect();
        let mut progress = app.world_mut().resource_mut::<Progress>();
        for level in &levels {
            progress.record(&level.id, level.goal, true);
            if let Some(par) = level.par {
                progress.record_best(&level.id, par.cards, par.phases);
            }
            if let Some(defender) = &level.defender {
                progress.record_defended(&level.id, &defender.minimum);
            }
        }
    }
    let world = app.world();
    for zoom in [1.0, PRESENTER_ZOOM] {
        let screen = probe::screen(WINDOW.0, WINDOW.1, zoom);
        let drawn = probe::frames(&probe::context(zoom), WINDOW, PROBE_FRAMES, Vec::new(), |context| {
            twice::screens::ending::frame(context, world.resource::<Campaign>(), world.resource::<Progress>());
        });
        assert!(
            drawn.iter().any(|text| text.text == "What you learned"),
            "zoom {zoom}: not the ending"
        );
        // The campaign's line whole on screen (at the projector it ran off the right edge).
        let line =
            twice::campaign::summary::CampaignSummary::of(world.resource::<Campaign>(), world.resource::<Progress>())
                .line();
        assert!(
            drawn.iter().any(|text| text.text == line && text.fully_visible(screen)),
            "zoom {zoom}: {line:?} not whole on screen"
        );
        let half = half_lines(&drawn, screen);
        assert!(half.is_empty(), "zoom {zoom}: half lines {half:#?}");
        // No words drawn over others (the guards' stars ran over the level's title): line by
        // line, as a label wrapped after another starts its first line beside it.
        let lines: Vec<(&str, egui::Rect)> = drawn
            .iter()
            .filter(|text| text.fully_visible(screen) && !text.text.trim().is_empty())
            .flat_map(|text| {
                text.lines
                    .iter()
                    .filter(|line| line.width() > 1.0)
                    .map(move |line| (text.text.as_str(), *line))
            })
            .collect();
        for (index, (one, one_line)) in lines.iter().enumerate() {
            for (other, other_line) in &lines[index + 1..] {
                let overlap = one_line.intersect(*other_line);
                assert!(
                    one == other || overlap.width() < 1.0 || overlap.height() < 1.0,
                    "zoom {zoom}: {one:?} drawn over {other:?} ({one_line:?} and {other_line:?})"
                );
            }
        }
    }
}
