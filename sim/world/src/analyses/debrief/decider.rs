//! What decided a run: the guards the counterfactual found, or — where no guard decided —
//! what the run's own events show did (a move that missed its moment, billing recognising a
//! key, an operator's decision); and the operators' decisions the money proves wrong.

use crate::cards::{OperatorCompensate, OperatorResolve};
use std::collections::BTreeSet;

use serde::Serialize;

use super::sentences;
use crate::checker::{Verdict, ViolationKind};
use crate::counterfactual::{Counterfactual, Role};
use crate::guards::words as guard_words;
use crate::ledger::HistoryEvent;
use crate::level::{CardKind, Play, TimedAction};
use crate::rulebook;
use crate::runtime::guards::Guard;
use crate::runtime::rules::Status;
use crate::simulator::{Actor, Simulation};
use crate::text::and_list as listed;
use crate::text::dollars;

/// One guard that decided, and how it was in this run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct DecidingGuard {
    pub guard: Guard,
    pub was_on: bool,
}

/// What decided a run.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Decider {
    /// Switching any one of these guards reaches the other verdict (`together`: only both
    /// of a pair switched do; either one alone was enough).
    Guards {
        guards: Vec<Guard>,
        deciding: Vec<DecidingGuard>,
        together: bool,
    },
    /// Guards that held (they left notes) whose own other run cannot say (a move met another
    /// moment there), while no guard was shown to decide: they held, whether they decided is
    /// not known.
    Held { guards: Vec<Guard> },
    /// No guard was shown to decide, and switching these (on or off) makes one of the
    /// player's moves meet nothing, so whether one alone decided cannot be said: 22's contract
    /// check, off in a won run — on, the run is refused before the lost answer's moment comes.
    /// "No guard's switch turned it" would be false of them.
    Unsaid { guards: Vec<DecidingGuard> },
    /// No guard decided: a move missed its moment (the sentence says how).
    Moment { card: CardKind, at_phase: u32 },
    /// No guard decided: billing recognised a repeated key and paid nothing again.
    KeysHonoured { key: String },
    /// No guard decided: an operator's decision did.
    Operator {
        operator: String,
        key: String,
        status: Status,
    },
    /// No move was played.
    NoMoves,
    /// Nothing in the run names a cause (or it could not be simulated again).
    Unexplained,
}

impl Decider {
    /// What decided, in a few words a win or a loss can both show: "op-crew's decision on
    /// r1:c1 (failed), not a guard".
    pub fn summary(&self) -> String {
        match self {
            Decider::Guards { guards, .. } => {
                listed(&guards.iter().map(|guard| guard_words(*guard)).collect::<Vec<_>>())
            }
            Decider::Held { guards } => format!(
                "{} held; switched, a move never meets what it hit here, so whether it alone decided cannot be said",
                listed(&guards.iter().map(|guard| guard_words(*guard)).collect::<Vec<_>>())
            ),
            Decider::Unsaid { guards } => format!(
                "no guard was shown to decide; switching {} makes one of your moves meet nothing, so whether it alone decided cannot be said",
                listed(&guards.iter().map(|found| guard_words(found.guard)).collect::<Vec<_>>())
            ),
            Decider::Moment { card, at_phase } => {
                format!("the moment, not a guard: {} before phase {at_phase}", card.title())
            }
            Decider::KeysHonoured { key } => format!("billing's key handling, not a guard: it recognised {key}"),
            Decider::Operator { operator, key, status } => {
                format!("{operator}'s decision on {key} ({status}), not a guard")
            }
            Decider::NoMoves => "no card was played".into(),
            Decider::Unexplained => {
                "nothing this run shows turned the heist: no guard's switch, no decision, no missed moment".into()
            }
        }
    }

    /// Whether the debrief's guard lines tell what decided (each guard's own sentence), so a
    /// screen shows no sentence of the decider's beside them: the game and the browser ask here.
    pub fn told_by_guard_lines(&self) -> bool {
        matches!(
            self,
            Decider::Guards { .. } | Decider::Held { .. } | Decider::Unsaid { .. }
        )
    }

