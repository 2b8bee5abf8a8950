//! The sentences of a debrief, each drawn from this run: what happened to the money, what
//! followed a failed run, what a guard did, why a move changed nothing.

use super::decider::{Decider, OperatorMistake};
use super::money;
use super::{DIAGNOSIS_SENTENCES_MAX, Standing};
use crate::checker::{Outcome, Verdict};
use crate::guards::words as guard_words;
use crate::level::{Level, Play};
use crate::runtime::guards::Guard;
use crate::runtime::worker::GuardNote;
use crate::simulator::{Actor, FailedRun, Simulation};
use crate::text::plain;

/// What happened to the money and why, from this run: at most [`DIAGNOSIS_SENTENCES_MAX`].
pub(super) fn diagnosis(
    simulation: &Simulation,
    verdict: &Verdict,
    standing: Standing,
    decided_by: &Decider,
    mistakes: &[OperatorMistake],
    money_guards: &[Guard],
) -> Vec<String> {
    let mut diagnosis = vec![money_sentence(simulation, verdict)];
    // A customer left owed: no sentence tells a guard as holding.
    let owed = verdict
        .credits
        .iter()
        .any(|credit| credit.outcome == Outcome::NotPaidButOwed);
    // A level's audit is part of what happened to the money: who looked, what they undid.
    diagnosis.extend(super::audit::audit_sentence(simulation));
    // An audit that undid a double says what happened to the money: no other sentence needed.
    let audited = simulation.audit_report().is_some_and(|report| !report.undos.is_empty());
    // A run that failed changes what the money means: say what followed it.
    if let Some(failed) = simulation.failed_runs().first() {
        let landed = simulation
            .effects()
            .values()
            .filter(|origin| origin.run == failed.run)
            .count();
        diagnosis.push(failed_run_sentence(failed, landed));
    }
    // An owed customer's headline already names the mistake; a win's does not.
    if let Some(mistake) = mistakes.first().filter(|_| standing == Standing::HeistWorked) {
        diagnosis.push(mistake.sentence.clone());
    }
    match standing {
        Standing::HeistWorked => {
            if let Decider::Operator { .. } = decided_by
                && mistakes.is_empty()
            {
                diagnosis.extend(operator_sentence(simulation));
            }
        }
        Standing::HeldAgainstTheWholeHand | Standing::HeldWithCardsLeft { .. } => {
            if let Some(note) = deciding_note(simulation, decided_by) {
                diagnosis.push(guard_sentence(note, owed));
            }
        }
        Standing::HeistFailed => {
            let explained = !simulation.failed_runs().is_empty() || !mistakes.is_empty() || audited;
            diagnosis.extend(why_it_failed(simulation, explained, decided_by, money_guards, owed));
        }
    }
    // How the level is finished is never the sentence cut for length.
    let finish = defend_to_finish(simulation.level(), standing);
    diagnosis.dedup();
    diagnosis.truncate(DIAGNOSIS_SENTENCES_MAX - usize::from(finish.is_some()));
    diagnosis.extend(finish);
    diagnosis
}

/// How an unbeatable level is finished, told after a play that held: by a defence, not by
/// spending cards (a hand that cannot win is no choice that can fail).
pub(super) fn defend_to_finish(level: &Level, standing: Standing) -> Option<String> {
    if !matches!(
        standing,
        Standing::HeldAgainstTheWholeHand | Standing::HeldWithCardsLeft { .. }
    ) {
        return None;
    }
    let budget = level.defender.as_ref()?.budget;
    let cards = match standing {
        Standing::HeldWithCardsLeft { cards_left } => {
            format!(
                "No play finishes this level, not even with the {} left unplayed",
                if cards_left == 1 { "card" } else { "cards" }
            )
        }
        _ => "Spending the whole hand does not finish this level".to_owned(),
    };
    Some(format!(
        "{cards}: defend it with at most {} that stop every heist: a defence that holds, with no heist the explorer finds getting through, finishes it.",
        crate::text::counted(u64::from(budget), "guard", "guards")
    ))
}

pub(super) fn capitalised(text: &str) -> String {
    let mut characters = text.chars();
    match characters.next() {
        Some(first) => first.to_uppercase().chain(characters).collect(),
        None => String::new(),
    }
}

