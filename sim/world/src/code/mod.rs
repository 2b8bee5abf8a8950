//! The program on screen: the runtime's tool-execution loop as this level's runtime runs it,
//! written for reading in the seed's own Python style, with a cursor per worker on the line it
//! is at. The game, the browser and `twice-sim play --code` draw what this module says; none
//! of them writes a line of code of its own.
//!
//! The loop is generated, never written per level. Its skeleton ([`skeleton`]: load the
//! checkpoint, the model decides, send, wait, save, exit) is the same everywhere; every other
//! line is a guard's, from the guard's own file ([`crate::guards`]): the guard's own line when it is on, the naive line it
//! replaces when it is off (`for attempt in range(3):` for one attempt, `key = hash(...)` for
//! `f"{run_id}:{call.id}"`, no reservation at all), each marked with the guard's glyph. A
//! guard the level gives nothing to do (a lookup settle time no tool declares) shows no line.
//! Each line carries the worker [`Phase`]s it runs: every phase a worker of this level can be
//! in is on exactly one line, so a worker's cursor is always on one line (`sim/world/tests/
//! code.rs` holds that for every level and guard set, and that switching a guard changes only
//! that guard's lines).
//!
//! It is the runtime's logic written for reading, not the runtime: the real code is the Rust
//! of `twice-runtime` (`sim/runtime/src/worker/`), whose machine the simulator drives.

mod aim;
mod cursors;
mod fix;
mod skeleton;
mod text;
mod tool;

use serde::Serialize;

pub use crate::guards::{Context, GuardCode, Piece, Slot};
pub use aim::{AimError, AimReport, Aimed, CrashAim, CrashAims};
pub use cursors::{
    Beside, Cursor, CursorState, Said, WORKER_COLOURS, WORKER_GLYPHS, WorkerLook, beside, cursors, worker_look,
};
pub use fix::{Change, DiffLine, Excerpt, Fix, diff, fix};
pub use text::{listing, trace};
pub use tool::{ToolLine, billing_comment, declaration_code, runtime_comment, tool_code, tool_code_under};

use crate::level::Level;
use crate::runtime::guards::{Guard, Guards};
use crate::runtime::worker::Phase;
use crate::simulator::Simulation;

/// What the code is, said wherever it is shown: the game's and the browser's caption, the
/// command line's heading.
pub const ABOUT: &str = "the runtime's loop as this level runs it, written for reading in Python; \
                         the real code is twice-runtime's Rust (sim/runtime/src/worker/)";

/// Spaces per indent level in the text form (`twice-sim play --code`, a copy).
pub const INDENT_SPACES: usize = 4;
/// Spaces per indent level in the game's and the browser's panels, where width is short.
pub const PANEL_INDENT_SPACES: usize = 2;
/// The most lines a program may have: it is read beside the run, not studied (the issue's
/// "about 15–35 lines"; a test holds every level's program to it).
pub const PROGRAM_LINES_MAX: usize = 35;

/// Which guard a line is, and whether as its own line (on) or the naive line it replaces (off).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct GuardMark {
    pub guard: Guard,
    pub on: bool,
}

impl GuardMark {
    /// The mark beside the line, in egui's fonts and DejaVu Sans alike: a check for the
    /// guard's own line, a cross for the naive line it replaces. Never a colour alone.
    pub fn glyph(self) -> char {
        if self.on { '✔' } else { '✖' }
    }
}

/// One line of code.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Line {
    pub slot: Slot,
    /// Indent levels ([`INDENT_SPACES`] spaces each in the text form).
    pub indent: u8,
    /// The code, without its indent; empty for a line that is only a comment.
    pub code: String,
    /// Why the line is as it is, for a guard's line (the comment after it); empty otherwise.
    pub note: String,
    /// The worker phases this line runs.
    pub phases: Vec<Phase>,
    /// The guard whose line it is; `None`: the skeleton's.
    pub guard: Option<GuardMark>,
}

impl Line {
    /// The line as Python reads it: indent, code, and the guard's comment (`# ✔ ledger: …`).
    pub fn text(&self) -> String {
        let indent = " ".repeat(usize::from(self.indent) * INDENT_SPACES);
        let comment = self.comment();
        match (self.code.is_empty(), comment.is_empty()) {
            (true, _) => format!("{indent}{comment}"),
            (false, true) => format!("{indent}{}", self.code),
            (false, false) => format!("{indent}{}  {comment}", self.code),
        }
    }

    /// The comment after the code: the guard's glyph, its name and the note (`# ✖ ledger off:
    /// nothing is reserved`); empty for a skeleton line.
    pub fn comment(&self) -> String {
        let Some(mark) = self.guard else {
            return String::new();
        };
        let state = if mark.on { "" } else { " off" };
        if self.note.is_empty() {
            format!("# {} {}{state}", mark.glyph(), mark.guard.name())
        } else {
            format!("# {} {}{state}: {}", mark.glyph(), mark.guard.name(), self.note)
        }
    }

