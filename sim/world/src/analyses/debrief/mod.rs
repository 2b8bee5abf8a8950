//! The debrief a player reads when a level ends: whether the heist worked, what decided it,
//! and what actually happened to the money, in a sentence or two drawn from the run itself.
//!
//! What decided a run is computed, not assumed: [`crate::counterfactual`] runs the same level,
//! seed and moves again with each guard switched, and the guards whose switch reaches the other
//! verdict decided it. The headline names them, the rule line quotes *their* rule from the seed
//! (never the level's when another guard decided), and each other run is offered side by side
//! ("without the write retry rule, this same run pays $50.00"). Where no guard decided, the
//! run's own events say what did: a move that missed its moment, billing recognising a key, an
//! operator's decision. The level's authored story is shown only when the run followed the
//! lesson's own path. A loss never shows the win's story; a customer left owed money is never
//! headlined as a guard holding. The game, the browser and the command line only show it.

mod audit;
mod decider;
mod guard_lines;
mod money;
mod sentences;

use serde::Serialize;

pub use decider::{Decider, DecidingGuard, OperatorMistake};
pub use guard_lines::{GuardLine, LinePart};
pub use sentences::failed_run_sentence;

use crate::checker::{Outcome, Verdict};
use crate::counterfactual::{self, Counterfactual};
use crate::level::Level;
use crate::rulebook;
use crate::runtime::guards::Guard;
use crate::runtime::rules::Status;
use crate::simulator::Simulation;

/// Runtime text for a player (kept here too for the game and the browser).
pub use crate::text::plain;

/// The most sentences a diagnosis holds: it is read in a glance, not studied.
pub const DIAGNOSIS_SENTENCES_MAX: usize = 3;

/// Where the level stands once it is over.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Standing {
    /// The crew reached the level's goal.
    HeistWorked,
    /// An unbeatable level held against the player's whole hand. Not its finish: spending a
    /// hand that cannot win is no choice that can fail, so the level is finished by a defence
    /// that holds ([`crate::defend`]).
    HeldAgainstTheWholeHand,
    /// An unbeatable level held, but cards are left: played out, not finished.
    HeldWithCardsLeft { cards_left: u32 },
    /// The goal was not reached.
    HeistFailed,
}

impl Standing {
    pub fn of(level: &Level, verdict: &Verdict, cards_left: u32) -> Standing {
        if verdict.goal_reached {
            Standing::HeistWorked
        } else if !level.unbeatable {
            Standing::HeistFailed
        } else if cards_left == 0 {
            Standing::HeldAgainstTheWholeHand
        } else {
            Standing::HeldWithCardsLeft { cards_left }
        }
    }

    /// The level counts as finished: only a heist that worked. An unbeatable level is finished
    /// by its defence holding (the game's defender screen, the browser's `/api/defend`), never by
    /// a play, however many cards it spent.
    pub fn finishes_level(self) -> bool {
        matches!(self, Standing::HeistWorked)
    }
}

/// How the debrief should feel, for the player's goal: colours and glyphs follow it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Tone {
    /// The crew reached its goal.
    Win,
    /// The crew did not, and nobody is left owed.
    Loss,
    /// An unbeatable level held: the runtime kept its promise, as it should.
    Held,
    /// A customer is owed money nothing will pay: whatever else happened, that is the news.
    Owed,
}

/// How a win compares with the level's par.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct ParCheck {
    pub cards: u32,
    pub phases: u32,
    pub par_cards: u32,
    pub par_phases: u32,
}

impl ParCheck {
    /// No more cards than par.
    pub fn cards_at_par(&self) -> bool {
        self.cards <= self.par_cards
    }
    /// No more cards than par, and no more phases.
    pub fn phases_at_par(&self) -> bool {
        self.cards_at_par() && self.phases <= self.par_phases
    }
    /// Stars earned: one for the cards, one more for the phases too.
    pub fn stars(&self) -> u32 {
        u32::from(self.cards_at_par()) + u32::from(self.phases_at_par())
    }
}

