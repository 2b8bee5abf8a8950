//! The debrief a player reads when a level ends: whether the heist worked, and — when it did
//! not — what actually happened to the money, in a sentence or two drawn from the run itself.
//!
//! A loss never shows the win's story (it would describe something that did not happen, and
//! give the answer away). It says which guard held and what it did, or why a card changed
//! nothing ("the request never reached billing, so there was nothing to pay twice"), from the
//! typed record of the run: the moves made, the messages they hit, the guards' notes, the
//! credits billing holds and the checker's verdict. The game and the command line only show it.

use serde::Serialize;

use crate::checker::{Outcome, Verdict};
use crate::level::{Level, Play};
use crate::runtime::guards::Guard;
use crate::runtime::worker::GuardNote;
use crate::simulator::{Actor, FailedRun, Simulation, WAIT_FOR_ANSWER, dollars};

/// The most sentences a diagnosis holds: it is read in a glance, not studied.
pub const DIAGNOSIS_SENTENCES_MAX: usize = 3;

/// Where the level stands once it is over.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Standing {
    /// The crew reached the level's goal.
    HeistWorked,
    /// An unbeatable level held against the player's whole hand: that is its finish.
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

    /// The level counts as finished.
    pub fn finishes_level(self) -> bool {
        matches!(self, Standing::HeistWorked | Standing::HeldAgainstTheWholeHand)
    }
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

/// The debrief of one finished (or quiet) run.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Debrief {
    pub standing: Standing,
    pub headline: String,
    /// What happened to the money, and why, from this run: at most [`DIAGNOSIS_SENTENCES_MAX`].
    pub diagnosis: Vec<String>,
    /// The level's own story: the win's explanation, or why an unbeatable level holds. Empty
    /// on a loss, which never shows the story of a win.
    pub story: String,
    /// The rule the level teaches (shown win or lose: it is the lesson, not the answer).
    pub rule: String,
    pub cards_played: u32,
    pub phases: u32,
    /// On a win in a level with a par: how this win compares.
    pub par: Option<ParCheck>,
}

/// A guard in the player's words, as briefings name it.
pub fn guard_words(guard: Guard) -> &'static str {
    match guard {
        Guard::WriteRetryRule => "the write retry rule",
        Guard::ToolContract => "the tool contract check",
        Guard::PauseOnIndeterminate => "the pause on unknown calls",
        Guard::Ledger => "the ledger",
        Guard::AtomicReservation => "atomic reservation",
        Guard::KeyDownstream => "passing the key",
        Guard::CheckpointVersion => "the checkpoint version",
        Guard::ReconcileHook => "the reconcile hook",
        Guard::KeyPerCall => "keys per call",
        Guard::NoLeaseExpiry => "no lease expiry",
        Guard::NoReflexCompensation => "no reflex compensation",
        Guard::RefusalIsFailed => "recording a refusal as failed",
    }
}

/// Runtime text for a player: the runtime's messages quote statuses in backticks, which read
/// as stray marks on screen.
pub fn plain(text: &str) -> String {
    text.replace('`', "")
}

fn capitalised(text: &str) -> String {
    let mut characters = text.chars();
    match characters.next() {
        Some(first) => first.to_uppercase().chain(characters).collect(),
        None => String::new(),
    }
}

/// The guard note that explains this run best: one about a guard the level teaches, else one
/// the level switches off (the sandbox turned it on to see it hold), else the first.
fn telling_note(simulation: &Simulation) -> Option<&GuardNote> {
    let level = simulation.level();
    let notes = simulation.guard_notes();
    notes
        .iter()
        .find(|note| level.lesson.guards.contains(&note.guard))
        .or_else(|| notes.iter().find(|note| !level.guards.is_on(note.guard)))
        .or_else(|| notes.last())
}

