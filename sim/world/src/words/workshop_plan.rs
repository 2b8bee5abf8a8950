//! A workshop's minute plan, read from its Markdown (the book's workshop plan has the table
//! "minute | what happens | the room does"), so the presenter's page shows the plan the
//! facilitator reads, with a clock,
//! and the tests hold the plan to the campaign and the presenter notes — one parser for both.
//!
//! A row is `| 5–9 | **1.1 The Second Knock** (chapter 1). One card, … | plays 1.1 … |`: its
//! minutes (from–to, an en dash or a hyphen), what happens (the bold lead is its title), the
//! chapter it names, the levels it names (`2.1 Title`, a campaign position as the screens show
//! it, or `03 Title`, a level file's number as older plans wrote it: then a space and a
//! capital), and what the room does.

use serde::Serialize;

/// The most rows a plan may have: a day's workshop in five-minute steps.
pub const PLAN_ROWS_MAX: usize = 128;
/// The latest minute a plan may name: a full day.
pub const PLAN_MINUTES_MAX: u32 = 24 * 60;

/// One row of the plan.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct PlanRow {
    pub from_minute: u32,
    pub to_minute: u32,
    /// The row's bold lead, without its markup: "1.1 The Second Knock".
    pub title: String,
    /// What happens, without Markdown's markup.
    pub what: String,
    /// What the room does.
    pub room: String,
    /// The chapter the row names (`(chapter 3)`), if any.
    pub chapter: Option<u32>,
    /// The levels it names, as written (`2.1`, or a file's number `03`), in order, each once.
    pub levels: Vec<String>,
}

/// A workshop's plan: rows that follow each other from minute 0.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Plan {
    pub rows: Vec<PlanRow>,
}

impl Plan {
    /// The minute the plan ends.
    pub fn minutes(&self) -> u32 {
        self.rows.last().map_or(0, |row| row.to_minute)
    }

    /// The row under way `elapsed_s` seconds after the start; `None` before the start or after
    /// the end.
    pub fn row_at(&self, elapsed_s: u64) -> Option<usize> {
        let minute = elapsed_s / 60;
        self.rows
            .iter()
            .position(|row| u64::from(row.from_minute) <= minute && minute < u64::from(row.to_minute))
    }
}

/// Why a plan could not be read.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PlanError {
    #[error(
        "no minute plan: a table whose first column is headed `minute` (`| minute | what happens | the room does |`)"
    )]
    NoTable,
    #[error("the plan's row {row} (`{text}`): {problem}")]
    Row { row: usize, text: String, problem: String },
    #[error("the plan has more than {PLAN_ROWS_MAX} rows")]
    TooLong,
}

/// Reads the first minute plan in `markdown`.
pub fn parse(markdown: &str) -> Result<Plan, PlanError> {
    let mut lines = markdown.lines().map(str::trim).skip_while(|line| !is_plan_header(line));
    if lines.next().is_none() {
        return Err(PlanError::NoTable);
    }
    let mut rows: Vec<PlanRow> = Vec::new();
    for line in lines.take_while(|line| line.starts_with('|')) {
        let cells: Vec<&str> = line.trim_matches('|').split('|').map(str::trim).collect();
        if cells
            .iter()
            .all(|cell| cell.chars().all(|character| matches!(character, '-' | ':' | ' ')))
        {
            continue; // the line under the header
        }
        let number = rows.len() + 1;
        let problem = |problem: String| PlanError::Row {
            row: number,
            text: line.chars().take(60).collect(),
            problem,
        };
        if rows.len() >= PLAN_ROWS_MAX {
            return Err(PlanError::TooLong);
        }
        let [minutes, what, room, ..] = cells.as_slice() else {
            return Err(problem(
                "a row has three cells: minutes, what happens, what the room does".into(),
            ));
        };
        let (from, to) = minutes
            .split_once(['–', '-'])
            .and_then(|(from, to)| Some((from.trim().parse::<u32>().ok()?, to.trim().parse::<u32>().ok()?)))
            .ok_or_else(|| problem(format!("`{minutes}` is not minutes like `5–9`")))?;
        let expected = rows.last().map_or(0, |row| row.to_minute);
        if from != expected || to <= from || to > PLAN_MINUTES_MAX {
            return Err(problem(format!(
                "minutes {from}–{to}: rows follow each other from minute 0 (this one starts at {expected}) \
                 and end after they start, by minute {PLAN_MINUTES_MAX}"
            )));
        }
        rows.push(PlanRow {
            from_minute: from,
            to_minute: to,
            title: bold_lead(what),
            what: plain(what),
            room: plain(room),
            chapter: chapter_named(what),
            levels: level_numbers(what),
        });
    }
    if rows.is_empty() {
        return Err(PlanError::NoTable);
    }
    Ok(plan_of(rows))
}

