//! `--screenshot` and `--screen`: the screens open the one the command line asks for, wait
//! until it is ready (a level settled, a debrief concluded, a defence checked), and capture
//! it. It lives with the screens because it moves between them and reads which one is shown;
//! opening a level or a tape at start is the command line's (`crate::headless`).

use std::path::PathBuf;
use std::time::Instant;

use bevy::prelude::*;
use bevy::render::view::screenshot::{Screenshot, ScreenshotCaptured, save_to_disk};
use twice_world::runtime::guards::{Guard, Guards};

use super::Screen;
use crate::defence::{Defence, DefenceIntent};
use crate::headless::HEADLESS_TIMEOUT;
use crate::options::{Options, ShotScreen};
use crate::replay_url::ReplayLinkRun;
use crate::session::{Intent, OpenProblem, Session};

/// Frames a screenshot waits after its screen is ready, so egui has laid everything out.
const SETTLE_FRAMES: u32 = 12;

/// Reads the options: add after they are inserted.
pub fn plugin(app: &mut App) {
    app.add_systems(Startup, open_the_screen_asked_for);
    let options = app.world().resource::<Options>().clone();
    if let Some(path) = options.screenshot.clone() {
        let screen = options.screen.unwrap_or(
            if options.tape.is_some() || options.level.is_some() || options.replay_url.is_some() {
                ShotScreen::Level
            } else {
                ShotScreen::Title
            },
        );
        app.insert_resource(ShotPlan {
            path,
            screen,
            ready_frames: 0,
            asked_for_end: false,
            asked_for_check: false,
            asked_for_counter_run: false,
            taken: false,
            started: Instant::now(),
        });
        app.add_systems(Update, drive_screenshot.after(crate::session::SessionSet::Conclude));
    }
}

/// `--screen` without a level or tape to open: that screen (a level-bound screen without a
/// level shows the title, and the shot fails for want of its level). `--chapter`: the level
/// select, on that chapter.
fn open_the_screen_asked_for(options: Res<Options>, mut next_screen: ResMut<NextState<Screen>>) {
    let opens_something = options.replay_url.is_some()
        || options.tape.is_some()
        || options.level.is_some()
        || options.bench_frames.is_some();
    if opens_something {
        return;
    }
    let shot_screen = options.screenshot.as_ref().and(options.screen);
    if let Some(screen) = shot_screen {
        next_screen.set(match screen {
            ShotScreen::Title => Screen::Title,
            ShotScreen::Levels => Screen::LevelSelect,
            ShotScreen::Sandbox => Screen::Sandbox,
            ShotScreen::Replay => Screen::Replay,
            ShotScreen::Ending => Screen::Ending,
            ShotScreen::Level
            | ShotScreen::Debrief
            | ShotScreen::DebriefOther
            | ShotScreen::Glossary
            | ShotScreen::Keys
            | ShotScreen::Predict
            | ShotScreen::Pause
            | ShotScreen::Code
            | ShotScreen::Defend => Screen::Title,
        });
    } else if options.chapter.is_some() {
        // A chapter jump opens the level select on that chapter.
        next_screen.set(Screen::LevelSelect);
    }
}

#[derive(Debug, Resource)]
struct ShotPlan {
    path: PathBuf,
    screen: ShotScreen,
    ready_frames: u32,
    asked_for_end: bool,
    /// `--screen defend --guards`: switched on and the check asked for.
    asked_for_check: bool,
    /// `--screen defend` of a defence that falls: its counter-example's run asked for.
    asked_for_counter_run: bool,
    taken: bool,
    started: Instant,
}