/// The debrief of `simulation` as it stands now (call it when the level is over).
pub fn of(simulation: &Simulation, verdict: &Verdict) -> Debrief {
    let level = simulation.level();
    let cards_left: u32 = simulation.hand().values().sum();
    let cards_played = u32::try_from(simulation.played().len()).unwrap_or(u32::MAX);
    let standing = Standing::of(level, verdict, cards_left);
    let phases = simulation.phase();
    let mut diagnosis = vec![money_sentence(simulation, verdict)];
    // A run that failed changes what the money means: say what followed it.
    if let Some(failed) = simulation.failed_runs().first() {
        let landed = simulation
            .effects()
            .values()
            .filter(|origin| origin.run == failed.run)
            .count();
        diagnosis.push(failed_run_sentence(failed, landed));
    }
    match standing {
        Standing::HeistWorked => {}
        Standing::HeldAgainstTheWholeHand | Standing::HeldWithCardsLeft { .. } => {
            if let Some(note) = telling_note(simulation) {
                diagnosis.push(guard_sentence(note));
            }
            if let Standing::HeldWithCardsLeft { cards_left } = standing {
                diagnosis.push(format!(
                    "You still hold {cards_left} card(s): play the whole hand and watch each attack fail to finish the level."
                ));
            }
        }
        Standing::HeistFailed => {
            let explained = !simulation.failed_runs().is_empty();
            diagnosis.extend(why_it_failed(simulation, explained));
        }
    }
    diagnosis.truncate(DIAGNOSIS_SENTENCES_MAX);
    let headline = match standing {
        Standing::HeistWorked => format!("The heist worked: {}.", outcome_words(level, verdict.outcome)),
        Standing::HeldAgainstTheWholeHand => "The runtime held against your whole hand, as this level promised.".into(),
        Standing::HeldWithCardsLeft { .. } => "The runtime held so far — but your hand is not spent.".into(),
        Standing::HeistFailed => match telling_note(simulation) {
            Some(note) => format!("The heist failed: {} held.", guard_words(note.guard)),
            None => "The heist failed: no guard stopped you, your moves missed their moment.".into(),
        },
    };
    let story = match standing {
        Standing::HeistWorked => plain(&level.lesson.text),
        Standing::HeldAgainstTheWholeHand | Standing::HeldWithCardsLeft { .. } => plain(&level.debrief),
        Standing::HeistFailed => String::new(),
    };
    let par = match (standing, level.par) {
        (Standing::HeistWorked, Some(par)) => Some(ParCheck {
            cards: cards_played,
            phases,
            par_cards: par.cards,
            par_phases: par.phases,
        }),
        _ => None,
    };
    Debrief {
        standing,
        headline,
        diagnosis,
        story,
        rule: plain(&level.lesson.rule),
        cards_played,
        phases,
        par,
    }
}

/// What the crew was after, done: "Ada was paid twice".
fn outcome_words(level: &Level, outcome: Outcome) -> String {
    let owner = first_owner(level);
    match outcome {
        Outcome::PaidTwice => format!("{owner} was paid twice"),
        Outcome::NotPaidButOwed => format!("{owner} is owed money nobody will pay"),
        Outcome::UnknownFlagged => format!("{owner}'s money is unknown"),
        Outcome::PaidOnce => format!("{owner} was paid once"),
    }
}

