//! What the API sends: records, their history, pages, and the opaque cursor.

use serde::{Serialize, Serializer};
use serde_json::value::RawValue;

use twice_world::ledger::{ExecutionRecord, HistoryEntry};
use twice_world::runtime::ids::{RunId, Tenant, ToolName, WorkerId};
use twice_world::runtime::rules::Status;

/// The most history entries one answer carries; the newest are kept, since the
/// decisions an operator acts on come last.
pub const HISTORY_ENTRIES_MAX: usize = 1_000;

/// A record as the API shows it. `arguments` and `result` are JSON the tools (or an
/// operator) wrote, sent exactly as stored (a stored text that is not JSON is sent as a string).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RecordView {
    pub key: String,
    pub tenant: Tenant,
    pub run_id: RunId,
    pub tool_call_id: String,
    pub tool: ToolName,
    pub side_effect: &'static str,
    pub arguments: StoredJson,
    pub status: Status,
    pub attempts: u32,
    pub result: Option<StoredJson>,
    pub owner: WorkerId,
    pub created_at_ms: u64,
    pub updated_at_ms: u64,
    pub lease_expires_at_ms: Option<u64>,
}

/// Stored JSON, sent as it was stored: never parsed into numbers and maps and written again,
/// which would round `123456789012345678901234567890` to `1.2345678901234568e29` and sort the
/// keys of what an operator sent.
#[derive(Clone, Debug)]
pub struct StoredJson(Box<RawValue>);

impl StoredJson {
    /// Text stored as JSON, as that JSON; anything else as a JSON string.
    pub fn from_stored(text: &str) -> StoredJson {
        match RawValue::from_string(text.to_owned()) {
            Ok(raw) => StoredJson(raw),
            Err(_) => {
                let quoted = serde_json::to_string(text).expect("a string always serializes");
                StoredJson(RawValue::from_string(quoted).expect("a serialized string is JSON"))
            }
        }
    }

    /// The JSON text as it will be sent.
    pub fn as_str(&self) -> &str {
        self.0.get()
    }
}

impl PartialEq for StoredJson {
    fn eq(&self, other: &StoredJson) -> bool {
        self.as_str() == other.as_str()
    }
}

impl Serialize for StoredJson {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(serializer)
    }
}

/// `json` (valid JSON) without the whitespace between its tokens, everything else as it was:
/// numbers keep every digit, strings every byte, objects their key order.
pub fn compact_json(json: &str) -> String {
    let mut compact = String::with_capacity(json.len());
    let mut in_string = false;
    let mut escaped = false;
    for character in json.chars() {
        if in_string {
            compact.push(character);
            if escaped {
                escaped = false;
            } else if character == '\\' {
                escaped = true;
            } else if character == '"' {
                in_string = false;
            }
        } else if !matches!(character, ' ' | '\t' | '\n' | '\r') {
            in_string = character == '"';
            compact.push(character);
        }
    }
    compact
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
            arguments: StoredJson::from_stored(&record.arguments),
            status: record.status,
            attempts: record.attempts,
            result: record.result.as_deref().map(StoredJson::from_stored),
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

    pub fn decode(text: &str) -> Result<Cursor, ForeignCursor> {
        let refuse = || ForeignCursor { shown: shorten(text) };
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
        // The ledger stores times as SQLite integers (i64): a later time was never issued, and
        // passed on as it is it would wrap to a negative one and restart the listing.
        let updated_at_ms = milliseconds
            .parse::<u64>()
            .ok()
            .filter(|milliseconds| i64::try_from(*milliseconds).is_ok())
            .ok_or_else(refuse)?;
        twice_world::runtime::key::IdempotencyKey::parse(key).map_err(|_| refuse())?;
        Ok(Cursor {
            updated_at_ms,
            key: key.to_owned(),
        })
    }
}

/// A cursor this server did not issue (or one forged past the ledger's time range).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("cursor `{shown}` is not one this server issued")]
pub struct ForeignCursor {
    /// The cursor as sent, shortened for quoting.
    pub shown: String,
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
        for (updated_at_ms, key) in [(0, "r1:c1"), (i64::MAX as u64, "run:é:c9"), (35, "h:00ff")] {
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
            let error = Cursor::decode(text).unwrap_err().to_string();
            assert!(error.contains("not one this server issued"), "{text}: {error}");
        }
    }

    #[test]
    fn cursors_past_the_ledgers_time_range_are_refused() {
        for updated_at_ms in [i64::MAX as u64 + 1, u64::MAX] {
            let forged = Cursor {
                updated_at_ms,
                key: "r1:c1".into(),
            }
            .encode();
            let error = Cursor::decode(&forged).unwrap_err().to_string();
            assert!(error.contains("not one this server issued"), "{updated_at_ms}: {error}");
        }
    }

    #[test]
    fn stored_text_that_is_not_json_is_a_string() {
        assert_eq!(StoredJson::from_stored("{\"a\":1}").as_str(), "{\"a\":1}");
        assert_eq!(StoredJson::from_stored("cr_0001").as_str(), "\"cr_0001\"");
        assert_eq!(
            StoredJson::from_stored("say \"hi\"\n").as_str(),
            "\"say \\\"hi\\\"\\n\""
        );
    }

    #[test]
    fn stored_json_is_sent_digit_for_digit_in_its_order() {
        let stored = r#"{"z":123456789012345678901234567890,"a":0.10000000000000000555,"e":1E400}"#;
        let view = serde_json::to_string(&StoredJson::from_stored(stored)).unwrap();
        assert_eq!(view, stored);
    }

    #[test]
    fn compacting_drops_whitespace_between_tokens_only() {
        assert_eq!(
            compact_json(" { \"a b\" : [ 1 , 2.50 ] ,\n\t\"c\\\" d\": \" x \" } "),
            r#"{"a b":[1,2.50],"c\" d":" x "}"#
        );
        assert_eq!(
            compact_json("123456789012345678901234567890"),
            "123456789012345678901234567890"
        );
        assert_eq!(compact_json(r#""\\" "#), r#""\\""#);
    }

    #[test]
    fn long_histories_keep_the_newest_entries() {
        let entry = |id: u64| HistoryEntry {
            id,
            key: twice_world::runtime::key::IdempotencyKey::parse("r1:c1").unwrap(),
            at_ms: id,
            actor: "w1".into(),
            event: twice_world::ledger::HistoryEvent::Attempt,
            from_status: None,
            to_status: None,
            reason: None,
            detail: None,
        };
        let record = ExecutionRecord::new(
            twice_world::runtime::key::IdempotencyKey::parse("r1:c1").unwrap(),
            "r1",
            "c1",
            "issue_credit",
            twice_world::runtime::tool::SideEffect::External,
            "{}",
            "w1",
        )
        .with_outcome(Status::Started, 1, None);
        let total = HISTORY_ENTRIES_MAX as u64 + 5;
        let detail = DetailView::new(record, (1..=total).map(entry).collect());
        assert!(detail.history_truncated);
        assert_eq!(detail.history.len(), HISTORY_ENTRIES_MAX);
        assert_eq!(detail.history.first().map(|entry| entry.id), Some(6));
        assert_eq!(detail.history.last().map(|entry| entry.id), Some(total));
    }
}
