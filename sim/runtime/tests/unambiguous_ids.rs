//! A key is `<run_id>:<call_id>`, so `:` inside either part would let two different calls make
//! one key: run `a:b` with call `c`, and run `a` with call `b:c`, both `a:b:c` — the second
//! would be served the first's result and never sent. Such ids are refused where they enter
//! (the worker's setup, the model's call), with a typed error naming the id and the character.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use twice_runtime::execution::{Agent, AgentError, Ending, SystemClock, drive_run};
use twice_runtime::executor::Executor;
use twice_runtime::ids::NameError;
use twice_runtime::key::KeyError;
use twice_runtime::ledger::{Ledger, RecordFilter};
use twice_runtime::run::{Arguments, Decision, RunState, ToolCall};
use twice_runtime::tool::{SideEffect, ToolDeclaration};
use twice_runtime::toolbox::{CallContext, Tool, ToolFailure, Toolbox};
use twice_runtime::worker::{CallRefused, SetupError, WaitReason, Worker, WorkerSetup};
use twice_runtime::{IdempotencyKey, Status};

fn tools() -> Vec<ToolDeclaration> {
    vec![ToolDeclaration::new("send_email", SideEffect::External).with_reconcile()]
}

#[test]
fn a_run_id_or_tenant_with_the_separator_is_refused_when_the_worker_is_made() {
    let refused = Worker::new(WorkerSetup::new("worker-1", "a:b", tools())).expect_err("refused");
    assert_eq!(
        refused,
        SetupError::Name {
            what: "run id",
            problem: NameError::Ambiguous {
                text: "a:b".into(),
                character: ':'
            }
        }
    );
    assert!(refused.to_string().contains("`a:b` holds `:`"), "{refused}");
    let tenant = Worker::new(WorkerSetup::new("worker-1", "a", tools()).with_tenant("acme:eu")).expect_err("refused");
    assert!(matches!(
        tenant,
        SetupError::Name {
            what: "tenant",
            problem: NameError::Ambiguous { character: ':', .. }
        }
    ));
    assert!(Worker::new(WorkerSetup::new("worker-1", "a-b", tools()).with_tenant("acme-eu")).is_ok());
}

#[test]
fn a_key_part_with_the_separator_is_an_error_naming_it() {
    assert_eq!(
        IdempotencyKey::per_call("a:b", "c"),
        Err(KeyError::AmbiguousPart {
            part: "run id",
            text: "a:b".into(),
            character: ':'
        })
    );
    let call = IdempotencyKey::per_call("a", "b:c").expect_err("refused");
    assert_eq!(
        call,
        KeyError::AmbiguousPart {
            part: "tool call id",
            text: "b:c".into(),
            character: ':'
        }
    );
    assert!(call.to_string().contains("tool call id `b:c` holds `:`"), "{call}");
    assert_eq!(IdempotencyKey::per_call("a", "c1").expect("a key").as_str(), "a:c1");
}

/// A model that names its own call id (as a provider's would be).
struct OwnId(&'static str);

impl Agent for OwnId {
    fn decide(&mut self, state: &RunState) -> Result<(Decision, RunState), AgentError> {
        let call = ToolCall {
            id: self.0.into(),
            tool: "send_email".into(),
            item: state.item,
            arguments: Arguments::new(serde_json::json!({"to": "ada@example.com"})),
        };
        Ok((Decision::Call(call), state.clone()))
    }
}

/// Counts sends; answers each.
struct SendEmail(Arc<AtomicU32>);

impl Tool for SendEmail {
    type Args = serde_json::Value;
    type Output = String;
    const NAME: &'static str = "send_email";
    const SIDE_EFFECT: SideEffect = SideEffect::External;

    async fn call(&self, _email: serde_json::Value, _context: CallContext<'_>) -> Result<String, ToolFailure> {
        self.0.fetch_add(1, Ordering::SeqCst);
        Ok("sent".into())
    }
}

#[test]
fn a_model_call_id_with_the_separator_waits_for_a_person_before_anything_is_sent() {
    let ledger = Ledger::open_memory_store();
    let sent = Arc::new(AtomicU32::new(0));
    let mut toolbox = Toolbox::new().with(SendEmail(Arc::clone(&sent)));
    let setup = WorkerSetup::new("worker-1", "a", toolbox.declarations());
    let mut executor = Executor::new(ledger.connect_again().expect("connects"), &setup);
    let mut worker = Worker::new(setup).expect("a usable setup");
    let ending = drive_run(
        &mut worker,
        &mut executor,
        &mut OwnId("b:c"),
        &mut toolbox,
        &mut SystemClock,
    )
    .expect("the run stops cleanly");
    assert_eq!(
        ending,
        Ending::WaitsForPerson(WaitReason::ModelCallRefused(CallRefused::BadKey(
            KeyError::AmbiguousPart {
                part: "tool call id",
                text: "b:c".into(),
                character: ':'
            }
        )))
    );
    assert_eq!(sent.load(Ordering::SeqCst), 0, "nothing sent");
    let listed = ledger
        .records(RecordFilter::default().with_status(Status::Started).with_limit(10))
        .expect("lists");
    assert!(listed.is_empty(), "nothing reserved: {listed:?}");
}
