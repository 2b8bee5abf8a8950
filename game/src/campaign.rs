//! The campaign as the level select shows it: levels in chapters, which are locked,
//! and the tapes on disk. A broken file is listed as a problem; the rest stay playable.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use bevy::prelude::*;
use twice_world::campaign::{CAMPAIGN_FILES_MAX, LEVEL_SUFFIX, Position, TAPE_SUFFIX, level_select_key};
use twice_world::glossary::{self, Glossary};
use twice_world::level::{self, LoadedLevel};
use twice_world::presenter_notes::{self, PresenterNotes};

use crate::paths::GamePaths;
use crate::presenter::Presenter;
use crate::progress::Progress;

pub mod summary;

pub(super) fn plugin(app: &mut App) {
    app.add_systems(PreStartup, load_campaign);
}

fn load_campaign(mut commands: Commands, paths: Res<GamePaths>, presenter: Res<Presenter>) {
    let mut campaign = Campaign::load(&paths.levels);
    campaign.unlock_all = presenter.unlock_all;
    if let Some(chapter) = presenter.chapter
        && !campaign.levels.iter().any(|loaded| loaded.level.chapter == chapter)
    {
        let chapters: BTreeSet<u32> = campaign.levels.iter().map(|loaded| loaded.level.chapter).collect();
        campaign.problems.push(format!(
            "--chapter {chapter}: the campaign has no such chapter; its chapters are {chapters:?}"
        ));
    }
    commands.insert_resource(campaign);
}

/// One chapter of the level select.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Chapter {
    pub number: u32,
    pub title: String,
    /// Indexes into [`Campaign::levels`], in play order.
    pub levels: Vec<usize>,
}

#[derive(Debug, Resource)]
pub struct Campaign {
    pub folder: PathBuf,
    /// Every level that loaded, in level-select order.
    pub levels: Vec<LoadedLevel>,
    /// Every tape file in the folder (loaded only when opened).
    pub tapes: Vec<PathBuf>,
    /// The level of each of [`Campaign::tapes`] (an index into `levels`), as the tape names it;
    /// `None` for a tape whose level is not in the campaign or that does not parse.
    pub tape_levels: Vec<Option<usize>>,
    /// Files that did not load, and `requires` that name no level: shown, never fatal.
    pub problems: Vec<String>,
    /// The presenter's notes per chapter, from `presenter-notes.ron` beside the levels (empty
    /// without one).
    pub notes: PresenterNotes,
    /// The words the game uses and what they mean, from `glossary.ron` beside the levels
    /// (empty without one).
    pub glossary: Glossary,
    /// `--unlock-all`: every level is open, whatever progress says.
    pub unlock_all: bool,
}

impl Campaign {
    pub fn load(folder: &Path) -> Campaign {
        let mut problems = Vec::new();
        let mut files = |suffix: &str| match level::files_below(folder, suffix) {
            Ok(mut files) => {
                if files.len() > CAMPAIGN_FILES_MAX {
                    problems.push(format!(
                        "{}: {} {suffix} files; only the first {CAMPAIGN_FILES_MAX} are read",
                        folder.display(),
                        files.len()
                    ));
                    files.truncate(CAMPAIGN_FILES_MAX);
                }
                files
            }
            Err(error) => {
                problems.push(error.to_string());
                Vec::new()
            }
        };
        let level_files = files(LEVEL_SUFFIX);
        let mut tapes = files(TAPE_SUFFIX);
        let mut levels = Vec::new();
        let mut ids = BTreeSet::new();
        // A regression level (and its tapes, `<level>.<name>.tape.ron` beside it) is a test
        // case, not a stop of the campaign: the game leaves it out, as twice-world's campaign does.
        let mut regression_tapes: Vec<(PathBuf, String)> = Vec::new();
        for file in level_files {
            match level::load_level(&file) {
                Ok(loaded) if loaded.level.regression => {
                    let stem = file_name(&file).trim_end_matches(LEVEL_SUFFIX).to_owned();
                    let folder = file.parent().map(Path::to_path_buf).unwrap_or_default();
                    regression_tapes.push((folder, format!("{stem}.")));
                }
                Ok(loaded) if !ids.insert(loaded.level.id.clone()) => problems.push(format!(
                    "{}: level id `{}` is used by another level too; this one is left out",
                    file.display(),
                    loaded.level.id
                )),
                Ok(loaded) => levels.push(loaded),
                Err(error) => problems.push(error.to_string()),
            }
        }
        tapes.retain(|tape| {
            !regression_tapes.iter().any(|(folder, prefix)| {
                tape.parent() == Some(folder.as_path()) && file_name(tape).starts_with(prefix.as_str())
            })
        });
        levels.sort_by_key(|loaded| level_select_key(&loaded.level));
        for loaded in &levels {
            for required in &loaded.level.requires {
                if !ids.contains(required) {
                    problems.push(format!(
                        "{}: requires level `{required}`, which is not in the campaign; it is treated as finished",
                        loaded.path.display()
                    ));
                }
            }
        }
        let notes = {
            let all: Vec<&twice_world::level::Level> =
                levels.iter().map(|loaded: &LoadedLevel| &loaded.level).collect();
            match presenter_notes::load(folder, &all) {
                Ok(notes) => notes.unwrap_or_default(),
                Err(error) => {
                    problems.push(error.to_string());
                    PresenterNotes::default()
                }
            }
        };
        let glossary = match glossary::load(folder) {
            Ok(glossary) => glossary.unwrap_or_default(),
            Err(error) => {
                problems.push(error.to_string());
                Glossary::default()
            }
        };
        let tape_levels = tapes
            .iter()
            .map(|tape| {
                let level_file = twice_world::campaign::path::tape_level_file(tape).ok()?;
                let wanted = level_file.canonicalize().ok()?;
                levels
                    .iter()
                    .position(|loaded: &LoadedLevel| loaded.path.canonicalize().ok().as_ref() == Some(&wanted))
            })
            .collect();
        if levels.is_empty() && problems.is_empty() {
            problems.push(format!("{}: no {LEVEL_SUFFIX} files here", folder.display()));
        }
        Campaign {
            folder: folder.to_path_buf(),
            levels,
            tapes,
            tape_levels,
            problems,
            notes,
            glossary,
            unlock_all: false,
        }
    }

