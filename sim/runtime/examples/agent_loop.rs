//! A minimal agent loop on the runtime, with two tools that move no money:
//! `send_email` (external) and `delete_record` (destructive). It runs once on the in-memory
//! ledger and once on a SQLite file, and then shows the point of the ledger: the first send
//! times out after the mail provider accepted it, the worker dies, a second worker recovers
//! the run and the reconcile hook finds the email — so it is not sent twice.
//!
//! Run it: `cargo run -p twice-runtime --example agent_loop`. `cargo test -p twice-runtime`
//! runs its test. The same loop on PostgreSQL (a plain ledger and a commit group) is run by
//! `cargo test -p twice-ledger-postgres --test agent_loop` when `TWICE_POSTGRES_URL` names a
//! server (`.ci/postgres` starts one): this crate links no database client but SQLite.

use std::collections::BTreeMap;

use twice_runtime::execution::{
    Agent, AgentError, Attempt, Clock, Ending, Found, LookUp, Sending, ToolExecution, drive_run, next_call,
};
use twice_runtime::executor::Executor;
use twice_runtime::key::IdempotencyKey;
use twice_runtime::ledger::{Ledger, RecordFilter};
use twice_runtime::run::{Arguments, Decision, RunState, RunStatus, ToolCall};
use twice_runtime::tool::{SideEffect, ToolDeclaration};
use twice_runtime::worker::{Worker, WorkerSetup, counted};
use twice_runtime::{Status, ToolAnswer};

/// The two tools, declared: each changes the world once, takes the key, and has a
/// read-only reconcile hook that looks its effect up by key.
fn tools() -> Vec<ToolDeclaration> {
    let tool = |name: &str, side_effect| ToolDeclaration::new(name, side_effect).with_reconcile();
    vec![
        tool("send_email", SideEffect::External),
        tool("delete_record", SideEffect::Destructive),
    ]
}

/// The world the tools act on: a mail provider and a table, both keeping the idempotency
/// key they were sent (as Stripe or a mail API does).
#[derive(Debug, Default)]
pub struct World {
    sent: BTreeMap<String, String>,
    /// The table `delete_record` deletes from: `true` while a record is there.
    pub records: BTreeMap<String, bool>,
    /// Sends left that the provider applies but whose answer is lost.
    lose_next_answers: u32,
    /// Emails the provider delivered.
    pub emails_delivered: u32,
}

impl ToolExecution for World {
    fn send(&mut self, sending: &Sending<'_>) -> Attempt {
        let key = sending.downstream_key.expect("both tools take the key").to_string();
        let arguments = sending.call.arguments.value();
        let answer = match sending.call.tool.as_str() {
            "send_email" => match self.sent.get(&key) {
                Some(first) => ToolAnswer::Repeat {
                    first: first.clone(),
                    receipt: first.clone(),
                },
                None => {
                    self.emails_delivered += 1;
                    let receipt = format!("message {} to {}", self.emails_delivered, arguments["to"]);
                    self.sent.insert(key, receipt.clone());
                    ToolAnswer::Applied { receipt }
                }
            },
            "delete_record" => {
                let id = arguments["id"].as_str().unwrap_or_default().to_owned();
                match self.records.get_mut(&id) {
                    Some(present @ true) => {
                        *present = false;
                        ToolAnswer::Applied {
                            receipt: format!("deleted {id}"),
                        }
                    }
                    Some(false) => ToolAnswer::Repeat {
                        first: format!("deleted {id}"),
                        receipt: format!("deleted {id}"),
                    },
                    None => ToolAnswer::Rejected {
                        reason: format!("no record {id}"),
                        receipt: format!("no record {id}"),
                    },
                }
            }
            other => panic!("no tool {other}"),
        };
        if self.lose_next_answers > 0 {
            self.lose_next_answers -= 1;
            return Attempt::TimedOut;
        }
        Attempt::Answered(answer)
    }

    fn look_up(&mut self, key: &IdempotencyKey, call: &ToolCall) -> LookUp {
        let receipt = match call.tool.as_str() {
            "send_email" => self.sent.get(key.as_str()).cloned(),
            _ => {
                let Some(id) = call.arguments.value()["id"].as_str() else {
                    return LookUp::CannotTell {
                        reason: format!("{key}'s arguments name no record"),
                    };
                };
                (self.records.get(id) == Some(&false)).then(|| format!("deleted {id}"))
            }
        };
        match receipt {
            Some(receipt) => LookUp::Found(Found {
                finding: receipt.clone(),
                receipt,
            }),
            None => LookUp::Absent,
        }
    }
}

/// The "model": sends a welcome email, then deletes a stale record, then is done.
struct Script;

