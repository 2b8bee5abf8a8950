//! The protocol's messages: one JSON object a line, each with a `type`. What Twice sends is
//! written here; what a runtime sends is read here, and anything else is refused with what
//! was wrong and the line itself, quoted (cut to [`QUOTE_CHARS_MAX`]).

use serde::{Deserialize, Serialize};

use twice_world::runtime::run::{Settled, Told, ToolCall};
use twice_world::runtime::tool::ToolDeclaration;
use twice_world::runtime::worker::Phase;

/// The protocol's version: a runtime says which it speaks in its `hello`, and Twice refuses
/// any other (the messages of another version may mean other things).
pub const PROTOCOL_VERSION: u32 = 1;
/// The longest line a runtime may send, in bytes.
pub const LINE_BYTES_MAX: usize = 64 * 1024;
/// How much of a bad line a report quotes, in characters.
pub const QUOTE_CHARS_MAX: usize = 200;
/// The most entries a model request's transcript may hold (a level's calls are far fewer).
pub const TRANSCRIPT_MAX: usize = 1_000;

/// What Twice sends a runtime.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ToRuntime {
    /// The first line to every process: who it is and the world it drives its run in.
    Hello(Box<Hello>),
    /// Go ahead with the step just marked. `now_ms`: the level's clock.
    Go { now_ms: u64 },
    /// The model's answer to a `model` request.
    Decision {
        now_ms: u64,
        #[serde(flatten)]
        decision: Decision,
    },
    /// A paused run's process: something that could settle the call it waits on changed;
    /// look at it again.
    Wake { now_ms: u64 },
}

/// Twice's `hello`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Hello {
    pub protocol: u32,
    /// This process's worker name (`w1`): the ledger's owner of what it reserves.
    pub worker: String,
    /// The run it drives.
    pub run: String,
    pub tenant: String,
    /// Started to recover the run after a crash (its checkpoint and ledger say where it was).
    pub recovering: bool,
    /// The node's ledger: a file for the runtime's own use, shared by every process of the node,
    /// empty when the level starts.
    pub ledger: String,
    /// The billing world this process's tools call: append an endpoint's path to it.
    pub billing: String,
    /// The level's tools, as declared.
    pub tools: Vec<ToolDeclaration>,
    /// The guards the level has on: what it asks of a runtime (one that can switch its guards,
    /// as Twice's own can, may claim exactly these).
    pub guards: Vec<String>,
    /// An attempt that gets no answer within this many of the level's milliseconds times out:
    /// Twice closes its connection then, so the runtime sees it drop with no answer.
    pub timeout_ms: u32,
    /// How long the runtime's HTTP client should wait for an answer, in real milliseconds: long,
    /// since Twice ends the attempts it means to time out itself.
    pub http_timeout_ms: u32,
    /// The lease a runtime that reclaims `started` calls puts on them (the level's).
    pub lease_ms: u32,
    /// Recoveries of a run that may fail before it is dead-lettered (the level's; none: no limit).
    pub recovery_attempts_max: Option<u32>,
    /// The level's clock.
    pub now_ms: u64,
}

/// The model's decision, as a `decision` line carries it.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "decision", rename_all = "snake_case")]
pub enum Decision {
    /// Make this tool call.
    Call { call: CallGiven },
    /// The run is over: nothing more to do.
    Done,
    /// The model gives up on the run: it ends failed.
    FailRun { reason: String },
}

/// A tool call as the model gives it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CallGiven {
    /// `c<n>`: the same id when the model is asked again from the same point.
    pub id: String,
    pub tool: String,
    pub arguments: serde_json::Value,
    /// What the call is for (`<run>/<item>`): send it as a credit's `intent` (billing records
    /// it so the checker counts effects per intent; billing's rules and your key never use it).
    pub intent: String,
}

impl CallGiven {
    pub fn of(run: &str, call: &ToolCall) -> CallGiven {
        CallGiven {
            id: call.id.clone(),
            tool: call.tool.to_string(),
            arguments: call.arguments.value().clone(),
            intent: format!("{run}/{}", call.item),
        }
    }
}

/// What a runtime sends Twice.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum FromRuntime {
    /// The answer to Twice's `hello`.
    Hello(RuntimeHello),
    /// About to take a step: waits for `go`.
    Mark(Mark),
    /// Asks the model what to do next: waits for `decision`.
    Model {
        /// What the model has been told about its calls, oldest first: the run's transcript as
        /// the runtime keeps it (in its checkpoint).
        #[serde(default)]
        transcript: Vec<ToldEntry>,
    },
}

/// A runtime's `hello`.
#[derive(Clone, Debug, PartialEq, Deserialize)]
pub struct RuntimeHello {
    pub protocol: u32,
    /// Its name and version, for reports.
    #[serde(default)]
    pub runtime: String,
    /// The guards it implements, by name: the expected money is the simulator's with exactly
    /// these on.
    pub guards: Vec<String>,
    /// The steps it marks besides `send` (which every runtime marks), by phase name.
    #[serde(default)]
    pub marks: Vec<String>,
}

