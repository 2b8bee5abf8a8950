//! A minimal agent loop on the runtime, with two tools that move no money: `send_email`
//! (external) and `delete_record` (destructive). It runs once on the in-memory ledger with
//! nothing going wrong, then shows the point of the ledger on a SQLite file: worker `w1`
//! sends the email, the mail provider delivers it, and `w1` dies before it hears the answer.
//! Worker `w2`, started in its place, recovers the run: it records the call `w1` left
//! `started` as `indeterminate` (nobody is left to hear its answer), the reconcile hook finds
//! the email by its key, and the run goes on — one email, not two. The call's history is
//! printed from the ledger.
//!
//! Run it: `cargo run -p twice-runtime --example agent_loop` (or, copied into a crate of your
//! own as `src/main.rs`, `cargo run`). `cargo test -p twice-runtime` runs its test and checks
//! that the book's quick start quotes this file and its output as they are. The same loop on
//! PostgreSQL is run by `cargo test -p twice-ledger-postgres --test agent_loop` when
//! `TWICE_POSTGRES_URL` names a server.

use std::collections::BTreeMap;
use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};
use std::sync::atomic::{AtomicU32, Ordering};

use twice_runtime::execution::{
    Agent, AgentError, Attempt, Clock, Ending, Found, LookUp, Run, Sending, ToolExecution, moved_on, next_call,
};
use twice_runtime::executor::Executor;
use twice_runtime::key::IdempotencyKey;
use twice_runtime::ledger::{HistoryEntry, Ledger, RecordFilter};
use twice_runtime::run::{Arguments, Decision, RunState, RunStatus, ToolCall};
use twice_runtime::tool::{SideEffect, ToolDeclaration};
use twice_runtime::worker::{Worker, WorkerSetup};
use twice_runtime::{Status, ToolAnswer};

/// The run's id: every call's key is `onboard-ada:<call id>`.
const RUN: &str = "onboard-ada";

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
    /// What the mail provider delivered, by idempotency key.
    sent: BTreeMap<String, String>,
    /// The table `delete_record` deletes from: `true` while a record is there.
    pub records: BTreeMap<String, bool>,
    /// Emails the provider delivered.
    pub emails_delivered: u32,
    /// The next send's worker dies once the provider has applied it.
    pub dies_after_next_send: bool,
}

/// What unwinds a worker that "dies": it stands in for `kill -9` after the request left —
/// nothing after it runs, and the ledger keeps only what was already committed.
struct WorkerDied;

impl ToolExecution for World {
    fn send(&mut self, sending: &Sending<'_>) -> Attempt {
        let Some(key) = sending.downstream_key else {
            return Attempt::NotSent {
                reason: "both tools take the key".into(),
            };
        };
        let arguments = sending.call.arguments.value();
        let answer = match sending.call.tool.as_str() {
            "send_email" => match self.sent.get(key.as_str()) {
                // The provider has this key: it answers with the first message, sends nothing.
                Some(first) => ToolAnswer::Repeat {
                    first: first.clone(),
                    receipt: first.clone(),
                },
                None => {
                    self.emails_delivered += 1;
                    let receipt = format!("message {} to {}", self.emails_delivered, arguments["to"]);
                    self.sent.insert(key.to_string(), receipt.clone());
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
            other => {
                return Attempt::NotSent {
                    reason: format!("no tool {other}"),
                };
            }
        };
        if std::mem::take(&mut self.dies_after_next_send) {
            // The provider applied it; the worker's process dies before the answer is heard.
            resume_unwind(Box::new(WorkerDied));
        }
        Attempt::Answered(answer)
    }

    /// The reconcile hook: what the provider or the table holds under the call's key.
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
                finding: format!("found {receipt}"),
                receipt,
            }),
            None => LookUp::Absent,
        }
    }
}

/// The "model": sends a welcome email, then deletes a stale record, then is done. A real
/// agent asks its model here; the run's counters make the call ids (`c1`, `c2`), so a
/// recovered run makes the same keys.
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
        let next = moved_on(state).ok_or("the item counter is at its limit")?;
        match calls.get(next.item as usize) {
            Some((tool, arguments)) => next_call(state, tool, Arguments::new(arguments.clone()))
                .ok_or_else(|| "a counter is at its limit".into()),
            None => Ok((Decision::Done, next)),
        }
    }
}

/// A clock that moves only when read or asked to wait: the output is the same every run.
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

/// Runs `setup`'s worker on `ledger` until it ends.
fn run_worker(ledger: Ledger, setup: WorkerSetup, world: &mut World, clock: &mut Steps) -> Ending {
    setup.check_contracts().expect("the tools pass the contract check");
    let mut executor = Executor::new(ledger, &setup);
    let mut worker = Worker::new(setup).expect("the setup names a worker, a run and its tools once each");
    Run::new(&mut worker, &mut executor)
        .clock(clock)
        .drive(&mut Script, world)
        .expect("the ledger answers")
}

