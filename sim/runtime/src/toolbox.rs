//! Typed tools: one type per tool, with typed arguments and a typed result, its declaration
//! coming from the type itself, and a [`Toolbox`] that dispatches a model's call to the tool
//! it names. The runtime stays in charge of the rest: the reservation before the tool runs,
//! the send fence, the key the tool passes on, what a timeout or a refusal means.
//!
//! ```
//! use serde::{Deserialize, Serialize};
//! use twice_runtime::execution::{Attempt, Sending, ToolExecution};
//! use twice_runtime::run::{Arguments, ToolCall};
//! use twice_runtime::tool::SideEffect;
//! use twice_runtime::toolbox::{CallContext, Tool, ToolFailure, Toolbox};
//!
//! #[derive(Deserialize)]
//! struct Email { to: String }
//!
//! #[derive(Serialize)]
//! struct Receipt { message_id: String }
//!
//! // `call` takes `&self`: a batch's calls run at once, so a tool's state is shared.
//! struct SendEmail { sent: std::sync::Mutex<Vec<String>> }
//!
//! impl Tool for SendEmail {
//!     type Args = Email;
//!     type Output = Receipt;
//!     const NAME: &'static str = "send_email";
//!     const SIDE_EFFECT: SideEffect = SideEffect::External;
//!
//!     async fn call(&self, email: Email, context: CallContext<'_>) -> Result<Receipt, ToolFailure> {
//!         // A real tool passes `context.idempotency_key()` to the mail provider.
//!         let mut sent = self.sent.lock().map_err(|_| ToolFailure::NotSent("the outbox broke".into()))?;
//!         sent.push(email.to);
//!         Ok(Receipt { message_id: format!("m-{}", sent.len()) })
//!     }
//! }
//!
//! let mut tools = Toolbox::new().with(SendEmail { sent: Default::default() });
//! assert_eq!(tools.declarations()[0].name, "send_email");
//! let call = ToolCall {
//!     id: "c1".into(),
//!     tool: "send_email".into(),
//!     item: 0,
//!     arguments: Arguments::new(serde_json::json!({"to": "ada@example.com"})),
//! };
//! let key = twice_runtime::IdempotencyKey::per_call("run-1", "c1").unwrap();
//! let sending = Sending { key: &key, downstream_key: Some(&key), call: &call, attempt: 1, recorded_at_ms: 0 };
//! let Attempt::Answered(answer) = tools.send(&sending) else { panic!("sent") };
//! assert_eq!(answer.receipt(), r#"{"message_id":"m-1"}"#);
//! ```

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::answer::ToolAnswer;
use crate::execution::{Attempt, LookUp, Sending, ToolExecution};
use crate::key::IdempotencyKey;
use crate::run::ToolCall;
use crate::tool::{SideEffect, ToolDeclaration};

/// What a tool's call knows about itself: the key to pass downstream, which attempt this is,
/// when the ledger recorded it.
#[derive(Clone, Copy, Debug)]
pub struct CallContext<'a> {
    sending: &'a Sending<'a>,
}

impl<'a> CallContext<'a> {
    /// The call's context, for a tool driven by hand (the toolbox makes it from the send).
    #[must_use]
    pub fn new(sending: &'a Sending<'a>) -> CallContext<'a> {
        CallContext { sending }
    }

    /// The idempotency key to pass to the system the tool changes (`Idempotency-Key`, a
    /// metadata field): `None` for a tool declared to take no key.
    #[must_use]
    pub fn idempotency_key(&self) -> Option<&'a IdempotencyKey> {
        self.sending.downstream_key
    }

    /// The ledger's key of the call (the same text as the idempotency key, whether or not
    /// the tool passes it on).
    #[must_use]
    pub fn key(&self) -> &'a IdempotencyKey {
        self.sending.key
    }

    /// The call as the model made it.
    #[must_use]
    pub fn call(&self) -> &'a ToolCall {
        self.sending.call
    }

    /// Which attempt this is, from 1; 0 inside [`Tool::look_up`], which looks a call up rather
    /// than attempting it.
    #[must_use]
    pub fn attempt(&self) -> u32 {
        self.sending.attempt
    }

    /// When the ledger recorded this attempt as begun: stamp the request with it where the
    /// other system refuses requests that arrive too late (see [`Sending::recorded_at_ms`]).
    #[must_use]
    pub fn recorded_at_ms(&self) -> u64 {
        self.sending.recorded_at_ms
    }
}

