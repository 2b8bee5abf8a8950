//! The hand as a player sees it: what each card would do now, and the moves it offers.
//!
//! The game and the browser edition both draw a hand; both take its words and its targets from
//! here, so the two never disagree about what a card can do at a given phase — and neither
//! decides it on its own: every target is a [`Play`] that `Simulation::play` judges.

use crate::level::{CardKind, Play};
use crate::runtime::guards::Guard;
use crate::runtime::tool::{READ_ATTEMPTS_MAX, SideEffect, ToolDeclaration};
use crate::simulator::{Armed, Direction, Message, Simulation};
use crate::text::counted;

/// One move a card offers now: a label for a button, and the move itself.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Target {
    pub label: String,
    pub play: Play,
}

/// An operator's move: made in the operator console from a chosen call and a reason.
pub fn is_operator(card: CardKind) -> bool {
    matches!(card, CardKind::OperatorResolve | CardKind::OperatorCompensate)
}

/// A declaration: made in the tool declaration panel (the game) or form (the browser) from a
/// chosen side effect, attempts and key, not from a button of the hand.
pub fn is_declaration(card: CardKind) -> bool {
    card == CardKind::DeclareTool
}

/// A wire card: it acts on a message on the wire, so when it is played decides what it does.
pub fn is_wire(card: CardKind) -> bool {
    matches!(
        card,
        CardKind::LoseRequest | CardKind::LoseResponse | CardKind::SlowResponse
    )
}

/// What the crew has armed, one line per kind, in words a player reads (the game's status line
/// and the browser's "armed" list): "the next request will be lost", "2 calls on r1 will
/// refuse before sending". Empty when nothing is armed.
pub fn armed_lines(armed: &Armed) -> Vec<String> {
    let next = |count: u32, one: &str, many: &str, what: &str| {
        if count == 1 {
            format!("the next {one} will be {what}")
        } else {
            format!("the next {count} {many} will be {what}")
        }
    };
    let mut lines = Vec::new();
    if armed.lose_request > 0 {
        lines.push(next(armed.lose_request, "request", "requests", "lost"));
    }
    if armed.lose_response > 0 {
        lines.push(next(armed.lose_response, "response", "responses", "lost"));
    }
    if armed.slow_response > 0 {
        lines.push(next(armed.slow_response, "response", "responses", "slowed"));
    }
    for (run, reword) in &armed.call_again {
        lines.push(format!(
            "Penny will call again on {run}{}",
            if *reword { ", reworded" } else { "" }
        ));
    }
    for (run, count) in &armed.not_attempted {
        lines.push(format!(
            "{} on {run} will refuse before sending",
            counted(u64::from(*count), "call", "calls")
        ));
    }
    lines
}

fn message_words(message: &Message) -> String {
    match message.direction {
        Direction::Request => format!(
            "the request for {} (w{}, attempt {})",
            message.key, message.worker, message.attempt
        ),
        Direction::Response => format!("the answer for {} (to w{})", message.key, message.worker),
    }
}

/// What the card would do if played now, in the player's words.
pub fn effect(card: CardKind, simulation: &Simulation) -> String {
    let first = simulation
        .wire_targets(card)
        .first()
        .map(|message| message_words(message));
    match card {
        CardKind::LoseRequest => match first {
            Some(message) => format!("drops {message} before billing sees it"),
            None => "nothing on the wire now: wait until a request has left".into(),
        },
        CardKind::LoseResponse => match first {
            Some(message) => format!("drops {message}: billing has already applied it"),
            None => "nothing on the wire now: wait until billing answers".into(),
        },
        CardKind::SlowResponse => match first {
            Some(message) => format!("delays {message} past the timeout"),
            None => "nothing on the wire now: wait until billing answers".into(),
        },
        CardKind::CrashWorker => "SIGKILL a worker now, at the phase it is about to run".into(),
        CardKind::DuplicateWorker => "start a second worker on a run you choose".into(),
        CardKind::ModelCallsAgain => "when Penny next hears a call came to nothing, she calls the tool again".into(),
        CardKind::ToolFailsBeforeSending => "the run's next call refuses before sending anything".into(),
        CardKind::OperatorResolve => "settle an unknown call: use the operator console".into(),
        CardKind::OperatorCompensate => "undo a call that took effect: use the operator console".into(),
        CardKind::DeclareTool => match simulation.declaring_is_open() {
            Ok(()) => {
                "declare a tool's side effect, attempts and key before Penny's first call: use the tool declaration"
                    .into()
            }
            Err(why) => format!("{why}"),
        },
    }
}

