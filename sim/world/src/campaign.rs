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

use crate::billing_tools::Operation;
use crate::checker::Outcome;
use crate::error::InputError;
use crate::level::{self, CardKind, Level, LoadedLevel, LoadedTape, Play};
use crate::runtime::guards::Guard;
use crate::runtime::key::IdempotencyKey;
use crate::simulator::WORKERS_MAX;

/// The most level and tape files one check or one campaign may hold (a limit on everything).
pub const CAMPAIGN_FILES_MAX: usize = 4_096;

pub const LEVEL_SUFFIX: &str = ".level.ron";
pub const TAPE_SUFFIX: &str = ".tape.ron";

/// Every level and tape of one campaign folder, levels in level-select order.
#[derive(Debug)]
pub struct Campaign {
    pub levels: Vec<LoadedLevel>,
    pub tapes: Vec<LoadedTape>,
}

impl Campaign {
    /// Loads every `*.level.ron` and `*.tape.ron` below `folder` and checks them as a set.
    /// Any problem in any file fails the whole load, with every problem found.
    pub fn load(folder: &Path) -> Result<Campaign, Vec<InputError>> {
        let (levels, tapes, mut problems) = load_files(&[folder.to_path_buf()]);
        problems.extend(check_set(&levels, &levels));
        if !problems.is_empty() {
            return Err(problems);
        }
        let mut levels = levels;
        levels.sort_by_key(|loaded| level_select_key(&loaded.level));
        Ok(Campaign { levels, tapes })
    }

