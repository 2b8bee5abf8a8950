//! The simulator and the `twice-sim worker` process are two drivers of one runtime: the same
//! machine (`runtime::worker::Worker`) and the same executor (`runtime::executor::Executor`)
//! for every ledger command. This test drives the same scripts through both — the simulator
//! on virtual time, the worker process's driver on a real ledger file, a real billing server
//! and a real clock — and requires the same phases in the same order and the same ledger at
//! the end, so the two cannot drift apart again.

mod common;

use std::path::Path;

use common::BillingServer;
use twice_sim::billing::KeyHandling;
use twice_sim::drill::script;
use twice_sim::drill::worker_process::{Driver, WorkerArgs, WorkerConfig, WorkerEnd};
use twice_sim::ledger::{ExecutionRecord, Ledger};
use twice_sim::level::{Lesson, Level, World};
use twice_sim::runtime::guards::Guards;
use twice_sim::simulator::{Phase, SimulationBuilder};

/// The drill's runs this test drives: one, two and three credits (`script_for` derives them).
const RUNS: [&str; 4] = ["run-0001", "run-0002", "run-0003", "run-0007"];

/// A level holding one drill run, as the simulator plays it: the drill's accounts, tool, model
/// policy and script, every guard on, no cards.
fn level_of(run_id: &str) -> Level {
    Level {
        id: format!("drill-{run_id}"),
        regression: false,
        title: run_id.to_owned(),
        chapter: 0,
        chapter_title: String::new(),
        order: 0,
        requires: Vec::new(),
        briefing: "the drill's run".into(),
        briefing_more: String::new(),
        lesson: Lesson {
            guards: Vec::new(),
            rule: "r".into(),
            text: "t".into(),
        },
        hints: Default::default(),
        par: None,
        defender: None,
        unbeatable: false,
        debrief: String::new(),
        world: World {
            accounts: script::accounts(),
            billing_keys: KeyHandling::Honour,
            latency_ms: 20,
            jitter_ms: 0,
            timeout_ms: 100,
            slow_response_ms: 400,
            restart_after_crash_ms: None,
            lease_ms: 150,
            second_node: false,
            billing_key_retention_ms: None,
            billing_lookup_settle_ms: None,
            recovery_attempts_max: None,
            recovery_crashes_at: None,
            owner_changes: Vec::new(),
        },
        tools: script::tools(),
        model: script::model_policy(),
        workflow: Default::default(),
        runs: vec![script::script_for(run_id)],
        guards: Guards::all_on(),
        cards: Vec::new(),
        declarable_tools: Vec::new(),
        honest_operator: None,
        auditor: None,
        goal: twice_sim::checker::Outcome::PaidTwice,
        max_phases: 400,
    }
}

/// What both drivers must agree on in the ledger (times and owners are each driver's own).
fn ledger_summary(records: &[ExecutionRecord]) -> Vec<(String, String, u32, bool)> {
    let mut summary: Vec<(String, String, u32, bool)> = records
        .iter()
        .map(|record| {
            (
                record.key.to_string(),
                record.status.name().to_owned(),
                record.attempts,
                record
                    .result
                    .as_deref()
                    .is_some_and(|result| result.contains("credit_id")),
            )
        })
        .collect();
    summary.sort();
    summary
}

fn worker_process(run_id: &str, ledger: &Path, billing: &str) -> (WorkerEnd, Vec<Phase>, Ledger) {
    let args = WorkerArgs {
        ledger: twice_sim::ledger_target::LedgerTarget::File(ledger.to_path_buf()),
        no_probe: false,
        billing: billing.to_owned(),
        run: run_id.to_owned(),
        guards: "all".into(),
        worker_id: Some("w1".into()),
        timeout_ms: 2_000,
        model_delay_ms: 0,
        park_poll_ms: 50,
        lease_ms: 1_000,
        exit_when_parked: true,
        stop_on_stdin_close: false,
        key_retention_ms: None,
        lookup_settle_ms: None,
        recovery_attempts_max: None,
        no_hook: false,
        replaces: Vec::new(),
    };
    let config = WorkerConfig::from_args(&args).expect("the flags are good");
    let mut driver = Driver::new(config, Ledger::open(ledger).expect("the ledger opens")).expect("a driver");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(driver.probe_billing()).expect("billing answers");
    let end = runtime.block_on(driver.drive()).expect("the run is driven to its end");
    let phases = driver.phases().to_vec();
    let ledger = Ledger::open(ledger).unwrap();
    (end, phases, ledger)
}

#[test]
fn the_simulator_and_the_worker_process_drive_the_same_scripts_through_the_same_phases() {
    let directory = tempfile::tempdir().unwrap();
    let billing = BillingServer::start(&directory.path().join("billing.sqlite"), "honour");
    for run_id in RUNS {
        let mut simulation = SimulationBuilder::new(level_of(run_id), 1).build().unwrap();
        simulation.run().unwrap();
        let simulated_phases = simulation.worker_phases(1).expect("w1 ran").to_vec();
        let simulated_ledger = ledger_summary(&simulation.ledger_records().unwrap());

        let ledger_path = directory.path().join(format!("{run_id}.sqlite"));
        let (end, process_phases, process_ledger) = worker_process(run_id, &ledger_path, &billing.url);
        assert_eq!(end, WorkerEnd::Exited, "{run_id}");
        assert_eq!(
            process_phases, simulated_phases,
            "{run_id}: the worker process and the simulator went through different phases"
        );
        assert_eq!(
            ledger_summary(&process_ledger.all_records().unwrap()),
            simulated_ledger,
            "{run_id}: the ledgers differ"
        );
        let checkpoint = |checkpoints: Vec<twice_sim::ledger::Checkpoint>| {
            checkpoints
                .into_iter()
                .map(|checkpoint| (checkpoint.status, checkpoint.version))
                .collect::<Vec<_>>()
        };
        assert_eq!(
            checkpoint(process_ledger.checkpoints().unwrap()),
            checkpoint(simulation.checkpoints().unwrap()),
            "{run_id}: the checkpoints differ"
        );
        let calls = script::script_for(run_id).calls.len();
        assert_eq!(simulated_ledger.len(), calls, "{run_id}: one record per credit owed");
        assert!(
            simulated_phases.iter().filter(|phase| **phase == Phase::Send).count() == calls,
            "{run_id}: one send per credit: {simulated_phases:?}"
        );
    }
}