fn plan_of(rows: Vec<PlanRow>) -> Plan {
    debug_assert!(rows.windows(2).all(|pair| pair[0].to_minute == pair[1].from_minute));
    Plan { rows }
}

fn is_plan_header(line: &str) -> bool {
    line.starts_with('|')
        && line
            .trim_matches('|')
            .split('|')
            .next()
            .is_some_and(|cell| cell.trim().eq_ignore_ascii_case("minute"))
}

/// The text of the first `**…**` at the start of a cell, without its markup.
fn bold_lead(cell: &str) -> String {
    cell.strip_prefix("**")
        .and_then(|rest| rest.split_once("**"))
        .map(|(lead, _)| plain(lead).trim_end_matches('.').to_owned())
        .unwrap_or_default()
}

/// Markdown's emphasis and code marks taken out: what a page shows as text.
fn plain(cell: &str) -> String {
    cell.replace("**", "")
        .replace(['*', '`'], "")
        .replace("\\|", "|")
        .trim()
        .to_owned()
}

fn chapter_named(cell: &str) -> Option<u32> {
    let rest = cell.split("(chapter ").nth(1)?;
    rest.split(')').next()?.trim().parse().ok()
}

/// A level named in prose: `2.1 Try Again, Penny` (its campaign position, as the screens show
/// it) or `03 Try Again, Penny` (its file's number, as older plans wrote it).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LevelMention {
    /// Where it starts, in bytes.
    pub offset: usize,
    /// Its number as written: a campaign position (`2.1`) or a file's two digits (`03`).
    pub number: String,
    /// What follows its number (the title as written, and more), up to 80 characters.
    pub after: String,
}

impl LevelMention {
    /// Named by its campaign position (`2.1`), as the level list and the level's header name
    /// it, rather than by its file's number.
    pub fn is_position(&self) -> bool {
        self.number.contains('.')
    }
}

/// Every `2.1 Title` and `NN Title` in `text`: a position (one or two digits, a dot, one or
/// two digits) or two digits, not part of a longer number, then a space, an optional `*`, then
/// a capital letter — how the plan and the docs name a level ("16 KiB" is a quantity, not
/// one; "0.19.1" is a version).
pub fn level_mentions(text: &str) -> Vec<LevelMention> {
    let bytes = text.as_bytes();
    let mut found = Vec::new();
    let mut index = 0;
    while index < bytes.len() {
        let alone = index == 0 || !(bytes[index - 1].is_ascii_digit() || bytes[index - 1] == b'.');
        if !(bytes[index].is_ascii_digit() && alone) {
            index += 1;
            continue;
        }
        let digits_from = |from: usize| from + bytes[from..].iter().take_while(|byte| byte.is_ascii_digit()).count();
        let mut end = digits_from(index);
        if bytes.get(end) == Some(&b'.') && bytes.get(end + 1).is_some_and(u8::is_ascii_digit) {
            end = digits_from(end + 1);
        }
        let number = &text[index..end];
        let shaped = match number.split_once('.') {
            None => number.len() == 2,
            Some((chapter, place)) => (1..=2).contains(&chapter.len()) && (1..=2).contains(&place.len()),
        };
        if shaped && bytes.get(end) == Some(&b' ') {
            let after = text[end + 1..].trim_start_matches('*');
            let word = after
                .split(|character: char| !character.is_alphanumeric())
                .next()
                .unwrap_or_default();
            let unit = ["KiB", "MiB", "GiB", "KB", "MB", "GB", "CPU", "ID"].contains(&word);
            if !unit && after.chars().next().is_some_and(char::is_uppercase) {
                found.push(LevelMention {
                    offset: index,
                    number: number.to_owned(),
                    after: after.chars().take(80).collect(),
                });
            }
        }
        index = end;
    }
    found
}

