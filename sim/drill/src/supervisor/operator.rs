//! The drill as the seed's operator: runs waiting on an unknown call looked at once billing
//! can answer, recovered or resolved.

use std::time::{Duration, Instant};

use twice_world::billing::{Answer, KeyHandling};
use twice_world::ledger::{LedgerError, SettleError};
use twice_world::runtime::guards::Guard;
use twice_world::runtime::key::IdempotencyKey;
use twice_world::runtime::operator;
use twice_world::runtime::operator::{OperatorError, ResolveRequest};
use twice_world::runtime::rules::Status;

use crate::billing_server::Lookup;

use super::config::DrillError;
use super::{OPERATOR_ID, ProcessKind, Resolution, RunPhase, SETTLE_MARGIN_MS, Supervisor};

impl Supervisor {
    /// Billing can be asked about a key only if it keeps keys and the key reaches it; an
    /// operator can only settle a call the ledger holds.
    pub(super) fn billing_can_be_asked(&self) -> bool {
        self.config.key_handling != KeyHandling::Ignore
            && self.config.guards.is_on(Guard::KeyDownstream)
            && self.config.guards.is_on(Guard::Ledger)
    }

    pub(super) async fn lookup(&self, key: &str) -> Result<Lookup, DrillError> {
        let mut url = reqwest::Url::parse(&format!("{}/v1/credits", self.billing.url))
            .map_err(|error| DrillError::BillingGone(error.to_string()))?;
        // By hand: the operator reads billing's entries, not its lagging or forgetful API.
        url.query_pairs_mut()
            .append_pair("idempotency_key", key)
            .append_pair("by_hand", "true");
        let response = self
            .client
            .get(url)
            .timeout(Duration::from_secs(5))
            .send()
            .await
            .map_err(|error| DrillError::BillingGone(error.to_string()))?;
        response
            .json::<Lookup>()
            .await
            .map_err(|error| DrillError::BillingGone(error.to_string()))
    }

    /// The operator's decision, through the runtime's one implementation of resolve.
    /// `Busy`: the record is locked (a process that died without its connection closing yet,
    /// cut off, still holds its transaction open until the server notices): the operator
    /// looks again later, as a person would.
    pub(super) fn resolve(
        &mut self,
        key: &str,
        status: Status,
        reason: String,
        result: Option<String>,
    ) -> Result<Resolution, DrillError> {
        let key = IdempotencyKey::parse(key).map_err(|error| DrillError::Setup(error.to_string()))?;
        let Some(record) = self.observer.record(&key)? else {
            return Ok(Resolution::Done);
        };
        if !record.status.is_unknown() {
            return Ok(Resolution::Done);
        }
        let mut request = ResolveRequest::new(status, reason, OPERATOR_ID);
        request.expected_status = Some(record.status);
        request.result = result;
        // A `started` call here is one whose worker was killed: the drill settles only once
        // billing's send window has passed since the ledger's last write, so no request under
        // it can still land. The operator says so.
        request.acknowledge_in_flight = true;
        match operator::resolve(&mut self.observer, &key, &request, crate::now_ms()) {
            Ok(_) => {
                self.counters.operator_resolutions += 1;
                Ok(Resolution::Done)
            }
            // Someone settled it first (compare-and-set): the fresh process reads their decision.
            Err(OperatorError::Settle(SettleError::Stale { .. } | SettleError::AlreadySettled { .. })) => {
                Ok(Resolution::Done)
            }
            Err(
                OperatorError::Ledger(LedgerError::Locked { .. })
                | OperatorError::Settle(SettleError::Ledger(LedgerError::Locked { .. })),
            ) => Ok(Resolution::Busy),
            Err(OperatorError::Ledger(error) | OperatorError::Settle(SettleError::Ledger(error))) => Err(error.into()),
            Err(error) => Err(DrillError::Setup(format!(
                "the drill's operator could not resolve {key}: {error}"
            ))),
        }
    }

