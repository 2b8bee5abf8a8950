//! See it in a minute: four scenarios against a fake billing system, no network, no database,
//! no API key.
//!
//! 1. A credit applied before the timeout: billing applied it and the answer was lost. The
//!    call is unknown (`indeterminate`), so the runtime asks the tool's reconcile hook, which
//!    finds the credit by its idempotency key, and the run carries on with the real result
//!    as if the timeout never happened. Nothing is paid twice.
//! 2. A credit that never landed: the request was lost on the way, and billing's lookup is
//!    down, so the hook cannot tell. An operator checks billing by hand and settles the call
//!    `failed` (compare-and-set, with a reason); the model then hears it did not take effect, and
//!    from whom and why.
//! 3. A compensation an operator asked for: the credit stands, the operator decides it should
//!    not, and the runtime voids it through the tool's compensation — once.
//! 4. A call refused before anything was sent (the account is locked): recorded `failed`, not
//!    unknown, so there is nothing to reconcile.
//!
//! Each scenario prints the call's history as the ledger holds it, then what billing holds.
//!
//! Run it: `cargo run -p twice-runtime --example reconciliation`.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};

use serde::{Deserialize, Serialize};
use twice_runtime::execution::{Agent, AgentError, Clock, Ending, Exit, Run, moved_on, next_call};
use twice_runtime::executor::Executor;
use twice_runtime::ledger::{ExecutionRecord, HistoryEntry, Ledger, RecordFilter};
use twice_runtime::operator::{
    self, CompensateRequest, CompensationTarget, Effect, HeldLedger, LookupError, ResolveRequest, UndoError,
};
use twice_runtime::run::{Arguments, Decision, RunState, RunStatus, Told};
use twice_runtime::tool::{SideEffect, ToolDeclaration};
use twice_runtime::toolbox::{CallContext, LookedUp, Tool, ToolFailure, Toolbox};
use twice_runtime::worker::{Words, Worker, WorkerSetup};
use twice_runtime::{Error, IdempotencyKey, Status};

/// One credit in billing, kept under the idempotency key it was issued with.
#[derive(Clone, Debug)]
struct Credit {
    id: String,
    account: String,
    amount_cents: u64,
    voided: bool,
}

/// What goes wrong next in billing.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum Fault {
    #[default]
    None,
    /// Billing applies the credit and the answer is lost on the way back.
    LoseAnswer,
    /// The request is lost on the way: billing never sees it.
    LoseRequest,
}

/// A fake billing system that honours idempotency keys, as Stripe does: a second request
/// under a key it holds answers with the first credit and pays nothing.
#[derive(Debug, Default)]
struct Billing {
    credits: BTreeMap<String, Credit>,
    next_fault: Fault,
    lookups_down: bool,
    locked_accounts: Vec<String>,
}

impl Billing {
    fn paid_cents(&self) -> u64 {
        self.credits
            .values()
            .filter(|credit| !credit.voided)
            .map(|credit| credit.amount_cents)
            .sum()
    }

    fn summary(&self) -> String {
        if self.credits.is_empty() {
            return "billing holds no credit".into();
        }
        let credits: Vec<String> = self
            .credits
            .iter()
            .map(|(key, credit)| {
                format!(
                    "{} of {} cents to {} under {key}{}",
                    credit.id,
                    credit.amount_cents,
                    credit.account,
                    if credit.voided { ", voided" } else { "" }
                )
            })
            .collect();
        format!("billing holds {}; {} cents paid", credits.join(", "), self.paid_cents())
    }
}

type Shared = Arc<Mutex<Billing>>;

fn billing(shared: &Shared) -> std::sync::MutexGuard<'_, Billing> {
    shared.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The model's arguments to `issue_credit`.
#[derive(Debug, Serialize, Deserialize)]
struct CreditRequest {
    account: String,
    amount_cents: u64,
}