    /// What decided, told for how the run ended: a win is never told that something
    /// "stopped you" ([`Decider::failed_because`] on a loss).
    pub fn told(&self, won: bool) -> String {
        if !won {
            return self.failed_because();
        }
        match self {
            Decider::Operator { operator, key, status } => {
                format!("no guard stood in your way; {operator}'s decision did it: {key} settled {status}")
            }
            Decider::NoMoves => "you played no card".into(),
            Decider::Unexplained => {
                "nothing this run shows turned the heist: no guard's switch, no decision, no missed moment".into()
            }
            other => other.summary(),
        }
    }

    /// The end of "The heist failed: …".
    pub fn failed_because(&self) -> String {
        match self {
            Decider::Guards { deciding, together, .. } => {
                let words: Vec<&str> = deciding.iter().map(|found| guard_words(found.guard)).collect();
                if deciding.iter().all(|found| found.was_on) {
                    if *together {
                        format!(
                            "{} held together: switching one alone changes nothing, switching two does",
                            listed(&words)
                        )
                    } else {
                        format!("{} held", listed(&words))
                    }
                } else {
                    format!("it would have worked with {} switched", listed(&words))
                }
            }
            Decider::Held { guards } => format!(
                "{} held",
                guards
                    .iter()
                    .map(|guard| guard_words(*guard))
                    .collect::<Vec<_>>()
                    .join(" and ")
            ),
            // Not `summary()` behind a colon: it opens with "no guard was shown" too.
            Decider::Unsaid { guards } => format!(
                "no guard was shown to stop you; switching {} makes one of your moves meet nothing, so whether it alone would have cannot be said",
                listed(&guards.iter().map(|found| guard_words(found.guard)).collect::<Vec<_>>())
            ),
            Decider::Moment { .. } => "no guard stopped you, your moves missed their moment".into(),
            Decider::KeysHonoured { key } => {
                format!("no guard stopped you, billing did: it recognised key {key} and paid nothing twice")
            }
            Decider::Operator { operator, key, status } => {
                format!("no guard stopped you, {operator}'s decision did: {key} settled {status}")
            }
            Decider::NoMoves => "you played no card".into(),
            Decider::Unexplained => "no guard stopped you, and no move landed where the money moves".into(),
        }
    }
}

/// An operator's decision the money proves wrong.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct OperatorMistake {
    pub operator: String,
    pub key: String,
    pub status: Status,
    /// "op-crew resolved r1:c1 completed, but billing holds no credit under r1:c1: Ada is owed $25.00."
    pub sentence: String,
}

/// Operators' resolutions that the checker found broken: `completed` with no credit standing,
/// `failed` with one.
pub fn operator_mistakes(simulation: &Simulation, verdict: &Verdict) -> Vec<OperatorMistake> {
    let Ok(history) = simulation.ledger_history() else {
        return Vec::new();
    };
    let level = simulation.level();
    let mut found = Vec::new();
    for violation in &verdict.violations {
        let Some(key) = violation.key.as_deref() else {
            continue;
        };
        let wanted = match violation.kind {
            ViolationKind::CompletedWithoutEffect => Status::Completed,
            ViolationKind::FailedButPaid => Status::Failed,
            _ => continue,
        };
        let Some(decision) = history.iter().rev().find(|entry| {
            entry.key.as_str() == key && entry.event == HistoryEvent::Resolved && entry.to_status == Some(wanted)
        }) else {
            continue;
        };
        let credit = verdict
            .credits
            .iter()
            .find(|credit| credit.keys.iter().any(|known| known == key));
        let owner = credit.map_or_else(|| level.first_owner(), |credit| level.world.owner_of(&credit.account));
        let consequence = match (wanted, credit) {
            (Status::Completed, Some(credit)) if credit.net_cents < credit.owed_cents => {
                format!("{owner} is owed {}", dollars(credit.owed_cents - credit.net_cents))
            }
            (Status::Failed, Some(credit)) if credit.net_cents > credit.owed_cents => {
                format!(
                    "{owner} was paid {} for {} owed",
                    dollars(credit.net_cents),
                    dollars(credit.owed_cents)
                )
            }
            _ => "the ledger and billing disagree".to_owned(),
        };
        let fact = match wanted {
            Status::Completed => format!("billing holds no credit under {key}"),
            _ => format!("billing holds a credit made by {key}"),
        };
        found.push(OperatorMistake {
            operator: decision.actor.clone(),
            key: key.to_owned(),
            status: wanted,
            sentence: format!("{} resolved {key} {wanted}, but {fact}: {consequence}.", decision.actor),
        });
    }
    found
}

