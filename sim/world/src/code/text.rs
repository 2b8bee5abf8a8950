//! The code as plain text, for `twice-sim play --code` and anything else that prints: the loop
//! numbered with each worker's cursor in the gutter, and the run phase by phase with the line
//! each worker ran.

use std::fmt::Write as _;

use super::{Cursor, Program};
use crate::runtime::worker::Phase;
use crate::simulator::{Actor, TimelineEntry};

/// The loop, numbered, each line with the cursors on it in a gutter (`▶ w1`, `✖ w2` struck by
/// its glyph: a crashed worker).
pub fn listing(program: &Program, cursors: &[Cursor]) -> String {
    let gutters: Vec<String> = (0..program.lines.len())
        .map(|index| {
            cursors
                .iter()
                .filter(|cursor| cursor.line == Some(index))
                .map(Cursor::tag)
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect();
    let gutter_width = gutters.iter().map(|gutter| gutter.chars().count()).max().unwrap_or(0);
    let number_width = program.lines.len().to_string().len();
    let mut out = String::new();
    for (index, (line, gutter)) in program.lines.iter().zip(&gutters).enumerate() {
        let number = index + 1;
        let text = line.text();
        let row = if gutter_width == 0 {
            format!("{number:>number_width$}  {text}")
        } else {
            format!("{gutter:>gutter_width$} {number:>number_width$}  {text}")
        };
        writeln!(out, "{}", row.trim_end()).expect("writing to a String");
    }
    out
}

/// Every phase a worker ran, with the line it ran: `  12  w1  line 14  answer = …`.
pub fn trace(timeline: &[TimelineEntry], program: &Program) -> String {
    let mut out = String::new();
    for entry in timeline {
        let Actor::Worker(number) = entry.actor else {
            continue;
        };
        let Ok(phase) = entry.kind.parse::<Phase>() else {
            continue;
        };
        let Some(line) = program.line_of(phase) else {
            continue;
        };
        writeln!(
            out,
            "{:>5}  w{number:<2} line {:>2}  {}",
            entry.phase,
            line + 1,
            program.lines[line].code
        )
        .expect("writing to a String");
    }
    out
}
