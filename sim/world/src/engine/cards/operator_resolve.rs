//! Operator resolves: the player, as an operator, settles a call the runtime could not —
//! completed or failed, with a reason, compare-and-set on the status they saw. Made in the
//! operator console.

use rand::Rng;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use super::operator::{self, EXPECTATIONS, default_operator};
use super::{Aim, Aims, Card, DealSpace, Made};
use crate::ledger::{LedgerError, SettleError};
use crate::level::Level;
use crate::runtime::operator::{OperatorError, ResolveRequest};
use crate::runtime::rules::Status;
use crate::simulator::{Actor, PlayError, SimError, Simulation};
use crate::text::plain;

/// `OperatorResolve(key: "r1:c1", status: failed, reason: "…", operator: "op-crew",
/// expected_status: Some(indeterminate))`. With `expected_status`, compare-and-set: an operator
/// who expected a status the call no longer has loses the race (409) — the move is made, and
/// refused by the ledger.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OperatorResolve {
    pub key: String,
    pub status: Status,
    pub reason: String,
    #[serde(default = "default_operator")]
    pub operator: String,
    #[serde(default)]
    pub expected_status: Option<Status>,
}

impl Card for OperatorResolve {
    const TITLE: &'static str = "Operator resolves";
    const AIMS: Aims = Aims::Call;
    // A call settled failed that did take effect may run again.
    const CAN_PAY_TWICE: bool = true;

    fn aim(&self) -> Aim<'_> {
        Aim::Call(&self.key)
    }

    fn operator(&self) -> Option<&str> {
        Some(&self.operator)
    }

    fn with_key(&self, key: &str) -> Self {
        OperatorResolve {
            key: key.to_owned(),
            ..self.clone()
        }
    }

    fn problem(&self, level: &Level) -> Option<String> {
        let OperatorResolve {
            key,
            status,
            reason,
            operator,
            ..
        } = self;
        if !matches!(status, Status::Completed | Status::Failed) {
            return Some(format!("an operator resolves to completed or failed, not {status}"));
        }
        if let Some(problem) = operator::signature_problem("resolving", key, reason, operator) {
            return Some(problem);
        }
        match &level.honest_operator {
            Some(honest) if honest.name == *operator => Some(format!(
                "{operator} is the level's scripted honest operator; the player resolves as another operator"
            )),
            _ => None,
        }
    }

    fn doubt(&self) -> Option<String> {
        operator::key_doubt(&self.key)
    }

    /// A lost compare-and-set is a move made (it is the race the level teaches), said as the
    /// 409 it is.
    fn fire(&self, simulation: &mut Simulation) -> Result<Made, PlayError> {
        let OperatorResolve {
            key,
            status,
            reason,
            operator,
            expected_status,
        } = self;
        let key = operator::parse_key(key)?;
        simulation.check_the_queue(&key, *expected_status)?;
        let mut request = ResolveRequest::new(*status, reason.as_str(), operator.as_str());
        request.expected_status = *expected_status;
        // The player plays the operator's card on purpose, whatever the call's status: the
        // levels teach what an operator's decision on a call still in flight leads to.
        request.acknowledge_in_flight = true;
        let text = match simulation.resolve_by_operator(&key, &request) {
            Ok(record) => format!("resolves {key} as {} — \"{reason}\"", record.status),
            // Compare-and-set lost: the operator acted on what they were shown, and the
            // ledger refused it. Nothing in the ledger changes.
            Err(OperatorError::Settle(SettleError::Stale { expected, current, .. })) => {
                let winner = simulation.last_decider(&key).unwrap_or_else(|| "someone".to_owned());
                format!(
                    "409 conflict: {operator} expected {key} to be {expected}, but {winner} settled it {} first; {operator}'s {status} was refused",
                    current.status
                )
            }
            Err(error) => return Err(error.into()),
        };
        Ok(Made {
            actor: Actor::Operator(operator.clone()),
            ..Made::by_the_crew(text)
        })
    }

    fn effect(_simulation: &Simulation) -> String {
        "settle an unknown call: use the operator console".into()
    }

    /// A call is unknown: settling it could still change a quiet level.
    fn matters_when_quiet(simulation: &Simulation) -> Result<bool, LedgerError> {
        Ok(simulation
            .ledger_records()?
            .iter()
            .any(|record| record.status.is_unknown()))
    }

    /// Racing an honest operator, the console holds every call the queue has listed, as it
    /// was seen (indeterminate): a decision sent after theirs is a move, and it gets the 409.
    /// Otherwise each unknown call, settled either way, expecting the status it has.
    fn candidates(simulation: &Simulation, operator: &str) -> Result<Vec<super::Play>, SimError> {
        let decisions = |key: String, expected: Status| {
            [Status::Completed, Status::Failed].map(|status| {
                OperatorResolve {
                    key: key.clone(),
                    status,
                    reason: format!("the sweep settles it as {status}"),
                    operator: operator.to_owned(),
                    expected_status: Some(expected),
                }
                .into()
            })
        };
        if simulation.level().honest_operator.is_some() {
            return Ok(simulation
                .queued_calls()
                .into_iter()
                .flat_map(|key| decisions(key, Status::Indeterminate))
                .collect());
        }
        Ok(simulation
            .ledger_records()
            .map_err(SimError::from)?
            .into_iter()
            .filter(|record| record.status.is_unknown())
            .flat_map(|record| decisions(record.key.to_string(), record.status))
            .collect())
    }

    /// Its key is named when it is played, among the calls that exist then.
    fn deal(_space: &DealSpace<'_>, rng: &mut ChaCha8Rng) -> (Self, Option<u64>) {
        let status = if rng.random_bool(0.5) {
            Status::Completed
        } else {
            Status::Failed
        };
        let operator = operator::explorer_operator(rng);
        let expected_status = EXPECTATIONS[rng.random_range(0..EXPECTATIONS.len())];
        let resolve = OperatorResolve {
            key: String::new(),
            status,
            reason: format!("the explorer resolves it as {status}"),
            operator,
            expected_status,
        };
        (resolve, Some(rng.random()))
    }

    fn missed(&self, simulation: &Simulation, _index: usize) -> Option<String> {
        simulation
            .timeline()
            .iter()
            .find(|entry| entry.actor == Actor::Operator(self.operator.clone()) && entry.text.starts_with("409"))
            .map(|entry| {
                format!(
                    "The decision on {} lost its compare-and-set: {}.",
                    self.key,
                    plain(entry.text.trim_start_matches("409 conflict: "))
                )
            })
    }
}
