//! The billing world: accounts, balances and credits. The external system Penny changes.
//!
//! Every applied credit (and every reversal) is recorded, so the checker counts effects,
//! not claims. Its state belongs to billing, not to any worker: a worker crash never touches it.

use std::collections::BTreeMap;
use twice_runtime::operator::UndoError;

use serde::{Deserialize, Serialize};

use crate::runtime::ToolAnswer;

pub mod key_handling;
mod lookup;
mod record_rows;
mod records;
mod terms;

pub use key_handling::{KeyHandling, UnknownKeyHandling};
pub use lookup::Lookup;
pub use record_rows::RecordRow;
pub use records::{ChangedBy, Deletion, Email, OwnerChange, RECORDS_MAX, RecordRequest, Records};
pub use terms::Terms;

/// The most credits one billing world records before refusing more (a limit on everything).
pub const CREDITS_MAX: usize = 100_000;

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Account {
    pub id: String,
    pub owner: String,
    #[serde(default)]
    pub balance_cents: i64,
}

/// Whether an entry adds money or takes it back.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EntryKind {
    Credit,
    Reversal,
}

/// One applied movement of money.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entry {
    pub id: String,
    pub kind: EntryKind,
    pub account: String,
    /// Positive for a credit, negative for a reversal.
    pub amount_cents: i64,
    pub memo: String,
    /// The key billing stored (none when it ignores keys or none was sent).
    pub idempotency_key: Option<String>,
    /// Free-form metadata: where a key is kept when billing does not honour it, and
    /// the intent the agent meant (`run_id/item`), so the checker can count per intent.
    pub metadata: BTreeMap<String, String>,
    pub at_ms: u64,
    /// For a reversal: the credit it voids, when one was found.
    pub reverses: Option<String>,
}

/// A request to credit an account.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CreditRequest {
    pub account: String,
    pub amount_cents: u32,
    pub memo: String,
    pub idempotency_key: Option<String>,
    pub intent: String,
}

/// Billing's answer.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Answer {
    /// Applied now.
    Applied { credit_id: String, balance_cents: i64 },
    /// A repeat of a key it honours: the first answer again, nothing applied.
    Repeat { credit_id: String, balance_cents: i64 },
    /// Refused: nothing applied.
    Rejected { reason: String },
    /// A balance read.
    Balance { balance_cents: i64 },
    /// An email landed in the customer's outbox.
    Emailed { email_id: String },
    /// The account's owner is now `owner` (it was `previous`).
    OwnerSet { owner: String, previous: String },
    /// The record is deleted.
    Deleted { record: String },
}

impl Answer {
    /// The receipt the tool returns to the runtime, as canonical JSON.
    pub fn receipt(&self) -> String {
        serde_json::to_string(self).expect("answers serialize")
    }

    pub fn is_rejection(&self) -> bool {
        matches!(self, Answer::Rejected { .. })
    }

    /// The answer as the runtime hears it: the runtime knows no billing, only whether the
    /// request was applied, recognised as a repeat or refused, and the receipt to record.
    pub fn to_tool_answer(&self) -> ToolAnswer {
        let receipt = self.receipt();
        match self {
            Answer::Applied { .. }
            | Answer::Balance { .. }
            | Answer::Emailed { .. }
            | Answer::OwnerSet { .. }
            | Answer::Deleted { .. } => ToolAnswer::Applied { receipt },
            Answer::Repeat { credit_id, .. } => ToolAnswer::Repeat {
                first: credit_id.clone(),
                receipt,
            },
            Answer::Rejected { reason } => ToolAnswer::Rejected {
                reason: reason.clone(),
                receipt,
            },
        }
    }

    /// This answer to a void of `credit_id` by id, in words for the record's history:
    /// `Ok` when the credit is voided (now, or by an earlier reversal), `Err` otherwise.
    pub fn void_outcome(&self, credit_id: &str) -> Result<String, UndoError> {
        match self {
            Answer::Applied {
                credit_id: reversal,
                balance_cents,
            } => Ok(format!(
                "billing voided credit {credit_id} with reversal {reversal}; the account's balance is now \
                 {balance_cents} cents"
            )),
            Answer::Repeat {
                credit_id: reversal, ..
            } => Ok(format!(
                "credit {credit_id} was already voided by {reversal}; billing moved nothing again"
            )),
            Answer::Rejected { reason } => Err(UndoError::Refused(format!(
                "billing refused the void of {credit_id}: {reason}"
            ))),
            Answer::Balance { .. } | Answer::Emailed { .. } | Answer::OwnerSet { .. } | Answer::Deleted { .. } => {
                Err(UndoError::NotAnUndo(format!(
                    "billing answered the void of {credit_id} with {}, not a void; nothing is known to be voided",
                    self.receipt()
                )))
            }
        }
    }
}

