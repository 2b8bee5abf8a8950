//! The workers: each a runtime machine ([`Worker`]) with its own ledger connection in the
//! runtime's [`Executor`]. The executor carries out the machine's ledger commands; this file
//! carries out the rest — the model, the wire, time, the process — as the simulator's part
//! of the one runtime, the same way a real worker process does with real ones (each phase in
//! `phases.rs`); here, the workers' lives: started, failed, retired, crashed, parked and woken.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use super::clock::Event;
use super::timeline::Actor;
use super::{Simulation, WORKERS_MAX};
use crate::model;
use crate::runtime::executor::Executor;
use crate::runtime::ids::{RunId, Tenant, WorkerId};
use crate::runtime::key::IdempotencyKey;
use crate::runtime::rules::{self, FailedRunAction};
use crate::runtime::run::{RunState, RunStatus, ToolCall};
use crate::runtime::worker::{Input, Phase, Worker, WorkerSetup, WorkerState};
use crate::runtime::workflow;

/// A worker as the game draws it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct WorkerView {
    pub number: u32,
    pub id: WorkerId,
    pub run: RunId,
    pub state: WorkerState,
    pub alive: bool,
    pub crashed: bool,
    /// The phase it runs next, or last ran.
    pub phase: Phase,
    pub call: Option<ToolCall>,
    pub key: Option<String>,
    pub attempt: u32,
    pub loaded_version: u32,
    pub run_state: RunState,
    /// The node it runs on: [`super::FIRST_NODE`], or [`super::SECOND_NODE`] in a level with one.
    pub node: u32,
    /// Stopped (SIGSTOP) until this time, if it is stopped now.
    pub paused_until_ms: Option<u64>,
}

impl WorkerView {
    /// A worker held by `PauseWorker` (SIGSTOP) as both editions draw it: "stopped until 1450
    /// ms". Its state still reads what it will do once it runs again (a worker stopped while
    /// calling billing is "calling" to the runtime), so without this a stopped worker looks
    /// as if it were waiting; `None` when it is not stopped, or not alive to be.
    pub fn stopped_words(&self) -> Option<String> {
        let until_ms = self.paused_until_ms.filter(|_| self.alive)?;
        Some(format!("stopped until {until_ms} ms"))
    }
}

/// A run that failed, and what followed: what the runtime undid by reflex, and the fresh run
/// its workflow node started, if it did.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct FailedRun {
    pub run: String,
    /// The level's run (workflow node) it carried out.
    pub node: String,
    /// The step (script item, from 0) the run failed at.
    pub item: u32,
    pub reason: String,
    pub phase: u32,
    /// How many of its calls had taken effect when it failed.
    pub took_effect: u32,
    /// The calls the runtime compensated by reflex because the run failed.
    pub compensated: Vec<String>,
    /// The fresh run the workflow's retry started in its place.
    pub fresh_run: Option<String>,
}

/// The machine and the executor are boxed apart: together they make a slot over a kilobyte,
/// and glibc's malloc sweeps all its small free chunks before each allocation that large
/// (`malloc_consolidate`); spawning workers was 7% of a vault scenario's instructions
/// (`sim/benches/simulator.rs`, the book's "Performance").
#[derive(Debug)]
pub(super) struct WorkerSlot {
    pub(super) machine: Box<Worker>,
    /// The worker's ledger connection: dropped when it dies, which rolls back whatever
    /// transaction it had open, as SIGKILL would.
    pub(super) executor: Option<Box<Executor>>,
    pub(super) alive: bool,
    pub(super) crashed: bool,
    pub(super) phase: Phase,
    /// The node it runs on, whose ledger its connection is to.
    pub(super) node: u32,
    /// Every phase it was given, in order (so a test can hold the simulator and the worker
    /// process to the same machine).
    pub(super) phases: Vec<Phase>,
    /// The supervisor started it to recover a run after a crash (a level's crash loop,
    /// `recovery_crashes_at`, kills only these).
    pub(super) recovering: bool,
    /// The request it last put on the wire: the one send its timer and answer may end.
    pub(super) awaiting_send: Option<u32>,
    /// The requests of a batch it has out (several calls in one turn), each until its answer
    /// or timer is taken: empty, and never allocated, outside a batch.
    pub(super) batch_sends: Vec<u32>,
    /// Stopped (`PauseWorker`): until when, and what waited for it. Boxed: rare, and the slot
    /// stays small (see above).
    pub(super) paused: Option<Box<super::pause::Paused>>,
}

