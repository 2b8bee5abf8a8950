//! A run's state: what a checkpoint holds, the tool calls the model makes, and what
//! the model is told about them.

use serde::{Deserialize, Serialize};

use crate::ids::{Tenant, ToolName};

/// The arguments of a tool call: any JSON value the tool takes. Two calls have the same
/// arguments when their canonical text ([`Arguments::canonical`]) is the same: object keys
/// sorted, no whitespace. The ledger stores that text and refuses a key reused with other
/// arguments, so key order or spacing in what the model wrote never makes two calls differ.
///
/// ```
/// use twice_runtime::run::Arguments;
/// let one = Arguments::new(serde_json::json!({"to": "ada@example.com", "subject": "Hi"}));
/// let two: Arguments = serde_json::from_str(r#"{ "subject": "Hi", "to": "ada@example.com" }"#).unwrap();
/// assert_eq!(one.canonical(), r#"{"subject":"Hi","to":"ada@example.com"}"#);
/// assert_eq!(one, two);
/// ```
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Arguments(serde_json::Value);

impl Arguments {
    /// Wraps a JSON value.
    pub fn new(value: serde_json::Value) -> Arguments {
        Arguments(value)
    }

    /// Arguments from any serializable value (a tool's own typed arguments).
    ///
    /// # Errors
    ///
    /// serde's error when `value` cannot be JSON (a map whose keys are not strings, a failing
    /// `Serialize`).
    pub fn from_typed<T: Serialize>(value: &T) -> Result<Arguments, serde_json::Error> {
        serde_json::to_value(value).map(Arguments)
    }

    /// The arguments read as a tool's own typed arguments; the error names what does not fit.
    ///
    /// # Errors
    ///
    /// serde's error naming what does not fit `T`.
    pub fn to_typed<T: serde::de::DeserializeOwned>(&self) -> Result<T, serde_json::Error> {
        serde_json::from_value(self.0.clone())
    }

    /// The JSON value.
    pub fn value(&self) -> &serde_json::Value {
        &self.0
    }

    /// Canonical JSON: object keys sorted at every depth, no whitespace, so equal arguments
    /// give equal text whatever order they were written in.
    pub fn canonical(&self) -> String {
        let mut text = Vec::new();
        write_canonical(&self.0, &mut text);
        // serde_json writes UTF-8 and so does `write_canonical`; were a byte ever not, it is
        // replaced rather than a panic.
        String::from_utf8(text).unwrap_or_else(|error| String::from_utf8_lossy(error.as_bytes()).into_owned())
    }
}

impl PartialEq for Arguments {
    fn eq(&self, other: &Arguments) -> bool {
        self.canonical() == other.canonical()
    }
}

impl Eq for Arguments {}

/// Writes `value` as canonical JSON. Keys are sorted here rather than trusting the map's own
/// order: with serde_json's `preserve_order` feature (which any crate in a build may turn
/// on) a map keeps insertion order. Keys and scalars are written by serde_json straight into
/// `text` (the same bytes as their `to_string()`): canonical text is made for every call a
/// worker begins and performs, and a string per key and scalar was most of its cost.
fn write_canonical(value: &serde_json::Value, text: &mut Vec<u8>) {
    match value {
        serde_json::Value::Object(map) => {
            text.push(b'{');
            if map.keys().is_sorted() {
                write_entries(map.iter(), text);
            } else {
                let mut entries: Vec<(&String, &serde_json::Value)> = map.iter().collect();
                entries.sort_by(|left, right| left.0.cmp(right.0));
                write_entries(entries.into_iter(), text);
            }
            text.push(b'}');
        }
        serde_json::Value::Array(items) => {
            text.push(b'[');
            for (index, item) in items.iter().enumerate() {
                if index > 0 {
                    text.push(b',');
                }
                write_canonical(item, text);
            }
            text.push(b']');
        }
        scalar => write_json(scalar, text),
    }
}

