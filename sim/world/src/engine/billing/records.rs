//! The world beyond money: each customer's outbox, each account's owner with its history, and
//! the records deleted. These are the rest of the seed's side-effect table — an email (external:
//! a second send is a second email the customer reads), an owner change (a write: a retry that
//! lands after someone else's change puts the old value back) and a delete (destructive: a second
//! delete finds nothing and says so). Every effect is recorded with the intent it served, so the
//! checker counts effects, not claims, exactly as it does for credits.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::{Answer, Billing, KeyHandling};

/// The most emails, owner changes and deletions one world records (a limit on everything).
pub const RECORDS_MAX: usize = 100_000;

/// One email in a customer's outbox.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Email {
    pub id: String,
    /// The account whose owner it was sent to.
    pub account: String,
    pub subject: String,
    /// The key the provider stored (none when it ignores keys, or keeps them in metadata).
    pub idempotency_key: Option<String>,
    /// The intent the agent meant (`run_id/item`) and, with metadata-only key handling, the key.
    pub metadata: BTreeMap<String, String>,
    pub at_ms: u64,
}

/// Who changed an account's owner.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ChangedBy {
    /// Penny, for this intent (`run_id/item`).
    Intent(String),
    /// Someone outside the agent (the level's scripted event: support, the customer).
    Someone(String),
}

/// One change of an account's owner, in the order they landed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct OwnerChange {
    pub account: String,
    pub from: String,
    pub to: String,
    pub by: ChangedBy,
    pub idempotency_key: Option<String>,
    pub at_ms: u64,
}

/// One delete request that reached the records service: it deleted the record, or found it
/// already gone ("not found").
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Deletion {
    pub account: String,
    pub intent: String,
    pub idempotency_key: Option<String>,
    /// The runtime's key of the call that sent it (the simulator's knowledge, not the
    /// service's): tells a runtime's retry (same call) from Penny acting again (a new call).
    pub call_key: String,
    /// False: the record was already gone, and the service answered "not found".
    pub deleted: bool,
    pub at_ms: u64,
}

/// A request that is not a credit: an email, an owner change or a delete on one account.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecordRequest {
    pub account: String,
    /// The email's subject, or why the record is changed or deleted.
    pub memo: String,
    /// The new owner, for an owner change.
    pub owner: Option<String>,
    pub idempotency_key: Option<String>,
    pub intent: String,
    /// The runtime's key of the call (see [`Deletion::call_key`]).
    pub call_key: String,
}

/// The customer-facing records, beside billing's money.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Records {
    pub outbox: Vec<Email>,
    pub owner_changes: Vec<OwnerChange>,
    pub deletions: Vec<Deletion>,
    /// Honoured keys → the id of the effect they made (`em_…`, `ow_…`, `dl_…`).
    honoured: BTreeMap<String, String>,
}

impl Records {
    /// How many effects are recorded, all kinds together.
    fn len(&self) -> usize {
        self.outbox.len() + self.owner_changes.len() + self.deletions.len()
    }

    /// The emails sent for one intent, oldest first.
    pub fn emails_for<'a>(&'a self, intent: &'a str) -> impl Iterator<Item = &'a Email> {
        self.outbox
            .iter()
            .filter(move |email| email.metadata.get("intent").map(String::as_str) == Some(intent))
    }

    /// The owner changes of one account, oldest first.
    pub fn history_of<'a>(&'a self, account: &'a str) -> impl Iterator<Item = &'a OwnerChange> {
        self.owner_changes
            .iter()
            .filter(move |change| change.account == account)
    }

    /// Whether the account's record has been deleted.
    pub fn is_deleted(&self, account: &str) -> bool {
        self.deletions
            .iter()
            .any(|deletion| deletion.account == account && deletion.deleted)
    }
}

impl Billing {
    /// The effect a key billing honours already made, as a repeat's answer; `None` when keys
    /// are not honoured or this one is new.
    fn record_repeat(&self, request: &RecordRequest) -> Option<Answer> {
        if self.key_handling != KeyHandling::Honour {
            return None;
        }
        let key = request.idempotency_key.as_deref()?;
        let first = self.records.honoured.get(key)?;
        Some(Answer::Repeat {
            credit_id: first.clone(),
            balance_cents: self.balance(&request.account).unwrap_or(0),
        })
    }

    /// The metadata an effect carries: its intent, and the key when billing keeps keys there.
    fn record_metadata(&self, request: &RecordRequest) -> (Option<String>, BTreeMap<String, String>) {
        self.keyed_metadata(&request.intent, request.idempotency_key.as_ref())
    }