/// What `issue_credit` returns, recorded in the ledger as JSON.
#[derive(Debug, Serialize)]
struct Receipt {
    credit_id: String,
}

/// The tool: it issues a credit in billing under the call's idempotency key, and its
/// reconcile hook looks a credit up by that key.
struct IssueCredit(Shared);

impl Tool for IssueCredit {
    type Args = CreditRequest;
    type Output = Receipt;
    const NAME: &'static str = "issue_credit";
    const SIDE_EFFECT: SideEffect = SideEffect::External;
    const RECONCILES: bool = true;

    fn declaration(&self) -> ToolDeclaration {
        ToolDeclaration::new(Self::NAME, Self::SIDE_EFFECT)
            .with_reconcile()
            .with_compensation()
    }

    async fn call(&self, request: CreditRequest, context: CallContext<'_>) -> Result<Receipt, ToolFailure> {
        let mut billing = billing(&self.0);
        if billing.locked_accounts.contains(&request.account) {
            return Err(ToolFailure::NotSent(format!("account {} is locked", request.account)));
        }
        let key = context
            .idempotency_key()
            .ok_or_else(|| ToolFailure::NotSent("issue_credit is declared to take the key".into()))?
            .to_string();
        let fault = std::mem::take(&mut billing.next_fault);
        if fault == Fault::LoseRequest {
            return Err(ToolFailure::Unknown("no answer within 5 s".into()));
        }
        let number = billing.credits.len() + 1;
        let credit = billing.credits.entry(key).or_insert_with(|| Credit {
            id: format!("cr_{number:04}"),
            account: request.account,
            amount_cents: request.amount_cents,
            voided: false,
        });
        let receipt = Receipt {
            credit_id: credit.id.clone(),
        };
        if fault == Fault::LoseAnswer {
            return Err(ToolFailure::Unknown("no answer within 5 s".into()));
        }
        Ok(receipt)
    }

    async fn look_up(&self, _request: CreditRequest, context: CallContext<'_>) -> LookedUp<Receipt> {
        let billing = billing(&self.0);
        if billing.lookups_down {
            return LookedUp::CannotTell {
                reason: "billing's lookup endpoint answered 503".into(),
            };
        }
        match billing.credits.get(context.key().as_str()) {
            // The receipt the call itself would have returned: one shape of result.
            Some(credit) => LookedUp::Found {
                output: Receipt {
                    credit_id: credit.id.clone(),
                },
                finding: format!("billing holds {} under {}", credit.id, context.key()),
            },
            None => LookedUp::Absent,
        }
    }
}

/// Billing as the operator's compensation sees it: it finds a credit by the call's key and
/// voids it, once.
struct Voids(Shared);

impl CompensationTarget for Voids {
    fn has_compensation(&self, tool: &str) -> bool {
        tool == IssueCredit::NAME
    }

    fn find_effect(&mut self, record: &ExecutionRecord) -> Result<Effect, LookupError> {
        Ok(match billing(&self.0).credits.get(record.key.as_str()) {
            Some(credit) => Effect::Found {
                reference: credit.id.clone(),
                detail: format!("billing holds {} under {}", credit.id, record.key),
            },
            None => Effect::Absent {
                detail: format!("billing holds no credit under {}", record.key),
            },
        })
    }

    fn undo(&mut self, _record: &ExecutionRecord, reference: &str) -> Result<String, UndoError> {
        let mut billing = billing(&self.0);
        let credit = billing
            .credits
            .values_mut()
            .find(|credit| credit.id == reference)
            .ok_or_else(|| UndoError::Refused(format!("billing holds no credit {reference}")))?;
        credit.voided = true;
        Ok(format!("billing voided {reference}"))
    }
}

/// The model: one refund of 2,500 cents to `account`, then done — whatever it was told.
struct Refund {
    account: &'static str,
}

