//! The loop's skeleton: the lines every runtime runs, whatever its guards — start, load the
//! checkpoint, the model decides, wait for the answer, back off, tell the model, exit. Every
//! other line is a guard's, from its own file ([`crate::guards`]).

use super::{Context, Line, Piece, Slot};
use crate::runtime::worker::Phase;

/// The skeleton's lines for this level (the timeout is the level's).
pub(super) fn lines(context: &Context<'_>) -> Vec<Line> {
    let timeout_ms = context.level.world.timeout_ms;
    [
        Piece::new(Slot::Header, 0, "def run(run_id):", &[Phase::Start]),
        Piece::new(
            Slot::Load,
            1,
            "state, version = ledger.load_checkpoint(run_id)",
            &[Phase::LoadCheckpoint],
        ),
        Piece::new(
            Slot::Person,
            1,
            "if state.unusable: return wait_for_a_person(run_id)",
            &[Phase::WaitForAPerson],
        ),
        Piece::new(Slot::Loop, 1, "while not state.finished:", &[]),
        Piece::new(Slot::Decide, 2, "call = model.decide(state)", &[Phase::ModelDecides]),
        Piece::new(Slot::MayRun, 2, "if record.may_run:", &[]),
        Piece::new(
            Slot::Wait,
            4,
            format!("answer = sent.result(timeout_ms={timeout_ms})"),
            &[Phase::WaitForAnswer],
        ),
        Piece::new(Slot::Retry, 4, "if answer is not TIMEOUT: break", &[]),
        Piece::new(Slot::Retry, 4, "sleep(backoff(attempt))", &[Phase::Backoff]),
        Piece::new(Slot::TellIf, 2, "if record.unknown:", &[]),
        Piece::new(Slot::TellElse, 2, "else: state.tell(record.result)", &[]),
        Piece::new(Slot::Exit, 1, "return", &[Phase::Exit]),
    ]
    .into_iter()
    .map(|piece| super::line_of(piece, None))
    .collect()
}
