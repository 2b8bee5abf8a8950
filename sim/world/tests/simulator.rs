//! The simulator as a whole: determinism, and a property test that no fault schedule
//! beats the runtime with every guard on.

use proptest::prelude::*;
use twice_world::billing::EntryKind;
use twice_world::cards::{
    CrashWorker, DuplicateWorker, LoseRequest, LoseResponse, ModelCallsAgain, SlowResponse, ToolFailsBeforeSending,
};
use twice_world::checker::Outcome;
use twice_world::level::{Level, Play, TimedAction, WireRule, parse_level};
use twice_world::runtime::guards::Guards;
use twice_world::simulator::SimulationBuilder;

fn level(billing_keys: &str, model: &str, jitter_ms: u32) -> Level {
    let text = format!(
        r#"(
            id: "property", title: "property", briefing: "b",
            lesson: (rule: "r", text: "t"),
            world: (accounts: [(id: "acct_ada", owner: "Ada"), (id: "acct_bob", owner: "Bob")],
                    billing_keys: {billing_keys}, jitter_ms: {jitter_ms}),
            tools: [(name: "issue_credit", side_effect: external, operation: credit, reconcile: true, compensation: true)],
            model: {model},
            runs: [
                (id: "r1", calls: [
                    (tool: "issue_credit", account: "acct_ada", amount_cents: 2500, memo: "Refund order 1001", rewordings: ["Refund: #1001"]),
                    (tool: "issue_credit", account: "acct_ada", amount_cents: 2500, memo: "Refund order 1001", rewordings: ["Refund: #1001"]),
                ]),
                (id: "r2", calls: [(tool: "issue_credit", account: "acct_bob", amount_cents: 1000, memo: "Goodwill credit")]),
            ],
            cards: [(card: LoseRequest, count: 9), (card: LoseResponse, count: 9), (card: SlowResponse, count: 9),
                    (card: CrashWorker, count: 9), (card: DuplicateWorker, count: 9), (card: ModelCallsAgain, count: 9),
                    (card: ToolFailsBeforeSending, count: 9)],
            goal: paid_twice,
            max_phases: 600,
        )"#
    );
    parse_level(std::path::Path::new("property.level.ron"), &text).expect("the property level parses")
}

fn fault() -> impl Strategy<Value = Play> {
    let run = prop_oneof![Just("r1".to_owned()), Just("r2".to_owned())];
    prop_oneof![
        Just(Play::LoseRequest(LoseRequest { key: None })),
        Just(Play::LoseResponse(LoseResponse { key: None })),
        Just(Play::SlowResponse(SlowResponse { key: None })),
        (0u32..5).prop_map(|worker| Play::CrashWorker(CrashWorker {
            worker: (worker > 0).then_some(worker),
            in_phase: None,
        })),
        run.clone()
            .prop_map(|run| Play::DuplicateWorker(DuplicateWorker { run })),
        (run.clone(), any::<bool>()).prop_map(|(run, reword)| Play::ModelCallsAgain(ModelCallsAgain { run, reword })),
        run.prop_map(|run| Play::ToolFailsBeforeSending(ToolFailsBeforeSending { run })),
    ]
}

fn schedule() -> impl Strategy<Value = Vec<TimedAction>> {
    prop::collection::vec((0u32..120, fault()), 0..8).prop_map(|mut actions| {
        actions.sort_by_key(|(phase, _)| *phase);
        actions
            .into_iter()
            .map(|(at_phase, play)| TimedAction {
                at_phase,
                play,
                fizzles: false,
            })
            .collect()
    })
}

