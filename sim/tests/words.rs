//! The user documentation's words about the campaign and the browser room (README.md and the
//! book under docs/src), held to the campaign and the server: level titles and numbers, level
//! and chapter counts, the room's banner and error codes, and the workshop plan's minutes,
//! chapters and path.

#[path = "common/markdown.rs"]
mod markdown;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use twice_world::campaign::Campaign;
use twice_world::presenter_notes;

fn repository() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The book's chapter about the browser room, and its workshop plan.
const ROOM: &str = "docs/src/workshop/room.md";
const WORKSHOP: &str = "docs/src/workshop/plan.md";

fn read(name: &str) -> String {
    std::fs::read_to_string(repository().join(name)).unwrap_or_else(|error| panic!("{name}: {error}"))
}

fn campaign() -> Campaign {
    Campaign::load(&repository().join("levels")).expect("the campaign loads")
}

/// A level's name in prose → (title, chapter): its campaign position (`2.1`, as the screens
/// name it) and its file's number (the prefix, `03`, as older prose did).
fn levels_by_number(campaign: &Campaign) -> BTreeMap<String, (String, u32)> {
    campaign
        .levels
        .iter()
        .flat_map(|loaded| {
            let file = loaded.path.file_name().unwrap().to_str().unwrap();
            let number = file.split('-').next().unwrap().to_owned();
            let named = (loaded.level.title.clone(), loaded.level.chapter);
            [
                (campaign.position(&loaded.level).to_string(), named.clone()),
                (number, named),
            ]
        })
        .collect()
}

/// Every `NN Title` in `text` (the rule the workshop plan's parser uses): (byte offset,
/// number, the text after it).
fn level_mentions(text: &str) -> Vec<(usize, String, String)> {
    twice_world::workshop_plan::level_mentions(text)
        .into_iter()
        .map(|mention| (mention.offset, mention.number, mention.after))
        .collect()
}

/// The lines of a document's section, from its heading to the next heading of its level.
fn section<'a>(text: &'a str, heading: &str) -> &'a str {
    let start = text.find(heading).unwrap_or_else(|| panic!("no section {heading}"));
    let level = heading.chars().take_while(|character| *character == '#').count();
    let rest = &text[start + heading.len()..];
    let end = rest
        .match_indices('\n')
        .map(|(offset, _)| offset + 1)
        .find(|offset| {
            let line = &rest[*offset..];
            let hashes = line.chars().take_while(|character| *character == '#').count();
            hashes > 0 && hashes <= level && line[hashes..].starts_with(' ')
        })
        .unwrap_or(rest.len());
    &rest[..end]
}

#[test]
fn level_titles_the_docs_name_are_the_campaigns() {
    let levels = levels_by_number(&campaign());
    for document in markdown::documents() {
        let (name, text) = (document.name(), document.text);
        let mut problems = Vec::new();
        for (_, number, after) in level_mentions(&text) {
            let Some((title, _)) = levels.get(&number) else {
                continue;
            };
            if !after.starts_with(title.as_str()) {
                problems.push(format!("{number} is \"{title}\", not \"{after}\""));
            }
        }
        assert!(problems.is_empty(), "{name}:\n{}", problems.join("\n"));
    }
}

const NUMBER_WORDS: [&str; 21] = [
    "zero",
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "eleven",
    "twelve",
    "thirteen",
    "fourteen",
    "fifteen",
    "sixteen",
    "seventeen",
    "eighteen",
    "nineteen",
    "twenty",
];

#[test]
fn level_and_chapter_counts_in_the_docs_are_the_campaigns() {
    let campaign = campaign();
    let levels = campaign.levels.len();
    let chapters: BTreeSet<u32> = campaign.levels.iter().map(|loaded| loaded.level.chapter).collect();
    for document in markdown::documents() {
        let (name, text) = (document.name(), document.text.to_lowercase());
        let words: Vec<&str> = text
            .split(|character: char| !character.is_alphanumeric())
            .filter(|word| !word.is_empty())
            .collect();
        for pair in words.windows(2) {
            let count = pair[0]
                .parse::<usize>()
                .ok()
                .or_else(|| NUMBER_WORDS.iter().position(|word| *word == pair[0]));
            let Some(count) = count else { continue };
            match pair[1] {
                "chapters" => assert_eq!(count, chapters.len(), "{name}: \"{} {}\"", pair[0], pair[1]),
                // Counts of the campaign's levels; "0 of 19 levels finished" style counts of a
                // player's progress are not written in these documents.
                "levels" if count > 3 => assert_eq!(count, levels, "{name}: \"{} {}\"", pair[0], pair[1]),
                _ => {}
            }
        }
    }
    // The banner the book shows is the one the command prints.
    assert!(
        read(ROOM).contains(&format!(
            "Twice for a room: {levels} levels from levels, up to 64 participants at once"
        )),
        "{ROOM}: the banner of `twice-sim web`"
    );
}

