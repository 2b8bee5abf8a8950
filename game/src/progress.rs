//! The player's progress, kept in `progress.ron` in the data folder.
//!
//! A progress file that cannot be read is never fatal: it is renamed aside (so nothing
//! is lost), the player starts fresh, and the level select says what happened.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use bevy::prelude::*;
use serde::{Deserialize, Serialize};
use twice_world::checker::Outcome;
use twice_world::runtime::guards::Guard;

use crate::paths::GamePaths;

pub mod prediction;

pub use prediction::PredictionRecord;

/// Progress files are tiny; anything bigger is not ours.
pub const PROGRESS_BYTES_MAX: u64 = 256 * 1024;
/// The most levels progress remembers (a limit on everything).
pub const FINISHED_MAX: usize = 4_096;
/// The most predictions progress keeps (the oldest go first).
pub const PREDICTIONS_MAX: usize = 4_096;

pub(super) fn plugin(app: &mut App) {
    app.add_systems(PreStartup, load_progress);
    app.add_plugins(prediction::plugin);
}

fn load_progress(mut commands: Commands, paths: Res<GamePaths>) {
    commands.insert_resource(Progress::load(&paths.progress_file()));
}

/// What the file holds.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProgressFile {
    /// Levels whose goal was reached (or, for unbeatable levels, that were played out).
    #[serde(default)]
    pub finished: BTreeSet<String>,
    /// The last verdict per level.
    #[serde(default)]
    pub outcomes: BTreeMap<String, Outcome>,
    /// How many tiers of a level's hints the player opened (a nudge, the idea, the move).
    #[serde(default)]
    pub hints: BTreeMap<String, u32>,
    /// The player's best win per level: fewest cards, then fewest phases.
    #[serde(default)]
    pub best: BTreeMap<String, Best>,
    /// Unbeatable levels the player defended: the fewest guards that held, per level.
    #[serde(default)]
    pub defended: BTreeMap<String, Vec<Guard>>,
    /// Levels whose guided first moves the player finished or skipped (not shown again).
    #[serde(default)]
    pub guides_done: BTreeSet<String>,
    /// Panels whose first appearance was noted ("new: the ledger"), by name.
    #[serde(default)]
    pub panels_seen: BTreeSet<String>,
    /// The player's predictions before runs played out, each scored when its run ended.
    #[serde(default)]
    pub predictions: Vec<PredictionRecord>,
}

/// A win's size, to compare with the level's par.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Best {
    pub cards: u32,
    pub phases: u32,
}

#[derive(Debug, Resource)]
pub struct Progress {
    pub path: PathBuf,
    pub file: ProgressFile,
    /// Something the player should know about the file (corrupt, unwritable).
    pub notice: Option<String>,
}

impl Progress {
    /// Reads the progress file. Missing: a fresh start. Unreadable or corrupt: set aside, fresh start, notice.
    pub fn load(path: &Path) -> Progress {
        let fresh = |notice: Option<String>| Progress {
            path: path.to_path_buf(),
            file: ProgressFile::default(),
            notice,
        };
        let metadata = match std::fs::metadata(path) {
            Ok(metadata) => metadata,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => return fresh(None),
            Err(error) => {
                return fresh(Some(format!(
                    "Progress file {} cannot be read ({error}); starting fresh, and progress will not be saved there.",
                    path.display()
                )));
            }
        };
        let problem = if metadata.len() > PROGRESS_BYTES_MAX {
            Some(format!(
                "it is {} bytes, more than a progress file can be",
                metadata.len()
            ))
        } else {
            match std::fs::read_to_string(path) {
                Err(error) => Some(error.to_string()),
                Ok(text) => match twice_world::level::parse_ron::<ProgressFile>(path, &text) {
                    Ok(file) if file.finished.len() > FINISHED_MAX => Some(format!(
                        "it lists {} levels, more than {FINISHED_MAX}",
                        file.finished.len()
                    )),
                    Ok(file) => {
                        return Progress {
                            path: path.to_path_buf(),
                            file,
                            notice: None,
                        };
                    }
                    Err(error) => Some(error.to_string()),
                },
            }
        };
        let problem = problem.unwrap_or_default();
        let aside = set_aside_path(path);
        let notice = match std::fs::rename(path, &aside) {
            Ok(()) => format!(
                "Your progress file {} was damaged ({problem}). It was moved to {} and you start fresh.",
                path.display(),
                aside.display()
            ),
            Err(error) => format!(
                "Your progress file {} was damaged ({problem}) and could not be moved aside ({error}); you start fresh.",
                path.display()
            ),
        };
        fresh(Some(notice))
    }

    pub fn is_finished(&self, id: &str) -> bool {
        self.file.finished.contains(id)
    }

