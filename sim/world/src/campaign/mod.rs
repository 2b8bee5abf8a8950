//! The campaign as a whole: every level and tape in a folder, the order the level select
//! shows them in, and the checks `twice-sim check` runs across files without playing anything.
//!
//! One file at a time, `level::load_level` and `level::load_tape` already refuse malformed
//! RON, unknown fields, cards the level does not hold, more cards than it gives and actions
//! after its end. What only shows across files lives here: duplicate level ids, `requires`
//! that name no level (or go round in a circle), two levels in one level-select slot, and a
//! goal that nothing in the level could ever bring about.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use crate::error::InputError;
use crate::level::{self, Level, LoadedLevel, LoadedTape};
use crate::runtime::guards::Guard;

/// The most level and tape files one check or one campaign may hold (a limit on everything).
pub const CAMPAIGN_FILES_MAX: usize = 4_096;

pub use crate::level::{LEVEL_SUFFIX, TAPE_SUFFIX};
pub use par::WIN_TAPE_SUFFIX;

mod goal;
pub mod hints;
pub mod par;
pub mod path;
mod position;
mod reachable;

pub use goal::{can_pay_twice, unreachable_goal};
pub use position::{Position, position};

/// Every level and tape of one campaign folder, levels in level-select order.
#[derive(Debug)]
pub struct Campaign {
    pub levels: Vec<LoadedLevel>,
    pub tapes: Vec<LoadedTape>,
}

impl Campaign {
    /// Loads every `*.level.ron` and `*.tape.ron` below `folder` and checks them as a set.
    /// Any problem in any file fails the whole load, with every problem found.
    /// Regression levels (and their tapes) are checked too but left out: they are tests, not
    /// levels to play.
    pub fn load(folder: &Path) -> Result<Campaign, Vec<InputError>> {
        let (levels, tapes, mut problems) = load_files(&[folder.to_path_buf()]);
        problems.extend(check_set(&levels, &levels));
        if !problems.is_empty() {
            return Err(problems);
        }
        let mut levels: Vec<LoadedLevel> = levels.into_iter().filter(|loaded| !loaded.level.regression).collect();
        let tapes = tapes
            .into_iter()
            .filter(|loaded| !loaded.level.level.regression)
            .collect();
        levels.sort_by_key(|loaded| level_select_key(&loaded.level));
        Ok(Campaign { levels, tapes })
    }

    pub fn level(&self, id: &str) -> Option<&LoadedLevel> {
        self.levels.iter().find(|loaded| loaded.level.id == id)
    }

    /// The level's place as players see it ("1.3"): see [`position`].
    pub fn position(&self, level: &Level) -> Position {
        position(self.levels.iter().map(|loaded| &loaded.level), level)
    }

    /// The tapes recorded for the level with this id.
    pub fn tapes_for<'a>(&'a self, id: &'a str) -> impl Iterator<Item = &'a LoadedTape> + 'a {
        self.tapes.iter().filter(move |tape| tape.level.level.id == id)
    }
}

/// Level-select order: chapter, then order within the chapter, then id.
pub fn level_select_key(level: &Level) -> (u32, u32, String) {
    (level.chapter, level.order, level.id.clone())
}

/// What `twice-sim check` found.
#[derive(Debug, Default)]
pub struct CheckReport {
    pub levels: usize,
    pub tapes: usize,
    pub problems: Vec<InputError>,
}

