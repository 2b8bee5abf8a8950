//! The run a runtime must match: the tape's level, seed and moves, simulated with exactly the
//! guards the runtime claims (each move played where it meets what it hit in the tape's own
//! run, as the counterfactual debrief replays moves), and recorded step by step — which event
//! each step ran, which moves it made, which workers it started or killed — so the conductor
//! can play the same steps on real processes, and judge their money against this run's.

use std::collections::BTreeMap;

use crate::billing::Billing;
use crate::checker::{RunNodes, Verdict};
use crate::counterfactual;
use crate::level::{CardKind, LoadedTape, Play, TimedAction};
use crate::replay;
use crate::runtime::guards::Guards;
use crate::runtime::ledger::LedgerStore;
use crate::runtime::run::ToolCall;
use crate::runtime::worker::Phase;
use crate::simulator::{Direction, Message, Simulation, SimulationBuilder, StepEvent, WorkerView};

/// A move in a few words: `CrashWorker w1 about to save checkpoint`, `LoseResponse r1:c1`.
pub fn describe_play(play: &Play) -> String {
    let card = play.card().name();
    match play {
        Play::CrashWorker(crash) => format!(
            "{card} {}{}",
            crash
                .worker
                .map_or_else(|| "the oldest worker".to_owned(), |worker| format!("w{worker}")),
            crash
                .in_phase
                .map(|phase| format!(" about to {phase}"))
                .unwrap_or_default()
        ),
        Play::LoseRequest(_) | Play::LoseResponse(_) | Play::SlowResponse(_) => {
            format!("{card} {}", play.key().unwrap_or("the oldest on the wire"))
        }
        Play::OperatorResolve(_) | Play::OperatorCompensate(_) => {
            format!("{card} {}", play.key().unwrap_or_default())
        }
        other => match other.run() {
            Some(run) => format!("{card} on {run}"),
            None => card.to_owned(),
        },
    }
}

/// A worker the run starts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Spawn {
    pub worker: u32,
    pub run: String,
    pub node: u32,
    /// Started to recover its run after a crash.
    pub recovering: bool,
}

/// What the model decided at a `model decides` step.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decided {
    Call(ToolCall),
    /// Done, or the run failed: no call.
    NoCall,
}

/// The event one step ran, in the terms a real process meets it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Traced {
    /// Worker `worker` ran `phase`, about call `call` (the model's id) if it had one.
    Worker {
        worker: u32,
        phase: Phase,
        call: Option<String>,
        /// A `send` refused before anything left (the tool-fails card).
        refused_send: bool,
        /// At `model decides`: the decision, and whether a "call again" card was armed for it.
        decided: Option<Decided>,
        call_again: Option<bool>,
    },
    /// A request reached billing (or was lost on the way).
    Request {
        worker: u32,
        call: String,
        attempt: u32,
        lost: bool,
    },
    /// Billing's answer reached its worker (or was lost, or arrived after the timeout).
    Response {
        worker: u32,
        call: String,
        attempt: u32,
        lost: bool,
        slowed: bool,
    },
    /// An attempt's timer fired with no answer in.
    Timeout { worker: u32, attempt: u32 },
    /// A parked worker was woken, or asked to look again.
    Wake { worker: u32 },
    /// The level's `index`th scripted owner change lands (someone outside the agent).
    OwnerChange { index: usize },
    /// A timer, a restart (its worker is in the step's spawns), or something only the
    /// simulation has.
    Other(&'static str),
}

/// One step of the expected run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TraceStep {
    /// The simulator's phase count before the step ("phase N" in its timeline).
    pub phase: u32,
    /// The level's clock when the step's event ran.
    pub now_ms: u64,
    /// Moves made just before the event (indices into [`ExpectedRun::moves`]).
    pub moves: Vec<usize>,
    /// Workers killed in the step: by a crash card, or by a level's crash loop.
    pub died: Vec<u32>,
    /// Workers started in the step: a twin, a recovery, a workflow's fresh run.
    pub spawned: Vec<Spawn>,
    pub event: Option<Traced>,
}

/// The run a runtime with `guards` must match.
#[derive(Debug)]
pub struct ExpectedRun {
    pub guards: Guards,
    /// The workers the level starts with.
    pub initial: Vec<Spawn>,
    pub steps: Vec<TraceStep>,
    /// The tape's moves as played under these guards.
    pub moves: Vec<TimedAction>,
    pub verdict: Verdict,
    pub billing: Billing,
    pub nodes: RunNodes,
    /// The run was cut at the level's phase limit, not quiet: whatever the runtime would still
    /// do past that point, the expected run never did.
    pub out_of_phases: bool,
}

/// Why there is no expected run for a tape.
#[derive(Debug, thiserror::Error)]
pub enum ExpectedError {
    /// Under the runtime's guards a move of the tape never meets what it hit in the tape's run.
    #[error("under these guards the tape's moves do not all play: {}", .0.join("; "))]
    MovesDoNotPlay(Vec<String>),
    #[error("the tape cannot be simulated: {0}")]
    Simulation(String),
}