    /// Records a played-out level and writes the file. A write failure becomes the notice.
    pub fn record(&mut self, id: &str, outcome: Outcome, finished: bool) {
        if self.file.outcomes.len() < FINISHED_MAX || self.file.outcomes.contains_key(id) {
            self.file.outcomes.insert(id.to_owned(), outcome);
        }
        if finished && self.file.finished.len() < FINISHED_MAX {
            self.file.finished.insert(id.to_owned());
        }
        if let Err(error) = self.save() {
            self.notice = Some(format!(
                "Progress could not be saved to {}: {error}",
                self.path.display()
            ));
        }
    }

    /// The hint tiers opened for a level so far.
    pub fn hints_opened(&self, id: &str) -> u32 {
        self.file.hints.get(id).copied().unwrap_or(0)
    }

    /// Opens the next hint tier of a level (at most `tiers`) and saves; returns the tiers now open.
    pub fn open_hint(&mut self, id: &str, tiers: u32) -> u32 {
        let opened = (self.hints_opened(id) + 1).min(tiers);
        if self.file.hints.len() < FINISHED_MAX || self.file.hints.contains_key(id) {
            self.file.hints.insert(id.to_owned(), opened);
        }
        self.save_or_notice();
        opened
    }

    /// Keeps a win if it beats the best so far (fewer cards, then fewer phases) and saves.
    pub fn record_best(&mut self, id: &str, cards: u32, phases: u32) {
        let win = Best { cards, phases };
        let better = self.file.best.get(id).is_none_or(|best| win < *best);
        if better && (self.file.best.len() < FINISHED_MAX || self.file.best.contains_key(id)) {
            self.file.best.insert(id.to_owned(), win);
            self.save_or_notice();
        }
    }

    /// Records a defence that held (it finishes the level too) and saves. The fewest guards
    /// that held are kept; an equal number keeps the first found.
    pub fn record_defended(&mut self, id: &str, guards: &[Guard]) {
        let mut guards = guards.to_vec();
        guards.sort();
        guards.dedup();
        let better = self.file.defended.get(id).is_none_or(|best| guards.len() < best.len());
        if better && (self.file.defended.len() < FINISHED_MAX || self.file.defended.contains_key(id)) {
            self.file.defended.insert(id.to_owned(), guards);
        }
        if self.file.finished.len() < FINISHED_MAX {
            self.file.finished.insert(id.to_owned());
        }
        self.save_or_notice();
    }

    /// The fewest guards the player defended a level with, if they did.
    pub fn defended(&self, id: &str) -> Option<&[Guard]> {
        self.file.defended.get(id).map(Vec::as_slice)
    }

    pub fn is_guide_done(&self, id: &str) -> bool {
        self.file.guides_done.contains(id)
    }

    /// The guide of a level was followed to its end or skipped: not shown again.
    pub fn finish_guide(&mut self, id: &str) {
        if self.file.guides_done.len() < FINISHED_MAX && self.file.guides_done.insert(id.to_owned()) {
            self.save_or_notice();
        }
    }

    /// Notes that `panels` were shown; returns the ones shown for the first time (and saves).
    pub fn note_panels_seen<'a>(&mut self, panels: impl IntoIterator<Item = &'a str>) -> Vec<String> {
        let mut new = Vec::new();
        for panel in panels {
            if self.file.panels_seen.len() < FINISHED_MAX && self.file.panels_seen.insert(panel.to_owned()) {
                new.push(panel.to_owned());
            }
        }
        if !new.is_empty() {
            self.save_or_notice();
        }
        new
    }

    fn save_or_notice(&mut self) {
        if let Err(error) = self.save() {
            self.notice = Some(format!(
                "Progress could not be saved to {}: {error}",
                self.path.display()
            ));
        }
    }

    /// Keeps a scored prediction (the oldest goes past [`PREDICTIONS_MAX`]) and saves.
    pub fn record_prediction(&mut self, record: PredictionRecord) {
        if self.file.predictions.len() >= PREDICTIONS_MAX {
            self.file.predictions.remove(0);
        }
        self.file.predictions.push(record);
        self.save_or_notice();
    }

    /// Every scored prediction, oldest first.
    pub fn predictions(&self) -> &[PredictionRecord] {
        &self.file.predictions
    }

    /// The tally of every scored prediction.
    pub fn prediction_tally(&self) -> twice_world::prediction::Tally {
        let records = &self.file.predictions;
        let count = |keep: fn(&PredictionRecord) -> bool| records.iter().filter(|record| keep(record)).count() as u32;
        twice_world::prediction::Tally {
            predictions: records.len() as u32,
            verdicts_right: count(|record| record.verdict_right),
            guards_named: count(|record| record.named.is_some()),
            guards_right: count(|record| record.named.is_some() && record.named_right),
        }
    }

    /// Forgets everything (the level select's "reset progress").
    pub fn reset(&mut self) {
        self.file = ProgressFile::default();
        if let Err(error) = self.save() {
            self.notice = Some(format!(
                "Progress could not be saved to {}: {error}",
                self.path.display()
            ));
        }
    }

    /// Writes the file whole, through a temporary file and a rename, so a crash never leaves half a file.
    pub fn save(&self) -> std::io::Result<()> {
        if let Some(folder) = self.path.parent() {
            std::fs::create_dir_all(folder)?;
        }
        let text = twice_world::level::to_ron(&self.file);
        let temporary = self.path.with_extension("ron.tmp");
        std::fs::write(&temporary, text)?;
        std::fs::rename(&temporary, &self.path)
    }
}