/// Checks every level and tape in `paths` (files or folders) without playing them.
///
/// `requires` may name levels outside the checked paths if they sit in the same folder as
/// the level that names them, so checking one file of a campaign does not report its
/// neighbours as missing.
pub fn check(paths: &[PathBuf]) -> CheckReport {
    let (levels, tapes, mut problems) = load_files(paths);
    let mut known = levels.clone();
    let checked: BTreeSet<PathBuf> = levels.iter().map(|loaded| canonical(&loaded.path)).collect();
    let folders: BTreeSet<PathBuf> = levels
        .iter()
        .filter_map(|loaded| loaded.path.parent().map(Path::to_path_buf))
        .collect();
    for folder in folders {
        let Ok(neighbours) = level::files_below(&folder, LEVEL_SUFFIX) else {
            continue;
        };
        for neighbour in neighbours.into_iter().take(CAMPAIGN_FILES_MAX) {
            if checked.contains(&canonical(&neighbour)) {
                continue;
            }
            // A broken neighbour is reported when it is checked itself; here it only cannot be required.
            if let Ok(loaded) = level::load_level(&neighbour) {
                known.push(loaded);
            }
        }
    }
    problems.extend(check_set(&levels, &known));
    // Presenter notes beside the levels are held to the chapters those levels have.
    let note_folders: BTreeSet<PathBuf> = levels
        .iter()
        .filter_map(|loaded| loaded.path.parent().map(Path::to_path_buf))
        .collect();
    for folder in note_folders {
        let in_folder: Vec<&Level> = known
            .iter()
            .filter(|loaded| loaded.path.parent() == Some(folder.as_path()))
            .map(|loaded| &loaded.level)
            .collect();
        if let Err(problem) = crate::presenter_notes::load(&folder, &in_folder) {
            problems.push(problem);
        }
        // So is the glossary the game opens beside them.
        if let Err(problem) = crate::glossary::load(&folder) {
            problems.push(problem);
        }
    }
    CheckReport {
        levels: levels.len(),
        tapes: tapes.len(),
        problems,
    }
}

fn canonical(path: &Path) -> PathBuf {
    path.canonicalize().unwrap_or_else(|_| path.to_path_buf())
}

/// Loads the level and tape files below `paths`, each file once, and checks each on its own.
fn load_files(paths: &[PathBuf]) -> (Vec<LoadedLevel>, Vec<LoadedTape>, Vec<InputError>) {
    let mut problems = Vec::new();
    let mut seen = BTreeSet::new();
    let mut level_files = Vec::new();
    let mut tape_files = Vec::new();
    for path in paths {
        let mut found_here = 0;
        for (suffix, files) in [(LEVEL_SUFFIX, &mut level_files), (TAPE_SUFFIX, &mut tape_files)] {
            match level::files_below(path, suffix) {
                Ok(found) => {
                    for file in found {
                        // A file given as a path comes back for both suffixes; keep it under its own.
                        if !file.to_string_lossy().ends_with(suffix) {
                            continue;
                        }
                        found_here += 1;
                        if seen.insert(canonical(&file)) {
                            files.push(file);
                        }
                    }
                }
                Err(error) => {
                    problems.push(error);
                    found_here = usize::MAX;
                    break;
                }
            }
        }
        if found_here == 0 {
            problems.push(InputError::new(
                path,
                None,
                format!("no {LEVEL_SUFFIX} or {TAPE_SUFFIX} files here"),
            ));
        }
    }
    let total = level_files.len() + tape_files.len();
    if total > CAMPAIGN_FILES_MAX {
        let first = paths.first().map_or_else(PathBuf::new, PathBuf::clone);
        problems.push(InputError::new(
            &first,
            None,
            format!("{total} level and tape files, more than the {CAMPAIGN_FILES_MAX} one check may hold"),
        ));
        return (Vec::new(), Vec::new(), problems);
    }
    let mut levels = Vec::new();
    for file in &level_files {
        match level::load_level(file) {
            Ok(loaded) => {
                if let Err(error) = check_level(&loaded) {
                    problems.push(error);
                }
                levels.push(loaded);
            }
            Err(error) => problems.push(error),
        }
    }
    let mut tapes = Vec::new();
    for file in &tape_files {
        match level::load_tape(file) {
            Ok(loaded) => {
                if let Err(error) = check_tape(&loaded) {
                    problems.push(error);
                }
                tapes.push(loaded);
            }
            // A tape whose level is broken repeats the level's own problem; report it once.
            Err(error) if problems.contains(&error) => {}
            Err(error) => problems.push(error),
        }
    }
    problems.extend(par::check_win_tapes_shipped(&levels, &tapes));
    (levels, tapes, problems)
}

/// Words in a text, as a reader counts them.
pub use crate::text::words;

/// What a player reads in a level file, by field name: held to the campaign's text rules.
pub fn player_text(level: &Level) -> Vec<(&'static str, &str)> {
    let mut texts = vec![
        ("title", level.title.as_str()),
        ("briefing", level.briefing.as_str()),
        ("briefing_more", level.briefing_more.as_str()),
        ("rule", level.lesson.rule.as_str()),
        ("text", level.lesson.text.as_str()),
        ("debrief", level.debrief.as_str()),
        ("nudge", level.hints.nudge.as_str()),
        ("idea", level.hints.idea.as_str()),
    ];
    if let Some(the_move) = &level.hints.the_move {
        texts.push(("move", the_move.as_str()));
    }
    texts
}

