//! What used to panic or happen silently through the public API, each now a typed error or a
//! loud event: a setup the runtime cannot run is refused when the worker is made, an input
//! out of order is an error, a call id reused with other arguments is refused and written in
//! the run's history, and a late answer that contradicts a settlement reaches the driver.

use twice_runtime::ToolAnswer;
use twice_runtime::execution::{
    Agent, AgentError, Attempt, Clock, Ending, Exit, LookUp, Sending, ToolExecution, drive_run, moved_on,
};
use twice_runtime::executor::Executor;
use twice_runtime::key::IdempotencyKey;
use twice_runtime::ledger::{Contradiction, ContradictionSource, HistoryEvent, Ledger, RunEvent};
use twice_runtime::operator::{self, ResolveRequest};
use twice_runtime::rules::{Outcome, Status};
use twice_runtime::run::{Arguments, Decision, RunState, Told, ToolCall};
use twice_runtime::tool::{SideEffect, ToolDeclaration};
use twice_runtime::worker::{Command, Input, InputError, SetupError, ToldFailed, Words, Worker, WorkerSetup};

const RUN: &str = "refund-7";

fn email() -> ToolDeclaration {
    ToolDeclaration::new("send_email", SideEffect::External).with_reconcile()
}

fn setup(tools: Vec<ToolDeclaration>) -> WorkerSetup {
    WorkerSetup::new("w1", RUN, tools)
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

// ----- refused at construction, not a panic later -----

/// A read declared with 5 attempts (or 0) used to panic inside `drive_run`; two tools of
/// one name were accepted and the first won; an empty worker id or tool name panicked in a
/// ledger write.
#[test]
fn a_setup_the_runtime_cannot_run_is_refused_when_the_worker_is_made() {
    for attempts in [0, 5] {
        let read = ToolDeclaration::new("lookup_order", SideEffect::Read).with_attempts(attempts);
        assert!(matches!(
            Worker::new(setup(vec![read])),
            Err(SetupError::Attempts { attempts: given, .. }) if given == attempts
        ));
    }
    let twice = vec![email(), ToolDeclaration::new("send_email", SideEffect::Read)];
    assert!(matches!(
        Worker::new(setup(twice)),
        Err(SetupError::DuplicateTool { name }) if name == "send_email"
    ));
    let unnamed = ToolDeclaration::new("", SideEffect::Read);
    assert!(matches!(
        Worker::new(setup(vec![unnamed])),
        Err(SetupError::Name { what: "tool name", .. })
    ));
    let nobody = WorkerSetup::new("", RUN, vec![email()]);
    let error = Worker::new(nobody).expect_err("an empty worker id");
    assert_eq!(error.to_string(), "the worker id is empty");
    // And the one error type of the crate carries it, for `?`.
    let error: twice_runtime::Error = error.into();
    assert!(matches!(error, twice_runtime::Error::Setup(_)));
}

/// `Worker::handle` used to panic on an input out of order; now it refuses it and decides
/// nothing.
#[test]
fn an_input_out_of_order_is_an_error_and_changes_nothing() {
    let mut worker = Worker::new(setup(vec![email()])).expect("a usable setup");
    assert!(matches!(
        worker.handle(0, Input::BackoffElapsed),
        Err(InputError::OutOfOrder {
            input: "backoff elapsed",
            expected: "start",
            ..
        })
    ));
    assert_eq!(worker.handle(0, Input::Start), Ok(Some(Command::LoadCheckpoint)));
    // A wake-up for a worker that is not parked, an answer to a model nobody asked.
    assert!(matches!(
        worker.handle(1, Input::Woken),
        Err(InputError::OutOfOrder { .. })
    ));
    let decided = Input::ModelDecided {
        decision: Decision::Done,
        state: RunState::default(),
    };
    assert!(matches!(worker.handle(1, decided), Err(InputError::OutOfOrder { .. })));
    // The worker still waits for its checkpoint, and takes it.
    let loaded = Input::CheckpointLoaded {
        version: 0,
        state: None,
        failed_recoveries: None,
    };
    assert!(matches!(worker.handle(2, loaded), Ok(Some(Command::AskModel { .. }))));
}

// ----- a call id reused with other arguments -----

/// A model (or its provider) that reuses `c1` for a second, different email.
struct ReusesCallIds {
    calls: u32,
    /// What the model heard, each time it was asked.
    heard: Vec<Told>,
}

impl Agent for ReusesCallIds {
    fn decide(&mut self, state: &RunState) -> Result<(Decision, RunState), AgentError> {
        self.heard.extend(state.last_told.clone());
        let next = moved_on(state).ok_or("counter at its limit")?;
        if self.calls == 2 {
            return Ok((Decision::Done, next));
        }
        self.calls += 1;
        let to = if self.calls == 1 {
            "ada@example.com"
        } else {
            "bob@example.com"
        };
        let call = ToolCall {
            id: "c1".into(),
            tool: "send_email".into(),
            item: next.item,
            arguments: Arguments::new(serde_json::json!({ "to": to })),
        };
        Ok((Decision::Call(call), next))
    }
}

#[derive(Default)]
struct Mail {
    sent: Vec<String>,
    contradictions: Vec<Contradiction>,
    /// The first answer is lost and an operator decides meanwhile (see `operator`).
    lose_first: bool,
    operator: Option<Ledger>,
}

impl ToolExecution for Mail {
    fn send(&mut self, sending: &Sending<'_>) -> Attempt {
        self.sent.push(sending.call.arguments.value()["to"].to_string());
        let receipt = format!("message {}", self.sent.len());
        if let Some(mut ledger) = self.operator.take() {
            // While the request is out, an operator who cannot see it yet settles the call
            // `failed`, acknowledging it may be in flight; then the answer arrives.
            let mut request = ResolveRequest::new(Status::Failed, "no message in the provider's log", "op-ana");
            request.acknowledge_in_flight = true;
            operator::resolve(&mut ledger, sending.key, &request, 1_000).expect("settled");
        }
        if std::mem::take(&mut self.lose_first) {
            return Attempt::TimedOut;
        }
        Attempt::Answered(ToolAnswer::Applied { receipt })
    }

    fn look_up(&mut self, _key: &IdempotencyKey, _call: &ToolCall) -> LookUp {
        LookUp::CannotTell {
            reason: "the provider has no lookup".into(),
        }
    }

    fn contradicted(&mut self, contradiction: &Contradiction) {
        self.contradictions.push(contradiction.clone());
    }
}

/// Main served the second email the first one's result, silently. Now: not sent, the model
/// hears it was refused, and the run's history says why.
#[test]
fn a_call_id_reused_with_other_arguments_is_refused_and_written_in_the_runs_history() {
    let ledger = Ledger::open_memory_store();
    let observer = ledger.connect_again().unwrap();
    let setup = setup(vec![email()]).with_words(Words::ENGLISH);
    let mut executor = Executor::new(ledger, &setup);
    let mut worker = Worker::new(setup).unwrap();
    let mut mail = Mail::default();
    let mut model = ReusesCallIds {
        calls: 0,
        heard: Vec::new(),
    };
    let ending = drive_run(&mut worker, &mut executor, &mut model, &mut mail, &mut Steps(0)).expect("the run ends");
    assert_eq!(ending, Ending::Exited(Exit::Completed));
    assert_eq!(mail.sent, ["\"ada@example.com\""], "the second email was not sent");
    // The model heard the refusal; the transcript keeps one entry for `c1`, the email it was.
    let told = &worker.run_state().transcript;
    assert_eq!(told.len(), 1, "one entry under one id: {told:?}");
    assert!(matches!(&told[0], (id, Told::Result { .. }) if id == "c1"), "{told:?}");
    assert!(
        matches!(&model.heard[..], [Told::Result { .. }, Told::Failed { .. }]),
        "{:?}",
        model.heard
    );
    assert_eq!(
        model.heard[1],
        Told::Failed {
            reason: (Words::ENGLISH.told_failed)(ToldFailed::CallIdReused)
        }
    );
    let refused = observer.run_history(Some(RUN)).unwrap();
    assert_eq!(refused.len(), 1, "{refused:?}");
    assert_eq!(refused[0].event, RunEvent::ArgumentsRefused);
    let detail = refused[0].detail.as_deref().unwrap();
    assert!(
        detail.contains("bob@example.com") && detail.contains("ada@example.com"),
        "{detail}"
    );
    let key = IdempotencyKey::per_call(RUN, "c1").unwrap();
    let record = observer.record(&key).unwrap().unwrap();
    assert_eq!(record.status, Status::Completed, "the first email's record stands");
}

// ----- a late answer that contradicts a settlement -----

/// An email, once.
struct OneEmail;

impl Agent for OneEmail {
    fn decide(&mut self, state: &RunState) -> Result<(Decision, RunState), AgentError> {
        let next = moved_on(state).ok_or("counter at its limit")?;
        if state.last_told.is_some() || next.item > 0 {
            return Ok((Decision::Done, next));
        }
        twice_runtime::execution::next_call(state, "send_email", Arguments::new(serde_json::json!({"to": "ada"})))
            .ok_or_else(|| "a counter is at its limit".into())
    }
}

/// Main logged the late answer as one more history line. Now the driver hears a typed
/// contradiction and the history writes it as one.
#[test]
fn a_late_answer_that_contradicts_a_settlement_reaches_the_driver_and_the_history() {
    let ledger = Ledger::open_memory_store();
    let observer = ledger.connect_again().unwrap();
    let setup = setup(vec![email()]);
    let mut executor = Executor::new(ledger.connect_again().unwrap(), &setup);
    let mut worker = Worker::new(setup).unwrap();
    let mut mail = Mail {
        operator: Some(ledger.connect_again().unwrap()),
        ..Mail::default()
    };
    drive_run(&mut worker, &mut executor, &mut OneEmail, &mut mail, &mut Steps(0)).expect("the run ends");
    let key = IdempotencyKey::per_call(RUN, "c1").unwrap();
    assert_eq!(mail.contradictions.len(), 1, "{:?}", mail.contradictions);
    let contradiction = &mail.contradictions[0];
    assert_eq!(contradiction.key, key);
    assert_eq!(
        (contradiction.settled, contradiction.says),
        (Status::Failed, Outcome::Completed)
    );
    assert_eq!(contradiction.source, ContradictionSource::LateAnswer { attempt: 1 });
    assert_eq!(
        observer.record(&key).unwrap().unwrap().status,
        Status::Failed,
        "the decision stands"
    );
    let history = observer.history(&key).unwrap();
    assert_eq!(history.last().unwrap().event, HistoryEvent::Contradicted, "{history:?}");
    let listed = observer.contradictions(None, 10).unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].key, key);
}
