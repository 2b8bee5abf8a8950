//! What the API sends: records, their history, pages, and the opaque cursor.

use serde::Serialize;
use serde_json::Value;

use crate::ledger::{ExecutionRecord, HistoryEntry};
use crate::runtime::rules::Status;

/// The most history entries one answer carries; the newest are kept, since the
/// decisions an operator acts on come last.
pub const HISTORY_ENTRIES_MAX: usize = 1_000;

/// A record as the API shows it. `arguments` and `result` are JSON the tools wrote,
/// sent as JSON (a stored text that is not JSON is sent as a string).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RecordView {
    pub key: String,
    pub tenant: String,
    pub run_id: String,
    pub tool_call_id: String,
    pub tool: String,
    pub side_effect: &'static str,
    pub arguments: Value,
    pub status: Status,
    pub attempts: u32,
    pub result: Option<Value>,
    pub owner: String,
    pub created_at_ms: u64,
    pub updated_at_ms: u64,
    pub lease_expires_at_ms: Option<u64>,
}

/// Text a tool stored as JSON, as JSON; anything else as a JSON string.
pub fn stored_json(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.to_owned()))
}

impl From<ExecutionRecord> for RecordView {
    fn from(record: ExecutionRecord) -> RecordView {
        RecordView {
            key: record.key.to_string(),
            tenant: record.tenant,
            run_id: record.run_id,
            tool_call_id: record.tool_call_id,
            tool: record.tool,
            side_effect: record.side_effect.name(),
            arguments: stored_json(&record.arguments),
            status: record.status,
            attempts: record.attempts,
            result: record.result.as_deref().map(stored_json),
            owner: record.owner,
            created_at_ms: record.created_at_ms,
            updated_at_ms: record.updated_at_ms,
            lease_expires_at_ms: record.lease_expires_at_ms,
        }
    }
}

/// One line of a record's append-only history.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct HistoryView {
    pub id: u64,
    pub at_ms: u64,
    pub actor: String,
    pub event: String,
    pub from_status: Option<Status>,
    pub to_status: Option<Status>,
    pub reason: Option<String>,
    pub detail: Option<String>,
}

impl From<HistoryEntry> for HistoryView {
    fn from(entry: HistoryEntry) -> HistoryView {
        HistoryView {
            id: entry.id,
            at_ms: entry.at_ms,
            actor: entry.actor,
            event: entry.event.name().to_owned(),
            from_status: entry.from_status,
            to_status: entry.to_status,
            reason: entry.reason,
            detail: entry.detail,
        }
    }
}

/// A record with its history: the answer to a read, a resolve and a compensate.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct DetailView {
    pub record: RecordView,
    pub history: Vec<HistoryView>,
    /// True when older entries were left out (more than [`HISTORY_ENTRIES_MAX`]).
    pub history_truncated: bool,
}

impl DetailView {
    pub fn new(record: ExecutionRecord, mut history: Vec<HistoryEntry>) -> DetailView {
        let history_truncated = history.len() > HISTORY_ENTRIES_MAX;
        if history_truncated {
            history.drain(..history.len() - HISTORY_ENTRIES_MAX);
        }
        DetailView {
            record: record.into(),
            history: history.into_iter().map(HistoryView::from).collect(),
            history_truncated,
        }
    }
}

/// One page of a listing.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PageView {
    pub items: Vec<RecordView>,
    /// Pass as `cursor` to get the next page; `null` on the last page.
    pub next_cursor: Option<String>,
}

/// Where a page ends: the (updated_at_ms, key) of its last record, the ledger's order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cursor {
    pub updated_at_ms: u64,
    pub key: String,
}

/// Cursors start with this, so a cursor of a later format can be told apart.
const CURSOR_PREFIX: &str = "c1";
/// The longest cursor this server issues (a key has at most 200 bytes).
pub const CURSOR_CHARS_MAX: usize = CURSOR_PREFIX.len() + 2 * (20 + 1 + 200);

impl Cursor {
    /// Hexadecimal, so it travels in a query string unescaped and is plainly not for
    /// reading: callers pass it back as they got it.
    pub fn encode(&self) -> String {
        let plain = format!("{}:{}", self.updated_at_ms, self.key);
        let mut text = String::with_capacity(CURSOR_PREFIX.len() + plain.len() * 2);
        text.push_str(CURSOR_PREFIX);
        for byte in plain.bytes() {
            text.push_str(&format!("{byte:02x}"));
        }
        text
    }