/// The moves a card offers now. Empty: nothing to aim it at (a wire card with nothing on the
/// wire, a crash with no worker alive). Operator cards offer none here: the console builds
/// them from a chosen call and a reason; nor does a declaration, which the tool declaration
/// builds from a chosen side effect, attempts and key.
pub fn targets(card: CardKind, simulation: &Simulation) -> Vec<Target> {
    let runs: Vec<String> = simulation.level().runs.iter().map(|run| run.id.to_string()).collect();
    let target = |label: String, play: Play| Target { label, play };
    match card {
        CardKind::LoseRequest | CardKind::LoseResponse | CardKind::SlowResponse => simulation
            .wire_targets(card)
            .into_iter()
            .map(|message| {
                let key = Some(message.key.clone());
                let play = match card {
                    CardKind::LoseRequest => Play::LoseRequest { key },
                    CardKind::LoseResponse => Play::LoseResponse { key },
                    _ => Play::SlowResponse { key },
                };
                target(message_words(message), play)
            })
            .collect(),
        CardKind::CrashWorker => simulation
            .workers()
            .into_iter()
            .filter(|worker| worker.alive)
            .map(|worker| {
                target(
                    format!(
                        "{} on {}, {}",
                        worker.id,
                        worker.run,
                        crate::simulator::moment(worker.phase)
                    ),
                    Play::CrashWorker {
                        worker: Some(worker.number),
                        in_phase: Some(worker.phase),
                    },
                )
            })
            .collect(),
        CardKind::DuplicateWorker => runs
            .into_iter()
            .map(|run| target(format!("a twin on run {run}"), Play::DuplicateWorker { run }))
            .collect(),
        CardKind::ToolFailsBeforeSending => runs
            .into_iter()
            .map(|run| target(format!("run {run}'s next call"), Play::ToolFailsBeforeSending { run }))
            .collect(),
        CardKind::ModelCallsAgain => runs
            .into_iter()
            .flat_map(|run| {
                [
                    target(
                        format!("on run {run}, same words"),
                        Play::ModelCallsAgain {
                            run: run.clone(),
                            reword: false,
                        },
                    ),
                    target(
                        format!("on run {run}, reworded memo"),
                        Play::ModelCallsAgain { run, reword: true },
                    ),
                ]
            })
            .collect(),
        CardKind::OperatorResolve | CardKind::OperatorCompensate | CardKind::DeclareTool => Vec::new(),
    }
}

/// The contract check's verdict on one way of declaring a tool: what the declaration panel
/// shows beside a draft before it is sent.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DraftVerdict {
    pub side_effect: SideEffect,
    pub attempts: u32,
    pub takes_key: bool,
    /// `None`: it passes; else the check's own words.
    pub violation: Option<String>,
}

/// A tool the player may declare in this level, as it is declared now.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Declarable {
    pub tool: ToolDeclaration,
    /// The contract check on the declaration as it stands: `None` passes.
    pub violation: Option<String>,
    /// Every draft the panel can make (side effect × attempts × key), with its verdict.
    pub drafts: Vec<DraftVerdict>,
}

/// The tool declaration as the panel draws it: the tools the level lets the player declare,
/// whether the check is on, whether declaring is still open (and why not), cards left.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Declaration {
    pub tools: Vec<Declarable>,
    pub check_on: bool,
    /// `None` while a tool may be declared; else why not (Penny's first call was made).
    pub closed: Option<String>,
    pub left: u32,
}

/// The tool declaration of this level, or `None` when the level lets no tool be declared.
pub fn declaration(simulation: &Simulation) -> Option<Declaration> {
    let level = simulation.level();
    if level.declarable_tools.is_empty() {
        return None;
    }
    let tools = level
        .declarable_tools
        .iter()
        .filter_map(|name| level.tools.iter().find(|tool| &tool.name == name))
        .map(|tool| Declarable {
            violation: tool.check_contract().err().map(|violation| violation.to_string()),
            drafts: SideEffect::ALL
                .into_iter()
                .flat_map(|side_effect| {
                    (1..=READ_ATTEMPTS_MAX)
                        .flat_map(move |attempts| [true, false].map(|takes_key| (side_effect, attempts, takes_key)))
                })
                .map(|(side_effect, attempts, takes_key)| DraftVerdict {
                    side_effect,
                    attempts,
                    takes_key,
                    violation: tool
                        .declared_as(side_effect, attempts, takes_key)
                        .check_contract()
                        .err()
                        .map(|violation| violation.to_string()),
                })
                .collect(),
            tool: tool.clone(),
        })
        .collect();
    Some(Declaration {
        tools,
        check_on: simulation.guards().is_on(Guard::ToolContract),
        closed: simulation.declaring_is_open().err().map(|why| why.to_string()),
        left: simulation.hand().get(&CardKind::DeclareTool).copied().unwrap_or(0),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn armed_lines_count_in_words_singular_for_one() {
        assert!(armed_lines(&Armed::default()).is_empty());
        let mut armed = Armed {
            lose_request: 1,
            lose_response: 2,
            slow_response: 1,
            ..Armed::default()
        };
        armed.call_again.insert("r1".into(), true);
        armed.not_attempted.insert("r2".into(), 1);
        armed.not_attempted.insert("r3".into(), 2);
        assert_eq!(
            armed_lines(&armed),
            [
                "the next request will be lost",
                "the next 2 responses will be lost",
                "the next response will be slowed",
                "Penny will call again on r1, reworded",
                "1 call on r2 will refuse before sending",
                "2 calls on r3 will refuse before sending",
            ]
        );
    }
}
