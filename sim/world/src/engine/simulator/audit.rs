//! The scripted auditor a level may hold ([`crate::level::Auditor`]): once, at the moment the
//! level declares, they read billing's credits against the ledger. Two standing credits for
//! one refund is a double: they keep the credit whose call the ledger records `completed`
//! (else billing's first) and ask the runtime to compensate each other one — the runtime's own
//! compensation, the one the player's console and the HTTP API use: it looks the credit up
//! under the call's key, claims the record compare-and-set from the status it saw, voids the
//! credit by its id, and records why and who. Deterministic: a fixed moment in virtual time.
//!
//! An audit is only as good as its moment: a request still on the wire has not reached
//! billing, so no audit can see it, and a credit that lands after the audit stands.

use super::clock::Event;
use super::network::Direction;
use super::timeline::Actor;
use super::{FIRST_NODE, SimError, Simulation};
use crate::billing::Entry;
use crate::billing_tools::Operation;
use crate::ledger::SettleError;
use crate::runtime::key::IdempotencyKey;
use crate::runtime::operator::{self, CompensateRequest, HeldLedger, OperatorError};
use crate::runtime::rules::Status;
use crate::text::dollars;

/// The words an auditor's undo line begins with: the debrief finds the undo by them. The
/// timeline's action column already says "compensate", so the line says why and what.
pub const AUDIT_UNDID: &str = "after the audit,";

/// A double the audit found: the credit kept and the ones to undo, for one refund.
struct Double {
    kept: Entry,
    extra: Vec<Entry>,
}

/// What the level's audit saw and did, for the debrief: told from this, never from the level.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AuditReport {
    /// Who audited.
    pub auditor: String,
    /// When they looked.
    pub at_ms: u64,
    /// The phase they looked in.
    pub phase: u32,
    /// Billing's standing credits then.
    pub standing: usize,
    /// The keys of credit requests on the wire then: billing had not applied them.
    pub in_flight: Vec<String>,
    /// Each extra credit they asked the runtime to undo.
    pub undos: Vec<AuditUndo>,
}

/// One extra credit the audit asked the runtime to compensate.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AuditUndo {
    /// The refund it paid again, as billing's memo reads (`Refund for order #1001`).
    pub memo: String,
    /// The credit kept, and the key it carries.
    pub kept_credit: String,
    pub kept_key: Option<String>,
    /// The kept credit's call's status in the ledger when the auditor looked.
    pub kept_status: Option<Status>,
    /// The credit undone, and the key of the call that made it.
    pub extra_credit: String,
    pub extra_key: Option<String>,
    /// The call's status when the auditor asked (compare-and-set from it).
    pub seen: Option<Status>,
    /// The runtime compensated it (the credit is void); `false`: refused or impossible.
    pub undone: bool,
}

impl Simulation {
    /// Puts the level's audit on the clock, and says when in the timeline (the player plans
    /// around it).
    pub(super) fn schedule_audit(&mut self) {
        let Some(auditor) = self.level.auditor.clone() else {
            return;
        };
        let at_ms = u64::from(auditor.audits_at_ms);
        self.clock.schedule(at_ms, Event::Audit);
        self.log(
            Actor::Operator(auditor.name),
            "audit",
            None,
            None,
            format!("will check billing against the ledger at {at_ms} ms and undo any refund paid twice"),
        );
    }

    /// The audit: billing's standing credits by the refund they pay; each double's extra
    /// credits compensated through the runtime, by their calls' keys.
    pub(super) fn auditor_audits(&mut self) -> Result<(), SimError> {
        let auditor = self
            .level
            .auditor
            .clone()
            .expect("an audit is scheduled only in a level with an auditor");
        let actor = Actor::Operator(auditor.name.clone());
        let standing = self.standing_credits();
        let in_flight = self.credit_requests_on_the_wire();
        let doubles = self.doubles(&standing)?;
        self.audit = Some(AuditReport {
            auditor: auditor.name.clone(),
            at_ms: self.clock.now_ms,
            phase: self.clock.phase,
            standing: standing.len(),
            in_flight: in_flight.clone(),
            undos: Vec::new(),
        });
        let unseen = if in_flight.is_empty() {
            String::new()
        } else {
            format!(
                "; not seen: {} still on the wire, which billing has not applied",
                in_flight.join(", ")
            )
        };
        let standing_words = crate::text::counted(standing.len() as u64, "credit", "credits");
        let found = if doubles.is_empty() {
            format!("checks billing: {standing_words} standing, none paying a refund twice; nothing to undo{unseen}")
        } else {
            format!(
                "checks billing: {standing_words} standing; {} paid twice{unseen}",
                crate::text::counted(doubles.len() as u64, "refund is", "refunds are")
            )
        };
        self.log(actor, "audit", None, None, found);
        if doubles.is_empty() {
            return Ok(());
        }
        for double in doubles {
            for extra in &double.extra {
                let undo = self.undo_extra(&auditor.name, &double, extra)?;
                self.audit.as_mut().expect("set above").undos.push(undo);
            }
        }
        Ok(())
    }

    /// Billing's credits not reversed, in billing's order.
    fn standing_credits(&self) -> Vec<Entry> {
        self.world.billing.standing_credits().cloned().collect()
    }