/// Checks what a player reads: a briefing short enough to read before playing (the rest
/// behind "more"), a debrief short enough to read after, no backticks (they show as stray
/// marks on screen), and "the rule" rather than "the seed's rule" (players have not read the seed).
fn check_text(loaded: &LoadedLevel) -> Result<(), InputError> {
    let level = &loaded.level;
    let error = |needle: &str, message: String| Err(InputError::at(&loaded.path, &loaded.text, needle, 0, message));
    let briefing_words = words(&level.briefing);
    if briefing_words > level::BRIEFING_WORDS_MAX {
        return error(
            "briefing:",
            format!(
                "the briefing is {briefing_words} words; at most {} show before \"more\" (put the rest in briefing_more)",
                level::BRIEFING_WORDS_MAX
            ),
        );
    }
    for (field, text) in [("text:", &level.lesson.text), ("debrief:", &level.debrief)] {
        let count = words(text);
        if count > level::DEBRIEF_WORDS_MAX {
            return error(
                field,
                format!(
                    "{} is {count} words; a debrief shows at most {}",
                    field.trim_end_matches(':'),
                    level::DEBRIEF_WORDS_MAX
                ),
            );
        }
    }
    for (field, text) in player_text(level) {
        let needle = format!("{field}:");
        if text.contains('`') {
            return error(
                &needle,
                format!("{field} has a backtick; players see it as a stray mark"),
            );
        }
        if text.to_lowercase().contains("seed's rule") {
            return error(&needle, format!("{field} says \"the seed's rule\"; say \"the rule\""));
        }
    }
    if !level.regression && (level.hints.nudge.trim().is_empty() || level.hints.idea.trim().is_empty()) {
        return error(
            "id:",
            format!(
                "level `{}` needs hints: a nudge and the idea (and the move, or a par tape to show)",
                level.id
            ),
        );
    }
    Ok(())
}

/// Checks one level beyond what loading it checks: its text, its debrief, its goal, its par
/// or its defender's challenge.
pub fn check_level(loaded: &LoadedLevel) -> Result<(), InputError> {
    let level = &loaded.level;
    check_text(loaded)?;
    if let Some((field, sentence)) = crate::campaign::path::defence_handed_over(level) {
        let message = format!(
            "{field} hands over the defence before the player defends (\"{sentence}\"): say what happened, not which guards to switch on"
        );
        return Err(InputError::at(
            &loaded.path,
            &loaded.text,
            &format!("{field}:"),
            0,
            message,
        ));
    }
    if level.unbeatable && level.debrief.trim().is_empty() {
        return Err(InputError::at(
            &loaded.path,
            &loaded.text,
            "unbeatable",
            0,
            format!(
                "level `{}` is unbeatable on purpose but has no `debrief` explaining why",
                level.id
            ),
        ));
    }
    let error = |needle: &str, message: String| Err(InputError::at(&loaded.path, &loaded.text, needle, 0, message));
    match (&level.defender, level.unbeatable) {
        (None, true) => {
            return error(
                "unbeatable",
                format!(
                    "level `{}` is unbeatable but has no `defender` (a budget and the smallest set that holds)",
                    level.id
                ),
            );
        }
        (Some(_), false) => {
            return error(
                "defender",
                format!("level `{}` is beatable; only an unbeatable level is defended", level.id),
            );
        }
        (Some(defender), true) => {
            if defender.minimum.len() > defender.budget as usize || defender.budget as usize > Guard::ALL.len() {
                return error(
                    "budget",
                    format!(
                        "the defender's budget {} must be at least its minimum ({} guards) and at most {}",
                        defender.budget,
                        defender.minimum.len(),
                        Guard::ALL.len()
                    ),
                );
            }
        }
        (None, false) => {}
    }
    if !level.unbeatable && !level.regression && level.par.is_none() {
        return error(
            "goal:",
            format!(
                "level `{}` has no `par` (fewest cards and phases of a known win)",
                level.id
            ),
        );
    }
    if let Some(why) = unreachable_goal(level) {
        return Err(InputError::at(
            &loaded.path,
            &loaded.text,
            "goal:",
            0,
            format!("goal {} can never be reached: {why}", level.goal),
        ));
    }
    Ok(())
}