impl Agent for Script {
    fn decide(&mut self, state: &RunState) -> Result<(Decision, RunState), AgentError> {
        let calls = [
            (
                "send_email",
                serde_json::json!({"to": "ada@example.com", "subject": "Welcome"}),
            ),
            ("delete_record", serde_json::json!({"id": "rec_42"})),
        ];
        let next = twice_runtime::execution::moved_on(state).ok_or("the item counter is at its limit")?;
        match calls.get(next.item as usize) {
            Some((tool, arguments)) => next_call(state, tool, Arguments::new(arguments.clone()))
                .ok_or_else(|| "a counter is at its limit".into()),
            None => Ok((Decision::Done, next)),
        }
    }
}

/// A clock that moves only when asked to wait: the example is deterministic.
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

fn setup(worker_id: &str) -> WorkerSetup {
    WorkerSetup::new(worker_id, "onboard-ada", tools())
}

/// Runs worker `worker_id` on `ledger` to its end.
fn run_worker(ledger: Ledger, worker_id: &str, world: &mut World, clock: &mut Steps) -> Ending {
    let setup = setup(worker_id);
    for tool in &setup.tools {
        tool.check_contract().expect("the tools pass the seed's contract check");
    }
    let mut executor = Executor::new(ledger, &setup);
    let mut worker = Worker::new(setup).expect("the setup names a worker, a run and its tools once each");
    drive_run(&mut worker, &mut executor, &mut Script, world, clock).expect("the ledger answers")
}

/// One whole run on `ledger`: what the ledger holds at the end and what the world did.
pub fn run_on(ledger: Ledger, lose_first_answer: bool) -> (Vec<(String, Status)>, RunStatus, World) {
    let mut world = World {
        lose_next_answers: u32::from(lose_first_answer),
        ..World::default()
    };
    world.records.insert("rec_42".into(), true);
    let mut clock = Steps(0);
    let reader = ledger.connect_again().expect("a second connection");
    let first = run_worker(
        ledger.connect_again().expect("a connection"),
        "w1",
        &mut world,
        &mut clock,
    );
    println!("w1 ended: {first:?}");
    if lose_first_answer {
        // The lost answer left the email `indeterminate` and the run paused on it: a second
        // worker (after a crash, say) recovers the run; the hook finds the email by its key.
        let second = run_worker(ledger, "w2", &mut world, &mut clock);
        println!("w2 ended: {second:?}");
    }
    let mut records = reader.records(RecordFilter::default()).expect("records read");
    records.sort_by(|left, right| left.tool_call_id.cmp(&right.tool_call_id));
    let records = records
        .into_iter()
        .map(|record| (record.tool.into_string(), record.status))
        .collect();
    let checkpoint = reader
        .load_checkpoint("onboard-ada")
        .expect("checkpoint read")
        .expect("a checkpoint");
    let state = RunState::from_json(&checkpoint.state).expect("the checkpoint parses");
    (records, state.status, world)
}

fn main() {
    let (records, status, world) = run_on(Ledger::open_memory_store(), false);
    println!(
        "memory ledger: {records:?}, run {}, {}",
        status.name(),
        counted(u64::from(world.emails_delivered), "email", "emails")
    );
    let folder = std::env::temp_dir().join(format!("twice-agent-loop-{}", std::process::id()));
    std::fs::create_dir_all(&folder).expect("a temporary folder");
    let ledger = Ledger::open(folder.join("ledger.sqlite")).expect("the SQLite ledger opens");
    let (records, status, world) = run_on(ledger, true);
    println!(
        "SQLite ledger, first answer lost: {records:?}, run {}, {}",
        status.name(),
        counted(u64::from(world.emails_delivered), "email", "emails")
    );
    std::fs::remove_dir_all(&folder).expect("the temporary folder is removed");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_tools_take_effect_once_on_memory_and_sqlite() {
        let (records, status, world) = run_on(Ledger::open_memory_store(), false);
        assert_eq!(status, RunStatus::Completed);
        assert_eq!(
            records,
            vec![
                ("send_email".into(), Status::Completed),
                ("delete_record".into(), Status::Completed)
            ]
        );
        assert_eq!(world.emails_delivered, 1);
        assert!(!world.records["rec_42"]);

        let folder = tempfile::tempdir().expect("a temporary folder");
        let ledger = Ledger::open(folder.path().join("ledger.sqlite")).expect("the SQLite ledger opens");
        let (records, status, world) = run_on(ledger, true);
        assert_eq!(status, RunStatus::Completed, "{records:?}");
        assert_eq!(world.emails_delivered, 1, "the lost answer is reconciled, not resent");
        assert!(
            records.iter().all(|(_, status)| *status == Status::Completed),
            "{records:?}"
        );
    }
}