struct Snapshot {
    workers: Vec<WorkerView>,
    messages: BTreeMap<u32, Message>,
    played: usize,
    not_attempted: BTreeMap<String, u32>,
    call_again: BTreeMap<String, bool>,
    wire_hits: usize,
}

fn snapshot(simulation: &Simulation) -> Snapshot {
    Snapshot {
        workers: simulation.workers(),
        messages: simulation
            .messages()
            .map(|message| (message.id, message.clone()))
            .collect(),
        played: simulation.played().len(),
        not_attempted: armed_refusals(simulation),
        call_again: armed_calls_again(simulation),
        wire_hits: simulation.wire_hits().len(),
    }
}

/// The tool-fails cards armed and not yet fired, by run.
fn armed_refusals(simulation: &Simulation) -> BTreeMap<String, u32> {
    let mut refusals = BTreeMap::new();
    for waiting in simulation.armed().moves() {
        if let Play::ToolFailsBeforeSending(card) = &waiting.play {
            *refusals.entry(card.run.clone()).or_insert(0) += 1;
        }
    }
    refusals
}

/// The call-again cards armed and not yet fired, by run: reword or not.
fn armed_calls_again(simulation: &Simulation) -> BTreeMap<String, bool> {
    simulation
        .armed()
        .moves()
        .iter()
        .filter_map(|waiting| match &waiting.play {
            Play::ModelCallsAgain(card) => Some((card.run.clone(), card.reword)),
            _ => None,
        })
        .collect()
}

/// What the moves made within a step (before its event) did: a step's snapshot before it
/// cannot show them.
#[derive(Default)]
struct MovesInStep {
    /// Message id → the wire card that hit it.
    hits: BTreeMap<u32, CardKind>,
    /// Tool-fails cards armed.
    refusals: u32,
    /// Call-again cards armed, by run (node): reword or not.
    call_again: BTreeMap<String, bool>,
}

fn moves_in_step(simulation: &Simulation, before: &Snapshot) -> MovesInStep {
    let played = simulation.played();
    let mut moves = MovesInStep::default();
    for hit in &simulation.wire_hits()[before.wire_hits..] {
        if let Some(action) = played.get(hit.played) {
            moves.hits.insert(hit.message, action.play.card());
        }
    }
    for action in &played[before.played..] {
        match &action.play {
            Play::ToolFailsBeforeSending(_) => moves.refusals += 1,
            Play::ModelCallsAgain(card) => {
                moves.call_again.insert(card.run.clone(), card.reword);
            }
            _ => {}
        }
    }
    moves
}

/// Whether a step is about one call (its command names a key), so a mark of it names the call.
pub fn carries_call(phase: Phase) -> bool {
    matches!(
        phase,
        Phase::Reserve
            | Phase::CheckLedger
            | Phase::InsertStarted
            | Phase::Send
            | Phase::RecordOutcome
            | Phase::Reconcile
            | Phase::SettleNotFound
            | Phase::WaitToLookAgain
            | Phase::Compensate
            | Phase::ReadRecord
            | Phase::Park
    )
}

fn worker_of(snapshot: &Snapshot, number: u32) -> Option<&WorkerView> {
    snapshot.workers.iter().find(|worker| worker.number == number)
}

fn spawn_of(worker: &WorkerView, recovering: bool) -> Spawn {
    Spawn {
        worker: worker.number,
        run: worker.run.to_string(),
        node: worker.node,
        recovering,
    }
}

/// The expected run of `tape` for a runtime that implements exactly `guards`.
pub fn expected_run(tape: &LoadedTape, guards: Guards) -> Result<ExpectedRun, ExpectedError> {
    let simulation_error = |error: &dyn std::fmt::Display| ExpectedError::Simulation(error.to_string());
    let mut own = replay::simulation_of(tape, LedgerStore::Memory).map_err(|error| simulation_error(&error))?;
    own.run().map_err(|error| simulation_error(&error))?;
    let other = counterfactual::under_guards(&own, guards).map_err(|error| simulation_error(&error))?;
    if let counterfactual::Answer::CannotSay { fizzled } = &other.answer {
        return Err(ExpectedError::MovesDoNotPlay(fizzled.clone()));
    }
    let mut simulation = SimulationBuilder::new(own.authored_level(), tape.tape.seed)
        .guards(guards)
        .actions(other.moves.clone())
        .wire_rule(tape.tape.wire_rule())
        .ledger_store(LedgerStore::Memory)
        .build()
        .map_err(|error| simulation_error(&error))?;
    let initial = simulation
        .workers()
        .iter()
        .map(|worker| spawn_of(worker, false))
        .collect();
    let mut steps = Vec::new();
    loop {
        let before = snapshot(&simulation);
        let phase = simulation.phase();
        let stepped = simulation.step().map_err(|error| simulation_error(&error))?;
        let after = snapshot(&simulation);
        let moves = moves_in_step(&simulation, &before);
        let event = simulation.last_step().cloned();
        let step = trace_step(
            &before,
            &after,
            &moves,
            phase,
            simulation.now_ms(),
            event.as_ref(),
            simulation.nodes(),
        );
        let changed = step.event.is_some() || !step.moves.is_empty() || !step.spawned.is_empty();
        if changed {
            steps.push(step);
        }
        if !stepped {
            break;
        }
    }
    let verdict = simulation.verdict().map_err(|error| simulation_error(&error))?;
    Ok(ExpectedRun {
        guards,
        initial,
        steps,
        moves: simulation.played().to_vec(),
        verdict,
        billing: simulation.billing().clone(),
        nodes: simulation.nodes().clone(),
        out_of_phases: simulation.is_out_of_phases(),
    })
}

