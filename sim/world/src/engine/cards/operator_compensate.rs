//! Operator compensates: the player, as an operator, asks for a call's compensation — the
//! runtime never undoes by itself. The runtime looks in billing first and voids the credit by
//! its id, once. Made in the operator console.

use rand::Rng;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use super::operator::{self, default_operator};
use super::{Aim, Aims, Card, DealSpace, Made, Play};
use crate::ledger::{HistoryEvent, LedgerError, SettleError};
use crate::level::Level;
use crate::runtime::key::IdempotencyKey;
use crate::runtime::operator::{LookupError, OperatorError};
use crate::runtime::rules::Status;
use crate::simulator::{Actor, PlayError, SimError, Simulation};
use crate::text::plain;

/// How the timeline begins a compensation the runtime refused after looking in billing.
pub const COMPENSATION_REFUSED: &str = "asks to undo";

/// `OperatorCompensate(key: "r1:c1", reason: "…", operator: "op-crew")`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OperatorCompensate {
    pub key: String,
    pub reason: String,
    #[serde(default = "default_operator")]
    pub operator: String,
}

/// Why the runtime refused an undo after looking in billing, in a timeline row's few words
/// (the HTTP API answers with the runtime's full explanation).
fn refusal_words(key: &IdempotencyKey, error: &OperatorError) -> String {
    match error {
        OperatorError::MayBeOnItsWay { attempts, .. } => format!(
            "no credit under {key}, but its request left ({}) and may still be on its way",
            crate::text::counted(u64::from(*attempts), "attempt", "attempts")
        ),
        OperatorError::EffectMissing { status, .. } => {
            format!("no credit under {key}, though the ledger says {status}: a person checks by hand")
        }
        OperatorError::Lookup(LookupError::CannotLookUp(_), _) => {
            "billing keeps no keys, so nobody can tell what to void".to_owned()
        }
        OperatorError::Lookup(LookupError::InFlight(_), _) => {
            format!("a request with {key} is still being applied: ask again shortly")
        }
        error => error.to_string(),
    }
}

impl Card for OperatorCompensate {
    const TITLE: &'static str = "Operator compensates";
    const AIMS: Aims = Aims::Call;
    // A compensation only takes money back.
    const CAN_PAY_TWICE: bool = false;