/// Why a tool's call did not give a result. Which one decides what the ledger records: only
/// [`ToolFailure::Unknown`] leaves the call's outcome unknown.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ToolFailure {
    /// The tool refused before anything was sent (a token expired, an account is locked):
    /// recorded `failed`, and the call may run again once the problem is fixed.
    #[error("not sent: {0}")]
    NotSent(String),
    /// The other system answered no: a definite refusal, nothing applied. Recorded `failed`.
    #[error("refused: {0}")]
    Rejected(String),
    /// The request left and no answer came (a timeout, a lost connection): it may have taken
    /// effect. Recorded `indeterminate` for anything that changes the world, with these words
    /// in the history line that records it, for the person who settles the call.
    #[error("unknown: {0}")]
    Unknown(String),
}

/// One tool, typed. Its declaration comes from the type ([`Tool::declaration`]); the runtime
/// hands it the call's arguments already read as [`Tool::Args`], and records its
/// [`Tool::Output`] (as JSON) as the call's result.
///
/// Each method returns a future the driver awaits: the async driver awaits it on its task;
/// the synchronous one ([`crate::execution::drive_run`]) runs it to completion on the calling
/// thread, so a tool that needs an async runtime (tokio's I/O) is driven by the async driver.
///
/// A tool's methods take `&self`: the async driver keeps a model turn's calls in flight at
/// once (two calls of one tool among them), as a provider's parallel tool calls are. State a
/// tool changes is shared state (a `Mutex`, an atomic, a client that is already shared).
pub trait Tool: Send + Sync {
    /// The arguments the model gives, read from the call's JSON. Arguments that do not fit
    /// are a call that was never sent ([`ToolFailure::NotSent`] with serde's words).
    type Args: DeserializeOwned + Send;
    /// What the tool returns: the ledger records it as JSON, and the model is told it.
    type Output: Serialize + Send;
    /// The tool's name, as the model calls it.
    const NAME: &'static str;
    /// What the tool does to the world: it sets the retry rule.
    const SIDE_EFFECT: SideEffect;
    /// Whether [`Tool::look_up`] is a reconcile hook: a read-only look-up of a call by its
    /// key in the other system.
    const RECONCILES: bool = false;

    /// The declaration the runtime checks and follows; override it to declare the other
    /// system's terms (key retention, lookup settle time) or a compensation.
    #[must_use]
    fn declaration(&self) -> ToolDeclaration {
        let declaration = ToolDeclaration::new(Self::NAME, Self::SIDE_EFFECT);
        if Self::RECONCILES {
            declaration.with_reconcile()
        } else {
            declaration
        }
    }

    /// Runs the tool once. Pass [`CallContext::idempotency_key`] to the system it changes.
    fn call(
        &self,
        args: Self::Args,
        context: CallContext<'_>,
    ) -> impl Future<Output = Result<Self::Output, ToolFailure>> + Send;

    /// Whether `output` is the other system's answer to a key it had already seen (a
    /// provider's "idempotent replay"): `Some(first)` names the first effect, and the runtime
    /// hears [`ToolAnswer::Repeat`] — the effect stands once, nothing was applied again —
    /// instead of [`ToolAnswer::Applied`]. Put what the provider said in the output (a
    /// `replayed` flag, the first id) and read it here; the default: never a repeat.
    fn repeat_of(output: &Self::Output) -> Option<String> {
        let _ = output;
        None
    }

    /// The reconcile hook (with [`Tool::RECONCILES`]): what the other system holds under the
    /// call's key. A finding is the tool's own [`Tool::Output`], recorded as the call's result
    /// exactly as [`Tool::call`]'s would be, so the result has one shape whichever path
    /// settled the call. The default cannot tell.
    fn look_up(
        &self,
        args: Self::Args,
        context: CallContext<'_>,
    ) -> impl Future<Output = LookedUp<Self::Output>> + Send {
        let _ = (args, context);
        std::future::ready(LookedUp::CannotTell {
            reason: format!("tool `{}` has no reconcile hook", Self::NAME),
        })
    }
}

