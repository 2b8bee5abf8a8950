//! The room and the levels: who the browser is, and the level-select screen.

use serde::Serialize;

use super::super::levels::Catalogue;
use super::super::sessions::{LevelProgress, Participant, STAGE_NAME, Win};
use super::{Look, look, outcome_look};
use twice_world::level::Level;
use twice_world::runtime::guards::{Guard, Guards};
use twice_world::screen::{Finish, Goal, ListedGuards};

/// Which levels are open beyond their `requires`: every level, or the room's path.
#[derive(Clone, Debug, Default)]
pub struct Openings {
    pub unlock_all: bool,
    /// Level ids the presenter opened for the room (`--path`), in the plan's order.
    pub path: Vec<String>,
}

impl Openings {
    /// Whether a participant may open a level with its own guards (the presenter's stage: any).
    pub fn is_open(&self, level: &Level, participant: &Participant) -> bool {
        self.unlock_all
            || participant.name == STAGE_NAME
            || self.path.contains(&level.id)
            || level.requires.iter().all(|id| participant.is_finished(id))
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
    /// The same levels by the number the pages show (`1.1`, `2.1`).
    pub path_numbers: Vec<String>,
    /// The level open in this session, by stem, with its number and title.
    pub game: Option<String>,
    pub game_number: Option<String>,
    pub game_title: Option<String>,
    pub finished: u32,
    pub idle_minutes: u64,
    /// This browser is the presenter's stage: it shows levels large and takes no part in the race.
    pub stage: bool,
}

pub fn me_view(participant: &Participant, catalogue: &Catalogue, openings: &Openings, idle_minutes: u64) -> MeView {
    let open = participant
        .open_level()
        .and_then(|stem| catalogue.find(stem))
        .map(|(_, entry)| entry);
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
        path_numbers: openings
            .path
            .iter()
            .filter_map(|id| catalogue.by_id(id))
            .map(|level| level.number().to_owned())
            .collect(),
        game: participant.open_level().map(str::to_owned),
        game_number: open.map(|entry| entry.number().to_owned()),
        game_title: open.map(|entry| entry.level.title.clone()),
        stage: participant.name == STAGE_NAME,
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
    /// The guard in the player's words ("the write retry rule").
    pub words: &'static str,
    pub on: bool,
    pub describe: &'static str,
}

fn guard_view(guard: Guard, on: bool) -> GuardView {
    GuardView {
        name: guard.name(),
        words: ListedGuards::words(guard),
        on,
        describe: twice_world::guards::promise(guard),
    }
}

pub(super) fn guard_views(guards: Guards) -> Vec<GuardView> {
    Guard::ALL
        .into_iter()
        .map(|guard| guard_view(guard, guards.is_on(guard)))
        .collect()
}

/// The guards a level's screen names (twice-world's rule): off here, on and the lesson's, and
/// the rest (on, shown on demand).
#[derive(Clone, Debug, Serialize)]
pub struct ListedGuardsView {
    pub off: Vec<GuardView>,
    pub lesson_on: Vec<GuardView>,
    pub others_on: Vec<GuardView>,
}

pub fn listed_guards(level: &Level, guards: Guards) -> ListedGuardsView {
    let listed = ListedGuards::of(level, guards);
    let views = |list: &[Guard], on: bool| list.iter().map(|guard| guard_view(*guard, on)).collect();
    ListedGuardsView {
        off: views(&listed.off, false),
        lesson_on: views(&listed.lesson_on, true),
        others_on: views(&listed.others_on, true),
    }
}

/// A level's goal in words (twice-world's): what finishes it.
#[derive(Clone, Debug, Serialize)]
pub struct GoalView {
    /// `heist`, `defence` or `watch`.
    pub finish: &'static str,
    /// The outcome the crew's heist aims at (what a beatable level's header shows).
    pub outcome: Look,
    /// A few words for a header: "make Penny pay twice", "defend it with at most 2 guards".
    pub short: String,
    pub sentence: String,
}

pub fn goal_view(level: &Level) -> GoalView {
    let goal = Goal::of(level);
    GoalView {
        finish: match goal.finish {
            Finish::Heist(_) => "heist",
            Finish::Defence { .. } => "defence",
            Finish::Watch => "watch",
        },
        outcome: outcome_look(level.goal),
        short: goal.short,
        sentence: goal.sentence,
    }
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
    /// `1.3`: the level's campaign position, the number every page shows (its file says `21`).
    pub number: String,
    pub title: String,
    pub chapter: u32,
    pub chapter_title: String,
    pub briefing: String,
    pub goal: Look,
    /// What finishes the level, in words.
    pub goal_words: GoalView,
    pub unbeatable: bool,
    pub cards: Vec<CardCountView>,
    /// The guards this level switches off.
    pub guards_off: Vec<GuardView>,
    /// The guards its screen names: off here, the lesson's, the rest on demand.
    pub guards_listed: ListedGuardsView,
    /// This participant has it open now (at this phase, when it is in memory): Play carries on
    /// with it rather than starting it again.
    pub open_now: Option<OpenNowView>,
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

/// The level a participant has open.
#[derive(Clone, Debug, Serialize)]
pub struct OpenNowView {
    /// `campaign` or `sandbox`.
    pub mode: &'static str,
    /// Its phase, when it is in memory (after a restart it is rebuilt when opened).
    pub phase: Option<u32>,
}

pub fn level_summaries(catalogue: &Catalogue, participant: &Participant, openings: &Openings) -> Vec<LevelSummaryView> {
    let open_now = participant.log.as_ref().map(|log| {
        let view = OpenNowView {
            mode: if log.guards.is_some() { "sandbox" } else { "campaign" },
            phase: participant.game.as_ref().map(|game| game.simulation().phase()),
        };
        (log.stem.clone(), view)
    });
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
                number: entry.number().to_owned(),
                title: level.title.clone(),
                chapter: level.chapter,
                chapter_title: level.chapter_title.clone(),
                briefing: level.briefing.clone(),
                goal: outcome_look(level.goal),
                goal_words: goal_view(level),
                guards_listed: listed_guards(level, level.guards),
                open_now: open_now
                    .as_ref()
                    .filter(|(stem, _)| *stem == entry.stem)
                    .map(|(_, view)| view.clone()),
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
