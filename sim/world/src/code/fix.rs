//! The fix as a diff: this run's program beside the other run's, the one with the deciding
//! guards switched (the debrief's "what if"). A guard that was off shows its naive line struck
//! and its own line added; a guard that was on, the reverse. Lines are compared slot by slot,
//! so only the switched guards' lines (and those of guards that need them) can differ.

use serde::Serialize;

use super::{Line, Program, Slot, program};
use crate::level::Level;
use crate::runtime::guards::{Guard, Guards};

/// What happened to a line in the other run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Change {
    /// In both runs.
    Same,
    /// In this run only: struck.
    Removed,
    /// In the other run only.
    Added,
}

impl Change {
    /// The mark a diff puts before the line: ` `, `-` or `+`.
    pub fn sign(self) -> char {
        match self {
            Change::Same => ' ',
            Change::Removed => '-',
            Change::Added => '+',
        }
    }
}

/// One line of the diff.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct DiffLine {
    pub change: Change,
    pub line: Line,
}

/// A piece of a diff shown in short: a line, or how many unchanged lines are left out.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Excerpt {
    Line(DiffLine),
    Gap { lines: usize },
}

/// This run's program against the other run's.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Fix {
    /// The guards switched in the other run.
    pub switched: Vec<Guard>,
    /// What the diff shows, in the guards' words, as a whole sentence ("How the loop changes
    /// with the write retry rule on: lines marked - are this run's, lines marked + take their
    /// place."): one caption for the game and the browser, never guard names.
    pub caption: String,
    pub lines: Vec<DiffLine>,
}

impl Fix {
    /// The programs differ (a switched guard the level gives nothing to do changes nothing).
    pub fn changes_anything(&self) -> bool {
        self.lines.iter().any(|line| line.change != Change::Same)
    }

    /// The changed lines with `context` unchanged lines around each change; the rest counted
    /// in gaps.
    pub fn excerpt(&self, context: usize) -> Vec<Excerpt> {
        let near_change = |index: usize| {
            let low = index.saturating_sub(context);
            let high = (index + context).min(self.lines.len().saturating_sub(1));
            (low..=high).any(|other| self.lines[other].change != Change::Same)
        };
        let mut excerpt = Vec::new();
        let mut gap = 0;
        for (index, line) in self.lines.iter().enumerate() {
            if near_change(index) {
                if gap > 0 {
                    excerpt.push(Excerpt::Gap { lines: gap });
                    gap = 0;
                }
                excerpt.push(Excerpt::Line(line.clone()));
            } else {
                gap += 1;
            }
        }
        if gap > 0 {
            excerpt.push(Excerpt::Gap { lines: gap });
        }
        excerpt
    }

    /// The diff as text: `-`, `+` or a space before each line.
    pub fn text(&self) -> String {
        self.lines
            .iter()
            .map(|line| format!("{} {}\n", line.change.sign(), line.line.text()))
            .collect()
    }
}

/// `level`'s program under `guards` against the same with every guard of `switched` flipped.
pub fn fix(level: &Level, guards: Guards, switched: &[Guard]) -> Fix {
    let mut other_guards = guards;
    for guard in switched {
        other_guards.set(*guard, !guards.is_on(*guard));
    }
    let words: Vec<String> = switched
        .iter()
        .map(|guard| {
            crate::guards::switched(crate::guards::Switched {
                guard: *guard,
                was_on: guards.is_on(*guard),
            })
        })
        .collect();
    Fix {
        switched: switched.to_vec(),
        caption: caption(&words),
        lines: diff(&program(level, guards), &program(level, other_guards)),
    }
}

/// The diff's caption: a whole sentence that says which loop is shown against which, and how
/// to read the signs (a player once read "The loop …, against this run's" as cut off).
fn caption(switched: &[String]) -> String {
    format!(
        "How the loop changes {}: lines marked {} are this run's, lines marked {} take their place.",
        crate::text::and_list(switched),
        Change::Removed.sign(),
        Change::Added.sign()
    )
}

/// The lines at the head of `lines` in `slot`, taken off it.
fn take_slot<'a>(lines: &mut &'a [Line], slot: Slot) -> &'a [Line] {
    let count = lines.iter().take_while(|line| line.slot == slot).count();
    let (taken, rest) = lines.split_at(count);
    *lines = rest;
    taken
}

/// The two programs slot by slot: a slot whose lines are equal is unchanged, else its lines
/// in `this` are removed and those in `other` added.
pub fn diff(this: &Program, other: &Program) -> Vec<DiffLine> {
    let mut lines = Vec::new();
    let (mut left, mut right) = (this.lines.as_slice(), other.lines.as_slice());
    while !left.is_empty() || !right.is_empty() {
        let slot = match (left.first(), right.first()) {
            (Some(a), Some(b)) => a.slot.min(b.slot),
            (Some(a), None) => a.slot,
            (None, Some(b)) => b.slot,
            (None, None) => unreachable!("the loop runs while either has lines"),
        };
        let (ours, theirs) = (take_slot(&mut left, slot), take_slot(&mut right, slot));
        if ours == theirs {
            lines.extend(ours.iter().map(|line| DiffLine {
                change: Change::Same,
                line: line.clone(),
            }));
        } else {
            lines.extend(ours.iter().map(|line| DiffLine {
                change: Change::Removed,
                line: line.clone(),
            }));
            lines.extend(theirs.iter().map(|line| DiffLine {
                change: Change::Added,
                line: line.clone(),
            }));
        }
    }
    lines
}
