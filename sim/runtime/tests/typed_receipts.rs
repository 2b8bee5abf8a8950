//! Typed receipts: a typed tool's reconcile hook returns its own `Output`, and an operator can
//! settle with a typed result. The call's recorded result has one shape — the tool's output as
//! JSON — whether the call itself, the hook or an operator settled it, so the model always
//! hears the same thing.

use serde::Serialize;
use twice_runtime::execution::{Ending, Exit};
use twice_runtime::ledger::Ledger;
use twice_runtime::operator::{ResolveRequest, resolve};
use twice_runtime::run::Told;
use twice_runtime::tool::SideEffect;
use twice_runtime::toolbox::{CallContext, LookedUp, Tool, ToolFailure, Toolbox};
use twice_runtime::worker::WorkerSetup;
use twice_runtime::{IdempotencyKey, Status};

mod one_email;
use one_email::{Email, OneEmail};

#[derive(Serialize)]
struct Sent {
    message_id: String,
    replayed: bool,
}

/// Delivers, then loses the answer; its hook finds the message by key when told to.
struct SendEmail {
    lose_answer: bool,
    hook_finds: bool,
}

impl Tool for SendEmail {
    type Args = Email;
    type Output = Sent;
    const NAME: &'static str = "send_email";
    const SIDE_EFFECT: SideEffect = SideEffect::External;
    const RECONCILES: bool = true;

    async fn call(&self, _email: Email, _context: CallContext<'_>) -> Result<Sent, ToolFailure> {
        if self.lose_answer {
            return Err(ToolFailure::Unknown("connection reset after the request left".into()));
        }
        Ok(sent())
    }

    async fn look_up(&self, _email: Email, context: CallContext<'_>) -> LookedUp<Sent> {
        if !self.hook_finds {
            return LookedUp::CannotTell {
                reason: "the provider's search is down".into(),
            };
        }
        LookedUp::Found {
            output: sent(),
            finding: format!("the provider holds msg-1 under {}", context.key()),
        }
    }
}

fn sent() -> Sent {
    Sent {
        message_id: "msg-1".into(),
        replayed: false,
    }
}

fn drive(ledger: &Ledger, run: &str, tool: SendEmail, model: &mut OneEmail) -> Ending {
    let setup = WorkerSetup::new("worker-1", run, Vec::new());
    one_email::drive(ledger, setup, &mut Toolbox::new().with(tool), model)
}

/// What the model hears of the email, by which path settles it.
fn heard(lose_answer: bool, hook_finds: bool, operator: bool) -> String {
    let mut ledger = Ledger::open_memory_store();
    let mut model = OneEmail::default();
    let run = "receipt-ada";
    let tool = || SendEmail {
        lose_answer,
        hook_finds,
    };
    let first = drive(&ledger, run, tool(), &mut model);
    if operator {
        let key = IdempotencyKey::per_call(run, "c1").expect("a key");
        assert_eq!(first, Ending::Parked(key.clone()));
        let request = ResolveRequest::new(Status::Completed, "the provider's log shows msg-1", "op-ana")
            .with_typed_result(&sent())
            .expect("JSON");
        resolve(&mut ledger, &key, &request, 5).expect("settled");
        assert_eq!(drive(&ledger, run, tool(), &mut model), Ending::Exited(Exit::Completed));
    } else {
        assert_eq!(first, Ending::Exited(Exit::Completed));
    }
    match model.told.as_slice() {
        [Told::Result { result }] => result.clone(),
        other => panic!("told one result, not {other:?}"),
    }
}

#[test]
fn the_call_the_hook_and_the_operator_record_one_shape_of_result() {
    let by_the_call = heard(false, false, false);
    assert_eq!(by_the_call, r#"{"message_id":"msg-1","replayed":false}"#);
    assert_eq!(heard(true, true, false), by_the_call, "found by the hook");
    assert_eq!(heard(true, false, true), by_the_call, "settled by an operator");
}

/// A hook's context offers the idempotency key only when the tool passes one downstream, as
/// its sends did: a tool declared without a key is not handed one to look up by.
#[test]
fn a_hooks_context_offers_the_key_only_to_a_tool_that_passes_it() {
    use std::sync::{Arc, Mutex};
    use twice_runtime::ToolDeclaration;
    use twice_runtime::execution::ToolExecution;
    use twice_runtime::run::{Arguments, ToolCall};

    /// Notes whether its hook was handed a key.
    struct Lookup {
        keyed: bool,
        offered: Arc<Mutex<Vec<bool>>>,
    }

    impl Tool for Lookup {
        type Args = serde_json::Value;
        type Output = String;
        const NAME: &'static str = "find_order";
        const SIDE_EFFECT: SideEffect = SideEffect::Read;
        const RECONCILES: bool = true;

        fn declaration(&self) -> ToolDeclaration {
            let declaration = ToolDeclaration::new(Self::NAME, Self::SIDE_EFFECT).with_reconcile();
            if self.keyed {
                declaration
            } else {
                declaration.without_key()
            }
        }

        async fn call(&self, _args: serde_json::Value, _context: CallContext<'_>) -> Result<String, ToolFailure> {
            Ok("order 7".into())
        }

        async fn look_up(&self, _args: serde_json::Value, context: CallContext<'_>) -> LookedUp<String> {
            if let Ok(mut offered) = self.offered.lock() {
                offered.push(context.idempotency_key().is_some());
            }
            LookedUp::Absent
        }
    }

    let offered = Arc::new(Mutex::new(Vec::new()));
    let key = IdempotencyKey::per_call("run-1", "c1").expect("a key");
    let call = ToolCall {
        id: "c1".into(),
        tool: "find_order".into(),
        item: 0,
        arguments: Arguments::new(serde_json::json!({})),
    };
    for keyed in [true, false] {
        let mut tools = Toolbox::new().with(Lookup {
            keyed,
            offered: Arc::clone(&offered),
        });
        ToolExecution::look_up(&mut tools, &key, &call);
    }
    assert_eq!(*offered.lock().expect("notes"), [true, false]);
}
