//! Whatever the untyped path lets a tool say, a typed `Tool` can say too: an answer that is the
//! other system's replay of a key it had seen is heard as a repeat (the first effect stands,
//! nothing applied again), not as a new effect.

use serde::{Deserialize, Serialize};
use twice_runtime::execution::{Agent, AgentError, Ending, Exit, SystemClock, drive_run, moved_on, next_call};
use twice_runtime::executor::Executor;
use twice_runtime::ledger::Ledger;
use twice_runtime::run::{Arguments, Decision, RunState};
use twice_runtime::tool::SideEffect;
use twice_runtime::toolbox::{CallContext, Tool, ToolFailure, Toolbox};
use twice_runtime::worker::{Held, Worker, WorkerSetup};

#[derive(Serialize, Deserialize)]
struct Email {
    to: String,
}

/// The provider's answer: its message id, and whether it replayed an earlier send of this key.
#[derive(Serialize)]
struct Sent {
    message_id: String,
    replayed: bool,
}

/// A provider that already saw every key (a send before a crash went through).
struct Replaying;

impl Tool for Replaying {
    type Args = Email;
    type Output = Sent;
    const NAME: &'static str = "send_email";
    const SIDE_EFFECT: SideEffect = SideEffect::External;

    async fn call(&self, _email: Email, _context: CallContext<'_>) -> Result<Sent, ToolFailure> {
        Ok(Sent {
            message_id: "m-1".into(),
            replayed: true,
        })
    }

    fn repeat_of(output: &Sent) -> Option<String> {
        output.replayed.then(|| output.message_id.clone())
    }
}

/// The same provider, with a tool that does not read the flag.
struct Plain;

impl Tool for Plain {
    type Args = Email;
    type Output = Sent;
    const NAME: &'static str = "send_email";
    const SIDE_EFFECT: SideEffect = SideEffect::External;

    async fn call(&self, email: Email, context: CallContext<'_>) -> Result<Sent, ToolFailure> {
        Replaying.call(email, context).await
    }
}

struct OneEmail;

impl Agent for OneEmail {
    fn decide(&mut self, state: &RunState) -> Result<(Decision, RunState), AgentError> {
        if state.last_told.is_some() {
            return Ok((Decision::Done, moved_on(state).ok_or("no more items")?));
        }
        let email = Arguments::from_typed(&Email {
            to: "ada@example.com".into(),
        })?;
        next_call(state, "send_email", email).ok_or_else(|| "no more calls".into())
    }
}

fn notes_of(tool: impl Tool + 'static) -> Vec<Held> {
    let mut tools = Toolbox::new().with(tool);
    let setup = WorkerSetup::new("worker-1", "welcome", tools.declarations());
    let mut executor = Executor::new(Ledger::open_memory_store(), &setup);
    let mut worker = Worker::new(setup).expect("a usable setup");
    let ending = drive_run(&mut worker, &mut executor, &mut OneEmail, &mut tools, &mut SystemClock).expect("drives");
    assert_eq!(ending, Ending::Exited(Exit::Completed));
    worker.take_notes().into_iter().map(|note| note.held).collect()
}

#[test]
fn a_typed_tool_can_answer_that_the_provider_repeated_the_first_effect() {
    assert!(
        notes_of(Replaying).contains(&Held::FirstAnswerRepeated { first: "m-1".into() }),
        "the runtime heard a repeat"
    );
    assert!(
        !notes_of(Plain)
            .iter()
            .any(|held| matches!(held, Held::FirstAnswerRepeated { .. })),
        "by default an answer is a new effect"
    );
}