/// What decided this run: the counterfactual's guards, else the run's events.
pub fn decider(
    simulation: &Simulation,
    verdict: &Verdict,
    counterfactual: Option<&Counterfactual>,
    mistakes: &[OperatorMistake],
) -> Decider {
    if let Some(counterfactual) = counterfactual.filter(|counterfactual| counterfactual.reproduced) {
        let singles: Vec<DecidingGuard> = counterfactual
            .guards
            .iter()
            .filter(|finding| finding.role == Role::Decided)
            .map(|finding| DecidingGuard {
                guard: finding.guard,
                was_on: finding.was_on,
            })
            .collect();
        let together = singles.is_empty();
        let deciding: Vec<DecidingGuard> = if together {
            counterfactual
                .pairs
                .iter()
                .flat_map(|pair| pair.guards)
                .collect::<BTreeSet<Guard>>()
                .into_iter()
                .map(|guard| DecidingGuard {
                    guard,
                    was_on: simulation.guards().is_on(guard),
                })
                .collect()
        } else {
            singles
        };
        if !deciding.is_empty() {
            return Decider::Guards {
                guards: deciding.iter().map(|found| found.guard).collect(),
                deciding,
                together,
            };
        }
    }
    let played = simulation.played();
    if played.is_empty() {
        return Decider::NoMoves;
    }
    if let Some(mistake) = mistakes.first() {
        return Decider::Operator {
            operator: mistake.operator.clone(),
            key: mistake.key.clone(),
            status: mistake.status,
        };
    }
    // An operator's move the ledger or the runtime refused (a 409: someone settled the call
    // first; an undo with nothing to undo) is what this run shows stopped it: guards that
    // held, whose own other run cannot say, come after it.
    if !verdict.goal_reached
        && let Some((_, action)) = played.iter().enumerate().find(|(index, action)| {
            matches!(
                action.play,
                Play::OperatorResolve(OperatorResolve { .. }) | Play::OperatorCompensate(OperatorCompensate { .. })
            ) && sentences::missed_move(simulation, *index, &action.play).is_some()
        })
    {
        return Decider::Moment {
            card: action.play.card(),
            at_phase: action.at_phase,
        };
    }
    if let Some(counterfactual) = counterfactual.filter(|counterfactual| counterfactual.reproduced) {
        let cannot_say = counterfactual.cannot_say();
        let mut held: Vec<Guard> = Vec::new();
        for note in simulation.guard_notes() {
            if cannot_say.contains(&note.guard) && !held.contains(&note.guard) {
                held.push(note.guard);
            }
        }
        if !held.is_empty() && !verdict.goal_reached {
            return Decider::Held { guards: held };
        }
    }
    if !verdict.goal_reached
        && let Some((_, action)) = played
            .iter()
            .enumerate()
            .find(|(index, action)| sentences::missed_move(simulation, *index, &action.play).is_some())
    {
        return Decider::Moment {
            card: action.play.card(),
            at_phase: action.at_phase,
        };
    }
    if !verdict.goal_reached
        && let Some(entry) = simulation
            .timeline()
            .iter()
            .find(|entry| entry.actor == Actor::Billing && entry.text.starts_with("billing recognises key"))
    {
        return Decider::KeysHonoured {
            key: entry.key.clone().unwrap_or_default(),
        };
    }
    operator_decision(simulation, played)
        .or_else(|| unsaid(counterfactual))
        .unwrap_or(Decider::Unexplained)
}

