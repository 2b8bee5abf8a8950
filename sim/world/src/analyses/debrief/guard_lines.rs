//! The guards' lines of a debrief — one list the game and the browser both draw, so neither
//! composes words of its own: which guards decided the heist, which changed a customer's
//! money though not the heist, which held where the re-run cannot say, and which were not
//! needed. Each line's sentence is its guard's own (`crate::guards`), with the money of its
//! re-run customer by customer; `holding` says whether it may be drawn as a guard holding
//! (a shield, the colour of safety), which it never is while a customer of this run is owed
//! or paid twice.

use serde::Serialize;

use super::WhatIf;
use super::decider::Decider;
use super::money;
use super::sentences::capitalised;
use crate::checker::{RowTelling, Verdict};
use crate::counterfactual::{Counterfactual, GuardFinding, Role, RunResult};
use crate::guards::{self, OtherRun, Switched};
use crate::level::Level;
use crate::runtime::guards::Guard;

/// What a guard's line says it did.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LinePart {
    /// Switched alone, the heist turns.
    DecidedTheHeist,
    /// Switched together with another (each alone changes nothing), the heist turns.
    DecidedTogether,
    /// Switched alone, the heist stays as it is, but some customer's money changes.
    ProtectedTheMoney,
    /// It held (it left a note), and its re-run cannot say whether it decided.
    HeldCannotSay,
    /// On, it left no note, and its re-run cannot say (a move never meets what it hit here):
    /// neither "decided" nor "not needed" would be true of it.
    CannotSay,
    /// On, and switched off alone it changes neither the heist nor anyone's money.
    NotNeeded,
}

/// One line about one guard (or the guards a sentence names together).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct GuardLine {
    pub guards: Vec<Guard>,
    /// How the player calls them: "the ledger", "the ledger and keys per call".
    pub words: String,
    pub part: LinePart,
    /// Every guard of the line was on in this run.
    pub was_on: bool,
    /// The line in the guard's own words, true of this run and its re-run.
    pub sentence: String,
    /// It may be drawn as a guard holding (shield, safe colour, "held"): on, it stopped the
    /// heist or kept a customer's money, and nobody in this run is owed or paid twice.
    pub holding: bool,
    /// Its other run among the debrief's what-ifs, to be seen side by side.
    pub what_if: Option<usize>,
}

/// Some customer of this run is owed money or was paid twice: nothing is drawn as holding.
/// The same fact re-tells the timeline's guard rows (`TimelineEntry::guard_row`).
fn someone_wronged(verdict: &Verdict) -> bool {
    verdict.money_wrong().any()
}

fn words_of(guards: &[Guard]) -> String {
    let words: Vec<String> = guards.iter().map(|guard| guards::words(*guard).to_owned()).collect();
    money::listed(&words)
}

/// Each other run worth offering beside this one, in words: every one that reached the other
/// verdict (a guard alone, or a pair), then every one where a guard's switch alone changed
/// some customer's money.
pub(super) fn what_if(level: &Level, counterfactual: &Counterfactual) -> Vec<WhatIf> {
    let mut found = Vec::new();
    let mut offer = |flipped: &[(Guard, bool)], alternative: usize| {
        let Some(result) = counterfactual
            .alternatives
            .get(alternative)
            .and_then(|other| other.result())
        else {
            return;
        };
        let switched: Vec<String> = flipped
            .iter()
            .map(|(guard, on)| {
                guards::switched(Switched {
                    guard: *guard,
                    was_on: !*on,
                })
            })
            .collect();
        let sentence = format!(
            "{}, in this same run {}: the heist {}.",
            capitalised(&money::listed(&switched)),
            money::clauses(level, result, &[]),
            if result.goal_reached { "works" } else { "fails" }
        );
        found.push(WhatIf {
            guards: flipped.iter().map(|(guard, _)| *guard).collect(),
            sentence,
            alternative,
        });
    };
    for finding in counterfactual
        .guards
        .iter()
        .filter(|finding| finding.role == Role::Decided)
    {
        offer(&[(finding.guard, !finding.was_on)], finding.alternative);
    }
    for pair in &counterfactual.pairs {
        let flips: Vec<(Guard, bool)> = counterfactual.alternatives[pair.alternative]
            .flipped
            .iter()
            .map(|flip| (flip.guard, flip.on))
            .collect();
        offer(&flips, pair.alternative);
    }
    for finding in counterfactual.changed_the_money() {
        offer(&[(finding.guard, !finding.was_on)], finding.alternative);
    }
    found
}