impl Agent for Refund {
    fn decide(&mut self, state: &RunState) -> Result<(Decision, RunState), AgentError> {
        if state.last_told.is_some() {
            return Ok((
                Decision::Done,
                moved_on(state).ok_or("the item counter is at its limit")?,
            ));
        }
        let arguments = Arguments::from_typed(&CreditRequest {
            account: self.account.into(),
            amount_cents: 2_500,
        })?;
        next_call(state, IssueCredit::NAME, arguments).ok_or_else(|| "a call counter is at its limit".into())
    }
}

/// A clock that moves a millisecond per reading, so the history's times are small and the
/// same on every run.
struct Steps(u64);

impl Clock for Steps {
    fn now_ms(&mut self) -> u64 {
        self.0 += 1;
        self.0
    }
    fn wait_ms(&mut self, duration_ms: u64) {
        self.0 += duration_ms;
    }
}

/// One scenario: billing, the ledger, the run's id and the clock.
struct Scenario {
    billing: Shared,
    ledger: Ledger,
    run_id: &'static str,
    account: &'static str,
    clock: Steps,
}

impl Scenario {
    fn new(run_id: &'static str, account: &'static str, billing: Billing) -> Scenario {
        Scenario {
            billing: Arc::new(Mutex::new(billing)),
            ledger: Ledger::open_memory_store(),
            run_id,
            account,
            clock: Steps(0),
        }
    }

    /// A worker process drives the run as far as it goes (a worker started again after a
    /// crash recovers it from the ledger).
    fn worker(&mut self, worker_id: &str) -> Result<Ending, Error> {
        let mut tools = Toolbox::new().with(IssueCredit(Arc::clone(&self.billing)));
        let setup = WorkerSetup::new(worker_id, self.run_id, tools.declarations());
        let mut executor = Executor::new(self.ledger.connect_again()?, &setup);
        let mut worker = Worker::new(setup)?;
        let mut agent = Refund { account: self.account };
        Run::new(&mut worker, &mut executor)
            .clock(&mut self.clock)
            .drive(&mut agent, &mut tools)
    }

    fn key(&self) -> Result<IdempotencyKey, Error> {
        Ok(IdempotencyKey::per_call(self.run_id, "c1")?)
    }

    fn run_status(&self) -> Result<RunStatus, Error> {
        let checkpoint = self.ledger.load_checkpoint(self.run_id)?;
        Ok(checkpoint
            .and_then(|checkpoint| RunState::from_json(&checkpoint.state).ok())
            .map_or(RunStatus::Running, |state| state.status))
    }

    fn told(&self) -> Result<String, Error> {
        let checkpoint = self.ledger.load_checkpoint(self.run_id)?;
        let state = checkpoint.and_then(|checkpoint| RunState::from_json(&checkpoint.state).ok());
        Ok(state
            .and_then(|state| state.transcript.last().map(|(_, told)| told_words(told)))
            .unwrap_or_else(|| "nothing".into()))
    }

    /// The call's history as the ledger holds it, then the run and billing.
    fn print(&self, lines: &mut Vec<String>) -> Result<(), Error> {
        for entry in self.ledger.history(&self.key()?)? {
            lines.push(history_line(&entry));
        }
        lines.push(format!(
            "  the run is {}; the model was told {}",
            self.run_status()?.name(),
            self.told()?
        ));
        lines.push(format!("  {}", billing(&self.billing).summary()));
        Ok(())
    }
}

fn history_line(entry: &HistoryEntry) -> String {
    let change = match (entry.from_status, entry.to_status) {
        (Some(from), Some(to)) => format!("{from} → {to}"),
        (None, Some(to)) => format!("→ {to}"),
        _ => String::new(),
    };
    let why = entry.reason.as_deref().or(entry.detail.as_deref()).unwrap_or("");
    let line = format!(
        "  {:>3} ms  {:<14} {:<21} {:<28} {why}",
        entry.at_ms,
        entry.actor,
        entry.event.name(),
        change
    );
    line.trim_end().to_owned()
}

