//! Which tapes the protocol can play against a runtime that brings its own, and why not the
//! others. Protocol 1 drives a runtime's workers, its model and its world; it has no console
//! into a runtime's ledger, so a tape whose operator settles or undoes a call, or a level with
//! a scripted operator, cannot be played; nor can a tape that rewrites a tool's declaration,
//! which is a runtime's own code. Its world is the billing server of `twice-sim billing`, which
//! serves every operation a level's tools run (credits, balance lookups, emails, owner changes,
//! deletes) and plays a level's scripted owner changes. Its fault-injecting proxy loses and slows messages but
//! does not hold a request at billing, and it crashes processes but does not stop them: a tape
//! that pauses a worker or delays billing's apply cannot be played yet. And a tape whose moves
//! never meet their moments under the guards a runtime claims tests nothing there.

use serde::Serialize;

use crate::billing_tools::Operation;
use crate::level::{LoadedTape, Play};

/// Why a tape cannot be played against a runtime.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(tag = "reason", rename_all = "snake_case")]
pub enum Reason {
    /// The tape declares a tool (`DeclareTool`).
    DeclaresTool,
    /// The tape acts as an operator (`OperatorResolve`, `OperatorCompensate`).
    OperatorMove,
    /// The level has a scripted operator (an honest operator or an auditor).
    ScriptedOperator,
    /// A tool of the level runs an operation the billing server does not serve.
    OperationNotServed { tool: String, operation: String },
    /// Under the guards the runtime claims, a move never meets what it hit in the tape's run.
    MovesDoNotPlay { fizzled: Vec<String> },
    /// The tape stops a worker (`PauseWorker`) or holds a request at billing (`DelayApply`).
    FaultNotDriven { card: String },
    /// A run of the level makes its calls in one turn (`parallel: true`).
    ParallelCalls { run: String },
}

impl Reason {
    /// One line, for the summary's count.
    pub fn short(&self) -> &'static str {
        match self {
            Reason::DeclaresTool => "rewrites a tool's declaration",
            Reason::OperatorMove => "acts as an operator",
            Reason::ScriptedOperator => "has a scripted operator",
            Reason::OperationNotServed { .. } => "runs an operation the billing server does not serve",
            Reason::MovesDoNotPlay { .. } => "its moves do not play under the runtime's guards",
            Reason::FaultNotDriven { .. } => "pauses a worker or delays billing's apply",
            Reason::ParallelCalls { .. } => "makes several calls in one turn",
        }
    }

    /// Why, in a sentence.
    pub fn explain(&self) -> String {
        match self {
            Reason::DeclaresTool => "the tape rewrites a tool's declaration before Penny's first call; a runtime's \
                                     tools are its own code, and the protocol hands it the level's declarations as they are"
                .to_owned(),
            Reason::OperatorMove => "the tape settles or undoes a call as an operator; the protocol has no console into \
                                     a runtime's ledger (protocol 1 drives workers, the model and the world)"
                .to_owned(),
            Reason::ScriptedOperator => "the level's scripted operator settles or undoes calls in the runtime's ledger; \
                                         the protocol has no console into a runtime's ledger (protocol 1 drives workers, \
                                         the model and the world)"
                .to_owned(),
            // Said once for every tape of this reason (the summary groups by `short`): the
            // tool is named in the tape's own report, not here.
            Reason::OperationNotServed { .. } => "a tool of the level runs an operation the protocol's world, the \
                                                  billing server of `twice-sim billing`, does not serve"
                .to_owned(),
            // Said once for every tape of this reason, as above: the card is the tape's own.
            Reason::FaultNotDriven { .. } => "the tape stops a worker (SIGSTOP) or has billing hold a request before \
                                              applying it; protocol 1's proxy loses and slows messages and its \
                                              supervisor kills processes, but it neither stops a process nor holds \
                                              a request"
                .to_owned(),
            // Said once for every tape of this reason, as above: the run is the tape's own.
            Reason::ParallelCalls { .. } => "a run of the level makes several tool calls in one turn (parallel tool \
                                             calls); protocol 1's decision carries one call"
                .to_owned(),
            Reason::MovesDoNotPlay { fizzled } => format!(
                "with the guards this runtime claims, a move of the tape never meets what it hit in the tape's own run, \
                 so the tape would test nothing here: {}",
                fizzled.join("; ")
            ),
        }
    }
}

/// Why the protocol cannot play `tape` against any runtime, if it cannot.
pub fn why_not(tape: &LoadedTape) -> Option<Reason> {
    let level = &tape.level.level;
    if level.honest_operator.is_some() || level.auditor.is_some() {
        return Some(Reason::ScriptedOperator);
    }
    // Every operation the world has; the check stays for an operation the world gains and the
    // billing server does not serve yet.
    let served = [
        Operation::Credit,
        Operation::LookupBalance,
        Operation::SendEmail,
        Operation::ChangeOwner,
        Operation::DeleteRecord,
    ];
    if let Some(tool) = level
        .tools
        .iter()
        .find(|tool| Operation::of(tool).is_some_and(|operation| !served.contains(&operation)))
    {
        return Some(Reason::OperationNotServed {
            tool: tool.name.to_string(),
            operation: tool.operation.clone().unwrap_or_default(),
        });
    }
    if let Some(reason) = parallel_calls(tape) {
        return Some(reason);
    }
    let plays = || tape.tape.actions.iter().map(|action| &action.play);
    if plays().any(|play| matches!(play, Play::DeclareTool { .. })) {
        return Some(Reason::DeclaresTool);
    }
    if plays().any(|play| matches!(play, Play::OperatorResolve { .. } | Play::OperatorCompensate { .. })) {
        return Some(Reason::OperatorMove);
    }
    fault_not_driven(tape)
}

/// A run of the tape's level that asks for several calls in one turn: a decision of protocol 1
/// carries one call, as does the model of a program `twice-sim export` writes.
pub fn parallel_calls(tape: &LoadedTape) -> Option<Reason> {
    let run = tape.level.level.runs.iter().find(|run| run.parallel)?;
    Some(Reason::ParallelCalls {
        run: run.id.to_string(),
    })
}

/// The tape's first card that stops a worker or has billing hold a request: neither the
/// protocol's proxy and supervisor nor an exported program's schedule can do either.
pub fn fault_not_driven(tape: &LoadedTape) -> Option<Reason> {
    tape.tape
        .actions
        .iter()
        .map(|action| &action.play)
        .find(|play| matches!(play, Play::PauseWorker { .. } | Play::DelayApply { .. }))
        .map(|play| Reason::FaultNotDriven {
            card: play.card().name().to_owned(),
        })
}