fn world() -> impl Strategy<Value = (&'static str, &'static str)> {
    (
        prop_oneof![Just("honour"), Just("metadata_only"), Just("ignore")],
        prop_oneof![
            Just("()"),
            Just("(on_failed: call_again)"),
            Just("(on_failed: call_again, reword_on_repeat: true)"),
            Just("(on_failed: call_again, reword_on_replay: true)"),
        ],
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 384, ..ProptestConfig::default() })]

    /// With every guard on, no schedule of faults pays anyone twice, makes a second ledger
    /// record for a key, compensates unasked, or overwrites a decision.
    #[test]
    fn with_every_guard_on_no_fault_schedule_pays_twice(
        seed in any::<u64>(),
        (keys, model) in world(),
        actions in schedule(),
        armed in any::<bool>(),
    ) {
        // Both tape formats: armed wire cards (version 1) always meet a message; aimed ones
        // (version 2) only when one is on the wire at their phase.
        let rule = if armed { WireRule::ArmNextMessage } else { WireRule::OnTheWireNow };
        let mut simulation = SimulationBuilder::new(level(keys, model, 15), seed)
            .guards(Guards::all_on())
            .wire_rule(rule)
            .actions(actions)
            .build()
            .unwrap();
        simulation.run().unwrap();
        let verdict = simulation.verdict().unwrap();
        prop_assert_eq!(simulation.goal_reached().unwrap(), verdict.goal_reached);
        prop_assert_ne!(verdict.outcome, Outcome::PaidTwice, "{}", verdict.summary);
        prop_assert!(verdict.violations.is_empty(), "{:?}", verdict.violations);
        let records = simulation.ledger_records().unwrap();
        let mut keys: Vec<&str> = records.iter().map(|record| record.key.as_str()).collect();
        keys.dedup();
        prop_assert_eq!(keys.len(), records.len());
        prop_assert!(simulation.billing().entries.iter().all(|entry| entry.kind == EntryKind::Credit));
    }
}

#[test]
fn same_level_seed_and_actions_give_byte_identical_history() {
    let actions = vec![
        TimedAction {
            at_phase: 3,
            play: Play::DuplicateWorker(DuplicateWorker { run: "r1".into() }),
            fizzles: false,
        },
        TimedAction {
            at_phase: 5,
            play: Play::LoseResponse(LoseResponse { key: None }),
            fizzles: false,
        },
        TimedAction {
            at_phase: 9,
            play: Play::CrashWorker(CrashWorker {
                worker: None,
                in_phase: None,
            }),
            fizzles: false,
        },
    ];
    let history = |seed: u64| {
        let mut simulation = SimulationBuilder::new(level("metadata_only", "(on_failed: call_again)", 25), seed)
            .actions(actions.clone())
            .build()
            .unwrap();
        simulation.run().unwrap();
        simulation.history_text().unwrap()
    };
    let first = history(42);
    assert_eq!(first, history(42));
    assert!(first.len() > 1_000, "the history is substantial");
    assert_ne!(first, history(43), "the seed matters (latency jitter)");
}

#[test]
fn run_until_stops_when_asked_and_step_reports_the_end() {
    let mut simulation = SimulationBuilder::new(level("honour", "()", 0), 1).build().unwrap();
    let phases = simulation.run_until(|simulation| simulation.phase() >= 5).unwrap();
    assert_eq!((phases, simulation.phase()), (5, 5));
    simulation.run().unwrap();
    assert!(simulation.is_over());
    assert!(!simulation.step().unwrap(), "a quiet level has no next phase");
    assert_eq!(simulation.verdict().unwrap().outcome, Outcome::PaidOnce);
}

#[test]
fn a_quiet_level_wakes_when_someone_outside_settles_what_it_waits_on() {
    let folder = tempfile::tempdir().unwrap();
    let path = folder.path().join("ledger.sqlite");
    let mut simulation = SimulationBuilder::new(level("ignore", "()", 0), 5)
        .ledger_file(&path)
        .wire_rule(WireRule::ArmNextMessage)
        .actions(vec![TimedAction {
            at_phase: 0,
            play: Play::LoseRequest(LoseRequest { key: None }),
            fizzles: false,
        }])
        .build()
        .unwrap();
    simulation.run().unwrap();
    assert!(simulation.is_over());
    // An operator on another connection (the HTTP API, say) settles the call.
    let mut operator = twice_world::ledger::Ledger::open(&path).unwrap();
    let key = twice_world::runtime::key::IdempotencyKey::parse("r1:c1").unwrap();
    let request = twice_world::runtime::operator::ResolveRequest::new(
        twice_world::runtime::rules::Status::Failed,
        "no credit in billing",
        "op-ana",
    );
    twice_world::runtime::operator::resolve(&mut operator, &key, &request, 10_000).unwrap();
    assert_eq!(simulation.notice_settlements().unwrap(), 1);
    assert!(!simulation.is_over());
    simulation.run().unwrap();
    let checkpoint = simulation.ledger().load_checkpoint("r1").unwrap().unwrap();
    assert_eq!(
        checkpoint.status, "completed",
        "r1 resumed and went on to its second credit"
    );
    let state = twice_world::runtime::run::RunState::from_json(&checkpoint.state).unwrap();
    assert_eq!(
        state.transcript[0].1,
        twice_world::runtime::run::Told::SettledByOperator {
            settled: twice_world::runtime::run::Settled::DidNotTakeEffect,
            operator: "op-ana".into(),
            reason: "no credit in billing".into(),
        },
        "the model hears the operator's decision, whose it is and why"
    );
}

