//! A model provider's agent loop on the runtime, with the provider mocked: one turn holds two
//! parallel tool calls with the provider's own ids (`call_abc…`), the next turn answers.
//!
//! Where things live:
//! - **The runtime's call ids** (`c1`, `c2`) come from the run's counter (`next_calls`), so a
//!   recovered run makes the same keys and meets the same ledger records. The provider's ids
//!   are new every time it is asked; they are never keys.
//! - **The conversation** — the provider's messages, its call ids, tool names and arguments,
//!   and which runtime id each provider id became — is the agent's own state, kept in
//!   [`RunState::application`]: saved with the checkpoint, handed back after a crash.
//! - **What each call came to** is the runtime's transcript, by runtime id. Each turn the agent
//!   moves the newest entries into its conversation as `tool` messages under the provider's
//!   id, so the prompt is rebuilt from the checkpoint alone and the transcript's limit
//!   ([`twice_runtime::run::TRANSCRIPT_MAX`]) never loses a message.
//!
//! The first worker dies while the email's request is out (its future is dropped, as a
//! SIGKILL would end it). The worker restarted under the same id loads the last checkpoint,
//! which predates the turn, so the provider is asked again: new provider ids, the same `c1` and
//! `c2`. The order lookup comes back from the ledger; the email, whose outcome nobody recorded,
//! is recorded unknown and found by the reconcile hook under its key. One email is sent, and
//! the prompt holds the one turn that counts, each result under the id the provider gave it.
//!
//! The async driver keeps the turn's two calls in flight at once (the order lookup and the
//! email are out together) and records each as it answers; each call still has its own key,
//! reservation and outcome.
//!
//! Run it: `cargo run -p twice-runtime --example llm_agent --features tokio`.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::json;
use twice_runtime::driver::{AsyncAgent, AsyncRun};
use twice_runtime::execution::{AgentError, Ending, moved_on, next_calls};
use twice_runtime::executor::Executor;
use twice_runtime::ledger::Ledger;
use twice_runtime::run::{Arguments, Decision, RunState, Told};
use twice_runtime::tool::SideEffect;
use twice_runtime::toolbox::{CallContext, LookedUp, Tool, ToolFailure, Toolbox};
use twice_runtime::worker::{Worker, WorkerSetup};

/// A chat message as providers shape them: a tool result answers a provider call id.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "snake_case")]
enum Message {
    User {
        content: String,
    },
    Assistant {
        content: String,
        tool_calls: Vec<ProviderCall>,
    },
    Tool {
        tool_call_id: String,
        content: String,
    },
}

/// One tool call as the provider returns it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct ProviderCall {
    id: String,
    name: String,
    arguments: serde_json::Value,
}

/// The mocked provider: parallel calls until it has their results, then an answer. Every
/// request gets fresh call ids, as a real provider's do.
#[derive(Default)]
struct MockProvider {
    requests: u32,
}

impl MockProvider {
    fn complete(&mut self, messages: &[Message]) -> Message {
        self.requests += 1;
        if messages.iter().any(|message| matches!(message, Message::Tool { .. })) {
            return Message::Assistant {
                content: "Order 7 has shipped, and Ada has an email saying so.".into(),
                tool_calls: Vec::new(),
            };
        }
        let turn = self.requests;
        Message::Assistant {
            content: String::new(),
            tool_calls: vec![
                ProviderCall {
                    id: format!("call_abc{turn}"),
                    name: "lookup_order".into(),
                    arguments: json!({"order": 7}),
                },
                ProviderCall {
                    id: format!("call_def{turn}"),
                    name: "send_email".into(),
                    arguments: json!({"to": "ada@example.com", "subject": "Your order 7 has shipped"}),
                },
            ],
        }
    }
}

/// The agent's own state, saved in the checkpoint as `RunState::application`.
#[derive(Debug, Default, Serialize, Deserialize)]
struct Conversation {
    /// The prompt so far, in the provider's words.
    messages: Vec<Message>,
    /// Each provider call id of the turns above, and the runtime call id it became.
    runtime_ids: Vec<(String, String)>,
}

impl Conversation {
    /// Adds a `tool` message for every call the transcript has an answer for and the
    /// conversation does not yet.
    fn hear(&mut self, transcript: &[(String, Told)]) {
        for (provider_id, runtime_id) in &self.runtime_ids {
            let answered = self
                .messages
                .iter()
                .any(|message| matches!(message, Message::Tool { tool_call_id, .. } if tool_call_id == provider_id));
            let told = transcript.iter().rev().find(|(id, _)| id == runtime_id);
            if let (false, Some((_, told))) = (answered, told) {
                self.messages.push(Message::Tool {
                    tool_call_id: provider_id.clone(),
                    content: words(told),
                });
            }
        }
    }
}

