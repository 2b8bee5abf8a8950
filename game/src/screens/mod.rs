//! The screens, as one state machine. Each screen's entities carry `DespawnOnExit`.

use bevy::prelude::*;

pub(crate) mod debrief;
pub mod defend;
mod ending;
mod header;
pub mod level;
pub mod level_select;
pub mod replay;
mod sandbox;
mod title;

/// Where the player is.
#[derive(States, Copy, Clone, Eq, PartialEq, Hash, Debug, Default)]
pub enum Screen {
    #[default]
    Title,
    LevelSelect,
    Level,
    Debrief,
    Sandbox,
    Replay,
    /// Defender mode: an unbeatable level played from the other side.
    Defend,
    /// After the campaign's last level: what the player learned, credits, the vault's finale.
    Ending,
}

/// The state machine alone (headless tests use this without any UI).
pub(super) fn plugin(app: &mut App) {
    app.init_state::<Screen>();
}

/// Every screen's UI.
pub(super) fn ui_plugin(app: &mut App) {
    app.add_plugins((
        title::plugin,
        level_select::plugin,
        level::plugin,
        debrief::plugin,
        sandbox::plugin,
        replay::plugin,
        defend::plugin,
        ending::plugin,
    ));
}