    pub fn decode(text: &str) -> Result<Cursor, String> {
        let refuse = || format!("cursor `{}` is not one this server issued", shorten(text));
        if text.len() > CURSOR_CHARS_MAX || !text.is_ascii() {
            return Err(refuse());
        }
        let digits = text.strip_prefix(CURSOR_PREFIX).ok_or_else(refuse)?;
        if digits.len() % 2 != 0 {
            return Err(refuse());
        }
        let bytes = (0..digits.len())
            .step_by(2)
            .map(|start| u8::from_str_radix(&digits[start..start + 2], 16))
            .collect::<Result<Vec<u8>, _>>()
            .map_err(|_| refuse())?;
        let plain = String::from_utf8(bytes).map_err(|_| refuse())?;
        let (milliseconds, key) = plain.split_once(':').ok_or_else(refuse)?;
        let updated_at_ms = milliseconds.parse::<u64>().map_err(|_| refuse())?;
        crate::runtime::key::IdempotencyKey::parse(key).map_err(|_| refuse())?;
        Ok(Cursor {
            updated_at_ms,
            key: key.to_owned(),
        })
    }
}

/// At most 80 characters of something a caller sent, for quoting it back in an error.
pub fn shorten(text: &str) -> String {
    const SHOWN_CHARS_MAX: usize = 80;
    if text.chars().count() <= SHOWN_CHARS_MAX {
        text.to_owned()
    } else {
        format!("{}…", text.chars().take(SHOWN_CHARS_MAX).collect::<String>())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursors_round_trip() {
        for (updated_at_ms, key) in [(0, "r1:c1"), (u64::MAX, "run:é:c9"), (35, "h:00ff")] {
            let cursor = Cursor {
                updated_at_ms,
                key: key.to_owned(),
            };
            let text = cursor.encode();
            assert!(text.len() <= CURSOR_CHARS_MAX);
            assert_eq!(Cursor::decode(&text), Ok(cursor));
        }
    }

    #[test]
    fn foreign_cursors_are_refused() {
        let too_long = format!("c1{}", "61".repeat(300));
        for text in [
            "",
            "c1",
            "c1zz",
            "c16",
            "x1313a72",
            "c13a72313a6331",
            "c1313a",
            "c1ff",
            too_long.as_str(),
        ] {
            let error = Cursor::decode(text).unwrap_err();
            assert!(error.contains("not one this server issued"), "{text}: {error}");
        }
    }

    #[test]
    fn stored_text_that_is_not_json_is_a_string() {
        assert_eq!(stored_json("{\"a\":1}"), serde_json::json!({"a": 1}));
        assert_eq!(stored_json("cr_0001"), Value::String("cr_0001".into()));
    }

    #[test]
    fn long_histories_keep_the_newest_entries() {
        let entry = |id: u64| HistoryEntry {
            id,
            key: crate::runtime::key::IdempotencyKey::parse("r1:c1").unwrap(),
            at_ms: id,
            actor: "w1".into(),
            event: crate::ledger::HistoryEvent::Attempt,
            from_status: None,
            to_status: None,
            reason: None,
            detail: None,
        };
        let record = ExecutionRecord {
            key: crate::runtime::key::IdempotencyKey::parse("r1:c1").unwrap(),
            tenant: "default".into(),
            run_id: "r1".into(),
            tool_call_id: "c1".into(),
            tool: "issue_credit".into(),
            side_effect: crate::runtime::tool::SideEffect::External,
            arguments: "{}".into(),
            status: Status::Started,
            attempts: 1,
            result: None,
            owner: "w1".into(),
            created_at_ms: 0,
            updated_at_ms: 0,
            lease_expires_at_ms: None,
        };
        let total = HISTORY_ENTRIES_MAX as u64 + 5;
        let detail = DetailView::new(record, (1..=total).map(entry).collect());
        assert!(detail.history_truncated);
        assert_eq!(detail.history.len(), HISTORY_ENTRIES_MAX);
        assert_eq!(detail.history.first().map(|entry| entry.id), Some(6));
        assert_eq!(detail.history.last().map(|entry| entry.id), Some(total));
    }
}