/// The billing world's state.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Billing {
    pub key_handling: KeyHandling,
    pub accounts: BTreeMap<String, Account>,
    pub entries: Vec<Entry>,
    /// Honoured keys → (credit id, the request it answered).
    honoured: BTreeMap<String, (String, CreditRequest)>,
    /// How long it keeps keys and how long its lookups lag ([`Terms`]).
    #[serde(default)]
    pub terms: Terms,
    /// The customers' outboxes, the owners' history and the deleted records.
    #[serde(default)]
    pub records: Records,
}

impl Billing {
    /// Whether a reversal points at this credit (it was voided).
    pub fn is_reversed(&self, credit_id: &str) -> bool {
        self.entries
            .iter()
            .any(|entry| entry.reverses.as_deref() == Some(credit_id))
    }

    /// The credits no reversal points at, in the order billing applied them.
    pub fn standing_credits(&self) -> impl Iterator<Item = &Entry> {
        self.entries
            .iter()
            .filter(|entry| entry.kind == EntryKind::Credit && !self.is_reversed(&entry.id))
    }

    pub fn new(key_handling: KeyHandling, accounts: &[Account]) -> Billing {
        Billing {
            key_handling,
            accounts: accounts
                .iter()
                .map(|account| (account.id.clone(), account.clone()))
                .collect(),
            entries: Vec::new(),
            honoured: BTreeMap::new(),
            terms: Terms::default(),
            records: Records::default(),
        }
    }

    pub fn balance(&self, account: &str) -> Option<i64> {
        self.accounts.get(account).map(|account| account.balance_cents)
    }

    /// Applies a credit, or answers a repeat, according to the key handling.
    pub fn credit(&mut self, request: &CreditRequest, now_ms: u64) -> Answer {
        let Some(balance_before) = self.balance(&request.account) else {
            return Answer::Rejected {
                reason: format!("no account `{}`", request.account),
            };
        };
        if request.amount_cents == 0 {
            return Answer::Rejected {
                reason: "a credit must be positive".into(),
            };
        }
        if let Some(key) = &request.idempotency_key
            && let Some((credit_id, first)) = self.honoured_now(key, now_ms)
        {
            if first.account != request.account
                || first.amount_cents != request.amount_cents
                || first.memo != request.memo
            {
                return Answer::Rejected {
                    reason: format!("idempotency key {key} was first used with a different request"),
                };
            }
            return Answer::Repeat {
                credit_id: credit_id.clone(),
                balance_cents: balance_before,
            };
        }
        if self.entries.len() >= CREDITS_MAX {
            return Answer::Rejected {
                reason: format!("billing holds {CREDITS_MAX} entries, its limit"),
            };
        }
        let credit_id = format!("cr_{:04}", self.entries.len() + 1);
        let (stored_key, metadata) = self.keyed_metadata(&request.intent, request.idempotency_key.as_ref());
        if let Some(key) = &stored_key {
            self.honoured.insert(key.clone(), (credit_id.clone(), request.clone()));
        }
        let amount = i64::from(request.amount_cents);
        let account = self.accounts.get_mut(&request.account).expect("checked above");
        account.balance_cents += amount;
        let balance_cents = account.balance_cents;
        self.entries.push(Entry {
            id: credit_id.clone(),
            kind: EntryKind::Credit,
            account: request.account.clone(),
            amount_cents: amount,
            memo: request.memo.clone(),
            idempotency_key: stored_key,
            metadata,
            at_ms: now_ms,
            reverses: None,
        });
        Answer::Applied {
            credit_id,
            balance_cents,
        }
    }

    /// Whether the key that made credit `credit_id` is still kept at `now_ms` ([`Terms`]):
    /// past its retention billing forgets it, and a repeat is a new request.
    /// The credit id and the first request billing still honours under `key` at `now_ms`:
    /// what makes a credit with that key a repeat. `None` when billing does not honour keys,
    /// never saw this one, or has forgotten it (its retention).
    fn honoured_now(&self, key: &str, now_ms: u64) -> Option<&(String, CreditRequest)> {
        if self.key_handling != KeyHandling::Honour {
            return None;
        }
        self.honoured
            .get(key)
            .filter(|(credit_id, _)| self.key_kept(credit_id, now_ms))
    }