/// One run on `ledger`; when `w1_dies`, its first worker dies mid-send and `w2` takes over.
/// Says what happened in `story`, and returns what the ledger holds at the end (each call's
/// tool and status, the run's status) and the world.
pub fn run_on(ledger: Ledger, w1_dies: bool, story: &mut Vec<String>) -> (Vec<(String, Status)>, RunStatus, World) {
    let mut world = World {
        dies_after_next_send: w1_dies,
        ..World::default()
    };
    world.records.insert("rec_42".into(), true);
    let mut clock = Steps(0);
    let reader = ledger.connect_again().expect("a second connection");
    let w1 = WorkerSetup::new("w1", RUN, tools());
    let first = catch_unwind(AssertUnwindSafe(|| {
        run_worker(
            ledger.connect_again().expect("a connection"),
            w1,
            &mut world,
            &mut clock,
        )
    }));
    match first {
        Ok(ending) => story.push(format!("w1 ended: {ending:?}")),
        Err(_) => {
            let key = IdempotencyKey::per_call(RUN, "c1").expect("a key");
            let record = reader.record(&key).expect("the ledger answers").expect("c1 is there");
            story.push(format!(
                "w1 died after sending {key}; the provider delivered {}, the ledger holds {} (owner {})",
                plural(world.emails_delivered, "email"),
                record.status,
                record.owner
            ));
            // A supervisor saw w1's process exit and starts w2 in its place. Told which worker
            // it replaces, w2 may take w1's `started` call for unknown: nobody is left to
            // send it or hear its answer.
            let w2 = WorkerSetup::new("w2", RUN, tools()).replacing("w1");
            // Named from its setup: without `.replacing("w1")` the line says plain `w2`.
            let named = match w2.replaces.first() {
                Some(replaced) => format!("w2 (replacing {replaced})"),
                None => "w2".to_owned(),
            };
            let second = run_worker(ledger, w2, &mut world, &mut clock);
            story.push(format!("{named} ended: {second:?}"));
            story.push(format!("history of {key}:"));
            for entry in reader.history(&key).expect("the ledger answers") {
                story.extend(history_line(&entry).lines().map(str::to_owned));
            }
        }
    }
    let mut records = reader.records(RecordFilter::default()).expect("records read");
    records.sort_by(|left, right| left.tool_call_id.cmp(&right.tool_call_id));
    let records: Vec<(String, Status)> = records
        .into_iter()
        .map(|record| (record.tool.into_string(), record.status))
        .collect();
    let checkpoint = reader
        .load_checkpoint(RUN)
        .expect("checkpoint read")
        .expect("a checkpoint");
    let state = RunState::from_json(&checkpoint.state).expect("the checkpoint parses");
    let calls: Vec<String> = records
        .iter()
        .map(|(tool, status)| format!("{tool} {status}"))
        .collect();
    story.push(format!(
        "the run is {}: {}; {} delivered, rec_42 {}",
        state.status.name(),
        calls.join(", "),
        plural(world.emails_delivered, "email"),
        if world.records["rec_42"] {
            "still there"
        } else {
            "deleted"
        }
    ));
    (records, state.status, world)
}

/// A history line: when, who, what, the status it changed; then why, and what else it says.
fn history_line(entry: &HistoryEntry) -> String {
    let change = match (entry.from_status, entry.to_status) {
        (Some(from), Some(to)) => format!("{from} → {to}"),
        (None, Some(to)) => format!("→ {to}"),
        _ => String::new(),
    };
    let head = format!(
        "  {:>3} ms  {:<14} {:<18} {change}",
        entry.at_ms,
        entry.actor,
        entry.event.name()
    );
    let why: Vec<&str> = [entry.reason.as_deref(), entry.detail.as_deref()]
        .into_iter()
        .flatten()
        .collect();
    if why.is_empty() {
        head.trim_end().to_owned()
    } else {
        format!(
            "{}
           {}",
            head.trim_end(),
            why.join("; ")
        )
    }
}

fn plural(count: u32, thing: &str) -> String {
    format!("{count} {thing}{}", if count == 1 { "" } else { "s" })
}

/// What `main` prints: the run on the memory ledger, then w1's death on a SQLite file.
pub fn story() -> Vec<String> {
    let mut story = vec!["== memory ledger, nothing goes wrong".to_owned()];
    run_on(Ledger::open_memory_store(), false, &mut story);
    story.push("== SQLite ledger, w1 dies mid-send".to_owned());
    // A folder of this call's own: tests run this story in parallel in one process.
    static STORIES: AtomicU32 = AtomicU32::new(0);
    let story_number = STORIES.fetch_add(1, Ordering::Relaxed);
    let folder = std::env::temp_dir().join(format!("twice-agent-loop-{}-{story_number}", std::process::id()));
    std::fs::create_dir_all(&folder).expect("a temporary folder");
    let ledger = Ledger::open(folder.join("ledger.sqlite")).expect("the SQLite ledger opens");
    run_on(ledger, true, &mut story);
    std::fs::remove_dir_all(&folder).expect("the temporary folder is removed");
    story
}

fn main() {
    for line in story() {
        println!("{line}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_effect_happens_once_even_when_w1_dies_mid_send() {
        for w1_dies in [false, true] {
            let (records, status, world) = run_on(Ledger::open_memory_store(), w1_dies, &mut Vec::new());
            assert_eq!(status, RunStatus::Completed, "{records:?}");
            assert_eq!(
                records,
                vec![
                    ("send_email".into(), Status::Completed),
                    ("delete_record".into(), Status::Completed)
                ]
            );
            assert_eq!(world.emails_delivered, 1, "the lost answer is reconciled, not resent");
            assert!(!world.records["rec_42"]);
        }
    }
}
