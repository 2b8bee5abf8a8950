//! An operator settling an unknown call. `send_email` has no reconcile hook; its answer is
//! lost, so the call is `indeterminate` and the run pauses (`on_indeterminate: pause`) rather
//! than tell the model "failed". An operator checks the mail provider, finds the message and
//! settles the call `completed` with compare-and-set; a worker resumes the run, and the model
//! hears the result — the email is sent once.
//!
//! Then the same call when the worker dies right after its send (no answer recorded at all):
//! its replacement, told the dead worker is gone (`WorkerSetup::replacing`), records the call
//! `indeterminate` instead of leaving it `started`, so the operator finds it the same way and
//! settles it without acknowledging a request in flight. A process restarted under its own
//! worker id does the same without being told.
//!
//! Run it: `cargo run -p twice-runtime --example operator_settles`.

use twice_runtime::execution::{
    Agent, AgentError, Attempt, Clock, Ending, LookUp, Run, Sending, ToolExecution, next_call,
};
use twice_runtime::executor::Executor;
use twice_runtime::key::IdempotencyKey;
use twice_runtime::ledger::{Ledger, RecordFilter};
use twice_runtime::operator::{self, ResolveRequest};
use twice_runtime::run::{Arguments, Decision, RunState, RunStatus, ToolCall};
use twice_runtime::tool::{SideEffect, ToolDeclaration};
use twice_runtime::worker::{Worker, WorkerSetup, counted};
use twice_runtime::{Status, ToolAnswer};

/// The mail provider: it delivers, and the first answer is lost on the way back.
struct Mail {
    delivered: Vec<String>,
    lose_answer: bool,
    /// The worker's process dies right after the provider delivered (a panic stands in for
    /// the SIGKILL: nothing after it runs, so no outcome is recorded).
    dies_after_send: bool,
}

impl ToolExecution for Mail {
    fn send(&mut self, sending: &Sending<'_>) -> Attempt {
        let receipt = format!(
            "message {} to {}",
            self.delivered.len() + 1,
            sending.call.arguments.value()["to"]
        );
        self.delivered.push(receipt.clone());
        if std::mem::take(&mut self.dies_after_send) {
            std::panic::resume_unwind(Box::new("SIGKILL"));
        }
        if std::mem::take(&mut self.lose_answer) {
            return Attempt::TimedOut;
        }
        Attempt::Answered(ToolAnswer::Applied { receipt })
    }

    fn look_up(&mut self, _key: &IdempotencyKey, _call: &ToolCall) -> LookUp {
        unreachable!("send_email declares no reconcile hook")
    }
}

struct OneEmail;

impl Agent for OneEmail {
    fn decide(&mut self, state: &RunState) -> Result<(Decision, RunState), AgentError> {
        if state.last_told.is_some() {
            let next = twice_runtime::execution::moved_on(state).ok_or("item counter at its limit")?;
            return Ok((Decision::Done, next));
        }
        let arguments = Arguments::new(serde_json::json!({"to": "ada@example.com", "subject": "Receipt"}));
        next_call(state, "send_email", arguments).ok_or_else(|| "a counter is at its limit".into())
    }
}

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

fn run(ledger: Ledger, worker_id: &str, mail: &mut Mail, clock: &mut Steps) -> Ending {
    let tools = vec![ToolDeclaration::new("send_email", SideEffect::External)];
    run_as(ledger, WorkerSetup::new(worker_id, "receipt-ada", tools), mail, clock)
}

fn run_as(ledger: Ledger, setup: WorkerSetup, mail: &mut Mail, clock: &mut Steps) -> Ending {
    let mut executor = Executor::new(ledger, &setup);
    let mut worker = Worker::new(setup).expect("the setup names a worker, a run and its tool once each");
    Run::new(&mut worker, &mut executor)
        .clock(clock)
        .drive(&mut OneEmail, mail)
        .expect("the ledger answers")
}

fn run_status(ledger: &Ledger) -> RunStatus {
    let checkpoint = ledger
        .load_checkpoint("receipt-ada")
        .expect("read")
        .expect("a checkpoint");
    RunState::from_json(&checkpoint.state).expect("parses").status
}

