//! A tool that cannot tell whether its request took effect says why
//! (`ToolFailure::Unknown("timeout after 30s")`, or `Attempt::Unknown` from a hand-written
//! `ToolExecution`). The reason is kept: in the history line that records the call
//! `indeterminate`, which is what the person who settles the call reads — and it is not the
//! call's result, which an operator's settlement would otherwise hand the model.

use serde::Serialize;
use twice_runtime::execution::{Ending, Exit};
use twice_runtime::ledger::{HistoryEvent, Ledger};
use twice_runtime::operator::{ResolveRequest, resolve};
use twice_runtime::rules::Outcome;
use twice_runtime::run::Told;
use twice_runtime::tool::SideEffect;
use twice_runtime::toolbox::{CallContext, Tool, ToolFailure, Toolbox};
use twice_runtime::worker::WorkerSetup;
use twice_runtime::{IdempotencyKey, Status};

mod one_email;
use one_email::{Email, OneEmail};

const RUN: &str = "welcome-ada";

#[derive(Serialize)]
struct Sent {
    message_id: String,
}

/// The provider took the email; the answer never came back.
struct SendEmail;

impl Tool for SendEmail {
    type Args = Email;
    type Output = Sent;
    const NAME: &'static str = "send_email";
    const SIDE_EFFECT: SideEffect = SideEffect::External;

    async fn call(&self, _email: Email, _context: CallContext<'_>) -> Result<Sent, ToolFailure> {
        Err(ToolFailure::Unknown("timeout after 30s".into()))
    }
}

fn drive(ledger: &Ledger, worker_id: &str, model: &mut OneEmail) -> Ending {
    let setup = WorkerSetup::new(worker_id, RUN, Vec::new());
    one_email::drive(ledger, setup, &mut Toolbox::new().with(SendEmail), model)
}

#[test]
fn the_tools_reason_is_in_the_history_line_and_not_the_result() {
    let mut ledger = Ledger::open_memory_store();
    let key = IdempotencyKey::per_call(RUN, "c1").expect("a key");
    let mut model = OneEmail::default();
    assert_eq!(drive(&ledger, "worker-1", &mut model), Ending::Parked(key.clone()));

    let record = ledger.record(&key).expect("reads").expect("recorded");
    assert_eq!((record.status, record.result.as_deref()), (Status::Indeterminate, None));
    let history = ledger.history(&key).expect("reads");
    let line = history
        .iter()
        .find(|entry| entry.event == HistoryEvent::Outcome(Outcome::Indeterminate))
        .expect("the outcome's line");
    assert_eq!(line.detail.as_deref(), Some("timeout after 30s"));

    // Settled `completed` with no receipt: the model is not handed the timeout's words as
    // the email's result.
    let request = ResolveRequest::new(Status::Completed, "the provider's log shows it sent", "op-ana")
        .with_expected_status(Status::Indeterminate);
    resolve(&mut ledger, &key, &request, 5).expect("settled");
    assert_eq!(drive(&ledger, "worker-2", &mut model), Ending::Exited(Exit::Completed));
    let Some(Told::Result { result }) = model.told.last() else {
        panic!("told a result, not {:?}", model.told);
    };
    assert!(!result.contains("timeout"), "{result}");
}
