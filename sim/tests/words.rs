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

/// Level number (the file's prefix, `03`) → (title, chapter).
fn levels_by_number(campaign: &Campaign) -> BTreeMap<String, (String, u32)> {
    campaign
        .levels
        .iter()
        .map(|loaded| {
            let file = loaded.path.file_name().unwrap().to_str().unwrap();
            let number = file.split('-').next().unwrap().to_owned();
            (number, (loaded.level.title.clone(), loaded.level.chapter))
        })
        .collect()
}

/// Every `NN Title` in `text`: two digits (not part of a longer number), a space, an
/// optional `*`, then a capital letter. Answers (byte offset, number, the text after it).
fn level_mentions(text: &str) -> Vec<(usize, String, String)> {
    let bytes = text.as_bytes();
    let mut found = Vec::new();
    for index in 0..bytes.len().saturating_sub(3) {
        let two_digits = bytes[index].is_ascii_digit() && bytes[index + 1].is_ascii_digit();
        let alone = index == 0 || !bytes[index - 1].is_ascii_digit();
        if !(two_digits && alone && bytes[index + 2] == b' ') {
            continue;
        }
        let after = text[index + 3..].trim_start_matches('*');
        let word = after
            .split(|character: char| !character.is_alphanumeric())
            .next()
            .unwrap_or_default();
        // "16 KiB", "64 MB": a quantity, not a level.
        let unit = ["KiB", "MiB", "GiB", "KB", "MB", "GB", "CPU", "ID"].contains(&word);
        if !unit && after.chars().next().is_some_and(char::is_uppercase) {
            found.push((
                index,
                text[index..index + 2].to_owned(),
                after.chars().take(80).collect(),
            ));
        }
    }
    found
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

/// One row of the workshop plan: its minutes, its chapter, and the levels it names.
#[derive(Debug)]
struct PlanRow {
    from: u32,
    to: u32,
    chapter: Option<u32>,
    levels: Vec<String>,
}

fn plan_rows(workshop: &str) -> Vec<PlanRow> {
    let plan = section(workshop, "## The 45 minutes");
    let mut rows = Vec::new();
    for line in plan.lines().filter(|line| line.starts_with("| ")) {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        let Some((from, to)) = cells[1].split_once('–') else {
            continue;
        };
        let (Ok(from), Ok(to)) = (from.parse(), to.parse()) else {
            continue;
        };
        let chapter = cells[2]
            .split("(chapter ")
            .nth(1)
            .map(|rest| rest.split(')').next().unwrap().parse().expect("a chapter number"));
        let levels = level_mentions(cells[2])
            .into_iter()
            .map(|(_, number, _)| number)
            .collect();
        rows.push(PlanRow {
            from,
            to,
            chapter,
            levels,
        });
    }
    rows
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
    catalogue
        .path_ids(&path)
        .expect("the path names levels of the campaign");
    for row in plan_rows(&workshop) {
        for number in &row.levels {
            assert!(
                path.contains(number),
                "{number} is named at minute {} but not on the path {path:?}",
                row.from
            );
        }
    }
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