#[derive(Debug)]
pub(super) struct Workers {
    pub(super) slots: BTreeMap<u32, WorkerSlot>,
    pub(super) next_worker: u32,
    /// Key → the workers parked on it.
    pub(super) parked: BTreeMap<String, BTreeSet<u32>>,
    /// (run, call id) → how many times the model was asked for that step.
    pub(super) model_asks: BTreeMap<(String, String), u32>,
    /// Runs whose failure the workflow node has decided on (each once, however many of its
    /// workers see it failed).
    pub(super) failures_decided: BTreeSet<String>,
    /// How many workers are stopped now: while none is, no event is asked whose it is.
    pub(super) paused: u32,
}

impl Workers {
    pub(super) fn new() -> Workers {
        Workers {
            slots: BTreeMap::new(),
            next_worker: 1,
            parked: BTreeMap::new(),
            model_asks: BTreeMap::new(),
            failures_decided: BTreeSet::new(),
            paused: 0,
        }
    }
}

/// Why the supervisor starts a worker after a crash, as the timeline says it.
pub(super) const RECOVERS: &str = "recovers the run after a crash";

/// Where a worker is, in words: "about to send", "waiting for billing's answer", "parked".
pub fn moment(phase: Phase) -> String {
    match phase {
        Phase::WaitForAnswer => "waiting for billing's answer".to_owned(),
        Phase::Parked => "parked, waiting for the call to be settled".to_owned(),
        other => format!("about to {other}"),
    }
}

impl Simulation {
    pub(super) fn spawn_worker(&mut self, run: &str, why: &str, node: u32) -> Option<u32> {
        if self.workers.next_worker > WORKERS_MAX {
            self.log(
                Actor::Supervisor,
                "refused",
                Some(run.to_owned()),
                None,
                format!("no worker started for {run}: {WORKERS_MAX} already"),
            );
            return None;
        }
        let number = self.workers.next_worker;
        self.workers.next_worker += 1;
        let ledger = match self.node_ledger(node).connect_again() {
            Ok(ledger) => ledger,
            Err(error) => {
                self.log(
                    Actor::Supervisor,
                    "refused",
                    Some(run.to_owned()),
                    None,
                    format!("w{number} could not open the ledger: {error}"),
                );
                return None;
            }
        };
        let mut setup = WorkerSetup::new(format!("w{number}"), run, self.level.tools.clone())
            .with_tenant(self.tenant_of(run))
            .with_guards(self.guards)
            .with_lease_ms(u64::from(self.level.world.lease_ms))
            .with_words(crate::text::WORDS);
        setup.recovery_attempts_max = self.level.world.recovery_attempts_max;
        let mut executor = Executor::new(ledger, &setup);
        if !self.send_fence {
            executor = executor.without_send_fence_for_tests();
        }
        let machine = match Worker::new(setup) {
            Ok(machine) => machine,
            Err(error) => {
                self.log(
                    Actor::Supervisor,
                    "refused",
                    Some(run.to_owned()),
                    None,
                    format!("no worker started for {run}: {error}"),
                );
                return None;
            }
        };
        self.workers.slots.insert(
            number,
            WorkerSlot {
                machine: Box::new(machine),
                executor: Some(Box::new(executor)),
                alive: true,
                crashed: false,
                phase: Phase::Start,
                node,
                phases: Vec::new(),
                recovering: why == RECOVERS,
                awaiting_send: None,
                batch_sends: Vec::new(),
                paused: None,
            },
        );
        self.log(
            Actor::Supervisor,
            "start",
            Some(run.to_owned()),
            None,
            format!(
                "w{number} {why} on {run}{}",
                if node == super::SECOND_NODE {
                    ", on a second node whose ledger is its own"
                } else {
                    ""
                }
            ),
        );
        self.feed(number, Input::Start);
        Some(number)
    }

    pub(super) fn tenant_of(&self, run: &str) -> Tenant {
        self.script_of(run)
            .map_or_else(model::default_tenant, |script| script.tenant.clone())
    }

    /// The script `run` carries out: its own, or its node's when a workflow retry started it.
    pub(super) fn script_of(&self, run: &str) -> Option<&model::RunScript> {
        let node = self.node_of(run);
        self.level.runs.iter().find(|script| script.id == node)
    }

