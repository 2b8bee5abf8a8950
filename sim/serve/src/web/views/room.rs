//! The room's shared screens: the operator race and the presenter's page.

use std::collections::BTreeMap;

use serde::Serialize;

use super::super::game::Mode;
use super::super::levels::Catalogue;
use super::super::race::{Race, RaceState};
use super::super::sessions::{LevelProgress, Participant, Win};
use super::debrief::verdict_view;
use super::level_screen::billing_view;
use super::lobby::win_view;
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

/// The room's race, for a participant (`tries` left empty) or the presenter.
#[derive(Clone, Debug, Serialize)]
pub struct RaceView {
    pub open: bool,
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
    pub after: Option<VerdictView>,
}

pub fn no_race_view() -> RaceView {
    RaceView {
        open: false,
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
        after: state.after.as_ref().map(|verdict| verdict_view(verdict, &looks)),
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct RaceCandidateView {
    pub tape: String,
    pub title: String,
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
                level_title: catalogue.levels()[tape.level].level.title.clone(),
                key: candidate.key.to_string(),
                status: status_look(candidate.status),
            }
        })
        .collect()
}

// ----- the presenter's room -----

#[derive(Clone, Debug, Serialize)]
pub struct WinLineView {
    pub level: String,
    pub level_title: String,
    pub win: WinView,
}

#[derive(Clone, Debug, Serialize)]
pub struct ParticipantView {
    pub name: String,
    /// The level open now, by title, and its phase.
    pub level: Option<String>,
    pub mode: Option<&'static str>,
    pub phase: Option<u32>,
    pub finished: u32,
    pub wins: Vec<WinLineView>,
    pub idle_seconds: u64,
}

pub fn participant_view(participant: &Participant, catalogue: &Catalogue, idle_seconds: u64) -> ParticipantView {
    ParticipantView {
        name: participant.name.clone(),
        // A level not in memory (its participant was quiet, or the server restarted) is
        // named from its log; its phase is known again once it is rebuilt.
        level: participant
            .open_level()
            .and_then(|stem| catalogue.find(stem))
            .map(|(_, entry)| entry.level.title.clone()),
        mode: participant.log.as_ref().map(|log| {
            if log.guards.is_some() {
                Mode::Sandbox.name()
            } else {
                Mode::Campaign.name()
            }
        }),
        phase: participant.game.as_ref().map(|game| game.simulation().phase()),
        finished: u32::try_from(
            participant
                .progress
                .values()
                .filter(|progress| progress.finished)
                .count(),
        )
        .unwrap_or(u32::MAX),
        wins: catalogue
            .levels()
            .iter()
            .filter_map(|entry| {
                let best = participant.progress.get(&entry.level.id)?.best?;
                Some(WinLineView {
                    level: entry.stem.clone(),
                    level_title: entry.level.title.clone(),
                    win: win_view(&best),
                })
            })
            .collect(),
        idle_seconds,
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct ScoreView {
    pub rank: u32,
    pub name: String,
    pub cards: u32,
    pub phases: u32,
    pub outcome: Look,
    /// How far over par (cards, then phases), once the level has one.
    pub over_par: Option<ParView>,
}

#[derive(Clone, Debug, Serialize)]
pub struct BoardView {
    pub level: String,
    pub level_title: String,
    pub par: Option<ParView>,
    pub scores: Vec<ScoreView>,
}

/// One board per level anyone finished: fewest cards, then fewest phases, then name.
pub fn scoreboard(catalogue: &Catalogue, wins: &[(String, BTreeMap<String, LevelProgress>)]) -> Vec<BoardView> {
    catalogue
        .levels()
        .iter()
        .filter_map(|entry| {
            let par = par_of(&entry.level);
            let mut scores: Vec<(String, Win)> = wins
                .iter()
                .filter_map(|(name, progress)| Some((name.clone(), progress.get(&entry.level.id)?.best?)))
                .collect();
            if scores.is_empty() {
                return None;
            }
            scores.sort_by(|left, right| {
                (left.1.cards, left.1.phases, left.0.to_lowercase()).cmp(&(
                    right.1.cards,
                    right.1.phases,
                    right.0.to_lowercase(),
                ))
            });
            Some(BoardView {
                level: entry.stem.clone(),
                level_title: entry.level.title.clone(),
                par,
                scores: scores
                    .into_iter()
                    .enumerate()
                    .map(|(index, (name, win))| ScoreView {
                        rank: u32::try_from(index + 1).unwrap_or(u32::MAX),
                        name,
                        cards: win.cards,
                        phases: win.phases,
                        outcome: outcome_look(win.outcome),
                        over_par: par.map(|par| ParView {
                            cards: win.cards.saturating_sub(par.cards),
                            phases: win.phases.saturating_sub(par.phases),
                        }),
                    })
                    .collect(),
            })
        })
        .collect()
}

/// The presenter's page.
#[derive(Clone, Debug, Serialize)]
pub struct RoomView {
    pub sessions: Vec<ParticipantView>,
    pub sessions_max: u32,
    pub idle_minutes: u64,
    pub unlock_all: bool,
    /// The room's path (level stems), open to everyone whatever the lock chain.
    pub path: Vec<String>,
    pub scoreboard: Vec<BoardView>,
    pub race: RaceView,
    pub race_candidates: Vec<RaceCandidateView>,
}
