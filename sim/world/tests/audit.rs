//! Level 38 ("The Audit"): an operator who compensates on purpose, after checking billing.
//! op-audit reads billing against the ledger once; a refund paid twice by then is undone through
//! the runtime's own compensation (by the call's key, compare-and-set, with a reason). A double
//! whose request is still on the wire when they look, or sent after, stands. Every sentence the
//! debrief and the timeline show about the audit is checked against the run it tells: each tape,
//! and every moment the sweep can play the level's card.

mod support;

use support::{levels_folder, run_tape, told};
use twice_world::billing::EntryKind;
use twice_world::cards::LoseResponse;
use twice_world::debrief::Decider;
use twice_world::ledger::{HistoryEvent, LedgerStore};
use twice_world::level::{self, CardKind, Level};
use twice_world::runtime::rules::Status;
use twice_world::simulator::{AUDIT_UNDID, Actor, Simulation, SimulationBuilder};

const LEVEL: &str = "38-the-audit.level.ron";
const WIN: &str = "38-the-audit.win.tape.ron";
const EARLY_DOUBLE: &str = "38-the-audit.early-double.tape.ron";
const READ_RETRIED: &str = "38-the-audit.read-retried.tape.ron";
const AUDITOR: &str = "op-audit";

fn the_level() -> Level {
    level::load_level(&levels_folder().join(LEVEL))
        .expect("the level loads")
        .level
}

fn said_by_the_auditor(simulation: &Simulation) -> Vec<String> {
    simulation
        .timeline()
        .iter()
        .filter(|entry| entry.actor == Actor::Operator(AUDITOR.into()))
        .map(|entry| entry.text.clone())
        .collect()
}

/// The credit ids billing has reversed.
fn reversed(simulation: &Simulation) -> Vec<String> {
    simulation
        .billing()
        .entries
        .iter()
        .filter(|entry| entry.kind == EntryKind::Reversal)
        .filter_map(|entry| entry.reverses.clone())
        .collect()
}