/// The guards whose re-runs cannot say (a move meets nothing there), when no guard decided.
fn unsaid(counterfactual: Option<&Counterfactual>) -> Option<Decider> {
    let counterfactual = counterfactual.filter(|counterfactual| counterfactual.reproduced)?;
    let guards: Vec<DecidingGuard> = counterfactual
        .guards
        .iter()
        .filter(|finding| finding.role == Role::CannotSay)
        .map(|finding| DecidingGuard {
            guard: finding.guard,
            was_on: finding.was_on,
        })
        .collect();
    (!guards.is_empty()).then_some(Decider::Unsaid { guards })
}

/// The player's operator move that decided, when no guard did: the first resolve, else an
/// undo that landed (the ledger holds the call compensated by that operator).
fn operator_decision(simulation: &Simulation, played: &[TimedAction]) -> Option<Decider> {
    if let Some(Play::OperatorResolve(OperatorResolve {
        key, status, operator, ..
    })) = played
        .iter()
        .map(|action| &action.play)
        .find(|play| matches!(play, Play::OperatorResolve(OperatorResolve { .. })))
    {
        return Some(Decider::Operator {
            operator: operator.clone(),
            key: key.clone(),
            status: *status,
        });
    }
    // An undo that landed (the ledger holds the call compensated by that operator) decided.
    if let Some(Play::OperatorCompensate(OperatorCompensate { key, operator, .. })) = played.iter().map(|action| &action.play).find(
        |play| matches!(play, Play::OperatorCompensate(OperatorCompensate { key, operator, .. }) if undone_by(simulation, key, operator)),
    ) {
        return Some(Decider::Operator {
            operator: operator.clone(),
            key: key.clone(),
            status: Status::Compensated,
        });
    }
    // The level's auditor undid a double: their decision, after checking billing.
    let report = simulation.audit_report()?;
    let undo = report.undos.iter().find(|undo| undo.undone)?;
    Some(Decider::Operator {
        operator: report.auditor.clone(),
        key: undo.extra_key.clone()?,
        status: Status::Compensated,
    })
}

/// The ledger's history holds `key` compensated by `operator`'s request.
fn undone_by(simulation: &Simulation, key: &str, operator: &str) -> bool {
    simulation.ledger_history().is_ok_and(|history| {
        history.iter().any(|entry| {
            entry.key.as_str() == key && entry.actor == operator && entry.event == HistoryEvent::CompensationApplied
        })
    })
}

/// The run followed the level's lesson: the guards it teaches decided it, or each of them
/// acted in it (left a note, or lit a rule row it provides); a lesson about no guard is
/// followed when no guard decided. In a heist that worked, a guard that was on and decided
/// did not let it in: it did its ordinary work the heist relied on (keys per call making
/// Penny's second call a new key), so it neither makes nor breaks a lesson about another thing.
pub fn follows_lesson(
    simulation: &Simulation,
    decided_by: &Decider,
    counterfactual: Option<&Counterfactual>,
    heist_worked: bool,
) -> bool {
    let lesson: BTreeSet<Guard> = simulation.level().lesson.guards.iter().copied().collect();
    let decided: BTreeSet<Guard> = match decided_by {
        Decider::Guards { deciding, .. } => deciding
            .iter()
            .filter(|found| !(heist_worked && found.was_on))
            .map(|found| found.guard)
            .collect(),
        _ => BTreeSet::new(),
    };
    if lesson == decided {
        return true;
    }
    if lesson.is_empty() {
        return false;
    }
    let acted: BTreeSet<Guard> = simulation
        .guard_notes()
        .iter()
        .map(|note| note.guard)
        .chain(simulation.rules_fired().iter().filter_map(|firing| {
            rulebook::ROWS[rulebook::row_of(firing)]
                .live_when
                .filter(|(_, on)| *on)
                .map(|(guard, _)| guard)
        }))
        .collect();
    // A lesson guard whose own other run cannot say (a move never meets what it hit) does not
    // contradict the lesson: what the run shows of it is what it did.
    let cannot_say: BTreeSet<Guard> = counterfactual
        .map(Counterfactual::cannot_say)
        .unwrap_or_default()
        .into_iter()
        .collect();
    lesson
        .iter()
        .all(|guard| decided.contains(guard) || acted.contains(guard) || cannot_say.contains(guard))
}
