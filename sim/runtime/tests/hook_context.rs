//! A reconcile hook of a typed tool is told when the ledger recorded the send it looks for
//! (`CallContext::recorded_at_ms`), so it can stamp or match the request by it — also after a
//! crash, when the send was another process's and the recovering worker learns the time from
//! the ledger's `attempt` line. It used to be told 0.

use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};
use std::sync::{Arc, Mutex, PoisonError};

use twice_runtime::IdempotencyKey;
use twice_runtime::ledger::{HistoryEvent, Ledger};
use twice_runtime::tool::SideEffect;
use twice_runtime::toolbox::{CallContext, LookedUp, Tool, ToolFailure, Toolbox};
use twice_runtime::worker::WorkerSetup;

mod one_email;
use one_email::{Email, OneEmail};

/// What the hook was told: the attempt and the send's recorded time.
type Heard = Arc<Mutex<Vec<(u32, u64)>>>;

/// Sends (and, when told, the process dies right after); its hook finds every email.
struct SendEmail {
    dies_after_send: bool,
    hook_heard: Heard,
}

/// What unwinds the worker that dies, as `kill -9` would stop it.
struct Died;

impl Tool for SendEmail {
    type Args = Email;
    type Output = String;
    const NAME: &'static str = "send_email";
    const SIDE_EFFECT: SideEffect = SideEffect::External;
    const RECONCILES: bool = true;

    async fn call(&self, _email: Email, _context: CallContext<'_>) -> Result<String, ToolFailure> {
        if self.dies_after_send {
            resume_unwind(Box::new(Died));
        }
        Ok("sent".into())
    }

    async fn look_up(&self, _email: Email, context: CallContext<'_>) -> LookedUp<String> {
        let mut heard = self.hook_heard.lock().unwrap_or_else(PoisonError::into_inner);
        heard.push((context.attempt(), context.recorded_at_ms()));
        LookedUp::Found {
            output: "sent".into(),
            finding: "the provider holds it".into(),
        }
    }
}

#[test]
fn after_a_crash_the_hook_is_told_when_the_dead_workers_send_was_recorded() {
    const RUN: &str = "welcome-ada";
    let ledger = Ledger::open_memory_store();
    let hook_heard = Heard::default();
    let tools = |dies_after_send| {
        Toolbox::new().with(SendEmail {
            dies_after_send,
            hook_heard: Arc::clone(&hook_heard),
        })
    };
    let died = catch_unwind(AssertUnwindSafe(|| {
        one_email::drive(
            &ledger,
            WorkerSetup::new("w1", RUN, Vec::new()),
            &mut tools(true),
            &mut OneEmail::default(),
        )
    }));
    assert!(died.is_err(), "w1 dies after its send");
    one_email::drive(
        &ledger,
        WorkerSetup::new("w2", RUN, Vec::new()).replacing("w1"),
        &mut tools(false),
        &mut OneEmail::default(),
    );
    let key = IdempotencyKey::per_call(RUN, "c1").expect("a key");
    let sent_at_ms = ledger
        .history(&key)
        .expect("reads")
        .into_iter()
        .find(|entry| entry.event == HistoryEvent::Attempt)
        .map(|entry| entry.at_ms)
        .expect("w1's send is in the history");
    assert!(sent_at_ms > 0);
    let heard = hook_heard.lock().unwrap_or_else(PoisonError::into_inner).clone();
    assert_eq!(heard, [(0, sent_at_ms)], "attempt 0 (a look-up), w1's send's time");
}