    /// An effect's metadata — its intent, and its key where billing keeps keys there — and the
    /// key billing honours (`None` unless it honours keys): one rule for credits and records.
    pub(super) fn keyed_metadata(
        &self,
        intent: &str,
        key: Option<&String>,
    ) -> (Option<String>, BTreeMap<String, String>) {
        let mut metadata = BTreeMap::new();
        metadata.insert("intent".to_owned(), intent.to_owned());
        let stored = match self.key_handling {
            KeyHandling::Honour => key.cloned(),
            KeyHandling::MetadataOnly => {
                if let Some(key) = key {
                    metadata.insert("idempotency_key".to_owned(), key.clone());
                }
                None
            }
            KeyHandling::Ignore => None,
        };
        (stored, metadata)
    }

    /// Refuses a request on an account the world does not have, or past its limit.
    fn record_refusal(&self, request: &RecordRequest) -> Option<Answer> {
        if !self.accounts.contains_key(&request.account) {
            return Some(Answer::Rejected {
                reason: format!("no account `{}`", request.account),
            });
        }
        (self.records.len() >= RECORDS_MAX).then(|| Answer::Rejected {
            reason: format!("the world holds {RECORDS_MAX} records, its limit"),
        })
    }

    fn remember_key(&mut self, key: Option<String>, id: &str) {
        if let Some(key) = key {
            self.records.honoured.insert(key, id.to_owned());
        }
    }

    /// Sends the account's owner an email: it lands in their outbox. A key the provider honours
    /// makes a repeat answer with the first email; otherwise every send is another email.
    pub fn send_email(&mut self, request: &RecordRequest, now_ms: u64) -> Answer {
        if let Some(answer) = self.record_refusal(request).or_else(|| self.record_repeat(request)) {
            return answer;
        }
        let id = format!("em_{:04}", self.records.outbox.len() + 1);
        let (stored, metadata) = self.record_metadata(request);
        self.remember_key(stored.clone(), &id);
        self.records.outbox.push(Email {
            id: id.clone(),
            account: request.account.clone(),
            subject: request.memo.clone(),
            idempotency_key: stored,
            metadata,
            at_ms: now_ms,
        });
        Answer::Emailed { email_id: id }
    }

    /// Sets the account's owner to the request's, whatever it is now: a write replaces. A repeat
    /// that lands after someone else's change puts the old value back — a lost update.
    pub fn change_owner(&mut self, request: &RecordRequest, now_ms: u64) -> Answer {
        if let Some(answer) = self.record_refusal(request).or_else(|| self.record_repeat(request)) {
            return answer;
        }
        let Some(owner) = request.owner.clone() else {
            return Answer::Rejected {
                reason: "an owner change names the new owner".into(),
            };
        };
        let (stored, _) = self.record_metadata(request);
        let id = format!("ow_{:04}", self.records.owner_changes.len() + 1);
        self.remember_key(stored.clone(), &id);
        self.set_owner(
            &request.account,
            owner,
            ChangedBy::Intent(request.intent.clone()),
            stored,
            now_ms,
        )
    }

    /// Someone outside the agent changes an account's owner (the level's scripted event).
    pub fn owner_changed_by(&mut self, account: &str, owner: &str, who: &str, now_ms: u64) -> Answer {
        if !self.accounts.contains_key(account) {
            return Answer::Rejected {
                reason: format!("no account `{account}`"),
            };
        }
        self.set_owner(
            account,
            owner.to_owned(),
            ChangedBy::Someone(who.to_owned()),
            None,
            now_ms,
        )
    }

    fn set_owner(&mut self, account: &str, owner: String, by: ChangedBy, key: Option<String>, now_ms: u64) -> Answer {
        let Some(state) = self.accounts.get_mut(account) else {
            return Answer::Rejected {
                reason: format!("no account `{account}`"),
            };
        };
        let previous = std::mem::replace(&mut state.owner, owner.clone());
        self.records.owner_changes.push(OwnerChange {
            account: account.to_owned(),
            from: previous.clone(),
            to: owner.clone(),
            by,
            idempotency_key: key,
            at_ms: now_ms,
        });
        Answer::OwnerSet { owner, previous }
    }

