//! The scripted honest operator a level may hold ([`crate::level::HonestOperator`]): they
//! work the queue of calls runs are paused on, check billing's entries by hand, and resolve
//! each call with what they find — compare-and-set from the `indeterminate` they saw, exactly
//! like the player's console. Whoever's decision reaches the ledger first lands; the other one
//! gets the 409. Deterministic: a fixed delay in virtual time, scheduled on the clock.

use super::clock::Event;
use super::network::requests_on_the_way;
use super::timeline::Actor;
use super::{FIRST_NODE, PlayError, SimError, Simulation};
use crate::billing::{Answer, EntryKind};
use crate::ledger::SettleError;
use crate::runtime::key::IdempotencyKey;
use crate::runtime::operator::{self, OperatorError, ResolveRequest};
use crate::runtime::rules::Status;

impl Simulation {
    /// A run paused on `key`: if the level has an honest operator and the call is in their
    /// queue (`indeterminate`) for the first time, they take it and will decide in their time.
    pub(super) fn honest_operator_queues(&mut self, key: &IdempotencyKey) -> Result<(), SimError> {
        let Some(honest) = self.level.honest_operator.clone() else {
            return Ok(());
        };
        let listed = self
            .observer
            .record(key)?
            .is_some_and(|record| record.status == Status::Indeterminate);
        if !listed || !self.honest_queue.insert(key.to_string()) {
            return Ok(());
        }
        self.schedule_honest_check(key, &honest.name, honest.checks_after_ms, "sees");
        Ok(())
    }

    fn schedule_honest_check(&mut self, key: &IdempotencyKey, name: &str, after_ms: u32, verb: &str) {
        let at_ms = self.clock.now_ms + u64::from(after_ms);
        self.clock.schedule(at_ms, Event::HonestCheck { key: key.to_string() });
        self.log(
            Actor::Operator(name.to_owned()),
            "queue",
            Some(run_of_key(key)),
            Some(key.to_string()),
            format!("{verb} {key} indeterminate in the queue; will check billing by hand and decide at {at_ms} ms"),
        );
    }

    /// The honest operator's turn on `key`: billing's entries, looked at by hand, then a
    /// decision compare-and-set from `indeterminate`. A request still on its way makes "no
    /// credit" no proof, so they look again later instead of guessing.
    pub(super) fn honest_operator_checks(&mut self, key: &str) -> Result<(), SimError> {
        let honest = self
            .level
            .honest_operator
            .clone()
            .expect("a check is scheduled only in a level with an honest operator");
        let key = IdempotencyKey::parse(key).expect("queued keys are keys");
        let actor = Actor::Operator(honest.name.clone());
        let found = self.checked_by_hand(&key);
        if found.is_none() && requests_on_the_way(&self.messages, key.as_str()) > 0 {
            self.schedule_honest_check(&key, &honest.name, honest.checks_after_ms, "still sees");
            return Ok(());
        }
        let (status, reason, result) = match found {
            Some((receipt, credit)) => (
                Status::Completed,
                format!("checked billing by hand: {credit}"),
                Some(receipt),
            ),
            None => (
                Status::Failed,
                format!("checked billing by hand: no credit carries {key}"),
                None,
            ),
        };
        let mut request = ResolveRequest::new(status, reason.clone(), honest.name.clone());
        request.expected_status = Some(Status::Indeterminate);
        request.result = result;
        let run = Some(run_of_key(&key));
        match operator::resolve(&mut self.observer, &key, &request, self.clock.now_ms) {
            Ok(record) => {
                self.wake_parked(FIRST_NODE, &key, None);
                self.log(
                    actor,
                    "resolve",
                    run,
                    Some(key.to_string()),
                    format!("resolves {key} as {} — \"{reason}\"", record.status),
                );
            }
            Err(OperatorError::Settle(SettleError::Stale { expected, current, .. })) => {
                let winner = self.last_decider(&key).unwrap_or_else(|| "someone".to_owned());
                let name = &honest.name;
                self.log(
                    actor,
                    "resolve",
                    run,
                    Some(key.to_string()),
                    format!(
                        "409 conflict: {name} expected {key} to be {expected}, but {winner} settled it {} first; {name}'s {status} was refused",
                        current.status
                    ),
                );
            }
            Err(OperatorError::Ledger(error) | OperatorError::Settle(SettleError::Ledger(error))) => {
                return Err(error.into());
            }
            Err(error) => unreachable!("the honest operator's decision is well formed and its call exists: {error}"),
        }
        Ok(())
    }

    /// What a person finds in billing's entries for `key`: the credit stored under it, or —
    /// when billing holds no key for it — a credit for the same refund (its run and step), as
    /// someone reading the account's entries would. A credit already reversed does not count.
    fn checked_by_hand(&self, key: &IdempotencyKey) -> Option<(String, String)> {
        if let Some((receipt, credit)) = self.reconcile_lookup(key) {
            return Some((receipt, format!("{credit} carries {key}")));
        }
        let billing = &self.world.billing;
        let intents: Vec<String> = self
            .call_items
            .get(key.as_str())
            .into_iter()
            .flatten()
            .map(|(run, item)| format!("{run}/{item}"))
            .collect();
        let entry = billing.entries.iter().find(|entry| {
            entry.kind == EntryKind::Credit
                && entry
                    .metadata
                    .get("intent")
                    .is_some_and(|intent| intents.contains(intent))
                && !billing.is_reversed(&entry.id)
        })?;
        let receipt = Answer::Applied {
            credit_id: entry.id.clone(),
            balance_cents: billing.balance(&entry.account).unwrap_or(0),
        }
        .receipt();
        Some((
            receipt,
            format!(
                "credit {} pays the same refund, though billing keeps no key for it",
                entry.id
            ),
        ))
    }

    /// With an honest operator, the player's console lists what theirs does: calls a run is
    /// paused on, seen `indeterminate`. A decision on a call still in flight, or one that does
    /// not say it was made on `indeterminate`, is refused before it reaches the ledger.
    pub(crate) fn check_the_queue(
        &self,
        key: &IdempotencyKey,
        expected_status: Option<Status>,
    ) -> Result<(), PlayError> {
        let Some(honest) = &self.level.honest_operator else {
            return Ok(());
        };
        if expected_status != Some(Status::Indeterminate) {
            return Err(PlayError::QueueExpectsIndeterminate {
                key: key.to_string(),
                honest: honest.name.clone(),
                expected: expected_status.map_or_else(|| "no status".to_owned(), |status| status.to_string()),
            });
        }
        if self.honest_queue.contains(key.as_str()) {
            return Ok(());
        }
        let status = self
            .observer
            .record(key)
            .map_err(OperatorError::from)?
            .map(|record| record.status)
            .ok_or_else(|| OperatorError::Settle(SettleError::NotFound(key.clone())))?;
        Err(PlayError::NotInTheQueue {
            key: key.to_string(),
            status,
            honest: honest.name.clone(),
        })
    }

    /// The calls the queue has listed (seen `indeterminate`, whatever they are now), in key
    /// order: what a player racing the honest operator may act on, stale or not.
    pub fn queued_calls(&self) -> Vec<String> {
        self.honest_queue.iter().cloned().collect()
    }
}

/// The run a per-call key belongs to (`r1` of `r1:c1`).
fn run_of_key(key: &IdempotencyKey) -> String {
    key.as_str().split(':').next().unwrap_or_default().to_owned()
}
