//! What billing holds under one key, and what an operator's compensation makes of it.

use serde::{Deserialize, Serialize};

use super::Entry;
use crate::billing_tools::CreditArguments;
use crate::ledger::ExecutionRecord;
use crate::runtime::operator::{Effect, LookupError};

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
    /// What an operator's compensation of `record` makes of this lookup. `billing` says
    /// where billing is ("billing at http://…") in the finding that settles a call which
    /// paid nothing, as the record's history keeps it. One reading for every billing: the
    /// drill's server over HTTP and the simulated world in the game.
    pub fn effect(self, record: &ExecutionRecord, billing: &str) -> Result<Effect, LookupError> {
        let key = record.key.as_str();
        match self.credit {
            None if self.in_flight > 0 => Err(LookupError::InFlight(format!(
                "billing holds no credit under {key} yet, but is still applying {} request(s) with that key; \
                 ask again in a moment",
                self.in_flight
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