    /// The keys of credit requests on the wire now: billing has not seen them.
    fn credit_requests_on_the_wire(&self) -> Vec<String> {
        self.messages
            .values()
            .filter(|message| {
                message.direction == Direction::Request
                    && !message.lost
                    && self
                        .level
                        .tools
                        .iter()
                        .find(|tool| tool.name == message.call.tool)
                        .and_then(Operation::of)
                        == Some(Operation::Credit)
            })
            .map(|message| message.key.clone())
            .collect()
    }

    /// The refunds paid more than once: the credit kept (its call `completed` in the ledger,
    /// else billing's first) and the others.
    fn doubles(&self, standing: &[Entry]) -> Result<Vec<Double>, SimError> {
        let mut intents: Vec<String> = Vec::new();
        for entry in standing {
            if let Some(intent) = entry.metadata.get("intent")
                && !intents.contains(intent)
            {
                intents.push(intent.clone());
            }
        }
        let mut doubles = Vec::new();
        for intent in intents {
            let paying: Vec<&Entry> = standing
                .iter()
                .filter(|entry| entry.metadata.get("intent") == Some(&intent))
                .collect();
            if paying.len() < 2 {
                continue;
            }
            let mut kept = paying[0];
            for entry in &paying {
                if self.status_of(entry)? == Some(Status::Completed) {
                    kept = entry;
                    break;
                }
            }
            doubles.push(Double {
                kept: kept.clone(),
                extra: paying
                    .iter()
                    .filter(|entry| entry.id != kept.id)
                    .map(|entry| (*entry).clone())
                    .collect(),
            });
        }
        Ok(doubles)
    }

    /// The ledger's status of the call whose key `entry` carries, if it carries one.
    fn status_of(&self, entry: &Entry) -> Result<Option<Status>, SimError> {
        let Some(key) = key_of(entry).and_then(|key| IdempotencyKey::parse(&key).ok()) else {
            return Ok(None);
        };
        Ok(self.observer.record(&key)?.map(|record| record.status))
    }

    /// Asks the runtime to compensate `extra`'s call: the auditor's one decision on it.
    fn undo_extra(&mut self, name: &str, double: &Double, extra: &Entry) -> Result<AuditUndo, SimError> {
        let actor = Actor::Operator(name.to_owned());
        let mut undo = AuditUndo {
            memo: extra.memo.clone(),
            kept_credit: double.kept.id.clone(),
            kept_key: key_of(&double.kept),
            kept_status: self.status_of(&double.kept)?,
            extra_credit: extra.id.clone(),
            extra_key: key_of(extra),
            seen: None,
            undone: false,
        };
        let kept_key = undo.kept_key.clone().unwrap_or_else(|| "no key".to_owned());
        let Some(key) = key_of(extra).and_then(|key| IdempotencyKey::parse(&key).ok()) else {
            self.log(
                actor,
                "audit",
                None,
                None,
                format!(
                    "credit {} pays the same refund as {} but carries no key: the runtime undoes only by a call's key, so it is left for a person",
                    extra.id, double.kept.id
                ),
            );
            return Ok(undo);
        };
        let reason = format!(
            "audit: credits {} ({kept_key}) and {} ({key}) both pay the {} {}; {} stands",
            double.kept.id,
            extra.id,
            dollars(extra.amount_cents),
            lowercase_first(&extra.memo),
            double.kept.id
        );
        let seen = self.observer.record(&key)?.map(|record| record.status);
        undo.seen = seen;
        let request = CompensateRequest::new(&key, &reason, name);
        let (ledger, mut target, now_ms) = self.compensation_parts();
        let run = Some(key.as_str().split(':').next().unwrap_or_default().to_owned());
        let text = match operator::compensate(
            &mut HeldLedger { ledger, now_ms },
            &mut target,
            &request,
            &crate::text::WORDS,
        ) {
            Ok(record) => {
                self.wake_parked(FIRST_NODE, &key, None);
                undo.undone = record.status == Status::Compensated;
                let from = seen.map_or_else(|| "unrecorded".to_owned(), |status| status.to_string());
                format!(
                    "{AUDIT_UNDID} {key} goes {from} → {}: voids {}, one of two credits for the {}; {} ({kept_key}) stands",
                    record.status,
                    extra.id,
                    lowercase_first(&extra.memo),
                    double.kept.id
                )
            }
            Err(OperatorError::Ledger(error) | OperatorError::Settle(SettleError::Ledger(error))) => {
                return Err(error.into());
            }
            Err(error) => format!("asks to undo {key} ({}): refused, nothing undone: {error}", extra.id),
        };
        self.log(actor, "compensate", run, Some(key.to_string()), text);
        Ok(undo)
    }

    /// What the level's audit saw and did, once it has looked.
    pub fn audit_report(&self) -> Option<&AuditReport> {
        self.audit.as_ref()
    }
}

/// "Refund for order #1001" as the middle of a sentence.
pub fn lowercase_first(text: &str) -> String {
    let mut characters = text.chars();
    match characters.next() {
        Some(first) => first.to_lowercase().chain(characters).collect(),
        None => String::new(),
    }
}

/// The key a credit carries: billing's own, or the one kept in its metadata.
fn key_of(entry: &Entry) -> Option<String> {
    entry
        .idempotency_key
        .clone()
        .or_else(|| entry.metadata.get("idempotency_key").cloned())
}