/// An object's entries, already in key order, as `"key":value` separated by commas.
fn write_entries<'a>(entries: impl Iterator<Item = (&'a String, &'a serde_json::Value)>, text: &mut Vec<u8>) {
    for (index, (name, item)) in entries.enumerate() {
        if index > 0 {
            text.push(b',');
        }
        write_json(name, text);
        text.push(b':');
        write_canonical(item, text);
    }
}

/// One JSON string or scalar, compact, appended to `text`.
fn write_json<T: Serialize + ?Sized>(value: &T, text: &mut Vec<u8>) {
    // Writing to a Vec cannot fail, and a string or scalar always serializes.
    serde_json::to_writer(&mut *text, value).expect("a JSON string or scalar writes to memory");
}

/// One tool call the model made.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolCall {
    /// `c<n>`: numbered from the run's checkpointed counter, so a replay makes the same id.
    pub id: String,
    /// The declared tool it calls.
    pub tool: ToolName,
    /// Which step of the agent's task this call serves (`RunState::item` when it was made):
    /// the calls of one step are one intent, repeated or not.
    pub item: u32,
    /// Its arguments, canonical JSON in the ledger.
    pub arguments: Arguments,
}

/// What the model is told about a call.
///
/// Stored in checkpoints (`last_told`, `transcript`) by its variant's name: a variant added
/// later leaves the forms already stored as they were, so an old checkpoint still loads.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Told {
    /// The call took effect; here is its result.
    Result {
        /// The recorded result.
        result: String,
    },
    /// The call failed (or, by default, was unknown and reported as failed).
    Failed {
        /// Why.
        reason: String,
    },
    /// Settled after a pause, not by an operator (another worker's reconcile hook, say): it
    /// did not take effect.
    DidNotTakeEffect,
    /// Settled after a pause, not by an operator: it took effect and was compensated.
    Compensated,
    /// Settled after a pause by an operator: what they decided, who they are and why, as the
    /// call's history keeps it — so an agent can say "billing shows nothing; ops (ada)
    /// settled it failed: no credit under the key".
    SettledByOperator {
        /// What stands of the call by the operator's decision.
        settled: Settled,
        /// Who decided (the history line's actor).
        operator: String,
        /// Why, in the operator's words.
        reason: String,
    },
}

/// What an operator's settlement leaves standing of a call ([`Told::SettledByOperator`]). A
/// call an operator resolved `completed` is told as [`Told::Result`]: its result is what the
/// model needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Settled {
    /// Resolved `failed` (or nothing was found to compensate): it did not take effect.
    DidNotTakeEffect,
    /// It took effect and the operator had it compensated (`compensating` while the undo is
    /// being confirmed, `compensated` once it is).
    Compensated,
}

impl Told {
    /// True when the model would see nothing stand from its call.
    pub fn nothing_stands(&self) -> bool {
        !matches!(self, Told::Result { .. })
    }

    /// True when the call took effect and was undone, whoever decided it.
    pub fn compensated(&self) -> bool {
        matches!(
            self,
            Told::Compensated
                | Told::SettledByOperator {
                    settled: Settled::Compensated,
                    ..
                }
        )
    }

    /// True when the call was settled as not having taken effect, whoever decided it (a call
    /// that failed on its own is [`Told::Failed`]).
    pub fn did_not_take_effect(&self) -> bool {
        matches!(
            self,
            Told::DidNotTakeEffect
                | Told::SettledByOperator {
                    settled: Settled::DidNotTakeEffect,
                    ..
                }
        )
    }

    /// The operator who settled the call and their reason, when one did.
    pub fn operator_decision(&self) -> Option<(&str, &str)> {
        match self {
            Told::SettledByOperator { operator, reason, .. } => Some((operator, reason)),
            _ => None,
        }
    }
}