#[test]
fn the_books_web_error_codes_are_the_ones_the_room_answers_with() {
    let room = read(ROOM);
    let errors = section(&room, "## Errors");
    let table = errors
        .split("| status | codes |")
        .nth(1)
        .expect("the room chapter's table of error codes (`| status | codes |`)");
    let mut listed = BTreeSet::new();
    for line in table.lines().skip(2).take_while(|line| line.starts_with('|')) {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        let status: u16 = cells[1].parse().unwrap_or_else(|_| panic!("a status: {line}"));
        for code in cells[2].split(',').map(|code| code.trim().trim_matches('`')) {
            let code = code.split_whitespace().next().unwrap_or_default().trim_matches('`');
            listed.insert((status, code.to_owned()));
        }
    }
    let served: BTreeSet<(u16, String)> = twice_sim::web::WEB_ERROR_CODES
        .iter()
        .map(|(status, code)| (*status, (*code).to_owned()))
        .collect();
    assert_eq!(listed, served, "the book's codes (left) and the room's (right)");
}

/// One row of the workshop plan: its minutes, its chapter, and the levels it names (read by
/// the parser the presenter's page uses, `twice_world::workshop_plan`).
#[derive(Debug)]
struct PlanRow {
    from: u32,
    to: u32,
    chapter: Option<u32>,
    levels: Vec<String>,
}

fn plan_rows(workshop: &str) -> Vec<PlanRow> {
    twice_world::workshop_plan::parse(workshop)
        .expect("the workshop plan reads")
        .rows
        .into_iter()
        .map(|row| PlanRow {
            from: row.from_minute,
            to: row.to_minute,
            chapter: row.chapter,
            levels: row.levels,
        })
        .collect()
}

#[test]
fn the_workshop_plans_minutes_add_up_and_its_chapters_match_the_presenter_notes() {
    let campaign = campaign();
    let levels = levels_by_number(&campaign);
    let rows = plan_rows(&read(WORKSHOP));
    assert!(rows.len() > 5, "the plan's table: {rows:?}");
    let mut minute = 0;
    let mut per_chapter: BTreeMap<u32, u32> = BTreeMap::new();
    for row in &rows {
        assert_eq!(row.from, minute, "the plan's rows follow each other: {row:?}");
        assert!(row.to > row.from, "{row:?}");
        minute = row.to;
        if let Some(chapter) = row.chapter {
            *per_chapter.entry(chapter).or_insert(0) += row.to - row.from;
            for number in &row.levels {
                let (title, level_chapter) = &levels[number];
                // The row's first level is its chapter's; a stretch may be from another.
                if number == &row.levels[0] {
                    assert_eq!(
                        *level_chapter, chapter,
                        "{number} {title} is in chapter {level_chapter}: {row:?}"
                    );
                }
            }
        }
    }
    assert_eq!(minute, 45, "the plan ends at minute 45");
    let refs: Vec<&twice_world::level::Level> = campaign.levels.iter().map(|loaded| &loaded.level).collect();
    let notes = presenter_notes::load(&repository().join("levels"), &refs)
        .expect("the presenter notes load")
        .expect("the campaign has presenter notes");
    for notes in &notes.chapters {
        let planned = per_chapter.get(&notes.chapter).copied().unwrap_or(0);
        assert_eq!(
            notes.minutes, planned,
            "chapter {}: the presenter notes say {} minutes, the plan gives it {planned}",
            notes.chapter, notes.minutes
        );
    }
    for chapter in per_chapter.keys() {
        assert!(
            notes.chapter(*chapter).is_some(),
            "chapter {chapter} is in the plan but has no notes"
        );
    }
}

#[test]
fn every_level_the_workshop_plan_names_is_on_the_rooms_path() {
    let workshop = read(WORKSHOP);
    let paths: BTreeSet<&str> = workshop
        .split("--path ")
        .skip(1)
        .map(|rest| rest.split_whitespace().next().unwrap())
        .collect();
    assert_eq!(
        paths.len(),
        1,
        "every command in {WORKSHOP} opens the same path: {paths:?}"
    );
    let path: Vec<String> = paths.iter().next().unwrap().split(',').map(str::to_owned).collect();
    let catalogue = twice_sim::web::Catalogue::load(&repository().join("levels")).unwrap();
    let on_path = catalogue
        .path_ids(&path)
        .expect("the path names levels of the campaign");
    for row in plan_rows(&workshop) {
        for number in &row.levels {
            let level = catalogue
                .find_planned(number)
                .unwrap_or_else(|| panic!("{number}, named at minute {}, is no level of the campaign", row.from));
            assert!(
                on_path.contains(&level.level.id),
                "{number} is named at minute {} but not on the path {path:?}",
                row.from
            );
        }
    }
}

