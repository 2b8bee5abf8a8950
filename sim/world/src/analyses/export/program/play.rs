//! The driver: the library's sans-IO `Worker` decides, its `Executor` carries out every ledger
//! command, and this file does the rest a real driver does — asks the model, sends the tools'
//! requests, looks a call up for the reconcile hook — one step at a time, in the order of the
//! schedule. Faults are the schedule's too: a request or an answer lost on the wire, a worker
//! killed, a second worker started on the same run.
//!
//! A real driver needs none of the schedule: `twice_runtime::execution::drive_run` runs a
//! worker to its end with your tools, model and clock. This one steps by hand only so that
//! the faults land exactly where the level put them.

use std::collections::BTreeMap;

use twice_runtime::answer::ToolAnswer;
use twice_runtime::executor::{Drive, Executor, Next, Step as Done};
use twice_runtime::key::IdempotencyKey;
use twice_runtime::ledger::{LateAnswer, Ledger};
use twice_runtime::operator::{self, ResolveRequest};
use twice_runtime::Status;
use twice_runtime::rules::Outcome;
use twice_runtime::run::ToolCall;
use twice_runtime::worker::{Command, Input, Worker, WorkerSetup};

use crate::billing::{Answer, Billing, CreditRequest};
use crate::model::{self, Policy, Says};
use crate::records::RecordRequest;