/// The game's operator HTTP API compensates through these two calls (look the credit up by
/// the call's key in the simulated billing, then void it by its id) inside the runtime's one
/// compensation; this adapter plays the API's part.
struct OutsideOperator<'a>(&'a mut twice_world::simulator::Simulation);

impl twice_world::runtime::operator::CompensationTarget for OutsideOperator<'_> {
    fn has_compensation(&self, tool: &str) -> bool {
        self.0
            .level()
            .tools
            .iter()
            .any(|declared| declared.name == tool && declared.compensation)
    }

    fn find_effect(
        &mut self,
        record: &twice_world::ledger::ExecutionRecord,
    ) -> Result<twice_world::runtime::operator::Effect, twice_world::runtime::operator::LookupError> {
        self.0.look_up_effect(record)
    }

    fn undo(
        &mut self,
        record: &twice_world::ledger::ExecutionRecord,
        reference: &str,
    ) -> Result<String, twice_world::runtime::operator::UndoError> {
        self.0.undo_for_outside_operator(record, reference)
    }
}

#[test]
fn an_outside_operator_compensates_through_the_simulated_billing_once() {
    use twice_world::runtime::operator::{self, CompensateRequest, Effect, HeldLedger, OperatorError};
    use twice_world::simulator::Actor;
    let folder = tempfile::tempdir().unwrap();
    let path = folder.path().join("ledger.sqlite");
    let mut simulation = SimulationBuilder::new(level("honour", "()", 0), 3)
        .ledger_file(&path)
        .build()
        .unwrap();
    simulation.run().unwrap();
    assert_eq!(simulation.verdict().unwrap().outcome, Outcome::PaidOnce);
    assert_eq!(simulation.billing().balance("acct_bob"), Some(1000));
    let record = simulation
        .ledger_records()
        .unwrap()
        .into_iter()
        .find(|record| record.run_id == "r2")
        .expect("r2's credit is recorded");
    let key = record.key.clone();
    let Effect::Found { detail, .. } = simulation.look_up_effect(&record).unwrap() else {
        panic!("billing holds r2's credit");
    };
    assert!(detail.contains("1000 cents to acct_bob"), "{detail}");

    let mut operator_ledger = twice_world::ledger::Ledger::open(&path).unwrap();
    let request = CompensateRequest::new(&key, "order cancelled", "op-ana");
    let compensated = operator::compensate(
        &mut HeldLedger {
            ledger: &mut operator_ledger,
            now_ms: 20_000,
        },
        &mut OutsideOperator(&mut simulation),
        &request,
        &twice_world::text::WORDS,
    )
    .unwrap();
    assert_eq!(compensated.status.name(), "compensated");
    assert_eq!(
        simulation.billing().balance("acct_bob"),
        Some(0),
        "the credit is voided"
    );
    let last = simulation.timeline().last().unwrap();
    assert_eq!(
        (&last.actor, last.kind.as_str()),
        (&Actor::Operator("op-ana".into()), "compensate")
    );
    assert!(last.text.contains("voided credit"), "{}", last.text);
    let verdict = simulation.verdict().unwrap();
    assert!(
        verdict.violations.is_empty(),
        "an asked-for compensation breaks no promise: {:?}",
        verdict.violations
    );

    // Twice asked, once done: the ledger refuses the second request before billing is asked.
    let again = operator::compensate(
        &mut HeldLedger {
            ledger: &mut operator_ledger,
            now_ms: 21_000,
        },
        &mut OutsideOperator(&mut simulation),
        &CompensateRequest::new(request.key, "once more", request.operator),
        &twice_world::text::WORDS,
    );
    assert!(matches!(again, Err(OperatorError::AlreadyCompensated(_))), "{again:?}");
    assert_eq!(simulation.billing().balance("acct_bob"), Some(0));
    // And billing, asked again by id, moves nothing.
    let Effect::Found { reference, .. } = simulation.look_up_effect(&record).unwrap() else {
        panic!("the voided credit is still on record");
    };
    let repeat = simulation.undo_for_outside_operator(&record, &reference).unwrap();
    assert!(repeat.contains("already voided"), "{repeat}");
    assert_eq!(simulation.billing().balance("acct_bob"), Some(0));
}