    /// Deletes the account's record. A second delete finds nothing and answers "not found",
    /// unless the key is honoured (then it is answered as the repeat it is).
    pub fn delete_record(&mut self, request: &RecordRequest, now_ms: u64) -> Answer {
        if let Some(answer) = self.record_refusal(request).or_else(|| self.record_repeat(request)) {
            return answer;
        }
        let found = !self.records.is_deleted(&request.account);
        let (stored, _) = self.record_metadata(request);
        let id = format!("dl_{:04}", self.records.deletions.len() + 1);
        if found {
            self.remember_key(stored.clone(), &id);
        }
        self.records.deletions.push(Deletion {
            account: request.account.clone(),
            intent: request.intent.clone(),
            idempotency_key: stored,
            call_key: request.call_key.clone(),
            deleted: found,
            at_ms: now_ms,
        });
        if !found {
            return Answer::Rejected {
                reason: format!("not found: record `{}` does not exist", request.account),
            };
        }
        Answer::Deleted {
            record: request.account.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::billing::Account;

    fn world(key_handling: KeyHandling) -> Billing {
        Billing::new(
            key_handling,
            &[Account {
                id: "acct_ada".into(),
                owner: "Ada".into(),
                balance_cents: 0,
            }],
        )
    }

    fn request(key: &str) -> RecordRequest {
        RecordRequest {
            account: "acct_ada".into(),
            memo: "Your refund".into(),
            owner: Some("Ada Lovelace".into()),
            idempotency_key: Some(key.into()),
            intent: "r1/0".into(),
            call_key: key.into(),
        }
    }

    #[test]
    fn a_resent_email_is_a_second_email_unless_the_key_is_honoured() {
        let mut ignoring = world(KeyHandling::Ignore);
        ignoring.send_email(&request("r1:c1"), 10);
        ignoring.send_email(&request("r1:c1"), 20);
        assert_eq!(ignoring.records.emails_for("r1/0").count(), 2);
        let mut honouring = world(KeyHandling::Honour);
        let first = honouring.send_email(&request("r1:c1"), 10);
        let again = honouring.send_email(&request("r1:c1"), 20);
        assert_eq!(
            first,
            Answer::Emailed {
                email_id: "em_0001".into()
            }
        );
        assert!(matches!(again, Answer::Repeat { ref credit_id, .. } if credit_id == "em_0001"));
        assert_eq!(honouring.records.emails_for("r1/0").count(), 1);
    }

    #[test]
    fn a_retried_owner_change_after_someone_elses_undoes_it() {
        let mut world = world(KeyHandling::Ignore);
        world.change_owner(&request("r1:c1"), 10);
        world.owner_changed_by("acct_ada", "Grace", "support", 20);
        world.change_owner(&request("r1:c1"), 30);
        assert_eq!(
            world.accounts["acct_ada"].owner, "Ada Lovelace",
            "the later change was lost"
        );
        let history: Vec<&str> = world
            .records
            .history_of("acct_ada")
            .map(|change| change.to.as_str())
            .collect();
        assert_eq!(history, ["Ada Lovelace", "Grace", "Ada Lovelace"]);
    }

    #[test]
    fn a_second_delete_answers_not_found_unless_the_key_is_honoured() {
        let mut ignoring = world(KeyHandling::MetadataOnly);
        assert!(matches!(
            ignoring.delete_record(&request("r1:c1"), 10),
            Answer::Deleted { .. }
        ));
        let again = ignoring.delete_record(&request("r1:c1"), 20);
        assert!(
            matches!(&again, Answer::Rejected { reason } if reason.contains("not found")),
            "{again:?}"
        );
        let mut honouring = world(KeyHandling::Honour);
        honouring.delete_record(&request("r1:c1"), 10);
        assert!(matches!(
            honouring.delete_record(&request("r1:c1"), 20),
            Answer::Repeat { .. }
        ));
        assert_eq!(honouring.records.deletions.len(), 1);
        assert_eq!(ignoring.records.deletions.len(), 2, "the miss is recorded too");
        assert!(!ignoring.records.deletions[1].deleted);
    }

    #[test]
    fn requests_on_an_unknown_account_are_refused() {
        let mut world = world(KeyHandling::Honour);
        let mut nobody = request("r1:c1");
        nobody.account = "acct_nobody".into();
        assert!(world.send_email(&nobody, 1).is_rejection());
        assert!(world.change_owner(&nobody, 1).is_rejection());
        assert!(world.delete_record(&nobody, 1).is_rejection());
        assert!(world.records.outbox.is_empty() && world.records.owner_changes.is_empty());
    }
}
