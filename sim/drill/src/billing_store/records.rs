//! The billing file's record requests: emails, owner changes and deletes, stored as the
//! requests that made them and replayed through [`Billing`]'s own `send_email`,
//! `change_owner` and `delete_record` — the same one-rule design as the credits' entries.
//!
//! Records and credits do not depend on each other (an email, an owner or a deletion never
//! reads a balance, a credit never reads a record), so each replays in its own order.

use rusqlite::params;

use super::{BillingStore, Operation, StoreError};
use twice_world::billing::{Answer, Billing};

/// The table of record requests. Created by files of this build; a file made before it has
/// none and gets it on open (it holds no records, so nothing replays differently).
pub(super) const RECORDS_SCHEMA: &str = r#"
CREATE TABLE IF NOT EXISTS record_requests (
    seq             INTEGER PRIMARY KEY,
    kind            TEXT NOT NULL CHECK (kind IN ('email', 'owner', 'delete')),
    account         TEXT NOT NULL,
    idempotency_key TEXT,
    intent          TEXT NOT NULL,
    answer          TEXT NOT NULL,
    at_ms           INTEGER NOT NULL,
    request         TEXT NOT NULL
);
"#;

/// How many effects the records hold, all kinds together: a request that changed none (a
/// refusal, a repeat of an honoured key) is not stored.
pub(super) fn effects(billing: &Billing) -> usize {
    let records = &billing.records;
    records.outbox.len() + records.owner_changes.len() + records.deletions.len()
}

/// The lengths of the outbox, the owners' history and the deletions.
pub(super) fn lengths(billing: &Billing) -> [usize; 3] {
    let records = &billing.records;
    [
        records.outbox.len(),
        records.owner_changes.len(),
        records.deletions.len(),
    ]
}

/// Drops effects past `lengths` (a request whose write failed is not kept in memory either).
pub(super) fn truncate(billing: &mut Billing, [outbox, owners, deletions]: [usize; 3]) {
    let records = &mut billing.records;
    records.outbox.truncate(outbox);
    records.owner_changes.truncate(owners);
    records.deletions.truncate(deletions);
}

impl BillingStore {
    /// Stores a record request that made an effect, with the answer it got.
    pub(super) fn append_record(
        &mut self,
        operation: &Operation,
        answer: &Answer,
        now_ms: u64,
    ) -> Result<(), StoreError> {
        let (kind, account, key, intent) = match operation {
            Operation::Email(request) => (
                "email",
                &request.account,
                request.idempotency_key.as_ref(),
                &request.intent,
            ),
            Operation::OwnerChange(request) => (
                "owner",
                &request.account,
                request.idempotency_key.as_ref(),
                &request.intent,
            ),
            Operation::Delete(request) => (
                "delete",
                &request.account,
                request.idempotency_key.as_ref(),
                &request.intent,
            ),
            // Someone's change has no intent of Penny's: who made it stands in its place.
            Operation::OwnerChangedBy(change) => ("owner", &change.account, None, &change.by),
            Operation::Credit(_) | Operation::Void(_) | Operation::VoidById(_) => return Ok(()),
        };
        let stored = serde_json::to_string(operation).expect("requests serialize");
        self.connection
            .execute(
                "INSERT INTO record_requests (kind, account, idempotency_key, intent, answer, at_ms, request)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                params![
                    kind,
                    account,
                    key,
                    intent,
                    answer.receipt(),
                    i64::try_from(now_ms).unwrap_or(i64::MAX),
                    stored,
                ],
            )
            .map_err(|error| self.classify(error, "recording a record request"))?;
        Ok(())
    }

    /// Replays every stored record request through `billing`, checking each gets the answer it
    /// got the first time. A file without the table (made before records) holds none.
    pub(super) fn replay_records(&self, billing: &mut Billing) -> Result<(), StoreError> {
        if !self.table_names()?.iter().any(|table| table == "record_requests") {
            return Ok(());
        }
        let rows = self.stored(
            "SELECT seq, answer, request, at_ms FROM record_requests ORDER BY seq",
            "reading record requests",
        )?;
        for (seq, answer, request, at_ms) in rows {
            let replay_error = |detail: String| StoreError::Replay {
                path: self.path.clone(),
                seq,
                detail: format!("(record request) {detail}"),
            };
            let operation: Operation = serde_json::from_str(&request)
                .map_err(|error| replay_error(format!("its request does not parse: {error}")))?;
            if !operation.is_record() {
                return Err(replay_error("it is not a record request".into()));
            }
            let before = effects(billing);
            let again = super::apply_to(billing, &operation, u64::try_from(at_ms).unwrap_or(0));
            if effects(billing) == before {
                return Err(replay_error(format!(
                    "it made no effect again (answered {})",
                    again.receipt()
                )));
            }
            if again.receipt() != answer {
                return Err(replay_error(format!(
                    "it answered {} again, not {answer}",
                    again.receipt()
                )));
            }
        }
        Ok(())
    }
}
