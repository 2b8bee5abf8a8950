//! Tool fails before sending: the run's next tool call refuses before anything leaves (the
//! account's token expired). The runtime records it failed — nothing left the building — and a
//! failed call may run again.

use std::collections::BTreeMap;

use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use super::{Aim, Aims, Card, CardKind, DealSpace, Fired, Made, Target, Trigger, runs};
use crate::simulator::{Actor, PlayError, REFUSED_BEFORE_SENDING, Simulation};
use crate::text::counted;

/// `ToolFailsBeforeSending(run: "r1")`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolFailsBeforeSending {
    pub run: String,
}

impl Card for ToolFailsBeforeSending {
    const TITLE: &'static str = "Tool fails before sending";
    const AIMS: Aims = Aims::Run;
    // A refusal before sending sends nothing.
    const CAN_PAY_TWICE: bool = false;

    fn aim(&self) -> Aim<'_> {
        Aim::Run(&self.run)
    }

    fn fire(&self, simulation: &mut Simulation) -> Result<Made, PlayError> {
        let text = format!("the next tool call on {} will refuse before sending", self.run);
        runs::arm(self, simulation, &self.run, text)
    }

    fn fires_at(&self, trigger: &Trigger<'_>) -> Option<Fired> {
        match trigger {
            Trigger::Sending { node } if *node == self.run => Some(Fired::RefuseBeforeSending),
            _ => None,
        }
    }

    fn armed_words(armed: &[&Self]) -> Vec<String> {
        let mut per_run: BTreeMap<&str, u64> = BTreeMap::new();
        for refusal in armed {
            *per_run.entry(&refusal.run).or_default() += 1;
        }
        per_run
            .into_iter()
            .map(|(run, count)| {
                format!(
                    "{} on {run} will refuse before sending",
                    counted(count, "call", "calls")
                )
            })
            .collect()
    }

    fn effect(_simulation: &Simulation) -> String {
        "the run's next call refuses before sending anything".into()
    }

    fn targets(simulation: &Simulation) -> Vec<Target> {
        runs::offers(
            simulation,
            |run| format!("run {run}'s next call"),
            |run| ToolFailsBeforeSending { run }.into(),
        )
    }

    fn no_target(_simulation: &Simulation) -> String {
        "this level has no run whose call could refuse".to_owned()
    }

    fn deal(space: &DealSpace<'_>, rng: &mut ChaCha8Rng) -> (Self, Option<u64>) {
        (ToolFailsBeforeSending { run: space.run(rng) }, None)
    }

    fn missed(&self, simulation: &Simulation, index: usize) -> Option<String> {
        if simulation.armed().holds(CardKind::ToolFailsBeforeSending, &self.run) {
            return Some(format!(
                "Run {} never made another call, so the refusal before sending never came.",
                self.run
            ));
        }
        refused_read(simulation, index, &self.run)
    }
}

/// A refusal before sending that hit a read: it moved no money, so it could not change what
/// was paid. Says which call it hit and what the runtime then did with it, from this run's
/// timeline and ledger: sent again after all (the read retried) or recorded with nothing sent.
/// `None` when the refusal hit a call that changes something (that is another story).
fn refused_read(simulation: &Simulation, index: usize, run: &str) -> Option<String> {
    // The n-th refusal card on this run met the n-th refusal of its calls.
    let ordinal = simulation.played()[..=index]
        .iter()
        .filter(|action| action.play.card() == CardKind::ToolFailsBeforeSending && action.play.run() == Some(run))
        .count();
    let timeline = simulation.timeline();
    let (position, refusal) = timeline
        .iter()
        .enumerate()
        .filter(|(_, entry)| {
            entry.run.as_deref() == Some(run) && entry.kind == "send" && entry.text.contains(REFUSED_BEFORE_SENDING)
        })
        .nth(ordinal.checked_sub(1)?)?;
    let key = refusal.key.as_deref()?;
    let tool_name = refusal.text.split(':').next()?;
    let tool = simulation.level().tools.iter().find(|tool| tool.name == tool_name)?;
    if tool.side_effect.changes_something() {
        return None;
    }
    let record = simulation
        .ledger_records()
        .ok()?
        .into_iter()
        .find(|record| record.key.as_str() == key)?;
    let sent_after = timeline[position + 1..]
        .iter()
        .any(|entry| entry.key.as_deref() == Some(key) && entry.actor == Actor::Billing);
    let what_then = if sent_after {
        format!(
            "the runtime tried the read again, it reached billing this time, and the ledger holds it {}",
            record.status
        )
    } else {
        format!(
            "the ledger recorded it {} with nothing sent, and Penny went on",
            record.status
        )
    };
    let effects = simulation.effects();
    let money = match effects.values().next() {
        Some(origin) if effects.len() == 1 => {
            format!(", so the only credit, {}, went out untouched and paid once", origin.key)
        }
        _ => String::new(),
    };
    Some(format!(
        "Your refusal hit {key}, {tool_name}, a read that moves no money: {what_then}{money}."
    ))
}
