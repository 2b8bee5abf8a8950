//! The hand as a player sees it: what each card would do now, the moves it offers, and why it
//! cannot be played — all its card's module's words (`crate::cards`).
//!
//! The game and the browser edition both draw a hand; both take its words and its targets from
//! here, so the two never disagree about what a card can do at a given phase — and neither
//! decides it on its own: every target is a [`Play`] that `Simulation::play` judges.

use crate::billing::Answer;
use crate::billing_tools::CreditArguments;
use crate::cards::{Aim, Aims, Armed, CardKind};
pub use crate::cards::{Declarable, Declaration, DraftVerdict, Target, declaration};
use crate::simulator::{Direction, Message, Simulation};

#[cfg(doc)]
use crate::cards::Play;

/// An operator's move: made in the operator console from a chosen call and a reason.
pub fn is_operator(card: CardKind) -> bool {
    card.aims() == Aims::Call
}

/// A declaration: made in the tool declaration panel (the game) or form (the browser) from a
/// chosen side effect, attempts and key, not from a button of the hand.
pub fn is_declaration(card: CardKind) -> bool {
    card.aims() == Aims::Tool
}

/// A wire card: it acts on a message on the wire, so when it is played decides what it does.
pub fn is_wire(card: CardKind) -> bool {
    matches!(card.aims(), Aims::Message { .. })
}

/// What the crew has armed, one line per kind, in words a player reads (the game's status line
/// and the browser's "armed" list): "the next request will be lost", "2 calls on r1 will
/// refuse before sending". Empty when nothing is armed.
pub fn armed_lines(armed: &Armed) -> Vec<String> {
    armed.lines()
}

/// What the card would do if played now, in the player's words.
pub fn effect(card: CardKind, simulation: &Simulation) -> String {
    card.effect(simulation)
}

/// The moves a card offers now. Empty: nothing to aim it at (a wire card with nothing on the
/// wire, a crash with no worker alive; [`refusal`] says why). Operator cards offer none here:
/// the console builds them from a chosen call and a reason; nor does a declaration, which the
/// tool declaration builds from a chosen side effect, attempts and key.
pub fn targets(card: CardKind, simulation: &Simulation) -> Vec<Target> {
    card.targets(simulation)
}

/// The move a card of the hand makes when it is played now with nothing to choose: its only
/// target (the one message on the wire, the one worker alive, the one run). Both editions play
/// it at once rather than open a list of one, which the player would only have to confirm; a
/// card with several targets, none, or played from the console or the declaration gives `None`.
pub fn plays_at_once(card: CardKind, simulation: &Simulation) -> Option<crate::cards::Play> {
    if !card.aims().from_the_hand() {
        return None;
    }
    let mut offered = targets(card, simulation);
    if offered.len() == 1 {
        offered.pop().map(|target| target.play)
    } else {
        None
    }
}

/// Why the card cannot be played now, in this run's terms ("no answer is on the wire now: the
/// request for r1:c1 is on its way to billing…", "no worker is alive to crash: w1 crashed…");
/// `None` when it can.
pub fn refusal(card: CardKind, simulation: &Simulation) -> Option<String> {
    card.refusal(simulation)
}

/// What the wire holds now and what the hand can do about it, for a player learning the wire
/// cards (the guided first level's coach): computed from this run, so it never calls a balance
/// lookup a payment, nor asks for a key whose card has nothing to hit.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WireCoach {
    /// What travels now, one line a message, oldest first: whose it is, what it carries, and
    /// whether it moves money. Empty: nothing travels.
    pub on_the_wire: Vec<String>,
    /// What to do now.
    pub advice: String,
    /// The number keys the advice asks for (each plays a card of the hand that can hit a
    /// message on the wire now), with the card.
    pub keys: Vec<(usize, CardKind)>,
}

/// One message as the coach says it.
fn coach_words(simulation: &Simulation, message: &Message) -> String {
    let tool = &message.call.tool;
    let arguments = CreditArguments::of_call(&message.call);
    let owner = simulation
        .level()
        .world
        .accounts
        .iter()
        .find(|account| account.id == arguments.account)
        .map_or_else(|| arguments.account.clone(), |account| account.owner.clone());
    let amount = crate::text::dollars(i64::from(arguments.amount_cents));
    let money = moves_money(simulation, message);
    let said = match message.direction {
        Direction::Request if money => format!(
            "w{}'s request for {tool} ({}): {amount} to {owner}, on its way to billing",
            message.worker, message.key
        ),
        Direction::Request => format!(
            "w{}'s request for {tool} ({}): a read, on its way to billing; it moves no money",
            message.worker, message.key
        ),
        Direction::Response => {
            let answer = match &message.answer {
                Some(_) if !money => "a read, it moves no money".to_owned(),
                Some(Answer::Applied { .. }) => format!("billing has already paid {owner} {amount}"),
                Some(Answer::Repeat { .. }) => "billing recognised the key and paid nothing new".to_owned(),
                Some(Answer::Rejected { .. }) => "billing refused it, nothing paid".to_owned(),
                _ => "billing has answered".to_owned(),
            };
            format!(
                "billing's answer to {tool} ({}), on its way back to w{}: {answer}",
                message.key, message.worker
            )
        }
    };
    if message.lost { format!("{said} (lost)") } else { said }
}

