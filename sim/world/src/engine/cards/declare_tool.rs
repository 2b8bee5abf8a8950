//! Declare a tool: the player, as the developer, declares a tool's side effect, the attempts
//! the framework's retry policy gives it and whether it passes the idempotency key on — before
//! Penny's first call. Penny is deployed again under the new declaration (with guard
//! `tool_contract` on, a run starts only if its tools pass the contract check). Made in the
//! declaration panel.

use rand::Rng;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use super::{Aim, Aims, Card, CardKind, DealSpace, Made, Play};
use crate::level::Level;
use crate::runtime::guards::Guard;
use crate::runtime::tool::{READ_ATTEMPTS_MAX, SideEffect, ToolDeclaration, assert_ambiguity_policy};
use crate::simulator::{PlayError, SimError, Simulation};

/// `DeclareTool(tool: "issue_credit", side_effect: external, attempts: 3, takes_key: false)`.
/// Legal before Penny's first call, in a level that names the tool in `declarable_tools`.
/// Added in tape format 2 without changing its version: older twice-sims refuse it by name.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DeclareTool {
    pub tool: String,
    pub side_effect: SideEffect,
    pub attempts: u32,
    pub takes_key: bool,
}

/// Every declaration the panel can make of one tool: side effect × attempts × key.
fn drafts() -> impl Iterator<Item = (SideEffect, u32, bool)> {
    SideEffect::ALL.into_iter().flat_map(|side_effect| {
        (1..=READ_ATTEMPTS_MAX)
            .flat_map(move |attempts| [true, false].map(|takes_key| (side_effect, attempts, takes_key)))
    })
}

/// `Some(list)` of the names, or `none`.
fn listed(names: &[String]) -> String {
    if names.is_empty() {
        "none".to_owned()
    } else {
        names.join(", ")
    }
}

impl Card for DeclareTool {
    const TITLE: &'static str = "Declare a tool";
    const AIMS: Aims = Aims::Tool;
    // A declaration sends nothing; what follows is another card's doing.
    const CAN_PAY_TWICE: bool = false;
    const DEALT_BEFORE_FIRST_CALL: bool = true;
    const IN_TAPE_VERSION_1: bool = false;