// A Bevy system: each argument is a resource or message the driver reads or writes.
#[allow(clippy::too_many_arguments)]
fn drive_screenshot(
    mut commands: Commands,
    mut plan: ResMut<ShotPlan>,
    screen: Res<State<Screen>>,
    session: Option<Res<Session>>,
    defence: Option<Res<Defence>>,
    options: Res<Options>,
    (problem, link_run): (Res<OpenProblem>, Option<Res<ReplayLinkRun>>),
    mut intents: MessageWriter<Intent>,
    mut defence_intents: MessageWriter<DefenceIntent>,
    mut exit: MessageWriter<AppExit>,
) {
    if plan.taken {
        return;
    }
    if let Some(problem) = &problem.0 {
        error!("--screenshot: {problem}");
        exit.write(AppExit::from_code(2));
        plan.taken = true;
        return;
    }
    if plan.started.elapsed() > HEADLESS_TIMEOUT {
        error!("--screenshot: the screen was not ready after {HEADLESS_TIMEOUT:?}");
        exit.write(AppExit::from_code(1));
        plan.taken = true;
        return;
    }
    // A shared run (--replay-url) is shown once it has been brought to its end.
    let link_pending = options.replay_url.is_some() && !link_run.is_some_and(|run| run.done);
    let settled_session = !link_pending
        && session
            .as_ref()
            .is_some_and(|session| !session.is_busy() && (!session.is_concluded() || session.conclusion.is_some()));
    let ready = match plan.screen {
        ShotScreen::Title => *screen.get() == Screen::Title,
        ShotScreen::Levels => *screen.get() == Screen::LevelSelect,
        ShotScreen::Sandbox => *screen.get() == Screen::Sandbox,
        ShotScreen::Replay => *screen.get() == Screen::Replay,
        ShotScreen::Ending => *screen.get() == Screen::Ending,
        ShotScreen::Level
        | ShotScreen::Glossary
        | ShotScreen::Keys
        | ShotScreen::Predict
        | ShotScreen::Pause
        | ShotScreen::Code => *screen.get() == Screen::Level && settled_session,
        ShotScreen::Defend => match defence.as_ref().filter(|_| *screen.get() == Screen::Defend) {
            None => false,
            Some(defence) => match &options.guards {
                None => true,
                Some(list) if !plan.asked_for_check => {
                    let guards = Guards::parse_list(list).unwrap_or_else(|_| Guards::all_off());
                    for guard in Guard::ALL.into_iter().filter(|guard| guards.is_on(*guard)) {
                        defence_intents.write(DefenceIntent::Toggle(guard));
                    }
                    defence_intents.write(DefenceIntent::Check);
                    plan.asked_for_check = true;
                    false
                }
                // A defence that falls is shown with its counter-example's run open (O).
                Some(_) if defence.is_checking() || defence.result.is_none() => false,
                Some(_) => {
                    let counter = defence
                        .current_report()
                        .is_some_and(|report| report.counter_example.is_some());
                    if counter && defence.counter_run.is_none() && !plan.asked_for_counter_run {
                        defence_intents.write(DefenceIntent::ToggleCounterExample);
                        plan.asked_for_counter_run = true;
                    }
                    !counter || defence.counter_run.is_some()
                }
            },
        },
        ShotScreen::Debrief | ShotScreen::DebriefOther => {
            if let Some(session) = session
                .as_ref()
                .filter(|_| *screen.get() == Screen::Level && settled_session)
            {
                if !session.is_over() && !plan.asked_for_end {
                    intents.write(Intent::RunToEnd);
                    plan.asked_for_end = true;
                } else if session.is_concluded() {
                    intents.write(Intent::Debrief);
                }
            }
            *screen.get() == Screen::Debrief && settled_session
        }
    };
    if !ready {
        plan.ready_frames = 0;
        return;
    }
    plan.ready_frames += 1;
    if plan.ready_frames < SETTLE_FRAMES {
        return;
    }
    plan.taken = true;
    let path = plan.path.clone();
    commands
        .spawn(Screenshot::primary_window())
        .observe(save_to_disk(path))
        .observe(|_captured: On<ScreenshotCaptured>, mut exit: MessageWriter<AppExit>| {
            exit.write(AppExit::Success);
        });
}