/// What the model reads of a call's end.
fn words(told: &Told) -> String {
    // An operator's settlement comes with who decided and why: the model can pass it on.
    let by = told
        .operator_decision()
        .map(|(operator, reason)| format!(" (settled by operator {operator}: {reason})"))
        .unwrap_or_default();
    match told {
        Told::Result { result } => result.clone(),
        Told::Failed { reason } => format!("error: {reason}"),
        _ if told.compensated() => format!("the call took effect and was undone{by}"),
        _ if told.did_not_take_effect() => format!("error: the call did not take effect{by}"),
        // `Told` may grow; whatever else it says, nothing of the call stands.
        _ => format!("error: the call did not stand{by}"),
    }
}

struct Agent {
    provider: MockProvider,
}

impl AsyncAgent for Agent {
    async fn decide(&mut self, state: &RunState) -> Result<(Decision, RunState), AgentError> {
        let mut conversation: Conversation = if state.application.is_null() {
            Conversation {
                messages: vec![Message::User {
                    content: "Tell Ada whether order 7 has shipped.".into(),
                }],
                runtime_ids: Vec::new(),
            }
        } else {
            serde_json::from_value(state.application.clone())?
        };
        conversation.hear(&state.transcript);
        let turn = self.provider.complete(&conversation.messages);
        let provider_calls = match &turn {
            Message::Assistant { tool_calls, .. } => tool_calls.clone(),
            other => return Err(format!("the provider answered with a {other:?}").into()),
        };
        let (decision, mut next) = if provider_calls.is_empty() {
            (
                Decision::Done,
                moved_on(state).ok_or("the step counter is at its limit")?,
            )
        } else {
            let calls: Vec<(&str, Arguments)> = provider_calls
                .iter()
                .map(|call| (call.name.as_str(), Arguments::new(call.arguments.clone())))
                .collect();
            let (decision, next) = next_calls(state, &calls)?;
            if let Decision::Calls(batch) = &decision {
                for (provider, runtime) in provider_calls.iter().zip(batch.calls()) {
                    conversation.runtime_ids.push((provider.id.clone(), runtime.id.clone()));
                }
            }
            (decision, next)
        };
        conversation.messages.push(turn);
        next.application = serde_json::to_value(&conversation)?;
        Ok((decision, next))
    }
}

#[derive(Deserialize)]
struct OrderQuery {
    order: u32,
}

#[derive(Serialize)]
struct Order {
    order: u32,
    status: &'static str,
}

struct LookupOrder;

impl Tool for LookupOrder {
    type Args = OrderQuery;
    type Output = Order;
    const NAME: &'static str = "lookup_order";
    const SIDE_EFFECT: SideEffect = SideEffect::Read;

    async fn call(&self, query: OrderQuery, _context: CallContext<'_>) -> Result<Order, ToolFailure> {
        Ok(Order {
            order: query.order,
            status: "shipped",
        })
    }
}

#[derive(Deserialize)]
struct Email {
    to: String,
    subject: String,
}

#[derive(Serialize)]
struct Sent {
    message_id: String,
}

/// The mail provider: delivers under the idempotency key, and finds a message by it.
#[derive(Clone, Default)]
struct Outbox(Arc<Mutex<Vec<(String, String)>>>);

impl Outbox {
    fn sent(&self) -> Vec<(String, String)> {
        self.0.lock().map(|sent| sent.clone()).unwrap_or_default()
    }
}

struct SendEmail {
    outbox: Outbox,
    /// The process dies while this send waits for its answer.
    dies_mid_send: bool,
}

impl Tool for SendEmail {
    type Args = Email;
    type Output = Sent;
    const NAME: &'static str = "send_email";
    const SIDE_EFFECT: SideEffect = SideEffect::External;
    const RECONCILES: bool = true;

    async fn call(&self, email: Email, context: CallContext<'_>) -> Result<Sent, ToolFailure> {
        let key = context
            .idempotency_key()
            .ok_or_else(|| ToolFailure::NotSent("no idempotency key".into()))?
            .to_string();
        let message_id = {
            let mut sent = self
                .outbox
                .0
                .lock()
                .map_err(|_| ToolFailure::NotSent("outbox poisoned".into()))?;
            if !sent.iter().any(|(sent_key, _)| *sent_key == key) {
                sent.push((key.clone(), format!("{}: {}", email.to, email.subject)));
            }
            format!("msg under {key}")
        };
        if self.dies_mid_send {
            // The answer never comes back: the drive future is dropped here.
            std::future::pending::<()>().await;
        }
        Ok(Sent { message_id })
    }