    pub(super) fn run_of(&self, worker: u32) -> String {
        self.workers.slots[&worker].machine.run_id().to_string()
    }

    /// A worker exited. If its run failed, the run's workflow node decides, once per run, what
    /// follows (table 4): a fresh run under `recovery_policy: retry` with retries left, or
    /// nothing — the run stays failed, on the timeline for a person to see.
    pub(super) fn after_exit(&mut self, worker: u32, run: &str) {
        let machine = &self.workers.slots[&worker].machine;
        let state = machine.run_state();
        let RunStatus::Failed { reason } = state.status.clone() else {
            return;
        };
        let (item, took_effect) = (state.item, u32::try_from(state.took_effect.len()).unwrap_or(u32::MAX));
        let compensated: Vec<String> = machine.undone_on_failure().iter().map(ToString::to_string).collect();
        if !self.workers.failures_decided.insert(run.to_owned()) {
            return;
        }
        let (node, retry) = self
            .nodes
            .get(run)
            .map_or_else(|| (run.to_owned(), 0), |node| (node.node.clone(), node.retry));
        let workflow = self.level.workflow;
        let action = rules::workflow_action(workflow.recovery_policy, retry, workflow.retries_max);
        self.timeline.rules.push(super::RuleFiring {
            phase: self.clock.phase,
            worker,
            key: None,
            row: super::RuleRow::Decided(rules::Fired::Workflow {
                policy: workflow.recovery_policy,
                retry,
                retries_max: workflow.retries_max,
                action,
            }),
        });
        let reason = reason.trim_end_matches('.').to_owned();
        let mut failed = FailedRun {
            run: run.to_owned(),
            node: node.clone(),
            item,
            reason: reason.clone(),
            phase: self.clock.phase,
            took_effect,
            compensated,
            fresh_run: None,
        };
        match action {
            FailedRunAction::StartFreshRun { retry: fresh_retry } => {
                let fresh = workflow::retry_run_id(&node, fresh_retry).into_string();
                self.nodes.insert(
                    fresh.clone(),
                    crate::checker::RunNode {
                        node,
                        retry: fresh_retry,
                    },
                );
                failed.fresh_run = Some(fresh.clone());
                self.failed_runs.push(failed);
                self.log(
                    Actor::Supervisor,
                    "workflow retry",
                    Some(run.to_owned()),
                    None,
                    format!(
                        "run {run} failed ({reason}); recovery_policy: retry starts a fresh run {fresh} \
                         (retry {fresh_retry} of {}): a new run id, so new keys, from the first step",
                        workflow.retries_max
                    ),
                );
                self.spawn_worker(&fresh, "is started by the workflow's retry", super::FIRST_NODE);
            }
            FailedRunAction::StayFailed
            | FailedRunAction::CompensateWhatTookEffect
            | FailedRunAction::LeaveToOperator => {
                self.failed_runs.push(failed);
                let why = if workflow.retries() {
                    "its workflow node has no retries left"
                } else {
                    "it stays failed for a person to look at"
                };
                self.log(
                    Actor::Supervisor,
                    "run failed",
                    Some(run.to_owned()),
                    None,
                    format!("run {run} failed ({reason}); {why}"),
                );
            }
        }
    }

    pub(super) fn note_call(&mut self, key: &IdempotencyKey, run: &str, call: &ToolCall) {
        self.call_items
            .entry(key.to_string())
            .or_default()
            .insert((run.to_owned(), call.item));
    }

    /// The run a key's call belongs to, as far as the simulation has seen it.
    pub(super) fn run_of_key(&self, key: &str) -> Option<String> {
        self.call_items
            .get(key)
            .and_then(|items| items.iter().next())
            .map(|(run, _)| run.clone())
    }

    /// The worker waits for the answer to this attempt of this call.
    /// Whether `request` is the send the worker waits on (not an earlier one with the same
    /// key and attempt number).
    pub(super) fn awaits_send(&self, worker: u32, request: u32) -> bool {
        let slot = &self.workers.slots[&worker];
        slot.awaiting_send == Some(request) || slot.batch_sends.contains(&request)
    }

    /// A batch's request was answered or timed out: its send is no longer awaited (another
    /// send of the batch may share its key and attempt, hashed keys without a ledger).
    pub(super) fn send_ended(&mut self, worker: u32, request: u32) {
        if let Some(slot) = self.workers.slots.get_mut(&worker) {
            slot.batch_sends.retain(|sent| *sent != request);
        }
    }