/// A run's status, as its checkpoint records it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum RunStatus {
    /// Driven by a worker (or waiting for one after a crash).
    Running,
    /// `on_indeterminate: pause`: waiting for this key to be settled.
    AwaitingReconciliation {
        /// The call it waits on.
        key: String,
    },
    /// The model is done: every step of the run's task is over.
    Completed,
    /// The run ended failed, for this reason.
    Failed {
        /// Why.
        reason: String,
    },
    /// Its recoveries failed as often as declared (`recovery_attempts_max`): no worker drives
    /// it until an operator resumes it, when it goes back to `previous`.
    DeadLettered {
        /// Why, in words.
        reason: String,
        /// The status it resumes as.
        previous: Box<RunStatus>,
        /// The tenant whose run it is (the operator API lists it only to that tenant's operators).
        tenant: Tenant,
    },
}

impl RunStatus {
    /// The status as the ledger stores it (`awaiting_reconciliation`).
    pub fn name(&self) -> &'static str {
        match self {
            RunStatus::Running => "running",
            RunStatus::AwaitingReconciliation { .. } => "awaiting_reconciliation",
            RunStatus::Completed => "completed",
            RunStatus::Failed { .. } => "failed",
            RunStatus::DeadLettered { .. } => "dead_lettered",
        }
    }

    /// Stopped until an operator resumes it (not over: it resumes where it stopped).
    pub fn is_dead_lettered(&self) -> bool {
        matches!(self, RunStatus::DeadLettered { .. })
    }

    /// Over for good: completed or failed. A paused or dead-lettered run is not.
    pub fn is_terminal(&self) -> bool {
        matches!(self, RunStatus::Completed | RunStatus::Failed { .. })
    }
}

/// The most entries a transcript keeps (a limit on everything).
pub const TRANSCRIPT_MAX: usize = 256;

/// What a checkpoint holds. Serialized as JSON into `run_checkpoints.state`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunState {
    /// Where the run stands.
    pub status: RunStatus,
    /// The step of its task the agent is working on, counted from 0: the model moves it on
    /// (`execution::next_call`, `execution::moved_on`) when it has what it needed from a step.
    pub item: u32,
    /// Calls made for this item so far.
    pub calls_for_item: u32,
    /// The number of the next tool call id (`c<n>`).
    pub next_call_number: u32,
    /// What the model was last told about the current item, if anything.
    pub last_told: Option<Told>,
    /// The call a paused run waits on.
    pub pending: Option<ToolCall>,
    /// The other calls of a batch the run waits on after `pending`, in the model's order:
    /// each is waited on in turn once the one before is settled. Absent in older checkpoints.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pending_calls: Vec<ToolCall>,
    /// What the model has been told, oldest first, by call id: at most [`TRANSCRIPT_MAX`]
    /// entries, the oldest dropped first (an agent that needs its whole history keeps it in
    /// `application`).
    pub transcript: Vec<(String, Told)>,
    /// The calls the model was told took effect, oldest first: what a naive runtime undoes
    /// when the run fails (guard `no_reflex_compensation` off). Absent in older checkpoints.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub took_effect: Vec<ToolCall>,
    /// The application's own state, opaque to the runtime: whatever the agent puts here with
    /// a decision is saved in the run's checkpoint with it, and handed back (in the state the
    /// model is asked with) when a recovered run is loaded after a crash. `null` until the
    /// application sets it; absent in older checkpoints.
    #[serde(default, skip_serializing_if = "serde_json::Value::is_null")]
    pub application: serde_json::Value,
    /// The tenant whose run it is, written by the executor when it saves the run of a tenant
    /// other than the default one; a worker of another tenant is refused this run
    /// ([`crate::ledger::LedgerError::RunOfAnotherTenant`]). Absent for the default tenant (and
    /// in older checkpoints, read as the default tenant's), so a run without tenants saves
    /// the same bytes as before.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tenant: Option<Tenant>,
}

impl Default for RunState {
    fn default() -> Self {
        RunState {
            status: RunStatus::Running,
            item: 0,
            calls_for_item: 0,
            next_call_number: 1,
            last_told: None,
            pending: None,
            pending_calls: Vec::new(),
            transcript: Vec::new(),
            took_effect: Vec::new(),
            application: serde_json::Value::Null,
            tenant: None,
        }
    }
}

