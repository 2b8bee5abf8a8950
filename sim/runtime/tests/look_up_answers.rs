//! A reconcile hook has three answers for a synchronous driver (`execution::LookUp`): found,
//! absent, and "cannot tell". Only "absent" is ever weighed as evidence (decision table 6);
//! "cannot tell" leaves the call unknown, whatever the tool declares. Before the third answer a
//! driver whose provider was down could only say "nothing there", and a tool with a declared
//! settle time had that settled `failed` and paid again.

use twice_runtime::ToolAnswer;
use twice_runtime::execution::{Attempt, Clock, Ending, Exit, Found, LookUp, Sending, ToolExecution, drive_run};
use twice_runtime::executor::Executor;
use twice_runtime::key::IdempotencyKey;
use twice_runtime::ledger::Ledger;
use twice_runtime::rules::Status;
use twice_runtime::run::ToolCall;
use twice_runtime::worker::{Words, Worker, WorkerSetup};

mod support;
use support::{RefundModel, credit_tool};

const SETTLE_MS: u64 = 2_000;

struct TestClock {
    now_ms: u64,
}

impl Clock for TestClock {
    fn now_ms(&mut self) -> u64 {
        self.now_ms
    }

    fn wait_ms(&mut self, duration_ms: u64) {
        self.now_ms += duration_ms;
    }
}

/// How the provider's lookups come out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Lookups {
    /// It answers: nothing under the key.
    AnswerNothing,
    /// It cannot be asked (down): the hook cannot tell.
    Down,
}

/// A provider that loses the first request (nothing lands, the worker times out) and pays
/// every later one.
struct Provider {
    lookups: Lookups,
    requests_seen: u32,
    credits: Vec<String>,
    looked_up: u32,
}

impl ToolExecution for Provider {
    fn send(&mut self, sending: &Sending<'_>) -> Attempt {
        self.requests_seen += 1;
        if self.requests_seen == 1 {
            return Attempt::TimedOut;
        }
        self.credits.push(sending.key.to_string());
        Attempt::Answered(ToolAnswer::Applied {
            receipt: format!("{{\"credit\":\"cr_{}\"}}", self.credits.len()),
        })
    }

    fn look_up(&mut self, key: &IdempotencyKey, _call: &ToolCall) -> LookUp {
        self.looked_up += 1;
        match self.lookups {
            Lookups::AnswerNothing => match self.credits.iter().position(|credit| credit == key.as_str()) {
                Some(index) => LookUp::Found(Found {
                    receipt: format!("{{\"credit\":\"cr_{}\"}}", index + 1),
                    finding: format!("credit cr_{}", index + 1),
                }),
                None => LookUp::Absent,
            },
            Lookups::Down => LookUp::CannotTell {
                reason: "the provider's lookup endpoint answered 503".into(),
            },
        }
    }
}

/// The run against a provider whose lookups come out as `lookups`: the provider, how the
/// worker ended and c1's status.
fn run(lookups: Lookups) -> (Provider, Ending, Option<Status>) {
    let tool = credit_tool(None, Some(SETTLE_MS));
    let setup = WorkerSetup::new("w1", "r1", vec![tool]).with_words(Words::FACTS);
    let ledger = Ledger::open_memory_store();
    let mut executor = Executor::new(ledger.connect_again().expect("a second connection"), &setup);
    let mut worker = Worker::new(setup).expect("a usable setup");
    let mut provider = Provider {
        lookups,
        requests_seen: 0,
        credits: Vec::new(),
        looked_up: 0,
    };
    let mut clock = TestClock { now_ms: 1_000_000 };
    let ending = drive_run(
        &mut worker,
        &mut executor,
        &mut RefundModel { calls_max: 2 },
        &mut provider,
        &mut clock,
    )
    .expect("the ledger answers");
    let key = IdempotencyKey::per_call("r1", "c1").expect("a key");
    let status = ledger
        .record(&key)
        .expect("the ledger answers")
        .map(|record| record.status);
    (provider, ending, status)
}

#[test]
fn an_absent_answer_past_the_settle_time_is_proof_and_the_run_calls_again() {
    let (provider, ending, status) = run(Lookups::AnswerNothing);
    assert_eq!(
        status,
        Some(Status::Failed),
        "nothing landed, and the look past the settle time proves it"
    );
    assert_eq!(
        provider.looked_up, 2,
        "asked too soon once, then again after the settle time"
    );
    assert_eq!(
        provider.credits,
        vec!["r1:c2".to_owned()],
        "Ada is paid once, by the new call"
    );
    assert_eq!(ending, Ending::Exited(Exit::Completed));
}

#[test]
fn a_hook_that_cannot_tell_leaves_the_call_unknown_and_nothing_is_paid_again() {
    let (provider, ending, status) = run(Lookups::Down);
    assert!(
        status.is_some_and(|status| status.is_unknown()),
        "cannot tell is not proof: c1 stays unknown ({status:?})"
    );
    assert!(provider.credits.is_empty(), "no second call: {:?}", provider.credits);
    assert_eq!(provider.looked_up, 1, "the hook asked once and could not tell");
    assert!(
        matches!(ending, Ending::Parked(ref key) if key.as_str() == "r1:c1"),
        "the run pauses on c1 for a person: {ending:?}"
    );
}
