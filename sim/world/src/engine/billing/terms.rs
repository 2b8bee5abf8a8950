//! Billing's terms, as a provider publishes them: how long it keeps an idempotency key, and
//! how long its lookups lag behind the credits it applied. Both are judged on the simulator's
//! clock (`now_ms` is always given), so a run paused for hours in virtual time meets a billing
//! that forgot its key, exactly as a real one would.

use serde::{Deserialize, Serialize};

use super::{Billing, Entry, Lookup};

/// How long billing keeps a key and how long its lookups lag. `None` for either: forever, and
/// at once (the billing of every level before these terms).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Terms {
    /// A key is honoured (a repeat gets the first answer) and found by a lookup for this long
    /// after the credit it made; past it billing pays a resend again and a lookup finds nothing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key_retention_ms: Option<u64>,
    /// A credit shows to lookups by key only this long after billing applied it (an eventually
    /// consistent read): sooner, the lookup finds nothing although the credit landed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lookup_settle_ms: Option<u64>,
}

impl Terms {
    /// Terms that cannot be meant, in words: a key kept for no time, or forgotten before a
    /// lookup could ever show its credit.
    pub fn problem(&self) -> Option<String> {
        match (self.key_retention_ms, self.lookup_settle_ms) {
            (Some(0), _) => Some("billing_key_retention_ms is 0: billing must keep a key for some time".to_owned()),
            (Some(retention), Some(settle)) if settle >= retention => Some(format!(
                "billing_lookup_settle_ms ({settle}) is not less than billing_key_retention_ms ({retention}): \
                 no lookup could ever find a credit by its key"
            )),
            _ => None,
        }
    }

    /// Whether a key first used by a credit applied at `applied_at_ms` is still kept at `now_ms`.
    pub fn keeps(&self, applied_at_ms: u64, now_ms: u64) -> bool {
        self.key_retention_ms
            .is_none_or(|retention| now_ms < applied_at_ms.saturating_add(retention))
    }

    /// Whether a credit applied at `applied_at_ms` shows to a lookup at `now_ms`.
    pub fn shows(&self, applied_at_ms: u64, now_ms: u64) -> bool {
        self.lookup_settle_ms
            .is_none_or(|settle| now_ms >= applied_at_ms.saturating_add(settle))
    }
}

impl Billing {
    /// Billing with these terms (a level's are checked when it loads: [`Terms::problem`]).
    pub fn with_terms(mut self, terms: Terms) -> Billing {
        self.terms = terms;
        self
    }

    /// The reconcile hook's lookup at `now_ms`, as billing answers it under its terms: the
    /// credit stored under `key` (as a key or in metadata) whose key billing still keeps and
    /// which its lookups already show. [`Billing::find_credit`] is the ground truth instead.
    pub fn find_credit_now(&self, key: &str, now_ms: u64) -> Option<&Entry> {
        self.credits_carrying(key)
            .find(|entry| self.terms.keeps(entry.at_ms, now_ms) && self.terms.shows(entry.at_ms, now_ms))
    }
}

impl Billing {
    /// [`Billing::look_up`] as billing's API answers it at `now_ms`, under its terms: a credit
    /// whose key it forgot, or which its lookups do not show yet, is not there.
    pub fn look_up_now(&self, key: &str, in_flight: u32, now_ms: u64) -> Option<Lookup> {
        let mut lookup = self.look_up(key, in_flight)?;
        if self.terms == Terms::default() {
            return Some(lookup);
        }
        let shown: Vec<&Entry> = self
            .credits_carrying(key)
            .filter(|entry| self.terms.keeps(entry.at_ms, now_ms) && self.terms.shows(entry.at_ms, now_ms))
            .collect();
        lookup.credits_under_key = u32::try_from(shown.len()).unwrap_or(u32::MAX);
        lookup.credit = shown.first().map(|entry| (*entry).clone());
        lookup.balance_cents = lookup.credit.as_ref().and_then(|credit| self.balance(&credit.account));
        Some(lookup)
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Account, Answer, CreditRequest, KeyHandling};
    use super::*;

    const DAY_MS: u64 = 86_400_000;

    fn billing(terms: Terms) -> Billing {
        let account = Account {
            id: "acct_ada".into(),
            owner: "Ada".into(),
            balance_cents: 0,
        };
        Billing::new(KeyHandling::Honour, &[account]).with_terms(terms)
    }

    fn request() -> CreditRequest {
        CreditRequest {
            account: "acct_ada".into(),
            amount_cents: 2500,
            memo: "refund".into(),
            idempotency_key: Some("r1:c1".into()),
            intent: "r1/0".into(),
        }
    }

    #[test]
    fn a_key_past_its_retention_is_forgotten_and_a_resend_pays_again() {
        let mut billing = billing(Terms {
            key_retention_ms: Some(DAY_MS),
            lookup_settle_ms: None,
        });
        billing.credit(&request(), 0);
        assert!(matches!(billing.credit(&request(), DAY_MS - 1), Answer::Repeat { .. }));
        assert_eq!(
            billing
                .find_credit_now("r1:c1", DAY_MS - 1)
                .map(|entry| entry.id.as_str()),
            Some("cr_0001")
        );
        assert_eq!(
            billing.find_credit_now("r1:c1", DAY_MS),
            None,
            "forgotten: found by nobody"
        );
        assert!(
            billing.find_credit("r1:c1").is_some(),
            "the credit itself is still there"
        );
        assert!(
            matches!(billing.credit(&request(), DAY_MS), Answer::Applied { .. }),
            "paid again"
        );
        assert_eq!(billing.effects_for("r1/0"), (2, 5000));
    }

    #[test]
    fn a_credit_shows_to_lookups_only_after_the_settle_time() {
        let mut billing = billing(Terms {
            key_retention_ms: Some(DAY_MS),
            lookup_settle_ms: Some(2_000),
        });
        billing.credit(&request(), 100);
        assert_eq!(billing.find_credit_now("r1:c1", 2_099), None, "landed, not shown yet");
        assert!(billing.find_credit_now("r1:c1", 2_100).is_some());
        assert!(
            matches!(billing.credit(&request(), 200), Answer::Repeat { .. }),
            "the key is honoured at once: only lookups lag"
        );
    }

    #[test]
    fn terms_that_cannot_be_meant_are_named() {
        let zero = Terms {
            key_retention_ms: Some(0),
            lookup_settle_ms: None,
        };
        assert!(zero.problem().is_some_and(|problem| problem.contains("retention")));
        let backwards = Terms {
            key_retention_ms: Some(1_000),
            lookup_settle_ms: Some(1_000),
        };
        assert!(backwards.problem().is_some_and(|problem| problem.contains("settle")));
        assert_eq!(Terms::default().problem(), None);
    }
}
