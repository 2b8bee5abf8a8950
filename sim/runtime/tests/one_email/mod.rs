//! What the tests of one email share: the email's arguments, a tool that sends it into an
//! outbox (and can die right after, a panic standing in for SIGKILL), a model that makes the
//! one call and then ends the run, and a start of a worker with the synchronous driver.

#![allow(dead_code, reason = "each test file uses the part it needs")]

use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};
use twice_runtime::execution::{Agent, AgentError, Ending, SystemClock, drive_run, moved_on, next_call};
use twice_runtime::executor::Executor;
use twice_runtime::ledger::Ledger;
use twice_runtime::run::{Arguments, Decision, RunState, Told};
use twice_runtime::tool::SideEffect;
use twice_runtime::toolbox::{CallContext, Tool, ToolFailure, Toolbox};
use twice_runtime::worker::{Worker, WorkerSetup};

#[derive(Serialize, Deserialize)]
pub struct Email {
    pub to: String,
}

/// The email to Ada, as a call's arguments.
pub fn to_ada() -> Result<Arguments, AgentError> {
    Ok(Arguments::from_typed(&Email {
        to: "ada@example.com".into(),
    })?)
}

/// Sends into a shared outbox; when told, the process dies right after the send.
pub struct SendEmail {
    pub outbox: Arc<Mutex<Vec<String>>>,
    pub dies_after_send: bool,
}

impl Tool for SendEmail {
    type Args = Email;
    type Output = String;
    const NAME: &'static str = "send_email";
    const SIDE_EFFECT: SideEffect = SideEffect::External;

    async fn call(&self, email: Email, _context: CallContext<'_>) -> Result<String, ToolFailure> {
        self.outbox
            .lock()
            .map_err(|_| ToolFailure::NotSent("poisoned".into()))?
            .push(email.to);
        assert!(!self.dies_after_send, "SIGKILL after the email left");
        Ok("sent".into())
    }
}

/// The model: one call to `tool` with the email to Ada; told how it went, it ends the run —
/// done, or failed for `fails` — and keeps what it was told.
pub struct OneEmail {
    pub tool: &'static str,
    pub fails: Option<&'static str>,
    pub told: Vec<Told>,
}

impl Default for OneEmail {
    fn default() -> OneEmail {
        OneEmail {
            tool: "send_email",
            fails: None,
            told: Vec::new(),
        }
    }
}

impl Agent for OneEmail {
    fn decide(&mut self, state: &RunState) -> Result<(Decision, RunState), AgentError> {
        let Some(told) = &state.last_told else {
            return next_call(state, self.tool, to_ada()?).ok_or_else(|| "no more calls".into());
        };
        self.told.push(told.clone());
        let next = moved_on(state).ok_or("no more items")?;
        match self.fails {
            Some(reason) => Ok((Decision::FailRun { reason: reason.into() }, next)),
            None => Ok((Decision::Done, next)),
        }
    }
}

/// Starts a worker made from `setup` (its tools declared by `tools`) on `ledger`, and drives
/// its run to its end with the synchronous driver.
pub fn drive(ledger: &Ledger, mut setup: WorkerSetup, tools: &mut Toolbox, model: &mut dyn Agent) -> Ending {
    setup.tools = tools.declarations();
    let mut executor = Executor::new(ledger.connect_again().expect("connects"), &setup);
    let mut worker = Worker::new(setup).expect("a usable setup");
    drive_run(&mut worker, &mut executor, model, tools, &mut SystemClock).expect("drives")
}
