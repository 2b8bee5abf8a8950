//! What billing holds under one key, and what an operator's compensation makes of it.

use serde::{Deserialize, Serialize};

use super::Entry;
use crate::billing_tools::CreditArguments;
use crate::ledger::ExecutionRecord;
use crate::runtime::operator::{Effect, LookupError};
use crate::runtime::rules::{AbsentAction, AbsentFacts, absent_action};
use crate::runtime::tool::ToolDeclaration;
use crate::text::{counted, duration_words};

/// What billing holds under one idempotency key: the compensation's read, before anything
/// is undone (`GET /v1/credits?idempotency_key=K` answers it over HTTP).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Lookup {
    pub credit: Option<Entry>,
    pub balance_cents: Option<i64>,
    /// How many credits carry the key: more than one when billing keeps keys only in
    /// metadata and a repeat was paid again. `credit` is the first.
    pub credits_under_key: u32,
    /// Requests carrying this key that billing received and has not applied yet: an
    /// operator who finds no credit waits for this to be 0 before deciding "failed".
    pub in_flight: u32,
}

impl Lookup {
    /// [`Lookup::effect`] of a lookup billing's API answered under its terms (the one the
    /// reconcile hook makes), with "nothing there" weighed as the hook's runtime weighs it
    /// (decision table 6, every guard on) by `tool`'s declared `key_retention_ms` and
    /// `lookup_settle_ms`: nothing under a key older than billing keeps keys is "expired, not
    /// absent", and nothing sooner than the settle time after the last send is "not yet". In
    /// both nothing is undone and nothing recorded; only a "nothing" that proves absence
    /// settles the call as having paid nothing.
    pub fn effect_as_declared(
        self,
        record: &ExecutionRecord,
        billing: &str,
        tool: Option<&ToolDeclaration>,
        now_ms: u64,
    ) -> Result<Effect, LookupError> {
        let key = record.key.as_str();
        if let Some(tool) = tool
            && self.credit.is_none()
            && self.in_flight == 0
        {
            let facts = AbsentFacts {
                lookup_settle_ms: tool.lookup_settle_ms,
                key_retention_ms: tool.key_retention_ms,
                since_reserved_ms: now_ms.saturating_sub(record.created_at_ms),
                since_last_send_ms: now_ms.saturating_sub(record.updated_at_ms),
                retention_guard: true,
                settle_guard: true,
            };
            match absent_action(facts) {
                AbsentAction::Expired => {
                    return Err(LookupError::CannotLookUp(format!(
                        "{billing} shows nothing under {key}, but the key was reserved {} ago and billing keeps keys \
                         for {}: expired, not absent. Nothing was voided and nothing recorded: check billing's \
                         entries by hand and resolve the call instead",
                        duration_words(facts.since_reserved_ms),
                        duration_words(tool.key_retention_ms.unwrap_or_default())
                    )));
                }
                AbsentAction::AskAgain { after_ms } => {
                    return Err(LookupError::InFlight(format!(
                        "{billing} shows nothing under {key} yet, but its lookups may lag {} and {key} was last \
                         written {} ago: not proof. Nothing was voided; ask again in {}",
                        duration_words(tool.lookup_settle_ms.unwrap_or_default()),
                        duration_words(facts.since_last_send_ms),
                        duration_words(after_ms)
                    )));
                }
                AbsentAction::StillUnknown | AbsentAction::SettleFailed => {}
            }
        }
        self.effect(record, billing)
    }