/// What the crew was after, done, naming the customers it happened to: "Ada was paid twice",
/// "Ada and Bob were paid twice".
pub(super) fn outcome_words(level: &Level, verdict: &Verdict) -> String {
    // An email, owner change or delete is named by the checker's own sentence for it.
    if let Some(effect) = verdict.effects.iter().find(|effect| effect.outcome == verdict.outcome) {
        return effect.words.clone();
    }
    let names = money::named_with(level, verdict, verdict.outcome);
    let who = if names.is_empty() {
        first_owner(level)
    } else {
        money::listed(&names)
    };
    let several = names.len() > 1;
    let (was, is, has) = if several {
        ("were", "are", "have")
    } else {
        ("was", "is", "has")
    };
    match verdict.outcome {
        Outcome::PaidTwice => format!("{who} {was} paid twice"),
        Outcome::NotPaidButOwed => format!("{who} {is} owed money nobody will pay"),
        Outcome::UnknownFlagged => format!("{who} {has} money nobody can account for yet"),
        Outcome::PaidOnce => format!("{who} {was} paid once"),
        // Judged per effect above; reached only if no effect carries the outcome.
        other => format!("{who}: {}", other.words()),
    }
}

pub(super) fn first_owner(level: &Level) -> String {
    level.first_owner()
}

/// One sentence about the money: what billing holds against what was owed, customer by
/// customer ("Ada $25.00 of $25.00, Bob $40.00 of $40.00 owed"), never one name on a sum.
fn money_sentence(simulation: &Simulation, verdict: &Verdict) -> String {
    let level = simulation.level();
    if verdict.credits.is_empty() && !verdict.effects.is_empty() {
        // No money moves in this level: what landed is said effect by effect, per customer.
        let words: Vec<String> = verdict.effects.iter().map(|effect| effect.words.clone()).collect();
        return format!("{}.", capitalised(&money::listed(&words)));
    }
    let customers = money::customers_of(verdict);
    let amounts = money::amounts(level, &customers);
    let landed: u32 = verdict.credits.iter().map(|credit| credit.credits_applied).sum();
    let reversals = simulation
        .billing()
        .entries
        .iter()
        .filter(|entry| entry.amount_cents < 0)
        .count();
    let reversed = if reversals > 0 {
        format!(
            " and {}",
            crate::text::counted(reversals as u64, "reversal", "reversals")
        )
    } else {
        String::new()
    };
    let never_sent = never_sent_waited_call(simulation, verdict);
    let credits = crate::text::counted(landed as u64, "credit", "credits");
    match verdict.outcome {
        Outcome::PaidTwice => format!("Billing paid {amounts}: {credits}{reversed}."),
        Outcome::PaidOnce => format!("Billing paid exactly what was owed, {amounts} ({credits}{reversed})."),
        Outcome::UnknownFlagged if verdict.waiting.is_empty() && !simulation.failed_runs().is_empty() => format!(
            "Billing holds {amounts}, and the run that should have paid failed: it says so, but until a person looks, nobody is sure the money is right."
        ),
        Outcome::UnknownFlagged if never_sent.is_some() => format!(
            "Billing holds {amounts}, and the run waits on {}, a call that never left its worker: there is nothing for a lookup to find, and a person must settle it.",
            never_sent.unwrap_or_default()
        ),
        Outcome::UnknownFlagged => format!(
            "Billing holds {amounts}, and the run is flagged and waits for a person: until someone finds out what happened, the rest is paid to nobody."
        ),
        Outcome::NotPaidButOwed => {
            format!("Billing holds {amounts} ({credits}{reversed}), and nothing is waiting to pay the rest.")
        }
        // Another side effect decided; the money is said as it stands.
        Outcome::EmailedTwice | Outcome::ChangeUndone | Outcome::ActedAgain | Outcome::NotDone | Outcome::DoneOnce => {
            format!("Billing holds {amounts} ({credits}{reversed}).")
        }
    }
}

/// A call a waiting run is unknown on that never left its worker (refused before sending and
/// recorded unknown anyway): nothing of it was on the wire or at billing, so the run waits on
/// nothing, and "honestly" would not be true. A lost request was on the wire: not this.
fn never_sent_waited_call(simulation: &Simulation, verdict: &Verdict) -> Option<String> {
    let records = simulation.ledger_records().ok()?;
    records
        .iter()
        .filter(|record| record.status.is_unknown())
        .map(|record| record.key.to_string())
        .filter(|key| verdict.waiting.iter().any(|run| key.starts_with(&format!("{run}:"))))
        .find(|key| {
            !simulation.timeline().iter().any(|entry| {
                matches!(entry.actor, Actor::Billing | Actor::Network) && entry.key.as_deref() == Some(key.as_str())
            })
        })
}

