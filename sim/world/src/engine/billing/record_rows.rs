//! The records as the stage draws them: one row per email, owner change and delete, each with
//! what it did in words of the run (a second email for the same intent, a write that put Penny's
//! value back over someone's later change, a delete that found nothing). Both editions draw
//! these rows as they are; the words are decided here, once, from what the world recorded.

use super::records::{ChangedBy, Records};

/// Who made a record, as the stage names them: "Penny (r1/1)" or "support".
fn who(by: &ChangedBy) -> String {
    match by {
        ChangedBy::Intent(intent) => format!("Penny ({})", crate::text::intent_step_name(intent)),
        ChangedBy::Someone(name) => name.clone(),
    }
}

/// One row of the stage's records.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct RecordRow {
    /// The account the row is about.
    pub account: String,
    /// When it landed, in milliseconds of virtual time.
    pub at_ms: u64,
    /// What it is: `Email "…"`, `owner Ada → Grace`, `record deleted`.
    pub what: String,
    /// Who made it.
    pub by: String,
    /// What it did wrong, in words; `None`: nothing (a first email, a change, a delete).
    pub harm: Option<String>,
}

impl Records {
    /// The outbox, each email with whether it repeats an earlier one for the same intent.
    pub fn outbox_rows(&self) -> Vec<RecordRow> {
        self.outbox
            .iter()
            .enumerate()
            .map(|(index, email)| {
                let intent = email.metadata.get("intent");
                let earlier = self.outbox[..index]
                    .iter()
                    .filter(|other| other.account == email.account && other.metadata.get("intent") == intent)
                    .count();
                RecordRow {
                    account: email.account.clone(),
                    at_ms: email.at_ms,
                    what: format!("{} \"{}\"", email.id, email.subject),
                    by: intent.map_or_else(
                        || "Penny".to_owned(),
                        |intent| format!("Penny ({})", crate::text::intent_step_name(intent)),
                    ),
                    harm: (earlier > 0).then(|| format!("the same email again (copy {})", earlier + 1)),
                }
            })
            .collect()
    }

    /// The owner history, each change with who made it, and Penny's writes that landed again
    /// after someone else's change (a lost update) with whose change they undid.
    pub fn owner_rows(&self) -> Vec<RecordRow> {
        self.owner_changes
            .iter()
            .enumerate()
            .map(|(index, change)| {
                let earlier = &self.owner_changes[..index];
                let harm = match &change.by {
                    ChangedBy::Intent(intent) => earlier
                        .iter()
                        .rposition(|other| other.account == change.account && other.by == change.by)
                        .and_then(|ours| {
                            earlier[ours..].iter().rev().find_map(|other| match &other.by {
                                ChangedBy::Someone(name) if other.account == change.account => Some(format!(
                                    "Penny's {} again: undoes {name}'s change to {}",
                                    crate::text::intent_step_name(intent),
                                    other.to
                                )),
                                _ => None,
                            })
                        }),
                    ChangedBy::Someone(_) => None,
                };
                RecordRow {
                    account: change.account.clone(),
                    at_ms: change.at_ms,
                    what: format!("owner {} → {}", change.from, change.to),
                    by: who(&change.by),
                    harm,
                }
            })
            .collect()
    }

    /// Every delete request that reached the records service: the one that deleted, and each
    /// later one that found the record gone — the runtime's retry of the same call, or a new call
    /// of Penny's (she acted again on a delete that had worked).
    pub fn deletion_rows(&self) -> Vec<RecordRow> {
        self.deletions
            .iter()
            .enumerate()
            .map(|(index, deletion)| {
                let deleter = self.deletions[..index]
                    .iter()
                    .rfind(|other| other.account == deletion.account && other.deleted)
                    .map(|other| other.call_key.as_str());
                let harm = match deleter {
                    _ if deletion.deleted => None,
                    Some(call) if call == deletion.call_key => Some(format!(
                        "the runtime's retry of {call}: gone already, answered as a failure"
                    )),
                    Some(call) => Some(format!(
                        "Penny acted again: new call {} after {call} deleted it",
                        deletion.call_key
                    )),
                    None => Some("not found, and not deleted by Penny".to_owned()),
                };
                RecordRow {
                    account: deletion.account.clone(),
                    at_ms: deletion.at_ms,
                    what: if deletion.deleted {
                        format!("record {} deleted", deletion.account)
                    } else {
                        "not found: already gone".to_owned()
                    },
                    by: format!(
                        "Penny ({}, call {})",
                        crate::text::intent_step_name(&deletion.intent),
                        deletion.call_key
                    ),
                    harm,
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::super::records::OwnerChange;
    use super::*;

    fn change(to: &str, by: ChangedBy) -> OwnerChange {
        OwnerChange {
            account: "acct_ada".into(),
            from: "?".into(),
            to: to.into(),
            by,
            idempotency_key: None,
            at_ms: 0,
        }
    }

    #[test]
    fn a_write_landing_again_after_someones_change_is_marked_and_a_first_or_late_one_is_not() {
        // Billing stores the script's index from 0; the row names the step as every screen does.
        let penny = || ChangedBy::Intent("r1/0".into());
        let support = || ChangedBy::Someone("support".into());
        let mut records = Records::default();
        records.owner_changes = vec![
            change("Hopper Ltd", support()),
            change("Grace", penny()),
            change("Grace", penny()),
            change("Ada", support()),
            change("Grace", penny()),
        ];
        let harms: Vec<_> = records.owner_rows().into_iter().map(|row| row.harm).collect();
        assert_eq!(
            harms,
            [
                None,
                // Support's change came before Penny's first write: replaced, not undone.
                None,
                None,
                None,
                Some("Penny's r1/1 again: undoes support's change to Ada".to_owned()),
            ]
        );
    }

    #[test]
    fn a_delete_that_finds_nothing_says_whether_the_runtime_retried_or_penny_acted_again() {
        use super::super::records::Deletion;
        let delete = |call: &str, deleted: bool| Deletion {
            account: "acct_ada".into(),
            intent: "r1/1".into(),
            idempotency_key: None,
            call_key: call.into(),
            deleted,
            at_ms: 0,
        };
        let mut records = Records::default();
        records.deletions = vec![delete("r1:c2", true), delete("r1:c2", false), delete("r1:c3", false)];
        let harms: Vec<_> = records.deletion_rows().into_iter().map(|row| row.harm).collect();
        assert_eq!(harms[0], None);
        assert!(harms[1].as_deref().unwrap().starts_with("the runtime's retry of r1:c2"));
        assert!(
            harms[2]
                .as_deref()
                .unwrap()
                .starts_with("Penny acted again: new call r1:c3 after r1:c2")
        );
    }
}