/// The levels `text` names, by position or number as written, in order, each once.
pub fn level_numbers(text: &str) -> Vec<String> {
    let mut numbers: Vec<String> = Vec::new();
    for mention in level_mentions(text) {
        if !numbers.contains(&mention.number) {
            numbers.push(mention.number);
        }
    }
    numbers
}

#[cfg(test)]
mod tests {
    use super::*;

    const PLAN: &str = "# A workshop\n\nSome words.\n\n| minute | what happens | the room does |\n|---|---|---|\n\
        | 0–3 | **The question.** Hands up. | listens, votes |\n\
        | 3–9 | **1.1 The Second Knock** (chapter 1). One card, *Lose the response*. Stretch: 02 *One Knock Only*. | plays `1.1` |\n\
        | 9–10 | A 16 KiB page, Bevy 0.19.1 Release, 1,000 Runs. | — |\n\nAfter the table.\n";

    #[test]
    fn a_plan_reads_its_rows_minutes_chapters_and_levels() {
        let plan = parse(PLAN).unwrap();
        assert_eq!(plan.rows.len(), 3);
        assert_eq!(plan.minutes(), 10);
        let row = &plan.rows[1];
        assert_eq!((row.from_minute, row.to_minute, row.chapter), (3, 9, Some(1)));
        assert_eq!(row.title, "1.1 The Second Knock");
        // A position as the screens show it, and a file's number as an older plan writes it.
        assert_eq!(row.levels, ["1.1", "02"]);
        assert!(
            !row.what.contains('*') && row.what.contains("Lose the response"),
            "{}",
            row.what
        );
        assert_eq!(row.room, "plays 1.1");
        assert_eq!(plan.rows[0].title, "The question");
        assert!(plan.rows[2].levels.is_empty(), "a quantity or a version is not a level");
        assert_eq!(plan.row_at(0), Some(0));
        assert_eq!(plan.row_at(3 * 60), Some(1));
        assert_eq!(plan.row_at(9 * 60 + 59), Some(2));
        assert_eq!(plan.row_at(10 * 60), None);
    }

    #[test]
    fn a_plan_with_gaps_or_no_table_is_refused_with_the_row() {
        assert_eq!(parse("no table here"), Err(PlanError::NoTable));
        let gap = PLAN.replace("| 3–9 |", "| 4–9 |");
        let error = parse(&gap).unwrap_err();
        assert!(
            error.to_string().contains("row 2") && error.to_string().contains("starts at 3"),
            "{error}"
        );
        let words = PLAN.replace("| 9–10 |", "| nine |");
        assert!(parse(&words).unwrap_err().to_string().contains("`nine` is not minutes"));
    }

    #[test]
    fn the_workshop_s_own_plan_reads() {
        let text = std::fs::read_to_string(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/src/workshop/plan.md"),
        )
        .expect("the workshop plan is in the repository");
        let plan = parse(&text).expect("the workshop plan reads");
        assert!(plan.rows.len() > 5, "{plan:?}");
        assert!(plan.rows.iter().any(|row| row.levels.contains(&"1.1".to_owned())));
    }
}
