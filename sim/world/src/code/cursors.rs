//! A cursor per worker: the line of the program each worker is at, by the phase it runs next
//! (or waits in), in the worker's own colour and always with its name and a glyph, so two
//! cursors are told apart without colour. A crashed worker's cursor stays where it died,
//! struck; a finished one stays on its last line, dim. Beside the code: what the model last
//! decided and what billing last did, from the timeline.

use serde::Serialize;

use super::Program;
use crate::runtime::worker::Phase;
use crate::simulator::{Actor, Simulation, moment};

/// Worker colours (red, green, blue) by worker number, clear of the crew's gold: `w1` teal,
/// `w2` orange, then violet, lime, pink and sky; they repeat after six.
pub const WORKER_COLOURS: [[u8; 3]; 6] = [
    [94, 214, 214],
    [255, 160, 80],
    [190, 150, 255],
    [170, 220, 90],
    [255, 130, 180],
    [120, 180, 255],
];
/// The cursor's glyph by its state (live, crashed, finished), in egui's fonts and DejaVu Sans.
pub const WORKER_GLYPHS: [char; 3] = ['▶', '✖', '■'];

/// A worker's look: its colour, and the glyph of its cursor's state.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct WorkerLook {
    pub rgb: [u8; 3],
    pub glyph: char,
}

impl WorkerLook {
    /// The colour as CSS writes it: `#5ed6d6`.
    pub fn hex(self) -> String {
        let [red, green, blue] = self.rgb;
        format!("#{red:02x}{green:02x}{blue:02x}")
    }
}

/// Whether a cursor's worker is still running.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CursorState {
    /// Alive: it runs its line next, or waits there.
    Live,
    /// Killed (SIGKILL) on this line: the cursor stays, struck.
    Crashed,
    /// Exited, stood down or waiting for a person: its last line.
    Done,
}

impl CursorState {
    pub fn glyph(self) -> char {
        match self {
            CursorState::Live => WORKER_GLYPHS[0],
            CursorState::Crashed => WORKER_GLYPHS[1],
            CursorState::Done => WORKER_GLYPHS[2],
        }
    }

    pub fn word(self) -> &'static str {
        match self {
            CursorState::Live => "running",
            CursorState::Crashed => "crashed",
            CursorState::Done => "done",
        }
    }
}

/// One worker's cursor.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Cursor {
    pub worker: u32,
    /// `w1`.
    pub label: String,
    pub run: String,
    pub phase: Phase,
    /// The line it is on (an index into the program's lines); `None` only for a phase no line
    /// runs, which a test holds never happens.
    pub line: Option<usize>,
    pub state: CursorState,
    pub look: WorkerLook,
    /// Where it is, in words: `about to send`, `waiting for billing's answer`.
    pub moment: String,
    /// The call it is on, if any.
    pub key: Option<String>,
}

impl Cursor {
    /// `▶ w1`, `✖ w2`: the glyph and the name, as the gutter shows it.
    pub fn tag(&self) -> String {
        format!("{} {}", self.state.glyph(), self.label)
    }
}

/// The look of worker `w<number>`'s cursor in `state`.
pub fn worker_look(number: u32, state: CursorState) -> WorkerLook {
    let index = usize::try_from(number.saturating_sub(1)).unwrap_or(0) % WORKER_COLOURS.len();
    WorkerLook {
        rgb: WORKER_COLOURS[index],
        glyph: state.glyph(),
    }
}

/// Every worker's cursor on `program` (the program of this simulation, [`super::program_of`]),
/// in worker order.
pub fn cursors(simulation: &Simulation, program: &Program) -> Vec<Cursor> {
    simulation
        .workers()
        .into_iter()
        .map(|worker| {
            let state = if worker.crashed {
                CursorState::Crashed
            } else if !worker.alive || is_final(worker.phase) {
                CursorState::Done
            } else {
                CursorState::Live
            };
            Cursor {
                worker: worker.number,
                label: format!("w{}", worker.number),
                run: worker.run.to_string(),
                phase: worker.phase,
                line: program.line_of(worker.phase),
                state,
                look: worker_look(worker.number, state),
                moment: moment(worker.phase),
                key: worker.key,
            }
        })
        .collect()
}

/// A phase a worker ends on: after it, it does nothing more.
fn is_final(phase: Phase) -> bool {
    matches!(phase, Phase::Exit | Phase::StandDown | Phase::WaitForAPerson)
}

/// Something said beside the code, and the phase it was said in.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Said {
    pub phase: u32,
    pub text: String,
}

/// What shows beside the code: the model's last decision, billing's last move, and an
/// operator's last decision (the player's, a scripted one's, or one over the HTTP API).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Beside {
    pub model: Option<Said>,
    pub billing: Option<Said>,
    pub operator: Option<Said>,
}

/// The latest words of the model, billing and an operator on the timeline.
pub fn beside(simulation: &Simulation) -> Beside {
    let latest = |wanted: &dyn Fn(&Actor) -> bool| {
        simulation
            .timeline()
            .iter()
            .rev()
            .find(|entry| wanted(&entry.actor))
            .map(|entry| Said {
                phase: entry.phase,
                text: entry.text.clone(),
            })
    };
    Beside {
        model: latest(&|actor| *actor == Actor::Model),
        billing: latest(&|actor| *actor == Actor::Billing),
        operator: latest(&|actor| matches!(actor, Actor::Operator(_))),
    }
}
