//! The levels a room plays, loaded once at start from `--levels` and then only looked up.
//!
//! A browser names a level by its id (`naive-retry`) or its file's stem (`01-naive-retry`)
//! and a race by its tape's stem; the name is compared with this list and never joined to
//! a path, so no request can make the server read a file.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use twice_world::campaign::{Campaign, LEVEL_SUFFIX, TAPE_SUFFIX};
use twice_world::error::InputError;
use twice_world::level::{Level, Tape};
use twice_world::presenter_notes::PresenterNotes;
use twice_world::runtime::key::IdempotencyKey;
use twice_world::runtime::rules::Status;
use twice_world::simulator::SimulationBuilder;

use super::LEVEL_PHASES_MAX;

/// Why the levels could not be served.
#[derive(Debug, thiserror::Error)]
pub enum CatalogueError {
    #[error(
        "{folder}: {} in the campaign:\n{problems}",
        twice_world::text::counted(*count as u64, "problem", "problems")
    )]
    Campaign {
        folder: PathBuf,
        count: usize,
        problems: String,
    },
    #[error("{0}: no *.level.ron files; pass the campaign's folder with --levels")]
    Empty(PathBuf),
    #[error(
        "{path}: max_phases {phases} is more than the {LEVEL_PHASES_MAX} a level served in the \
         browser may run (it bounds each session's memory)"
    )]
    TooLong { path: PathBuf, phases: u32 },
}

/// One level as the room knows it.
#[derive(Debug)]
pub struct CatalogueLevel {
    pub level: Level,
    /// `01-naive-retry.level.ron`: what a saved tape names, so it replays beside `levels/`.
    pub file_name: String,
    /// `01-naive-retry`: the name URLs use.
    pub stem: String,
    /// `1.3`: its place in the campaign (twice-world's `campaign::position`), as players see it.
    pub position: String,
}

impl CatalogueLevel {
    /// The level's number as every page shows it, to players and the presenter alike: its
    /// place in the campaign, `1.3` (chapter 1's levels are files 01, 02, 21, 20 and 22,
    /// numbers that jump). A plan or a path may still name a level by its file's prefix.
    pub fn number(&self) -> &str {
        &self.position
    }
}

/// A recorded tape of the campaign, a candidate for the room's race.
#[derive(Debug)]
pub struct CatalogueTape {
    pub tape: Tape,
    /// `04-pause.lost-answer`: the name the presenter's page sends.
    pub stem: String,
    /// Index of its level in [`Catalogue::levels`].
    pub level: usize,
}

/// A tape whose run ends parked on a call nobody has settled: the race is to settle it.
#[derive(Clone, Debug)]
pub struct RaceCandidate {
    /// Index in [`Catalogue::tapes`].
    pub tape: usize,
    pub key: IdempotencyKey,
    pub status: Status,
}

/// Every level and tape of the room, levels in level-select order.
#[derive(Debug)]
pub struct Catalogue {
    levels: Vec<CatalogueLevel>,
    tapes: Vec<CatalogueTape>,
    /// Worked out on first use (it plays every tape): which tapes leave a call unknown.
    race_candidates: OnceLock<Vec<RaceCandidate>>,
    /// The campaign as loaded, for defender mode (`defend::check` replays its tapes).
    campaign: Campaign,
    /// The presenter notes beside the levels, if the folder has them.
    notes: Option<PresenterNotes>,
}

fn file_name(path: &Path) -> String {
    path.file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// A room's path names a level the room does not serve.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "`{name}` is not a level of this room; name levels by file number (03), position (2.1), id or file stem, \
     comma-separated (the levels: {})",
    stems.join(", ")
)]
pub struct NotInRoom {
    /// The name as written.
    pub name: String,
    /// The file stems of the room's levels, in order.
    pub stems: Vec<String>,
}

