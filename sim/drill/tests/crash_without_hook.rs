//! A crash without a reconcile hook, on real processes: `drill --no-hook --replacing`. Workers
//! are SIGKILLed mid-call; the tool has no hook, so nothing can look a call up. The process
//! that recovers a run is started replacing the run's processes that ended, so it records a
//! dead worker's `started` call `recovered_unknown` (`started → indeterminate`), the run
//! pauses, and the drill's operator checks billing by hand and settles the call with a reason
//! — without acknowledging a request in flight. Then: nothing paid twice, nothing lost, every
//! such call settled by the operator with a reason, and the model told their decision.
//!
//! The test binary is its own `billing` and `worker` commands (`harness = false`): the drill
//! starts the executable it runs in, as `twice-sim drill` starts `twice-sim`.

use std::process::ExitCode;

use clap::Parser;
use twice_drill::supervisor::{DrillArgs, DrillConfig, OPERATOR_ID, run_drill, table};
use twice_drill::{BillingArgs, WorkerArgs, billing_command, drill_command, worker_command};
use twice_world::ledger::{HistoryEvent, Ledger};
use twice_world::runtime::rules::Status;

/// The commands the drill starts this executable with (and `drill`, to run one by hand with
/// other flags).
#[derive(Parser)]
enum Child {
    Billing(BillingArgs),
    Worker(WorkerArgs),
    Drill(DrillArgs),
}

#[derive(Parser)]
struct Drill {
    #[command(flatten)]
    args: DrillArgs,
}

fn main() -> ExitCode {
    let first = std::env::args().nth(1);
    if matches!(first.as_deref(), Some("billing" | "worker" | "drill")) {
        let code = match Child::parse() {
            Child::Billing(args) => billing_command(args),
            Child::Worker(args) => worker_command(args),
            Child::Drill(args) => drill_command(args),
        };
        return ExitCode::from(code);
    }
    a_crash_without_a_hook_is_settled_by_an_operator_with_a_reason();
    println!("test a_crash_without_a_hook_is_settled_by_an_operator_with_a_reason ... ok");
    ExitCode::SUCCESS
}

fn a_crash_without_a_hook_is_settled_by_an_operator_with_a_reason() {
    let dir = tempfile::tempdir().expect("a folder");
    let folder = dir.path().to_str().expect("utf-8").to_owned();
    // Billing answers in up to 200 ms and a worker waits 2 s: calls end unknown only when a
    // kill lands while the request or its answer is on the wire.
    let drill = Drill::parse_from([
        "drill",
        "--runs",
        "4",
        "--kills",
        "10",
        "--parallel",
        "4",
        "--seed",
        "7",
        "--latency-ms",
        "200",
        "--timeout-ms",
        "2000",
        "--deadline-s",
        "240",
        "--no-hook",
        "--replacing",
        "--dir",
        &folder,
    ]);
    let config = DrillConfig::from_args(&drill.args).expect("the flags are good");
    assert!(config.every_end_replaced() && !config.hook);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let report = runtime.block_on(run_drill(config)).expect("the drill gives a verdict");
    let shown = table(&report);
    assert!(report.passed, "{shown}");
    assert_eq!((report.double_credits, report.lost_credits), (0, 0), "{shown}");
    assert_eq!(report.runs_finished, 4, "every run finished: {shown}");
    assert!(report.kills > 0, "{shown}");
    assert!(
        report.calls_recovered_unknown > 0,
        "a replacing worker recorded a dead one's call unknown: {shown}"
    );
    assert!(report.settled_by_operator > 0, "{shown}");
    assert_eq!(
        (report.operator_settled_started, report.found_after_wait),
        (0, 0),
        "no started call was settled, and no hook ran: {shown}"
    );

    // The ledger's own words: a dead worker's call, recorded unknown by the worker that
    // replaced it, then settled by the operator with a reason.
    let ledger = Ledger::open(dir.path().join("ledger.sqlite")).expect("the drill's ledger");
    let history = ledger.all_history().expect("reads");
    let recovered: Vec<_> = history
        .iter()
        .filter(|line| line.event == HistoryEvent::RecoveredUnknown)
        .collect();
    assert!(!recovered.is_empty(), "{shown}");
    let settled_after_recovery = recovered.iter().any(|recovery| {
        assert_eq!(
            (recovery.from_status, recovery.to_status),
            (Some(Status::Started), Some(Status::Indeterminate))
        );
        let detail = recovery.detail.as_deref().unwrap_or_default();
        assert!(detail.contains("whose process ended"), "{detail}");
        history.iter().any(|line| {
            line.key == recovery.key
                && line.id > recovery.id
                && line.event == HistoryEvent::Resolved
                && line.actor == OPERATOR_ID
                && line.from_status == Some(Status::Indeterminate)
                && line.reason.as_deref().is_some_and(|reason| reason.contains("billing"))
        })
    });
    assert!(settled_after_recovery, "{shown}");
    println!("{shown}");
}
