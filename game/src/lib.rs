//! Twice, the game: a Bevy + bevy_egui window onto `twice_world`'s simulator.
//!
//! The game has no runtime or simulation logic of its own. It draws a
//! [`twice_world::simulator::Simulation`] and turns the player's input into
//! [`twice_world::level::Play`] actions — the same actions a tape holds — sent as
//! [`session::Intent`] messages and applied through `Simulation::play`.
//!
//! Layout (in the style of bevy_new_2d): one plugin per file, each with
//! `pub(super) fn plugin(app: &mut App)`; screens are a [`screens::Screen`] state and
//! their entities are scoped with `DespawnOnExit`.

use bevy::prelude::*;

pub mod campaign;
pub mod defence;
#[cfg(feature = "dev")]
mod dev_tools;
pub mod display;
pub mod explorer;
pub mod guide;
pub mod headless;
#[cfg(feature = "operator-api")]
pub mod operator_api;
pub mod options;
pub mod panels;
pub mod paths;
pub mod presenter;
pub mod progress;
pub mod replay_url;
pub mod screens;
pub mod session;
pub mod take_home;
pub mod ui;

use options::Options;
use paths::GamePaths;

/// Everything the game is without a window: the screens' state machine, the campaign,
/// progress, and the session that owns the simulation. Headless tests run this with
/// `MinimalPlugins` and `StatesPlugin`.
#[derive(Debug)]
pub struct CorePlugin {
    pub paths: GamePaths,
}

impl Plugin for CorePlugin {
    fn build(&self, app: &mut App) {
        app.insert_resource(self.paths.clone());
        app.init_resource::<presenter::Presenter>();
        app.add_plugins((
            screens::plugin,
            campaign::plugin,
            progress::plugin,
            session::plugin,
            #[cfg(feature = "operator-api")]
            operator_api::plugin,
            explorer::plugin,
            defence::plugin,
            guide::plugin,
            replay_url::plugin,
            take_home::plugin,
        ));
    }
}

/// The whole game in a window: Bevy's default plugins, egui, the core and the screens' UI.
#[derive(Debug)]
pub struct AppPlugin {
    pub options: Options,
    pub paths: GamePaths,
}

impl Plugin for AppPlugin {
    fn build(&self, app: &mut App) {
        let (width, height) = (self.options.width, self.options.height);
        app.add_plugins(DefaultPlugins.set(WindowPlugin {
            primary_window: Some(Window {
                title: "Twice — make Penny pay twice".into(),
                resolution: (width, height).into(),
                // A benchmark measures our work, not the display's refresh rate.
                present_mode: if self.options.bench_frames.is_some() {
                    bevy::window::PresentMode::AutoNoVsync
                } else {
                    bevy::window::PresentMode::AutoVsync
                },
                ..default()
            }),
            ..default()
        }));
        app.add_plugins(bevy_egui::EguiPlugin::default());
        if self.options.screenshot.is_some() {
            // A screenshot shows the screen, not where the display's pointer happens to rest:
            // without pointer input nothing is hovered and no tooltip covers the picture.
            let mut settings = app.world_mut().resource_mut::<bevy_egui::EguiGlobalSettings>();
            settings.input_system_settings.run_write_window_pointer_moved_messages = false;
            settings.input_system_settings.run_write_pointer_button_messages = false;
        }
        app.insert_resource(ClearColor(ui::theme::BACKGROUND_BEVY));
        // Before the core's start-up systems read it (the campaign's locks, the first level).
        app.insert_resource(presenter::Presenter::from_options(&self.options));
        app.add_plugins(CorePlugin {
            paths: self.paths.clone(),
        });
        app.add_plugins((ui::plugin, screens::ui_plugin));
        app.insert_resource(self.options.clone());
        app.add_plugins((headless::plugin, screens::shot::plugin));
        #[cfg(feature = "dev")]
        app.add_plugins(dev_tools::plugin);
        app.add_systems(Startup, spawn_camera);
    }

    fn finish(&self, app: &mut App) {
        // Every schedule runs its systems one after another, on one thread. The game's
        // systems are small (drawing a panel, stepping a simulation), and on a 2-core machine
        // the multi-threaded executor spent more waking and parking worker threads than it
        // saved: `--bench-frames 400` under Xvfb measured 7.3 ms of CPU per main schedule
        // with it and 2.5 ms without, and 15.8 → 9.4 ms per whole frame with the render
        // world's schedules single-threaded too. Rendering stays on its own thread.
        single_threaded(app.world_mut());
        single_threaded(app.sub_app_mut(bevy::render::RenderApp).world_mut());
    }
}

/// Runs every schedule of `world` on one thread.
fn single_threaded(world: &mut World) {
    let mut schedules = world.resource_mut::<Schedules>();
    for (_, schedule) in schedules.iter_mut() {
        schedule.set_executor(bevy::ecs::schedule::SingleThreadedExecutor::new());
    }
}

/// egui draws through the primary camera.
fn spawn_camera(mut commands: Commands) {
    commands.spawn((Name::new("Camera"), Camera2d));
}