/// The whole story; returns the run's status after the pause and at the end, and the mail.
fn story() -> (RunStatus, RunStatus, Mail) {
    let ledger = Ledger::open_memory_store();
    let mut operator_ledger = ledger.connect_again().expect("a connection");
    let mut mail = Mail {
        delivered: Vec::new(),
        lose_answer: true,
        dies_after_send: false,
    };
    let mut clock = Steps(0);
    let first = run(
        ledger.connect_again().expect("a connection"),
        "w1",
        &mut mail,
        &mut clock,
    );
    let paused = run_status(&ledger);
    println!("w1 ended {first:?}; the run is {}", paused.name());

    // The operator lists what is unknown, checks the provider, and settles with compare-and-set.
    let unknown = operator_ledger
        .records(
            RecordFilter::default()
                .with_status(Status::Indeterminate)
                .with_limit(10),
        )
        .expect("listed");
    let key = unknown[0].key.clone();
    let mut request = ResolveRequest::new(
        Status::Completed,
        "the provider's log shows the message was delivered",
        "op-ana",
    );
    request.expected_status = Some(Status::Indeterminate);
    request.result = Some(mail.delivered[0].clone());
    let settled = operator::resolve(&mut operator_ledger, &key, &request, clock.now_ms()).expect("settled");
    println!("op-ana settled {key}: {}", settled.status);

    let second = run(
        ledger.connect_again().expect("a connection"),
        "w2",
        &mut mail,
        &mut clock,
    );
    let finished = run_status(&ledger);
    println!(
        "w2 ended {second:?}; the run is {}; {} sent",
        finished.name(),
        counted(mail.delivered.len() as u64, "email", "emails")
    );
    (paused, finished, mail)
}

/// The worker dies after its send; its replacement parks on the call, recorded
/// `indeterminate`; the operator settles it. Returns the call's status as the operator found
/// it, the run's status at the end, and the mail.
fn crash_story() -> (Status, RunStatus, Mail) {
    let ledger = Ledger::open_memory_store();
    let mut operator_ledger = ledger.connect_again().expect("a connection");
    let mut mail = Mail {
        delivered: Vec::new(),
        lose_answer: false,
        dies_after_send: true,
    };
    let mut clock = Steps(0);
    let quiet = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let died = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        run(
            ledger.connect_again().expect("a connection"),
            "w1",
            &mut mail,
            &mut clock,
        )
    }));
    std::panic::set_hook(quiet);
    assert!(died.is_err(), "w1 died after its send");
    println!("w1 died after the provider delivered; nothing recorded its answer");

    // The supervisor saw w1 exit, so the worker it starts next replaces w1.
    let tools = vec![ToolDeclaration::new("send_email", SideEffect::External)];
    let setup = WorkerSetup::new("w2", "receipt-ada", tools).replacing("w1");
    let second = run_as(
        ledger.connect_again().expect("a connection"),
        setup,
        &mut mail,
        &mut clock,
    );
    println!(
        "w2 (replacing w1) ended {second:?}; the run is {}",
        run_status(&ledger).name()
    );

    let unknown = operator_ledger
        .records(RecordFilter::default().with_status(Status::Indeterminate))
        .expect("listed");
    let found = unknown[0].status;
    let key = unknown[0].key.clone();
    let request = ResolveRequest::new(
        Status::Completed,
        "the provider's log shows the message was delivered",
        "op-ana",
    )
    .with_expected_status(Status::Indeterminate)
    .with_result(mail.delivered[0].clone());
    operator::resolve(&mut operator_ledger, &key, &request, clock.now_ms()).expect("settled");
    println!("op-ana settled {key} ({found} when listed): completed");

    let third = run(
        ledger.connect_again().expect("a connection"),
        "w3",
        &mut mail,
        &mut clock,
    );
    let finished = run_status(&ledger);
    println!(
        "w3 ended {third:?}; the run is {}; {} sent",
        finished.name(),
        counted(mail.delivered.len() as u64, "email", "emails")
    );
    (found, finished, mail)
}

fn main() {
    story();
    println!();
    crash_story();
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_operator_settles_the_unknown_call_and_the_email_is_sent_once() {
        let (paused, finished, mail) = super::story();
        assert!(
            matches!(paused, super::RunStatus::AwaitingReconciliation { .. }),
            "{paused:?}"
        );
        assert_eq!(finished, super::RunStatus::Completed);
        assert_eq!(mail.delivered.len(), 1, "{:?}", mail.delivered);
    }

    #[test]
    fn after_a_crash_the_replacement_records_the_call_unknown_and_the_operator_settles_it() {
        let (found, finished, mail) = super::crash_story();
        assert_eq!(found, super::Status::Indeterminate);
        assert_eq!(finished, super::RunStatus::Completed);
        assert_eq!(mail.delivered.len(), 1, "{:?}", mail.delivered);
    }
}