/// `progress.ron` → `progress.ron.damaged-1`, `-2`, … (the first name not taken).
fn set_aside_path(path: &Path) -> PathBuf {
    let name = path
        .file_name()
        .map_or_else(|| "progress.ron".into(), |name| name.to_string_lossy().into_owned());
    (1..10_000)
        .map(|number| path.with_file_name(format!("{name}.damaged-{number}")))
        .find(|candidate| !candidate.exists())
        .unwrap_or_else(|| path.with_file_name(format!("{name}.damaged")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn progress_survives_a_round_trip() {
        let folder = tempfile::tempdir().expect("temp dir");
        let path = folder.path().join("progress.ron");
        let mut progress = Progress::load(&path);
        assert!(progress.notice.is_none());
        progress.record("naive-retry", Outcome::PaidTwice, true);
        progress.record("pause", Outcome::PaidOnce, false);
        let again = Progress::load(&path);
        assert!(again.is_finished("naive-retry"));
        assert!(!again.is_finished("pause"));
        assert_eq!(again.file.outcomes.get("pause"), Some(&Outcome::PaidOnce));
        assert!(again.notice.is_none());
    }

    #[test]
    fn hints_opened_and_best_wins_are_recorded_and_survive_a_round_trip() {
        let folder = tempfile::tempdir().expect("temp dir");
        let path = folder.path().join("progress.ron");
        let mut progress = Progress::load(&path);
        assert_eq!(progress.open_hint("naive-retry", 3), 1);
        assert_eq!(progress.open_hint("naive-retry", 3), 2);
        assert_eq!(progress.open_hint("naive-retry", 3), 3);
        assert_eq!(progress.open_hint("naive-retry", 3), 3, "three tiers at most");
        progress.record_best("naive-retry", 2, 30);
        progress.record_best("naive-retry", 1, 40);
        progress.record_best("naive-retry", 1, 50);
        let again = Progress::load(&path);
        assert_eq!(again.hints_opened("naive-retry"), 3);
        assert_eq!(again.hints_opened("pause"), 0);
        assert_eq!(again.file.best.get("naive-retry"), Some(&Best { cards: 1, phases: 40 }));
        // A progress file from before hints and bests still loads.
        std::fs::write(&path, "(finished: [\"naive-retry\"])").expect("write");
        let old = Progress::load(&path);
        assert!(old.notice.is_none() && old.is_finished("naive-retry"));
    }

    #[test]
    fn defences_guides_and_panels_seen_are_recorded_and_survive_a_round_trip() {
        let folder = tempfile::tempdir().expect("temp dir");
        let path = folder.path().join("progress.ron");
        let mut progress = Progress::load(&path);
        progress.record_defended("one-attempt", &[Guard::Ledger, Guard::WriteRetryRule]);
        progress.record_defended("one-attempt", &[Guard::WriteRetryRule]);
        progress.record_defended("one-attempt", &[Guard::Ledger]);
        progress.finish_guide("naive-retry");
        assert_eq!(progress.note_panels_seen(["ledger", "console"]), ["ledger", "console"]);
        assert!(progress.note_panels_seen(["ledger"]).is_empty(), "noted once");
        let again = Progress::load(&path);
        assert!(again.notice.is_none());
        assert_eq!(
            again.defended("one-attempt"),
            Some(&[Guard::WriteRetryRule][..]),
            "the fewest guards kept"
        );
        assert!(again.is_finished("one-attempt"), "a defended level is finished");
        assert!(again.is_guide_done("naive-retry") && !again.is_guide_done("one-attempt"));
        assert_eq!(again.file.panels_seen.len(), 2);
    }

    #[test]
    fn a_corrupt_progress_file_is_set_aside_and_reported() {
        let folder = tempfile::tempdir().expect("temp dir");
        let path = folder.path().join("progress.ron");
        std::fs::write(&path, "(finished: [\"naive-retry\"], gold: 12)").expect("write");
        let progress = Progress::load(&path);
        assert!(progress.file.finished.is_empty(), "fresh start");
        let notice = progress.notice.expect("the player is told");
        assert!(notice.contains("damaged") && notice.contains("gold"), "{notice}");
        assert!(!path.exists(), "the damaged file was moved");
        let aside = folder.path().join("progress.ron.damaged-1");
        assert_eq!(
            std::fs::read_to_string(&aside).expect("kept aside"),
            "(finished: [\"naive-retry\"], gold: 12)"
        );
        // A second damaged file does not overwrite the first one set aside.
        std::fs::write(&path, "not ron at all").expect("write");
        let progress = Progress::load(&path);
        assert!(progress.notice.is_some());
        assert!(folder.path().join("progress.ron.damaged-2").exists());
    }
}