    /// The first level of `chapter`, in play order.
    pub fn first_of_chapter(&self, chapter: u32) -> Option<usize> {
        self.levels.iter().position(|loaded| loaded.level.chapter == chapter)
    }

    pub fn chapters(&self) -> Vec<Chapter> {
        let mut chapters: Vec<Chapter> = Vec::new();
        for (index, loaded) in self.levels.iter().enumerate() {
            let level = &loaded.level;
            match chapters.last_mut() {
                Some(chapter) if chapter.number == level.chapter => chapter.levels.push(index),
                _ => chapters.push(Chapter {
                    number: level.chapter,
                    title: level.chapter_title.clone(),
                    levels: vec![index],
                }),
            }
        }
        chapters
    }

    /// Where the level at `index` sits in the campaign as players see it, `1.3`: twice-world's
    /// rule, which the browser numbers its levels by too (files keep their own numbers).
    pub fn position(&self, index: usize) -> Position {
        twice_world::campaign::position(
            self.levels.iter().map(|loaded| &loaded.level),
            &self.levels[index].level,
        )
    }

    pub fn find(&self, id: &str) -> Option<usize> {
        self.levels.iter().position(|loaded| loaded.level.id == id)
    }

    /// The index of the level stored at `path`, if it is part of the campaign.
    pub fn find_path(&self, path: &Path) -> Option<usize> {
        let wanted = path.canonicalize().ok()?;
        self.levels
            .iter()
            .position(|loaded| loaded.path.canonicalize().ok().as_ref() == Some(&wanted))
    }

    /// The campaign level (an index into `levels`) the tape at `path` belongs to.
    pub fn level_of_tape(&self, path: &Path) -> Option<usize> {
        let at = self.tapes.iter().position(|tape| tape == path).or_else(|| {
            let wanted = path.canonicalize().ok()?;
            self.tapes
                .iter()
                .position(|tape| tape.canonicalize().ok().as_ref() == Some(&wanted))
        })?;
        self.tape_levels.get(at).copied().flatten()
    }

    /// Whether the tape at `path` may be opened: a tape of a level not yet won stays shut (it
    /// shows the level's solution), unless every level is open (`--unlock-all`, presenter
    /// mode); a tape of no campaign level (the player's own) always opens.
    pub fn tape_opens(&self, path: &Path, progress: &Progress) -> bool {
        let level = self
            .level_of_tape(path)
            .map(|index| self.levels[index].level.id.as_str());
        twice_world::campaign::path::tape_opens(level, |id| progress.is_finished(id), self.unlock_all)
    }

    /// The levels this one still waits for (empty: it is open).
    pub fn missing_requirements(&self, index: usize, progress: &Progress) -> Vec<String> {
        self.levels[index]
            .level
            .requires
            .iter()
            .filter(|required| self.find(required).is_some() && !progress.is_finished(required))
            .cloned()
            .collect()
    }

    pub fn is_unlocked(&self, index: usize, progress: &Progress) -> bool {
        self.unlock_all || self.missing_requirements(index, progress).is_empty()
    }

    /// The level to play after `index`: the first open one not yet finished, in play order
    /// from the one after it, then from the start (a level skipped on the way, or opened by
    /// --unlock-all, is still to play). `None` when every open level is finished. The next
    /// open level was no answer: after replaying 12, "Next up" sat over 13, already won.
    pub fn next_up_after(&self, index: usize, progress: &Progress) -> Option<usize> {
        (index + 1..self.levels.len())
            .chain(0..index.min(self.levels.len()))
            .find(|next| self.is_unlocked(*next, progress) && !progress.is_finished(&self.levels[*next].level.id))
    }

    /// Level `index`'s chapter, when every level in it is finished.
    pub fn chapter_done(&self, index: usize, progress: &Progress) -> Option<u32> {
        let chapter = self.levels.get(index)?.level.chapter;
        self.levels
            .iter()
            .filter(|loaded| loaded.level.chapter == chapter)
            .all(|loaded| progress.is_finished(&loaded.level.id))
            .then_some(chapter)
    }
}

/// A file's name as text ("" when it has none).
fn file_name(path: &Path) -> &str {
    path.file_name().and_then(|name| name.to_str()).unwrap_or_default()
}
