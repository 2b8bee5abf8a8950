//! A fake billing that behaves as the level's world: accounts with balances, credits, and what
//! billing does with an idempotency key. Swap it for your billing provider's client: the
//! runtime never sees this type, only the answers the tools hand it (`ToolAnswer`).

use std::collections::BTreeMap;

/// What billing does with an idempotency key it receives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyHandling {
    /// A repeat of a key gets the first answer; the same key with another body is refused.
    Honour,
    /// The key is stored in the credit's metadata (a lookup finds it) but never checked.
    MetadataOnly,
    /// The key is dropped on the floor.
    Ignore,
}

/// One credit or reversal on an account.
#[derive(Clone, Debug)]
pub struct Entry {
    pub id: String,
    pub account: String,
    pub amount_cents: i64,
    /// The key it was made under, if billing kept it (as a key or in metadata).
    pub key: Option<String>,
    /// Which step of which run asked for it (`run/item`): billing's own bookkeeping, how a
    /// reader of its entries tells a second payment from a first.
    pub intent: String,
    pub at_ms: u64,
    /// The credit a reversal voids.
    pub reverses: Option<String>,
}

/// What billing answered.
#[derive(Clone, Debug)]
pub enum Answer {
    Applied { credit_id: String, balance_cents: i64 },
    Repeat { credit_id: String, balance_cents: i64 },
    Rejected { reason: String },
    Balance { balance_cents: i64 },
    Emailed { email_id: String },
    OwnerSet { owner: String, previous: String },
    Deleted { record: String },
}

impl Answer {
    /// The receipt the tool hands the runtime (its ledger records it).
    pub fn receipt(&self) -> String {
        match self {
            Answer::Applied { credit_id, balance_cents } => format!("applied {credit_id}, balance {balance_cents}"),
            Answer::Repeat { credit_id, balance_cents } => format!("repeat of {credit_id}, balance {balance_cents}"),
            Answer::Rejected { reason } => format!("rejected: {reason}"),
            Answer::Balance { balance_cents } => format!("balance {balance_cents}"),
            Answer::Emailed { email_id } => format!("sent {email_id}"),
            Answer::OwnerSet { owner, previous } => format!("owner {owner} (was {previous})"),
            Answer::Deleted { record } => format!("deleted {record}"),
        }
    }
}

/// The billing world.
#[derive(Debug)]
pub struct Billing {
    keys: KeyHandling,
    /// How long billing remembers a key, if not for ever.
    key_retention_ms: Option<u64>,
    /// How long after a credit is applied billing's lookups start to show it.
    lookup_settle_ms: Option<u64>,
    pub balances: BTreeMap<String, i64>,
    pub entries: Vec<Entry>,
    /// Keys honoured: key → (credit id, account, amount, memo of the first request).
    honoured: BTreeMap<String, (String, String, u32, String)>,
    /// The records beside the money: accounts' owners, the customers' outbox, the owners'
    /// history, the deletes (see `records.rs`).
    pub records: crate::records::Records,
}

impl Billing {
    /// `accounts`: each account's id, owner and balance in cents.
    pub fn new(keys: KeyHandling, accounts: &[(&str, &str, i64)]) -> Billing {
        Billing {
            keys,
            key_retention_ms: None,
            lookup_settle_ms: None,
            balances: accounts
                .iter()
                .map(|(id, _, cents)| ((*id).to_owned(), *cents))
                .collect(),
            entries: Vec::new(),
            honoured: BTreeMap::new(),
            records: crate::records::Records::new(keys, accounts),
        }
    }

    pub fn keeping_keys_for_ms(mut self, retention_ms: u64) -> Billing {
        self.key_retention_ms = Some(retention_ms);
        self
    }

    pub fn lookups_lag_ms(mut self, settle_ms: u64) -> Billing {
        self.lookup_settle_ms = Some(settle_ms);
        self
    }

    fn keeps(&self, entry: &Entry, now_ms: u64) -> bool {
        self.key_retention_ms
            .is_none_or(|retention| now_ms < entry.at_ms.saturating_add(retention))
    }

    fn shows(&self, entry: &Entry, now_ms: u64) -> bool {
        self.lookup_settle_ms
            .is_none_or(|settle| now_ms >= entry.at_ms.saturating_add(settle))
    }

