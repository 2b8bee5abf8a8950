//! The world Penny changes: the level's billing, what landed in it and under which call, and
//! the one way an operator undoes an effect there (look the credit up by the call's key,
//! void it by its id, once) — the same steps the HTTP API takes against a billing server.

use std::collections::BTreeMap;

use super::Simulation;
use super::network::Message;
use super::timeline::Actor;
use crate::billing::{Answer, Billing, CreditRequest, RecordRequest};
use crate::billing_tools::{CreditArguments, Operation};
use crate::checker::{CompensationBy, CompensationLog, CreditOrigin};
use crate::ledger::ExecutionRecord;
use crate::runtime::key::IdempotencyKey;
use crate::runtime::operator::{CompensationTarget, Effect, LookupError, UndoError};
use crate::runtime::run::ToolCall;
use crate::runtime::tool::ToolDeclaration;

/// Billing and what the simulator knows about it that no runtime could claim: which call's
/// request made each credit.
#[derive(Debug)]
pub(super) struct World {
    pub(super) billing: Billing,
    pub(super) compensations: Vec<CompensationLog>,
    /// Each credit billing applied → the request that made it: its run and the runtime's key
    /// (ground truth for the checker, whatever key travelled downstream).
    pub(super) effects: BTreeMap<String, CreditOrigin>,
}

impl World {
    pub(super) fn new(billing: Billing) -> World {
        World {
            billing,
            compensations: Vec::new(),
            effects: BTreeMap::new(),
        }
    }
}

/// Who answers a request for `operation`, as the timeline names them.
fn operation_actor(operation: Operation) -> &'static str {
    match operation {
        Operation::Credit | Operation::LookupBalance => "billing",
        Operation::SendEmail => "the mail server",
        Operation::ChangeOwner => "the accounts service",
        Operation::DeleteRecord => "the records service",
    }
}

/// The level's billing as a compensation's target: the reads and the void an operator's
/// compensation makes, exactly as a billing server answers them over HTTP.
pub(super) struct SimulatedBilling<'a> {
    pub(super) tools: &'a [ToolDeclaration],
    pub(super) world: &'a mut World,
    /// The wire: a request on it that carries the key is in flight, not applied yet.
    pub(super) messages: &'a BTreeMap<u32, Message>,
    pub(super) now_ms: u64,
}

impl CompensationTarget for SimulatedBilling<'_> {
    fn has_compensation(&self, tool: &str) -> bool {
        self.tools
            .iter()
            .any(|declared| declared.name == tool && declared.compensation)
    }

    fn find_effect(&mut self, record: &ExecutionRecord) -> Result<Effect, LookupError> {
        let key = record.key.as_str();
        // The lookup the reconcile hook makes: billing's API under its terms (a key it forgot,
        // a credit its lookups do not show yet, are not there), weighed by the tool's terms.
        let in_flight = super::network::requests_on_the_way(self.messages, key);
        let tool = self.tools.iter().find(|declared| declared.name == record.tool);
        match self.world.billing.look_up_now(key, in_flight, self.now_ms) {
            Some(lookup) => lookup.effect_as_declared(record, "the level's billing", tool, self.now_ms),
            None => Err(LookupError::CannotLookUp(format!(
                "the level's billing ignores idempotency keys: it stores none, so nobody can tell whether {key} \
                 paid anything or which credit to void. Nothing was voided and nothing recorded: check billing's \
                 entries by hand and resolve the call instead"
            ))),
        }
    }

    fn undo(&mut self, record: &ExecutionRecord, reference: &str) -> Result<String, UndoError> {
        let answer = self.world.billing.void_by_id(reference, self.now_ms);
        let outcome = answer.void_outcome(reference);
        self.world.compensations.push(CompensationLog {
            key: record.key.to_string(),
            by: CompensationBy::Operator,
            answer,
        });
        outcome
    }
}

impl Simulation {
    fn tool(&self, name: &str) -> &ToolDeclaration {
        self.level
            .tools
            .iter()
            .find(|tool| tool.name == name)
            .expect("calls name declared tools")
    }