/// What a typed tool's reconcile hook found under the call's key ([`Tool::look_up`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LookedUp<T> {
    /// The effect is there: the tool's output for it, recorded as the call's result, and what
    /// was found, in words (for the history and the timeline).
    Found {
        /// The call's result, as the tool would have returned it.
        output: T,
        /// What was found, in words.
        finding: String,
    },
    /// The other system answered and holds nothing under the key ([`LookUp::Absent`]).
    Absent,
    /// The hook could not ask, or could not read the answer ([`LookUp::CannotTell`]).
    CannotTell {
        /// Why, in words.
        reason: String,
    },
}

impl<T: Serialize> LookedUp<T> {
    /// The untyped answer the runtime weighs: a finding's output written as the call's
    /// result is written.
    pub fn into_look_up(self) -> LookUp {
        match self {
            LookedUp::Found { output, finding } => LookUp::Found(crate::execution::Found {
                receipt: receipt_of(&output),
                finding,
            }),
            LookedUp::Absent => LookUp::Absent,
            LookedUp::CannotTell { reason } => LookUp::CannotTell { reason },
        }
    }
}

/// A boxed future, for the toolbox's dispatch.
type Boxed<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// A tool with its types erased, so a [`Toolbox`] holds tools of any type.
trait ErasedTool: Send + Sync {
    fn declaration(&self) -> ToolDeclaration;
    fn name(&self) -> &'static str;
    fn send<'a>(&'a self, sending: &'a Sending<'a>) -> Boxed<'a, Attempt>;
    fn look_up<'a>(&'a self, sending: &'a Sending<'a>) -> Boxed<'a, LookUp>;
}

impl<T: Tool> ErasedTool for T {
    fn declaration(&self) -> ToolDeclaration {
        Tool::declaration(self)
    }

    fn name(&self) -> &'static str {
        T::NAME
    }

    fn send<'a>(&'a self, sending: &'a Sending<'a>) -> Boxed<'a, Attempt> {
        Box::pin(async move {
            let args = match sending.call.arguments.to_typed::<T::Args>() {
                Ok(args) => args,
                Err(error) => {
                    return Attempt::NotSent {
                        reason: format!("the arguments do not fit tool `{}`: {error}", T::NAME),
                    };
                }
            };
            match self.call(args, CallContext::new(sending)).await {
                Ok(output) => Attempt::Answered(match T::repeat_of(&output) {
                    Some(first) => ToolAnswer::Repeat {
                        first,
                        receipt: receipt_of(&output),
                    },
                    None => ToolAnswer::Applied {
                        receipt: receipt_of(&output),
                    },
                }),
                Err(ToolFailure::NotSent(reason)) => Attempt::NotSent { reason },
                Err(ToolFailure::Rejected(reason)) => Attempt::Answered(ToolAnswer::Rejected {
                    receipt: reason.clone(),
                    reason,
                }),
                Err(ToolFailure::Unknown(reason)) => Attempt::Unknown { reason },
            }
        })
    }

    fn look_up<'a>(&'a self, sending: &'a Sending<'a>) -> Boxed<'a, LookUp> {
        Box::pin(async move {
            match sending.call.arguments.to_typed::<T::Args>() {
                Ok(args) => Tool::look_up(self, args, CallContext::new(sending))
                    .await
                    .into_look_up(),
                Err(error) => LookUp::CannotTell {
                    reason: format!("the recorded arguments do not fit tool `{}`: {error}", T::NAME),
                },
            }
        })
    }
}

/// The result the ledger records: the output as compact JSON. An output serde cannot write
/// (a map with keys that are not text) is recorded as what serde said: the call did take
/// effect, and that is never hidden.
/// A tool's output as the ledger records it: its JSON (the one shape a call's result has,
/// whether the call, the reconcile hook or an operator settled it).
pub(crate) fn receipt_of(output: &impl Serialize) -> String {
    serde_json::to_string(output).unwrap_or_else(|error| format!("(the tool's result could not be written: {error})"))
}

/// The tools a run may call, each typed, dispatched by name. It is the driver's tool side:
/// [`ToolExecution`] for the synchronous driver, and (feature `tokio`) the async driver's too.
#[derive(Default)]
pub struct Toolbox {
    tools: Vec<Box<dyn ErasedTool>>,
}

