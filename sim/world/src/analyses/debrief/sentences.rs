//! The sentences of a debrief, each drawn from this run: what happened to the money, what
//! followed a failed run, what a guard did, why a move changed nothing.

use super::decider::{Decider, OperatorMistake};
use super::{DIAGNOSIS_SENTENCES_MAX, Standing, guard_words};
use crate::checker::{Outcome, Verdict};
use crate::ledger::HistoryEvent;
use crate::level::{Level, Play};
use crate::runtime::guards::Guard;
use crate::runtime::worker::GuardNote;
use crate::simulator::{Actor, COMPENSATION_REFUSED, FailedRun, Phase, REFUSED_BEFORE_SENDING, Simulation};
use crate::text::{dollars, plain};

/// What happened to the money and why, from this run: at most [`DIAGNOSIS_SENTENCES_MAX`].
pub(super) fn diagnosis(
    simulation: &Simulation,
    verdict: &Verdict,
    standing: Standing,
    decided_by: &Decider,
    mistakes: &[OperatorMistake],
) -> Vec<String> {
    let mut diagnosis = vec![money_sentence(simulation, verdict)];
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
                diagnosis.push(guard_sentence(note));
            }
        }
        Standing::HeistFailed => {
            let explained = !simulation.failed_runs().is_empty() || !mistakes.is_empty() || audited;
            diagnosis.extend(why_it_failed(simulation, explained, decided_by));
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
fn defend_to_finish(level: &Level, standing: Standing) -> Option<String> {
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
                "You still hold {}, but no play finishes this level",
                crate::text::counted(u64::from(cards_left), "card", "cards")
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

/// What the crew was after, done: "Ada was paid twice".
pub(super) fn outcome_words(level: &Level, outcome: Outcome) -> String {
    let owner = first_owner(level);
    match outcome {
        Outcome::PaidTwice => format!("{owner} was paid twice"),
        Outcome::NotPaidButOwed => format!("{owner} is owed money nobody will pay"),
        Outcome::UnknownFlagged => format!("{owner}'s money is unknown"),
        Outcome::PaidOnce => format!("{owner} was paid once"),
    }
}

/// Everyone the script owes money, together: "Ada", "Ada and Bob" (the sums cover them all).
fn owners(level: &Level, verdict: &Verdict) -> String {
    let mut names: Vec<String> = Vec::new();
    for credit in &verdict.credits {
        let name = level
            .world
            .accounts
            .iter()
            .find(|account| account.id == credit.account)
            .map_or_else(|| credit.account.clone(), |account| account.owner.clone());
        if !names.contains(&name) {
            names.push(name);
        }
    }
    match names.as_slice() {
        [] => first_owner(level),
        [only] => only.clone(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}

pub(super) fn first_owner(level: &Level) -> String {
    let account = level
        .runs
        .first()
        .and_then(|run| run.calls.first())
        .map(|call| &call.account);
    account
        .and_then(|id| level.world.accounts.iter().find(|account| &account.id == id))
        .map_or_else(|| "the customer".to_owned(), |account| account.owner.clone())
}

/// One sentence about the money: what billing holds against what was owed.
fn money_sentence(simulation: &Simulation, verdict: &Verdict) -> String {
    let owner = owners(simulation.level(), verdict);
    let owed: i64 = verdict.credits.iter().map(|credit| credit.owed_cents).sum();
    let net: i64 = verdict.credits.iter().map(|credit| credit.net_cents).sum();
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
    // "Ada has", "Ada and Bob have".
    let has = if owner.contains(" and ") { "have" } else { "has" };
    match verdict.outcome {
        Outcome::PaidTwice => format!(
            "Billing paid {owner} {} for {} owed: {}{reversed}.",
            dollars(net),
            dollars(owed),
            crate::text::counted(landed as u64, "credit", "credits")
        ),
        Outcome::PaidOnce => format!(
            "Billing paid {owner} {}, exactly what was owed ({}{reversed}).",
            dollars(net),
            crate::text::counted(landed as u64, "credit", "credits")
        ),
        Outcome::UnknownFlagged if verdict.waiting.is_empty() && !simulation.failed_runs().is_empty() => format!(
            "{owner} {has} {} of the {} owed, and the run that should have paid failed and says so: a person sees it and nothing is hidden.",
            dollars(net),
            dollars(owed)
        ),
        Outcome::UnknownFlagged if never_sent.is_some() => format!(
            "{owner} {has} {} of the {} owed, and the run waits on {}, a call that never left its worker: there is nothing for a lookup to find.",
            dollars(net),
            dollars(owed),
            never_sent.unwrap_or_default()
        ),
        Outcome::UnknownFlagged => format!(
            "{owner} {has} {} of the {} owed, and the run waits honestly for someone to find out what happened.",
            dollars(net),
            dollars(owed)
        ),
        Outcome::NotPaidButOwed => format!(
            "{owner} {has} {} of the {} owed ({}{reversed}), and nothing is waiting to pay the rest.",
            dollars(net),
            dollars(owed),
            crate::text::counted(landed as u64, "credit", "credits")
        ),
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

fn guard_sentence(note: &GuardNote) -> String {
    let said = crate::text::note_words(note);
    let detail = plain(said.trim_end_matches('.'));
    let words = guard_words(note.guard);
    if detail.to_lowercase().starts_with(words) {
        // "the ledger held started for r1:c1…" already names its guard.
        format!("{}.", capitalised(&detail))
    } else {
        format!("{} held: {detail}.", capitalised(words))
    }
}

/// Why a failed heist failed: the guard that decided and what it did, or why the moves
/// changed nothing. `explained`: the diagnosis already says what happened to the run (it failed).
fn why_it_failed(simulation: &Simulation, explained: bool, decided_by: &Decider) -> Vec<String> {
    let played = simulation.played();
    if played.is_empty() {
        // A run the contract check refused never started: no card was ever going to matter.
        if let Some(refused) = simulation
            .guard_notes()
            .iter()
            .find(|note| note.guard == Guard::ToolContract)
        {
            return vec![
                guard_sentence(refused),
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
                sentences.push(guard_sentence(note));
            }
        }
        Decider::Held { guards } => {
            if let Some(note) = simulation
                .guard_notes()
                .iter()
                .find(|note| guards.contains(&note.guard))
            {
                sentences.push(guard_sentence(note));
            }
            sentences.push(format!(
                "Switched off, {} changes the run so that one of your moves never meets what it hit here: this run cannot say whether it alone decided.",
                guard_words(guards[0])
            ));
        }
        Decider::KeysHonoured { key } => sentences.push(format!(
            "Billing recognised key {key} and answered with its first credit instead of paying again."
        )),
        // What the runtime did with the decision, when a guard acted on it; else the decision.
        Decider::Operator { .. } => match simulation.guard_notes().first() {
            Some(note) => sentences.push(guard_sentence(note)),
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
        // Guards may have held in this run (the timeline shows them) without deciding it.
        let held = if simulation.guard_notes().is_empty() {
            "Nothing held, but"
        } else {
            "Guards held, but none decided this verdict, and"
        };
        sentences.push(format!(
            "{held} no move landed where the money moves: look at when billing applies the credit and when its \
             answer travels."
        ));
    }
    with_unplayed(simulation, sentences)
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

/// Why a move made no difference to the money, when the run shows it did not.
pub(super) fn missed_move(simulation: &Simulation, index: usize, play: &Play) -> Option<String> {
    if simulation.level().goal != Outcome::PaidTwice {
        // A lost request or an early crash is a miss only for a crew that wants two payments.
        return missed_other(simulation, index, play).filter(|_| !matches!(play, Play::CrashWorker { .. }));
    }
    let hit = simulation.wire_hits().iter().find(|hit| hit.played == index);
    match (play, hit) {
        (Play::LoseRequest { .. }, Some(hit)) => Some(format!(
            "The request for {} never reached billing, so nothing had been paid to pay twice: whatever came next was the first credit billing saw.",
            hit.key
        )),
        _ => missed_other(simulation, index, play),
    }
}

fn missed_other(simulation: &Simulation, index: usize, play: &Play) -> Option<String> {
    match play {
        Play::CrashWorker {
            worker: Some(worker),
            in_phase: Some(phase),
        } if is_before_the_request_left(*phase) => Some(format!(
            "w{worker} was killed before its request left ({}): nothing had been paid, {}.",
            crate::simulator::moment(*phase),
            after_an_early_crash(simulation)
        )),
        Play::ModelCallsAgain { run, .. } if simulation.armed().call_again.contains_key(run) => Some(format!(
            "Penny never heard that a call on {run} came to nothing, so the whisper to call again had nothing to repeat."
        )),
        Play::ToolFailsBeforeSending { run } if simulation.armed().not_attempted.contains_key(run) => Some(format!(
            "Run {run} never made another call, so the refusal before sending never came."
        )),
        Play::ToolFailsBeforeSending { run } => refused_read(simulation, index, run),
        Play::OperatorResolve { key, operator, .. } => simulation
            .timeline()
            .iter()
            .find(|entry| entry.actor == Actor::Operator(operator.clone()) && entry.text.starts_with("409"))
            .map(|entry| {
                format!(
                    "The decision on {key} lost its compare-and-set: {}.",
                    plain(entry.text.trim_start_matches("409 conflict: "))
                )
            }),
        Play::OperatorCompensate { key, operator, .. } => undo_that_moved_nothing(simulation, key, operator),
        Play::DeclareTool { tool, .. } => declared_honestly(simulation, tool),
        Play::DuplicateWorker { run } if twin_stood_down(simulation, run) => Some(format!(
            "The twin on {run} came too late or too early to send anything of its own: it met the first worker's record and stood down."
        )),
        _ => None,
    }
}

/// An undo that moved nothing, from this run's timeline and ledger: someone settled the call
/// before it reached the ledger (a 409), or the runtime looked in billing first and refused
/// (for a call whose request the crew lost: billing never saw it). `None` when it undid.
fn undo_that_moved_nothing(simulation: &Simulation, key: &str, operator: &str) -> Option<String> {
    let actor = Actor::Operator(operator.to_owned());
    let said = simulation
        .timeline()
        .iter()
        .filter(|entry| entry.actor == actor && entry.text.contains(key))
        .map(|entry| entry.text.as_str())
        .find(|text| text.starts_with("409 conflict") || text.starts_with(COMPENSATION_REFUSED))?;
    if said.starts_with("409 conflict") {
        let history = simulation.ledger_history().ok()?;
        let decision = history
            .iter()
            .find(|entry| entry.key.as_str() == key && entry.event == HistoryEvent::Resolved)?;
        let checked = match &simulation.level().honest_operator {
            Some(honest) if honest.name == decision.actor => "checked billing and ",
            _ => "",
        };
        return Some(format!(
            "{} {checked}settled {key} {} before your undo reached the ledger: asked on the call as listed (indeterminate), it got a 409 and nothing was undone.",
            decision.actor, decision.to_status?
        ));
    }
    let request_lost = simulation.wire_hits().iter().any(|hit| {
        hit.key == key
            && matches!(
                simulation.played().get(hit.played).map(|action| &action.play),
                Some(Play::LoseRequest { .. })
            )
    });
    let why = said
        .split_once("the runtime looked in billing first: ")
        .map(|(_, why)| why)?;
    Some(if request_lost {
        format!(
            "You lost {key}'s request, so billing never saw it. Asked to undo it, the runtime looked under its key first and found no credit; as the request had left, it could not prove none would arrive, so it refused and undid nothing: nothing had moved."
        )
    } else {
        format!(
            "Your undo of {key} moved nothing: the runtime looked in billing first and refused ({}).",
            plain(why)
        )
    })
}

/// A refusal before sending that hit a read: it moved no money, so it could not change what
/// was paid. Says which call it hit and what the runtime then did with it, from this run's
/// timeline and ledger: sent again after all (the read retried) or recorded with nothing sent.
/// `None` when the refusal hit a call that changes something (that is another story).
fn refused_read(simulation: &Simulation, index: usize, run: &str) -> Option<String> {
    // The n-th refusal card on this run met the n-th refusal of its calls.
    let ordinal = simulation.played()[..=index]
        .iter()
        .filter(|action| matches!(&action.play, Play::ToolFailsBeforeSending { run: played } if played == run))
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

/// A declaration that took the heist away: the tool as the player left it passes the contract
/// check and gives its write one attempt, so a lost answer was an unknown, not a retry.
fn declared_honestly(simulation: &Simulation, tool: &str) -> Option<String> {
    let declared = simulation.level().tools.iter().find(|declared| declared.name == tool)?;
    let one_attempt = declared.side_effect.changes_something() && declared.declared_attempts() == 1;
    (declared.check_contract().is_ok() && one_attempt).then(|| {
        format!(
            "You declared {tool} {}, which passes the tool contract check: a write gets one attempt, so a lost answer became an unknown instead of a second payment.",
            declared.summary()
        )
    })
}

/// The phases a worker runs before its request is on the wire.
fn is_before_the_request_left(phase: Phase) -> bool {
    matches!(
        phase,
        Phase::Start
            | Phase::LoadCheckpoint
            | Phase::ModelDecides
            | Phase::Reserve
            | Phase::CheckLedger
            | Phase::InsertStarted
            | Phase::Send
    )
}

fn twin_stood_down(simulation: &Simulation, run: &str) -> bool {
    simulation.timeline().iter().any(|entry| {
        matches!(entry.actor, Actor::Worker(number) if number > 1)
            && entry.run.as_deref() == Some(run)
            && entry.kind == "stand down"
    })
}

/// What followed a crash before the request left, from billing and the checker: one credit,
/// none with the run waiting, or none at all.
fn after_an_early_crash(simulation: &Simulation) -> String {
    let owner = first_owner(simulation.level());
    let landed = simulation.effects().len();
    let Ok(verdict) = simulation.verdict() else {
        return "and the run could not be judged".to_owned();
    };
    let net: i64 = verdict.credits.iter().map(|credit| credit.net_cents).sum();
    match (landed, verdict.waiting.first()) {
        (1, _) => "so the recovery's credit was the only one".to_owned(),
        (0, Some(run)) => format!(
            "and nothing was paid after it either: {owner} has {} and {run} waits for someone to settle its call",
            dollars(net)
        ),
        (0, None) => format!("and nothing was paid after it either: {owner} is still owed"),
        (count, _) => format!("and the credits that landed ({count}) all came after it"),
    }
}