fn first_owner(level: &Level) -> String {
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
    let level = simulation.level();
    let owner = first_owner(level);
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
        format!(" and {reversals} reversal(s)")
    } else {
        String::new()
    };
    match verdict.outcome {
        Outcome::PaidTwice => format!(
            "Billing paid {owner} {} for {} owed: {landed} credit(s){reversed}.",
            dollars(net),
            dollars(owed)
        ),
        Outcome::PaidOnce => format!(
            "Billing paid {owner} {}, exactly what was owed ({landed} credit(s){reversed}).",
            dollars(net)
        ),
        Outcome::UnknownFlagged if verdict.waiting.is_empty() && !simulation.failed_runs().is_empty() => format!(
            "{owner} has {} of the {} owed, and the run that should have paid failed and says so: a person sees it and nothing is hidden.",
            dollars(net),
            dollars(owed)
        ),
        Outcome::UnknownFlagged => format!(
            "{owner} has {} of the {} owed, and the run waits honestly for someone to find out what happened.",
            dollars(net),
            dollars(owed)
        ),
        Outcome::NotPaidButOwed => format!(
            "{owner} has {} of the {} owed ({landed} credit(s){reversed}), and nothing is waiting to pay the rest.",
            dollars(net),
            dollars(owed)
        ),
    }
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
    let detail = plain(note.detail.trim_end_matches('.'));
    let words = guard_words(note.guard);
    if detail.to_lowercase().starts_with(words) {
        // "the ledger held started for r1:c1…" already names its guard.
        format!("{}.", capitalised(&detail))
    } else {
        format!("{} held: {detail}.", capitalised(words))
    }
}

/// Why a failed heist failed: a guard that held, or why the moves changed nothing.
/// `explained`: the diagnosis already says what happened to the run (it failed).
fn why_it_failed(simulation: &Simulation, explained: bool) -> Vec<String> {
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
    if let Some(note) = telling_note(simulation) {
        sentences.push(guard_sentence(note));
    }
    if sentences.is_empty() && !explained {
        sentences.push(
            "Nothing held, but no move landed where the money moves: look at when billing applies the credit and when its answer travels."
                .into(),
        );
    }
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

/// Why a move made no difference to the money, when the run shows it did not.
fn missed_move(simulation: &Simulation, index: usize, play: &Play) -> Option<String> {
    if simulation.level().goal != Outcome::PaidTwice {
        // A lost request or an early crash is a miss only for a crew that wants two payments.
        return missed_other(simulation, play).filter(|_| !matches!(play, Play::CrashWorker { .. }));
    }
    let hit = simulation.wire_hits().iter().find(|hit| hit.played == index);
    match (play, hit) {
        (Play::LoseRequest { .. }, Some(hit)) => Some(format!(
            "The request for {} never reached billing, so nothing had been paid to pay twice: whatever came next was the first credit billing saw.",
            hit.key
        )),
        _ => missed_other(simulation, play),
    }
}

fn missed_other(simulation: &Simulation, play: &Play) -> Option<String> {
    match play {
        Play::CrashWorker {
            worker: Some(worker),
            in_phase: Some(phase),
        } if is_before_the_request_left(phase) => Some(format!(
            "w{worker} was killed before its request left ({}): nothing had been paid, so the recovery's credit was the only one.",
            crate::simulator::moment(phase)
        )),
        Play::ModelCallsAgain { run, .. } if simulation.armed().call_again.contains_key(run) => Some(format!(
            "Penny never heard that a call on {run} came to nothing, so the whisper to call again had nothing to repeat."
        )),
        Play::ToolFailsBeforeSending { run } if simulation.armed().not_attempted.contains_key(run) => Some(format!(
            "Run {run} never made another call, so the refusal before sending never came."
        )),
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
        Play::DeclareTool { tool, .. } => declared_honestly(simulation, tool),
        Play::DuplicateWorker { run } if twin_stood_down(simulation, run) => Some(format!(
            "The twin on {run} came too late or too early to send anything of its own: it met the first worker's record and stood down."
        )),
        _ => None,
    }
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
fn is_before_the_request_left(phase: &str) -> bool {
    matches!(
        phase,
        "start" | "load checkpoint" | "model decides" | "reserve" | "check ledger" | "insert started" | "send"
    ) && phase != WAIT_FOR_ANSWER
}

fn twin_stood_down(simulation: &Simulation, run: &str) -> bool {
    simulation.timeline().iter().any(|entry| {
        matches!(entry.actor, Actor::Worker(number) if number > 1)
            && entry.run.as_deref() == Some(run)
            && entry.kind == "stand down"
    })
}