/// Checks what the audit said and did against billing and the ledger of this run; returns the
/// debrief's audit sentence.
fn check_audit_is_told_truly(what: &str, simulation: &Simulation) -> String {
    let report = simulation
        .audit_report()
        .unwrap_or_else(|| panic!("{what}: op-audit never looked"));
    let told = told(simulation);
    let sentence = told
        .diagnosis
        .iter()
        .find(|sentence| sentence.contains(&format!("{AUDITOR} checked billing")))
        .unwrap_or_else(|| panic!("{what}: no audit sentence in {:?}", told.diagnosis))
        .clone();
    assert!(
        sentence.contains(&format!("at {} ms", report.at_ms)),
        "{what}: {sentence}"
    );
    let history = simulation.ledger_history().expect("the history reads");
    let undone: Vec<_> = report.undos.iter().filter(|undo| undo.undone).collect();
    for undo in &undone {
        let key = undo.extra_key.clone().expect("an undone credit carried its call's key");
        assert!(
            reversed(simulation).contains(&undo.extra_credit),
            "{what}: {} said undone, billing holds no reversal of it",
            undo.extra_credit
        );
        assert!(
            !reversed(simulation).contains(&undo.kept_credit),
            "{what}: the kept credit was voided"
        );
        // The runtime's own compensation, compare-and-set from the status the auditor saw,
        // with the auditor's name and reason in the history.
        let claimed = history
            .iter()
            .find(|entry| entry.key.as_str() == key && entry.event == HistoryEvent::CompensationClaimed)
            .unwrap_or_else(|| panic!("{what}: {key} was never claimed"));
        assert_eq!(claimed.actor, AUDITOR, "{what}");
        assert_eq!(
            claimed.from_status, undo.seen,
            "{what}: compare-and-set from the status seen"
        );
        assert!(
            claimed
                .reason
                .as_deref()
                .is_some_and(|reason| reason.contains(&undo.extra_credit)),
            "{what}: the reason names the credit"
        );
        assert!(history.iter().any(|entry| entry.key.as_str() == key
            && entry.actor == AUDITOR
            && entry.event == HistoryEvent::CompensationApplied));
        assert!(sentence.contains(&format!("compensated {key}")), "{what}: {sentence}");
        assert!(
            said_by_the_auditor(simulation)
                .iter()
                .any(|line| line.starts_with(AUDIT_UNDID) && line.contains(&key)),
            "{what}: the timeline shows no undo of {key}"
        );
    }
    if report.undos.is_empty() {
        assert!(
            reversed(simulation).is_empty(),
            "{what}: nothing undone, yet a reversal"
        );
        assert!(!sentence.contains("compensated"), "{what}: {sentence}");
        assert!(
            said_by_the_auditor(simulation)
                .iter()
                .any(|line| line.contains("nothing to undo")),
            "{what}: {:?}",
            said_by_the_auditor(simulation)
        );
    }
    let verdict = simulation.verdict().expect("judged");
    if verdict.goal_reached {
        // The double stands because it landed after the look: the sentence says which way.
        assert!(sentence.contains("stands"), "{what}: {sentence}");
        let late = simulation
            .billing()
            .entries
            .iter()
            .find(|entry| sentence.contains(&format!("{} landed at {} ms", entry.id, entry.at_ms)))
            .unwrap_or_else(|| panic!("{what}: the sentence names no credit as billing holds it: {sentence}"));
        assert!(late.at_ms > report.at_ms, "{what}: {} landed before the audit", late.id);
        if sentence.contains("still on the wire") {
            let key = late.idempotency_key.clone().expect("billing honours keys here");
            assert!(
                report.in_flight.contains(&key),
                "{what}: {key} was not on the wire at the audit"
            );
        } else {
            assert!(
                late.idempotency_key
                    .as_ref()
                    .is_none_or(|key| !report.in_flight.contains(key)),
                "{what}: on the wire at the audit, but told as sent after"
            );
        }
    } else if undone.is_empty() {
        assert!(sentence.contains("undid nothing"), "{what}: {sentence}");
    }
    // What decided a loss to the audit is told as a loss; nothing tells a win "stopped you".
    let decided = told.decided_by.told(verdict.goal_reached);
    if verdict.goal_reached {
        assert!(!decided.contains("stopped you"), "{what}: a win told {decided}");
    }
    sentence
}

#[test]
fn the_double_on_the_wire_when_op_audit_looks_stands() {
    let simulation = run_tape(WIN);
    let sentence = check_audit_is_told_truly(WIN, &simulation);
    assert!(sentence.contains("still on the wire"), "{sentence}");
    let report = simulation.audit_report().expect("looked");
    assert!(report.undos.is_empty());
    assert!(simulation.verdict().expect("judged").goal_reached);
    assert!(
        said_by_the_auditor(&simulation)
            .iter()
            .any(|line| line.contains("not seen") && line.contains("still on the wire")),
        "{:?}",
        said_by_the_auditor(&simulation)
    );
}

#[test]
fn a_double_in_billing_when_op_audit_looks_is_undone_through_the_runtime() {
    let simulation = run_tape(EARLY_DOUBLE);
    let sentence = check_audit_is_told_truly(EARLY_DOUBLE, &simulation);
    let report = simulation.audit_report().expect("looked");
    let undo = &report.undos[0];
    assert!(undo.undone);
    // The call the ledger held unknown is undone; the one it records completed stands.
    assert_eq!(undo.seen, Some(Status::Indeterminate));
    assert_eq!(undo.kept_status, Some(Status::Completed));
    assert!(
        sentence.contains("whose call the ledger records completed"),
        "{sentence}"
    );
    assert!(sentence.contains("someone who checked the other system"), "{sentence}");
    let verdict = simulation.verdict().expect("judged");
    assert!(!verdict.goal_reached);
    assert!(verdict.violations.is_empty(), "{:?}", verdict.violations);
    // The audit is the level's own decision, not one made from outside over the HTTP API.
    assert_eq!(
        twice_world::play_session::outside_decisions(&simulation).expect("reads"),
        0
    );
}