/// Where the rule line comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum RuleSource {
    /// The seed's rule for the guard that decided this run.
    Guard { guard: Guard },
    /// The seed's rule for a guard that held in this run, where switching it cannot say
    /// whether it decided (no guard was shown to).
    HeldGuard { guard: Guard },
    /// The seed's rule for what decided it when no guard did (billing's keys, an operator).
    Decider,
    /// The level's own rule: no guard decided, and the run's events name nothing else.
    Level,
    /// The level's own rule: no guard was shown to decide, and switching some cannot say
    /// ([`Decider::Unsaid`]).
    LevelUnsaid,
    /// The level's own rule in a heist that worked where every guard that decided was on and
    /// did only its ordinary work, which the crew used (39: retries of one key reach a billing
    /// that honours keys). Their rules are not what the run teaches; the level's is.
    Lesson,
}

impl RuleSource {
    /// Where the debrief's rule line comes from, in words both editions and `twice-sim play`
    /// show: "the rule of the write retry rule, which decided this run".
    pub fn words(self) -> String {
        match self {
            RuleSource::Guard { guard } => {
                format!("the rule of {}, which decided this run", crate::guards::words(guard))
            }
            RuleSource::HeldGuard { guard } => {
                format!("the rule of {}, which held in this run", crate::guards::words(guard))
            }
            RuleSource::Decider => "the rule of what decided this run".to_owned(),
            RuleSource::Level => "the level's rule: no guard decided this run".to_owned(),
            RuleSource::LevelUnsaid => {
                "the level's rule: no guard was shown to decide this run (switching one cannot say)".to_owned()
            }
            RuleSource::Lesson => {
                "the level's rule: the guards that decided were on, and the heist used their ordinary work".to_owned()
            }
        }
    }
}

/// Another run offered beside this one: the same moves with one or two guards switched.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct WhatIf {
    pub guards: Vec<Guard>,
    /// "Without the write retry rule, this same run pays Ada $50.00 of $25.00 owed: the heist works."
    pub sentence: String,
    /// Its index in the counterfactual's alternatives (to build it again and show it).
    pub alternative: usize,
}

/// The debrief of one finished (or quiet) run.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Debrief {
    pub standing: Standing,
    pub tone: Tone,
    pub headline: String,
    /// What happened to the money, and why, from this run: at most [`DIAGNOSIS_SENTENCES_MAX`].
    pub diagnosis: Vec<String>,
    /// The level's own story, only when this run followed the lesson's path (a win) or held
    /// (an unbeatable level). Empty otherwise, and always on a loss.
    pub story: String,
    /// The rule this run shows: the deciding guard's, else what decided it, else the level's.
    pub rule: String,
    pub rule_from: RuleSource,
    /// What decided this run.
    pub decided_by: Decider,
    /// Guards that were on and whose switch alone changes neither the heist nor anyone's money.
    pub not_needed: Vec<Guard>,
    /// The other runs worth seeing side by side: those that reached the other verdict, then
    /// those where one guard's switch changed some customer's money.
    pub what_if: Vec<WhatIf>,
    /// What each guard that matters did, in its own words: the one list the game and the
    /// browser draw (decided the heist, changed the money, held, not needed).
    pub guard_lines: Vec<GuardLine>,
    /// The run followed the level's lesson (the same guards decided, or acted).
    pub follows_lesson: bool,
    /// The whole counterfactual, when it could be made.
    pub counterfactual: Option<Counterfactual>,
    pub cards_played: u32,
    pub phases: u32,
    /// On a win in a level with a par: how this win compares.
    pub par: Option<ParCheck>,
}