/// A checkpoint's state that is not a run state (written by something else, or damaged).
#[derive(Debug, thiserror::Error)]
#[error("checkpoint state does not parse: {0}")]
pub struct UnparsableState(#[source] pub serde_json::Error);

impl RunState {
    /// The state as the checkpoint stores it.
    ///
    /// # Panics
    ///
    /// Never: a run state is text, numbers and JSON values, which serde_json always writes
    /// (the `expect` states that, it is not an input check).
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("run state serializes")
    }

    /// A stored state; `Err` says why it does not parse.
    ///
    /// # Errors
    ///
    /// [`UnparsableState`] with serde's error when the text is not a run state.
    pub fn from_json(text: &str) -> Result<RunState, UnparsableState> {
        serde_json::from_str(text).map_err(UnparsableState)
    }

    /// Records what the model was told about `call`.
    pub fn tell(&mut self, call: &ToolCall, told: Told) {
        if self.transcript.len() >= TRANSCRIPT_MAX {
            self.transcript.remove(0);
        }
        self.transcript.push((call.id.clone(), told.clone()));
        if matches!(told, Told::Result { .. }) && !self.took_effect.iter().any(|done| done.id == call.id) {
            if self.took_effect.len() >= TRANSCRIPT_MAX {
                self.took_effect.remove(0);
            }
            self.took_effect.push(call.clone());
        }
        self.last_told = Some(told);
    }
}

/// The model's decision.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Decision {
    /// Make this tool call.
    Call(ToolCall),
    /// Make these tool calls concurrently (a provider's parallel tool calls): each its own
    /// key, reservation, send and outcome; the checkpoint is saved once all are told.
    Calls(crate::batch::Batch),
    /// The run is over: it is saved `completed` and the worker exits. (To go on to the next
    /// item, make its first call with a state moved on: [`crate::execution::moved_on`].)
    Done,
    /// The model gives up on the run (its policy `on_failed: fail_run`): the run ends failed.
    FailRun {
        /// Why, in words.
        reason: String,
    },
}

#[cfg(test)]
mod tests {
    use super::Arguments;

    /// Canonical text is written straight into bytes; it must stay the text the old way made,
    /// each key and scalar through its own `to_string()` (the ledger compares stored texts).
    #[test]
    fn canonical_text_is_each_part_as_serde_json_writes_it() {
        fn by_parts(value: &serde_json::Value) -> String {
            match value {
                serde_json::Value::Object(map) => {
                    let mut entries: Vec<_> = map.iter().collect();
                    entries.sort_by(|left, right| left.0.cmp(right.0));
                    let parts: Vec<String> = entries
                        .into_iter()
                        .map(|(name, item)| format!("{}:{}", serde_json::Value::String(name.clone()), by_parts(item)))
                        .collect();
                    format!("{{{}}}", parts.join(","))
                }
                serde_json::Value::Array(items) => {
                    format!("[{}]", items.iter().map(by_parts).collect::<Vec<_>>().join(","))
                }
                scalar => scalar.to_string(),
            }
        }
        let values = [
            serde_json::json!({"zeta": 1, "alpha": [true, null, -2.5, "x"], "mid": {"b": "q\"uote\\", "a": "tab\tnew\nline é ✓"}}),
            serde_json::json!([{"b": 1, "a": 2}, [], {}, "", 18446744073709551615u64, -9007199254740993i64]),
            serde_json::json!("\u{1}control"),
            serde_json::json!(null),
            serde_json::json!({}),
        ];
        for value in values {
            let arguments = Arguments::new(value.clone());
            assert_eq!(arguments.canonical(), by_parts(&value), "{value}");
        }
        let written: Arguments = serde_json::from_str(r#"{ "b": {"y": 1, "x": [2, 1]}, "a": "é" }"#).expect("JSON");
        assert_eq!(written.canonical(), r#"{"a":"é","b":{"x":[2,1],"y":1}}"#);
    }
}