fn trace_step(
    before: &Snapshot,
    after: &Snapshot,
    moves: &MovesInStep,
    phase: u32,
    now_ms: u64,
    event: Option<&StepEvent>,
    nodes: &RunNodes,
) -> TraceStep {
    let restarted = match event {
        Some(StepEvent::Restart { run }) => Some(run.as_str()),
        _ => None,
    };
    let spawned: Vec<Spawn> = after
        .workers
        .iter()
        .filter(|worker| worker_of(before, worker.number).is_none())
        .map(|worker| spawn_of(worker, restarted == Some(worker.run.as_str())))
        .collect();
    let died: Vec<u32> = after
        .workers
        .iter()
        .filter(|worker| worker.crashed && worker_of(before, worker.number).is_some_and(|was| was.alive))
        .map(|worker| worker.number)
        .collect();
    TraceStep {
        phase,
        now_ms,
        moves: (before.played..after.played).collect(),
        died,
        spawned,
        event: event.map(|event| traced(before, after, moves, event, nodes)),
    }
}

fn traced(before: &Snapshot, after: &Snapshot, moves: &MovesInStep, event: &StepEvent, nodes: &RunNodes) -> Traced {
    match event {
        StepEvent::Worker { worker, phase } => {
            let was = worker_of(before, *worker);
            let now = worker_of(after, *worker);
            let run = was.map(|view| view.run.to_string()).unwrap_or_default();
            let node = crate::checker::node_of(nodes, &run);
            let decided = (*phase == Phase::ModelDecides).then(|| {
                let made_a_call = match (was, now) {
                    (Some(was), Some(now)) => now.run_state.next_call_number > was.run_state.next_call_number,
                    _ => false,
                };
                match now.and_then(|view| view.call.clone()) {
                    Some(call) if made_a_call => Decided::Call(call),
                    _ => Decided::NoCall,
                }
            });
            let refused_send = *phase == Phase::Send
                && before.not_attempted.values().sum::<u32>() + moves.refusals
                    > after.not_attempted.values().sum::<u32>();
            Traced::Worker {
                worker: *worker,
                phase: *phase,
                call: was
                    .filter(|_| carries_call(*phase))
                    .and_then(|view| view.call.as_ref().map(|call| call.id.clone())),
                refused_send,
                decided,
                // Armed for the run's workflow node (a fresh run answers to its node's card).
                call_again: moves
                    .call_again
                    .get(node)
                    .or_else(|| before.call_again.get(node))
                    .copied(),
            }
        }
        StepEvent::Deliver { message: id } => match before.messages.get(id) {
            Some(message) if message.direction == Direction::Request => Traced::Request {
                worker: message.worker,
                call: message.call.id.clone(),
                attempt: message.attempt,
                lost: message.lost || moves.hits.get(id) == Some(&CardKind::LoseRequest),
            },
            Some(message) => Traced::Response {
                worker: message.worker,
                call: message.call.id.clone(),
                attempt: message.attempt,
                lost: message.lost || moves.hits.get(id) == Some(&CardKind::LoseResponse),
                slowed: message.slowed || moves.hits.get(id) == Some(&CardKind::SlowResponse),
            },
            None => Traced::Other("a message the wire no longer held"),
        },
        StepEvent::Timeout { worker, attempt, .. } => Traced::Timeout {
            worker: *worker,
            attempt: *attempt,
        },
        StepEvent::Wake { worker } | StepEvent::LookAgain { worker } => Traced::Wake { worker: *worker },
        StepEvent::Timer { .. } => Traced::Other("a timer"),
        StepEvent::Restart { .. } => Traced::Other("a restart"),
        StepEvent::HonestCheck { .. } => Traced::Other("the honest operator's check"),
        StepEvent::Audit => Traced::Other("the audit"),
        // Tapes with these cards are not played through the protocol (`expressible.rs`).
        StepEvent::Resume { .. } => Traced::Other("a paused worker resuming"),
        StepEvent::Apply { .. } => Traced::Other("billing applying a request it held"),
        StepEvent::OwnerChange { index } => Traced::OwnerChange { index: *index },
    }
}