/// What happens at one step of the schedule.
#[derive(Clone, Copy, Debug)]
pub enum What {
    /// A worker starts on a run (the level's first, a twin, or a recovery after a crash),
    /// against the ledger of workflow node `node`.
    Start { worker: u32, run: &'static str, node: u32 },
    /// A worker is killed where it stands (its process is gone; its ledger rows stay).
    Kill { worker: u32 },
    /// A worker takes its next step, `phase` (the runtime's own name for it).
    Step { worker: u32, phase: &'static str },
    /// A worker asks the model, and the model answers.
    Ask { worker: u32, says: Says },
    /// A worker's send (`phase`), refused by the tool before anything left (billing could
    /// not be reached).
    SendRefused { worker: u32, phase: &'static str },
    /// Attempt `attempt` of a worker's call reaches billing, or is lost on the way.
    Request {
        worker: u32,
        call: &'static str,
        attempt: u32,
        lost: bool,
    },
    /// Billing's answer to it reaches the worker (or comes after its timeout: a late answer),
    /// or is lost on the way back.
    Answer {
        worker: u32,
        call: &'static str,
        attempt: u32,
        lost: bool,
    },
    /// No answer came in time: the worker's HTTP client gives up on the request.
    TimesOut { worker: u32 },
    /// Something settled the call a parked worker waits on, or its wait is over: it looks again.
    Wake { worker: u32 },
    /// An operator settles a call in the ledger of node `node` (the tape's operator move):
    /// `completed` or `failed`, compare-and-set on the status they saw.
    Resolve {
        node: u32,
        key: &'static str,
        status: &'static str,
        expected: Option<&'static str>,
        reason: &'static str,
        operator: &'static str,
    },
    /// Someone outside the agent changes an account's owner at the accounts service.
    OwnerChange {
        account: &'static str,
        owner: &'static str,
        by: &'static str,
    },
}

/// One step, at the level's clock.
#[derive(Clone, Copy, Debug)]
pub struct Step {
    pub at_ms: u64,
    pub what: What,
}

/// A request on the wire and what became of it.
#[derive(Debug)]
struct Exchange {
    run: String,
    key: IdempotencyKey,
    call: ToolCall,
    attempt: u32,
    downstream_key: Option<String>,
    /// Billing's answer, once the request reached it.
    answer: Option<Answer>,
}

/// One worker process.
struct Proc {
    worker: Worker,
    executor: Executor,
    /// The command it is about to carry out.
    next: Option<Command>,
    /// The model's question it waits on, with the run's state.
    asking: Option<twice_runtime::run::RunState>,
    /// Its requests on the wire, by call and attempt (an answer may come after the timeout).
    sent: BTreeMap<(String, u32), Exchange>,
    /// The request whose answer it waits for.
    awaiting: Option<(String, u32)>,
    /// Its timer (a backoff) runs: the wait is over at its next step.
    backing_off: bool,
    /// Parked on this call until someone settles it.
    parked: Option<IdempotencyKey>,
    alive: bool,
}

/// The whole world of the run: billing, the ledgers, the workers.
pub struct World {
    pub billing: Billing,
    ledgers: BTreeMap<u32, Ledger>,
    procs: BTreeMap<u32, Proc>,
    setup: fn(worker: u32, run: &str) -> WorkerSetup,
    operations: &'static [(&'static str, &'static str)],
    policy: Policy,
    /// The runtime logs an answer that comes too late in the call's ledger history (the
    /// `ledger` guard).
    logs_late_answers: bool,
    now_ms: u64,
}

/// Why the program could not follow its schedule: the runtime went another way than the
/// simulator's run of the level, or the ledger failed.
pub type Stray = String;

impl World {
    pub fn new(
        billing: Billing,
        setup: fn(worker: u32, run: &str) -> WorkerSetup,
        operations: &'static [(&'static str, &'static str)],
        policy: Policy,
        logs_late_answers: bool,
    ) -> World {
        World {
            billing,
            ledgers: BTreeMap::new(),
            procs: BTreeMap::new(),
            setup,
            operations,
            policy,
            logs_late_answers,
            now_ms: 0,
        }
    }

    /// Plays the schedule, step by step.
    pub fn play(&mut self, schedule: &[Step]) -> Result<(), Stray> {
        for (index, step) in schedule.iter().enumerate() {
            self.now_ms = step.at_ms;
            self.take(step.what)
                .map_err(|why| format!("step {} of the schedule ({:?}): {why}", index + 1, step.what))?;
        }
        Ok(())
    }

    fn proc(&mut self, worker: u32) -> Result<&mut Proc, Stray> {
        self.procs
            .get_mut(&worker)
            .filter(|proc| proc.alive)
            .ok_or_else(|| format!("w{worker} is not running"))
    }

    fn take(&mut self, what: What) -> Result<(), Stray> {
        match what {
            What::Start { worker, run, node } => self.start(worker, run, node),
            What::Kill { worker } => {
                self.proc(worker)?.alive = false;
                Ok(())
            }
            What::Step { worker, phase } => self.step(worker, phase),
            What::Ask { worker, says } => {
                let policy = self.policy;
                let now_ms = self.now_ms;
                let proc = self.proc(worker)?;
                let state = proc.asking.take().ok_or("it is not asking the model")?;
                let (decision, state) = model::decide(says, &state, policy)?;
                let input = Input::ModelDecided { decision, state };
                let next = proc.worker.handle(now_ms, input).map_err(|error| error.to_string())?;
                proc.next = next;
                Ok(())
            }
            What::SendRefused { worker, phase } => {
                let input = Input::NotAttempted {
                    reason: "billing could not be reached; nothing was sent".to_owned(),
                };
                self.step_with(worker, phase, Some(input))
            }
            What::Request {
                worker,
                call,
                attempt,
                lost,
            } => {
                let now_ms = self.now_ms;
                let operations = self.operations;
                let proc = self.procs.get_mut(&worker).ok_or("no such worker")?;
                let exchange = proc
                    .sent
                    .get_mut(&(call.to_owned(), attempt))
                    .ok_or_else(|| format!("w{worker} has no request for {call} on the wire"))?;
                if lost {
                    // Billing never sees it: no answer will come.
                    proc.sent.remove(&(call.to_owned(), attempt));
                } else {
                    exchange.answer = Some(apply(&mut self.billing, operations, exchange, now_ms));
                }
                Ok(())
            }
            What::Answer {
                worker,
                call,
                attempt,
                lost,
            } => self.answer(worker, call, attempt, lost),
            What::TimesOut { worker } => {
                let now_ms = self.now_ms;
                let proc = self.proc(worker)?;
                let awaited = proc.awaiting.take().ok_or("it waits for no answer")?;
                let key = proc
                    .sent
                    .get(&awaited)
                    .map_or_else(|| proc.worker.current_call().map(|(_, key, _)| key.clone()), |exchange| Some(exchange.key.clone()))
                    .ok_or("it has no call on the wire")?;
                let input = Input::TimedOut {
                    key,
                    attempt: awaited.1,
                };
                proc.next = proc.worker.handle(now_ms, input).map_err(|error| error.to_string())?;
                Ok(())
            }
            What::Resolve {
                node,
                key,
                status,
                expected,
                reason,
                operator,
            } => self.resolve(node, key, (status, expected), reason, operator),
            What::OwnerChange { account, owner, by } => {
                self.billing.records.owner_changed_by(account, owner, by);
                Ok(())
            }
            What::Wake { worker } => {
                let now_ms = self.now_ms;
                let proc = self.proc(worker)?;
                let key = proc.parked.take().ok_or("it is not parked")?;
                let settled = proc
                    .executor
                    .ledger()
                    .record(&key)
                    .map_err(|error| error.to_string())?
                    .is_some_and(|record| record.status.is_settled());
                let input = if settled { Input::Woken } else { Input::LookAgain };
                proc.next = proc.worker.handle(now_ms, input).map_err(|error| error.to_string())?;
                Ok(())
            }
        }
    }

    /// The operator's console: the library's `operator::resolve`, as an operator's HTTP API
    /// calls it. A refusal (someone settled the call first) is the operator's to read; the
    /// run goes on. Workers parked on the call wake at the schedule's next steps.
    fn resolve(
        &mut self,
        node: u32,
        key: &str,
        (status, expected): (&str, Option<&str>),
        reason: &str,
        operator: &str,
    ) -> Result<(), Stray> {
        let status_of = |name: &str| Status::parse(name).ok_or_else(|| format!("no status `{name}`"));
        let key = IdempotencyKey::parse(key).map_err(|error| error.to_string())?;
        let mut request = ResolveRequest::new(status_of(status)?, reason, operator);
        request.expected_status = expected.map(status_of).transpose()?;
        // The operator acts on purpose, whatever the call's status (even one still in flight).
        request.acknowledge_in_flight = true;
        let ledger = self.ledgers.get_mut(&node).ok_or_else(|| format!("no ledger on node {node}"))?;
        if let Err(refused) = operator::resolve(ledger, &key, &request, self.now_ms) {
            eprintln!("{operator}'s resolve of {key} was refused: {refused}");
        }
        Ok(())
    }

    fn start(&mut self, worker: u32, run: &str, node: u32) -> Result<(), Stray> {
        let ledger = self.ledgers.entry(node).or_insert_with(Ledger::open_memory_store);
        let connection = ledger.connect_again().map_err(|error| error.to_string())?;
        let setup = (self.setup)(worker, run);
        let executor = Executor::new(connection, &setup);
        let mut machine = Worker::new(setup).map_err(|error| error.to_string())?;
        let next = machine.handle(self.now_ms, Input::Start).map_err(|error| error.to_string())?;
        let proc = Proc {
            worker: machine,
            executor,
            next,
            asking: None,
            sent: BTreeMap::new(),
            awaiting: None,
            backing_off: false,
            parked: None,
            alive: true,
        };
        self.procs.insert(worker, proc);
        Ok(())
    }

    fn step(&mut self, worker: u32, phase: &str) -> Result<(), Stray> {
        self.step_with(worker, phase, None)
    }

    /// The worker carries out its next command, `phase`, and whatever the driver does for it.
    /// `refused`: the tool refuses the send before anything leaves.
    fn step_with(&mut self, worker: u32, phase: &str, refused: Option<Input>) -> Result<(), Stray> {
        let now_ms = self.now_ms;
        let proc = self.proc(worker)?;
        if proc.backing_off {
            proc.backing_off = false;
            proc.next = proc
                .worker
                .handle(now_ms, Input::BackoffElapsed)
                .map_err(|error| error.to_string())?;
        }
        let command = proc.next.take().ok_or("it has nothing to do")?;
        if command.phase_name() != phase {
            return Err(format!("it is about to {}, not to {phase}", command.phase_name()));
        }
        let done = proc.executor.perform(command, now_ms).map_err(|error| error.to_string())?;
        let input = self.follow(worker, done, refused)?;
        let proc = self.proc(worker)?;
        if let Some(input) = input {
            proc.next = proc.worker.handle(now_ms, input).map_err(|error| error.to_string())?;
        }
        Ok(())
    }

    /// The driver's part of a step: the machine's next input, if it has one now.
    fn follow(&mut self, worker: u32, done: Done, refused: Option<Input>) -> Result<Option<Input>, Stray> {
        let now_ms = self.now_ms;
        let drive = match done.next {
            Next::Feed(input) => return Ok(Some(input)),
            Next::Nothing => return Ok(None),
            Next::Drive(drive) => drive,
        };
        let proc = self.proc(worker)?;
        match drive {
            Drive::AskModel { state } => {
                proc.asking = Some(state);
                Ok(None)
            }
            Drive::Send {
                key,
                downstream_key,
                call,
                attempt,
                ..
            } => {
                if let Some(refusal) = refused {
                    return Ok(Some(refusal));
                }
                let sent = (call.id.clone(), attempt);
                let exchange = Exchange {
                    run: proc.worker.run_id().to_string(),
                    key,
                    call,
                    attempt,
                    downstream_key: downstream_key.map(|key| key.to_string()),
                    answer: None,
                };
                proc.sent.insert(sent.clone(), exchange);
                proc.awaiting = Some(sent);
                Ok(None)
            }
            Drive::Backoff { .. } | Drive::WaitToLookAgain { .. } => {
                proc.backing_off = true;
                Ok(None)
            }
            Drive::LookUp { key, .. } => {
                // The reconcile hook: a read of billing by the call's key, nothing more.
                let found = self.billing.find_credit(key.as_str(), now_ms).map(|entry| {
                    let receipt = format!("applied {}", entry.id);
                    (receipt, format!("credit {}", entry.id))
                });
                let proc = self.proc(worker)?;
                let found = found.as_ref().map(|(receipt, finding)| (receipt.as_str(), finding.as_str()));
                let done = proc
                    .executor
                    .reconciled(key, found, now_ms)
                    .map_err(|error| error.to_string())?;
                self.follow(worker, done, None)
            }
            Drive::Undo { key, call } => {
                // A naive runtime's reflex: void by key, whatever billing holds.
                let arguments = Arguments::of(&call);
                let intent = format!("{}/{}", proc.worker.run_id(), call.item);
                let answer = self
                    .billing
                    .void(key.as_str(), &arguments.account, arguments.amount_cents, &intent, now_ms);
                let words = format!("billing posts {}", answer.receipt());
                let proc = self.proc(worker)?;
                let done = proc.executor.undone(key, &words, now_ms).map_err(|error| error.to_string())?;
                self.follow(worker, done, None)
            }
            Drive::Park { key } => {
                proc.parked = Some(key);
                Ok(None)
            }
            Drive::StandDown { .. } | Drive::WaitForPerson { .. } | Drive::Exit => Ok(None),
        }
    }

    /// Billing's answer reaches its worker: the answer it waits for, or a late one (its
    /// timeout came first), which the machine weighs itself. A worker that is done with the
    /// run, or waits for another call's answer under the same key and attempt, does not take
    /// it: the runtime logs it in the call's history and ignores it.
    fn answer(&mut self, worker: u32, call: &str, attempt: u32, lost: bool) -> Result<(), Stray> {
        let now_ms = self.now_ms;
        let logs_late_answers = self.logs_late_answers;
        let proc = self.procs.get_mut(&worker).ok_or("no such worker")?;
        let exchange = proc
            .sent
            .remove(&(call.to_owned(), attempt))
            .ok_or_else(|| format!("w{worker} has no request for {call} on the wire"))?;
        if lost || !proc.alive {
            return Ok(());
        }
        let answer = exchange.answer.ok_or("billing never answered this request")?;
        let awaits_this = proc.awaiting.as_ref() == Some(&(call.to_owned(), attempt));
        let mistaken = !awaits_this
            && proc.worker.current_call().is_some_and(|(_, key, _)| *key == exchange.key)
            && proc.awaiting.as_ref().is_some_and(|(_, awaited)| *awaited == attempt);
        if !proc.worker.is_done() && !mistaken {
            if awaits_this {
                proc.awaiting = None;
            }
            let input = Input::Response {
                key: exchange.key,
                attempt,
                answer: tool_answer(&answer),
            };
            // A late answer the machine only notes leaves its next command as it was.
            if let Some(next) = proc.worker.handle(now_ms, input).map_err(|error| error.to_string())? {
                proc.next = Some(next);
            }
            return Ok(());
        }
        if logs_late_answers {
            let says = if matches!(answer, Answer::Rejected { .. }) {
                Outcome::Failed
            } else {
                Outcome::Completed
            };
            let detail = format!("attempt {attempt} answered after the run moved on: {}", answer.receipt());
            let late = LateAnswer {
                attempt,
                says,
                detail: &detail,
            };
            proc.executor
                .ledger_mut()
                .log_late_outcome(&exchange.key, &format!("w{worker}"), &late, now_ms)
                .map_err(|error| error.to_string())?;
        }
        Ok(())
    }
}

/// A billing tool's arguments.
#[derive(serde::Deserialize)]
pub struct Arguments {
    pub account: String,
    #[serde(default)]
    pub amount_cents: u32,
    #[serde(default)]
    pub memo: String,
    #[serde(default)]
    pub owner: Option<String>,
}

impl Arguments {
    /// The call's arguments; a call that is not a billing tool's sends an empty request,
    /// which billing refuses.
    fn of(call: &ToolCall) -> Arguments {
        call.arguments.to_typed().unwrap_or(Arguments {
            account: String::new(),
            amount_cents: 0,
            memo: String::new(),
            owner: None,
        })
    }
}

/// What billing does with a request that reached it, by the operation the tool runs: a
/// balance read, an email, an owner change, a delete, or (any other tool) a credit.
fn apply(billing: &mut Billing, operations: &[(&str, &str)], exchange: &Exchange, now_ms: u64) -> Answer {
    let arguments = Arguments::of(&exchange.call);
    let intent = format!("{}/{}", exchange.run, exchange.call.item);
    let operation = operations
        .iter()
        .find(|(tool, _)| *tool == exchange.call.tool.as_str())
        .map_or("credit", |(_, operation)| *operation);
    let record = || RecordRequest {
        account: arguments.account.clone(),
        memo: arguments.memo.clone(),
        owner: arguments.owner.clone(),
        key: exchange.downstream_key.clone(),
        intent: intent.clone(),
        call_key: exchange.key.to_string(),
    };
    match operation {
        "lookup_balance" => billing.balance(&arguments.account),
        "send_email" => billing.records.send_email(&record()),
        "change_owner" => billing.records.change_owner(&record()),
        "delete_record" => billing.records.delete_record(&record()),
        _ => {
            let request = CreditRequest {
                account: arguments.account.clone(),
                amount_cents: arguments.amount_cents,
                memo: arguments.memo.clone(),
                key: exchange.downstream_key.clone(),
                intent: intent.clone(),
            };
            billing.credit(&request, now_ms)
        }
    }
}

/// Billing's answer as the runtime hears it: applied, a repeat of an earlier request, or refused.
fn tool_answer(answer: &Answer) -> ToolAnswer {
    let receipt = answer.receipt();
    match answer {
        Answer::Applied { .. }
        | Answer::Balance { .. }
        | Answer::Emailed { .. }
        | Answer::OwnerSet { .. }
        | Answer::Deleted { .. } => ToolAnswer::Applied { receipt },
        Answer::Repeat { credit_id, .. } => ToolAnswer::Repeat {
            first: credit_id.clone(),
            receipt,
        },
        Answer::Rejected { reason } => ToolAnswer::Rejected {
            reason: reason.clone(),
            receipt,
        },
    }
}
