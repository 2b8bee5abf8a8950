//! The exported program's schedule: the simulator's run of the tape (the runtime protocol's
//! expected run), step by step, as data — which worker takes its next step, what the model
//! answers, what the wire does with each request and answer, who is killed and who started.
//! The tape's moves are named in a comment where they land.

use std::fmt::Write as _;

use crate::cards::OperatorResolve;
use crate::expected::describe_play;
use crate::expected::{Decided, ExpectedRun, Spawn, Traced};
use crate::level::{Level, Play};
use crate::runtime::worker::Phase;
use crate::simulator::FIRST_NODE;

fn start(spawn: &Spawn) -> String {
    format!(
        "Start {{ worker: {}, run: {:?}, node: {} }}",
        spawn.worker, spawn.run, spawn.node
    )
}

/// The schedule's `What` for a step's event; `None` for what the program has no part in (a
/// timer: a backoff's wait ends at the worker's next step).
fn what(event: &Traced) -> Vec<String> {
    vec![match event {
        Traced::Worker {
            worker,
            phase,
            refused_send: true,
            ..
        } => format!("SendRefused {{ worker: {worker}, phase: {:?} }}", phase.name()),
        Traced::Worker {
            worker,
            phase: Phase::ModelDecides,
            decided,
            ..
        } => {
            let says = match decided {
                Some(Decided::Call(call)) => format!(
                    "Says::Call {{ id: {:?}, tool: {:?}, item: {}, arguments: {:?} }}",
                    call.id,
                    call.tool.as_str(),
                    call.item,
                    call.arguments.canonical()
                ),
                Some(Decided::NoCall) | None => "Says::NoCall".to_owned(),
            };
            return vec![
                format!("Step {{ worker: {worker}, phase: {:?} }}", Phase::ModelDecides.name()),
                format!("Ask {{ worker: {worker}, says: {says} }}"),
            ];
        }
        Traced::Worker { worker, phase, .. } => format!("Step {{ worker: {worker}, phase: {:?} }}", phase.name()),
        Traced::Request {
            worker,
            call,
            attempt,
            lost,
        } => format!("Request {{ worker: {worker}, call: {call:?}, attempt: {attempt}, lost: {lost} }}"),
        Traced::Response {
            worker,
            call,
            attempt,
            lost,
            ..
        } => format!("Answer {{ worker: {worker}, call: {call:?}, attempt: {attempt}, lost: {lost} }}"),
        Traced::Timeout { worker, .. } => format!("TimesOut {{ worker: {worker} }}"),
        Traced::Wake { worker } => format!("Wake {{ worker: {worker} }}"),
        // Someone's owner change is the level's, written where its step lands (`owner_change`).
        Traced::OwnerChange { .. } | Traced::Other(_) => return Vec::new(),
    }]
}

/// An operator's resolve, on the first node's ledger (where the simulator's console acts).
fn resolve_what(resolve: &OperatorResolve) -> String {
    format!(
        "Resolve {{ node: {FIRST_NODE}, key: {:?}, status: {:?}, expected: {:?}, reason: {:?}, operator: {:?} }}",
        resolve.key,
        resolve.status.name(),
        resolve.expected_status.map(|status| status.name()),
        resolve.reason,
        resolve.operator
    )
}

/// Someone's owner change at `now_ms`: the level's next scripted change that lands then.
/// The level's `index`th scripted owner change, as the schedule's `What`.
fn owner_change(level: &Level, index: usize) -> Option<String> {
    let change = level.world.owner_changes.get(index)?;
    Some(format!(
        "OwnerChange {{ account: {:?}, owner: {:?}, by: {:?} }}",
        change.account, change.owner, change.by
    ))
}

pub fn schedule_rs(expected: &ExpectedRun, level: &Level) -> String {
    let mut steps = String::new();
    let push = |steps: &mut String, at_ms: u64, what: &str| {
        let _ = writeln!(steps, "    Step {{ at_ms: {at_ms}, what: What::{what} }},");
    };
    for spawn in &expected.initial {
        push(&mut steps, 0, &start(spawn));
    }
    for step in &expected.steps {
        for index in &step.moves {
            if let Some(action) = expected.moves.get(*index) {
                let _ = writeln!(steps, "    // The tape's move: {}.", describe_play(&action.play));
                if let Play::OperatorResolve(resolve) = &action.play {
                    push(&mut steps, step.now_ms, &resolve_what(resolve));
                }
            }
        }
        for worker in &step.died {
            push(&mut steps, step.now_ms, &format!("Kill {{ worker: {worker} }}"));
        }
        for spawn in &step.spawned {
            push(&mut steps, step.now_ms, &start(spawn));
        }
        let killed_before_its_step =
            matches!(&step.event, Some(Traced::Worker { worker, .. }) if step.died.contains(worker));
        if let Some(Traced::OwnerChange { index }) = &step.event
            && let Some(change) = owner_change(level, *index)
        {
            push(&mut steps, step.now_ms, &change);
        }
        if !killed_before_its_step {
            for what in step.event.as_ref().map(what).unwrap_or_default() {
                push(&mut steps, step.now_ms, &what);
            }
        }
    }
    let cut = if expected.out_of_phases {
        "// The level's phase limit ends the run here.\n"
    } else {
        ""
    };
    format!(
        r#"//! Who moves when: the simulator's run of this level and tape, step by step, at the level's
//! clock. A real agent has no schedule — its workers run when they run and its faults come when
//! they come; this one is what makes the program land each fault exactly where the tape did.

#[allow(unused_imports, reason = "a schedule with no model question names no `Says`")]
use crate::model::Says;
use crate::play::{{Step, What}};

pub const STEPS: &[Step] = &[
{steps}{cut}];
"#,
    )
}
