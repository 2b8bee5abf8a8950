//! The tool's world as an operator's compensation meets it: what it holds for a call
//! ([`Effect`]), why it could not be looked up or undone, and the trait a driver implements
//! ([`CompensationTarget`]).

use crate::ledger::ExecutionRecord;

/// What the tool's world holds for a call, looked up by the call's idempotency key before
/// anything is undone.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Effect {
    /// The effect is there. `reference` is what the compensation acts on (a payment provider: the
    /// credit's id); `detail` says what was found.
    Found {
        /// What the compensation acts on (a payment provider: the credit's id).
        reference: String,
        /// What was found, in words.
        detail: String,
    },
    /// The world holds no effect under the key and is applying none. `detail` says what was
    /// asked and what was found, for the history.
    Absent {
        /// What was asked and found, for the history.
        detail: String,
    },
}

/// Why the effect could not be looked up, or could not be trusted to be the call's. In
/// every case nothing is undone and nothing is recorded.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LookupError {
    /// The world cannot find effects by key (a provider that ignores keys): nobody can tell
    /// what to undo, or whether there is anything (409 `cannot_look_up`).
    #[error("{0}")]
    CannotLookUp(String),
    /// A request with the key is still being applied: the answer is not settled yet
    /// (409 `effect_in_flight`; ask again shortly).
    #[error("{0}")]
    InFlight(String),
    /// What the world holds does not match one call (several effects under one key, or
    /// one unlike the call's arguments): a person decides (409 `effect_ambiguous`).
    #[error("{0}")]
    Ambiguous(String),
    /// The world could not be asked: unreachable, too slow, or an answer that makes no
    /// sense (502 `target_unavailable`).
    #[error("{0}")]
    Unavailable(String),
}

/// Why an undo was not done, in the tool's world's words (the record's history keeps them):
/// which kind tells whether anything may have moved.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum UndoError {
    /// The world refused the undo, or no longer knows the effect: nothing was undone.
    #[error("{0}")]
    Refused(String),
    /// The world answered with something that is not an undo: nothing is known to be undone.
    #[error("{0}")]
    NotAnUndo(String),
    /// No answer, or a server error: the undo may or may not have taken effect (an undo by
    /// reference is idempotent, so asking again is safe).
    #[error("{0}")]
    Unknown(String),
    /// The undo was never put to the world (its driver did not take it up in time).
    #[error("{0}")]
    NotAsked(String),
}

/// The tool's world as a compensation asks it: the system the tool changes (over HTTP, say), or
/// a simulation of it. Each call may block on the world; none is made with the ledger held.
pub trait CompensationTarget {
    /// Whether `tool` has a compensation at all.
    fn has_compensation(&self, tool: &str) -> bool;
    /// Looks the effect of `record`'s call up in the world, by its key. Changes nothing.
    ///
    /// # Errors
    ///
    /// [`LookupError`] when the world cannot be asked (it does not answer, or answers nonsense).
    fn find_effect(&mut self, record: &ExecutionRecord) -> Result<Effect, LookupError>;
    /// Undoes the effect found (`reference` from [`Effect::Found`]), idempotently: asked
    /// again for the same reference, the world moves nothing again. `Ok` says what was done
    /// (for the history), `Err` why it could not be done.
    ///
    /// # Errors
    ///
    /// [`UndoError`] when the effect could not be undone; nothing is recorded as compensated.
    fn undo(&mut self, record: &ExecutionRecord, reference: &str) -> Result<String, UndoError>;
}