/// How a worker's drive ended, in words.
fn ending(ending: &Ending) -> String {
    match ending {
        Ending::Exited(Exit::Completed) => "exited: the run completed".into(),
        Ending::Exited(Exit::Failed { reason }) => format!("exited: the run failed ({reason})"),
        Ending::Exited(Exit::AlreadyOver(status)) => format!("exited: the run was already {}", status.name()),
        Ending::Exited(other) => format!("exited: {other:?}"),
        Ending::Parked(key) => format!("left the run paused on {key}"),
        Ending::StoodDown(_) => "stood down: another worker drives the run".into(),
        Ending::WaitsForPerson(reason) => format!("stopped for a person: {}", (Words::ENGLISH.wait)(reason)),
        Ending::Stopped { reason } => format!("stopped: {reason}"),
    }
}

/// What the model was told last, in words.
fn told_words(told: &Told) -> String {
    let what = if told.compensated() {
        "it took effect and was compensated".to_owned()
    } else if told.did_not_take_effect() {
        "it did not take effect".to_owned()
    } else {
        match told {
            Told::Result { result } => format!("the result {result}"),
            Told::Failed { reason } => format!("it failed ({reason})"),
            // `Told` may grow: what this example does not know it names as the runtime stores it.
            other => format!("{other:?}"),
        }
    };
    match told.operator_decision() {
        Some((operator, reason)) => format!("{what}: {operator} settled it so, because \"{reason}\""),
        None => what,
    }
}

/// 1: billing applied the credit and the answer was lost; the hook finds it.
fn found_by_the_hook(lines: &mut Vec<String>) -> Result<Scenario, Error> {
    lines.push("1. A credit applied before the timeout, found by the reconcile hook".into());
    let mut scenario = Scenario::new(
        "refund-1001",
        "acct_ada",
        Billing {
            next_fault: Fault::LoseAnswer,
            ..Billing::default()
        },
    );
    let ended = scenario.worker("w1")?;
    lines.push(format!("  w1 {}", ending(&ended)));
    scenario.print(lines)?;
    Ok(scenario)
}

/// 2: the request never reached billing and its lookup is down; an operator settles it.
fn settled_failed_by_an_operator(lines: &mut Vec<String>) -> Result<Scenario, Error> {
    lines.push("2. A credit that never landed, settled failed by an operator".into());
    let mut scenario = Scenario::new(
        "refund-1002",
        "acct_bo",
        Billing {
            next_fault: Fault::LoseRequest,
            lookups_down: true,
            ..Billing::default()
        },
    );
    let first = scenario.worker("w1")?;
    lines.push(format!(
        "  w1 {}; the run is {}",
        ending(&first),
        scenario.run_status()?.name()
    ));
    // The operator lists the unknown calls, checks billing's dashboard by hand, finds no
    // credit for the key, and settles the call: compare-and-set on the status it saw.
    let key = scenario.key()?;
    let mut operator_ledger = scenario.ledger.connect_again()?;
    let seen = operator_ledger.record(&key)?.map(|record| record.status);
    let mut request = ResolveRequest::new(
        Status::Failed,
        "no credit under this key in billing's dashboard",
        "op-ana",
    );
    request.expected_status = seen;
    let now_ms = scenario.clock.now_ms();
    operator::resolve(&mut operator_ledger, &key, &request, now_ms)?;
    let second = scenario.worker("w2")?;
    lines.push(format!(
        "  w2 {} (it resumed the run once the call was settled)",
        ending(&second)
    ));
    scenario.print(lines)?;
    Ok(scenario)
}