    /// `POST /credits`: applies a credit, or answers a repeat of a key it honours.
    pub fn credit(&mut self, request: &CreditRequest, now_ms: u64) -> Answer {
        let Some(balance) = self.balances.get(&request.account).copied() else {
            return Answer::Rejected {
                reason: format!("no account `{}`", request.account),
            };
        };
        if request.amount_cents == 0 {
            return Answer::Rejected {
                reason: "a credit must be positive".into(),
            };
        }
        if self.keys == KeyHandling::Honour
            && let Some(key) = &request.key
            && let Some((credit_id, account, amount, memo)) = self.honoured.get(key)
            && self.entry(credit_id).is_none_or(|entry| self.keeps(entry, now_ms))
        {
            if *account != request.account || *amount != request.amount_cents || *memo != request.memo {
                return Answer::Rejected {
                    reason: format!("idempotency key {key} was first used with a different request"),
                };
            }
            return Answer::Repeat {
                credit_id: credit_id.clone(),
                balance_cents: balance,
            };
        }
        let credit_id = format!("cr_{:04}", self.entries.len() + 1);
        let kept_key = match self.keys {
            KeyHandling::Ignore => None,
            KeyHandling::Honour | KeyHandling::MetadataOnly => request.key.clone(),
        };
        if let Some(key) = &kept_key {
            let first = (credit_id.clone(), request.account.clone(), request.amount_cents, request.memo.clone());
            self.honoured.insert(key.clone(), first);
        }
        let balance_cents = balance + i64::from(request.amount_cents);
        self.balances.insert(request.account.clone(), balance_cents);
        self.entries.push(Entry {
            id: credit_id.clone(),
            account: request.account.clone(),
            amount_cents: i64::from(request.amount_cents),
            key: kept_key,
            intent: request.intent.clone(),
            at_ms: now_ms,
            reverses: None,
        });
        Answer::Applied { credit_id, balance_cents }
    }

    /// `GET /accounts/{id}`: a read, which changes nothing.
    pub fn balance(&self, account: &str) -> Answer {
        match self.balances.get(account) {
            Some(balance_cents) => Answer::Balance {
                balance_cents: *balance_cents,
            },
            None => Answer::Rejected {
                reason: format!("no account `{account}`"),
            },
        }
    }

    /// `GET /credits?idempotency_key=K`, the reconcile hook's read: the credit carrying `key`
    /// that billing still remembers and already shows. A billing that ignores keys finds nothing.
    pub fn find_credit(&self, key: &str, now_ms: u64) -> Option<&Entry> {
        self.entries.iter().find(|entry| {
            entry.reverses.is_none()
                && entry.key.as_deref() == Some(key)
                && self.keeps(entry, now_ms)
                && self.shows(entry, now_ms)
        })
    }

    /// `POST /credits/void`: posts a reversal on the account, of the credit found by key if
    /// any. Like many real billing APIs it does not refuse when it finds none, which is why a
    /// blind void takes the customer's money.
    pub fn void(&mut self, key: &str, account: &str, amount_cents: u32, intent: &str, now_ms: u64) -> Answer {
        let Some(balance) = self.balances.get(account).copied() else {
            return Answer::Rejected {
                reason: format!("no account `{account}`"),
            };
        };
        let reverses = self
            .entries
            .iter()
            .find(|entry| entry.reverses.is_none() && entry.key.as_deref() == Some(key))
            .map(|entry| entry.id.clone());
        if let Some(credit) = &reverses
            && let Some(reversal) = self.entries.iter().find(|entry| entry.reverses.as_ref() == Some(credit))
        {
            return Answer::Repeat {
                credit_id: reversal.id.clone(),
                balance_cents: balance,
            };
        }
        let id = format!("rv_{:04}", self.entries.len() + 1);
        let balance_cents = balance - i64::from(amount_cents);
        self.balances.insert(account.to_owned(), balance_cents);
        self.entries.push(Entry {
            id: id.clone(),
            account: account.to_owned(),
            amount_cents: -i64::from(amount_cents),
            key: None,
            intent: intent.to_owned(),
            at_ms: now_ms,
            reverses,
        });
        Answer::Applied {
            credit_id: id,
            balance_cents,
        }
    }

    fn entry(&self, id: &str) -> Option<&Entry> {
        self.entries.iter().rfind(|entry| entry.id == id)
    }
}

/// A credit as the tool sends it.
#[derive(Clone, Debug)]
pub struct CreditRequest {
    pub account: String,
    pub amount_cents: u32,
    pub memo: String,
    /// The `Idempotency-Key` header, when the tool passes one.
    pub key: Option<String>,
    pub intent: String,
}
