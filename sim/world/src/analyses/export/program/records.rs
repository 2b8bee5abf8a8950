//! The records beside the money, for the tools that send an email, change an account's owner
//! or delete a record: what each does with an idempotency key is billing's rule (a key it
//! honours makes a repeat answer as the first did; otherwise a repeat acts again).

use std::collections::BTreeMap;

use crate::billing::{Answer, KeyHandling};

/// An email in a customer's outbox.
#[derive(Clone, Debug)]
pub struct Email {
    pub account: String,
    pub subject: String,
    /// Which step of which run sent it (`run/item`).
    pub intent: String,
}

/// One change in an account's owner history: by a step of Penny's (`run/item`), or by someone
/// outside the agent.
#[derive(Clone, Debug)]
pub struct OwnerChange {
    pub account: String,
    pub from: String,
    pub to: String,
    /// The step (`run/item`) or the person who made it.
    pub by: String,
    /// Made by someone outside the agent.
    pub by_someone: bool,
}

/// A delete request that reached the records service, and whether it found the record.
#[derive(Clone, Debug)]
pub struct Deletion {
    pub account: String,
    pub intent: String,
    /// The runtime's key of the call that sent it.
    pub call_key: String,
    pub deleted: bool,
}

/// A request to send an email, change an owner or delete a record.
#[derive(Clone, Debug)]
pub struct RecordRequest {
    pub account: String,
    pub memo: String,
    pub owner: Option<String>,
    /// The `Idempotency-Key` header, when the tool passes one.
    pub key: Option<String>,
    pub intent: String,
    pub call_key: String,
}

#[derive(Debug)]
pub struct Records {
    keys: KeyHandling,
    pub owners: BTreeMap<String, String>,
    pub outbox: Vec<Email>,
    pub owner_history: Vec<OwnerChange>,
    pub deletions: Vec<Deletion>,
    /// Keys honoured: key → the id of what the first request made.
    honoured: BTreeMap<String, String>,
}

impl Records {
    pub fn new(keys: KeyHandling, accounts: &[(&str, &str, i64)]) -> Records {
        Records {
            keys,
            owners: accounts
                .iter()
                .map(|(id, owner, _)| ((*id).to_owned(), (*owner).to_owned()))
                .collect(),
            outbox: Vec::new(),
            owner_history: Vec::new(),
            deletions: Vec::new(),
            honoured: BTreeMap::new(),
        }
    }

    /// A refusal (no such account) or the first answer to a key billing honours.
    fn refusal_or_repeat(&self, request: &RecordRequest) -> Option<Answer> {
        if !self.owners.contains_key(&request.account) {
            return Some(Answer::Rejected {
                reason: format!("no account `{}`", request.account),
            });
        }
        if self.keys != KeyHandling::Honour {
            return None;
        }
        let first = self.honoured.get(request.key.as_deref()?)?;
        Some(Answer::Repeat {
            credit_id: first.clone(),
            balance_cents: 0,
        })
    }

    fn remember(&mut self, request: &RecordRequest, id: &str) {
        if self.keys == KeyHandling::Honour
            && let Some(key) = &request.key
        {
            self.honoured.insert(key.clone(), id.to_owned());
        }
    }

    pub fn send_email(&mut self, request: &RecordRequest) -> Answer {
        if let Some(answer) = self.refusal_or_repeat(request) {
            return answer;
        }
        let email_id = format!("em_{:04}", self.outbox.len() + 1);
        self.remember(request, &email_id);
        self.outbox.push(Email {
            account: request.account.clone(),
            subject: request.memo.clone(),
            intent: request.intent.clone(),
        });
        Answer::Emailed { email_id }
    }

    pub fn change_owner(&mut self, request: &RecordRequest) -> Answer {
        if let Some(answer) = self.refusal_or_repeat(request) {
            return answer;
        }
        let Some(owner) = request.owner.clone() else {
            return Answer::Rejected {
                reason: "an owner change names the new owner".into(),
            };
        };
        let id = format!("ow_{:04}", self.owner_history.len() + 1);
        self.remember(request, &id);
        self.set_owner(&request.account, owner, request.intent.clone(), false)
    }

    /// Someone outside the agent changes the owner at the accounts service.
    pub fn owner_changed_by(&mut self, account: &str, owner: &str, who: &str) -> Answer {
        if !self.owners.contains_key(account) {
            return Answer::Rejected {
                reason: format!("no account `{account}`"),
            };
        }
        self.set_owner(account, owner.to_owned(), who.to_owned(), true)
    }

    fn set_owner(&mut self, account: &str, owner: String, by: String, by_someone: bool) -> Answer {
        let previous = self.owners.insert(account.to_owned(), owner.clone()).unwrap_or_default();
        self.owner_history.push(OwnerChange {
            account: account.to_owned(),
            from: previous.clone(),
            to: owner.clone(),
            by,
            by_someone,
        });
        Answer::OwnerSet { owner, previous }
    }

    pub fn delete_record(&mut self, request: &RecordRequest) -> Answer {
        if let Some(answer) = self.refusal_or_repeat(request) {
            return answer;
        }
        let found = !self
            .deletions
            .iter()
            .any(|deletion| deletion.account == request.account && deletion.deleted);
        let id = format!("dl_{:04}", self.deletions.len() + 1);
        if found {
            self.remember(request, &id);
        }
        self.deletions.push(Deletion {
            account: request.account.clone(),
            intent: request.intent.clone(),
            call_key: request.call_key.clone(),
            deleted: found,
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