impl Catalogue {
    /// Loads and checks every level and tape below `folder` (as `twice-sim check` does).
    pub fn load(folder: &Path) -> Result<Catalogue, CatalogueError> {
        let campaign = Campaign::load(folder).map_err(|problems| CatalogueError::Campaign {
            folder: folder.to_path_buf(),
            count: problems.len(),
            problems: problems
                .iter()
                .map(InputError::to_string)
                .collect::<Vec<_>>()
                .join("\n"),
        })?;
        if campaign.levels.is_empty() {
            return Err(CatalogueError::Empty(folder.to_path_buf()));
        }
        let kept = Campaign {
            levels: campaign.levels.clone(),
            tapes: campaign.tapes.clone(),
        };
        // `Campaign::load` checked them already: a folder whose notes do not read was refused.
        let refs: Vec<&Level> = campaign.levels.iter().map(|loaded| &loaded.level).collect();
        let notes = twice_world::presenter_notes::load(folder, &refs).ok().flatten();
        let positions: Vec<String> = campaign
            .levels
            .iter()
            .map(|loaded| kept.position(&loaded.level).to_string())
            .collect();
        let mut levels = Vec::with_capacity(campaign.levels.len());
        for (loaded, position) in campaign.levels.into_iter().zip(positions) {
            if loaded.level.max_phases > LEVEL_PHASES_MAX {
                return Err(CatalogueError::TooLong {
                    path: loaded.path,
                    phases: loaded.level.max_phases,
                });
            }
            let file_name = file_name(&loaded.path);
            let stem = file_name.trim_end_matches(LEVEL_SUFFIX).to_owned();
            levels.push(CatalogueLevel {
                level: loaded.level,
                file_name,
                stem,
                position,
            });
        }
        let mut tapes = Vec::new();
        for loaded in campaign.tapes {
            let level_file = file_name(&loaded.level.path);
            let Some(level) = levels.iter().position(|level| level.file_name == level_file) else {
                continue;
            };
            tapes.push(CatalogueTape {
                stem: file_name(&loaded.path).trim_end_matches(TAPE_SUFFIX).to_owned(),
                tape: loaded.tape,
                level,
            });
        }
        tapes.sort_by(|left, right| left.stem.cmp(&right.stem));
        Ok(Catalogue {
            levels,
            tapes,
            race_candidates: OnceLock::new(),
            campaign: kept,
            notes,
        })
    }

    pub fn levels(&self) -> &[CatalogueLevel] {
        &self.levels
    }

    pub fn tapes(&self) -> &[CatalogueTape] {
        &self.tapes
    }

    /// The level a browser names, by id or file stem.
    pub fn find(&self, name: &str) -> Option<(usize, &CatalogueLevel)> {
        self.levels
            .iter()
            .enumerate()
            .find(|(_, level)| level.level.id == name || level.stem == name)
    }

    /// The campaign as loaded (levels with their files, every tape).
    pub fn campaign(&self) -> &Campaign {
        &self.campaign
    }

    /// The presenter notes beside the levels, if any.
    pub fn notes(&self) -> Option<&PresenterNotes> {
        self.notes.as_ref()
    }

    /// The level a workshop's plan names: by its file's number (`03`, the prefix the plan and
    /// the docs use), its campaign position (`2.1`, as the pages show it), its id or its file
    /// stem.
    pub fn find_planned(&self, name: &str) -> Option<&CatalogueLevel> {
        let name = name.trim();
        self.levels.iter().find(|level| {
            level.level.id == name
                || level.stem == name
                || level.position == name
                || level.stem.split('-').next() == Some(name)
        })
    }

    /// A room's path (`01,03,05` or names) as level ids, in its order, each once.
    pub fn path_ids(&self, names: &[String]) -> Result<Vec<String>, NotInRoom> {
        let mut ids: Vec<String> = Vec::new();
        for name in names.iter().flat_map(|names| names.split(',')).map(str::trim) {
            if name.is_empty() {
                continue;
            }
            let level = self.find_planned(name).ok_or_else(|| NotInRoom {
                name: name.to_owned(),
                stems: self.levels.iter().map(|level| level.stem.clone()).collect(),
            })?;
            if !ids.contains(&level.level.id) {
                ids.push(level.level.id.clone());
            }
        }
        Ok(ids)
    }

    /// A path the room file kept: the levels still in the room, others left out.
    pub fn path_ids_lenient(&self, text: &str) -> Vec<String> {
        text.split(',')
            .filter_map(|name| self.find_planned(name))
            .map(|level| level.level.id.clone())
            .collect()
    }

    /// The level with this id.
    pub fn by_id(&self, id: &str) -> Option<&CatalogueLevel> {
        self.levels.iter().find(|level| level.level.id == id)
    }

    /// The level after `index` in level-select order.
    pub fn next(&self, index: usize) -> Option<&CatalogueLevel> {
        self.levels.get(index + 1)
    }