/// The guards' lines of this run: decided the heist (alone, then together), changed the money,
/// held where the re-run cannot say, not needed.
pub(super) fn lines(
    level: &Level,
    verdict: &Verdict,
    counterfactual: Option<&Counterfactual>,
    decided_by: &Decider,
    what_if: &[WhatIf],
) -> Vec<GuardLine> {
    let wronged = someone_wronged(verdict);
    let heist_worked = verdict.goal_reached;
    let mut lines = Vec::new();
    let seen = |alternative: usize| what_if.iter().position(|known| known.alternative == alternative);
    let Some(counterfactual) = counterfactual.filter(|counterfactual| counterfactual.reproduced) else {
        return held_lines(decided_by, wronged);
    };
    let this: &RunResult = &counterfactual.this_run;
    let other = |alternative: usize| {
        counterfactual
            .alternatives
            .get(alternative)
            .and_then(|other| other.result())
    };
    // One guard's line: it decided the heist, or it changed the money.
    let single = |finding: &GuardFinding, part: LinePart| -> Option<GuardLine> {
        let result = other(finding.alternative)?;
        let switch = Switched {
            guard: finding.guard,
            was_on: finding.was_on,
        };
        let changed = money::changed(level, this, result);
        let (sentence, holding) = match part {
            LinePart::DecidedTheHeist => (
                guards::decided_the_heist(switch, heist_worked, &changed),
                finding.was_on && !heist_worked && !wronged,
            ),
            // Only a guard whose absence leaves someone worse off kept their money: one whose
            // absence pays a customer better (a refusal that left a refund unpaid) held nothing.
            _ => {
                let other = money::compared(this, result);
                (
                    guards::protected_the_money(switch, heist_worked, other, &changed),
                    finding.was_on && !wronged && other == OtherRun::Worse,
                )
            }
        };
        Some(GuardLine {
            guards: vec![finding.guard],
            words: words_of(&[finding.guard]),
            part,
            was_on: finding.was_on,
            sentence,
            holding,
            what_if: seen(finding.alternative),
        })
    };
    lines.extend(
        counterfactual
            .guards
            .iter()
            .filter(|finding| finding.role == Role::Decided)
            .filter_map(|finding| single(finding, LinePart::DecidedTheHeist)),
    );
    for pair in &counterfactual.pairs {
        let Some(result) = other(pair.alternative) else {
            continue;
        };
        let flipped = &counterfactual.alternatives[pair.alternative].flipped;
        let was_on = flipped.iter().all(|flip| !flip.on);
        let switched: Vec<String> = flipped
            .iter()
            .map(|flip| {
                guards::switched(Switched {
                    guard: flip.guard,
                    was_on: !flip.on,
                })
            })
            .collect();
        let together = if was_on && !heist_worked && !wronged {
            "held together"
        } else {
            "decided together"
        };
        lines.push(GuardLine {
            guards: pair.guards.to_vec(),
            words: words_of(&pair.guards),
            part: LinePart::DecidedTogether,
            was_on,
            sentence: format!(
                "{} {together}: switched alone, neither changes the heist; {}, {}, and the heist {}.",
                capitalised(&words_of(&pair.guards)),
                money::listed(&switched),
                money::changed(level, this, result),
                if heist_worked { "fails" } else { "works" }
            ),
            holding: was_on && !heist_worked && !wronged,
            what_if: seen(pair.alternative),
        });
    }
    lines.extend(
        counterfactual
            .changed_the_money()
            .into_iter()
            .filter_map(|finding| single(finding, LinePart::ProtectedTheMoney)),
    );
    lines.extend(held_lines(decided_by, wronged));
    lines.extend(unsaid_lines(verdict, counterfactual, &lines, wronged));
    lines.extend(not_needed_line(level, counterfactual));
    lines
}

/// The guards this run did not need, in one line.
fn not_needed_line(level: &Level, counterfactual: &Counterfactual) -> Option<GuardLine> {
    let not_needed = counterfactual.not_needed();
    // Named only where the level's screen names them (its lesson, its guards off): a
    // chapter-1 player never meets a guard by name the campaign has not introduced.
    let (named, others): (Vec<Guard>, Vec<Guard>) = not_needed
        .iter()
        .copied()
        .partition(|guard| level.lesson.guards.contains(guard) || !level.guards.is_on(*guard));
    let sentence = guards::not_needed(&named, others.len())?;
    Some(GuardLine {
        words: words_of(&named),
        guards: not_needed,
        part: LinePart::NotNeeded,
        was_on: true,
        sentence,
        holding: false,
        what_if: None,
    })
}