    /// A request reaches billing: it applies it (or answers a repeat, or refuses) and the
    /// answer goes back on the wire.
    pub(super) fn billing_applies(&mut self, request: Message) {
        let now = self.clock.now_ms;
        let arguments = CreditArguments::of_call(&request.call);
        let operation = Operation::of(self.tool(&request.call.tool)).expect("levels name billing's operations");
        let intent = format!("{}/{}", request.run, request.call.item);
        let record = || RecordRequest {
            account: arguments.account.clone(),
            memo: arguments.memo.clone(),
            owner: arguments.owner.clone(),
            idempotency_key: request.downstream_key.clone(),
            intent: intent.clone(),
            call_key: request.key.clone(),
        };
        let answer = match operation {
            Operation::Credit => self.world.billing.credit(
                &CreditRequest {
                    account: arguments.account.clone(),
                    amount_cents: arguments.amount_cents,
                    memo: arguments.memo.clone(),
                    idempotency_key: request.downstream_key.clone(),
                    intent: intent.clone(),
                },
                now,
            ),
            Operation::LookupBalance => Answer::Balance {
                balance_cents: self.world.billing.balance(&arguments.account).unwrap_or(0),
            },
            Operation::SendEmail => self.world.billing.send_email(&record(), now),
            Operation::ChangeOwner => self.world.billing.change_owner(&record(), now),
            Operation::DeleteRecord => self.world.billing.delete_record(&record(), now),
        };
        let customer = self.level.world.owner_of(&arguments.account);
        let text = match &answer {
            Answer::Applied {
                credit_id,
                balance_cents,
            } => format!(
                "billing credits {} to {} ({credit_id}); balance {}",
                super::dollars(i64::from(arguments.amount_cents)),
                arguments.account,
                super::dollars(*balance_cents)
            ),
            Answer::Repeat { credit_id, .. } => format!(
                "{} recognises key {}: answers with {credit_id}, {}",
                if operation == Operation::Credit {
                    "billing"
                } else {
                    "the world"
                },
                request.downstream_key.as_deref().unwrap_or("?"),
                if operation == Operation::Credit {
                    "pays nothing"
                } else {
                    "does nothing again"
                }
            ),
            Answer::Rejected { reason } => format!("{} refuses: {reason}", operation_actor(operation)),
            Answer::Balance { balance_cents } => {
                format!("billing reads the balance: {}", super::dollars(*balance_cents))
            }
            Answer::Emailed { email_id } => format!(
                "the mail server delivers \"{}\" to {customer}'s outbox ({email_id})",
                arguments.memo
            ),
            Answer::OwnerSet { owner, previous } => {
                format!(
                    "the accounts service sets {}'s owner to {owner} (was {previous})",
                    arguments.account
                )
            }
            Answer::Deleted { record } => format!("the records service deletes record {record}"),
        };
        if let Answer::Applied { credit_id, .. } = &answer
            && operation == Operation::Credit
        {
            self.world.effects.insert(
                credit_id.clone(),
                CreditOrigin {
                    run: request.run.clone(),
                    key: request.key.clone(),
                },
            );
        }
        self.log(
            Actor::Billing,
            "billing applies",
            Some(request.run.clone()),
            Some(request.key.clone()),
            text,
        );
        // Something that could settle a parked call changed: its effect may be findable now.
        if matches!(answer, Answer::Applied { .. } | Answer::Repeat { .. }) {
            let key = IdempotencyKey::parse(&request.key).expect("message keys are keys");
            self.look_again(&key);
        }
        self.respond(request, answer);
    }

    /// The reconcile hook's read of `key` in billing: the receipt to record and what was found.
    /// Billing answers under its terms, now: a key it forgot, or a credit its lookups do not
    /// show yet, is not found.
    pub(super) fn reconcile_lookup(&self, key: &IdempotencyKey) -> Option<(String, String)> {
        let entry = self.world.billing.find_credit_now(key.as_str(), self.clock.now_ms)?;
        let receipt = Answer::Applied {
            credit_id: entry.id.clone(),
            balance_cents: self.world.billing.balance(&entry.account).unwrap_or(0),
        }
        .receipt();
        Some((receipt, format!("credit {}", entry.id)))
    }

    /// A naive runtime's reflex compensation: `void_credit` by key, with no lookup first — it
    /// posts a reversal even when no credit exists. Returns what billing answered, in words.
    pub(super) fn reflex_void(&mut self, run: &str, key: &IdempotencyKey, call: &ToolCall) -> String {
        let intent = format!("{run}/{}", call.item);
        let arguments = CreditArguments::of_call(call);
        let answer = self.world.billing.void_credit(
            key.as_str(),
            &arguments.account,
            arguments.amount_cents,
            &intent,
            self.clock.now_ms,
        );
        let words = format!("billing posts {}", answer.receipt());
        self.world.compensations.push(CompensationLog {
            key: key.to_string(),
            by: CompensationBy::Runtime,
            answer,
        });
        words
    }

    /// The world as a compensation's target, with the ledger (`observer`) left free for the
    /// compensation's own steps.
    pub(super) fn compensation_parts(&mut self) -> (&mut crate::ledger::Ledger, SimulatedBilling<'_>, u64) {
        let now_ms = self.clock.now_ms;
        let target = SimulatedBilling {
            tools: &self.level.tools,
            world: &mut self.world,
            messages: &self.messages,
            now_ms,
        };
        (&mut self.observer, target, now_ms)
    }

    // ----- an operator outside the simulation (the game's operator HTTP API) -----

    /// What the level's billing holds under `record`'s key: the read an operator's
    /// compensation makes before anything is undone, as a real billing server answers it.
    /// A request on the wire that carries the key is in flight: billing has not applied it.
    pub fn look_up_effect(&mut self, record: &ExecutionRecord) -> Result<Effect, LookupError> {
        let (_, mut target, _) = self.compensation_parts();
        target.find_effect(record)
    }

    /// Voids credit `credit_id`, found under `record`'s key by [`Simulation::look_up_effect`],
    /// for an operator outside the simulation who has claimed the call on the ledger. Voiding
    /// by id never takes money that was not paid, and never takes it twice. It is not a move:
    /// a re-simulation from the tape does not repeat it.
    pub fn undo_for_outside_operator(
        &mut self,
        record: &ExecutionRecord,
        credit_id: &str,
    ) -> Result<String, UndoError> {
        let key = record.key.clone();
        let operator = self
            .observer
            .history(&key)
            .ok()
            .and_then(|history| {
                history
                    .into_iter()
                    .rev()
                    .find(|entry| entry.event == crate::ledger::HistoryEvent::CompensationClaimed)
                    .map(|entry| entry.actor)
            })
            .unwrap_or_else(|| "operator".to_owned());
        let (_, mut target, _) = self.compensation_parts();
        let outcome = target.undo(record, credit_id);
        let run = self.run_of_key(key.as_str());
        let text = match &outcome {
            Ok(done) => format!("compensates {key} over the HTTP API: {done}"),
            Err(problem) => format!("cannot compensate {key} over the HTTP API: {problem}"),
        };
        self.log(
            Actor::Operator(operator),
            "compensate",
            run,
            Some(key.to_string()),
            text,
        );
        outcome
    }
}
