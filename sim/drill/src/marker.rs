//! The lines a worker prints on standard output, one per event, so the drill can see where
//! each process is without reading its memory: which phase it is about to run, what an
//! attempt's answer was, which guard held, and how it ended.
//!
//! Tab-separated, one event a line: `phase<TAB>send<TAB>run-0001:c1`. A marker is printed
//! and flushed *before* its phase runs, so the last marker a killed process left behind
//! names the phase it died in.

use std::fmt;

/// How a worker process ended on its own.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EndKind {
    /// The run finished (completed or failed) or was already finished.
    Exited,
    /// A stale checkpoint save: another worker owns the run.
    StoodDown,
    /// Paused awaiting reconciliation; the worker left (`--exit-when-parked`).
    Parked,
    /// The run's stored state cannot be used: it waits for a person (the reason is in the
    /// ledger's run history).
    WaitsForPerson,
    /// The tool's world could not be reached, call after call: the worker stopped before
    /// making another, and leaves the run for a worker that can reach it.
    ToolUnreachable,
}

impl EndKind {
    pub fn name(self) -> &'static str {
        match self {
            EndKind::Exited => "exited",
            EndKind::StoodDown => "stood_down",
            EndKind::Parked => "parked",
            EndKind::WaitsForPerson => "waits_for_person",
            EndKind::ToolUnreachable => "tool_unreachable",
        }
    }

    fn parse(text: &str) -> Option<EndKind> {
        [
            EndKind::Exited,
            EndKind::StoodDown,
            EndKind::Parked,
            EndKind::WaitsForPerson,
            EndKind::ToolUnreachable,
        ]
        .into_iter()
        .find(|kind| kind.name() == text)
    }
}

/// One event a worker reports.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Marker {
    /// About to run this phase (the names of [`twice_world::runtime::worker::Command::phase_name`]).
    Phase { name: String, key: Option<String> },
    /// An attempt ended: `applied`, `repeat`, `rejected`, `balance`, `timed_out` or `not_attempted`.
    Answer { key: String, kind: String },
    /// A guard made a difference.
    Guard { guard: String, key: Option<String> },
    /// The process is about to exit on its own.
    End { kind: EndKind, detail: String },
}

/// The phases during which a call's request has left and its outcome is not yet in the
/// ledger: a process killed here dies in the middle of a tool call.
pub const IN_CALL_PHASES: [&str; 3] = ["send", "backoff", "record outcome"];

impl Marker {
    /// Reads one line; `None` for anything that is not a marker (a worker's other output).
    pub fn parse(line: &str) -> Option<Marker> {
        let mut fields = line.trim_end_matches(['\r', '\n']).split('\t');
        let tag = fields.next()?;
        let first = fields.next()?;
        let second = fields.next().filter(|text| !text.is_empty() && *text != "-");
        match tag {
            "phase" => Some(Marker::Phase {
                name: first.to_owned(),
                key: second.map(str::to_owned),
            }),
            "answer" => Some(Marker::Answer {
                key: first.to_owned(),
                kind: second?.to_owned(),
            }),
            "guard" => Some(Marker::Guard {
                guard: first.to_owned(),
                key: second.map(str::to_owned),
            }),
            "end" => Some(Marker::End {
                kind: EndKind::parse(first)?,
                detail: second.unwrap_or_default().to_owned(),
            }),
            _ => None,
        }
    }

    /// A process that died right after printing this was in the middle of a tool call.
    pub fn in_tool_call(&self) -> bool {
        match self {
            Marker::Phase { name, .. } => IN_CALL_PHASES.contains(&name.as_str()),
            Marker::Answer { .. } => true,
            Marker::Guard { .. } | Marker::End { .. } => false,
        }
    }

    /// The name of the moment a process died at, for the drill's count of kills by phase.
    pub fn moment(&self) -> String {
        match self {
            Marker::Phase { name, .. } => name.clone(),
            Marker::Answer { .. } => "answer received".into(),
            Marker::Guard { .. } => "guard held".into(),
            Marker::End { .. } => "exiting".into(),
        }
    }
}

/// Tabs and line breaks would split a marker; they become spaces.
fn clean(text: &str) -> String {
    text.replace(['\t', '\n', '\r'], " ")
}

impl fmt::Display for Marker {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Marker::Phase { name, key } => write!(
                formatter,
                "phase\t{}\t{}",
                clean(name),
                key.as_deref().map_or_else(|| "-".to_owned(), clean)
            ),
            Marker::Answer { key, kind } => write!(formatter, "answer\t{}\t{}", clean(key), clean(kind)),
            Marker::Guard { guard, key } => write!(
                formatter,
                "guard\t{}\t{}",
                clean(guard),
                key.as_deref().map_or_else(|| "-".to_owned(), clean)
            ),
            Marker::End { kind, detail } => write!(formatter, "end\t{}\t{}", kind.name(), clean(detail)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markers_round_trip_through_their_lines() {
        let markers = [
            Marker::Phase {
                name: "send".into(),
                key: Some("run-0001:c1".into()),
            },
            Marker::Phase {
                name: "load checkpoint".into(),
                key: None,
            },
            Marker::Answer {
                key: "run-0001:c1".into(),
                kind: "timed_out".into(),
            },
            Marker::Guard {
                guard: "ledger".into(),
                key: None,
            },
            Marker::End {
                kind: EndKind::Parked,
                detail: "awaiting run-0001:c1".into(),
            },
        ];
        for marker in markers {
            assert_eq!(Marker::parse(&marker.to_string()), Some(marker.clone()), "{marker}");
        }
    }

    #[test]
    fn other_lines_are_not_markers_and_tabs_in_details_do_not_split_them() {
        assert_eq!(Marker::parse("hello"), None);
        assert_eq!(Marker::parse("end\tvanished\t"), None);
        let marker = Marker::End {
            kind: EndKind::StoodDown,
            detail: "stale\tsave".into(),
        };
        assert_eq!(
            Marker::parse(&marker.to_string()),
            Some(Marker::End {
                kind: EndKind::StoodDown,
                detail: "stale save".into()
            })
        );
    }

    #[test]
    fn only_the_phases_between_send_and_recorded_outcome_are_mid_call() {
        let phase = |name: &str| Marker::Phase {
            name: name.into(),
            key: None,
        };
        assert!(phase("send").in_tool_call());
        assert!(phase("record outcome").in_tool_call());
        assert!(
            Marker::Answer {
                key: "k".into(),
                kind: "applied".into()
            }
            .in_tool_call()
        );
        assert!(!phase("reserve").in_tool_call());
        assert!(!phase("save checkpoint").in_tool_call());
        assert!(!phase("model decides").in_tool_call());
    }
}