    /// The worker waits for the answer to this attempt of this call (the call it works on,
    /// or one of a batch's out at once).
    pub(super) fn awaiting(&self, worker: u32, key: &str, attempt: u32) -> bool {
        self.workers.slots[&worker].machine.awaits(key, attempt)
    }

    /// The worker stops: its connection drops. If it owned a call that others wait on, they
    /// look again: its outcome will never be recorded by it now.
    pub(super) fn retire(&mut self, worker: u32) {
        self.forget_pause(worker);
        let slot = self.workers.slots.get_mut(&worker).expect("known worker");
        slot.alive = false;
        slot.executor = None;
        let held = slot.machine.current_call().map(|(_, key, _)| key.clone());
        for waiting in self.workers.parked.values_mut() {
            waiting.remove(&worker);
        }
        if let Some(key) = held {
            self.look_again(&key);
        }
    }

    pub(super) fn crash(&mut self, worker: u32) {
        let run = self.run_of(worker);
        let node = self.workers.slots[&worker].node;
        self.workers.slots.get_mut(&worker).expect("known worker").crashed = true;
        // Dropping the connection rolls back any open transaction, as SIGKILL would.
        self.retire(worker);
        let someone_else = self
            .workers
            .slots
            .values()
            // A supervisor knows only the workers of its own node.
            .any(|slot| slot.alive && *slot.machine.run_id() == run && slot.node == node);
        if let Some(after_ms) = self.level.world.restart_after_crash_ms
            && !someone_else
        {
            self.clock
                .schedule(self.clock.now_ms + u64::from(after_ms), Event::Restart { run, node });
        }
    }

    /// The level's crash loop (`recovery_crashes_at`): a worker recovering a run dies just
    /// before it runs that phase, every time, so no recovery gets past the checkpoint it
    /// loaded. Returns whether `worker` died.
    pub(super) fn dies_in_recovery(&mut self, worker: u32, phase: Phase) -> bool {
        let slot = &self.workers.slots[&worker];
        if !slot.recovering || self.level.world.recovery_crashes_at != Some(phase) {
            return false;
        }
        let run = self.run_of(worker);
        let key = slot.machine.current_call().map(|(_, key, _)| key.to_string());
        self.log(
            Actor::Worker(worker),
            "crash",
            Some(run),
            key,
            format!(
                "w{worker} dies as it is about to {phase} (SIGKILL): the recovery path has a bug that kills every \
                 worker picking this run up at the same step; its connection drops"
            ),
        );
        self.crash(worker);
        true
    }

    /// Workers on `node` parked on `key` hear that it was settled there: a record settled in
    /// one node's ledger says nothing to a worker waiting on another's. Returns how many stop
    /// waiting.
    pub(super) fn wake_parked(&mut self, node: u32, key: &IdempotencyKey, except: Option<u32>) -> usize {
        let Some(waiting) = self.workers.parked.remove(key.as_str()) else {
            return 0;
        };
        let (on_node, elsewhere): (BTreeSet<u32>, BTreeSet<u32>) = waiting
            .into_iter()
            .partition(|worker| self.workers.slots.get(worker).is_some_and(|slot| slot.node == node));
        if !elsewhere.is_empty() {
            self.workers.parked.insert(key.to_string(), elsewhere);
        }
        let stopped = on_node.len();
        for worker in on_node {
            if Some(worker) != except {
                self.clock.schedule(self.clock.now_ms + 1, Event::Wake { worker });
            }
        }
        stopped
    }

    /// Workers parked on `key` look at it again: something that could settle it changed.
    pub(super) fn look_again(&mut self, key: &IdempotencyKey) {
        let Some(waiting) = self.workers.parked.remove(key.as_str()) else {
            return;
        };
        for worker in waiting {
            self.clock.schedule(self.clock.now_ms + 1, Event::LookAgain { worker });
        }
    }

    /// A parked worker is told to wake or look again, if it is still parked.
    pub(super) fn nudge_parked(&mut self, worker: u32, input: Input, text: &str) {
        if self.workers.slots[&worker].machine.state() == WorkerState::Parked {
            let run = self.run_of(worker);
            let kind = if input == Input::Woken { "wake" } else { "look again" };
            self.log(Actor::Worker(worker), kind, Some(run), None, text.to_owned());
            self.feed(worker, input);
        }
    }
}
