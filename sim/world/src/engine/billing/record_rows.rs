//! The records as the stage draws them: one row per email, owner change and delete, each with
//! what it did in words of the run (a second email for the same intent, a write that put Penny's
//! value back over someone's later change, a delete that found nothing). Both editions draw
//! these rows as they are; the words are decided here, once, from what the world recorded.

use super::records::{ChangedBy, Records};

/// Who made a record, as the stage names them: "Penny (r1/1)" or "support".
fn who(by: &ChangedBy) -> String {
    match by {
        ChangedBy::Intent(intent) => format!("Penny ({intent})"),
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
                    by: intent.map_or_else(|| "Penny".to_owned(), |intent| format!("Penny ({intent})")),
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
                                    "undoes {name}'s change to {}: {intent} written again",
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
    /// later one that found the record gone.
    pub fn deletion_rows(&self) -> Vec<RecordRow> {
        self.deletions
            .iter()
            .map(|deletion| RecordRow {
                account: deletion.account.clone(),
                at_ms: deletion.at_ms,
                what: if deletion.deleted {
                    "record deleted".to_owned()
                } else {
                    "not found: already gone".to_owned()
                },
                by: format!("Penny ({}, call {})", deletion.intent, deletion.call_key),
                harm: (!deletion.deleted).then(|| "deleted already; answered as a failure".to_owned()),
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
        let penny = || ChangedBy::Intent("r1/1".into());
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
                Some("undoes support's change to Ada: r1/1 written again".to_owned()),
            ]
        );
    }
}