/// The level files' numbers (`03`): names a player never sees.
fn file_numbers(campaign: &Campaign) -> BTreeSet<String> {
    campaign
        .levels
        .iter()
        .map(|loaded| loaded.path.file_name().unwrap().to_str().unwrap()[..2].to_owned())
        .collect()
}

/// Where `prose` names a level by its file's number: two digits standing alone (not part of
/// a longer number, a decimal or a range like `9–14`) that are a level file's number, unless a
/// lower-case word follows, as after a quantity ("30 minutes", "10 to 20 s").
fn file_number_references(prose: &str, numbers: &BTreeSet<String>) -> Vec<String> {
    let bytes = prose.as_bytes();
    let joins = |byte: u8| byte.is_ascii_digit() || matches!(byte, b'.' | b',');
    let mut found = Vec::new();
    for index in 0..bytes.len().saturating_sub(1) {
        // Two ASCII digits first: only then are the slices around them on character boundaries.
        if !(bytes[index].is_ascii_digit() && bytes[index + 1].is_ascii_digit()) {
            continue;
        }
        let before = index.checked_sub(1).map(|at| bytes[at]);
        let after = bytes.get(index + 2).copied();
        let alone = before.is_none_or(|byte| !joins(byte))
            && !prose[..index].ends_with('–')
            && after.is_none_or(|byte| !byte.is_ascii_digit())
            && !prose[index + 2..].starts_with('–')
            && !(after == Some(b'.') && bytes.get(index + 3).is_some_and(u8::is_ascii_digit));
        if !(alone && numbers.contains(&prose[index..index + 2])) {
            continue;
        }
        let rest = prose[index + 2..].trim_start_matches([' ', '*']);
        let word: String = rest.chars().take_while(char::is_ascii_alphabetic).collect();
        let quantity = word.starts_with(|letter: char| letter.is_ascii_lowercase())
            && !["and", "or", "then"].contains(&word.as_str());
        if !quantity {
            let from = prose[..index].char_indices().rev().nth(30).map_or(0, |(at, _)| at);
            let to = prose[index..]
                .char_indices()
                .nth(30)
                .map_or(prose.len(), |(at, _)| index + at);
            found.push(format!("…{}…", prose[from..to].replace('\n', " ")));
        }
    }
    found
}

/// "level 05", "level nine": a level named by a number after the word.
fn level_and_a_number(prose: &str) -> Vec<String> {
    let words: Vec<&str> = prose.split_whitespace().collect();
    words
        .windows(2)
        .filter(|pair| {
            let next = pair[1]
                .trim_matches(|character: char| !character.is_alphanumeric())
                .to_lowercase();
            ["level", "levels"].contains(&pair[0].to_lowercase().as_str())
                && (next.chars().all(|character| character.is_ascii_digit()) && !next.is_empty()
                    || NUMBER_WORDS.contains(&next.as_str()))
        })
        .map(|pair| pair.join(" "))
        .collect()
}