    fn aim(&self) -> Aim<'_> {
        Aim::Call(&self.key)
    }

    fn operator(&self) -> Option<&str> {
        Some(&self.operator)
    }

    fn with_key(&self, key: &str) -> Self {
        OperatorCompensate {
            key: key.to_owned(),
            ..self.clone()
        }
    }

    fn problem(&self, level: &Level) -> Option<String> {
        let OperatorCompensate { key, reason, operator } = self;
        if let Some(problem) = operator::signature_problem("compensating", key, reason, operator) {
            return Some(problem);
        }
        match &level.auditor {
            Some(auditor) if auditor.name == *operator => Some(format!(
                "{operator} is the level's scripted auditor; the player compensates as another operator"
            )),
            _ => None,
        }
    }

    fn doubt(&self) -> Option<String> {
        operator::key_doubt(&self.key)
    }

    /// Racing an honest operator, the console holds their queue: the undo is asked on the call
    /// as listed (`indeterminate`); once someone settled it, the request is a 409 and nothing
    /// is undone. A request the runtime refuses after looking in billing (nothing there and its
    /// request may be on its way, or the ledger and billing disagree, or billing cannot tell)
    /// is a move made too, said as the refusal it is: nothing moved.
    fn fire(&self, simulation: &mut Simulation) -> Result<Made, PlayError> {
        let OperatorCompensate { key, reason, operator } = self;
        let key = operator::parse_key(key)?;
        let said = |text: String| Made {
            actor: Actor::Operator(operator.clone()),
            ..Made::by_the_crew(text)
        };
        if simulation.level().honest_operator.is_some() {
            simulation.check_the_queue(&key, Some(Status::Indeterminate))?;
            let current = simulation
                .ledger()
                .record(&key)
                .map_err(OperatorError::from)?
                .map(|record| record.status)
                .ok_or_else(|| OperatorError::Settle(SettleError::NotFound(key.clone())))?;
            if current != Status::Indeterminate {
                let winner = simulation.last_decider(&key).unwrap_or_else(|| "someone".to_owned());
                return Ok(said(format!(
                    "409 conflict: {operator} asked to undo {key} as listed, indeterminate, but {winner} settled it {current} first; nothing was undone"
                )));
            }
        }
        // The one compensation: look the credit up by the call's key, void it by its id, once —
        // as the HTTP API does against a billing server.
        match simulation.compensate_by_operator(&key, reason, operator) {
            Ok(record) => Ok(said(format!("compensates {key} ({}) — \"{reason}\"", record.status))),
            Err(
                error @ (OperatorError::MayBeOnItsWay { .. }
                | OperatorError::EffectMissing { .. }
                | OperatorError::Lookup(..)),
            ) => Ok(said(format!(
                "{COMPENSATION_REFUSED} {key}: refused, nothing undone; the runtime looked in billing first: {}",
                refusal_words(&key, &error)
            ))),
            Err(error) => Err(error.into()),
        }
    }

    fn effect(_simulation: &Simulation) -> String {
        "undo a call that took effect: use the operator console".into()
    }

    /// A call with a compensation may have taken effect: undoing it could still change a
    /// quiet level.
    fn matters_when_quiet(simulation: &Simulation) -> Result<bool, LedgerError> {
        let tools = &simulation.level().tools;
        Ok(simulation.ledger_records()?.iter().any(|record| {
            !matches!(record.status, Status::Failed | Status::Compensated)
                && tools.iter().any(|tool| tool.name == record.tool && tool.compensation)
        }))
    }

    /// Every call not failed or compensated already.
    fn candidates(simulation: &Simulation, operator: &str) -> Result<Vec<Play>, SimError> {
        Ok(simulation
            .ledger_records()
            .map_err(SimError::from)?
            .into_iter()
            .filter(|record| !matches!(record.status, Status::Failed | Status::Compensated))
            .map(|record| {
                OperatorCompensate {
                    key: record.key.to_string(),
                    reason: "the sweep asks for a compensation".to_owned(),
                    operator: operator.to_owned(),
                }
                .into()
            })
            .collect())
    }

    /// Its key is named when it is played, among the calls that exist then.
    fn deal(_space: &DealSpace<'_>, rng: &mut ChaCha8Rng) -> (Self, Option<u64>) {
        let compensate = OperatorCompensate {
            key: String::new(),
            reason: "the explorer asks for a compensation".to_owned(),
            operator: operator::explorer_operator(rng),
        };
        (compensate, Some(rng.random()))
    }

    /// An undo that moved nothing, from this run's timeline and ledger: someone settled the call
    /// before it reached the ledger (a 409), or the runtime looked in billing first and refused
    /// (for a call whose request the crew lost: billing never saw it). `None` when it undid.
    fn missed(&self, simulation: &Simulation, _index: usize) -> Option<String> {
        let OperatorCompensate { key, operator, .. } = self;
        let actor = Actor::Operator(operator.to_owned());
        let said = simulation
            .timeline()
            .iter()
            .filter(|entry| entry.actor == actor && entry.text.contains(key.as_str()))
            .map(|entry| entry.text.as_str())
            .find(|text| text.starts_with("409 conflict") || text.starts_with(COMPENSATION_REFUSED))?;
        if said.starts_with("409 conflict") {
            let history = simulation.ledger_history().ok()?;
            let decision = history
                .iter()
                .find(|entry| entry.key.as_str() == key && entry.event == HistoryEvent::Resolved)?;
            let checked = match &simulation.level().honest_operator {
                Some(honest) if honest.name == decision.actor => "checked billing and ",
                _ => "",
            };
            return Some(format!(
                "{} {checked}settled {key} {} before your undo reached the ledger: asked on the call as listed (indeterminate), it got a 409 and nothing was undone.",
                decision.actor, decision.to_status?
            ));
        }
        let request_lost = simulation.wire_hits().iter().any(|hit| {
            hit.key == *key
                && simulation
                    .played()
                    .get(hit.played)
                    .is_some_and(|action| action.play.card() == super::CardKind::LoseRequest)
        });
        let why = said
            .split_once("the runtime looked in billing first: ")
            .map(|(_, why)| why)?;
        Some(if request_lost {
            format!(
                "You lost {key}'s request, so billing never saw it. Asked to undo it, the runtime looked under its key first and found no credit; as the request had left, it could not prove none would arrive, so it refused and undid nothing: nothing had moved."
            )
        } else {
            format!(
                "Your undo of {key} moved nothing: the runtime looked in billing first and refused ({}).",
                plain(why)
            )
        })
    }
}