#[test]
fn the_simulated_billing_tells_an_outside_operator_what_it_cannot_know() {
    use twice_world::runtime::operator::LookupError;
    use twice_world::simulator::Direction;
    // Billing that drops keys cannot find a credit by one.
    let mut simulation = SimulationBuilder::new(level("ignore", "()", 0), 3).build().unwrap();
    simulation.run().unwrap();
    let record = simulation.ledger_records().unwrap().remove(0);
    let lookup = simulation.look_up_effect(&record);
    assert!(
        matches!(&lookup, Err(LookupError::CannotLookUp(text)) if text.contains("ignores idempotency keys")),
        "{lookup:?}"
    );

    // A request on the wire with the key is not applied yet: ask again later.
    let mut simulation = SimulationBuilder::new(level("honour", "()", 0), 3).build().unwrap();
    simulation
        .run_until(|simulation| {
            simulation
                .messages()
                .any(|message| message.direction == Direction::Request && message.downstream_key.is_some())
        })
        .unwrap();
    let key = simulation
        .messages()
        .find(|message| message.direction == Direction::Request)
        .and_then(|message| message.downstream_key.clone())
        .expect("a request is on the wire");
    let record = simulation
        .ledger_records()
        .unwrap()
        .into_iter()
        .find(|record| record.key.as_str() == key)
        .expect("the call was reserved before it was sent");
    let lookup = simulation.look_up_effect(&record);
    assert!(
        matches!(&lookup, Err(LookupError::InFlight(text)) if text.contains("still applying 1 request with that key")),
        "{lookup:?}"
    );
}

/// One credit for Ada, a twin on a second node with a ledger of its own, and billing that
/// honours keys; `guards` and `pause` as the test needs.
fn two_nodes(second_node: bool) -> Level {
    let text = format!(
        r#"(
            id: "nodes", title: "nodes", briefing: "b",
            lesson: (rule: "r", text: "t"),
            world: (accounts: [(id: "acct_ada", owner: "Ada")], billing_keys: honour, second_node: {second_node}),
            tools: [(name: "issue_credit", side_effect: external, operation: credit)],
            runs: [(id: "r1", calls: [(tool: "issue_credit", account: "acct_ada", amount_cents: 2500, memo: "Refund")])],
            cards: [(card: DuplicateWorker, count: 2), (card: LoseResponse, count: 2), (card: OperatorResolve, count: 1)],
            goal: paid_twice,
        )"#
    );
    parse_level(std::path::Path::new("nodes.level.ron"), &text).expect("the two-node level parses")
}

fn credits_landed(simulation: &twice_world::simulator::Simulation) -> usize {
    simulation
        .billing()
        .entries
        .iter()
        .filter(|entry| entry.kind == EntryKind::Credit)
        .count()
}

