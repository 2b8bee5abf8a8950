//! The room's shared screens: the operator race and the presenter's page.

use serde::Serialize;

use super::super::levels::Catalogue;
use super::super::race::{Race, RaceState};
use super::debrief::verdict_view;
use super::level_screen::billing_view;
use super::*;
use twice_world::billing_tools::CreditArguments;
use twice_world::ledger::{HistoryEntry, HistoryEvent};
use twice_world::simulator::{Simulation, dollars};

/// A decision on a call, as its history records it: who, what, why.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct DecisionView {
    pub operator: String,
    pub status: Look,
    pub reason: Option<String>,
    pub event: String,
}

/// The first settling decision in a record's history (a resolve or a compensation): the
/// one that won, since a settled decision is never overwritten.
pub fn decision_of(history: &[HistoryEntry]) -> Option<DecisionView> {
    history
        .iter()
        .find(|entry| {
            matches!(
                entry.event,
                HistoryEvent::Resolved | HistoryEvent::CompensationClaimed | HistoryEvent::LegacyCompensated
            )
        })
        .map(|entry| DecisionView {
            operator: entry.actor.clone(),
            status: entry.to_status.map_or_else(|| look("·", "settled", "dim"), status_look),
            reason: entry.reason.clone(),
            event: entry.event.name().to_owned(),
        })
}

#[derive(Clone, Debug, Serialize)]
pub struct TryView {
    pub name: String,
    pub status: Look,
    pub won: bool,
}

/// What the winning decision did to the money, as the world's debrief tells it: never the
/// checker's raw lines, and never a guard drawn as holding where a customer was paid twice or
/// left owed (the debrief's own rule).
#[derive(Clone, Debug, Serialize)]
pub struct RaceAfterView {
    pub outcome: Look,
    pub tone: twice_world::debrief::Tone,
    /// What happened to the money, and why (the debrief's diagnosis; its headline speaks of
    /// the crew's heist, and nobody in the race is the crew).
    pub diagnosis: Vec<String>,
    pub credits: Vec<CreditView>,
}

/// The room's race, for a participant (`tries` left empty) or the presenter.
#[derive(Clone, Debug, Serialize)]
pub struct RaceView {
    pub open: bool,
    /// Grows with every change (opened, tried, decided, closed): `GET /api/race?seen=N`
    /// answers once it is not `N`.
    pub version: u64,
    /// Whether this page may still resolve it: open, undecided, and not the presenter's stage.
    pub can_resolve: bool,
    pub number: u32,
    pub tape: String,
    pub title: String,
    pub level_title: String,
    pub key: Option<KeyLook>,
    /// The status the room was shown; every resolve is compare-and-set on it.
    pub opened_status: Option<Look>,
    pub status_now: Option<Look>,
    pub account: String,
    pub amount: String,
    pub memo: String,
    /// What billing holds for the account: what an operator would look up before deciding.
    pub billing: Vec<BillingEntryView>,
    pub briefing: String,
    pub winner: Option<DecisionView>,
    pub tries_total: u32,
    pub tries: Vec<TryView>,
    /// What the run did with the winning decision, once it ran on.
    pub after: Option<RaceAfterView>,
}

pub fn no_race_view() -> RaceView {
    RaceView {
        open: false,
        version: 0,
        can_resolve: false,
        number: 0,
        tape: String::new(),
        title: String::new(),
        level_title: String::new(),
        key: None,
        opened_status: None,
        status_now: None,
        account: String::new(),
        amount: String::new(),
        memo: String::new(),
        billing: Vec::new(),
        briefing: String::new(),
        winner: None,
        tries_total: 0,
        tries: Vec::new(),
        after: None,
    }
}

/// The race as the room sees it, from the race and the simulation its caller holds (the view
/// only reads it).
pub fn race_view(race: &Race, simulation: &Simulation, catalogue: &Catalogue, with_tries: bool) -> RaceView {
    let tape = &catalogue.tapes()[race.tape];
    let level = &catalogue.levels()[tape.level].level;
    let looks = KeyLooks::from_timeline(simulation.timeline());
    let record = simulation.ledger().record(&race.key).ok().flatten();
    let arguments: Option<CreditArguments> = record
        .as_ref()
        .and_then(|record| serde_json::from_str(&record.arguments).ok());
    let billing = billing_view(simulation, &looks);
    let account = arguments
        .as_ref()
        .map(|arguments| arguments.account.clone())
        .unwrap_or_default();
    let state: std::sync::MutexGuard<'_, RaceState> = race.state();
    RaceView {
        open: true,
        version: 0,
        can_resolve: state.winner.is_none(),
        number: race.number,
        tape: tape.stem.clone(),
        title: tape.tape.title.clone(),
        level_title: level.title.clone(),
        key: Some(looks.look(race.key.as_str())),
        opened_status: Some(status_look(race.opened_status)),
        status_now: record.as_ref().map(|record| status_look(record.status)),
        amount: arguments
            .as_ref()
            .map(|arguments| dollars(i64::from(arguments.amount_cents)))
            .unwrap_or_default(),
        memo: arguments
            .as_ref()
            .map(|arguments| arguments.memo.clone())
            .unwrap_or_default(),
        billing: billing
            .entries
            .into_iter()
            .filter(|entry| entry.account == account)
            .collect(),
        account,
        briefing: level.briefing.clone(),
        winner: state.winner.clone(),
        tries_total: state.tries_total,
        tries: if with_tries {
            state
                .tries
                .iter()
                .map(|attempt| TryView {
                    name: attempt.name.clone(),
                    status: status_look(attempt.status),
                    won: attempt.won,
                })
                .collect()
        } else {
            Vec::new()
        },
        after: state.after.as_ref().map(|(verdict, debrief)| {
            let verdict = verdict_view(verdict, level, &looks);
            RaceAfterView {
                outcome: verdict.outcome,
                tone: debrief.tone,
                diagnosis: twice_world::debrief::diagnosis_for_operators(level, debrief),
                credits: verdict.credits,
            }
        }),
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct RaceCandidateView {
    pub tape: String,
    pub title: String,
    /// The level's place in the campaign (`2.2`), as the pages and the workshop plan name it.
    pub level_number: String,
    pub level_title: String,
    pub key: String,
    pub status: Look,
}

pub fn race_candidates(catalogue: &Catalogue) -> Vec<RaceCandidateView> {
    catalogue
        .race_candidates()
        .iter()
        .map(|candidate| {
            let tape = &catalogue.tapes()[candidate.tape];
            RaceCandidateView {
                tape: tape.stem.clone(),
                title: tape.tape.title.clone(),
                level_number: catalogue.levels()[tape.level].number().to_owned(),
                level_title: catalogue.levels()[tape.level].level.title.clone(),
                key: candidate.key.to_string(),
                status: status_look(candidate.status),
            }
        })
        .collect()
}
