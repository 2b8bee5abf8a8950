//! A tool contract the worker will refuse when its run starts is knowable when the setup is
//! made: `WorkerSetup::check_contracts` answers exactly what the run's start refuses, for
//! every declaration here, and the run-start refusal itself stays (a worker is still made).

use twice_runtime::execution::{Agent, AgentError, Ending, SystemClock, ToolExecution, drive_run, next_call};
use twice_runtime::executor::Executor;
use twice_runtime::ledger::Ledger;
use twice_runtime::run::{Arguments, Decision, RunState};
use twice_runtime::tool::{SideEffect, ToolDeclaration};
use twice_runtime::worker::{WaitReason, Worker, WorkerSetup};

/// The model: one call to the first tool (never reached when the contract is refused).
struct Model(String);

impl Agent for Model {
    fn decide(&mut self, state: &RunState) -> Result<(Decision, RunState), AgentError> {
        next_call(state, &self.0, Arguments::new(serde_json::json!({}))).ok_or_else(|| "no more calls".into())
    }
}

/// Tools that must never be reached: the declarations alone decide.
struct Unreachable;

impl ToolExecution for Unreachable {
    fn send(&mut self, _sending: &twice_runtime::execution::Sending<'_>) -> twice_runtime::execution::Attempt {
        twice_runtime::execution::Attempt::NotSent {
            reason: "this test only starts runs".into(),
        }
    }

    fn look_up(
        &mut self,
        _key: &twice_runtime::IdempotencyKey,
        _call: &twice_runtime::run::ToolCall,
    ) -> twice_runtime::execution::LookUp {
        twice_runtime::execution::LookUp::Absent
    }
}

fn declarations() -> Vec<(&'static str, ToolDeclaration)> {
    vec![
        (
            "read",
            ToolDeclaration::new("lookup", SideEffect::Read).with_attempts(3),
        ),
        ("keyed write", ToolDeclaration::new("send_email", SideEffect::External)),
        (
            "write with retries",
            ToolDeclaration::new("send_email", SideEffect::External).with_attempts(3),
        ),
        (
            "keyless write",
            ToolDeclaration::new("delete", SideEffect::Destructive).without_key(),
        ),
    ]
}

#[test]
fn the_setup_check_answers_what_the_run_start_refuses() {
    for (what, declaration) in declarations() {
        let tool = declaration.name.to_string();
        let setup = WorkerSetup::new("worker-1", "run-1", vec![declaration]);
        let at_setup = setup.check_contracts();
        let ledger = Ledger::open_memory_store();
        let mut executor = Executor::new(ledger.connect_again().expect("connects"), &setup);
        let mut worker = Worker::new(setup).expect("a worker is made either way");
        let ending = drive_run(
            &mut worker,
            &mut executor,
            &mut Model(tool),
            &mut Unreachable,
            &mut SystemClock,
        )
        .expect("drives");
        match (&at_setup, &ending) {
            (Ok(()), ending) => assert!(
                !matches!(ending, Ending::WaitsForPerson(WaitReason::ContractRefused { .. })),
                "{what}: passed at setup, refused at start: {ending:?}"
            ),
            (Err(violation), Ending::WaitsForPerson(WaitReason::ContractRefused { violation: refused, .. })) => {
                assert_eq!(violation, refused, "{what}");
            }
            (Err(violation), ending) => panic!("{what}: refused at setup ({violation}) but the run ended {ending:?}"),
        }
    }
    let refused = declarations()
        .into_iter()
        .filter(|(_, declaration)| {
            WorkerSetup::new("worker-1", "run-1", vec![declaration.clone()])
                .check_contracts()
                .is_err()
        })
        .count();
    assert_eq!(refused, 2, "the write with retries and the keyless write");
}