/// A step about to be taken.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
pub struct Mark {
    /// The step, by phase name (`send`, `record outcome`, …).
    pub phase: String,
    /// The model's call id the step is about (`c1`).
    #[serde(default)]
    pub call: Option<String>,
    /// The idempotency key the runtime knows the call by.
    #[serde(default)]
    pub key: Option<String>,
    /// For `send`: the attempt's number, from 1.
    #[serde(default)]
    pub attempt: Option<u32>,
    /// For `record outcome`: the status it is about to record (`completed`, `failed`,
    /// `indeterminate`); for `exit`: the run's status.
    #[serde(default)]
    pub status: Option<String>,
}

/// One thing the model was told.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
pub struct ToldEntry {
    /// The call id it is about.
    pub call: String,
    /// `result`, `failed`, `did_not_take_effect` or `compensated`.
    pub told: ToldKind,
    /// The result, or why it failed; for a call an operator settled (`operator`), their reason.
    #[serde(default)]
    pub content: String,
    /// For `did_not_take_effect` and `compensated`: the operator who settled the call, when
    /// one did (absent otherwise, and from runtimes that do not say).
    #[serde(default)]
    pub operator: Option<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToldKind {
    Result,
    Failed,
    DidNotTakeEffect,
    Compensated,
}

impl ToldEntry {
    /// What the model heard, in the runtime's own terms.
    pub fn told(&self) -> Told {
        match self.told {
            ToldKind::Result => Told::Result {
                result: self.content.clone(),
            },
            ToldKind::Failed => Told::Failed {
                reason: self.content.clone(),
            },
            ToldKind::DidNotTakeEffect | ToldKind::Compensated => {
                let (settled, plain) = if self.told == ToldKind::Compensated {
                    (Settled::Compensated, Told::Compensated)
                } else {
                    (Settled::DidNotTakeEffect, Told::DidNotTakeEffect)
                };
                match &self.operator {
                    Some(operator) => Told::SettledByOperator {
                        settled,
                        operator: operator.clone(),
                        reason: self.content.clone(),
                    },
                    None => plain,
                }
            }
        }
    }
}

/// The phases a runtime may mark: every step of the simulator's runtime but the ones a real
/// process cannot meet (a late answer never reaches a client that gave up on it) or meets
/// otherwise (the model is asked with a `model` line, waiting is not a step).
pub fn markable(phase: Phase) -> bool {
    !matches!(
        phase,
        Phase::Start | Phase::ModelDecides | Phase::LogLateOutcome | Phase::WaitForAnswer | Phase::Parked
    )
}

/// Why a line from a runtime is not a message Twice can take.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum BadLine {
    #[error("a line that is not JSON ({detail}): {quoted}")]
    NotJson { detail: String, quoted: String },
    #[error("a JSON line with no \"type\" (every message has one: hello, mark or model): {quoted}")]
    NoType { quoted: String },
    #[error("a `{kind}` message Twice cannot read ({detail}): {quoted}")]
    Malformed {
        kind: String,
        detail: String,
        quoted: String,
    },
    #[error("a message of type `{kind}`, which protocol {PROTOCOL_VERSION} has not (hello, mark, model): {quoted}")]
    UnknownType { kind: String, quoted: String },
}

/// `text` cut to [`QUOTE_CHARS_MAX`] characters, in backquotes.
pub fn quote(text: &str) -> String {
    let trimmed = text.trim_end_matches(['\r', '\n']);
    let mut quoted: String = trimmed.chars().take(QUOTE_CHARS_MAX).collect();
    if trimmed.chars().count() > QUOTE_CHARS_MAX {
        quoted.push('…');
    }
    format!("`{quoted}`")
}

/// Reads one line a runtime sent.
pub fn parse_line(line: &str) -> Result<FromRuntime, BadLine> {
    let value: serde_json::Value = serde_json::from_str(line).map_err(|error| BadLine::NotJson {
        detail: error.to_string(),
        quoted: quote(line),
    })?;
    let Some(kind) = value.get("type").and_then(serde_json::Value::as_str).map(str::to_owned) else {
        return Err(BadLine::NoType { quoted: quote(line) });
    };
    if !matches!(kind.as_str(), "hello" | "mark" | "model") {
        return Err(BadLine::UnknownType {
            kind,
            quoted: quote(line),
        });
    }
    let message: FromRuntime = serde_json::from_value(value).map_err(|error| BadLine::Malformed {
        kind: kind.clone(),
        detail: error.to_string(),
        quoted: quote(line),
    })?;
    if let FromRuntime::Model { transcript } = &message
        && transcript.len() > TRANSCRIPT_MAX
    {
        return Err(BadLine::Malformed {
            kind,
            detail: format!(
                "a transcript of {} entries, more than {TRANSCRIPT_MAX}",
                transcript.len()
            ),
            quoted: quote(line),
        });
    }
    Ok(message)
}