/// The guards whose re-run cannot say and no line above tells yet — while
/// another guard decided, a guard that held here (06: the ledger held `started` for the key,
/// the crash card's moment never comes without it) would otherwise vanish from the debrief,
/// told neither as deciding nor as not needed. Those that left a note are told as having held
/// (or acted); the rest in one line saying why their runs cannot say.
fn unsaid_lines(
    verdict: &Verdict,
    counterfactual: &Counterfactual,
    told: &[GuardLine],
    wronged: bool,
) -> Vec<GuardLine> {
    let unsaid_when = |on: bool| -> Vec<Guard> {
        counterfactual
            .guards
            .iter()
            .filter(|finding| finding.was_on == on && finding.role == Role::CannotSay)
            .map(|finding| finding.guard)
            .filter(|guard| told.iter().all(|line| !line.guards.contains(guard)))
            .collect()
    };
    let (noted, quiet): (Vec<Guard>, Vec<Guard>) = unsaid_when(true)
        .into_iter()
        .partition(|guard| verdict.stopped_by.contains(guard));
    let mut lines = held_lines(&Decider::Held { guards: noted }, wronged);
    let mut cannot_say = |guards: Vec<Guard>, was_on: bool| {
        if guards.is_empty() {
            return;
        }
        let words = words_of(&guards);
        let one = guards.len() == 1;
        lines.push(GuardLine {
            sentence: format!(
                "{} {} {}; switched {}, one of your moves never meets what it hit here, so {} cannot be said.",
                capitalised(&words),
                if one { "was" } else { "were" },
                if was_on { "on" } else { "off" },
                if was_on { "off" } else { "on" },
                match (was_on, one) {
                    (true, true) => "what it did for this run",
                    (true, false) => "what they did for this run",
                    (false, true) => "whether it alone would turn the heist",
                    (false, false) => "whether one of them alone would turn the heist",
                },
            ),
            words,
            guards,
            part: LinePart::CannotSay,
            was_on,
            holding: false,
            what_if: None,
        });
    };
    cannot_say(quiet, true);
    // A guard that was off and whose re-run cannot say is as much a part of the story as one
    // that was on: in 22 the contract check, off, is what the lesson is about — dropping it
    // left the debrief saying no guard's switch mattered.
    cannot_say(unsaid_when(false), false);
    lines
}

/// Guards that held whose re-runs cannot say whether they decided.
fn held_lines(decided_by: &Decider, wronged: bool) -> Vec<GuardLine> {
    let Decider::Held { guards: held } = decided_by else {
        return Vec::new();
    };
    held.iter()
        .map(|guard| GuardLine {
            guards: vec![*guard],
            words: words_of(&[*guard]),
            part: LinePart::HeldCannotSay,
            was_on: true,
            sentence: format!(
                "{} {}; switched off, one of your moves never meets what it hit here, so whether it alone decided cannot be said.",
                capitalised(guards::words(*guard)),
                // A customer owed or paid twice: no guard is told as holding.
                if wronged { "acted (the timeline shows its note)" } else { "held" }
            ),
            holding: !wronged,
            what_if: None,
        })
        .collect()
}

impl super::Debrief {
    /// The guards the debrief's code diff switches: the open other run's (`other_run`, an
    /// index into `what_if`), else the first line that decided the heist — one guard, or a
    /// pair. Never every deciding guard at once: each decided alone, and all switched together
    /// is a run no sentence of the debrief describes.
    pub fn fix_guards(&self, other_run: Option<usize>) -> Vec<Guard> {
        if let Some(what_if) = other_run.and_then(|which| self.what_if.get(which)) {
            return what_if.guards.clone();
        }
        self.guard_lines
            .iter()
            .find(|line| matches!(line.part, LinePart::DecidedTheHeist | LinePart::DecidedTogether))
            .map_or_else(|| self.deciding_guards(), |line| line.guards.clone())
    }

    /// How the run's timeline tells its guard rows: by the money (nobody owed or paid twice)
    /// and by these lines ([`Self::guards_not_holding`]).
    pub fn row_telling(&self, verdict: &Verdict) -> RowTelling {
        RowTelling {
            money: verdict.money_wrong(),
            not_holding: self.guards_not_holding(),
        }
    }

    /// The guards that were on whose line is not a guard holding: the timeline does not draw
    /// them as holding either (a "not needed" line says nothing of the kind).
    pub fn guards_not_holding(&self) -> Vec<Guard> {
        let mut not_holding: Vec<Guard> = Vec::new();
        for line in &self.guard_lines {
            if line.was_on && !line.holding && line.part != LinePart::NotNeeded {
                for guard in &line.guards {
                    if !not_holding.contains(guard) {
                        not_holding.push(*guard);
                    }
                }
            }
        }
        not_holding
    }
}