    async fn look_up(&self, _email: Email, context: CallContext<'_>) -> LookedUp<Sent> {
        let key = context.key().to_string();
        match self.outbox.sent().iter().find(|(sent_key, _)| *sent_key == key) {
            Some(_) => LookedUp::Found {
                output: Sent {
                    message_id: format!("msg under {key}"),
                },
                finding: format!("the mail provider holds a message under {key}"),
            },
            None => LookedUp::Absent,
        }
    }
}

/// What the run came to.
struct Story {
    first: &'static str,
    second: Ending,
    conversation: Conversation,
    outbox: Vec<(String, String)>,
    provider_requests: u32,
}

async fn start(ledger: &Ledger, agent: &mut Agent, outbox: &Outbox, dies: bool) -> Option<Ending> {
    let tools = Toolbox::new().with(LookupOrder).with(SendEmail {
        outbox: outbox.clone(),
        dies_mid_send: dies,
    });
    // The same worker id after a restart: it may take its predecessor's `started` call for
    // an orphan (one live process per id).
    let setup = WorkerSetup::new("worker-1", "order-7", tools.declarations());
    let mut executor = Executor::new(ledger.connect_again().expect("a connection"), &setup);
    let mut worker = Worker::new(setup).expect("the setup names a worker, a run and its tools once each");
    // The wall clock, no observer, a paused run returns `Parked`: `AsyncRun`'s defaults.
    let driven = AsyncRun::new(&mut worker, &mut executor).drive(agent, &tools);
    match tokio::time::timeout(Duration::from_millis(300), driven).await {
        Ok(ending) => Some(ending.expect("the ledger answers")),
        Err(_) => None,
    }
}

async fn story() -> Story {
    // A SQLite file (`Ledger::open`) in production; the memory store outlives a dropped future.
    let ledger = Ledger::open_memory_store();
    let outbox = Outbox::default();
    let mut agent = Agent {
        provider: MockProvider::default(),
    };
    let first = match start(&ledger, &mut agent, &outbox, true).await {
        None => "died while the email's answer was on its way",
        Some(_) => "ended before the crash it was meant to have",
    };
    let second = start(&ledger, &mut agent, &outbox, false)
        .await
        .expect("the restarted worker does not hang");
    let checkpoint = ledger.load_checkpoint("order-7").expect("reads").expect("saved");
    let state = checkpoint.run_state().expect("parses");
    Story {
        first,
        second,
        conversation: serde_json::from_value(state.application).expect("the conversation"),
        outbox: outbox.sent(),
        provider_requests: agent.provider.requests,
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let story = story().await;
    println!("worker-1 {}", story.first);
    println!("worker-1, restarted, ended {:?}", story.second);
    println!(
        "the provider was asked {} times; the emails sent: {:?}",
        story.provider_requests, story.outbox
    );
    println!("provider id → runtime id: {:?}", story.conversation.runtime_ids);
    println!("the prompt, rebuilt from the checkpoint:");
    for message in &story.conversation.messages {
        println!("  {}", serde_json::to_string(message).expect("a message writes"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use twice_runtime::execution::Exit;

    #[tokio::test(flavor = "current_thread")]
    async fn two_parallel_calls_survive_a_crash_with_one_email_and_a_whole_prompt() {
        let story = story().await;
        assert_eq!(story.first, "died while the email's answer was on its way");
        assert_eq!(story.second, Ending::Exited(Exit::Completed));
        assert_eq!(story.outbox.len(), 1, "{:?}", story.outbox);
        assert_eq!(
            story.provider_requests, 3,
            "asked, asked again after the crash, answered"
        );
        let ids: Vec<(&str, &str)> = story
            .conversation
            .runtime_ids
            .iter()
            .map(|(provider, runtime)| (provider.as_str(), runtime.as_str()))
            .collect();
        assert_eq!(ids, [("call_abc2", "c1"), ("call_def2", "c2")]);
        let answered: Vec<&str> = story
            .conversation
            .messages
            .iter()
            .filter_map(|message| match message {
                Message::Tool { tool_call_id, .. } => Some(tool_call_id.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(answered, ["call_abc2", "call_def2"]);
        assert!(matches!(
            story.conversation.messages.last(),
            Some(Message::Assistant { tool_calls, .. }) if tool_calls.is_empty()
        ));
    }
}