/// The workshop's words name a level as the room's screens do, by its place in the campaign
/// (`2.1 Try Again, Penny`), never by its file's number (`03`), which no screen shows: the
/// presenter reads the plan and the notes aloud to a room looking at "2.1".
#[test]
fn the_workshop_names_levels_as_the_screens_do() {
    let campaign = campaign();
    let numbers = file_numbers(&campaign);
    let mut problems = Vec::new();
    let mut mentioned = 0;
    for name in [
        "docs/src/workshop/plan.md",
        "docs/src/workshop/room.md",
        "docs/src/workshop/projector.md",
    ] {
        let text = read(name);
        let (_, prose) = markdown::inline_code(&markdown::split(&text).prose);
        for mention in twice_world::workshop_plan::level_mentions(&prose) {
            mentioned += 1;
            if !mention.is_position() {
                problems.push(format!("{name}: {} {}", mention.number, mention.after));
            }
        }
        problems.extend(
            level_and_a_number(&prose)
                .into_iter()
                .map(|said| format!("{name}: \"{said}\"")),
        );
        // The plan's prose names no level by its file's number in any form ("wins 03", "(05)").
        if name.ends_with("plan.md") {
            problems.extend(
                file_number_references(&prose, &numbers)
                    .into_iter()
                    .map(|said| format!("{name}: {said}")),
            );
        }
    }
    let refs: Vec<&twice_world::level::Level> = campaign.levels.iter().map(|loaded| &loaded.level).collect();
    let notes = presenter_notes::load(&repository().join("levels"), &refs)
        .expect("the presenter notes load")
        .expect("the campaign has presenter notes");
    for chapter in &notes.chapters {
        for said in std::iter::once(&chapter.say).chain(&chapter.ask) {
            for mention in twice_world::workshop_plan::level_mentions(said) {
                mentioned += 1;
                if !mention.is_position() {
                    problems.push(format!(
                        "chapter {}'s notes: {} {}",
                        chapter.chapter, mention.number, mention.after
                    ));
                }
            }
            problems.extend(
                level_and_a_number(said)
                    .into_iter()
                    .chain(file_number_references(said, &numbers))
                    .map(|said| format!("chapter {}'s notes: {said}", chapter.chapter)),
            );
        }
    }
    assert!(
        problems.is_empty(),
        "levels named by their file's number:\n{}",
        problems.join("\n")
    );
    assert!(mentioned >= 15, "the workshop names its levels ({mentioned} found)");
}

/// The workshop plan's closing demo, as the presenter types it (its commands read from the plan,
/// `./twice-sim` this build, fewer runs and kills so the test is quick): through the plan's
/// own `grep`, each run shows its two credit lines and ends on its verdict — `PASSED` with
/// every guard, `FAILED` with none and double credits — never under a screen of violations.
#[test]
fn the_workshops_drill_demo_ends_on_its_verdict_line() {
    let workshop = read(WORKSHOP);
    let lines: Vec<&str> = workshop.lines().map(str::trim).collect();
    let commands: Vec<String> = lines
        .iter()
        .enumerate()
        .filter(|(_, line)| line.starts_with("./twice-sim drill "))
        .map(|(index, line)| {
            let first = line.trim_end_matches('\\').trim();
            let next = lines[index + 1];
            assert!(
                next.starts_with("| grep"),
                "the demo's command goes through its grep: {next}"
            );
            let filter = next.split('#').next().unwrap().trim();
            format!("{first} {filter}")
        })
        .collect();
    assert_eq!(commands.len(), 2, "the plan rehearses two drills: {commands:?}");
    let binary = env!("CARGO_BIN_EXE_twice-sim");
    let folder = tempfile::tempdir().unwrap();
    for (command, guarded) in commands.iter().zip([true, false]) {
        assert_eq!(command.contains("--guards none"), !guarded, "{command}");
        let quick = command
            .replacen("./twice-sim", binary, 1)
            .replacen("--runs 200", "--runs 12", 1)
            .replacen("--kills 1000", "--kills 60", 1);
        assert_ne!(
            &quick, command,
            "the plan's drill takes --runs 200 --kills 1000: {command}"
        );
        let output = std::process::Command::new("sh")
            .arg("-c")
            .arg(&quick)
            .current_dir(folder.path())
            .output()
            .expect("sh runs");
        let shown = String::from_utf8_lossy(&output.stdout);
        let shown: Vec<&str> = shown.lines().collect();
        assert_eq!(
            shown.len(),
            3,
            "{command}: the two credit lines and the verdict, not {shown:#?}"
        );
        assert!(shown[0].trim_start().starts_with("double credits "), "{shown:#?}");
        assert!(shown[1].trim_start().starts_with("lost credits "), "{shown:#?}");
        let double: u64 = shown[0]
            .split_whitespace()
            .nth(2)
            .and_then(|count| count.parse().ok())
            .unwrap_or_else(|| panic!("a count: {}", shown[0]));
        let verdict = shown[2];
        if guarded {
            assert_eq!(double, 0, "{shown:#?}");
            assert!(verdict.starts_with("verdict: PASSED"), "{shown:#?}");
        } else {
            assert!(double > 0, "a naive runtime pays twice: {shown:#?}");
            assert!(verdict.starts_with("verdict: FAILED"), "{shown:#?}");
        }
    }
    // The plan's clean-up removes what the drills keep (`--dir`).
    let cleanup = lines
        .iter()
        .find(|line| line.starts_with("rm -rf drill-"))
        .expect("the plan removes the drills' folders");
    let kept: Vec<String> = std::fs::read_dir(folder.path())
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(!kept.is_empty(), "a drill given --dir keeps its files");
    for name in &kept {
        assert!(cleanup.contains(name.as_str()), "{cleanup} leaves {name}");
    }
}