    /// Whether `request` would be answered at `now_ms` as a repeat (or refused as another
    /// request under a key billing honours) rather than paid: its key is one billing still
    /// honours.
    pub fn holds_key_of(&self, request: &CreditRequest, now_ms: u64) -> bool {
        request
            .idempotency_key
            .as_deref()
            .is_some_and(|key| self.honoured_now(key, now_ms).is_some())
    }

    fn key_kept(&self, credit_id: &str, now_ms: u64) -> bool {
        self.entries
            .iter()
            .rfind(|entry| entry.id == credit_id)
            .is_none_or(|entry| self.terms.keeps(entry.at_ms, now_ms))
    }

    /// The reconcile hook's lookup: the credit stored under this key, as a key or in
    /// metadata. Read-only. Billing that ignores keys can never answer.
    pub fn find_credit(&self, key: &str) -> Option<&Entry> {
        self.credits_carrying(key).next()
    }

    /// The credits that carry `key`, as a key or in metadata, oldest first.
    fn credits_carrying<'entries>(&'entries self, key: &str) -> impl Iterator<Item = &'entries Entry> {
        self.entries.iter().filter(move |entry| {
            entry.kind == EntryKind::Credit
                && (entry.idempotency_key.as_deref() == Some(key)
                    || entry.metadata.get("idempotency_key").map(String::as_str) == Some(key))
        })
    }

    /// The compensation `void_credit`: posts a reversal of `amount_cents` on the account,
    /// pointing at the credit found by key if there is one. Like many real billing APIs it
    /// does not refuse when no credit is found — which is why voiding a credit that was
    /// never issued takes the customer's money.
    pub fn void_credit(&mut self, key: &str, account: &str, amount_cents: u32, intent: &str, now_ms: u64) -> Answer {
        let Some(balance) = self.balance(account) else {
            return Answer::Rejected {
                reason: format!("no account `{account}`"),
            };
        };
        let reverses = self.find_credit(key).map(|entry| entry.id.clone());
        if let Some(credit) = &reverses
            && self.is_reversed(credit)
        {
            return Answer::Repeat {
                credit_id: credit.clone(),
                balance_cents: balance,
            };
        }
        let id = format!("rv_{:04}", self.entries.len() + 1);
        let amount = i64::from(amount_cents);
        let account_state = self.accounts.get_mut(account).expect("checked above");
        account_state.balance_cents -= amount;
        let balance_cents = account_state.balance_cents;
        let mut metadata = BTreeMap::new();
        metadata.insert("intent".to_owned(), intent.to_owned());
        metadata.insert("voids_key".to_owned(), key.to_owned());
        self.entries.push(Entry {
            id: id.clone(),
            kind: EntryKind::Reversal,
            account: account.to_owned(),
            amount_cents: -amount,
            memo: format!("void of {key}"),
            idempotency_key: None,
            metadata,
            at_ms: now_ms,
            reverses,
        });
        Answer::Applied {
            credit_id: id,
            balance_cents,
        }
    }

    /// The compensation's read of `key`, with `in_flight` requests carrying it not yet
    /// applied. `None` when billing ignores keys: it stores none, so it cannot answer.
    pub fn look_up(&self, key: &str, in_flight: u32) -> Option<Lookup> {
        if self.key_handling == KeyHandling::Ignore {
            return None;
        }
        let credit = self.find_credit(key).cloned();
        Some(Lookup {
            balance_cents: credit.as_ref().and_then(|credit| self.balance(&credit.account)),
            credit,
            credits_under_key: u32::try_from(self.credits_under_key(key)).unwrap_or(u32::MAX),
            in_flight,
        })
    }

    /// How many credits carry this key (as a key or in metadata). Billing that only keeps
    /// keys in metadata pays a repeat again, so one key can stand for several credits.
    pub fn credits_under_key(&self, key: &str) -> usize {
        self.credits_carrying(key).count()
    }

    /// Voids one credit by its id: posts a reversal of exactly that credit on its account.
    /// Unlike [`Billing::void_credit`] it never takes money that was not paid: an unknown
    /// id is refused. It is idempotent: a credit already reversed (by either way of voiding)
    /// answers `Repeat` with the reversal's id, and nothing moves.
    pub fn void_by_id(&mut self, credit_id: &str, now_ms: u64) -> Answer {
        let Some(credit) = self.entries.iter().find(|entry| entry.id == credit_id) else {
            return Answer::Rejected {
                reason: format!("no credit `{credit_id}`"),
            };
        };
        if credit.kind != EntryKind::Credit {
            return Answer::Rejected {
                reason: format!("`{credit_id}` is a reversal, not a credit"),
            };
        }
        let account = credit.account.clone();
        let balance_cents = self.balance(&account).unwrap_or(0);
        if let Some(reversal) = self
            .entries
            .iter()
            .find(|entry| entry.reverses.as_deref() == Some(credit_id))
        {
            return Answer::Repeat {
                credit_id: reversal.id.clone(),
                balance_cents,
            };
        }
        if self.entries.len() >= CREDITS_MAX {
            return Answer::Rejected {
                reason: format!("billing holds {CREDITS_MAX} entries, its limit"),
            };
        }
        let amount_cents = credit.amount_cents;
        let mut metadata = BTreeMap::new();
        if let Some(intent) = credit.metadata.get("intent") {
            metadata.insert("intent".to_owned(), intent.clone());
        }
        let key = credit
            .idempotency_key
            .clone()
            .or_else(|| credit.metadata.get("idempotency_key").cloned());
        if let Some(key) = key {
            metadata.insert("voids_key".to_owned(), key);
        }
        let id = format!("rv_{:04}", self.entries.len() + 1);
        let Some(account_state) = self.accounts.get_mut(&account) else {
            return Answer::Rejected {
                reason: format!("credit `{credit_id}` is on account `{account}`, which billing no longer has"),
            };
        };
        account_state.balance_cents -= amount_cents;
        let balance_cents = account_state.balance_cents;
        self.entries.push(Entry {
            id: id.clone(),
            kind: EntryKind::Reversal,
            account,
            amount_cents: -amount_cents,
            memo: format!("void of {credit_id}"),
            idempotency_key: None,
            metadata,
            at_ms: now_ms,
            reverses: Some(credit_id.to_owned()),
        });
        Answer::Applied {
            credit_id: id,
            balance_cents,
        }
    }

    /// Net money moved for one intent (`run_id/item`), and how many credits landed for it.
    pub fn effects_for(&self, intent: &str) -> (u32, i64) {
        let mut credits = 0;
        let mut net = 0;
        for entry in self
            .entries
            .iter()
            .filter(|entry| entry.metadata.get("intent").map(String::as_str) == Some(intent))
        {
            if entry.kind == EntryKind::Credit {
                credits += 1;
            }
            net += entry.amount_cents;
        }
        (credits, net)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_void_that_is_not_done_says_which_kind_of_not_done() {
        let refused = Answer::Rejected {
            reason: "no such credit".into(),
        };
        assert_eq!(
            refused.void_outcome("cr_1"),
            Err(UndoError::Refused(
                "billing refused the void of cr_1: no such credit".into()
            ))
        );
        assert!(matches!(
            Answer::Balance { balance_cents: 0 }.void_outcome("cr_1"),
            Err(UndoError::NotAnUndo(_))
        ));
        assert!(
            Answer::Applied {
                credit_id: "rv_1".into(),
                balance_cents: 0
            }
            .void_outcome("cr_1")
            .is_ok()
        );
    }

    fn billing(key_handling: KeyHandling) -> Billing {
        Billing::new(
            key_handling,
            &[Account {
                id: "acct_ada".into(),
                owner: "Ada".into(),
                balance_cents: 0,
            }],
        )
    }

    fn request(key: Option<&str>) -> CreditRequest {
        CreditRequest {
            account: "acct_ada".into(),
            amount_cents: 2500,
            memo: "refund".into(),
            idempotency_key: key.map(str::to_owned),
            intent: "r1/0".into(),
        }
    }

    #[test]
    fn honouring_billing_answers_a_repeat_with_the_first_answer() {
        let mut billing = billing(KeyHandling::Honour);
        let first = billing.credit(&request(Some("r1:c1")), 10);
        let again = billing.credit(&request(Some("r1:c1")), 20);
        assert!(matches!(
            first,
            Answer::Applied {
                balance_cents: 2500,
                ..
            }
        ));
        assert_eq!(
            again,
            Answer::Repeat {
                credit_id: "cr_0001".into(),
                balance_cents: 2500
            }
        );
        assert_eq!(billing.effects_for("r1/0"), (1, 2500));
    }

    #[test]
    fn honouring_billing_refuses_the_same_key_with_another_body() {
        let mut billing = billing(KeyHandling::Honour);
        billing.credit(&request(Some("r1:c1")), 10);
        let mut other = request(Some("r1:c1"));
        other.amount_cents = 9900;
        assert!(billing.credit(&other, 20).is_rejection());
        assert_eq!(billing.balance("acct_ada"), Some(2500));
    }

    #[test]
    fn metadata_only_billing_pays_twice_but_can_be_looked_up() {
        let mut billing = billing(KeyHandling::MetadataOnly);
        billing.credit(&request(Some("r1:c1")), 10);
        billing.credit(&request(Some("r1:c1")), 20);
        assert_eq!(billing.effects_for("r1/0"), (2, 5000));
        assert_eq!(
            billing.find_credit("r1:c1").map(|entry| entry.id.as_str()),
            Some("cr_0001")
        );
    }

    #[test]
    fn ignoring_billing_pays_twice_and_cannot_be_looked_up() {
        let mut billing = billing(KeyHandling::Ignore);
        billing.credit(&request(Some("r1:c1")), 10);
        billing.credit(&request(Some("r1:c1")), 20);
        assert_eq!(billing.effects_for("r1/0"), (2, 5000));
        assert!(billing.find_credit("r1:c1").is_none());
    }

    #[test]
    fn voiding_a_credit_never_issued_takes_the_customers_money() {
        let mut billing = billing(KeyHandling::Honour);
        billing.void_credit("r1:c1", "acct_ada", 2500, "r1/0", 5);
        assert_eq!(billing.balance("acct_ada"), Some(-2500));
        assert_eq!(billing.effects_for("r1/0"), (0, -2500));
    }

    #[test]
    fn voiding_twice_reverses_once() {
        let mut billing = billing(KeyHandling::Honour);
        billing.credit(&request(Some("r1:c1")), 10);
        billing.void_credit("r1:c1", "acct_ada", 2500, "r1/0", 20);
        assert!(matches!(
            billing.void_credit("r1:c1", "acct_ada", 2500, "r1/0", 30),
            Answer::Repeat { .. }
        ));
        assert_eq!(billing.balance("acct_ada"), Some(0));
    }

    #[test]
    fn voiding_by_id_reverses_exactly_that_credit_once_and_refuses_unknown_ids() {
        let mut billing = billing(KeyHandling::MetadataOnly);
        billing.credit(&request(Some("r1:c1")), 10);
        assert_eq!(billing.credits_under_key("r1:c1"), 1);
        billing.credit(&request(Some("r1:c1")), 20);
        assert_eq!(
            billing.credits_under_key("r1:c1"),
            2,
            "metadata-only billing paid the repeat"
        );
        let first = billing.void_by_id("cr_0001", 30);
        assert_eq!(
            first,
            Answer::Applied {
                credit_id: "rv_0003".into(),
                balance_cents: 2500
            }
        );
        let reversal = billing.entries.last().unwrap();
        assert_eq!(reversal.reverses.as_deref(), Some("cr_0001"));
        assert_eq!(reversal.metadata.get("voids_key").map(String::as_str), Some("r1:c1"));
        assert_eq!(reversal.metadata.get("intent").map(String::as_str), Some("r1/0"));
        assert_eq!(
            billing.void_by_id("cr_0001", 40),
            Answer::Repeat {
                credit_id: "rv_0003".into(),
                balance_cents: 2500
            },
            "a second void of the same credit moves nothing"
        );
        assert_eq!(billing.balance("acct_ada"), Some(2500));
        assert!(
            billing.void_by_id("cr_0099", 50).is_rejection(),
            "an unknown id takes no money"
        );
        assert!(
            billing.void_by_id("rv_0003", 50).is_rejection(),
            "a reversal is not voided"
        );
        assert_eq!(billing.entries.len(), 3);
    }

    #[test]
    fn unknown_accounts_and_zero_amounts_are_refused() {
        let mut billing = billing(KeyHandling::Honour);
        let mut nobody = request(None);
        nobody.account = "acct_nobody".into();
        assert!(billing.credit(&nobody, 1).is_rejection());
        let mut zero = request(None);
        zero.amount_cents = 0;
        assert!(billing.credit(&zero, 1).is_rejection());
        assert!(billing.entries.is_empty());
    }
}
