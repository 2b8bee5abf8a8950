//! What the wire cards share: how a card finds its message (the tape format's rule), how a
//! message on the wire is named to a player, and why there is nothing to aim at — said from
//! what the run shows now.

use serde::Serialize;

use super::{Card, Made};
use crate::simulator::{Direction, Message, PlayError, Simulation};

/// The tape format this code writes.
pub const TAPE_VERSION: u32 = 2;

/// How a wire card finds its message: the rule of the tape format it was recorded in.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub enum WireRule {
    /// Version 1: the message on the wire, or else the next one (the card waits, armed).
    ArmNextMessage,
    /// Version 2: only a message on the wire now; with none, the move is refused.
    #[default]
    OnTheWireNow,
}

impl WireRule {
    /// The rule a tape of this format version was recorded under.
    pub fn of_version(version: u32) -> WireRule {
        if version <= 1 {
            WireRule::ArmNextMessage
        } else {
            WireRule::OnTheWireNow
        }
    }
}

/// A message on the wire as a button names it: "the request for r1:c2 (w1, attempt 1)",
/// "the answer for r1:c2 (to w1)".
pub(super) fn message_words(message: &Message) -> String {
    match message.direction {
        Direction::Request => format!(
            "the request for {} (w{}, attempt {})",
            message.key, message.worker, message.attempt
        ),
        Direction::Response => format!("the answer for {} (to w{})", message.key, message.worker),
    }
}

/// The messages a card aimed at `direction` could hit now, oldest first: not lost, and for
/// `unslowed` not slowed already.
pub(super) fn targets(simulation: &Simulation, direction: Direction, unslowed: bool) -> Vec<&Message> {
    simulation
        .messages()
        .filter(|message| message.direction == direction && !message.lost && !(unslowed && message.slowed_or_delayed()))
        .collect()
}

/// What a wire card offers now: one target per message it could hit, naming its key.
pub(super) fn offers<C: Card>(
    simulation: &Simulation,
    direction: Direction,
    unslowed: bool,
    aimed: impl Fn(String) -> C,
) -> Vec<super::Target> {
    targets(simulation, direction, unslowed)
        .into_iter()
        .map(|message| super::Target {
            label: message_words(message),
            play: aimed(message.key.clone()).into(),
        })
        .collect()
}

/// What a wire card would do now: `does` said of the oldest message it could hit, or why
/// there is none.
pub(super) fn effect(
    simulation: &Simulation,
    direction: Direction,
    unslowed: bool,
    does: impl Fn(String) -> String,
) -> String {
    match targets(simulation, direction, unslowed).first() {
        Some(message) => does(message_words(message)),
        None => no_target(simulation, direction, unslowed),
    }
}

/// Why a card aimed at `direction` has nothing to hit now, from what the wire and the workers
/// show: the message already lost or slowed, the other direction's message, or what the
/// workers are doing while nothing travels.
pub(super) fn no_target(simulation: &Simulation, direction: Direction, unslowed: bool) -> String {
    let (what, noun) = match direction {
        Direction::Request => ("no request is on the wire now", "request"),
        Direction::Response => ("no answer is on the wire now", "answer"),
    };
    // Every message this way is out of reach already (a target would have been offered).
    if let Some(message) = simulation.messages().find(|message| message.direction == direction) {
        let done = if message.lost || !unslowed {
            "already lost"
        } else if message.apply_delay_ms.is_some() {
            "already delayed at billing"
        } else {
            "already slowed"
        };
        return format!(
            "{} is {done}, and no other {noun} is on the wire",
            message_words(message)
        );
    }
    if let Some(message) = simulation.messages().next() {
        let words = message_words(message);
        return match (message.direction, message.lost) {
            (Direction::Request, false) => {
                format!("{what}: {words} is on its way to billing; its answer travels back once billing has applied it")
            }
            (Direction::Request, true) => format!("{what}: {words} is lost, so billing will never answer it"),
            (Direction::Response, false) => format!(
                "{what}: {words} is on its way back from billing; the next request leaves when a worker sends one"
            ),
            (Direction::Response, true) => format!("{what}: {words} is lost on its way back"),
        };
    }
    let workers = simulation.workers();
    match workers.iter().find(|worker| worker.alive) {
        Some(worker) => format!(
            "nothing is on the wire now: {} is {}; step until {}",
            worker.id,
            crate::text::doing(worker.phase),
            match direction {
                Direction::Request => "a worker sends a request",
                Direction::Response => "billing answers a request",
            }
        ),
        None => "nothing is on the wire, and no worker is alive to send anything".to_owned(),
    }
}

/// Armed wire cards in words: "the next request will be lost", "the next 2 answers will be
/// slowed".
pub(super) fn armed_count(count: usize, one: &str, many: &str, what: &str) -> String {
    if count == 1 {
        format!("the next {one} will be {what}")
    } else {
        format!("the next {count} {many} will be {what}")
    }
}

/// What is on the wire now, in a player's words, and whose: every message travelling (lost
/// ones included, said as lost), oldest first. Empty: nothing travels.
pub fn on_the_wire_words(simulation: &Simulation) -> Vec<String> {
    simulation
        .messages()
        .map(|message| {
            let fate = if message.lost {
                " — lost".to_owned()
            } else if message.slowed {
                " — slowed past the timeout".to_owned()
            } else if let Some(delay_ms) = message.apply_delay_ms {
                format!(" — billing will hold it {delay_ms} ms before applying it")
            } else {
                String::new()
            };
            format!("{}{fate}", message_words(message))
        })
        .collect()
}

/// Plays a wire card aimed at `direction`: on the message carrying `key` (or the oldest) on the
/// wire now, doing `act` to it; with none there, in a version 1 tape the card is armed for the
/// next one (`armed` says so), in version 2 it fizzles (`nothing` says what was missing).
pub(super) fn fire<C: Card>(
    card: &C,
    simulation: &mut Simulation,
    aimed: (Direction, Option<&str>, bool),
    act: impl FnOnce(&mut Simulation, u32) -> String,
    armed: &str,
    nothing: String,
) -> Result<Made, PlayError> {
    let (direction, key, unslowed) = aimed;
    match simulation.wire_target(direction, key, unslowed) {
        Some(id) => {
            let hit = simulation.hit_message(id);
            let text = act(simulation, id);
            Ok(Made {
                made: Some(card.with_key(&hit).into()),
                ..Made::by_the_crew(text)
            })
        }
        None if simulation.wire_rule() == WireRule::OnTheWireNow => Err(PlayError::NothingOnTheWire {
            card: C::TITLE,
            what: nothing,
        }),
        None => {
            simulation.arm(card.clone().into());
            Ok(Made::by_the_crew(armed.to_owned()))
        }
    }
}