/// What followed a run's failure: what had landed, what the runtime undid by reflex, and the
/// fresh run a workflow's retry started. `landed`: the credits billing applied for the run's calls.
pub fn failed_run_sentence(failed: &FailedRun, landed: usize) -> String {
    let step = failed.item.saturating_add(1);
    let mut sentence = format!("Run {} failed at step {step}", failed.run);
    if !failed.compensated.is_empty() {
        sentence.push_str(&format!(
            ", and the runtime compensated {} by reflex, though the later failure made none of it wrong",
            failed.compensated.join(", ")
        ));
    } else if landed == 0 {
        sentence.push_str(", before anything of it had landed in billing");
        if failed.fresh_run.is_none() {
            sentence.push_str(": there was nothing to undo");
        }
    } else if failed.took_effect == 0 {
        sentence.push_str(", after billing had applied a credit the run never heard about");
    } else {
        sentence.push_str(", and what took effect before it still stands");
    }
    match &failed.fresh_run {
        Some(fresh) => sentence.push_str(&format!(
            "; its workflow then started a fresh run, {fresh}, which makes every call again under new keys."
        )),
        None => sentence.push('.'),
    }
    sentence
}

/// What a guard did, from its note: "… held: …", unless a customer of this run is left owed
/// (`owed`), when no guard is told as holding — the note is told as the runtime's.
fn guard_sentence(note: &GuardNote, owed: bool) -> String {
    let detail = plain(&crate::text::note_words(note));
    if owed {
        return format!("The runtime noted: {}.", detail.trim_end_matches('.'));
    }
    crate::guards::held(note.guard, &detail)
}

/// Why a failed heist failed: the guard that decided and what it did, or why the moves
/// changed nothing. `explained`: the diagnosis already says what happened to the run (it failed).
/// `money_guards`: guards whose switch alone changes some customer's money, not the heist.
fn why_it_failed(
    simulation: &Simulation,
    explained: bool,
    decided_by: &Decider,
    money_guards: &[Guard],
    owed: bool,
) -> Vec<String> {
    let played = simulation.played();
    if played.is_empty() {
        // A run a start check refused never started: no card was ever going to matter.
        if let Some(refused) = simulation
            .guard_notes()
            .iter()
            .find(|note| matches!(note.held, crate::runtime::worker::Held::ContractRefused { .. }))
        {
            return vec![
                guard_sentence(refused, owed),
                "No card could change that: the run never started, so nothing was sent to lose or slow.".into(),
            ];
        }
        return vec!["You played no card, so nothing disturbed Penny: every card here needs its moment.".into()];
    }
    let mut sentences = Vec::new();
    // A move that changed nothing first: it is the player's to fix.
    if let Some(missed) = played
        .iter()
        .enumerate()
        .find_map(|(index, action)| missed_move(simulation, index, &action.play))
    {
        sentences.push(missed);
    }
    match decided_by {
        Decider::Guards { .. } => {
            if let Some(note) = deciding_note(simulation, decided_by) {
                sentences.push(guard_sentence(note, owed));
            }
        }
        Decider::Held { guards } => {
            if let Some(note) = simulation
                .guard_notes()
                .iter()
                .find(|note| guards.contains(&note.guard))
            {
                sentences.push(guard_sentence(note, owed));
            }
            sentences.push(format!(
                "Switched off, {} changes the run so that one of your moves never meets what it hit here: this run cannot say whether it alone decided.",
                guard_words(guards[0])
            ));
        }
        Decider::Unsaid { guards } => {
            let words: Vec<&str> = guards.iter().map(|found| guard_words(found.guard)).collect();
            sentences.push(format!(
                "Switched, {} changes the run so that one of your moves never meets what it hit here: this run cannot say whether {} alone decided.",
                crate::text::and_list(&words),
                if guards.len() == 1 { "it" } else { "one" }
            ));
        }
        Decider::KeysHonoured { key } => sentences.push(format!(
            "Billing recognised key {key} and answered with its first credit instead of paying again."
        )),
        // What the runtime did with the decision, when a guard acted on it; else the decision.
        Decider::Operator { .. } => match simulation.guard_notes().first() {
            Some(note) => sentences.push(guard_sentence(note, owed)),
            None => sentences.extend(operator_sentence(simulation)),
        },
        Decider::Moment { .. } | Decider::NoMoves | Decider::Unexplained => {}
    }
    if sentences.is_empty() && !explained {
        // A guard or an operator decided but left nothing above to quote: say so, not "none
        // decided", which the verdict's own line would contradict.
        let decided = match decided_by {
            Decider::Guards { .. } => Some(format!(
                "{} decided this verdict: switched off, the same moves end the other way, though the timeline \
                 shows no note.",
                capitalised(&decided_by.summary())
            )),
            Decider::Operator { .. } => Some(format!("{}.", capitalised(&decided_by.summary()))),
            _ => None,
        };
        if let Some(sentence) = decided {
            sentences.push(sentence);
            return with_unplayed(simulation, sentences);
        }
        // A guard whose switch changes the money decided the money: "none decided" would be false.
        if !money_guards.is_empty() {
            let words: Vec<String> = money_guards
                .iter()
                .map(|guard| guard_words(*guard).to_owned())
                .collect();
            sentences.push(format!(
                "No guard's switch alone turns this heist, but switching {} changes what a customer gets (below); no move of yours landed where the heist needs it: {}.",
                money::listed(&words),
                where_to_look(simulation.level().goal)
            ));
            sentences.extend(declared(simulation));
            return with_unplayed(simulation, sentences);
        }
        // Guards may have held in this run (the timeline shows them) without deciding it.
        let held = if simulation.guard_notes().is_empty() {
            "Nothing held, but"
        } else {
            "Guards held, but none decided this verdict, and"
        };
        sentences.push(format!(
            "{held} no move landed where the money moves: {}.",
            where_to_look(simulation.level().goal)
        ));
        sentences.extend(declared(simulation));
    }
    with_unplayed(simulation, sentences)
}