impl Debrief {
    /// The guards that decided this run, alone or together.
    pub fn deciding_guards(&self) -> Vec<Guard> {
        match &self.decided_by {
            Decider::Guards { guards, .. } => guards.clone(),
            _ => Vec::new(),
        }
    }
}

/// The debrief of `simulation` as it stands now (call it when the level is over): runs the
/// counterfactual (up to [`counterfactual::RERUNS_MAX`] simulations in memory).
pub fn of(simulation: &Simulation, verdict: &Verdict) -> Debrief {
    // A run that cannot be simulated again is told from its own events alone.
    let counterfactual = counterfactual::of(simulation).ok();
    with_counterfactual(simulation, verdict, counterfactual)
}

/// The diagnosis told to someone who is not the crew — the room's race, where everyone is an
/// operator: what happened to the money and why, without the line that tells a player how to
/// finish the level.
pub fn diagnosis_for_operators(level: &Level, debrief: &Debrief) -> Vec<String> {
    let finish = sentences::defend_to_finish(level, debrief.standing);
    debrief
        .diagnosis
        .iter()
        .filter(|sentence| Some(*sentence) != finish.as_ref())
        .cloned()
        .collect()
}

/// The debrief, given the counterfactual already made (or none).
pub fn with_counterfactual(
    simulation: &Simulation,
    verdict: &Verdict,
    counterfactual: Option<Counterfactual>,
) -> Debrief {
    let level = simulation.level();
    let cards_left: u32 = simulation.hand().values().sum();
    let cards_played = u32::try_from(simulation.played().len()).unwrap_or(u32::MAX);
    let standing = Standing::of(level, verdict, cards_left);
    let phases = simulation.phase();
    let mistakes = decider::operator_mistakes(simulation, verdict);
    let decided_by = decider::decider(simulation, verdict, counterfactual.as_ref(), &mistakes);
    let tone = tone(level, standing, verdict);
    let follows_lesson =
        decider::follows_lesson(simulation, &decided_by, counterfactual.as_ref(), verdict.goal_reached);
    // Guards whose switch alone changes some customer's money but not the heist: "none
    // decided" is never said while one does.
    let money_guards: Vec<Guard> = counterfactual
        .as_ref()
        .filter(|counterfactual| counterfactual.reproduced)
        .map(|counterfactual| {
            counterfactual
                .changed_the_money()
                .iter()
                .map(|finding| finding.guard)
                .collect()
        })
        .unwrap_or_default();
    let diagnosis = sentences::diagnosis(simulation, verdict, standing, &decided_by, &mistakes, &money_guards);
    let headline = headline(simulation, verdict, standing, tone, &decided_by, &mistakes);
    let story = match standing {
        Standing::HeistWorked if follows_lesson => plain(&level.lesson.text),
        Standing::HeldAgainstTheWholeHand | Standing::HeldWithCardsLeft { .. } if tone == Tone::Held => {
            plain(&level.debrief)
        }
        _ => String::new(),
    };
    let (rule, rule_from) = rule_line(level, &decided_by, verdict.goal_reached);
    let par = match (standing, level.par) {
        (Standing::HeistWorked, Some(par)) => Some(ParCheck {
            cards: cards_played,
            phases,
            par_cards: par.cards,
            par_phases: par.phases,
        }),
        _ => None,
    };
    let what_if = counterfactual
        .as_ref()
        .filter(|counterfactual| counterfactual.reproduced)
        .map(|counterfactual| guard_lines::what_if(level, counterfactual))
        .unwrap_or_default();
    let guard_lines = guard_lines::lines(level, verdict, counterfactual.as_ref(), &decided_by, &what_if);
    Debrief {
        standing,
        tone,
        headline,
        diagnosis,
        story,
        rule,
        rule_from,
        decided_by,
        not_needed: counterfactual
            .as_ref()
            .map(Counterfactual::not_needed)
            .unwrap_or_default(),
        what_if,
        guard_lines,
        follows_lesson,
        counterfactual,
        cards_played,
        phases,
        par,
    }
}