#[test]
fn a_twin_on_a_second_node_sees_none_of_the_first_nodes_ledger_and_only_the_key_stops_it() {
    let twin = || {
        vec![TimedAction {
            at_phase: 0,
            play: Play::DuplicateWorker(DuplicateWorker { run: "r1".into() }),
            fizzles: false,
        }]
    };
    // On one node the twin meets the first worker's reservation; on two, each reserves r1:c1
    // in its own ledger and both send it, and billing's memory of the key is all that holds.
    for (second_node, guards, credits) in [
        (false, Guards::all_on(), 1),
        (
            false,
            Guards::all_on().with(twice_world::runtime::guards::Guard::KeyDownstream, false),
            1,
        ),
        (true, Guards::all_on(), 1),
        (
            true,
            Guards::all_on().with(twice_world::runtime::guards::Guard::KeyDownstream, false),
            2,
        ),
    ] {
        let mut simulation = SimulationBuilder::new(two_nodes(second_node), 1)
            .guards(guards)
            .actions(twin())
            .build()
            .expect("builds");
        simulation.run().expect("runs");
        assert_eq!(
            credits_landed(&simulation),
            credits,
            "second node {second_node}, guards {guards:?}"
        );
        let nodes: Vec<u32> = simulation.workers().iter().map(|worker| worker.node).collect();
        let sends = simulation
            .timeline()
            .iter()
            .filter(|entry| entry.kind == "send")
            .count();
        match simulation.second_node_ledger() {
            None => {
                assert!(!second_node);
                assert_eq!(nodes, [1, 1]);
                assert_eq!(sends, 1, "the twin met the first worker's reservation");
            }
            Some(second) => {
                assert!(second_node);
                assert_eq!(nodes, [1, 2]);
                assert_eq!(
                    sends, 2,
                    "each node's worker reserved r1:c1 in its own ledger and sent it"
                );
                let first = simulation.ledger().all_records().expect("reads");
                let twin = second.all_records().expect("reads");
                assert_eq!((first.len(), first[0].owner.as_str()), (1, "w1"));
                assert_eq!((twin.len(), twin[0].owner.as_str()), (1, "w2"));
                assert_eq!(second.checkpoints().expect("reads").len(), 1);
            }
        }
        let verdict = simulation.verdict().expect("a verdict");
        let expected = if credits == 2 {
            Outcome::PaidTwice
        } else {
            Outcome::PaidOnce
        };
        assert_eq!(verdict.outcome, expected, "{}", verdict.summary);
        // Each ledger's history is read apart: the twin's own reservation of r1:c1 is not a
        // decision of the first node overwritten, and its credit is not one without a record.
        assert!(verdict.violations.is_empty(), "{:?}", verdict.violations);
    }
}

#[test]
fn a_settlement_in_one_nodes_ledger_wakes_no_worker_waiting_on_the_other() {
    // The twin's answer is lost: its call is unknown in its own ledger and it pauses there,
    // while the first node's worker completes the same key in the first ledger. Nothing in the
    // first ledger settles the twin's record, so the level goes quiet with the twin waiting,
    // instead of waking it again and again.
    use twice_world::simulator::Direction;
    let mut simulation = SimulationBuilder::new(two_nodes(true), 1)
        .actions(vec![TimedAction {
            at_phase: 0,
            play: Play::DuplicateWorker(DuplicateWorker { run: "r1".into() }),
            fizzles: false,
        }])
        .build()
        .expect("builds");
    let answer_of = |simulation: &twice_world::simulator::Simulation, worker: u32| {
        simulation
            .messages()
            .any(|message| message.worker == worker && message.direction == Direction::Response && !message.lost)
    };
    simulation
        .run_until(|simulation| answer_of(simulation, 2) && !answer_of(simulation, 1))
        .expect("steps");
    assert!(answer_of(&simulation, 2), "the twin's answer is on the wire alone");
    simulation
        .play(Play::LoseResponse(LoseResponse { key: None }))
        .expect("the twin's answer is lost");
    let phases = simulation.run().expect("runs");
    assert!(
        simulation.phase() < simulation.level().max_phases,
        "the level went quiet after {phases} more phases"
    );
    let twin = &simulation.workers()[1];
    assert_eq!(
        (twin.node, twin.state),
        (2, twice_world::runtime::worker::WorkerState::Parked)
    );
    let first = simulation.ledger().all_records().expect("reads");
    let second = simulation
        .second_node_ledger()
        .expect("two nodes")
        .all_records()
        .expect("reads");
    assert_eq!(first[0].status, twice_world::runtime::rules::Status::Completed);
    assert_eq!(second[0].status, twice_world::runtime::rules::Status::Indeterminate);
    assert_eq!(simulation.notice_settlements().expect("reads"), 0);
    let verdict = simulation.verdict().expect("a verdict");
    assert_eq!(verdict.outcome, Outcome::PaidOnce, "{}", verdict.summary);
    assert_eq!(verdict.waiting, ["r1"], "the twin's run waits, in the open");
}