#[test]
fn an_audit_that_finds_each_refund_paid_once_undoes_nothing() {
    let simulation = run_tape(READ_RETRIED);
    let sentence = check_audit_is_told_truly(READ_RETRIED, &simulation);
    assert!(sentence.contains("none paying a refund twice"), "{sentence}");
}

/// Every moment the level's card can be played, on every message it can hit: the audit's
/// sentences hold in each run, the win is only where the double is still on the wire or later,
/// and the level has moments that miss (a double undone, and no double at all).
#[test]
fn every_moment_of_the_card_is_told_truly() {
    let level = the_level();
    let mut quiet = SimulationBuilder::new(level.clone(), 1)
        .ledger_store(LedgerStore::Memory)
        .build()
        .expect("builds");
    quiet.run().expect("runs");
    let (mut wins, mut undone, mut nothing) = (0, 0, 0);
    for phase in 0..quiet.phase() {
        let mut probe = SimulationBuilder::new(level.clone(), 1)
            .ledger_store(LedgerStore::Memory)
            .build()
            .expect("builds");
        probe.run_until(|simulation| simulation.phase() >= phase).expect("runs");
        let keys: Vec<String> = probe
            .wire_targets(CardKind::LoseResponse)
            .iter()
            .map(|message| message.key.clone())
            .collect();
        for key in keys {
            let mut simulation = SimulationBuilder::new(level.clone(), 1)
                .ledger_store(LedgerStore::Memory)
                .build()
                .expect("builds");
            simulation
                .run_until(|simulation| simulation.phase() >= phase)
                .expect("runs");
            simulation
                .play(level::Play::LoseResponse(LoseResponse { key: Some(key.clone()) }))
                .expect("legal here");
            simulation.run().expect("runs");
            check_audit_is_told_truly(&format!("LoseResponse({key}) at phase {phase}"), &simulation);
            let report = simulation.audit_report().expect("looked");
            if simulation.verdict().expect("judged").goal_reached {
                wins += 1;
            } else if report.undos.iter().any(|undo| undo.undone) {
                undone += 1;
            } else {
                nothing += 1;
            }
        }
    }
    assert!(
        wins >= 1 && undone >= 1 && nothing >= 1,
        "wins {wins}, undone {undone}, nothing {nothing}"
    );
    assert!(
        2 * wins <= wins + undone + nothing,
        "the card wins at more than half its moments"
    );
}

/// A decider's words for a win never say something "stopped you" (37's win: the player's own
/// undo decided it); for a loss they do.
#[test]
fn what_decided_is_told_for_a_win_and_for_a_loss() {
    let simulation = run_tape("37-undo-on-purpose.win.tape.ron");
    let told = told(&simulation);
    assert!(
        matches!(told.decided_by, Decider::Operator { .. }),
        "{:?}",
        told.decided_by
    );
    let win = told.decided_by.told(true);
    assert!(!win.contains("stopped"), "{win}");
    assert!(win.contains("op-crew's decision did it"), "{win}");
    assert!(told.decided_by.told(false).contains("stopped you"));
}

/// The briefing names the moment the level's audit is scheduled at (the player plans on it).
#[test]
fn the_briefing_says_when_op_audit_looks() {
    let level = the_level();
    let auditor = level.auditor.as_ref().expect("the level has an auditor");
    assert!(
        level.briefing.contains(&format!("at {} ms", auditor.audits_at_ms)),
        "{}",
        level.briefing
    );
}

#[test]
fn an_auditor_is_checked_when_the_level_loads() {
    let text = std::fs::read_to_string(levels_folder().join(LEVEL)).expect("reads");
    let path = levels_folder().join(LEVEL);
    for (from, to, problem) in [
        ("audits_at_ms: 330", "audits_at_ms: 0", "audits_at_ms must be 1 to"),
        ("name: \"op-audit\"", "name: \"op audit\"", "the auditor's name"),
        ("compensation: true", "compensation: false", "no tool here declares one"),
    ] {
        let broken = text.replacen(from, to, 1);
        assert_ne!(broken, text, "{from}");
        let error = level::parse_level(&path, &broken).expect_err(problem);
        assert!(error.to_string().contains(problem), "{error}");
    }
}