/// 3: the credit stands; an operator decides it should not and asks for its compensation.
fn compensated_on_request(lines: &mut Vec<String>) -> Result<Scenario, Error> {
    lines.push("3. A compensation an operator asked for".into());
    let mut scenario = Scenario::new("refund-1003", "acct_cy", Billing::default());
    let ended = scenario.worker("w1")?;
    lines.push(format!("  w1 {}", ending(&ended)));
    let key = scenario.key()?;
    let mut operator_ledger = scenario.ledger.connect_again()?;
    let now_ms = scenario.clock.now_ms();
    let request = CompensateRequest::new(&key, "the order was cancelled before it shipped", "op-ana");
    let mut access = HeldLedger {
        ledger: &mut operator_ledger,
        now_ms,
    };
    let mut target = Voids(Arc::clone(&scenario.billing));
    operator::compensate(&mut access, &mut target, &request, &Words::ENGLISH)?;
    // Asked twice (a double click, a retry), it is refused: nothing is voided again.
    let again = operator::compensate(&mut access, &mut target, &request, &Words::ENGLISH);
    scenario.print(lines)?;
    if let Err(refusal) = again {
        lines.push(format!("  the operator asks again: {refusal}"));
    }
    Ok(scenario)
}

/// 4: the account is locked; the tool refuses before sending anything.
fn refused_before_sending(lines: &mut Vec<String>) -> Result<Scenario, Error> {
    lines.push("4. A call refused before anything was sent".into());
    let mut scenario = Scenario::new(
        "refund-1004",
        "acct_di",
        Billing {
            locked_accounts: vec!["acct_di".into()],
            ..Billing::default()
        },
    );
    let ended = scenario.worker("w1")?;
    lines.push(format!("  w1 {}", ending(&ended)));
    scenario.print(lines)?;
    let unknown = scenario.ledger.records(
        RecordFilter::default()
            .with_status(Status::Indeterminate)
            .with_limit(10),
    )?;
    lines.push(format!("  unknown calls left to reconcile: {}", unknown.len()));
    Ok(scenario)
}

/// The four scenarios, as printed lines, and each scenario's end.
fn scenarios() -> Result<(Vec<String>, [Scenario; 4]), Error> {
    let mut lines = Vec::new();
    let one = found_by_the_hook(&mut lines)?;
    lines.push(String::new());
    let two = settled_failed_by_an_operator(&mut lines)?;
    lines.push(String::new());
    let three = compensated_on_request(&mut lines)?;
    lines.push(String::new());
    let four = refused_before_sending(&mut lines)?;
    Ok((lines, [one, two, three, four]))
}

fn main() -> Result<(), Error> {
    let (lines, _) = scenarios()?;
    for line in lines {
        println!("{line}");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(scenario: &Scenario) -> Status {
        let record = scenario.ledger.record(&scenario.key().unwrap()).unwrap();
        record.expect("the call is in the ledger").status
    }

    #[test]
    fn each_scenario_ends_as_the_seed_says_and_nothing_is_paid_twice() {
        let (lines, [one, two, three, four]) = scenarios().expect("the scenarios run");
        let text = lines.join("\n");
        assert_eq!(status(&one), Status::Completed, "{text}");
        assert_eq!(billing(&one.billing).credits.len(), 1, "found, not sent again:\n{text}");
        assert_eq!(billing(&one.billing).paid_cents(), 2_500, "{text}");
        assert_eq!(status(&two), Status::Failed, "{text}");
        // The model hears the operator's decision with who made it and why.
        assert_eq!(
            two.told().unwrap(),
            "it did not take effect: op-ana settled it so, because \"no credit under this key in billing's dashboard\"",
            "{text}"
        );
        assert_eq!(billing(&two.billing).paid_cents(), 0, "{text}");
        assert_eq!(status(&three), Status::Compensated, "{text}");
        assert_eq!(billing(&three.billing).paid_cents(), 0, "{text}");
        assert_eq!(status(&four), Status::Failed, "{text}");
        assert!(billing(&four.billing).credits.is_empty(), "{text}");
        for scenario in [&one, &two, &three, &four] {
            assert_eq!(scenario.run_status().unwrap(), RunStatus::Completed, "{text}");
        }
    }
}