/// Where a lost heist's moves should look, for the level's goal: a second payment needs a
/// request applied and then sent again, an unpaid customer a request that never gets applied
/// — the same pointer for both sent a newcomer of 21 the wrong way.
fn where_to_look(goal: Outcome) -> &'static str {
    match goal {
        Outcome::PaidTwice | Outcome::EmailedTwice | Outcome::ActedAgain | Outcome::ChangeUndone => {
            "look at when billing applies a request and when its answer travels"
        }
        Outcome::NotPaidButOwed | Outcome::NotDone => {
            "the customer must go without here, so look at what happens to a request before billing applies it, and what Penny does after"
        }
        Outcome::UnknownFlagged => "look at what leaves a call's outcome unknown to Penny",
        Outcome::PaidOnce | Outcome::DoneOnce => "look at when billing applies a request and when its answer travels",
    }
}

/// The declarations the player made, said where a loss's cause is looked for: they set how
/// often a tool is sent and whether its key goes with it, and 22's debrief never named them.
fn declared(simulation: &Simulation) -> Vec<String> {
    simulation
        .played()
        .iter()
        .filter_map(|action| match &action.play {
            Play::DeclareTool(declaration) => Some(declaration.tool.as_str()),
            _ => None,
        })
        .filter_map(|tool| simulation.level().tools.iter().find(|declared| declared.name == tool))
        .map(|declared| {
            format!(
                "Your declaration is part of this run: {} was declared {}.",
                declared.name,
                declared.summary()
            )
        })
        .collect()
}

/// `sentences`, then the cards never played, if any.
fn with_unplayed(simulation: &Simulation, mut sentences: Vec<String>) -> Vec<String> {
    let unplayed: Vec<&str> = simulation
        .level()
        .cards
        .iter()
        .filter(|allowance| simulation.hand().get(&allowance.card) == Some(&allowance.count))
        .map(|allowance| allowance.card.title())
        .collect();
    if !unplayed.is_empty() {
        sentences.push(format!("You never played: {}.", unplayed.join(", ")));
    }
    sentences
}

/// The note of a guard that decided this run (one the level teaches first), if it left one.
pub(super) fn deciding_note<'a>(simulation: &'a Simulation, decided_by: &Decider) -> Option<&'a GuardNote> {
    let Decider::Guards { guards, .. } = decided_by else {
        return None;
    };
    let notes = simulation.guard_notes();
    let taught = &simulation.level().lesson.guards;
    notes
        .iter()
        .find(|note| guards.contains(&note.guard) && taught.contains(&note.guard))
        .or_else(|| notes.iter().find(|note| guards.contains(&note.guard)))
}

/// What an operator's decision did, from the ledger: whom, which call, and what it was then.
fn operator_sentence(simulation: &Simulation) -> Option<String> {
    let history = simulation.ledger_history().ok()?;
    let decision = history
        .iter()
        .find(|entry| entry.event == crate::ledger::HistoryEvent::Resolved)?;
    let to = decision.to_status?;
    let from = decision
        .from_status
        .map_or_else(|| "unrecorded".to_owned(), |status| status.to_string());
    Some(format!(
        "{} resolved {} {to} while the ledger held it {from}: that decision, not a guard, decided this run.",
        decision.actor, decision.key
    ))
}

/// Why a move made no difference to the money, when the run shows it did not: its card's
/// sentence ([`Play::missed`]).
pub(super) fn missed_move(simulation: &Simulation, index: usize, play: &Play) -> Option<String> {
    play.missed(simulation, index)
}
