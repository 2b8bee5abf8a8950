//! Several tool calls in one model turn (a provider's "parallel tool calls"): a [`Batch`].
//!
//! Each call of a batch is a call of its own: its own id, its own key `<run_id>:<call_id>`,
//! its own reservation, send and outcome. The worker reserves and sends them one after another
//! without waiting for an answer in between, takes their answers in whatever order they come,
//! and saves the run's checkpoint once, after the last of them is told. A crash in between
//! redoes nothing that finished: the model asked again from the last checkpoint makes the same
//! batch (ids come from the run's counter), the finished calls come back from the ledger, and
//! the unfinished ones meet their own records (unknown: looked up or waited on, never resent).
//!
//! A batch is checked when it is made ([`Batch::new`], and when one is read from JSON), so the
//! worker never meets an empty batch, two calls with one id, or more calls than
//! [`BATCH_CALLS_MAX`].

use serde::{Deserialize, Serialize};

use crate::run::ToolCall;

/// The most calls one batch holds. Why a limit: every call of a batch is in flight at once,
/// each with its request, timer and ledger record; a model that asks for more than this in one
/// turn is far outside what any provider returns (they cap parallel calls well below it), and
/// is refused rather than flooding the other system.
pub const BATCH_CALLS_MAX: usize = 16;

/// Why a batch was refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum BatchError {
    /// A batch with no call: make no decision of it (`Done` ends a run).
    #[error("a batch of tool calls holds at least one call, and this one holds none")]
    Empty,
    /// Two calls of the batch share an id, so they would share a key and one would be taken
    /// for the other's replay.
    #[error(
        "call id `{id}` is used twice in one batch (calls {first} and {second}, counted from 1): each call of a batch needs its own id"
    )]
    DuplicateCallId {
        /// The id used twice.
        id: String,
        /// The first call with it, counted from 1.
        first: usize,
        /// The second call with it, counted from 1.
        second: usize,
    },
    /// The run's call or item counter is at its limit: no more calls can be numbered.
    #[error("the run's call counter is at its limit: no more calls can be numbered")]
    CounterAtLimit,
    /// More calls than [`BATCH_CALLS_MAX`].
    #[error("a batch holds at most {max} calls, and this one holds {calls}")]
    TooMany {
        /// The calls given.
        calls: usize,
        /// The limit, [`BATCH_CALLS_MAX`].
        max: usize,
    },
}

/// Tool calls the model made in one turn, to run concurrently: at least one, at most
/// [`BATCH_CALLS_MAX`], each id once. A batch of one is the same as [`crate::run::Decision::Call`].
///
/// ```
/// use twice_runtime::batch::{Batch, BatchError};
/// use twice_runtime::run::{Arguments, ToolCall};
/// let call = |id: &str| ToolCall {
///     id: id.into(),
///     tool: "issue_credit".into(),
///     item: 0,
///     arguments: Arguments::new(serde_json::json!({"cents": 2500})),
/// };
/// assert_eq!(Batch::new(vec![call("c1"), call("c2")]).map(|batch| batch.len()), Ok(2));
/// assert!(matches!(Batch::new(vec![call("c1"), call("c1")]), Err(BatchError::DuplicateCallId { .. })));
/// assert_eq!(Batch::new(Vec::new()), Err(BatchError::Empty));
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "Vec<ToolCall>", into = "Vec<ToolCall>")]
pub struct Batch(Vec<ToolCall>);

impl Batch {
    /// A batch of `calls`, in the model's order.
    ///
    /// # Errors
    ///
    /// [`BatchError`]: no call, an id used twice, or more than [`BATCH_CALLS_MAX`] calls.
    pub fn new(calls: Vec<ToolCall>) -> Result<Batch, BatchError> {
        if calls.is_empty() {
            return Err(BatchError::Empty);
        }
        if calls.len() > BATCH_CALLS_MAX {
            return Err(BatchError::TooMany {
                calls: calls.len(),
                max: BATCH_CALLS_MAX,
            });
        }
        for (second, call) in calls.iter().enumerate() {
            if let Some(first) = calls[..second].iter().position(|earlier| earlier.id == call.id) {
                return Err(BatchError::DuplicateCallId {
                    id: call.id.clone(),
                    first: first + 1,
                    second: second + 1,
                });
            }
        }
        Ok(Batch(calls))
    }

    /// The calls, in the model's order.
    pub fn calls(&self) -> &[ToolCall] {
        &self.0
    }

    /// How many calls (at least 1).
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Never: a batch holds at least one call (for clippy's `len_without_is_empty`).
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The calls, taken.
    pub fn into_calls(self) -> Vec<ToolCall> {
        self.0
    }
}

impl TryFrom<Vec<ToolCall>> for Batch {
    type Error = BatchError;

    fn try_from(calls: Vec<ToolCall>) -> Result<Batch, BatchError> {
        Batch::new(calls)
    }
}

impl From<Batch> for Vec<ToolCall> {
    fn from(batch: Batch) -> Vec<ToolCall> {
        batch.0
    }
}
