//! Decisions made on a level's ledger from outside its simulation (an operator over the HTTP
//! API) are counted from the ledger's history, once each: the player's own operator moves are
//! not among them, and each outside decision counts whether or not the simulation noticed it.

use std::path::{Path, PathBuf};
use twice_world::cards::OperatorResolve;

use twice_world::ledger::Ledger;
use twice_world::level::{LoadedTape, Play};
use twice_world::play_session::{Mode, PlaySession, Recipe};
use twice_world::runtime::key::IdempotencyKey;
use twice_world::runtime::operator::{self, ResolveRequest};
use twice_world::runtime::rules::Status;

fn tape(name: &str) -> LoadedTape {
    let levels = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../levels");
    twice_world::level::load_tape(&levels.join(name)).unwrap_or_else(|error| panic!("{error}"))
}

/// The tape's level opened on a ledger file, its moves (but those `keep` refuses) played at
/// their phases, run until nothing is left to happen.
fn played(loaded: &LoadedTape, ledger: &Path, keep: impl Fn(&Play) -> bool) -> PlaySession {
    let recipe = Recipe {
        level: loaded.level.clone(),
        seed: loaded.tape.seed,
        guards: loaded.tape.guards,
        tape: None,
    };
    let mut session = PlaySession::open(Mode::Campaign, recipe, Some(ledger)).expect("opens");
    for action in loaded.tape.actions.iter().filter(|action| keep(&action.play)) {
        while session.simulation().phase() < action.at_phase && !session.simulation().is_over() {
            session.step(1).expect("steps");
        }
        session.play(action.play.clone()).expect("played");
    }
    session.run_to_end().expect("runs");
    session
}

fn resolve_from_outside(ledger: &Path, operator: &str) {
    let mut outside = Ledger::open(ledger).expect("a second connection to the level's ledger");
    let key = IdempotencyKey::parse("r1:c1").expect("a key");
    let mut request = ResolveRequest::new(Status::Completed, "billing shows cr_0001", operator);
    request.expected_status = Some(Status::Indeterminate);
    operator::resolve(&mut outside, &key, &request, 1).expect("resolved from outside");
}

fn ledger_in(folder: &tempfile::TempDir) -> PathBuf {
    folder.path().join("level.sqlite")
}

#[test]
fn the_players_own_operator_move_is_no_outside_decision() {
    let folder = tempfile::tempdir().expect("temp dir");
    let loaded = tape("18-late-answer.slow-and-honest.tape.ron");
    let session = played(&loaded, &ledger_in(&folder), |_| true);
    assert!(
        loaded
            .tape
            .actions
            .iter()
            .any(|action| matches!(action.play, Play::OperatorResolve(OperatorResolve { .. }))),
        "the tape resolves the call itself"
    );
    assert_eq!(session.outside_decisions().expect("reads"), 0);
}

#[test]
fn a_resolve_over_the_api_counts_once_noticed_or_not() {
    let folder = tempfile::tempdir().expect("temp dir");
    let ledger = ledger_in(&folder);
    let loaded = tape("18-late-answer.slow-and-honest.tape.ron");
    let mut session = played(&loaded, &ledger, |play| {
        !matches!(play, Play::OperatorResolve(OperatorResolve { .. }))
    });
    assert_eq!(
        session.outside_decisions().expect("reads"),
        0,
        "the call waits for an operator"
    );

    resolve_from_outside(&ledger, "workshop");
    assert_eq!(
        session.outside_decisions().expect("reads"),
        1,
        "counted before the simulation noticed it"
    );
    let (woken, _) = session.change_from_outside(|simulation| simulation.notice_settlements());
    assert_eq!(woken.expect("reads"), 1, "the paused run wakes");
    session.run_to_end().expect("runs on");
    assert_eq!(
        session.outside_decisions().expect("reads"),
        1,
        "and once noticed, still once"
    );
}
