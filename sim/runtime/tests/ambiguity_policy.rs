//! Guard `ambiguity_policy`: the start check refuses an external or destructive tool that
//! declares no ambiguity policy — neither a reconcile hook nor a runtime that pauses on an
//! unknown outcome — before anything is loaded, asked or sent; with the guard off the run
//! starts as before. The seed's own contract check (guard `tool_contract`) passes such a tool.

use twice_runtime::guards::{Guard, Guards};
use twice_runtime::tool::{SideEffect, ToolDeclaration};
use twice_runtime::worker::{Command, Input, WaitReason, Words, Worker, WorkerSetup};

fn tool(side_effect: SideEffect, reconcile: bool) -> ToolDeclaration {
    let tool = ToolDeclaration::new("delete_record", side_effect);
    if reconcile { tool.with_reconcile() } else { tool }
}

fn first_command(tool: ToolDeclaration, guards: Guards) -> Command {
    worker_started(tool, guards).0
}

/// The worker's first command, and the guard its refusal names, if it refused.
fn worker_started(tool: ToolDeclaration, guards: Guards) -> (Command, Option<Guard>) {
    let mut worker = Worker::new(
        WorkerSetup::new("w1", "r1", vec![tool])
            .with_guards(guards)
            .with_lease_ms(150)
            .with_words(Words::FACTS),
    )
    .expect("a usable setup");
    let first = worker
        .handle(0, Input::Start)
        .expect("the machine takes the input")
        .expect("the worker does something first");
    let noted = worker.take_notes().first().map(|note| note.guard);
    (first, noted)
}

#[test]
fn a_tool_that_reaches_out_without_an_ambiguity_policy_is_refused_at_start() {
    let no_pause = Guards::all_on().with(Guard::PauseOnIndeterminate, false);
    for side_effect in [SideEffect::External, SideEffect::Destructive] {
        match first_command(tool(side_effect, false), no_pause) {
            Command::WaitForPerson {
                reason: WaitReason::ContractRefused { violation, .. },
            } => {
                let words = violation.to_string();
                assert!(
                    words.contains("delete_record") && words.contains("ambiguity policy"),
                    "{words}"
                );
            }
            other => panic!("{side_effect:?} without a hook or a pause must be refused, not {other:?}"),
        }
        // Either policy is enough.
        assert_eq!(
            first_command(tool(side_effect, true), no_pause),
            Command::LoadCheckpoint
        );
        assert_eq!(
            first_command(tool(side_effect, false), Guards::all_on()),
            Command::LoadCheckpoint
        );
        // The refusal is the ambiguity policy's, not the seed's contract check's.
        assert_eq!(
            worker_started(tool(side_effect, false), no_pause).1,
            Some(Guard::AmbiguityPolicy)
        );
        // Guard off: the naive runtime starts the run anyway, the contract check on: the
        // seed's check passes a tool with one attempt and the key, hook or not.
        let naive = no_pause.with(Guard::AmbiguityPolicy, false);
        assert_eq!(first_command(tool(side_effect, false), naive), Command::LoadCheckpoint);
        // The contract check off changes nothing here: the policy is its own guard.
        let no_contract = no_pause.with(Guard::ToolContract, false);
        assert!(matches!(
            first_command(tool(side_effect, false), no_contract),
            Command::WaitForPerson { .. }
        ));
    }
    // A read or a write needs no policy: its outcome is the runtime's to find out.
    for side_effect in [SideEffect::Read, SideEffect::Write] {
        assert_eq!(
            first_command(tool(side_effect, false), no_pause),
            Command::LoadCheckpoint
        );
    }
}