/// One line for the runtime (no line break inside: JSON escapes them).
pub fn line_of(message: &ToRuntime) -> String {
    let mut line = serde_json::to_string(message).expect("Twice's messages serialize");
    line.push('\n');
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_runtime_s_messages_are_read_and_anything_else_is_refused_with_the_line_quoted() {
        let hello =
            parse_line(r#"{"type":"hello","protocol":1,"runtime":"x","guards":["ledger"],"marks":["reserve"]}"#)
                .expect("a hello");
        assert!(matches!(hello, FromRuntime::Hello(RuntimeHello { protocol: 1, .. })));
        let mark = parse_line(r#"{"type":"mark","phase":"send","call":"c1","key":"r1:c1","attempt":1,"extra":true}"#)
            .expect("unknown fields are ignored");
        assert!(matches!(mark, FromRuntime::Mark(Mark { attempt: Some(1), .. })));
        let model = parse_line(r#"{"type":"model","transcript":[{"call":"c1","told":"failed","content":"timeout"}]}"#)
            .expect("a model request");
        let FromRuntime::Model { transcript } = model else {
            panic!("a model request")
        };
        assert_eq!(
            transcript[0].told(),
            Told::Failed {
                reason: "timeout".into()
            }
        );

        let garbage = parse_line("hello there").expect_err("not JSON").to_string();
        assert!(garbage.contains("`hello there`"), "{garbage}");
        let untyped = parse_line(r#"{"phase":"send"}"#).expect_err("no type").to_string();
        assert!(untyped.contains(r#"`{"phase":"send"}`"#), "{untyped}");
        let unknown = parse_line(r#"{"type":"goodbye"}"#)
            .expect_err("unknown type")
            .to_string();
        assert!(unknown.contains("`goodbye`"), "{unknown}");
        let malformed = parse_line(r#"{"type":"mark","call":"c1"}"#)
            .expect_err("no phase")
            .to_string();
        assert!(
            malformed.contains("phase") && malformed.contains("`mark`"),
            "{malformed}"
        );
        let long = format!(r#"{{"type":"nonsense","pad":"{}"}}"#, "x".repeat(500));
        let cut = parse_line(&long).expect_err("unknown").to_string();
        assert!(cut.contains('…') && cut.len() < 400, "{cut}");
    }

    /// A runtime may say which operator settled a call (`operator`, their reason in
    /// `content`); one that does not is read as before.
    #[test]
    fn an_operators_settlement_is_read_with_who_and_why() {
        let model = parse_line(
            r#"{"type":"model","transcript":[
                {"call":"c1","told":"did_not_take_effect","operator":"ada","content":"billing shows nothing"},
                {"call":"c2","told":"compensated","operator":"bo","content":"order cancelled"},
                {"call":"c3","told":"did_not_take_effect"}]}"#,
        )
        .expect("a model request");
        let FromRuntime::Model { transcript } = model else {
            panic!("a model request")
        };
        let told: Vec<Told> = transcript.iter().map(ToldEntry::told).collect();
        assert_eq!(
            told,
            [
                Told::SettledByOperator {
                    settled: Settled::DidNotTakeEffect,
                    operator: "ada".into(),
                    reason: "billing shows nothing".into(),
                },
                Told::SettledByOperator {
                    settled: Settled::Compensated,
                    operator: "bo".into(),
                    reason: "order cancelled".into(),
                },
                Told::DidNotTakeEffect,
            ]
        );
    }

    #[test]
    fn twice_s_lines_are_one_json_object_each() {
        let line = line_of(&ToRuntime::Decision {
            now_ms: 32,
            decision: Decision::Call {
                call: CallGiven {
                    id: "c1".into(),
                    tool: "issue_credit".into(),
                    arguments: serde_json::json!({"account": "acct_ada", "amount_cents": 2500, "memo": "a\nb"}),
                    intent: "r1/0".into(),
                },
            },
        });
        assert_eq!(line.matches('\n').count(), 1, "{line}");
        let value: serde_json::Value = serde_json::from_str(&line).expect("JSON");
        assert_eq!(value["type"], "decision");
        assert_eq!(value["decision"], "call");
        assert_eq!(value["call"]["intent"], "r1/0");
        let done = line_of(&ToRuntime::Decision {
            now_ms: 1,
            decision: Decision::Done,
        });
        assert!(done.contains(r#""decision":"done""#), "{done}");
    }

    #[test]
    fn the_model_s_step_and_waiting_are_not_marks() {
        assert!(markable(Phase::Send) && markable(Phase::SaveCheckpoint) && markable(Phase::Exit));
        assert!(!markable(Phase::ModelDecides) && !markable(Phase::WaitForAnswer) && !markable(Phase::LogLateOutcome));
    }
}
