//! The room and the levels: who the browser is, and the level-select screen.

use serde::Serialize;

use super::super::levels::Catalogue;
use super::super::sessions::{LevelProgress, Participant, Win};
use super::{Look, look, outcome_look};
use twice_world::level::Level;
use twice_world::runtime::guards::Guard;

/// Which levels are open beyond their `requires`: every level, or the room's path.
#[derive(Clone, Debug, Default)]
pub struct Openings {
    pub unlock_all: bool,
    /// Level ids the presenter opened for the room (`--path`), in the plan's order.
    pub path: Vec<String>,
}

impl Openings {
    /// Whether a participant may open a level with its own guards.
    pub fn is_open(&self, level: &Level, participant: &Participant) -> bool {
        self.unlock_all || self.path.contains(&level.id) || level.requires.iter().all(|id| participant.is_finished(id))
    }
}

/// Who the browser is.
#[derive(Clone, Debug, Serialize)]
pub struct MeView {
    pub name: String,
    /// What takes this name back on another browser: shown on this participant's screen only.
    pub code: String,
    pub unlock_all: bool,
    /// The room's path (level stems), open to everyone.
    pub path: Vec<String>,
    /// The level open in this session, by stem.
    pub game: Option<String>,
    pub finished: u32,
    pub idle_minutes: u64,
}

pub fn me_view(participant: &Participant, catalogue: &Catalogue, openings: &Openings, idle_minutes: u64) -> MeView {
    MeView {
        name: participant.name.clone(),
        code: participant.claim_code.clone(),
        unlock_all: openings.unlock_all,
        path: openings
            .path
            .iter()
            .filter_map(|id| catalogue.by_id(id))
            .map(|level| level.stem.clone())
            .collect(),
        game: participant.open_level().map(str::to_owned),
        finished: u32::try_from(
            participant
                .progress
                .values()
                .filter(|progress| progress.finished)
                .count(),
        )
        .unwrap_or(u32::MAX),
        idle_minutes,
    }
}

/// A level's target: the fewest cards, then phases, of the best win known (`par` in its file).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct ParView {
    pub cards: u32,
    pub phases: u32,
}

/// The par of a level, if it has one (unbeatable levels have none).
pub fn par_of(level: &Level) -> Option<ParView> {
    level.par.map(|par| ParView {
        cards: par.cards,
        phases: par.phases,
    })
}

#[derive(Clone, Debug, Serialize)]
pub struct GuardView {
    pub name: &'static str,
    pub on: bool,
    pub describe: &'static str,
}

pub(super) fn guard_views(guards: twice_world::runtime::guards::Guards) -> Vec<GuardView> {
    Guard::ALL
        .into_iter()
        .map(|guard| GuardView {
            name: guard.name(),
            on: guards.is_on(guard),
            describe: twice_world::guards::promise(guard),
        })
        .collect()
}

#[derive(Clone, Debug, Serialize)]
pub struct CardCountView {
    pub card: &'static str,
    pub title: &'static str,
    pub count: u32,
}

#[derive(Clone, Debug, Serialize)]
pub struct WinView {
    pub cards: u32,
    pub phases: u32,
    pub outcome: Look,
}

pub(super) fn win_view(win: &Win) -> WinView {
    WinView {
        cards: win.cards,
        phases: win.phases,
        outcome: outcome_look(win.outcome),
    }
}

/// A level on the level-select screen.
#[derive(Clone, Debug, Serialize)]
pub struct LevelSummaryView {
    pub id: String,
    pub stem: String,
    pub title: String,
    pub chapter: u32,
    pub chapter_title: String,
    pub briefing: String,
    pub goal: Look,
    pub unbeatable: bool,
    pub cards: Vec<CardCountView>,
    /// The guards this level switches off.
    pub guards_off: Vec<GuardView>,
    /// Titles of the levels to finish first.
    pub requires: Vec<String>,
    /// `locked`, `open` or `finished`, with a glyph.
    pub state: Look,
    /// On the room's path: open whatever the lock chain.
    pub on_path: bool,
    pub playable: bool,
    pub best: Option<WinView>,
    pub par: Option<ParView>,
}

pub fn level_summaries(catalogue: &Catalogue, participant: &Participant, openings: &Openings) -> Vec<LevelSummaryView> {
    catalogue
        .levels()
        .iter()
        .map(|entry| {
            let level = &entry.level;
            let progress: Option<&LevelProgress> = participant.progress.get(&level.id);
            let open = openings.is_open(level, participant);
            let state = match (progress.is_some_and(|progress| progress.finished), open) {
                (true, _) => look("✔", "finished", "good"),
                (false, true) => look("○", "open", "info"),
                (false, false) => look("⊘", "locked", "dim"),
            };
            LevelSummaryView {
                id: level.id.clone(),
                stem: entry.stem.clone(),
                title: level.title.clone(),
                chapter: level.chapter,
                chapter_title: level.chapter_title.clone(),
                briefing: level.briefing.clone(),
                goal: outcome_look(level.goal),
                unbeatable: level.unbeatable,
                cards: level
                    .cards
                    .iter()
                    .map(|allowance| CardCountView {
                        card: allowance.card.name(),
                        title: allowance.card.title(),
                        count: allowance.count,
                    })
                    .collect(),
                guards_off: guard_views(level.guards)
                    .into_iter()
                    .filter(|guard| !guard.on)
                    .collect(),
                requires: level
                    .requires
                    .iter()
                    .map(|id| {
                        catalogue
                            .by_id(id)
                            .map_or_else(|| id.clone(), |required| required.level.title.clone())
                    })
                    .collect(),
                state,
                on_path: openings.path.contains(&level.id),
                playable: open,
                best: progress.and_then(|progress| progress.best.as_ref()).map(win_view),
                par: par_of(level),
            }
        })
        .collect()
}