/// The message is a call that changes something (a credit), not a read.
fn moves_money(simulation: &Simulation, message: &Message) -> bool {
    simulation
        .level()
        .tools
        .iter()
        .find(|tool| tool.name == message.call.tool)
        .is_some_and(|tool| tool.side_effect.changes_something())
}

/// The hand's cards (by number key, from 1) that can hit `message` now.
fn keys_for(simulation: &Simulation, message: &Message) -> Vec<(usize, CardKind)> {
    simulation
        .level()
        .cards
        .iter()
        .enumerate()
        .filter(|(index, allowance)| {
            *index < 9
                && allowance.card.refusal(simulation).is_none()
                && allowance.card.targets(simulation).iter().any(|target| {
                    target.play.key() == Some(message.key.as_str())
                        && matches!(target.play.aim(), Aim::Message { direction, .. } if direction == message.direction)
                })
        })
        .map(|(index, allowance)| (index + 1, allowance.card))
        .collect()
}

/// "press 2 (Lose the response)", or "press 1 (…) or 2 (…)".
fn press(keys: &[(usize, CardKind)]) -> String {
    let each: Vec<String> = keys
        .iter()
        .map(|(key, card)| format!("{key} ({})", card.title()))
        .collect();
    format!("press {}", each.join(" or "))
}

/// The coach for this moment of the run.
pub fn wire_coach(simulation: &Simulation) -> WireCoach {
    let on_the_wire: Vec<String> = simulation
        .messages()
        .map(|message| coach_words(simulation, message))
        .collect();
    let live = |direction: Direction| {
        simulation
            .messages()
            .find(|message| message.direction == direction && !message.lost && moves_money(simulation, message))
    };
    let (advice, keys) = if let Some(answer) = live(Direction::Response) {
        let keys = keys_for(simulation, answer);
        let advice = if keys.is_empty() {
            format!(
                "The money has moved: billing applied {} and its answer travels back. No card in your hand can touch an answer now: step on and watch what the runtime does.",
                answer.key
            )
        } else {
            format!(
                "The money has moved: billing applied {} and its answer is on the wire. {} now, while it travels.",
                answer.key,
                crate::text::capitalised(&press(&keys))
            )
        };
        (advice, keys)
    } else if let Some(request) = live(Direction::Request) {
        let keys = keys_for(simulation, request);
        let advice = if keys.is_empty() {
            format!(
                "The request that moves money, {}, is on its way to billing: step on until billing applies it and its answer travels back.",
                request.key
            )
        } else {
            // For a crew after two payments, a lost request is one payment fewer, not one more.
            let nothing_yet = if simulation.level().goal == crate::outcome::Outcome::PaidTwice {
                " (nothing is paid yet, so nothing to pay twice)"
            } else {
                ""
            };
            format!(
                "The request that moves money, {}, is on its way to billing: {} and billing never sees it{nothing_yet}, or step on until billing applies it and its answer travels back.",
                request.key,
                press(&keys)
            )
        };
        (advice, keys)
    } else if let Some(message) = simulation.messages().find(|message| !message.lost) {
        (
            format!(
                "Only a read travels now ({}): it moves no money, so losing it only makes Penny ask again. The card to play is on a call that moves money.",
                message.key
            ),
            Vec::new(),
        )
    } else {
        let workers = simulation.workers();
        let advice = match workers.iter().find(|worker| worker.alive) {
            Some(worker) => format!(
                "Nothing is on the wire now: {} is {}. Step on: a card on the wire needs a message travelling.",
                worker.id,
                crate::text::doing(worker.phase)
            ),
            None => "Nothing is on the wire and no worker is alive: step on, or run to the end (E).".to_owned(),
        };
        (advice, Vec::new())
    };
    WireCoach {
        on_the_wire,
        advice,
        keys,
    }
}