    /// What an operator's compensation of `record` makes of this lookup. `billing` says
    /// where billing is ("billing at http://…") in the finding that settles a call which
    /// paid nothing, as the record's history keeps it. One reading for every billing: the
    /// drill's server over HTTP and the simulated world in the game.
    pub fn effect(self, record: &ExecutionRecord, billing: &str) -> Result<Effect, LookupError> {
        let key = record.key.as_str();
        match self.credit {
            None if self.in_flight > 0 => Err(LookupError::InFlight(format!(
                "billing holds no credit under {key} yet, but is still applying {} with that key; ask again \
                 in a moment",
                counted(u64::from(self.in_flight), "request", "requests")
            ))),
            None => Ok(Effect::Absent {
                detail: format!(
                    "{billing} holds no credit under {key} and is applying no request with it: the call did \
                     not take effect, so nothing was voided"
                ),
            }),
            Some(_) if self.credits_under_key > 1 => Err(LookupError::Ambiguous(format!(
                "billing holds {} credits under {key} (it keeps keys only in metadata, and paid a repeat \
                 again): voiding one would leave the others. Nothing was voided; void them by hand",
                self.credits_under_key
            ))),
            Some(credit) => {
                let arguments: CreditArguments = serde_json::from_str(&record.arguments).map_err(|error| {
                    LookupError::Ambiguous(format!(
                        "the arguments of {key} are not a credit's ({error}), so credit {} under its key cannot \
                         be checked against them. Nothing was voided",
                        credit.id
                    ))
                })?;
                if credit.account != arguments.account || credit.amount_cents != i64::from(arguments.amount_cents) {
                    return Err(LookupError::Ambiguous(format!(
                        "billing's credit {} under {key} is {} cents to {}, but the call asked {} cents to {}. \
                         Nothing was voided; a person checks",
                        credit.id, credit.amount_cents, credit.account, arguments.amount_cents, arguments.account
                    )));
                }
                Ok(Effect::Found {
                    detail: format!(
                        "billing holds credit {} of {} cents to {} under {key}",
                        credit.id, credit.amount_cents, credit.account
                    ),
                    reference: credit.id,
                })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Account, Billing, CreditRequest, KeyHandling, Terms};
    use super::*;
    use crate::runtime::key::IdempotencyKey;
    use crate::runtime::rules::Status;
    use crate::runtime::tool::SideEffect;

    const DAY_MS: u64 = 86_400_000;

    /// Billing with Ada's credit under r1:c1 applied at `landed_ms`, under `terms`.
    fn billing_with_credit(terms: Terms, landed_ms: u64) -> Billing {
        let account = Account {
            id: "acct_ada".into(),
            owner: "Ada".into(),
            balance_cents: 0,
        };
        let mut billing = Billing::new(KeyHandling::Honour, &[account]).with_terms(terms);
        let request = CreditRequest {
            account: "acct_ada".into(),
            amount_cents: 2500,
            memo: "refund".into(),
            idempotency_key: Some("r1:c1".into()),
            intent: "r1/0".into(),
        };
        billing.credit(&request, landed_ms);
        billing
    }

    fn record(reserved_ms: u64, written_ms: u64) -> ExecutionRecord {
        ExecutionRecord::new(
            IdempotencyKey::parse("r1:c1").expect("a key"),
            "r1",
            "c1",
            "issue_credit",
            SideEffect::External,
            r#"{"account":"acct_ada","amount_cents":2500,"memo":"refund"}"#,
            "w1",
        )
        .with_outcome(Status::Completed, 1, Some("{}".into()))
        .with_times(reserved_ms, written_ms)
    }

    fn tool(terms: &str) -> ToolDeclaration {
        ron::from_str(&format!(
            "(name: \"issue_credit\", side_effect: external, operation: credit, reconcile: true, {terms})"
        ))
        .expect("a tool declaration")
    }

    /// The compensation's read as the simulator makes it: billing's API under its terms,
    /// weighed by the tool's declared terms.
    fn compensation_read(billing: &Billing, tool: &ToolDeclaration, now_ms: u64) -> Result<Effect, LookupError> {
        billing
            .look_up_now("r1:c1", 0, now_ms)
            .expect("billing honours keys")
            .effect_as_declared(&record(0, 100), "billing", Some(tool), now_ms)
    }

    #[test]
    fn a_credit_billing_forgot_is_expired_not_absent_to_a_compensation() {
        let terms = Terms {
            key_retention_ms: Some(DAY_MS),
            lookup_settle_ms: None,
        };
        let billing = billing_with_credit(terms, 50);
        let tool = tool("key_retention_ms: Some(86400000)");
        let later = 30 * 3_600_000;
        match compensation_read(&billing, &tool, later) {
            Err(LookupError::CannotLookUp(why)) => assert!(why.contains("expired, not absent"), "{why}"),
            other => panic!("a forgotten key is not proof of absence: {other:?}"),
        }
        // The ground truth still holds the credit: a read of it would have voided it.
        let truth = billing.look_up("r1:c1", 0).expect("billing honours keys");
        assert!(matches!(
            truth.effect(&record(0, 100), "billing"),
            Ok(Effect::Found { .. })
        ));
        assert!(matches!(
            compensation_read(&billing, &tool, DAY_MS - 1),
            Ok(Effect::Found { .. })
        ));
    }

    #[test]
    fn a_credit_billing_does_not_show_yet_is_not_yet_to_a_compensation() {
        let terms = Terms {
            key_retention_ms: None,
            lookup_settle_ms: Some(1_500),
        };
        let billing = billing_with_credit(terms, 50);
        let tool = tool("lookup_settle_ms: Some(2000)");
        match compensation_read(&billing, &tool, 600) {
            Err(LookupError::InFlight(why)) => assert!(why.contains("not proof"), "{why}"),
            other => panic!("a lookup inside the settle time is not proof of absence: {other:?}"),
        }
        assert!(matches!(
            compensation_read(&billing, &tool, 2_100),
            Ok(Effect::Found { .. })
        ));
        // Past the declared settle time, nothing there is proof: nothing to void.
        let empty = billing_with_credit(terms, 50);
        let nothing = empty
            .look_up_now("r9:c9", 0, 5_000)
            .expect("billing honours keys")
            .effect_as_declared(&record(0, 100), "billing", Some(&tool), 5_000);
        assert!(matches!(nothing, Ok(Effect::Absent { .. })), "{nothing:?}");
    }
}