    /// The tapes that end with a run parked on an unknown call, played once and kept.
    pub fn race_candidates(&self) -> &[RaceCandidate] {
        self.race_candidates.get_or_init(|| {
            self.tapes
                .iter()
                .enumerate()
                .filter_map(|(index, tape)| {
                    let unknown = parked_call(&self.levels[tape.level].level, &tape.tape)?;
                    Some(RaceCandidate {
                        tape: index,
                        key: unknown.0,
                        status: unknown.1,
                    })
                })
                .collect()
        })
    }

    /// The race candidate a presenter names by tape stem.
    pub fn race_candidate(&self, stem: &str) -> Option<(&RaceCandidate, &CatalogueTape)> {
        self.race_candidates()
            .iter()
            .find(|candidate| self.tapes[candidate.tape].stem == stem)
            .map(|candidate| (candidate, &self.tapes[candidate.tape]))
    }
}

/// Plays `tape` to its end in memory: the first call left unknown while its run waits, if any.
fn parked_call(level: &Level, tape: &Tape) -> Option<(IdempotencyKey, Status)> {
    let mut builder = SimulationBuilder::new(level.clone(), tape.seed).actions(tape.actions.clone());
    if let Some(guards) = tape.guards {
        builder = builder.guards(guards);
    }
    let mut simulation = builder.build().ok()?;
    simulation.run().ok()?;
    let waiting: Vec<String> = simulation
        .workers()
        .into_iter()
        .filter(|worker| worker.alive)
        .filter_map(|worker| match worker.run_state.status {
            twice_world::runtime::run::RunStatus::AwaitingReconciliation { key } => Some(key),
            _ => None,
        })
        .collect();
    simulation
        .ledger_records()
        .ok()?
        .into_iter()
        .find(|record| record.status.is_unknown() && waiting.iter().any(|key| key == record.key.as_str()))
        .map(|record| (record.key, record.status))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn campaign() -> Catalogue {
        Catalogue::load(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../../levels")).expect("the campaign loads")
    }

    #[test]
    fn a_campaign_s_problems_are_counted_in_words() {
        let problems = |count| {
            CatalogueError::Campaign {
                folder: PathBuf::from("levels"),
                count,
                problems: "…".into(),
            }
            .to_string()
        };
        assert_eq!(problems(1), "levels: 1 problem in the campaign:\n…");
        assert_eq!(problems(2), "levels: 2 problems in the campaign:\n…");
    }

    #[test]
    fn levels_are_found_by_id_or_stem_and_never_by_path() {
        let catalogue = campaign();
        assert_eq!(catalogue.find("naive-retry").map(|(index, _)| index), Some(0));
        assert_eq!(catalogue.find("01-naive-retry").map(|(index, _)| index), Some(0));
        for name in [
            "01-naive-retry.level.ron",
            "levels/01-naive-retry",
            "../levels/01-naive-retry.level.ron",
            "/etc/passwd",
            "",
        ] {
            assert!(catalogue.find(name).is_none(), "{name}");
        }
    }

    /// Pages show a level's campaign position; a plan or a path may name it by its file's
    /// number or by that position.
    #[test]
    fn levels_are_numbered_by_campaign_position_and_found_by_either_number() {
        let catalogue = campaign();
        let numbers: Vec<(&str, &str)> = catalogue
            .levels()
            .iter()
            .take(5)
            .map(|level| (level.stem.as_str(), level.number()))
            .collect();
        assert_eq!(
            numbers,
            [
                ("01-naive-retry", "1.1"),
                ("02-one-attempt", "1.2"),
                ("21-reads-retried", "1.3"),
                ("20-honest-retry", "1.4"),
                ("22-fine-print", "1.5"),
            ]
        );
        for name in ["21", "1.3", "reads-retried", "21-reads-retried"] {
            assert_eq!(
                catalogue.find_planned(name).map(|level| level.stem.as_str()),
                Some("21-reads-retried"),
                "{name}"
            );
        }
    }

    #[test]
    fn the_pause_level_losing_its_answer_is_a_race() {
        let catalogue = campaign();
        let (candidate, tape) = catalogue
            .race_candidate("04-pause.lost-answer")
            .expect("04-pause.lost-answer leaves r1:c1 unknown");
        assert_eq!(candidate.key.as_str(), "r1:c1");
        assert!(candidate.status.is_unknown());
        assert_eq!(catalogue.levels()[tape.level].level.id, "pause");
        // A tape that ends with every call settled is no race.
        assert!(catalogue.race_candidate("01-naive-retry.win").is_none());
    }
}
