//! The code panel the browser draws: the runtime's loop as this level runs it with a cursor
//! per worker, Penny's tools as declared, and what the model and billing last did. Every line,
//! cursor and word comes from [`twice_world::code`] (the game draws the same); the page only
//! lays them out, and sends a line's number back to aim a crash there.

use serde::Serialize;

use super::super::game::Game;
use twice_world::code::{self, Beside, Cursor, CursorState, Line, ToolLine};
use twice_world::level::CardKind;
use twice_world::simulator::Simulation;

/// The code panel.
#[derive(Clone, Debug, Serialize)]
pub struct CodeView {
    /// What the code is: the runtime's logic written for reading, and where the real Rust is.
    pub about: &'static str,
    pub lines: Vec<CodeLineView>,
    pub tools: Vec<ToolLine>,
    pub beside: Beside,
    /// A crash can be aimed at a line now: a Crash a worker card is left and the level runs.
    pub can_aim: bool,
    /// The workers a crash can be aimed at (running), in order.
    pub workers: Vec<CursorView>,
}

/// One line of the loop.
#[derive(Clone, Debug, Serialize)]
pub struct CodeLineView {
    /// From 1.
    pub number: usize,
    /// Indented as the panel shows it; a line that is only a comment shows the comment.
    pub text: String,
    /// The guard it is a line of: its own (on) or the naive line it replaces (off).
    pub mark: Option<MarkView>,
    /// A guard's comment: `✔ ledger: …`.
    pub hover: Option<String>,
    /// The phases it runs, by name.
    pub phases: Vec<&'static str>,
    /// A crash can be aimed here (it runs a phase).
    pub aimable: bool,
    pub cursors: Vec<CursorView>,
    /// Workers a crash is aimed at this line for.
    pub aims: Vec<u32>,
}

/// A guard's mark on a line: a glyph and the guard, never a colour alone.
#[derive(Clone, Debug, Serialize)]
pub struct MarkView {
    pub glyph: String,
    pub guard: &'static str,
    pub on: bool,
}

/// A worker's cursor.
#[derive(Clone, Debug, Serialize)]
pub struct CursorView {
    pub worker: u32,
    pub label: String,
    /// `▶ w1`, `✖ w2`.
    pub tag: String,
    pub state: CursorState,
    /// The worker's colour (CSS): always beside its name and glyph.
    pub colour: String,
    /// `about to send`, `waiting for billing's answer`.
    pub moment: String,
}

fn cursor_view(cursor: &Cursor) -> CursorView {
    CursorView {
        worker: cursor.worker,
        label: cursor.label.clone(),
        tag: cursor.tag(),
        state: cursor.state,
        colour: cursor.look.hex(),
        moment: cursor.moment.clone(),
    }
}

fn line_view(index: usize, line: &Line, cursors: &[Cursor], aims: &[(u32, usize)]) -> CodeLineView {
    CodeLineView {
        number: index + 1,
        text: line.shown(),
        mark: line.guard.map(|mark| MarkView {
            glyph: mark.glyph().to_string(),
            guard: mark.guard.name(),
            on: mark.on,
        }),
        hover: line.hover(),
        phases: line.phases.iter().map(|phase| phase.name()).collect(),
        aimable: !line.phases.is_empty(),
        cursors: cursors
            .iter()
            .filter(|cursor| cursor.line == Some(index))
            .map(cursor_view)
            .collect(),
        aims: aims
            .iter()
            .filter(|(_, line)| *line == index)
            .map(|(worker, _)| *worker)
            .collect(),
    }
}

/// The code panel of `game` as it stands.
pub fn code_view(game: &Game, simulation: &Simulation) -> CodeView {
    let view = code::view(simulation);
    let aims = game.crash_aims().lines_in(&view.program);
    let crash_left = simulation
        .hand()
        .get(&CardKind::CrashWorker)
        .is_some_and(|left| *left > 0);
    CodeView {
        about: code::ABOUT,
        lines: view
            .program
            .lines
            .iter()
            .enumerate()
            .map(|(index, line)| line_view(index, line, &view.cursors, &aims))
            .collect(),
        can_aim: crash_left && !simulation.is_over(),
        workers: view
            .cursors
            .iter()
            .filter(|cursor| cursor.state == CursorState::Live)
            .map(cursor_view)
            .collect(),
        tools: view.tools,
        beside: view.beside,
    }
}

/// The code in the debrief: the lines of the guards that decided the run, and the fix as a
/// diff (this run's lines struck, the other run's added, unchanged lines around them).
#[derive(Clone, Debug, Serialize)]
pub struct DebriefCodeView {
    /// The lines of the deciding guards in this run's program, as the level screen numbers them.
    pub decided: Vec<CodeLineView>,
    pub fix: FixView,
}

/// A diff of the program with the guards of the debrief's first deciding line switched.
#[derive(Clone, Debug, Serialize)]
pub struct FixView {
    /// What the diff is: "with write_retry_rule on, the loop reads:".
    pub caption: String,
    pub lines: Vec<FixLineView>,
}

/// A line of the diff, or how many unchanged lines are left out.
#[derive(Clone, Debug, Serialize)]
pub struct FixLineView {
    /// `same`, `removed` or `added`.
    pub change: Option<code::Change>,
    /// ` `, `-` or `+`.
    pub sign: String,
    pub text: String,
    pub mark: Option<MarkView>,
    pub hover: Option<String>,
    /// Unchanged lines left out here (then the rest is empty).
    pub gap: Option<usize>,
}

/// Unchanged lines shown around each change of the fix.
const FIX_CONTEXT_LINES: usize = 1;

/// The debrief's code, when guards decided the run (`None` when none did: an operator, billing).
pub fn debrief_code(simulation: &Simulation, told: &twice_world::debrief::Debrief) -> Option<DebriefCodeView> {
    let deciding = told.deciding_guards();
    if deciding.is_empty() {
        return None;
    }
    let program = code::program_of(simulation);
    let decided = program
        .lines
        .iter()
        .enumerate()
        .filter(|(_, line)| line.guard.is_some_and(|mark| deciding.contains(&mark.guard)))
        .map(|(index, line)| line_view(index, line, &[], &[]))
        .collect();
    // The diff is one run the debrief tells (the first line that decided), never every
    // deciding guard switched at once: each decided alone, and together is a run nobody saw.
    let fix = code::fix(simulation.level(), simulation.guards(), &told.fix_guards(None));
    let lines = fix
        .excerpt(FIX_CONTEXT_LINES)
        .into_iter()
        .map(|piece| match piece {
            code::Excerpt::Gap { lines } => FixLineView {
                change: None,
                sign: String::new(),
                text: String::new(),
                mark: None,
                hover: None,
                gap: Some(lines),
            },
            code::Excerpt::Line(diff) => FixLineView {
                change: Some(diff.change),
                sign: diff.change.sign().to_string(),
                text: diff.line.shown(),
                mark: diff.line.guard.map(|mark| MarkView {
                    glyph: mark.glyph().to_string(),
                    guard: mark.guard.name(),
                    on: mark.on,
                }),
                hover: diff.line.hover(),
                gap: None,
            },
        })
        .collect();
    Some(DebriefCodeView {
        decided,
        fix: FixView {
            caption: fix.caption.clone(),
            lines,
        },
    })
}