    fn aim(&self) -> Aim<'_> {
        Aim::Tool(&self.tool)
    }

    fn problem(&self, level: &Level) -> Option<String> {
        if !level.declarable_tools.contains(&self.tool) {
            return Some(format!(
                "tool `{}` cannot be declared in level `{}` (declarable: {})",
                self.tool,
                level.id,
                listed(&level.declarable_tools)
            ));
        }
        if !(1..=READ_ATTEMPTS_MAX).contains(&self.attempts) {
            return Some(format!(
                "a tool is declared with 1 to {READ_ATTEMPTS_MAX} attempts, not {}",
                self.attempts
            ));
        }
        None
    }

    /// Said before the hand is looked at: which tool, and why it cannot be declared here.
    fn before_the_hand(&self, simulation: &Simulation) -> Result<(), PlayError> {
        let level = simulation.level();
        let tool = &self.tool;
        if !level.tools.iter().any(|declared| declared.name == *tool) {
            let known: Vec<String> = level.tools.iter().map(|declared| declared.name.to_string()).collect();
            return Err(PlayError::NoSuchTool {
                tool: tool.clone(),
                known: known.join(", "),
            });
        }
        if !level.declarable_tools.iter().any(|name| name == tool) {
            return Err(PlayError::NotDeclarable {
                tool: tool.clone(),
                declarable: listed(&level.declarable_tools),
            });
        }
        if !(1..=READ_ATTEMPTS_MAX).contains(&self.attempts) {
            return Err(PlayError::AttemptsOutOfRange(self.attempts));
        }
        simulation.declaring_is_open_for(tool)
    }

    /// Says what the contract check makes of the declaration; Penny is deployed again once the
    /// move is on the timeline.
    fn fire(&self, simulation: &mut Simulation) -> Result<Made, PlayError> {
        let DeclareTool {
            tool,
            side_effect,
            attempts,
            takes_key,
        } = self;
        let declared = simulation.redeclare(tool, *side_effect, *attempts, *takes_key).clone();
        let summary = declared.summary();
        let verdict = match (declared.check_contract(), policy_refusal(simulation, &declared)) {
            (Ok(()), None) => "it passes the tool contract check".to_owned(),
            (Ok(()), Some(policy)) => {
                format!("it passes the tool contract check, but the ambiguity policy check refuses it: {policy}")
            }
            (Err(violation), _) => format!("it fails the tool contract check: {violation}"),
        };
        Ok(Made {
            redeploy: true,
            ..Made::by_the_crew(format!(
                "{tool} is declared {summary}; {verdict}. Penny is deployed again with it"
            ))
        })
    }

    fn effect(simulation: &Simulation) -> String {
        match simulation.declaring_is_open() {
            Ok(()) => {
                "declare a tool's side effect, attempts and key before Penny's first call: use the tool declaration"
                    .into()
            }
            Err(why) => format!("{why}"),
        }
    }

    /// Every draft of every declarable tool, while declaring is open.
    fn candidates(simulation: &Simulation, _operator: &str) -> Result<Vec<Play>, SimError> {
        if simulation.declaring_is_open().is_err() {
            return Ok(Vec::new());
        }
        Ok(simulation
            .level()
            .declarable_tools
            .iter()
            .flat_map(|tool| {
                drafts().map(|(side_effect, attempts, takes_key)| {
                    DeclareTool {
                        tool: tool.clone(),
                        side_effect,
                        attempts,
                        takes_key,
                    }
                    .into()
                })
            })
            .collect())
    }

    fn deal(space: &DealSpace<'_>, rng: &mut ChaCha8Rng) -> (Self, Option<u64>) {
        let tools = &space.level.declarable_tools;
        assert!(
            !tools.is_empty(),
            "a level dealing DeclareTool names its declarable tools"
        );
        let declare = DeclareTool {
            tool: tools[rng.random_range(0..tools.len())].clone(),
            side_effect: SideEffect::ALL[rng.random_range(0..SideEffect::ALL.len())],
            attempts: rng.random_range(1..=READ_ATTEMPTS_MAX),
            takes_key: rng.random_bool(0.5),
        };
        (declare, None)
    }

    /// A declaration that took the heist away: the tool as the player left it passes the
    /// contract check and gives its write one attempt, so a lost answer was an unknown, not a
    /// retry.
    fn missed(&self, simulation: &Simulation, _index: usize) -> Option<String> {
        let tool = &self.tool;
        let declared = simulation
            .level()
            .tools
            .iter()
            .find(|declared| declared.name == *tool)?;
        let one_attempt = declared.side_effect.changes_something() && declared.declared_attempts() == 1;
        (declared.check_contract().is_ok() && one_attempt).then(|| {
            format!(
                "You declared {tool} {}, which passes the tool contract check: a write gets one attempt, so a lost answer became an unknown instead of a second payment.",
                declared.summary()
            )
        })
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
    /// The ambiguity policy's refusal, when that guard is on in this run and the draft has no
    /// way to settle an unknown outcome: a draft that passes the contract check is refused at
    /// start all the same. `None` when the policy is off or satisfied.
    pub policy: Option<String>,
}

/// A tool the player may declare in this level, as it is declared now.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Declarable {
    pub tool: ToolDeclaration,
    /// The contract check on the declaration as it stands: `None` passes.
    pub violation: Option<String>,
    /// The ambiguity policy's refusal of the declaration as it stands (see
    /// [`DraftVerdict::policy`]).
    pub policy: Option<String>,
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
            policy: policy_refusal(simulation, tool),
            drafts: drafts()
                .map(|(side_effect, attempts, takes_key)| {
                    let draft = tool.declared_as(side_effect, attempts, takes_key);
                    DraftVerdict {
                        side_effect,
                        attempts,
                        takes_key,
                        violation: draft.check_contract().err().map(|violation| violation.to_string()),
                        policy: policy_refusal(simulation, &draft),
                    }
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

/// The ambiguity policy's words on a declaration, as the runtime's start check judges it in
/// this run (the same call the worker makes: `assert_ambiguity_policy` with the pause guard's
/// state); `None` when the policy is off here or the declaration satisfies it.
fn policy_refusal(simulation: &Simulation, tool: &ToolDeclaration) -> Option<String> {
    let guards = simulation.guards();
    if !guards.is_on(Guard::AmbiguityPolicy) {
        return None;
    }
    assert_ambiguity_policy(tool, guards.is_on(Guard::PauseOnIndeterminate))
        .err()
        .map(|violation| violation.to_string())
}
