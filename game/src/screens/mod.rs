//! The screens, as one state machine. Each screen's entities carry `DespawnOnExit`.
//!
//! The screens own their transitions (as bevy_new_2d's do): a screen's buttons move it, and
//! what the session or the defence did (their news) is answered here. The game's domain
//! (session, defence, guide, campaign, progress) never names a screen (`sim/tests/layers.rs`).

use bevy::prelude::*;

use crate::defence::{self, DefenceOpened};
use crate::session::{Leaving, Mode, SessionNews, SessionSet};

pub mod debrief;
pub mod defend;
pub mod ending;
mod header;
pub mod level;
pub mod level_select;
pub mod replay;
mod sandbox;
pub mod shot;
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

/// The state machine alone, with its transitions (headless tests use this without any UI).
pub(super) fn plugin(app: &mut App) {
    app.init_state::<Screen>();
    app.add_systems(
        Update,
        follow_the_news
            .after(SessionSet::Intents)
            .before(SessionSet::Jobs)
            .after(defence::apply_intents),
    );
    // Leaving the defender's screen closes the defence (and any check in flight).
    app.add_systems(OnExit(Screen::Defend), defence::close);
}

/// Where the player goes when a level opened in `mode` closes.
pub fn leaving_to(mode: Mode, leaving: Leaving) -> Screen {
    match (leaving, mode) {
        (Leaving::ToTheEnding, _) => Screen::Ending,
        (Leaving::Back, Mode::Campaign) => Screen::LevelSelect,
        (Leaving::Back, Mode::Sandbox) => Screen::Sandbox,
        (Leaving::Back, Mode::Replay) => Screen::Replay,
    }
}

/// The screen that answers what the session or the defence did, in the frame they did it.
fn follow_the_news(
    mut news: MessageReader<SessionNews>,
    mut defences: MessageReader<DefenceOpened>,
    mut next_screen: ResMut<NextState<Screen>>,
) {
    for news in news.read() {
        next_screen.set(match *news {
            SessionNews::Opened | SessionNews::Resumed => Screen::Level,
            SessionNews::DebriefAsked => Screen::Debrief,
            SessionNews::Closed { mode, leaving } => leaving_to(mode, leaving),
            // The level select opens on the next level's briefing (`NextBriefing`).
            SessionNews::ClosedForTheNextBriefing => Screen::LevelSelect,
        });
    }
    if defences.read().count() > 0 {
        next_screen.set(Screen::Defend);
    }
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
