//! An operator settling an unknown call. `send_email` has no reconcile hook; its answer is
//! lost, so the call is `indeterminate` and the run pauses (`on_indeterminate: pause`) rather
//! than tell the model "failed". An operator checks the mail provider, finds the message and
//! settles the call `completed` with compare-and-set; a worker resumes the run, and the model
//! hears the result — the email is sent once.
//!
//! Run it: `cargo run -p twice-runtime --example operator_settles`.

use twice_runtime::execution::{
    Agent, AgentError, Attempt, Clock, Ending, LookUp, Sending, ToolExecution, drive_run, next_call,
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
}

impl ToolExecution for Mail {
    fn send(&mut self, sending: &Sending<'_>) -> Attempt {
        let receipt = format!(
            "message {} to {}",
            self.delivered.len() + 1,
            sending.call.arguments.value()["to"]
        );
        self.delivered.push(receipt.clone());
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
    let setup = WorkerSetup::new(worker_id, "receipt-ada", tools);
    let mut executor = Executor::new(ledger, &setup);
    let mut worker = Worker::new(setup).expect("the setup names a worker, a run and its tool once each");
    drive_run(&mut worker, &mut executor, &mut OneEmail, mail, clock).expect("the ledger answers")
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

fn main() {
    story();
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
}