impl std::fmt::Debug for Toolbox {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("Toolbox")
            .field("tools", &self.tools.iter().map(|tool| tool.name()).collect::<Vec<_>>())
            .finish()
    }
}

impl Toolbox {
    /// An empty toolbox.
    #[must_use]
    pub fn new() -> Toolbox {
        Toolbox::default()
    }

    /// The toolbox with `tool` added. Two tools of one name are refused where the
    /// declarations are checked ([`crate::worker::Worker::new`]), not silently shadowed.
    #[must_use]
    pub fn with(mut self, tool: impl Tool + 'static) -> Toolbox {
        self.tools.push(Box::new(tool));
        self
    }

    /// Every tool's declaration, in the order they were added: the run's
    /// [`crate::worker::WorkerSetup::tools`].
    #[must_use]
    pub fn declarations(&self) -> Vec<ToolDeclaration> {
        self.tools.iter().map(|tool| tool.declaration()).collect()
    }

    /// The key a look-up's context offers the hook: the call's, when its tool is declared to
    /// pass one downstream (as its sends did), none otherwise.
    pub(crate) fn downstream_key<'a>(&self, key: &'a IdempotencyKey, call: &ToolCall) -> Option<&'a IdempotencyKey> {
        let passes = self
            .tools
            .iter()
            .find(|tool| tool.name() == call.tool.as_str())
            .is_some_and(|tool| tool.declaration().takes_key);
        passes.then_some(key)
    }

    fn tool(&self, name: &str) -> Option<&dyn ErasedTool> {
        self.tools.iter().find(|tool| tool.name() == name).map(|tool| &**tool)
    }

    /// Sends one attempt of the call to the tool it names (its future, for an async driver).
    pub fn send_async<'a>(&'a self, sending: &'a Sending<'a>) -> impl Future<Output = Attempt> + Send + 'a {
        let tool = sending.call.tool.as_str();
        let future = self.tool(tool).map(|found| found.send(sending));
        let reason = format!("no tool `{tool}` in the toolbox; nothing was sent");
        async move {
            match future {
                Some(future) => future.await,
                None => Attempt::NotSent { reason },
            }
        }
    }

    /// Looks the call up with its tool's reconcile hook (its future, for an async driver).
    /// `looking` is what the driver knows of the send looked for ([`Sending::looking_up`]);
    /// the hook's context also offers the call's key to pass on when its tool is declared to
    /// take one, as its sends did.
    pub fn look_up_async<'a>(&'a self, looking: &Sending<'a>) -> impl Future<Output = LookUp> + Send + 'a {
        let tool = looking.call.tool.as_str();
        let reason = format!("no tool `{tool}` in the toolbox");
        let context = Sending {
            downstream_key: self.downstream_key(looking.key, looking.call),
            ..*looking
        };
        let found = self.tool(tool);
        async move {
            match found {
                Some(found) => found.look_up(&context).await,
                None => LookUp::CannotTell { reason },
            }
        }
    }
}

impl ToolExecution for Toolbox {
    fn send(&mut self, sending: &Sending<'_>) -> Attempt {
        block_on(self.send_async(sending))
    }

    fn look_up(&mut self, key: &IdempotencyKey, call: &ToolCall) -> LookUp {
        self.look_up_sent(&Sending::looking_up(key, call, 0))
    }

    fn look_up_sent(&mut self, looking: &Sending<'_>) -> LookUp {
        block_on(self.look_up_async(looking))
    }
}

/// Wakes the thread that waits on a future.
struct ThreadWaker(std::thread::Thread);

impl Wake for ThreadWaker {
    fn wake(self: Arc<Self>) {
        self.0.unpark();
    }
}

/// Runs `future` to completion on this thread: the synchronous driver's way to call a typed
/// tool. A future that needs an async runtime's reactor must be driven by the async driver.
fn block_on<F: Future>(future: F) -> F::Output {
    let mut future = std::pin::pin!(future);
    let waker = Waker::from(Arc::new(ThreadWaker(std::thread::current())));
    let mut context = Context::from_waker(&waker);
    loop {
        if let Poll::Ready(output) = future.as_mut().poll(&mut context) {
            return output;
        }
        std::thread::park();
    }
}
