//! Presenter mode: the game at a projector for a workshop (`--presenter`, `--unlock-all`,
//! `--chapter N`). Text and timeline are scaled for the back of a room, the level screen shows
//! the stage, the cards and the timeline first (the side panels on demand), and the chapter's
//! presenter notes (`levels/presenter-notes.ron`: what to say, what to ask the room) sit
//! beside the level.

use bevy::prelude::*;

use crate::options::Options;

/// How much larger everything is drawn at a projector: text at 1.75 times the window's usual
/// 12.5–17 px reads at 22–30 px.
pub const PRESENTER_ZOOM: f32 = 1.75;

/// What the command line asked of the presenter.
#[derive(Clone, Debug, Default, PartialEq, Eq, Resource)]
pub struct Presenter {
    /// `--presenter`: scaled text, side panels on demand, notes shown.
    pub on: bool,
    /// `--unlock-all`: every level open, whatever progress says (progress is not changed).
    pub unlock_all: bool,
    /// `--chapter N`: the level select opens on this chapter's first level.
    pub chapter: Option<u32>,
}

impl Presenter {
    pub fn from_options(options: &Options) -> Presenter {
        Presenter {
            on: options.presenter,
            unlock_all: options.unlock_all,
            chapter: options.chapter,
        }
    }

    /// The zoom egui draws with.
    pub fn zoom(&self) -> f32 {
        if self.on { PRESENTER_ZOOM } else { 1.0 }
    }
}