/// The tone for the player's goal: a customer owed money outranks everything but a win.
fn tone(level: &Level, standing: Standing, verdict: &Verdict) -> Tone {
    let someone_owed = verdict
        .credits
        .iter()
        .any(|credit| credit.outcome == Outcome::NotPaidButOwed);
    match standing {
        Standing::HeistWorked => Tone::Win,
        _ if someone_owed => Tone::Owed,
        _ if level.unbeatable => Tone::Held,
        _ => Tone::Loss,
    }
}

fn headline(
    simulation: &Simulation,
    verdict: &Verdict,
    standing: Standing,
    tone: Tone,
    decided_by: &Decider,
    mistakes: &[OperatorMistake],
) -> String {
    let level = simulation.level();
    if tone == Tone::Owed {
        return match mistakes.first() {
            Some(mistake) => mistake.sentence.clone(),
            None => match money::shortfall(level, verdict) {
                Some(owed) => format!("{owed} that nothing will pay."),
                None => "A customer is owed money that nothing will pay.".to_owned(),
            },
        };
    }
    match standing {
        Standing::HeistWorked => format!("The heist worked: {}.", sentences::outcome_words(level, verdict)),
        Standing::HeldAgainstTheWholeHand => {
            "The runtime held against your whole hand, as this level promised; now defend it.".into()
        }
        // The run is over: a card still in the hand can no longer be played in it.
        Standing::HeldWithCardsLeft { cards_left } => format!(
            "The runtime held. {} went unplayed: the run is over, so {} can no longer be played.",
            crate::text::counted(u64::from(cards_left), "card", "cards"),
            if cards_left == 1 { "it" } else { "they" }
        ),
        Standing::HeistFailed => format!("The heist failed: {}.", decided_by.failed_because()),
    }
}

/// The rule line: the deciding guard's (one the level teaches first), else what decided.
fn rule_line(level: &Level, decided_by: &Decider, heist_worked: bool) -> (String, RuleSource) {
    match decided_by {
        Decider::Guards { deciding, .. } => {
            // The lesson's guard if it decided; else one whose state made the difference the way
            // its rule reads: off in a heist that worked (the hole), on in one that failed (it
            // held). A guard that was on in a heist that worked only did work the crew used.
            let taught = deciding
                .iter()
                .find(|found| level.lesson.guards.contains(&found.guard))
                .or_else(|| deciding.iter().find(|found| found.was_on != heist_worked))
                // A heist that failed because a guard was off (one that, on, pays twice)
                // still quotes that guard's rule.
                .or_else(|| deciding.first().filter(|_| !heist_worked));
            match taught {
                Some(found) => (
                    crate::guards::rule(found.guard),
                    RuleSource::Guard { guard: found.guard },
                ),
                None => (plain(&level.lesson.rule), RuleSource::Lesson),
            }
        }
        Decider::Held { guards } => {
            let guard = guards
                .iter()
                .copied()
                .find(|guard| level.lesson.guards.contains(guard))
                .or_else(|| guards.first().copied())
                .expect("a held decider names at least one guard");
            (crate::guards::rule(guard), RuleSource::HeldGuard { guard })
        }
        Decider::KeysHonoured { .. } => (rulebook::KEYS_HONOURED_RULE.to_owned(), RuleSource::Decider),
        Decider::Operator {
            status: Status::Compensated,
            ..
        } => (rulebook::COMPENSATE_RULE.to_owned(), RuleSource::Decider),
        Decider::Operator { .. } => (rulebook::OPERATOR_RULE.to_owned(), RuleSource::Decider),
        Decider::Unsaid { .. } => (plain(&level.lesson.rule), RuleSource::LevelUnsaid),
        Decider::Moment { .. } | Decider::NoMoves | Decider::Unexplained => {
            (plain(&level.lesson.rule), RuleSource::Level)
        }
    }
}