    pub fn level(&self, id: &str) -> Option<&LoadedLevel> {
        self.levels.iter().find(|loaded| loaded.level.id == id)
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
    (levels, tapes, problems)
}

/// Words in a text, as a reader counts them.
pub fn words(text: &str) -> usize {
    text.split_whitespace().count()
}

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
    if level.hints.nudge.trim().is_empty() || level.hints.idea.trim().is_empty() {
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
    if !level.unbeatable && level.par.is_none() {
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

/// Checks what loading a tape does not: worker numbers and operator keys.
pub fn check_tape(loaded: &LoadedTape) -> Result<(), InputError> {
    for (index, action) in loaded.tape.actions.iter().enumerate() {
        let problem = match &action.play {
            Play::CrashWorker {
                worker: Some(number), ..
            } if *number > WORKERS_MAX => Some(format!(
                "worker w{number} can never exist: a simulation starts at most {WORKERS_MAX} workers"
            )),
            Play::OperatorResolve { key, .. } | Play::OperatorCompensate { key, .. } => {
                IdempotencyKey::parse(key).err()
            }
            _ => None,
        };
        if let Some(message) = problem {
            return Err(InputError::at(&loaded.path, &loaded.text, "at_phase", index, message));
        }
    }
    Ok(())
}

/// Cards that can make one intended credit land twice. Each can leave a request that was
/// sent without its answer (so a retry, a replay or a second model call may follow), start a
/// second process on the run, make the model call again, or let an operator decide a call
/// that the runtime then runs again. A lost request never lands, a refusal before sending
/// sends nothing, and a compensation only takes money back: none of those adds a credit.
pub fn can_pay_twice(card: CardKind) -> bool {
    matches!(
        card,
        CardKind::LoseResponse
            | CardKind::SlowResponse
            | CardKind::CrashWorker
            | CardKind::DuplicateWorker
            | CardKind::ModelCallsAgain
            | CardKind::OperatorResolve
    )
}

/// Why the level's goal can never be reached, or `None` if something in it could reach it.
///
/// The heuristic only rules a goal out when nothing could disturb Penny at all: every
/// credit is then sent once and answered in time, so it lands exactly once — unless keys
/// hashed from arguments merge two identical credits. It never rules out `paid_once`.
pub fn unreachable_goal(level: &Level) -> Option<String> {
    let credit_tools: BTreeSet<&str> = level
        .tools
        .iter()
        .filter(|tool| Operation::Credit.is_of(tool))
        .map(|tool| tool.name.as_str())
        .collect();
    let credits: Vec<_> = level
        .runs
        .iter()
        .flat_map(|run| run.calls.iter())
        .filter(|call| credit_tools.contains(call.tool.as_str()))
        .collect();
    if level.goal == Outcome::PaidOnce {
        return None;
    }
    if credits.is_empty() {
        return Some("no run issues a credit, and the checker judges only credits".into());
    }
    let world = &level.world;
    let worst_round_trip_ms = 2 * (u64::from(world.latency_ms) + u64::from(world.jitter_ms));
    if worst_round_trip_ms >= u64::from(world.timeout_ms) {
        // An answer can miss its timeout with no card played: anything may follow.
        return None;
    }
    let hand: Vec<CardKind> = level.cards.iter().map(|allowance| allowance.card).collect();
    match level.goal {
        Outcome::PaidOnce => None,
        Outcome::PaidTwice => {
            if hand.iter().any(|card| can_pay_twice(*card)) {
                return None;
            }
            Some(format!(
                "no card in hand ({}) can leave a sent request unanswered, replay a call, start a second worker, \
                 make the model call again or let an operator settle a call, and every answer arrives within the \
                 {} ms timeout",
                hand_names(&hand),
                world.timeout_ms
            ))
        }
        Outcome::NotPaidButOwed | Outcome::UnknownFlagged => {
            if !hand.is_empty() {
                return None;
            }
            if level.goal == Outcome::NotPaidButOwed && !level.guards.key_per_call {
                let mut distinct = BTreeSet::new();
                let merged = credits
                    .iter()
                    .any(|call| !distinct.insert((&call.tool, &call.account, call.amount_cents, &call.memo)));
                if merged {
                    return None;
                }
            }
            Some(format!(
                "the level gives no cards, every answer arrives within the {} ms timeout{}",
                world.timeout_ms,
                if level.goal == Outcome::NotPaidButOwed {
                    ", and no two credits are identical calls a hashed key could merge"
                } else {
                    ""
                }
            ))
        }
    }
}

fn hand_names(hand: &[CardKind]) -> String {
    if hand.is_empty() {
        "no cards".into()
    } else {
        hand.iter().map(|card| card.name()).collect::<Vec<_>>().join(", ")
    }
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
mod tests {
    use super::*;

    /// A small valid level; tests change one line of it with `replace`.
    const LEVEL: &str = r#"(
    id: "first",
    title: "First",
    chapter: 1,
    order: 1,
    requires: [],
    briefing: "Penny refunds Ada.",
    lesson: (rule: "Retry reads, not writes.", text: "One attempt."),
    hints: (nudge: "Watch the wire.", idea: "A lost answer looks like a lost request."),
    par: (cards: 1, phases: 17),
    world: (accounts: [(id: "acct_ada", owner: "Ada")]),
    tools: [(name: "issue_credit", side_effect: external, operation: credit)],
    runs: [(id: "r1", calls: [(tool: "issue_credit", account: "acct_ada", amount_cents: 2500, memo: "Refund")])],
    cards: [(card: LoseResponse, count: 1)],
    goal: paid_twice,
)"#;

    const TAPE: &str = r#"(
    level: "first.level.ron",
    seed: 1,
    actions: [
        (at_phase: 0, play: LoseResponse),
    ],
    expect: (verdict: paid_once, stopped_by: [write_retry_rule]),
)"#;

    fn folder(files: &[(&str, &str)]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().expect("a temporary folder");
        for (name, text) in files {
            std::fs::write(dir.path().join(name), text).expect("write a test file");
        }
        dir
    }

    fn problems(files: &[(&str, &str)]) -> Vec<String> {
        let dir = folder(files);
        check(&[dir.path().to_path_buf()])
            .problems
            .iter()
            .map(|problem| {
                let text = problem.to_string();
                text.replace(&format!("{}/", dir.path().display()), "")
            })
            .collect()
    }

    fn one_problem(files: &[(&str, &str)]) -> String {
        let found = problems(files);
        assert_eq!(found.len(), 1, "expected exactly one problem, got {found:#?}");
        found.into_iter().next().expect("one problem")
    }

    #[test]
    fn a_valid_level_and_tape_have_no_problems() {
        let dir = folder(&[("first.level.ron", LEVEL), ("first.win.tape.ron", TAPE)]);
        let report = check(&[dir.path().to_path_buf()]);
        assert!(report.problems.is_empty(), "{:#?}", report.problems);
        assert_eq!((report.levels, report.tapes), (1, 1));
    }

    #[test]
    fn an_unknown_field_is_named_with_its_line_and_column() {
        let level = LEVEL.replace("    goal: paid_twice,", "    goal: paid_twice,\n    gaol: 3,");
        let problem = one_problem(&[("first.level.ron", &level)]);
        assert!(problem.starts_with("first.level.ron:16:"), "{problem}");
        assert!(problem.contains("gaol"), "{problem}");
    }

    #[test]
    fn malformed_ron_is_named_with_its_line_and_column() {
        let level = LEVEL.replace("order: 1,", "order: 1,,");
        let problem = one_problem(&[("first.level.ron", &level)]);
        assert!(problem.starts_with("first.level.ron:5:"), "{problem}");
    }

    #[test]
    fn a_card_the_level_does_not_hold_is_refused() {
        let tape = TAPE.replace("play: LoseResponse", "play: CrashWorker(worker: 1)");
        let problem = one_problem(&[("first.level.ron", LEVEL), ("first.win.tape.ron", &tape)]);
        assert!(problem.starts_with("first.win.tape.ron:5:10:"), "{problem}");
        assert!(
            problem.contains("card CrashWorker is not in level `first`'s hand"),
            "{problem}"
        );
    }

    #[test]
    fn more_cards_than_the_level_gives_are_refused() {
        let tape = TAPE.replace(
            "(at_phase: 0, play: LoseResponse),",
            "(at_phase: 0, play: LoseResponse),\n        (at_phase: 3, play: LoseResponse),",
        );
        let problem = one_problem(&[("first.level.ron", LEVEL), ("first.win.tape.ron", &tape)]);
        assert!(problem.starts_with("first.win.tape.ron:6:10:"), "{problem}");
        assert!(problem.contains("played 2 times; the level gives 1"), "{problem}");
    }

    #[test]
    fn an_action_after_the_level_ends_is_refused() {
        let level = LEVEL.replace("    goal: paid_twice,", "    goal: paid_twice,\n    max_phases: 50,");
        let tape = TAPE.replace("at_phase: 0", "at_phase: 51");
        let problem = one_problem(&[("first.level.ron", &level), ("first.win.tape.ron", &tape)]);
        assert!(problem.starts_with("first.win.tape.ron:5:10:"), "{problem}");
        assert!(problem.contains("after the level's end (max_phases 50)"), "{problem}");
    }

    #[test]
    fn a_tape_whose_level_is_missing_is_refused() {
        let problem = one_problem(&[("first.win.tape.ron", TAPE)]);
        assert!(problem.starts_with("first.win.tape.ron:2:5:"), "{problem}");
        assert!(problem.contains("level `first.level.ron` does not exist"), "{problem}");
    }

    #[test]
    fn duplicate_level_ids_are_refused_at_the_second_file() {
        let second = LEVEL.replace("order: 1", "order: 2");
        let problem = one_problem(&[("a.level.ron", LEVEL), ("b.level.ron", &second)]);
        assert!(problem.starts_with("b.level.ron:2:5:"), "{problem}");
        assert!(problem.contains("level id `first` is already used by"), "{problem}");
        assert!(problem.contains("a.level.ron"), "{problem}");
    }

    #[test]
    fn requires_naming_an_unknown_level_is_refused() {
        let level = LEVEL.replace("requires: [],", "requires: [\"zeroth\"],");
        let problem = one_problem(&[("first.level.ron", &level)]);
        assert!(problem.starts_with("first.level.ron:6:16:"), "{problem}");
        assert!(problem.contains("names level `zeroth`"), "{problem}");
    }

    #[test]
    fn requires_may_name_a_neighbour_that_is_not_being_checked() {
        let second = LEVEL
            .replace("\"first\"", "\"second\"")
            .replace("order: 1", "order: 2")
            .replace("requires: [],", "requires: [\"first\"],");
        let dir = folder(&[("first.level.ron", LEVEL), ("second.level.ron", &second)]);
        let report = check(&[dir.path().join("second.level.ron")]);
        assert!(report.problems.is_empty(), "{:#?}", report.problems);
        assert_eq!(report.levels, 1);
    }

    #[test]
    fn requirements_that_go_round_in_a_circle_are_refused() {
        let first = LEVEL.replace("requires: [],", "requires: [\"second\"],");
        let second = LEVEL
            .replace("\"first\"", "\"second\"")
            .replace("order: 1", "order: 2")
            .replace("requires: [],", "requires: [\"first\"],");
        let found = problems(&[("first.level.ron", &first), ("second.level.ron", &second)]);
        assert_eq!(found.len(), 2, "{found:#?}");
        assert!(
            found[0].contains("go round in a circle (first → second → first)"),
            "{found:#?}"
        );
    }

    #[test]
    fn two_levels_in_one_level_select_slot_are_refused() {
        let second = LEVEL.replace("\"first\"", "\"second\"");
        let problem = one_problem(&[("a.level.ron", LEVEL), ("b.level.ron", &second)]);
        assert!(problem.starts_with("b.level.ron:5:5:"), "{problem}");
        assert!(problem.contains("both claim chapter 1 order 1"), "{problem}");
    }

    #[test]
    fn paid_twice_with_no_card_that_can_repeat_a_call_is_unreachable() {
        let level = LEVEL.replace("card: LoseResponse", "card: LoseRequest");
        let problem = one_problem(&[("first.level.ron", &level)]);
        assert!(problem.starts_with("first.level.ron:15:5:"), "{problem}");
        assert!(
            problem.contains("goal paid_twice can never be reached: no card in hand (LoseRequest)"),
            "{problem}"
        );
    }

    #[test]
    fn a_goal_with_no_cards_is_reachable_when_answers_can_miss_the_timeout() {
        let level = LEVEL
            .replace("    cards: [(card: LoseResponse, count: 1)],\n", "")
            .replace("world: (", "world: (latency_ms: 40, jitter_ms: 10, ");
        assert!(problems(&[("first.level.ron", &level)]).is_empty());
    }

    #[test]
    fn not_paid_but_owed_with_no_cards_needs_identical_credits_and_hashed_keys() {
        let base = LEVEL
            .replace("    cards: [(card: LoseResponse, count: 1)],\n", "")
            .replace("goal: paid_twice", "goal: not_paid_but_owed");
        let problem = one_problem(&[("first.level.ron", &base)]);
        assert!(problem.contains("no two credits are identical calls"), "{problem}");
        let merged = base
            .replace(
                "memo: \"Refund\")]",
                "memo: \"Refund\"), (tool: \"issue_credit\", account: \"acct_ada\", amount_cents: 2500, memo: \"Refund\")]",
            )
            .replace("    goal:", "    guards: (key_per_call: false),\n    goal:");
        assert!(problems(&[("first.level.ron", &merged)]).is_empty());
        let keyed_per_call = merged.replace("    guards: (key_per_call: false),\n", "");
        assert_eq!(problems(&[("first.level.ron", &keyed_per_call)]).len(), 1);
    }

    #[test]
    fn a_goal_is_unreachable_when_no_run_issues_a_credit() {
        let level = LEVEL.replace("operation: credit", "operation: lookup_balance");
        let problem = one_problem(&[("first.level.ron", &level)]);
        assert!(problem.contains("no run issues a credit"), "{problem}");
    }

    #[test]
    fn an_unbeatable_level_needs_a_debrief() {
        let level = LEVEL.replace("    goal: paid_twice,", "    goal: paid_twice,\n    unbeatable: true,");
        let problem = one_problem(&[("first.level.ron", &level)]);
        assert!(problem.starts_with("first.level.ron:16:5:"), "{problem}");
        assert!(problem.contains("has no `debrief`"), "{problem}");
    }

    #[test]
    fn a_worker_that_can_never_exist_is_refused() {
        let level = LEVEL.replace("card: LoseResponse", "card: CrashWorker");
        let tape = TAPE.replace("play: LoseResponse", "play: CrashWorker(worker: 65)");
        let problem = one_problem(&[("first.level.ron", &level), ("first.win.tape.ron", &tape)]);
        assert!(problem.starts_with("first.win.tape.ron:5:10:"), "{problem}");
        assert!(problem.contains("w65 can never exist"), "{problem}");
    }

    #[test]
    fn an_operator_key_that_is_not_a_key_is_refused() {
        let level = LEVEL.replace("card: LoseResponse", "card: OperatorResolve");
        let tape = TAPE.replace(
            "play: LoseResponse",
            "play: OperatorResolve(key: \"r1 c1\", status: failed, reason: \"lost\")",
        );
        let problem = one_problem(&[("first.level.ron", &level), ("first.win.tape.ron", &tape)]);
        assert!(problem.contains("`r1 c1` is not an idempotency key"), "{problem}");
    }

    #[test]
    fn a_path_with_no_level_or_tape_files_is_a_problem() {
        let dir = folder(&[("notes.txt", "nothing here")]);
        let report = check(&[dir.path().to_path_buf()]);
        assert_eq!(report.problems.len(), 1, "{:#?}", report.problems);
        assert!(
            report.problems[0]
                .to_string()
                .contains("no .level.ron or .tape.ron files here")
        );
        let missing = check(&[dir.path().join("absent")]);
        assert!(missing.problems[0].to_string().contains("no such file or folder"));
    }

    #[test]
    fn a_file_named_twice_is_checked_once() {
        let dir = folder(&[("first.level.ron", LEVEL)]);
        let report = check(&[dir.path().to_path_buf(), dir.path().join("first.level.ron")]);
        assert!(report.problems.is_empty(), "{:#?}", report.problems);
        assert_eq!(report.levels, 1);
    }

    #[test]
    fn a_broken_level_is_reported_once_even_when_its_tape_is_checked_too() {
        let level = LEVEL.replace("order: 1,", "order: 1,,");
        let found = problems(&[("first.level.ron", &level), ("first.win.tape.ron", TAPE)]);
        assert_eq!(found.len(), 1, "{found:#?}");
    }

    #[test]
    fn the_campaign_loads_in_level_select_order() {
        let second = LEVEL
            .replace("\"first\"", "\"second\"")
            .replace("chapter: 1", "chapter: 0")
            .replace("order: 1", "order: 5");
        let dir = folder(&[
            ("first.level.ron", LEVEL),
            ("b.level.ron", &second),
            ("first.win.tape.ron", TAPE),
        ]);
        let campaign = Campaign::load(dir.path()).expect("a valid campaign");
        let ids: Vec<&str> = campaign.levels.iter().map(|loaded| loaded.level.id.as_str()).collect();
        assert_eq!(ids, ["second", "first"]);
        assert_eq!(campaign.tapes_for("first").count(), 1);
        assert!(campaign.level("second").is_some());
        let broken = folder(&[("a.level.ron", "(")]);
        assert!(Campaign::load(broken.path()).is_err());
    }
}