    /// The line as a panel draws it ([`PANEL_INDENT_SPACES`] per level): the code, or the
    /// comment for a line that is only one; a guard's comment goes on hover ([`Line::hover`]).
    pub fn shown(&self) -> String {
        let indent = " ".repeat(usize::from(self.indent) * PANEL_INDENT_SPACES);
        if self.code.is_empty() {
            // A comment line is a guard's: it names the guard, as the text form's comment does.
            let comment = self.comment();
            let words = comment.trim_start_matches("# ").trim_start_matches(['✔', '✖', ' ']);
            format!("{indent}# {words}")
        } else {
            format!("{indent}{}", self.code)
        }
    }

    /// What a guard's line says on hover: `✔ ledger: the outcome is written down under the
    /// key`; `None` for the skeleton's.
    pub fn hover(&self) -> Option<String> {
        self.guard.map(|_| self.comment().trim_start_matches("# ").to_owned())
    }

    /// Whether a worker at `phase` is on this line.
    pub fn runs(&self, phase: Phase) -> bool {
        self.phases.contains(&phase)
    }
}

/// The loop one level's runtime runs, under one set of guards.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Program {
    pub lines: Vec<Line>,
}

impl Program {
    /// The line (its index) a worker at `phase` is on; `None` when no line runs it (a phase
    /// this runtime never reaches).
    pub fn line_of(&self, phase: Phase) -> Option<usize> {
        self.lines.iter().position(|line| line.runs(phase))
    }

    /// How many lines run `phase`: exactly one for every phase a worker can be in.
    pub fn lines_running(&self, phase: Phase) -> usize {
        self.lines.iter().filter(|line| line.runs(phase)).count()
    }

    /// The lines (indices) of `guard`, on or off.
    pub fn lines_of(&self, guard: Guard) -> Vec<usize> {
        self.lines
            .iter()
            .enumerate()
            .filter(|(_, line)| line.guard.is_some_and(|mark| mark.guard == guard))
            .map(|(index, _)| index)
            .collect()
    }

    /// The guards that have lines here, in teaching order.
    pub fn guards_shown(&self) -> Vec<Guard> {
        Guard::EVERY
            .into_iter()
            .filter(|guard| !self.lines_of(*guard).is_empty())
            .collect()
    }

    /// The program as text, one numbered line each (`twice-sim play --code`).
    pub fn numbered_text(&self) -> String {
        let width = self.lines.len().to_string().len();
        self.lines
            .iter()
            .enumerate()
            .map(|(index, line)| format!("{:>width$}  {}\n", index + 1, line.text()))
            .collect()
    }
}

/// The loop `level`'s runtime runs under `guards`: the skeleton and, for every guard the level
/// gives something to do (and whose own needs are on), its line or the naive line it replaces.
pub fn program(level: &Level, guards: Guards) -> Program {
    let context = Context { level, guards };
    let mut lines = skeleton::lines(&context);
    for guard in Guard::EVERY {
        let code = guard_code(guard);
        if !(code.shown)(level) || !code.needs.iter().all(|needed| guards.is_on(*needed)) {
            continue;
        }
        let on = guards.is_on(guard);
        let mark = GuardMark { guard, on };
        for piece in (code.lines)(&context, on) {
            lines.push(line_of(piece, Some(mark)));
        }
    }
    // Stable: within a slot, lines keep the order they were listed in.
    lines.sort_by_key(|line| line.slot);
    Program { lines }
}

/// The program the simulation's workers run now: its level as it stands (a tool the player
/// declared is as declared) under its guards.
pub fn program_of(simulation: &Simulation) -> Program {
    program(simulation.level(), simulation.guards())
}

/// Everything a front end draws of the code now: the loop with a cursor per worker, the tools
/// as declared, and what the model and billing last did.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct CodeView {
    pub program: Program,
    pub tools: Vec<ToolLine>,
    pub cursors: Vec<Cursor>,
    pub beside: Beside,
}

/// The code view of the simulation as it stands.
pub fn view(simulation: &Simulation) -> CodeView {
    let program = program_of(simulation);
    CodeView {
        cursors: cursors(simulation, &program),
        tools: tool_code_under(simulation.level(), simulation.guards()),
        beside: beside(simulation),
        program,
    }
}

/// A guard's piece as a line of the program, marked with its guard (`None`: the skeleton's).
fn line_of(piece: Piece, guard: Option<GuardMark>) -> Line {
    debug_assert!(
        guard.is_some() || piece.note.is_empty(),
        "a skeleton line has no guard to explain"
    );
    Line {
        slot: piece.slot,
        indent: piece.indent,
        code: piece.code,
        note: piece.note,
        phases: piece.phases,
        guard,
    }
}

/// `guard`'s code: the lines its own file ([`crate::guards`]) gives the loop.
pub fn guard_code(guard: Guard) -> &'static GuardCode {
    &crate::guards::spec(guard).code
}

#[cfg(test)]
mod tests;