    /// Looks at runs waiting on an unknown call once any request of theirs has reached
    /// billing: recover them if billing holds the credit, or (as the operator) resolve the
    /// call `failed` if billing holds none and is applying none.
    pub(super) async fn sweep(&mut self) -> Result<(), DrillError> {
        let settle = Duration::from_millis(u64::from(self.config.latency_ms) + SETTLE_MARGIN_MS);
        let due: Vec<(usize, String)> = self
            .runs
            .iter()
            .enumerate()
            .filter_map(|(index, run)| match &run.phase {
                RunPhase::Waiting {
                    key,
                    since,
                    examined: false,
                } if since.elapsed() >= settle => Some((index, key.clone())),
                _ => None,
            })
            .collect();
        for (run, key) in due {
            if !self.billing_can_be_asked() {
                self.mark_examined(run);
                continue;
            }
            // Read before the lookup: billing applies nothing later than the window, so a
            // lookup made after it closed sees every credit that will ever carry the key.
            let looked_at_ms = crate::now_ms();
            let lookup = self.lookup(&key).await?;
            if let Some(credit) = &lookup.credit {
                let hook_tried = self.runs[run].hook_tried.as_deref() == Some(key.as_str());
                if self.config.hook && self.config.guards.is_on(Guard::ReconcileHook) && !hook_tried {
                    // A fresh process asks the reconcile hook, which now finds the credit.
                    self.runs[run].hook_tried = Some(key.clone());
                    self.counters.found_after_wait += 1;
                    self.start_worker(run, ProcessKind::Primary)?;
                } else if self.config.operator {
                    let result = Answer::Applied {
                        credit_id: credit.id.clone(),
                        balance_cents: lookup.balance_cents.unwrap_or(0),
                    }
                    .receipt();
                    let reason = format!("billing holds credit {} under key {key}", credit.id);
                    match self.resolve(&key, Status::Completed, reason, Some(result))? {
                        Resolution::Done => self.start_worker(run, ProcessKind::Primary)?,
                        Resolution::Busy => self.look_again_later(run),
                    }
                } else {
                    self.mark_examined(run);
                }
            } else if lookup.in_flight > 0 {
                // Still on its way in: look again later.
                self.look_again_later(run);
            } else if self.config.operator && !self.window_passed(&key, looked_at_ms)? {
                // A request a paused or cut-off process still holds may yet arrive, and billing
                // would apply it: nothing there proves nothing until billing refuses it.
                self.look_again_later(run);
            } else if self.config.operator {
                let reason = format!(
                    "billing holds no credit under key {key} and is applying none, and its send window of {} ms has \
                     passed since the ledger's last write of the call: no request with the key can pay any more",
                    self.config.request_window_ms
                );
                match self.resolve(&key, Status::Failed, reason, None)? {
                    Resolution::Done => self.start_worker(run, ProcessKind::Primary)?,
                    Resolution::Busy => self.look_again_later(run),
                }
            } else {
                self.mark_examined(run);
            }
        }
        Ok(())
    }

    /// Whether billing's send window had passed at `looked_at_ms` since the ledger last wrote
    /// `key`'s call (the stamp of its latest send is never later): from then on billing
    /// refuses every request with the key that it has not applied, so one that was not there
    /// will never be. A call the ledger does not hold has nothing to wait for.
    fn window_passed(&mut self, key: &str, looked_at_ms: u64) -> Result<bool, DrillError> {
        let key = IdempotencyKey::parse(key).map_err(|error| DrillError::Setup(error.to_string()))?;
        let Some(record) = self.observer.record(&key)? else {
            return Ok(true);
        };
        let closes_at_ms = record
            .updated_at_ms
            .saturating_add(u64::from(self.config.request_window_ms));
        Ok(looked_at_ms > closes_at_ms)
    }

    /// The run's wait starts over: it is looked at again after billing's latency and a margin.
    pub(super) fn look_again_later(&mut self, run: usize) {
        if let RunPhase::Waiting { since, .. } = &mut self.runs[run].phase {
            *since = Instant::now();
        }
    }

    pub(super) fn mark_examined(&mut self, run: usize) {
        if let RunPhase::Waiting { examined, .. } = &mut self.runs[run].phase {
            *examined = true;
        }
    }
}