/// Checks what loading a tape does not: worker numbers and operator keys, and that a level's
/// win tape plays as many cards as its par says.
pub fn check_tape(loaded: &LoadedTape) -> Result<(), InputError> {
    par::check_win_tape_par(loaded)?;
    for (index, action) in loaded.tape.actions.iter().enumerate() {
        let problem = action.play.doubt();
        if let Some(message) = problem {
            return Err(InputError::at(&loaded.path, &loaded.text, "at_phase", index, message));
        }
    }
    Ok(())
}

/// Cross-file checks: ids, `requires`, level-select slots. `known` holds every level a
/// `requires` may name (the checked ones and their neighbours).
fn check_set(checked: &[LoadedLevel], known: &[LoadedLevel]) -> Vec<InputError> {
    let mut problems = Vec::new();
    let mut by_id: BTreeMap<&str, &LoadedLevel> = BTreeMap::new();
    let mut by_slot: BTreeMap<(u32, u32), &LoadedLevel> = BTreeMap::new();
    for loaded in checked {
        let level = &loaded.level;
        if let Some(first) = by_id.insert(&level.id, loaded) {
            problems.push(InputError::at(
                &loaded.path,
                &loaded.text,
                "id:",
                0,
                format!(
                    "level id `{}` is already used by {}; ids must be unique",
                    level.id,
                    first.path.display()
                ),
            ));
            by_id.insert(&level.id, first);
            continue;
        }
        // A regression case is no stop on the level select: it claims no chapter or order.
        if level.regression {
            continue;
        }
        if let Some(first) = by_slot.insert((level.chapter, level.order), loaded) {
            problems.push(InputError::at(
                &loaded.path,
                &loaded.text,
                "order:",
                0,
                format!(
                    "levels `{}` and `{}` both claim chapter {} order {}; the level select could not order them",
                    first.level.id, level.id, level.chapter, level.order
                ),
            ));
        }
    }
    let known_ids: BTreeSet<&str> = known.iter().map(|loaded| loaded.level.id.as_str()).collect();
    for loaded in checked {
        for required in &loaded.level.requires {
            if !known_ids.contains(required.as_str()) {
                problems.push(InputError::at(
                    &loaded.path,
                    &loaded.text,
                    &format!("\"{required}\""),
                    0,
                    format!(
                        "`requires` names level `{required}`, and no level in this campaign has that id (known: {})",
                        known_ids.iter().copied().collect::<Vec<_>>().join(", ")
                    ),
                ));
            }
        }
    }
    problems.extend(requirement_cycles(checked, known));
    problems
}

/// A level that requires itself through other levels can never be unlocked.
fn requirement_cycles(checked: &[LoadedLevel], known: &[LoadedLevel]) -> Vec<InputError> {
    let requires: BTreeMap<&str, &[String]> = known
        .iter()
        .chain(checked)
        .map(|loaded| (loaded.level.id.as_str(), loaded.level.requires.as_slice()))
        .collect();
    let mut problems = Vec::new();
    for loaded in checked {
        let start = loaded.level.id.as_str();
        // Depth-first from `start`; a path back to `start` is a cycle.
        let mut stack: Vec<(&str, Vec<&str>)> = vec![(start, vec![start])];
        let mut visited = BTreeSet::new();
        let mut cycle = None;
        while let Some((id, path)) = stack.pop() {
            for next in requires.get(id).copied().unwrap_or_default() {
                if next == start {
                    let mut found = path.clone();
                    found.push(start);
                    cycle = Some(found);
                    break;
                }
                if visited.insert(next.as_str()) {
                    let mut longer = path.clone();
                    longer.push(next);
                    stack.push((next, longer));
                }
            }
            if cycle.is_some() {
                break;
            }
        }
        if let Some(cycle) = cycle {
            problems.push(InputError::at(
                &loaded.path,
                &loaded.text,
                "requires",
                0,
                format!(
                    "level `{start}` can never be unlocked: its requirements go round in a circle ({})",
                    cycle.join(" → ")
                ),
            ));
        }
    }
    problems
}

#[cfg(test)]
mod tests;
