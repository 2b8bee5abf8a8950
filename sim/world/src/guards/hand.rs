//! What a level's hand, model, tools and people can do to a run, as the guards' files weigh it
//! to say whether the level can put a guard to the test ([`super::GuardSpec::tested_by`]):
//! predictions offer a guard left on only when something here can make it matter.

use crate::level::CardKind::{
    self, CrashWorker, DeclareTool, DuplicateWorker, LoseRequest, LoseResponse, ModelCallsAgain, OperatorCompensate,
    OperatorResolve, SlowResponse, ToolFailsBeforeSending,
};
use crate::level::Level;
use crate::model::OnFailed;

/// What a level can do to a run, read from the level alone.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Hand {
    /// A card that makes an attempt end without an answer (a lost or slowed message), or one
    /// that declares a tool's attempts.
    pub timeouts: bool,
    /// A card that can leave a call unknown: a lost or slowed message, a crash, a twin.
    pub unknowns: bool,
    /// A second process on a run: a crash (and the recovery after it) or a twin.
    pub processes: bool,
    /// A call left `started` long enough for a lease to run out: a slowed answer, a crash, a twin.
    pub long_calls: bool,
    /// Someone acts on the ledger: the crew's operator cards, the level's honest operator or
    /// its auditor.
    pub operators: bool,
    /// A call made again: a whisper, a model that calls again when told "failed", or two
    /// identical calls in one run.
    pub calls_again: bool,
    /// A tool that declares a compensation (a reflex undo reads the ledger for what took effect).
    pub compensation: bool,
    /// A tool refuses before sending.
    pub refusals: bool,
}

impl Hand {
    /// What `level` can do.
    pub fn of(level: &Level) -> Hand {
        let holds = |cards: &[CardKind]| level.cards.iter().any(|allowance| cards.contains(&allowance.card));
        let calls_again = holds(&[ModelCallsAgain])
            || level.model.on_failed == OnFailed::CallAgain
            || level.runs.iter().any(|run| {
                run.calls.iter().enumerate().any(|(index, call)| {
                    run.calls[..index].iter().any(|earlier| {
                        (&earlier.tool, &earlier.account, earlier.amount_cents, &earlier.memo)
                            == (&call.tool, &call.account, call.amount_cents, &call.memo)
                    })
                })
            });
        Hand {
            timeouts: holds(&[LoseRequest, LoseResponse, SlowResponse, DeclareTool]),
            unknowns: holds(&[LoseRequest, LoseResponse, SlowResponse, CrashWorker, DuplicateWorker]),
            processes: holds(&[CrashWorker, DuplicateWorker]),
            long_calls: holds(&[SlowResponse, CrashWorker, DuplicateWorker]),
            operators: holds(&[OperatorResolve, OperatorCompensate])
                || level.honest_operator.is_some()
                || level.auditor.is_some(),
            calls_again,
            compensation: level.tools.iter().any(|tool| tool.compensation),
            refusals: holds(&[ToolFailsBeforeSending]),
        }
    }
}

/// A guard that is inert unless the level's tools or world ask for it: whether it can matter
/// at all is its `matters_in`, and where it can, any hand tests it.
pub(crate) fn any_hand(_: &Hand) -> bool {
    true
}
